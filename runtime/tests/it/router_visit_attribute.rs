//! Visit attributes over REST: the content's visit attribute types, attributes given with a
//! new visit (as the start-visit form's billing check-in sends them), the `attribute`
//! sub-resource (create, change, void), datatype checks, one value per type where the type
//! allows one, privileges, and a restart keeping them.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const PAYMENT_DETAILS: &str = "82af61c1-f844-463c-9b65-4de9f8cf3c48";
const PAYMENT_MODE: &str = "ed27f225-209c-4d53-b19f-2f9f9b720cdb";
const FORM_PENDING: &str = "29a61b22-6da9-4e29-acb5-99dd619f9f0e";
const PAYING: &str = "fd74fb5c-d0d7-4145-865c-ad85a298f116";
const CASH: &str = "fc99ef44-6260-44b3-90db-05e7d0a91a14";
const MOBILE_MONEY: &str = "33e4e056-75f8-4dfe-8be3-ee36aaa01161";

fn active<'a>(visit: &'a Value, attribute_type: &str) -> Vec<&'a Value> {
    visit["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["attributeType"]["uuid"] == attribute_type)
        .collect()
}

#[tokio::test]
async fn the_contents_visit_attribute_types_are_listed_searched_and_read() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get(&format!("{REST}/visitattributetype?v=full")).await;
    assert_eq!(r.status, StatusCode::OK);
    let types = r.body["results"].as_array().unwrap();
    assert_eq!(types.len(), 7, "{}", r.body);
    let mode = types.iter().find(|t| t["uuid"] == PAYMENT_MODE).unwrap();
    assert_eq!(mode["name"], "Mode de paiement");
    assert_eq!(
        mode["datatypeClassname"],
        "org.openmrs.customdatatype.datatype.FreeTextDatatype"
    );
    assert_eq!(mode["maxOccurs"], 1);
    assert_eq!(mode["minOccurs"], 0);
    let r = c.get(&format!("{REST}/visitattributetype?q=police")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1, "{}", r.body);
    let r = c
        .get(&format!("{REST}/visitattributetype/{PAYMENT_DETAILS}"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["display"], "Détails de paiement");
    let r = c
        .get(&format!("{REST}/visitattributetype/{OUTPATIENT}"))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn attributes_are_given_with_a_visit_changed_replaced_voided_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let bundle = runtime::embedded::EMBEDDED_BUNDLE.to_vec();
    let st = state_with(
        bundle.clone(),
        runtime::store::Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
    );
    let mut c = Client::admin(st.clone()).await;
    let patient = register_patient(&mut c, &st, "Grâce", "Mbuyi", "310001").await;
    let location = location_uuid(&st, "Centre de santé Bondeko");
    let r = c
        .post(
            &format!("{REST}/visit?v=full"),
            &json!({"patient": patient, "visitType": OUTPATIENT, "location": location,
                    "attributes": [{"attributeType": PAYMENT_DETAILS, "value": PAYING},
                                   {"attributeType": PAYMENT_MODE, "value": CASH}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let details = active(&r.body, PAYMENT_DETAILS);
    assert_eq!(details.len(), 1);
    // A concept value is shown as the concept, as OpenMRS hydrates it.
    assert_eq!(details[0]["value"]["uuid"], PAYING);
    assert_eq!(details[0]["display"], "Détails de paiement: Payant");
    assert_eq!(active(&r.body, PAYMENT_MODE)[0]["value"], CASH);

    // The sub-resource: a boolean, then changed.
    let r = c
        .post(
            &format!("{REST}/visit/{visit}/attribute"),
            &json!({"attributeType": FORM_PENDING, "value": "true"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["value"], true);
    let pending = r.body["uuid"].as_str().unwrap().to_string();
    assert!(
        r.body["links"][0]["uri"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/visit/{visit}/attribute/{pending}"))
    );
    let r = c
        .post(
            &format!("{REST}/visit/{visit}/attribute/{pending}"),
            r#"{"value": false}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["value"], false);

    // A type that allows one value: a second one is refused, and the value is changed.
    let r = c
        .post(
            &format!("{REST}/visit/{visit}/attribute"),
            &json!({"attributeType": {"uuid": PAYMENT_MODE}, "value": MOBILE_MONEY}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body["error"]["fieldErrors"]["attributes"].is_array(),
        "{}",
        r.body
    );
    let mode = active(
        &c.get(&format!("{REST}/visit/{visit}?v=full")).await.body,
        PAYMENT_MODE,
    )[0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = c
        .post(
            &format!("{REST}/visit/{visit}/attribute/{mode}"),
            &json!({"value": MOBILE_MONEY}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = c.get(&format!("{REST}/visit/{visit}?v=full")).await;
    let modes = active(&r.body, PAYMENT_MODE);
    assert_eq!(modes.len(), 1);
    assert_eq!(modes[0]["value"], MOBILE_MONEY);
    assert_eq!(r.body["attributes"].as_array().unwrap().len(), 3);

    // Voiding keeps the attribute, out of the active list.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/visit/{visit}/attribute/{pending}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c.get(&format!("{REST}/visit/{visit}/attribute")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 2, "{}", r.body);
    let r = c
        .get(&format!("{REST}/visit/{visit}/attribute?includeAll=true"))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 3, "{}", r.body);
    let r = c
        .get(&format!("{REST}/visit/{visit}/attribute/{pending}?v=full"))
        .await;
    assert_eq!(r.body["voided"], true);
    assert!(r.body["auditInfo"]["creator"].is_object(), "{}", r.body);

    // A restart on the same store keeps them.
    drop((c, st));
    let reopened = state_with(
        bundle,
        runtime::store::Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
    );
    let mut again = Client::admin(reopened).await;
    let r = again.get(&format!("{REST}/visit/{visit}?v=full")).await;
    assert_eq!(active(&r.body, PAYMENT_MODE)[0]["value"], MOBILE_MONEY);
    assert_eq!(active(&r.body, PAYMENT_DETAILS)[0]["value"]["uuid"], PAYING);
}

#[tokio::test]
async fn values_are_checked_against_their_datatype_and_privileges_apply() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let patient = register_patient(&mut c, &st, "Jean", "Kasongo", "310002").await;
    let location = location_uuid(&st, "Centre de santé Bondeko");
    let visit_with = |attributes: Value| {
        json!({"patient": patient, "visitType": OUTPATIENT, "location": location,
               "attributes": attributes})
        .to_string()
    };
    for (attributes, field) in [
        (
            json!([{"attributeType": PAYMENT_DETAILS, "value": CASH}]),
            "value",
        ),
        (
            json!([{"attributeType": FORM_PENDING, "value": "peut-être"}]),
            "value",
        ),
        (
            json!([{"attributeType": PAYMENT_MODE, "value": ""}]),
            "value",
        ),
        (
            json!([{"attributeType": OUTPATIENT, "value": "x"}]),
            "attributeType",
        ),
        (json!([{"value": "x"}]), "attributeType"),
    ] {
        let r = c
            .post(&format!("{REST}/visit"), &visit_with(attributes.clone()))
            .await;
        assert_eq!(
            r.status,
            StatusCode::BAD_REQUEST,
            "{attributes}: {}",
            r.body
        );
        assert!(
            r.body["error"]["fieldErrors"][field].is_array(),
            "{attributes}: {}",
            r.body
        );
    }
    // Two values of a type that allows one are refused; a date must be one.
    let r = c
        .post(
            &format!("{REST}/visit?v=full"),
            &visit_with(json!([{"attributeType": PAYMENT_MODE, "value": CASH},
                               {"attributeType": PAYMENT_MODE, "value": MOBILE_MONEY}])),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = c
        .post(
            &format!("{REST}/visit?v=full"),
            &visit_with(json!([{"attributeType": PAYMENT_MODE, "value": CASH}])),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let visit = r.body["uuid"].as_str().unwrap().to_string();

    // A registration clerk reads visits but does not edit them.
    let mut clerk = registration_clerk(&mut c, &st, "accueil3").await;
    let r = clerk
        .post(
            &format!("{REST}/visit/{visit}/attribute"),
            &json!({"attributeType": FORM_PENDING, "value": true}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = c
        .post(
            &format!("{REST}/visit/{visit}/attribute"),
            &json!({"attributeType": FORM_PENDING, "value": true, "colour": "bleu"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
}
