//! `user/{uuid}` (read, and `userProperties` update: default location and locale, recently
//! viewed patients) and `person/{uuid}` reads of patients' persons.

use super::{Caller, JsonBody, QueryPairs, blocking, ok, param};
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::repr::{Ctx, Props, Rep, Resource, render};
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
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let u = self.0;
        Some(match name {
            "username" => json!(u.username),
            "systemId" => json!(u.system_id),
            "userProperties" => json!(u.properties),
            "person" => json!({"uuid": u.person_uuid, "display": u.person_name}),
            "privileges" => json!([]),
            "roles" => Value::Array(
                u.roles
                    .iter()
                    .map(|r| json!({"uuid": ctx.catalog.role(r).map(|x| x.uuid.clone()), "display": r, "name": r}))
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
    let user = state
        .store
        .user(&uuid)
        .map_err(ApiError::from)?
        .ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &UserRes(&user),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `POST user/{uuid}` with `{"userProperties": {…}}`: the properties are replaced (O3
/// sends the whole set). Values must be strings.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    may(&caller, &uuid, "Edit Users")?;
    let unknown: Vec<&str> = body
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "userProperties")
        .collect();
    if !unknown.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "Some properties are not allowed to be set: {}",
            unknown.join(", ")
        )));
    }
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let mut user = state
        .store
        .user(&uuid)
        .map_err(ApiError::from)?
        .ok_or(ApiError::NotFound)?;
    if let Some(props) = body.get("userProperties") {
        let Value::Object(props) = props else {
            return Err(ApiError::BadRequest(
                "userProperties must be an object".into(),
            ));
        };
        let mut next = std::collections::BTreeMap::new();
        for (k, v) in props {
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Null => continue,
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => n.to_string(),
                _ => {
                    return Err(ApiError::BadRequest(format!(
                        "userProperties.{k} must be a string"
                    )));
                }
            };
            next.insert(k.clone(), v);
        }
        if let Some(l) = next.get("defaultLocale")
            && !l.is_empty()
            && super::session::allowed_locale(&state, l).is_none()
        {
            return Err(ApiError::BadRequest(format!(
                " '{l}' is not in the list of allowed locales."
            )));
        }
        user.properties = next;
    }
    let st = state.clone();
    let saved = user.clone();
    blocking(move || st.store.put_user(&saved).map_err(ApiError::from)).await?;
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
    let patient = state
        .index
        .read()
        .map_err(ApiError::internal)?
        .get(&uuid)
        .ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &super::patient::PersonRes(&patient),
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
    let rep = Rep::parse(param(query, "v"))?.unwrap_or(Rep::Ref);
    let patient = state
        .index
        .read()
        .map_err(ApiError::internal)?
        .get(uuid)
        .ok_or(ApiError::NotFound)?;
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
            .map(|a| Box::new(super::patient::AttributeRes(&p.uuid, a)) as Box<dyn Resource>)
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
            .map(|i| Box::new(super::patient::IdentifierRes(&p.uuid, i)) as Box<dyn Resource>)
            .collect()
    })
}
