//! The address hierarchy module's ajax endpoints that O3 registration uses
//! (`/module/addresshierarchy/ajax/…`): the ordered levels, children of an entry, and
//! full-address search, from the hierarchy compiled into the bundle.

use crate::http::AppState;
use crate::http::error::ApiResult;
use crate::http::{Caller, QueryPairs, ok, param};
use crate::search::fold;
use axum::extract::State;
use axum::response::Response;
use model::AddressHierarchyEntry;
use serde_json::{Value, json};
use std::sync::Arc;

fn entry_uuid(path: &[String]) -> String {
    compiler::csvtable::derive_uuid(&format!("addresshierarchy/{}", path.join("|")))
}

fn entry_json(e: &AddressHierarchyEntry) -> Value {
    json!({"name": e.path.last(), "uuid": entry_uuid(&e.path), "userGeneratedId": e.user_generated_id})
}

/// `getOrderedAddressHierarchyLevels.form`: `[{name, addressField, required}]`, top first.
pub async fn levels(State(state): State<Arc<AppState>>, caller: Caller) -> ApiResult<Response> {
    caller.require(&[])?;
    let catalog = state.catalog.load();
    let locale = caller.locale(&catalog);
    let levels: Vec<Value> = catalog
        .content
        .address_template
        .iter()
        .flat_map(|t| {
            t.hierarchy_levels.iter().map(|field| {
                let code = t.name_mappings.get(field).cloned().unwrap_or_else(|| field.clone());
                let name = catalog.message(&code, &locale).map(str::to_string).unwrap_or(code);
                json!({"name": name, "addressField": field, "required": t.hierarchy_required.contains(field)})
            })
        })
        .collect();
    Ok(ok(Value::Array(levels)))
}

/// `getChildAddressHierarchyEntries.form?parentUuid=&searchString=`: entries one level
/// below the parent (top level without a parent) whose name contains the search string.
pub async fn children(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let catalog = state.catalog.load();
    let entries = &catalog.content.address_hierarchy;
    let parent = param(&query, "parentUuid").filter(|p| !p.is_empty());
    let search = param(&query, "searchString").map(fold).unwrap_or_default();
    let parent_path: Option<&Vec<String>> = match parent {
        Some(p) => match entries.iter().find(|e| entry_uuid(&e.path) == p) {
            Some(e) => Some(&e.path),
            None => return Ok(ok(json!([]))),
        },
        None => None,
    };
    let depth = parent_path.map_or(1, |p| p.len() + 1);
    let found: Vec<Value> = entries
        .iter()
        .filter(|e| e.path.len() == depth && parent_path.is_none_or(|p| e.path.starts_with(p)))
        .filter(|e| search.is_empty() || e.path.last().is_some_and(|n| fold(n).contains(&search)))
        .map(entry_json)
        .collect();
    Ok(ok(Value::Array(found)))
}

/// `getPossibleFullAddresses.form?searchString=&separator=`: the full paths (deepest
/// entries) whose names contain the search string, joined with the separator.
pub async fn full_addresses(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let catalog = state.catalog.load();
    let entries = &catalog.content.address_hierarchy;
    let separator = param(&query, "separator").unwrap_or("|");
    let search = param(&query, "searchString").map(fold).unwrap_or_default();
    if search.chars().count() < 2 {
        return Ok(ok(json!([])));
    }
    let is_leaf = |e: &AddressHierarchyEntry| {
        !entries
            .iter()
            .any(|o| o.path.len() == e.path.len() + 1 && o.path.starts_with(&e.path))
    };
    let found: Vec<Value> = entries
        .iter()
        .filter(|e| is_leaf(e) && fold(&e.path.join(" ")).contains(&search))
        .take(50)
        .map(|e| json!({"address": e.path.join(separator)}))
        .collect();
    Ok(ok(Value::Array(found)))
}
