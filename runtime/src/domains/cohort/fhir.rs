//! FHIR `Group`: a patient list as fhir2 translates a cohort. `type` person, `actual`
//! true (the members are named), `name` and `quantity`; each current membership a
//! `member` with its patient and its period. Read by the list's uuid, searched by `_id`
//! and `name`; `Group/{id}/$export` (the application's) exports its members' records.

use crate::domains::cohort::{CohortRecord, MemberRecord, store};
use crate::http::error::ApiResult;
use crate::http::fhir::{base, fhir, not_found, search_bundle, window};
use crate::http::{AppState, Caller, QueryPairs, param};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The search parameters a Group search reads.
pub const SEARCH_PARAMS: &[&str] = &["_id", "name"];

/// A list's current memberships, oldest first.
fn current_memberships(state: &AppState, list: &str) -> ApiResult<Vec<MemberRecord>> {
    let now = crate::wire::datetime_key(chrono::Utc::now());
    let mut memberships: Vec<MemberRecord> = store::members_of(&state.store, list, false)?
        .into_iter()
        .filter(|m| m.current(&now))
        .collect();
    memberships.reverse();
    Ok(memberships)
}

/// The patients a list holds now, in the order they were added, each once.
pub fn members(state: &AppState, list: &str) -> ApiResult<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for m in current_memberships(state, list)? {
        if !out.contains(&m.patient) {
            out.push(m.patient);
        }
    }
    Ok(out)
}

fn group_json(state: &AppState, c: &CohortRecord) -> ApiResult<Value> {
    let memberships = current_memberships(state, &c.uuid)?;
    let mut out = Map::new();
    out.insert("resourceType".into(), json!("Group"));
    out.insert("id".into(), json!(c.uuid));
    if let Some(updated) = crate::wire::fhir_datetime(
        c.audit
            .date_changed
            .as_deref()
            .unwrap_or(&c.audit.date_created),
    ) {
        out.insert("meta".into(), json!({"lastUpdated": updated}));
    }
    out.insert("active".into(), json!(!c.voiding.voided));
    out.insert("type".into(), json!("person"));
    out.insert("actual".into(), json!(true));
    out.insert("name".into(), json!(c.name));
    out.insert("quantity".into(), json!(memberships.len()));
    let members: Vec<Value> = memberships
        .iter()
        .map(|m| {
            let mut member = json!({"entity": {"reference": format!("Patient/{}", m.patient), "type": "Patient"}});
            let mut period = Map::new();
            for (k, v) in [("start", &m.start_date), ("end", &m.end_date)] {
                if let Some(t) = v.as_deref().and_then(crate::wire::fhir_datetime) {
                    period.insert(k.into(), json!(t));
                }
            }
            if !period.is_empty() {
                member["period"] = Value::Object(period);
            }
            member
        })
        .collect();
    if !members.is_empty() {
        out.insert("member".into(), Value::Array(members));
    }
    Ok(Value::Object(out))
}

/// `GET Group/{id}` — privilege: Get Patient Cohorts.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Cohorts"])?;
    match store::cohort(&state.store, &id)? {
        Some(c) if !c.voiding.voided => Ok(fhir(StatusCode::OK, group_json(&state, &c)?)),
        _ => Ok(not_found("Group", &id)),
    }
}

/// `GET Group?_id=…` or `?name=…` (part of the name, any case) — privilege: Get Patient
/// Cohorts.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Cohorts"])?;
    let lists: Vec<CohortRecord> = store::cohorts(&state.store)?
        .into_iter()
        .filter(|c| !c.voiding.voided)
        .collect();
    let found: Vec<CohortRecord> = if let Some(ids) = param(&query, "_id") {
        let ids: Vec<&str> = ids.split(',').map(str::trim).collect();
        lists
            .into_iter()
            .filter(|c| ids.contains(&c.uuid.as_str()))
            .collect()
    } else if let Some(name) = param(&query, "name") {
        let name = name.to_lowercase();
        lists
            .into_iter()
            .filter(|c| c.name.to_lowercase().contains(&name))
            .collect()
    } else {
        lists
    };
    let w = window(&query);
    let mut resources = Vec::new();
    for c in found.iter().skip(w.start).take(w.limit) {
        resources.push(group_json(&state, c)?);
    }
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "Group",
            &query,
            found.len(),
            w.start,
            w.limit,
            resources,
        ),
    ))
}
