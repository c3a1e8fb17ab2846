//! `provider` over REST: search, read, create, update, retire and unretire, in OpenMRS's
//! wire shapes. The rules are those of OpenMRS's `ProviderValidator`: a provider is a
//! person or has a name, has an identifier no other provider has, and a retirement has a
//! reason. Providers are retired, never purged: encounters keep naming them.

use crate::domains::provider::{Provider, ProviderRecord, all, find, store};
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, rep_of};
use crate::http::body::{only_known, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use crate::wire::datetime_key;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// OpenMRS's `provider.identifier` and `provider.name` columns.
const IDENTIFIER_MAX: usize = 255;
const NAME_MAX: usize = 255;

pub struct ProviderRes(pub Provider);

impl ProviderRes {
    pub fn find(ctx: &Ctx, uuid: &str) -> Option<ProviderRes> {
        find(ctx.store, uuid).ok().flatten().map(ProviderRes)
    }
}

impl Resource for ProviderRes {
    fn alias(&self) -> &'static str {
        "provider"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        format!("{} - {}", self.0.identifier, self.0.name)
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("person", Rep::Ref),
            ("identifier", Rep::Default),
            ("attributes", Rep::Ref),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("person", Rep::Default),
            ("name", Rep::Default),
            ("identifier", Rep::Default),
            ("attributes", Rep::Default),
            ("retired", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "person" => match &self.0.person {
                Some((uuid, name)) => json!({
                    "uuid": uuid,
                    "display": name,
                    "links": [ctx.link("self", &format!("person/{uuid}"), "person", "")],
                }),
                None => Value::Null,
            },
            "identifier" => json!(self.0.identifier),
            // OpenMRS's `Provider.name`: the person's name when linked.
            "name" => json!(self.0.name),
            "attributes" => json!([]),
            "retired" => json!(self.0.retired),
            "retireReason" => json!(
                self.0
                    .record
                    .as_ref()
                    .and_then(|r| r.retiring.void_reason.clone())
            ),
            "auditInfo" => match &self.0.record {
                Some(r) => audit_info(&r.audit, ctx),
                None => match self.0.user.as_ref().and_then(|u| u.audit.as_ref()) {
                    Some(a) => audit_info(a, ctx),
                    None => Value::Null,
                },
            },
            _ => return None,
        })
    }
}

/// `provider?q=` (name or identifier, any case), `provider?user=`, or every provider;
/// retired ones only with `includeAll=true`.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Providers"])?;
    let include_all = flag(&query, "includeAll").unwrap_or(false);
    let q = param(&query, "q").map(str::to_lowercase);
    let user = param(&query, "user");
    let items: Vec<ProviderRes> = all(&state.store)?
        .into_iter()
        .filter(|p| include_all || !p.retired)
        .filter(|p| user.is_none_or(|x| p.user.as_ref().is_some_and(|u| u.uuid == x)))
        .filter(|p| {
            q.as_ref().is_none_or(|q| {
                p.name.to_lowercase().contains(q)
                    || p.identifier.to_lowercase().contains(q)
                    || p.user
                        .as_ref()
                        .is_some_and(|u| u.username.to_lowercase().contains(q))
            })
        })
        .map(ProviderRes)
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/provider",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Providers"])?;
    let p = find(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    Ok(crate::http::ok(render(
        &ProviderRes(p),
        &rep_of(&query)?,
        &ctx,
    )?))
}

/// What a create or an update asks, read from the body (absent fields stay `None`).
struct Change {
    person: Option<Option<String>>,
    name: Option<Option<String>>,
    identifier: Option<String>,
    retired: Option<bool>,
    retire_reason: Option<String>,
}

fn read_change(body: &Map<String, Value>, inv: &mut Invalid) -> ApiResult<Change> {
    only_known(
        body,
        &[
            "uuid",
            "person",
            "name",
            "identifier",
            "retired",
            "retireReason",
            "attributes",
        ],
    )?;
    match body.get("attributes") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) if a.is_empty() => {}
        Some(_) => inv.field(
            "attributes",
            "error.invalid",
            "This distribution defines no provider attribute types",
        ),
    }
    let person = match body.get("person") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(_) => Some(opt_ref(body, "person")?),
    };
    let name = match body.get("name") {
        None => None,
        Some(_) => Some(
            opt_str(body, "name")?
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
        ),
    };
    if let Some(Some(n)) = &name
        && (n.chars().count() > NAME_MAX || n.chars().any(char::is_control))
    {
        inv.field(
            "name",
            "error.invalid",
            &format!("A name has at most {NAME_MAX} characters, none of them control characters"),
        );
    }
    let identifier = opt_str(body, "identifier")?.map(|s| s.trim().to_string());
    if let Some(i) = &identifier
        && (i.chars().count() > IDENTIFIER_MAX || i.chars().any(char::is_control))
    {
        inv.field(
            "identifier",
            "error.invalid",
            &format!(
                "An identifier has at most {IDENTIFIER_MAX} characters, none of them control characters"
            ),
        );
    }
    let retired = match body.get("retired") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(ApiError::BadRequest("retired must be true or false".into())),
    };
    let retire_reason = opt_str(body, "retireReason")?
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    Ok(Change {
        person,
        name,
        identifier,
        retired,
        retire_reason,
    })
}

/// Whether `person` is a person of this system: an account's or a patient's.
fn person_exists(state: &AppState, person: &str) -> ApiResult<bool> {
    Ok(state.store.users()?.iter().any(|u| u.person_uuid == person)
        || state.store.patient(person)?.is_some())
}

/// Applies a change to a record and checks `ProviderValidator`'s rules against the others.
fn apply(
    state: &AppState,
    mut record: ProviderRecord,
    change: Change,
    user: &str,
    mut inv: Invalid,
) -> ApiResult<ProviderRecord> {
    let now = chrono::Utc::now();
    if let Some(p) = change.person {
        record.person = p;
    }
    if let Some(n) = change.name {
        record.name = n;
    }
    if let Some(i) = change.identifier {
        record.identifier = i;
    }
    if let Some(p) = &record.person
        && !person_exists(state, p)?
    {
        inv.field(
            "person",
            "error.invalid",
            &format!("Person {p} does not exist"),
        );
    }
    if record.person.is_none() && record.name.is_none() {
        inv.field(
            "name",
            "Provider.error.personOrName.required",
            "A provider is a person or has a name",
        );
    }
    if record.identifier.is_empty() {
        inv.field(
            "identifier",
            "Provider.error.identifier.required",
            "Identifier is required",
        );
    } else if all(&state.store)?.iter().any(|p| {
        p.uuid != record.uuid
            && p.identifier.eq_ignore_ascii_case(&record.identifier)
            // An account's own provider gives way to the one made for its person.
            && !(p.record.is_none() && p.person.as_ref().map(|(u, _)| u) == record.person.as_ref())
    }) {
        inv.field(
            "identifier",
            "Provider.error.duplicateIdentifier",
            &format!("Another provider has identifier {}", record.identifier),
        );
    }
    match change.retired {
        Some(true) if !record.retiring.voided => match change.retire_reason {
            Some(reason) => record.retiring.void(user, now, &reason),
            None => inv.field(
                "retireReason",
                "error.null",
                "A reason is required to retire a provider",
            ),
        },
        Some(false) => record.retiring = Voiding::default(),
        _ => {}
    }
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }
    record.audit.changed_by = Some(user.to_string());
    record.audit.date_changed = Some(datetime_key(now));
    Ok(record)
}

/// The record a write starts from: the stored one, or an account's own provider made
/// managed under its uuid (retired if the account is); 404 when there is no such provider.
fn stored_or_materialised(state: &AppState, uuid: &str, user: &str) -> ApiResult<ProviderRecord> {
    if let Some(r) = store::provider(&state.store, uuid)? {
        return Ok(r);
    }
    let p = find(&state.store, uuid)?.ok_or(ApiError::NotFound)?;
    let now = chrono::Utc::now();
    let mut retiring = Voiding::default();
    if p.retired {
        retiring.void(user, now, "the account is retired");
    }
    Ok(ProviderRecord {
        v: 1,
        uuid: p.uuid,
        person: p.person.map(|(uuid, _)| uuid),
        name: None,
        identifier: p.identifier,
        audit: Audit::new(user, now),
        retiring,
    })
}

/// `POST provider`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Providers"])?;
    let mut inv = Invalid::default();
    let change = read_change(&body, &mut inv)?;
    let uuid = crate::http::body::client_uuid(&body)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let record = blocking(move || {
        let _one_writer = st.store.write_lock();
        if find(&st.store, &uuid)?.is_some() {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "A provider has this uuid already",
            ));
        }
        let fresh = ProviderRecord {
            v: 1,
            uuid,
            person: None,
            name: None,
            identifier: String::new(),
            audit: Audit::new(&user, chrono::Utc::now()),
            retiring: Voiding::default(),
        };
        let mut record = apply(&st, fresh, change, &user, inv)?;
        record.audit.changed_by = None;
        record.audit.date_changed = None;
        store::put(&st.store, &record)?;
        Ok(record)
    })
    .await?;
    tracing::info!(provider = %record.uuid, by = %caller.user_uuid(), "provider created");
    respond(&state, &caller, &record.uuid, &query, StatusCode::CREATED)
}

/// `POST provider/{uuid}`: identifier, name, person, retired (with `retireReason`).
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Providers"])?;
    let mut inv = Invalid::default();
    let change = read_change(&body, &mut inv)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let id = uuid.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let record = stored_or_materialised(&st, &id, &user)?;
        let record = apply(&st, record, change, &user, inv)?;
        store::put(&st.store, &record)?;
        Ok(())
    })
    .await?;
    respond(&state, &caller, &uuid, &query, StatusCode::OK)
}

/// `DELETE provider/{uuid}[?reason=]`: retires it. `purge=true` is refused: encounters
/// keep naming their providers.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Manage Providers"])?;
    if param(&query, "purge").is_some_and(|v| v == "true") {
        return Err(ApiError::BadRequest(
            "Providers are retired, not purged, so that the encounters they recorded keep them"
                .into(),
        ));
    }
    let reason = param(&query, "reason")
        .unwrap_or("retired through the API")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut record = stored_or_materialised(&st, &uuid, &user)?;
        if !record.retiring.voided {
            record.retiring.void(&user, chrono::Utc::now(), &reason);
            store::put(&st.store, &record)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn respond(
    state: &AppState,
    caller: &Caller,
    uuid: &str,
    query: &[(String, String)],
    status: StatusCode,
) -> ApiResult<Response> {
    let p = find(&state.store, uuid)?.ok_or(ApiError::NotFound)?;
    answer(state, caller, &ProviderRes(p), &rep_of(query)?, status)
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/provider"),
            get(crate::domains::provider::rest::search)
                .post(crate::domains::provider::rest::create),
        )
        .route(
            &paths.rest("/provider/{uuid}"),
            get(crate::domains::provider::rest::read)
                .post(crate::domains::provider::rest::update)
                .delete(crate::domains::provider::rest::delete),
        )
        .route(
            &paths.fhir("/Practitioner"),
            get(crate::domains::provider::fhir::search),
        )
        .route(
            &paths.fhir("/Practitioner/{id}"),
            get(crate::domains::provider::fhir::read),
        )
}
