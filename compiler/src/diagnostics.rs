//! Diagnostics: the codes, the collector, and the three renderings (human, JSON, GitHub).
//!
//! Contributor guide:
//! - Every problem the compiler can report has a `Code` below, with a stable identifier
//!   (`E…` errors, `W…` warnings), a kebab-case name and a page in `docs/diagnostics.md`.
//! - Stages never stop at the first problem: they push into a `Sink` and carry on.
//! - Emit through the `Sink` helpers; the four messages whose first line is fixed by the
//!   project rules have dedicated helpers (`unknown_concept`, `missing_column`,
//!   `duplicate_uuid`, `invalid_parent`), so their wording lives in one place.
//! - Messages are short phrases; the why goes in `label`, `notes` and `help`.

use crate::source::{Loc, Position};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

macro_rules! codes {
    ($($variant:ident = $id:literal, $name:literal, $sev:ident;)*) => {
        /// Every diagnostic the compiler emits.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];
            pub fn id(self) -> &'static str { match self { $(Code::$variant => $id,)* } }
            pub fn name(self) -> &'static str { match self { $(Code::$variant => $name,)* } }
            pub fn severity(self) -> Severity { match self { $(Code::$variant => Severity::$sev,)* } }
            pub fn from_id(id: &str) -> Option<Code> { match id { $($id => Some(Code::$variant),)* _ => None } }
        }
    };
}

codes! {
    Io = "E0001", "unreadable-file", Error;
    InvalidUtf8 = "E0002", "invalid-utf8", Error;
    TooLarge = "E0003", "file-too-large", Error;
    BadArchive = "E0004", "invalid-archive", Error;
    Selection = "E0005", "invalid-selection", Error;
    UnresolvedDependency = "E0006", "unresolved-dependency", Error;
    CsvSyntax = "E0101", "csv-syntax", Error;
    MissingColumn = "E0102", "required-column-missing", Error;
    MisalignedRow = "E0103", "misaligned-row", Error;
    InvalidBoolean = "E0104", "invalid-boolean", Error;
    InvalidNumber = "E0105", "invalid-number", Error;
    InvalidUuid = "E0106", "invalid-uuid", Error;
    DuplicateUuid = "E0107", "duplicate-uuid", Error;
    MissingValue = "E0108", "required-value-missing", Error;
    InvalidValue = "E0109", "invalid-value", Error;
    InvalidLocale = "E0110", "invalid-locale", Error;
    JsonSyntax = "E0111", "json-syntax", Error;
    XmlSyntax = "E0112", "xml-syntax", Error;
    InvalidRegex = "E0113", "invalid-regex", Error;
    FormSchema = "E0114", "invalid-form", Error;
    InvalidReport = "E0115", "invalid-report", Error;
    InvalidFlag = "E0116", "invalid-flag", Error;
    InvalidCriteria = "E0117", "invalid-criteria", Error;
    UnknownConcept = "E0201", "unknown-concept", Error;
    AmbiguousConcept = "E0202", "ambiguous-concept-name", Error;
    UnknownReference = "E0203", "unknown-reference", Error;
    InvalidParent = "E0204", "invalid-parent", Error;
    Cycle = "E0205", "reference-cycle", Error;
    InvalidGlobalProperty = "E0206", "invalid-global-property", Error;
    FrontendConfig = "E0207", "invalid-frontend-config", Error;
    InvalidLogo = "E0208", "invalid-logo", Error;
    WrongReferenceKind = "E0209", "wrong-reference-kind", Error;
    UnknownDomain = "W0001", "uninterpreted-domain", Warning;
    UnknownColumn = "W0002", "unknown-column", Warning;
    IgnoredCells = "W0003", "values-under-empty-header", Warning;
    NumericBoolean = "W0004", "numeric-boolean", Warning;
    DerivedUuid = "W0005", "derived-uuid", Warning;
    NonStandardUuid = "W0006", "non-standard-uuid", Warning;
    UnknownPrivilege = "W0007", "unknown-privilege", Warning;
    InvalidOrder = "W0008", "invalid-order-header", Warning;
    ArchiveName = "W0009", "unrecognised-archive-name", Warning;
    FormUuidMismatch = "W0010", "form-uuid-ignored", Warning;
    StaleBaseline = "W0011", "stale-baseline-entry", Warning;
    DuplicateProperty = "W0012", "duplicate-global-property", Warning;
    PaddedReference = "W0013", "padded-reference", Warning;
    ByteOrderMark = "W0014", "byte-order-mark", Warning;
    StrayFile = "W0015", "stray-file", Warning;
    OclLocale = "W0016", "non-standard-locale", Warning;
    UnsupportedModule = "W0017", "unsupported-module", Warning;
    OrphanMapping = "W0018", "orphan-mapping", Warning;
    MissingDictionary = "W0019", "missing-dictionary", Warning;
    EnglishName = "W0020", "english-name", Warning;
    UnrecordedColumn = "W0021", "unrecorded-column", Warning;
    ForeignDefault = "W0022", "foreign-default", Warning;
    UnshippedModule = "W0023", "unshipped-module", Warning;
    UnmappedEncounterType = "W0024", "unmapped-encounter-type", Warning;
}

/// One reported problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: String,
    pub name: String,
    /// The first line without its `ERROR: ` / `WARNING: ` prefix.
    pub message: String,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn new(code: Code, loc: &Loc, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: code.severity(),
            code: code.id().to_string(),
            name: code.name().to_string(),
            message: message.into(),
            position: loc.position(),
            label: None,
            notes: Vec::new(),
            help: None,
        }
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    fn sort_key(&self) -> (String, u32, u32, String, String) {
        let (path, line, col) = self.position.as_ref().map_or((String::new(), 0, 0), |p| {
            (p.path.clone(), p.line, p.column)
        });
        (path, line, col, self.code.clone(), self.message.clone())
    }

    /// The key a baseline entry matches on: no line or column, so edits elsewhere in a
    /// file do not invalidate it.
    pub fn baseline_key(&self) -> BaselineEntry {
        BaselineEntry {
            code: self.code.clone(),
            path: self
                .position
                .as_ref()
                .map(|p| p.path.clone())
                .unwrap_or_default(),
            message: self.message.clone(),
        }
    }
}

/// Collects diagnostics; the helper methods are the one place each wording lives.
#[derive(Debug, Default)]
pub struct Sink {
    items: Vec<Diagnostic>,
}

impl Sink {
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    pub fn emit(&mut self, code: Code, loc: &Loc, message: impl Into<String>) -> &mut Diagnostic {
        self.items.push(Diagnostic::new(code, loc, message));
        self.items.last_mut().expect("just pushed")
    }

    /// The most recent diagnostic, to add a note to it.
    pub fn last_mut(&mut self) -> Option<&mut Diagnostic> {
        self.items.last_mut()
    }

    pub fn extend(&mut self, other: Sink) {
        self.items.extend(other.items);
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    /// Sorted by path, line, column, code, message; exact duplicates removed.
    pub fn into_sorted(mut self) -> Vec<Diagnostic> {
        self.items.sort_by_key(Diagnostic::sort_key);
        self.items.dedup();
        self.items
    }

    pub fn unknown_concept(&mut self, loc: &Loc, reference: &str) -> &mut Diagnostic {
        let d = self.emit(
            Code::UnknownConcept,
            loc,
            format!("Concept with UUID '{reference}' not found"),
        );
        d.label = Some("not defined by any package or OCL archive".into());
        d.help = Some(
            "refer to a concept by uuid, by SOURCE:CODE, or by its fully specified name".into(),
        );
        d
    }

    pub fn missing_column(&mut self, loc: &Loc, column: &str) -> &mut Diagnostic {
        let d = self.emit(
            Code::MissingColumn,
            loc,
            format!("Column '{column}' is required but missing"),
        );
        d.help = Some(format!("add a '{column}' column to the header line"));
        d
    }

    pub fn duplicate_uuid(&mut self, loc: &Loc, uuid: &str, first: &Loc) -> &mut Diagnostic {
        let first = first
            .position()
            .map(|p| format!("first defined at {}:{}:{}", p.path, p.line, p.column))
            .unwrap_or_else(|| "first defined earlier".into());
        let d = self.emit(
            Code::DuplicateUuid,
            loc,
            format!("UUID '{uuid}' is already used by another entity"),
        );
        d.label = Some("defined again here".into());
        d.notes.push(first);
        d.help = Some(
            "give each entity its own uuid; to override a base entity, define it in a site package"
                .into(),
        );
        d
    }

    pub fn invalid_parent(&mut self, loc: &Loc, parent: &str, location: &str) -> &mut Diagnostic {
        let d = self.emit(
            Code::InvalidParent,
            loc,
            format!("Invalid parent location '{parent}' for location '{location}'"),
        );
        d.label = Some("no location has this name or uuid".into());
        d.help = Some("name an existing location, by name or uuid, or leave the cell empty".into());
        d
    }

    pub fn unknown_reference(&mut self, loc: &Loc, kind: &str, reference: &str) -> &mut Diagnostic {
        let d = self.emit(
            Code::UnknownReference,
            loc,
            format!("{kind} '{reference}' not found"),
        );
        d.label = Some(format!("no {} with this name or uuid", kind.to_lowercase()));
        d
    }
}

/// Output formats of `compiler check` and `compiler build`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    Github,
}

/// Identical findings (same code and message, so the same reference) shown in full before
/// the rest are counted per file.
pub const FOLD_AFTER: usize = 3;

pub fn render(diagnostics: &[Diagnostic], format: Format, color: bool) -> String {
    match format {
        Format::Human => render_report(diagnostics, color),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(diagnostics).expect("diagnostics serialize");
            s.push('\n');
            s
        }
        Format::Github => diagnostics.iter().map(render_github).collect(),
    }
}

/// The human report of a whole check: every finding, except that identical ones after the
/// first `FOLD_AFTER` are folded into "and N more in <file>" lines, then a tally per code.
/// Machine formats (JSON, GitHub) keep every finding.
pub fn render_report(diagnostics: &[Diagnostic], color: bool) -> String {
    use std::collections::BTreeMap;
    /// (code, message): one finding, whatever its place.
    type Key<'a> = (&'a str, &'a str);
    // While an OCL archive cannot be read, the concepts it defines cannot be told from
    // missing ones: the unknown-concept findings are still shown (most name concepts no
    // archive defines), and each unreadable archive says how many of them it may explain.
    let unknown: Vec<&str> = diagnostics
        .iter()
        .filter_map(unknown_concept_reference)
        .collect();
    let archive_note = (!unknown.is_empty() && diagnostics.iter().any(is_unreadable_archive))
        .then(|| {
            let distinct: std::collections::BTreeSet<String> =
                unknown.iter().map(|r| r.to_ascii_uppercase()).collect();
            format!(
                "{} unknown-concept error(s) ({} distinct concepts) are reported: some may name concepts this archive defines; fix the archive and check again to tell them apart",
                unknown.len(),
                distinct.len()
            )
        });
    let mut shown: BTreeMap<Key, usize> = BTreeMap::new();
    // Finding → file → how many were folded, in first-seen order of findings.
    let mut folded: Vec<(Key, BTreeMap<&str, usize>)> = Vec::new();
    let mut folded_index: BTreeMap<Key, usize> = BTreeMap::new();
    let mut out = String::new();
    // The unreadable archives come first, so their note is read before the findings it
    // qualifies.
    let archives_first = diagnostics
        .iter()
        .filter(|d| archive_note.is_some() && is_unreadable_archive(d))
        .chain(
            diagnostics
                .iter()
                .filter(|d| archive_note.is_none() || !is_unreadable_archive(d)),
        );
    for d in archives_first {
        let key = (d.code.as_str(), d.message.as_str());
        let n = shown.entry(key).or_default();
        *n += 1;
        if *n <= FOLD_AFTER {
            if let Some(note) = archive_note.as_ref().filter(|_| is_unreadable_archive(d)) {
                let mut d = d.clone();
                d.notes.push(note.clone());
                out.push_str(&render_human(&d, color));
            } else {
                out.push_str(&render_human(d, color));
            }
            continue;
        }
        let path = d.position.as_ref().map_or("", |p| p.path.as_str());
        let i = *folded_index.entry(key).or_insert_with(|| {
            folded.push((key, BTreeMap::new()));
            folded.len() - 1
        });
        *folded[i].1.entry(path).or_default() += 1;
    }
    for ((code, message), files) in &folded {
        let _ = writeln!(out, "{code}: {message}");
        for (path, n) in files {
            let place = if path.is_empty() { "elsewhere" } else { path };
            let _ = writeln!(out, "  … and {n} more in {place}");
        }
        out.push('\n');
    }
    if diagnostics.len() > 1 {
        let mut tally: BTreeMap<(&str, &str), (usize, std::collections::BTreeSet<&str>)> =
            BTreeMap::new();
        for d in diagnostics {
            let t = tally.entry((d.code.as_str(), d.name.as_str())).or_default();
            t.0 += 1;
            t.1.insert(d.message.as_str());
        }
        out.push_str("findings by code:\n");
        for ((code, name), (n, distinct)) in &tally {
            let distinct = if distinct.len() < *n {
                format!(" ({} distinct)", distinct.len())
            } else {
                String::new()
            };
            let _ = writeln!(out, "  {code} {name:<28} {n:>7}{distinct}");
        }
    }
    out
}

/// Reference of an `unknown-concept` finding (its fixed first line quotes it).
fn unknown_concept_reference(d: &Diagnostic) -> Option<&str> {
    (d.code == Code::UnknownConcept.id())
        .then(|| {
            d.message
                .strip_prefix("Concept with UUID '")?
                .strip_suffix("' not found")
        })
        .flatten()
}

/// Whether a concept reference is a CIEL identifier: `CIEL:5085`, or the CIEL uuid form
/// (`5085AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`).
pub fn is_ciel_reference(reference: &str) -> bool {
    let upper = reference.to_ascii_uppercase();
    if let Some(code) = upper.strip_prefix("CIEL:") {
        return !code.is_empty() && code.bytes().all(|b| b.is_ascii_digit());
    }
    let digits = upper.bytes().take_while(u8::is_ascii_digit).count();
    upper.len() == 36 && digits > 0 && upper.bytes().skip(digits).all(|b| b == b'A')
}

/// Fewer distinct missing concepts than this are ordinary mistakes; more mean the package
/// was written for a dictionary it does not contain.
pub const MISSING_DICTIONARY_THRESHOLD: usize = 10;

/// An OCL archive that could not be read at all: not a zip, too large, or its export not
/// UTF-8 or not JSON.
fn is_unreadable_archive(d: &Diagnostic) -> bool {
    let unreadable = [
        Code::Io,
        Code::InvalidUtf8,
        Code::TooLarge,
        Code::BadArchive,
        Code::JsonSyntax,
    ];
    unreadable.iter().any(|c| c.id() == d.code)
        && d.position
            .as_ref()
            .is_some_and(|p| p.path.contains("/ocl/") && p.path.contains(".zip"))
}

/// Adds the findings that only make sense once every stage has run: when many distinct
/// concepts are missing (and no archive failed to read, which would explain them), one
/// `missing-dictionary` summary first. Its message is fixed, so a baseline keeps matching
/// it while the counts (in its notes) change.
pub fn summarise(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    if diagnostics.iter().any(is_unreadable_archive) {
        return diagnostics;
    }
    let mut places = 0;
    let mut distinct = std::collections::BTreeSet::new();
    for d in &diagnostics {
        if let Some(r) = unknown_concept_reference(d) {
            places += 1;
            distinct.insert(r.to_ascii_uppercase());
        }
    }
    if distinct.len() >= MISSING_DICTIONARY_THRESHOLD {
        let ciel = distinct.iter().filter(|r| is_ciel_reference(r)).count();
        let summary = Diagnostic::new(
            Code::MissingDictionary,
            &Loc::None,
            "The content refers to many concepts it does not define: it was written for a dictionary it does not contain",
        )
        .note(format!(
            "{} distinct concepts are missing, {ciel} of them named by CIEL identifier, in {places} places",
            distinct.len()
        ))
        .help(
            "declare the dictionary as a dependency: its OCL export in content-packages/<name>/openmrs_config/ocl/ (or configuration/backend_configuration/ocl/) and content.<name>=<version> in content.properties; the unknown-concept errors below are the details",
        );
        diagnostics.insert(0, summary);
    }
    diagnostics
}

/// rustc-style: the project's fixed first line, then the located snippet, notes and help.
pub fn render_human(d: &Diagnostic, color: bool) -> String {
    use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
    let mut out = String::new();
    let prefix = match d.severity {
        Severity::Error => "ERROR",
        Severity::Warning => "WARNING",
    };
    if color {
        let code = if d.is_error() {
            "\x1b[1;31m"
        } else {
            "\x1b[1;33m"
        };
        let _ = writeln!(out, "{code}{prefix}\x1b[0m\x1b[1m: {}\x1b[0m", d.message);
    } else {
        let _ = writeln!(out, "{prefix}: {}", d.message);
    }
    let level = if d.is_error() {
        Level::ERROR
    } else {
        Level::WARNING
    };
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let code_note = format!("code: {} {}", d.code, d.name);
    match &d.position {
        Some(Position {
            snippet: Some(line_text),
            line,
            snippet_column,
            len,
            path,
            ..
        }) => {
            let start = byte_index(line_text, *snippet_column as usize - 1);
            let end = byte_index(
                line_text,
                *snippet_column as usize - 1 + (*len).max(1) as usize,
            );
            let mut group = Group::with_level(level.clone()).element(
                Snippet::source(line_text.as_str())
                    .line_start(*line as usize)
                    .path(path.as_str())
                    .fold(false)
                    .annotation(
                        AnnotationKind::Primary
                            .span(start..end.max(start))
                            .label(d.label.as_deref().unwrap_or("")),
                    ),
            );
            for n in &d.notes {
                group = group.element(Level::NOTE.message(n.as_str()));
            }
            group = group.element(Level::NOTE.message(code_note.as_str()));
            if let Some(h) = &d.help {
                group = group.element(Level::HELP.message(h.as_str()));
            }
            out.push_str(&renderer.render(&[group]));
            out.push('\n');
        }
        other => {
            if let Some(p) = other {
                if p.line > 0 {
                    let _ = writeln!(out, " --> {}:{}:{}", p.path, p.line, p.column);
                } else {
                    let _ = writeln!(out, " --> {}", p.path);
                }
            }
            if let Some(l) = &d.label {
                let _ = writeln!(out, "  = {l}");
            }
            for n in &d.notes {
                let _ = writeln!(out, "  = note: {n}");
            }
            let _ = writeln!(out, "  = note: {code_note}");
            if let Some(h) = &d.help {
                let _ = writeln!(out, "  = help: {h}");
            }
        }
    }
    out.push('\n');
    out
}

fn byte_index(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(i, _)| i)
}

/// GitHub Actions workflow commands (`::error file=…,line=…::message`).
pub fn render_github(d: &Diagnostic) -> String {
    let level = if d.is_error() { "error" } else { "warning" };
    let mut props = String::new();
    if let Some(p) = &d.position {
        let _ = write!(props, " file={}", escape_property(&p.path));
        if p.line > 0 {
            let _ = write!(props, ",line={},col={}", p.line, p.column);
        }
        let _ = write!(
            props,
            ",title={}",
            escape_property(&format!("{} {}", d.code, d.name))
        );
    } else {
        let _ = write!(
            props,
            " title={}",
            escape_property(&format!("{} {}", d.code, d.name))
        );
    }
    let mut message = d.message.clone();
    if let Some(h) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(h);
    }
    format!("::{level}{props}::{}\n", escape_data(&message))
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// A recorded diagnostic that is accepted for now.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BaselineEntry {
    pub code: String,
    pub path: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    pub entries: Vec<BaselineEntry>,
}

impl Baseline {
    /// Reads a baseline file written by `--write-baseline`.
    pub fn read(path: &std::path::Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))
    }

    pub fn from_diagnostics(diagnostics: &[Diagnostic]) -> Baseline {
        let mut entries: Vec<_> = diagnostics.iter().map(Diagnostic::baseline_key).collect();
        entries.sort();
        entries.dedup();
        Baseline { entries }
    }

    /// Splits diagnostics into (new ones, baselined ones) and adds a warning for each
    /// baseline entry that no longer occurs.
    pub fn apply(
        &self,
        diagnostics: Vec<Diagnostic>,
        baseline_path: &str,
    ) -> (Vec<Diagnostic>, usize) {
        let known: std::collections::BTreeSet<_> = self.entries.iter().collect();
        let mut seen = std::collections::BTreeSet::new();
        let mut kept = Vec::new();
        let mut suppressed = 0;
        for d in diagnostics {
            let key = d.baseline_key();
            if known.contains(&key) {
                suppressed += 1;
                seen.insert(key);
            } else {
                kept.push(d);
            }
        }
        for stale in self.entries.iter().filter(|e| !seen.contains(*e)) {
            kept.push(
                Diagnostic::new(
                    Code::StaleBaseline,
                    &Loc::File(baseline_path.into()),
                    format!(
                        "Baseline entry no longer occurs: {} in {}: {}",
                        stale.code, stale.path, stale.message
                    ),
                )
                .help("remove the entry, or write the baseline again with --write-baseline"),
            );
        }
        (kept, suppressed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(code: Code, path: &str, line: u32, message: &str) -> Diagnostic {
        let mut d = Diagnostic::new(code, &Loc::None, message);
        d.position = Some(Position {
            path: path.into(),
            line,
            column: 1,
            len: 0,
            snippet: None,
            snippet_column: 0,
        });
        d
    }

    #[test]
    fn identical_findings_fold_after_a_few_and_a_tally_ends_the_report() {
        let mut all = Vec::new();
        for line in 1..=5 {
            all.push(at(
                Code::UnknownConcept,
                "a.csv",
                line,
                "Concept with UUID 'X' not found",
            ));
        }
        for line in 1..=4 {
            all.push(at(
                Code::UnknownConcept,
                "b.csv",
                line,
                "Concept with UUID 'X' not found",
            ));
        }
        all.push(at(
            Code::UnknownConcept,
            "b.csv",
            9,
            "Concept with UUID 'Y' not found",
        ));
        let report = render_report(&all, false);
        assert_eq!(
            report
                .matches("ERROR: Concept with UUID 'X' not found")
                .count(),
            3
        );
        assert_eq!(
            report
                .matches("ERROR: Concept with UUID 'Y' not found")
                .count(),
            1
        );
        assert!(report.contains("E0201: Concept with UUID 'X' not found\n  … and 2 more in a.csv\n  … and 4 more in b.csv\n"), "{report}");
        assert!(
            report.ends_with(
                "findings by code:\n  E0201 unknown-concept                   10 (2 distinct)\n"
            ),
            "{report}"
        );
        // Machine formats keep every finding.
        assert_eq!(render(&all, Format::Github, false).lines().count(), 10);
    }

    #[test]
    fn ciel_references_are_recognised_in_both_forms() {
        assert!(is_ciel_reference("CIEL:5085"));
        assert!(is_ciel_reference("ciel:5085"));
        assert!(is_ciel_reference("5085AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
        assert!(!is_ciel_reference("5085AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB"));
        assert!(!is_ciel_reference("DRC-EMR:5085"));
        assert!(!is_ciel_reference("CIEL:"));
    }
}
