//! Allergies as the O3 allergies widget records them (REST `patient/{uuid}/allergy`) and
//! reads them (FHIR `AllergyIntolerance`), with the content's allergen and reaction sets.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const FHIR: &str = "/openmrs/ws/fhir2/R4";
const DRUG_ALLERGENS: &str = "162552AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const REACTIONS: &str = "162555AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const OTHER: &str = "5622AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const MILD: &str = "1498AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const SEVERE: &str = "1500AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

async fn patient(c: &mut Client, st: &runtime::http::AppState, id: &str) -> String {
    register_patient(c, st, "Joseph", "Lukusa", id).await
}

/// The uuid of the member of `set` displayed as `name` (what the widget's form offers).
async fn member(c: &mut Client, set: &str, name: &str) -> String {
    let r = c.get(&format!("{REST}/concept/{set}?v=full")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let members = r.body["setMembers"].as_array().unwrap();
    members
        .iter()
        .find(|m| m["display"] == name)
        .unwrap_or_else(|| panic!("{name} not in {members:?}"))["uuid"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn the_allergies_widget_records_reads_edits_and_deletes_an_allergy() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "420001").await;
    let amoxicillin = member(&mut c, DRUG_ALLERGENS, "Amoxicilline").await;
    let hives = member(&mut c, REACTIONS, "Urticaire").await;
    let rash = member(&mut c, REACTIONS, "Éruption cutanée").await;
    // The "other" reaction is offered: the widget shows its text field then.
    assert_eq!(member(&mut c, REACTIONS, "Autre").await, OTHER);

    // What the widget posts.
    let body = json!({
        "allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": amoxicillin}},
        "severity": {"uuid": SEVERE},
        "comment": "Réaction après la première dose",
        "reactions": [{"reaction": {"uuid": hives}}, {"reaction": {"uuid": OTHER}, "reactionNonCoded": "Œdème des paupières"}],
    });
    let r = c
        .post(&format!("{REST}/patient/{p}/allergy"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let a = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["display"], "Amoxicilline");
    assert_eq!(r.body["allergen"]["allergenType"], "DRUG");
    assert!(
        r.body["links"][0]["uri"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/patient/{p}/allergy/{a}"))
    );

    // What the widget reads: names as the form's lists show them, the reaction always there.
    let r = c
        .get(&format!(
            "{FHIR}/AllergyIntolerance?patient={p}&_summary=data"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["total"], 1, "{:?}", r.body);
    let found = &r.body["entry"][0]["resource"];
    assert_eq!(found["id"], a.as_str());
    assert_eq!(found["code"]["text"], "Amoxicilline");
    assert_eq!(found["code"]["coding"][0]["code"], amoxicillin.as_str());
    assert_eq!(found["category"], json!(["medication"]));
    assert_eq!(found["criticality"], "high");
    assert_eq!(found["clinicalStatus"]["coding"][0]["display"], "Active");
    assert_eq!(found["note"][0]["text"], "Réaction après la première dose");
    assert_eq!(found["reaction"][0]["severity"], "severe");
    assert_eq!(found["reaction"][0]["substance"]["text"], "Amoxicilline");
    let manifestations: Vec<&str> = found["reaction"][0]["manifestation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(manifestations, ["Urticaire", "Œdème des paupières"]);

    // A second allergy to the same drug is refused; a free-text allergen is recorded.
    let r = c
        .post(&format!("{REST}/patient/{p}/allergy"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body
            .to_string()
            .contains("already has an allergy to Amoxicilline"),
        "{:?}",
        r.body
    );
    let r = c
        .post(
            &format!("{REST}/patient/{p}/allergy"),
            &json!({"allergen": {"allergenType": "OTHER", "codedAllergen": {"uuid": OTHER}, "nonCodedAllergen": "Pommade au soufre"},
                    "severity": {"uuid": MILD}, "comment": "", "reactions": [{"reaction": {"uuid": rash}}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let other = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["display"], "Pommade au soufre");
    let r = c
        .post(
            &format!("{REST}/patient/{p}/allergy"),
            &json!({"allergen": {"allergenType": "OTHER", "codedAllergen": {"uuid": OTHER}, "nonCodedAllergen": "pommade AU soufre"},
                    "reactions": [{"reaction": {"uuid": rash}}]})
            .to_string(),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "the same text in another case: {:?}",
        r.body
    );

    // Edited in place: milder, another reaction.
    let edit = json!({
        "allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": amoxicillin}},
        "severity": {"uuid": MILD}, "comment": "",
        "reactions": [{"reaction": {"uuid": rash}}],
    });
    let r = c
        .post(
            &format!("{REST}/patient/{p}/allergy/{a}"),
            &edit.to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c.get(&format!("{FHIR}/AllergyIntolerance/{a}")).await;
    assert_eq!(r.body["reaction"][0]["severity"], "mild");
    assert_eq!(r.body["criticality"], "low");
    assert_eq!(
        r.body["reaction"][0]["manifestation"][0]["text"],
        "Éruption cutanée"
    );
    assert!(r.body.get("note").is_none(), "{:?}", r.body);

    // Deleted: gone from the lists, kept voided with who and why.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{p}/allergy/{a}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .get(&format!("{FHIR}/AllergyIntolerance?patient={p}"))
        .await;
    assert_eq!(r.body["total"], 1);
    assert_eq!(r.body["entry"][0]["resource"]["id"], other.as_str());
    let r = c.get(&format!("{REST}/patient/{p}/allergy")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    let r = c
        .get(&format!("{REST}/patient/{p}/allergy/{a}?v=full"))
        .await;
    assert_eq!(r.body["voided"], true);
    assert!(
        r.body["auditInfo"]["changedBy"]["uuid"].is_string(),
        "{:?}",
        r.body
    );

    // A backup keeps allergies; a restore rebuilds their index.
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let mut c2 = Client::admin(state_with(
        runtime::embedded::EMBEDDED_BUNDLE.to_vec(),
        restored,
    ))
    .await;
    let r = c2
        .get(&format!("{FHIR}/AllergyIntolerance?patient={p}"))
        .await;
    assert_eq!(r.body["total"], 1, "{:?}", r.body);
}

#[tokio::test]
async fn an_allergy_that_breaks_a_rule_is_refused_naming_the_field() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "420002").await;
    let amoxicillin = member(&mut c, DRUG_ALLERGENS, "Amoxicilline").await;
    let unknown = "0b5e1f64-0000-4000-8000-000000000000";
    let cases: [(Value, &str); 7] = [
        (json!({"severity": {"uuid": SEVERE}}), "allergen"),
        (
            json!({"allergen": {"codedAllergen": {"uuid": amoxicillin}}}),
            "allergen.allergenType",
        ),
        (
            json!({"allergen": {"allergenType": "MEDICAMENT", "codedAllergen": {"uuid": amoxicillin}}}),
            "allergen.allergenType",
        ),
        (
            json!({"allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": unknown}}}),
            "allergen.codedAllergen",
        ),
        (
            json!({"allergen": {"allergenType": "OTHER", "codedAllergen": {"uuid": OTHER}}}),
            "allergen.nonCodedAllergen",
        ),
        (
            json!({"allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": amoxicillin}}, "reactions": [{"reaction": {"uuid": OTHER}}]}),
            "reactions[0]",
        ),
        (
            json!({"allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": amoxicillin}}, "severity": {"uuid": unknown}}),
            "severity",
        ),
    ];
    for (body, field) in cases {
        let r = c
            .post(&format!("{REST}/patient/{p}/allergy"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert!(
            r.body["error"]["fieldErrors"].get(field).is_some(),
            "{body} should name {field}: {:?}",
            r.body
        );
    }
    let r = c
        .get(&format!("{FHIR}/AllergyIntolerance?patient={p}"))
        .await;
    assert_eq!(
        r.body["total"], 0,
        "nothing refused is stored: {:?}",
        r.body
    );
    // An unknown patient has no allergy list.
    let r = c
        .post(
            &format!("{REST}/patient/{unknown}/allergy"),
            &json!({"allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": amoxicillin}}})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // A clerk who registers patients neither reads nor records allergies.
    let mut clerk = registration_clerk(&mut c, &st, "accueil.allergie").await;
    let r = clerk
        .get(&format!("{FHIR}/AllergyIntolerance?patient={p}"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = clerk
        .post(
            &format!("{REST}/patient/{p}/allergy"),
            &json!({"allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": amoxicillin}}})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn allergy_edits_keep_one_allergy_per_allergen_and_stay_with_their_patient() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "420003").await;
    let q = patient(&mut c, &st, "420004").await;
    let amoxicillin = member(&mut c, DRUG_ALLERGENS, "Amoxicilline").await;
    let quinine = member(&mut c, DRUG_ALLERGENS, "Quinine").await;
    let rash = member(&mut c, REACTIONS, "Éruption cutanée").await;
    let post = |allergen: &str, comment: &str| {
        json!({"allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": allergen}},
               "comment": comment, "reactions": [{"reaction": {"uuid": rash}}]})
        .to_string()
    };
    // A comment over several lines, as the form's text area allows.
    let r = c
        .post(
            &format!("{REST}/patient/{p}/allergy"),
            &post(&amoxicillin, "Éruption au 2e jour.\nArrêt du traitement."),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(
        r.body["comment"],
        "Éruption au 2e jour.\nArrêt du traitement."
    );
    let first = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(&format!("{REST}/patient/{p}/allergy"), &post(&quinine, ""))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let second = r.body["uuid"].as_str().unwrap().to_string();
    // Editing one into a duplicate of the other is refused.
    let r = c
        .post(
            &format!("{REST}/patient/{p}/allergy/{second}"),
            &post(&amoxicillin, ""),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["fieldErrors"].get("allergen").is_some(),
        "{:?}",
        r.body
    );
    // Another patient's path does not reach it.
    let r = c.get(&format!("{REST}/patient/{q}/allergy/{first}")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{q}/allergy/{first}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Free text without a concept is recorded with the "other" concept; a coded allergen
    // drops any text sent with it.
    let r = c
        .post(
            &format!("{REST}/patient/{q}/allergy"),
            &json!({"allergen": {"allergenType": "FOOD", "nonCodedAllergen": "Safou"}, "reactions": [{"reaction": {"uuid": rash}}]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["allergen"]["codedAllergen"]["uuid"], OTHER);
    assert_eq!(r.body["display"], "Safou");
    let r = c
        .post(
            &format!("{REST}/patient/{q}/allergy"),
            &json!({"allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": quinine}, "nonCodedAllergen": "texte"}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["allergen"]["nonCodedAllergen"], Value::Null);
    assert_eq!(r.body["display"], "Quinine");
    // A chosen uuid must fit the index keys it becomes part of.
    let r = c
        .post(
            &format!("{REST}/patient/{q}/allergy"),
            &json!({"uuid": "a|b", "allergen": {"allergenType": "FOOD", "nonCodedAllergen": "Lait"}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // A deleted allergy reads as gone in FHIR, as fhir2 answers.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{p}/allergy/{first}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c.get(&format!("{FHIR}/AllergyIntolerance/{first}")).await;
    assert_eq!(r.status, StatusCode::GONE);
    // A patient with allergies, even deleted ones, is not purged.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{p}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(r.body.to_string().contains("allergies"), "{:?}", r.body);
}
