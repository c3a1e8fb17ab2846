//! `flags/*.json`: the patient flags module's definitions (flags, their priorities and
//! their tags), with criteria written as the reports' criteria. docs/content.md ("Patient
//! flags") describes the format.
//!
//! The module's own flags hold SQL or Groovy, which no runtime of this distribution runs;
//! here a flag's criteria are the reporting module's cohort criteria of `reports/`, checked
//! at build time like a report's (every concept, type and programme resolved), and
//! evaluated for one patient on the day. Initializer's CSV form of the folder (with its
//! SQL) is reported as a stray file, with the reason.
//!
//! Files are parsed when loaded (JSON syntax); the definitions are read and their
//! references resolved in `crate::link` (`compile`), once the concepts, metadata and roles
//! they name are known. A structural problem is `invalid-flag` at the offending value; a
//! reference that resolves nowhere is `unknown-concept` or `unknown-reference`. A later
//! layer's definition with the uuid of an earlier one replaces it.

use super::Loaded;
use super::reports::{Context, LoadedReport, Names, Reader};
use crate::diagnostics::{Code, Sink};
use crate::source::Loc;
use crate::store::Lookup;
use crate::vfs::{InputFile, Layer, decode};
use model::reports::{FlagDefinition, FlagPriority, FlagTag, PatientFlags};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The content's roles, found by name or uuid; a tag keeps the role's name, as OpenMRS
/// names roles.
pub struct Roles {
    pub lookup: Lookup,
    /// uuid → name
    pub names: std::collections::HashMap<String, String>,
}

/// Why Initializer's CSV flags are not read: said with the stray-file warning.
pub const CSV_HELP: &str = "Initializer's flags CSV holds SQL or Groovy criteria, which this runtime does not evaluate: write each flag in a flags/*.json file, its criteria as a report's (docs/content.md, \"Patient flags\")";

pub fn load(files: &[&InputFile], loaded: &mut Loaded, sink: &mut Sink) {
    for f in files {
        let Some(file) = decode(f, sink) else {
            continue;
        };
        match serde_json::from_str::<Value>(&file.text) {
            Ok(Value::Object(json)) => loaded.flag_files.push(LoadedReport {
                file,
                layer: f.layer,
                json,
            }),
            Ok(_) => {
                sink.emit(
                    Code::InvalidFlag,
                    &file.whole(),
                    "Expected a JSON object with 'flags', 'priorities' and 'tags'",
                );
            }
            Err(e) => {
                let offset = super::forms::offset_of(&file.text, e.line(), e.column());
                sink.emit(
                    Code::JsonSyntax,
                    &file.loc(offset, 1),
                    format!("Invalid JSON: {e}"),
                );
            }
        }
    }
}

/// One definition with where it came from, for the override rule.
struct Placed<T> {
    layer: Layer,
    loc: Loc,
    value: T,
}

/// Keeps `value` under `uuid`: a later layer replaces, the same layer twice is an error.
fn place<T>(
    map: &mut BTreeMap<String, Placed<T>>,
    uuid: String,
    placed: Placed<T>,
    sink: &mut Sink,
) {
    if let Some(earlier) = map.get(&uuid)
        && earlier.layer == placed.layer
    {
        sink.duplicate_uuid(&placed.loc, &uuid, &earlier.loc);
        return;
    }
    map.insert(uuid, placed);
}

/// Reads every flags file: priorities and tags first (flags name them), then the flags.
/// Definitions with errors are left out.
pub fn compile(
    files: Vec<LoadedReport>,
    names: &Names,
    roles: &Roles,
    sink: &mut Sink,
) -> PatientFlags {
    let mut priorities: BTreeMap<String, Placed<FlagPriority>> = BTreeMap::new();
    let mut tags: BTreeMap<String, Placed<FlagTag>> = BTreeMap::new();
    for f in &files {
        let mut reader = reader(f, names, sink);
        reader.only_keys(&f.json, &["priorities", "tags", "flags"], "a flags file");
        let mut cursor = 0;
        for item in reader.items(&f.json, "priorities") {
            reader.enter(item, &mut cursor);
            if let Some((p, loc)) = reader.priority(item) {
                place(
                    &mut priorities,
                    p.uuid.clone(),
                    Placed {
                        layer: f.layer,
                        loc,
                        value: p,
                    },
                    reader.sink,
                );
            }
        }
        for item in reader.items(&f.json, "tags") {
            reader.enter(item, &mut cursor);
            if let Some((t, loc)) = reader.tag(item, roles) {
                place(
                    &mut tags,
                    t.uuid.clone(),
                    Placed {
                        layer: f.layer,
                        loc,
                        value: t,
                    },
                    reader.sink,
                );
            }
        }
    }
    let priority_names = Lookup::new(
        priorities
            .values()
            .map(|p| (p.value.name.as_str(), p.value.uuid.as_str())),
    );
    let tag_names = Lookup::new(
        tags.values()
            .map(|t| (t.value.name.as_str(), t.value.uuid.as_str())),
    );
    let mut flags: BTreeMap<String, Placed<FlagDefinition>> = BTreeMap::new();
    for f in &files {
        let mut reader = reader(f, names, sink);
        let mut cursor = 0;
        for item in reader.items(&f.json, "flags") {
            reader.enter(item, &mut cursor);
            if let Some((flag, loc)) = reader.flag(item, &priority_names, &tag_names) {
                place(
                    &mut flags,
                    flag.uuid.clone(),
                    Placed {
                        layer: f.layer,
                        loc,
                        value: flag,
                    },
                    reader.sink,
                );
            }
        }
    }
    let mut priorities: Vec<FlagPriority> = priorities.into_values().map(|p| p.value).collect();
    priorities.sort_by(|a, b| (a.rank, &a.uuid).cmp(&(b.rank, &b.uuid)));
    PatientFlags {
        flags: flags.into_values().map(|f| f.value).collect(),
        priorities,
        tags: tags.into_values().map(|t| t.value).collect(),
    }
}

fn reader<'a, 's>(f: &'a LoadedReport, names: &'a Names<'a>, sink: &'s mut Sink) -> Reader<'a, 's> {
    Reader {
        file: &f.file,
        names,
        sink,
        errors: 0,
        code: Code::InvalidFlag,
        what: "flag",
        from: 0,
    }
}

impl Reader<'_, '_> {
    /// The objects of a list (`priorities`, `tags`, `flags`); anything else is reported.
    fn items<'v>(
        &mut self,
        json: &'v Map<String, Value>,
        key: &str,
    ) -> Vec<&'v Map<String, Value>> {
        match json.get(key) {
            None => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(|v| match v {
                    Value::Object(m) => Some(m),
                    _ => {
                        let loc = self.at_key(key);
                        self.invalid(&loc, format!("Each of '{key}' is an object, not {v}"));
                        None
                    }
                })
                .collect(),
            Some(_) => {
                let loc = self.at_key(key);
                self.invalid(&loc, format!("'{key}' is a list of objects"));
                Vec::new()
            }
        }
    }

    /// The item's uuid, checked, with where it is written.
    fn uuid_of(&mut self, m: &Map<String, Value>) -> Option<(String, Loc)> {
        let uuid = self.string(m, "uuid", true)?;
        let loc = self.at_string(&uuid);
        if uuid::Uuid::parse_str(&uuid).is_err() {
            self.invalid(&loc, format!("'{uuid}' is not a uuid"));
            return None;
        }
        Some((uuid, loc))
    }

    fn boolean(&mut self, m: &Map<String, Value>, key: &str, default: bool) -> bool {
        match m.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                let loc = self.at_key(key);
                self.invalid(&loc, format!("'{key}' is true or false, not {v}"));
                default
            }
        }
    }

    fn texts(&mut self, m: &Map<String, Value>, key: &str) -> Vec<String> {
        match m.get(key) {
            None => Vec::new(),
            Some(Value::Array(list))
                if list
                    .iter()
                    .all(|v| v.as_str().is_some_and(|s| !s.trim().is_empty())) =>
            {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.trim().to_string())
                    .collect()
            }
            Some(_) => {
                let loc = self.at_key(key);
                self.invalid(
                    &loc,
                    format!("'{key}' is a list of texts that are not empty"),
                );
                Vec::new()
            }
        }
    }

    /// Points the reader's searches at this item of a list: at the object that holds its
    /// uuid, found after the items before it (`cursor`), so that a finding in the third
    /// flag is shown in the third flag, not at the first flag's same key.
    fn enter(&mut self, m: &Map<String, Value>, cursor: &mut usize) {
        self.from = 0;
        let Some(uuid) = m.get("uuid").and_then(Value::as_str) else {
            return;
        };
        let quoted = Value::String(uuid.to_string()).to_string();
        let text = &self.file.text;
        if let Some(at) = text.get(*cursor..).and_then(|t| t.find(&quoted)) {
            let at = *cursor + at;
            self.from = text[..at].rfind('{').unwrap_or(at);
            *cursor = at + quoted.len();
        }
    }

    fn priority(&mut self, m: &Map<String, Value>) -> Option<(FlagPriority, Loc)> {
        self.what = "priority";
        let errors = self.errors;
        self.only_keys(
            m,
            &["uuid", "name", "style", "rank", "retired"],
            "a flag priority",
        );
        let (uuid, loc) = self.uuid_of(m)?;
        let name = self.string(m, "name", true)?;
        let style = self.string(m, "style", false).unwrap_or_default();
        let rank = match m.get("rank") {
            Some(Value::Number(n)) if n.as_i64().is_some_and(|r| i32::try_from(r).is_ok()) => {
                n.as_i64().unwrap_or_default() as i32
            }
            v => {
                let loc = self.at_key("rank");
                let shown = v.map_or("nothing".to_string(), Value::to_string);
                self.invalid(
                    &loc,
                    format!("'rank' is a whole number (lower ranks first), not {shown}"),
                );
                0
            }
        };
        let retired = self.boolean(m, "retired", false);
        (self.errors == errors).then_some((
            FlagPriority {
                uuid,
                name,
                style,
                rank,
                retired,
            },
            loc,
        ))
    }

    fn tag(&mut self, m: &Map<String, Value>, roles: &Roles) -> Option<(FlagTag, Loc)> {
        self.what = "tag";
        let errors = self.errors;
        self.only_keys(
            m,
            &["uuid", "name", "roles", "displayPoints", "retired"],
            "a flag tag",
        );
        let (uuid, loc) = self.uuid_of(m)?;
        let name = self.string(m, "name", true)?;
        let mut role_names = Vec::new();
        for role in self.texts(m, "roles") {
            let at = self.at_string(&role);
            match roles.lookup.resolve(&role, "Role", &at, self.sink) {
                Some(uuid) => role_names.push(roles.names.get(&uuid).cloned().unwrap_or(role)),
                None => self.errors += 1,
            }
        }
        let display_points = self.texts(m, "displayPoints");
        let retired = self.boolean(m, "retired", false);
        (self.errors == errors).then_some((
            FlagTag {
                uuid,
                name,
                roles: role_names,
                display_points,
                retired,
            },
            loc,
        ))
    }

    fn flag(
        &mut self,
        m: &Map<String, Value>,
        priorities: &Lookup,
        tags: &Lookup,
    ) -> Option<(FlagDefinition, Loc)> {
        self.what = "flag";
        let errors = self.errors;
        self.only_keys(
            m,
            &[
                "uuid", "name", "message", "criteria", "priority", "tags", "enabled", "retired",
            ],
            "a flag",
        );
        let (uuid, loc) = self.uuid_of(m)?;
        let name = self.string(m, "name", true)?;
        let message = self.localized(m, "message", true);
        let criteria_text = m.get("criteria").map(Value::to_string).unwrap_or_default();
        let criterion = match m.get("criteria") {
            Some(v) => self.criterion(v, &Context { parameters: &[] }),
            None => {
                self.invalid(&loc, format!("The flag '{name}' has no 'criteria'"));
                None
            }
        };
        let priority = self.string(m, "priority", false).and_then(|p| {
            let at = self.at_string(&p);
            let found = priorities.resolve(&p, "Flag priority", &at, self.sink);
            if found.is_none() {
                self.errors += 1;
            }
            found
        });
        let mut tag_uuids = Vec::new();
        for t in self.texts(m, "tags") {
            let at = self.at_string(&t);
            match tags.resolve(&t, "Flag tag", &at, self.sink) {
                Some(u) => tag_uuids.push(u),
                None => self.errors += 1,
            }
        }
        let enabled = self.boolean(m, "enabled", true);
        let retired = self.boolean(m, "retired", false);
        let criterion = criterion?;
        (self.errors == errors).then_some((
            FlagDefinition {
                uuid,
                name,
                message,
                criterion,
                criteria_text,
                priority,
                tags: tag_uuids,
                enabled,
                retired,
            },
            loc,
        ))
    }
}
