//! `alert` over REST, as webservices.rest's `alert` resource answers it: list (in force,
//! or with `includeExpired=true` every one), read, create, update, purge. Recipients are
//! given as user uuids or `{"recipient": <user>}` objects.

use crate::domains::alert::{
    AlertRecord, GET_ALERTS, MANAGE_ALERTS, TEXT_MAX_LENGTH, recipient, store,
};
use crate::http::AppState;
use crate::http::answer::{answer, flag, rep_of, user_ref, username};
use crate::http::body::{client_uuid, only_known, opt_bool, opt_datetime, opt_str, ref_uuid};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::wire::{datetime_key, wire_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct AlertRes(pub AlertRecord);

fn recipients_json(a: &AlertRecord, ctx: &Ctx, rep: &Rep) -> Value {
    let base = format!("{}/alert/{}/recipient", ctx.base, a.uuid);
    Value::Array(
        a.recipients
            .iter()
            .map(|r| {
                let mut v = json!({
                    "uuid": r.uuid,
                    "display": username(&r.user, ctx).unwrap_or_default(),
                    "links": [{"rel": "self", "uri": format!("{base}/{}", r.uuid), "resourceAlias": "recipient"}],
                });
                if !matches!(rep, Rep::Ref) {
                    v["recipient"] = user_ref(&r.user, ctx);
                    v["alertRead"] = json!(r.alert_read);
                    v["dateChanged"] = a
                        .audit
                        .date_changed
                        .as_deref()
                        .map_or(Value::Null, wire_datetime);
                }
                v
            })
            .collect(),
    )
}

impl Resource for AlertRes {
    fn alias(&self) -> &'static str {
        "alert"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _ctx: &Ctx) -> String {
        self.0.text.clone()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("alertId", Rep::Default),
            ("text", Rep::Default),
            ("satisfiedByAny", Rep::Default),
            ("dateToExpire", Rep::Default),
            ("alertRead", Rep::Default),
            ("recipients", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("alertId", Rep::Default),
            ("text", Rep::Default),
            ("satisfiedByAny", Rep::Default),
            ("alertRead", Rep::Default),
            ("dateToExpire", Rep::Default),
            ("creator", Rep::Default),
            ("dateCreated", Rep::Default),
            ("changedBy", Rep::Default),
            ("dateChanged", Rep::Default),
            ("recipients", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let a = &self.0;
        Some(match name {
            "alertId" => json!(a.alert_id),
            "text" => json!(a.text),
            "satisfiedByAny" => json!(a.satisfied_by_any),
            "alertRead" => json!(a.alert_read),
            "dateToExpire" => a
                .date_to_expire
                .as_deref()
                .map_or(Value::Null, wire_datetime),
            "creator" => user_ref(&a.audit.creator, ctx),
            "dateCreated" => json!(wire_datetime(&a.audit.date_created)),
            "changedBy" => a
                .audit
                .changed_by
                .as_deref()
                .map_or(Value::Null, |u| user_ref(u, ctx)),
            "dateChanged" => a
                .audit
                .date_changed
                .as_deref()
                .map_or(Value::Null, wire_datetime),
            "recipients" => recipients_json(a, ctx, rep),
            _ => return None,
        })
    }
}

/// Whether the caller may read this alert: with Get Alerts, any; else hers.
fn readable(caller: &Caller, a: &AlertRecord) -> bool {
    caller.grants.has(GET_ALERTS) || a.addressed_to(&caller.user_uuid())
}

/// `GET alert[?includeExpired=true]`.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let include_expired = flag(&query, "includeExpired").unwrap_or(false);
    let now = datetime_key(chrono::Utc::now());
    let st = state.clone();
    let all = blocking(move || Ok(store::list(&st.store, &now, include_expired)?)).await?;
    let items: Vec<AlertRes> = all
        .into_iter()
        .filter(|a| readable(&caller, a))
        .map(AlertRes)
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/alert",
        items.iter().map(|r| r as &dyn Resource),
    )
}

/// `GET alert/{uuid}`: an alert addressed to someone else is not found without Get
/// Alerts, as core's id lookup answers.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let a = store::get(&state.store, &uuid)?
        .filter(|a| readable(&caller, a))
        .ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    Ok(crate::http::ok(render(
        &AlertRes(a),
        &rep_of(&query)?,
        &ctx,
    )?))
}

const FIELDS: &[&str] = &[
    "uuid",
    "text",
    "recipients",
    "satisfiedByAny",
    "dateToExpire",
];

/// The recipients a body names, as user uuids: each must be an account of this system.
fn recipients_of(state: &AppState, v: &Value, inv: &mut Invalid) -> ApiResult<Vec<String>> {
    let Value::Array(list) = v else {
        return Err(ApiError::BadRequest(
            "recipients must be a list of users".into(),
        ));
    };
    let mut users = Vec::new();
    for (i, r) in list.iter().enumerate() {
        let user = match r {
            Value::Object(o) if o.contains_key("recipient") => {
                o.get("recipient").and_then(ref_uuid)
            }
            other => ref_uuid(other),
        };
        let Some(user) = user else {
            return Err(ApiError::BadRequest(format!(
                "recipients[{i}] must name a user by uuid"
            )));
        };
        if state.store.user(&user)?.is_none() {
            inv.field(
                &format!("recipients[{i}]"),
                "error.invalid",
                &format!("No user is '{user}'"),
            );
        } else if !users.contains(&user) {
            users.push(user);
        }
    }
    Ok(users)
}

/// Applies a create or update body to `a`, checking it as core's `AlertValidator` does.
fn apply(state: &AppState, a: &mut AlertRecord, body: &Map<String, Value>) -> ApiResult<()> {
    let mut inv = Invalid::default();
    if let Some(t) = opt_str(body, "text")? {
        a.text = t.trim().to_string();
    }
    if let Some(s) = opt_bool(body, "satisfiedByAny", "")? {
        a.satisfied_by_any = s;
    }
    if body.contains_key("dateToExpire") {
        a.date_to_expire = opt_datetime(body, "dateToExpire")?;
        // Index keys sort by their text: a year past 9999 (written `+10000-…`) would sort
        // before today's and the alert would read as expired.
        if a.date_to_expire
            .as_deref()
            .is_some_and(|d| !d.starts_with(|c: char| c.is_ascii_digit()))
        {
            inv.field(
                "dateToExpire",
                "error.invalid",
                "An alert expires before the year 10000",
            );
        }
    }
    if let Some(v) = body.get("recipients") {
        let users = recipients_of(state, v, &mut inv)?;
        // Recipients kept keep their entry (and whether they read it); new ones get one.
        let mut kept: Vec<_> = a
            .recipients
            .iter()
            .filter(|r| users.contains(&r.user))
            .cloned()
            .collect();
        for u in &users {
            if !kept.iter().any(|r| &r.user == u) {
                kept.push(recipient(u));
            }
        }
        a.recipients = kept;
    }
    if a.text.is_empty() {
        inv.field("text", "error.null", "An alert has a text");
    } else if a.text.chars().count() > TEXT_MAX_LENGTH {
        inv.field(
            "text",
            "error.exceededMaxLengthOfField",
            &format!("An alert's text is at most {TEXT_MAX_LENGTH} characters"),
        );
    }
    if a.recipients.is_empty() && inv.is_empty() {
        return Err(ApiError::BadRequest(
            "At least one recipient is required".into(),
        ));
    }
    if inv.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid(inv))
    }
}

/// `POST alert`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MANAGE_ALERTS])?;
    only_known(&body, FIELDS)?;
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let uuid = client_uuid(&body)?;
    let st = state.clone();
    let alert = blocking(move || {
        let mut a = AlertRecord::new("", &[], None, &user, chrono::Utc::now());
        a.uuid = uuid;
        apply(&st, &mut a, &body)?;
        let _one_writer = st.store.write_lock();
        if store::get(&st.store, &a.uuid)?.is_some() {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "An alert has this uuid already",
            ));
        }
        st.store.write(|txn| store::put_in(txn, &mut a, None))?;
        Ok(a)
    })
    .await?;
    answer(&state, &caller, &AlertRes(alert), &rep, StatusCode::CREATED)
}

/// `POST alert/{uuid}`: its text, recipients, expiry and `satisfiedByAny`.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MANAGE_ALERTS])?;
    only_known(&body, FIELDS)?;
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let alert = blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let mut a = old.clone();
        apply(&st, &mut a, &body)?;
        a.audit.changed(&user, chrono::Utc::now());
        st.store
            .write(|txn| store::put_in(txn, &mut a, Some(&old)))?;
        Ok(a)
    })
    .await?;
    answer(&state, &caller, &AlertRes(alert), &rep, StatusCode::OK)
}

/// `DELETE alert/{uuid}?purge=true` removes it (Manage Alerts); alerts are not voided,
/// so a delete without `purge` is refused, as the resource refuses it.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MANAGE_ALERTS])?;
    if param(&query, "purge") != Some("true") {
        return Err(ApiError::BadRequest(
            "An alert is not voided: delete it with purge=true".into(),
        ));
    }
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let a = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        store::purge(&st.store, &a)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// This domain's routes, with their full paths.
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(&paths.rest("/alert"), get(search).post(create))
        .route(
            &paths.rest("/alert/{uuid}"),
            get(read).post(update).delete(delete),
        )
}
