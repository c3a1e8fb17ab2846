//! The billing module's REST surface under `billing/`, in its wire shapes: the content's
//! `paymentMode`, `cashPoint` and `billableService` (read-only: they are the content
//! package's), `bill` (create, read, search, add or change line items while PENDING,
//! finalise, void), `bill/{uuid}/payment`, `billLineItem/{uuid}` (void),
//! `patientPaymentStatus/{patient}` and `receipt?billUuid=` (a PDF).
//!
//! Privileges are the module's: View Cashier Metadata for the content's billing metadata,
//! View Cashier Bills to read bills and receipts, Manage Cashier Bills to create, change
//! and pay them, Delete Cashier Bills to void them.

use crate::domains::bill::repr::{BillRes, PaymentRes, billable_service};
use crate::domains::bill::{
    BillRecord, LineItem, Money, PAID, PENDING, POSTED, Payment, PaymentAttribute, receipt, store,
};
use crate::http::AppState;
use crate::http::answer::{answer, list_answer, nest, page_answer, rep_of, window};
use crate::http::body::only_known;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Rep};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding, new_uuid};
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use model::PaymentMode;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub(crate) const METADATA: &str = "View Cashier Metadata";
const VIEW: &str = "View Cashier Bills";
const MANAGE: &str = "Manage Cashier Bills";
const DELETE: &str = "Delete Cashier Bills";

/// The most line items one bill holds, and the largest quantity of one.
const MAX_LINE_ITEMS: usize = 200;
const MAX_QUANTITY: i64 = 100_000;

pub(crate) fn concept_ref(uuid: Option<&str>, rep: &Rep, ctx: &Ctx) -> Value {
    nest(
        uuid.and_then(|c| ctx.catalog.concept(c))
            .map(crate::content::concept::ConceptRes),
        rep,
        ctx,
    )
}

const BILL_FIELDS: &[&str] = &[
    "uuid",
    "patient",
    "visit",
    "cashier",
    "cashPoint",
    "status",
    "lineItems",
    "payments",
    "receiptNumber",
    "voided",
    "voidReason",
    "id",
    "dateCreated",
    "adjustedBy",
    "billAdjusted",
    "adjustmentReason",
    "total",
    "amountAfterDiscount",
    "discounts",
    "refunds",
];

fn integer(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The line items a body asks for, checked against the content and the bill's items so
/// far (`old`: an item sent back with its uuid keeps its identity; its read-only keys
/// are ignored).
fn line_items(
    content: &model::Content,
    body: &Map<String, Value>,
    old: &[LineItem],
    invalid: &mut Invalid,
) -> Vec<LineItem> {
    let Some(list) = body.get("lineItems") else {
        return old.to_vec();
    };
    let Some(list) = list.as_array() else {
        invalid.field("lineItems", "error.invalid", "lineItems must be a list");
        return Vec::new();
    };
    if list.len() > MAX_LINE_ITEMS {
        invalid.field(
            "lineItems",
            "error.invalid",
            &format!("A bill holds at most {MAX_LINE_ITEMS} line items"),
        );
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let field = |f: &str| format!("lineItems[{i}].{f}");
        let Some(item) = item.as_object() else {
            invalid.field(&field("uuid"), "error.invalid", "A line item is an object");
            continue;
        };
        let uuid = match item.get("uuid") {
            None | Some(Value::Null) => None,
            Some(_) => match crate::http::body::client_uuid(item) {
                Ok(u) => Some(u),
                Err(_) => {
                    invalid.field(
                        &field("uuid"),
                        "error.invalid",
                        "A uuid is letters, digits and hyphens, at most 38",
                    );
                    continue;
                }
            },
        };
        if let Some(u) = &uuid {
            if out.iter().any(|o: &LineItem| &o.uuid == u) {
                invalid.field(
                    &field("uuid"),
                    "error.duplicate",
                    "This line item is in the bill twice",
                );
                continue;
            }
            if old.iter().any(|o| &o.uuid == u && o.voiding.voided) {
                invalid.field(
                    &field("uuid"),
                    "error.invalid",
                    "This line item was removed from the bill: add a new one",
                );
                continue;
            }
        }
        let existing = uuid
            .as_deref()
            .and_then(|u| old.iter().find(|o| o.uuid == u && !o.voiding.voided));
        if item
            .get("item")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
            && item.get("billableService").is_none()
        {
            invalid.field(
                &field("item"),
                "error.invalid",
                "Stock items are not billed here: bill a billable service",
            );
            continue;
        }
        let service_ref = item
            .get("billableService")
            .and_then(|v| crate::http::body::ref_uuid(v).or_else(|| v.as_str().map(str::to_string)))
            .filter(|s| !s.is_empty());
        let service = match (&service_ref, existing) {
            (Some(s), _) => billable_service(content, s),
            (None, Some(e)) => billable_service(content, &e.service),
            (None, None) => None,
        };
        let Some(service) = service else {
            match service_ref {
                Some(s) => invalid.field(
                    &field("billableService"),
                    "error.invalid",
                    &format!("No billable service of the content is '{s}'"),
                ),
                None => invalid.field(
                    &field("billableService"),
                    "error.null",
                    "A line item bills a billable service",
                ),
            }
            continue;
        };
        if (!service.enabled || service.retired)
            && existing.is_none_or(|e| e.service != service.uuid)
        {
            invalid.field(
                &field("billableService"),
                "error.invalid",
                &format!("The service '{}' is not billed any more", service.name),
            );
            continue;
        }
        let quantity = match item.get("quantity") {
            None => existing.map_or(Some(1), |e| Some(e.quantity)),
            v => integer(v),
        };
        let Some(quantity) = quantity.filter(|q| (1..=MAX_QUANTITY).contains(q)) else {
            invalid.field(
                &field("quantity"),
                "error.invalid",
                &format!("The quantity is a whole number from 1 to {MAX_QUANTITY}"),
            );
            continue;
        };
        let price = match item.get("price") {
            // Without a price: the one it had, else the service's price if it has one
            // only (several prices, one per payment mode, need the client's choice).
            None | Some(Value::Null) => existing.map(|e| e.price).or_else(|| {
                let mut prices = service.prices.iter().filter_map(|p| Money::parse(&p.price));
                let first = prices.next()?;
                prices.all(|p| p == first).then_some(first)
            }),
            Some(v) => Money::from_json(v),
        };
        let Some(price) = price.filter(|p| p.0 >= 0) else {
            invalid.field(
                &field("price"),
                "error.invalid",
                "The price is a non-negative amount with at most four decimal places (required when the service has several prices)",
            );
            continue;
        };
        let text = |k: &str| {
            item.get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| s.chars().take(255).collect::<String>())
        };
        out.push(LineItem {
            uuid: uuid.unwrap_or_else(new_uuid),
            service: service.uuid.clone(),
            quantity,
            price,
            price_name: text("priceName").or_else(|| existing.and_then(|e| e.price_name.clone())),
            price_uuid: text("priceUuid").or_else(|| existing.and_then(|e| e.price_uuid.clone())),
            order: integer(item.get("lineItemOrder"))
                .or(existing.map(|e| e.order))
                .unwrap_or(i as i64),
            status: existing.map_or_else(|| PENDING.to_string(), |e| e.status.clone()),
            voiding: Voiding::default(),
        });
    }
    out
}

/// Line items new to this bill must not carry the uuid of another bill's item (the
/// line-item index names one bill per item).
fn new_items_are_free(
    store: &crate::store::Store,
    bill: &BillRecord,
    old: &[LineItem],
) -> ApiResult<()> {
    for (i, item) in bill.line_items.iter().enumerate() {
        if old.iter().any(|o| o.uuid == item.uuid) {
            continue;
        }
        if store::bill_of_item(store, &item.uuid)?.is_some_and(|b| b.uuid != bill.uuid) {
            return Err(ApiError::invalid_field(
                &format!("lineItems[{i}].uuid"),
                "error.duplicate",
                "A line item of another bill has this uuid",
            ));
        }
    }
    Ok(())
}

/// `POST billing/bill`: a new bill for a patient, PENDING unless it asks POSTED, its
/// cashier the caller's provider when it names none, its cash point the content's only
/// one when it names none, its visit the patient's active visit when it names none.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MANAGE])?;
    only_known(&body, BILL_FIELDS)?;
    if body
        .get("payments")
        .and_then(Value::as_array)
        .is_some_and(|p| !p.is_empty())
    {
        return Err(ApiError::invalid_field(
            "payments",
            "error.invalid",
            "A new bill has no payments: pay it through bill/{uuid}/payment once it is finalised",
        ));
    }
    let user = caller.user.clone().ok_or(ApiError::Unauthenticated {
        privileges: vec![MANAGE.into()],
    })?;
    let st = state.clone();
    let record = blocking(move || {
        let catalog = st.catalog.load();
        // Read, checked and written under one lock: the patient, her visit and the line
        // items' uuids cannot change between the checks and the write.
        let _one_writer = st.store.write_lock();
        let mut invalid = Invalid::default();
        let patient = crate::http::body::opt_ref(&body, "patient")?;
        let patient = match patient {
            None => {
                invalid.field("patient", "error.null", "A bill is for a patient");
                None
            }
            Some(p) => match st.store.patient(&p)? {
                Some(p) if !p.voided => Some(p.uuid),
                _ => {
                    invalid.field("patient", "error.invalid", &format!("No patient is '{p}'"));
                    None
                }
            },
        };
        let cash_point = match crate::http::body::opt_ref(&body, "cashPoint")? {
            Some(c) => match catalog
                .content
                .cash_points
                .iter()
                .find(|x| x.uuid == c && !x.retired)
            {
                Some(c) => Some(c.uuid.clone()),
                None => {
                    invalid.field(
                        "cashPoint",
                        "error.invalid",
                        &format!("No cash point of the content is '{c}'"),
                    );
                    None
                }
            },
            None => {
                let open: Vec<_> = catalog
                    .content
                    .cash_points
                    .iter()
                    .filter(|c| !c.retired)
                    .collect();
                match open.as_slice() {
                    [one] => Some(one.uuid.clone()),
                    _ => {
                        invalid.field("cashPoint", "error.null", "Cash point cannot be null!");
                        None
                    }
                }
            }
        };
        let cashier = match crate::http::body::opt_ref(&body, "cashier")? {
            Some(c) => match crate::domains::provider::find(&st.store, &c)? {
                Some(p) if !p.retired => Some(p.uuid),
                _ => {
                    invalid.field("cashier", "error.invalid", &format!("No provider is '{c}'"));
                    None
                }
            },
            None => match crate::domains::provider::current_for(&st.store, &user)? {
                Some(p) => Some(p.uuid),
                None => {
                    invalid.global(format!(
                        "Couldn't find Provider for the current user ({})",
                        user.username
                    ));
                    None
                }
            },
        };
        let status = match body
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_uppercase)
        {
            None => PENDING.to_string(),
            Some(s) if s == PENDING || s == POSTED => s,
            Some(s) => {
                invalid.field(
                    "status",
                    "error.invalid",
                    &format!("A new bill is PENDING or POSTED, not {s}: its payments make it PAID"),
                );
                PENDING.to_string()
            }
        };
        let items = line_items(&catalog.content, &body, &[], &mut invalid);
        if items.is_empty() && invalid.is_empty() {
            invalid.field(
                "lineItems",
                "error.null",
                "A bill has at least one line item",
            );
        }
        let visit = match (crate::http::body::opt_ref(&body, "visit")?, &patient) {
            (Some(v), Some(p)) => match crate::domains::visit::store::get(&st.store, &v)? {
                Some(visit) if !visit.voiding.voided && &visit.patient == p => Some(visit.uuid),
                _ => {
                    invalid.field(
                        "visit",
                        "error.invalid",
                        &format!("No visit of this patient is '{v}'"),
                    );
                    None
                }
            },
            (None, Some(p)) => active_visit(&st, p)?,
            _ => None,
        };
        if !invalid.is_empty() {
            return Err(ApiError::Invalid(invalid));
        }
        let now = chrono::Utc::now();
        let mut record = BillRecord {
            v: 1,
            uuid: crate::http::body::client_uuid(&body)?,
            number: String::new(),
            patient: patient.unwrap_or_default(),
            visit,
            cashier: cashier.unwrap_or_default(),
            cash_point: cash_point.unwrap_or_default(),
            status,
            line_items: items,
            payments: Vec::new(),
            audit: Audit::new(&user.uuid, now),
            voiding: Voiding::default(),
        };
        if record.total().is_none() {
            return Err(ApiError::invalid_field(
                "lineItems",
                "error.invalid",
                "The bill's total is too large",
            ));
        }
        new_items_are_free(&st.store, &record, &[])?;
        if store::get(&st.store, &record.uuid)?.is_some() {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "A bill has this uuid already",
            ));
        }
        store::put(&st.store, None, &mut record)?;
        Ok(record)
    })
    .await?;
    answer(
        &state,
        &caller,
        &BillRes(record),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// The patient's one active visit, if exactly one is open (the module links a bill to it).
fn active_visit(state: &AppState, patient: &str) -> ApiResult<Option<String>> {
    let q = crate::domains::visit::store::VisitQuery {
        patient: Some(patient.to_string()),
        ..Default::default()
    };
    let w = crate::store::record::Window {
        start: 0,
        limit: 2,
        count_all: false,
    };
    let (visits, _) = crate::domains::visit::store::list(&state.store, &q, w)?;
    Ok(match visits.as_slice() {
        [one] => Some(one.uuid.clone()),
        _ => None,
    })
}

/// `POST billing/bill/{uuid}`: while PENDING, its line items (synchronised by uuid: an
/// item left out is voided, one without a uuid is added) and finalisation (`status:
/// POSTED`); the status a client sends back unchanged is accepted, any other change is
/// the payments' to make and refused.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MANAGE])?;
    only_known(&body, BILL_FIELDS)?;
    let user = caller.user.clone().ok_or(ApiError::Unauthenticated {
        privileges: vec![MANAGE.into()],
    })?;
    let st = state.clone();
    let record = blocking(move || {
        let catalog = st.catalog.load();
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &uuid)?
            .filter(|b| !b.voiding.voided)
            .ok_or(ApiError::NotFound)?;
        let mut invalid = Invalid::default();
        if let Some(p) = crate::http::body::opt_ref(&body, "patient")?
            && p != old.patient
        {
            invalid.field("patient", "error.invalid", "A bill stays with its patient");
        }
        if let Some(c) = crate::http::body::opt_ref(&body, "cashPoint")?
            && c != old.cash_point
        {
            invalid.field("cashPoint", "error.invalid", "A bill stays at its cash point");
        }
        if body.get("payments").and_then(Value::as_array).is_some_and(|p| {
            p.len() != old.live_payments().count()
        }) {
            invalid.field("payments", "error.invalid", "Payments are recorded through bill/{uuid}/payment");
        }
        let wanted = match body.get("status") {
            None | Some(Value::Null) => None,
            Some(Value::String(v)) => Some(v.to_uppercase()),
            Some(_) => return Err(ApiError::invalid_field("status", "error.invalid", "A status is text")),
        };
        let mut record = old.clone();
        match wanted.as_deref() {
            None => {}
            Some(s) if s == old.status => {}
            Some(POSTED) if old.status == PENDING => record.status = POSTED.into(),
            Some(s) => invalid.field(
                "status",
                "error.invalid",
                &format!("A {} bill cannot be made {s}: only a PENDING bill can be finalised (POSTED), and its payments make it PAID", old.status),
            ),
        }
        if body.contains_key("lineItems") {
            let items = line_items(&catalog.content, &body, &old.line_items, &mut invalid);
            // What is charged, item by item, whatever the order the client sends them in.
            let charges = |list: &mut dyn Iterator<Item = &LineItem>| {
                let mut v: Vec<(String, String, i64, Money)> = list
                    .map(|i| (i.uuid.clone(), i.service.clone(), i.quantity, i.price))
                    .collect();
                v.sort();
                v
            };
            let same_charges = charges(&mut old.live_items()) == charges(&mut items.iter());
            if old.status != PENDING {
                // Frozen once finalised: the items may be sent back as they are, nothing more.
                if !same_charges {
                    invalid.field(
                        "lineItems",
                        "error.invalid",
                        &format!("Line items can only be modified when the bill is in PENDING state. Current status: {}", old.status),
                    );
                }
            } else if items.is_empty() {
                invalid.field("lineItems", "error.null", "A bill has at least one line item");
            } else {
                let now = chrono::Utc::now();
                let gone: Vec<LineItem> = old
                    .line_items
                    .iter()
                    .filter(|o| !items.iter().any(|n| n.uuid == o.uuid))
                    .cloned()
                    .collect();
                let mut merged = items;
                for mut gone in gone {
                    if !gone.voiding.voided {
                        gone.voiding.void(&user.uuid, now, "removed from the bill");
                    }
                    merged.push(gone);
                }
                record.line_items = merged;
                new_items_are_free(&st.store, &record, &old.line_items)?;
            }
        }
        if !invalid.is_empty() {
            return Err(ApiError::Invalid(invalid));
        }
        if record.total().is_none() {
            return Err(ApiError::invalid_field("lineItems", "error.invalid", "The bill's total is too large"));
        }
        if record == old {
            return Ok(record);
        }
        record.audit.changed(&user.uuid, chrono::Utc::now());
        store::put(&st.store, Some(&old), &mut record)?;
        Ok(record)
    })
    .await?;
    answer(
        &state,
        &caller,
        &BillRes(record),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `POST billing/bill/{uuid}/payment`: a payment in a payment mode of the content; the
/// bill becomes PAID when what was tendered covers its total.
pub async fn pay(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MANAGE])?;
    only_known(
        &body,
        &[
            "uuid",
            "instanceType",
            "attributes",
            "amount",
            "amountTendered",
            "voided",
            "dateCreated",
        ],
    )?;
    let user = caller.user_uuid();
    let st = state.clone();
    let (bill, payment) = blocking(move || {
        let catalog = st.catalog.load();
        let mut invalid = Invalid::default();
        let mode = match crate::http::body::opt_ref(&body, "instanceType")? {
            None => {
                invalid.field(
                    "instanceType",
                    "error.null",
                    "A payment names its payment mode",
                );
                None
            }
            Some(m) => match catalog
                .content
                .payment_modes
                .iter()
                .find(|x| x.uuid == m && !x.retired)
            {
                Some(m) => Some(m),
                None => {
                    invalid.field(
                        "instanceType",
                        "error.invalid",
                        &format!("No payment mode of the content is '{m}'"),
                    );
                    None
                }
            },
        };
        let tendered = body.get("amountTendered").and_then(Money::from_json);
        if tendered.is_none_or(|t| t.0 <= 0) {
            invalid.field(
                "amountTendered",
                "error.invalid",
                "The amount tendered is a positive amount with at most four decimal places",
            );
        }
        let amount = match body.get("amount") {
            None | Some(Value::Null) => tendered,
            Some(v) => Money::from_json(v).filter(|a| a.0 >= 0),
        };
        if amount.is_none() {
            invalid.field(
                "amount",
                "error.invalid",
                "The amount is a non-negative amount with at most four decimal places",
            );
        }
        let attributes = payment_attributes(&body, mode, &mut invalid);
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &uuid)?
            .filter(|b| !b.voiding.voided)
            .ok_or(ApiError::NotFound)?;
        match old.status.as_str() {
            PENDING => {
                invalid.global("Finalise this bill (POSTED) before recording a payment".to_string())
            }
            PAID => invalid.global("This bill is paid: nothing is due".to_string()),
            _ => {}
        }
        if !invalid.is_empty() {
            return Err(ApiError::Invalid(invalid));
        }
        let now = chrono::Utc::now();
        let payment = Payment {
            uuid: crate::http::body::client_uuid(&body)?,
            mode: mode.map(|m| m.uuid.clone()).unwrap_or_default(),
            amount: amount.unwrap_or_default(),
            tendered: tendered.unwrap_or_default(),
            attributes,
            audit: Audit::new(&user, now),
            voiding: Voiding::default(),
        };
        if old.payments.iter().any(|p| p.uuid == payment.uuid) {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "The bill has a payment with this uuid already",
            ));
        }
        let mut record = old.clone();
        record.payments.push(payment.clone());
        record.synchronize_status();
        record.audit.changed(&user, now);
        store::put(&st.store, Some(&old), &mut record)?;
        Ok((record, payment))
    })
    .await?;
    let bill_uuid = bill.uuid.clone();
    answer(
        &state,
        &caller,
        &PaymentRes(payment, bill_uuid),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// A payment's attributes (`[{attributeType: name or {name}, value}]`), each naming an
/// attribute type of its payment mode and matching its pattern.
fn payment_attributes(
    body: &Map<String, Value>,
    mode: Option<&PaymentMode>,
    invalid: &mut Invalid,
) -> Vec<PaymentAttribute> {
    let Some(list) = body.get("attributes").and_then(Value::as_array) else {
        return Vec::new();
    };
    let Some(mode) = mode else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, a) in list.iter().enumerate() {
        let field = format!("attributes[{i}]");
        let name = a.get("attributeType").and_then(|t| {
            t.as_str()
                .or_else(|| t.get("name").and_then(Value::as_str))
                .map(str::to_string)
        });
        let value = a
            .get("value")
            .map(|v| match v {
                Value::String(s) => s.trim().to_string(),
                other => other.to_string(),
            })
            .unwrap_or_default();
        let Some(t) = name.and_then(|n| mode.attributes.iter().find(|t| t.name == n)) else {
            invalid.field(
                &field,
                "error.invalid",
                &format!("{} has no such attribute", mode.name),
            );
            continue;
        };
        if value.is_empty() || value.chars().count() > 255 {
            invalid.field(
                &field,
                "error.invalid",
                &format!("{}: a value of at most 255 characters", t.name),
            );
            continue;
        }
        if let Some(pattern) = t.regex.as_deref().filter(|p| !p.is_empty())
            && !fancy_regex::Regex::new(&format!("^(?:{pattern})$"))
                .ok()
                .and_then(|r| r.is_match(&value).ok())
                .unwrap_or(false)
        {
            invalid.field(
                &field,
                "error.invalid",
                &format!("{}: '{value}' does not match {pattern}", t.name),
            );
            continue;
        }
        out.push(PaymentAttribute {
            name: t.name.clone(),
            value,
        });
    }
    out
}

/// `GET billing/bill/{uuid}/payment`: the bill's payments in force.
pub async fn payments(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let st = state.clone();
    let bill = blocking(move || Ok(store::get(&st.store, &uuid)?))
        .await?
        .filter(|b| !b.voiding.voided)
        .ok_or(ApiError::NotFound)?;
    let items: Vec<PaymentRes> = bill
        .live_payments()
        .map(|p| PaymentRes(p.clone(), bill.uuid.clone()))
        .collect();
    let path = format!("/billing/bill/{}/payment", bill.uuid);
    list_answer(
        &state,
        &caller,
        &query,
        &path,
        &Paging::from_query(&query)?,
        items,
    )
}

/// `GET billing/bill/{uuid}`.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let st = state.clone();
    let bill = blocking(move || Ok(store::get(&st.store, &uuid)?))
        .await?
        .ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &BillRes(bill),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// The statuses a bill may have (the module's, including those of adjustments and
/// refunds this runtime does not make).
const STATUSES: &[&str] = &[
    "PENDING",
    "POSTED",
    "PAID",
    "CANCELLED",
    "ADJUSTED",
    "EXEMPTED",
    "REFUND_REQUESTED",
    "PARTIALLY_REFUNDED",
    "REFUNDED",
];

/// `GET billing/bill[?patientUuid=][&visitUuid=][&status=A,B][&patientName=]`: bills
/// newest first, paged. The cash desk's whole list and a status filter read their
/// index's keys and only the page's records; a patient's or a visit's bills are few.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let paging = Paging::from_query(&query)?;
    let statuses: Vec<String> = match param(&query, "status").filter(|s| !s.trim().is_empty()) {
        None => Vec::new(),
        Some(s) => s
            .split(',')
            .map(|s| s.trim().to_uppercase())
            .filter(|s| !s.is_empty())
            .map(|s| {
                if STATUSES.contains(&s.as_str()) {
                    Ok(s)
                } else {
                    Err(ApiError::BadRequest(format!("Unknown bill status: {s}")))
                }
            })
            .collect::<ApiResult<Vec<String>>>()?,
    };
    let statuses: Vec<String> = {
        let mut seen = Vec::new();
        for s in statuses {
            if !seen.contains(&s) {
                seen.push(s);
            }
        }
        seen
    };
    let patient = param(&query, "patientUuid")
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let visit = param(&query, "visitUuid")
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    let name = param(&query, "patientName")
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    // A name is looked up in the patient index: the bills of the patients it finds.
    let named: Option<Vec<String>> = match name {
        Some(n) => Some(
            state
                .patient_index()
                .await?
                .search(&n, true, 1)
                .into_iter()
                .take(100)
                .map(str::to_string)
                .collect(),
        ),
        None => None,
    };
    let w = window(&paging);
    let st = state.clone();
    let (page, bills) = blocking(move || {
        let status_ok = |b: &BillRecord| statuses.is_empty() || statuses.contains(&b.status);
        let patient_ok = |b: &BillRecord| patient.as_ref().is_none_or(|p| &b.patient == p);
        let visit_ok = |b: &BillRecord| visit.as_ref().is_none_or(|v| b.visit.as_ref() == Some(v));
        let keep = |b: &BillRecord| status_ok(b) && patient_ok(b) && visit_ok(b);
        if let Some(patients) = named {
            let mut all = Vec::new();
            for p in patients
                .iter()
                .filter(|p| patient.as_ref().is_none_or(|q| q == *p))
            {
                let (_, mut bills) = store::list(
                    &st.store,
                    store::Source::Patient(p),
                    everything(),
                    Some(&keep),
                )?;
                all.append(&mut bills);
            }
            all.sort_by(|a, b| {
                (&b.audit.date_created, &b.uuid).cmp(&(&a.audit.date_created, &a.uuid))
            });
            let page =
                crate::store::record::Page::cut(all.iter().map(|b| b.uuid.clone()).collect(), w);
            let bills = all.into_iter().skip(w.start).take(w.limit).collect();
            return Ok((page, bills));
        }
        Ok(match (&visit, &patient) {
            (Some(v), _) => store::list(&st.store, store::Source::Visit(v), w, Some(&keep))?,
            (None, Some(p)) => store::list(&st.store, store::Source::Patient(p), w, Some(&keep))?,
            (None, None) if statuses.is_empty() => {
                store::list(&st.store, store::Source::All, w, None)?
            }
            (None, None) => store::list(&st.store, store::Source::Statuses(&statuses), w, None)?,
        })
    })
    .await?;
    page_answer(
        &state,
        &caller,
        &query,
        "/billing/bill",
        &paging,
        &page,
        bills.into_iter().map(BillRes),
    )
}

fn everything() -> crate::store::record::Window {
    crate::store::record::Window {
        start: 0,
        limit: usize::MAX,
        count_all: false,
    }
}

/// `DELETE billing/bill/{uuid}?reason=`: voids the bill (kept, with who, when and why).
pub async fn void(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[DELETE])?;
    if crate::http::answer::flag(&query, "purge").unwrap_or(false) {
        return Err(ApiError::BadRequest(
            "Bills are never purged: a voided bill stays in the cash desk's records".into(),
        ));
    }
    crate::http::answer::void_answer(
        state,
        &caller,
        uuid,
        &query,
        store::get,
        |b| &mut b.voiding,
        |s, old, new| store::put(s, Some(old), &mut new.clone()),
    )
    .await
}

/// `DELETE billing/billLineItem/{uuid}?reason=`: removes (voids) a line item of a PENDING
/// bill.
pub async fn void_line_item(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MANAGE])?;
    let user = caller.user_uuid();
    let reason = param(&query, "reason")
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .unwrap_or("removed from the bill")
        .to_string();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::bill_of_item(&st.store, &uuid)?
            .filter(|b| !b.voiding.voided)
            .ok_or(ApiError::NotFound)?;
        if old.status != PENDING {
            return Err(ApiError::BadRequest(format!(
                "Line items can only be modified when the bill is in PENDING state. Current status: {}",
                old.status
            )));
        }
        if old.live_items().all(|i| i.uuid == uuid) {
            return Err(ApiError::BadRequest(
                "A bill has at least one line item: delete the bill instead".into(),
            ));
        }
        let mut record = old.clone();
        let now = chrono::Utc::now();
        if let Some(item) = record.line_items.iter_mut().find(|i| i.uuid == uuid)
            && !item.voiding.voided
        {
            item.voiding.void(&user, now, &reason);
            record.audit.changed(&user, now);
            store::put(&st.store, Some(&old), &mut record)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET billing/patientPaymentStatus/{patient}`: UNPAID while a bill in force awaits
/// payment, PAID otherwise (the banner's tag).
pub async fn patient_payment_status(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(patient): Path<String>,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let st = state.clone();
    let unpaid = blocking(move || {
        if st.store.patient(&patient)?.is_none() {
            return Err(ApiError::NotFound);
        }
        Ok(store::has_unpaid(&st.store, &patient)?)
    })
    .await?;
    Ok(crate::http::ok(if unpaid {
        json!({"status": "UNPAID", "reason": "Outstanding bill(s) present"})
    } else {
        json!({"status": "PAID", "reason": "No outstanding bills"})
    }))
}

/// `GET billing/receipt?billUuid=`: the bill's receipt as a PDF.
pub async fn receipt(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let uuid = param(&query, "billUuid")
        .or_else(|| param(&query, "billId"))
        .filter(|u| !u.is_empty())
        .ok_or_else(|| ApiError::BadRequest("billUuid is required".into()))?
        .to_string();
    let st = state.clone();
    let pdf = blocking(move || {
        let bill = store::get(&st.store, &uuid)?
            .filter(|b| !b.voiding.voided)
            .ok_or(ApiError::NotFound)?;
        let catalog = st.catalog.load();
        let patient = st.store.patient(&bill.patient)?;
        Ok((receipt::pdf(&catalog, &bill, patient.as_ref()), bill.number))
    })
    .await?;
    let (bytes, number) = pdf;
    Ok((
        [
            (header::CONTENT_TYPE, "application/pdf".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("inline; filename=\"receipt-{number}.pdf\""),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route(
            &paths.rest("/billing/paymentMode"),
            get(crate::domains::bill::metadata::payment_modes)
                .post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &paths.rest("/billing/cashPoint"),
            get(crate::domains::bill::metadata::cash_points)
                .post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &paths.rest("/billing/billableService"),
            get(crate::domains::bill::metadata::billable_services)
                .post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &paths.rest("/billing/cashierItemPrice"),
            post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &paths.rest("/billing/api/billable-service"),
            post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &paths.rest("/billing/{kind}/{uuid}"),
            get(crate::domains::bill::metadata::metadata_read)
                .post(crate::domains::bill::metadata::metadata_write)
                .delete(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &paths.rest("/billing/bill"),
            get(crate::domains::bill::rest::search).post(crate::domains::bill::rest::create),
        )
        .route(
            &paths.rest("/billing/bill/{uuid}"),
            get(crate::domains::bill::rest::read)
                .post(crate::domains::bill::rest::update)
                .delete(crate::domains::bill::rest::void),
        )
        .route(
            &paths.rest("/billing/bill/{uuid}/payment"),
            get(crate::domains::bill::rest::payments).post(crate::domains::bill::rest::pay),
        )
        .route(
            &paths.rest("/billing/billLineItem/{uuid}"),
            axum::routing::delete(crate::domains::bill::rest::void_line_item),
        )
        .route(
            &paths.rest("/billing/patientPaymentStatus/{uuid}"),
            get(crate::domains::bill::rest::patient_payment_status),
        )
        .route(
            &paths.rest("/billing/receipt"),
            get(crate::domains::bill::rest::receipt),
        )
}
