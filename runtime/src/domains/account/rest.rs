//! Accounts: `user` (create, search, update, retire and unretire, purge) and `password`
//! (a user changes their own with the old one; an administrator resets another's).
//!
//! Rules as OpenMRS's `UserValidator` and `OpenmrsUtil.validatePassword` apply them: a
//! username of 2–50 letters, digits and `_ . - @`, unique (with the system ids) in any
//! case; a person with a given and a family name; roles that exist (the content's or the
//! API's, `domains::role`); a password that meets the `security.password*` settings.
//! Retiring an account ends its sessions at once; so does an administrator's password
//! reset.

use crate::domains::account::user::UserRes;
use crate::http::AppState;
use crate::http::answer::{answer, rep_of};
use crate::http::body::opt_str;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::Resource;
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::UserRecord;
use crate::store::record::{Audit, Voiding};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The longest given or family name kept (OpenMRS's `person_name` columns).
const NAME_MAX: usize = 50;

fn valid_username(u: &str) -> bool {
    let n = u.chars().count();
    (2..=50).contains(&n)
        && u.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && u.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '@'))
}

/// Role names from references, each checked (the content's or the API's).
fn role_names(state: &AppState, v: &Value, inv: &mut Invalid) -> ApiResult<Vec<String>> {
    let (catalog, access) = (state.catalog.load(), state.access.load());
    crate::domains::role::rest::resolve_names(
        v,
        "roles",
        |key| crate::access::role_named(&catalog, &access, key),
        inv,
    )
}

/// The person of a new account: `{names: [{givenName, familyName}], …}` (a new person),
/// or the uuid of a registered patient's person.
fn person_of(state: &AppState, v: Option<&Value>, inv: &mut Invalid) -> (String, String) {
    match v {
        Some(Value::String(uuid)) => match state.store.patient(uuid).ok().flatten() {
            Some(p) => {
                let name = p
                    .names
                    .iter()
                    .find(|n| n.preferred)
                    .or(p.names.first())
                    .map(|n| {
                        [n.given_name.as_deref(), n.family_name.as_deref()]
                            .into_iter()
                            .flatten()
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default();
                (uuid.clone(), name)
            }
            None => {
                inv.field(
                    "person",
                    "error.invalid",
                    &format!("Person {uuid} does not exist"),
                );
                (String::new(), String::new())
            }
        },
        Some(Value::Object(o)) => {
            let name = o
                .get("names")
                .and_then(Value::as_array)
                .and_then(|n| n.first())
                .and_then(Value::as_object);
            let part = |k: &str| {
                name.and_then(|n| n.get(k))
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .unwrap_or_default()
                    .to_string()
            };
            let (given, family) = (part("givenName"), part("familyName"));
            for (field, value) in [("givenName", &given), ("familyName", &family)] {
                let path = format!("person.names[0].{field}");
                if value.is_empty() {
                    inv.field(&path, "error.null", &format!("{field} is required"));
                } else if value.chars().count() > NAME_MAX || value.chars().any(char::is_control) {
                    inv.field(
                        &path,
                        "error.invalid",
                        &format!("{field} has at most {NAME_MAX} characters, none of them control characters"),
                    );
                }
            }
            (
                uuid::Uuid::new_v4().to_string(),
                format!("{given} {family}"),
            )
        }
        _ => {
            inv.field("person", "error.null", "Person is required");
            (String::new(), String::new())
        }
    }
}

/// A user property map from JSON (string values; numbers and booleans as text).
fn properties(v: &Value) -> ApiResult<BTreeMap<String, String>> {
    let Value::Object(props) = v else {
        return Err(ApiError::BadRequest(
            "userProperties must be an object".into(),
        ));
    };
    let mut out = BTreeMap::new();
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
        out.insert(k.clone(), v);
    }
    Ok(out)
}

/// Luhn mod-10 check digit of a number's decimal digits (OpenMRS's system ids: `12-3`).
fn luhn_digit(digits: &str) -> u32 {
    let sum: u32 = digits
        .chars()
        .rev()
        .filter_map(|c| c.to_digit(10))
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 0 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    (10 - sum % 10) % 10
}

/// `POST user`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Users"])?;
    crate::http::body::only_known(
        &body,
        &[
            "username",
            "password",
            "person",
            "roles",
            "userProperties",
            "systemId",
        ],
    )?;
    let mut inv = Invalid::default();
    let username = opt_str(&body, "username")?
        .unwrap_or_default()
        .trim()
        .to_string();
    if !valid_username(&username) {
        inv.field(
            "username",
            "error.username.pattern",
            "A username has 2 to 50 letters, digits, or _ . - @, and starts with a letter, a digit or _",
        );
    }
    let password = opt_str(&body, "password")?.unwrap_or_default();
    if password.is_empty() {
        inv.field("password", "error.null", "Password is required");
    } else {
        for p in state.password_policy().problems(&username, &password) {
            inv.field("password", "error.password", &p);
        }
    }
    let (person_uuid, person_name) = person_of(&state, body.get("person"), &mut inv);
    let roles = match body.get("roles") {
        None | Some(Value::Null) => vec![],
        Some(v) => role_names(&state, v, &mut inv)?,
    };
    let props = match body.get("userProperties") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(v) => properties(v)?,
    };
    let system_id = opt_str(&body, "systemId")?.map(|s| s.trim().to_string());
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }
    let creator = caller.user_uuid();
    let st = state.clone();
    let user = blocking(move || {
        let _one_writer = st.store.write_lock();
        let taken = |name: &str| -> ApiResult<bool> {
            Ok(!name.is_empty() && st.store.user_by_username(name)?.is_some())
        };
        let system_id = match system_id.filter(|s| !s.is_empty()) {
            Some(s) => s,
            None => {
                let n = st.store.next_counter("user-system-id")? + 2;
                format!("{n}-{}", luhn_digit(&n.to_string()))
            }
        };
        if taken(&username)? || taken(&system_id)? {
            return Err(ApiError::invalid_field(
                "username",
                "error.username.taken",
                "Username or system id taken",
            ));
        }
        let user = UserRecord {
            v: 1,
            uuid: uuid::Uuid::new_v4().to_string(),
            username,
            system_id,
            person_uuid,
            person_name,
            password_hash: crate::auth::hash_password(&password),
            roles,
            properties: props,
            retired: false,
            failed_logins: 0,
            locked_until: None,
            audit: Some(Audit::new(&creator, chrono::Utc::now())),
            retiring: None,
        };
        st.store.put_user(&user)?;
        Ok(user)
    })
    .await?;
    tracing::info!(user = %user.username, by = %caller.user_uuid(), "account created");
    answer(
        &state,
        &caller,
        &UserRes(&user),
        &rep_of(&query)?,
        StatusCode::CREATED,
    )
}

/// `GET user[?q=][&username=][&includeAll=true]`: accounts whose username, system id or
/// person's name contains `q` (any case), or whose username is exactly `username`.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Users"])?;
    let st = state.clone();
    let mut users = blocking(move || Ok(st.store.users()?)).await?;
    let q = param(&query, "q").map(|q| q.trim().to_lowercase());
    let exact = param(&query, "username").map(str::to_lowercase);
    let include_all = param(&query, "includeAll").is_some_and(|v| v == "true");
    users.retain(|u| {
        (include_all || !u.retired)
            && q.as_ref().is_none_or(|q| {
                u.username.to_lowercase().contains(q)
                    || u.system_id.to_lowercase().contains(q)
                    || u.person_name.to_lowercase().contains(q)
            })
            && exact
                .as_ref()
                .is_none_or(|e| u.username.to_lowercase() == *e)
    });
    users.sort_by_key(|u| u.username.to_lowercase());
    let views: Vec<UserRes> = users.iter().map(UserRes).collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/user",
        views.iter().map(|u| u as &dyn Resource),
    )
}

/// `POST user/{uuid}`: a user may change their own `userProperties`; everything else
/// (`username`, `roles`, `retired`, `password`, `systemId`) needs Edit Users.
///
/// An administrator locks an account as OpenMRS does, through its `lockoutTimestamp`
/// property (milliseconds since 1970): the account is refused for
/// `security.unlockAccountWaitingTime` minutes from then and its sessions end at once;
/// taking the property away unlocks it. Only a changed value locks, so a client sending
/// back the properties it read (the O3 language switch does) locks nobody again.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    crate::http::body::only_known(
        &body,
        &[
            "userProperties",
            "username",
            "roles",
            "retired",
            "password",
            "systemId",
            "person",
        ],
    )?;
    let own = caller.user.as_ref().is_some_and(|u| u.uuid == uuid);
    let only_properties = body.keys().all(|k| k == "userProperties");
    if !(own && only_properties) {
        caller.require(&["Edit Users"])?;
    }
    if body.contains_key("person") {
        return Err(ApiError::BadRequest(
            "an account's person cannot be changed; create another account".into(),
        ));
    }
    let mut inv = Invalid::default();
    let props = body.get("userProperties").map(properties).transpose()?;
    if let Some(l) = props.as_ref().and_then(|p| p.get("defaultLocale"))
        && !l.is_empty()
        && crate::domains::session::rest::allowed_locale(&state, l).is_none()
    {
        return Err(ApiError::BadRequest(format!(
            " '{l}' is not in the list of allowed locales."
        )));
    }
    let roles = body
        .get("roles")
        .map(|v| role_names(&state, v, &mut inv))
        .transpose()?;
    let username = opt_str(&body, "username")?.map(|s| s.trim().to_string());
    if let Some(u) = &username
        && !valid_username(u)
    {
        inv.field("username", "error.username.pattern", "Invalid username");
    }
    let retired = match body.get("retired") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(ApiError::BadRequest("retired must be true or false".into())),
    };
    if retired == Some(true) && own {
        return Err(ApiError::BadRequest(
            "you cannot retire your own account".into(),
        ));
    }
    let password = opt_str(&body, "password")?;
    let policy = state.password_policy();
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }
    let editor = caller.user_uuid();
    let administers = !own && caller.grants.has("Edit Users");
    let lock_wait_ms = state.lockout().wait_minutes as i64 * 60_000;
    let st = state.clone();
    let user = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut user = st.store.user(&uuid)?.ok_or(ApiError::NotFound)?;
        let old_username = user.username.clone();
        if let Some(p) = props {
            let lock = |props: &std::collections::BTreeMap<String, String>| {
                props.get("lockoutTimestamp").cloned()
            };
            let (before, after) = (lock(&user.properties), lock(&p));
            if administers && after != before {
                match after.as_deref().map(str::trim) {
                    Some(ms) => {
                        let Ok(from) = ms.parse::<i64>() else {
                            return Err(ApiError::invalid_field(
                                "userProperties.lockoutTimestamp",
                                "error.invalid",
                                "A lock's time is in milliseconds since 1970",
                            ));
                        };
                        user.locked_until = Some(from + lock_wait_ms);
                        st.sessions.remove_user(&st.store, &user.uuid)?;
                    }
                    None => {
                        user.locked_until = None;
                        user.failed_logins = 0;
                    }
                }
            }
            user.properties = p;
        }
        if let Some(r) = roles {
            user.roles = r;
        }
        if let Some(u) = username
            && !u.eq_ignore_ascii_case(&user.username)
        {
            if st.store.user_by_username(&u)?.is_some() {
                return Err(ApiError::invalid_field(
                    "username",
                    "error.username.taken",
                    "Username or system id taken",
                ));
            }
            user.username = u;
        }
        if let Some(p) = password {
            let problems = policy.problems(&user.username, &p);
            if !problems.is_empty() {
                let mut inv = Invalid::default();
                for m in problems {
                    inv.field("password", "error.password", &m);
                }
                return Err(ApiError::Invalid(inv));
            }
            user.password_hash = crate::auth::hash_password(&p);
            user.failed_logins = 0;
            user.locked_until = None;
            st.sessions.remove_user(&st.store, &user.uuid)?;
        }
        match retired {
            Some(true) if !user.retired => {
                retire(&st, &mut user, &editor, "retired through the API")?
            }
            Some(false) => {
                user.retired = false;
                user.retiring = None;
            }
            _ => {}
        }
        if let Some(a) = user.audit.as_mut() {
            a.changed(&editor, chrono::Utc::now());
        }
        st.store.rename_user(&user, &old_username)?;
        Ok(user)
    })
    .await?;
    answer(
        &state,
        &caller,
        &UserRes(&user),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// Marks an account retired and ends its sessions.
fn retire(
    state: &AppState,
    user: &mut UserRecord,
    by: &str,
    reason: &str,
) -> Result<(), crate::store::StoreError> {
    let mut v = Voiding::default();
    v.void(by, chrono::Utc::now(), reason);
    user.retired = true;
    user.retiring = Some(v);
    state.sessions.remove_user(&state.store, &user.uuid)
}

/// `DELETE user/{uuid}[?reason=…][&purge=true]`: retires the account (its sessions end at
/// once), or removes it for good. Nobody retires or removes their own account.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let purge = param(&query, "purge").is_some_and(|v| v == "true");
    caller.require(&[if purge { "Purge Users" } else { "Delete Users" }])?;
    if caller.user.as_ref().is_some_and(|u| u.uuid == uuid) {
        return Err(ApiError::BadRequest(
            "you cannot retire or remove your own account".into(),
        ));
    }
    let reason = param(&query, "reason")
        .unwrap_or("retired through the API")
        .to_string();
    let by = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut user = st.store.user(&uuid)?.ok_or(ApiError::NotFound)?;
        if purge {
            st.sessions.remove_user(&st.store, &user.uuid)?;
            st.store.remove_user(&user)?;
        } else {
            retire(&st, &mut user, &by, &reason)?;
            st.store.put_user(&user)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST password` with `{oldPassword, newPassword}`: the caller changes their own.
pub async fn change_own(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let Some(me) = caller.user.clone() else {
        return Err(ApiError::Unauthenticated { privileges: vec![] });
    };
    crate::http::body::only_known(&body, &["oldPassword", "newPassword"])?;
    let old = opt_str(&body, "oldPassword")?.unwrap_or_default();
    let new = opt_str(&body, "newPassword")?.unwrap_or_default();
    let policy = state.password_policy();
    let st = state.clone();
    let session = caller.session_id.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut user = st.store.user(&me.uuid)?.ok_or(ApiError::NotFound)?;
        if !crate::auth::verify_password(&old, &user.password_hash) {
            return Err(ApiError::invalid_field(
                "oldPassword",
                "error.password.match",
                "The old password is not correct",
            ));
        }
        set_password(&st, &mut user, &new, policy)?;
        // Other sessions of this user end; the one that changed it stays.
        st.sessions
            .remove_user_except(&st.store, &user.uuid, session.as_deref())?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::OK.into_response())
}

/// `POST password/{userUuid}` with `{newPassword}`: an administrator resets another's
/// (privilege Edit User Passwords); that user's sessions end.
pub async fn reset(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit User Passwords"])?;
    crate::http::body::only_known(&body, &["newPassword"])?;
    let new = opt_str(&body, "newPassword")?.unwrap_or_default();
    let policy = state.password_policy();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut user = st.store.user(&uuid)?.ok_or(ApiError::NotFound)?;
        set_password(&st, &mut user, &new, policy)?;
        st.sessions.remove_user(&st.store, &user.uuid)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::OK.into_response())
}

fn set_password(
    state: &AppState,
    user: &mut UserRecord,
    new: &str,
    policy: crate::auth::PasswordPolicy,
) -> ApiResult<()> {
    let problems = policy.problems(&user.username, new);
    if !problems.is_empty() {
        let mut inv = Invalid::default();
        for m in problems {
            inv.field("newPassword", "error.password", &m);
        }
        return Err(ApiError::Invalid(inv));
    }
    user.password_hash = crate::auth::hash_password(new);
    user.failed_logins = 0;
    user.locked_until = None;
    user.properties.insert(
        "lastPasswordChange".into(),
        chrono::Utc::now().timestamp_millis().to_string(),
    );
    state.store.put_user(user)?;
    Ok(())
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route(
            &paths.rest("/person/{uuid}/attribute"),
            get(crate::domains::account::user::person_attributes),
        )
        .route(
            &paths.rest("/user"),
            get(crate::domains::account::rest::search).post(crate::domains::account::rest::create),
        )
        .route(
            &paths.rest("/user/{uuid}"),
            get(crate::domains::account::user::read)
                .post(crate::domains::account::rest::update)
                .delete(crate::domains::account::rest::delete),
        )
        .route(
            &paths.rest("/password"),
            post(crate::domains::account::rest::change_own),
        )
        .route(
            &paths.rest("/password/{uuid}"),
            post(crate::domains::account::rest::reset),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_follow_openmrs_rules() {
        for ok in ["ab", "nurse.kabila", "clerk_2", "a-b@site"] {
            assert!(valid_username(ok), "{ok}");
        }
        for bad in [
            "a",
            "",
            ".dot",
            "has space",
            "x\u{0}y",
            &"a".repeat(51),
            "é",
        ] {
            assert!(!valid_username(bad), "{bad:?}");
        }
    }

    #[test]
    fn system_ids_carry_a_luhn_digit() {
        // 7992739871 is Luhn's classic example: check digit 3.
        assert_eq!(luhn_digit("7992739871"), 3);
        assert_eq!(luhn_digit("2"), 6);
    }
}
