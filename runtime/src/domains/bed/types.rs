//! Bed types and bed tags: the vocabulary an administrator gives the wards' beds, as the bed
//! management module's `bedtype` and `bedTag` resources.

use crate::domains::bed::rest::{NAME_MAX, bad, removal_reason, text};
use crate::domains::bed::store::*;
use crate::domains::bed::*;
use crate::http::AppState;
use crate::http::answer::{answer, list_answer, rep_of};
use crate::http::body::{client_uuid, only_known, opt_bool};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// Bed types

pub struct BedTypeRes<'a>(pub &'a BedTypeRecord);

impl Resource for BedTypeRes<'_> {
    fn alias(&self) -> &'static str {
        "bedtype"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.display_name.clone()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("name", Rep::Default),
            ("displayName", Rep::Default),
            ("description", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("name", Rep::Default),
            ("displayName", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let t = self.0;
        Some(match name {
            "name" => json!(t.name),
            "displayName" => json!(t.display_name),
            "description" => json!(t.description),
            "retired" => json!(t.retired),
            _ => return None,
        })
    }
}

/// `GET bedtype[?name=]` — privilege: Get Bed Type.
pub async fn bed_types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Bed Type"])?;
    let name = param(&query, "name");
    let types: Vec<BedTypeRecord> = crate::domains::bed::store::bed_types(&state.store)?
        .into_iter()
        .filter(|t| name.is_none_or(|n| t.name == n))
        .collect();
    let paging = Paging::from_query(&query)?;
    list_answer(
        &state,
        &caller,
        &query,
        "/bedtype",
        &paging,
        types.iter().map(BedTypeRes).collect(),
    )
}

pub(crate) fn find_type(store: &crate::store::Store, uuid: &str) -> ApiResult<BedTypeRecord> {
    crate::domains::bed::store::bed_types(store)?
        .into_iter()
        .find(|t| t.uuid == uuid)
        .ok_or(ApiError::NotFound)
}

/// `GET bedtype/{uuid}` — privilege: Get Bed Type.
pub async fn bed_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Bed Type"])?;
    let t = find_type(&state.store, &uuid)?;
    answer(
        &state,
        &caller,
        &BedTypeRes(&t),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

pub(crate) fn apply_type(t: &mut BedTypeRecord, body: &Map<String, Value>) -> ApiResult<()> {
    if let Some(n) = text(body, "name", NAME_MAX)? {
        t.name = n;
    }
    if let Some(d) = text(body, "displayName", NAME_MAX)? {
        t.display_name = d;
    }
    if body.contains_key("description") {
        t.description = text(body, "description", NAME_MAX)?;
    }
    Ok(())
}

/// `POST bedtype` `{name, displayName, description}` — privilege: Edit Bed Type.
pub async fn create_bed_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Bed Type"])?;
    only_known(&body, &["uuid", "name", "displayName", "description"])?;
    let mut t = BedTypeRecord {
        v: 1,
        uuid: client_uuid(&body)?,
        name: String::new(),
        display_name: String::new(),
        description: None,
        retired: false,
        retire_reason: None,
        audit: Audit::new(&caller.user_uuid(), Utc::now()),
    };
    apply_type(&mut t, &body)?;
    if t.name.is_empty() || t.display_name.is_empty() {
        return Err(bad("Required properties: name, displayName"));
    }
    let st = state.clone();
    let t = blocking(move || {
        let _one_writer = st.store.write_lock();
        if crate::domains::bed::store::bed_types(&st.store)?
            .iter()
            .any(|x| x.uuid == t.uuid)
        {
            return Err(bad(format!(
                "A bed type with uuid {} already exists",
                t.uuid
            )));
        }
        put_type(&st.store, &t)?;
        Ok(t)
    })
    .await?;
    answer(
        &state,
        &caller,
        &BedTypeRes(&t),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// `POST bedtype/{uuid}` — privilege: Edit Bed Type.
pub async fn update_bed_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Bed Type"])?;
    only_known(
        &body,
        &[
            "uuid",
            "name",
            "displayName",
            "description",
            "retired",
            "retiredReason",
        ],
    )?;
    // The module retires a bed type through an update, its flag sent as the text "true".
    let retired = opt_bool(&body, "retired", "")?;
    let reason = text(&body, "retiredReason", NAME_MAX)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let t = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut t = find_type(&st.store, &uuid).map_err(|_| bad("Bed Type not exist"))?;
        apply_type(&mut t, &body)?;
        if let Some(retired) = retired {
            t.retired = retired;
            t.retire_reason = if retired { reason } else { None };
        }
        t.audit.changed(&user, Utc::now());
        put_type(&st.store, &t)?;
        Ok(t)
    })
    .await?;
    answer(
        &state,
        &caller,
        &BedTypeRes(&t),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE bedtype/{uuid}[?reason=]`: removes it (the module keeps no retired bed types),
/// unless a bed is of that type — privilege: Edit Bed Type.
pub async fn delete_bed_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Edit Bed Type"])?;
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let t = find_type(&st.store, &uuid)?;
        let used = beds_in_use(&st.store)?
            .iter()
            .filter(|b| b.bed_type == t.uuid)
            .count();
        if used > 0 {
            return Err(bad(format!(
                "The bed type {} is the type of {used} bed(s): change or remove them first",
                t.name
            )));
        }
        delete_type(&st.store, &uuid)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---------------------------------------------------------------------------------------
// Bed tags

pub struct BedTagRes<'a>(pub &'a BedTagRecord);

impl Resource for BedTagRes<'_> {
    fn alias(&self) -> &'static str {
        "bedTag"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn default_props(&self) -> Props {
        &[
            ("id", Rep::Default),
            ("name", Rep::Default),
            ("uuid", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "id" => json!(self.0.id),
            "name" => json!(self.0.name),
            _ => return None,
        })
    }
}

/// `GET bedTag[?name=]` — privilege: Get Bed Tags.
pub async fn bed_tags(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Bed Tags"])?;
    let name = param(&query, "name");
    let tags: Vec<BedTagRecord> = tags_in_use(&state.store)?
        .into_iter()
        .filter(|t| name.is_none_or(|n| t.name == n))
        .collect();
    let paging = Paging::from_query(&query)?;
    list_answer(
        &state,
        &caller,
        &query,
        "/bedTag",
        &paging,
        tags.iter().map(BedTagRes).collect(),
    )
}

/// `GET bedTag/{uuid}` — privilege: Get Bed Tags.
pub async fn bed_tag(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Bed Tags"])?;
    let t = tags_in_use(&state.store)?
        .into_iter()
        .find(|t| t.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &BedTagRes(&t),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// A tag's name: present, and no other tag in use has it (the module's `BedTagValidator`).
pub(crate) fn tag_name(
    store: &crate::store::Store,
    body: &Map<String, Value>,
    tag: &str,
) -> ApiResult<String> {
    let name = text(body, "name", NAME_MAX)?.ok_or_else(|| {
        ApiError::invalid_field("name", "error.name", "Required properties: name")
    })?;
    if tags_in_use(store)?
        .iter()
        .any(|t| t.uuid != tag && t.name.eq_ignore_ascii_case(&name))
    {
        return Err(ApiError::invalid_field(
            "name",
            "general.error.nameAlreadyInUse",
            &format!("The bed tag name '{name}' is already in use"),
        ));
    }
    Ok(name)
}

/// `POST bedTag` `{name}` — privilege: Edit Bed Tags.
pub async fn create_bed_tag(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Bed Tags"])?;
    only_known(&body, &["uuid", "name"])?;
    let user = caller.user_uuid();
    let st = state.clone();
    let t = blocking(move || {
        let _one_writer = st.store.write_lock();
        let uuid = client_uuid(&body)?;
        if crate::domains::bed::store::bed_tags(&st.store)?
            .iter()
            .any(|t| t.uuid == uuid)
        {
            return Err(bad(format!("A bed tag with uuid {uuid} already exists")));
        }
        let mut t = BedTagRecord {
            v: 1,
            name: tag_name(&st.store, &body, &uuid)?,
            uuid,
            id: 0,
            audit: Audit::new(&user, Utc::now()),
            voiding: Voiding::default(),
        };
        put_tag(&st.store, &mut t)?;
        Ok(t)
    })
    .await?;
    answer(
        &state,
        &caller,
        &BedTagRes(&t),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// `POST bedTag/{uuid}` `{name}` — privilege: Edit Bed Tags.
pub async fn update_bed_tag(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Bed Tags"])?;
    only_known(&body, &["uuid", "name", "id"])?;
    let user = caller.user_uuid();
    let st = state.clone();
    let t = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut t = tags_in_use(&st.store)?
            .into_iter()
            .find(|t| t.uuid == uuid)
            .ok_or_else(|| bad("Bed Tag not exist"))?;
        t.name = tag_name(&st.store, &body, &t.uuid)?;
        t.audit.changed(&user, Utc::now());
        put_tag(&st.store, &mut t)?;
        Ok(t)
    })
    .await?;
    answer(
        &state,
        &caller,
        &BedTagRes(&t),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE bedTag/{uuid}[?reason=]`: voids it (purging is refused, as by the module) —
/// privilege: Edit Bed Tags.
pub async fn delete_bed_tag(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Edit Bed Tags"])?;
    let reason = removal_reason(&query, "bed tag")?;
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut t = tags_in_use(&st.store)?
            .into_iter()
            .find(|t| t.uuid == uuid)
            .ok_or(ApiError::NotFound)?;
        t.voiding.void(&user, Utc::now(), &reason);
        put_tag(&st.store, &mut t)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---------------------------------------------------------------------------------------
// Beds
