//! FHIR R4 `Observation` and `Encounter` (search and read), as the O3 vitals, biometrics
//! and results widgets read them: the concept's uuid as the first coding, numeric values
//! as quantities with their units, reference ranges from the concept, and the
//! interpretation recorded when the observation was saved (judged by the concept's own
//! range for one saved before interpretations were recorded).

use crate::domains::encounter::store::{self, EncounterQuery, ObsQuery};
use crate::domains::encounter::{Comparison, EncounterRecord, ObsRecord, ObsValue, ValueFilter};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fhir::{
    Codeable, Coding, base, concept_codeable, fhir, fhir_of, iso, not_found, patient_param,
    search_bundle_of, window,
};
use crate::http::{Caller, QueryPairs, param};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::sync::Arc;

const RANGE_MEANING: &str = "http://terminology.hl7.org/CodeSystem/referencerange-meaning";
const OPENMRS_RANGE: &str = "http://fhir.openmrs.org/ext/obs/reference-range";
const INTERPRETATION: &str = "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation";
const CATEGORY: &str = "http://terminology.hl7.org/CodeSystem/observation-category";

/// An observation's interpretation (`Obs.Interpretation`'s name) as fhir2 writes it: the
/// v3 code, and the name with each word capitalised (`Critically High`), which the O3
/// vitals table reads.
fn interpretation_coding(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "NORMAL" => ("N", "Normal"),
        "ABNORMAL" => ("A", "Abnormal"),
        "CRITICALLY_ABNORMAL" => ("AA", "Critically Abnormal"),
        "CRITICALLY_HIGH" => ("HH", "Critically High"),
        "CRITICALLY_LOW" => ("LL", "Critically Low"),
        "HIGH" => ("H", "High"),
        "LOW" => ("L", "Low"),
        "OFF_SCALE_LOW" => ("<", "Off Scale Low"),
        "OFF_SCALE_HIGH" => (">", "Off Scale High"),
        "SIGNIFICANT_CHANGE_DOWN" => ("D", "Significant Change Down"),
        "SIGNIFICANT_CHANGE_UP" => ("U", "Significant Change Up"),
        "RESISTANT" => ("R", "Resistant"),
        "SUSCEPTIBLE" => ("S", "Susceptible"),
        "INTERMEDIATE" => ("I", "Intermediate"),
        "POSITIVE" => ("POS", "Positive"),
        "NEGATIVE" => ("NEG", "Negative"),
        _ => return None,
    })
}

fn interpretation_of(name: &str) -> [Codeable<'_>; 1] {
    match interpretation_coding(name) {
        Some((code, display)) => {
            let mut c = one_coding(INTERPRETATION, Some(code), Some(display));
            c[0].text = Some(display);
            c
        }
        None => one_coding(INTERPRETATION, None, Some(name)),
    }
}

/// A FHIR R4 Observation, serialised straight from the record (a chart's vitals page holds
/// a hundred of them; building JSON trees first cost most of the answer's time). What
/// depends only on the concept comes pre-serialised from [`ConceptParts`].
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation<'a> {
    resource_type: &'static str,
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
    status: &'static str,
    code: &'a RawValue,
    subject: Reference<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    effective_date_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    issued: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    category: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    encounter: Option<Reference<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_quantity: Option<Quantity<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reference_range: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_codeable_concept: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_string: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_boolean: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_date_time: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_time: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    has_member: Option<Vec<Reference<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    interpretation: Option<[Codeable<'a>; 1]>,
}

/// When the resource last changed (`_lastUpdated` searches it).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    last_updated: String,
}

/// `{"reference": "Kind/id", "type": "Kind"}`, written without building the string.
struct Reference<'a> {
    kind: &'static str,
    id: &'a str,
}

impl<'a> Reference<'a> {
    fn to(kind: &'static str, id: &'a str) -> Reference<'a> {
        Reference { kind, id }
    }
}

impl Serialize for Reference<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Joined<'b>(&'static str, &'b str);
        impl Serialize for Joined<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&format_args!("{}/{}", self.0, self.1))
            }
        }
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("reference", &Joined(self.kind, self.id))?;
        m.serialize_entry("type", self.kind)?;
        m.end()
    }
}

/// A value in a concept's units: `unit` as the content writes it, and UCUM's `system` and
/// `code` only when the units are UCUM (`crate::http::fhir::ucum`); nothing for no units.
#[derive(Serialize)]
struct Quantity<'a> {
    value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
}

impl<'a> Quantity<'a> {
    /// `code`: the units' UCUM code, worked out once per concept (`ConceptParts::ucum`).
    fn of(value: f64, units: Option<&'a str>, code: Option<&'static str>) -> Quantity<'a> {
        Quantity {
            value,
            unit: units.filter(|u| !u.trim().is_empty()),
            system: code.map(|_| crate::http::fhir::UCUM),
            code,
        }
    }
}

#[derive(Serialize)]
struct ReferenceRange<'a> {
    #[serde(rename = "type")]
    kind: Codeable<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    low: Option<Quantity<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    high: Option<Quantity<'a>>,
}

fn iso_opt(key: &str) -> Option<String> {
    crate::wire::fhir_datetime(key)
}

fn one_coding<'a>(
    system: &'a str,
    code: Option<&'a str>,
    display: Option<&'a str>,
) -> [Codeable<'a>; 1] {
    [Codeable {
        coding: vec![Coding {
            system: Some(system),
            code,
            display,
        }],
        text: None,
    }]
}

fn raw(value: &impl Serialize) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| {
        // Unreachable: these parts hold only strings and finite numbers from the catalog.
        RawValue::from_string("null".into()).expect("null is JSON")
    })
}

/// An observation's FHIR category, from its concept's class (as fhir2 maps classes).
fn category_of(class: &str) -> &'static str {
    match class {
        "Test" | "LabSet" => "laboratory",
        "Finding" => "vital-signs",
        _ => "exam",
    }
}

/// The value tests a search asks for (`value-quantity`, `value-concept`, `value-string`,
/// `value-date`; each occurrence one value, all of them to hold), and the concepts a
/// quantity's units leave possible (`None`: no units named).
fn value_filters(
    catalog: &crate::catalog::Catalog,
    query: &[(String, String)],
) -> Result<(Vec<ValueFilter>, Option<Vec<String>>), String> {
    let mut filters = Vec::new();
    let mut with_units: Option<Vec<String>> = None;
    for (k, raw) in query {
        match k.as_str() {
            "value-quantity" => {
                let mut parts = raw.splitn(3, '|');
                let number = parts.next().unwrap_or_default();
                let (_system, code) = (parts.next(), parts.next().unwrap_or_default());
                let (cmp, n, half) = number_param(number).ok_or_else(|| {
                    format!(
                        "value-quantity: '{raw}' is not one number with an optional prefix (eq, ne, gt, lt, ge, le, sa, eb, ap) and units (|system|code)"
                    )
                })?;
                filters.push(ValueFilter::Number(cmp, n, half));
                if !code.is_empty() {
                    // The concepts recorded in those units, named as the content writes them
                    // or by their UCUM code.
                    let units: Vec<String> = catalog
                        .content
                        .concepts
                        .iter()
                        .filter(|c| {
                            c.numeric
                                .as_ref()
                                .and_then(|n| n.units.as_deref())
                                .is_some_and(|u| {
                                    u == code || crate::http::fhir::ucum(u) == Some(code)
                                })
                        })
                        .map(|c| c.uuid.clone())
                        .collect();
                    with_units = Some(match with_units {
                        Some(before) => before.into_iter().filter(|c| units.contains(c)).collect(),
                        None => units,
                    });
                }
            }
            "value-concept" => {
                let pair = [(k.clone(), raw.clone())];
                filters.push(ValueFilter::Concept(crate::http::fhir::concepts_param(
                    catalog,
                    &pair,
                    &["value-concept"],
                )));
            }
            "value-string" => filters.push(ValueFilter::Text(alternatives(raw))),
            "value-date" => {
                let pair = [(k.clone(), raw.clone())];
                if let Some((from, to)) = crate::http::fhir::instant_bounds(&pair, "value-date")? {
                    filters.push(ValueFilter::Date(from, to));
                }
            }
            _ => {}
        }
    }
    Ok((filters, with_units))
}

/// A FHIR number search value: a prefix (`eq` when none), the number, and half the unit of
/// its last written digit (the precision `eq` implies).
fn number_param(v: &str) -> Option<(Comparison, f64, f64)> {
    let prefixes = [
        ("eq", Comparison::Eq),
        ("ne", Comparison::Ne),
        ("gt", Comparison::Gt),
        ("lt", Comparison::Lt),
        ("ge", Comparison::Ge),
        ("le", Comparison::Le),
        ("sa", Comparison::Gt),
        ("eb", Comparison::Lt),
        ("ap", Comparison::Ap),
    ];
    let (cmp, rest) = prefixes
        .iter()
        .find_map(|(p, c)| v.strip_prefix(p).map(|r| (*c, r)))
        .unwrap_or((Comparison::Eq, v));
    let rest = rest.trim();
    // Plain decimals only (no exponent, no comma-separated alternatives).
    if rest.is_empty()
        || !rest
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+'))
    {
        return None;
    }
    let n: f64 = rest.parse().ok()?;
    let decimals = rest.split_once('.').map_or(0, |(_, d)| d.len());
    let half = 0.5 * 10f64.powi(-(decimals as i32));
    n.is_finite().then_some((cmp, n, half))
}

/// A string search value's alternatives: separated by commas, `\,` a comma of a value.
fn alternatives(raw: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                out.last_mut().expect("one value at least").push(',');
                chars.next();
            }
            ',' => out.push(String::new()),
            c => out.last_mut().expect("one value at least").push(c),
        }
    }
    out.retain(|s| !s.trim().is_empty());
    out
}

/// The concepts a `category` search parameter admits (`laboratory`, or
/// `system|laboratory`, several separated by commas), narrowing `concepts` when codes
/// were also given; `None` when the search names no category.
fn in_categories(
    catalog: &crate::catalog::Catalog,
    query: &[(String, String)],
    concepts: &[String],
) -> Option<Vec<String>> {
    let wanted: Vec<&str> = query
        .iter()
        .filter(|(k, _)| k == "category")
        .flat_map(|(_, v)| v.split(','))
        .map(|c| c.rsplit('|').next().unwrap_or(c).trim())
        .filter(|c| !c.is_empty())
        .collect();
    if wanted.is_empty() {
        return None;
    }
    let admitted = |class: &str| wanted.contains(&category_of(class));
    Some(if concepts.is_empty() {
        catalog
            .content
            .concepts
            .iter()
            .filter(|c| admitted(&c.class))
            .map(|c| c.uuid.clone())
            .collect()
    } else {
        concepts
            .iter()
            .filter(|u| catalog.concept(u).is_some_and(|c| admitted(&c.class)))
            .cloned()
            .collect()
    })
}

/// The parts of an Observation that depend only on its concept and the caller's locale,
/// serialised once per answer (a vitals page repeats nine concepts a hundred times).
pub struct ConceptParts {
    code: Box<RawValue>,
    category: Option<Box<RawValue>>,
    /// Present for numeric concepts with at least one range.
    reference_range: Option<Box<RawValue>>,
    /// The UCUM code of a numeric concept's units, when they are UCUM.
    ucum: Option<&'static str>,
}

impl ConceptParts {
    fn of(catalog: &crate::catalog::Catalog, uuid: &str, locale: &str) -> ConceptParts {
        let concept = catalog.concept(uuid);
        let category =
            concept.map(|c| raw(&one_coding(CATEGORY, Some(category_of(&c.class)), None)));
        let reference_range = concept.and_then(|c| c.numeric.as_ref()).and_then(|num| {
            let unit = num.units.as_deref();
            let code = unit.and_then(crate::http::fhir::ucum);
            let bound = |v: Option<f64>| v.map(|value| Quantity::of(value, unit, code));
            let ranges: Vec<ReferenceRange> = [
                (num.low_normal, num.hi_normal, RANGE_MEANING, "normal"),
                (
                    num.low_critical,
                    num.hi_critical,
                    RANGE_MEANING,
                    "treatment",
                ),
                (num.low_absolute, num.hi_absolute, OPENMRS_RANGE, "absolute"),
            ]
            .into_iter()
            .filter(|(low, high, _, _)| low.is_some() || high.is_some())
            .map(|(low, high, system, code)| ReferenceRange {
                kind: one_coding(system, Some(code), None)
                    .into_iter()
                    .next()
                    .expect("one coding"),
                low: bound(low),
                high: bound(high),
            })
            .collect();
            (!ranges.is_empty()).then(|| raw(&ranges))
        });
        ConceptParts {
            code: raw(&concept_codeable(catalog, uuid, locale)),
            category,
            reference_range,
            ucum: concept
                .and_then(|c| c.numeric.as_ref())
                .and_then(|n| n.units.as_deref())
                .and_then(crate::http::fhir::ucum),
        }
    }
}

/// [`ConceptParts`] by concept uuid, filled before the Observations borrow them.
pub struct PartsByConcept<'c> {
    catalog: &'c crate::catalog::Catalog,
    locale: &'c str,
    parts: std::collections::HashMap<String, ConceptParts>,
}

impl<'c> PartsByConcept<'c> {
    pub fn new(catalog: &'c crate::catalog::Catalog, locale: &'c str) -> Self {
        PartsByConcept {
            catalog,
            locale,
            parts: std::collections::HashMap::new(),
        }
    }

    /// Prepares the parts an observation's rendering needs (its concept, a coded answer).
    pub fn prepare(&mut self, o: &ObsRecord) {
        let answer = match &o.value {
            ObsValue::Coded(c) => Some(c.as_str()),
            _ => None,
        };
        for uuid in std::iter::once(o.concept.as_str()).chain(answer) {
            if !self.parts.contains_key(uuid) {
                let parts = ConceptParts::of(self.catalog, uuid, self.locale);
                self.parts.insert(uuid.to_string(), parts);
            }
        }
    }

    fn get(&self, uuid: &str) -> &ConceptParts {
        // `prepare` ran for every observation rendered.
        &self.parts[uuid]
    }
}

/// One observation as a FHIR resource; `parts` must have been prepared for it.
pub fn observation_resource<'a>(
    o: &'a ObsRecord,
    catalog: &'a crate::catalog::Catalog,
    parts: &'a PartsByConcept,
    members: &'a [String],
) -> Observation<'a> {
    let concept = catalog.concept(&o.concept);
    let own = parts.get(&o.concept);
    let mut r = Observation {
        resource_type: "Observation",
        id: &o.uuid,
        meta: iso_opt(store::last_updated(o)).map(|last_updated| Meta { last_updated }),
        status: match (o.voiding.voided, o.status.as_str()) {
            (true, _) => "entered-in-error",
            (_, "PRELIMINARY") => "preliminary",
            (_, "AMENDED") => "amended",
            _ => "final",
        },
        code: &own.code,
        subject: Reference::to("Patient", &o.person),
        effective_date_time: iso_opt(&o.datetime),
        issued: iso_opt(&o.audit.date_created),
        category: own.category.as_deref(),
        encounter: o
            .encounter
            .as_deref()
            .map(|e| Reference::to("Encounter", e)),
        value_quantity: None,
        reference_range: None,
        value_codeable_concept: None,
        value_string: None,
        value_boolean: None,
        value_date_time: None,
        value_time: None,
        has_member: None,
        interpretation: None,
    };
    let numeric = concept.and_then(|c| c.numeric.as_ref());
    match &o.value {
        ObsValue::Numeric(n) => {
            let unit = numeric.and_then(|x| x.units.as_deref());
            r.value_quantity = Some(Quantity::of(*n, unit, own.ucum));
            if let Some(num) = numeric {
                r.reference_range = own.reference_range.as_deref();
                // Observations saved before their interpretation was recorded are judged
                // by the concept's own range.
                if o.interpretation.is_none()
                    && let Some(name) = num.limits().interpretation(*n)
                {
                    r.interpretation = Some(interpretation_of(name));
                }
            }
        }
        ObsValue::Coded(c) => r.value_codeable_concept = Some(&parts.get(c).code),
        ObsValue::Text(t) => r.value_string = Some(t),
        ObsValue::Boolean(b) => r.value_boolean = Some(*b),
        ObsValue::Datetime(t) => r.value_date_time = Some(iso_opt(t)),
        ObsValue::Date(d) => r.value_date_time = Some(Some(d.clone())),
        ObsValue::Time(t) => r.value_time = Some(t),
        ObsValue::Group => {
            r.has_member = Some(
                members
                    .iter()
                    .map(|m| Reference::to("Observation", m))
                    .collect(),
            );
        }
    }
    if let Some(i) = &o.interpretation {
        r.interpretation = Some(interpretation_of(i));
    }
    r
}

pub fn encounter_json(e: &EncounterRecord, catalog: &crate::catalog::Catalog) -> Value {
    let t = catalog
        .content
        .encounter_types
        .iter()
        .find(|t| t.uuid == e.encounter_type);
    let mut kind = json!({"system": "http://fhir.openmrs.org/code-system/encounter-type", "code": e.encounter_type});
    if let Some(t) = t {
        kind["display"] = json!(t.name);
    }
    let mut meta =
        json!({"tag": [{"system": ENCOUNTER_TAG, "code": "encounter", "display": "Encounter"}]});
    if let Some(updated) = crate::wire::fhir_datetime(
        e.audit
            .date_changed
            .as_deref()
            .unwrap_or(&e.audit.date_created),
    ) {
        meta["lastUpdated"] = json!(updated);
    }
    let mut r = json!({
        "resourceType": "Encounter",
        "id": e.uuid,
        "status": "unknown",
        "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "AMB"},
        "type": [{"coding": [kind]}],
        "subject": {"reference": format!("Patient/{}", e.patient), "type": "Patient"},
        "period": {"start": iso(&e.datetime)},
        "meta": meta,
    });
    if let Some(l) = e.location.as_deref().and_then(|l| catalog.location(l)) {
        r["location"] = json!([{"location": {"reference": format!("Location/{}", l.uuid), "type": "Location", "display": l.name}}]);
    }
    if let Some(v) = &e.visit {
        r["partOf"] = json!({"reference": format!("Encounter/{v}"), "type": "Encounter"});
    }
    if !e.providers.is_empty() {
        r["participant"] = e
            .providers
            .iter()
            .map(|p| {
                json!({"individual": {"reference": format!("Practitioner/{}", p.provider),
                    "type": "Practitioner"}})
            })
            .collect();
    }
    r
}

pub async fn observations(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let catalog = state.catalog.load();
    let (date, updated) = crate::http::fhir::date_and_updated(&query)?;
    let (values, with_units) = value_filters(&catalog, &query).map_err(ApiError::BadRequest)?;
    let patient = patient_param(&query);
    if let Some(member) = param(&query, "has-member") {
        // The group of one observation: other filters would not narrow it, so they are
        // refused rather than ignored.
        let alone = [
            "has-member",
            "patient",
            "patient:Patient",
            "subject",
            "subject:Patient",
            "_count",
            "_getpagesoffset",
            "_format",
            "_pretty",
        ];
        if let Some((k, _)) = query.iter().find(|(k, _)| !alone.contains(&k.as_str())) {
            return Err(ApiError::BadRequest(format!(
                "has-member is searched alone (with a patient at most), not with {k}"
            )));
        }
        return obs_group_of(&state, &caller, &query, member, patient.as_deref());
    }
    // Without a patient, the changes of a period (a warehouse's incremental extraction):
    // the one way in that an index serves, never a scan of every observation.
    if patient.is_none() && updated.is_none() {
        return Err(ApiError::BadRequest(
            "Observation searches need a patient (subject, patient) or _lastUpdated".into(),
        ));
    }
    let concepts = crate::http::fhir::concepts_param(&catalog, &query, &["code"]);
    let mut w = window(&query);
    // Every patient's changes of a period can be many (a day at a facility is tens of
    // thousands): counted only when asked (`_total=accurate`); the next link says if more.
    let counted = patient.is_some() || param(&query, "_total") == Some("accurate");
    w.count_all = counted;
    // A category no concept of the content falls in, or units no concept is recorded in,
    // match nothing (an empty concept list would mean "any concept").
    let (concepts, by_category) = match in_categories(&catalog, &query, &concepts) {
        Some(admitted) => (admitted, true),
        None => (concepts, false),
    };
    let (concepts, narrowed) = match with_units {
        None => (concepts, by_category),
        Some(units) if concepts.is_empty() && !by_category => (units, true),
        Some(units) => (
            concepts.into_iter().filter(|c| units.contains(c)).collect(),
            true,
        ),
    };
    if narrowed && concepts.is_empty() {
        return Ok(fhir_of(
            StatusCode::OK,
            &search_bundle_of::<Observation>(
                &base(&state, &caller),
                "Observation",
                &query,
                0,
                w.start,
                w.limit,
                Vec::new(),
            ),
        ));
    }
    // `encounter.type` narrows to one encounter type (the form engine's latest value).
    let q = ObsQuery {
        patient,
        concepts,
        encounter: None,
        encounter_type: param(&query, "encounter.type")
            .map(|t| crate::domains::encounter::encounter_type_uuid(&catalog, t)),
        include_voided: false,
        date,
        updated,
        values,
    };
    let (list, page) = store::list_obs(&state.store, &q, w)?;
    let locale = caller.locale(&catalog);
    let (parts, members) = parts_and_members(&state, &catalog, &locale, &list)?;
    let resources: Vec<_> = list
        .iter()
        .zip(&members)
        .map(|(o, members)| {
            (
                o.uuid.clone(),
                observation_resource(o, &catalog, &parts, members),
            )
        })
        .collect();
    let total = counted.then(|| page.total.unwrap_or(resources.len()));
    let more = match total {
        Some(total) => w.start.saturating_add(w.limit) < total,
        None => page.more,
    };
    Ok(fhir_of(
        StatusCode::OK,
        &crate::http::fhir::search_bundle_paged(
            &base(&state, &caller),
            "Observation",
            &query,
            total,
            more,
            w.start,
            w.limit,
            resources,
        ),
    ))
}

/// What a page of observations is written with: each concept's parts, prepared once, and
/// each observation's group members (empty for a value).
fn parts_and_members<'c>(
    state: &AppState,
    catalog: &'c crate::catalog::Catalog,
    locale: &'c str,
    list: &[ObsRecord],
) -> ApiResult<(PartsByConcept<'c>, Vec<Vec<String>>)> {
    let mut parts = PartsByConcept::new(catalog, locale);
    let mut members = Vec::with_capacity(list.len());
    for o in list {
        parts.prepare(o);
        members.push(match o.value {
            ObsValue::Group => store::group_members(&state.store, &o.uuid)?
                .into_iter()
                .map(|m| m.uuid)
                .collect(),
            _ => Vec::new(),
        });
    }
    Ok((parts, members))
}

/// `GET Observation/$lastn?patient=…[&code=…][&category=…][&max=n]` (fhir2's
/// operation): the `max` (1 by default) newest observations of each concept named by
/// `code` or falling in `category`, or of each concept the patient has observations of when
/// neither is given — privilege: Get Observations.
pub async fn lastn(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    // An operation's parameters are its own: one it does not read is refused rather than
    // answered as if it had been (a `date` ignored would give the all-time newest).
    const LASTN: &[&str] = &[
        "patient",
        "patient:Patient",
        "subject",
        "subject:Patient",
        "code",
        "category",
        "max",
        "_format",
        "_pretty",
    ];
    if let Some((k, _)) = query.iter().find(|(k, _)| !LASTN.contains(&k.as_str())) {
        return Err(ApiError::BadRequest(format!(
            "$lastn does not support {k}: supported are {}",
            LASTN.join(", ")
        )));
    }
    let Some(patient) = patient_param(&query) else {
        return Err(ApiError::BadRequest(
            "$lastn needs a patient (patient, subject)".into(),
        ));
    };
    let max = match param(&query, "max") {
        None => 1,
        Some(m) => match m.parse::<usize>() {
            Ok(n) if (1..=100).contains(&n) => n,
            _ => {
                return Err(ApiError::BadRequest(format!(
                    "max: a whole number from 1 to 100, not {m}"
                )));
            }
        },
    };
    let catalog = state.catalog.load();
    let named = crate::http::fhir::concepts_param(&catalog, &query, &["code"]);
    // A category's concepts narrowed to hers: the content has hundreds she has none of.
    let concepts = match in_categories(&catalog, &query, &named) {
        Some(admitted) if named.is_empty() => store::concepts_of_patient(&state.store, &patient)?
            .into_iter()
            .filter(|c| admitted.contains(c))
            .collect(),
        Some(admitted) => admitted,
        None if named.is_empty() => store::concepts_of_patient(&state.store, &patient)?,
        None => named,
    };
    let mut list = Vec::new();
    for concept in concepts {
        let q = ObsQuery {
            patient: Some(patient.clone()),
            concepts: vec![concept],
            ..ObsQuery::default()
        };
        let w = crate::store::record::Window {
            start: 0,
            limit: max,
            count_all: false,
        };
        list.extend(store::list_obs(&state.store, &q, w)?.0);
    }
    let locale = caller.locale(&catalog);
    let (parts, members) = parts_and_members(&state, &catalog, &locale, &list)?;
    let resources: Vec<_> = list
        .iter()
        .zip(&members)
        .map(|(o, m)| (o.uuid.clone(), observation_resource(o, &catalog, &parts, m)))
        .collect();
    let total = resources.len();
    Ok(fhir_of(
        StatusCode::OK,
        &crate::http::fhir::search_bundle_paged(
            &base(&state, &caller),
            "Observation/$lastn",
            &query,
            Some(total),
            false,
            0,
            total.max(1),
            resources,
        ),
    ))
}

/// `Observation?has-member=Observation/{id}`: the group holding that observation (none
/// when it is in no group, voided, or another patient's than the one named).
fn obs_group_of(
    state: &Arc<AppState>,
    caller: &Caller,
    query: &[(String, String)],
    member: &str,
    patient: Option<&str>,
) -> ApiResult<Response> {
    let catalog = state.catalog.load();
    let id = member.strip_prefix("Observation/").unwrap_or(member);
    let group = match store::obs(&state.store, id)?
        .filter(|m| !m.voiding.voided)
        .and_then(|m| m.obs_group)
    {
        Some(g) => store::obs(&state.store, &g)?,
        None => None,
    }
    .filter(|g| !g.voiding.voided && patient.is_none_or(|p| p == g.person));
    let w = window(query);
    let members: Vec<String> = match &group {
        Some(g) => store::group_members(&state.store, &g.uuid)?
            .into_iter()
            .map(|m| m.uuid)
            .collect(),
        None => Vec::new(),
    };
    let locale = caller.locale(&catalog);
    let mut parts = PartsByConcept::new(&catalog, &locale);
    let mut resources = Vec::new();
    if let Some(g) = &group {
        parts.prepare(g);
        resources.push((
            g.uuid.clone(),
            observation_resource(g, &catalog, &parts, &members),
        ));
    }
    let total = resources.len();
    let page: Vec<_> = resources.into_iter().skip(w.start).take(w.limit).collect();
    Ok(fhir_of(
        StatusCode::OK,
        &crate::http::fhir::search_bundle_paged(
            &base(state, caller),
            "Observation",
            query,
            Some(total),
            false,
            w.start,
            w.limit,
            page,
        ),
    ))
}

pub async fn observation(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let Some(o) = store::obs(&state.store, &id)? else {
        return Ok(not_found("Observation", &id));
    };
    let catalog = state.catalog.load();
    let members: Vec<String> = store::group_members(&state.store, &o.uuid)?
        .into_iter()
        .map(|m| m.uuid)
        .collect();
    let locale = caller.locale(&catalog);
    let mut parts = PartsByConcept::new(&catalog, &locale);
    parts.prepare(&o);
    Ok(fhir_of(
        StatusCode::OK,
        &observation_resource(&o, &catalog, &parts, &members),
    ))
}

pub async fn encounters(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters"])?;
    // The pharmacy's named query's own parameters mean nothing to a plain search.
    for only_named in ["status", "patientSearchTerm"] {
        if param(&query, only_named).is_some() {
            return Err(ApiError::BadRequest(format!(
                "Encounter's {only_named} is searched only with _query=encountersWithMedicationRequests"
            )));
        }
    }
    let (date, updated) = crate::http::fhir::date_and_updated(&query)?;
    let patient = patient_param(&query);
    // Without a patient, a period of the facility's encounters (the index by time).
    if patient.is_none() && date.is_none() {
        return Err(ApiError::BadRequest(
            "Encounter searches need a patient (subject) or a date".into(),
        ));
    }
    let mut w = window(&query);
    // The facility's encounters of a period can be many: counted only when asked
    // (`_total=accurate`), as Observation's extraction; the next link says if more follow.
    let counted = patient.is_some() || param(&query, "_total") == Some("accurate");
    w.count_all = counted;
    let catalog = state.catalog.load();
    let (from, to) = date.unwrap_or_default();
    let reference = |prefix: &str, v: &str| v.trim().trim_start_matches(prefix).to_string();
    // `type` narrows to one encounter type (the form engine asks for the patient's previous
    // encounter of the form's type).
    let q = EncounterQuery {
        patient,
        encounter_type: param(&query, "type")
            .map(|t| crate::domains::encounter::encounter_type_uuid(&catalog, t)),
        from,
        to,
        locations: param(&query, "location")
            .map(|l| l.split(',').map(|x| reference("Location/", x)).collect()),
        provider: param(&query, "participant").map(|p| reference("Practitioner/", p)),
        updated,
        ..EncounterQuery::default()
    };
    let (list, page) = store::list(&state.store, &q, w)?;
    let resources: Vec<(String, Value)> = list
        .iter()
        .map(|e| (e.uuid.clone(), encounter_json(e, &catalog)))
        .collect();
    let total = counted.then(|| page.total.unwrap_or(resources.len()));
    let more = match total {
        Some(total) => w.start.saturating_add(w.limit) < total,
        None => page.more,
    };
    Ok(fhir_of(
        StatusCode::OK,
        &crate::http::fhir::search_bundle_paged(
            &base(&state, &caller),
            "Encounter",
            &query,
            total,
            more,
            w.start,
            w.limit,
            resources,
        ),
    ))
}

pub async fn encounter(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters"])?;
    let catalog = state.catalog.load();
    if let Some(e) = store::encounter(&state.store, &id)? {
        return Ok(fhir(StatusCode::OK, encounter_json(&e, &catalog)));
    }
    // fhir2 serves visits as Encounters too: encounters' `partOf` and immunizations'
    // `encounter` name them so.
    if caller.grants.has("Get Visits")
        && let Some(v) = crate::domains::visit::store::get(&state.store, &id)?
    {
        return Ok(fhir(StatusCode::OK, visit_json(&v, &catalog)));
    }
    Ok(not_found("Encounter", &id))
}

/// What tells a visit's Encounter from an encounter's (`meta.tag`), as fhir2 tags them.
const ENCOUNTER_TAG: &str = "http://fhir.openmrs.org/ext/encounter-tag";

/// A visit as fhir2 represents it: an Encounter typed by the visit type, over the visit's
/// period, in progress until it ends.
pub fn visit_json(
    v: &crate::domains::visit::VisitRecord,
    catalog: &crate::catalog::Catalog,
) -> Value {
    let t = catalog
        .content
        .visit_types
        .iter()
        .find(|t| t.uuid == v.visit_type);
    let mut kind =
        json!({"system": "http://fhir.openmrs.org/code-system/visit-type", "code": v.visit_type});
    if let Some(t) = t {
        kind["display"] = json!(t.name);
    }
    let mut period = json!({});
    if let Some(start) = crate::wire::fhir_datetime(&v.start) {
        period["start"] = json!(start);
    }
    if let Some(stop) = v.stop.as_deref().and_then(crate::wire::fhir_datetime) {
        period["end"] = json!(stop);
    }
    let mut meta = json!({"tag": [{"system": ENCOUNTER_TAG, "code": "visit", "display": "Visit"}]});
    if let Some(updated) = crate::wire::fhir_datetime(
        v.audit
            .date_changed
            .as_deref()
            .unwrap_or(&v.audit.date_created),
    ) {
        meta["lastUpdated"] = json!(updated);
    }
    let mut r = json!({
        "resourceType": "Encounter",
        "id": v.uuid,
        "meta": meta,
        "status": match (v.voiding.voided, v.stop.is_some()) {
            (true, _) => "entered-in-error",
            (false, true) => "finished",
            (false, false) => "in-progress",
        },
        "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "AMB"},
        "type": [{"coding": [kind]}],
        "subject": {"reference": format!("Patient/{}", v.patient), "type": "Patient"},
        "period": period,
    });
    if let Some(l) = v.location.as_deref().and_then(|l| catalog.location(l)) {
        r["location"] = json!([{"location": {"reference": format!("Location/{}", l.uuid), "type": "Location", "display": l.name}}]);
    }
    r
}

/// An encounter by uuid as FHIR shows it (registered for orders' `_include`).
pub fn json_by_uuid(
    store: &crate::store::Store,
    catalog: &crate::catalog::Catalog,
    uuid: &str,
) -> crate::store::StoreResult<Option<Value>> {
    Ok(crate::domains::encounter::store::encounter(store, uuid)?
        .map(|e| encounter_json(&e, catalog)))
}

/// A FHIR Observation as the REST body `POST obs` takes (`create_obs`), or what is wrong
/// with it: `subject` (a patient), `encounter`, `code` (a coding this server resolves:
/// a concept uuid without `system`, or a mapping under a system it writes),
/// `effectiveDateTime`, `status`, and one of `valueQuantity`, `valueCodeableConcept`,
/// `valueString`, `valueBoolean`, `valueDateTime`.
fn rest_obs_of(
    catalog: &crate::catalog::Catalog,
    body: &serde_json::Map<String, Value>,
) -> Result<serde_json::Map<String, Value>, String> {
    use crate::http::fhir::reference_id;
    if body.get("resourceType").and_then(Value::as_str) != Some("Observation") {
        return Err("The resource must be an Observation (resourceType)".into());
    }
    let concept_of = |codeable: Option<&Value>, field: &str| -> Result<String, String> {
        let codings = codeable
            .and_then(|c| c.get("coding"))
            .and_then(Value::as_array)
            .ok_or_else(|| format!("Observation.{field} needs a coding"))?;
        codings
            .iter()
            .find_map(|c| {
                let code = c.get("code")?.as_str()?;
                let system = c.get("system").and_then(Value::as_str);
                catalog.concept_of_coding(system, code)
            })
            .map(|c| c.uuid.clone())
            .ok_or_else(|| format!("Observation.{field}: no coding names a concept of this server"))
    };
    let patient = reference_id(body.get("subject"), "Patient")
        .ok_or("Observation.subject must name a patient (Patient/…)")?;
    let mut out = serde_json::Map::new();
    out.insert("person".into(), json!(patient));
    out.insert(
        "concept".into(),
        json!(concept_of(body.get("code"), "code")?),
    );
    if let Some(e) = body.get("encounter") {
        let id = reference_id(Some(e), "Encounter")
            .ok_or("Observation.encounter must name an Encounter")?;
        out.insert("encounter".into(), json!(id));
    }
    if let Some(when) = body.get("effectiveDateTime") {
        let when = when
            .as_str()
            .filter(|w| crate::wire::parse_datetime(w).is_some())
            .ok_or("Observation.effectiveDateTime must be a FHIR dateTime")?;
        out.insert("obsDatetime".into(), json!(when));
    }
    if let Some(status) = body.get("status") {
        let status = match status.as_str() {
            Some("final") => "FINAL",
            Some("preliminary") => "PRELIMINARY",
            Some("amended") => "AMENDED",
            _ => return Err("Observation.status must be final, preliminary or amended".into()),
        };
        out.insert("status".into(), json!(status));
    }
    let values: Vec<(&str, &Value)> = [
        "valueQuantity",
        "valueCodeableConcept",
        "valueString",
        "valueBoolean",
        "valueDateTime",
    ]
    .into_iter()
    .filter_map(|k| Some((k, body.get(k)?)))
    .collect();
    let value = match values.as_slice() {
        [("valueQuantity", q)] => q.get("value").filter(|v| v.is_number()).cloned()
            .ok_or("Observation.valueQuantity.value must be a number")?,
        [("valueCodeableConcept", c)] => json!(concept_of(Some(c), "valueCodeableConcept")?),
        [("valueString", v)] => v.as_str().map(|s| json!(s)).ok_or("Observation.valueString must be a string")?,
        [("valueBoolean", v)] => v.as_bool().map(|b| json!(b)).ok_or("Observation.valueBoolean must be true or false")?,
        [("valueDateTime", v)] => v.as_str().map(|s| json!(s)).ok_or("Observation.valueDateTime must be a dateTime")?,
        [] => return Err("Observation needs a value (valueQuantity, valueCodeableConcept, valueString, valueBoolean or valueDateTime)".into()),
        _ => return Err("Observation has more than one value[x]".into()),
    };
    out.insert("value".into(), value);
    Ok(out)
}

/// `POST Observation`: one observation, with the rules of `POST obs` (the patient exists,
/// the encounter is hers, the value fits the concept's datatype and its absolute range…):
/// a device feed or an integration recording a measure — privilege: Add Observations.
/// Malformed resources are 400, rule failures 422, each an OperationOutcome; 201 with
/// `Location` and the Observation as read back.
pub async fn create_observation(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    crate::http::JsonBody(body): crate::http::JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Observations"])?;
    let catalog = state.catalog.load();
    let rest = match rest_obs_of(&catalog, &body) {
        Ok(rest) => rest,
        Err(e) => return Ok(crate::http::fhir::invalid(&e)),
    };
    let user = caller.user_uuid();
    let st = state.clone();
    let o = match crate::http::blocking(move || {
        crate::domains::encounter::rest::create_obs(&st, &rest, &user)
    })
    .await
    {
        Ok(o) => o,
        Err(ApiError::Invalid(inv)) => return Ok(crate::http::fhir::unprocessable(&inv)),
        Err(e) => return Err(e),
    };
    let locale = caller.locale(&catalog);
    let mut parts = PartsByConcept::new(&catalog, &locale);
    parts.prepare(&o);
    let res = fhir_of(
        StatusCode::CREATED,
        &observation_resource(&o, &catalog, &parts, &[]),
    );
    Ok(crate::http::fhir::located(
        res,
        &state,
        &caller,
        "Observation",
        &o.uuid,
    ))
}

/// `POST Encounter` — privilege: Add Encounters. An encounter as fhir2 reads one:
/// `subject` (the patient), `type` (the encounter type: a coding under
/// `http://fhir.openmrs.org/code-system/encounter-type`, or without a system, naming its
/// uuid), `period.start` (when; now without it), `location[0].location`, `partOf` (the
/// visit, `Encounter/{visit}`; else as REST finds or makes one, `visits.assignmentHandler`) and `participant[].individual` (`Practitioner/{provider}`, in the unknown role).
/// Checked by every rule of `POST encounter`: 201 with `Location` and the Encounter read
/// back; a malformed resource 400, a rule broken 422. A visit (`meta.tag` `visit`) is made
/// through the REST API's `visit`, not here.
pub async fn create_encounter(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    crate::http::JsonBody(body): crate::http::JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Encounters"])?;
    let rest = match rest_encounter_of(&body) {
        Ok(rest) => rest,
        Err(e) => return Ok(crate::http::fhir::invalid(&e)),
    };
    let user = caller.user_uuid();
    let may_add_visits = caller.grants.has("Add Visits");
    let st = state.clone();
    let e = match crate::http::blocking(move || {
        let mut rest = rest;
        // A Practitioner is named by its provider's uuid or by its account's (as a record's
        // `recorder` names it): either way, the provider.
        if let Some(Value::Array(providers)) = rest.get_mut("encounterProviders") {
            for p in providers.iter_mut() {
                let named = p["provider"].as_str().unwrap_or_default().to_string();
                if let Some(found) = crate::domains::provider::fhir::resolve(&st, &named)? {
                    p["provider"] = json!(found.uuid);
                }
            }
        }
        crate::domains::encounter::rest::create_encounter(&st, &rest, &user, may_add_visits)
    })
    .await
    {
        Ok(e) => e,
        Err(ApiError::Invalid(inv)) => return Ok(crate::http::fhir::unprocessable(&inv)),
        Err(e) => return Err(e),
    };
    let res = fhir(
        StatusCode::CREATED,
        encounter_json(&e, &state.catalog.load()),
    );
    Ok(crate::http::fhir::located(
        res,
        &state,
        &caller,
        "Encounter",
        &e.uuid,
    ))
}

/// A FHIR Encounter as the REST body `POST encounter` takes, or what is wrong with it.
fn rest_encounter_of(
    body: &serde_json::Map<String, Value>,
) -> Result<serde_json::Map<String, Value>, String> {
    use crate::http::fhir::reference_id;
    if body.get("resourceType").and_then(Value::as_str) != Some("Encounter") {
        return Err("The resource must be an Encounter (resourceType)".into());
    }
    const KEPT: &[&str] = &[
        "resourceType",
        "id",
        "meta",
        "text",
        "status",
        "class",
        "type",
        "subject",
        "period",
        "location",
        "partOf",
        "participant",
    ];
    if let Some(other) = body.keys().find(|k| !KEPT.contains(&k.as_str())) {
        return Err(format!("Encounter.{other} is not kept by this server"));
    }
    let tags = body
        .get("meta")
        .and_then(|m| m.get("tag"))
        .and_then(Value::as_array);
    if tags.is_some_and(|t| t.iter().any(|t| t.get("code") == Some(&json!("visit")))) {
        return Err(
            "A visit is started through the REST API (POST visit), not as a FHIR Encounter".into(),
        );
    }
    let mut rest = serde_json::Map::new();
    let patient = reference_id(body.get("subject"), "Patient")
        .ok_or("Encounter.subject must name a Patient (Patient/{id})")?;
    rest.insert("patient".into(), json!(patient));
    let codings = body
        .get("type")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("coding").and_then(Value::as_array))
        .flatten();
    let mut kind = None;
    for c in codings {
        let system = c.get("system").and_then(Value::as_str);
        if matches!(
            system,
            None | Some("http://fhir.openmrs.org/code-system/encounter-type")
        ) && let Some(code) = c.get("code").and_then(Value::as_str)
        {
            kind = Some(code.to_string());
            break;
        }
    }
    let kind = kind.ok_or(
        "Encounter.type needs a coding of http://fhir.openmrs.org/code-system/encounter-type",
    )?;
    rest.insert("encounterType".into(), json!(kind));
    if let Some(period) = body.get("period") {
        if period.get("end").is_some() {
            return Err("Encounter.period.end is not kept: an encounter is a moment".into());
        }
        match period.get("start") {
            Some(Value::String(start)) => {
                rest.insert("encounterDatetime".into(), json!(start));
            }
            None => {}
            Some(_) => return Err("Encounter.period.start must be a dateTime".into()),
        }
    }
    match body
        .get("location")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        None | Some([]) => {}
        Some([one]) => {
            let l = reference_id(one.get("location"), "Location")
                .ok_or("Encounter.location[0].location must name a Location")?;
            rest.insert("location".into(), json!(l));
        }
        Some(_) => return Err("Encounter.location: one location is kept".into()),
    }
    if let Some(part_of) = body.get("partOf") {
        let visit = reference_id(Some(part_of), "Encounter")
            .ok_or("Encounter.partOf must name a visit (Encounter/{visit})")?;
        rest.insert("visit".into(), json!(visit));
    }
    let mut providers = Vec::new();
    for p in body
        .get("participant")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let provider = reference_id(p.get("individual"), "Practitioner")
            .ok_or("Encounter.participant[].individual must name a Practitioner")?;
        providers.push(json!({"provider": provider}));
    }
    if !providers.is_empty() {
        rest.insert("encounterProviders".into(), Value::Array(providers));
    }
    Ok(rest)
}
