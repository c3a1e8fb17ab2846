//! Readers of request bodies: the allow-list of properties, optional strings, references
//! written as a uuid or as an object with one, datetimes, a client-chosen uuid.

use crate::http::error::{ApiError, ApiResult};
use serde_json::{Map, Value};

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

/// The `uuid` a client chose for a new record, or a new one: letters, digits and hyphens,
/// at most 38 (OpenMRS's column), since the uuid becomes part of index keys (`…|uuid`).
pub fn client_uuid(body: &Map<String, Value>) -> ApiResult<String> {
    match opt_str(body, "uuid")? {
        None => Ok(crate::store::record::new_uuid()),
        Some(u)
            if !u.is_empty()
                && u.len() <= 38
                && u.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') =>
        {
            Ok(u)
        }
        Some(_) => Err(ApiError::invalid_field(
            "uuid",
            "error.invalid",
            "A uuid is letters, digits and hyphens, at most 38",
        )),
    }
}

/// A datetime field in any form `crate::wire::parse_datetime` reads, in key form.
pub fn opt_datetime(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match opt_str(body, field)? {
        None => Ok(None),
        Some(s) => crate::wire::parse_datetime(&s)
            .map(|t| Some(crate::wire::datetime_key(t)))
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
