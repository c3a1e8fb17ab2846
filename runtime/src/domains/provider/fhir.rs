//! FHIR `Practitioner`: the providers (managed ones and the accounts' own), read by the
//! provider's uuid or, as fhir2 resolves the `Practitioner/{user}` references it writes for
//! a record's creator, by an account's uuid; searched by `_id`, `identifier`, `name` and
//! `active`.

use crate::domains::provider::{Provider, all, find};
use crate::http::error::ApiResult;
use crate::http::fhir::{base, fhir, invalid, not_found, search_bundle, window};
use crate::http::{AppState, Caller, QueryPairs};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

/// The search parameters `Practitioner?` accepts (also what `metadata` lists).
pub const SEARCH_PARAMS: &[&str] = &["_id", "identifier", "name", "active"];

fn practitioner_json(p: &Provider, id: &str) -> Value {
    let mut r = json!({
        "resourceType": "Practitioner",
        "id": id,
        "active": !p.retired,
    });
    if !p.identifier.is_empty() {
        r["identifier"] = json!([{"system": "http://fhir.openmrs.org/ext/provider/identifier", "value": p.identifier}]);
    }
    if !p.name.is_empty() {
        r["name"] = json!([{"text": p.name}]);
    }
    r
}

/// The provider a Practitioner id names: a provider's uuid, or an account's (its provider).
pub fn resolve(state: &AppState, id: &str) -> crate::store::StoreResult<Option<Provider>> {
    if let Some(p) = find(&state.store, id)? {
        return Ok(Some(p));
    }
    let Some(user) = state.store.user(id)? else {
        return Ok(None);
    };
    match crate::domains::provider::current_for(&state.store, &user)? {
        Some(p) => Ok(Some(p)),
        None => Ok(Some(Provider::of_account(Arc::new(user)))),
    }
}

/// `GET Practitioner/{id}` — privilege: Get Providers.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Providers"])?;
    let st = state.clone();
    let key = id.clone();
    let found = crate::http::blocking(move || Ok(resolve(&st, &key)?)).await?;
    Ok(match found {
        Some(p) => fhir(StatusCode::OK, practitioner_json(&p, &id)),
        None => not_found("Practitioner", &id),
    })
}

/// `GET Practitioner?…` — privilege: Get Providers. A facility has tens of providers:
/// they are read whole and filtered.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Providers"])?;
    let one = |k: &str| crate::http::param(&query, k).map(str::to_string);
    let active = match one("active").as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => return Ok(invalid(&format!("active: true or false, not {other}"))),
    };
    let (id, identifier, name) = (one("_id"), one("identifier"), one("name"));
    let st = state.clone();
    let providers = crate::http::blocking(move || Ok(all(&st.store)?)).await?;
    let found: Vec<&Provider> = providers
        .iter()
        .filter(|p| id.as_deref().is_none_or(|i| p.uuid == i))
        .filter(|p| {
            identifier.as_deref().is_none_or(|i| {
                p.identifier
                    .eq_ignore_ascii_case(i.rsplit('|').next().unwrap_or(i))
            })
        })
        .filter(|p| {
            name.as_deref()
                .is_none_or(|n| crate::search::starts_a_word(&p.name, n))
        })
        .filter(|p| active.is_none_or(|a| a != p.retired))
        .collect();
    let w = window(&query);
    let page: Vec<Value> = found
        .iter()
        .skip(w.start)
        .take(w.limit)
        .map(|p| practitioner_json(p, &p.uuid))
        .collect();
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "Practitioner",
            &query,
            found.len(),
            w.start,
            w.limit,
            page,
        ),
    ))
}
