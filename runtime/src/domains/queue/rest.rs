//! The queue module's entry resources over REST, in its representations: `queue-entry`
//! (search, read, create, update, void), `visit-queue-entry` (an entry for a visit),
//! `queue/{queue}/entry/{entry}`, `queue-entry/transition` (move on, and undo),
//! `queue-entry-number`, `queue-entry-metrics`, `queue-metrics`, and `queueutil`'s tickets
//! for the waiting-room screen.

use crate::domains::queue::repr::QueueEntryRes;
use crate::domains::queue::store::{self, Source};
use crate::domains::queue::{DUPLICATE, QueueEntryRecord};
use crate::http::AppState;
use crate::http::answer::{answer, flag, page_body, rep_of};
use crate::http::answer_cache;
use crate::http::body::{only_known, opt_datetime, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Paging, Rep, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, ok, ok_bytes, param};
use crate::store::record::{Audit, Page, Voiding};
use crate::wire::{datetime_key, parse_datetime, wire_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The entry a transition ended to open `e`: the same patient and visit, in the queue `e`
/// came from, ended exactly when `e` started (as the queue module finds it).
pub(crate) fn previous_of(
    store: &crate::store::Store,
    e: &QueueEntryRecord,
) -> ApiResult<Option<QueueEntryRecord>> {
    let Some(from) = &e.queue_coming_from else {
        return Ok(None);
    };
    let mut found: Vec<QueueEntryRecord> = store::read(store, Source::Patient(&e.patient), false)?
        .into_iter()
        .filter(|o| {
            o.uuid != e.uuid
                && &o.queue == from
                && o.visit == e.visit
                && o.ended.as_deref() == Some(e.started.as_str())
        })
        .collect();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(ApiError::BadRequest(
            "Multiple previous queue entries found".into(),
        )),
    }
}

/// A concept named by uuid, `SOURCE:CODE`, or exact name (in any language), as the queue
/// module resolves its search parameters.
pub(crate) fn concept_param(state: &AppState, s: &str) -> ApiResult<String> {
    let catalog = state.catalog.load();
    if let Some(c) = catalog.concept(s) {
        return Ok(c.uuid.clone());
    }
    catalog
        .content
        .concepts
        .iter()
        .find(|c| {
            c.names
                .iter()
                .any(|n| n.name.eq_ignore_ascii_case(s.trim()))
        })
        .map(|c| c.uuid.clone())
        .ok_or_else(|| ApiError::BadRequest(format!("Unable to find concept: {s}")))
}

pub(crate) fn queue_param(state: &AppState, s: &str) -> ApiResult<model::Queue> {
    let catalog = state.catalog.load();
    crate::domains::queue::all_queues(&state.store, &catalog)?
        .into_iter()
        .find(|q| q.uuid == s || q.name == s)
        .ok_or_else(|| ApiError::BadRequest(format!("Unable to find queue: {s}")))
}

/// What a `queue-entry` search (or its metrics) asks for; each list is "any of".
#[derive(Default)]
pub(crate) struct Criteria {
    pub(crate) queues: Vec<String>,
    pub(crate) locations: Vec<String>,
    pub(crate) services: Vec<String>,
    pub(crate) statuses: Vec<String>,
    pub(crate) priorities: Vec<String>,
    pub(crate) patient: Option<String>,
    pub(crate) visit: Option<String>,
    pub(crate) has_visit: Option<bool>,
    pub(crate) is_ended: Option<bool>,
    pub(crate) include_voided: bool,
    pub(crate) location_waiting_for: Vec<String>,
    pub(crate) provider_waiting_for: Vec<String>,
    pub(crate) queue_coming_from: Vec<String>,
    pub(crate) started_from: Option<String>,
    pub(crate) started_to: Option<String>,
    pub(crate) ended_from: Option<String>,
    pub(crate) ended_to: Option<String>,
}

pub(crate) fn all<'q>(query: &'q [(String, String)], name: &str) -> impl Iterator<Item = &'q str> {
    query
        .iter()
        .filter(move |(k, v)| k == name && !v.trim().is_empty())
        .map(|(_, v)| v.as_str())
}

pub(crate) fn date_param(query: &[(String, String)], name: &str) -> ApiResult<Option<String>> {
    match param(query, name) {
        None => Ok(None),
        Some(s) => parse_datetime(&s.replace(' ', "T"))
            .map(|t| Some(datetime_key(t)))
            .ok_or_else(|| ApiError::BadRequest(format!("{name}: '{s}' is not a date and time"))),
    }
}

impl Criteria {
    pub(crate) fn parse(state: &AppState, query: &[(String, String)]) -> ApiResult<Criteria> {
        let catalog = state.catalog.load();
        let concepts = |name: &str| -> ApiResult<Vec<String>> {
            all(query, name).map(|s| concept_param(state, s)).collect()
        };
        let locations = |name: &str| -> ApiResult<Vec<String>> {
            all(query, name)
                .map(|s| {
                    catalog.location(s).map(|l| l.uuid.clone()).ok_or_else(|| {
                        ApiError::BadRequest(format!("Unable to find location: {s}"))
                    })
                })
                .collect()
        };
        let queues = |name: &str| -> ApiResult<Vec<String>> {
            all(query, name)
                .map(|s| queue_param(state, s).map(|q| q.uuid))
                .collect()
        };
        Ok(Criteria {
            queues: queues("queue")?,
            locations: locations("location")?,
            services: concepts("service")?,
            statuses: concepts("status")?,
            priorities: concepts("priority")?,
            patient: param(query, "patient").map(str::to_string),
            visit: param(query, "visit").map(str::to_string),
            has_visit: flag(query, "hasVisit"),
            is_ended: flag(query, "isEnded"),
            include_voided: flag(query, "includedVoided").unwrap_or(false),
            location_waiting_for: locations("locationWaitingFor")?,
            provider_waiting_for: all(query, "providerWaitingFor")
                .map(str::to_string)
                .collect(),
            queue_coming_from: queues("queueComingFrom")?,
            started_from: date_param(query, "startedOnOrAfter")?,
            started_to: date_param(query, "startedOnOrBefore")?,
            ended_from: date_param(query, "endedOnOrAfter")?,
            ended_to: date_param(query, "endedOnOrBefore")?,
        })
    }

    /// The matching entries, in the queue module's order: heavier first, then the longest
    /// waiting.
    pub(crate) fn find(&self, state: &AppState) -> ApiResult<Vec<QueueEntryRecord>> {
        const EVER: &str = "9999";
        let source = match (&self.patient, &self.visit, self.is_ended) {
            (Some(p), _, _) => Source::Patient(p),
            (None, Some(v), _) => Source::Visit(v),
            (None, None, Some(false)) if !self.include_voided => Source::Open,
            _ => match (&self.started_from, &self.started_to) {
                (Some(from), to) => Source::StartedBetween(from, to.as_deref().unwrap_or(EVER)),
                (None, Some(to)) => Source::StartedBetween("", to),
                (None, None) => Source::All,
            },
        };
        let catalog = state.catalog.load();
        let queues = crate::domains::queue::all_queues(&state.store, &catalog)?;
        let queue_of = |uuid: &str| queues.iter().find(|q| q.uuid == uuid);
        let any = |list: &[String], v: Option<&str>| {
            list.is_empty() || v.is_some_and(|v| list.iter().any(|x| x == v))
        };
        let mut found: Vec<QueueEntryRecord> =
            store::read(&state.store, source, self.include_voided)?
                .into_iter()
                .filter(|e| {
                    let queue = queue_of(&e.queue);
                    any(&self.queues, Some(&e.queue))
                        && any(&self.locations, queue.map(|q| q.location.as_str()))
                        && any(&self.services, queue.map(|q| q.service.as_str()))
                        && any(&self.statuses, Some(&e.status))
                        && any(&self.priorities, Some(&e.priority))
                        && self.patient.as_ref().is_none_or(|p| p == &e.patient)
                        && self
                            .visit
                            .as_ref()
                            .is_none_or(|v| e.visit.as_ref() == Some(v))
                        && self.has_visit.is_none_or(|h| h == e.visit.is_some())
                        && self.is_ended.is_none_or(|ended| ended == e.ended.is_some())
                        && any(
                            &self.location_waiting_for,
                            e.location_waiting_for.as_deref(),
                        )
                        && any(
                            &self.provider_waiting_for,
                            e.provider_waiting_for.as_deref(),
                        )
                        && any(&self.queue_coming_from, e.queue_coming_from.as_deref())
                        && self.started_from.as_ref().is_none_or(|t| &e.started >= t)
                        && self.started_to.as_ref().is_none_or(|t| &e.started <= t)
                        && self
                            .ended_from
                            .as_ref()
                            .is_none_or(|t| e.ended.as_ref().is_some_and(|x| x >= t))
                        && self
                            .ended_to
                            .as_ref()
                            .is_none_or(|t| e.ended.as_ref().is_some_and(|x| x <= t))
                })
                .collect();
        found.sort_by(|a, b| {
            b.sort_weight
                .total_cmp(&a.sort_weight)
                .then_with(|| a.started.cmp(&b.started))
                .then_with(|| a.audit.date_created.cmp(&b.audit.date_created))
                .then_with(|| a.uuid.cmp(&b.uuid))
        });
        Ok(found)
    }
}

/// `GET queue-entry?…` — privilege: Get Queue Entries. Without any criterion, every entry
/// that is not voided (the whole history: the screens always narrow it).
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Queue Entries"])?;
    rep_of(&query)?; // a malformed representation is refused before the search
    let paging = Paging::from_query(&query)?;
    let key = answer_cache::key(&caller, &state.catalog.load(), "queue-entry", &query);
    let body = state
        .answers
        .get_or_render(&state.store, key, || async {
            let st = state.clone();
            let q = query.clone();
            let found = blocking(move || Criteria::parse(&st, &q)?.find(&st)).await?;
            let page = Page {
                uuids: Vec::new(),
                more: paging.start + paging.limit < found.len(),
                total: paging.total_count.then_some(found.len()),
            };
            let items = found
                .iter()
                .skip(paging.start)
                .take(paging.limit)
                .map(QueueEntryRes);
            let body = page_body(
                &state,
                &caller,
                &query,
                "/queue-entry",
                &paging,
                &page,
                items,
            )?;
            Ok(body.into())
        })
        .await?;
    Ok(ok_bytes(body))
}

/// `GET queue-entry/{uuid}` (voided and ended ones too) — privilege: Get Queue Entries.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Queue Entries"])?;
    let e = store::get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &QueueEntryRes(&e),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

const CREATABLE: &[&str] = &[
    "uuid",
    "queue",
    "status",
    "priority",
    "priorityComment",
    "patient",
    "visit",
    "sortWeight",
    "startedAt",
    "locationWaitingFor",
    "queueComingFrom",
    "providerWaitingFor",
];
const UPDATABLE: &[&str] = &[
    "status",
    "priority",
    "priorityComment",
    "sortWeight",
    "startedAt",
    "endedAt",
    "locationWaitingFor",
    "providerWaitingFor",
];

/// A finite number (a stored NaN or infinity could not be read back).
pub(crate) fn sort_weight(body: &Map<String, Value>) -> ApiResult<Option<f64>> {
    let weight = match body.get("sortWeight") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        Some(_) => None,
    };
    match weight {
        Some(w) if w.is_finite() => Ok(Some(w)),
        _ => Err(ApiError::invalid_field(
            "sortWeight",
            "error.invalid",
            "The sort weight must be a finite number",
        )),
    }
}

/// Applies the changeable fields a body carries.
fn apply(e: &mut QueueEntryRecord, body: &Map<String, Value>) -> ApiResult<()> {
    if let Some(s) = opt_ref(body, "status")? {
        e.status = s;
    }
    if let Some(p) = opt_ref(body, "priority")? {
        e.priority = p;
    }
    if body.contains_key("priorityComment") {
        e.priority_comment = opt_str(body, "priorityComment")?;
    }
    if let Some(w) = sort_weight(body)? {
        e.sort_weight = w;
    }
    if let Some(t) = opt_datetime(body, "startedAt")? {
        e.started = t;
    }
    if body.contains_key("endedAt") {
        e.ended = opt_datetime(body, "endedAt")?;
    }
    if body.contains_key("locationWaitingFor") {
        e.location_waiting_for = opt_ref(body, "locationWaitingFor")?;
    }
    if body.contains_key("providerWaitingFor") {
        e.provider_waiting_for = opt_ref(body, "providerWaitingFor")?;
    }
    Ok(())
}

fn required(field: &str) -> ApiError {
    ApiError::invalid_field(
        field,
        "error.null",
        &format!("The property {field} should not be null"),
    )
}

/// A new entry from a creation body (`visit` given separately by `visit-queue-entry`).
fn new_entry(
    state: &AppState,
    body: &Map<String, Value>,
    visit: Option<String>,
    user: &str,
) -> ApiResult<QueueEntryRecord> {
    only_known(body, CREATABLE)?;
    let now = Utc::now();
    let queue = opt_ref(body, "queue")?.ok_or_else(|| required("queue"))?;
    let patient = opt_ref(body, "patient")?.ok_or_else(|| required("patient"))?;
    match state.store.patient(&patient)? {
        Some(p) if !p.voided => {}
        _ => {
            return Err(ApiError::invalid_field(
                "patient",
                "error.invalid",
                "Patient does not exist",
            ));
        }
    }
    let status = opt_ref(body, "status")?.ok_or_else(|| required("status"))?;
    let priority = opt_ref(body, "priority")?.ok_or_else(|| required("priority"))?;
    let started = opt_datetime(body, "startedAt")?.ok_or_else(|| required("startedAt"))?;
    let mut e = QueueEntryRecord {
        v: 1,
        uuid: match opt_str(body, "uuid")? {
            // Index keys are `…|uuid`: a uuid is a plain token.
            Some(u)
                if u.len() > 38
                    || u.is_empty()
                    || !u.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') =>
            {
                return Err(ApiError::invalid_field(
                    "uuid",
                    "error.invalid",
                    "Invalid uuid",
                ));
            }
            Some(u) => u,
            None => crate::store::record::new_uuid(),
        },
        queue,
        patient,
        visit: visit.or(opt_ref(body, "visit")?),
        status,
        priority,
        priority_comment: None,
        sort_weight: 0.0,
        started,
        ended: None,
        location_waiting_for: None,
        provider_waiting_for: None,
        queue_coming_from: opt_ref(body, "queueComingFrom")?,
        audit: Audit::new(user, now),
        voiding: Voiding::default(),
    };
    apply(&mut e, body)?;
    if let Some(from) = &e.queue_coming_from {
        e.queue_coming_from = Some(queue_param(state, from)?.uuid);
    }
    Ok(e)
}

/// Checks `e` (new or changed) and writes it with `also` (entries changed with it) in one
/// transaction, under the store's write lock.
fn save(
    state: &AppState,
    old: Option<&QueueEntryRecord>,
    e: &QueueEntryRecord,
    also: &[(&QueueEntryRecord, &QueueEntryRecord)],
) -> ApiResult<()> {
    if old.is_none() && store::get(&state.store, &e.uuid)?.is_some() {
        return Err(ApiError::BadRequest(format!(
            "A queue entry with uuid {} already exists",
            e.uuid
        )));
    }
    let inv = crate::domains::queue::validate(&state.clinic(), e);
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }
    let mut others = store::read(&state.store, Source::Patient(&e.patient), false)?;
    // The entries written with this one count as they will be, not as stored.
    for (_, changed) in also {
        if let Some(o) = others.iter_mut().find(|o| o.uuid == changed.uuid) {
            *o = (*changed).clone();
        }
    }
    if !e.voiding.voided && crate::domains::queue::duplicate(e, &others) {
        return Err(ApiError::BadRequest(DUPLICATE.into()));
    }
    let mut changes: Vec<(Option<&QueueEntryRecord>, &QueueEntryRecord)> =
        also.iter().map(|(o, n)| (Some(*o), *n)).collect();
    changes.push((old, e));
    store::put_all(&state.store, &changes)?;
    Ok(())
}

/// `POST queue-entry` — privilege: Manage Queue Entries.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Entries"])?;
    let rep = rep_of(&query)?;
    let e = new_entry(&state, &body, None, &caller.user_uuid())?;
    let st = state.clone();
    let e = blocking(move || {
        let _one_writer = st.store.write_lock();
        save(&st, None, &e, &[])?;
        Ok(e)
    })
    .await?;
    answer(
        &state,
        &caller,
        &QueueEntryRes(&e),
        &rep,
        StatusCode::CREATED,
    )
}

/// `POST visit-queue-entry` with `{visit, queueEntry: {…}}` — privilege: Manage Queue
/// Entries. Answers 201 with `{uuid, display, visit, queueEntry}`.
pub async fn create_for_visit(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Entries"])?;
    only_known(&body, &["visit", "queueEntry"])?;
    let visit = opt_ref(&body, "visit")?.ok_or_else(|| required("visit"))?;
    let Some(Value::Object(entry)) = body.get("queueEntry") else {
        return Err(required("queueEntry"));
    };
    let e = new_entry(&state, entry, Some(visit), &caller.user_uuid())?;
    let st = state.clone();
    let e = blocking(move || {
        let _one_writer = st.store.write_lock();
        save(&st, None, &e, &[])?;
        Ok(e)
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let entry = render(&QueueEntryRes(&e), &Rep::Default, &ctx)?;
    Ok(crate::http::json(
        StatusCode::CREATED,
        json!({
            "uuid": e.uuid,
            "display": entry["display"],
            "visit": entry["visit"],
            "queueEntry": entry,
        }),
    ))
}

/// `GET visit-queue-entry[?patient=…][&status=…][&service=…][&location=…]`: the entries
/// still waiting or being served that belong to a visit (the queue module's active visit
/// queue entries), each as `{uuid, display, visit, queueEntry}`; paged. Privilege: Get Queue
/// Entries.
pub async fn visit_entries(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Queue Entries"])?;
    let rep = rep_of(&query)?;
    let paging = Paging::from_query(&query)?;
    let mut criteria: Vec<(String, String)> = query
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "patient" | "status" | "service" | "location"))
        .cloned()
        .collect();
    criteria.push(("isEnded".into(), "false".into()));
    criteria.push(("hasVisit".into(), "true".into()));
    let st = state.clone();
    let found = blocking(move || Criteria::parse(&st, &criteria)?.find(&st)).await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let mut results = Vec::new();
    for e in found.iter().skip(paging.start).take(paging.limit) {
        // The visit and display as the module writes them; the entry in the representation
        // asked for.
        let usual = render(&QueueEntryRes(e), &Rep::Default, &ctx)?;
        results.push(json!({
            "uuid": e.uuid,
            "display": usual["display"],
            "visit": usual["visit"],
            "queueEntry": render(&QueueEntryRes(e), &rep, &ctx)?,
        }));
    }
    crate::http::answer::values_answer(
        &state,
        &caller,
        &query,
        "/visit-queue-entry",
        &paging,
        &results,
        found.len(),
    )
}

/// Reads, changes and saves one entry under the write lock.
async fn change(
    state: &Arc<AppState>,
    uuid: String,
    f: impl FnOnce(&mut QueueEntryRecord) -> ApiResult<()> + Send + 'static,
    user: String,
) -> ApiResult<QueueEntryRecord> {
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let mut e = old.clone();
        f(&mut e)?;
        e.audit.changed(&user, Utc::now());
        save(&st, Some(&old), &e, &[])?;
        Ok(e)
    })
    .await
}

/// `POST queue-entry/{uuid}` (status, priority, comment, sort weight, start, end, what it
/// waits for; the queue, patient and visit cannot change) — privilege: Manage Queue
/// Entries. Answers 200, which the O3 app requires.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Entries"])?;
    if let Some(k) = ["queue", "patient", "visit"]
        .iter()
        .find(|k| body.contains_key(**k))
    {
        return Err(ApiError::BadRequest(format!(
            "The {k} of a queue entry cannot be changed"
        )));
    }
    only_known(&body, UPDATABLE)?;
    let rep = rep_of(&query)?;
    let e = change(&state, uuid, move |e| apply(e, &body), caller.user_uuid()).await?;
    answer(&state, &caller, &QueueEntryRes(&e), &rep, StatusCode::OK)
}

/// `POST queue/{queue}/entry/{entry}` (end it, or change its comment or sort weight) —
/// privilege: Manage Queue Entries.
pub async fn update_in_queue(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((queue, uuid)): Path<(String, String)>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Entries"])?;
    only_known(&body, &["priorityComment", "sortWeight", "endedAt"])?;
    let rep = rep_of(&query)?;
    let e = change(
        &state,
        uuid,
        move |e| {
            if e.queue != queue {
                return Err(ApiError::NotFound);
            }
            apply(e, &body)
        },
        caller.user_uuid(),
    )
    .await?;
    answer(&state, &caller, &QueueEntryRes(&e), &rep, StatusCode::OK)
}

/// `DELETE queue-entry/{uuid}[?reason=]` voids it — privilege: Manage Queue Entries.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Entries"])?;
    if flag(&query, "purge") == Some(true) {
        return Err(ApiError::BadRequest(
            "Queue entries are kept: void the entry instead of purging it".into(),
        ));
    }
    crate::http::answer::void_answer(
        state,
        &caller,
        uuid,
        &query,
        store::get,
        |e| &mut e.voiding,
        store::put,
    )
    .await
}

/// `POST queue-entry/transition`: ends an entry and opens the next one (another queue, a
/// new status or priority) from the transition's time — privilege: Manage Queue Entries.
/// Answers 200 with the new entry's ref representation, as the queue module does.
pub async fn transition(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Entries"])?;
    only_known(
        &body,
        &[
            "queueEntryToTransition",
            "transitionDate",
            "newQueue",
            "newStatus",
            "newPriority",
            "newPriorityComment",
            "newLocationWaitingFor",
            "newProviderWaitingFor",
        ],
    )?;
    let user = caller.user_uuid();
    let from = opt_ref(&body, "queueEntryToTransition")?.ok_or_else(|| {
        ApiError::BadRequest("queueEntryToTransition not specified or found".into())
    })?;
    let at = match opt_str(&body, "transitionDate")? {
        None => datetime_key(Utc::now()),
        Some(s) => parse_datetime(&s).map(datetime_key).ok_or_else(|| {
            ApiError::BadRequest(format!("Invalid transition date specified: {s}"))
        })?,
    };
    let new_queue = match opt_ref(&body, "newQueue")? {
        Some(q) => Some(
            queue_param(&state, &q)
                .map_err(|_| ApiError::BadRequest(format!("Invalid queue specified: {q}")))?
                .uuid,
        ),
        None => None,
    };
    let concept = |field: &str, what: &str| -> ApiResult<Option<String>> {
        match opt_ref(&body, field)? {
            Some(c) => concept_param(&state, &c)
                .map(Some)
                .map_err(|_| ApiError::BadRequest(format!("Invalid {what} specified: {c}"))),
            None => Ok(None),
        }
    };
    let new_status = concept("newStatus", "status")?;
    let new_priority = concept("newPriority", "priority")?;
    let st = state.clone();
    let next = blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &from)?.ok_or_else(|| {
            ApiError::BadRequest("queueEntryToTransition not specified or found".into())
        })?;
        if old.voiding.voided {
            return Err(ApiError::BadRequest(
                "Cannot transition a voided queue entry".into(),
            ));
        }
        if old.ended.is_some() {
            return Err(ApiError::BadRequest(
                "Cannot transition a queue entry that has already ended".into(),
            ));
        }
        if at <= old.started {
            return Err(ApiError::BadRequest(format!(
                "Queue entry endedAt ({}) must be after startedAt ({})",
                wire_datetime(&at).as_str().unwrap_or_default(),
                wire_datetime(&old.started).as_str().unwrap_or_default()
            )));
        }
        let now = Utc::now();
        let mut ended = old.clone();
        ended.ended = Some(at.clone());
        ended.audit.changed(&user, now);
        let carried = |field: &str, before: &Option<String>| -> ApiResult<Option<String>> {
            if body.contains_key(field) {
                opt_ref(&body, field)
            } else {
                Ok(before.clone())
            }
        };
        let next = QueueEntryRecord {
            v: 1,
            uuid: crate::store::record::new_uuid(),
            queue: new_queue.unwrap_or_else(|| old.queue.clone()),
            patient: old.patient.clone(),
            visit: old.visit.clone(),
            status: new_status.unwrap_or_else(|| old.status.clone()),
            priority: new_priority.unwrap_or_else(|| old.priority.clone()),
            priority_comment: if body.contains_key("newPriorityComment") {
                opt_str(&body, "newPriorityComment")?
            } else {
                old.priority_comment.clone()
            },
            sort_weight: old.sort_weight,
            started: at,
            ended: None,
            location_waiting_for: carried("newLocationWaitingFor", &old.location_waiting_for)?,
            provider_waiting_for: carried("newProviderWaitingFor", &old.provider_waiting_for)?,
            queue_coming_from: Some(old.queue.clone()),
            audit: Audit::new(&user, now),
            voiding: Voiding::default(),
        };
        save(&st, None, &next, &[(&old, &ended)])?;
        Ok(next)
    })
    .await?;
    answer(
        &state,
        &caller,
        &QueueEntryRes(&next),
        &Rep::Ref,
        StatusCode::OK,
    )
}

/// `DELETE queue-entry/transition` with `{"queueEntry": uuid}`: undoes the transition that
/// opened the entry (voids it, reopens the one it ended) — privilege: Manage Queue Entries.
/// Answers 200 with the reopened entry's ref representation.
pub async fn undo_transition(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Entries"])?;
    let uuid = opt_ref(&body, "queueEntry")?
        .ok_or_else(|| ApiError::BadRequest("Invalid queue entry".into()))?;
    let user = caller.user_uuid();
    let st = state.clone();
    let reopened = blocking(move || {
        let _one_writer = st.store.write_lock();
        let e = store::get(&st.store, &uuid)?
            .ok_or_else(|| ApiError::BadRequest("Invalid queue entry".into()))?;
        if e.voiding.voided {
            return Err(ApiError::BadRequest(
                "Cannot undo transition on a voided queue entry".into(),
            ));
        }
        if e.ended.is_some() {
            return Err(ApiError::BadRequest(
                "Cannot undo transition on an ended queue entry".into(),
            ));
        }
        let previous = previous_of(&st.store, &e)?.ok_or_else(|| {
            ApiError::BadRequest(
                "Specified queue entry does not have a previous queue entry".into(),
            )
        })?;
        let now = Utc::now();
        let mut voided = e.clone();
        voided.voiding.void(&user, now, "Transition undone");
        let mut reopened = previous.clone();
        reopened.ended = None;
        reopened.audit.changed(&user, now);
        save(&st, Some(&previous), &reopened, &[(&e, &voided)])?;
        Ok(reopened)
    })
    .await?;
    answer(
        &state,
        &caller,
        &QueueEntryRes(&reopened),
        &Rep::Ref,
        StatusCode::OK,
    )
}

/// `GET queue-entry-number?location=…&queue=…&visit=…&visitAttributeType=…`: the visit's
/// number in the queue, as the queue module numbers it: the first three letters of the
/// queue's name, upper case, and one more than the entries of that queue at that location
/// with a visit started today (`TRI-004`). The number is kept on the visit as an attribute
/// of the named type (replacing one it had), which the queue screens show. Without a
/// `visitAttributeType` naming a visit attribute type of the content, nothing is numbered
/// and both values are empty, as the module answers. Privileges: Get Queue Entries, and
/// Edit Visits to number.
pub async fn number(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Queue Entries"])?;
    let catalog = state.catalog.load();
    let Some(attribute_type) = param(&query, "visitAttributeType")
        .and_then(|t| crate::domains::visit::attribute::find_type(&catalog, t))
        .map(|t| t.uuid.clone())
    else {
        return Ok(ok(json!({"serviceType": "", "visitQueueNumber": ""})));
    };
    caller.require(&["Edit Visits"])?;
    let insufficient = || {
        ApiError::BadRequest(
            "Sufficient parameters not supplied for generation of VisitQueueNumber".into(),
        )
    };
    let location = param(&query, "location")
        .and_then(|l| catalog.location(l))
        .map(|l| l.uuid.clone())
        .ok_or_else(insufficient)?;
    let queue = param(&query, "queue")
        .map(|q| queue_param(&state, q))
        .transpose()?
        .ok_or_else(insufficient)?;
    let visit = param(&query, "visit").ok_or_else(insufficient)?.to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    let (service_type, number) = blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = crate::domains::visit::store::get(&st.store, &visit)?
            .filter(|v| !v.voiding.voided)
            .ok_or_else(insufficient)?;
        let today = crate::wire::today();
        let (from, to) = (
            datetime_key(today.and_hms_opt(0, 0, 0).expect("midnight").and_utc()),
            datetime_key(
                today
                    .and_hms_milli_opt(23, 59, 59, 999)
                    .expect("a time of day")
                    .and_utc(),
            ),
        );
        let already = store::read(&st.store, Source::StartedBetween(&from, &to), false)?
            .iter()
            // The module's criteria: the queue, at the location (the queue's own).
            .filter(|e| e.queue == queue.uuid && queue.location == location && e.visit.is_some())
            .count();
        let prefix: String = queue.name.to_uppercase().chars().take(3).collect();
        let number = format!("{prefix}-{:03}", already + 1);
        let mut v = old.clone();
        let now = Utc::now();
        crate::domains::visit::attribute::replace(
            &mut v,
            &st.catalog.load(),
            &attribute_type,
            &number,
            &user,
            now,
        )?;
        v.audit.changed(&user, now);
        crate::domains::visit::store::put(&st.store, Some(&old), &v)?;
        Ok((queue.name.clone(), number))
    })
    .await?;
    Ok(ok(
        json!({"serviceType": service_type, "visitQueueNumber": number}),
    ))
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::{get, post};
    crate::domains::queue::queues::routes(paths)
        .route(
            &paths.rest("/queue-entry"),
            get(crate::domains::queue::rest::search).post(crate::domains::queue::rest::create),
        )
        .route(
            &paths.rest("/queue-entry/transition"),
            post(crate::domains::queue::rest::transition)
                .delete(crate::domains::queue::rest::undo_transition),
        )
        .route(
            &paths.rest("/queue-entry/{uuid}"),
            get(crate::domains::queue::rest::read)
                .post(crate::domains::queue::rest::update)
                .delete(crate::domains::queue::rest::delete),
        )
        .route(
            &paths.rest("/visit-queue-entry"),
            get(crate::domains::queue::rest::visit_entries)
                .post(crate::domains::queue::rest::create_for_visit),
        )
        .route(
            &paths.rest("/queue/{queue}/entry/{uuid}"),
            post(crate::domains::queue::rest::update_in_queue),
        )
        .route(
            &paths.rest("/queue-entry-number"),
            get(crate::domains::queue::rest::number),
        )
        .route(
            &paths.rest("/queue-entry-metrics"),
            get(crate::domains::queue::metrics::metrics),
        )
        .route(
            &paths.rest("/queue-metrics"),
            get(crate::domains::queue::metrics::queue_metrics),
        )
        .route(
            &paths.rest("/queueutil/assignticket"),
            post(crate::domains::queue::metrics::assign_ticket),
        )
        .route(
            &paths.rest("/queueutil/active-tickets"),
            get(crate::domains::queue::metrics::active_tickets),
        )
}
