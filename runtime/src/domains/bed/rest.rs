//! The bed management module's REST resources, in its wire shapes: `bedtype`, `bedTag`,
//! `bedTagMap`, `bed`, `admissionLocation` (a ward with its beds and who is in them, as the
//! O3 ward app draws it) and `beds` (a patient's bed; putting her in one, taking her out).
//!
//! Privileges, as the module's: Get/Edit Bed Type, Get/Edit Bed Tags, Get/Edit Beds, Get
//! Admission Locations (or Get Beds) for wards, and Assign Beds with Edit Admission
//! Locations to move patients.

use crate::content::location::LocationRes;
use crate::domains::bed::*;
use crate::domains::patient::rest::PatientRes;
use crate::http::AppState;
use crate::http::answer::{answer, list_answer, nest, rep_of};
use crate::http::body::{client_uuid, only_known, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested_list};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::store::PatientRecord;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use model::Location;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The module's `bed.bed_number` column.
const BED_NUMBER_MAX: usize = 50;
const NAME_MAX: usize = 255;

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::BadRequest(message.into())
}

/// Why a record is removed (`reason`), refusing `purge` as the module does: beds and tags
/// are kept with who removed them, when and why.
fn removal_reason(query: &[(String, String)], resource: &str) -> ApiResult<String> {
    if crate::http::answer::flag(query, "purge").unwrap_or(false) {
        return Err(bad(format!("purge not allowed on {resource} resource")));
    }
    Ok(param(query, "reason")
        .unwrap_or("web service call")
        .to_string())
}

fn text(body: &Map<String, Value>, field: &str, max: usize) -> ApiResult<Option<String>> {
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
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let t = self.0;
        Some(match name {
            "name" => json!(t.name),
            "displayName" => json!(t.display_name),
            "description" => json!(t.description),
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
    let types: Vec<BedTypeRecord> = crate::domains::bed::bed_types(&state.store)?
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

fn find_type(store: &crate::store::Store, uuid: &str) -> ApiResult<BedTypeRecord> {
    crate::domains::bed::bed_types(store)?
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

fn apply_type(t: &mut BedTypeRecord, body: &Map<String, Value>) -> ApiResult<()> {
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
        audit: Audit::new(&caller.user_uuid(), Utc::now()),
    };
    apply_type(&mut t, &body)?;
    if t.name.is_empty() || t.display_name.is_empty() {
        return Err(bad("Required properties: name, displayName"));
    }
    let st = state.clone();
    let t = blocking(move || {
        let _one_writer = st.store.write_lock();
        if crate::domains::bed::bed_types(&st.store)?
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
    only_known(&body, &["uuid", "name", "displayName", "description"])?;
    let user = caller.user_uuid();
    let st = state.clone();
    let t = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut t = find_type(&st.store, &uuid).map_err(|_| bad("Bed Type not exist"))?;
        apply_type(&mut t, &body)?;
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
fn tag_name(
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
        if crate::domains::bed::bed_tags(&st.store)?
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

/// What a bed's representation needs besides the bed: its type and the tags in use.
struct Lookups {
    types: Vec<BedTypeRecord>,
    tags: Vec<BedTagRecord>,
}

impl Lookups {
    fn read(store: &crate::store::Store) -> ApiResult<Lookups> {
        Ok(Lookups {
            types: crate::domains::bed::bed_types(store)?,
            tags: crate::domains::bed::bed_tags(store)?,
        })
    }

    fn bed_type(&self, uuid: &str) -> Option<&BedTypeRecord> {
        self.types.iter().find(|t| t.uuid == uuid)
    }

    fn tag(&self, uuid: &str) -> Option<&BedTagRecord> {
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
        let all = crate::domains::bed::beds(&st.store)?;
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
            &crate::domains::bed::bed_types(&st.store)?,
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
        let all = crate::domains::bed::beds(&st.store)?;
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
            &crate::domains::bed::bed_types(&st.store)?,
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
    map: &'a TagMap,
    tag: Option<&'a BedTagRecord>,
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

// ---------------------------------------------------------------------------------------
// Wards

/// A bed in a ward's layout, with the patients in it.
struct BedLayoutRes<'a> {
    bed: &'a BedRecord,
    lookups: &'a Lookups,
    patients: Vec<PatientRecord>,
}

impl<'a> BedLayoutRes<'a> {
    /// The bed with the records of the patients in it.
    fn of(state: &AppState, bed: &'a BedRecord, lookups: &'a Lookups) -> ApiResult<Self> {
        let mut patients = Vec::new();
        for o in &bed.occupants {
            if let Some(p) = state.store.patient(&o.patient)? {
                patients.push(p);
            }
        }
        Ok(BedLayoutRes {
            bed,
            lookups,
            patients,
        })
    }
}

impl Resource for BedLayoutRes<'_> {
    fn alias(&self) -> &'static str {
        "bedLayout"
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
    fn path(&self) -> String {
        format!("bed/{}", self.bed.uuid)
    }
    fn default_props(&self) -> Props {
        &[
            ("rowNumber", Rep::Default),
            ("columnNumber", Rep::Default),
            ("bedNumber", Rep::Default),
            ("bedId", Rep::Default),
            ("bedUuid", Rep::Default),
            ("status", Rep::Default),
            ("bedType", Rep::Default),
            ("location", Rep::Default),
            ("patients", Rep::Default),
            ("bedTagMaps", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("rowNumber", Rep::Default),
            ("columnNumber", Rep::Default),
            ("bedNumber", Rep::Default),
            ("bedId", Rep::Default),
            ("bedUuid", Rep::Default),
            ("status", Rep::Default),
            ("bedType", Rep::Default),
            ("location", Rep::Default),
            ("patients", Rep::Full),
            ("bedTagMaps", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let b = self.bed;
        Some(match name {
            "rowNumber" => json!(b.row),
            "columnNumber" => json!(b.column),
            "bedNumber" => json!(b.bed_number),
            "bedId" => json!(b.id),
            "bedUuid" => json!(b.uuid),
            "status" => json!(b.status),
            "bedType" => nest(self.lookups.bed_type(&b.bed_type).map(BedTypeRes), rep, ctx),
            // The module gives the location's name here.
            "location" => json!(ctx.catalog.location(&b.location).map(|l| l.name.clone())),
            "patients" => {
                let res: Vec<PatientRes> = self.patients.iter().map(PatientRes).collect();
                nested_list(res.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "bedTagMaps" => {
                let maps: Vec<TagMapRes> = b
                    .tags
                    .iter()
                    .filter(|m| !m.voiding.voided)
                    .filter(|m| self.lookups.tag(&m.tag).is_some_and(|t| !t.voiding.voided))
                    .map(|map| TagMapRes {
                        map,
                        tag: self.lookups.tag(&map.tag),
                    })
                    .collect();
                nested_list(maps.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            _ => return None,
        })
    }
}

struct AdmissionLocationRes<'a> {
    ward: &'a Location,
    layouts: Vec<BedLayoutRes<'a>>,
}

impl Resource for AdmissionLocationRes<'_> {
    fn alias(&self) -> &'static str {
        "admissionLocation"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.ward.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        LocationRes(self.ward).display(ctx)
    }
    fn default_props(&self) -> Props {
        &[
            ("ward", Rep::Default),
            ("totalBeds", Rep::Default),
            ("occupiedBeds", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("ward", Rep::Full),
            ("totalBeds", Rep::Default),
            ("occupiedBeds", Rep::Default),
            ("bedLayouts", Rep::Full),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "ward" => nest(Some(LocationRes(self.ward)), rep, ctx),
            "totalBeds" => json!(self.layouts.len()),
            "occupiedBeds" => json!(
                self.layouts
                    .iter()
                    .filter(|l| l.bed.status == OCCUPIED)
                    .count()
            ),
            "bedLayouts" => nested_list(self.layouts.iter().map(|r| r as &dyn Resource), rep, ctx),
            _ => return None,
        })
    }
}

/// The beds of a ward (of `all`, the beds in use): its own and those of the locations right under it, in layout order.
fn ward_beds<'b>(
    ward: &Location,
    all: &'b [BedRecord],
    catalog: &crate::catalog::Catalog,
) -> Vec<&'b BedRecord> {
    let mut beds: Vec<&BedRecord> = all
        .iter()
        .filter(|b| {
            b.location == ward.uuid
                || catalog
                    .location(&b.location)
                    .and_then(|l| l.parent.as_deref())
                    == Some(ward.uuid.as_str())
        })
        .collect();
    beds.sort_by_key(|b| (b.row, b.column, b.id));
    beds
}

fn layouts<'a>(
    state: &AppState,
    ward: &Location,
    all: &'a [BedRecord],
    lookups: &'a Lookups,
) -> ApiResult<Vec<BedLayoutRes<'a>>> {
    let catalog = state.catalog.load();
    ward_beds(ward, all, &catalog)
        .into_iter()
        .map(|bed| BedLayoutRes::of(state, bed, lookups))
        .collect()
}

fn is_admission_location(catalog: &crate::catalog::Catalog, l: &Location) -> bool {
    let tag = catalog
        .content
        .location_tags
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(ADMISSION_LOCATION_TAG));
    tag.is_some_and(|t| l.tags.contains(&t.uuid))
}

/// `GET admissionLocation`: the wards (locations tagged "Admission Location" in service,
/// not under another ward) with their bed counts, and in the full representation their
/// beds — privilege: Get Admission Locations or Get Beds.
pub async fn admission_locations(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    require_ward_reader(&caller)?;
    let catalog = state.catalog.load();
    let all = beds_in_use(&state.store)?;
    let lookups = Lookups::read(&state.store)?;
    let wards: Vec<&Location> = catalog
        .content
        .locations
        .iter()
        .filter(|l| !l.retired && is_admission_location(&catalog, l))
        .filter(|l| {
            l.parent
                .as_deref()
                .and_then(|p| catalog.location(p))
                .is_none_or(|p| !is_admission_location(&catalog, p))
        })
        .collect();
    let mut items = Vec::new();
    for ward in wards {
        items.push(AdmissionLocationRes {
            ward,
            layouts: layouts(&state, ward, &all, &lookups)?,
        });
    }
    let paging = Paging::from_query(&query)?;
    list_answer(
        &state,
        &caller,
        &query,
        "/admissionLocation",
        &paging,
        items,
    )
}

fn require_ward_reader(caller: &Caller) -> ApiResult<()> {
    caller
        .require(&["Get Admission Locations"])
        .or_else(|_| caller.require(&["Get Beds"]))
}

/// `GET admissionLocation/{uuid}`: one location with its beds (tagged or not, as the module
/// answers) — privilege: Get Admission Locations or Get Beds.
pub async fn admission_location(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    require_ward_reader(&caller)?;
    let catalog = state.catalog.load();
    let ward = catalog.location(&uuid).ok_or(ApiError::NotFound)?;
    let all = beds_in_use(&state.store)?;
    let lookups = Lookups::read(&state.store)?;
    let res = AdmissionLocationRes {
        ward,
        layouts: layouts(&state, ward, &all, &lookups)?,
    };
    answer(&state, &caller, &res, &rep_of(&query)?, StatusCode::OK)
}

// ---------------------------------------------------------------------------------------
// Patients in beds

/// A patient's bed: where it is and who is in it (`beds`).
struct BedDetailsRes<'a> {
    layout: BedLayoutRes<'a>,
}

impl Resource for BedDetailsRes<'_> {
    fn alias(&self) -> &'static str {
        "beds"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.layout.bed.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.layout.bed.bed_number.clone()
    }
    fn path(&self) -> String {
        format!("beds/{}", self.layout.bed.id)
    }
    fn default_props(&self) -> Props {
        &[
            ("bedId", Rep::Default),
            ("bedNumber", Rep::Default),
            ("bedType", Rep::Default),
            ("physicalLocation", Rep::Default),
            ("patients", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        match name {
            "physicalLocation" => Some(nest(
                ctx.catalog
                    .location(&self.layout.bed.location)
                    .map(LocationRes),
                rep,
                ctx,
            )),
            other => self.layout.prop(other, rep, ctx),
        }
    }
}

/// `GET beds?patientUuid=…`: the bed the patient is in (none: an empty list) — privileges:
/// Get Beds, Get Admission Locations.
pub async fn patient_bed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Beds", "Get Admission Locations"])?;
    let patient = param(&query, "patientUuid").unwrap_or_default().to_string();
    let all = beds_in_use(&state.store)?;
    let lookups = Lookups::read(&state.store)?;
    let items = patient_details(&state, &all, &lookups, &patient)?;
    let paging = Paging::from_query(&query)?;
    list_answer(&state, &caller, &query, "/beds", &paging, items)
}

/// The bed the patient is in, if any, with everyone in it.
fn patient_details<'a>(
    state: &AppState,
    all: &'a [BedRecord],
    lookups: &'a Lookups,
    patient: &str,
) -> ApiResult<Vec<BedDetailsRes<'a>>> {
    let mut items = Vec::new();
    if let Some(bed) = all
        .iter()
        .find(|b| b.occupants.iter().any(|o| o.patient == patient))
    {
        items.push(BedDetailsRes {
            layout: BedLayoutRes::of(state, bed, lookups)?,
        });
    }
    Ok(items)
}

/// `POST beds/{bed id or uuid}` `{patientUuid, encounterUuid}`: puts the patient in the
/// bed, out of the one she was in; others in the bed stay — privileges: Assign Beds, Edit
/// Admission Locations.
pub async fn assign(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Assign Beds", "Edit Admission Locations"])?;
    only_known(&body, &["patientUuid", "encounterUuid"])?;
    let patient = opt_str(&body, "patientUuid")?.ok_or_else(|| {
        ApiError::invalid_field("patientUuid", "error.null", "patientUuid is required")
    })?;
    let encounter = opt_str(&body, "encounterUuid")?;
    let patient_of_answer = patient.clone();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        match st.store.patient(&patient)? {
            Some(p) if !p.voided => {}
            _ => return Err(bad(format!("Patient {patient} does not exist"))),
        }
        let visit = match &encounter {
            Some(e) => {
                let found = crate::domains::encounter::store::encounter(&st.store, e)?
                    .filter(|x| !x.voiding.voided && x.patient == patient)
                    .ok_or_else(|| bad(format!("Encounter {e} is not one of the patient's")))?;
                found.visit
            }
            None => None,
        };
        let all = beds_in_use(&st.store)?;
        let target = all
            .iter()
            .find(|b| id.parse::<u64>().ok() == Some(b.id) || b.uuid == id)
            .ok_or(ApiError::NotFound)?
            .uuid
            .clone();
        let now = Utc::now();
        let mut moves = vacate(&st.store, &all, |o| o.patient == patient, &user, now)?;
        let mut bed = moves
            .beds
            .iter()
            .find(|b| b.uuid == target)
            .cloned()
            .or_else(|| all.iter().find(|b| b.uuid == target).cloned())
            .expect("the target bed was found above");
        let stay = AssignmentRecord {
            v: 1,
            uuid: crate::store::record::new_uuid(),
            bed: bed.uuid.clone(),
            patient: patient.clone(),
            encounter: encounter.clone(),
            visit: visit.clone(),
            started: crate::wire::datetime_key(now),
            ended: None,
            audit: Audit::new(&user, now),
        };
        bed.occupants.push(Occupant {
            assignment: stay.uuid.clone(),
            patient: patient.clone(),
            encounter,
            visit,
        });
        bed.status = OCCUPIED.into();
        bed.audit.changed(&user, now);
        moves.beds.retain(|b| b.uuid != bed.uuid);
        moves.beds.push(bed);
        moves.stays.push(stay);
        st.store.write(|txn| moves.write_in(txn))?;
        Ok(())
    })
    .await?;
    // The patient's bed, as the module answers an assignment.
    let all = beds_in_use(&state.store)?;
    let lookups = Lookups::read(&state.store)?;
    let details = patient_details(&state, &all, &lookups, &patient_of_answer)?
        .into_iter()
        .next()
        .ok_or(ApiError::NotFound)?;
    answer(&state, &caller, &details, &rep_of(&query)?, StatusCode::OK)
}

/// `DELETE beds/{any}?patientUuid=…`: takes the patient out of her bed (the id is not
/// read, as by the module; a patient in no bed is no error) — privileges: Assign Beds,
/// Edit Admission Locations.
pub async fn unassign(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Assign Beds", "Edit Admission Locations"])?;
    let patient = param(&query, "patientUuid")
        .ok_or_else(|| bad("patientUuid is required"))?
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let all = beds_in_use(&st.store)?;
        let moves = vacate(&st.store, &all, |o| o.patient == patient, &user, Utc::now())?;
        if !moves.is_empty() {
            st.store.write(|txn| moves.write_in(txn))?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
