//! `role` and `privilege`: the content's (read-only) and the API's (create, update,
//! retire, purge). Privileges: Get Roles / Manage Roles, Get Privileges / Manage Privileges.

use crate::access::{
    Access, PrivilegeRecord, RoleRecord, privilege_exists, privilege_named, role_exists, role_named,
};
use crate::catalog::Catalog;
use crate::domains::role::store;
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, rep_of};
use crate::http::body::{only_known, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A role of the content or of the API.
enum RoleView<'a> {
    Content(&'a model::Role),
    Api(&'a RoleRecord),
}

/// What both kinds of role have.
struct RoleFields<'a> {
    uuid: &'a str,
    name: &'a str,
    description: Option<&'a str>,
    privileges: &'a [String],
    inherited: &'a [String],
    retired: bool,
}

impl<'a> RoleView<'a> {
    fn fields(&self) -> RoleFields<'a> {
        match *self {
            RoleView::Content(r) => RoleFields {
                uuid: &r.uuid,
                name: &r.name,
                description: r.description.as_deref(),
                privileges: &r.privileges,
                inherited: &r.inherited_roles,
                retired: false,
            },
            RoleView::Api(r) => RoleFields {
                uuid: &r.uuid,
                name: &r.name,
                description: r.description.as_deref(),
                privileges: &r.privileges,
                inherited: &r.inherited_roles,
                retired: r.retiring.voided,
            },
        }
    }
}

fn privilege_ref(name: &str, ctx: &Ctx, access: &Access) -> Value {
    let uuid = ctx
        .catalog
        .content
        .privileges
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .map(|p| p.uuid.clone())
        .or_else(|| access.privilege(name).map(|p| p.uuid.clone()));
    json!({"uuid": uuid, "display": name, "name": name})
}

/// A role by name as a reference: the content's or the API's (whose uuid the store keeps).
pub fn role_ref(name: &str, ctx: &Ctx, access: &Access) -> Value {
    let uuid = ctx
        .catalog
        .role(name)
        .map(|r| r.uuid.clone())
        .or_else(|| access.role(name).map(|r| r.uuid.clone()));
    json!({"uuid": uuid, "display": name, "name": name})
}

struct RoleRes<'a> {
    role: RoleView<'a>,
    access: &'a Access,
}

impl Resource for RoleRes<'_> {
    fn alias(&self) -> &'static str {
        "role"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.role.fields().uuid.to_string()
    }
    fn display(&self, _: &Ctx) -> String {
        self.role.fields().name.to_string()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.role.fields().retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("privileges", Rep::Ref),
            ("inheritedRoles", Rep::Ref),
            ("definedBy", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("privileges", Rep::Ref),
            ("inheritedRoles", Rep::Ref),
            ("allInheritedRoles", Rep::Ref),
            ("definedBy", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "name" => json!(self.display(ctx)),
            "description" => json!(self.role.fields().description),
            "retired" => json!(self.role.fields().retired),
            "privileges" => Value::Array(
                self.role
                    .fields()
                    .privileges
                    .iter()
                    .map(|p| privilege_ref(p, ctx, self.access))
                    .collect(),
            ),
            "inheritedRoles" => Value::Array(
                self.role
                    .fields()
                    .inherited
                    .iter()
                    .map(|r| role_ref(r, ctx, self.access))
                    .collect(),
            ),
            "allInheritedRoles" => Value::Array(
                all_inherited(self.role.fields().inherited, ctx.catalog, self.access)
                    .iter()
                    .map(|r| role_ref(r, ctx, self.access))
                    .collect(),
            ),
            // This project's own property: where the role comes from, so an administrator
            // knows which roles the API may change.
            "definedBy" => json!(match self.role {
                RoleView::Content(_) => "content",
                RoleView::Api(_) => "api",
            }),
            "auditInfo" => match &self.role {
                RoleView::Content(_) => Value::Null,
                RoleView::Api(r) => audit_info(&r.audit, ctx),
            },
            _ => return None,
        })
    }
}

/// Every role reached through inheritance from `roles` (not including them unless a cycle
/// leads back), sorted.
fn all_inherited(roles: &[String], catalog: &Catalog, access: &Access) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut stack: Vec<String> = roles.to_vec();
    while let Some(name) = stack.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(r) = catalog.role(&name) {
            stack.extend(r.inherited_roles.iter().cloned());
        } else if let Some(r) = access.role(&name) {
            stack.extend(r.inherited_roles.iter().cloned());
        }
    }
    seen.into_iter().collect()
}

struct PrivilegeRes<'a> {
    uuid: &'a str,
    name: &'a str,
    description: Option<&'a str>,
    defined_by: &'static str,
}

impl Resource for PrivilegeRes<'_> {
    fn alias(&self) -> &'static str {
        "privilege"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.uuid.to_string()
    }
    fn display(&self, _: &Ctx) -> String {
        self.name.to_string()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("definedBy", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "name" => json!(self.name),
            "description" => json!(self.description),
            "retired" => json!(false),
            "definedBy" => json!(self.defined_by),
            _ => return None,
        })
    }
}

fn privilege_views<'a>(catalog: &'a Catalog, access: &'a Access) -> Vec<PrivilegeRes<'a>> {
    let mut out: Vec<PrivilegeRes> = catalog
        .content
        .privileges
        .iter()
        .map(|p| PrivilegeRes {
            uuid: &p.uuid,
            name: &p.name,
            description: p.description.as_deref(),
            defined_by: "content",
        })
        .collect();
    out.extend(access.privileges.iter().map(|p| PrivilegeRes {
        uuid: &p.uuid,
        name: &p.name,
        description: p.description.as_deref(),
        defined_by: "api",
    }));
    out
}

fn role_views<'a>(catalog: &'a Catalog, access: &'a Access) -> Vec<RoleRes<'a>> {
    let mut out: Vec<RoleRes> = catalog
        .content
        .roles
        .iter()
        .map(|r| RoleRes {
            role: RoleView::Content(r),
            access,
        })
        .collect();
    out.extend(access.roles.iter().map(|r| RoleRes {
        role: RoleView::Api(r),
        access,
    }));
    out
}

fn matches_query(name: &str, query: &[(String, String)]) -> bool {
    param(query, "q").is_none_or(|q| name.to_lowercase().contains(&q.trim().to_lowercase()))
}

/// `GET role[?q=]` (retired API roles only with `includeAll=true`).
pub async fn list_roles(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Roles"])?;
    let catalog = state.catalog.load();
    let access = state.access.load();
    let include_all = param(&query, "includeAll").is_some_and(|v| v == "true");
    let views = role_views(&catalog, &access);
    let items = views.iter().filter(|r| {
        let f = r.role.fields();
        matches_query(f.name, &query) && (include_all || !f.retired)
    });
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/role",
        items.map(|r| r as &dyn Resource),
    )
}

/// `GET role/{uuid or name}`.
pub async fn read_role(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Roles"])?;
    let catalog = state.catalog.load();
    let access = state.access.load();
    let views = role_views(&catalog, &access);
    let role = views
        .iter()
        .find(|r| r.role.fields().uuid == id || r.role.fields().name == id)
        .ok_or(ApiError::NotFound)?;
    answer(&state, &caller, role, &rep_of(&query)?, StatusCode::OK)
}

/// A list of names from references given as names, uuids or objects with a `uuid`,
/// `name`, `role` or `display`, each resolved with `lookup` (uuid or name → canonical name);
/// one that does not resolve is a field error of `field`. Duplicates count once.
pub fn resolve_names(
    v: &Value,
    field: &str,
    lookup: impl Fn(&str) -> Option<String>,
    inv: &mut Invalid,
) -> ApiResult<Vec<String>> {
    let Value::Array(items) = v else {
        return Err(ApiError::BadRequest(format!("{field} must be a list")));
    };
    let mut out = Vec::new();
    for item in items {
        let key = match item {
            Value::String(s) => s.as_str(),
            Value::Object(o) => ["uuid", "name", "role", "display"]
                .iter()
                .find_map(|k| o.get(*k).and_then(Value::as_str))
                .unwrap_or_default(),
            _ => "",
        }
        .trim();
        match lookup(key) {
            Some(name) if !out.contains(&name) => out.push(name),
            Some(_) => {}
            None => inv.field(field, "error.invalid", &format!("'{key}' does not exist")),
        }
    }
    Ok(out)
}

/// `resolve_names` of a body's field, when it is there.
fn names(
    body: &Map<String, Value>,
    field: &str,
    lookup: impl Fn(&str) -> Option<String>,
    inv: &mut Invalid,
) -> ApiResult<Option<Vec<String>>> {
    body.get(field)
        .map(|v| resolve_names(v, field, lookup, inv))
        .transpose()
}

fn content_role_refused(name: &str) -> ApiError {
    ApiError::BadRequest(format!(
        "The role '{name}' is defined by the content package (roles/*.csv): change it there and rebuild or reload the content; the API may only change roles it created"
    ))
}

/// Whether `role` would reach itself through `inherited`.
fn creates_cycle(role: &str, inherited: &[String], catalog: &Catalog, access: &Access) -> bool {
    all_inherited(inherited, catalog, access)
        .iter()
        .any(|r| r.eq_ignore_ascii_case(role))
}

/// `POST role` and `POST role/{uuid}`.
pub async fn save_role(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    id: Option<Path<String>>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Roles"])?;
    only_known(
        &body,
        &[
            "name",
            "description",
            "privileges",
            "inheritedRoles",
            "retired",
        ],
    )?;
    let catalog = state.catalog.load();
    if let Some(Path(id)) = &id
        && let Some(r) = catalog
            .content
            .roles
            .iter()
            .find(|r| r.uuid == *id || r.name == *id)
    {
        return Err(content_role_refused(&r.name));
    }
    let user = caller.user_uuid();
    let st = state.clone();
    let creating = id.is_none();
    let saved = blocking(move || {
        let _one_writer = st.store.write_lock();
        let access = st.access.load();
        let catalog = st.catalog.load();
        let now = chrono::Utc::now();
        let mut role = match &id {
            None => RoleRecord {
                v: 1,
                uuid: uuid::Uuid::new_v4().to_string(),
                name: String::new(),
                description: None,
                privileges: vec![],
                inherited_roles: vec![],
                audit: Audit::new(&user, now),
                retiring: Voiding::default(),
            },
            Some(Path(id)) => access
                .roles
                .iter()
                .find(|r| r.uuid == *id || r.name == *id)
                .cloned()
                .ok_or(ApiError::NotFound)?,
        };
        let mut inv = Invalid::default();
        if let Some(name) = opt_str(&body, "name")? {
            let name = name.trim().to_string();
            if role_exists(&name, &catalog, &access) && !name.eq_ignore_ascii_case(&role.name) {
                inv.field(
                    "name",
                    "error.duplicate",
                    &format!("A role named '{name}' already exists"),
                );
            }
            if name.chars().count() > 50 || name.chars().any(char::is_control) {
                inv.field(
                    "name",
                    "error.invalid",
                    "A role's name has at most 50 characters, none of them control characters",
                );
            }
            role.name = name;
        }
        if role.name.is_empty() {
            inv.field("name", "error.null", "Name is required");
        }
        if body.contains_key("description") {
            role.description = opt_str(&body, "description")?;
        }
        if let Some(p) = names(
            &body,
            "privileges",
            |k| privilege_named(&catalog, &access, k),
            &mut inv,
        )? {
            role.privileges = p;
        }
        if let Some(r) = names(
            &body,
            "inheritedRoles",
            |k| role_named(&catalog, &access, k),
            &mut inv,
        )? {
            if creates_cycle(&role.name, &r, &catalog, &access)
                || r.iter().any(|x| x.eq_ignore_ascii_case(&role.name))
            {
                inv.field(
                    "inheritedRoles",
                    "error.invalid",
                    "A role cannot inherit from itself, directly or through other roles",
                );
            }
            role.inherited_roles = r;
        }
        match body.get("retired") {
            Some(Value::Bool(false)) => role.retiring.unvoid(),
            Some(Value::Bool(true)) => role.retiring.void(&user, now, "retired through the API"),
            None | Some(Value::Null) => {}
            Some(_) => return Err(ApiError::BadRequest("retired must be true or false".into())),
        }
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        if !creating {
            role.audit.changed(&user, now);
        }
        store::put_role(&st.store, &role)?;
        crate::domains::role::reload_access(&st.store, &st.access)?;
        Ok(role)
    })
    .await?;
    let access = state.access.load();
    answer(
        &state,
        &caller,
        &RoleRes {
            role: RoleView::Api(&saved),
            access: &access,
        },
        &rep_of(&query)?,
        if creating {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
    )
}

/// `POST role` (create).
pub async fn create_role(
    state: State<Arc<AppState>>,
    caller: Caller,
    query: QueryPairs,
    body: JsonBody,
) -> ApiResult<Response> {
    save_role(state, caller, None, query, body).await
}

/// `POST role/{uuid}` (update).
pub async fn update_role(
    state: State<Arc<AppState>>,
    caller: Caller,
    id: Path<String>,
    query: QueryPairs,
    body: JsonBody,
) -> ApiResult<Response> {
    save_role(state, caller, Some(id), query, body).await
}

/// `DELETE role/{uuid}[?reason=][&purge=true]`: retires an API role (or removes it);
/// the content's roles are refused.
pub async fn delete_role(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Manage Roles"])?;
    if let Some(r) = state
        .catalog
        .load()
        .content
        .roles
        .iter()
        .find(|r| r.uuid == id || r.name == id)
    {
        return Err(content_role_refused(&r.name));
    }
    let purge = param(&query, "purge").is_some_and(|v| v == "true");
    let reason = param(&query, "reason")
        .unwrap_or("retired through the API")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let access = st.access.load();
        let mut role = access
            .roles
            .iter()
            .find(|r| r.uuid == id || r.name == id)
            .cloned()
            .ok_or(ApiError::NotFound)?;
        if purge {
            store::remove_roles(&st.store, std::slice::from_ref(&role.uuid))?;
        } else {
            role.retiring.void(&user, chrono::Utc::now(), &reason);
            store::put_role(&st.store, &role)?;
        }
        crate::domains::role::reload_access(&st.store, &st.access)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET privilege[?q=]`.
pub async fn list_privileges(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Privileges"])?;
    let catalog = state.catalog.load();
    let access = state.access.load();
    let views = privilege_views(&catalog, &access);
    let items = views.iter().filter(|p| matches_query(p.name, &query));
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/privilege",
        items.map(|p| p as &dyn Resource),
    )
}

/// `GET privilege/{uuid or name}`.
pub async fn read_privilege(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Privileges"])?;
    let catalog = state.catalog.load();
    let access = state.access.load();
    let views = privilege_views(&catalog, &access);
    let p = views
        .iter()
        .find(|p| p.uuid == id || p.name.eq_ignore_ascii_case(&id))
        .ok_or(ApiError::NotFound)?;
    answer(&state, &caller, p, &rep_of(&query)?, StatusCode::OK)
}

/// `POST privilege` with `{name, description}`.
pub async fn create_privilege(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Privileges"])?;
    only_known(&body, &["name", "description"])?;
    let name = opt_str(&body, "name")?
        .unwrap_or_default()
        .trim()
        .to_string();
    let description = opt_str(&body, "description")?;
    let user = caller.user_uuid();
    let st = state.clone();
    let saved = blocking(move || {
        let _one_writer = st.store.write_lock();
        let access = st.access.load();
        let catalog = st.catalog.load();
        let mut inv = Invalid::default();
        if name.is_empty() {
            inv.field("name", "error.null", "Name is required");
        } else if privilege_exists(&name, &catalog, &access) {
            inv.field(
                "name",
                "error.duplicate",
                &format!("A privilege named '{name}' already exists"),
            );
        } else if name.chars().count() > 255 || name.chars().any(char::is_control) {
            inv.field(
                "name",
                "error.invalid",
                "A privilege's name has at most 255 characters, none of them control characters",
            );
        }
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        let p = PrivilegeRecord {
            v: 1,
            uuid: uuid::Uuid::new_v4().to_string(),
            name,
            description,
            audit: Audit::new(&user, chrono::Utc::now()),
        };
        store::put_privilege(&st.store, &p)?;
        crate::domains::role::reload_access(&st.store, &st.access)?;
        Ok(p)
    })
    .await?;
    answer(
        &state,
        &caller,
        &PrivilegeRes {
            uuid: &saved.uuid,
            name: &saved.name,
            description: saved.description.as_deref(),
            defined_by: "api",
        },
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/role"),
            get(crate::domains::role::rest::list_roles)
                .post(crate::domains::role::rest::create_role),
        )
        .route(
            &paths.rest("/role/{uuid}"),
            get(crate::domains::role::rest::read_role)
                .post(crate::domains::role::rest::update_role)
                .delete(crate::domains::role::rest::delete_role),
        )
        .route(
            &paths.rest("/privilege"),
            get(crate::domains::role::rest::list_privileges)
                .post(crate::domains::role::rest::create_privilege),
        )
        .route(
            &paths.rest("/privilege/{uuid}"),
            get(crate::domains::role::rest::read_privilege),
        )
}
