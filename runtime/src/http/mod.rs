//! The request kernel every handler uses: who is calling (`Caller`, by session cookie or
//! HTTP Basic through the password gate), query pairs, JSON bodies (415 unless JSON),
//! plain answers, and `blocking` for store work off the async workers.

pub mod answer;
pub mod answer_cache;
pub mod body;
pub mod edge;
pub mod error;
pub mod fhir;
pub mod repr;
pub mod spa;
pub mod state;

pub use state::{AppState, Config};

use crate::auth::{self, Grants};
use crate::catalog::Catalog;
use crate::http::error::{ApiError, ApiResult, json_headers};
use crate::http::repr::{Ctx, RequestUrl};
use crate::store::UserRecord;
use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::Arc;

pub const SESSION_COOKIE: &str = "JSESSIONID";

/// The full paths of the application's routes, under its path (`EMR_APP_PATH`): each
/// domain names its routes with them, so that all of them form one flat router.
pub struct Paths {
    app_path: String,
}

impl Paths {
    pub fn new(app_path: &str) -> Paths {
        Paths {
            app_path: app_path.to_string(),
        }
    }

    /// A REST path: `/openmrs/ws/rest/v1{p}`.
    pub fn rest(&self, p: &str) -> String {
        format!("{}/ws/rest/v1{p}", self.app_path)
    }

    /// A FHIR path: `/openmrs/ws/fhir2/R4{p}`.
    pub fn fhir(&self, p: &str) -> String {
        format!("{}/ws/fhir2/R4{p}", self.app_path)
    }

    /// A path right under the application's: `/openmrs{p}`.
    pub fn top(&self, p: &str) -> String {
        format!("{}{p}", self.app_path)
    }
}

/// Who is calling, established once per request by `authenticate`.
#[derive(Clone)]
pub struct Caller {
    pub user: Option<Arc<UserRecord>>,
    pub session_id: Option<String>,
    pub session: Option<auth::Session>,
    pub grants: Arc<Grants>,
    /// `scheme://host[:port]`
    pub origin: String,
}

impl Caller {
    /// 401 for anonymous callers, 403 when a privilege is missing.
    pub fn require(&self, privileges: &[&str]) -> ApiResult<()> {
        let names = || privileges.iter().map(|p| p.to_string()).collect();
        if self.user.is_none() {
            return Err(ApiError::Unauthenticated {
                privileges: names(),
            });
        }
        if privileges.iter().all(|p| self.grants.has(p)) {
            Ok(())
        } else {
            Err(ApiError::Forbidden {
                privileges: names(),
            })
        }
    }

    /// The uuid of the calling user, recorded as the author of what the request writes
    /// (handlers call it after `require`, so a user is there).
    pub fn user_uuid(&self) -> String {
        self.user
            .as_ref()
            .map(|u| u.uuid.clone())
            .unwrap_or_default()
    }

    /// The locale to display names in: the session's, the user's default, the content's
    /// `default_locale`; in OpenMRS form (`en_GB`).
    pub fn locale(&self, catalog: &Catalog) -> String {
        self.session
            .as_ref()
            .and_then(|s| s.locale.clone())
            .or_else(|| {
                self.user
                    .as_ref()
                    .and_then(|u| u.properties.get("defaultLocale").cloned())
            })
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| catalog.default_locale().to_string())
            .replace('-', "_")
    }

    pub fn ctx<'a>(&self, state: &'a AppState, catalog: &'a Catalog) -> Ctx<'a> {
        let locale = self.locale(catalog);
        let mut fallbacks = Vec::new();
        if let Some(d) = self
            .user
            .as_ref()
            .and_then(|u| u.properties.get("defaultLocale"))
        {
            fallbacks.push(d.replace('-', "_"));
        }
        fallbacks.push(catalog.default_locale().to_string());
        Ctx {
            base: format!("{}{}/ws/rest/v1", self.origin, state.config.app_path),
            locale,
            fallbacks,
            catalog,
            store: &state.store,
            access: &state.access,
            today: crate::wire::today(),
            written: Default::default(),
        }
    }

    pub fn request_url(
        &self,
        state: &AppState,
        path: &str,
        query: &[(String, String)],
    ) -> RequestUrl {
        RequestUrl {
            base: format!("{}{}/ws/rest/v1", self.origin, state.config.app_path),
            path: path.into(),
            query: query.to_vec(),
        }
    }
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then(|| v.to_string())
        })
}

fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    use base64::Engine;
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let encoded = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, pass) = text.split_once(':')?;
    (!user.is_empty() && !pass.is_empty()).then(|| (user.to_string(), pass.to_string()))
}

/// `scheme://host[:port]` as the client sees it (honouring `X-Forwarded-*`).
fn origin(headers: &HeaderMap) -> String {
    let h = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.split(',').next().unwrap_or("").trim().to_string())
    };
    let scheme = h("x-forwarded-proto")
        .filter(|s| s == "http" || s == "https")
        .unwrap_or_else(|| "http".into());
    let mut host = h("x-forwarded-host")
        .or_else(|| h("host"))
        .unwrap_or_else(|| "localhost".into());
    if let Some(port) = h("x-forwarded-port")
        && !host.contains(':')
        && port.bytes().all(|b| b.is_ascii_digit())
        && !matches!(
            (scheme.as_str(), port.as_str()),
            ("http", "80") | ("https", "443")
        )
    {
        host = format!("{host}:{port}");
    }
    format!("{scheme}://{host}")
}

fn credentials_key(user: &str, pass: &str, stored_hash: &str) -> auth::CredentialsKey {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    for part in [user, pass, stored_hash] {
        digest.update(part.as_bytes());
        digest.update([0]);
    }
    digest.finalize().into()
}

/// Checks HTTP Basic credentials. Credentials verified before (and unchanged since) are
/// recognised from a digest without paying for argon2 again. New credentials are verified
/// once however many requests present them at the same moment (the others wait for that
/// one, then recognise them), and verifications of different credentials pass the
/// `PasswordGate`: as many at once as there are cores, a short queue, 503 past it.
async fn basic_login(
    state: &Arc<AppState>,
    name: &str,
    pass: &str,
    client: std::net::IpAddr,
) -> ApiResult<Option<Arc<UserRecord>>> {
    let recognised = |state: &AppState| -> ApiResult<Option<Arc<UserRecord>>> {
        let found = state.store.user_by_username_shared(name)?;
        Ok(found.filter(|u| {
            let key = credentials_key(name, pass, &u.password_hash);
            state.sessions.basic_verified(&key, &u.uuid) && u.locked_until.is_none() && !u.retired
        }))
    };
    if let Some(u) = recognised(state)? {
        return Ok(Some(u));
    }
    let same = state.password_gate.same_credentials(name, pass);
    let _only_one = same.lock().await;
    if let Some(u) = recognised(state)? {
        return Ok(Some(u));
    }
    let _turn = state
        .password_gate
        .enter(client)
        .await
        .map_err(|_| ApiError::Busy {
            message: "The server is busy checking passwords: try again in a moment",
            code: "emr.login.busy",
            retry_after_secs: 1,
        })?;
    // Another request with the same credentials may have verified them meanwhile.
    if let Some(u) = recognised(state)? {
        return Ok(Some(u));
    }
    let (st, n, p) = (state.clone(), name.to_string(), pass.to_string());
    let author = crate::store::audit::current_slot();
    let verified = tokio::task::spawn_blocking(move || {
        crate::store::audit::acting_sync(author, || auth::login(&st.store, st.lockout(), &n, &p))
    })
    .await
    .map_err(ApiError::internal)??;
    Ok(verified.map(|u| {
        state
            .sessions
            .cache_basic(credentials_key(name, pass, &u.password_hash), &u.uuid);
        Arc::new(u)
    }))
}

/// A request the runtime makes of itself on a user's behalf (a bulk export reads each type
/// through its own search): its `Caller` is that user, with the privileges the user holds
/// when the request is made. A request extension, which no client can set.
#[derive(Clone, Debug)]
pub struct ActingAs(pub String);

/// Establishes the `Caller` of every handler that takes one: a live session cookie, else
/// HTTP Basic credentials, else anonymous (or the user a request made inside the runtime
/// acts as, `ActingAs`). An extractor rather than a middleware, so
/// routes that need no caller (health, the login page) do not pay for it.
impl FromRequestParts<Arc<AppState>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Caller, ApiError> {
        let headers = &parts.headers;
        if let Some(ActingAs(uuid)) = parts.extensions.get::<ActingAs>() {
            let user = state.store.user_shared(uuid)?.filter(|u| !u.retired);
            let grants = match &user {
                Some(u) => auth::grants(u, &state.catalog.load(), &state.access.load()),
                None => Grants::default(),
            };
            return Ok(Caller {
                user,
                session_id: None,
                session: None,
                grants: Arc::new(grants),
                origin: origin(headers),
            });
        }
        let mut user: Option<Arc<UserRecord>> = None;
        let mut session_id = None;
        let mut session = None;
        if let Some(id) = cookie(headers, SESSION_COOKIE)
            && let Some(s) = state.sessions.get(&state.store, &id)?
        {
            match state.store.user_shared(&s.user_uuid) {
                Ok(Some(u)) if !u.retired => {
                    user = Some(u);
                    session_id = Some(id);
                    session = Some(s);
                }
                Ok(_) => state.sessions.remove(&state.store, &id)?,
                Err(e) => return Err(ApiError::from(e)),
            }
        }
        if user.is_none()
            && let Some((name, pass)) = basic_credentials(headers)
        {
            let peer = parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|c| c.0.ip());
            let client = crate::throttle::client_address(
                peer,
                headers.get("x-real-ip").and_then(|v| v.to_str().ok()),
                &state.config.trusted_proxies,
            );
            // A failed login's bookkeeping (the account's count of failures) is a change
            // made from this address, before anyone is authenticated.
            crate::store::audit::set_actor(crate::store::audit::Actor {
                user: None,
                address: Some(client.to_string()),
            });
            let limits = state.login_limits();
            if let Some(wait) = state.login_throttle.wait(client, &name, &limits) {
                return Err(ApiError::TooManyLogins {
                    retry_after_secs: wait.as_secs().max(1),
                });
            }
            let outcome = basic_login(state, &name, &pass, client).await;
            match &outcome {
                Ok(Some(_)) => state.login_throttle.succeeded(client, &name),
                Ok(None) => {
                    state.login_throttle.failed(client, &name, &limits);
                    // The other runtimes sharing the store count it too.
                    if let Err(e) = state.store.announce(
                        crate::throttle::FAILED_LOGINS,
                        &[crate::throttle::notice_key(client, &name)],
                    ) {
                        tracing::warn!(
                            "a failed login could not be told to the other runtimes: {e}"
                        );
                    }
                }
                Err(_) => {}
            }
            user = outcome?;
        }
        let grants = match &user {
            Some(u) => auth::grants(u, &state.catalog.load(), &state.access.load()),
            None => Grants::default(),
        };
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        crate::store::audit::set_actor(crate::store::audit::Actor {
            user: user.as_ref().map(|u| u.uuid.clone()),
            address: Some(
                crate::throttle::client_address(
                    peer,
                    headers.get("x-real-ip").and_then(|v| v.to_str().ok()),
                    &state.config.trusted_proxies,
                )
                .to_string(),
            ),
        });
        Ok(Caller {
            user,
            session_id,
            session,
            grants: Arc::new(grants),
            origin: origin(headers),
        })
    }
}

/// The query string's pairs in order, percent-decoded (`+` as a space). Parsed directly:
/// axum's `Query` goes through serde and costs a few per cent of a small read.
pub struct QueryPairs(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<QueryPairs, Self::Rejection> {
        let pairs = parts
            .uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        Ok(QueryPairs(pairs))
    }
}

/// A JSON object body. Malformed JSON, non-objects and XML are client errors with an
/// OpenMRS error body; a body over the configured limit is 413.
pub struct JsonBody(pub serde_json::Map<String, Value>);

impl FromRequest<Arc<AppState>> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(
        req: Request<Body>,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_lowercase();
        if content_type.contains("xml") {
            return Err(ApiError::UnsupportedMediaType);
        }
        // A body that stops arriving would hold its connection's place for good.
        let read = axum::body::to_bytes(req.into_body(), state.config.max_body_bytes);
        let bytes = tokio::time::timeout(state.config.connections.body_timeout(), read)
            .await
            .map_err(|_| ApiError::RequestTimeout)?
            .map_err(|_| ApiError::PayloadTooLarge)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(serde_json::Map::new()));
        }
        // A body is JSON only when it says so (`application/json`, `…+json`): a form post or
        // plain text is refused rather than guessed at.
        let media = content_type.split(';').next().unwrap_or("").trim();
        if media != "application/json" && !media.ends_with("+json") {
            return Err(ApiError::UnsupportedMediaType);
        }
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(JsonBody(map)),
            Ok(_) => Err(ApiError::BadRequest(
                "The request body must be a JSON object".into(),
            )),
            Err(e) => Err(ApiError::BadRequest(format!("JSON parse error: {e}"))),
        }
    }
}

/// A JSON response with OpenMRS's content type.
pub fn json(status: StatusCode, value: Value) -> Response {
    // Straight into bytes: `to_string` goes through `fmt::Write`, a tenth slower.
    match serde_json::to_vec(&value) {
        Ok(body) => (status, json_headers(), body).into_response(),
        Err(e) => ApiError::internal(e).into_response(),
    }
}

pub fn ok(value: Value) -> Response {
    json(StatusCode::OK, value)
}

/// A 200 answer with an already serialized JSON body.
pub fn ok_bytes(body: axum::body::Bytes) -> Response {
    (StatusCode::OK, json_headers(), body).into_response()
}

/// The `v` parameter of a query.
pub fn param<'q>(query: &'q [(String, String)], name: &str) -> Option<&'q str> {
    query
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A paged list of resources in the requested representation (`ref` by default, as
/// OpenMRS lists are).
pub fn render_list<'a>(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
    items: impl Iterator<Item = &'a dyn crate::http::repr::Resource>,
) -> ApiResult<Response> {
    let rep =
        crate::http::repr::Rep::parse(param(query, "v"))?.unwrap_or(crate::http::repr::Rep::Ref);
    let paging = crate::http::repr::Paging::from_query(query)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(state, &catalog);
    let values = items
        .map(|r| crate::http::repr::render(r, &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(
        paging.page(values, &caller.request_url(state, path, query))
    ))
}

/// Runs blocking store work off the async threads. The store's commits made by `f` are
/// waited for (until durable) after `f` returns, so after the locks `f` held are released:
/// the next writer's work overlaps this one's fsync, which it may share (`group_commit`).
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    let author = crate::store::audit::current_slot();
    tokio::task::spawn_blocking(move || {
        let (out, pending) = crate::store::audit::acting_sync(author, || {
            crate::store::group_commit::durable_after(f)
        });
        let durable = pending.map_or(Ok(()), |p| p.wait());
        // The handler's own error first: what it wrote before failing stays written, as a
        // handler without this scope would leave it.
        let out = out?;
        durable?;
        Ok(out)
    })
    .await
    .map_err(ApiError::internal)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_honours_forwarded_headers() {
        let mut h = HeaderMap::new();
        h.insert("host", "backend:8080".parse().unwrap());
        assert_eq!(origin(&h), "http://backend:8080");
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        h.insert("x-forwarded-host", "emr.example".parse().unwrap());
        h.insert("x-forwarded-port", "443".parse().unwrap());
        assert_eq!(origin(&h), "https://emr.example");
    }

    #[test]
    fn basic_credentials_need_a_user_and_a_password() {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            "Basic YWRtaW46c2VjcmV0".parse().unwrap(),
        );
        assert_eq!(
            basic_credentials(&h),
            Some(("admin".into(), "secret".into()))
        );
        h.insert(header::AUTHORIZATION, "Basic YWRtaW46".parse().unwrap());
        assert_eq!(basic_credentials(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer x".parse().unwrap());
        assert_eq!(basic_credentials(&h), None);
    }
}
