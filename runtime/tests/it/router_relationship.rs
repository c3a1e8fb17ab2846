//! Relationships between persons: written as the O3 registration form writes them, read as
//! the chart's widget reads them, with core's rules, voids and purges.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::json;

const REST: &str = "/openmrs/ws/rest/v1";

async fn patient(c: &mut Client, st: &runtime::http::AppState, given: &str, id: &str) -> String {
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(st, given, "Ngalula", id),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body["uuid"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_relationship_is_recorded_read_from_both_sides_changed_voided_and_purged() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let mut clerk = registration_clerk(&mut admin, &st, "accueil.rel").await;
    let mother = patient(&mut clerk, &st, "Odile", "400011").await;
    let child = patient(&mut clerk, &st, "Rachel", "400012").await;
    let kind = st
        .catalog
        .load()
        .content
        .relationship_types
        .iter()
        .find(|t| !t.retired)
        .cloned()
        .expect("the content defines relationship types");

    // As the registration form sends it.
    let r = clerk
        .post(
            &format!("{REST}/relationship"),
            &json!({"personA": mother, "relationshipType": kind.uuid, "personB": child, "startDate": "2020-03-01"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(
        r.body["display"],
        format!("Odile Ngalula is the {} of Rachel Ngalula", kind.a_is_to_b)
    );
    assert_eq!(r.body["personA"]["uuid"], mother.as_str());
    assert_eq!(r.body["relationshipType"]["uuid"], kind.uuid.as_str());
    assert!(
        r.body["startDate"]
            .as_str()
            .unwrap()
            .starts_with("2020-03-01")
    );

    // Over FHIR: the mother as the child's RelatedPerson, as fhir2 translates it.
    let fhir = "/openmrs/ws/fhir2/R4";
    let r = clerk
        .get(&format!("{fhir}/RelatedPerson?patient={child}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["total"], 1);
    let related = &r.body["entry"][0]["resource"];
    assert_eq!(related["id"], uuid.as_str());
    assert_eq!(related["patient"]["reference"], format!("Patient/{child}"));
    assert_eq!(related["name"][0]["given"][0], "Odile");
    assert_eq!(related["relationship"][0]["text"], kind.a_is_to_b.as_str());
    assert!(
        related["period"]["start"]
            .as_str()
            .unwrap()
            .starts_with("2020-03-01")
    );
    let r = clerk.get(&format!("{fhir}/RelatedPerson/{uuid}")).await;
    assert_eq!(r.body["id"], uuid.as_str());
    // The mother is no one's related person but her own relationships' person A.
    let r = clerk
        .get(&format!("{fhir}/RelatedPerson?patient={mother}"))
        .await;
    assert_eq!(r.body["total"], 0);

    // From either side, as the chart's widget asks.
    for person in [&mother, &child] {
        let found = clerk
            .get(&format!(
                "{REST}/relationship?person={person}&v=custom:(uuid,personA:(uuid),personB:(uuid))"
            ))
            .await;
        assert_eq!(found.status, StatusCode::OK, "{:?}", found.body);
        assert_eq!(found.body["results"][0]["uuid"], uuid.as_str());
    }
    let as_b = clerk
        .get(&format!("{REST}/relationship?personB={mother}"))
        .await;
    assert_eq!(as_b.body["results"].as_array().unwrap().len(), 0);
    let r = clerk.get(&format!("{REST}/relationship")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);

    // Its dates change (with Edit Relationships, which the clerk lacks); its persons do not.
    let r = clerk
        .post(
            &format!("{REST}/relationship/{uuid}"),
            &json!({"endDate": "2024-01-01"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = admin
        .post(
            &format!("{REST}/relationship/{uuid}"),
            &json!({"endDate": "2024-01-01"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert!(
        r.body["endDate"]
            .as_str()
            .unwrap()
            .starts_with("2024-01-01")
    );
    let r = admin
        .post(
            &format!("{REST}/relationship/{uuid}"),
            &json!({"personA": child}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);

    // An update voids it and restores it too, as webservices.rest's data resources allow.
    let r = admin
        .post(
            &format!("{REST}/relationship/{uuid}"),
            r#"{"voided": true, "voidReason": "doublon"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["voided"], true);
    let listed = clerk
        .get(&format!("{REST}/relationship?person={mother}"))
        .await;
    assert_eq!(listed.body["results"].as_array().unwrap().len(), 0);
    let r = admin
        .post(
            &format!("{REST}/relationship/{uuid}"),
            r#"{"voided": false}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["voided"], false);

    // Voided: kept, listed only with includeAll, and it still keeps the patient from a purge.
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/relationship/{uuid}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    let listed = clerk
        .get(&format!("{REST}/relationship?person={mother}"))
        .await;
    assert_eq!(listed.body["results"].as_array().unwrap().len(), 0);
    let listed = clerk
        .get(&format!(
            "{REST}/relationship?person={mother}&includeAll=true&v=full"
        ))
        .await;
    assert_eq!(listed.body["results"][0]["voided"], true);
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/patient/{mother}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(r.body.to_string().contains("relationships"), "{:?}", r.body);

    // A purge is the administrator's; then the patient can go too.
    let r = clerk
        .send(
            "DELETE",
            &format!("{REST}/relationship/{uuid}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/relationship/{uuid}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    assert_eq!(
        admin
            .get(&format!("{REST}/relationship/{uuid}"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/patient/{mother}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
}

#[tokio::test]
async fn relationships_follow_cores_rules() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let a = patient(&mut admin, &st, "Jean", "400021").await;
    let b = patient(&mut admin, &st, "Marc", "400022").await;
    let kind = st.catalog.load().content.relationship_types[0].uuid.clone();
    let future = (chrono::Utc::now() + chrono::Duration::days(3))
        .format("%Y-%m-%d")
        .to_string();
    let refused = [
        (
            json!({"personA": a, "relationshipType": kind, "personB": a}),
            "personB",
        ),
        (
            json!({"personA": a, "relationshipType": "no-such-type", "personB": b}),
            "relationshipType",
        ),
        (
            json!({"personA": "no-such-person", "relationshipType": kind, "personB": b}),
            "personA",
        ),
        (json!({"relationshipType": kind, "personB": b}), "personA"),
        (
            json!({"personA": a, "relationshipType": kind, "personB": b, "startDate": future}),
            "startDate",
        ),
        (
            json!({"personA": a, "relationshipType": kind, "personB": b, "startDate": "2022-05-01", "endDate": "2021-05-01"}),
            "endDate",
        ),
    ];
    for (body, field) in refused {
        let r = admin
            .post(&format!("{REST}/relationship"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert!(
            r.body["error"]["fieldErrors"].get(field).is_some(),
            "{body}: {:?}",
            r.body
        );
    }
    let r = admin
        .post(
            &format!("{REST}/relationship"),
            &json!({"personA": a, "relationshipType": kind, "personB": b, "weight": 3}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
}
