//! `queue-room` over REST: the rooms of a queue, made, changed, retired and purged by an
//! administrator.

use crate::content::metadata::QueueRes;
use crate::domains::queue_room::QueueRoomRecord;
use crate::domains::queue_room::store::*;
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, list_answer, nest, rep_of};
use crate::http::body::{client_uuid, only_known, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct QueueRoomRes(pub QueueRoomRecord);

impl Resource for QueueRoomRes {
    fn alias(&self) -> &'static str {
        "queue-room"
    }
    fn version(&self) -> &'static str {
        "2.3.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retiring.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("queue", Rep::Ref),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("queue", Rep::Default),
            ("retired", Rep::Default),
            ("retireReason", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let r = &self.0;
        Some(match name {
            "name" => json!(r.name),
            "description" => json!(r.description),
            "queue" => {
                let queue = crate::domains::queue::find_queue(ctx.store, ctx.catalog, &r.queue)
                    .ok()
                    .flatten();
                nest(queue.as_ref().map(QueueRes), rep, ctx)
            }
            "retired" => json!(r.retiring.voided),
            "retireReason" => json!(r.retiring.void_reason),
            "auditInfo" => audit_info(&r.audit, ctx),
            _ => return None,
        })
    }
}

const FIELDS: &[&str] = &[
    "uuid",
    "name",
    "description",
    "queue",
    "retired",
    "retireReason",
];

/// `GET queue-room[?queue=…][&location=…][&q=…][&includeAll=true]`: the rooms in service
/// (retired ones too with `includeAll`), by name.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Queue Rooms"])?;
    let paging = Paging::from_query(&query)?;
    let include_all = flag(&query, "includeAll").unwrap_or(false);
    let queue = param(&query, "queue")
        .filter(|q| !q.is_empty())
        .map(str::to_string);
    let location = param(&query, "location")
        .filter(|l| !l.is_empty())
        .map(str::to_string);
    let q = param(&query, "q").map(str::to_lowercase);
    let st = state.clone();
    let (rooms, queues) = blocking(move || {
        Ok((
            all(&st.store)?,
            crate::domains::queue::all_queues(&st.store, &st.catalog.load())?,
        ))
    })
    .await?;
    let rooms: Vec<QueueRoomRecord> = rooms
        .into_iter()
        .filter(|r| include_all || !r.retiring.voided)
        .filter(|r| queue.as_ref().is_none_or(|q| &r.queue == q))
        .filter(|r| {
            location
                .as_ref()
                .is_none_or(|l| queues.iter().any(|q| q.uuid == r.queue && &q.location == l))
        })
        .filter(|r| {
            q.as_deref()
                .is_none_or(|q| r.name.to_lowercase().contains(q))
        })
        .collect();
    let items = rooms.into_iter().map(QueueRoomRes).collect();
    list_answer(&state, &caller, &query, "/queue-room", &paging, items)
}

/// `GET queue-room/{uuid}`.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Queue Rooms"])?;
    let st = state.clone();
    let room = blocking(move || Ok(get(&st.store, &uuid)?))
        .await?
        .ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &QueueRoomRes(room),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// Applies a body's fields to a room and checks it against the content and the other rooms.
fn apply(
    state: &AppState,
    body: &Map<String, Value>,
    room: &mut QueueRoomRecord,
    others: &[QueueRoomRecord],
) -> ApiResult<()> {
    let mut invalid = Invalid::default();
    if let Some(name) = opt_str(body, "name")? {
        room.name = name.trim().to_string();
    }
    if body.contains_key("description") {
        room.description = opt_str(body, "description")?
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty());
    }
    if let Some(queue) = opt_ref(body, "queue")? {
        room.queue = queue;
    }
    if room.name.is_empty() {
        invalid.field("name", "error.null", "A queue room has a name");
    } else if room.name.chars().count() > NAME_MAX {
        invalid.field(
            "name",
            "error.exceededMaxLengthOfField",
            "At most 255 characters",
        );
    }
    if room
        .description
        .as_ref()
        .is_some_and(|d| d.chars().count() > NAME_MAX)
    {
        invalid.field(
            "description",
            "error.exceededMaxLengthOfField",
            "At most 255 characters",
        );
    }
    let catalog = state.catalog.load();
    if room.queue.is_empty() {
        invalid.field("queue", "error.null", "A queue room belongs to a queue");
    } else if crate::domains::queue::find_queue(&state.store, &catalog, &room.queue)?
        .is_none_or(|q| q.retired)
    {
        invalid.field(
            "queue",
            "error.invalid",
            &format!("No queue in service is '{}'", room.queue),
        );
    }
    // Among the rooms in service (a retired room keeps its name without blocking one).
    if !room.retiring.voided
        && others.iter().any(|o| {
            o.uuid != room.uuid
                && !o.retiring.voided
                && o.queue == room.queue
                && o.name.to_lowercase() == room.name.to_lowercase()
        })
    {
        invalid.field(
            "name",
            "error.duplicate",
            "The queue has a room of this name already",
        );
    }
    if invalid.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid(invalid))
    }
}

/// `POST queue-room`: a new room of a queue.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Rooms"])?;
    only_known(&body, FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let room = blocking(move || {
        let mut room = QueueRoomRecord {
            v: 1,
            uuid: client_uuid(&body)?,
            name: String::new(),
            description: None,
            queue: String::new(),
            audit: Audit::new(&user, chrono::Utc::now()),
            retiring: Voiding::default(),
        };
        let _one_writer = st.store.write_lock();
        let others = all(&st.store)?;
        if others.iter().any(|o| o.uuid == room.uuid) {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "A queue room has this uuid already",
            ));
        }
        apply(&st, &body, &mut room, &others)?;
        put(&st.store, &room)?;
        Ok(room)
    })
    .await?;
    answer(
        &state,
        &caller,
        &QueueRoomRes(room),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// `POST queue-room/{uuid}`: its name, description or queue; `retired: false` puts a
/// retired room back in service.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queue Rooms"])?;
    only_known(&body, FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let room = blocking(move || {
        let _one_writer = st.store.write_lock();
        let others = all(&st.store)?;
        let mut room = others
            .iter()
            .find(|r| r.uuid == uuid)
            .cloned()
            .ok_or(ApiError::NotFound)?;
        let before = room.clone();
        let now = chrono::Utc::now();
        // Retired or put back first, so that a room put back in service is checked as one.
        crate::http::body::apply_retired(&body, &mut room.retiring, &user, now)?;
        apply(&st, &body, &mut room, &others)?;
        if room != before {
            room.audit.changed(&user, now);
            put(&st.store, &room)?;
        }
        Ok(room)
    })
    .await?;
    answer(
        &state,
        &caller,
        &QueueRoomRes(room),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE queue-room/{uuid}[?reason=…]` retires the room; `?purge=true` removes it.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    if flag(&query, "purge").unwrap_or(false) {
        caller.require(&["Purge Queue Rooms"])?;
        let st = state.clone();
        blocking(move || {
            let _one_writer = st.store.write_lock();
            get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
            Ok(purge(&st.store, &uuid)?)
        })
        .await?;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    caller.require(&["Manage Queue Rooms"])?;
    crate::http::answer::void_answer(
        state,
        &caller,
        uuid,
        &query,
        get,
        |r| &mut r.retiring,
        |s, _, new| put(s, new),
    )
    .await
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/queue-room"),
            get(crate::domains::queue_room::rest::search)
                .post(crate::domains::queue_room::rest::create),
        )
        .route(
            &paths.rest("/queue-room/{uuid}"),
            get(crate::domains::queue_room::rest::read)
                .post(crate::domains::queue_room::rest::update)
                .delete(crate::domains::queue_room::rest::delete),
        )
}
