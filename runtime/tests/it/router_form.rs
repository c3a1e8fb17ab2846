//! The content's O3 forms over REST: the forms list the chart's forms app reads, the schema
//! clob the form engine loads, the compiled form of the O3 forms module with its
//! translations and resolved concepts, and the concept lookup by references.

use crate::common::*;
use axum::http::StatusCode;

const REST: &str = "/openmrs/ws/rest/v1";
/// The forms app's representation, as it asks for it.
const FORMS_APP_REP: &str = "custom:(uuid,name,display,encounterType:(uuid,name,viewPrivilege,editPrivilege),version,published,retired,resources:(uuid,name,dataType,valueReference))";

#[tokio::test]
async fn every_form_of_the_content_is_listed_with_its_schema() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get(&format!("{REST}/form?v={FORMS_APP_REP}")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let forms = r.body["results"].as_array().unwrap();
    assert_eq!(forms.len(), st.catalog.load().content.forms.len());
    let displays: Vec<&str> = forms
        .iter()
        .map(|f| f["display"].as_str().unwrap())
        .collect();
    assert!(displays.contains(&"Signes vitaux"), "{displays:?}");
    for f in forms {
        assert_eq!(f["published"], true);
        assert!(f["encounterType"]["uuid"].is_string(), "{f}");
        // The forms app shows a form only to users holding its type's edit privilege.
        let edit = &f["encounterType"]["editPrivilege"];
        assert!(edit.is_null() || edit["display"].is_string(), "{f}");
        let resource = &f["resources"][0];
        assert_eq!(resource["name"], "JSON schema");
        // The clob holds the schema as the content wrote it.
        let clob = c
            .get(&format!(
                "{REST}/clobdata/{}",
                resource["valueReference"].as_str().unwrap()
            ))
            .await;
        assert_eq!(clob.status, StatusCode::OK);
        assert!(clob.body["pages"].is_array(), "{}", clob.body);
        assert_eq!(clob.body["name"], f["name"]);
    }
    let r = c.get(&format!("{REST}/form?q=vital&v=custom:(name)")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    assert_eq!(
        c.get(&format!("{REST}/clobdata/nope")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_compiled_form_carries_its_translations_and_concepts() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let by_name = c.get(&format!("{REST}/o3/forms/Vital%20signs")).await;
    assert_eq!(by_name.status, StatusCode::OK, "{:?}", by_name.body);
    let uuid = by_name.body["uuid"].as_str().unwrap().to_string();
    let r = c.get(&format!("{REST}/o3/forms/{uuid}")).await;
    assert_eq!(r.body, by_name.body);
    assert_eq!(r.headers["cache-control"], "no-cache, private");
    assert_eq!(
        r.body["encounterType"],
        serde_json::json!({"uuid": "023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42", "display": "Signes vitaux"})
    );
    // French, the administrator's language.
    assert_eq!(
        r.body["translations"]["Temperature (°C)"],
        "Température (°C)"
    );
    // A concept written as SOURCE:CODE resolves to its uuid.
    assert_eq!(
        r.body["conceptReferences"]["DRC-EMR:5005"]["uuid"],
        "5242AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    );
    assert_eq!(
        r.body["conceptReferences"]["5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]["display"],
        "Température (°C)"
    );
    let r = c
        .get(&format!(
            "{REST}/o3/forms/{uuid}?includeConceptReferences=false"
        ))
        .await;
    assert!(r.body.get("conceptReferences").is_none());
    assert_eq!(
        c.get(&format!("{REST}/o3/forms/nope")).await.status,
        StatusCode::NOT_FOUND
    );
    let anonymous = Client::new(st.clone())
        .get(&format!("{REST}/o3/forms/{uuid}"))
        .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn concepts_are_found_by_references() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c
        .get(&format!("{REST}/concept?references=5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,DRC-EMR:5005,CIEL:5088,unknown&v=custom:(uuid,display)"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let uuids: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(
        uuids,
        [
            "5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "5242AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        ]
    );
}

/// The form engine's batch lookup: `POST conceptreferences` answers an object keyed by each
/// reference it could resolve, in the representation asked (with `conceptMappings`).
#[tokio::test]
async fn the_form_engine_looks_concepts_up_in_one_post() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let rep = "custom:(uuid,display,conceptClass:(uuid,display),answers:(uuid,display),conceptMappings:(conceptReferenceTerm:(conceptSource:(name),code)))";
    let r = c
        .post(
            &format!("{REST}/conceptreferences?v={rep}"),
            r#"{"references": ["CIEL:5088", "DRC-EMR:5005", "no-such-concept"]}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let found = r.body.as_object().unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(
        found["CIEL:5088"]["uuid"],
        "5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    );
    let codes: Vec<&str> = found["DRC-EMR:5005"]["conceptMappings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["conceptReferenceTerm"]["code"].as_str())
        .collect();
    assert!(codes.contains(&"5242"), "{codes:?}");
    let r = c
        .post(
            &format!("{REST}/conceptreferences"),
            r#"{"references": "CIEL:5088"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

/// A yes/no question of datatype Boolean, as national forms write them: answered with the
/// true and false concepts (or `true`/`false`), kept, and answered back as OpenMRS stores a
/// Boolean observation: its coded answer, the concept of `concept.true` or `concept.false`,
/// whose name the chart shows ("Oui" in French), never the word `true`.
#[tokio::test]
async fn a_boolean_answer_is_the_yes_or_no_concept_on_the_way_in_and_out() {
    const SCREENED: &str = "0a1b2c3d-0000-4000-8000-000000000004";
    const ID_TYPE: &str = "0a1b2c3d-0000-4000-8000-000000000030";
    let bundle = bundle_of(&[
        (
            "openmrs_config/concepts/concepts.csv",
            "Uuid,Fully specified name:fr,Fully specified name:en,Data class,Data type\n\
             1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,Oui,Yes,Misc,N/A\n\
             1066AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,Non,No,Misc,N/A\n\
             0a1b2c3d-0000-4000-8000-000000000004,Dépistage fait,Screening done,Question,Boolean\n",
        ),
        (
            "openmrs_config/patientidentifiertypes/types.csv",
            "Uuid,Name,Description,Required\n0a1b2c3d-0000-4000-8000-000000000030,Numéro national,,true\n",
        ),
    ]);
    let st = state_with(bundle, crate::common::test_store());
    let mut c = Client::admin(st).await;
    let r = c
        .post(
            &format!("{REST}/patient"),
            &serde_json::json!({"person": {"gender": "F", "birthdate": "1990-01-01",
                "names": [{"givenName": "Anne", "familyName": "Mbala"}]},
                "identifiers": [{"identifier": "N-001", "identifierType": ID_TYPE, "preferred": true}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let patient = r.body["uuid"].as_str().unwrap().to_string();
    for (sent, yes) in [
        (
            serde_json::json!("1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
            true,
        ),
        (
            serde_json::json!({"uuid": "1066AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}),
            false,
        ),
        (serde_json::json!(true), true),
        (serde_json::json!("false"), false),
    ] {
        let r = c
            .post(
                &format!("{REST}/obs"),
                &serde_json::json!({"person": patient, "concept": SCREENED,
                    "obsDatetime": "2026-11-02T09:00:00.000+0000", "value": sent})
                .to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{sent}: {:?}", r.body);
        let (uuid, name) = if yes {
            ("1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "Yes")
        } else {
            ("1066AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "No")
        };
        assert_eq!(r.body["value"]["uuid"], uuid, "{sent}: {:?}", r.body);
        assert_eq!(r.body["value"]["display"], name, "{sent}: {:?}", r.body);
        assert_eq!(
            r.body["display"],
            format!("Screening done: {name}"),
            "{sent}"
        );
    }
    // Anything else is refused, naming the value.
    let r = c
        .post(
            &format!("{REST}/obs"),
            &serde_json::json!({"person": patient, "concept": SCREENED,
                "obsDatetime": "2026-11-02T09:00:00.000+0000", "value": "peut-être"})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
}
