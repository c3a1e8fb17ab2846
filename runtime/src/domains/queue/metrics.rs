//! What the service-queue dashboard counts (`queue-entry-metrics`, `queue-metrics`) and the
//! waiting room's tickets (`queueutil/assignticket`, `active-tickets`).

use crate::domains::queue::QueueEntryRecord;
use crate::domains::queue::rest::{Criteria, all, concept_param};
use crate::http::AppState;
use crate::http::answer_cache;
use crate::http::body::opt_str;
use crate::http::error::{ApiError, ApiResult};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, ok, ok_bytes, param};
use crate::wire::datetime_key;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Whole minutes between start and end, averaged over the entries that have both.
pub(crate) fn average_wait(entries: &[QueueEntryRecord]) -> f64 {
    let waits: Vec<i64> = entries
        .iter()
        .filter_map(|e| {
            let start = crate::wire::parse_key(&e.started)?;
            let end = crate::wire::parse_key(e.ended.as_deref()?)?;
            Some((end - start).num_minutes())
        })
        .collect();
    if waits.is_empty() {
        0.0
    } else {
        waits.iter().sum::<i64>() as f64 / waits.len() as f64
    }
}

/// `GET queue-entry-metrics?…` (the search's criteria; `metric=count` alone counts every
/// match) — privilege: Get Queue Entries. Without `metric`: the open matches' count and the
/// ended ones' average wait in minutes.
pub async fn metrics(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Queue Entries"])?;
    let key = answer_cache::key(
        &caller,
        &state.catalog.load(),
        "queue-entry-metrics",
        &query,
    );
    let body = state
        .answers
        .get_or_render(&state.store, key, || async {
            let st = state.clone();
            let q = query.clone();
            let found = blocking(move || Criteria::parse(&st, &q)?.find(&st)).await?;
            let out = count_metrics(&query, &found)?;
            Ok(serde_json::to_vec(&out).expect("a map serializes").into())
        })
        .await?;
    Ok(ok_bytes(body))
}

/// The metrics a `queue-entry-metrics` call names, over the entries it matched.
pub(crate) fn count_metrics(
    query: &[(String, String)],
    found: &[QueueEntryRecord],
) -> ApiResult<Value> {
    let metrics: Vec<&str> = all(query, "metric").collect();
    let mut out = Map::new();
    if metrics.is_empty() {
        out.insert(
            "count".into(),
            json!(found.iter().filter(|e| e.ended.is_none()).count()),
        );
        out.insert("averageWaitTime".into(), json!(average_wait(found)));
    } else {
        for m in metrics {
            match m {
                "count" => out.insert("count".into(), json!(found.len())),
                "averageWaitTime" => {
                    out.insert("averageWaitTime".into(), json!(average_wait(found)))
                }
                other => {
                    return Err(ApiError::BadRequest(format!("Unknown metric: {other}")));
                }
            };
        }
    }
    Ok(Value::Object(out))
}

/// `GET queue-metrics?queue=…&status=…`: a queue's average wait today — privilege: Get Queue
/// Entries. The O3 app sends a service concept as `queue`; that is accepted too (every
/// queue of the service).
pub async fn queue_metrics(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Queue Entries"])?;
    let key = answer_cache::key(&caller, &state.catalog.load(), "queue-metrics", &query);
    let body = state
        .answers
        .get_or_render(&state.store, key, || async {
            // Read after the answer's stamp: the content and the day it is rendered for.
            let (name, criteria) = queue_metrics_criteria(&state, &query)?;
            let st = state.clone();
            let found = if criteria.queues.is_empty() {
                Vec::new()
            } else {
                blocking(move || criteria.find(&st)).await?
            };
            let out = json!({"queue": name, "averageWaitTime": average_wait(&found)});
            Ok(serde_json::to_vec(&out).expect("a map serializes").into())
        })
        .await?;
    Ok(ok_bytes(body))
}

/// The queue a `queue-metrics` call names (its name when it names one), and the criteria
/// of its entries started and ended today, as the module counts them (the runtime's days
/// are UTC days), read from one range of the start index.
pub(crate) fn queue_metrics_criteria(
    state: &AppState,
    query: &[(String, String)],
) -> ApiResult<(String, Criteria)> {
    let catalog = state.catalog.load();
    let named = param(query, "queue").unwrap_or_default().to_string();
    let all = crate::domains::queue::all_queues(&state.store, &catalog)?;
    let queues: Vec<&model::Queue> = all
        .iter()
        .filter(|q| q.uuid == named || q.service == named)
        .collect();
    let name = match queues.as_slice() {
        [one] => one.name.clone(),
        _ => String::new(),
    };
    let today = crate::wire::today();
    let day = |h, m, s, ms| {
        datetime_key(
            today
                .and_hms_milli_opt(h, m, s, ms)
                .expect("a valid time of day")
                .and_utc(),
        )
    };
    let (start_of_day, end_of_day) = (day(0, 0, 0, 0), day(23, 59, 59, 999));
    let mut criteria = Criteria {
        queues: queues.iter().map(|q| q.uuid.clone()).collect(),
        started_from: Some(start_of_day.clone()),
        started_to: Some(end_of_day.clone()),
        ended_from: Some(start_of_day),
        ended_to: Some(end_of_day),
        ..Criteria::default()
    };
    if let Some(s) = param(query, "status") {
        criteria.statuses = vec![concept_param(state, s)?];
    }
    Ok((name, criteria))
}

/// `POST queueutil/assignticket` `{servicePointName, ticketNumber, status}`: which ticket a
/// service point is serving, for the waiting-room screen — privilege: Manage Queue
/// Entries. Held in memory, as the queue module holds it.
pub async fn assign_ticket(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Entries"])?;
    let point = opt_str(&body, "servicePointName")?.unwrap_or_default();
    let Some(ticket) = body.get("ticketNumber").and_then(|t| {
        t.as_str()
            .map(str::to_string)
            .or_else(|| t.as_i64().map(|n| n.to_string()))
    }) else {
        return Ok((
            StatusCode::OK,
            "No ticketNumber passed, skipping ticket assignment",
        )
            .into_response());
    };
    let status = opt_str(&body, "status")?.unwrap_or_else(|| "calling".into());
    state
        .queue_tickets
        .lock()
        .map_err(ApiError::internal)?
        .insert(point, json!({"status": status, "ticketNumber": ticket}));
    Ok(ok(json!({"status": "success"})))
}

/// `GET queueutil/active-tickets` — privilege: Get Queue Entries.
pub async fn active_tickets(
    State(state): State<Arc<AppState>>,
    caller: Caller,
) -> ApiResult<Response> {
    caller.require(&["Get Queue Entries"])?;
    let tickets = state
        .queue_tickets
        .lock()
        .map_err(ApiError::internal)?
        .clone();
    Ok(ok(json!(tickets)))
}
