//! FHIR `RelatedPerson`: a relationship as fhir2 translates it. The related person is the
//! relationship's person A (her name, sex, birth date, addresses and telephone), `patient`
//! its person B, `relationship` the type as A is to B, `period` its dates. Read by the
//! relationship's uuid; searched by the patient (person B) and by `_id`.

use crate::domains::relationship::{RelationshipRecord, store};
use crate::http::error::ApiResult;
use crate::http::fhir::{base, fhir, not_found, patient_param, search_bundle, window};
use crate::http::{AppState, Caller, QueryPairs, param};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The relationship's types, as this server names them in codings.
const RELATIONSHIP_TYPE: &str = "http://fhir.openmrs.org/code-system/relationship-type";

fn related_person_json(
    state: &AppState,
    catalog: &crate::catalog::Catalog,
    r: &RelationshipRecord,
) -> ApiResult<Value> {
    let mut out = Map::new();
    out.insert("resourceType".into(), json!("RelatedPerson"));
    out.insert("id".into(), json!(r.uuid));
    if let Some(updated) = crate::wire::fhir_datetime(
        r.audit
            .date_changed
            .as_deref()
            .unwrap_or(&r.audit.date_created),
    ) {
        out.insert("meta".into(), json!({"lastUpdated": updated}));
    }
    out.insert("active".into(), json!(!r.voiding.voided));
    out.insert(
        "patient".into(),
        json!({"reference": format!("Patient/{}", r.person_b), "type": "Patient"}),
    );
    // Person A's demographics, as her Patient resource gives them.
    if let Some(a) = state.store.patient(&r.person_a)? {
        let person = crate::domains::patient::fhir::patient_json(&a, catalog);
        for k in ["name", "telecom", "gender", "birthDate", "address"] {
            if let Some(v) = person.get(k) {
                out.insert(k.into(), v.clone());
            }
        }
    }
    if let Some(t) = catalog
        .content
        .relationship_types
        .iter()
        .find(|t| t.uuid == r.relationship_type)
    {
        out.insert(
            "relationship".into(),
            json!([{"coding": [{"system": RELATIONSHIP_TYPE, "code": t.uuid, "display": t.a_is_to_b}], "text": t.a_is_to_b}]),
        );
    }
    let mut period = Map::new();
    for (k, v) in [("start", &r.start_date), ("end", &r.end_date)] {
        if let Some(t) = v.as_deref().and_then(crate::wire::fhir_datetime) {
            period.insert(k.into(), json!(t));
        }
    }
    if !period.is_empty() {
        out.insert("period".into(), Value::Object(period));
    }
    Ok(Value::Object(out))
}

/// `GET RelatedPerson/{id}` — privilege: Get Relationships.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Relationships"])?;
    let catalog = state.catalog.load();
    match store::get(&state.store, &id)? {
        Some(r) if !r.voiding.voided => Ok(fhir(
            StatusCode::OK,
            related_person_json(&state, &catalog, &r)?,
        )),
        _ => Ok(not_found("RelatedPerson", &id)),
    }
}

/// `GET RelatedPerson?patient=…` (the persons related to her: her relationships where she
/// is person B) or `?_id=…` — privilege: Get Relationships.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Relationships"])?;
    let catalog = state.catalog.load();
    let found: Vec<RelationshipRecord> = if let Some(ids) = param(&query, "_id") {
        let mut out = Vec::new();
        for id in ids.split(',') {
            out.extend(store::get(&state.store, id.trim())?.filter(|r| !r.voiding.voided));
        }
        out
    } else if let Some(p) = patient_param(&query) {
        store::of_person(&state.store, &p, false)?
            .into_iter()
            .filter(|r| r.person_b == p)
            .collect()
    } else {
        return Ok(crate::http::fhir::invalid(
            "RelatedPerson searches name a patient (patient) or ids (_id)",
        ));
    };
    let w = window(&query);
    let mut resources = Vec::new();
    for r in found.iter().skip(w.start).take(w.limit) {
        resources.push(related_person_json(&state, &catalog, r)?);
    }
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "RelatedPerson",
            &query,
            found.len(),
            w.start,
            w.limit,
            resources,
        ),
    ))
}
