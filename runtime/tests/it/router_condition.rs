//! The problem list: FHIR `Condition` as the O3 conditions widget writes and reads it, and
//! the REST `condition` resource over the same records.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const FHIR: &str = "/openmrs/ws/fhir2/R4";
const CONSULTATION_TYPE: &str = "91edcf31-cf56-43c3-a7d8-b8097fbd0035";
/// The widget's list call, as the framework sends it.
const PROBLEMS: &str = "category=http%3A%2F%2Fterminology.hl7.org%2FCodeSystem%2Fcondition-category%7Cproblem-list-item&_count=100&_summary=data";

async fn patient(c: &mut Client, st: &runtime::http::AppState, id: &str) -> String {
    register_patient(c, st, "Esther", "Kabila", id).await
}

fn concept(st: &runtime::http::AppState, reference: &str) -> String {
    st.catalog.load().concept(reference).unwrap().uuid.clone()
}

/// The body the widget's form posts (and puts, with an id).
fn widget_body(
    patient: &str,
    concept: &str,
    display: &str,
    status: &str,
    onset: Value,
    end: Value,
    user: &str,
) -> Value {
    json!({
        "clinicalStatus": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/condition-clinical", "code": status}]},
        "code": {"coding": [{"code": concept, "display": display}]},
        "abatementDateTime": end,
        "onsetDateTime": onset,
        "recorder": {"reference": format!("Practitioner/{user}")},
        "recordedDate": "2026-11-23T08:12:45.123Z",
        "resourceType": "Condition",
        "subject": {"reference": format!("Patient/{patient}")},
    })
}

#[tokio::test]
async fn the_conditions_widget_records_edits_and_deletes_a_condition() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let user = c.user_uuid().await;
    let p = patient(&mut c, &st, "410001").await;
    let cholera = concept(&st, "DRC-EMR:2001");

    // Nothing yet: an empty searchset.
    let r = c
        .get(&format!("{FHIR}/Condition?patient={p}&{PROBLEMS}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["total"], 0);

    let body = widget_body(
        &p,
        &cholera,
        "Choléra",
        "active",
        json!("2026-11-01T00:00:00+02:00"),
        Value::Null,
        &user,
    );
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/Condition?_summary=data"),
        &body,
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    assert!(
        r.headers["location"]
            .to_str()
            .unwrap()
            .ends_with(&format!("/Condition/{id}"))
    );

    // What the widget reads: the concept's uuid first, with its name; the status; the onset.
    let r = c
        .get(&format!("{FHIR}/Condition?patient={p}&{PROBLEMS}"))
        .await;
    assert_eq!(r.body["total"], 1, "{:?}", r.body);
    let found = &r.body["entry"][0]["resource"];
    assert_eq!(found["id"], id.as_str());
    assert_eq!(found["code"]["coding"][0]["code"], cholera.as_str());
    assert!(found["code"]["coding"][0].get("system").is_none());
    assert_eq!(found["code"]["coding"][0]["display"], "Choléra");
    assert_eq!(found["clinicalStatus"]["coding"][0]["code"], "active");
    assert_eq!(found["onsetDateTime"], "2026-10-31T22:00:00+00:00");
    assert!(found.get("abatementDateTime").is_none());
    assert_eq!(
        found["category"][0]["coding"][0]["code"],
        "problem-list-item"
    );
    assert_eq!(found["subject"]["reference"], format!("Patient/{p}"));
    assert_eq!(
        found["recorder"]["reference"],
        format!("Practitioner/{user}")
    );

    // Made inactive with an end date, in place.
    let mut edit = widget_body(
        &p,
        &cholera,
        "Choléra",
        "inactive",
        json!("2026-11-01T00:00:00+02:00"),
        json!("2026-11-20T00:00:00+01:00"),
        &user,
    );
    edit["id"] = json!(id);
    let r = send_json(
        &mut c,
        "PUT",
        &format!("{FHIR}/Condition/{id}?_summary=data"),
        &edit,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["clinicalStatus"]["coding"][0]["code"], "inactive");
    assert_eq!(r.body["abatementDateTime"], "2026-11-19T23:00:00+00:00");
    let r = c
        .get(&format!(
            "{FHIR}/Condition?patient={p}&clinical-status=active"
        ))
        .await;
    assert_eq!(r.body["total"], 0, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{FHIR}/Condition?patient={p}&clinical-status=inactive"
        ))
        .await;
    assert_eq!(r.body["total"], 1, "{:?}", r.body);
    // The REST resource lists active conditions unless asked for the others too.
    let r = c.get(&format!("{REST}/condition?patientUuid={p}")).await;
    assert_eq!(
        r.body["results"].as_array().unwrap().len(),
        0,
        "{:?}",
        r.body
    );
    let r = c
        .get(&format!(
            "{REST}/condition?patientUuid={p}&includeInactive=true&v=full"
        ))
        .await;
    let listed = &r.body["results"][0];
    assert_eq!(listed["clinicalStatus"], "INACTIVE");
    assert_eq!(listed["condition"]["coded"]["uuid"], cholera.as_str());
    assert_eq!(listed["display"], "Choléra");
    assert_eq!(listed["auditInfo"]["changedBy"]["uuid"], user.as_str());

    // Deleted: voided and kept; reading it answers 410 as fhir2 does.
    let r = c
        .send(
            "DELETE",
            &format!("{FHIR}/Condition/{id}?_summary=data"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["resourceType"], "OperationOutcome");
    let r = c.get(&format!("{FHIR}/Condition/{id}")).await;
    assert_eq!(r.status, StatusCode::GONE);
    let r = c
        .get(&format!("{FHIR}/Condition?patient={p}&{PROBLEMS}"))
        .await;
    assert_eq!(r.body["total"], 0);
    let r = c.get(&format!("{REST}/condition/{id}?v=full")).await;
    assert_eq!(r.body["voided"], true);
    assert_eq!(r.body["auditInfo"]["creator"]["uuid"], user.as_str());
}

#[tokio::test]
async fn a_condition_that_breaks_a_rule_is_refused_with_what_is_wrong() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let user = c.user_uuid().await;
    let p = patient(&mut c, &st, "410002").await;
    let cholera = concept(&st, "DRC-EMR:2001");
    let post = |body: Value| (format!("{FHIR}/Condition"), body);
    let cases = [
        // No clinical status: core's validator message, as fhir2 answers it (422).
        (
            post(
                json!({"resourceType": "Condition", "subject": {"reference": format!("Patient/{p}")}, "code": {"coding": [{"code": cholera}]}}),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "clinical status is required",
        ),
        (
            post(widget_body(
                &p,
                &cholera,
                "",
                "active",
                json!("2026-11-10"),
                json!("2026-11-01"),
                &user,
            )),
            StatusCode::UNPROCESSABLE_ENTITY,
            "end date cannot be before the onset",
        ),
        (
            post(widget_body(
                &p,
                &cholera,
                "",
                "active",
                json!("2999-01-01"),
                Value::Null,
                &user,
            )),
            StatusCode::UNPROCESSABLE_ENTITY,
            "onset date cannot be in the future",
        ),
        (
            post(widget_body(
                &p,
                "0b5e1f64-0000-4000-8000-000000000000",
                "",
                "active",
                Value::Null,
                Value::Null,
                &user,
            )),
            StatusCode::BAD_REQUEST,
            "no coding names a concept",
        ),
        (
            post(widget_body(
                "0b5e1f64-0000-4000-8000-000000000001",
                &cholera,
                "",
                "active",
                Value::Null,
                Value::Null,
                &user,
            )),
            StatusCode::UNPROCESSABLE_ENTITY,
            "Patient does not exist",
        ),
        (
            post(
                json!({"resourceType": "Observation", "subject": {"reference": format!("Patient/{p}")}}),
            ),
            StatusCode::BAD_REQUEST,
            "resourceType must be Condition",
        ),
        (
            post(
                json!({"resourceType": "Condition", "subject": {"reference": format!("Patient/{p}")}, "code": {"coding": [{"code": cholera}]},
            "category": [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/condition-category", "code": "encounter-diagnosis"}]}]}),
            ),
            StatusCode::BAD_REQUEST,
            "visit note",
        ),
        (
            post(widget_body(
                &p,
                &cholera,
                "",
                "active",
                json!("hier"),
                Value::Null,
                &user,
            )),
            StatusCode::BAD_REQUEST,
            "is not a date",
        ),
    ];
    for ((uri, body), status, message) in cases {
        let r = send_json(&mut c, "POST", &uri, &body).await;
        assert_eq!(r.status, status, "{body}: {:?}", r.body);
        assert_eq!(r.body["resourceType"], "OperationOutcome");
        assert!(
            r.body.to_string().contains(message),
            "{message}: {:?}",
            r.body
        );
    }
    // Nothing refused was stored.
    let r = c.get(&format!("{FHIR}/Condition?patient={p}")).await;
    assert_eq!(r.body["total"], 0, "{:?}", r.body);

    // A replacement names the same resource.
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/Condition"),
        &widget_body(&p, &cholera, "", "active", Value::Null, Value::Null, &user),
    )
    .await;
    let id = r.body["id"].as_str().unwrap().to_string();
    let mut other = widget_body(
        &p,
        &cholera,
        "",
        "inactive",
        Value::Null,
        Value::Null,
        &user,
    );
    other["id"] = json!("0b5e1f64-0000-4000-8000-000000000002");
    let r = send_json(&mut c, "PUT", &format!("{FHIR}/Condition/{id}"), &other).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // The REST resource refuses a status OpenMRS does not know, naming the field.
    let r = c
        .post(
            &format!("{REST}/condition/{id}"),
            r#"{"clinicalStatus": "GUÉRI"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body.to_string().contains("clinicalStatus"),
        "{:?}",
        r.body
    );

    // A clerk who registers patients does not see problem lists.
    let mut clerk = registration_clerk(&mut c, &st, "accueil.condition").await;
    let r = clerk.get(&format!("{FHIR}/Condition?patient={p}")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let body = widget_body(&p, &cholera, "", "active", Value::Null, Value::Null, &user);
    let r = send_json(&mut clerk, "POST", &format!("{FHIR}/Condition"), &body).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = send_json(&mut clerk, "PUT", &format!("{FHIR}/Condition/{id}"), &body).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = clerk
        .send("DELETE", &format!("{FHIR}/Condition/{id}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = c.get(&format!("{FHIR}/Condition/{id}")).await;
    assert_eq!(r.status, StatusCode::OK, "still there: {:?}", r.body);
}

#[tokio::test]
async fn a_search_without_a_category_answers_the_visit_notes_diagnoses_too_and_backups_keep_conditions()
 {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "410003").await;
    let cholera = concept(&st, "DRC-EMR:2001");
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE}).to_string(),
        )
        .await;
    let e = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/patientdiagnoses"),
            &json!({"encounter": e, "patient": p, "diagnosis": {"coded": cholera}, "certainty": "CONFIRMED", "rank": 1}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // A free-text condition through REST.
    let r = c
        .post(
            &format!("{REST}/condition"),
            &json!({"patient": p, "condition": {"nonCoded": "Drépanocytose suspectée"}, "clinicalStatus": "ACTIVE",
                    "verificationStatus": "PROVISIONAL", "onsetDate": "2020-03-01"})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["display"], "Drépanocytose suspectée");

    let r = c.get(&format!("{FHIR}/Condition?patient={p}")).await;
    assert_eq!(r.body["total"], 2, "{:?}", r.body);
    let entries = r.body["entry"].as_array().unwrap();
    let condition = &entries[0]["resource"];
    assert_eq!(
        condition["category"][0]["coding"][0]["code"],
        "problem-list-item"
    );
    assert_eq!(condition["code"]["text"], "Drépanocytose suspectée");
    assert_eq!(
        condition["verificationStatus"]["coding"][0]["code"],
        "provisional"
    );
    let diagnosis = &entries[1]["resource"];
    assert_eq!(
        diagnosis["category"][0]["coding"][0]["code"],
        "encounter-diagnosis"
    );
    assert_eq!(
        diagnosis["encounter"]["reference"],
        format!("Encounter/{e}")
    );
    assert_eq!(
        diagnosis["verificationStatus"]["coding"][0]["code"],
        "confirmed"
    );
    // Paged across both: the second page holds the diagnosis alone.
    let r = c
        .get(&format!(
            "{FHIR}/Condition?patient={p}&_count=1&_getpagesoffset=1"
        ))
        .await;
    assert_eq!(r.body["total"], 2);
    assert_eq!(r.body["entry"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["entry"][0]["resource"]["id"], diagnosis["id"]);
    // Only the diagnoses.
    let r = c
        .get(&format!(
            "{FHIR}/Condition?patient={p}&category=encounter-diagnosis"
        ))
        .await;
    assert_eq!(r.body["total"], 1);

    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let mut c2 = Client::admin(state_with(
        runtime::embedded::EMBEDDED_BUNDLE.to_vec(),
        restored,
    ))
    .await;
    let r = c2.get(&format!("{REST}/condition?patientUuid={p}")).await;
    assert_eq!(
        r.body["results"][0]["display"], "Drépanocytose suspectée",
        "{:?}",
        r.body
    );
}

#[tokio::test]
async fn condition_pages_straddle_conditions_and_diagnoses_and_edits_follow_their_rules() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let user = c.user_uuid().await;
    let p = patient(&mut c, &st, "410004").await;
    let cholera = concept(&st, "DRC-EMR:2001");
    let typhoid = concept(&st, "DRC-EMR:2002");
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE}).to_string(),
        )
        .await;
    let e = r.body["uuid"].as_str().unwrap().to_string();
    for (concept, rank) in [(&cholera, 1), (&typhoid, 2)] {
        let r = c
            .post(
                &format!("{REST}/patientdiagnoses"),
                &json!({"encounter": e, "patient": p, "diagnosis": {"coded": concept}, "certainty": "PROVISIONAL", "rank": rank}).to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    // Conditions through REST, one by a mapping (stored as the concept's uuid).
    let mut ids = Vec::new();
    for (reference, status) in [("DRC-EMR:2001", "ACTIVE"), (typhoid.as_str(), "HISTORY_OF")] {
        let r = c
            .post(
                &format!("{REST}/condition"),
                &json!({"patient": p, "condition": {"coded": reference}, "clinicalStatus": status,
                        "verificationStatus": "CONFIRMED", "additionalDetail": "vu au CS"})
                .to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        ids.push(r.body["uuid"].as_str().unwrap().to_string());
    }
    let r = c.get(&format!("{REST}/condition/{}?v=full", ids[0])).await;
    assert_eq!(r.body["condition"]["coded"]["uuid"], cholera.as_str());

    // Four in all: a page of three holds both conditions and a diagnosis, the next one the
    // last diagnosis.
    let r = c
        .get(&format!("{FHIR}/Condition?patient={p}&_count=3"))
        .await;
    assert_eq!(r.body["total"], 4, "{:?}", r.body);
    let entries = r.body["entry"].as_array().unwrap();
    let categories: Vec<&str> = entries
        .iter()
        .map(|e| {
            e["resource"]["category"][0]["coding"][0]["code"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(
        categories,
        [
            "problem-list-item",
            "problem-list-item",
            "encounter-diagnosis"
        ]
    );
    let links = |body: &Value| -> Vec<(String, String)> {
        body["link"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["relation"].as_str().unwrap().to_string(),
                    l["url"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let first = links(&r.body);
    let next = first
        .iter()
        .find(|(rel, _)| rel == "next")
        .expect("a next link");
    assert!(next.1.ends_with("_getpagesoffset=3"), "{next:?}");
    let r = c
        .get(&format!(
            "{FHIR}/Condition?patient={p}&_count=3&_getpagesoffset=3"
        ))
        .await;
    assert_eq!(r.body["entry"].as_array().unwrap().len(), 1, "{:?}", r.body);
    let second = links(&r.body);
    assert!(second.iter().any(|(rel, _)| rel == "previous"));
    assert!(!second.iter().any(|(rel, _)| rel == "next"), "{second:?}");
    let r = c
        .get(&format!(
            "{FHIR}/Condition?patient={p}&_getpagesoffset=18446744073709551615"
        ))
        .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "a huge offset is an empty page: {:?}",
        r.body
    );
    let r = c
        .get(&format!(
            "{FHIR}/Condition?patient={p}&clinical-status=guéri"
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // A history-of condition sent back inactive by the widget stays history-of; a PUT
    // replaces what it carries, so the verification status and the note it leaves out go.
    let mut put = widget_body(
        &p,
        &typhoid,
        "",
        "inactive",
        Value::Null,
        Value::Null,
        &user,
    );
    put["id"] = json!(ids[1]);
    let r = send_json(&mut c, "PUT", &format!("{FHIR}/Condition/{}", ids[1]), &put).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c.get(&format!("{REST}/condition/{}?v=full", ids[1])).await;
    assert_eq!(r.body["clinicalStatus"], "HISTORY_OF");
    assert_eq!(r.body["verificationStatus"], Value::Null);
    assert_eq!(r.body["additionalDetail"], Value::Null);
    put["clinicalStatus"]["coding"][0]["code"] = json!("guéri");
    let r = send_json(&mut c, "PUT", &format!("{FHIR}/Condition/{}", ids[1]), &put).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);

    // A REST update changes what it names and keeps the rest; the same patient may be sent
    // back, another one not.
    let r = c
        .post(
            &format!("{REST}/condition/{}", ids[0]),
            &json!({"patient": p, "endDate": "2026-11-20", "clinicalStatus": "INACTIVE"})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c.get(&format!("{REST}/condition/{}?v=full", ids[0])).await;
    assert_eq!(r.body["verificationStatus"], "CONFIRMED");
    assert_eq!(r.body["additionalDetail"], "vu au CS");
    assert_eq!(r.body["clinicalStatus"], "INACTIVE");
    let other = patient(&mut c, &st, "410005").await;
    let r = c
        .post(
            &format!("{REST}/condition/{}", ids[0]),
            &json!({"patient": other}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // A deleted condition is not edited, except to restore it.
    let r = c
        .send("DELETE", &format!("{REST}/condition/{}", ids[0]), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .post(
            &format!("{REST}/condition/{}", ids[0]),
            r#"{"clinicalStatus": "ACTIVE"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .post(
            &format!("{REST}/condition/{}", ids[0]),
            r#"{"voided": false}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["voided"], false);
    // A patient with a problem list is not purged.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{other}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::NO_CONTENT,
        "a patient with nothing recorded is: {:?}",
        r.body
    );
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{p}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(r.body.to_string().contains("conditions"), "{:?}", r.body);
}
