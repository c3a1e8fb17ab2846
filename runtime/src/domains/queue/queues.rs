//! `queue` over REST: the content's queues (read-only: a change would be lost at the next
//! image) and those an administrator adds from the service-queues admin page, which live
//! in the store. The queue module's rules (`QueueValidator`): a name, a location, and a
//! service among the members of the set `queue.serviceConceptSetName` names; the status and
//! priority sets, when given, are concepts. Deleting retires (with who, when and why);
//! `?purge=true` removes a queue no entry or room names. Privileges: Get Locations to read,
//! as before, Manage Queues to change, Purge Queues to purge.

use crate::content::metadata::QueueRes;
use crate::domains::queue::store::{api_queue, purge_api_queue, put_api_queue};
use crate::domains::queue::{QueueDefinition, all_queues, find_queue};
use crate::http::answer::{answer, flag, rep_of};
use crate::http::body::{client_uuid, only_known, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::{AppState, Caller, JsonBody, QueryPairs, blocking, param, render_list};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The setting naming the set of services a queue may offer.
pub const SERVICE_SET_SETTING: &str = "queue.serviceConceptSetName";

/// The queue module's `queue.name` column.
const NAME_MAX: usize = 255;

const CREATE_FIELDS: &[&str] = &[
    "uuid",
    "name",
    "description",
    "location",
    "service",
    "statusConceptSet",
    "priorityConceptSet",
];

/// An update also retires or restores.
const FIELDS: &[&str] = &[
    "uuid",
    "name",
    "description",
    "location",
    "service",
    "statusConceptSet",
    "priorityConceptSet",
    "retired",
    "retireReason",
];

/// `GET queue[?location=…]`: the queues in service, the content's and the API's.
pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Locations"])?;
    let catalog = state.catalog.load();
    let st = state.clone();
    let location = param(&query, "location").map(str::to_string);
    let queues: Vec<model::Queue> = blocking(move || Ok(all_queues(&st.store, &catalog)?))
        .await?
        .into_iter()
        .filter(|q| !q.retired && location.as_ref().is_none_or(|l| &q.location == l))
        .collect();
    let items: Vec<QueueRes> = queues.iter().map(QueueRes).collect();
    render_list(
        &state,
        &caller,
        &query,
        "/queue",
        items.iter().map(|r| r as &dyn crate::http::repr::Resource),
    )
}

/// `GET queue/{uuid}`.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Locations"])?;
    let catalog = state.catalog.load();
    let st = state.clone();
    let queue = blocking(move || Ok(find_queue(&st.store, &catalog, &uuid)?))
        .await?
        .ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &QueueRes(&queue),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// A queue the content defines is changed in the content package, not here.
fn refuse_content_queue(state: &AppState, uuid: &str) -> ApiResult<()> {
    if state
        .catalog
        .load()
        .content
        .queues
        .iter()
        .any(|q| q.uuid == uuid)
    {
        return Err(ApiError::BadRequest(
            "This queue is defined by the content package (queues/ of openmrs_config): change it there"
                .into(),
        ));
    }
    Ok(())
}

/// Applies a body's fields to a queue and checks it as the queue module does.
fn apply(
    state: &AppState,
    body: &Map<String, Value>,
    q: &mut crate::domains::queue::StoredQueue,
) -> ApiResult<()> {
    if let Some(name) = opt_str(body, "name")? {
        q.name = name.trim().to_string();
    }
    if body.contains_key("description") {
        q.description = opt_str(body, "description")?
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty());
    }
    if let Some(location) = opt_ref(body, "location")? {
        q.location = location;
    }
    if let Some(service) = opt_ref(body, "service")? {
        q.service = service;
    }
    let catalog = state.catalog.load();
    let mut invalid = Invalid::default();
    for (field, set) in [
        ("statusConceptSet", &mut q.status_concept_set),
        ("priorityConceptSet", &mut q.priority_concept_set),
    ] {
        if body.contains_key(field) {
            *set = match opt_ref(body, field)? {
                None => None,
                Some(r) => match catalog.concept(&r) {
                    Some(c) => Some(c.uuid.clone()),
                    None => {
                        invalid.field(field, "error.invalid", &format!("Unknown concept: {r}"));
                        None
                    }
                },
            };
        }
    }
    if q.name.is_empty() {
        invalid.field("name", "queue.name.null", "Queue name can't be null");
    } else if q.name.chars().count() > NAME_MAX {
        invalid.field(
            "name",
            "error.exceededMaxLengthOfField",
            "At most 255 characters",
        );
    }
    if q.location.is_empty() {
        invalid.field("location", "queue.location.null", "Location can't be null");
    } else {
        match catalog.location(&q.location) {
            Some(l) => q.location = l.uuid.clone(),
            None => invalid.field(
                "location",
                "error.invalid",
                &format!("No location of the content is '{}'", q.location),
            ),
        }
    }
    if q.service.is_empty() {
        invalid.field(
            "service",
            "QueueEntry.service.null",
            "The property service should not be null",
        );
    } else {
        let service = catalog.concept(&q.service).map(|c| c.uuid.clone());
        let allowed = crate::content::metadata::queue_set_members(
            &state.store,
            &catalog,
            None,
            SERVICE_SET_SETTING,
        );
        match service.filter(|s| allowed.contains(s)) {
            Some(s) => q.service = s,
            None => invalid.field(
                "service",
                "Queue.service.invalid",
                "The property service should be a member of configured queue service conceptSet.",
            ),
        }
    }
    if invalid.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid(invalid))
    }
}

/// `POST queue`: a new queue, as the service-queues admin page sends it (`name`,
/// `description`, `service: {uuid}`, `location: {uuid}`).
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queues"])?;
    only_known(&body, CREATE_FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let queue = blocking(move || {
        let mut definition = QueueDefinition {
            v: 1,
            queue: crate::domains::queue::StoredQueue {
                uuid: client_uuid(&body)?,
                name: String::new(),
                description: None,
                service: String::new(),
                status_concept_set: None,
                priority_concept_set: None,
                location: String::new(),
                retired: false,
            },
            audit: Audit::new(&user, chrono::Utc::now()),
            retiring: Voiding::default(),
        };
        let _one_writer = st.store.write_lock();
        if find_queue(&st.store, &st.catalog.load(), &definition.queue.uuid)?.is_some() {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "A queue has this uuid already",
            ));
        }
        apply(&st, &body, &mut definition.queue)?;
        put_api_queue(&st.store, &definition)?;
        Ok(definition.queue.model())
    })
    .await?;
    answer(
        &state,
        &caller,
        &QueueRes(&queue),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// `POST queue/{uuid}`: an API-made queue's fields; `retired: false` puts it back in
/// service.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Queues"])?;
    only_known(&body, FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let queue = blocking(move || {
        refuse_content_queue(&st, &uuid)?;
        let _one_writer = st.store.write_lock();
        let mut definition = api_queue(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let before = definition.clone();
        let now = chrono::Utc::now();
        crate::http::body::apply_retired(&body, &mut definition.retiring, &user, now)?;
        definition.queue.retired = definition.retiring.voided;
        apply(&st, &body, &mut definition.queue)?;
        if definition != before {
            definition.audit.changed(&user, now);
            put_api_queue(&st.store, &definition)?;
        }
        Ok(definition.queue.model())
    })
    .await?;
    answer(
        &state,
        &caller,
        &QueueRes(&queue),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE queue/{uuid}[?reason=…]` retires an API-made queue; `?purge=true` removes one
/// that no queue entry names (its entries would lose their queue).
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let purge = flag(&query, "purge").unwrap_or(false);
    caller.require(&[if purge {
        "Purge Queues"
    } else {
        "Manage Queues"
    }])?;
    refuse_content_queue(&state, &uuid)?;
    if purge {
        let st = state.clone();
        blocking(move || {
            let _one_writer = st.store.write_lock();
            api_queue(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
            // A rare administrator's act: the entries' history is read once, whole.
            let named = crate::domains::queue::store::read(
                &st.store,
                crate::domains::queue::store::Source::All,
                true,
            )?
            .iter()
            .any(|e| e.queue == uuid || e.queue_coming_from.as_deref() == Some(uuid.as_str()));
            if named {
                return Err(ApiError::BadRequest(
                    "Queue entries name this queue: retire it instead".into(),
                ));
            }
            for (what, holds) in crate::domains::queue::queue_dependents(&st.store).held {
                if holds(&st.store, &uuid)? {
                    return Err(ApiError::BadRequest(format!(
                        "{what} name this queue: retire it instead"
                    )));
                }
            }
            Ok(purge_api_queue(&st.store, &uuid)?)
        })
        .await?;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    crate::http::answer::void_answer(
        state,
        &caller,
        uuid,
        &query,
        api_queue,
        |d| &mut d.retiring,
        |store, _, new| {
            let mut retired = new.clone();
            retired.queue.retired = retired.retiring.voided;
            put_api_queue(store, &retired)
        },
    )
    .await
}

/// The `queue` routes.
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/queue"),
            get(crate::domains::queue::queues::list).post(crate::domains::queue::queues::create),
        )
        .route(
            &paths.rest("/queue/{uuid}"),
            get(crate::domains::queue::queues::read)
                .post(crate::domains::queue::queues::update)
                .delete(crate::domains::queue::queues::delete),
        )
}
