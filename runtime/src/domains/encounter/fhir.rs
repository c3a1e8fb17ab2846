//! FHIR R4 `Observation` and `Encounter` (search and read), as the O3 vitals, biometrics
//! and results widgets read them: the concept's uuid as the first coding, numeric values
//! as quantities with their units, reference ranges from the concept, and an
//! interpretation computed from those ranges when the observation has none of its own.

use super::store::{self, EncounterQuery, ObsQuery};
use super::{EncounterRecord, ObsRecord, ObsValue};
use crate::AppState;
use crate::api::fhir::{base, fhir, not_found, search_bundle};
use crate::api::{Caller, QueryPairs, param};
use crate::domains::Window;
use crate::error::{ApiError, ApiResult};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

const RANGE_MEANING: &str = "http://terminology.hl7.org/CodeSystem/referencerange-meaning";
const OPENMRS_RANGE: &str = "http://fhir.openmrs.org/ext/obs/reference-range";
const INTERPRETATION: &str = "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation";

fn iso(key: &str) -> Value {
    crate::domains::parse_key(key)
        .map(|t| json!(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)))
        .unwrap_or(Value::Null)
}

fn concept_codeable(catalog: &crate::catalog::Catalog, uuid: &str, locale: &str) -> Value {
    let Some(c) = catalog.concept(uuid) else {
        return json!({"coding": [{"code": uuid}]});
    };
    let name = c
        .display_name(locale, &[catalog.default_locale()])
        .map(|n| n.name.clone())
        .unwrap_or_default();
    let mut coding = vec![json!({"code": c.uuid, "display": name})];
    for m in &c.mappings {
        coding.push(json!({"system": m.source, "code": m.code, "display": name}));
    }
    json!({"coding": coding, "text": name})
}

fn interpretation(n: f64, num: &model::ConceptNumeric) -> Option<(&'static str, &'static str)> {
    Some(if num.hi_critical.is_some_and(|h| n > h) {
        ("HH", "Critically high")
    } else if num.low_critical.is_some_and(|l| n < l) {
        ("LL", "Critically low")
    } else if num.hi_normal.is_some_and(|h| n > h) {
        ("H", "High")
    } else if num.low_normal.is_some_and(|l| n < l) {
        ("L", "Low")
    } else if num.hi_normal.is_some() || num.low_normal.is_some() {
        ("N", "Normal")
    } else {
        return None;
    })
}

pub fn observation_json(
    o: &ObsRecord,
    catalog: &crate::catalog::Catalog,
    locale: &str,
    members: &[String],
) -> Value {
    let concept = catalog.concept(&o.concept);
    let mut r = json!({
        "resourceType": "Observation",
        "id": o.uuid,
        "status": match (o.voiding.voided, o.status.as_str()) {
            (true, _) => "entered-in-error",
            (_, "PRELIMINARY") => "preliminary",
            (_, "AMENDED") => "amended",
            _ => "final",
        },
        "code": concept_codeable(catalog, &o.concept, locale),
        "subject": {"reference": format!("Patient/{}", o.person), "type": "Patient"},
        "effectiveDateTime": iso(&o.datetime),
        "issued": iso(&o.audit.date_created),
    });
    if let Some(class) = concept.map(|c| c.class.as_str()) {
        let category = match class {
            "Test" | "LabSet" => "laboratory",
            "Finding" => "vital-signs",
            _ => "exam",
        };
        r["category"] = json!([{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/observation-category", "code": category}]}]);
    }
    if let Some(e) = &o.encounter {
        r["encounter"] = json!({"reference": format!("Encounter/{e}"), "type": "Encounter"});
    }
    let numeric = concept.and_then(|c| c.numeric.as_ref());
    match &o.value {
        ObsValue::Numeric(n) => {
            let unit = numeric.and_then(|x| x.units.clone());
            r["valueQuantity"] = json!({"value": n, "unit": unit, "system": "http://unitsofmeasure.org", "code": unit});
            if let Some(num) = numeric {
                let mut ranges = Vec::new();
                let mut range = |low: Option<f64>, high: Option<f64>, system: &str, code: &str| {
                    if low.is_some() || high.is_some() {
                        let mut x = json!({"type": {"coding": [{"system": system, "code": code}]}});
                        if let Some(l) = low {
                            x["low"] = json!({"value": l, "unit": num.units});
                        }
                        if let Some(h) = high {
                            x["high"] = json!({"value": h, "unit": num.units});
                        }
                        ranges.push(x);
                    }
                };
                range(num.low_normal, num.hi_normal, RANGE_MEANING, "normal");
                range(
                    num.low_critical,
                    num.hi_critical,
                    RANGE_MEANING,
                    "treatment",
                );
                range(num.low_absolute, num.hi_absolute, OPENMRS_RANGE, "absolute");
                r["referenceRange"] = json!(ranges);
                if o.interpretation.is_none()
                    && let Some((code, display)) = interpretation(*n, num)
                {
                    r["interpretation"] = json!([{"coding": [{"system": INTERPRETATION, "code": code, "display": display}]}]);
                }
            }
        }
        ObsValue::Coded(c) => r["valueCodeableConcept"] = concept_codeable(catalog, c, locale),
        ObsValue::Text(t) => r["valueString"] = json!(t),
        ObsValue::Boolean(b) => r["valueBoolean"] = json!(b),
        ObsValue::Datetime(t) => r["valueDateTime"] = iso(t),
        ObsValue::Date(d) => r["valueDateTime"] = json!(d),
        ObsValue::Time(t) => r["valueTime"] = json!(t),
        ObsValue::Group => {
            r["hasMember"] = json!(
                members
                    .iter()
                    .map(
                        |m| json!({"reference": format!("Observation/{m}"), "type": "Observation"})
                    )
                    .collect::<Vec<_>>()
            );
        }
    }
    if let Some(i) = &o.interpretation {
        r["interpretation"] = json!([{"coding": [{"system": INTERPRETATION, "display": i}]}]);
    }
    r
}

fn encounter_json(e: &EncounterRecord, catalog: &crate::catalog::Catalog) -> Value {
    let t = catalog
        .content
        .encounter_types
        .iter()
        .find(|t| t.uuid == e.encounter_type);
    let mut r = json!({
        "resourceType": "Encounter",
        "id": e.uuid,
        "status": "unknown",
        "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "AMB"},
        "type": [{"coding": [{"system": "http://fhir.openmrs.org/code-system/encounter-type", "code": e.encounter_type, "display": t.map(|t| t.name.clone())}]}],
        "subject": {"reference": format!("Patient/{}", e.patient), "type": "Patient"},
        "period": {"start": iso(&e.datetime)},
        "meta": {"lastUpdated": iso(e.audit.date_changed.as_deref().unwrap_or(&e.audit.date_created))},
    });
    if let Some(l) = e.location.as_deref().and_then(|l| catalog.location(l)) {
        r["location"] = json!([{"location": {"reference": format!("Location/{}", l.uuid), "type": "Location", "display": l.name}}]);
    }
    if let Some(v) = &e.visit {
        r["partOf"] = json!({"reference": format!("Encounter/{v}"), "type": "Encounter"});
    }
    r
}

/// `_count` (default 10, at most 100) and `_getpagesoffset`.
fn window(query: &[(String, String)]) -> Window {
    let count = param(query, "_count")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(10)
        .clamp(1, 100);
    let offset = param(query, "_getpagesoffset")
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Window {
        start: offset,
        limit: count,
        count_all: true,
    }
}

/// The patient a search names: `subject:Patient`, `subject`, `patient` (bare or `Patient/…`).
fn patient_param(query: &[(String, String)]) -> Option<String> {
    ["subject:Patient", "subject", "patient", "patient:Patient"]
        .iter()
        .find_map(|k| param(query, k))
        .map(|p| p.trim_start_matches("Patient/").to_string())
}

pub async fn observations(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let catalog = state.catalog.load();
    let Some(patient) = patient_param(&query) else {
        return Err(ApiError::BadRequest(
            "Observation searches need a patient (subject:Patient)".into(),
        ));
    };
    let concepts = super::concepts_param(&catalog, &query, &["code"]);
    let w = window(&query);
    // `encounter.type` narrows to one encounter type (the form engine's latest value).
    let q = ObsQuery {
        patient: Some(patient),
        concepts,
        encounter: None,
        encounter_type: param(&query, "encounter.type")
            .map(|t| super::encounter_type_uuid(&catalog, t)),
        include_voided: false,
    };
    let (list, page) = store::list_obs(&state.store, &q, w)?;
    let locale = caller.locale(&catalog);
    let mut resources = Vec::with_capacity(list.len());
    for o in &list {
        let members = match o.value {
            ObsValue::Group => store::group_members(&state.store, &o.uuid)?
                .into_iter()
                .map(|m| m.uuid)
                .collect(),
            _ => Vec::new(),
        };
        resources.push(observation_json(o, &catalog, &locale, &members));
    }
    let total = page.total.unwrap_or(resources.len());
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "Observation",
            &query,
            total,
            w.start,
            w.limit,
            resources,
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
    Ok(fhir(
        StatusCode::OK,
        observation_json(&o, &catalog, &caller.locale(&catalog), &members),
    ))
}

pub async fn encounters(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters"])?;
    let Some(patient) = patient_param(&query) else {
        return Err(ApiError::BadRequest(
            "Encounter searches need a patient (subject)".into(),
        ));
    };
    let w = window(&query);
    let catalog = state.catalog.load();
    // `type` narrows to one encounter type (the form engine asks for the patient's previous
    // encounter of the form's type).
    let q = EncounterQuery {
        patient: Some(patient),
        encounter_type: param(&query, "type").map(|t| super::encounter_type_uuid(&catalog, t)),
        ..EncounterQuery::default()
    };
    let (list, page) = store::list(&state.store, &q, w)?;
    let resources: Vec<Value> = list.iter().map(|e| encounter_json(e, &catalog)).collect();
    let total = page.total.unwrap_or(resources.len());
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "Encounter",
            &query,
            total,
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
    let Some(e) = store::encounter(&state.store, &id)? else {
        return Ok(not_found("Encounter", &id));
    };
    let catalog = state.catalog.load();
    Ok(fhir(StatusCode::OK, encounter_json(&e, &catalog)))
}
