//! `session`: who is calling, the login (GET with HTTP Basic creates a session and sets
//! its cookie), location and locale choice (POST), and logout (DELETE).
//! Locales are reported in BCP-47 form (`fr`, `en-GB`), as the project requires.

use crate::auth::bcp47;
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Rep, render};
use crate::http::{Caller, JsonBody, SESSION_COOKIE, ok};
use crate::store::UserRecord;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// The fixed user shape of the session resource.
fn user_json(state: &AppState, caller: &Caller, user: &UserRecord, base: &str) -> Value {
    let catalog = state.catalog.load();
    let privileges: Vec<Value> = if caller.grants.super_user {
        Vec::new()
    } else {
        let mut names: Vec<&String> = catalog
            .content
            .privileges
            .iter()
            .map(|p| &p.name)
            .filter(|p| caller.grants.holds_through_roles(p))
            .collect();
        names.sort();
        names
            .into_iter()
            .filter_map(|n| catalog.content.privileges.iter().find(|p| &p.name == n))
            .map(|p| json!({"uuid": p.uuid, "display": p.name, "name": p.name}))
            .collect()
    };
    let roles: Vec<Value> = user
        .roles
        .iter()
        .map(|r| {
            let uuid = catalog.role(r).map(|x| x.uuid.clone());
            json!({"uuid": uuid, "display": r, "name": r})
        })
        .collect();
    let link = |rel: &str, suffix: &str| json!({"rel": rel, "uri": format!("{base}/user/{}{suffix}", user.uuid), "resourceAlias": "user"});
    json!({
        "uuid": user.uuid,
        "display": user.username,
        "username": user.username,
        "systemId": user.system_id,
        "userProperties": user.properties,
        "person": {"uuid": user.person_uuid, "display": user.person_name},
        "privileges": privileges,
        "roles": roles,
        "links": [link("self", ""), link("default", "?v=default")],
        "resourceVersion": "1.8",
    })
}

pub fn session_body(state: &AppState, caller: &Caller) -> ApiResult<Value> {
    let catalog = state.catalog.load();
    let allowed: Vec<String> = catalog.allowed_locales().iter().map(|l| bcp47(l)).collect();
    let locale = bcp47(&caller.locale(&catalog));
    let Some(user) = &caller.user else {
        return Ok(json!({"authenticated": false, "locale": locale, "allowedLocales": allowed}));
    };
    let ctx = caller.ctx(state, &catalog);
    let location = caller
        .session
        .as_ref()
        .and_then(|s| s.location.as_deref())
        .and_then(|l| catalog.location(l))
        .map(|l| render(&crate::content::location::LocationRes(l), &Rep::Ref, &ctx))
        .transpose()?;
    let provider = crate::domains::provider::current_for(&state.store, user)?;
    Ok(json!({
        "authenticated": true,
        "locale": locale,
        "allowedLocales": allowed,
        "user": user_json(state, caller, user, &ctx.base),
        "sessionLocation": location,
        "currentProvider": provider.map(|p| {
            let res = crate::domains::provider::rest::ProviderRes(p);
            json!({
                "uuid": res.0.uuid,
                "display": crate::http::repr::Resource::display(&res, &ctx),
                "links": [{"rel": "self", "uri": format!("{}/provider/{}", ctx.base, res.0.uuid), "resourceAlias": "provider"}],
            })
        }),
    }))
}

/// `GET session`: always 200; `authenticated` tells whether the caller is logged in.
/// A caller authenticated by HTTP Basic credentials gets a session and its cookie (the
/// login of OpenMRS clients).
pub async fn get(
    State(state): State<Arc<AppState>>,
    method: axum::http::Method,
    mut caller: Caller,
) -> ApiResult<Response> {
    // A HEAD (answered by this handler) opens no session.
    let new_session = if method == axum::http::Method::HEAD {
        None
    } else {
        open_session(&state, &mut caller)?
    };
    let mut res = ok(session_body(&state, &caller)?);
    if let Some(id) = new_session {
        set_session_cookie(
            &mut res,
            &state,
            &caller,
            &id,
            state.sessions.max_age().as_secs(),
        );
    }
    Ok(res)
}

/// Gives a caller authenticated by Basic credentials (and no session yet) a session;
/// returns its id, for the cookie.
fn open_session(
    state: &AppState,
    caller: &mut Caller,
) -> Result<Option<String>, crate::store::StoreError> {
    if caller.session.is_some() {
        return Ok(None);
    }
    let Some(user) = caller.user.as_ref() else {
        return Ok(None);
    };
    let catalog = state.catalog.load();
    let location = user
        .properties
        .get("defaultLocation")
        .filter(|l| catalog.location(l).is_some())
        .cloned();
    let id = state.sessions.create(&state.store, &user.uuid, location)?;
    caller.session = state.sessions.get(&state.store, &id)?;
    caller.session_id = Some(id.clone());
    Ok(Some(id))
}

/// Accepts `fr`, `en-GB` or `en_GB` if the content allows it; returns the OpenMRS form.
pub fn allowed_locale(state: &AppState, requested: &str) -> Option<String> {
    let wanted = requested.trim().replace('-', "_").to_lowercase();
    state
        .catalog
        .load()
        .allowed_locales()
        .iter()
        .find(|l| l.to_lowercase() == wanted)
        .cloned()
}

/// `POST session` with `{"sessionLocation": uuid}` and/or `{"locale": "fr"}`.
pub async fn post(
    State(state): State<Arc<AppState>>,
    mut caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let unknown: Vec<&str> = body
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "sessionLocation" | "locale"))
        .collect();
    if !unknown.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "Some properties are not allowed to be set: {}",
            unknown.join(", ")
        )));
    }
    let locale = match body.get("locale") {
        None | Some(Value::Null) => None,
        Some(Value::String(l)) => Some(allowed_locale(&state, l).ok_or_else(|| {
            ApiError::BadRequest(format!(" '{l}' is not in the list of allowed locales."))
        })?),
        Some(_) => return Err(ApiError::BadRequest("locale must be a string".into())),
    };
    let location = match body.get("sessionLocation") {
        None | Some(Value::Null) => None,
        Some(Value::String(l)) => {
            let catalog = state.catalog.load();
            Some(
                catalog
                    .location(l)
                    .filter(|x| x.uuid == *l)
                    .map(|x| x.uuid.clone())
                    .ok_or_else(|| {
                        ApiError::BadRequest(format!(" '{l}' is not the UUID of any location."))
                    })?,
            )
        }
        Some(_) => {
            return Err(ApiError::BadRequest(
                "sessionLocation must be a uuid string".into(),
            ));
        }
    };
    if location.is_some() && caller.user.is_none() {
        return Err(ApiError::Unauthenticated { privileges: vec![] });
    }
    // Basic credentials log in here as with GET (OpenMRS clients, the O3 end-to-end
    // tooling, post their credentials).
    let new_session = open_session(&state, &mut caller)?;
    if let Some(id) = caller.session_id.clone() {
        state.sessions.update(&state.store, &id, |s| {
            if let Some(l) = &locale {
                s.locale = Some(l.clone());
            }
            if let Some(l) = &location {
                s.location = Some(l.clone());
            }
        })?;
        caller.session = state.sessions.get(&state.store, &id)?;
    }
    let mut res = ok(session_body(&state, &caller)?);
    if let Some(id) = new_session {
        set_session_cookie(
            &mut res,
            &state,
            &caller,
            &id,
            state.sessions.max_age().as_secs(),
        );
    }
    Ok(res)
}

/// `DELETE session`: ends the session; 204 and an expired cookie.
pub async fn delete(State(state): State<Arc<AppState>>, caller: Caller) -> ApiResult<Response> {
    if let Some(id) = &caller.session_id {
        state.sessions.remove(&state.store, id)?;
    }
    let mut res = StatusCode::NO_CONTENT.into_response();
    set_session_cookie(&mut res, &state, &caller, "", 0);
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json;charset=UTF-8"),
    );
    Ok(res)
}

/// Sets the session cookie (an empty value with no age expires it): `HttpOnly`,
/// `SameSite=Lax`, and `Secure` when the request came over HTTPS (directly or, as the
/// gateway says in `X-Forwarded-Proto`, to the gateway).
fn set_session_cookie(
    res: &mut Response,
    state: &AppState,
    caller: &Caller,
    id: &str,
    max_age_secs: u64,
) {
    let secure = if caller.origin.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{SESSION_COOKIE}={id}; Path={}; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}",
        state.config.app_path
    );
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new().route(
        &paths.rest("/session"),
        get(crate::domains::session::rest::get)
            .post(crate::domains::session::rest::post)
            .delete(crate::domains::session::rest::delete),
    )
}
