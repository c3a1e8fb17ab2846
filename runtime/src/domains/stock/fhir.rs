//! `InventoryItem` (FHIR R5's, served under the R4 base as OpenMRS's fhirproxy module
//! passes it through): what the order basket asks to show "In stock" or "Out of stock"
//! next to a drug or a test it is about to order.
//!
//! In an OpenMRS distribution the fhirproxy module forwards `InventoryItem` searches to an
//! external inventory server, which answers from its products; this runtime answers from
//! its own stock. `code` names what the basket holds, as that server's products are named:
//! a drug's uuid (the medications basket), else a concept's uuid (the tests basket; the
//! stock items of non-drug concepts). Each matching stock item that is not voided is one
//! entry:
//! - `status` `active` (a voided item is left out, as an archived product is);
//! - `code` the asked code under `http://fhir.openmrs.org/concept-system/inventory-item`;
//! - `name` the item's name;
//! - `netContent` what the facility's locations hold of it, expired batches left out, in
//!   the item's dispensing unit (else its base unit). Zero reads as out of stock.
//!
//! No match is an empty searchset (the basket then shows nothing). Who may ask is set as
//! fhirproxy sets it: every privilege named by `fhirproxy.inventory.item.privileges`
//! (comma-separated); without that setting, nobody may.

use crate::domains::order::fhir::paged_bundle;
use crate::domains::stock::operation::display_unit;
use crate::domains::stock::rest::{concept_name, item_name};
use crate::domains::stock::store::{balances_of_item, items, items_and_batches, items_of_drug};
use crate::domains::stock::{ItemRecord, Qty};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fhir::{base, fhir, not_found};
use crate::http::{AppState, Caller, QueryPairs, blocking, param};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

/// The code system of an inventory item's code (the OpenMRS uuid of what it stocks).
pub const INVENTORY_ITEM_SYSTEM: &str = "http://fhir.openmrs.org/concept-system/inventory-item";
/// The setting naming the privileges an `InventoryItem` read needs.
pub const PRIVILEGES_SETTING: &str = "fhirproxy.inventory.item.privileges";

/// The caller holds every privilege the setting names; without the setting nobody may ask
/// (fhirproxy refuses), named in the refusal as the privilege the setting would need.
fn allowed(state: &AppState, caller: &Caller) -> ApiResult<()> {
    // Someone not logged in is asked to log in first (401), whatever the setting says.
    caller.require(&[])?;
    let named: Vec<String> = state
        .setting(PRIVILEGES_SETTING)
        .unwrap_or_default()
        .split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if named.is_empty() {
        return Err(ApiError::Forbidden {
            privileges: vec![format!("{PRIVILEGES_SETTING} (not set)")],
        });
    }
    let names: Vec<&str> = named.iter().map(String::as_str).collect();
    caller.require(&names)
}

/// One item as an InventoryItem, the code it was asked by (its drug's uuid, else its
/// concept's) and its quantity on hand in the facility's locations.
fn inventory_item(
    state: &AppState,
    caller: &Caller,
    item: &ItemRecord,
    code: &str,
    on_hand: Qty,
) -> Value {
    let catalog = state.catalog.load();
    let ctx = caller.ctx(state, &catalog);
    let name = item_name(&ctx, item);
    let unit = display_unit(item);
    let value = unit.map_or(on_hand, |u| on_hand.per(u.factor));
    let unit_name = unit
        .map(|u| concept_name(&ctx, Some(&u.packaging_uom)))
        .or_else(|| {
            item.dispensing_unit
                .as_deref()
                .map(|d| concept_name(&ctx, Some(d)))
        })
        .unwrap_or(Value::Null);
    let mut net = json!({"value": value.json()});
    if let Some(u) = unit_name.as_str() {
        net["unit"] = json!(u);
    }
    json!({
        "resourceType": "InventoryItem",
        "id": item.uuid,
        "status": "active",
        "code": [{
            "coding": [{"system": INVENTORY_ITEM_SYSTEM, "code": code, "display": name}],
            "text": name,
        }],
        "name": [{"name": name}],
        "netContent": net,
    })
}

/// What the facility's locations hold of an item, its expired batches left out.
fn on_hand(state: &AppState, item: &str) -> ApiResult<Qty> {
    let catalog = state.catalog.load();
    let locations: Vec<&str> = catalog
        .content
        .locations
        .iter()
        .map(|l| l.uuid.as_str())
        .collect();
    let rows = balances_of_item(&state.store, &locations, item)?;
    let batches: Vec<&str> = rows.iter().map(|(b, _)| b.as_str()).collect();
    let (_, found) = items_and_batches(&state.store, &[], &batches)?;
    let today = crate::wire::today().to_string();
    let mut total = Qty::ZERO;
    for (batch, q) in &rows {
        let expired = found
            .get(batch)
            .and_then(|b| b.expiration.as_deref())
            .is_some_and(|e| e < today.as_str());
        if !expired {
            total = total.checked_add(*q).unwrap_or(total);
        }
    }
    Ok(total)
}

/// `GET InventoryItem?code=<drug or concept uuid>[,…]`: the stock items of those codes.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    allowed(&state, &caller)?;
    // A token may carry its system (`system|code`); the code alone is matched.
    let codes: Vec<String> = param(&query, "code")
        .unwrap_or_default()
        .split(',')
        .map(|c| c.rsplit('|').next().unwrap_or(c).trim().to_string())
        .filter(|c| !c.is_empty())
        .fold(Vec::new(), |mut codes, c| {
            if !codes.contains(&c) {
                codes.push(c);
            }
            codes
        });
    let st = state.clone();
    let c2 = caller.clone();
    let entries = blocking(move || {
        let mut out = Vec::new();
        let mut by_concept: Option<Vec<ItemRecord>> = None;
        for code in &codes {
            let of_drug = items_of_drug(&st.store, code)?;
            let found: Vec<ItemRecord> = if of_drug.is_empty() {
                // Not a drug's: the items of that concept that stock no drug.
                if by_concept.is_none() {
                    by_concept = Some(items(&st.store)?);
                }
                by_concept
                    .iter()
                    .flatten()
                    .filter(|i| i.drug.is_none() && &i.concept == code)
                    .cloned()
                    .collect()
            } else {
                let refs: Vec<&str> = of_drug.iter().map(String::as_str).collect();
                let (found, _) = items_and_batches(&st.store, &refs, &[])?;
                let mut found: Vec<ItemRecord> = found.into_values().collect();
                found.sort_by(|a, b| a.uuid.cmp(&b.uuid));
                found
            };
            for item in found.iter().filter(|i| !i.voiding.voided) {
                let q = on_hand(&st, &item.uuid)?;
                out.push(inventory_item(&st, &c2, item, code, q));
            }
        }
        Ok(out)
    })
    .await?;
    Ok(fhir(
        StatusCode::OK,
        paged_bundle(&base(&state, &caller), "InventoryItem", &query, entries),
    ))
}

/// `GET InventoryItem/{id}`: a stock item by its uuid, coded by its drug (else concept).
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    allowed(&state, &caller)?;
    let st = state.clone();
    let c2 = caller.clone();
    let wanted = id.clone();
    let found = blocking(move || {
        let Some(item) = crate::domains::stock::store::item(&st.store, &wanted)? else {
            return Ok(None);
        };
        if item.voiding.voided {
            return Ok(None);
        }
        let code = item.drug.clone().unwrap_or_else(|| item.concept.clone());
        let q = on_hand(&st, &item.uuid)?;
        Ok(Some(inventory_item(&st, &c2, &item, &code, q)))
    })
    .await?;
    Ok(match found {
        Some(v) => fhir(StatusCode::OK, v),
        None => not_found("InventoryItem", &id),
    })
}
