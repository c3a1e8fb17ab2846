//! `relationship` over REST, in OpenMRS's wire shapes: search by person (either side),
//! `personA` or `personB`, read, create, update (type and dates), void and purge.

use crate::content::metadata::RelationshipTypeRes;
use crate::domains::relationship::{RelationshipRecord, store};
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, nest, rep_of};
use crate::http::body::{apply_voided, client_uuid, only_known, opt_datetime, opt_ref};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use crate::wire::{datetime_key, wire_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct RelationshipRes(pub RelationshipRecord);

fn person_name(ctx: &Ctx, uuid: &str) -> String {
    crate::domains::provider::patient_name(ctx.store, uuid).unwrap_or_default()
}

fn person_ref(ctx: &Ctx, uuid: &str) -> Value {
    json!({
        "uuid": uuid,
        "display": person_name(ctx, uuid),
        "links": [ctx.link("self", &format!("person/{uuid}"), "person", "")],
    })
}

impl Resource for RelationshipRes {
    fn alias(&self) -> &'static str {
        "relationship"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    /// As OpenMRS writes it: "A is the aIsToB of B".
    fn display(&self, ctx: &Ctx) -> String {
        let a_is_to_b = ctx
            .catalog
            .content
            .relationship_types
            .iter()
            .find(|t| t.uuid == self.0.relationship_type)
            .map(|t| t.a_is_to_b.as_str())
            .unwrap_or_default();
        format!(
            "{} is the {a_is_to_b} of {}",
            person_name(ctx, &self.0.person_a),
            person_name(ctx, &self.0.person_b)
        )
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("personA", Rep::Ref),
            ("relationshipType", Rep::Ref),
            ("personB", Rep::Ref),
            ("voided", Rep::Default),
            ("startDate", Rep::Default),
            ("endDate", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("personA", Rep::Ref),
            ("relationshipType", Rep::Default),
            ("personB", Rep::Ref),
            ("voided", Rep::Default),
            ("startDate", Rep::Default),
            ("endDate", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "personA" => person_ref(ctx, &self.0.person_a),
            "personB" => person_ref(ctx, &self.0.person_b),
            "relationshipType" => nest(
                ctx.catalog
                    .content
                    .relationship_types
                    .iter()
                    .find(|t| t.uuid == self.0.relationship_type)
                    .map(RelationshipTypeRes),
                rep,
                ctx,
            ),
            "voided" => json!(self.0.voiding.voided),
            "startDate" => self
                .0
                .start_date
                .as_deref()
                .map_or(Value::Null, wire_datetime),
            "endDate" => self
                .0
                .end_date
                .as_deref()
                .map_or(Value::Null, wire_datetime),
            "auditInfo" => audit_info(&self.0.audit, ctx),
            _ => return None,
        })
    }
}

/// `relationship?person=` (either side), `?personA=`, `?personB=` (both may be given),
/// voided ones only with `includeAll=true`. A listing names a person: OpenMRS refuses a
/// search without one, and so does this server.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Relationships"])?;
    let include_all = flag(&query, "includeAll").unwrap_or(false);
    let (person, a, b) = (
        param(&query, "person"),
        param(&query, "personA"),
        param(&query, "personB"),
    );
    let Some(anchor) = person.or(a).or(b) else {
        return Err(ApiError::BadRequest(
            "A relationship search names a person: person, personA or personB".into(),
        ));
    };
    let items: Vec<RelationshipRes> = store::of_person(&state.store, anchor, include_all)?
        .into_iter()
        .filter(|r| person.is_none_or(|p| r.person_a == p || r.person_b == p))
        .filter(|r| a.is_none_or(|p| r.person_a == p))
        .filter(|r| b.is_none_or(|p| r.person_b == p))
        .map(RelationshipRes)
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/relationship",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Relationships"])?;
    let r = store::get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    Ok(crate::http::ok(render(
        &RelationshipRes(r),
        &rep_of(&query)?,
        &ctx,
    )?))
}

/// Checks a relationship against `RelationshipValidator`'s rules.
fn check(state: &AppState, r: &RelationshipRecord, mut inv: Invalid) -> ApiResult<()> {
    for (field, person) in [("personA", &r.person_a), ("personB", &r.person_b)] {
        if person.is_empty() {
            inv.field(field, "error.null", &format!("{field} is required"));
        } else if state.store.patient(person)?.is_none() {
            inv.field(
                field,
                "error.invalid",
                &format!("Person {person} does not exist"),
            );
        }
    }
    if !r.person_a.is_empty() && r.person_a == r.person_b {
        inv.field(
            "personB",
            "Relationship.error.samePerson",
            "A person cannot be related to themselves",
        );
    }
    let catalog = state.catalog.load();
    match catalog
        .content
        .relationship_types
        .iter()
        .find(|t| t.uuid == r.relationship_type)
    {
        Some(t) if !t.retired => {}
        _ => inv.field(
            "relationshipType",
            "error.invalid",
            &format!("Relationship type '{}' does not exist", r.relationship_type),
        ),
    }
    let today = datetime_key(chrono::Utc::now());
    if r.start_date.as_deref().is_some_and(|d| d > today.as_str()) {
        inv.field(
            "startDate",
            "Relationship.InvalidStartDate.error",
            "The start date cannot be in the future",
        );
    }
    if let (Some(start), Some(end)) = (&r.start_date, &r.end_date)
        && end < start
    {
        inv.field(
            "endDate",
            "Relationship.InvalidEndDate.error",
            "The end date cannot be before the start date",
        );
    }
    if inv.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid(inv))
    }
}

const FIELDS: &[&str] = &[
    "uuid",
    "personA",
    "relationshipType",
    "personB",
    "startDate",
    "endDate",
    "voided",
    "voidReason",
];

/// `POST relationship`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Relationships"])?;
    only_known(&body, FIELDS)?;
    let user = caller.user_uuid();
    let record = RelationshipRecord {
        v: 1,
        uuid: client_uuid(&body)?,
        person_a: opt_ref(&body, "personA")?.unwrap_or_default(),
        relationship_type: opt_ref(&body, "relationshipType")?.unwrap_or_default(),
        person_b: opt_ref(&body, "personB")?.unwrap_or_default(),
        start_date: opt_datetime(&body, "startDate")?,
        end_date: opt_datetime(&body, "endDate")?,
        audit: Audit::new(&user, chrono::Utc::now()),
        voiding: Voiding::default(),
    };
    let st = state.clone();
    let record = blocking(move || {
        let _one_writer = st.store.write_lock();
        if store::get(&st.store, &record.uuid)?.is_some() {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "A relationship has this uuid already",
            ));
        }
        check(&st, &record, Invalid::default())?;
        store::put(&st.store, &record)?;
        Ok(record)
    })
    .await?;
    answer(
        &state,
        &caller,
        &RelationshipRes(record),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// `POST relationship/{uuid}`: its type and dates (a change of persons is a new
/// relationship, as in OpenMRS's data model where persons are the relationship).
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Relationships"])?;
    only_known(&body, FIELDS)?;
    let user = caller.user_uuid();
    let change = Change::read(&body)?;
    let st = state.clone();
    let record = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut r = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let mut inv = Invalid::default();
        for (field, given, current) in [
            ("personA", &change.person_a, &r.person_a),
            ("personB", &change.person_b, &r.person_b),
        ] {
            if given.as_ref().is_some_and(|g| g != current) {
                inv.field(
                    field,
                    "error.invalid",
                    "The persons of a relationship do not change: void it and make another",
                );
            }
        }
        if let Some(t) = change.relationship_type {
            r.relationship_type = t;
        }
        if let Some(d) = change.start_date {
            r.start_date = d;
        }
        if let Some(d) = change.end_date {
            r.end_date = d;
        }
        let now = chrono::Utc::now();
        // `voided` voids or restores it, as webservices.rest's data resources allow. A voided
        // relationship is not checked again, but a change of persons is still refused.
        if apply_voided(&body, &mut r.voiding, &user, now)? {
            if !inv.is_empty() {
                return Err(ApiError::Invalid(inv));
            }
        } else {
            check(&st, &r, inv)?;
        }
        r.audit.changed_by = Some(user.clone());
        r.audit.date_changed = Some(datetime_key(now));
        store::put(&st.store, &r)?;
        Ok(r)
    })
    .await?;
    answer(
        &state,
        &caller,
        &RelationshipRes(record),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// What an update asks: absent fields stay `None`; a date given as null clears it.
struct Change {
    person_a: Option<String>,
    person_b: Option<String>,
    relationship_type: Option<String>,
    start_date: Option<Option<String>>,
    end_date: Option<Option<String>>,
}

impl Change {
    fn read(body: &Map<String, Value>) -> ApiResult<Change> {
        let date = |field: &str| -> ApiResult<Option<Option<String>>> {
            match body.get(field) {
                None => Ok(None),
                Some(Value::Null) => Ok(Some(None)),
                Some(_) => opt_datetime(body, field).map(Some),
            }
        };
        Ok(Change {
            person_a: opt_ref(body, "personA")?,
            person_b: opt_ref(body, "personB")?,
            relationship_type: opt_ref(body, "relationshipType")?,
            start_date: date("startDate")?,
            end_date: date("endDate")?,
        })
    }
}

/// `DELETE relationship/{uuid}[?reason=]` voids it; `purge=true` removes it (privilege:
/// Purge Relationships).
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let purge = param(&query, "purge").is_some_and(|v| v == "true");
    caller.require(&[if purge {
        "Purge Relationships"
    } else {
        "Delete Relationships"
    }])?;
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut r = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if purge {
            store::purge(&st.store, &r)?;
        } else if !r.voiding.voided {
            r.voiding.void(&user, chrono::Utc::now(), &reason);
            store::put(&st.store, &r)?;
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
            &paths.rest("/relationship"),
            get(crate::domains::relationship::rest::search)
                .post(crate::domains::relationship::rest::create),
        )
        .route(
            &paths.rest("/relationship/{uuid}"),
            get(crate::domains::relationship::rest::read)
                .post(crate::domains::relationship::rest::update)
                .delete(crate::domains::relationship::rest::delete),
        )
        .route(
            &paths.fhir("/RelatedPerson"),
            get(crate::domains::relationship::fhir::search),
        )
        .route(
            &paths.fhir("/RelatedPerson/{id}"),
            get(crate::domains::relationship::fhir::read),
        )
}
