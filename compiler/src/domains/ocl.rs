//! `ocl/*.zip`: Open Concept Lab exports (`export.json` inside each zip).
//!
//! Archives are independent, so they are inflated and parsed in parallel; the merge that
//! follows runs in path order: a later archive replaces a concept's class, datatype,
//! names, descriptions, numeric extras, set and retired flags, while answers, set members
//! and mappings accumulate (docs/content.md, "Layers and overrides"). Mapping targets that are not
//! known yet are retried once every archive is merged, so archive order does not decide
//! whether a reference resolves.

use crate::csvtable::is_standard_uuid;
use crate::diagnostics::{Code, Sink};
use crate::domains::Progress;
use crate::source::Loc;
use crate::store::Entry;
use crate::vfs::{InputFile, Layer, read_zip_member};
use model::*;
use rayon::prelude::*;
use serde::{Deserialize, Deserializer};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The openconceptlab module's namespace for version-5 uuids.
const OCL_NAMESPACE: uuid::Uuid = uuid::uuid!("672c6cb2-4f47-4cb0-9fca-b5f6116cd33a");

#[derive(Default)]
pub struct OclLoaded {
    /// Merged concepts by uuid.
    pub concepts: BTreeMap<String, Entry<Concept>>,
    pub archives: Vec<OclArchive>,
}

/// Accepts a string, a number or a boolean as text; anything else reads as absent.
/// Works on the parser's tokens directly (no intermediate `Value`).
struct LenientString;

impl<'de> serde::de::Visitor<'de> for LenientString {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string, a number or a boolean")
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(LenientString)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(None)
    }
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(LenientString)
}

/// Accepts booleans, 0/1 and their spellings as text; anything else reads as absent.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(
        lenient_string(d)?.and_then(|s| match s.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Some(true),
            "false" | "0" | "no" => Some(false),
            _ => None,
        }),
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OclName {
    #[serde(deserialize_with = "lenient_string")]
    name: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    locale: Option<String>,
    #[serde(deserialize_with = "lenient_bool")]
    locale_preferred: Option<bool>,
    #[serde(deserialize_with = "lenient_string")]
    name_type: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    external_id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    uuid: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OclDescription {
    #[serde(deserialize_with = "lenient_string")]
    description: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    locale: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    external_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OclConcept {
    #[serde(deserialize_with = "lenient_string")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    external_id: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    concept_class: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    datatype: Option<String>,
    names: Option<Vec<OclName>>,
    descriptions: Option<Vec<OclDescription>>,
    #[serde(deserialize_with = "lenient_bool")]
    retired: Option<bool>,
    #[serde(deserialize_with = "lenient_string")]
    url: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    source: Option<String>,
    extras: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OclMapping {
    #[serde(deserialize_with = "lenient_string")]
    map_type: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    from_concept_url: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    from_source_name: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    from_concept_code: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    to_concept_url: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    to_source_name: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    to_concept_code: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    external_id: Option<String>,
    #[serde(deserialize_with = "lenient_bool")]
    retired: Option<bool>,
    #[serde(deserialize_with = "lenient_string")]
    url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Export {
    #[serde(rename = "type", deserialize_with = "lenient_string")]
    kind: Option<String>,
    concepts: Option<Vec<OclConcept>>,
    mappings: Option<Vec<OclMapping>>,
}

struct ParsedArchive {
    member: Arc<str>,
    layer: Layer,
    concepts: Vec<(OclConcept, Loc)>,
    mappings: Vec<(OclMapping, Loc)>,
    sink: Sink,
    archive: OclArchive,
}

/// Parses `<prefix>_<content>_v<N>_autoexpand-<N>...zip` into (content, version).
pub fn parse_archive_name(file_name: &str) -> Option<(String, String)> {
    let stem = file_name.strip_suffix(".zip")?;
    let (before, _) = stem.split_once("_autoexpand-")?;
    let (head, version) = before.rsplit_once("_v")?;
    // OCL version ids are free-form (`3`, `2024-03-15`, `1.2.0-beta`, `v2`) but start with
    // a digit: `drc_hiv_visits_autoexpand-1.zip` has no version.
    let version = version.trim_start_matches(['v', 'V']);
    if !version.starts_with(|c: char| c.is_ascii_digit()) || version.contains(char::is_whitespace) {
        return None;
    }
    let (_, content) = head.split_once('_')?;
    (!content.is_empty()).then(|| (content.to_string(), version.to_string()))
}

pub fn load(files: &[&InputFile], progress: &dyn Progress, sink: &mut Sink) -> OclLoaded {
    progress.start(files.len() as u64);
    let mut merger = Merger::default();
    // Parse as many archives at once as there are threads, then merge them in path order
    // before parsing the next ones: parsed archives never pile up in memory.
    let width = rayon::current_num_threads().max(1);
    for chunk in files.chunks(width) {
        let parsed: Vec<ParsedArchive> = chunk
            .par_iter()
            .map(|f| {
                let p = parse_archive(f);
                progress.advance();
                p
            })
            .collect();
        for archive in parsed {
            sink.extend(archive.sink);
            for (concept, loc) in archive.concepts {
                merger.add_concept(concept, loc, archive.layer, &archive.member, sink);
            }
            for (mapping, loc) in archive.mappings {
                if let Some(deferred) =
                    merger.add_mapping(mapping, loc, &archive.member, false, sink)
                {
                    merger.deferred.push(deferred);
                }
            }
            merger.loaded.archives.push(archive.archive);
        }
    }
    progress.finish();
    for (mapping, loc, member) in std::mem::take(&mut merger.deferred) {
        merger.add_mapping(mapping, loc, &member, true, sink);
    }
    merger.loaded
}

fn parse_archive(f: &InputFile) -> ParsedArchive {
    let mut sink = Sink::default();
    let member: Arc<str> = format!("{}!/export.json", f.display).into();
    let file_name = f.rel.rsplit('/').next().unwrap_or(&f.rel);
    let name = parse_archive_name(file_name);
    if name.is_none() {
        sink.emit(
            Code::ArchiveName,
            &Loc::File(f.display.clone()),
            format!("Archive name '{file_name}' does not follow <prefix>_<content>_v<N>_autoexpand-<N>…zip"),
        )
        .help = Some("the name is accepted, but its content name and version are unknown".into());
    }
    let mut out = ParsedArchive {
        member: member.clone(),
        layer: f.layer,
        concepts: Vec::new(),
        mappings: Vec::new(),
        sink: Sink::default(),
        archive: OclArchive {
            path: f.display.to_string(),
            content_name: name.as_ref().map(|n| n.0.clone()),
            version: name.map(|n| n.1),
            concept_count: 0,
            mapping_count: 0,
        },
    };
    let bytes = match read_zip_member(&f.bytes, "export.json", &f.display) {
        Ok(b) => b,
        Err(d) => {
            sink.push(*d);
            out.sink = sink;
            return out;
        }
    };
    let Some(text) = crate::vfs::decode_bytes(member.clone(), bytes, &mut sink) else {
        out.sink = sink;
        return out;
    };
    let export: Export = match serde_json::from_str(&text.text) {
        Ok(e) => e,
        Err(e) => {
            let loc = Loc::Point {
                path: member.clone(),
                line: e.line() as u32,
                col: e.column() as u32,
            };
            sink.emit(Code::JsonSyntax, &loc, format!("Invalid JSON: {e}"));
            out.sink = sink;
            return out;
        }
    };
    let (concept_starts, mapping_starts) = element_positions(&text.text);
    let point = |starts: &[(u32, u32)], i: usize| match starts.get(i) {
        Some(&(line, col)) => Loc::Point {
            path: member.clone(),
            line,
            col,
        },
        None => Loc::File(member.clone()),
    };
    match export.concepts {
        Some(concepts) => {
            out.archive.concept_count = concepts.len() as u32;
            out.concepts = concepts
                .into_iter()
                .enumerate()
                .map(|(i, c)| (c, point(&concept_starts, i)))
                .collect();
        }
        None => {
            let single = export.kind.as_deref() == Some("Concept");
            sink.emit(
                Code::BadArchive,
                &text.whole(),
                if single {
                    "Export holds a single concept, not a collection: it has no 'concepts' list"
                        .to_string()
                } else {
                    "Export has no 'concepts' list".to_string()
                },
            )
            .help = Some(
                "export a collection version from OCL; its mappings need their concepts".into(),
            );
        }
    }
    if let Some(mappings) = export.mappings {
        out.archive.mapping_count = mappings.len() as u32;
        out.mappings = mappings
            .into_iter()
            .enumerate()
            .map(|(i, m)| (m, point(&mapping_starts, i)))
            .collect();
    }
    out.sink = sink;
    out
}

/// Line and column (1-based, in characters) where each element of the top-level
/// `concepts` and `mappings` arrays starts. One linear pass over the text.
/// (line, column) pairs.
type Starts = Vec<(u32, u32)>;

fn element_positions(text: &str) -> (Starts, Starts) {
    let b = text.as_bytes();
    let (mut concepts, mut mappings) = (Vec::new(), Vec::new());
    let (mut line, mut col) = (1u32, 0u32);
    let mut depth = 0u32;
    let mut i = 0;
    let mut last_key: Option<(usize, usize)> = None;
    let mut array: Option<bool> = None; // Some(true) = concepts, Some(false) = mappings
    let mut expecting_value_after_key = false;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            col = 0;
        } else if c & 0xC0 != 0x80 {
            col += 1;
        }
        match c {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    if i < b.len() && b[i] & 0xC0 != 0x80 {
                        col += 1;
                    }
                    i += 1;
                }
                col += 1; // closing quote
                if depth == 1 {
                    last_key = Some((start, i));
                }
            }
            b':' if depth == 1 => expecting_value_after_key = true,
            b'[' | b'{' => {
                if depth == 1 && c == b'[' && expecting_value_after_key {
                    array = last_key.and_then(|(s, e)| match &text[s..e] {
                        "concepts" => Some(true),
                        "mappings" => Some(false),
                        _ => None,
                    });
                } else if depth == 2 && c == b'{' {
                    match array {
                        Some(true) => concepts.push((line, col)),
                        Some(false) => mappings.push((line, col)),
                        None => {}
                    }
                }
                expecting_value_after_key = false;
                depth += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 1 {
                    array = None;
                }
            }
            b',' if depth == 1 => expecting_value_after_key = false,
            _ => {}
        }
        i += 1;
    }
    (concepts, mappings)
}

#[derive(Default)]
struct Merger {
    loaded: OclLoaded,
    /// Concept url → uuid.
    by_url: HashMap<String, String>,
    /// `SOURCE:CODE` (normalised) of SAME-AS mappings → uuid.
    same_as: HashMap<String, String>,
    deferred: Vec<(OclMapping, Loc, Arc<str>)>,
}

/// Source names match after upper-casing and removing spaces, `-` and `_`
/// (`SNOMED-CT` = `SNOMED CT`), as the importer does.
pub fn normalise_source(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_uppercase)
        .collect()
}

fn same_as_key(source: &str, code: &str) -> String {
    format!(
        "{}:{}",
        normalise_source(source),
        code.trim().to_uppercase()
    )
}

fn normalise_name_type(t: Option<&str>) -> ConceptNameType {
    // Upper case, `-` and `_` read as spaces, compared without allocating.
    let same = |a: &str, b: &str| {
        a.len() == b.len()
            && a.bytes().zip(b.bytes()).all(|(x, y)| {
                let x = if x == b'-' || x == b'_' {
                    b' '
                } else {
                    x.to_ascii_uppercase()
                };
                x == y
            })
    };
    let t = t.unwrap_or("").trim();
    if same(t, "FULLY SPECIFIED") {
        ConceptNameType::FullySpecified
    } else if same(t, "SHORT") {
        ConceptNameType::Short
    } else if same(t, "INDEX TERM") {
        ConceptNameType::IndexTerm
    } else {
        ConceptNameType::Synonym
    }
}

fn extra_f64(extras: &serde_json::Map<String, serde_json::Value>, key: &str) -> Option<f64> {
    match extras.get(key)? {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn extra_bool(extras: &serde_json::Map<String, serde_json::Value>, key: &str) -> Option<bool> {
    match extras.get(key)? {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::Number(n) => Some(n.as_f64() != Some(0.0)),
        serde_json::Value::String(s) => Some(matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "1" | "yes"
        )),
        _ => None,
    }
}

/// 32 hexadecimal digits: a uuid written without its dashes.
fn is_dashless_uuid(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Merger {
    fn add_concept(
        &mut self,
        c: OclConcept,
        loc: Loc,
        layer: Layer,
        member: &Arc<str>,
        sink: &mut Sink,
    ) {
        let url = c.url.clone().unwrap_or_default();
        let uuid = match c.external_id.as_deref().filter(|s| !s.trim().is_empty()) {
            Some(ext) if is_standard_uuid(ext.trim()) => ext.trim().to_string(),
            // OCL keeps what the dictionary's author wrote, and OpenMRS stores it as it
            // comes (a uuid is a string of at most 38 characters there): the reference
            // application's SOAP template exports its concepts' uuids without their dashes,
            // and its forms name them so.
            Some(ext) if is_dashless_uuid(ext.trim()) => {
                sink.emit(
                    Code::NonStandardUuid,
                    &loc,
                    format!("External id '{ext}' is a uuid without its dashes: kept as written, as OpenMRS keeps it"),
                )
                .help = Some("the dashed form (8-4-4-4-12) is what other tools expect; forms must name the concept as written here".into());
                ext.trim().to_string()
            }
            Some(ext) => {
                sink.emit(Code::InvalidUuid, &loc, format!("Invalid UUID '{ext}' in the concept's external_id"))
                    .help = Some("a concept uuid is 8-4-4-4-12 hexadecimal digits, or 36 letters and digits (CIEL style)".into());
                return;
            }
            None => {
                let existing = match (&c.source, &c.id) {
                    (Some(s), Some(id)) => self.same_as.get(&same_as_key(s, id)).cloned(),
                    _ => None,
                };
                match existing {
                    Some(u) => u,
                    None if !url.is_empty() => {
                        uuid::Uuid::new_v5(&OCL_NAMESPACE, url.as_bytes()).to_string()
                    }
                    None => {
                        sink.emit(
                            Code::MissingValue,
                            &loc,
                            "OCL concept has neither external_id nor url",
                        )
                        .help = Some(
                            "an OCL concept needs an external_id or a url to get a uuid".into(),
                        );
                        return;
                    }
                }
            }
        };
        let datatype_raw = c.datatype.clone().unwrap_or_else(|| "N/A".into());
        let datatype = if datatype_raw.eq_ignore_ascii_case("none") {
            "N/A".to_string()
        } else {
            match crate::builtin::datatype(&datatype_raw) {
                Some(d) => d.0.to_string(),
                None => {
                    sink.unknown_reference(&loc, "Concept datatype", &datatype_raw);
                    return;
                }
            }
        };
        let extras = c.extras.unwrap_or_default();
        let mut names = Vec::new();
        for n in c.names.unwrap_or_default() {
            let Some(text) = n.name.filter(|t| !t.trim().is_empty()) else {
                continue;
            };
            let locale = n.locale.unwrap_or_else(|| "en".into());
            // `eng` is a valid Java locale, but the rest of OpenMRS content uses `en`.
            let two_letter = locale.split('_').next().is_some_and(|l| l.len() == 2);
            if !crate::csvtable::is_locale(&locale) || !two_letter {
                sink.emit(
                    Code::OclLocale,
                    &loc,
                    format!("Name '{text}' has the locale '{locale}'"),
                )
                .help = Some("OpenMRS locales look like `fr`, `en` or `en_GB`".into());
            }
            let name_type = normalise_name_type(n.name_type.as_deref());
            let name_uuid = match n.external_id.filter(|e| !e.is_empty()) {
                Some(e) => e,
                None => {
                    let key = n.uuid.unwrap_or_else(|| format!("{locale}/{text}"));
                    uuid::Uuid::new_v5(&OCL_NAMESPACE, format!("{url}/names/{key}").as_bytes())
                        .to_string()
                }
            };
            names.push(ConceptName {
                uuid: name_uuid,
                name: text,
                locale,
                name_type,
                locale_preferred: n.locale_preferred.unwrap_or(false),
            });
        }
        let descriptions = c
            .descriptions
            .unwrap_or_default()
            .into_iter()
            .filter_map(|d| {
                let text = d.description.filter(|t| !t.trim().is_empty())?;
                let locale = d.locale.unwrap_or_else(|| "en".into());
                let uuid = d.external_id.unwrap_or_else(|| {
                    uuid::Uuid::new_v5(
                        &OCL_NAMESPACE,
                        format!("{url}/descriptions/{locale}/{text}").as_bytes(),
                    )
                    .to_string()
                });
                Some(ConceptDescription {
                    uuid,
                    description: text,
                    locale,
                })
            })
            .collect();
        let numeric = (datatype == "Numeric").then(|| ConceptNumeric {
            hi_absolute: extra_f64(&extras, "hi_absolute"),
            hi_critical: extra_f64(&extras, "hi_critical"),
            hi_normal: extra_f64(&extras, "hi_normal"),
            low_absolute: extra_f64(&extras, "low_absolute"),
            low_critical: extra_f64(&extras, "low_critical"),
            low_normal: extra_f64(&extras, "low_normal"),
            units: extras
                .get("units")
                .and_then(|v| v.as_str())
                .map(str::to_string),
            allow_decimal: extra_bool(&extras, "allow_decimal")
                .or_else(|| extra_bool(&extras, "precise"))
                .unwrap_or(false),
            display_precision: None,
        });
        let is_set = extra_bool(&extras, "is_set").unwrap_or(false);
        let handler = extras
            .get("handler")
            .and_then(|v| v.as_str())
            .map(str::to_string);
        if !url.is_empty() {
            self.by_url.insert(url.clone(), uuid.clone());
        }
        let class = c.concept_class.unwrap_or_else(|| "Misc".into());
        let retired = c.retired.unwrap_or(false);
        let origin = ConceptOrigin::Ocl(member.to_string());
        match self.loaded.concepts.get_mut(&uuid) {
            Some(existing) => {
                // A later archive replaces what it describes; relations accumulate.
                let v = &mut existing.value;
                v.class = class;
                v.datatype = datatype;
                v.names = names;
                v.descriptions = descriptions;
                v.numeric = numeric;
                v.is_set = is_set || !v.set_members.is_empty();
                v.retired = retired;
                v.complex_handler = handler;
                v.origin = origin;
                existing.loc = loc;
                existing.layer = existing.layer.max(layer);
            }
            None => {
                let concept = Concept {
                    uuid: uuid.clone(),
                    class,
                    datatype,
                    is_set,
                    retired,
                    version: None,
                    names,
                    descriptions,
                    mappings: Vec::new(),
                    answers: Vec::new(),
                    set_members: Vec::new(),
                    numeric,
                    complex_handler: handler,
                    origin,
                };
                self.loaded
                    .concepts
                    .insert(uuid, Entry::new(concept, layer, loc));
            }
        }
    }

    fn find(&self, url: Option<&str>, source: Option<&str>, code: Option<&str>) -> Option<String> {
        if let Some(u) = url.and_then(|u| self.by_url.get(u)) {
            return Some(u.clone());
        }
        match (source, code) {
            (Some(s), Some(c)) => self.same_as.get(&same_as_key(s, c)).cloned(),
            _ => None,
        }
    }

    /// Applies a mapping. When a concept it needs is unknown and `last_try` is false, the
    /// mapping is handed back to be retried after every archive is merged.
    fn add_mapping(
        &mut self,
        m: OclMapping,
        loc: Loc,
        member: &Arc<str>,
        last_try: bool,
        sink: &mut Sink,
    ) -> Option<(OclMapping, Loc, Arc<str>)> {
        let map_type = m.map_type.clone().unwrap_or_default();
        let describe = |url: &Option<String>, source: &Option<String>, code: &Option<String>| {
            url.clone().unwrap_or_else(|| {
                format!(
                    "{}:{}",
                    source.as_deref().unwrap_or(""),
                    code.as_deref().unwrap_or("")
                )
            })
        };
        let from_described = describe(
            &m.from_concept_url,
            &m.from_source_name,
            &m.from_concept_code,
        );
        let Some(from) = self.find(
            m.from_concept_url.as_deref(),
            m.from_source_name.as_deref(),
            m.from_concept_code.as_deref(),
        ) else {
            if !last_try {
                return Some((m, loc, member.clone()));
            }
            // Exports often carry mappings of concepts they leave out; such a mapping has
            // nothing to attach to, and OpenMRS would skip it too.
            let d = sink.emit(
                Code::OrphanMapping,
                &loc,
                format!("OCL mapping of concept '{from_described}', which no archive defines, is ignored"),
            );
            d.notes
                .extend(m.url.iter().map(|url| format!("mapping {url}")));
            d.help = Some(
                "add the concept to an archive, or export the collection with its concepts".into(),
            );
            return None;
        };
        let retired = m.retired.unwrap_or(false);
        match map_type.to_uppercase().as_str() {
            kind @ ("Q-AND-A" | "CONCEPT-SET") => {
                let Some(to) = self.find(
                    m.to_concept_url.as_deref(),
                    m.to_source_name.as_deref(),
                    m.to_concept_code.as_deref(),
                ) else {
                    if !last_try {
                        return Some((m, loc, member.clone()));
                    }
                    let owner = self
                        .loaded
                        .concepts
                        .get(&from)
                        .and_then(|c| {
                            // English if it has it, else any name it has.
                            c.value
                                .display_name("en", &[])
                                .or_else(|| c.value.names.first())
                                .map(|n| n.name.clone())
                        })
                        .unwrap_or_default();
                    let role = if kind == "Q-AND-A" {
                        "an answer"
                    } else {
                        "a set member"
                    };
                    let d = sink.unknown_concept(
                        &loc,
                        &describe(&m.to_concept_url, &m.to_source_name, &m.to_concept_code),
                    );
                    d.notes.push(format!(
                        "{role} of concept '{from_described}' ({owner}), by a {kind} mapping"
                    ));
                    d.notes
                        .extend(m.url.iter().map(|url| format!("mapping {url}")));
                    return None;
                };
                let concept = &mut self
                    .loaded
                    .concepts
                    .get_mut(&from)
                    .expect("found above")
                    .value;
                let list = if kind == "Q-AND-A" {
                    &mut concept.answers
                } else {
                    &mut concept.set_members
                };
                if retired {
                    list.retain(|u| u != &to);
                } else if !list.contains(&to) {
                    list.push(to);
                }
                if kind == "CONCEPT-SET" && !concept.set_members.is_empty() {
                    concept.is_set = true;
                }
            }
            _ => {
                if retired {
                    return None;
                }
                let source = m.to_source_name.clone().unwrap_or_default();
                let code = m.to_concept_code.clone().or_else(|| {
                    m.to_concept_url
                        .as_deref()
                        .and_then(|u| u.trim_end_matches('/').rsplit('/').next())
                        .map(str::to_string)
                });
                let Some(code) = code.filter(|c| !c.is_empty()) else {
                    sink.emit(Code::MissingValue, &loc, "OCL mapping has no target code")
                        .help =
                        Some("set to_concept_code (or a to_concept_url ending in the code)".into());
                    return None;
                };
                if source.is_empty() {
                    sink.emit(
                        Code::MissingValue,
                        &loc,
                        "OCL mapping has no target source name",
                    );
                    return None;
                }
                if map_type.eq_ignore_ascii_case("SAME-AS") {
                    self.same_as
                        .entry(same_as_key(&source, &code))
                        .or_insert_with(|| from.clone());
                }
                let uuid = m
                    .external_id
                    .clone()
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| {
                        let key = m
                            .url
                            .clone()
                            .unwrap_or_else(|| format!("{from}/{map_type}/{source}/{code}"));
                        uuid::Uuid::new_v5(&OCL_NAMESPACE, key.as_bytes()).to_string()
                    });
                let concept = &mut self
                    .loaded
                    .concepts
                    .get_mut(&from)
                    .expect("found above")
                    .value;
                let duplicate = concept.mappings.iter().any(|x| {
                    x.map_type.eq_ignore_ascii_case(&map_type)
                        && normalise_source(&x.source) == normalise_source(&source)
                        && x.code.eq_ignore_ascii_case(&code)
                });
                if !duplicate {
                    concept.mappings.push(ConceptMapping {
                        uuid,
                        map_type,
                        source,
                        code,
                    });
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_names() {
        assert_eq!(
            parse_archive_name("drc_diagnoses_v3_autoexpand-20260101.zip"),
            Some(("diagnoses".into(), "3".into()))
        );
        assert_eq!(
            parse_archive_name("org_lab_tests_v12_autoexpand-1.zip"),
            Some(("lab_tests".into(), "12".into()))
        );
        assert_eq!(
            parse_archive_name("moh_national_dictionary_v2024-03-15_autoexpand-20240315.zip"),
            Some(("national_dictionary".into(), "2024-03-15".into()))
        );
        assert_eq!(
            parse_archive_name("ciel_ciel_vv20250401_autoexpand-1.zip"),
            Some(("ciel".into(), "20250401".into()))
        );
        assert_eq!(parse_archive_name("export.zip"), None);
        assert_eq!(parse_archive_name("drc_hiv_visits_autoexpand-1.zip"), None);
    }

    #[test]
    fn element_positions_point_at_each_object() {
        let text =
            "{\"id\":\"x\",\"concepts\":[\n {\"a\":[{}]},\n {\"b\":\"}\"}],\"mappings\":[{}]}";
        let (c, m) = element_positions(text);
        assert_eq!(c, vec![(2, 2), (3, 2)]);
        assert_eq!(m, vec![(3, 25)]);
    }

    #[test]
    fn name_types_normalise() {
        assert_eq!(
            normalise_name_type(Some("Fully-Specified")),
            ConceptNameType::FullySpecified
        );
        assert_eq!(
            normalise_name_type(Some("INDEX_TERM")),
            ConceptNameType::IndexTerm
        );
        assert_eq!(normalise_name_type(None), ConceptNameType::Synonym);
        assert_eq!(normalise_source("SNOMED-CT"), normalise_source("snomed ct"));
    }
}
