//! `dispenserequest`: what the O3 dispensing app sends once a medication dispense is saved,
//! so that the dispensed quantity leaves the dispensing location's stock (the module's
//! `dispenseStockItems`). Each line names the location, the patient, the order and its
//! encounter, the stock item, the batch chosen (first expiry first, as the app proposes)
//! and a quantity in a packaging unit of the item. The lines are checked, then the
//! balances they draw on are read and the movements written in one write transaction: a
//! dispense for more than a batch holds at the location is refused, whole.

use crate::domains::stock::rest::{bad, item_name};
use crate::domains::stock::store::*;
use crate::domains::stock::*;
use crate::http::AppState;
use crate::http::body::{opt_ref, ref_uuid};
use crate::http::error::{ApiError, ApiResult};
use crate::http::{Caller, JsonBody, blocking};
use crate::store::record::{Audit, new_uuid};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One checked line: where, what, how much in base units, for whom.
struct Line {
    location: String,
    item: ItemRecord,
    batch: BatchRecord,
    unit: String,
    base: Qty,
    patient: String,
    order: String,
    encounter: String,
}

fn required(o: &Map<String, Value>, field: &str, n: usize) -> ApiResult<String> {
    o.get(field).and_then(ref_uuid).ok_or_else(|| {
        ApiError::invalid_field(
            &format!("dispenseItems[{n}].{field}"),
            "error.null",
            &format!("Each dispensed item names its {field}"),
        )
    })
}

fn check(state: &AppState, o: &Map<String, Value>, n: usize) -> ApiResult<Line> {
    let field = |f: &str| format!("dispenseItems[{n}].{f}");
    let invalid = |f: &str, m: String| ApiError::invalid_field(&field(f), "error.invalid", &m);
    let catalog = state.catalog.load();
    let location = required(o, "dispenseLocation", n)?;
    let location = catalog
        .location(&location)
        .map(|l| l.uuid.clone())
        .ok_or_else(|| {
            invalid(
                "dispenseLocation",
                format!("No location of the content is '{location}'"),
            )
        })?;
    let item_uuid = required(o, "stockItem", n)?;
    let item = item(&state.store, &item_uuid)?
        .filter(|i| !i.voiding.voided)
        .ok_or_else(|| {
            invalid(
                "stockItem",
                format!("No stock item in use is '{item_uuid}'"),
            )
        })?;
    let batch_uuid = required(o, "stockBatch", n)?;
    let batch = batches(&state.store)?
        .into_iter()
        .find(|b| b.uuid == batch_uuid && b.stock_item == item.uuid)
        .ok_or_else(|| {
            invalid(
                "stockBatch",
                format!("No batch of this stock item is '{batch_uuid}'"),
            )
        })?;
    let unit_uuid = required(o, "stockItemPackagingUOM", n)?;
    let unit = item.unit(&unit_uuid).ok_or_else(|| {
        invalid(
            "stockItemPackagingUOM",
            format!("'{unit_uuid}' is not a packaging unit of this stock item"),
        )
    })?;
    let quantity = o
        .get("quantity")
        .and_then(Qty::of_json)
        .filter(|q| *q > Qty::ZERO)
        .ok_or_else(|| {
            invalid(
                "quantity",
                "A dispensed quantity is a number above zero".into(),
            )
        })?;
    let base = quantity
        .times(unit.factor)
        .ok_or_else(|| invalid("quantity", "The quantity in base units is not exact".into()))?;
    let patient = required(o, "patient", n)?;
    if state.store.patient(&patient)?.is_none() {
        return Err(invalid("patient", format!("No patient is '{patient}'")));
    }
    let order_uuid = required(o, "order", n)?;
    let order = crate::domains::order::store::get(&state.store, &order_uuid)?
        .ok_or_else(|| invalid("order", format!("No order is '{order_uuid}'")))?;
    if order.patient != patient {
        return Err(invalid("order", "The order is another patient's".into()));
    }
    let encounter = required(o, "encounter", n)?;
    if crate::domains::encounter::store::encounter(&state.store, &encounter)?
        .is_none_or(|e| e.patient != patient)
    {
        return Err(invalid(
            "encounter",
            format!("No encounter of the patient is '{encounter}'"),
        ));
    }
    Ok(Line {
        location,
        unit: unit.uuid.clone(),
        item,
        batch,
        base,
        patient,
        order: order.uuid,
        encounter,
    })
}

/// `POST dispenserequest {"dispenseItems": [...]}` (or one item as the body).
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[DISPENSE])?;
    let items: Vec<Map<String, Value>> = match body.get("dispenseItems") {
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_object()
                    .cloned()
                    .ok_or_else(|| bad("each of dispenseItems is an object"))
            })
            .collect::<ApiResult<_>>()?,
        Some(_) => return Err(bad("dispenseItems is a list")),
        None => vec![body.clone()],
    };
    if items.is_empty() {
        return Err(bad("dispenseItems is empty"));
    }
    if let Some(u) = opt_ref(&body, "uuid")? {
        return Err(bad(format!("A dispense request is not updated ({u})")));
    }
    let user = caller.user_uuid();
    let st = state.clone();
    let c = caller.clone();
    let echoed = items.clone();
    blocking(move || {
        let lines: Vec<Line> = items
            .iter()
            .enumerate()
            .map(|(n, o)| check(&st, o, n))
            .collect::<ApiResult<_>>()?;
        let catalog = st.catalog.load();
        let ctx = c.ctx(&st, &catalog);
        let _one_writer = st.store.write_lock();
        let now = Utc::now();
        let refused: Option<String> = st.store.write(|txn| {
            let mut drawn: BTreeMap<(String, String, String), Qty> = BTreeMap::new();
            for l in &lines {
                let k = (l.location.clone(), l.item.uuid.clone(), l.batch.uuid.clone());
                let q = drawn.entry(k).or_insert(Qty::ZERO);
                *q = q.checked_add(l.base).unwrap_or(Qty(i64::MAX));
            }
            let mut short = Vec::new();
            for ((location, item, batch), q) in &drawn {
                let balance = balance_in(txn, location, item, batch)?;
                if balance < *q {
                    let line = lines.iter().find(|l| &l.item.uuid == item && &l.batch.uuid == batch);
                    short.push(format!(
                        "{} batch {}: {balance} in stock, {q} to dispense",
                        line.map(|l| item_name(&ctx, &l.item)).unwrap_or_default(),
                        line.map(|l| l.batch.batch_no.clone()).unwrap_or_default(),
                    ));
                }
            }
            if !short.is_empty() {
                return Ok(Some(format!(
                    "Not enough stock at the dispensing location: the balance would fall below zero ({})",
                    short.join("; ")
                )));
            }
            let moves: Vec<TransactionRecord> = lines
                .iter()
                .map(|l| TransactionRecord {
                    v: 1,
                    uuid: new_uuid(),
                    party: l.location.clone(),
                    stock_item: l.item.uuid.clone(),
                    batch: l.batch.uuid.clone(),
                    quantity: -l.base,
                    operation: None,
                    operation_item: None,
                    packaging_uom: Some(l.unit.clone()),
                    patient: Some(l.patient.clone()),
                    order: Some(l.order.clone()),
                    encounter: Some(l.encounter.clone()),
                    date: crate::wire::datetime_key(now),
                    audit: Audit::new(&user, now),
                })
                .collect();
            add_transactions_in(txn, &moves)?;
            Ok(None)
        })?;
        match refused {
            Some(message) => Err(bad(message)),
            None => Ok(()),
        }
    })
    .await?;
    Ok(crate::http::json(
        StatusCode::CREATED,
        json!({"results": echoed}),
    ))
}
