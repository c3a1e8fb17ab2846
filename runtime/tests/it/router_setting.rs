//! `systemsetting`: listing, reading and changing settings.

use crate::common::*;
use axum::http::StatusCode;

#[tokio::test]
async fn settings_are_listed_read_and_changed_durably() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get("/openmrs/ws/rest/v1/systemsetting?q=security.").await;
    let displays: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["display"].as_str().unwrap())
        .collect();
    assert_eq!(
        displays,
        [
            "Security - Allowed Failed Logins Before Lockout = 7",
            "Security - Unlock Account Waiting Time = 5"
        ]
    );
    let r = c
        .get("/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout?v=custom:(value)")
        .await;
    assert_eq!(
        r.body,
        serde_json::json!({"value": "24", "resourceVersion": "1.9"})
    );

    let r = c
        .post(
            "/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout",
            r#"{"value":"12"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["value"], "12");
    assert_eq!(
        st.store
            .setting("visits.autoCloseVisitTimeout")
            .unwrap()
            .unwrap()
            .value,
        "12"
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout")
            .await
            .body["value"],
        "12"
    );

    assert_eq!(
        c.post(
            "/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout",
            r#"{"value":12}"#
        )
        .await
        .status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        c.post(
            "/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout",
            r#"{"value":"soon"}"#
        )
        .await
        .status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        c.post(
            "/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout",
            r#"{"value":"1","colour":"red"}"#
        )
        .await
        .status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        c.post(
            "/openmrs/ws/rest/v1/systemsetting/no.such.setting",
            r#"{"value":"1"}"#
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/systemsetting/no.such.setting")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // The value is still the last good one.
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout")
            .await
            .body["value"],
        "12"
    );
}

#[tokio::test]
async fn lockout_follows_the_setting_changed_through_the_api() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    c.post(
        "/openmrs/ws/rest/v1/systemsetting/security.allowedFailedLoginsBeforeLockout",
        r#"{"value":"2"}"#,
    )
    .await;
    let mut other = Client::new(st.clone());
    for _ in 0..3 {
        other.login("admin", "wrong-password").await;
    }
    assert_eq!(
        other.login("admin", PASSWORD).await.body["authenticated"],
        false
    );
}

/// OpenMRS's built-in settings the O3 modules read answer their defaults when the content
/// does not set them (the chart hides visits when `visits.enabled` is missing); the
/// content's value and then the API's win, and the server's own rules follow them.
#[tokio::test]
async fn built_in_settings_answer_their_defaults() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let value = |r: &Response| r.body["value"].as_str().unwrap_or("(none)").to_string();
    let r = c
        .get("/openmrs/ws/rest/v1/systemsetting/visits.enabled?v=custom:(value)")
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(value(&r), "true");
    // The content sets this one to false.
    let r = c
        .get("/openmrs/ws/rest/v1/systemsetting/visits.allowOverlappingVisits")
        .await;
    assert_eq!(value(&r), "false");
    assert!(!st.bool_setting("visits.allowOverlappingVisits", true));
    let r = c.get("/openmrs/ws/rest/v1/systemsetting?q=visits.").await;
    let properties: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["display"].as_str().unwrap())
        .collect();
    assert!(
        properties.contains(&"Visits - Enabled = true"),
        "{properties:?}"
    );
    // A built-in setting changed through the API takes the new value.
    let r = c
        .post(
            "/openmrs/ws/rest/v1/systemsetting/visits.enabled",
            r#"{"value":"false"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert!(!st.bool_setting("visits.enabled", true));
    assert_eq!(
        st.setting("concept.true").as_deref(),
        Some("1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
    );
}

/// A package that leaves a setting the O3 modules read unset gets OpenMRS's built-in
/// default, as a real server answers it, instead of a 404 (the order basket reads
/// `drugOrder.requireOutpatientQuantity`).
#[tokio::test]
async fn settings_the_modules_read_have_their_built_in_defaults() {
    let bundle = bundle_of(&[(
        "openmrs_config/globalproperties/gp.xml",
        "<config><globalProperties><globalProperty><property>visits.enabled</property>\
         <value>true</value></globalProperty></globalProperties></config>",
    )]);
    let st = state_with(bundle, crate::common::test_store());
    let mut c = Client::admin(st).await;
    let r = c
        .get("/openmrs/ws/rest/v1/systemsetting/drugOrder.requireOutpatientQuantity?v=custom:(value)")
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["value"], "true");
    // The FHIR module's defaults for immunizations (the reference application's content
    // defines the encounter type and sets neither).
    for (property, default) in [
        (
            "fhir2.immunizationsEncounterTypeUuid",
            "29c02aff-9a93-46c9-bf6f-48b552fcb1fa",
        ),
        (
            "fhir2.administeringEncounterRoleUuid",
            "546cce2d-6d58-4097-ba92-206c1a2a0462",
        ),
    ] {
        let r = c
            .get(&format!(
                "/openmrs/ws/rest/v1/systemsetting/{property}?v=custom:(value)"
            ))
            .await;
        assert_eq!(r.body["value"], default, "{property}: {:?}", r.body);
    }
    let r = c
        .get("/openmrs/ws/rest/v1/systemsetting/no.such.setting")
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}
