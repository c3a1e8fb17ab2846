//! `order` over REST (webservices.rest's `OrderResource` with its drug and test order
//! handlers, `OrderSearchHandler2_3`, and `order/{uuid}/fulfillerdetails`), and the orders
//! an encounter carries (`POST encounter` with `orders`). Privileges: Get Orders, Add
//! Orders, Edit Orders (the fulfiller's details), Delete Orders.

use crate::domains::order::repr::{OrderRes, order_encounters};
use crate::domains::order::rules::{OrderEntry, Placing, place};
use crate::domains::order::store::{self, Source};
use crate::domains::order::{
    Action, DosingType, DrugDetails, FulfillerStatus, OrderClass, OrderRecord, TestDetails, Urgency,
};
use crate::http::AppState;
use crate::http::answer::{answer, flag, page_answer, rep_of, window};
use crate::http::body::{only_known, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Page, Voiding};
use crate::wire::{datetime_key, parse_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// What an order body may carry (webservices.rest's creatable properties of an order and
/// its subclasses).
const FIELDS: &[&str] = &[
    "uuid",
    "type",
    "action",
    "patient",
    "careSetting",
    "orderer",
    "encounter",
    "concept",
    "orderType",
    "previousOrder",
    "dateActivated",
    "scheduledDate",
    "autoExpireDate",
    "urgency",
    "instructions",
    "commentToFulfiller",
    "accessionNumber",
    "orderReason",
    "orderReasonNonCoded",
    "drug",
    "drugNonCoded",
    "dosingType",
    "dose",
    "doseUnits",
    "route",
    "frequency",
    "asNeeded",
    "asNeededCondition",
    "quantity",
    "quantityUnits",
    "numRefills",
    "duration",
    "durationUnits",
    "dosingInstructions",
    "brandName",
    "dispenseAsWritten",
    "specimenSource",
    "laterality",
    "clinicalHistory",
    "numberOfRepeats",
];

/// A text field: empty text is absent (the O3 forms send `""` for a field left blank).
fn text(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    Ok(opt_str(body, field)?.filter(|s| !s.trim().is_empty()))
}

/// A number field, as a number or a numeric string.
fn number(body: &Map<String, Value>, field: &str) -> ApiResult<Option<f64>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(Some)
            .ok_or_else(|| ApiError::BadRequest(format!("{field} must be a number"))),
        Some(_) => Err(ApiError::BadRequest(format!("{field} must be a number"))),
    }
}

/// A whole, non-negative number field.
fn count(body: &Map<String, Value>, field: &str) -> ApiResult<Option<u32>> {
    match number(body, field)? {
        None => Ok(None),
        Some(v) if v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX) => Ok(Some(v as u32)),
        Some(_) => Err(ApiError::invalid_field(
            field,
            "error.invalid",
            &format!("{field} must be a whole number from 0"),
        )),
    }
}

fn boolean(body: &Map<String, Value>, field: &str) -> ApiResult<Option<bool>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(_) => Err(ApiError::BadRequest(format!(
            "{field} must be true or false"
        ))),
    }
}

/// A date field in any form clients send, in key form.
fn date(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match text(body, field)? {
        None => Ok(None),
        Some(s) => parse_datetime(&s)
            .map(|t| Some(datetime_key(t)))
            .ok_or_else(|| ApiError::BadRequest(format!("{field}: '{s}' is not a date and time"))),
    }
}

/// The longest free texts OpenMRS's columns hold.
const MAX_TEXT: usize = 1024;
const MAX_SHORT: usize = 255;

/// An order read from a request body: references resolved to uuids (concepts by uuid or
/// `SOURCE:CODE`), each unknown one a field error; nothing checked against other records
/// yet (`rules::place` does that).
pub fn from_body(
    state: &AppState,
    body: &Map<String, Value>,
    encounter: Option<&str>,
    audit: &Audit,
    field: &str,
) -> ApiResult<OrderRecord> {
    only_known(body, FIELDS)?;
    let catalog = state.catalog.load();
    let mut inv = Invalid::default();
    let f = |name: &str| {
        if field.is_empty() {
            name.to_string()
        } else {
            format!("{field}.{name}")
        }
    };
    let class = match text(body, "type")? {
        None => {
            if body.get("drug").is_some_and(|d| !d.is_null()) {
                OrderClass::Drug
            } else {
                OrderClass::Plain
            }
        }
        Some(t) => OrderClass::from_rest_type(&t).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "{}: '{t}' is not drugorder, testorder or order",
                f("type")
            ))
        })?,
    };
    let action = match text(body, "action")? {
        None => Action::New,
        Some(a) => Action::parse(&a).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "{}: '{a}' is not NEW, REVISE, DISCONTINUE or RENEW",
                f("action")
            ))
        })?,
    };
    let urgency = match text(body, "urgency")? {
        None => Urgency::Routine,
        Some(u) => Urgency::parse(&u).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "{}: '{u}' is not ROUTINE, STAT or ON_SCHEDULED_DATE",
                f("urgency")
            ))
        })?,
    };
    let required = |name: &str, value: Option<String>, inv: &mut Invalid| -> String {
        value.unwrap_or_else(|| {
            inv.field(&f(name), "error.null", &format!("{name} is required"));
            String::new()
        })
    };
    let patient = required("patient", opt_ref(body, "patient")?, &mut inv);
    if !patient.is_empty() && state.store.patient(&patient)?.is_none_or(|p| p.voided) {
        inv.field(&f("patient"), "error.invalid", "Patient does not exist");
    }
    let encounter = match encounter {
        Some(e) => e.to_string(),
        None => required("encounter", opt_ref(body, "encounter")?, &mut inv),
    };
    let orderer = required("orderer", opt_ref(body, "orderer")?, &mut inv);
    if !orderer.is_empty() && crate::domains::provider::find(&state.store, &orderer)?.is_none() {
        inv.field(&f("orderer"), "error.invalid", "Provider does not exist");
    }
    let care_setting = required("careSetting", opt_ref(body, "careSetting")?, &mut inv);
    let care_setting = match catalog.care_setting(&care_setting) {
        Some(c) => c.uuid.clone(),
        None => {
            if !care_setting.is_empty() {
                inv.field(
                    &f("careSetting"),
                    "error.invalid",
                    "Care setting does not exist",
                );
            }
            care_setting
        }
    };
    let concept_ref = |name: &str, inv: &mut Invalid| -> ApiResult<Option<String>> {
        Ok(match opt_ref(body, name)? {
            None => None,
            Some(r) => match catalog.concept(&r) {
                Some(c) => Some(c.uuid.clone()),
                None => {
                    inv.field(&f(name), "error.invalid", "Concept does not exist");
                    None
                }
            },
        })
    };
    let drug_uuid = opt_ref(body, "drug")?;
    let drug_concept = drug_uuid
        .as_deref()
        .and_then(|d| catalog.drug(d))
        .map(|d| d.concept.clone());
    if let Some(d) = &drug_uuid
        && catalog.drug(d).is_none()
    {
        inv.field(&f("drug"), "error.invalid", "Drug does not exist");
    }
    // Core takes the concept from the drug when the order names none.
    let named = body.get("concept").is_some_and(|c| !c.is_null());
    let concept = concept_ref("concept", &mut inv)?.or(drug_concept);
    let concept = match concept {
        Some(c) => c,
        // An unknown concept is already reported; only a missing one is "required".
        None if named => String::new(),
        None => required("concept", None, &mut inv),
    };
    let order_type = match opt_ref(body, "orderType")? {
        None => String::new(),
        Some(t) => match catalog.order_type(&t) {
            Some(t) => t.uuid.clone(),
            None => {
                inv.field(
                    &f("orderType"),
                    "error.invalid",
                    "Order type does not exist",
                );
                String::new()
            }
        },
    };
    let frequency = opt_ref(body, "frequency")?;
    let drug = if class == OrderClass::Drug {
        let dosing_type = match text(body, "dosingType")? {
            None => DosingType::Simple,
            Some(t) => DosingType::parse(&t).ok_or_else(|| {
                ApiError::BadRequest(format!("{}: '{t}' is not a dosing type", f("dosingType")))
            })?,
        };
        Some(DrugDetails {
            drug: drug_uuid,
            drug_non_coded: text(body, "drugNonCoded")?,
            dosing_type,
            dose: number(body, "dose")?,
            dose_units: concept_ref("doseUnits", &mut inv)?,
            route: concept_ref("route", &mut inv)?,
            frequency: frequency.clone(),
            as_needed: boolean(body, "asNeeded")?.unwrap_or(false),
            as_needed_condition: text(body, "asNeededCondition")?,
            quantity: number(body, "quantity")?,
            quantity_units: concept_ref("quantityUnits", &mut inv)?,
            num_refills: count(body, "numRefills")?,
            duration: count(body, "duration")?,
            duration_units: concept_ref("durationUnits", &mut inv)?,
            dosing_instructions: text(body, "dosingInstructions")?,
            brand_name: text(body, "brandName")?,
            dispense_as_written: boolean(body, "dispenseAsWritten")?.unwrap_or(false),
        })
    } else {
        for field in [
            "drug",
            "dose",
            "doseUnits",
            "route",
            "quantity",
            "quantityUnits",
            "duration",
            "durationUnits",
            "dosingType",
        ] {
            if body.get(field).is_some_and(|v| !v.is_null() && v != "") {
                return Err(ApiError::BadRequest(format!(
                    "Some properties are not allowed to be set: {field} (on a {} order)",
                    class.rest_type()
                )));
            }
        }
        None
    };
    let test = (class == OrderClass::Test).then(|| -> ApiResult<TestDetails> {
        Ok(TestDetails {
            specimen_source: None,
            laterality: text(body, "laterality")?.map(|l| l.to_ascii_uppercase()),
            clinical_history: text(body, "clinicalHistory")?,
            frequency: frequency.clone(),
            number_of_repeats: count(body, "numberOfRepeats")?,
        })
    });
    let mut test = test.transpose()?;
    if let Some(t) = &mut test {
        t.specimen_source = concept_ref("specimenSource", &mut inv)?;
    }
    let o = OrderRecord {
        v: 1,
        uuid: crate::http::body::client_uuid(body)?,
        order_number: String::new(),
        class,
        order_type,
        patient,
        encounter,
        care_setting,
        concept,
        orderer,
        action,
        previous_order: opt_ref(body, "previousOrder")?,
        // Empty: placing it gives now, or its encounter's time if later (`rules::place`).
        date_activated: date(body, "dateActivated")?.unwrap_or_default(),
        scheduled_date: date(body, "scheduledDate")?,
        date_stopped: None,
        auto_expire_date: date(body, "autoExpireDate")?,
        urgency,
        instructions: text(body, "instructions")?,
        comment_to_fulfiller: text(body, "commentToFulfiller")?,
        accession_number: text(body, "accessionNumber")?,
        order_reason: concept_ref("orderReason", &mut inv)?,
        order_reason_non_coded: text(body, "orderReasonNonCoded")?,
        fulfiller_status: None,
        fulfiller_comment: None,
        drug,
        test,
        audit: audit.clone(),
        voiding: Voiding::default(),
    };
    for (name, value, max) in [
        ("instructions", &o.instructions, MAX_TEXT),
        ("commentToFulfiller", &o.comment_to_fulfiller, MAX_TEXT),
        ("orderReasonNonCoded", &o.order_reason_non_coded, MAX_SHORT),
        ("accessionNumber", &o.accession_number, MAX_SHORT),
    ] {
        if value.as_deref().is_some_and(|v| v.chars().count() > max) {
            inv.field(&f(name), "error.size", &format!("At most {max} characters"));
        }
    }
    if let Some(d) = &o.drug {
        for (name, value, max) in [
            ("dosingInstructions", &d.dosing_instructions, MAX_TEXT),
            ("asNeededCondition", &d.as_needed_condition, MAX_SHORT),
            ("drugNonCoded", &d.drug_non_coded, MAX_SHORT),
            ("brandName", &d.brand_name, MAX_SHORT),
        ] {
            if value.as_deref().is_some_and(|v| v.chars().count() > max) {
                inv.field(&f(name), "error.size", &format!("At most {max} characters"));
            }
        }
    }
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }
    Ok(o)
}

/// Orders checked and ready to write: those a request places, and the previous orders they
/// stop.
#[derive(Default)]
pub struct Placed {
    orders: Vec<OrderRecord>,
    stops: Vec<(OrderRecord, OrderRecord)>,
}

impl Placed {
    /// Writes them in the caller's transaction, each new order taking the next order
    /// number there; answers the orders as stored.
    pub fn write_in(
        mut self,
        txn: &crate::store::kv::WriteTransaction,
    ) -> crate::store::StoreResult<Vec<OrderRecord>> {
        for o in &mut self.orders {
            o.order_number = store::next_number_in(txn)?;
        }
        let mut changes: Vec<(Option<&OrderRecord>, &OrderRecord)> =
            self.orders.iter().map(|o| (None, o)).collect();
        changes.extend(self.stops.iter().map(|(old, new)| (Some(old), new)));
        store::put_in(txn, &changes)?;
        Ok(self.orders)
    }
}

/// Checks orders written in one request (a signed order basket, or one `POST order`),
/// each against the patient's stored orders and those placed before it. Nothing is
/// written: a refusal leaves the store as it was. The caller holds the clinical write lock
/// until it has written them (`Placed::write_in`).
pub fn place_all(
    state: &AppState,
    drafts: Vec<OrderRecord>,
    encounter: &crate::domains::order::Placement,
    now: DateTime<Utc>,
    prefix: Option<&str>,
) -> ApiResult<Placed> {
    let mut out = Placed::default();
    if drafts.is_empty() {
        return Ok(out);
    }
    let entry = OrderEntry::of(state);
    let catalog = state.catalog.load();
    // The patient's orders as they stand, each placed or stopped order of the request
    // applied in turn, so the next one sees it (two discontinuations of one order: the
    // second finds it stopped).
    let mut known = store::of_patient(&state.store, &encounter.patient, false)?;
    for (i, draft) in drafts.into_iter().enumerate() {
        if known.iter().any(|x| x.uuid == draft.uuid)
            || store::get(&state.store, &draft.uuid)?.is_some()
        {
            return Err(ApiError::BadRequest(format!(
                "An order with uuid {} already exists",
                draft.uuid
            )));
        }
        let p = Placing {
            catalog: &catalog,
            entry: &entry,
            now,
            known: &known,
        };
        let (o, stopped) = place(&p, draft, encounter).map_err(|e| match (e, prefix) {
            (ApiError::Invalid(mut inv), Some(prefix)) => {
                for f in &mut inv.fields {
                    f.0 = format!("{prefix}[{i}].{}", f.0);
                }
                ApiError::Invalid(inv)
            }
            (e, _) => e,
        })?;
        if let Some((old, new)) = stopped {
            if let Some(x) = known.iter_mut().find(|x| x.uuid == new.uuid) {
                *x = new.clone();
            }
            // A previous order placed in this same request is stopped in place.
            if let Some(x) = out.orders.iter_mut().find(|x| x.uuid == new.uuid) {
                *x = new;
            } else if let Some(s) = out.stops.iter_mut().find(|s| s.1.uuid == new.uuid) {
                s.1 = new;
            } else {
                out.stops.push((old, new));
            }
        }
        known.push(o.clone());
        out.orders.push(o);
    }
    Ok(out)
}

/// The orders of an encounter body (`orders`), read but not placed.
pub fn drafts_of_encounter(
    state: &AppState,
    body: &Map<String, Value>,
    encounter: &str,
    patient: &str,
    audit: &Audit,
) -> ApiResult<Vec<OrderRecord>> {
    let list = match body.get("orders") {
        None | Some(Value::Null) => return Ok(vec![]),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(ApiError::BadRequest("orders must be a list".into())),
    };
    list.iter()
        .enumerate()
        .map(|(i, o)| {
            let Value::Object(o) = o else {
                return Err(ApiError::BadRequest(format!(
                    "orders[{i}] must be an object"
                )));
            };
            let mut o = o.clone();
            // The encounter is the one being written; its patient, when the order omits it.
            o.remove("encounter");
            o.entry("patient").or_insert_with(|| json!(patient));
            from_body(state, &o, Some(encounter), audit, &format!("orders[{i}]"))
        })
        .collect()
}

/// `POST order` — privilege: Add Orders.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Orders"])?;
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let o = blocking(move || {
        let now = Utc::now();
        let draft = from_body(&st, &body, None, &Audit::new(&user, now), "")?;
        let _one_writer = st.store.write_lock();
        let placement = order_encounters(&st.store).map(|e| e.placement);
        let encounter = match placement {
            Some(placement) => placement(&st.store, &draft.encounter)?,
            None => None,
        }
        .ok_or_else(|| {
            ApiError::invalid_field("encounter", "error.invalid", "Encounter does not exist")
        })?;
        let placed = place_all(&st, vec![draft], &encounter, now, None)?;
        let placed = st.store.write(|txn| placed.write_in(txn))?;
        placed
            .into_iter()
            .next()
            .ok_or_else(|| ApiError::internal("no order placed"))
    })
    .await?;
    answer(&state, &caller, &OrderRes(&o), &rep, StatusCode::CREATED)
}

/// An order by uuid or by order number (`ORD-12`), as webservices.rest finds it.
fn find(state: &AppState, id: &str) -> ApiResult<OrderRecord> {
    if let Some(o) = store::get(&state.store, id)? {
        return Ok(o);
    }
    store::by_number(&state.store, &id.to_ascii_uppercase())?.ok_or(ApiError::NotFound)
}

/// `GET order/{uuid or number}` — privilege: Get Orders.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Orders"])?;
    let o = find(&state, &id)?;
    answer(
        &state,
        &caller,
        &OrderRes(&o),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE order/{uuid}[?reason=]` voids it, and makes the order a voided revision or
/// discontinuation had stopped active again (core's `voidOrder`); `?purge=true` is
/// refused, as an order's history is kept — privilege: Delete Orders.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Delete Orders"])?;
    if flag(&query, "purge").unwrap_or(false) {
        return Err(ApiError::BadRequest(
            "Orders are voided, never purged: their history is part of the record".into(),
        ));
    }
    let user = caller.user_uuid();
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let o = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let changes = crate::domains::order::voiding(&st.store, &[o], &user, Utc::now(), &reason)?;
        let refs: Vec<(Option<&OrderRecord>, &OrderRecord)> =
            changes.iter().map(|(old, new)| (Some(old), new)).collect();
        st.store.write(|txn| store::put_in(txn, &refs))?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST order/{uuid or number}/fulfillerdetails` with `fulfillerStatus`,
/// `fulfillerComment`, `accessionNumber`: each present one is set (core's
/// `updateOrderFulfillerStatus`; any status may follow any other). Answered 201 with an
/// empty body, as webservices.rest answers — privilege: Edit Orders.
pub async fn fulfiller_details(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Orders"])?;
    only_known(
        &body,
        &["fulfillerStatus", "fulfillerComment", "accessionNumber"],
    )?;
    let status = match opt_str(&body, "fulfillerStatus")? {
        None => None,
        Some(s) => Some(FulfillerStatus::parse(&s).ok_or_else(|| {
            ApiError::invalid_field(
                "fulfillerStatus",
                "error.invalid",
                &format!(
                    "'{s}' is not RECEIVED, IN_PROGRESS, EXCEPTION, ON_HOLD, DECLINED or COMPLETED"
                ),
            )
        })?),
    };
    let comment = opt_str(&body, "fulfillerComment")?;
    let accession = opt_str(&body, "accessionNumber")?;
    for (name, value) in [
        ("fulfillerComment", &comment),
        ("accessionNumber", &accession),
    ] {
        if value
            .as_deref()
            .is_some_and(|v| v.chars().count() > MAX_TEXT)
        {
            return Err(ApiError::invalid_field(
                name,
                "error.size",
                &format!("At most {MAX_TEXT} characters"),
            ));
        }
    }
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = find(&st, &id)?;
        if old.voiding.voided {
            return Err(ApiError::BadRequest(
                "A voided order cannot be fulfilled".into(),
            ));
        }
        let mut o = old.clone();
        if status.is_some() {
            o.fulfiller_status = status;
        }
        if comment.is_some() {
            o.fulfiller_comment = comment;
        }
        if accession.is_some() {
            o.accession_number = accession;
        }
        o.audit.changed(&user, Utc::now());
        store::put(&st.store, &old, &o)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::CREATED.into_response())
}

/// The search parameters webservices.rest's order search handler knows; a request with any
/// other goes to the resource's own search (`status`, `orderType`…), as there.
const HANDLER_PARAMS: &[&str] = &[
    "patient",
    "careSetting",
    "concepts",
    "orderTypes",
    "orderNumber",
    "accessionNumber",
    "activatedOnOrBeforeDate",
    "activatedOnOrAfterDate",
    "isStopped",
    "autoExpireOnOrBeforeDate",
    "canceledOrExpiredOnOrBeforeDate",
    "action",
    "fulfillerStatus",
    "includeNullFulfillerStatus",
    "excludeCanceledAndExpired",
    "excludeDiscontinueOrders",
    "includeVoided",
];

/// Parameters every search may carry.
const SPECIAL_PARAMS: &[&str] = &[
    "v",
    "limit",
    "startIndex",
    "includeAll",
    "totalCount",
    "s",
    "t",
    "jsessionid",
];

/// A date parameter, widened to the start or the end of its day (in UTC, the server's
/// zone), as the search handler widens it.
fn day_bound(query: &[(String, String)], name: &str, end: bool) -> ApiResult<Option<String>> {
    let Some(v) = param(query, name) else {
        return Ok(None);
    };
    let t = parse_datetime(v)
        .ok_or_else(|| ApiError::BadRequest(format!("{name}: '{v}' is not a date")))?;
    let day = t.date_naive();
    let bound = if end {
        day.and_hms_milli_opt(23, 59, 59, 999)
    } else {
        day.and_hms_opt(0, 0, 0)
    }
    .expect("valid time")
    .and_utc();
    Ok(Some(datetime_key(bound)))
}

fn bool_param(query: &[(String, String)], name: &str) -> ApiResult<Option<bool>> {
    match param(query, name) {
        None => Ok(None),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(v) => Err(ApiError::BadRequest(format!(
            "{name} must be true or false, not '{v}'"
        ))),
    }
}

/// One criterion of an order search.
type Criterion = Box<dyn Fn(&OrderRecord) -> bool>;

/// `GET order?…`: the search handler's criteria (`patient`, `careSetting`, `concepts`,
/// `orderTypes`, activation dates widened to whole days, `fulfillerStatus`,
/// `excludeCanceledAndExpired`, `excludeDiscontinueOrders`…), or with `status`,
/// `orderType`, `asOfDate` the resource's own search (a patient's active orders by
/// default, `inactive` or `any`); newest activation first — privilege: Get Orders.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Orders"])?;
    let paging = Paging::from_query(&query)?;
    let catalog = state.catalog.load();
    let legacy = query.iter().any(|(k, _)| {
        !HANDLER_PARAMS.contains(&k.as_str()) && !SPECIAL_PARAMS.contains(&k.as_str())
    });
    let now = datetime_key(Utc::now());
    let resolve_list = |name: &str,
                        one: fn(&crate::catalog::Catalog, &str) -> Option<String>|
     -> ApiResult<Option<Vec<String>>> {
        let Some(v) = param(&query, name) else {
            return Ok(None);
        };
        let found: Vec<String> = v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .filter_map(|r| one(&catalog, r))
            .collect();
        if found.is_empty() {
            return Err(ApiError::NotFound);
        }
        Ok(Some(found))
    };
    let patient = param(&query, "patient").map(str::to_string);
    if let Some(p) = &patient
        && state.store.patient(p)?.is_none()
    {
        return Err(ApiError::NotFound);
    }
    let care_setting = match param(&query, "careSetting") {
        None => None,
        Some(c) => Some(
            catalog
                .care_setting(c)
                .ok_or(ApiError::NotFound)?
                .uuid
                .clone(),
        ),
    };
    let type_of = |c: &crate::catalog::Catalog, r: &str| c.order_type(r).map(|t| t.uuid.clone());
    let include_voided = bool_param(&query, "includeVoided")?.unwrap_or(false)
        || flag(&query, "includeAll").unwrap_or(false);
    let mut keep: Vec<Criterion> = Vec::new();
    if let Some(c) = care_setting {
        keep.push(Box::new(move |o| o.care_setting == c));
    }
    let source_types: Option<Vec<String>>;
    let (mut from, mut to) = (None, None);
    if legacy {
        let Some(_) = &patient else {
            return Err(ApiError::BadRequest(
                "Please provide patientUuid in the patient parameter".into(),
            ));
        };
        // A type and its subtypes (core's `getActiveOrders` reads the subtypes too).
        source_types = None;
        if let Some(t) = param(&query, "orderType") {
            let t = catalog
                .order_type(t)
                .ok_or(ApiError::NotFound)?
                .uuid
                .clone();
            let mut family = vec![t.clone()];
            let mut grew = true;
            while grew {
                grew = false;
                for x in &catalog.content.order_types {
                    if x.parent.as_ref().is_some_and(|p| family.contains(p))
                        && !family.contains(&x.uuid)
                    {
                        family.push(x.uuid.clone());
                        grew = true;
                    }
                }
            }
            keep.push(Box::new(move |o| family.contains(&o.order_type)));
        }
        if let Some(t) = param(&query, "t").or(param(&query, "type")) {
            let class = OrderClass::from_rest_type(t)
                .ok_or_else(|| ApiError::BadRequest(format!("Unknown order type '{t}'")))?;
            keep.push(Box::new(move |o| o.class == class));
        }
        let as_of =
            match param(&query, "asOfDate") {
                None => now.clone(),
                Some(v) => datetime_key(parse_datetime(v).ok_or_else(|| {
                    ApiError::BadRequest(format!("asOfDate: '{v}' is not a date"))
                })?),
            };
        match param(&query, "status")
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("active") => keep.push(Box::new(move |o| o.is_active(&as_of))),
            Some("inactive") => keep.push(Box::new(move |o| o.is_stopped_or_expired(&as_of))),
            Some("any") => {}
            Some(s) => {
                return Err(ApiError::BadRequest(format!(
                    "status must be active, inactive or any, not '{s}'"
                )));
            }
        }
    } else {
        source_types = resolve_list("orderTypes", type_of)?;
        if let Some(concepts) =
            resolve_list("concepts", |c, r| c.concept(r).map(|x| x.uuid.clone()))?
        {
            keep.push(Box::new(move |o| concepts.contains(&o.concept)));
        }
        if let Some(types) = source_types.clone() {
            keep.push(Box::new(move |o| types.contains(&o.order_type)));
        }
        for (name, getter) in [
            (
                "orderNumber",
                (|o: &OrderRecord| Some(o.order_number.clone()))
                    as fn(&OrderRecord) -> Option<String>,
            ),
            ("accessionNumber", |o: &OrderRecord| {
                o.accession_number.clone()
            }),
        ] {
            if let Some(v) = param(&query, name) {
                let v = v.to_lowercase();
                keep.push(Box::new(move |o| {
                    getter(o).is_some_and(|x| x.to_lowercase() == v)
                }));
            }
        }
        from = day_bound(&query, "activatedOnOrAfterDate", false)?;
        to = day_bound(&query, "activatedOnOrBeforeDate", true)?;
        if let Some(f) = from.clone() {
            keep.push(Box::new(move |o| o.date_activated >= f));
        }
        if let Some(t) = to.clone() {
            keep.push(Box::new(move |o| o.date_activated <= t));
        }
        if bool_param(&query, "isStopped")?.unwrap_or(false) {
            keep.push(Box::new(|o| o.date_stopped.is_some()));
        }
        if let Some(d) = day_bound(&query, "autoExpireOnOrBeforeDate", true)? {
            keep.push(Box::new(move |o| {
                o.auto_expire_date.as_ref().is_some_and(|e| *e <= d)
            }));
        }
        if let Some(d) = day_bound(&query, "canceledOrExpiredOnOrBeforeDate", true)? {
            keep.push(Box::new(move |o| {
                o.date_stopped.as_ref().is_some_and(|s| *s <= d)
                    || o.auto_expire_date.as_ref().is_some_and(|e| *e <= d)
            }));
        }
        if let Some(a) = param(&query, "action") {
            let a = Action::exact(a).ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "action: '{a}' is not NEW, REVISE, DISCONTINUE or RENEW"
                ))
            })?;
            keep.push(Box::new(move |o| o.action == a));
        }
        let status = match param(&query, "fulfillerStatus") {
            None => None,
            Some(s) => Some(FulfillerStatus::exact(s).ok_or_else(|| {
                ApiError::BadRequest(format!("fulfillerStatus: '{s}' is not RECEIVED, IN_PROGRESS, EXCEPTION, ON_HOLD, DECLINED or COMPLETED"))
            })?),
        };
        match (status, bool_param(&query, "includeNullFulfillerStatus")?) {
            (Some(s), Some(true)) => {
                keep.push(Box::new(move |o| o.fulfiller_status.is_none_or(|x| x == s)))
            }
            (Some(s), Some(false)) => keep.push(Box::new(move |o| {
                o.fulfiller_status.is_some_and(|x| x == s)
            })),
            (Some(s), None) => keep.push(Box::new(move |o| o.fulfiller_status == Some(s))),
            (None, Some(true)) => keep.push(Box::new(|o| o.fulfiller_status.is_none())),
            (None, Some(false)) => keep.push(Box::new(|o| o.fulfiller_status.is_some())),
            (None, None) => {}
        }
        if bool_param(&query, "excludeCanceledAndExpired")?.unwrap_or(false) {
            let at = now.clone();
            keep.push(Box::new(move |o| !o.is_stopped_or_expired(&at)));
        }
        if bool_param(&query, "excludeDiscontinueOrders")?.unwrap_or(false) {
            keep.push(Box::new(|o| o.action != Action::Discontinue));
        }
    }
    let all_types: Vec<String>;
    let number = param(&query, "orderNumber");
    // Order numbers are written `ORD-<n>`; the search ignores case, as core's does.
    let number_upper = number.map(str::to_ascii_uppercase).unwrap_or_default();
    let source = match (&patient, &source_types, number) {
        (Some(p), _, _) => Source::Patient(p),
        (None, _, Some(_)) if !legacy => Source::Number(&number_upper),
        (None, Some(types), _) => Source::Types {
            types,
            from: from.as_deref(),
            to: to.as_deref(),
        },
        (None, None, _) => {
            all_types = catalog
                .content
                .order_types
                .iter()
                .map(|t| t.uuid.clone())
                .collect();
            Source::Types {
                types: &all_types,
                from: from.as_deref(),
                to: to.as_deref(),
            }
        }
    };
    let uuids = store::candidates(&state.store, &source, include_voided)?;
    let w = window(&paging);
    // Records are read in slices and filtered until the page is full (and, for a total,
    // to the end).
    let mut page_records = Vec::new();
    let mut matched = 0usize;
    let mut more = false;
    for chunk in uuids.chunks(256) {
        for o in store::records(&state.store, chunk)? {
            if !keep.iter().all(|k| k(&o)) {
                continue;
            }
            if matched >= w.start && page_records.len() < w.limit {
                page_records.push(o);
            } else if matched >= w.start.saturating_add(w.limit) {
                more = true;
            }
            matched += 1;
        }
        if more && !w.count_all {
            break;
        }
    }
    let page = Page {
        uuids: page_records.iter().map(|o| o.uuid.clone()).collect(),
        more,
        total: w.count_all.then_some(matched),
    };
    page_answer(
        &state,
        &caller,
        &query,
        "/order",
        &paging,
        &page,
        page_records.iter().map(OrderRes),
    )
}

/// The orders of an encounter, for its `orders` property.
pub fn encounter_orders(ctx: &Ctx, encounter: &str) -> Vec<OrderRecord> {
    store::of_encounter(ctx.store, encounter, false).unwrap_or_default()
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route(
            &paths.rest("/order"),
            get(crate::domains::order::rest::search).post(crate::domains::order::rest::create),
        )
        .route(
            &paths.rest("/order/{uuid}"),
            get(crate::domains::order::rest::read).delete(crate::domains::order::rest::delete),
        )
        .route(
            &paths.rest("/order/{uuid}/fulfillerdetails"),
            post(crate::domains::order::rest::fulfiller_details),
        )
        .route(
            &paths.rest("/drug"),
            get(crate::domains::order::formulary::drugs),
        )
        .route(
            &paths.rest("/drug/{uuid}"),
            get(crate::domains::order::formulary::drug),
        )
        .route(
            &paths.rest("/orderfrequency"),
            get(crate::domains::order::formulary::frequencies),
        )
        .route(
            &paths.rest("/orderfrequency/{uuid}"),
            get(crate::domains::order::formulary::frequency),
        )
        .route(
            &paths.rest("/ordertype"),
            get(crate::domains::order::formulary::order_types),
        )
        .route(
            &paths.rest("/ordertype/{uuid}"),
            get(crate::domains::order::formulary::order_type),
        )
        .route(
            &paths.rest("/caresetting"),
            get(crate::domains::order::formulary::care_settings),
        )
        .route(
            &paths.rest("/caresetting/{uuid}"),
            get(crate::domains::order::formulary::care_setting),
        )
        .route(
            &paths.rest("/orderentryconfig"),
            get(crate::domains::order::formulary::order_entry_config),
        )
        .route(
            &paths.fhir("/MedicationRequest"),
            get(crate::domains::order::fhir::search),
        )
        .route(
            &paths.fhir("/MedicationRequest/{id}"),
            get(crate::domains::order::fhir::read).patch(crate::domains::order::fhir::patch),
        )
        .route(
            &paths.fhir("/ServiceRequest"),
            get(crate::domains::order::fhir::service_requests),
        )
        .route(
            &paths.fhir("/ServiceRequest/{id}"),
            get(crate::domains::order::fhir::service_request),
        )
        .route(
            &paths.fhir("/Medication"),
            get(crate::domains::order::fhir::medications),
        )
        .route(
            &paths.fhir("/Medication/{id}"),
            get(crate::domains::order::fhir::medication),
        )
}
