//! `session`, authentication, lockout and privileges.

use crate::common::*;
use axum::http::StatusCode;
use runtime::auth::hash_password;
use runtime::store::UserRecord;

#[tokio::test]
async fn anonymous_session_reports_bcp47_locales() {
    let mut c = Client::new(state());
    let r = c.get("/openmrs/ws/rest/v1/session").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body,
        serde_json::json!({"authenticated": false, "locale": "fr", "allowedLocales": ["en", "fr"]})
    );
    assert!(
        r.headers
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
}

#[tokio::test]
async fn basic_login_sets_an_http_only_cookie_and_logout_ends_it() {
    let mut c = Client::new(state());
    let r = c.login("admin", PASSWORD).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["authenticated"], true);
    assert_eq!(r.body["user"]["username"], "admin");
    assert_eq!(r.body["user"]["roles"][0]["display"], "System Developer");
    assert_eq!(r.body["user"]["resourceVersion"], "1.8");
    assert!(r.headers.get("location").is_none());
    let cookie = r.headers.get("set-cookie").unwrap().to_str().unwrap();
    assert!(
        cookie.starts_with("JSESSIONID=")
            && cookie.contains("HttpOnly")
            && cookie.contains("Path=/openmrs")
            && cookie.contains("Max-Age="),
        "{cookie}"
    );
    // The cookie alone authenticates now.
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/session").await.body["authenticated"],
        true
    );
    let old = c.cookie.clone();
    let r = c
        .send("DELETE", "/openmrs/ws/rest/v1/session", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    c.cookie = old;
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/session").await.body["authenticated"],
        false
    );
}

/// A login from a given client address (as the gateway names it).
async fn login_from(c: &mut Client, ip: &str, user: &str, password: &str) -> Response {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    c.send(
        "GET",
        "/openmrs/ws/rest/v1/session",
        &[
            ("authorization", &format!("Basic {basic}")),
            ("x-real-ip", ip),
        ],
        None,
    )
    .await
}

#[tokio::test]
async fn failed_logins_are_throttled_per_address_and_name_with_retry_after() {
    let st = state();
    let limits = runtime::throttle::Limits::default();
    let mut c = Client::new(st.clone());
    for _ in 0..limits.per_address_and_name {
        let r = login_from(&mut c, "192.168.10.5", "admin", "wrong-password").await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.body["authenticated"], false);
    }
    // Past the limit, that name waits from that address, even with the right password…
    let r = login_from(&mut c, "192.168.10.5", "admin", PASSWORD).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{:?}", r.body);
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(wait > 0 && wait <= limits.window.as_secs());
    assert_eq!(r.body["error"]["code"], "emr.login.throttled");
    // …while the account is not locked and another address logs in.
    let r = login_from(&mut c, "192.168.10.6", "admin", PASSWORD).await;
    assert_eq!(r.body["authenticated"], true);
}

/// Behind one NAT or at one reception desk, one person's typos must not lock colleagues
/// out: five failures for other names, then a colleague's correct login from the same
/// address is accepted, and an integration authenticating with Basic on every call keeps
/// working; a sixth guess at one name is refused.
#[tokio::test]
async fn a_colleagues_login_from_an_address_where_others_failed_is_accepted() {
    let st = state();
    for n in 0..5 {
        let r = login_from(
            &mut Client::new(st.clone()),
            "192.168.20.1",
            &format!("made-up-{n}"),
            "x",
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    }
    let r = login_from(
        &mut Client::new(st.clone()),
        "192.168.20.1",
        "admin",
        PASSWORD,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["authenticated"], true);
    for _ in 0..5 {
        login_from(
            &mut Client::new(st.clone()),
            "192.168.20.1",
            "made-up-0",
            "x",
        )
        .await;
        // An API client's Basic calls between the guesses still pass.
        let r = login_from(
            &mut Client::new(st.clone()),
            "192.168.20.1",
            "admin",
            PASSWORD,
        )
        .await;
        assert_eq!(r.body["authenticated"], true);
    }
    let r = login_from(
        &mut Client::new(st.clone()),
        "192.168.20.1",
        "made-up-0",
        "x",
    )
    .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn spraying_many_names_from_one_address_is_stopped_and_the_limits_are_settings() {
    let st = state();
    let limits = runtime::throttle::Limits::default();
    let mut refused_at = None;
    for n in 0..50 {
        let r = login_from(
            &mut Client::new(st.clone()),
            "192.168.30.1",
            &format!("name-{n}"),
            "guess",
        )
        .await;
        if r.status == StatusCode::TOO_MANY_REQUESTS {
            refused_at = Some(n);
            break;
        }
    }
    assert_eq!(refused_at, Some(limits.per_address));
    // Even the administrator's right password waits there now: the address is spraying.
    let r = login_from(
        &mut Client::new(st.clone()),
        "192.168.30.1",
        "admin",
        PASSWORD,
    )
    .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    // The limits are system settings: with two per name and address, the third guess waits.
    let mut admin = Client::admin(st.clone()).await;
    let r = admin
        .post(
            "/openmrs/ws/rest/v1/systemsetting/emr.loginThrottle.perAddressAndUsername",
            r#"{"value":"2"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    for _ in 0..2 {
        login_from(
            &mut Client::new(st.clone()),
            "192.168.30.2",
            "someone",
            "guess",
        )
        .await;
    }
    let r = login_from(
        &mut Client::new(st.clone()),
        "192.168.30.2",
        "someone",
        "guess",
    )
    .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn wrong_credentials_are_200_unauthenticated_and_lock_the_account() {
    let st = state();
    let mut c = Client::new(st.clone());
    // From several addresses (one alone would be throttled before the lock).
    for i in 0..7 {
        let r = login_from(&mut c, &format!("10.1.0.{i}"), "admin", "wrong-password").await;
        assert_eq!(
            (r.status, r.body["authenticated"].clone()),
            (StatusCode::OK, serde_json::json!(false))
        );
    }
    // Seven failures are allowed: the right password still works, and resets the count.
    assert_eq!(c.login("admin", PASSWORD).await.body["authenticated"], true);
    let mut c = Client::new(st.clone());
    for i in 0..8 {
        login_from(&mut c, &format!("10.2.0.{i}"), "admin", "wrong-password").await;
    }
    // The eighth failure locks: even the right password fails now.
    assert_eq!(
        c.login("admin", PASSWORD).await.body["authenticated"],
        false
    );
    let user = st.store.user_by_username("admin").unwrap().unwrap();
    assert!(user.locked_until.is_some());
    assert_eq!(user.properties["loginAttempts"], "8");
    // More attempts during the lock do not extend it: the wait counts from the lock.
    for i in 0..3 {
        login_from(&mut c, &format!("10.3.0.{i}"), "admin", "wrong-password").await;
    }
    let still = st.store.user_by_username("admin").unwrap().unwrap();
    assert_eq!(still.locked_until, user.locked_until);
    // Once the wait has passed (moved into the past here), the right password works.
    let mut waited = still.clone();
    waited.locked_until = Some(chrono::Utc::now().timestamp_millis() - 1);
    st.store.put_user(&waited).unwrap();
    assert_eq!(c.login("admin", PASSWORD).await.body["authenticated"], true);
}

#[tokio::test]
async fn missing_privileges_are_403_and_anonymous_calls_401() {
    let st = state();
    let clerk = UserRecord {
        v: 1,
        uuid: "0b6e5a1c-0000-4000-8000-000000000001".into(),
        username: "clerk".into(),
        system_id: "clerk".into(),
        person_uuid: "0b6e5a1c-0000-4000-8000-000000000002".into(),
        person_name: "Agent Accueil".into(),
        password_hash: hash_password("Clerk-pass-1"),
        roles: vec!["Organizational: Registration Clerk".into()],
        properties: Default::default(),
        retired: false,
        failed_logins: 0,
        locked_until: None,
        audit: None,
        retiring: None,
    };
    st.store.put_user(&clerk).unwrap();

    let mut anon = Client::new(st.clone());
    let r = anon.get("/openmrs/ws/rest/v1/systemsetting").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.body["error"]["message"],
        "User is not logged in [Privileges required: Get Global Properties]"
    );
    assert!(
        r.headers
            .get("www-authenticate")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("Basic realm=")
    );
    let r = anon
        .send(
            "GET",
            "/openmrs/ws/rest/v1/systemsetting",
            &[("disable-www-authenticate", "true")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.headers.get("www-authenticate").is_none());

    let mut c = Client::new(st.clone());
    assert_eq!(
        c.login("clerk", "Clerk-pass-1").await.body["authenticated"],
        true
    );
    // Inherited through Application: Registers Patients.
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient?q=ab").await.status,
        StatusCode::OK
    );
    let r = c
        .post(
            "/openmrs/ws/rest/v1/systemsetting/default_locale",
            r#"{"value":"en"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        r.body["error"]["message"],
        "User is logged in but doesn't have the relevant privilege [Privileges required: Manage Global Properties]"
    );
    let r = c
        .send("POST", "/openmrs/ws/rest/v1/initializer/reload", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let session = c.get("/openmrs/ws/rest/v1/session").await.body;
    let privileges: Vec<&str> = session["user"]["privileges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["display"].as_str().unwrap())
        .collect();
    assert!(
        privileges.contains(&"Get Patients") && !privileges.contains(&"Manage Global Properties")
    );
}

#[tokio::test]
async fn session_location_and_locale_can_be_chosen() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let location = location_uuid(&st, "Bondeko - Accueil");
    let r = c
        .post(
            "/openmrs/ws/rest/v1/session",
            &format!(r#"{{"sessionLocation":"{location}","locale":"en-GB"}}"#),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "en-GB is not allowed by the content"
    );
    let r = c
        .post(
            "/openmrs/ws/rest/v1/session",
            &format!(r#"{{"sessionLocation":"{location}","locale":"en"}}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["locale"], "en");
    assert_eq!(r.body["sessionLocation"]["uuid"], location.as_str());
    assert_eq!(r.body["sessionLocation"]["display"], "Bondeko - Accueil");
    let r = c
        .post(
            "/openmrs/ws/rest/v1/session",
            r#"{"sessionLocation":"nowhere"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is not the UUID of any location")
    );
    // Names now display in English.
    let concept = c
        .get("/openmrs/ws/rest/v1/concept/DRC-EMR:5001?v=custom:(display)")
        .await;
    assert_eq!(concept.body["display"], "Temperature (°C)");
}

#[tokio::test]
async fn health_and_login_page_answer_without_authentication() {
    let mut c = Client::new(state());
    assert_eq!(
        c.get("/openmrs/health/started").await.status,
        StatusCode::OK
    );
    assert_eq!(c.get("/openmrs/health/alive").await.status, StatusCode::OK);
    let r = c.get("/openmrs/login.htm").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.as_str().unwrap().contains("spa/login"));
}

#[tokio::test]
async fn unknown_resources_and_methods_have_json_error_bodies() {
    let mut c = Client::admin(state()).await;
    let r = c.get("/openmrs/ws/rest/v1/foo").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown resource: v1/foo")
    );
    let r = c
        .send("PUT", "/openmrs/ws/rest/v1/patient", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(r.body["error"].is_object());
}

#[tokio::test]
async fn the_compiled_front_end_configuration_and_logo_are_public() {
    let mut c = Client::new(state());
    let r = c.get("/openmrs/frontend/config.json").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body["@openmrs/esm-styleguide"]["Brand color #1"],
        "#0b5d4b"
    );
    let r = c.get("/openmrs/frontend/logo.png").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["content-type"], "image/png");
}

#[tokio::test]
async fn basic_credentials_elsewhere_authenticate_that_request_alone() {
    use base64::Engine;
    let mut c = Client::new(state());
    let mut read_with = async |credentials: &str| {
        let basic = base64::engine::general_purpose::STANDARD.encode(credentials);
        let header = format!("Basic {basic}");
        c.send(
            "GET",
            "/openmrs/ws/rest/v1/systemsetting?q=locale",
            &[("authorization", &header)],
            None,
        )
        .await
    };
    let r = read_with(&format!("admin:{PASSWORD}")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.headers.get("set-cookie").is_none());
    // A wrong password is refused there with 401 and the challenge.
    let r = read_with("admin:not-the-password").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.headers.get("www-authenticate").is_some());
}

#[tokio::test]
async fn the_gateway_request_id_is_echoed_on_every_answer() {
    let mut c = Client::new(state());
    for (uri, status) in [
        ("/openmrs/health/started", StatusCode::OK),
        (
            "/openmrs/ws/rest/v1/systemsetting",
            StatusCode::UNAUTHORIZED,
        ),
        ("/openmrs/ws/rest/v1/nosuchresource", StatusCode::NOT_FOUND),
        ("/elsewhere", StatusCode::NOT_FOUND),
    ] {
        let r = c
            .send("GET", uri, &[("x-request-id", "3f2a9c")], None)
            .await;
        assert_eq!(r.status, status, "{uri}");
        assert_eq!(r.headers["x-request-id"], "3f2a9c", "{uri}");
    }
    // Without a gateway there is no id to echo.
    let r = c.get("/openmrs/health/started").await;
    assert!(r.headers.get("x-request-id").is_none());
}

#[tokio::test]
async fn a_method_a_route_does_not_serve_is_405_with_an_error_body() {
    let mut c = Client::new(state());
    let r = c.post("/openmrs/health/started", "{}").await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(r.body["error"]["message"].is_string(), "{}", r.body);
}

#[tokio::test]
async fn post_session_with_basic_credentials_logs_in_and_sets_the_cookie() {
    use base64::Engine;
    let st = state();
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
    let mut c = Client::new(st.clone());
    let r = c
        .send(
            "POST",
            "/openmrs/ws/rest/v1/session",
            &[
                ("authorization", &format!("Basic {basic}")),
                ("content-type", "application/json"),
            ],
            Some(r#"{"locale": "en"}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["authenticated"], true);
    assert_eq!(r.body["locale"], "en");
    let cookie = r.headers["set-cookie"].to_str().unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    // The cookie alone now carries the session, with the locale chosen.
    let again = c.get("/openmrs/ws/rest/v1/session").await;
    assert_eq!(again.body["authenticated"], true);
    assert_eq!(again.body["locale"], "en");
}

#[tokio::test]
async fn the_session_cookie_is_secure_when_the_gateway_says_https() {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
    let r = Client::new(state())
        .send(
            "GET",
            "/openmrs/ws/rest/v1/session",
            &[
                ("authorization", &format!("Basic {basic}")),
                ("x-forwarded-proto", "https"),
            ],
            None,
        )
        .await;
    let cookie = r.headers["set-cookie"].to_str().unwrap();
    assert!(cookie.ends_with("; Secure"), "{cookie}");
}

#[tokio::test]
async fn paging_parameters_that_are_not_whole_numbers_are_400() {
    let mut c = Client::admin(state()).await;
    for q in ["limit=abc", "limit=2.5", "startIndex=-1", "startIndex=x"] {
        let r = c.get(&format!("/openmrs/ws/rest/v1/location?{q}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{q}: {:?}", r.body);
    }
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/location?limit=2&startIndex=1")
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn bodies_that_are_not_json_are_415_everywhere() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let source = c
        .get("/openmrs/ws/rest/v1/idgen/identifiersource")
        .await
        .body["results"][0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    for (path, content_type) in [
        (
            "/openmrs/ws/rest/v1/patient",
            "application/x-www-form-urlencoded",
        ),
        ("/openmrs/ws/rest/v1/patient", "text/plain"),
        (
            &format!("/openmrs/ws/rest/v1/idgen/identifiersource/{source}/identifier") as &str,
            "text/plain",
        ),
    ] {
        let r = c
            .send("POST", path, &[("content-type", content_type)], Some("{}"))
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{path} {content_type}"
        );
        assert!(r.body["error"]["message"].is_string());
    }
    // No counter was spent by the refused generation.
    let r = c
        .send(
            "POST",
            &format!("/openmrs/ws/rest/v1/idgen/identifiersource/{source}/identifier"),
            &[("content-type", "application/json; charset=UTF-8")],
            Some("{}"),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        st.store.next_counter(&source).unwrap(),
        1,
        "only one generation used the counter"
    );
}

#[tokio::test]
async fn head_requests_run_no_side_effects() {
    use base64::Engine;
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    // HEAD on the session with credentials opens no session.
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
    let r = Client::new(st.clone())
        .send(
            "HEAD",
            "/openmrs/ws/rest/v1/session",
            &[("authorization", &format!("Basic {basic}"))],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(!r.headers.contains_key("set-cookie"));
    // HEAD on the backup takes none: with every backup permit held, it still answers.
    let mut held = Vec::new();
    for _ in 0..runtime::app::backup::CONCURRENT_BACKUPS {
        held.push(
            admin
                .raw("GET", "/openmrs/ws/rest/v1/backup", &[], None)
                .await,
        );
    }
    let r = admin
        .send("HEAD", "/openmrs/ws/rest/v1/backup", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, serde_json::Value::Null);
    drop(held);
}
