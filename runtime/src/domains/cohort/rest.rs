//! `cohortm/cohort`, `cohortm/cohortmember` and `cohortm/cohorttype` over REST, in the
//! cohort module's wire shapes. Privileges are core's: Get Patient Cohorts to read, Add
//! Cohorts to create a list, Edit Cohorts to change one or its members, Delete Cohorts to
//! void or purge.

use crate::content::location::LocationRes;
use crate::domains::cohort::{
    COHORT_TYPES, CohortRecord, DEFAULT_HANDLER, MemberRecord, cohort_type, store,
};
use crate::domains::patient::repr::PatientRes;
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, nest, rep_of};
use crate::http::body::{client_uuid, only_known, opt_datetime, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use crate::wire::{datetime_key, wire_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::sync::Arc;

type CohortType = &'static (&'static str, &'static str, &'static str);

pub struct CohortTypeRes(pub CohortType);

impl Resource for CohortTypeRes {
    fn alias(&self) -> &'static str {
        "cohorttype"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.0.to_string()
    }
    fn path(&self) -> String {
        format!("cohortm/cohorttype/{}", self.0.0)
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.1.to_string()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "name" => json!(self.0.1),
            "description" => json!(self.0.2),
            _ => return None,
        })
    }
}

pub struct CohortRes(pub CohortRecord);

fn opt_wire(d: &Option<String>) -> Value {
    d.as_deref().map_or(Value::Null, wire_datetime)
}

impl Resource for CohortRes {
    fn alias(&self) -> &'static str {
        "cohort"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("cohortm/cohort/{}", self.0.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("startDate", Rep::Default),
            ("endDate", Rep::Default),
            ("groupCohort", Rep::Default),
            ("location", Rep::Ref),
            ("cohortType", Rep::Ref),
            ("attributes", Rep::Ref),
            ("voided", Rep::Default),
            ("voidReason", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("startDate", Rep::Default),
            ("endDate", Rep::Default),
            ("groupCohort", Rep::Default),
            ("location", Rep::Default),
            ("cohortType", Rep::Default),
            ("attributes", Rep::Default),
            ("cohortMembers", Rep::Full),
            ("voided", Rep::Default),
            ("voidReason", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let c = &self.0;
        Some(match name {
            "name" => json!(c.name),
            "description" => json!(c.description),
            "startDate" => opt_wire(&c.start_date),
            "endDate" => opt_wire(&c.end_date),
            "groupCohort" => json!(c.group_cohort),
            "definitionHandlerClassname" => json!(c.definition_handler),
            "location" => nest(
                c.location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(LocationRes),
                rep,
                ctx,
            ),
            "cohortType" => nest(
                c.cohort_type
                    .as_deref()
                    .and_then(cohort_type)
                    .map(CohortTypeRes),
                rep,
                ctx,
            ),
            // No cohort attribute types are defined, so a list has none.
            "attributes" => json!([]),
            "voided" => json!(c.voiding.voided),
            "voidReason" => json!(c.voiding.void_reason),
            "auditInfo" => audit_info(&c.audit, ctx),
            // The memberships begun and not ended (the module's `size` getter).
            "size" => {
                let now = datetime_key(chrono::Utc::now());
                let members = store::members_of(ctx.store, &c.uuid, false).ok()?;
                json!(members.iter().filter(|m| m.active(&now)).count())
            }
            "cohortMembers" => {
                let now = datetime_key(chrono::Utc::now());
                let members = store::members_of(ctx.store, &c.uuid, false).ok()?;
                let rendered: Vec<Value> = members
                    .into_iter()
                    .filter(|m| m.active(&now))
                    .filter_map(|m| render(&MemberRes(m), rep, ctx).ok())
                    .collect();
                json!(rendered)
            }
            _ => return None,
        })
    }
}

pub struct MemberRes(pub MemberRecord);

impl Resource for MemberRes {
    fn alias(&self) -> &'static str {
        "cohortmember"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("cohortm/cohortmember/{}", self.0.uuid)
    }
    /// "{preferred identifier}-{name}", as the module writes it.
    fn display(&self, ctx: &Ctx) -> String {
        match ctx.store.patient(&self.0.patient).ok().flatten() {
            Some(p) => {
                let id = p
                    .identifiers
                    .iter()
                    .find(|i| i.preferred)
                    .or(p.identifiers.first())
                    .map(|i| i.identifier.as_str())
                    .unwrap_or_default();
                format!("{id}-{}", crate::domains::patient::repr::person_display(&p))
            }
            None => String::new(),
        }
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("patient", Rep::Ref),
            ("cohort", Rep::Ref),
            ("startDate", Rep::Default),
            ("endDate", Rep::Default),
            ("voided", Rep::Default),
            ("attributes", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("patient", Rep::Full),
            ("cohort", Rep::Default),
            ("startDate", Rep::Default),
            ("endDate", Rep::Default),
            ("voided", Rep::Default),
            ("attributes", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let m = &self.0;
        Some(match name {
            "patient" => {
                let p = ctx.store.patient(&m.patient).ok().flatten();
                nest(p.as_ref().map(PatientRes), rep, ctx)
            }
            "cohort" => nest(
                store::cohort(ctx.store, &m.cohort)
                    .ok()
                    .flatten()
                    .map(CohortRes),
                rep,
                ctx,
            ),
            "startDate" => opt_wire(&m.start_date),
            "endDate" => opt_wire(&m.end_date),
            "voided" => json!(m.voiding.voided),
            "attributes" => json!([]),
            "auditInfo" => audit_info(&m.audit, ctx),
            _ => return None,
        })
    }
}

/// A page of `items` rendered, the rest left unrendered (a list's members render whole
/// patients).
fn page_of<R: Resource>(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
    items: Vec<R>,
    default_rep: Rep,
) -> ApiResult<Response> {
    let rep = Rep::parse(param(query, "v"))?.unwrap_or(default_rep);
    let paging = Paging::from_query(query)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(state, &catalog);
    let total = items.len();
    let results = items
        .iter()
        .skip(paging.start)
        .take(paging.limit)
        .map(|r| render(r, &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    let more = paging.start.saturating_add(paging.limit) < total;
    Ok(crate::http::ok(paging.answer(
        results,
        more,
        paging.total_count.then_some(total),
        &caller.request_url(state, path, query),
    )))
}

// ---- cohort types ----

/// `GET cohortm/cohorttype`.
pub async fn types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Cohorts"])?;
    let items: Vec<CohortTypeRes> = COHORT_TYPES.iter().map(CohortTypeRes).collect();
    page_of(
        &state,
        &caller,
        &query,
        "/cohortm/cohorttype",
        items,
        Rep::Default,
    )
}

/// `GET cohortm/cohorttype/{uuid or name}`.
pub async fn read_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Cohorts"])?;
    let t = cohort_type(&uuid).ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &CohortTypeRes(t),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `POST cohortm/cohorttype[/{uuid}]`, `DELETE cohortm/cohorttype/{uuid}`: the types are
/// the two the O3 app is configured with; refused.
pub async fn write_type(caller: Caller) -> ApiResult<Response> {
    caller.require(&["Edit Cohorts"])?;
    Err(ApiError::BadRequest(
        "The list types are this distribution's own (Ma liste, Liste du système): they cannot be changed".into(),
    ))
}

// ---- cohorts ----

/// `GET cohortm/cohort[?q=][&cohortType=][&location=][&includeAll=true]`: the lists by
/// name; `q` matches part of the name in any case; voided ones only with `includeAll`.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Cohorts"])?;
    let include_all = flag(&query, "includeAll").unwrap_or(false);
    let q = param(&query, "q").map(str::to_lowercase);
    let wanted_type = match param(&query, "cohortType").filter(|t| !t.is_empty()) {
        Some(t) => Some(
            cohort_type(t)
                .ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "Could not find a Cohort Type matching '{t}' either by name or UUID"
                    ))
                })?
                .0,
        ),
        None => None,
    };
    let location = param(&query, "location").filter(|l| !l.is_empty());
    let st = state.clone();
    let all = blocking(move || Ok(store::cohorts(&st.store)?)).await?;
    let items: Vec<CohortRes> = all
        .into_iter()
        .filter(|c| include_all || !c.voiding.voided)
        .filter(|c| {
            q.as_deref()
                .is_none_or(|q| c.name.to_lowercase().contains(q))
        })
        .filter(|c| wanted_type.is_none_or(|t| c.cohort_type.as_deref() == Some(t)))
        .filter(|c| location.is_none_or(|l| c.location.as_deref() == Some(l)))
        .map(CohortRes)
        .collect();
    page_of(
        &state,
        &caller,
        &query,
        "/cohortm/cohort",
        items,
        Rep::Default,
    )
}

/// `GET cohortm/cohort/{uuid}` (a voided list is not found, as in the module).
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Cohorts"])?;
    let c = store::cohort(&state.store, &uuid)?
        .filter(|c| !c.voiding.voided)
        .ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &CohortRes(c),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

const COHORT_FIELDS: &[&str] = &[
    "uuid",
    "name",
    "description",
    "cohortType",
    "location",
    "startDate",
    "endDate",
    "groupCohort",
    "definitionHandlerClassname",
    "attributes",
    "cohortMembers",
    "voided",
    "voidReason",
];

/// A reference that may be sent as `""` for none (the O3 form sends an unchosen type so).
fn opt_ref_or_empty(body: &Map<String, Value>, field: &str) -> ApiResult<Option<Option<String>>> {
    match body.get(field) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Some(None)),
        Some(_) => opt_ref(body, field).map(Some),
    }
}

/// Checks a list against `CohortMValidator`'s rules and this server's references.
fn check_cohort(state: &AppState, c: &CohortRecord) -> ApiResult<()> {
    let mut inv = Invalid::default();
    if c.name.trim().is_empty() {
        inv.field("name", "error.null", "Cohort Name Required");
    } else {
        let others = store::cohorts(&state.store)?;
        if others.iter().any(|o| {
            o.uuid != c.uuid && !o.voiding.voided && o.name.eq_ignore_ascii_case(c.name.trim())
        }) {
            inv.field(
                "name",
                "error.duplicate",
                "A cohort with this name already exists",
            );
        }
    }
    if c.definition_handler.trim().is_empty() {
        inv.field(
            "definitionHandlerClassname",
            "error.null",
            "Cohort definitionHandlerClassname is required",
        );
    }
    if let Some(t) = &c.cohort_type
        && cohort_type(t).is_none()
    {
        inv.field(
            "cohortType",
            "error.invalid",
            &format!("Could not find a Cohort Type matching '{t}' either by name or UUID"),
        );
    }
    if let Some(l) = &c.location
        && state.catalog.load().location(l).is_none()
    {
        inv.field(
            "location",
            "error.invalid",
            &format!("Location {l} does not exist"),
        );
    }
    if let (Some(start), Some(end)) = (&c.start_date, &c.end_date)
        && end < start
    {
        inv.field(
            "startDate",
            "error.invalid",
            "Start date should be before the end date",
        );
    }
    if inv.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid(inv))
    }
}

/// A member a list's body gives: her patient and start date (key form).
type GivenMember = (String, Option<String>);

/// A list's `cohortMembers` as a body gives them (the fast data entry app's group
/// sessions): each `{patient, startDate}` (or a patient's uuid), read before the write.
fn inline_members(body: &Map<String, Value>) -> ApiResult<Option<Vec<GivenMember>>> {
    let items = match body.get("cohortMembers") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(ApiError::BadRequest(
                "cohortMembers: expected a list of members".into(),
            ));
        }
    };
    let mut members = Vec::new();
    for item in items {
        let member = match item {
            Value::String(patient) => (patient.clone(), None),
            Value::Object(m) => (
                opt_ref(m, "patient")?.unwrap_or_default(),
                opt_datetime(m, "startDate")?,
            ),
            _ => (String::new(), None),
        };
        if member.0.is_empty() {
            return Err(ApiError::invalid_field(
                "cohortMembers",
                "error.null",
                "Each member names a patient",
            ));
        }
        members.push(member);
    }
    Ok(Some(members))
}

/// Makes a list's current members those given, as the cohort module's `cohortMembers`
/// setter does: a member not given is ended now (her membership kept, as every ended one
/// is); a patient given who is not a current member joins from her start date (or now),
/// on her earlier membership of the list if she had one. Called under the write lock.
fn set_members(
    st: &AppState,
    cohort: &CohortRecord,
    given: &[GivenMember],
    user: &str,
) -> ApiResult<()> {
    if cohort.voiding.voided {
        return Err(ApiError::BadRequest(
            "Cannot add patient to ended group.".into(),
        ));
    }
    let now = chrono::Utc::now();
    let key_now = datetime_key(now);
    let members = store::members_of(&st.store, &cohort.uuid, false)?;
    for mut m in members.iter().filter(|m| m.current(&key_now)).cloned() {
        if !given.iter().any(|(p, _)| *p == m.patient) {
            m.end_date = Some(key_now.clone());
            m.audit.changed(user, now);
            store::put_member(&st.store, &m)?;
        }
    }
    for (patient, start) in given {
        if members
            .iter()
            .any(|m| &m.patient == patient && m.current(&key_now))
        {
            continue;
        }
        let joined = match members.iter().find(|m| &m.patient == patient) {
            Some(old) => MemberRecord {
                end_date: None,
                audit: {
                    let mut a = old.audit.clone();
                    a.changed(user, now);
                    a
                },
                ..old.clone()
            },
            None => MemberRecord {
                v: 1,
                uuid: uuid::Uuid::new_v4().to_string(),
                cohort: cohort.uuid.clone(),
                patient: patient.clone(),
                start_date: start.clone().or_else(|| Some(key_now.clone())),
                end_date: None,
                audit: Audit::new(user, now),
                voiding: Voiding::default(),
            },
        };
        store::put_member(&st.store, &joined)?;
    }
    Ok(())
}

/// Every member given names a patient who stands (checked before anything is written).
fn check_given(st: &AppState, given: Option<&Vec<GivenMember>>) -> ApiResult<()> {
    for (patient, _) in given.into_iter().flatten() {
        match st.store.patient(patient)? {
            Some(p) if !p.voided => {}
            _ => {
                return Err(ApiError::invalid_field(
                    "cohortMembers",
                    "error.invalid",
                    &format!("Patient {patient} does not exist"),
                ));
            }
        }
    }
    Ok(())
}

/// Attributes of lists, which this server does not keep: accepted only empty.
fn refuse_attributes(body: &Map<String, Value>) -> ApiResult<()> {
    match body.get("attributes") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(a)) if a.is_empty() => Ok(()),
        Some(_) => Err(ApiError::BadRequest(
            "attributes are not set with the list: no list attribute types are defined".into(),
        )),
    }
}

/// Fields of lists that this server does not keep: accepted only empty.
fn refuse_members_and_attributes(body: &Map<String, Value>) -> ApiResult<()> {
    for field in ["attributes", "cohortMembers"] {
        match body.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) if a.is_empty() => {}
            Some(_) => {
                return Err(ApiError::BadRequest(format!(
                    "{field} are not set with the list: {}",
                    if field == "attributes" {
                        "no list attribute types are defined"
                    } else {
                        "add members with POST cohortm/cohortmember"
                    }
                )));
            }
        }
    }
    Ok(())
}

/// `POST cohortm/cohort`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Cohorts"])?;
    only_known(&body, COHORT_FIELDS)?;
    refuse_attributes(&body)?;
    let members = inline_members(&body)?;
    let user = caller.user_uuid();
    let now = chrono::Utc::now();
    let record = CohortRecord {
        v: 1,
        uuid: client_uuid(&body)?,
        name: opt_str(&body, "name")?
            .unwrap_or_default()
            .trim()
            .to_string(),
        description: opt_str(&body, "description")?.filter(|d| !d.is_empty()),
        cohort_type: opt_ref_or_empty(&body, "cohortType")?.flatten(),
        location: opt_ref_or_empty(&body, "location")?.flatten(),
        start_date: opt_datetime(&body, "startDate")?.or_else(|| Some(datetime_key(now))),
        end_date: opt_datetime(&body, "endDate")?,
        group_cohort: body
            .get("groupCohort")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        definition_handler: opt_str(&body, "definitionHandlerClassname")?
            .unwrap_or_else(|| DEFAULT_HANDLER.to_string()),
        audit: Audit::new(&user, now),
        voiding: Voiding::default(),
    };
    let record = CohortRecord {
        cohort_type: record
            .cohort_type
            .as_deref()
            .map(|t| cohort_type(t).map_or(t.to_string(), |t| t.0.to_string())),
        ..record
    };
    let st = state.clone();
    let record = blocking(move || {
        let _one_writer = st.store.write_lock();
        if store::cohort(&st.store, &record.uuid)?.is_some() {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "A list has this uuid already",
            ));
        }
        check_cohort(&st, &record)?;
        check_given(&st, members.as_ref())?;
        store::put_cohort(&st.store, &record)?;
        if let Some(members) = &members {
            set_members(&st, &record, members, &record.audit.creator)?;
        }
        Ok(record)
    })
    .await?;
    answer(
        &state,
        &caller,
        &CohortRes(record),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// `POST cohortm/cohort/{uuid}`: name, description, type, location, dates; `voided: true`
/// voids the list and its memberships, as the module saves it.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Cohorts"])?;
    only_known(&body, COHORT_FIELDS)?;
    refuse_attributes(&body)?;
    let members = inline_members(&body)?;
    let user = caller.user_uuid();
    let name = opt_str(&body, "name")?;
    let description = body
        .contains_key("description")
        .then(|| opt_str(&body, "description"))
        .transpose()?;
    let cohort_type_change = opt_ref_or_empty(&body, "cohortType")?;
    let location_change = opt_ref_or_empty(&body, "location")?;
    let date = |field: &str| -> ApiResult<Option<Option<String>>> {
        match body.get(field) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(_) => opt_datetime(&body, field).map(Some),
        }
    };
    let (start, end) = (date("startDate")?, date("endDate")?);
    let group = body.get("groupCohort").and_then(Value::as_bool);
    let handler = opt_str(&body, "definitionHandlerClassname")?;
    let voided = body.get("voided").and_then(Value::as_bool);
    let reason = opt_str(&body, "voidReason")?;
    let st = state.clone();
    let record = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut c = store::cohort(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let now = chrono::Utc::now();
        if let Some(n) = name {
            c.name = n.trim().to_string();
        }
        if let Some(d) = description {
            c.description = d.filter(|d| !d.is_empty());
        }
        if let Some(t) = cohort_type_change {
            c.cohort_type = t.map(|t| cohort_type(&t).map_or(t.clone(), |t| t.0.to_string()));
        }
        if let Some(l) = location_change {
            c.location = l;
        }
        if let Some(s) = start {
            c.start_date = s;
        }
        if let Some(e) = end {
            c.end_date = e;
        }
        if let Some(g) = group {
            c.group_cohort = g;
        }
        if let Some(h) = handler {
            c.definition_handler = h;
        }
        check_cohort(&st, &c)?;
        c.audit.changed(&user, now);
        match voided {
            Some(true) if !c.voiding.voided => {
                let why = reason.unwrap_or_else(|| "Cohort voided".into());
                c.voiding.void(&user, now, &why);
                for mut m in store::members_of(&st.store, &c.uuid, false)? {
                    m.voiding.void(&user, now, "Cohort voided");
                    if m.end_date.is_none() {
                        m.end_date = c.end_date.clone();
                    }
                    store::put_member(&st.store, &m)?;
                }
            }
            Some(false) => c.voiding.unvoid(),
            _ => {}
        }
        check_given(&st, members.as_ref())?;
        if members.is_some() && c.voiding.voided {
            return Err(ApiError::BadRequest(
                "Cannot add patient to ended group.".into(),
            ));
        }
        store::put_cohort(&st.store, &c)?;
        if let Some(members) = &members {
            set_members(&st, &c, members, &user)?;
        }
        Ok(c)
    })
    .await?;
    answer(
        &state,
        &caller,
        &CohortRes(record),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE cohortm/cohort/{uuid}[?reason=]` voids the list (its memberships stay, as in the
/// module); `purge=true` removes it with its memberships.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Delete Cohorts"])?;
    let purge = param(&query, "purge").is_some_and(|v| v != "false");
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut c = store::cohort(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if purge {
            store::purge_cohort(&st.store, &c)?;
        } else if !c.voiding.voided {
            c.voiding.void(&user, chrono::Utc::now(), &reason);
            store::put_cohort(&st.store, &c)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- members ----

/// `GET cohortm/cohortmember?cohort=…[&q=]` (a list's current members, newest first; `q`
/// matches their names or identifiers) or `?patient=…` (a patient's current memberships).
/// Ended memberships leave the lists: that is how O3 removes a patient.
pub async fn member_search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Cohorts"])?;
    let cohort = param(&query, "cohort")
        .filter(|c| !c.is_empty())
        .map(String::from);
    let patient = param(&query, "patient")
        .filter(|p| !p.is_empty())
        .map(String::from);
    let q = param(&query, "q")
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(crate::search::fold);
    if cohort.is_none() && patient.is_none() {
        return Err(ApiError::BadRequest(
            "No valid value specified for params query(q), cohort and/or patient".into(),
        ));
    }
    let include_all = flag(&query, "includeAll").unwrap_or(false);
    let st = state.clone();
    let members = blocking(move || {
        let now = datetime_key(chrono::Utc::now());
        let found = match (&cohort, &patient) {
            (Some(c), Some(p)) => store::memberships_of(&st.store, p, Some(c), include_all)?,
            (Some(c), None) => store::members_of(&st.store, c, include_all)?,
            (None, Some(p)) => store::memberships_of(&st.store, p, None, include_all)?,
            (None, None) => Vec::new(),
        };
        let mut out = Vec::with_capacity(found.len());
        for m in found {
            if !include_all && !m.current(&now) {
                continue;
            }
            // Memberships of a voided list leave a patient's lists.
            if cohort.is_none()
                && store::cohort(&st.store, &m.cohort)?.is_none_or(|c| c.voiding.voided)
            {
                continue;
            }
            if let Some(q) = &q {
                let Some(p) = st.store.patient(&m.patient)? else {
                    continue;
                };
                let name = crate::search::fold(&crate::domains::patient::repr::person_display(&p));
                if !name.contains(q.as_str())
                    && !p
                        .identifiers
                        .iter()
                        .any(|i| crate::search::fold(&i.identifier).contains(q.as_str()))
                {
                    continue;
                }
            }
            out.push(MemberRes(m));
        }
        Ok(out)
    })
    .await?;
    page_of(
        &state,
        &caller,
        &query,
        "/cohortm/cohortmember",
        members,
        Rep::Default,
    )
}

/// `GET cohortm/cohortmember/{uuid}`.
pub async fn member_read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Cohorts"])?;
    let m = store::member(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &MemberRes(m),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

const MEMBER_FIELDS: &[&str] = &[
    "uuid",
    "cohort",
    "patient",
    "startDate",
    "endDate",
    "voided",
    "attributes",
];

fn check_member_dates(m: &MemberRecord) -> ApiResult<()> {
    if let (Some(start), Some(end)) = (&m.start_date, &m.end_date)
        && end < start
    {
        return Err(ApiError::invalid_field(
            "endDate",
            "error.invalid",
            "The end date cannot be before the start date",
        ));
    }
    Ok(())
}

/// `POST cohortm/cohortmember` with `{cohort, patient, startDate[, endDate]}`.
pub async fn member_create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Cohorts"])?;
    only_known(&body, MEMBER_FIELDS)?;
    refuse_members_and_attributes(&body)?;
    let user = caller.user_uuid();
    let now = chrono::Utc::now();
    let mut inv = Invalid::default();
    let cohort = opt_ref(&body, "cohort")?.unwrap_or_default();
    let patient = opt_ref(&body, "patient")?.unwrap_or_default();
    if cohort.is_empty() {
        inv.field("cohort", "error.null", "cohort is required");
    }
    if patient.is_empty() {
        inv.field("patient", "error.null", "patient is required");
    }
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }
    let record = MemberRecord {
        v: 1,
        uuid: client_uuid(&body)?,
        cohort,
        patient,
        start_date: opt_datetime(&body, "startDate")?.or_else(|| Some(datetime_key(now))),
        end_date: opt_datetime(&body, "endDate")?,
        audit: Audit::new(&user, now),
        voiding: Voiding::default(),
    };
    check_member_dates(&record)?;
    let st = state.clone();
    let record = blocking(move || {
        let _one_writer = st.store.write_lock();
        let list = store::cohort(&st.store, &record.cohort)?.ok_or_else(|| {
            ApiError::invalid_field(
                "cohort",
                "error.invalid",
                &format!("Cohort {} does not exist", record.cohort),
            )
        })?;
        if list.voiding.voided {
            return Err(ApiError::BadRequest(
                "Cannot add patient to ended group.".into(),
            ));
        }
        match st.store.patient(&record.patient)? {
            Some(p) if !p.voided => {}
            _ => {
                return Err(ApiError::invalid_field(
                    "patient",
                    "error.invalid",
                    &format!("Patient {} does not exist", record.patient),
                ));
            }
        }
        if store::member(&st.store, &record.uuid)?.is_some() {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "A membership has this uuid already",
            ));
        }
        let key_now = datetime_key(chrono::Utc::now());
        let existing =
            store::memberships_of(&st.store, &record.patient, Some(&record.cohort), false)?;
        if let Some(open) = existing.iter().find(|m| m.current(&key_now))
            && (record.end_date.is_none() || open.end_date.is_none())
        {
            return Err(ApiError::BadRequest(
                "Patient already exists in group.".into(),
            ));
        }
        // A patient who was in the list comes back on the same membership, as the module
        // saves it: its start kept, its end the new one.
        if let Some(mut old) = existing.into_iter().next() {
            old.end_date = record.end_date.clone();
            old.audit.changed(&user, chrono::Utc::now());
            check_member_dates(&old)?;
            store::put_member(&st.store, &old)?;
            return Ok(old);
        }
        store::put_member(&st.store, &record)?;
        Ok(record)
    })
    .await?;
    answer(
        &state,
        &caller,
        &MemberRes(record),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// `POST cohortm/cohortmember/{uuid}`: `startDate`, `endDate` (O3 removes a patient by
/// ending the membership now), `voided`.
pub async fn member_update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Cohorts"])?;
    only_known(&body, MEMBER_FIELDS)?;
    refuse_members_and_attributes(&body)?;
    let user = caller.user_uuid();
    for field in ["cohort", "patient"] {
        if body.get(field).is_some_and(|v| !v.is_null()) {
            return Err(ApiError::BadRequest(format!(
                "The {field} of a membership does not change: end it and add the patient again"
            )));
        }
    }
    let date = |field: &str| -> ApiResult<Option<Option<String>>> {
        match body.get(field) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(_) => opt_datetime(&body, field).map(Some),
        }
    };
    let (start, end) = (date("startDate")?, date("endDate")?);
    let voided = body.get("voided").and_then(Value::as_bool);
    let st = state.clone();
    let record = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut m = store::member(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let now = chrono::Utc::now();
        if let Some(s) = start {
            m.start_date = s;
        }
        if let Some(e) = end {
            m.end_date = e;
        }
        check_member_dates(&m)?;
        match voided {
            Some(true) if !m.voiding.voided => m.voiding.void(&user, now, "web service call"),
            Some(false) => m.voiding.unvoid(),
            _ => {}
        }
        m.audit.changed(&user, now);
        store::put_member(&st.store, &m)?;
        Ok(m)
    })
    .await?;
    answer(
        &state,
        &caller,
        &MemberRes(record),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE cohortm/cohortmember/{uuid}[?reason=]` voids the membership; `purge=true`
/// removes it.
pub async fn member_delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let purge = param(&query, "purge").is_some_and(|v| v != "false");
    caller.require(&[if purge {
        "Delete Cohorts"
    } else {
        "Edit Cohorts"
    }])?;
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut m = store::member(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if purge {
            store::purge_member(&st.store, &m)?;
        } else if !m.voiding.voided {
            m.voiding.void(&user, chrono::Utc::now(), &reason);
            store::put_member(&st.store, &m)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/cohortm/cohorttype"),
            get(crate::domains::cohort::rest::types).post(crate::domains::cohort::rest::write_type),
        )
        .route(
            &paths.rest("/cohortm/cohorttype/{uuid}"),
            get(crate::domains::cohort::rest::read_type)
                .post(crate::domains::cohort::rest::write_type)
                .delete(crate::domains::cohort::rest::write_type),
        )
        .route(
            &paths.rest("/cohortm/cohort"),
            get(crate::domains::cohort::rest::search).post(crate::domains::cohort::rest::create),
        )
        .route(
            &paths.rest("/cohortm/cohort/{uuid}"),
            get(crate::domains::cohort::rest::read)
                .post(crate::domains::cohort::rest::update)
                .delete(crate::domains::cohort::rest::delete),
        )
        .route(
            &paths.rest("/cohortm/cohortmember"),
            get(crate::domains::cohort::rest::member_search)
                .post(crate::domains::cohort::rest::member_create),
        )
        .route(
            &paths.rest("/cohortm/cohortmember/{uuid}"),
            get(crate::domains::cohort::rest::member_read)
                .post(crate::domains::cohort::rest::member_update)
                .delete(crate::domains::cohort::rest::member_delete),
        )
        .route(
            &paths.fhir("/Group"),
            get(crate::domains::cohort::fhir::search),
        )
        .route(
            &paths.fhir("/Group/{id}"),
            get(crate::domains::cohort::fhir::read),
        )
}
