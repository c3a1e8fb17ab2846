//! `reports/*.json`: report definitions, one per file, in the spirit of the reporting
//! module's definitions (a report, its parameters, its designs, its data sets of cohort
//! cross-tabs or line lists, and how its cells go to DHIS2). docs/content.md describes the
//! format.
//!
//! Files are parsed when loaded (JSON syntax, one object per file); the definitions are
//! read and every reference resolved in `crate::link`, once the concepts and metadata they
//! name are known (`compile`). A structural problem is `invalid-report` at the offending
//! value; a reference that resolves nowhere is `unknown-concept` or `unknown-reference`.

use super::Loaded;
use crate::diagnostics::{Code, Sink};
use crate::resolve::ConceptIndex;
use crate::source::{Loc, TextFile};
use crate::store::Lookup;
use crate::vfs::{InputFile, Layer, decode};
use model::Localized;
use model::reports::*;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A report file, parsed but not yet read.
pub struct LoadedReport {
    pub file: Arc<TextFile>,
    pub layer: Layer,
    pub json: Map<String, Value>,
}

pub fn load(files: &[&InputFile], loaded: &mut Loaded, sink: &mut Sink) {
    for f in files {
        let Some(file) = decode(f, sink) else {
            continue;
        };
        match serde_json::from_str::<Value>(&file.text) {
            Ok(Value::Object(json)) => loaded.reports.push(LoadedReport {
                file,
                layer: f.layer,
                json,
            }),
            Ok(_) => {
                sink.emit(
                    Code::InvalidReport,
                    &file.whole(),
                    "Expected one report definition: a JSON object",
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

/// What report criteria may name, each by uuid or name.
pub struct Names<'a> {
    pub concepts: &'a ConceptIndex,
    /// Where a name written as plain text goes.
    pub default_locale: String,
    pub visit_types: Lookup,
    pub encounter_types: Lookup,
    pub programmes: Lookup,
    /// Programme uuid → its states: (state uuid, state concept uuid).
    pub states: std::collections::HashMap<String, Vec<(String, String)>>,
    pub appointment_services: Lookup,
    pub identifier_types: Lookup,
    pub person_attribute_types: Lookup,
}

/// The appointments module's statuses.
const APPOINTMENT_STATUSES: &[&str] = &[
    "Requested",
    "WaitList",
    "Scheduled",
    "CheckedIn",
    "Completed",
    "Cancelled",
    "Missed",
];

/// Reads each report; a later layer's report with the same uuid replaces an earlier one,
/// two in one layer are an error. Reports with errors are left out.
pub fn compile(
    reports: Vec<LoadedReport>,
    names: &Names,
    sink: &mut Sink,
) -> Vec<ReportDefinition> {
    let mut by_uuid: std::collections::BTreeMap<String, (Layer, ReportDefinition)> =
        Default::default();
    let mut first_file: std::collections::HashMap<String, Arc<str>> = Default::default();
    for r in reports {
        let mut reader = Reader {
            file: &r.file,
            names,
            sink,
            errors: 0,
            code: Code::InvalidReport,
            what: "report",
            from: 0,
        };
        let Some(report) = reader.report(&r.json) else {
            continue;
        };
        if reader.errors > 0 {
            continue;
        }
        if let Some((layer, _)) = by_uuid.get(&report.uuid)
            && *layer == r.layer
        {
            let loc = reader.at_string(&report.uuid);
            sink.duplicate_uuid(
                &loc,
                &report.uuid,
                &Loc::File(first_file[&report.uuid].clone()),
            );
            continue;
        }
        first_file
            .entry(report.uuid.clone())
            .or_insert_with(|| r.file.path.clone());
        by_uuid.insert(report.uuid.clone(), (r.layer, report));
    }
    by_uuid.into_values().map(|(_, r)| r).collect()
}

/// Reads one definition file's JSON, counting its errors, each reported as `code` at its
/// value's position. Flags (`super::flags`) read their criteria with it too.
pub(super) struct Reader<'a, 's> {
    pub(super) file: &'a Arc<TextFile>,
    pub(super) names: &'a Names<'a>,
    pub(super) sink: &'s mut Sink,
    pub(super) errors: usize,
    pub(super) code: Code,
    /// What is being read, for messages: "report", "flag"...
    pub(super) what: &'static str,
    /// Where in the file the item being read begins: positions are searched from there
    /// first (a flags file holds lists of items with the same keys).
    pub(super) from: usize,
}

impl Reader<'_, '_> {
    pub(super) fn at_string(&self, value: &str) -> Loc {
        let quoted = serde_json::to_string(value).unwrap_or_default();
        self.at_text(&quoted)
    }

    /// Where a key is written (its first occurrence from the item being read), or the
    /// whole file.
    pub(super) fn at_key(&self, key: &str) -> Loc {
        self.at_text(&format!("\"{key}\""))
    }

    fn at_text(&self, quoted: &str) -> Loc {
        let text = &self.file.text;
        let found = text
            .get(self.from..)
            .and_then(|t| t.find(quoted))
            .map(|i| self.from + i)
            .or_else(|| text.find(quoted));
        match found {
            Some(i) => self.file.loc(i, quoted.len()),
            None => self.file.whole(),
        }
    }

    /// Where a JSON value is written: a string at its text, anything else at its key.
    fn at_value(&self, key: &str, value: &Value) -> Loc {
        match value {
            Value::String(s) => self.at_string(s),
            _ => self.at_key(key),
        }
    }

    pub(super) fn invalid(&mut self, loc: &Loc, message: impl Into<String>) {
        self.errors += 1;
        self.sink.emit(self.code, loc, message);
    }

    pub(super) fn string(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        required: bool,
    ) -> Option<String> {
        match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
            None if !required => None,
            Some(v) => {
                let loc = self.at_value(key, v);
                self.invalid(&loc, format!("'{key}' must be a text that is not empty"));
                None
            }
            None => {
                let loc = self.file.whole();
                let what = self.what;
                self.invalid(&loc, format!("The {what} has no '{key}'"));
                None
            }
        }
    }

    /// A text, or texts by locale (`{"fr": …, "en": …}`).
    pub(super) fn localized(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        required: bool,
    ) -> Localized {
        let mut out = Localized::new();
        match map.get(key) {
            Some(Value::Object(by_locale)) => {
                for (locale, text) in by_locale {
                    match text.as_str().map(str::trim).filter(|t| !t.is_empty()) {
                        Some(t) if crate::csvtable::is_locale(locale) => {
                            out.insert(locale.clone(), t.to_string());
                        }
                        _ => {
                            let loc = self.at_key(locale);
                            self.invalid(
                                &loc,
                                format!("'{key}' in '{locale}' must be a text in a valid locale"),
                            );
                        }
                    }
                }
            }
            Some(_) | None => {
                if let Some(s) = self.string(map, key, required) {
                    out.insert(self.names.default_locale.clone(), s);
                }
            }
        }
        out
    }

    fn report(&mut self, json: &Map<String, Value>) -> Option<ReportDefinition> {
        self.only_keys(
            json,
            &[
                "uuid",
                "name",
                "description",
                "parameters",
                "designs",
                "dataSets",
                "dhis2",
            ],
            "a report",
        );
        let uuid = self.string(json, "uuid", true)?;
        if uuid::Uuid::parse_str(&uuid).is_err() {
            let loc = self.at_string(&uuid);
            self.invalid(&loc, format!("'{uuid}' is not a uuid"));
        }
        let name = self.localized(json, "name", true);
        let description = self.localized(json, "description", false);
        let parameters = self.parameters(json);
        let designs = self.designs(json);
        let mut data_sets = Vec::new();
        match json.get("dataSets") {
            Some(Value::Array(list)) if !list.is_empty() => {
                for d in list {
                    if let Some(d) = self.data_set(d, &parameters) {
                        data_sets.push(d);
                    }
                }
            }
            _ => {
                let loc = self.at_key("dataSets");
                self.invalid(
                    &loc,
                    "A report needs 'dataSets': a list of at least one data set",
                );
            }
        }
        let mut seen = BTreeSet::new();
        for d in &data_sets {
            if !seen.insert(d.name.clone()) {
                let loc = self.at_string(&d.name);
                self.invalid(&loc, format!("Two data sets are named '{}'", d.name));
            }
        }
        let dhis2 = match json.get("dhis2") {
            None => None,
            Some(v) => self.dhis2(v, data_sets.first()),
        };
        Some(ReportDefinition {
            uuid,
            name,
            description,
            parameters,
            designs,
            data_sets,
            dhis2,
        })
    }

    pub(super) fn only_keys(&mut self, map: &Map<String, Value>, known: &[&str], what: &str) {
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                let loc = self.at_key(key);
                self.invalid(
                    &loc,
                    format!(
                        "'{key}' is not a property of {what} (one of: {})",
                        known.join(", ")
                    ),
                );
            }
        }
    }

    fn parameters(&mut self, json: &Map<String, Value>) -> Vec<ReportParameter> {
        let mut out = Vec::new();
        let Some(v) = json.get("parameters") else {
            return out;
        };
        let Value::Array(list) = v else {
            let loc = self.at_key("parameters");
            self.invalid(&loc, "'parameters' must be a list of names");
            return out;
        };
        for p in list {
            let found = p
                .as_str()
                .and_then(|n| ReportParameter::ALL.into_iter().find(|k| k.name() == n));
            match found {
                Some(k) if !out.contains(&k) => out.push(k),
                _ => {
                    let loc = self.at_value("parameters", p);
                    self.invalid(
                        &loc,
                        format!(
                            "Parameter {p} is not one of startDate, endDate, location, or is listed twice"
                        ),
                    );
                }
            }
        }
        out
    }

    fn designs(&mut self, json: &Map<String, Value>) -> Vec<ReportDesign> {
        let mut out = Vec::new();
        let Some(Value::Array(list)) = json.get("designs") else {
            if json.contains_key("designs") {
                let loc = self.at_key("designs");
                self.invalid(&loc, "'designs' must be a list");
            }
            return out;
        };
        for d in list {
            let Value::Object(map) = d else {
                let loc = self.at_key("designs");
                self.invalid(
                    &loc,
                    "Each design is an object with a uuid, a name and a type",
                );
                continue;
            };
            self.only_keys(map, &["uuid", "name", "type"], "a design");
            let (Some(uuid), Some(name), Some(kind)) = (
                self.string(map, "uuid", true),
                self.string(map, "name", true),
                self.string(map, "type", true),
            ) else {
                continue;
            };
            let format = match kind.to_lowercase().as_str() {
                "csv" => DesignFormat::Csv,
                "excel" | "xlsx" => DesignFormat::Excel,
                _ => {
                    let loc = self.at_string(&kind);
                    self.invalid(&loc, format!("Design type '{kind}' is not csv or excel"));
                    continue;
                }
            };
            out.push(ReportDesign { uuid, name, format });
        }
        out
    }

    fn data_set(&mut self, v: &Value, parameters: &[ReportParameter]) -> Option<ReportDataSet> {
        let Value::Object(map) = v else {
            let loc = self.at_key("dataSets");
            self.invalid(&loc, "Each data set is an object");
            return None;
        };
        let name = self.string(map, "name", true)?;
        let kind = self.string(map, "type", true)?;
        let ctx = Context { parameters };
        let kind = match kind.as_str() {
            "crossTab" => {
                self.only_keys(
                    map,
                    &["name", "type", "rows", "columns"],
                    "a cross-tab data set",
                );
                let rows = self.dimensions(map, "rows", &ctx);
                let columns = self.dimensions(map, "columns", &ctx);
                DataSetKind::CrossTab { rows, columns }
            }
            "lineList" => {
                self.only_keys(
                    map,
                    &["name", "type", "population", "columns"],
                    "a line list",
                );
                let population = match map.get("population") {
                    Some(c) => self.criterion(c, &ctx)?,
                    None => {
                        let loc = self.at_string(&name);
                        self.invalid(&loc, "A line list needs a 'population' criterion");
                        return None;
                    }
                };
                let columns = self.line_columns(map);
                DataSetKind::LineList {
                    population,
                    columns,
                }
            }
            other => {
                let loc = self.at_string(other);
                self.invalid(
                    &loc,
                    format!("Data set type '{other}' is not crossTab or lineList"),
                );
                return None;
            }
        };
        Some(ReportDataSet { name, kind })
    }

    fn dimensions(&mut self, map: &Map<String, Value>, key: &str, ctx: &Context) -> Vec<Dimension> {
        let mut out = Vec::new();
        let Some(Value::Array(list)) = map
            .get(key)
            .filter(|v| v.as_array().is_some_and(|l| !l.is_empty()))
        else {
            let loc = self.at_key(key);
            self.invalid(
                &loc,
                format!("A cross-tab needs '{key}': a list of at least one"),
            );
            return out;
        };
        for d in list {
            let Value::Object(dim) = d else {
                let loc = self.at_key(key);
                self.invalid(
                    &loc,
                    "Each row and column is an object with a name and criteria",
                );
                continue;
            };
            self.only_keys(dim, &["name", "criteria"], "a row or column");
            let Some(name) = self.string(dim, "name", true) else {
                continue;
            };
            let criterion = match dim.get("criteria") {
                Some(c) => self.criterion(c, ctx),
                None => {
                    let loc = self.at_string(&name);
                    self.invalid(&loc, format!("'{name}' has no 'criteria'"));
                    None
                }
            };
            if out.iter().any(|d: &Dimension| d.name == name) {
                let loc = self.at_string(&name);
                self.invalid(&loc, format!("Two {key} are named '{name}'"));
            }
            if let Some(criterion) = criterion {
                out.push(Dimension { name, criterion });
            }
        }
        out
    }

    pub(super) fn criterion(&mut self, v: &Value, ctx: &Context) -> Option<Criterion> {
        let Value::Object(map) = v else {
            let loc = self.at_key("criteria");
            self.invalid(
                &loc,
                format!("A criterion is an object with one property, not {v}"),
            );
            return None;
        };
        if map.len() != 1 {
            let loc = map
                .keys()
                .next()
                .map(|k| self.at_key(k))
                .unwrap_or_else(|| self.file.whole());
            self.invalid(
                &loc,
                "A criterion has exactly one property (all, any, not, visit, encounter, obs, enrolled, gender, age, alive, died, appointment)",
            );
            return None;
        }
        let (key, body) = map.iter().next().expect("one property");
        match key.as_str() {
            "all" | "any" => {
                let Value::Array(list) = body else {
                    let loc = self.at_key(key);
                    self.invalid(&loc, format!("'{key}' takes a list of criteria"));
                    return None;
                };
                let items: Vec<Criterion> =
                    list.iter().filter_map(|c| self.criterion(c, ctx)).collect();
                if items.len() != list.len() {
                    return None;
                }
                Some(if key == "all" {
                    Criterion::All(items)
                } else {
                    Criterion::Any(items)
                })
            }
            "not" => Some(Criterion::Not(Box::new(self.criterion(body, ctx)?))),
            "gender" => {
                let list: Vec<String> = match body {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(l) => l
                        .iter()
                        .filter_map(|g| g.as_str().map(str::to_string))
                        .collect(),
                    _ => Vec::new(),
                };
                if list.is_empty()
                    || list
                        .iter()
                        .any(|g| !["M", "F", "O", "U"].contains(&g.as_str()))
                {
                    let loc = self.at_key("gender");
                    self.invalid(&loc, "'gender' is one of M, F, O, U, or a list of them");
                    return None;
                }
                Some(Criterion::Gender(list))
            }
            "alive" => {
                if body != &Value::Bool(true) {
                    let loc = self.at_key("alive");
                    self.invalid(
                        &loc,
                        "'alive' takes true (write not: {alive: true} for the dead)",
                    );
                    return None;
                }
                Some(Criterion::Alive)
            }
            "age" => {
                let Value::Object(m) = body else {
                    let loc = self.at_key("age");
                    self.invalid(&loc, "'age' takes {min, max}: whole years, or texts like \"11m\", \"30d\", \"5y\"");
                    return None;
                };
                self.only_keys(m, &["min", "max"], "an age criterion");
                let min = m.get("min").and_then(|v| self.age(v, "min"));
                let max = m.get("max").and_then(|v| self.age(v, "max"));
                if !m.contains_key("min") && !m.contains_key("max") {
                    let loc = self.at_key("age");
                    self.invalid(&loc, "'age' needs a min, a max or both");
                }
                if min.is_none() && max.is_none() {
                    return None;
                }
                Some(Criterion::Age { min, max })
            }
            "visit" | "encounter" | "obs" | "enrolled" | "died" | "appointment" => {
                let Value::Object(m) = body else {
                    let loc = self.at_key(key);
                    self.invalid(&loc, format!("'{key}' takes an object"));
                    return None;
                };
                self.keyed(key, m, ctx)
            }
            other => {
                let loc = self.at_key(other);
                self.invalid(
                    &loc,
                    format!("'{other}' is not a criterion (all, any, not, visit, encounter, obs, enrolled, gender, age, alive, died, appointment)"),
                );
                None
            }
        }
    }

    fn keyed(&mut self, key: &str, m: &Map<String, Value>, ctx: &Context) -> Option<Criterion> {
        let errors = self.errors;
        let c = match key {
            "visit" => {
                self.only_keys(m, &["types", "when", "atLocation"], "a visit criterion");
                Criterion::Visit {
                    visit_types: self.refs(m, "types", Kind::VisitType),
                    when: self.when(m, When::Period, false),
                    at_location: self.at_location(m, ctx),
                }
            }
            "encounter" => {
                self.only_keys(
                    m,
                    &["types", "when", "atLocation"],
                    "an encounter criterion",
                );
                Criterion::Encounter {
                    encounter_types: self.refs(m, "types", Kind::EncounterType),
                    when: self.when(m, When::Period, false),
                    at_location: self.at_location(m, ctx),
                }
            }
            "obs" => {
                self.only_keys(
                    m,
                    &["concept", "which", "when", "in", "notIn", "min", "max"],
                    "an observation criterion",
                );
                let concept = self.string(m, "concept", true).and_then(|c| {
                    let loc = self.at_string(&c);
                    let found = self.names.concepts.resolve(&c, &loc, self.sink);
                    if found.is_none() {
                        self.errors += 1;
                    }
                    found
                });
                let which = match m.get("which").and_then(Value::as_str).unwrap_or("any") {
                    "any" => Which::Any,
                    "first" => Which::First,
                    "last" => Which::Last,
                    other => {
                        let loc = self.at_string(other);
                        self.invalid(
                            &loc,
                            format!("'which' is any, first or last, not '{other}'"),
                        );
                        Which::Any
                    }
                };
                let when = self.when(m, When::Period, false);
                let number = |v: Option<&Value>| v.and_then(Value::as_f64);
                let test = match (m.get("in"), m.get("notIn"), m.get("min"), m.get("max")) {
                    (None, None, None, None) => ValueTest::Exists,
                    (Some(_), None, None, None) => ValueTest::In(self.concept_list(m, "in")),
                    (None, Some(_), None, None) => ValueTest::NotIn(self.concept_list(m, "notIn")),
                    (None, None, min, max) => {
                        for (k, v) in [("min", min), ("max", max)] {
                            if v.is_some() && number(v).is_none() {
                                let loc = self.at_key(k);
                                self.invalid(&loc, format!("'{k}' must be a number"));
                            }
                        }
                        ValueTest::Range {
                            min: number(min),
                            max: number(max),
                        }
                    }
                    _ => {
                        let loc = self.at_key("obs");
                        self.invalid(&loc, "An observation criterion tests 'in', 'notIn' or a 'min'/'max' range, one kind at a time");
                        ValueTest::Exists
                    }
                };
                Criterion::Obs {
                    concept: concept.unwrap_or_default(),
                    which,
                    when,
                    test,
                }
            }
            "enrolled" => {
                self.only_keys(m, &["programme", "state", "when"], "an enrolment criterion");
                let programme = self
                    .string(m, "programme", true)
                    .and_then(|p| self.one_ref(&p, Kind::Programme))
                    .unwrap_or_default();
                let state = self
                    .string(m, "state", false)
                    .and_then(|s| self.state(&programme, &s));
                let when = self.when(m, When::AtEnd, true);
                if !matches!(when, When::AtEnd | When::Period) {
                    let loc = self.at_key("when");
                    self.invalid(&loc, "An enrolment is taken 'atEnd' (active at the end date) or in the 'period' (enrolled during it)");
                }
                Criterion::Enrolled {
                    programme,
                    state,
                    when,
                }
            }
            "died" => {
                self.only_keys(m, &["when"], "a death criterion");
                Criterion::Died {
                    when: self.when(m, When::Period, false),
                }
            }
            _ => {
                self.only_keys(
                    m,
                    &["services", "statuses", "when"],
                    "an appointment criterion",
                );
                let services = self.refs(m, "services", Kind::AppointmentService);
                let statuses: Vec<String> = match m.get("statuses") {
                    None => Vec::new(),
                    Some(Value::Array(l)) => l
                        .iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect(),
                    Some(_) => {
                        let loc = self.at_key("statuses");
                        self.invalid(&loc, "'statuses' must be a list");
                        Vec::new()
                    }
                };
                for s in &statuses {
                    if !APPOINTMENT_STATUSES.contains(&s.as_str()) {
                        let loc = self.at_string(s);
                        self.invalid(
                            &loc,
                            format!(
                                "'{s}' is not an appointment status ({})",
                                APPOINTMENT_STATUSES.join(", ")
                            ),
                        );
                    }
                }
                Criterion::Appointment {
                    services,
                    statuses,
                    when: self.when(m, When::Period, false),
                }
            }
        };
        (self.errors == errors).then_some(c)
    }

    fn at_location(&mut self, m: &Map<String, Value>, ctx: &Context) -> bool {
        let Some(v) = m.get("atLocation") else {
            return false;
        };
        let Some(b) = v.as_bool() else {
            let loc = self.at_key("atLocation");
            self.invalid(&loc, "'atLocation' is true or false");
            return false;
        };
        if b && !ctx.parameters.contains(&ReportParameter::Location) {
            let loc = self.at_key("atLocation");
            self.invalid(
                &loc,
                "'atLocation' needs the report to take the 'location' parameter",
            );
        }
        b
    }

    fn when(&mut self, m: &Map<String, Value>, default: When, enrolment: bool) -> When {
        let Some(v) = m.get("when") else {
            return default;
        };
        let months = v
            .as_object()
            .and_then(|o| o.get("monthsBeforeEnd"))
            .and_then(Value::as_u64)
            .filter(|n| (1..=1200).contains(n));
        match (v.as_str(), months) {
            (Some("period"), _) => When::Period,
            (Some("beforeStart"), _) if !enrolment => When::BeforeStart,
            (Some("upToEnd"), _) if !enrolment => When::UpToEnd,
            (Some("atEnd"), _) if enrolment => When::AtEnd,
            (None, Some(n)) if !enrolment => When::MonthsBeforeEnd(n as u32),
            _ => {
                let loc = self.at_value("when", v);
                self.invalid(
                    &loc,
                    format!("'when' is \"period\", \"beforeStart\", \"upToEnd\" or {{\"monthsBeforeEnd\": 1 to 1200}}{}, not {v}", if enrolment { " (enrolments: \"atEnd\" or \"period\")" } else { "" }),
                );
                default
            }
        }
    }

    fn age(&mut self, v: &Value, key: &str) -> Option<Age> {
        let parsed = match v {
            Value::Number(n) => n.as_u64().map(|n| (n, AgeUnit::Years)),
            Value::String(s) => {
                let s = s.trim();
                let (digits, unit) = s.split_at(s.len().saturating_sub(1));
                let unit = match unit {
                    "d" => Some(AgeUnit::Days),
                    "m" => Some(AgeUnit::Months),
                    "y" => Some(AgeUnit::Years),
                    _ => None,
                };
                unit.and_then(|u| digits.parse::<u64>().ok().map(|n| (n, u)))
            }
            _ => None,
        };
        match parsed.filter(|(n, _)| *n <= 200 * 366) {
            Some((amount, unit)) => Some(Age {
                amount: amount as u32,
                unit,
            }),
            None => {
                let loc = self.at_value(key, v);
                self.invalid(
                    &loc,
                    format!(
                        "Age '{key}' {v} is not whole years or a text like \"11m\", \"30d\", \"5y\""
                    ),
                );
                None
            }
        }
    }

    fn concept_list(&mut self, m: &Map<String, Value>, key: &str) -> Vec<String> {
        let Some(Value::Array(list)) = m.get(key) else {
            let loc = self.at_key(key);
            self.invalid(&loc, format!("'{key}' must be a list of concepts"));
            return Vec::new();
        };
        let mut out = Vec::new();
        for c in list {
            let Some(c) = c.as_str() else {
                let loc = self.at_key(key);
                self.invalid(&loc, format!("'{key}' must be a list of concepts"));
                continue;
            };
            let loc = self.at_string(c);
            match self.names.concepts.resolve(c, &loc, self.sink) {
                Some(u) => out.push(u),
                None => self.errors += 1,
            }
        }
        out
    }

    fn refs(&mut self, m: &Map<String, Value>, key: &str, kind: Kind) -> Vec<String> {
        let Some(v) = m.get(key) else {
            return Vec::new();
        };
        let Value::Array(list) = v else {
            let loc = self.at_key(key);
            self.invalid(&loc, format!("'{key}' must be a list of names or uuids"));
            return Vec::new();
        };
        list.iter()
            .filter_map(|r| match r.as_str() {
                Some(r) => self.one_ref(r, kind),
                None => {
                    let loc = self.at_key(key);
                    self.invalid(&loc, format!("'{key}' must be a list of names or uuids"));
                    None
                }
            })
            .collect()
    }

    fn one_ref(&mut self, reference: &str, kind: Kind) -> Option<String> {
        let (lookup, label) = match kind {
            Kind::VisitType => (&self.names.visit_types, "Visit type"),
            Kind::EncounterType => (&self.names.encounter_types, "Encounter type"),
            Kind::Programme => (&self.names.programmes, "Program"),
            Kind::AppointmentService => (&self.names.appointment_services, "Appointment service"),
            Kind::IdentifierType => (&self.names.identifier_types, "Patient identifier type"),
            Kind::PersonAttributeType => {
                (&self.names.person_attribute_types, "Person attribute type")
            }
        };
        let loc = self.at_string(reference);
        let found = lookup.resolve(reference, label, &loc, self.sink);
        if found.is_none() {
            self.errors += 1;
        }
        found
    }

    /// A programme's state, by its uuid or its concept.
    fn state(&mut self, programme: &str, reference: &str) -> Option<String> {
        let states = self
            .names
            .states
            .get(programme)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let concept = match self.names.concepts.lookup(reference) {
            crate::resolve::Resolution::Found(c) => Some(c),
            _ => None,
        };
        let found = states
            .iter()
            .find(|(uuid, c)| uuid == reference || Some(c) == concept.as_ref())
            .map(|(uuid, _)| uuid.clone());
        if found.is_none() {
            let loc = self.at_string(reference);
            self.errors += 1;
            self.sink
                .unknown_reference(&loc, "Program workflow state", reference)
                .help = Some(
                "name a state of the criterion's programme, by its uuid or its concept".into(),
            );
        }
        found
    }

    fn line_columns(&mut self, map: &Map<String, Value>) -> Vec<LineColumn> {
        let mut out = Vec::new();
        let Some(Value::Array(list)) = map
            .get("columns")
            .filter(|v| v.as_array().is_some_and(|l| !l.is_empty()))
        else {
            let loc = self.at_key("columns");
            self.invalid(&loc, "A line list needs 'columns': a list of at least one");
            return out;
        };
        for c in list {
            let Value::Object(col) = c else {
                let loc = self.at_key("columns");
                self.invalid(&loc, "Each column is an object with a name and a value");
                continue;
            };
            self.only_keys(col, &["name", "value"], "a column");
            let Some(name) = self.string(col, "name", true) else {
                continue;
            };
            let value = match col.get("value") {
                Some(Value::String(s)) => match s.as_str() {
                    "identifier" => Some(LineValue::Identifier(None)),
                    "name" => Some(LineValue::Name),
                    "gender" => Some(LineValue::Gender),
                    "age" => Some(LineValue::Age),
                    "birthdate" => Some(LineValue::Birthdate),
                    "lastVisitDate" => Some(LineValue::LastVisitDate),
                    "appointmentDate" => Some(LineValue::AppointmentDate),
                    "appointmentService" => Some(LineValue::AppointmentService),
                    _ => None,
                },
                Some(Value::Object(o)) if o.len() == 1 => {
                    let (k, v) = o.iter().next().expect("one property");
                    match (k.as_str(), v.as_str()) {
                        ("identifier", Some(r)) => self
                            .one_ref(r, Kind::IdentifierType)
                            .map(|u| LineValue::Identifier(Some(u))),
                        ("attribute", Some(r)) => self
                            .one_ref(r, Kind::PersonAttributeType)
                            .map(LineValue::Attribute),
                        ("enrolmentDate", Some(r)) => self
                            .one_ref(r, Kind::Programme)
                            .map(LineValue::EnrolmentDate),
                        ("lastObsValue" | "lastObsDate", Some(r)) => {
                            let loc = self.at_string(r);
                            match self.names.concepts.resolve(r, &loc, self.sink) {
                                Some(u) if k == "lastObsValue" => Some(LineValue::LastObsValue(u)),
                                Some(u) => Some(LineValue::LastObsDate(u)),
                                None => {
                                    self.errors += 1;
                                    continue;
                                }
                            }
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            match value {
                Some(value) => out.push(LineColumn { name, value }),
                None if self.errors > 0 && col.get("value").is_some_and(Value::is_object) => {}
                None => {
                    let loc = col
                        .get("value")
                        .map(|v| self.at_value("value", v))
                        .unwrap_or_else(|| self.at_string(&name));
                    self.invalid(
                        &loc,
                        format!("Column '{name}' has no value it can show: identifier, name, gender, age, birthdate, lastVisitDate, appointmentDate, appointmentService, or {{identifier|attribute|enrolmentDate|lastObsValue|lastObsDate: <reference>}}"),
                    );
                }
            }
        }
        out
    }

    fn dhis2(&mut self, v: &Value, first: Option<&ReportDataSet>) -> Option<Dhis2Mapping> {
        let Value::Object(map) = v else {
            let loc = self.at_key("dhis2");
            self.invalid(&loc, "'dhis2' is an object with a dataSet and dataValues");
            return None;
        };
        self.only_keys(map, &["dataSet", "dataValues"], "a DHIS2 mapping");
        let data_set = self.string(map, "dataSet", true)?;
        // DHIS2's own identifiers are eleven letters and digits, starting with a letter.
        let is_uid = |s: &str| {
            s.len() == 11
                && s.chars().all(|c| c.is_ascii_alphanumeric())
                && s.starts_with(|c: char| c.is_ascii_alphabetic())
        };
        if !is_uid(&data_set) {
            let loc = self.at_string(&data_set);
            self.invalid(&loc, format!("'{data_set}' is not a DHIS2 uid (11 letters and digits, starting with a letter)"));
        }
        let cells: Vec<String> = match first.map(|d| &d.kind) {
            Some(DataSetKind::CrossTab { rows, columns }) => rows
                .iter()
                .flat_map(|r| {
                    columns
                        .iter()
                        .map(move |c| format!("{}.{}", r.name, c.name))
                })
                .collect(),
            _ => {
                let loc = self.at_key("dhis2");
                self.invalid(
                    &loc,
                    "Only a report whose first data set is a cross-tab can go to DHIS2",
                );
                return None;
            }
        };
        let mut values = Vec::new();
        let Some(Value::Array(list)) = map.get("dataValues") else {
            let loc = self.at_key("dataValues");
            self.invalid(&loc, "'dataValues' must be a list");
            return None;
        };
        for item in list {
            let Value::Object(m) = item else {
                let loc = self.at_key("dataValues");
                self.invalid(&loc, "Each data value is an object");
                continue;
            };
            self.only_keys(
                m,
                &["column", "dataElement", "categoryOptionCombo"],
                "a DHIS2 data value",
            );
            let (Some(column), Some(data_element)) = (
                self.string(m, "column", true),
                self.string(m, "dataElement", true),
            ) else {
                continue;
            };
            let category_option_combo = self.string(m, "categoryOptionCombo", false);
            if !cells.contains(&column) {
                let loc = self.at_string(&column);
                self.invalid(
                    &loc,
                    format!("'{column}' is not a cell of the first data set"),
                );
                if let Some(cell) = cells.first() {
                    self.sink
                        .last_mut()
                        .expect("just emitted")
                        .notes
                        .push(format!(
                            "its cells are named <row>.<column>, such as '{cell}'"
                        ));
                }
            }
            for id in std::iter::once(&data_element).chain(category_option_combo.as_ref()) {
                if !is_uid(id) {
                    let loc = self.at_string(id);
                    self.invalid(&loc, format!("'{id}' is not a DHIS2 uid (11 letters and digits, starting with a letter)"));
                }
            }
            values.push(Dhis2Value {
                column,
                data_element,
                category_option_combo,
            });
        }
        Some(Dhis2Mapping { data_set, values })
    }
}

pub(super) struct Context<'a> {
    /// The parameters the criteria may use (a flag takes none).
    pub(super) parameters: &'a [ReportParameter],
}

#[derive(Clone, Copy)]
enum Kind {
    VisitType,
    EncounterType,
    Programme,
    AppointmentService,
    IdentifierType,
    PersonAttributeType,
}
