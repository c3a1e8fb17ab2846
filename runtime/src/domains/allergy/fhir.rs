//! FHIR R4 `AllergyIntolerance` (search by patient, read), as fhir2 translates an allergy
//! and the O3 allergies widget reads it: names are the concepts' REST display in the
//! caller's language (the widget matches them against the form's concept lists), the
//! reaction always present, severity as FHIR's code, criticality from it.

use crate::content::concept::ConceptRes;
use crate::domains::allergy::{AllergenType, AllergyConcepts, AllergyRecord, store};
use crate::http::AppState;
use crate::http::error::ApiResult;
use crate::http::fhir::{
    base, fhir, invalid, iso, not_found, outcome, patient_param, search_bundle,
};
use crate::http::repr::{Ctx, Resource};
use crate::http::{Caller, QueryPairs, param};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

const CLINICAL: &str = "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical";
const VERIFICATION: &str = "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification";

/// A concept as fhir2 writes it: its uuid first, then its mappings, each with the concept's
/// REST display (not `http::fhir::concept_codeable`'s name: the widget matches these names
/// against the REST concept lists of its form); `text` is that name, or the free text
/// given with the "other" concept.
fn codeable(ctx: &Ctx, uuid: &str, text: Option<&str>) -> Value {
    let Some(c) = ctx.catalog.concept(uuid) else {
        return json!({"coding": [{"code": uuid}], "text": text.unwrap_or(uuid)});
    };
    let name = ConceptRes(c).display(ctx);
    let mut coding = vec![json!({"code": c.uuid, "display": name})];
    coding.extend(c.mappings.iter().filter_map(|m| {
        let system = ctx.catalog.fhir_system(&m.source)?;
        Some(json!({"system": system, "code": m.code, "display": name}))
    }));
    json!({"coding": coding, "text": text.unwrap_or(&name)})
}

pub fn allergy_json(a: &AllergyRecord, ctx: &Ctx, concepts: &AllergyConcepts) -> Value {
    let allergen = a.coded_allergen.as_deref().unwrap_or(&concepts.other);
    let code = codeable(ctx, allergen, a.non_coded_allergen.as_deref());
    let severity = a
        .severity
        .as_deref()
        .and_then(|s| concepts.severity_code(s));
    let mut reaction = json!({
        "substance": code,
        "manifestation": a.reactions.iter().map(|r| codeable(ctx, &r.reaction, r.non_coded.as_deref())).collect::<Vec<_>>(),
    });
    if let Some(s) = severity {
        reaction["severity"] = json!(s);
    }
    let (status, display) = if a.voiding.voided {
        ("inactive", "Inactive")
    } else {
        ("active", "Active")
    };
    let mut r = json!({
        "resourceType": "AllergyIntolerance",
        "id": a.uuid,
        "meta": {"lastUpdated": iso(a.audit.date_changed.as_deref().unwrap_or(&a.audit.date_created))},
        "clinicalStatus": {"coding": [{"system": CLINICAL, "code": status, "display": display}], "text": display},
        "verificationStatus": {"coding": [{"system": VERIFICATION, "code": "confirmed", "display": "Confirmed"}], "text": "Confirmed"},
        "type": "allergy",
        "code": code,
        "patient": {"reference": format!("Patient/{}", a.patient), "type": "Patient"},
        "recordedDate": iso(&a.audit.date_created),
        "recorder": {"reference": format!("Practitioner/{}", a.audit.creator), "type": "Practitioner"},
        "reaction": [reaction],
    });
    let category = match a.allergen_type {
        AllergenType::Drug => Some("medication"),
        AllergenType::Food => Some("food"),
        AllergenType::Environment => Some("environment"),
        AllergenType::Other => None,
    };
    if let Some(c) = category {
        r["category"] = json!([c]);
    }
    if let Some(s) = severity {
        r["criticality"] = json!(match s {
            "severe" => "high",
            "mild" => "low",
            _ => "unable-to-assess",
        });
    }
    if let Some(c) = &a.comment {
        r["note"] = json!([{"text": c}]);
    }
    r
}

/// `GET AllergyIntolerance?patient=…` — privilege: Get Allergies. Every active allergy
/// in one Bundle unless `_count` asks for less: the widget does not page.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Allergies"])?;
    let Some(patient) = patient_param(&query) else {
        return Ok(invalid("AllergyIntolerance searches need a patient"));
    };
    let all = store::of_patient(&state.store, &patient, false)?;
    let count = param(&query, "_count")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(usize::MAX)
        .max(1);
    let offset = param(&query, "_getpagesoffset")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(0);
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let concepts = AllergyConcepts::of(&state.clinic());
    let resources = all
        .iter()
        .skip(offset)
        .take(count)
        .map(|a| allergy_json(a, &ctx, &concepts))
        .collect();
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "AllergyIntolerance",
            &query,
            all.len(),
            offset,
            count.min(all.len().max(1)),
            resources,
        ),
    ))
}

/// `GET AllergyIntolerance/{id}` — privilege: Get Allergies.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Allergies"])?;
    let Some(a) = store::get(&state.store, &id)? else {
        return Ok(not_found("AllergyIntolerance", &id));
    };
    if a.voiding.voided {
        return Ok(outcome(
            StatusCode::GONE,
            "error",
            "deleted",
            &format!("Resource of type AllergyIntolerance with ID {id} is gone/deleted"),
        ));
    }
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    Ok(fhir(
        StatusCode::OK,
        allergy_json(&a, &ctx, &AllergyConcepts::of(&state.clinic())),
    ))
}
