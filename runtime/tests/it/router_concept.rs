//! `concept`: lookups by uuid and mapping, and the representation mechanism.

use crate::common::*;
use axum::http::StatusCode;

#[tokio::test]
async fn concepts_are_found_by_uuid_and_by_source_code() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let by_code = c.get("/openmrs/ws/rest/v1/concept/DRC-EMR:3001").await;
    assert_eq!(by_code.status, StatusCode::OK);
    let uuid = by_code.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(by_code.body["display"], "Hémoglobine");
    assert_eq!(by_code.body["datatype"]["display"], "Numeric");
    assert_eq!(by_code.body["conceptClass"]["display"], "Test");
    assert_eq!(by_code.body["resourceVersion"], "2.0");
    assert!(
        by_code.body.get("hiNormal").is_none(),
        "numeric fields are not in the default representation"
    );
    let by_uuid = c.get(&format!("/openmrs/ws/rest/v1/concept/{uuid}")).await;
    assert_eq!(by_uuid.body, by_code.body);
    let full = c
        .get(&format!("/openmrs/ws/rest/v1/concept/{uuid}?v=full"))
        .await;
    assert_eq!(full.body["hiNormal"], 16.0);
    assert_eq!(full.body["units"], "g/dL");
    assert_eq!(full.body["links"].as_array().unwrap().len(), 1);
    let r = c
        .get(&format!("/openmrs/ws/rest/v1/concept/{uuid}?v=ref"))
        .await;
    assert_eq!(
        r.body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["uuid", "display", "links"]
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/concept/ICD-10-WHO:B54")
            .await
            .body["display"],
        "Paludisme, sans précision"
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/concept/NOPE:1").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/concept/not-a-uuid").await.body["error"]["message"],
        "Object with given uuid doesn't exist [null]"
    );
}

#[tokio::test]
async fn custom_representations_nest_and_reject_unknown_properties() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get("/openmrs/ws/rest/v1/concept/DRC-EMR:3040?v=custom:(uuid,answers:(uuid,display),datatype:(name),links)").await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let answers: Vec<&str> = r.body["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["display"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["Positif", "Négatif", "Résultat invalide"]);
    assert_eq!(
        r.body["datatype"],
        serde_json::json!({"name": "Coded", "resourceVersion": "1.8"})
    );
    assert_eq!(r.body["links"][1]["rel"], "default");
    let keys: Vec<&str> = r
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["uuid", "answers", "datatype", "links", "resourceVersion"]
    );
    let r = c
        .get("/openmrs/ws/rest/v1/concept/DRC-EMR:3040?v=custom:(uuid,nonsense)")
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/concept/DRC-EMR:3040?v=whatever")
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    let r = c
        .get("/openmrs/ws/rest/v1/concept?q=paludisme&limit=5")
        .await;
    assert!(r.body["results"].as_array().unwrap().len() >= 2);
}

#[tokio::test]
async fn reading_concepts_needs_the_privilege() {
    let mut anon = Client::new(state());
    let r = anon.get("/openmrs/ws/rest/v1/concept/DRC-EMR:3001").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.body["error"]["message"],
        "User is not logged in [Privileges required: Get Concepts]"
    );
}

#[tokio::test]
async fn repeated_reads_follow_the_session_locale_and_the_origin() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let uri = "/openmrs/ws/rest/v1/concept/DRC-EMR:3001";
    let french = c.get(uri).await;
    assert_eq!(french.body["display"], "Hémoglobine");
    assert_eq!(
        c.get(uri).await.body,
        french.body,
        "a repeated read is identical"
    );
    let switched = c
        .post("/openmrs/ws/rest/v1/session", r#"{"locale":"en"}"#)
        .await;
    assert_eq!(switched.status, StatusCode::OK);
    let english = c.get(uri).await;
    assert_eq!(english.body["display"], "Haemoglobin");
    let proxied = c
        .send(
            "GET",
            uri,
            &[
                ("x-forwarded-proto", "https"),
                ("x-forwarded-host", "emr.example.org"),
            ],
            None,
        )
        .await;
    let link = proxied.body["links"][0]["uri"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        link.starts_with("https://emr.example.org/openmrs/"),
        "{link}"
    );
    let plain = c.get(uri).await.body["links"][0]["uri"].clone();
    assert_ne!(
        plain.as_str().unwrap(),
        link,
        "links follow each request's origin"
    );

    // The rendered answers belong to the catalog: a reload starts afresh.
    assert!(!st.catalog.load().rendered.is_empty());
    let reloaded = c
        .send(
            "POST",
            "/openmrs/ws/rest/v1/initializer/reload",
            &[("content-type", "application/json")],
            Some("{}"),
        )
        .await;
    assert_eq!(reloaded.status, StatusCode::OK);
    assert!(st.catalog.load().rendered.is_empty());
    assert_eq!(c.get(uri).await.body, english.body);
}
