//! FHIR `DiagnosticReport`: a laboratory panel's results, as fhir2 (1.x) reads an obs group
//! as a diagnostic report — the group's concept its code, its members its results, its
//! patient, encounter and time the report's — restricted here to the groups of laboratory
//! concepts (class Test or LabSet: FHIR's `laboratory` category), so that an immunization's
//! group, also an obs group, is not read as a lab report. A result of a test order names the
//! order as the report's `basedOn` ServiceRequest.
//!
//! Read-only: results are recorded through encounters, as the laboratory app records them.

use crate::domains::encounter::store::{self, ObsQuery};
use crate::domains::encounter::{ObsRecord, ObsValue, ValueFilter};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fhir::{
    base, concept_codeable, fhir, not_found, patient_param, search_bundle, window,
};
use crate::http::{Caller, QueryPairs, param};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

/// HL7 v2's diagnostic service sections, as fhir2 names a report's category.
const SECTIONS: &str = "http://terminology.hl7.org/CodeSystem/v2-0074";

/// The search parameters `DiagnosticReport?` accepts.
pub const SEARCH_PARAMS: &[&str] = &[
    "patient",
    "patient:Patient",
    "subject",
    "subject:Patient",
    "encounter",
    "code",
    "date",
    "_lastUpdated",
];

/// Whether a concept is a laboratory one (its class Test or LabSet).
fn is_laboratory(catalog: &crate::catalog::Catalog, concept: &str) -> bool {
    catalog
        .concept(concept)
        .is_some_and(|c| matches!(c.class.as_str(), "Test" | "LabSet"))
}

/// When a report last changed: its group's change or its results' (a corrected result is a
/// new member observation; the group itself is not rewritten).
fn last_changed<'a>(group: &'a ObsRecord, members: &'a [ObsRecord]) -> &'a str {
    members
        .iter()
        .map(store::last_updated)
        .fold(store::last_updated(group), |latest, t| latest.max(t))
}

/// The report of a laboratory obs group with its members (voided ones left out).
fn report_json(
    state: &AppState,
    catalog: &crate::catalog::Catalog,
    locale: &str,
    group: &ObsRecord,
    members: &[ObsRecord],
    orders_visible: bool,
) -> ApiResult<Value> {
    let status = match group.status.as_str() {
        "PRELIMINARY" => "preliminary",
        "AMENDED" => "amended",
        _ => "final",
    };
    let changed = last_changed(group, members);
    let mut r = json!({
        "resourceType": "DiagnosticReport",
        "id": group.uuid,
        "status": status,
        "category": [{"coding": [{"system": SECTIONS, "code": "LAB", "display": "Laboratory"}]}],
        "code": concept_codeable(catalog, &group.concept, locale),
        "subject": {"reference": format!("Patient/{}", group.person), "type": "Patient"},
    });
    if let Some(t) = crate::wire::fhir_datetime(changed) {
        r["meta"] = json!({"lastUpdated": t});
    }
    if let Some(t) = crate::wire::fhir_datetime(&group.datetime) {
        r["effectiveDateTime"] = json!(t);
    }
    if let Some(t) = crate::wire::fhir_datetime(&group.audit.date_created) {
        r["issued"] = json!(t);
    }
    if let Some(e) = &group.encounter {
        r["encounter"] = json!({"reference": format!("Encounter/{e}"), "type": "Encounter"});
    }
    let results: Vec<Value> = members
        .iter()
        .filter(|m| !m.voiding.voided)
        .map(|m| json!({"reference": format!("Observation/{}", m.uuid), "type": "Observation"}))
        .collect();
    if !results.is_empty() {
        r["result"] = json!(results);
    }
    // The test order the results answer, when it is served as a ServiceRequest and the
    // reader may read orders.
    let order = group
        .order
        .as_ref()
        .or_else(|| members.iter().find_map(|m| m.order.as_ref()));
    if orders_visible
        && let Some(o) = order
        && let Some(record) = crate::domains::order::store::get(&state.store, o)?
        && crate::domains::order::fhir::is_service_request(&record)
        && !record.voiding.voided
    {
        r["basedOn"] =
            json!([{"reference": format!("ServiceRequest/{o}"), "type": "ServiceRequest"}]);
    }
    Ok(r)
}

/// `GET DiagnosticReport/{id}` — privilege: Get Observations.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let catalog = state.catalog.load();
    match store::obs(&state.store, &id)? {
        Some(g)
            if matches!(g.value, ObsValue::Group)
                && !g.voiding.voided
                && is_laboratory(&catalog, &g.concept) =>
        {
            let members = store::group_members(&state.store, &g.uuid)?;
            let locale = caller.locale(&catalog);
            Ok(fhir(
                StatusCode::OK,
                report_json(
                    &state,
                    &catalog,
                    &locale,
                    &g,
                    &members,
                    caller.require(&["Get Orders"]).is_ok(),
                )?,
            ))
        }
        _ => Ok(not_found("DiagnosticReport", &id)),
    }
}

/// `GET DiagnosticReport?patient=…[&code=…][&date=…][&_lastUpdated=…]` or
/// `?encounter=…`: a patient's (or an encounter's) laboratory panels, newest first —
/// privilege: Get Observations.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let catalog = state.catalog.load();
    let (date, updated) = crate::http::fhir::date_and_updated(&query)?;
    let patient = patient_param(&query);
    let encounter =
        param(&query, "encounter").map(|e| e.trim_start_matches("Encounter/").to_string());
    if patient.is_none() && encounter.is_none() {
        return Err(ApiError::BadRequest(
            "DiagnosticReport searches need a patient (subject, patient) or an encounter".into(),
        ));
    }
    // The laboratory concepts asked for (all of them when no code is named).
    let named = crate::http::fhir::concepts_param(&catalog, &query, &["code"]);
    let concepts: Vec<String> = if named.is_empty() {
        catalog
            .content
            .concepts
            .iter()
            .filter(|c| matches!(c.class.as_str(), "Test" | "LabSet"))
            .map(|c| c.uuid.clone())
            .collect()
    } else {
        named
            .into_iter()
            .filter(|c| is_laboratory(&catalog, c))
            .collect()
    };
    let w = window(&query);
    let mut groups: Vec<ObsRecord> = if concepts.is_empty() {
        Vec::new()
    } else if let Some(e) = &encounter {
        // An encounter holds a few observations: read them all, keep its panels.
        store::obs_of_encounter(&state.store, e, false)?
            .into_iter()
            .filter(|o| {
                matches!(o.value, ObsValue::Group)
                    && concepts.contains(&o.concept)
                    && patient.as_ref().is_none_or(|p| p == &o.person)
            })
            .collect()
    } else {
        let q = ObsQuery {
            patient: patient.clone(),
            concepts: concepts.clone(),
            date: date.clone(),
            values: vec![ValueFilter::Group],
            ..ObsQuery::default()
        };
        let every = crate::store::record::Window {
            start: 0,
            limit: usize::MAX,
            count_all: false,
        };
        store::list_obs(&state.store, &q, every)?.0
    };
    let within = |t: &str, b: &Option<(Option<String>, Option<String>)>| {
        b.as_ref().is_none_or(|(from, to)| {
            from.as_deref().is_none_or(|f| t >= f) && to.as_deref().is_none_or(|u| t <= u)
        })
    };
    if encounter.is_some() {
        groups.retain(|g| within(&g.datetime, &date));
        groups.sort_by(|a, b| b.datetime.cmp(&a.datetime));
    }
    // Each report with its results: when it last changed depends on them (a patient's
    // panels are a few dozen).
    let mut reports = Vec::with_capacity(groups.len());
    for g in groups {
        let members = store::group_members(&state.store, &g.uuid)?;
        if within(last_changed(&g, &members), &updated) {
            reports.push((g, members));
        }
    }
    let total = reports.len();
    let locale = caller.locale(&catalog);
    let orders_visible = caller.require(&["Get Orders"]).is_ok();
    let mut page = Vec::new();
    for (g, members) in reports.iter().skip(w.start).take(w.limit) {
        page.push(report_json(
            &state,
            &catalog,
            &locale,
            g,
            members,
            orders_visible,
        )?);
    }
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "DiagnosticReport",
            &query,
            total,
            w.start,
            w.limit,
            page,
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::record::{Audit, Voiding};

    fn obs(uuid: &str, value: ObsValue, created: &str) -> ObsRecord {
        ObsRecord {
            v: 1,
            uuid: uuid.into(),
            person: "patient-1".into(),
            concept: "concept-1".into(),
            encounter: None,
            obs_group: None,
            datetime: "2026-11-01T10:00:00.000Z".into(),
            location: None,
            value,
            comment: None,
            form_field_namespace: None,
            form_field_path: None,
            status: "FINAL".into(),
            interpretation: None,
            order: None,
            previous_version: None,
            audit: Audit {
                creator: "admin".into(),
                date_created: created.into(),
                changed_by: None,
                date_changed: None,
            },
            voiding: Voiding::default(),
        }
    }

    #[test]
    fn a_report_changed_when_a_result_was_corrected() {
        let group = obs("g", ObsValue::Group, "2026-11-01T10:00:00.000Z");
        let first = obs("m1", ObsValue::Numeric(9.5), "2026-11-01T10:00:00.000Z");
        assert_eq!(
            last_changed(&group, std::slice::from_ref(&first)),
            "2026-11-01T10:00:00.000Z"
        );
        // The correction, a day later, is a new member; the group is not rewritten.
        let corrected = obs("m2", ObsValue::Numeric(10.5), "2026-11-02T08:00:00.000Z");
        assert_eq!(
            last_changed(&group, &[corrected]),
            "2026-11-02T08:00:00.000Z"
        );
    }
}
