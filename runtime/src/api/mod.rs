//! Routes and the request pipeline: authentication (cookie or HTTP Basic), the caller's
//! privileges and locale, JSON bodies, request ids and logging. One module per resource.
//!
//! Privileges each endpoint requires are listed in `docs/api.md`.

pub mod addresshierarchy;
pub mod backup;
pub mod concept;
pub mod fhir;
pub mod health;
pub mod idgen;
pub mod location;
pub mod metadata;
pub mod patient;
pub mod reload;
pub mod session;
pub mod systemsetting;
pub mod user;

use crate::AppState;
use crate::auth::{self, Grants};
use crate::catalog::Catalog;
use crate::error::{ApiError, ApiResult, json_headers};
use crate::repr::{Ctx, RequestUrl};
use crate::store::UserRecord;
use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::Value;
use std::sync::Arc;
use tower_http::request_id::PropagateRequestIdLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};

pub const SESSION_COOKIE: &str = "JSESSIONID";

/// The whole application, for `axum::serve` and for tests (`oneshot`).
pub fn app(state: Arc<AppState>) -> Router {
    let rest = Router::new()
        .route(
            "/session",
            get(session::get)
                .post(session::post)
                .delete(session::delete),
        )
        .route("/patient", get(patient::search).post(patient::create))
        .route("/patient/", get(patient::search).post(patient::create))
        .route("/patient/{uuid}", get(patient::read))
        .route("/patient/{uuid}/identifier", get(user::patient_identifiers))
        .route("/person/{uuid}", get(user::person))
        .route("/person/{uuid}/attribute", get(user::person_attributes))
        .route("/user/{uuid}", get(user::read).post(user::update))
        .route("/module", get(metadata::modules))
        .route("/addresstemplate", get(metadata::address_template))
        .route("/patientidentifiertype", get(metadata::identifier_types))
        .route(
            "/patientidentifiertype/{uuid}",
            get(metadata::identifier_type),
        )
        .route("/personattributetype", get(metadata::attribute_types))
        .route("/personattributetype/{uuid}", get(metadata::attribute_type))
        .route("/relationshiptype", get(metadata::relationship_types))
        .route("/visittype", get(metadata::visit_types))
        .route("/encountertype", get(metadata::encounter_types))
        .route("/queue", get(metadata::queues))
        .route("/metadatamapping/termmapping", get(metadata::term_mappings))
        .route(
            "/queue-entry",
            get(|c, q| metadata::empty_list(c, q, "Get Patients")),
        )
        .route(
            "/visit",
            get(|c, q| metadata::empty_list(c, q, "Get Visits")),
        )
        .route(
            "/obs",
            get(|c, q| metadata::empty_list(c, q, "Get Observations")),
        )
        .route(
            "/encounter",
            get(|c, q| metadata::empty_list(c, q, "Get Encounters")),
        )
        .route(
            "/relationship",
            get(|c, q| metadata::empty_list(c, q, "Get Relationships")),
        )
        .route(
            "/cohortm/cohortmember",
            get(|c, q| metadata::empty_list(c, q, "Get Patient Cohorts")),
        )
        .route("/concept", get(concept::search))
        .route("/concept/{reference}", get(concept::read))
        .route("/idgen/identifiersource", get(idgen::sources))
        .route(
            "/idgen/identifiersource/{uuid}/identifier",
            post(idgen::generate),
        )
        .route("/idgen/autogenerationoption", get(idgen::options))
        .route("/location", get(location::list))
        .route("/location/{uuid}", get(location::read))
        .route("/systemsetting", get(systemsetting::list))
        .route(
            "/systemsetting/{name}",
            get(systemsetting::read).post(systemsetting::update),
        )
        .route("/initializer/reload", post(reload::reload))
        .route("/backup", get(backup::backup))
        .route("/{*rest}", any(unknown_resource))
        .method_not_allowed_fallback(method_not_allowed);
    let fhir = Router::new()
        .route("/Location", get(fhir::locations))
        .route("/Location/{id}", get(fhir::location))
        .route("/Patient/{id}", get(fhir::patient))
        .route("/{*rest}", get(fhir::other))
        .method_not_allowed_fallback(method_not_allowed);
    let app_routes = Router::new()
        .nest("/ws/rest/v1", rest)
        .nest("/ws/fhir2/R4", fhir)
        .route("/health/started", get(health::started))
        .route("/health/alive", get(health::alive))
        .route("/login.htm", get(health::login_page))
        .route(
            "/module/addresshierarchy/ajax/getOrderedAddressHierarchyLevels.form",
            get(addresshierarchy::levels),
        )
        .route(
            "/module/addresshierarchy/ajax/getChildAddressHierarchyEntries.form",
            get(addresshierarchy::children),
        )
        .route(
            "/module/addresshierarchy/ajax/getPossibleFullAddresses.form",
            get(addresshierarchy::full_addresses),
        )
        .route("/frontend/config.json", get(health::frontend_config))
        .route("/frontend/logo.png", get(health::frontend_logo))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authenticate,
        ));
    let request_id_header = axum::http::HeaderName::from_static("x-request-id");
    Router::new()
        .nest(&state.config.app_path, app_routes)
        .fallback(not_found)
        .with_state(state)
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request| {
                    // Fields are evaluated only when the span is enabled.
                    tracing::info_span!("request", id = %request_id(req), method = %req.method(), path = %req.uri().path())
                })
                .on_request(())
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
        // The gateway assigns request ids (nginx's `$request_id`); generating one here for
        // every request cost a tenth of the throughput of small reads.
        .layer(PropagateRequestIdLayer::new(request_id_header))
}

async fn unknown_resource(req: Request) -> ApiError {
    let name = req
        .uri()
        .path()
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("")
        .to_string();
    ApiError::UnknownResource(name)
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

async fn not_found() -> ApiError {
    ApiError::NotFound
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
    /// A session this request created (its cookie is set on the response).
    pub new_session: Option<String>,
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

    pub fn ctx<'a>(&self, state: &AppState, catalog: &'a Catalog) -> Ctx<'a> {
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

fn credentials_key(user: &str, pass: &str, stored_hash: &str) -> String {
    use sha2::{Digest, Sha256};
    model::hex(&Sha256::digest(
        format!("{user}\0{pass}\0{stored_hash}").as_bytes(),
    ))
}

/// The gateway's request id, else one numbered by this process (direct access).
fn request_id(req: &Request) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    match req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
    {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!(
            "local-{}",
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ),
    }
}

/// Checks HTTP Basic credentials. Credentials verified before (and unchanged since) are
/// recognised from a digest without paying for argon2 again; the slow path runs one
/// caller at a time, so a burst of clients presenting the same new credentials costs one
/// verification, and a password-guessing flood cannot occupy every core.
async fn basic_login(
    state: &Arc<AppState>,
    name: &str,
    pass: &str,
) -> ApiResult<Option<Arc<UserRecord>>> {
    let recognised = |state: &AppState| -> ApiResult<Option<Arc<UserRecord>>> {
        let found = state
            .store
            .user_by_username_shared(name)
            .map_err(ApiError::internal)?;
        Ok(found.filter(|u| {
            let key = credentials_key(name, pass, &u.password_hash);
            state.sessions.cached_basic(&key).as_deref() == Some(u.uuid.as_str())
                && u.locked_until.is_none()
                && !u.retired
        }))
    };
    if let Some(u) = recognised(state)? {
        return Ok(Some(u));
    }
    let _one_at_a_time = state.basic_verification.lock().await;
    if let Some(u) = recognised(state)? {
        return Ok(Some(u));
    }
    let (st, n, p) = (state.clone(), name.to_string(), pass.to_string());
    let verified =
        tokio::task::spawn_blocking(move || auth::login(&st.store, st.lockout(), &n, &p))
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::internal)?;
    Ok(verified.map(|u| {
        state
            .sessions
            .cache_basic(credentials_key(name, pass, &u.password_hash), &u.uuid);
        Arc::new(u)
    }))
}

/// Establishes the `Caller`: a live session cookie, else HTTP Basic credentials (which
/// create a session on `GET /session`). Sets the cookie on the response, and adds
/// `WWW-Authenticate` to 401 answers unless the client sent `Disable-WWW-Authenticate`.
async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut req: Request,
    next: Next,
) -> Response {
    let headers = req.headers();
    let disabled = headers
        .get("disable-www-authenticate")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let caller_origin = origin(headers);
    let session_cookie = cookie(headers, SESSION_COOKIE);
    let basic = basic_credentials(headers);
    let catalog = state.catalog.load_full();
    let mut user: Option<Arc<UserRecord>> = None;
    let mut session_id = None;
    let mut session = None;
    if let Some(id) = session_cookie
        && let Some(s) = state.sessions.get(&id)
    {
        match state.store.user_shared(&s.user_uuid) {
            Ok(Some(u)) if !u.retired => {
                user = Some(u);
                session_id = Some(id);
                session = Some(s);
            }
            Ok(_) => state.sessions.remove(&id),
            Err(e) => return ApiError::internal(e).into_response(),
        }
    }
    let mut new_session = None;
    if user.is_none()
        && let Some((name, pass)) = basic
    {
        let logged_in = match basic_login(&state, &name, &pass).await {
            Ok(u) => u,
            Err(e) => return e.into_response(),
        };
        if let Some(u) = logged_in {
            let is_login = req.uri().path().ends_with("/ws/rest/v1/session")
                && req.method() == axum::http::Method::GET;
            if is_login {
                let location = u
                    .properties
                    .get("defaultLocation")
                    .filter(|l| catalog.location(l).is_some())
                    .cloned();
                let id = state.sessions.create(&u.uuid, location);
                session = state.sessions.get(&id);
                session_id = Some(id.clone());
                new_session = Some(id);
            }
            user = Some(u);
        }
    }
    let grants = match &user {
        Some(u) => auth::grants(u, &catalog),
        None => Grants::default(),
    };
    let caller = Caller {
        user,
        session_id,
        session,
        grants: Arc::new(grants),
        origin: caller_origin,
        new_session: new_session.clone(),
    };
    req.extensions_mut().insert(caller);
    let mut res = next.run(req).await;
    if let Some(id) = new_session {
        let max_age = state.sessions.max_age().as_secs();
        let value = format!(
            "{SESSION_COOKIE}={id}; Path={}; HttpOnly; SameSite=Lax; Max-Age={max_age}",
            state.config.app_path
        );
        if let Ok(v) = HeaderValue::from_str(&value) {
            res.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    if res.status() == StatusCode::UNAUTHORIZED && !disabled {
        let realm = format!("Basic realm=\"OpenMRS at {}\"", state.config.app_path);
        if let Ok(v) = HeaderValue::from_str(&realm) {
            res.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
    }
    res
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
        let bytes = axum::body::to_bytes(req.into_body(), state.config.max_body_bytes)
            .await
            .map_err(|_| ApiError::PayloadTooLarge)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(serde_json::Map::new()));
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
    (status, json_headers(), value.to_string()).into_response()
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
    items: impl Iterator<Item = &'a dyn crate::repr::Resource>,
) -> ApiResult<Response> {
    let rep = crate::repr::Rep::parse(param(query, "v"))?.unwrap_or(crate::repr::Rep::Ref);
    let paging = crate::repr::Paging::from_query(query)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(state, &catalog);
    let values = items
        .map(|r| crate::repr::render(r, &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(
        paging.page(values, &caller.request_url(state, path, query))
    ))
}

/// Runs blocking store work (fsync) off the async threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
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
