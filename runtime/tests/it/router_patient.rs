//! `patient`: creation and its validation, search and read.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::json;

#[tokio::test]
async fn a_valid_patient_is_created_and_read_back_in_the_default_representation() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c
        .post(
            "/openmrs/ws/rest/v1/patient/",
            &patient_body(&st, "Hélène", "Mbuyi", "100001"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let b = &r.body;
    let uuid = b["uuid"].as_str().unwrap().to_string();
    assert_eq!(b["display"], format!("{} - Hélène Mbuyi", emr_id("100001")));
    assert_eq!(b["person"]["uuid"], uuid.as_str());
    assert_eq!(b["person"]["gender"], "F");
    assert_eq!(b["person"]["birthdate"], "1990-04-12T00:00:00.000+0000");
    assert_eq!(b["person"]["resourceVersion"], "1.11");
    assert_eq!(
        b["identifiers"][0]["display"],
        format!("Numéro patient DSE = {}", emr_id("100001"))
    );
    assert!(
        b["identifiers"][0]["links"][0]["uri"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "http://emr.test/openmrs/ws/rest/v1/patient/{uuid}/identifier/"
            ))
    );
    assert_eq!(b["resourceVersion"], "1.8");
    let keys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "uuid",
            "display",
            "identifiers",
            "person",
            "voided",
            "links",
            "resourceVersion"
        ]
    );

    let read = c.get(&format!("/openmrs/ws/rest/v1/patient/{uuid}")).await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body, r.body);
    let custom = c.get(&format!("/openmrs/ws/rest/v1/patient/{uuid}?v=custom:(uuid,person:(preferredName:(givenName,familyName),attributes:(value)),patientIdentifier:(identifier))")).await;
    assert_eq!(
        custom.body["person"]["preferredName"]["givenName"],
        "Hélène"
    );
    assert_eq!(
        custom.body["person"]["attributes"][0]["value"],
        "+243810000000"
    );
    // An attribute shows its value (webservices.rest 2.44 and later), not "type = value" as
    // identifiers do: the O3 registration suite reads the telephone number back from it.
    let full = c
        .get(&format!("/openmrs/ws/rest/v1/patient/{uuid}?v=full"))
        .await;
    assert_eq!(
        full.body["person"]["attributes"][0]["display"],
        "+243810000000"
    );
    assert_eq!(
        custom.body["patientIdentifier"]["identifier"],
        emr_id("100001").as_str()
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient/00000000-0000-4000-8000-000000000000")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn validation_failures_are_400_with_field_and_global_errors() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let mut body: serde_json::Value =
        serde_json::from_str(&patient_body(&st, "Jean", "Kabeya", "100002")).unwrap();
    body["person"]["gender"] = json!("X");
    body["person"]["birthdate"] = json!("2999-01-01");
    body["person"]["names"][0]["familyName"] = json!("");
    let r = c
        .post("/openmrs/ws/rest/v1/patient", &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["error"]["message"], "Invalid Submission");
    assert_eq!(
        r.body["error"]["code"],
        "webservices.rest.error.invalid.submission"
    );
    assert_eq!(
        r.body["error"]["fieldErrors"]["gender"][0]["code"],
        "Person.gender.required"
    );
    assert_eq!(
        r.body["error"]["fieldErrors"]["birthdate"][0]["code"],
        "error.date.future"
    );
    assert_eq!(
        r.body["error"]["fieldErrors"]["names[0].givenName"][0]["code"],
        "Patient.names.required.given.family"
    );
    assert!(
        r.body["error"]["globalErrors"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // A wrong check character.
    let mut body: serde_json::Value =
        serde_json::from_str(&patient_body(&st, "Jean", "Kabeya", "100002")).unwrap();
    let good = emr_id("100002");
    let bad = format!(
        "{}{}",
        &good[..good.len() - 1],
        if good.ends_with('0') { '1' } else { '0' }
    );
    body["identifiers"][0]["identifier"] = json!(bad);
    let r = c
        .post("/openmrs/ws/rest/v1/patient", &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["error"]["globalErrors"][0]["message"],
        format!("Invalid check digit for identifier: {bad}")
    );

    // A format that does not match, and the required type missing.
    let nin = identifier_type_uuid(&st, "Numéro national d'identification");
    body["identifiers"] = json!([{"identifier": "12-34", "identifierType": nin}]);
    let r = c
        .post("/openmrs/ws/rest/v1/patient", &body.to_string())
        .await;
    let messages: Vec<&str> = r.body["error"]["globalErrors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .contains(&"Identifier \"12-34\" does not match : \"^[0-9]{2}-[0-9]{4}-[0-9]{6}$\""),
        "{messages:?}"
    );
    assert!(
        messages.contains(
            &"Patient is missing the following required identifier(s): Numéro patient DSE"
        ),
        "{messages:?}"
    );

    // ART numbers need a location.
    let art = identifier_type_uuid(&st, "Code TARV");
    let mut body: serde_json::Value =
        serde_json::from_str(&patient_body(&st, "Jean", "Kabeya", "100003")).unwrap();
    body["identifiers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"identifier": "BDK-00042", "identifierType": art}));
    let r = c
        .post("/openmrs/ws/rest/v1/patient", &body.to_string())
        .await;
    assert_eq!(
        r.body["error"]["globalErrors"][0]["message"],
        "Identifier Location cannot be null for BDK-00042"
    );
}

#[tokio::test]
async fn unique_identifiers_cannot_be_reused() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    assert_eq!(
        c.post(
            "/openmrs/ws/rest/v1/patient",
            &patient_body(&st, "Anne", "Lukusa", "100010")
        )
        .await
        .status,
        StatusCode::CREATED
    );
    let r = c
        .post(
            "/openmrs/ws/rest/v1/patient",
            &patient_body(&st, "Marie", "Lukusa", "100010"),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["error"]["globalErrors"][0]["message"],
        format!(
            "Identifier {} already in use by another patient",
            emr_id("100010")
        )
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient?q=marie").await.body["results"],
        json!([])
    );
}

#[tokio::test]
async fn malformed_requests_are_client_errors() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let cases = [
        ("{not json", StatusCode::BAD_REQUEST),
        ("[1,2]", StatusCode::BAD_REQUEST),
        (r#"{"identifiers":[]}"#, StatusCode::BAD_REQUEST),
        (
            r#"{"person":{"names":[],"gender":"F"}}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"person":{"gender":"F","names":[{"givenName":1}]},"identifiers":[{"identifier":"x","identifierType":"y"}]}"#,
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (body, status) in cases {
        let r = c.post("/openmrs/ws/rest/v1/patient", body).await;
        assert_eq!(r.status, status, "{body}: {:?}", r.body);
        assert!(r.body["error"]["message"].is_string(), "{body}");
    }
    let mut extra: serde_json::Value =
        serde_json::from_str(&patient_body(&st, "A", "B", "100020")).unwrap();
    extra["foo"] = json!(1);
    let r = c
        .post("/openmrs/ws/rest/v1/patient", &extra.to_string())
        .await;
    assert_eq!(
        r.body["error"]["message"],
        "[Some properties are not allowed to be set: foo]"
    );
    let r = c
        .send(
            "POST",
            "/openmrs/ws/rest/v1/patient",
            &[("content-type", "application/xml")],
            Some("<patient/>"),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let huge = format!("{{\"x\":\"{}\"}}", "a".repeat(2 * 1024 * 1024));
    let r = c.post("/openmrs/ws/rest/v1/patient", &huge).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(r.body["error"].is_object());
}

#[tokio::test]
async fn search_matches_name_prefixes_without_accents_and_identifiers_exactly() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    for (i, (given, family)) in [
        ("Hélène", "Mbuyi"),
        ("Helena", "Ilunga"),
        ("Jean-Pierre", "Mukendi"),
        ("Hervé", "Mbuyi"),
    ]
    .iter()
    .enumerate()
    {
        let r = c
            .post(
                "/openmrs/ws/rest/v1/patient",
                &patient_body(&st, given, family, &format!("20000{i}")),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let names = |r: &crate::common::Response| -> Vec<String> {
        r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                p["display"]
                    .as_str()
                    .unwrap()
                    .split(" - ")
                    .nth(1)
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let r = c.get("/openmrs/ws/rest/v1/patient?q=helene").await;
    assert_eq!(names(&r), ["Hélène Mbuyi"]);
    assert_eq!(
        names(&c.get("/openmrs/ws/rest/v1/patient?q=hel").await),
        ["Hélène Mbuyi", "Helena Ilunga"]
    );
    assert_eq!(
        names(&c.get("/openmrs/ws/rest/v1/patient?q=pierre").await),
        ["Jean-Pierre Mukendi"]
    );
    // A space may come as `%20` or `+`, an accent percent-encoded.
    for q in ["mbuyi%20her", "mbuyi+her", "MBUYI+Herv%C3%A9"] {
        assert_eq!(
            names(&c.get(&format!("/openmrs/ws/rest/v1/patient?q={q}")).await),
            ["Hervé Mbuyi"],
            "{q}"
        );
    }
    assert_eq!(
        names(
            &c.get(&format!(
                "/openmrs/ws/rest/v1/patient?q={}",
                emr_id("200002")
            ))
            .await
        ),
        ["Jean-Pierre Mukendi"]
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient?q=h").await.body,
        json!({"results": []})
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient").await.status,
        StatusCode::BAD_REQUEST
    );

    // Paging: two per page, links and totalCount.
    let r = c
        .get("/openmrs/ws/rest/v1/patient?q=h&limit=2&totalCount=true")
        .await;
    assert_eq!(r.body["results"], json!([]));
    let r = c
        .get("/openmrs/ws/rest/v1/patient?q=he&limit=2&totalCount=true&v=custom:(uuid)")
        .await;
    assert_eq!(r.body["totalCount"], 3);
    assert_eq!(r.body["results"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["links"][0]["rel"], "next");
    assert_eq!(
        r.body["links"][0]["uri"],
        "http://emr.test/openmrs/ws/rest/v1/patient?q=he&limit=2&totalCount=true&v=custom%3A%28uuid%29&startIndex=2"
    );
    let r = c
        .get("/openmrs/ws/rest/v1/patient?q=he&limit=2&startIndex=2")
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["links"][0]["rel"], "prev");
    assert!(
        r.body["links"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["rel"] != "next")
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient?q=he&limit=500")
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn dead_patients_are_found_only_when_asked() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let mut body: serde_json::Value =
        serde_json::from_str(&patient_body(&st, "Odette", "Nsimba", "300001")).unwrap();
    body["person"]["dead"] = json!(true);
    body["person"]["deathDate"] = json!("2024-02-03");
    assert_eq!(
        c.post("/openmrs/ws/rest/v1/patient", &body.to_string())
            .await
            .status,
        StatusCode::CREATED
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient?q=odette").await.body["results"],
        json!([])
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient?q=odette&includeDead=true")
            .await
            .body["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn generated_identifiers_are_sequential_valid_and_never_repeat() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let sources = c
        .get("/openmrs/ws/rest/v1/idgen/identifiersource?v=default")
        .await;
    let source = sources.body["results"][0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        sources.body["results"][0]["identifierType"]["uuid"],
        identifier_type_uuid(&st, "Numéro patient DSE").as_str()
    );
    let options = c
        .get("/openmrs/ws/rest/v1/idgen/autogenerationoption?v=full")
        .await;
    assert_eq!(
        options.body["results"][0]["automaticGenerationEnabled"],
        true
    );
    assert_eq!(
        options.body["results"][0]["source"]["uuid"],
        source.as_str()
    );
    let mut seen = std::collections::HashSet::new();
    for expected in ["100000", "100001", "100002"] {
        let r = c
            .post(
                &format!("/openmrs/ws/rest/v1/idgen/identifiersource/{source}/identifier"),
                "{}",
            )
            .await;
        let id = r.body["identifier"].as_str().unwrap().to_string();
        assert_eq!(id, emr_id(expected));
        assert!(seen.insert(id));
    }
}

#[tokio::test]
async fn input_limits_are_enforced_with_the_field_named() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let base: serde_json::Value =
        serde_json::from_str(&patient_body(&st, "Aimée", "Kasongo", "720001")).unwrap();
    let field_errors =
        |r: &crate::common::Response| -> String { r.body["error"]["fieldErrors"].to_string() };
    let mut cases: Vec<(serde_json::Value, &str)> = Vec::new();
    let mut long = base.clone();
    long["person"]["names"][0]["givenName"] = "A".repeat(51).into();
    cases.push((long, "names[0].givenName"));
    let mut nul = base.clone();
    nul["person"]["names"][0]["familyName"] = "Kas\u{0}ongo".into();
    cases.push((nul, "names[0].familyName"));
    let mut tab = base.clone();
    tab["identifiers"][0]["identifier"] = "1234\t5".into();
    cases.push((tab, "identifiers[0].identifier"));
    let mut address = base.clone();
    address["person"]["addresses"][0]["cityVillage"] = "x".repeat(256).into();
    cases.push((address, "addresses[0].cityVillage"));
    let mut attribute = base.clone();
    attribute["person"]["attributes"][0]["value"] = "9".repeat(51).into();
    cases.push((attribute, "attributes[0].value"));
    let mut many = base.clone();
    let name = many["person"]["names"][0].clone();
    many["person"]["names"] = serde_json::Value::Array(
        (0..11)
            .map(|i| {
                let mut n = name.clone();
                n["preferred"] = (i == 0).into();
                n
            })
            .collect(),
    );
    cases.push((many, "names"));
    let mut death = base.clone();
    death["person"]["dead"] = true.into();
    death["person"]["deathDate"] = "1980-01-01".into();
    cases.push((death, "deathDate"));
    for (body, field) in cases {
        let r = c
            .post("/openmrs/ws/rest/v1/patient", &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{field}: {:?}", r.body);
        assert!(
            field_errors(&r).contains(&format!("\"{field}\"")),
            "{field}: {:?}",
            r.body
        );
    }
    // An impossible time is refused, not dropped.
    let mut time = base.clone();
    time["person"]["birthdate"] = "1990-04-12T25:61:00.000+0000".into();
    let r = c
        .post("/openmrs/ws/rest/v1/patient", &time.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // The unchanged body is accepted.
    let r = c
        .post("/openmrs/ws/rest/v1/patient", &base.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

const REST: &str = "/openmrs/ws/rest/v1";

async fn register(
    c: &mut Client,
    st: &runtime::http::AppState,
    given: &str,
    family: &str,
    id: &str,
) -> serde_json::Value {
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(st, given, family, id),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body
}

#[tokio::test]
async fn an_edit_changes_the_person_as_the_registration_app_sends_it() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let created = register(&mut c, &st, "Hélène", "Mbuyi", "100101").await;
    let uuid = created["uuid"].as_str().unwrap();
    let name_uuid = created["person"]["preferredName"]["uuid"].as_str().unwrap();
    // What the O3 registration app posts on save: the whole patient, names with their
    // uuids, the address without one, only attributes that have a value, identifiers
    // (which the server leaves alone).
    let edit = json!({
        "uuid": uuid,
        "person": {
            "uuid": uuid,
            "names": [{"uuid": name_uuid, "preferred": true, "givenName": "Hélène", "familyName": "Tshisekedi"}],
            "gender": "F",
            "birthdate": "1991-5-20",
            "birthdateEstimated": false,
            "addresses": [{"cityVillage": "Limete", "stateProvince": "Kinshasa", "country": "République démocratique du Congo"}],
            "attributes": [{"attributeType": "14d4f066-15f5-102d-96e4-000c29c2a5d7", "value": "+243990000000"}],
            "dead": false
        },
        "identifiers": created["identifiers"].clone()
    });
    let r = c
        .post(&format!("{REST}/patient/{uuid}"), &edit.to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        r.body["display"],
        format!("{} - Hélène Tshisekedi", emr_id("100101"))
    );
    let full = c.get(&format!("{REST}/patient/{uuid}?v=full")).await.body;
    let person = &full["person"];
    assert_eq!(person["names"].as_array().unwrap().len(), 1);
    assert_eq!(person["birthdate"], "1991-05-20T00:00:00.000+0000");
    assert_eq!(person["preferredAddress"]["cityVillage"], "Limete");
    assert_eq!(person["attributes"].as_array().unwrap().len(), 1);
    assert_eq!(person["attributes"][0]["value"], "+243990000000");
    assert_eq!(
        full["identifiers"],
        c.get(&format!("{REST}/patient/{uuid}?v=full")).await.body["identifiers"]
    );
    assert_eq!(full["identifiers"].as_array().unwrap().len(), 1);
    assert!(
        full["auditInfo"]["changedBy"]["uuid"].is_string(),
        "{:?}",
        full["auditInfo"]
    );
    assert!(full["auditInfo"]["dateChanged"].is_string());
    // Search sees the new name at once, and no longer the old one.
    let found = c.get(&format!("{REST}/patient?q=Tshisekedi")).await.body;
    assert_eq!(found["results"].as_array().unwrap().len(), 1);
    let gone = c.get(&format!("{REST}/patient?q=Mbuyi")).await.body;
    assert_eq!(gone["results"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn an_edit_is_checked_like_a_registration() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let created = register(&mut c, &st, "Paul", "Kasongo", "100102").await;
    let uuid = created["uuid"].as_str().unwrap();
    let before = c.get(&format!("{REST}/patient/{uuid}?v=full")).await.body;
    for (change, expected) in [
        (
            json!({"person": {"deathDate": "1980-01-01", "dead": true}}),
            "The death date cannot be before the birth date",
        ),
        (json!({"person": {"gender": "X"}}), "Please select a gender"),
        (
            json!({"person": {"birthdate": "2999-01-01"}}),
            "Cannot be a date in the future",
        ),
    ] {
        let r = c
            .post(&format!("{REST}/patient/{uuid}"), &change.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{change}");
        assert!(
            r.body.to_string().contains(expected),
            "{change}: {:?}",
            r.body
        );
    }
    let r = c
        .post(
            &format!("{REST}/patient/{uuid}"),
            &json!({"uuid": "00000000-0000-4000-8000-000000000000", "person": {}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .post(
            &format!("{REST}/patient/{uuid}"),
            &json!({"person": {"nickname": "P"}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .post(
            &format!("{REST}/patient/00000000-0000-4000-8000-000000000000"),
            &json!({"person": {"gender": "M"}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Nothing refused was stored.
    assert_eq!(
        c.get(&format!("{REST}/patient/{uuid}?v=full")).await.body,
        before
    );
}

#[tokio::test]
async fn a_death_is_recorded_and_undone_through_the_person() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let created = register(&mut c, &st, "Marie", "Ilunga", "100103").await;
    let uuid = created["uuid"].as_str().unwrap();
    // Cholera, from the project's dictionary.
    let cause = st
        .catalog
        .load()
        .concept("DRC-EMR:2001")
        .unwrap()
        .uuid
        .clone();
    let r = c
        .post(
            &format!("{REST}/person/{uuid}"),
            &json!({"dead": true, "deathDate": "2026-01-05", "causeOfDeath": cause}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["dead"], true);
    assert_eq!(r.body["deathDate"], "2026-01-05T00:00:00.000+0000");
    assert_eq!(r.body["causeOfDeath"]["uuid"], cause.as_str());
    // The living search no longer finds her; the one that includes the dead does.
    assert_eq!(
        c.get(&format!("{REST}/patient?q=Ilunga")).await.body["results"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let r = c
        .post(
            &format!("{REST}/person/{uuid}"),
            &json!({"dead": false}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["dead"], false);
    assert!(
        r.body["deathDate"].is_null() && r.body["causeOfDeath"].is_null(),
        "{:?}",
        r.body
    );
    assert_eq!(
        c.get(&format!("{REST}/patient?q=Ilunga")).await.body["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_patient_registered_in_error_is_voided_with_a_reason_or_purged() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let created = register(&mut c, &st, "Joseph", "Doublon", "100104").await;
    let uuid = created["uuid"].as_str().unwrap();
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{uuid}?reason=enregistr%C3%A9%20deux%20fois"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let full = c.get(&format!("{REST}/patient/{uuid}?v=full")).await;
    assert_eq!(full.status, StatusCode::OK);
    assert_eq!(full.body["voided"], true);
    assert_eq!(full.body["auditInfo"]["voidReason"], "enregistré deux fois");
    assert_eq!(
        c.get(&format!("{REST}/patient?q=Doublon")).await.body["results"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    // Voiding keeps the identifier: another patient cannot take it.
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(&st, "Autre", "Personne", "100104"),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);

    // Purging removes the record and frees the identifier.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{uuid}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    assert_eq!(
        c.get(&format!("{REST}/patient/{uuid}")).await.status,
        StatusCode::NOT_FOUND
    );
    assert!(st.store.patient(uuid).unwrap().is_none());
    let again = register(&mut c, &st, "Autre", "Personne", "100104").await;
    assert_eq!(
        again["identifiers"][0]["display"],
        format!("Numéro patient DSE = {}", emr_id("100104"))
    );
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{uuid}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn identifiers_names_and_attributes_change_through_their_sub_resources() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let created = register(&mut c, &st, "Odette", "Kalala", "100105").await;
    let other = register(&mut c, &st, "Rose", "Kalala", "100106").await;
    let uuid = created["uuid"].as_str().unwrap();
    let national = "93ec706a-3859-49fb-a0ba-79a3d25ac7c7";
    // A national number is added, checked against its format and uniqueness.
    let r = c
        .post(
            &format!("{REST}/patient/{uuid}/identifier"),
            &json!({"identifier": "12-3456-789012", "identifierType": national}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["identifier"], "12-3456-789012");
    let national_uuid = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/patient/{uuid}/identifier"),
            &json!({"identifier": "12-34", "identifierType": national}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let other_uuid = other["uuid"].as_str().unwrap();
    let r = c
        .post(
            &format!("{REST}/patient/{other_uuid}/identifier"),
            &json!({"identifier": "12-3456-789012", "identifierType": national}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body.to_string().contains("already in use"),
        "{:?}",
        r.body
    );
    // Corrected, the old value is free again.
    let r = c
        .post(
            &format!("{REST}/patient/{uuid}/identifier/{national_uuid}"),
            &json!({"identifier": "12-3456-000001"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["identifier"], "12-3456-000001");
    let r = c
        .post(
            &format!("{REST}/patient/{other_uuid}/identifier"),
            &json!({"identifier": "12-3456-789012", "identifierType": national}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let found = c
        .get(&format!("{REST}/patient?identifier=12-3456-000001"))
        .await
        .body;
    assert_eq!(found["results"][0]["uuid"], uuid);
    // The required EHR number cannot go; the national one can (the app sends `?purge`).
    let ehr_uuid = c.get(&format!("{REST}/patient/{uuid}?v=full")).await.body["identifiers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["identifierType"]["uuid"] != national)
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{uuid}/identifier/{ehr_uuid}?purge"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{uuid}/identifier/{national_uuid}?purge"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        c.get(&format!("{REST}/patient?identifier=12-3456-000001"))
            .await
            .body["results"]
            .as_array()
            .unwrap()
            .len(),
        0
    );

    // A second name is added, then removed; the last name cannot be.
    let name_uuid = created["person"]["preferredName"]["uuid"].as_str().unwrap();
    let r = c
        .post(
            &format!("{REST}/person/{uuid}"),
            &json!({"names": [{"givenName": "Odette", "familyName": "Mwamba"}]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let names =
        c.get(&format!("{REST}/patient/{uuid}?v=full")).await.body["person"]["names"].clone();
    assert_eq!(names.as_array().unwrap().len(), 2);
    let second = names
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["uuid"] != name_uuid)
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        c.get(&format!("{REST}/patient?q=Mwamba")).await.body["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/person/{uuid}/name/{second}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        c.get(&format!("{REST}/patient?q=Mwamba")).await.body["results"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/person/{uuid}/name/{name_uuid}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // The phone number attribute is removed.
    let attribute = created["person"]["attributes"][0]["uuid"].as_str().unwrap();
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/person/{uuid}/attribute/{attribute}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let person = c.get(&format!("{REST}/patient/{uuid}?v=full")).await.body["person"].clone();
    assert_eq!(person["attributes"].as_array().unwrap().len(), 0);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/person/{uuid}/attribute/{attribute}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_death_keeps_its_moment_and_a_written_cause_as_the_o3_forms_send_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let created = register(&mut c, &st, "Pascaline", "Mwamba", "100104").await;
    let uuid = created["uuid"].as_str().unwrap();
    // The chart's form: the local midnight of the day chosen (Kinshasa, UTC+1), in UTC, and
    // a cause written as text.
    let r = c
        .post(
            &format!("{REST}/person/{uuid}"),
            &json!({"dead": true, "deathDate": "2026-01-04T23:00:00.000Z", "causeOfDeathNonCoded": "Morsure de serpent"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let p = c
        .get(&format!(
            "{REST}/person/{uuid}?v=custom:(dead,deathDate,causeOfDeath,causeOfDeathNonCoded)"
        ))
        .await;
    assert_eq!(p.body["deathDate"], "2026-01-04T23:00:00.000+0000");
    assert_eq!(p.body["causeOfDeathNonCoded"], "Morsure de serpent");
    let f = c.get(&format!("/openmrs/ws/fhir2/R4/Patient/{uuid}")).await;
    assert_eq!(f.body["deceasedDateTime"], "2026-01-04T23:00:00+00:00");
    // A coded cause and a written one at once: refused.
    let cause = st
        .catalog
        .load()
        .concept("DRC-EMR:2001")
        .unwrap()
        .uuid
        .clone();
    let r = c
        .post(
            &format!("{REST}/person/{uuid}"),
            &json!({"causeOfDeath": cause, "causeOfDeathNonCoded": "autre"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // Alive again: both cleared.
    let r = c
        .post(&format!("{REST}/person/{uuid}"), &json!({"dead": false, "deathDate": null, "causeOfDeath": null, "causeOfDeathNonCoded": null}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert!(r.body["causeOfDeathNonCoded"].is_null());
    // The causes the chart offers: the content's question and its answers, "Autre" among them.
    let setting = c
        .get(&format!("{REST}/systemsetting/concept.causeOfDeath"))
        .await;
    let question = setting.body["value"].as_str().unwrap().to_string();
    let q = c.get(&format!("{REST}/concept/{question}")).await;
    assert!(
        q.body["answers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["uuid"] == "5622AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
    );
}

#[tokio::test]
async fn the_registration_form_reads_back_what_it_saved() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let created = register(&mut c, &st, "Bienvenu", "Kasongo", "100105").await;
    let uuid = created["uuid"].as_str().unwrap();
    // An edit adds a new address, with its quartier (address1), as the form saves it.
    let r = c
        .post(
            &format!("{REST}/patient/{uuid}"),
            &json!({"person": {"addresses": [{"cityVillage": "Lemba", "stateProvince": "Kinshasa", "address1": "Quartier Salongo"}],
                "birthdate": "1990-1-1", "birthdateEstimated": true}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let f = c.get(&format!("/openmrs/ws/fhir2/R4/Patient/{uuid}")).await;
    let address = &f.body["address"][0];
    assert_eq!(
        address["city"], "Lemba",
        "the preferred address comes first: {:?}",
        f.body["address"]
    );
    assert_eq!(address["use"], "home");
    assert_eq!(f.body["address"][1]["use"], "old");
    let ext = &address["extension"][0];
    assert_eq!(ext["url"], "http://fhir.openmrs.org/ext/address");
    assert!(ext["extension"].as_array().unwrap().iter().any(|e| e["url"]
        == "http://fhir.openmrs.org/ext/address#address1"
        && e["valueString"] == "Quartier Salongo"));
    // An estimated birth date is written to the year, so the form knows it is estimated.
    assert_eq!(f.body["birthDate"], "1990");
    // The relationship search looks for persons too.
    let r = c.get(&format!("{REST}/person?q=kasongo")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["results"][0]["uuid"], uuid);
    assert!(
        r.body["results"][0]["links"][0]["uri"]
            .as_str()
            .unwrap()
            .contains("/person/")
    );
}

/// A sub-resource's listing without `v` answers the default representation, as
/// webservices.rest's sub-resource controller does: the fast data entry app reads each
/// identifier's `identifierType.uuid` (and its location) from `patient/{uuid}/identifier`.
#[tokio::test]
async fn a_patients_identifiers_are_listed_in_their_default_representation() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let created = register(&mut c, &st, "Odile", "Mpoyi", "100107").await;
    let uuid = created["uuid"].as_str().unwrap();
    let r = c.get(&format!("{REST}/patient/{uuid}/identifier")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let first = &r.body["results"][0];
    assert_eq!(
        first["identifierType"]["uuid"],
        identifier_type_uuid(&st, "Numéro patient DSE").as_str()
    );
    assert!(first["identifier"].is_string(), "{first:?}");
    assert!(first.get("location").is_some(), "{first:?}");
    assert!(first.get("preferred").is_some(), "{first:?}");
    // A representation asked for is still the one answered.
    let r = c
        .get(&format!("{REST}/patient/{uuid}/identifier?v=ref"))
        .await;
    assert!(r.body["results"][0].get("identifierType").is_none());
}
