//! `user/{uuid}` reads (its representation, shared with `account`, which creates and
//! changes accounts) and `person/{uuid}` reads of patients' persons.

use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource, render};
use crate::http::{Caller, QueryPairs, ok, param};
use crate::store::UserRecord;
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

pub struct UserRes<'a>(pub &'a UserRecord);

impl Resource for UserRes<'_> {
    fn alias(&self) -> &'static str {
        "user"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.username.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("username", Rep::Default),
            ("systemId", Rep::Default),
            ("userProperties", Rep::Default),
            ("person", Rep::Ref),
            ("privileges", Rep::Ref),
            ("roles", Rep::Ref),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("username", Rep::Default),
            ("systemId", Rep::Default),
            ("userProperties", Rep::Default),
            ("person", Rep::Ref),
            ("privileges", Rep::Ref),
            ("roles", Rep::Ref),
            ("retired", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let u = self.0;
        Some(match name {
            "username" => json!(u.username),
            "systemId" => json!(u.system_id),
            "userProperties" => json!(u.properties),
            "person" => json!({"uuid": u.person_uuid, "display": u.person_name}),
            // Every privilege the roles grant, inheritance included (a System Developer's
            // are implicit, as in OpenMRS).
            "privileges" => {
                let access = ctx.access.load();
                let mut names: Vec<String> =
                    crate::access::privileges_of(&u.roles, ctx.catalog, &access)
                        .into_iter()
                        .collect();
                names.sort();
                Value::Array(
                    names
                        .iter()
                        .map(|p| {
                            let canonical = ctx
                                .catalog
                                .content
                                .privileges
                                .iter()
                                .find(|x| x.name.to_lowercase() == *p);
                            json!({"uuid": canonical.map(|x| x.uuid.clone()), "display": canonical.map_or(p.as_str(), |x| x.name.as_str()), "name": canonical.map_or(p.as_str(), |x| x.name.as_str())})
                        })
                        .collect(),
                )
            }
            "auditInfo" => match &u.audit {
                Some(a) => crate::http::answer::audit_info(a, ctx),
                None => Value::Null,
            },
            "roles" => Value::Array(
                u.roles
                    .iter()
                    .map(|r| crate::domains::role::rest::role_ref(r, ctx, &ctx.access.load()))
                    .collect(),
            ),
            "retired" => json!(u.retired),
            _ => return None,
        })
    }
}

/// A user reads and edits itself; others need Get Users / Edit Users.
fn may(caller: &Caller, uuid: &str, privilege: &str) -> ApiResult<()> {
    match &caller.user {
        Some(u) if u.uuid == uuid => Ok(()),
        _ => caller.require(&[privilege]),
    }
}

pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    may(&caller, &uuid, "Get Users")?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let user = state.store.user(&uuid)?.ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &UserRes(&user),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `GET person/{uuid}`: the person of a patient — privilege: Get People.
pub async fn person(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get People"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let patient = state.store.patient(&uuid)?.ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &crate::domains::patient::repr::PersonRes(&patient),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

/// Lists one patient's sub-resources (attributes, identifiers).
fn patient_sub_list(
    state: &AppState,
    caller: &Caller,
    uuid: &str,
    query: &[(String, String)],
    items: impl Fn(&crate::store::PatientRecord) -> Vec<Box<dyn Resource + '_>>,
) -> ApiResult<Response> {
    // A sub-resource's listing answers the default representation when none is asked, as
    // webservices.rest's sub-resource controller does (the fast data entry app reads an
    // identifier's `identifierType.uuid` from it).
    let rep = Rep::parse(param(query, "v"))?.unwrap_or(Rep::Default);
    let patient = state.store.patient(uuid)?.ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(state, &catalog);
    let values = items(&patient)
        .iter()
        .map(|r| render(r.as_ref(), &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(json!({"results": values})))
}

/// `GET person/{uuid}/attribute` — privilege: Get People.
pub async fn person_attributes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get People"])?;
    patient_sub_list(&state, &caller, &uuid, &query, |p| {
        p.attributes
            .iter()
            .map(|a| {
                Box::new(crate::domains::patient::repr::AttributeRes(&p.uuid, a))
                    as Box<dyn Resource>
            })
            .collect()
    })
}

/// `GET patient/{uuid}/identifier` — privilege: Get Patients.
pub async fn patient_identifiers(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    patient_sub_list(&state, &caller, &uuid, &query, |p| {
        p.identifiers
            .iter()
            .map(|i| {
                Box::new(crate::domains::patient::repr::IdentifierRes(&p.uuid, i))
                    as Box<dyn Resource>
            })
            .collect()
    })
}
