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

/// A field that must be a reference when present; `Ok(None)` when absent, null or a blank
/// string (as OpenMRS converts `""` to no object: the O3 check-in form sends
/// `cashPoint: ""` when it found none).
pub fn opt_ref(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(v) => ref_uuid(v).map(Some).ok_or_else(|| {
            ApiError::BadRequest(format!("{field} must be a uuid or an object with a uuid"))
        }),
    }
}

/// A field that must be a string when present, as sent (not trimmed); `Ok(None)` when
/// absent or null.
pub fn opt_str(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::BadRequest(format!("{field} must be a string"))),
    }
}

/// A text field (a name part, an address line): trimmed, and blank counts as absent, as
/// OpenMRS's validators treat a blank value as a missing one. `path` prefixes the field in
/// the error (`names[0].`).
pub fn opt_text(body: &Map<String, Value>, field: &str, path: &str) -> ApiResult<Option<String>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
        Some(other) => Err(ApiError::BadRequest(format!(
            "{path}{field}: expected a string, got {other}"
        ))),
    }
}

/// A true/false field (JSON booleans, or the strings `true` and `false`); `Ok(None)` when
/// absent or null.
pub fn opt_bool(body: &Map<String, Value>, field: &str, path: &str) -> ApiResult<Option<bool>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(other) => Err(ApiError::BadRequest(format!(
            "{path}{field}: expected true or false, got {other}"
        ))),
    }
}

/// `voided` in an update body. webservices.rest accepts it on every update of a data
/// resource: `true` voids the record (with `voidReason`, or "web service call" as its
/// DELETE says), `false` restores a voided one. Answers whether the record became voided,
/// so that a caller can void what goes with it.
pub fn apply_voided(
    body: &Map<String, Value>,
    voiding: &mut crate::store::record::Voiding,
    user: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<bool> {
    apply_flag(body, ("voided", "voidReason"), voiding, user, now)
}

/// `retired` (with `retireReason`) in an update body of metadata made through the API, as
/// `voided` is for data: `true` retires it, `false` puts it back in service.
pub fn apply_retired(
    body: &Map<String, Value>,
    retiring: &mut crate::store::record::Voiding,
    user: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<bool> {
    apply_flag(body, ("retired", "retireReason"), retiring, user, now)
}

/// A void or retire flag and its reason field; answers whether the record became voided.
fn apply_flag(
    body: &Map<String, Value>,
    (flag, reason_field): (&str, &str),
    voiding: &mut crate::store::record::Voiding,
    user: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<bool> {
    match opt_bool(body, flag, "")? {
        Some(true) if !voiding.voided => {
            let reason = opt_str(body, reason_field)?;
            voiding.void(user, now, reason.as_deref().unwrap_or("web service call"));
            Ok(true)
        }
        Some(false) if voiding.voided => {
            voiding.unvoid();
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// The `uuid` a client chose for a new record, or a new one: letters, digits and hyphens,
/// at most 38 (OpenMRS's column), since the uuid becomes part of index keys (`…|uuid`).
pub fn client_uuid(body: &Map<String, Value>) -> ApiResult<String> {
    uuid_or_new(opt_str(body, "uuid")?, "uuid")
}

/// A uuid given for a new record or object (`field` names it in the error), or a new one.
pub fn uuid_or_new(given: Option<String>, field: &str) -> ApiResult<String> {
    match given {
        None => Ok(crate::store::record::new_uuid()),
        Some(u)
            if !u.is_empty()
                && u.len() <= 38
                && u.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') =>
        {
            Ok(u)
        }
        Some(_) => Err(ApiError::invalid_field(
            field,
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

/// Refuses properties a resource does not accept, naming all of them, as OpenMRS's
/// webservices.rest does ("Some properties are not allowed to be set: a, b"). The read-only
/// properties of a representation (`display`, `links`, `resourceVersion`) are ignored, as
/// there: the O3 form engine sends back the objects it read.
pub fn only_known(body: &Map<String, Value>, known: &[&str]) -> ApiResult<()> {
    const READ_ONLY: &[&str] = &["display", "links", "resourceVersion"];
    let refused: Vec<&str> = body
        .keys()
        .map(String::as_str)
        .filter(|k| !known.contains(k) && !READ_ONLY.contains(k))
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "Some properties are not allowed to be set: {}",
            refused.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn unknown_properties_are_all_named_and_read_only_ones_ignored() {
        let body = object(json!({"b": 1, "display": "x", "links": [], "a": 2, "ok": 3}));
        match only_known(&body, &["ok"]) {
            Err(ApiError::BadRequest(m)) => {
                assert_eq!(m, "Some properties are not allowed to be set: b, a")
            }
            other => panic!("{other:?}"),
        }
        assert!(only_known(&object(json!({"ok": 1, "resourceVersion": "1.8"})), &["ok"]).is_ok());
    }

    #[test]
    fn text_is_trimmed_and_blank_is_absent_while_strings_are_kept_as_sent() {
        let body = object(json!({"t": "  Hélène ", "blank": "   ", "n": 5}));
        assert_eq!(opt_text(&body, "t", "").unwrap().as_deref(), Some("Hélène"));
        assert_eq!(opt_text(&body, "blank", "").unwrap(), None);
        assert_eq!(opt_str(&body, "t").unwrap().as_deref(), Some("  Hélène "));
        assert!(opt_text(&body, "n", "names[0].").is_err());
    }

    #[test]
    fn references_are_a_uuid_or_an_object_with_one_and_blank_is_none() {
        assert_eq!(ref_uuid(&json!(" abc ")).as_deref(), Some("abc"));
        assert_eq!(
            ref_uuid(&json!({"uuid": "abc", "display": "x"})).as_deref(),
            Some("abc")
        );
        assert_eq!(
            ref_uuid(&json!({"uuid": {"uuid": "abc"}})).as_deref(),
            Some("abc")
        );
        assert_eq!(ref_uuid(&json!("")), None);
        assert_eq!(ref_uuid(&json!(5)), None);
        let body = object(json!({"blank": " ", "five": 5, "one": {"uuid": "u"}}));
        assert_eq!(opt_ref(&body, "blank").unwrap(), None);
        assert_eq!(opt_ref(&body, "one").unwrap().as_deref(), Some("u"));
        assert!(opt_ref(&body, "five").is_err());
    }

    #[test]
    fn a_given_uuid_is_checked_and_a_missing_one_made() {
        assert_eq!(uuid_or_new(Some("a-1".into()), "uuid").unwrap(), "a-1");
        assert!(uuid_or_new(Some("a b".into()), "names[0].uuid").is_err());
        assert!(uuid_or_new(Some("x".repeat(39)), "uuid").is_err());
        assert_eq!(uuid_or_new(None, "uuid").unwrap().len(), 36);
    }
}
