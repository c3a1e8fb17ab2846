//! The front-end configuration: the distribution's translations
//! (`frontend/config/translations.json`, beneath everything), the dependencies'
//! configuration files, `frontend/config/config.json`, and a site's
//! `sites/<site>/frontend/config.json`, deep-merged in that order (objects merge, arrays
//! and scalars are replaced, as O3 merges config files), then checked against the compiled
//! metadata: module keys, translation overrides' place and shape,
//! `…Uuid` / `…Uuids` settings resolving to an entity of the right kind, brand colours,
//! `enabled` toggles, and the logo.

use crate::diagnostics::{Code, Sink};
use crate::source::{Loc, TextFile};
use crate::vfs::{ExtraFile, Project};
use model::Content;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Largest logo accepted.
const MAX_LOGO_BYTES: usize = 2 * 1024 * 1024;

pub struct Frontend {
    pub config_json: String,
    pub logo_png: Vec<u8>,
}

fn parse(file: &ExtraFile, sink: &mut Sink) -> Option<(Arc<TextFile>, Map<String, Value>)> {
    let text = crate::vfs::decode_bytes(file.display.clone(), file.bytes.clone(), sink)?;
    match serde_json::from_str::<Value>(&text.text) {
        Ok(Value::Object(map)) => Some((text, map)),
        Ok(_) => {
            sink.emit(
                Code::FrontendConfig,
                &text.whole(),
                "Front-end configuration must be a JSON object keyed by module name",
            );
            None
        }
        Err(e) => {
            let (line, col) = (e.line() as u32, e.column() as u32);
            sink.emit(
                Code::JsonSyntax,
                &Loc::Point {
                    path: text.path.clone(),
                    line,
                    col,
                },
                format!("Invalid JSON: {e}"),
            );
            None
        }
    }
}

/// Objects merge key by key; anything else in `over` replaces `base`.
pub fn deep_merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

/// Kinds of entity a `…Uuid` setting can name, guessed from the setting's name.
fn kind_of(key: &str) -> &'static str {
    // The notes app's `formConceptUuid` names the visit note's form, despite its name.
    if key == "formConceptUuid" {
        return "form";
    }
    let k = key.to_lowercase();
    for (needle, kind) in [
        ("personattribute", "person attribute type"),
        // Before "queue": the service queues' `visitQueueNumberAttributeUuid` names the
        // visit attribute type its numbers are kept in.
        ("attribute", "attribute type"),
        ("concept", "concept"),
        ("visittype", "visit type"),
        ("identifiertype", "patient identifier type"),
        ("identifiersource", "identifier source"),
        ("encountertype", "encounter type"),
        ("encounterrole", "encounter role"),
        ("providerrole", "encounter role"),
        ("relationshiptype", "relationship type"),
        ("location", "location"),
        ("cashpoint", "cash point"),
        ("form", "form"),
        ("program", "program"),
        ("queue", "queue"),
    ] {
        if k.contains(needle) {
            return kind;
        }
    }
    "any"
}

fn entity_kinds(content: &Content) -> HashMap<&str, &'static str> {
    fn add<'a>(
        kinds: &mut HashMap<&'a str, &'static str>,
        uuids: impl Iterator<Item = &'a String>,
        kind: &'static str,
    ) {
        for u in uuids {
            kinds.entry(u.as_str()).or_insert(kind);
        }
    }
    let mut k = HashMap::new();
    add(&mut k, content.concepts.iter().map(|x| &x.uuid), "concept");
    add(
        &mut k,
        content.visit_types.iter().map(|x| &x.uuid),
        "visit type",
    );
    add(
        &mut k,
        content.person_attribute_types.iter().map(|x| &x.uuid),
        "person attribute type",
    );
    add(
        &mut k,
        content.attribute_types.iter().map(|x| &x.uuid),
        "attribute type",
    );
    add(
        &mut k,
        content.patient_identifier_types.iter().map(|x| &x.uuid),
        "patient identifier type",
    );
    add(
        &mut k,
        content.identifier_sources.iter().map(|x| &x.uuid),
        "identifier source",
    );
    add(
        &mut k,
        content.encounter_types.iter().map(|x| &x.uuid),
        "encounter type",
    );
    add(
        &mut k,
        content.encounter_roles.iter().map(|x| &x.uuid),
        "encounter role",
    );
    add(
        &mut k,
        content.relationship_types.iter().map(|x| &x.uuid),
        "relationship type",
    );
    add(
        &mut k,
        content.locations.iter().map(|x| &x.uuid),
        "location",
    );
    add(&mut k, content.forms.iter().map(|x| &x.uuid), "form");
    add(&mut k, content.programs.iter().map(|x| &x.uuid), "program");
    add(&mut k, content.queues.iter().map(|x| &x.uuid), "queue");
    add(&mut k, content.roles.iter().map(|x| &x.uuid), "role");
    add(
        &mut k,
        content.cash_points.iter().map(|x| &x.uuid),
        "cash point",
    );
    add(
        &mut k,
        content.location_tags.iter().map(|x| &x.uuid),
        "location tag",
    );
    k
}

struct Checker<'a> {
    kinds: HashMap<&'a str, &'static str>,
    form_names: std::collections::HashSet<&'a str>,
    files: Vec<Arc<TextFile>>,
}

/// Configuration keys that are no module of the build but belong to the app shell.
const SHELL_KEYS: &[&str] = &[
    "core",
    "@openmrs/esm-app-shell",
    "@openmrs/esm-styleguide",
    "@openmrs/esm-devtools-app",
    "@openmrs/esm-implementer-tools-app",
];

/// The front-end modules the image ships (`frontend/spa-modules.json`, the distribution's
/// own modules' names), or `None` without that file (a bare content project).
fn shipped_modules(project: &Project) -> Option<std::collections::BTreeSet<String>> {
    let mut names = std::collections::BTreeSet::new();
    let mut pinned = false;
    for file in &project.shipped_modules {
        let Ok(json) = serde_json::from_slice::<Value>(&file.bytes) else {
            continue;
        };
        if &*file.display == crate::vfs::SHIPPED_MODULES_PATH {
            pinned = true;
            for list in ["frontendModules", "optionalFrontendModules"] {
                if let Some(Value::Object(modules)) = json.get(list) {
                    names.extend(modules.keys().cloned());
                }
            }
        } else if let Some(name) = json.get("name").and_then(Value::as_str) {
            names.insert(name.to_string());
        }
    }
    pinned.then_some(names)
}

/// Warns of each module the configuration configures that the image does not ship: its
/// settings do nothing, and the screens that expected it show raw translation keys or
/// nothing at all.
fn unshipped_modules(
    shipped: Option<&std::collections::BTreeSet<String>>,
    checker: &Checker,
    merged: &Value,
    sink: &mut Sink,
) {
    let (Some(shipped), Value::Object(map)) = (shipped, merged) else {
        return;
    };
    for (module, settings) in map {
        if shipped.contains(module) || SHELL_KEYS.contains(&module.as_str()) {
            continue;
        }
        if settings.get("enabled") == Some(&Value::Bool(false)) {
            continue;
        }
        let keys: Vec<&str> = settings
            .as_object()
            .map(|s| s.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let d = sink.emit(
            Code::UnshippedModule,
            &checker.locate(&[module], None),
            format!("'{module}' is configured, but this distribution does not ship it"),
        );
        d.notes.push(format!(
            "its settings have no effect: {}",
            if keys.is_empty() {
                "(none)".to_string()
            } else {
                keys.join(", ")
            }
        ));
        d.help = Some("remove its configuration, or add the module to frontend/spa-modules.json (and check the runtime serves what it calls)".into());
    }
}

/// Settings whose defaults, in the pinned module, are another health system's: left unset,
/// they show on a facility's screens or name records it does not have. (module, setting,
/// what the module falls back to.)
const FOREIGN_DEFAULTS: &[(&str, &str, &str)] = &[
    (
        "@openmrs/esm-billing-app",
        "defaultCurrency",
        "KES, the Kenyan shilling",
    ),
    (
        "@openmrs/esm-billing-app",
        "country",
        "\"Kenya\", printed on every invoice",
    ),
    (
        "@openmrs/esm-billing-app",
        "postBilledItems",
        "a cash point, cashier and price of another installation, which bills then name",
    ),
];

/// Warns of each setting of `FOREIGN_DEFAULTS` the merged configuration leaves unset, for
/// the modules it configures (and does not turn off).
fn foreign_defaults(checker: &Checker, merged: &Value, sink: &mut Sink) {
    for (module, setting, fallback) in FOREIGN_DEFAULTS {
        let Some(settings) = merged.get(*module) else {
            continue;
        };
        if settings.get("enabled") == Some(&Value::Bool(false)) || settings.get(*setting).is_some()
        {
            continue;
        }
        let loc = checker.locate(&[module], None);
        sink.emit(
            Code::ForeignDefault,
            &loc,
            format!("'{module}' leaves '{setting}' unset: the front end falls back to {fallback}"),
        )
        .help = Some(format!(
            "set \"{setting}\" under \"{module}\" in frontend/config/config.json, or turn the module off with \"enabled\": false"
        ));
    }
}

/// Settings whose default names metadata of the reference application (its demo forms,
/// encounter types, roles, CIEL concepts), which a module of the image falls back to when
/// the configuration leaves them unset: (module, setting path, default uuid, its kind).
/// Where the content does not define that uuid as such, what the module saves with it is
/// refused (the notes app's visit note names a form the server does not know).
const ASSUMED_METADATA: &[(&str, &[&str], &str, &str)] = &[
    (
        "@openmrs/esm-patient-notes-app",
        &["visitNoteConfig", "formConceptUuid"],
        "c75f120a-04ec-11e3-8780-2b40bef9a44b",
        "form",
    ),
    (
        "@openmrs/esm-patient-notes-app",
        &["visitNoteConfig", "encounterTypeUuid"],
        "d7151f82-c1f3-4152-a605-2f9ea7414a79",
        "encounter type",
    ),
    (
        "@openmrs/esm-patient-notes-app",
        &["visitNoteConfig", "clinicianEncounterRole"],
        "240b26f9-dd88-4172-823d-4a8bfeb7841f",
        "encounter role",
    ),
    (
        "@openmrs/esm-patient-notes-app",
        &["visitNoteConfig", "encounterNoteTextConceptUuid"],
        "162169AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "concept",
    ),
];

/// Warns of each setting of `ASSUMED_METADATA` the merged configuration leaves unset, for a
/// module the image ships (or, without a list of shipped modules, one the configuration
/// configures) and does not turn off, whose default the content does not define.
fn assumed_metadata(
    shipped: Option<&std::collections::BTreeSet<String>>,
    checker: &Checker,
    merged: &Value,
    sink: &mut Sink,
) {
    for (module, path, default, kind) in ASSUMED_METADATA {
        let settings = merged.get(*module);
        let in_image = match shipped {
            Some(names) => names.contains(*module),
            None => settings.is_some(),
        };
        if !in_image || settings.and_then(|s| s.get("enabled")) == Some(&Value::Bool(false)) {
            continue;
        }
        let set = path
            .iter()
            .try_fold(settings.unwrap_or(&Value::Null), |v, k| v.get(*k));
        if set.is_some() || checker.kinds.get(default) == Some(kind) {
            continue;
        }
        let setting = path.join(".");
        let loc = checker.locate(&[module], None);
        sink.emit(
            Code::ForeignDefault,
            &loc,
            format!(
                "'{module}' leaves '{setting}' unset: the front end falls back to the {kind} {default} of the reference application, which the content does not define"
            ),
        )
        .help = Some(format!(
            "point \"{setting}\" under \"{module}\" in frontend/config/config.json at the content's own {kind}, or define {default} in the content"
        ));
    }
}

/// The concepts each encounter type's forms record, for the encounter lists' columns.
struct RecordedConcepts<'a> {
    content: &'a Content,
}

impl<'a> RecordedConcepts<'a> {
    fn new(content: &'a Content) -> Self {
        RecordedConcepts { content }
    }

    /// A concept by uuid, `SOURCE:CODE` or a name only one concept has, as forms name them.
    fn concept(&self, reference: &str) -> Option<&'a str> {
        let c = self.content;
        c.concept_by_reference(reference)
            .or_else(|| {
                match c
                    .indexes
                    .concept_by_name
                    .get(&reference.trim().to_lowercase())
                {
                    Some(found) if found.len() == 1 => c.concepts.get(found[0] as usize),
                    _ => None,
                }
            })
            .map(|concept| concept.uuid.as_str())
    }

    /// The concepts recorded by the forms of `encounter_type` and the forms listed.
    fn by_forms(&self, encounter_type: &str, listed: &[&str]) -> (usize, HashSet<&'a str>) {
        let mut concepts = HashSet::new();
        let mut forms = 0;
        for form in self.content.forms.iter().filter(|f| {
            f.encounter_type.as_deref() == Some(encounter_type) || listed.contains(&f.uuid.as_str())
        }) {
            forms += 1;
            if let Ok(schema) = serde_json::from_str::<Value>(&form.schema_json) {
                crate::domains::forms::collect_concept_refs(&schema, "", &mut |c, _| {
                    if let Some(uuid) = self.concept(c) {
                        concepts.insert(uuid);
                    }
                });
            }
        }
        (forms, concepts)
    }
}

/// A uuid, or CIEL's 36-character form (`5096AAAA…`): settings named `concept` or
/// `encounterType` also take names, which are not checked here.
fn looks_like_uuid(s: &str) -> bool {
    s.len() == 36 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl Checker<'_> {
    /// Where the setting at `path` (module, then nested keys) is written, preferring the
    /// site file (it wins the merge); with `value`, the value's position after the key.
    fn locate(&self, path: &[&str], value: Option<&str>) -> Loc {
        for f in self.files.iter().rev() {
            let mut at = 0;
            let mut found = true;
            let mut last = (0, 0);
            for key in path.iter().filter(|k| !k.is_empty()) {
                let quoted = format!("\"{key}\"");
                match f.text[at..].find(&quoted) {
                    Some(i) => {
                        last = (at + i, quoted.len());
                        at += i + quoted.len();
                    }
                    None => {
                        found = false;
                        break;
                    }
                }
            }
            if !found {
                continue;
            }
            if let Some(v) = value {
                let quoted = serde_json::to_string(v).unwrap_or_default();
                if let Some(i) = f.text[at..].find(&quoted) {
                    return f.loc(at + i, quoted.len());
                }
            }
            return f.loc(last.0, last.1);
        }
        self.files.last().map_or(Loc::None, |f| f.whole())
    }

    /// An encounter list's tab (an object with `encounterType` and `columns`) shows, per
    /// column, the observations of its concept in the tab's encounters: a concept that no
    /// form of that encounter type (nor of its `formList`) records leaves the column empty.
    fn encounter_lists(
        &self,
        keys: &mut Vec<String>,
        value: &Value,
        recorded: &RecordedConcepts,
        sink: &mut Sink,
    ) {
        match value {
            Value::Object(map) => {
                if let (Some(Value::String(encounter_type)), Some(Value::Array(columns))) =
                    (map.get("encounterType"), map.get("columns"))
                {
                    self.tab_columns(keys, map, encounter_type, columns, recorded, sink);
                }
                for (k, v) in map {
                    keys.push(k.clone());
                    self.encounter_lists(keys, v, recorded, sink);
                    keys.pop();
                }
            }
            Value::Array(items) => {
                for v in items {
                    keys.push(String::new());
                    self.encounter_lists(keys, v, recorded, sink);
                    keys.pop();
                }
            }
            _ => {}
        }
    }

    fn tab_columns(
        &self,
        keys: &[String],
        tab: &Map<String, Value>,
        encounter_type: &str,
        columns: &[Value],
        recorded: &RecordedConcepts,
        sink: &mut Sink,
    ) {
        let listed: Vec<&str> = tab
            .get("formList")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("uuid").and_then(Value::as_str))
            .collect();
        let (forms, concepts) = recorded.by_forms(encounter_type, &listed);
        if forms == 0 {
            // No form to compare with (an unknown encounter type or form is reported as a
            // setting; a known type without forms may be filled by other means).
            return;
        }
        for column in columns {
            let shown: Vec<&str> = ["concept", "multipleConcepts", "fallbackConcepts"]
                .iter()
                .filter_map(|k| column.get(*k))
                .flat_map(|v| match v {
                    Value::String(s) => vec![s.as_str()],
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                })
                .collect();
            let known: Vec<&str> = shown.iter().filter_map(|c| recorded.concept(c)).collect();
            // Unknown concepts are reported by the reference check; a column with none is
            // a date or an action.
            if known.is_empty() || known.iter().any(|c| concepts.contains(c)) {
                continue;
            }
            let id = column.get("id").and_then(Value::as_str).unwrap_or("?");
            let mut at: Vec<&str> = keys.iter().map(String::as_str).collect();
            at.extend(["columns", "concept"]);
            let d = sink.emit(
                Code::UnrecordedColumn,
                &self.locate(&at, Some(shown[0])),
                format!(
                    "Column '{id}' shows concept '{}', which no form of its encounter type records",
                    shown[0]
                ),
            );
            d.notes.push(format!(
                "{forms} form(s) record encounters of type '{encounter_type}' or are listed in the tab's formList"
            ));
            d.help = Some("name a concept one of these forms asks, or add the question to the form; as written the column stays empty (`--`)".into());
        }
    }

    /// `Translation overrides` sit directly under a module (the framework refuses them
    /// anywhere else, on every page) and map locales to string tables.
    fn check_translations(&self, at: &[&str], value: &Value, sink: &mut Sink) {
        if at.len() != 2 {
            sink.emit(
                Code::FrontendConfig,
                &self.locate(at, None),
                format!(
                    "'{TRANSLATION_OVERRIDES}' inside '{}': the front end accepts them only directly under a module",
                    at[..at.len() - 1].join(".")
                ),
            )
            .help = Some(format!(
                "move them to \"{}\": {{\"{TRANSLATION_OVERRIDES}\": …}}",
                at[0]
            ));
            return;
        }
        let well_formed = value.as_object().is_some_and(|locales| {
            locales.values().all(|table| {
                table
                    .as_object()
                    .is_some_and(|t| t.values().all(Value::is_string))
            })
        });
        if !well_formed {
            sink.emit(
                Code::FrontendConfig,
                &self.locate(at, None),
                format!("'{}' must map locales to tables of strings", at.join(".")),
            )
            .help = Some(format!(
                "write \"{TRANSLATION_OVERRIDES}\": {{\"fr\": {{\"key\": \"texte\"}}}}"
            ));
        }
    }

    fn check_uuid(&self, path: &[&str], key: &str, value: &str, sink: &mut Sink) {
        let key = if key.is_empty() {
            path.iter()
                .rev()
                .find(|k| !k.is_empty())
                .copied()
                .unwrap_or("")
        } else {
            key
        };
        // An encounter list's `formList: [{"uuid": …}]` names forms by a bare `uuid`.
        let expected = if key == "uuid" && path.contains(&"formList") {
            "form"
        } else {
            kind_of(key)
        };
        let loc = self.locate(path, Some(value));
        let key = if expected == "form" && key == "uuid" {
            "formList"
        } else {
            key
        };
        match self.kinds.get(value) {
            None if expected == "concept" => {
                sink.unknown_concept(&loc, value)
                    .notes
                    .push(format!("front-end setting `{key}`"));
            }
            None => {
                sink.emit(
                    Code::UnknownReference,
                    &loc,
                    format!("Setting '{key}' names '{value}', which is not defined by the content"),
                )
                .help = Some(if expected == "any" {
                    "use the uuid of an entity defined in openmrs_config/".into()
                } else if expected == "form" {
                    "a form's uuid follows its name and version (Initializer derives it from both): a form given a new version has a new uuid, so name the form as the content defines it now".into()
                } else {
                    format!("use the uuid of a {expected}")
                });
            }
            Some(found) if expected != "any" && *found != expected => {
                sink.emit(
                    Code::WrongReferenceKind,
                    &loc,
                    format!("Setting '{key}' names a {found}, but expects a {expected}"),
                )
                .help = Some(format!("use the uuid of a {expected}"));
            }
            Some(_) => {}
        }
    }

    fn walk(&self, keys: &mut Vec<String>, value: &Value, sink: &mut Sink) {
        let key = keys.last().cloned().unwrap_or_default();
        let key = key.as_str();
        let path = keys.join(".");
        let at: Vec<&str> = keys.iter().map(String::as_str).collect();
        if key == TRANSLATION_OVERRIDES {
            self.check_translations(&at, value, sink);
            return;
        }
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    keys.push(k.clone());
                    self.walk(keys, v, sink);
                    keys.pop();
                }
            }
            Value::Array(items) if key.ends_with("Uuids") => {
                for item in items {
                    match item {
                        Value::String(s) => self.check_uuid(&at, key, s, sink),
                        _ => {
                            sink.emit(
                                Code::FrontendConfig,
                                &self.locate(&at, None),
                                format!("Setting '{path}' must list uuid strings"),
                            );
                        }
                    }
                }
            }
            Value::Array(items) => {
                for v in items {
                    keys.push(String::new());
                    self.walk(keys, v, sink);
                    keys.pop();
                }
            }
            Value::String(s)
                if (key == "concept" || key == "encounterType" || key == "cashPoint")
                    && looks_like_uuid(s)
                    || key == "uuid" && at.contains(&"formList") =>
            {
                self.check_uuid(&at, key, s, sink);
            }
            Value::String(s) if key == "formName" && !self.form_names.contains(s.as_str()) => {
                sink.emit(
                    Code::UnknownReference,
                    &self.locate(&at, Some(s)),
                    format!("Setting 'formName' names the form '{s}', which the content does not define"),
                )
                .help = Some(
                    "name a form as its JSON's \"name\" writes it (forms are matched by their exact name)".into(),
                );
            }
            // `…UUID` too: the fast data entry app names its forms `formUUID`.
            Value::String(s) if key.ends_with("Uuid") || key.ends_with("UUID") => {
                if s.is_empty() {
                    sink.emit(
                        Code::FrontendConfig,
                        &self.locate(&at, None),
                        format!("Setting '{path}' is an empty uuid"),
                    )
                    .help =
                        Some("O3 rejects an empty uuid: remove the key to use the default".into());
                } else {
                    self.check_uuid(&at, key, s, sink);
                }
            }
            _ if key == "enabled" && !value.is_boolean() => {
                sink.emit(
                    Code::FrontendConfig,
                    &self.locate(&at, None),
                    format!("Setting '{path}' must be true or false"),
                );
            }
            Value::String(s) if key.starts_with("Brand color") => {
                let ok = s.len() == 7
                    && s.starts_with('#')
                    && s[1..].bytes().all(|b| b.is_ascii_hexdigit());
                if !ok {
                    sink.emit(
                        Code::FrontendConfig,
                        &self.locate(&at, Some(s)),
                        format!("Brand colour '{s}' is not a hex colour"),
                    )
                    .help = Some("write colours as #rrggbb, e.g. #005d5d".into());
                }
            }
            _ if key.starts_with("Brand color") => {
                sink.emit(
                    Code::FrontendConfig,
                    &self.locate(&at, None),
                    format!("Setting '{path}' must be a colour string such as #005d5d"),
                );
            }
            _ => {}
        }
    }
}

/// A module name, or `core`: the O3 shell's own pseudo-module, whose only setting is
/// `Translation overrides` of the framework's strings.
fn is_module_key(k: &str) -> bool {
    if k == "core" {
        return true;
    }
    let Some(rest) = k.strip_prefix('@') else {
        return false;
    };
    let Some((org, name)) = rest.split_once('/') else {
        return false;
    };
    let part = |s: &str| {
        !s.is_empty()
            && s.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'_')
            })
    };
    part(org) && part(name)
}

const TRANSLATION_OVERRIDES: &str = "Translation overrides";

/// Where a key is first written in a file (the whole file when it cannot be found).
fn first_key(text: &Arc<TextFile>, key: &str) -> Loc {
    let quoted = format!("\"{key}\"");
    text.text
        .find(&quoted)
        .map_or(text.whole(), |i| text.loc(i, quoted.len()))
}

/// The distribution's translations file holds nothing but translation overrides: a
/// setting there would apply under every package's configuration without being seen.
fn only_translations(text: &Arc<TextFile>, map: &Map<String, Value>, sink: &mut Sink) {
    for (module, settings) in map {
        let others = settings
            .as_object()
            .map(|s| s.keys().filter(|k| *k != TRANSLATION_OVERRIDES).collect())
            .unwrap_or_else(|| vec![module]);
        for key in others {
            let loc = first_key(text, key);
            sink.emit(
                Code::FrontendConfig,
                &loc,
                format!("'{module}' in the translations file holds '{key}', which is not a translation override"),
            )
            .help = Some("settings go in frontend/config/config.json; this file holds only \"Translation overrides\"".into());
        }
    }
}

pub fn check(project: &Project, content: &Content, sink: &mut Sink) -> Frontend {
    let mut merged = Value::Object(Map::new());
    let mut files = Vec::new();
    for file in &project.frontend_configs {
        if let Some((text, map)) = parse(file, sink) {
            for k in map.keys() {
                if !is_module_key(k) {
                    let loc = first_key(&text, k);
                    sink.emit(
                        Code::FrontendConfig,
                        &loc,
                        format!("Top-level key '{k}' is not a module name"),
                    )
                    .help = Some(
                        "top-level keys are module names such as @openmrs/esm-login-app, or core"
                            .into(),
                    );
                }
            }
            if &*file.display == crate::vfs::TRANSLATIONS_PATH {
                only_translations(&text, &map, sink);
            }
            files.push(text);
            deep_merge(&mut merged, Value::Object(map));
        }
    }
    let checker = Checker {
        kinds: entity_kinds(content),
        form_names: content.forms.iter().map(|f| f.name.as_str()).collect(),
        files,
    };
    if let Value::Object(map) = &merged {
        for (module, settings) in map {
            if !settings.is_object() {
                sink.emit(
                    Code::FrontendConfig,
                    &checker.locate(&[module.as_str()], None),
                    format!("Settings of '{module}' must be an object"),
                );
                continue;
            }
            checker.walk(&mut vec![module.clone()], settings, sink);
        }
    }

    foreign_defaults(&checker, &merged, sink);
    // The image's modules, as `frontend/spa-modules.json` pins them (read once for both).
    let shipped = shipped_modules(project);
    assumed_metadata(shipped.as_ref(), &checker, &merged, sink);
    unshipped_modules(shipped.as_ref(), &checker, &merged, sink);
    if let Value::Object(map) = &merged {
        let recorded = RecordedConcepts::new(content);
        for (module, settings) in map {
            checker.encounter_lists(&mut vec![module.clone()], settings, &recorded, sink);
        }
    }

    let mut logo_png = Vec::new();
    match &project.logo {
        Some(logo) => {
            let loc = Loc::File(logo.display.clone());
            if logo.bytes.len() > MAX_LOGO_BYTES {
                sink.emit(
                    Code::InvalidLogo,
                    &loc,
                    format!(
                        "Logo is {} bytes, over the {MAX_LOGO_BYTES}-byte limit",
                        logo.bytes.len()
                    ),
                );
            } else {
                match png::Decoder::new(std::io::Cursor::new(&logo.bytes)).read_info() {
                    Ok(_) => logo_png = logo.bytes.clone(),
                    Err(e) => {
                        sink.emit(
                            Code::InvalidLogo,
                            &loc,
                            format!("Logo is not a valid PNG image: {e}"),
                        );
                    }
                }
            }
        }
        None if project
            .frontend_configs
            .iter()
            .any(|f| &*f.display == "frontend/config/config.json") =>
        {
            sink.emit(
                Code::InvalidLogo,
                &Loc::File("frontend/assets/logo.png".into()),
                "Logo 'frontend/assets/logo.png' is missing",
            )
            .help = Some("the front end shows the distribution's logo from this file".into());
        }
        None => {}
    }
    Frontend {
        config_json: merged.to_string(),
        logo_png,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_deep_for_objects_and_replaces_arrays() {
        let mut a: Value = serde_json::json!({"m": {"x": 1, "l": [1, 2], "o": {"a": 1}}});
        deep_merge(&mut a, serde_json::json!({"m": {"l": [3], "o": {"b": 2}}}));
        assert_eq!(
            a,
            serde_json::json!({"m": {"x": 1, "l": [3], "o": {"a": 1, "b": 2}}})
        );
    }

    #[test]
    fn module_keys_and_kinds() {
        assert!(is_module_key("@openmrs/esm-login-app"));
        assert!(!is_module_key("openmrs/esm-login-app") && !is_module_key("@OpenMRS/x"));
        assert!(is_module_key("core") && !is_module_key("Core"));
        assert_eq!(kind_of("visitDiagnosesConceptUuid"), "concept");
        assert_eq!(kind_of("offlineVisitTypeUuid"), "visit type");
        assert_eq!(kind_of("personAttributeUuid"), "person attribute type");
        assert_eq!(kind_of("formConceptUuid"), "form");
    }
}
