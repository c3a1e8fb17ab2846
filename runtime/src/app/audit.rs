//! `GET audit`: the audit trail (`store::audit`) over REST, newest first, filtered by
//! `patient`, `record`, `user` (a user's uuid, or `system`), `type` (the store table:
//! `patients`, `visits`, `obs`, `users`…), `since` and `until` (datetimes, or dates: `until`
//! a date takes that whole day); paged as every list. Privilege: View Audit Log. OpenMRS
//! keeps its audit in the database, without a REST resource of its own; the shape here is
//! this distribution's, documented in docs/api.md.

use crate::http::AppState;
use crate::http::answer::{page_answer, user_ref, window};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource};
use crate::http::{Caller, QueryPairs, param};
use crate::store::audit::{AuditEntry, AuditQuery, SYSTEM};
use crate::wire::{datetime_key, parse_datetime, wire_datetime};
use axum::extract::State;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

/// The privilege that lets an administrator read the trail.
pub const VIEW_AUDIT_LOG: &str = "View Audit Log";

pub struct AuditRes(pub AuditEntry);

impl Resource for AuditRes {
    fn alias(&self) -> &'static str {
        "audit"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        format!(
            "{} {} {}",
            self.0.table,
            self.0.record,
            self.0.action.as_str()
        )
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("dateCreated", Rep::Default),
            ("user", Rep::Ref),
            ("clientAddress", Rep::Default),
            ("recordType", Rep::Default),
            ("record", Rep::Default),
            ("patients", Rep::Default),
            ("action", Rep::Default),
            ("changes", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let e = &self.0;
        Some(match name {
            "dateCreated" => wire_datetime(&e.at),
            "user" => e.user.as_deref().map_or(Value::Null, |u| user_ref(u, ctx)),
            "clientAddress" => json!(e.address),
            "recordType" => json!(e.table),
            "record" => json!(e.record),
            "patients" => json!(e.patients),
            "action" => json!(e.action.as_str()),
            "changes" => json!(
                e.changes
                    .iter()
                    .map(|c| json!({"field": c.field, "before": c.before, "after": c.after}))
                    .collect::<Vec<_>>()
            ),
            _ => return None,
        })
    }
}

/// A `since`/`until` bound in key form; a date alone is the start (or, for `until`, the
/// end) of that day.
fn bound(query: &[(String, String)], name: &str, end_of_day: bool) -> ApiResult<Option<String>> {
    let Some(text) = param(query, name) else {
        return Ok(None);
    };
    let bad = || ApiError::BadRequest(format!("{name}: not a date or datetime: {text}"));
    if !text.contains('T') && !text.contains(' ') {
        let day = crate::wire::parse_date(text).ok_or_else(bad)?;
        let time = if end_of_day {
            day.and_hms_milli_opt(23, 59, 59, 999)
        } else {
            day.and_hms_opt(0, 0, 0)
        }
        .ok_or_else(bad)?;
        return Ok(Some(datetime_key(time.and_utc())));
    }
    Ok(Some(datetime_key(parse_datetime(text).ok_or_else(bad)?)))
}

/// `GET audit`.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_AUDIT_LOG])?;
    let q = AuditQuery {
        patient: param(&query, "patient").map(str::to_string),
        record: param(&query, "record").map(str::to_string),
        user: param(&query, "user").map(|u| {
            if u.eq_ignore_ascii_case(SYSTEM) {
                SYSTEM.to_string()
            } else {
                u.to_string()
            }
        }),
        table: param(&query, "type").map(str::to_string),
        since: bound(&query, "since", false)?,
        until: bound(&query, "until", true)?,
    };
    let paging = Paging::from_query(&query)?;
    let st = state.clone();
    let w = window(&paging);
    let (entries, page) =
        crate::http::blocking(move || Ok(crate::store::audit::list(&st.store, &q, w)?)).await?;
    page_answer(
        &state,
        &caller,
        &query,
        "/audit",
        &paging,
        &page,
        entries.into_iter().map(AuditRes),
    )
}
