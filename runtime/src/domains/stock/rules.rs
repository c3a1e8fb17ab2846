//! An item's stock rules (`stockrule`: warn when the stock at a location falls to a
//! quantity) and its references (`stockitemreference`: what a supplier calls the item), as
//! the module's item pages read and write them. A rule is kept with its thresholds and
//! frequencies and its owner's scope is checked (the item's mutate privilege at the rule's
//! location). `evaluation.rs` evaluates them into alerts.

use crate::domains::stock::operation::may_for;
use crate::domains::stock::rest::{
    bad, concept_name, location_name, opt_qty, party_name, text, user_names, with_ids,
};
use crate::domains::stock::store::*;
use crate::domains::stock::*;
use crate::http::AppState;
use crate::http::answer::{flag, values_answer};
use crate::http::body::{client_uuid, only_known, opt_bool, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::store::record::{Audit, Voiding};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

fn rule_json(ctx: &Ctx, r: &RuleRecord, item: Option<&ItemRecord>, can_edit: bool) -> Value {
    let unit = item.and_then(|i| i.unit(&r.packaging_uom));
    let (given, family) = user_names(ctx, Some(&r.audit.creator));
    json!({
        "uuid": r.uuid,
        "stockItemUuid": r.stock_item,
        "name": r.name,
        "description": r.description,
        "locationUuid": r.location,
        "locationName": location_name(ctx, &r.location),
        "quantity": r.quantity.json(),
        "stockItemPackagingUOMUuid": r.packaging_uom,
        "packagingUomName": unit.map(|u| concept_name(ctx, Some(&u.packaging_uom))),
        "enabled": r.enabled,
        "evaluationFrequency": r.evaluation_frequency,
        "actionFrequency": r.action_frequency,
        "alertRole": r.alert_role,
        "mailRole": r.mail_role,
        "enableDescendants": r.enable_descendants,
        "lastEvaluation": r.last_evaluation.as_deref().map(crate::wire::wire_datetime),
        "nextEvaluation": r.next_evaluation.as_deref().map(crate::wire::wire_datetime),
        "lastActionDate": r.last_action_date.as_deref().map(crate::wire::wire_datetime),
        "nextActionDate": r.next_action_date.as_deref().map(crate::wire::wire_datetime),
        "dateCreated": crate::wire::wire_datetime(&r.audit.date_created),
        "creatorGivenName": given,
        "creatorFamilyName": family,
        "permission": {"canView": true, "canEdit": can_edit},
    })
}

/// `GET stockrule[?stockItemUuid=][&locationUuid=]`.
pub async fn list_rules(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_ITEMS])?;
    let paging = Paging::from_query(&query)?;
    let item = param(&query, "stockItemUuid").map(str::to_string);
    let location = param(&query, "locationUuid").map(str::to_string);
    let include_all = flag(&query, "includeAll").unwrap_or(false);
    let st = state.clone();
    let (all, items, scopes) =
        blocking(move || Ok((rules(&st.store)?, items(&st.store)?, scopes(&st.store)?))).await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let results: Vec<Value> = all
        .iter()
        .filter(|r| include_all || !r.voiding.voided)
        .filter(|r| item.as_ref().is_none_or(|i| &r.stock_item == i))
        .filter(|r| location.as_ref().is_none_or(|l| &r.location == l))
        .map(|r| {
            let can_edit = may_for(&state, &caller, &scopes, &r.location, None, MUTATE_ITEMS);
            rule_json(
                &ctx,
                r,
                items.iter().find(|i| i.uuid == r.stock_item),
                can_edit,
            )
        })
        .collect();
    let total = results.len();
    let page: Vec<Value> = results
        .into_iter()
        .skip(paging.start)
        .take(paging.limit)
        .collect();
    values_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/stockrule",
        &paging,
        &page,
        total,
    )
}

const RULE_FIELDS: &[&str] = &[
    "uuid",
    "stockItemUuid",
    "name",
    "description",
    "locationUuid",
    "quantity",
    "stockItemPackagingUOMUuid",
    "enabled",
    "evaluationFrequency",
    "actionFrequency",
    "alertRole",
    "mailRole",
    "enableDescendants",
];

fn minutes(body: &Map<String, Value>, field: &str) -> ApiResult<Option<u64>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            // The module keeps minutes in an `int`.
            .filter(|n| *n > 0 && *n <= i32::MAX as u64)
            .map(Some)
            .ok_or_else(|| {
                ApiError::invalid_field(
                    field,
                    "error.invalid",
                    &format!(
                        "{field} is a number of minutes above zero, at most {}",
                        i32::MAX
                    ),
                )
            }),
    }
}

fn role_name(
    state: &AppState,
    body: &Map<String, Value>,
    field: &str,
) -> ApiResult<Option<Option<String>>> {
    if !body.contains_key(field) {
        return Ok(None);
    }
    match opt_str(body, field)?
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
    {
        None => Ok(Some(None)),
        Some(r)
            if state.catalog.load().role(&r).is_some()
                || state.access.load().role(&r).is_some() =>
        {
            Ok(Some(Some(r)))
        }
        Some(r) => Err(ApiError::invalid_field(
            field,
            "error.invalid",
            &format!("No role is '{r}'"),
        )),
    }
}

fn apply_rule(
    state: &AppState,
    r: &mut RuleRecord,
    body: &Map<String, Value>,
    item: &ItemRecord,
) -> ApiResult<()> {
    if let Some(n) = text(body, "name", 255)? {
        r.name = n;
    }
    if body.contains_key("description") {
        r.description = text(body, "description", 500)?;
    }
    if let Some(l) = opt_ref(body, "locationUuid")? {
        r.location = state
            .catalog
            .load()
            .location(&l)
            .map(|l| l.uuid.clone())
            .ok_or_else(|| {
                ApiError::invalid_field(
                    "locationUuid",
                    "error.invalid",
                    &format!("No location of the content is '{l}'"),
                )
            })?;
    }
    if let Some(q) = opt_qty(body, "quantity")? {
        r.quantity = q;
    }
    if let Some(u) = opt_ref(body, "stockItemPackagingUOMUuid")? {
        r.packaging_uom = item.unit(&u).map(|u| u.uuid.clone()).ok_or_else(|| {
            ApiError::invalid_field(
                "stockItemPackagingUOMUuid",
                "error.invalid",
                "Not a packaging unit of this stock item",
            )
        })?;
    }
    if let Some(e) = opt_bool(body, "enabled", "")? {
        r.enabled = e;
    }
    if let Some(e) = opt_bool(body, "enableDescendants", "")? {
        r.enable_descendants = e;
    }
    if let Some(m) = minutes(body, "evaluationFrequency")? {
        r.evaluation_frequency = m;
    }
    if let Some(m) = minutes(body, "actionFrequency")? {
        r.action_frequency = m;
    }
    if let Some(role) = role_name(state, body, "alertRole")? {
        r.alert_role = role;
    }
    if let Some(role) = role_name(state, body, "mailRole")? {
        r.mail_role = role;
    }
    for (field, missing) in [
        ("name", r.name.is_empty()),
        ("locationUuid", r.location.is_empty()),
        ("stockItemPackagingUOMUuid", r.packaging_uom.is_empty()),
        ("evaluationFrequency", r.evaluation_frequency == 0),
        ("actionFrequency", r.action_frequency == 0),
    ] {
        if missing {
            return Err(ApiError::invalid_field(
                field,
                "error.null",
                &format!("A stock rule has its {field}"),
            ));
        }
    }
    if r.quantity <= Qty::ZERO {
        return Err(ApiError::invalid_field(
            "quantity",
            "error.invalid",
            "A rule's quantity is above zero",
        ));
    }
    Ok(())
}

async fn save_rule(
    state: Arc<AppState>,
    caller: Caller,
    uuid: Option<String>,
    body: Map<String, Value>,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    only_known(&body, RULE_FIELDS)?;
    let user = caller.user_uuid();
    let created = uuid.is_none();
    let st = state.clone();
    let c = caller.clone();
    let (rule, item) = blocking(move || {
        let _one_writer = st.store.write_lock();
        let all = rules(&st.store)?;
        let scopes = scopes(&st.store)?;
        let now = Utc::now();
        let mut r = match &uuid {
            Some(u) => {
                let r = all
                    .iter()
                    .find(|r| &r.uuid == u && !r.voiding.voided)
                    .cloned()
                    .ok_or(ApiError::NotFound)?;
                if !may_for(&st, &c, &scopes, &r.location, None, MUTATE_ITEMS) {
                    return Err(bad(
                        "You do not have permission to change the rules at this location",
                    ));
                }
                r
            }
            None => {
                let i = opt_ref(&body, "stockItemUuid")?.ok_or_else(|| {
                    ApiError::invalid_field(
                        "stockItemUuid",
                        "error.null",
                        "A stock rule belongs to a stock item",
                    )
                })?;
                RuleRecord {
                    v: 1,
                    uuid: client_uuid(&body)?,
                    stock_item: i,
                    name: String::new(),
                    description: None,
                    location: String::new(),
                    quantity: Qty::ZERO,
                    packaging_uom: String::new(),
                    enabled: true,
                    evaluation_frequency: 0,
                    action_frequency: 0,
                    alert_role: None,
                    mail_role: None,
                    enable_descendants: false,
                    last_evaluation: None,
                    next_evaluation: None,
                    last_action_date: None,
                    next_action_date: None,
                    audit: Audit::new(&user, now),
                    voiding: Voiding::default(),
                }
            }
        };
        let item = item(&st.store, &r.stock_item)?
            .filter(|i| !i.voiding.voided)
            .ok_or_else(|| {
                ApiError::invalid_field(
                    "stockItemUuid",
                    "error.invalid",
                    &format!("No stock item in use is '{}'", r.stock_item),
                )
            })?;
        apply_rule(&st, &mut r, &body, &item)?;
        if !may_for(&st, &c, &scopes, &r.location, None, MUTATE_ITEMS) {
            return Err(bad(
                "You do not have permission to change the rules at this location",
            ));
        }
        if !created {
            r.audit.changed(&user, now);
        }
        st.store.write(|txn| put_in(txn, RULES, &r.uuid, &r))?;
        Ok((r, item))
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(crate::http::json(
        status,
        rule_json(&ctx, &rule, Some(&item), true),
    ))
}

/// `GET stockrule/{uuid}`.
pub async fn read_rule(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&[VIEW_ITEMS])?;
    let st = state.clone();
    let (rule, item, scopes) = blocking(move || {
        let rule = rules(&st.store)?
            .into_iter()
            .find(|r| r.uuid == uuid)
            .ok_or(ApiError::NotFound)?;
        let item = item(&st.store, &rule.stock_item)?;
        Ok((rule, item, scopes(&st.store)?))
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let can_edit = may_for(&state, &caller, &scopes, &rule.location, None, MUTATE_ITEMS);
    Ok(crate::http::ok(rule_json(
        &ctx,
        &rule,
        item.as_ref(),
        can_edit,
    )))
}

pub async fn create_rule(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_rule(state, caller, None, body).await
}

pub async fn update_rule(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_rule(state, caller, Some(uuid), body).await
}

/// `DELETE stockrule/{uuid}[?ids=a,b]` voids the rules.
pub async fn delete_rule(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    let targets = with_ids(uuid, &query);
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    let c = caller.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let all = rules(&st.store)?;
        let scopes = scopes(&st.store)?;
        let now = Utc::now();
        let mut changed = Vec::new();
        for t in &targets {
            let mut r = all
                .iter()
                .find(|r| &r.uuid == t && !r.voiding.voided)
                .cloned()
                .ok_or(ApiError::NotFound)?;
            if !may_for(&st, &c, &scopes, &r.location, None, MUTATE_ITEMS) {
                return Err(bad(
                    "You do not have permission to change the rules at this location",
                ));
            }
            r.voiding.void(&user, now, &reason);
            changed.push(r);
        }
        st.store.write(|txn| {
            for r in &changed {
                put_in(txn, RULES, &r.uuid, r)?;
            }
            Ok(())
        })?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(crate) fn reference_json(ctx: &Ctx, r: &ReferenceRecord, sources: &[SourceRecord]) -> Value {
    json!({
        "uuid": r.uuid,
        "stockItemUuid": r.stock_item,
        "stockSourceUuid": r.stock_source,
        "stockSourceName": party_name(ctx, sources, Some(&r.stock_source)),
        "referenceCode": r.reference_code,
    })
}

/// `GET stockitemreference?stockItemUuid=`.
pub async fn list_references(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_ITEMS])?;
    let paging = Paging::from_query(&query)?;
    let item = param(&query, "stockItemUuid").map(str::to_string);
    let st = state.clone();
    let (all, sources) =
        blocking(move || Ok((references(&st.store)?, sources(&st.store)?))).await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let results: Vec<Value> = all
        .iter()
        .filter(|r| !r.voiding.voided)
        .filter(|r| item.as_ref().is_none_or(|i| &r.stock_item == i))
        .map(|r| reference_json(&ctx, r, &sources))
        .collect();
    let total = results.len();
    let page: Vec<Value> = results
        .into_iter()
        .skip(paging.start)
        .take(paging.limit)
        .collect();
    values_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/stockitemreference",
        &paging,
        &page,
        total,
    )
}

async fn save_reference(
    state: Arc<AppState>,
    caller: Caller,
    uuid: Option<String>,
    body: Map<String, Value>,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    only_known(
        &body,
        &["uuid", "stockItemUuid", "stockSourceUuid", "referenceCode"],
    )?;
    let user = caller.user_uuid();
    let created = uuid.is_none();
    let st = state.clone();
    let (r, sources) = blocking(move || {
        let _one_writer = st.store.write_lock();
        let all = references(&st.store)?;
        let sources = sources(&st.store)?;
        let now = Utc::now();
        let mut r = match &uuid {
            Some(u) => all
                .iter()
                .find(|r| &r.uuid == u && !r.voiding.voided)
                .cloned()
                .ok_or(ApiError::NotFound)?,
            None => {
                let i = opt_ref(&body, "stockItemUuid")?.ok_or_else(|| {
                    ApiError::invalid_field(
                        "stockItemUuid",
                        "error.null",
                        "A reference belongs to a stock item",
                    )
                })?;
                if item(&st.store, &i)?.is_none_or(|x| x.voiding.voided) {
                    return Err(ApiError::invalid_field(
                        "stockItemUuid",
                        "error.invalid",
                        &format!("No stock item in use is '{i}'"),
                    ));
                }
                ReferenceRecord {
                    v: 1,
                    uuid: client_uuid(&body)?,
                    stock_item: i,
                    stock_source: String::new(),
                    reference_code: String::new(),
                    audit: Audit::new(&user, now),
                    voiding: Voiding::default(),
                }
            }
        };
        if let Some(s) = opt_ref(&body, "stockSourceUuid")? {
            if !sources.iter().any(|x| x.uuid == s && !x.retiring.voided) {
                return Err(ApiError::invalid_field(
                    "stockSourceUuid",
                    "error.invalid",
                    &format!("No stock source is '{s}'"),
                ));
            }
            r.stock_source = s;
        }
        if let Some(code) = text(&body, "referenceCode", 50)? {
            r.reference_code = code;
        }
        if r.stock_source.is_empty() || r.reference_code.is_empty() {
            return Err(ApiError::invalid_field(
                "referenceCode",
                "error.null",
                "A reference names its source and its code",
            ));
        }
        if all.iter().any(|o| {
            o.uuid != r.uuid
                && !o.voiding.voided
                && o.stock_item == r.stock_item
                && o.stock_source == r.stock_source
        }) {
            return Err(ApiError::invalid_field(
                "stockSourceUuid",
                "error.duplicate",
                "The item has a reference for this source already",
            ));
        }
        if !created {
            r.audit.changed(&user, now);
        }
        st.store.write(|txn| put_in(txn, REFERENCES, &r.uuid, &r))?;
        Ok((r, sources))
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(crate::http::json(
        status,
        reference_json(&ctx, &r, &sources),
    ))
}

pub async fn create_reference(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_reference(state, caller, None, body).await
}

pub async fn update_reference(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_reference(state, caller, Some(uuid), body).await
}

/// `DELETE stockitemreference/{uuid}` voids the reference.
pub async fn delete_reference(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut r = references(&st.store)?
            .into_iter()
            .find(|r| r.uuid == uuid && !r.voiding.voided)
            .ok_or(ApiError::NotFound)?;
        r.voiding.void(&user, Utc::now(), &reason);
        st.store.write(|txn| put_in(txn, REFERENCES, &r.uuid, &r))?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
