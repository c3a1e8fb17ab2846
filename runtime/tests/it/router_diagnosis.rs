//! Diagnoses over REST (`patientdiagnoses`), as the O3 visit notes write them after saving
//! the note's encounter, and the encounter's `diagnoses`.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const CONSULTATION_TYPE: &str = "91edcf31-cf56-43c3-a7d8-b8097fbd0035";

async fn patient_with_encounter(
    c: &mut Client,
    st: &runtime::http::AppState,
    id: &str,
) -> (String, String) {
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(st, "Paul", "Tshibanda", id),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let p = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    (p, r.body["uuid"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn a_note_records_its_diagnoses_on_the_encounter() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let (p, e) = patient_with_encounter(&mut c, &st, "400001").await;
    let cholera = st
        .catalog
        .load()
        .concept("DRC-EMR:2001")
        .unwrap()
        .uuid
        .clone();
    // What the notes app sends.
    let r = c
        .post(
            &format!("{REST}/patientdiagnoses"),
            &json!({"encounter": e, "patient": p, "condition": null, "diagnosis": {"coded": cholera},
                    "certainty": "PROVISIONAL", "rank": 1})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let first = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["display"], "Choléra");
    assert_eq!(r.body["diagnosis"]["coded"]["uuid"], cholera.as_str());
    let r = c
        .post(
            &format!("{REST}/patientdiagnoses"),
            &json!({"encounter": e, "patient": p, "condition": null, "diagnosis": {"nonCoded": "Douleur thoracique atypique"},
                    "certainty": "CONFIRMED", "rank": 2})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);

    // The encounter shows them, in the form engine's representation too.
    let r = c
        .get(&format!("{REST}/encounter/{e}?v=custom:(uuid,diagnoses:(uuid,certainty,condition,display,rank,voided,diagnosis:(coded:(uuid,display))))"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let diagnoses = r.body["diagnoses"].as_array().unwrap();
    assert_eq!(diagnoses.len(), 2, "{diagnoses:?}");
    let coded = diagnoses.iter().find(|d| d["rank"] == 1).unwrap();
    assert_eq!(coded["diagnosis"]["coded"]["display"], "Choléra");
    assert_eq!(coded["certainty"], "PROVISIONAL");
    let free = diagnoses.iter().find(|d| d["rank"] == 2).unwrap();
    assert_eq!(free["display"], "Douleur thoracique atypique");

    // Confirming one, then voiding it: it leaves the encounter and the lists, and is kept.
    let r = c
        .post(
            &format!("{REST}/patientdiagnoses/{first}"),
            r#"{"certainty": "CONFIRMED"}"#,
        )
        .await;
    assert_eq!(r.body["certainty"], "CONFIRMED");
    // An update voids and restores it as webservices.rest's data resources allow.
    let r = c
        .post(
            &format!("{REST}/patientdiagnoses/{first}"),
            r#"{"voided": true}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["voided"], true);
    let r = c.get(&format!("{REST}/patientdiagnoses?patient={p}")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    let r = c
        .post(
            &format!("{REST}/patientdiagnoses/{first}"),
            r#"{"voided": false}"#,
        )
        .await;
    assert_eq!(r.body["voided"], false);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patientdiagnoses/{first}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c.get(&format!("{REST}/patientdiagnoses?patient={p}")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    let r = c
        .get(&format!("{REST}/patientdiagnoses/{first}?v=full"))
        .await;
    assert_eq!(r.body["voided"], true);
    let r = c
        .get(&format!("{REST}/encounter/{e}?v=custom:(diagnoses)"))
        .await;
    assert_eq!(r.body["diagnoses"].as_array().unwrap().len(), 1);

    // A backup keeps them; a restore rebuilds their indexes.
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
        .get(&format!("{REST}/patientdiagnoses?encounter={e}"))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_diagnosis_needs_its_encounter_concept_certainty_and_rank() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let (p, e) = patient_with_encounter(&mut c, &st, "400002").await;
    let (other, _) = patient_with_encounter(&mut c, &st, "400003").await;
    let ok = json!({"encounter": e, "patient": p, "condition": null, "diagnosis": {"nonCoded": "Fièvre"}, "certainty": "PROVISIONAL", "rank": 1});
    let with = |k: &str, v: Value| {
        let mut b = ok.clone();
        b[k] = v;
        b
    };
    for (body, field) in [
        (with("patient", json!(other)), "encounter"),
        (with("encounter", json!("no-such-encounter")), "encounter"),
        (
            with("diagnosis", json!({"coded": "no-such-concept"})),
            "diagnosis",
        ),
        (with("diagnosis", json!({})), "diagnosis"),
        (with("certainty", json!("MAYBE")), "certainty"),
        (with("rank", json!(3)), "rank"),
    ] {
        let r = c
            .post(&format!("{REST}/patientdiagnoses"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert!(
            r.body["error"]["fieldErrors"].get(field).is_some(),
            "{body}: {:?}",
            r.body
        );
    }
    let r = c
        .post(
            &format!("{REST}/patientdiagnoses"),
            &with("condition", json!("x")).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        c.get(&format!("{REST}/patientdiagnoses")).await.status,
        StatusCode::BAD_REQUEST
    );
}

/// The notes' diagnosis search: `name=…&searchType=fuzzy&class=<Diagnosis>` matches word
/// prefixes without accents, among diagnoses only.
#[tokio::test]
async fn diagnoses_are_searched_by_name_within_their_class() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let url = |term: &str, class: &str| {
        format!("{REST}/concept?name={term}&searchType=fuzzy&class={class}&v=custom:(uuid,display)")
    };
    let diagnosis_class = "8d4918b0-c2cc-11de-8d13-0010c6dffd0f";
    let r = c.get(&url("palud", diagnosis_class)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let displays: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["display"].as_str().unwrap())
        .collect();
    assert!(
        displays.contains(&"Paludisme, sans précision"),
        "{displays:?}"
    );
    // A test concept of the same word is not a diagnosis.
    let r = c.get(&url("hemoglobine", diagnosis_class)).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 0);
    let r = c.get(&url("hemoglobine", "Test")).await;
    assert_eq!(
        r.body["results"][0]["uuid"], "21AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "{:?}",
        r.body
    );
    // Without searchType, name stays an exact fully specified name.
    let r = c.get(&format!("{REST}/concept?name=palud")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn visits_come_with_their_diagnoses_and_notes_through_the_emr_api() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(&st, "Esther", "Mukendi", "400090"),
        )
        .await;
    let p = r.body["uuid"].as_str().unwrap().to_string();
    let start = (chrono::Utc::now() - chrono::Duration::hours(1))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string();
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": p, "visitType": "f19c6fdb-bd43-41e7-bb4c-cc892e489c25",
                    "location": location_uuid(&st, "Centre de santé Bondeko"), "startDatetime": start})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let note_concept = st
        .catalog
        .load()
        .concept("CIEL:162169")
        .unwrap()
        .uuid
        .clone();
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE, "visit": visit,
                    "obs": [{"concept": note_concept, "value": "Fièvre depuis deux jours"}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let e = r.body["uuid"].as_str().unwrap().to_string();
    for (code, rank) in [("DRC-EMR:2001", 2), ("DRC-EMR:2052", 1)] {
        let coded = st.catalog.load().concept(code).unwrap().uuid.clone();
        let r = c
            .post(
                &format!("{REST}/patientdiagnoses"),
                &json!({"encounter": e, "patient": p, "diagnosis": {"coded": coded},
                        "certainty": "CONFIRMED", "rank": rank})
                .to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let r = c
        .get(&format!(
            "{REST}/emrapi/patient/{p}/visitWithDiagnosesAndNotes"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let item = &r.body["results"][0];
    assert_eq!(item["visit"]["uuid"], visit.as_str());
    assert!(item["visit"]["visitType"]["uuid"].is_string());
    let ranks: Vec<i64> = item["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rank"].as_i64().unwrap())
        .collect();
    assert_eq!(ranks, [1, 2], "by rank");
    assert_eq!(item["diagnoses"][0]["display"], "Paludisme, sans précision");
    assert_eq!(item["visitNotes"][0]["value"], "Fièvre depuis deux jours");
    // The newer path, with only the parts asked for.
    let r = c
        .get(&format!(
            "{REST}/emrapi/patient/{p}/visit?v=custom:(visit,diagnoses)"
        ))
        .await;
    let item = &r.body["results"][0];
    assert!(item.get("visit").is_some() && item.get("diagnoses").is_some());
    assert!(item.get("visitNotes").is_none());
    assert_eq!(
        c.get(&format!("{REST}/emrapi/patient/nobody/visit"))
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
}
