//! `encounter`, `obs`, `encounterrole` and `provider` over REST, in OpenMRS's
//! representations. An encounter's `obs` are its top-level observations, each group with
//! its `groupMembers` nested.

use crate::content::metadata::NamedRes;
use crate::domains::encounter::repr::{EncounterRes, ObsRes};
use crate::domains::encounter::store::{self, Change, EncounterQuery, ObsQuery};
use crate::domains::encounter::{
    EncounterProviderRecord, EncounterRecord, ObsRecord, ObsValue, UNKNOWN_ENCOUNTER_ROLE,
};
use crate::domains::order::OrderRecord;
use crate::domains::order::rest as order_rest;
use crate::http::AppState;
use crate::http::answer::{answer, flag, page_answer, rep_of, window};
use crate::http::body::{only_known, opt_bool, opt_datetime, opt_ref, opt_str, ref_uuid};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Paging, Resource, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, ok, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use crate::wire::datetime_key;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

const ENCOUNTER_FIELDS: &[&str] = &[
    "uuid",
    "patient",
    "encounterType",
    "encounterDatetime",
    "location",
    "form",
    "visit",
    "obs",
    "encounterProviders",
    "orders",
    "voided",
    "voidReason",
    "diagnoses",
];

/// Diagnoses inside an encounter are written through `patientdiagnoses`: an empty list
/// (what the form engine sends) passes, anything else is refused rather than silently
/// dropped.
fn not_recorded_yet(body: &Map<String, Value>) -> ApiResult<()> {
    match body.get("diagnoses") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(items)) if items.is_empty() => Ok(()),
        Some(_) => Err(ApiError::BadRequest(
            "diagnoses cannot be recorded with an encounter: write them through patientdiagnoses"
                .into(),
        )),
    }
}

pub(crate) fn providers(
    state: &AppState,
    body: &Map<String, Value>,
) -> ApiResult<Option<Vec<EncounterProviderRecord>>> {
    let Some(list) = body.get("encounterProviders") else {
        return Ok(None);
    };
    let Value::Array(list) = list else {
        return Err(ApiError::BadRequest(
            "encounterProviders must be a list".into(),
        ));
    };
    list.iter()
        .map(|p| {
            let provider = p.get("provider").and_then(ref_uuid).ok_or_else(|| {
                ApiError::BadRequest("encounterProviders: each needs a provider".into())
            })?;
            let role = p
                .get("encounterRole")
                .and_then(ref_uuid)
                .unwrap_or_else(|| UNKNOWN_ENCOUNTER_ROLE.into());
            let found =
                crate::domains::provider::find(&state.store, &provider)?.ok_or_else(|| {
                    ApiError::invalid_field(
                        "encounterProviders",
                        "error.invalid",
                        &format!("Provider {provider} does not exist"),
                    )
                })?;
            Ok(EncounterProviderRecord {
                uuid: crate::store::record::new_uuid(),
                user: found.user.map(|u| u.uuid.clone()),
                provider,
                encounter_role: role,
            })
        })
        .collect::<ApiResult<Vec<_>>>()
        .map(Some)
}

fn obs_bodies(body: &Map<String, Value>) -> ApiResult<Vec<&Map<String, Value>>> {
    match body.get("obs") {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, o)| {
                o.as_object()
                    .ok_or_else(|| ApiError::BadRequest(format!("obs[{i}] must be an object")))
            })
            .collect(),
        Some(_) => Err(ApiError::BadRequest("obs must be a list".into())),
    }
}

/// Whether a body carries orders to place.
fn has_orders(body: &Map<String, Value>) -> bool {
    matches!(body.get("orders"), Some(Value::Array(items)) if !items.is_empty())
}

/// An observation that answers an order (a laboratory result) names a test order of the
/// same patient: a stored one, or one placed with it. A medication order has no result.
fn check_obs_orders(
    state: &AppState,
    obs: &[ObsRecord],
    patient: &str,
    placed: &[crate::domains::order::OrderRecord],
) -> ApiResult<()> {
    use crate::domains::order::OrderClass;
    for o in obs {
        let Some(order) = &o.order else { continue };
        let field = "obs.order";
        let found = match placed.iter().find(|p| &p.uuid == order) {
            Some(p) => Some((p.patient.clone(), p.class)),
            None => crate::domains::order::store::get(&state.store, order)?
                .map(|x| (x.patient, x.class)),
        };
        match found {
            None => {
                return Err(ApiError::invalid_field(
                    field,
                    "error.invalid",
                    "Order does not exist",
                ));
            }
            Some((p, _)) if p != patient => {
                return Err(ApiError::invalid_field(
                    field,
                    "error.invalid",
                    "The order is another patient's",
                ));
            }
            Some((_, OrderClass::Drug)) => {
                return Err(ApiError::invalid_field(
                    field,
                    "Obs.error.orderNotATest",
                    "A result answers a test order, not a medication order",
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The visit a new encounter's body writes out in full (an object with its visit type
/// rather than a reference), to be made with the encounter: the fast data entry app sends a
/// paper register's visit so, and OpenMRS saves it with the encounter.
fn visit_written_out(body: &Map<String, Value>) -> Option<&Map<String, Value>> {
    match body.get("visit") {
        Some(Value::Object(v)) if v.contains_key("visitType") => Some(v),
        _ => None,
    }
}

/// How an encounter saved without a visit finds one: core's handlers, named by the setting
/// `visits.assignmentHandler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VisitAssignment {
    /// `NoVisitAssignmentHandler`: it stays without one.
    None,
    /// `ExistingVisitAssignmentHandler`: the patient's visit holding its time (`holding_visit`).
    Existing,
    /// `ExistingOrNewVisitAssignmentHandler`: that visit, else a new one from the encounter's
    /// time to the end of its day (UTC), of the type `visits.encounterTypeToVisitTypeMapping`
    /// gives its encounter type (the first visit type when that setting is empty), at the
    /// encounter's location, by the rules of `POST visit`: a paper register entered after
    /// the fact counts as visits, and the day's other entries join the visit. Core ends
    /// the visit of an encounter of today at midnight still to come; this runtime has no
    /// visit ending in the future (`POST visit` refuses one, and the O3 screens take a visit
    /// as current only while it has no end), so that visit is left open: the chart shows it
    /// as her current visit, and it ends as any other does (ended at reception, or by the
    /// auto-close).
    ExistingOrNew,
}

impl VisitAssignment {
    /// Core's handler of that class name; a blank setting is none, as in core (which looks
    /// no handler up then). A name core would not load is refused by the compiler in the
    /// content; set through the API, it falls back to core's default.
    fn named(setting: Option<String>) -> VisitAssignment {
        match setting.as_deref().map(str::trim) {
            Some("") | Some("org.openmrs.api.handler.NoVisitAssignmentHandler") => {
                VisitAssignment::None
            }
            Some("org.openmrs.api.handler.ExistingOrNewVisitAssignmentHandler") => {
                VisitAssignment::ExistingOrNew
            }
            _ => VisitAssignment::Existing,
        }
    }
}

/// The visit `ExistingOrNewVisitAssignmentHandler` makes for `e`, as a `POST visit` body.
fn visit_for(
    st: &AppState,
    e: &EncounterRecord,
    now: chrono::DateTime<Utc>,
) -> ApiResult<Map<String, Value>> {
    let catalog = st.catalog.load();
    let mapping = st
        .clinic()
        .setting("visits.encounterTypeToVisitTypeMapping")
        .unwrap_or_default();
    let visit_types = || catalog.content.visit_types.iter().filter(|t| !t.retired);
    let visit_type = if mapping.trim().is_empty() {
        visit_types().next().map(|t| t.uuid.clone())
    } else {
        // "encounter type:visit type, …", each by uuid, as core reads it (core also takes
        // database ids, which this runtime does not have).
        let found = mapping
            .split(',')
            .filter_map(|m| m.split_once(':'))
            .filter(|(from, _)| from.trim() == e.encounter_type)
            .find_map(|(_, to)| visit_types().find(|t| t.uuid == to.trim()));
        match found {
            Some(t) => Some(t.uuid.clone()),
            None => {
                let name = catalog
                    .content
                    .encounter_types
                    .iter()
                    .find(|t| t.uuid == e.encounter_type)
                    .map_or(e.encounter_type.as_str(), |t| t.name.as_str());
                return Err(ApiError::BadRequest(format!(
                    "Global Property: visit.encounterTypeToVisitTypeMapping does not have a mapping for encounter type: {name}"
                )));
            }
        }
    };
    let Some(visit_type) = visit_type else {
        return Err(ApiError::BadRequest(
            "No visit type is defined for the visit this encounter needs".into(),
        ));
    };
    let mut v = Map::new();
    v.insert("patient".into(), json!(e.patient));
    v.insert("visitType".into(), json!(visit_type));
    if let Some(l) = &e.location {
        v.insert("location".into(), json!(l));
    }
    v.insert("startDatetime".into(), json!(e.datetime));
    let end_of_day = format!("{}T23:59:59.999Z", e.datetime.get(..10).unwrap_or_default());
    if end_of_day < datetime_key(now) {
        v.insert("stopDatetime".into(), json!(end_of_day));
    }
    Ok(v)
}

/// As core's existing-visit assignment finds it: the patient's visit that holds the
/// encounter's time (open or ended, the latest first) at the encounter's location or above
/// it. An encounter or a visit that names no location is not held to one.
fn holding_visit(st: &AppState, e: &EncounterRecord) -> ApiResult<Option<String>> {
    let catalog = st.catalog.load();
    let mut visits = crate::domains::visit::store::visits_of(&st.store, &e.patient)?;
    visits.sort_by(|a, b| b.start.cmp(&a.start));
    Ok(visits
        .iter()
        .find(|v| {
            !v.voiding.voided
                && v.contains(&e.datetime)
                && match (&e.location, &v.location) {
                    (Some(here), Some(there)) => catalog.location_within(here, there),
                    _ => true,
                }
        })
        .map(|v| v.uuid.clone()))
}

/// A written-out visit's refusal, its fields named inside the encounter's body
/// (`visit.visitType`), so that the client sees which part of what it sent is wrong.
fn in_written_out_visit(e: ApiError) -> ApiError {
    match e {
        ApiError::Invalid(mut inv) => {
            for field in &mut inv.fields {
                field.0 = format!("visit.{}", field.0);
            }
            ApiError::Invalid(inv)
        }
        other => other,
    }
}

/// The visit an encounter belongs to: the one named, else none (O3 names it).
fn load_visit(
    state: &AppState,
    e: &EncounterRecord,
) -> ApiResult<Option<crate::domains::visit::VisitRecord>> {
    match &e.visit {
        Some(v) => crate::domains::visit::store::get(&state.store, v).map_err(ApiError::from),
        None => Ok(None),
    }
}

pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Encounters"])?;
    only_known(&body, ENCOUNTER_FIELDS)?;
    not_recorded_yet(&body)?;
    if !obs_bodies(&body)?.is_empty() {
        caller.require(&["Add Observations"])?;
    }
    if has_orders(&body) {
        caller.require(&["Add Orders"])?;
    }
    // Making a visit asks for Add Visits; naming a stored one (the app sends the same visit
    // again with a second entry) does not.
    if let Some(v) = visit_written_out(&body) {
        let stored = match v.get("uuid").and_then(Value::as_str) {
            Some(u) => crate::domains::visit::store::get(&state.store, u)?.is_some(),
            None => false,
        };
        if !stored {
            caller.require(&["Add Visits"])?;
        }
    }
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let may_add_visits = caller.grants.has("Add Visits");
    let e = blocking(move || create_encounter(&st, &body, &user, may_add_visits)).await?;
    answer(
        &state,
        &caller,
        &EncounterRes::of(&e),
        &rep,
        StatusCode::CREATED,
    )
}

/// Records a new encounter (with its observations and orders) from a REST-shaped body, by
/// every rule of `POST encounter`; the REST and FHIR creations both come here. The caller
/// has checked the privileges.
pub(crate) fn create_encounter(
    st: &Arc<AppState>,
    body: &Map<String, Value>,
    user: &str,
    may_add_visits: bool,
) -> ApiResult<EncounterRecord> {
    let now = Utc::now();
    let audit = Audit::new(user, now);
    let patient = opt_ref(body, "patient")?
        .ok_or_else(|| ApiError::invalid_field("patient", "error.null", "Patient is required"))?;
    match st.store.patient(&patient)? {
        Some(p) if !p.voided => {}
        _ => {
            return Err(ApiError::invalid_field(
                "patient",
                "error.invalid",
                "Patient does not exist",
            ));
        }
    }
    let catalog = st.catalog.load();
    let encounter_type = opt_ref(body, "encounterType")?
        .map(|t| crate::domains::encounter::encounter_type_uuid(&catalog, &t))
        .unwrap_or_default();
    let e = EncounterRecord {
        v: 1,
        uuid: crate::http::body::opt_str(body, "uuid")?
            .unwrap_or_else(crate::store::record::new_uuid),
        patient: patient.clone(),
        encounter_type,
        datetime: opt_datetime(body, "encounterDatetime")?.unwrap_or_else(|| datetime_key(now)),
        location: opt_ref(body, "location")?,
        form: opt_ref(body, "form")?,
        visit: match visit_written_out(body) {
            Some(_) => None,
            None => opt_ref(body, "visit")?,
        },
        providers: providers(st, body)?.unwrap_or_default(),
        audit: audit.clone(),
        voiding: Voiding::default(),
    };
    let mut e = e;
    // A visit written out in full is made with the encounter, unless it names one already
    // stored (then it is a reference, as any other).
    let mut new_visit = match visit_written_out(body) {
        Some(v) => match crate::http::body::opt_str(v, "uuid")? {
            Some(u) if crate::domains::visit::store::get(&st.store, &u)?.is_some() => {
                e.visit = Some(u);
                None
            }
            _ => {
                let v = crate::domains::visit::rest::new_visit(st, v, user, now)
                    .map_err(in_written_out_visit)?;
                e.visit = Some(v.uuid.clone());
                Some(v)
            }
        },
        None => None,
    };
    // An encounter saved without a visit finds one as `visits.assignmentHandler` says (an
    // encounter of no known type is left to its own validation below).
    let handler = VisitAssignment::named(st.clinic().setting("visits.assignmentHandler"));
    let typed = catalog
        .content
        .encounter_types
        .iter()
        .any(|t| t.uuid == e.encounter_type);
    if e.visit.is_none() && typed && handler != VisitAssignment::None {
        e.visit = holding_visit(st, &e)?;
    }
    let mut made_for_it = false;
    if e.visit.is_none() && typed && handler == VisitAssignment::ExistingOrNew {
        if !may_add_visits {
            return Err(ApiError::Forbidden {
                privileges: vec!["Add Visits".into()],
            });
        }
        let v = crate::domains::visit::rest::new_visit(st, &visit_for(st, &e, now)?, user, now)
            .map_err(in_written_out_visit)?;
        e.visit = Some(v.uuid.clone());
        new_visit = Some(v);
        made_for_it = true;
    }
    let mut inv = Invalid::default();
    let visit = match &new_visit {
        Some(v) => Some(v.clone()),
        None => load_visit(st, &e)?,
    };
    crate::domains::encounter::validate(&st.clinic(), &e, visit.as_ref(), &mut inv);
    let mut obs = Vec::new();
    for (i, o) in obs_bodies(body)?.into_iter().enumerate() {
        crate::domains::encounter::body::parse_obs(
            st,
            o,
            &format!("obs[{i}]"),
            &patient,
            Some(&e),
            None,
            &audit,
            &mut inv,
            &mut obs,
        )?;
    }
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }
    let drafts = order_rest::drafts_of_encounter(st, body, &e.uuid, &patient, &audit)?;
    let _one_writer = st.store.write_lock();
    if store::encounter(&st.store, &e.uuid)?.is_some() {
        return Err(ApiError::BadRequest(format!(
            "An encounter with uuid {} already exists",
            e.uuid
        )));
    }
    if made_for_it && let Some(found) = holding_visit(st, &e)? {
        // Another request made the patient's visit for that time while this one was being
        // read: the encounter joins it, as it would have had it come second.
        e.visit = Some(found);
        new_visit = None;
    }
    if let Some(v) = &new_visit {
        crate::domains::visit::rest::check_new(st, v).map_err(in_written_out_visit)?;
    }
    check_obs_orders(st, &obs, &patient, &drafts)?;
    let placed = order_rest::place_all(
        st,
        drafts,
        &crate::domains::encounter::placement(&e),
        now,
        Some("orders"),
    )?;
    // The encounter, its observations and its orders (a signed order basket) commit
    // together.
    st.store.write(|txn| {
        if let Some(v) = &new_visit {
            crate::domains::visit::store::put_in(txn, None, v)?;
        }
        store::write_in(
            txn,
            &Change {
                encounter: Some((None, &e)),
                obs: obs.iter().map(|o| (None, o)).collect(),
            },
        )?;
        placed.write_in(txn)
    })?;
    Ok(e)
}

/// `POST encounter/{uuid}`: changes the encounter's fields; in `obs`, an entry with the
/// uuid of a saved observation and `voided: true` voids it, one with a uuid and a new value
/// replaces it (the old one is voided, the new one points back to it), one without a uuid
/// is added.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Encounters"])?;
    only_known(&body, ENCOUNTER_FIELDS)?;
    not_recorded_yet(&body)?;
    if has_orders(&body) {
        caller.require(&["Add Orders"])?;
    }
    let patient = opt_ref(&body, "patient")?;
    // `voided: true` voids the encounter as DELETE does, after the body's other changes
    // (webservices.rest accepts the flag on every update of a data resource).
    let voiding = opt_bool(&body, "voided", "")?;
    let reason = opt_str(&body, "voidReason")?.unwrap_or_else(|| "web service call".into());
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let by = user.clone();
    let e = blocking(move || {
        let now = Utc::now();
        let _one_writer = st.store.write_lock();
        let old = store::encounter(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        // The form engine sends back the encounter as it read it, patient included: the
        // same patient is fine, another one is refused.
        if patient.as_ref().is_some_and(|p| p != &old.patient) {
            return Err(ApiError::BadRequest(
                "The patient of an encounter cannot be changed".into(),
            ));
        }
        let mut e = old.clone();
        if let Some(t) = opt_ref(&body, "encounterType")? {
            e.encounter_type = t;
        }
        if let Some(t) = opt_datetime(&body, "encounterDatetime")? {
            e.datetime = t;
        }
        if body.contains_key("location") {
            e.location = opt_ref(&body, "location")?;
        }
        if body.contains_key("form") {
            e.form = opt_ref(&body, "form")?;
        }
        if body.contains_key("visit") {
            e.visit = opt_ref(&body, "visit")?;
        }
        if let Some(p) = providers(&st, &body)? {
            // Providers already on the encounter keep their entry.
            let mut merged = Vec::new();
            for n in p {
                match e
                    .providers
                    .iter()
                    .find(|x| x.provider == n.provider && x.encounter_role == n.encounter_role)
                {
                    Some(existing) => merged.push(existing.clone()),
                    None => merged.push(n),
                }
            }
            e.providers = merged;
        }
        e.audit.changed(&user, now);
        let mut inv = Invalid::default();
        let visit = load_visit(&st, &e)?;
        crate::domains::encounter::validate(&st.clinic(), &e, visit.as_ref(), &mut inv);
        let saved = store::obs_of_encounter(&st.store, &e.uuid, false)?;
        let audit = Audit::new(&user, now);
        let mut replaced: Vec<(ObsRecord, ObsRecord)> = Vec::new();
        let mut added = Vec::new();
        for (i, o) in obs_bodies(&body)?.into_iter().enumerate() {
            let existing = o
                .get("uuid")
                .and_then(ref_uuid)
                .and_then(|u| saved.iter().find(|s| s.uuid == u));
            match existing {
                Some(s) if o.get("voided") == Some(&Value::Bool(true)) => {
                    let mut v = s.clone();
                    v.voiding.void(&user, now, "voided through the encounter");
                    replaced.push((s.clone(), v));
                    // Its members go with it.
                    for m in saved
                        .iter()
                        .filter(|m| m.obs_group.as_deref() == Some(&s.uuid))
                    {
                        let mut v = m.clone();
                        v.voiding.void(&user, now, "voided with its group");
                        replaced.push((m.clone(), v));
                    }
                }
                Some(s) => {
                    let mut fresh = o.clone();
                    fresh.remove("uuid");
                    fresh.remove("voided");
                    if !fresh.contains_key("concept") {
                        fresh.insert("concept".into(), json!(s.concept));
                    }
                    // A corrected result still answers its order.
                    if !fresh.contains_key("order")
                        && let Some(order) = &s.order
                    {
                        fresh.insert("order".into(), json!(order));
                    }
                    let mut parsed = Vec::new();
                    crate::domains::encounter::body::parse_obs(
                        &st,
                        &fresh,
                        &format!("obs[{i}]"),
                        &e.patient,
                        Some(&e),
                        s.obs_group.as_deref(),
                        &audit,
                        &mut inv,
                        &mut parsed,
                    )?;
                    if let Some(first) = parsed.first_mut() {
                        first.previous_version = Some(s.uuid.clone());
                        if first.value == s.value && first.comment == s.comment {
                            continue; // unchanged: nothing to record
                        }
                    }
                    let mut v = s.clone();
                    v.voiding.void(&user, now, "edited");
                    replaced.push((s.clone(), v));
                    added.extend(parsed);
                }
                None if o.get("voided") == Some(&Value::Bool(true)) => {}
                None => {
                    let mut fresh = o.clone();
                    fresh.remove("uuid");
                    crate::domains::encounter::body::parse_obs(
                        &st,
                        &fresh,
                        &format!("obs[{i}]"),
                        &e.patient,
                        Some(&e),
                        None,
                        &audit,
                        &mut inv,
                        &mut added,
                    )?;
                }
            }
        }
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        let drafts = order_rest::drafts_of_encounter(&st, &body, &e.uuid, &e.patient, &audit)?;
        check_obs_orders(&st, &added, &e.patient, &drafts)?;
        let placed = order_rest::place_all(
            &st,
            drafts,
            &crate::domains::encounter::placement(&e),
            now,
            Some("orders"),
        )?;
        let mut obs: Vec<(Option<&ObsRecord>, &ObsRecord)> =
            replaced.iter().map(|(o, n)| (Some(o), n)).collect();
        obs.extend(added.iter().map(|o| (None, o)));
        st.store.write(|txn| {
            store::write_in(
                txn,
                &Change {
                    encounter: Some((Some(&old), &e)),
                    obs,
                },
            )?;
            placed.write_in(txn)
        })?;
        Ok(e)
    })
    .await?;
    let e = if voiding == Some(true) && !e.voiding.voided {
        let st = state.clone();
        blocking(move || {
            void(&st, &e.uuid, &by, &reason)?;
            store::encounter(&st.store, &e.uuid)?.ok_or(ApiError::NotFound)
        })
        .await?
    } else {
        e
    };
    answer(&state, &caller, &EncounterRes::of(&e), &rep, StatusCode::OK)
}

pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters"])?;
    let e = store::encounter(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &EncounterRes::of(&e),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE encounter/{uuid}`: voids it and its observations (`reason`).
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Delete Encounters"])?;
    if flag(&query, "purge").unwrap_or(false) {
        return Err(ApiError::BadRequest(
            "Encounters are voided, never purged: clinical records are kept".into(),
        ));
    }
    let user = caller.user_uuid();
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let st = state.clone();
    blocking(move || void(&st, &uuid, &user, &reason)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Voids an encounter with its observations and orders, and frees the bed it gave (what
/// `DELETE` does, and an update with `voided: true`); a voided one stays as it is.
fn void(st: &AppState, uuid: &str, user: &str, reason: &str) -> ApiResult<()> {
    let now = Utc::now();
    let _one_writer = st.store.write_lock();
    let old = store::encounter(&st.store, uuid)?.ok_or(ApiError::NotFound)?;
    if old.voiding.voided {
        return Ok(());
    }
    let mut e = old.clone();
    e.voiding.void(user, now, reason);
    let changed: Vec<(ObsRecord, ObsRecord)> = store::obs_of_encounter(&st.store, uuid, false)?
        .into_iter()
        .map(|o| {
            let mut v = o.clone();
            v.voiding.void(user, now, reason);
            (o, v)
        })
        .collect();
    let obs = changed.iter().map(|(o, n)| (Some(o), n)).collect();
    // Its orders go with it, as core's voidEncounter voids them (and the orders their
    // revisions had stopped stand again).
    let orders: Vec<(OrderRecord, OrderRecord)> = crate::domains::order::voiding(
        &st.store,
        &crate::domains::order::store::of_encounter(&st.store, uuid, false)?,
        user,
        now,
        reason,
    )?;
    // A bed it put the patient in is freed, as the bed management module does.
    let effects = crate::domains::encounter::voiding_effects(&st.store, uuid, user, reason)?;
    st.store
        .write(|txn| {
            effects.into_iter().try_for_each(|effect| effect(txn))?;
            store::write_in(
                txn,
                &Change {
                    encounter: Some((Some(&old), &e)),
                    obs,
                },
            )?;
            crate::domains::order::store::put_in(
                txn,
                &orders.iter().map(|(o, n)| (Some(o), n)).collect::<Vec<_>>(),
            )
        })
        .map_err(ApiError::from)
}

pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters"])?;
    let date = |name: &str| -> ApiResult<Option<String>> {
        match param(&query, name) {
            None => Ok(None),
            Some(s) => crate::wire::parse_datetime(s)
                .map(|t| Some(datetime_key(t)))
                .ok_or_else(|| ApiError::BadRequest(format!("{name}: '{s}' is not a date"))),
        }
    };
    let catalog = state.catalog.load();
    let q = EncounterQuery {
        patient: param(&query, "patient").map(str::to_string),
        visit: param(&query, "visit").map(str::to_string),
        encounter_type: param(&query, "encounterType")
            .map(|t| crate::domains::encounter::encounter_type_uuid(&catalog, t)),
        form: param(&query, "form").map(str::to_string),
        from: date("fromdate")?,
        to: date("todate")?.map(|t| {
            if t.ends_with("T00:00:00.000Z") {
                t.replace("T00:00:00.000Z", "T23:59:59.999Z")
            } else {
                t
            }
        }),
        include_voided: flag(&query, "includeAll").unwrap_or(false),
        ..EncounterQuery::default()
    };
    if q.patient.is_none() && q.visit.is_none() {
        return Err(ApiError::BadRequest(
            "Search encounters by patient or visit".into(),
        ));
    }
    let paging = Paging::from_query(&query)?;
    let (list, page) = store::list(&state.store, &q, window(&paging))?;
    // The page's observations at once, when the representation shows them (the chart's
    // encounter lists ask for them).
    let shows_obs =
        param(&query, "v").is_none_or(|v| !v.starts_with("custom") || v.contains("obs"));
    let uuids: Vec<&str> = list.iter().map(|e| e.uuid.as_str()).collect();
    let obs = match shows_obs {
        true => store::obs_of_encounters(&state.store, &uuids)?,
        false => Default::default(),
    };
    page_answer(
        &state,
        &caller,
        &query,
        "/encounter",
        &paging,
        &page,
        list.iter()
            .map(|e| EncounterRes(e, obs.get(&e.uuid).map(Vec::as_slice))),
    )
}

// Observations.

pub async fn obs_create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Observations"])?;
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let o = blocking(move || create_obs(&st, &body, &user)).await?;
    answer(&state, &caller, &ObsRes(&o), &rep, StatusCode::CREATED)
}

/// Records one observation (and its group's members) from a REST body (`person`,
/// `encounter`, `concept`, `obsDatetime`, `value`, `groupMembers`…) with every rule of
/// `POST obs`: the REST API's and FHIR's `POST Observation` (which translates to this).
pub fn create_obs(
    st: &AppState,
    body: &serde_json::Map<String, serde_json::Value>,
    user: &str,
) -> ApiResult<ObsRecord> {
    let now = Utc::now();
    let audit = Audit::new(user, now);
    let person = opt_ref(body, "person")?
        .ok_or_else(|| ApiError::invalid_field("person", "error.null", "Person is required"))?;
    if st.store.patient(&person)?.is_none() {
        return Err(ApiError::invalid_field(
            "person",
            "error.invalid",
            "Person does not exist",
        ));
    }
    let encounter = match opt_ref(body, "encounter")? {
        Some(e) => {
            let e = store::encounter(&st.store, &e)?.ok_or_else(|| {
                ApiError::invalid_field("encounter", "error.invalid", "Encounter does not exist")
            })?;
            if e.patient != person {
                return Err(ApiError::invalid_field(
                    "encounter",
                    "error.invalid",
                    "The encounter belongs to another patient",
                ));
            }
            Some(e)
        }
        None => None,
    };
    let mut inv = Invalid::default();
    let mut obs = Vec::new();
    crate::domains::encounter::body::parse_obs(
        st,
        body,
        "",
        &person,
        encounter.as_ref(),
        None,
        &audit,
        &mut inv,
        &mut obs,
    )?;
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }
    check_obs_orders(st, &obs, &person, &[])?;
    store::write(
        &st.store,
        &Change {
            encounter: None,
            obs: obs.iter().map(|o| (None, o)).collect(),
        },
    )?;
    Ok(obs.swap_remove(0))
}

/// `POST obs/{uuid}` with a new `value` (and `comment`, `obsDatetime`, `status`): as
/// OpenMRS saves an edited observation, the old one is voided and the new one, with a new
/// uuid, points back to it (`previousVersion`), in one transaction; answered with the new
/// one. What the laboratory app sends to correct a result — privilege: Edit Observations.
pub async fn obs_update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Observations"])?;
    only_known(
        &body,
        &[
            "uuid",
            "value",
            "comment",
            "obsDatetime",
            "status",
            "concept",
            "person",
        ],
    )?;
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let o = blocking(move || {
        let now = Utc::now();
        let _one_writer = st.store.write_lock();
        let old = store::obs(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if old.voiding.voided {
            return Err(ApiError::BadRequest(
                "A voided observation cannot be changed".into(),
            ));
        }
        if matches!(old.value, ObsValue::Group) {
            return Err(ApiError::BadRequest(
                "An obs group has no value: change its members".into(),
            ));
        }
        for (field, same) in [("concept", &old.concept), ("person", &old.person)] {
            if crate::http::body::opt_ref(&body, field)?.is_some_and(|v| {
                st.catalog
                    .load()
                    .concept(&v)
                    .map_or(v.clone(), |c| c.uuid.clone())
                    != *same
                    && v != *same
            }) {
                return Err(ApiError::BadRequest(format!(
                    "The {field} of an observation cannot be changed"
                )));
            }
        }
        let encounter = match &old.encounter {
            Some(e) => store::encounter(&st.store, e)?,
            None => None,
        };
        let mut fresh = serde_json::Map::new();
        fresh.insert("concept".into(), json!(old.concept));
        for field in ["value", "comment", "status"] {
            if let Some(v) = body.get(field) {
                fresh.insert(field.into(), v.clone());
            }
        }
        if !body.contains_key("value") {
            return Err(ApiError::invalid_field(
                "value",
                "error.null",
                "The new value is required",
            ));
        }
        if !fresh.contains_key("comment")
            && let Some(c) = &old.comment
        {
            fresh.insert("comment".into(), json!(c));
        }
        fresh.insert(
            "obsDatetime".into(),
            body.get("obsDatetime")
                .cloned()
                .unwrap_or_else(|| json!(old.datetime)),
        );
        let mut inv = Invalid::default();
        let mut parsed = Vec::new();
        crate::domains::encounter::body::parse_obs(
            &st,
            &fresh,
            "",
            &old.person,
            encounter.as_ref(),
            old.obs_group.as_deref(),
            &Audit::new(&user, now),
            &mut inv,
            &mut parsed,
        )?;
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        let mut new = parsed.swap_remove(0);
        new.previous_version = Some(old.uuid.clone());
        new.order = old.order.clone();
        new.location = old.location.clone();
        new.form_field_namespace = old.form_field_namespace.clone();
        new.form_field_path = old.form_field_path.clone();
        let mut voided = old.clone();
        voided.voiding.void(&user, now, "edited");
        store::write(
            &st.store,
            &Change {
                encounter: None,
                obs: vec![(Some(&old), &voided), (None, &new)],
            },
        )?;
        Ok(new)
    })
    .await?;
    answer(&state, &caller, &ObsRes(&o), &rep, StatusCode::OK)
}

pub async fn obs_read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let o = store::obs(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &ObsRes(&o),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

pub async fn obs_delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Delete Observations"])?;
    let user = caller.user_uuid();
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::obs(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if old.voiding.voided {
            return Ok(());
        }
        let mut o = old.clone();
        o.voiding.void(&user, Utc::now(), &reason);
        store::write(
            &st.store,
            &Change {
                encounter: None,
                obs: vec![(Some(&old), &o)],
            },
        )
        .map_err(ApiError::from)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn obs_search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let concepts =
        crate::http::fhir::concepts_param(&state.catalog.load(), &query, &["concept", "concepts"]);
    let q = ObsQuery {
        values: Vec::new(),
        patient: param(&query, "patient")
            .or(param(&query, "person"))
            .map(str::to_string),
        concepts,
        encounter: param(&query, "encounter").map(str::to_string),
        encounter_type: None,
        include_voided: flag(&query, "includeAll").unwrap_or(false),
        date: None,
        updated: None,
    };
    if q.patient.is_none() && q.encounter.is_none() {
        return Err(ApiError::BadRequest(
            "Search observations by patient or encounter".into(),
        ));
    }
    let paging = Paging::from_query(&query)?;
    let (list, page) = store::list_obs(&state.store, &q, window(&paging))?;
    page_answer(
        &state,
        &caller,
        &query,
        "/obs",
        &paging,
        &page,
        list.iter().map(ObsRes),
    )
}

// Encounter roles and providers.

pub async fn encounter_roles(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounter Roles"])?;
    let catalog = state.catalog.load();
    let items: Vec<NamedRes> = catalog
        .content
        .encounter_roles
        .iter()
        .filter(|r| !r.retired)
        .map(|r| NamedRes("encounterrole", r))
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/encounterrole",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn encounter_role(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounter Roles"])?;
    let catalog = state.catalog.load();
    let r = catalog
        .content
        .encounter_roles
        .iter()
        .find(|r| r.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    Ok(ok(render(
        &NamedRes("encounterrole", r),
        &rep_of(&query)?,
        &caller.ctx(&state, &catalog),
    )?))
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/obstree"),
            get(crate::domains::encounter::obstree::obstree),
        )
        .route(
            &paths.rest("/encounter"),
            get(crate::domains::encounter::rest::search)
                .post(crate::domains::encounter::rest::create),
        )
        .route(
            &paths.rest("/encounter/{uuid}"),
            get(crate::domains::encounter::rest::read)
                .post(crate::domains::encounter::rest::update)
                .delete(crate::domains::encounter::rest::delete),
        )
        .route(
            &paths.rest("/obs"),
            get(crate::domains::encounter::rest::obs_search)
                .post(crate::domains::encounter::rest::obs_create),
        )
        .route(
            &paths.rest("/obs/{uuid}"),
            get(crate::domains::encounter::rest::obs_read)
                .post(crate::domains::encounter::rest::obs_update)
                .delete(crate::domains::encounter::rest::obs_delete),
        )
        .route(
            &paths.rest("/encounterrole"),
            get(crate::domains::encounter::rest::encounter_roles),
        )
        .route(
            &paths.rest("/encounterrole/{uuid}"),
            get(crate::domains::encounter::rest::encounter_role),
        )
        .route(
            &paths.fhir("/Observation"),
            get(crate::domains::encounter::fhir::observations)
                .post(crate::domains::encounter::fhir::create_observation),
        )
        .route(
            &paths.fhir("/DiagnosticReport"),
            get(crate::domains::encounter::diagnostic_report::search),
        )
        .route(
            &paths.fhir("/DiagnosticReport/{id}"),
            get(crate::domains::encounter::diagnostic_report::read),
        )
        .route(
            &paths.fhir("/Observation/$lastn"),
            get(crate::domains::encounter::fhir::lastn),
        )
        .route(
            &paths.fhir("/Observation/{id}"),
            get(crate::domains::encounter::fhir::observation),
        )
        .route(
            &paths.fhir("/Encounter/{id}"),
            get(crate::domains::encounter::fhir::encounter),
        )
}
