//! `visit` (create, read, update, void, search), `visittype/{uuid}` and
//! `visitattributetype` over REST, in OpenMRS's representations.

use crate::content::concept::ConceptRes;
use crate::content::location::LocationRes;
use crate::content::metadata::NamedRes;
use crate::domains::patient::repr::PatientRes;
use crate::domains::visit::VisitRecord;
use crate::domains::visit::attribute::{self, VisitAttributeRes, VisitAttributeTypeRes};
use crate::domains::visit::store::{self, VisitQuery};
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, nest, page_answer, rep_of, window};
use crate::http::body::{apply_voided, only_known, opt_datetime, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested_list, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, ok, param};
use crate::store::record::{Audit, Voiding};
use crate::wire::{datetime_key, wire_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct VisitRes<'a>(pub &'a VisitRecord);

/// What other domains nest in a visit's representation, registered in the domains'
/// registry: a visit's `encounters` are the encounter domain's to render.
pub struct VisitNesting {
    /// The `encounters` property: (visit, representation, context).
    pub encounters: fn(&str, &Rep, &Ctx) -> Value,
}

impl Resource for VisitRes<'_> {
    fn alias(&self) -> &'static str {
        "visit"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        let v = self.0;
        let visit_type = ctx
            .catalog
            .content
            .visit_types
            .iter()
            .find(|t| t.uuid == v.visit_type)
            .map(|t| NamedRes("visittype", t).display(ctx))
            .unwrap_or_default();
        let location = v
            .location
            .as_deref()
            .and_then(|l| ctx.catalog.location(l))
            .map(|l| LocationRes(l).display(ctx));
        let start = crate::wire::parse_key(&v.start)
            .map(|t| t.format("%d/%m/%Y %H:%M").to_string())
            .unwrap_or_default();
        match location {
            Some(l) => format!("{visit_type} @ {l} - {start}"),
            None => format!("{visit_type} - {start}"),
        }
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("patient", Rep::Ref),
            ("visitType", Rep::Ref),
            ("indication", Rep::Ref),
            ("location", Rep::Ref),
            ("startDatetime", Rep::Default),
            ("stopDatetime", Rep::Default),
            ("encounters", Rep::Ref),
            ("attributes", Rep::Ref),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("patient", Rep::Default),
            ("visitType", Rep::Default),
            ("indication", Rep::Default),
            ("location", Rep::Default),
            ("startDatetime", Rep::Default),
            ("stopDatetime", Rep::Default),
            ("encounters", Rep::Default),
            ("attributes", Rep::Default),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let v = self.0;
        Some(match name {
            "patient" => {
                let p = ctx.store.patient(&v.patient).ok().flatten();
                nest(p.as_ref().map(PatientRes), rep, ctx)
            }
            "visitType" => nest(
                ctx.catalog
                    .content
                    .visit_types
                    .iter()
                    .find(|t| t.uuid == v.visit_type)
                    .map(|t| NamedRes("visittype", t)),
                rep,
                ctx,
            ),
            "indication" => nest(
                v.indication
                    .as_deref()
                    .and_then(|c| ctx.catalog.concept(c))
                    .map(ConceptRes),
                rep,
                ctx,
            ),
            "location" => nest(
                v.location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(LocationRes),
                rep,
                ctx,
            ),
            "startDatetime" => wire_datetime(&v.start),
            "stopDatetime" => v.stop.as_deref().map(wire_datetime).unwrap_or(Value::Null),
            "encounters" => match ctx.store.registry().extension::<VisitNesting>() {
                Some(nesting) => (nesting.encounters)(&v.uuid, rep, ctx),
                None => Value::Array(Vec::new()),
            },
            // The active ones, as OpenMRS's `getActiveAttributes`.
            "attributes" => {
                let res: Vec<VisitAttributeRes> = v
                    .attributes
                    .iter()
                    .filter(|a| !a.voiding.voided)
                    .map(|attribute| VisitAttributeRes {
                        visit: &v.uuid,
                        attribute,
                    })
                    .collect();
                nested_list(res.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "voided" => json!(v.voiding.voided),
            "auditInfo" => audit_info(&v.audit, ctx),
            _ => return None,
        })
    }
}

const VISIT_FIELDS: &[&str] = &[
    "patient",
    "visitType",
    "location",
    "indication",
    "startDatetime",
    "stopDatetime",
    "attributes",
    "voided",
    "voidReason",
    "uuid",
];

/// Applies a body's fields to a visit (creation or update).
fn apply(v: &mut VisitRecord, body: &Map<String, Value>) -> ApiResult<()> {
    if let Some(t) = opt_ref(body, "visitType")? {
        v.visit_type = t;
    }
    if body.contains_key("location") {
        v.location = opt_ref(body, "location")?;
    }
    if body.contains_key("indication") {
        v.indication = opt_ref(body, "indication")?;
    }
    if let Some(start) = opt_datetime(body, "startDatetime")? {
        v.start = start;
    }
    if body.contains_key("stopDatetime") {
        v.stop = opt_datetime(body, "stopDatetime")?;
    }
    Ok(())
}

/// Applies a body's `attributes`: each one names an existing attribute by `uuid` (its value
/// changes) or is a new one (`attribute::set`).
fn apply_attributes(
    v: &mut VisitRecord,
    catalog: &crate::catalog::Catalog,
    body: &Map<String, Value>,
    user: &str,
) -> ApiResult<()> {
    let Some(attrs) = body.get("attributes") else {
        return Ok(());
    };
    let Value::Array(attrs) = attrs else {
        return Err(ApiError::BadRequest("attributes must be a list".into()));
    };
    let now = Utc::now();
    for a in attrs {
        let existing = a
            .get("uuid")
            .and_then(Value::as_str)
            .filter(|u| v.attributes.iter().any(|x| &x.uuid == u));
        match existing {
            Some(u) => {
                let u = u.to_string();
                let value = a.get("value").unwrap_or(&Value::Null);
                attribute::change(v, catalog, &u, value, user, now)?;
            }
            None => {
                attribute::set(v, catalog, a, user, now)?;
            }
        }
    }
    Ok(())
}

fn check(state: &AppState, v: &VisitRecord) -> ApiResult<()> {
    let times = crate::domains::visit::times_held(&state.store, &v.uuid)?;
    let inv = crate::domains::visit::validate(&state.clinic(), v, &times, Utc::now())?;
    if inv.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid(inv))
    }
}

/// A new visit from a REST-shaped body (`POST visit`, or a visit written out in full inside
/// a new encounter, as the fast data entry app sends it), checked for its own fields; the
/// rules that read the patient's other visits (`check_new`) come under the write lock.
/// `now` is the time of the request: a visit written out with its encounter starts, when it
/// names no start, at the same instant as an encounter that names no time.
pub(crate) fn new_visit(
    state: &AppState,
    body: &Map<String, Value>,
    user: &str,
    now: chrono::DateTime<Utc>,
) -> ApiResult<VisitRecord> {
    only_known(body, VISIT_FIELDS)?;
    let patient = opt_ref(body, "patient")?
        .ok_or_else(|| ApiError::invalid_field("patient", "error.null", "Patient is required"))?;
    match state.store.patient(&patient)? {
        Some(p) if !p.voided => {}
        _ => {
            return Err(ApiError::invalid_field(
                "patient",
                "error.invalid",
                "Patient does not exist",
            ));
        }
    }
    if opt_ref(body, "visitType")?.is_none() {
        return Err(ApiError::invalid_field(
            "visitType",
            "error.null",
            "Visit type is required",
        ));
    }
    let uuid = opt_str(body, "uuid")?.unwrap_or_else(crate::store::record::new_uuid);
    let mut v = VisitRecord {
        v: 1,
        uuid,
        patient,
        visit_type: String::new(),
        location: None,
        indication: None,
        start: datetime_key(now),
        stop: None,
        audit: Audit::new(user, now),
        voiding: Voiding::default(),
        attributes: Vec::new(),
    };
    apply(&mut v, body)?;
    apply_attributes(&mut v, &state.catalog.load(), body, user)?;
    Ok(v)
}

/// The rules of a new visit against what is stored (its uuid unused, the patient's other
/// visits); the caller holds the store's write lock, so that two new visits checked at once
/// cannot each find none.
pub(crate) fn check_new(state: &AppState, v: &VisitRecord) -> ApiResult<()> {
    if store::get(&state.store, &v.uuid)?.is_some() {
        return Err(ApiError::BadRequest(format!(
            "A visit with uuid {} already exists",
            v.uuid
        )));
    }
    check(state, v)
}

pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Visits"])?;
    let user = caller.user_uuid();
    let v = new_visit(&state, &body, &user, Utc::now())?;
    let rep = rep_of(&query)?;
    let st = state.clone();
    let v = blocking(move || {
        let _one_writer = st.store.write_lock();
        check_new(&st, &v)?;
        store::put(&st.store, None, &v)?;
        Ok(v)
    })
    .await?;
    answer(&state, &caller, &VisitRes(&v), &rep, StatusCode::CREATED)
}

pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Visits"])?;
    only_known(&body, VISIT_FIELDS)?;
    if body.contains_key("patient") {
        return Err(ApiError::BadRequest(
            "The patient of a visit cannot be changed".into(),
        ));
    }
    let user = caller.user_uuid();
    let rep = rep_of(&query)?;
    let st = state.clone();
    let v = blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let mut v = old.clone();
        apply(&mut v, &body)?;
        apply_attributes(&mut v, &st.catalog.load(), &body, &user)?;
        // `voided` is accepted on every update, as webservices.rest's data resources accept
        // it: true voids the visit as DELETE does (with what it holds), false restores it.
        let voided_now = apply_voided(&body, &mut v.voiding, &user, Utc::now())?;
        v.audit.changed(&user, Utc::now());
        let mut effects = Vec::new();
        if voided_now {
            let reason = v.voiding.void_reason.clone().unwrap_or_default();
            effects = crate::domains::visit::voiding_effects(&st.store, &v.uuid, &user, &reason)?;
        } else {
            check(&st, &v)?;
            if let Some(why) = crate::domains::visit::refusal(&st.store, &v)? {
                return Err(ApiError::BadRequest(why.into()));
            }
            // Ending the visit ends its queue entries with it, and frees its patients' beds.
            if let (None, Some(stop)) = (&old.stop, &v.stop) {
                effects = crate::domains::visit::ending_effects(&st.store, &v.uuid, stop, &user)?;
            }
        }
        st.store.write(|txn| {
            store::put_in(txn, Some(&old), &v)?;
            effects.into_iter().try_for_each(|effect| effect(txn))
        })?;
        Ok(v)
    })
    .await?;
    answer(&state, &caller, &VisitRes(&v), &rep, StatusCode::OK)
}

pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Visits"])?;
    let v = store::get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &VisitRes(&v),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE visit/{uuid}`: voids it (with `reason`), and the encounters it holds with it;
/// `?purge=true` removes a visit without encounters for good.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let purge = flag(&query, "purge").unwrap_or(false);
    caller.require(&[if purge {
        "Purge Visits"
    } else {
        "Delete Visits"
    }])?;
    let user = caller.user_uuid();
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if purge {
            if let Some(kind) = crate::domains::visit::held_against_purge(&st.store, &uuid)? {
                return Err(ApiError::BadRequest(format!(
                    "A visit with {kind} cannot be purged; void it instead"
                )));
            }
            return store::purge(&st.store, &old).map_err(ApiError::from);
        }
        if old.voiding.voided {
            return Ok(());
        }
        let mut v = old.clone();
        v.voiding.void(&user, Utc::now(), &reason);
        // Its encounters and their observations, its queue entries and its patients' beds
        // go with it, in one transaction.
        let effects = crate::domains::visit::voiding_effects(&st.store, &uuid, &user, &reason)?;
        st.store
            .write(|txn| {
                store::put_in(txn, Some(&old), &v)?;
                effects.into_iter().try_for_each(|effect| effect(txn))
            })
            .map_err(ApiError::from)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET visit[?patient=][&includeInactive=][&fromStartDate=][&location=][&visitType=]`;
/// with `includeParentLocations=true`, visits at the location's ancestors count as at the
/// location (the active visits app lists the visits of the facility above a login room).
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Visits"])?;
    let q = VisitQuery {
        patient: param(&query, "patient").map(str::to_string),
        include_inactive: flag(&query, "includeInactive").unwrap_or(true),
        include_voided: flag(&query, "includeAll").unwrap_or(false),
        from_start: match param(&query, "fromStartDate") {
            Some(s) => Some(
                crate::wire::parse_datetime(s)
                    .map(datetime_key)
                    .ok_or_else(|| {
                        ApiError::BadRequest(format!("fromStartDate: '{s}' is not a date"))
                    })?,
            ),
            None => None,
        },
        location: param(&query, "location").map(|l| {
            let catalog = state.catalog.load();
            // The parameter as given (a visit may have been made naming its location) and
            // the location's uuid, as visits store it.
            let mut chain = vec![l.to_string()];
            if let Some(x) = catalog.location(l).filter(|x| x.uuid != l) {
                chain.push(x.uuid.clone());
            }
            if flag(&query, "includeParentLocations").unwrap_or(false) {
                // Bounded by the number of locations, so a cycle in the content cannot loop.
                let mut at = catalog.location(l);
                for _ in 0..catalog.content.locations.len() {
                    match at
                        .and_then(|x| x.parent.as_deref())
                        .and_then(|p| catalog.location(p))
                    {
                        Some(parent) => {
                            chain.push(parent.uuid.clone());
                            at = Some(parent);
                        }
                        None => break,
                    }
                }
            }
            chain
        }),
        visit_type: param(&query, "visitType").map(str::to_string),
    };
    let paging = Paging::from_query(&query)?;
    let (visits, page) = store::list(&state.store, &q, window(&paging))?;
    page_answer(
        &state,
        &caller,
        &query,
        "/visit",
        &paging,
        &page,
        visits.iter().map(VisitRes),
    )
}

pub async fn visit_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Visit Types"])?;
    let catalog = state.catalog.load();
    let t = catalog
        .content
        .visit_types
        .iter()
        .find(|t| t.uuid == uuid || t.name == uuid)
        .ok_or(ApiError::NotFound)?;
    Ok(ok(render(
        &NamedRes("visittype", t),
        &rep_of(&query)?,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `GET visitattributetype[?q=]`: the content's visit attribute types (retired ones with
/// `includeAll`), by name — privilege: Get Visit Attribute Types.
pub async fn attribute_types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Visit Attribute Types"])?;
    let catalog = state.catalog.load();
    let include_retired = flag(&query, "includeAll").unwrap_or(false);
    let q = param(&query, "q").map(str::to_lowercase);
    let mut found: Vec<&model::AttributeType> = attribute::types(&catalog)
        .filter(|t| include_retired || !t.retired)
        .filter(|t| {
            q.as_deref()
                .is_none_or(|q| t.name.to_lowercase().contains(q))
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    let paging = Paging::from_query(&query)?;
    crate::http::answer::list_answer(
        &state,
        &caller,
        &query,
        "/visitattributetype",
        &paging,
        found.into_iter().map(VisitAttributeTypeRes).collect(),
    )
}

/// `GET visitattributetype/{uuid or name}`.
pub async fn attribute_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Visit Attribute Types"])?;
    let catalog = state.catalog.load();
    let t = attribute::find_type(&catalog, &uuid).ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &VisitAttributeTypeRes(t),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `GET visit/{uuid}/attribute[?includeAll=true]`: the visit's active attributes (voided
/// ones too with `includeAll`) — privilege: Get Visits.
pub async fn attributes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(visit): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Visits"])?;
    let v = store::get(&state.store, &visit)?.ok_or(ApiError::NotFound)?;
    let paging = Paging::from_query(&query)?;
    let include_voided = flag(&query, "includeAll").unwrap_or(false);
    let items: Vec<VisitAttributeRes> = v
        .attributes
        .iter()
        .filter(|a| include_voided || !a.voiding.voided)
        .map(|attribute| VisitAttributeRes {
            visit: &v.uuid,
            attribute,
        })
        .collect();
    crate::http::answer::list_answer(
        &state,
        &caller,
        &query,
        &format!("/visit/{visit}/attribute"),
        &paging,
        items,
    )
}

/// `GET visit/{uuid}/attribute/{attribute}` (a voided one too).
pub async fn attribute_read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((visit, uuid)): Path<(String, String)>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Visits"])?;
    let v = store::get(&state.store, &visit)?.ok_or(ApiError::NotFound)?;
    let attribute = v
        .attributes
        .iter()
        .find(|a| a.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &VisitAttributeRes {
            visit: &v.uuid,
            attribute,
        },
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// A change to one visit's attributes under the clinical write lock, checked as the
/// visit is; answers the visit and the attribute `change` names.
async fn change_attributes(
    state: &Arc<AppState>,
    caller: &Caller,
    visit: String,
    change: impl FnOnce(&mut VisitRecord, &crate::catalog::Catalog, &str) -> ApiResult<String>
    + Send
    + 'static,
) -> ApiResult<(VisitRecord, String)> {
    caller.require(&["Edit Visits"])?;
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &visit)?.ok_or(ApiError::NotFound)?;
        if old.voiding.voided {
            return Err(ApiError::BadRequest(
                "The attributes of a voided visit cannot change".into(),
            ));
        }
        let mut v = old.clone();
        let attribute = change(&mut v, &st.catalog.load(), &user)?;
        v.audit.changed(&user, Utc::now());
        check(&st, &v)?;
        store::put(&st.store, Some(&old), &v)?;
        Ok((v, attribute))
    })
    .await
}

fn attribute_answer(
    state: &AppState,
    caller: &Caller,
    v: &VisitRecord,
    uuid: &str,
    query: &[(String, String)],
    status: StatusCode,
) -> ApiResult<Response> {
    let attribute = v
        .attributes
        .iter()
        .find(|a| a.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    answer(
        state,
        caller,
        &VisitAttributeRes {
            visit: &v.uuid,
            attribute,
        },
        &rep_of(query)?,
        status,
    )
}

/// `POST visit/{uuid}/attribute` `{attributeType, value}` — privilege: Edit Visits.
pub async fn attribute_create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(visit): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    only_known(&body, &["attributeType", "value", "uuid"])?;
    let body = Value::Object(body);
    let (v, uuid) = change_attributes(&state, &caller, visit, move |v, catalog, user| {
        attribute::set(v, catalog, &body, user, Utc::now())
    })
    .await?;
    attribute_answer(&state, &caller, &v, &uuid, &query, StatusCode::CREATED)
}

/// `POST visit/{uuid}/attribute/{attribute}` `{value}` — privilege: Edit Visits.
pub async fn attribute_update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((visit, uuid)): Path<(String, String)>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    only_known(&body, &["value", "attributeType", "uuid"])?;
    let value = body.get("value").cloned().unwrap_or(Value::Null);
    let (v, uuid) = change_attributes(&state, &caller, visit, move |v, catalog, user| {
        if let Some(t) = body
            .get("attributeType")
            .and_then(crate::http::body::ref_uuid)
        {
            let current = v.attributes.iter().find(|a| a.uuid == uuid);
            if current.is_some_and(|a| a.attribute_type != t) {
                return Err(ApiError::BadRequest(
                    "The type of an attribute cannot be changed".into(),
                ));
            }
        }
        attribute::change(v, catalog, &uuid, &value, user, Utc::now())?;
        Ok(uuid)
    })
    .await?;
    attribute_answer(&state, &caller, &v, &uuid, &query, StatusCode::OK)
}

/// `DELETE visit/{uuid}/attribute/{attribute}[?reason=]`: voids it (kept in the visit) —
/// privilege: Edit Visits.
pub async fn attribute_delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((visit, uuid)): Path<(String, String)>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    change_attributes(&state, &caller, visit, move |v, _, user| {
        let a = v
            .attributes
            .iter_mut()
            .find(|a| a.uuid == uuid)
            .ok_or(ApiError::NotFound)?;
        if !a.voiding.voided {
            a.voiding.void(user, Utc::now(), &reason);
        }
        Ok(uuid)
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
            &paths.rest("/visit"),
            get(crate::domains::visit::rest::search).post(crate::domains::visit::rest::create),
        )
        .route(
            &paths.rest("/visit/{uuid}"),
            get(crate::domains::visit::rest::read)
                .post(crate::domains::visit::rest::update)
                .delete(crate::domains::visit::rest::delete),
        )
        .route(
            &paths.rest("/visit/{uuid}/attribute"),
            get(crate::domains::visit::rest::attributes)
                .post(crate::domains::visit::rest::attribute_create),
        )
        .route(
            &paths.rest("/visit/{uuid}/attribute/{attribute}"),
            get(crate::domains::visit::rest::attribute_read)
                .post(crate::domains::visit::rest::attribute_update)
                .delete(crate::domains::visit::rest::attribute_delete),
        )
        .route(
            &paths.rest("/visittype/{uuid}"),
            get(crate::domains::visit::rest::visit_type),
        )
        .route(
            &paths.rest("/visitattributetype"),
            get(crate::domains::visit::rest::attribute_types),
        )
        .route(
            &paths.rest("/visitattributetype/{uuid}"),
            get(crate::domains::visit::rest::attribute_type),
        )
}
