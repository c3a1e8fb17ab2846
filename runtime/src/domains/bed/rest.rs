//! The bed management module's REST resources, in its wire shapes: `bedtype`, `bedTag`,
//! `bedTagMap`, `bed`, `admissionLocation` (a ward with its beds and who is in them, as the
//! O3 ward app draws it) and `beds` (a patient's bed; putting her in one, taking her out).
//!
//! Privileges, as the module's: Get/Edit Bed Type, Get/Edit Bed Tags, Get/Edit Beds, Get
//! Admission Locations (or Get Beds) for wards, and Assign Beds with Edit Admission
//! Locations to move patients.

use crate::domains::bed::store::*;
use crate::domains::bed::types::{BedTagRes, BedTypeRes};
use crate::domains::bed::*;
use crate::http::AppState;
use crate::http::answer::{answer, list_answer, nest, rep_of};
use crate::http::body::{client_uuid, only_known, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The module's `bed.bed_number` column.
pub(crate) const BED_NUMBER_MAX: usize = 50;
pub(crate) const NAME_MAX: usize = 255;

pub(crate) fn bad(message: impl Into<String>) -> ApiError {
    ApiError::BadRequest(message.into())
}

/// Why a record is removed (`reason`), refusing `purge` as the module does: beds and tags
/// are kept with who removed them, when and why.
pub(crate) fn removal_reason(query: &[(String, String)], resource: &str) -> ApiResult<String> {
    if crate::http::answer::flag(query, "purge").unwrap_or(false) {
        return Err(bad(format!("purge not allowed on {resource} resource")));
    }
    Ok(param(query, "reason")
        .unwrap_or("web service call")
        .to_string())
}

pub(crate) fn text(
    body: &Map<String, Value>,
    field: &str,
    max: usize,
) -> ApiResult<Option<String>> {
    match opt_str(body, field)?.map(|s| s.trim().to_string()) {
        Some(s) if s.chars().count() > max => Err(ApiError::invalid_field(
            field,
            "error.exceededMaxLengthOfField",
            &format!("{field} is longer than {max} characters"),
        )),
        Some(s) if s.is_empty() => Ok(None),
        other => Ok(other),
    }
}

/// What a bed's representation needs besides the bed: its type and the tags in use.
pub(crate) struct Lookups {
    types: Vec<BedTypeRecord>,
    tags: Vec<BedTagRecord>,
}

impl Lookups {
    pub(crate) fn read(store: &crate::store::Store) -> ApiResult<Lookups> {
        Ok(Lookups {
            types: crate::domains::bed::store::bed_types(store)?,
            tags: crate::domains::bed::store::bed_tags(store)?,
        })
    }

    pub(crate) fn bed_type(&self, uuid: &str) -> Option<&BedTypeRecord> {
        self.types.iter().find(|t| t.uuid == uuid)
    }

    pub(crate) fn tag(&self, uuid: &str) -> Option<&BedTagRecord> {
        self.tags.iter().find(|t| t.uuid == uuid)
    }
}

pub struct BedRes<'a> {
    bed: &'a BedRecord,
    lookups: &'a Lookups,
}

impl Resource for BedRes<'_> {
    fn alias(&self) -> &'static str {
        "bed"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.bed.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.bed.bed_number.clone()
    }
    fn default_props(&self) -> Props {
        &[
            ("id", Rep::Default),
            ("uuid", Rep::Default),
            ("bedNumber", Rep::Default),
            ("bedType", Rep::Default),
            ("row", Rep::Default),
            ("column", Rep::Default),
            ("status", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let b = self.bed;
        Some(match name {
            "id" => json!(b.id),
            "bedNumber" => json!(b.bed_number),
            "bedType" => nest(self.lookups.bed_type(&b.bed_type).map(BedTypeRes), rep, ctx),
            "row" => json!(b.row),
            "column" => json!(b.column),
            "status" => json!(b.status),
            _ => return None,
        })
    }
}

/// `GET bed[?locationUuid=][&bedType=<name>][&status=]` — privilege: Get Beds.
pub async fn list_beds(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Beds"])?;
    let lookups = Lookups::read(&state.store)?;
    let catalog = state.catalog.load();
    let location = param(&query, "locationUuid")
        .map(|l| {
            catalog
                .location(l)
                .map(|l| l.uuid.clone())
                .ok_or_else(|| bad(format!("Unknown location: {l}")))
        })
        .transpose()?;
    let bed_type = param(&query, "bedType")
        .map(|n| {
            lookups
                .types
                .iter()
                .find(|t| t.name == n)
                .map(|t| t.uuid.clone())
                .ok_or_else(|| bad("Invalid bed type name"))
        })
        .transpose()?;
    let status = param(&query, "status").map(|s| {
        if s.eq_ignore_ascii_case(AVAILABLE) {
            AVAILABLE
        } else {
            OCCUPIED
        }
    });
    let beds: Vec<BedRecord> = beds_in_use(&state.store)?
        .into_iter()
        .filter(|b| location.as_ref().is_none_or(|l| &b.location == l))
        .filter(|b| bed_type.as_ref().is_none_or(|t| &b.bed_type == t))
        .filter(|b| status.is_none_or(|s| b.status == s))
        .collect();
    let paging = Paging::from_query(&query)?;
    list_answer(
        &state,
        &caller,
        &query,
        "/bed",
        &paging,
        beds.iter()
            .map(|bed| BedRes {
                bed,
                lookups: &lookups,
            })
            .collect(),
    )
}

/// `GET bed/{uuid}` (not a removed one) — privilege: Get Beds.
pub async fn read_bed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Beds"])?;
    let lookups = Lookups::read(&state.store)?;
    let bed = beds_in_use(&state.store)?
        .into_iter()
        .find(|b| b.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    let res = BedRes {
        bed: &bed,
        lookups: &lookups,
    };
    answer(&state, &caller, &res, &rep_of(&query)?, StatusCode::OK)
}

const BED_FIELDS: &[&str] = &[
    "uuid",
    "bedNumber",
    "bedType",
    "row",
    "column",
    "status",
    "locationUuid",
];

fn position(body: &Map<String, Value>, field: &str) -> ApiResult<Option<u32>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .filter(|n| (1..=1000).contains(n))
            .map(|n| Some(n as u32))
            .ok_or_else(|| {
                ApiError::invalid_field(
                    field,
                    "error.invalid",
                    &format!("{field} must be a whole number from 1 to 1000"),
                )
            }),
    }
}

/// Applies a bed body: what it names must exist, and its place (location, row, column)
/// must be free of any other bed in use.
fn apply_bed(
    state: &AppState,
    b: &mut BedRecord,
    body: &Map<String, Value>,
    others: &[BedRecord],
    types: &[BedTypeRecord],
) -> ApiResult<()> {
    if let Some(n) = text(body, "bedNumber", BED_NUMBER_MAX)? {
        b.bed_number = n;
    }
    if let Some(name) = text(body, "bedType", NAME_MAX)? {
        b.bed_type = types
            .iter()
            .find(|t| t.name == name || t.uuid == name)
            .map(|t| t.uuid.clone())
            .ok_or_else(|| bad("Invalid bed type name"))?;
    }
    if let Some(s) = text(body, "status", 20)? {
        let s = s.to_ascii_uppercase();
        if s != AVAILABLE && s != OCCUPIED {
            return Err(ApiError::invalid_field(
                "status",
                "error.invalid",
                "status must be AVAILABLE or OCCUPIED",
            ));
        }
        b.status = s;
    }
    if let Some(l) = text(body, "locationUuid", NAME_MAX)? {
        b.location = state
            .catalog
            .load()
            .location(&l)
            .map(|l| l.uuid.clone())
            .ok_or_else(|| bad(format!("Unknown location: {l}")))?;
    }
    if let Some(r) = position(body, "row")? {
        b.row = r;
    }
    if let Some(c) = position(body, "column")? {
        b.column = c;
    }
    if b.bed_number.is_empty() || b.bed_type.is_empty() {
        return Err(bad(
            "Required parameters: bedNumber, bedType, row, column, locationUuid",
        ));
    }
    if b.row == 0 || b.column == 0 || b.location.is_empty() {
        return Err(bad(
            "Required parameters: bedNumber, bedType, row, column, locationUuid",
        ));
    }
    if others.iter().any(|o| {
        o.uuid != b.uuid
            && !o.voiding.voided
            && o.location == b.location
            && o.row == b.row
            && o.column == b.column
    }) {
        return Err(bad("A bed is already assigned to the given row & column"));
    }
    Ok(())
}

fn bed_answer(
    state: &AppState,
    caller: &Caller,
    bed: &BedRecord,
    query: &[(String, String)],
    status: StatusCode,
) -> ApiResult<Response> {
    let lookups = Lookups::read(&state.store)?;
    let res = BedRes {
        bed,
        lookups: &lookups,
    };
    let rep = match rep_of(query)? {
        Rep::Default => Rep::Full,
        other => other,
    };
    answer(state, caller, &res, &rep, status)
}

/// `POST bed` `{bedNumber, bedType (a name), row, column, status, locationUuid}` —
/// privilege: Edit Beds.
pub async fn create_bed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Beds"])?;
    only_known(&body, BED_FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let bed = blocking(move || {
        let _one_writer = st.store.write_lock();
        let all = crate::domains::bed::store::beds(&st.store)?;
        let uuid = client_uuid(&body)?;
        if all.iter().any(|b| b.uuid == uuid) {
            return Err(bad(format!("A bed with uuid {uuid} already exists")));
        }
        let mut bed = BedRecord {
            v: 1,
            uuid,
            id: 0,
            bed_number: String::new(),
            bed_type: String::new(),
            location: String::new(),
            row: 0,
            column: 0,
            status: AVAILABLE.into(),
            tags: Vec::new(),
            occupants: Vec::new(),
            audit: Audit::new(&user, Utc::now()),
            voiding: Voiding::default(),
        };
        apply_bed(
            &st,
            &mut bed,
            &body,
            &all,
            &crate::domains::bed::store::bed_types(&st.store)?,
        )?;
        put_bed(&st.store, &mut bed)?;
        Ok(bed)
    })
    .await?;
    bed_answer(&state, &caller, &bed, &query, StatusCode::CREATED)
}

/// `POST bed/{uuid}` (any of the creation's fields) — privilege: Edit Beds.
pub async fn update_bed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Beds"])?;
    only_known(&body, BED_FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let bed = blocking(move || {
        let _one_writer = st.store.write_lock();
        let all = crate::domains::bed::store::beds(&st.store)?;
        let mut bed = all
            .iter()
            .find(|b| b.uuid == uuid && !b.voiding.voided)
            .cloned()
            .ok_or_else(|| bad("Bed not exist"))?;
        apply_bed(
            &st,
            &mut bed,
            &body,
            &all,
            &crate::domains::bed::store::bed_types(&st.store)?,
        )?;
        bed.audit.changed(&user, Utc::now());
        put_bed(&st.store, &mut bed)?;
        Ok(bed)
    })
    .await?;
    bed_answer(&state, &caller, &bed, &query, StatusCode::OK)
}

/// `DELETE bed/{uuid}[?reason=]`: removes (voids) a bed nobody is in; purging is refused,
/// as by the module — privilege: Edit Beds.
pub async fn delete_bed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Edit Beds"])?;
    let reason = removal_reason(&query, "bed")?;
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut bed = beds_in_use(&st.store)?
            .into_iter()
            .find(|b| b.uuid == uuid)
            .ok_or(ApiError::NotFound)?;
        if bed.status == OCCUPIED || !bed.occupants.is_empty() {
            return Err(bad(format!(
                "Cannot perform action on an occupied bed: {} ({})",
                bed.bed_number, bed.uuid
            )));
        }
        bed.voiding.void(&user, Utc::now(), &reason);
        put_bed(&st.store, &mut bed)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---------------------------------------------------------------------------------------
// Tags on beds

pub struct TagMapRes<'a> {
    pub(crate) map: &'a TagMap,
    pub(crate) tag: Option<&'a BedTagRecord>,
}

impl Resource for TagMapRes<'_> {
    fn alias(&self) -> &'static str {
        "bedTagMap"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.map.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.tag.map(|t| t.name.clone()).unwrap_or_default()
    }
    fn default_props(&self) -> Props {
        &[("uuid", Rep::Default), ("bedTag", Rep::Default)]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "bedTag" => nest(self.tag.map(BedTagRes), rep, ctx),
            _ => return None,
        })
    }
}

/// `POST bedTagMap` `{bed, bedTag}` — privileges: Edit Bed Tags, Get Bed Tags, Get Beds.
pub async fn create_tag_map(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Bed Tags", "Get Bed Tags", "Get Beds"])?;
    only_known(&body, &["uuid", "bed", "bedTag"])?;
    let bed_uuid = crate::http::body::opt_ref(&body, "bed")?
        .ok_or_else(|| ApiError::invalid_field("bed", "error.null", "bed is required"))?;
    let tag_uuid = crate::http::body::opt_ref(&body, "bedTag")?
        .ok_or_else(|| ApiError::invalid_field("bedTag", "error.null", "bedTag is required"))?;
    let user = caller.user_uuid();
    let uuid = client_uuid(&body)?;
    let st = state.clone();
    let (map, tag) = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut bed = beds_in_use(&st.store)?
            .into_iter()
            .find(|b| b.uuid == bed_uuid)
            .ok_or_else(|| bad(format!("Bed {bed_uuid} does not exist")))?;
        let tag = tags_in_use(&st.store)?
            .into_iter()
            .find(|t| t.uuid == tag_uuid)
            .ok_or_else(|| bad(format!("Bed tag {tag_uuid} does not exist")))?;
        if bed
            .tags
            .iter()
            .any(|m| !m.voiding.voided && m.tag == tag.uuid)
        {
            return Err(bad("Tag Already Present For Bed"));
        }
        let map = TagMap {
            uuid,
            tag: tag.uuid.clone(),
            audit: Audit::new(&user, Utc::now()),
            voiding: Voiding::default(),
        };
        bed.tags.push(map.clone());
        put_bed(&st.store, &mut bed)?;
        Ok((map, tag))
    })
    .await?;
    let res = TagMapRes {
        map: &map,
        tag: Some(&tag),
    };
    answer(&state, &caller, &res, &rep_of(&query)?, StatusCode::CREATED)
}

/// `DELETE bedTagMap/{uuid}`: takes the tag off its bed (voided) — privileges: Edit Bed
/// Tags, Get Bed Tags, Get Beds.
pub async fn delete_tag_map(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Edit Bed Tags", "Get Bed Tags", "Get Beds"])?;
    let reason = removal_reason(&query, "bed tag map")?;
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut bed = beds_in_use(&st.store)?
            .into_iter()
            .find(|b| b.tags.iter().any(|m| m.uuid == uuid && !m.voiding.voided))
            .ok_or(ApiError::NotFound)?;
        let now = Utc::now();
        for m in bed.tags.iter_mut().filter(|m| m.uuid == uuid) {
            m.voiding.void(&user, now, &reason);
        }
        put_bed(&st.store, &mut bed)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::{delete, get, post};
    axum::Router::new()
        .route(
            &paths.rest("/beds"),
            get(crate::domains::bed::ward::patient_bed),
        )
        .route(
            &paths.rest("/beds/{id}"),
            post(crate::domains::bed::ward::assign).delete(crate::domains::bed::ward::unassign),
        )
        .route(
            &paths.rest("/bed"),
            get(crate::domains::bed::rest::list_beds).post(crate::domains::bed::rest::create_bed),
        )
        .route(
            &paths.rest("/bed/{uuid}"),
            get(crate::domains::bed::rest::read_bed)
                .post(crate::domains::bed::rest::update_bed)
                .delete(crate::domains::bed::rest::delete_bed),
        )
        .route(
            &paths.rest("/bedtype"),
            get(crate::domains::bed::types::bed_types)
                .post(crate::domains::bed::types::create_bed_type),
        )
        .route(
            &paths.rest("/bedtype/{uuid}"),
            get(crate::domains::bed::types::bed_type)
                .post(crate::domains::bed::types::update_bed_type)
                .delete(crate::domains::bed::types::delete_bed_type),
        )
        .route(
            &paths.rest("/bedTag"),
            get(crate::domains::bed::types::bed_tags)
                .post(crate::domains::bed::types::create_bed_tag),
        )
        .route(
            &paths.rest("/bedTag/{uuid}"),
            get(crate::domains::bed::types::bed_tag)
                .post(crate::domains::bed::types::update_bed_tag)
                .delete(crate::domains::bed::types::delete_bed_tag),
        )
        .route(
            &paths.rest("/bedTagMap"),
            post(crate::domains::bed::rest::create_tag_map),
        )
        .route(
            &paths.rest("/bedTagMap/{uuid}"),
            delete(crate::domains::bed::rest::delete_tag_map),
        )
        .route(
            &paths.rest("/admissionLocation"),
            get(crate::domains::bed::ward::admission_locations),
        )
        .route(
            &paths.rest("/admissionLocation/{uuid}"),
            get(crate::domains::bed::ward::admission_location),
        )
}
