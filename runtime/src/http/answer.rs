//! What the domains' REST modules share to answer: `auditInfo`, the nesting of content
//! objects, and paged answers built from an index page (request bodies are read with
//! `body`).

use crate::http::AppState;
use crate::http::Caller;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Rep, Resource, nested, render};
use crate::store::record::{Audit, Page, Window};
use crate::wire::wire_datetime;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

/// A user as a ref: its display is the username, as OpenMRS shows it (`auditInfo.creator`
/// names who wrote a record: the O3 sticky note shows it). Users are cached, so this is cheap.
pub fn user_ref(uuid: &str, ctx: &Ctx) -> Value {
    let display = username(uuid, ctx);
    json!({"uuid": uuid, "display": display, "links": [{"rel": "self", "uri": format!("{}/user/{uuid}", ctx.base), "resourceAlias": "user"}]})
}

/// A user's username, from the cache of users.
pub fn username(uuid: &str, ctx: &Ctx) -> Option<String> {
    ctx.store
        .user_shared(uuid)
        .ok()
        .flatten()
        .map(|u| u.username.clone())
}

pub fn audit_info(audit: &Audit, ctx: &Ctx) -> Value {
    json!({
        "creator": user_ref(&audit.creator, ctx),
        "dateCreated": wire_datetime(&audit.date_created),
        "changedBy": audit.changed_by.as_deref().map(|u| user_ref(u, ctx)),
        "dateChanged": audit.date_changed.as_deref().map(wire_datetime),
    })
}

/// Nests an optional resource built from the catalog.
pub fn nest<R: Resource>(r: Option<R>, rep: &Rep, ctx: &Ctx) -> Value {
    nested(r.as_ref().map(|r| r as &dyn Resource), rep, ctx)
}

pub fn window(paging: &Paging) -> Window {
    Window {
        start: paging.start,
        limit: paging.limit,
        count_all: paging.total_count,
    }
}

/// The representation a request asks for (`default` when absent).
pub fn rep_of(query: &[(String, String)]) -> ApiResult<Rep> {
    Ok(Rep::parse(crate::http::param(query, "v"))?.unwrap_or(Rep::Default))
}

/// One resource in `rep`, answered with `status`.
pub fn answer(
    state: &AppState,
    caller: &Caller,
    r: &dyn Resource,
    rep: &Rep,
    status: StatusCode,
) -> ApiResult<Response> {
    let catalog = state.catalog.load();
    Ok(crate::http::json(
        status,
        render(r, rep, &caller.ctx(state, &catalog))?,
    ))
}

/// One page read from an index, each item in the request's representation, with the
/// paging links and `totalCount`.
pub fn page_answer<R: Resource>(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
    paging: &Paging,
    page: &Page,
    items: impl IntoIterator<Item = R>,
) -> ApiResult<Response> {
    let body = page_body(state, caller, query, path, paging, page, items)?;
    Ok(crate::http::ok_bytes(body.into()))
}

/// The body `page_answer` answers.
pub fn page_body<R: Resource>(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
    paging: &Paging,
    page: &Page,
    items: impl IntoIterator<Item = R>,
) -> ApiResult<Vec<u8>> {
    let rep = rep_of(query)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(state, &catalog);
    let request = caller.request_url(state, path, query);
    // Written straight to bytes: a page of encounters nests a hundred observations.
    paging.answer_to(
        |out| {
            for (i, r) in items.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                crate::http::repr::render_to(&r, &rep, &ctx, out)?;
            }
            Ok(())
        },
        page.more,
        page.total,
        &request,
    )
}

/// A page of results already rendered as JSON (items whose shape is not one resource's:
/// a pair of patients, a visit queue entry), with the paging links and `totalCount`.
pub fn values_answer(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
    paging: &Paging,
    results: &[impl serde::Serialize],
    total: usize,
) -> ApiResult<Response> {
    let request = caller.request_url(state, path, query);
    let body = paging.answer_to(
        |out| {
            for (i, r) in results.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                crate::http::repr::write_json(out, r);
            }
            Ok(())
        },
        paging.start.saturating_add(paging.limit) < total,
        paging.total_count.then_some(total),
        &request,
    )?;
    Ok(crate::http::ok_bytes(body.into()))
}

/// One page of a list already in memory and in order (the content's metadata, a
/// facility's handful of rooms, derived inpatient records), as `page_answer` writes it.
pub fn list_answer<R: Resource>(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
    paging: &Paging,
    items: Vec<R>,
) -> ApiResult<Response> {
    let total = items.len();
    let page = Page {
        uuids: Vec::new(),
        more: paging.start.saturating_add(paging.limit) < total,
        total: paging.total_count.then_some(total),
    };
    let shown = items.into_iter().skip(paging.start).take(paging.limit);
    page_answer(state, caller, query, path, paging, &page, shown)
}

/// A boolean query parameter (`true`/`false`, any case).
pub fn flag(query: &[(String, String)], name: &str) -> Option<bool> {
    crate::http::param(query, name).map(|v| v.eq_ignore_ascii_case("true"))
}

/// `DELETE {resource}/{uuid}[?reason=]`: voids a record (once; voiding again changes
/// nothing) under the clinical write lock, and answers 204. `get` reads it, `voiding`
/// reaches its voiding, `put` writes the voided record given the old one.
pub async fn void_answer<T: Clone + Send + 'static>(
    state: std::sync::Arc<AppState>,
    caller: &Caller,
    uuid: String,
    query: &[(String, String)],
    get: fn(&crate::store::Store, &str) -> crate::store::StoreResult<Option<T>>,
    voiding: fn(&mut T) -> &mut crate::store::record::Voiding,
    put: fn(&crate::store::Store, &T, &T) -> crate::store::StoreResult<()>,
) -> ApiResult<Response> {
    let user = caller.user_uuid();
    let reason = crate::http::param(query, "reason")
        .unwrap_or("web service call")
        .to_string();
    crate::http::blocking(move || {
        let _one_writer = state.store.write_lock();
        let old = get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let mut record = old.clone();
        let v = voiding(&mut record);
        if v.voided {
            return Ok(());
        }
        v.void(&user, chrono::Utc::now(), &reason);
        put(&state.store, &old, &record).map_err(ApiError::from)
    })
    .await?;
    Ok(axum::response::IntoResponse::into_response(
        StatusCode::NO_CONTENT,
    ))
}
