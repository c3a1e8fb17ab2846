//! What the clinical domains' REST modules share: request-body readers, `auditInfo`, the
//! nesting of content objects, and paged answers built from an index page.

use super::{Audit, Page, Window, wire_datetime};
use crate::error::{ApiError, ApiResult};
use crate::repr::{Ctx, Paging, Rep, RequestUrl, Resource, nested};
use serde_json::{Map, Value, json};

/// A reference in a request body: a uuid string, or an object with a `uuid`.
pub fn ref_uuid(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Object(o) => o.get("uuid").and_then(ref_uuid),
        _ => None,
    }
}

/// A field that must be a reference when present; `Ok(None)` when absent or null.
pub fn opt_ref(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => ref_uuid(v).map(Some).ok_or_else(|| {
            ApiError::BadRequest(format!("{field} must be a uuid or an object with a uuid"))
        }),
    }
}

pub fn opt_str(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::BadRequest(format!("{field} must be a string"))),
    }
}

/// A datetime field in any form `domains::parse_datetime` reads, in key form.
pub fn opt_datetime(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match opt_str(body, field)? {
        None => Ok(None),
        Some(s) => super::parse_datetime(&s)
            .map(|t| Some(super::datetime_key(t)))
            .ok_or_else(|| ApiError::BadRequest(format!("{field}: '{s}' is not a date and time"))),
    }
}

/// Refuses properties a resource does not accept, as OpenMRS does. The read-only
/// properties of a representation (`display`, `links`, `resourceVersion`) are let through:
/// the O3 form engine sends back the objects it read.
pub fn only_known(body: &Map<String, Value>, resource: &str, known: &[&str]) -> ApiResult<()> {
    const READ_ONLY: &[&str] = &["display", "links", "resourceVersion"];
    match body
        .keys()
        .find(|k| !known.contains(&k.as_str()) && !READ_ONLY.contains(&k.as_str()))
    {
        Some(k) => Err(ApiError::BadRequest(format!(
            "Some properties are not allowed to be set: {k} (on {resource})"
        ))),
        None => Ok(()),
    }
}

pub fn user_ref(uuid: &str, ctx: &Ctx) -> Value {
    json!({"uuid": uuid, "display": null, "links": [{"rel": "self", "uri": format!("{}/user/{uuid}", ctx.base), "resourceAlias": "user"}]})
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

/// `{results, links?, totalCount?}` from one page read from an index.
pub fn page_json(values: Vec<Value>, page: &Page, paging: &Paging, request: &RequestUrl) -> Value {
    let mut out = Map::new();
    out.insert("results".into(), Value::Array(values));
    let mut links = Vec::new();
    if page.more {
        links.push(
            json!({"rel": "next", "uri": request.with_start(Some(paging.start + paging.limit))}),
        );
    }
    if paging.start > 0 {
        let prev = paging.start.saturating_sub(paging.limit);
        links.push(json!({"rel": "prev", "uri": request.with_start((prev > 0).then_some(prev))}));
    }
    if !links.is_empty() {
        out.insert("links".into(), Value::Array(links));
    }
    if let Some(total) = page.total {
        out.insert("totalCount".into(), Value::from(total));
    }
    Value::Object(out)
}

/// A boolean query parameter (`true`/`false`, any case).
pub fn flag(query: &[(String, String)], name: &str) -> Option<bool> {
    crate::api::param(query, name).map(|v| v.eq_ignore_ascii_case("true"))
}
