//! Helpers shared by the runtime tests.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use runtime::app::app;
use runtime::app::start::start;
use runtime::embedded::EMBEDDED_BUNDLE;
use runtime::http::{AppState, Config};
use runtime::store::Store;
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

pub const PASSWORD: &str = "Test-password-1";
pub const MOD30: &str = "org.openmrs.module.idgen.validator.LuhnMod30IdentifierValidator";

pub fn state() -> Arc<AppState> {
    state_with(EMBEDDED_BUNDLE.to_vec(), test_store())
}

/// A new, empty store on the backend the suite runs on: redb in memory, or, with
/// `EMR_TEST_BACKEND=postgres`, a schema of its own on the `EMR_TEST_POSTGRES` server (so
/// tests stay independent and run in parallel).
pub fn test_store() -> Store {
    match test_database() {
        Some(url) => Store::connect(&url, &new_schema(), &runtime::domains::REGISTRY).unwrap(),
        None => Store::in_memory(&runtime::domains::REGISTRY).unwrap(),
    }
}

/// The PostgreSQL server the suite runs against, if it runs against one.
pub fn test_database() -> Option<String> {
    match std::env::var("EMR_TEST_BACKEND").as_deref() {
        Ok("postgres") => Some(crate::cluster::server()),
        Ok("redb") | Ok("") | Err(_) => None,
        Ok(other) => panic!("EMR_TEST_BACKEND={other}: redb or postgres"),
    }
}

/// A schema name no other test of any run uses.
pub fn new_schema() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "t{}_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    )
}

pub fn state_with(bundle: Vec<u8>, store: Store) -> Arc<AppState> {
    start(Config::for_tests(PASSWORD), bundle, store)
        .expect("starts")
        .0
}

pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

/// A client that keeps the session cookie, as a browser does.
pub struct Client {
    pub state: Arc<AppState>,
    pub cookie: Option<String>,
}

impl Client {
    pub fn new(state: Arc<AppState>) -> Client {
        Client {
            state,
            cookie: None,
        }
    }

    /// A client logged in as the administrator.
    pub async fn admin(state: Arc<AppState>) -> Client {
        let mut c = Client::new(state);
        let r = c.login("admin", PASSWORD).await;
        assert_eq!(r.body["authenticated"], true, "{:?}", r.body);
        c
    }

    /// The logged-in user's uuid, from the session.
    pub async fn user_uuid(&mut self) -> String {
        let r = self.get("/openmrs/ws/rest/v1/session").await;
        r.body["user"]["uuid"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub async fn login(&mut self, user: &str, password: &str) -> Response {
        use base64::Engine;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.send(
            "GET",
            "/openmrs/ws/rest/v1/session",
            &[("authorization", &format!("Basic {basic}"))],
            None,
        )
        .await
    }

    pub async fn get(&mut self, uri: &str) -> Response {
        self.send("GET", uri, &[], None).await
    }

    pub async fn post(&mut self, uri: &str, body: &str) -> Response {
        self.send(
            "POST",
            uri,
            &[("content-type", "application/json")],
            Some(body),
        )
        .await
    }

    /// The response as the router gives it, its body not read (a client that stalls).
    pub async fn raw(
        &mut self,
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> axum::response::Response {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "emr.test");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(c) = &self.cookie {
            req = req.header("cookie", format!("JSESSIONID={c}"));
        }
        let req = req
            .body(
                body.map(|b| Body::from(b.to_string()))
                    .unwrap_or_else(Body::empty),
            )
            .unwrap();
        app(self.state.clone()).oneshot(req).await.unwrap()
    }

    /// `send` with a body of bytes (a multipart upload).
    pub async fn send_bytes(
        &mut self,
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Response {
        let mut req = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(c) = &self.cookie {
            req = req.header("cookie", format!("JSESSIONID={c}"));
        }
        let res = app(self.state.clone())
            .oneshot(req.body(Body::from(body)).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = http_body_util::BodyExt::collect(res.into_body())
            .await
            .unwrap()
            .to_bytes();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        Response {
            status,
            headers,
            body,
        }
    }

    pub async fn send(
        &mut self,
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        let res = self.raw(method, uri, headers, body).await;
        let status = res.status();
        let headers = res.headers().clone();
        for v in headers.get_all("set-cookie") {
            let v = v.to_str().unwrap();
            if let Some(rest) = v.strip_prefix("JSESSIONID=") {
                let id = rest.split(';').next().unwrap();
                self.cookie = (!id.is_empty()).then(|| id.to_string());
            }
        }
        let bytes = http_body_util::BodyExt::collect(res.into_body())
            .await
            .unwrap()
            .to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Response {
            status,
            headers,
            body,
        }
    }
}

/// An EHR patient number with its Luhn mod-30 check character.
pub fn emr_id(body: &str) -> String {
    runtime::identifiers::with_check(body, Some(MOD30)).unwrap()
}

pub fn location_uuid(state: &AppState, name: &str) -> String {
    state.catalog.load().location(name).unwrap().uuid.clone()
}

pub fn identifier_type_uuid(state: &AppState, name: &str) -> String {
    state
        .catalog
        .load()
        .identifier_type(name)
        .unwrap()
        .uuid
        .clone()
}

/// A valid creation body for the distribution's content.
pub fn patient_body(state: &AppState, given: &str, family: &str, id_body: &str) -> String {
    serde_json::json!({
        "person": {
            "names": [{"givenName": given, "familyName": family, "preferred": true}],
            "gender": "F",
            "birthdate": "1990-4-12",
            "birthdateEstimated": false,
            "addresses": [{"cityVillage": "Ngaliema", "stateProvince": "Kinshasa", "country": "République démocratique du Congo"}],
            "attributes": [{"attributeType": "14d4f066-15f5-102d-96e4-000c29c2a5d7", "value": "+243810000000"}]
        },
        "identifiers": [{
            "identifier": emr_id(id_body),
            "identifierType": identifier_type_uuid(state, "Numéro patient DSE"),
            "location": location_uuid(state, "Bondeko - Accueil"),
            "preferred": true
        }]
    })
    .to_string()
}

/// Compiles a fixture content (`//- path` files, as in the compiler's tests) into a bundle.
pub fn bundle_of(files: &[(&str, &str)]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let compiled = compiler::compile(
        dir.path(),
        &compiler::vfs::Selection::distro(),
        &compiler::NoProgress,
    );
    assert!(!compiled.has_errors(), "{:?}", compiled.diagnostics);
    compiled.encode()
}

/// A request with a JSON body (FHIR writes use PUT and DELETE too).
pub async fn send_json(c: &mut Client, method: &str, uri: &str, body: &Value) -> Response {
    c.send(
        method,
        uri,
        &[("content-type", "application/json")],
        Some(&body.to_string()),
    )
    .await
}

/// A receptionist's account (`Application: Registers Patients`) made by `admin`, logged in.
pub async fn registration_clerk(
    admin: &mut Client,
    state: &Arc<AppState>,
    username: &str,
) -> Client {
    let body = serde_json::json!({"username": username, "password": "Clerk-pass-2026",
        "person": {"names": [{"givenName": "Rose", "familyName": "Ilunga"}], "gender": "F"},
        "roles": ["Application: Registers Patients"]});
    let r = admin
        .post("/openmrs/ws/rest/v1/user", &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut clerk = Client::new(state.clone());
    clerk.login(username, "Clerk-pass-2026").await;
    clerk
}

/// Registers a patient (`patient_body`) and answers her uuid.
pub async fn register_patient(
    c: &mut Client,
    state: &AppState,
    given: &str,
    family: &str,
    id_body: &str,
) -> String {
    let r = c
        .post(
            "/openmrs/ws/rest/v1/patient",
            &patient_body(state, given, family, id_body),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body["uuid"].as_str().unwrap().to_string()
}

/// The ids of a FHIR search Bundle's resources, in its order.
pub fn fhir_ids(bundle: &Value) -> Vec<String> {
    bundle["entry"]
        .as_array()
        .map(|e| {
            e.iter()
                .map(|x| x["resource"]["id"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Changes a system setting as an administrator does (`POST systemsetting/{property}`).
pub async fn set_setting(c: &mut Client, property: &str, value: &str) {
    let r = c
        .post(
            &format!("/openmrs/ws/rest/v1/systemsetting/{property}"),
            &serde_json::json!({"value": value}).to_string(),
        )
        .await;
    assert_eq!(r.status, axum::http::StatusCode::OK, "{:?}", r.body);
}
