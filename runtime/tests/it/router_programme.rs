//! Programmes and enrolments over REST: the content's programmes with their workflows, and
//! enrolments with their states, validation, voiding, and survival through backup and
//! restore.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const HIV: &str = "55b7349b-d2b5-40d5-a813-7bc1044ca6b0";
const TB: &str = "8f55ca95-1feb-4acd-be76-6d20c8c8debe";
// Two states of the HIV programme's workflow (initial ones), and its outcome concept.
const HIV_STATE_A: &str = "d53d6b86-d1fd-4c86-be22-3754c24d2f58";
const HIV_STATE_B: &str = "ae72e18b-a235-4960-82a1-796881f35f3e";

async fn patient(c: &mut Client, st: &runtime::http::AppState, id: &str) -> String {
    register_patient(c, st, "Ruth", "Mulumba", id).await
}

fn displays(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["display"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn programmes_list_their_workflows_and_states() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get(&format!("{REST}/program?v=default")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let hiv = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["uuid"] == HIV)
        .expect("the HIV programme");
    assert_eq!(hiv["name"], "Programme de soins et traitement du VIH");
    // Its display is its name, as webservices.rest writes a metadata's display, not its
    // concept's name (the O3 programmes app shows it; the chart suite reads the name).
    assert_eq!(hiv["display"], hiv["name"]);
    let states = hiv["allWorkflows"][0]["states"].as_array().unwrap();
    assert!(
        states
            .iter()
            .any(|s| s["uuid"] == HIV_STATE_A && s["initial"] == true)
    );
    let r = c.get(&format!("{REST}/program/{TB}")).await;
    assert_eq!(r.body["uuid"], TB);
    assert_eq!(
        c.get(&format!("{REST}/program/nope")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn an_enrolment_records_states_and_completion_durably() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "300001").await;
    let bondeko = location_uuid(&st, "Centre de santé Bondeko");
    let r = c
        .post(
            &format!("{REST}/programenrollment"),
            &json!({"patient": p, "program": HIV, "dateEnrolled": "2026-03-01T08:00:00.000+0000",
                    "location": bondeko, "states": [{"state": HIV_STATE_A, "startDate": "2026-03-01T08:00:00.000+0000"}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["display"], r.body["program"]["display"]);
    assert_eq!(r.body["dateEnrolled"], "2026-03-01T08:00:00.000+0000");
    assert_eq!(r.body["dateCompleted"], Value::Null);
    assert_eq!(r.body["states"][0]["state"]["uuid"], HIV_STATE_A);

    // A new state of the same workflow closes the open one at its start.
    let r = c
        .post(
            &format!("{REST}/programenrollment/{uuid}"),
            &json!({"states": [{"state": HIV_STATE_B, "startDate": "2026-05-10T09:00:00.000+0000"}]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let states = r.body["states"].as_array().unwrap();
    assert_eq!(states.len(), 2);
    assert_eq!(states[0]["endDate"], "2026-05-10T09:00:00.000+0000");
    assert_eq!(states[1]["endDate"], Value::Null);

    // The chart's query, with the representation the visit form asks for.
    let r = c
        .get(&format!("{REST}/programenrollment?patient={p}&v=custom:(uuid,display,program,dateEnrolled,dateCompleted,location:(uuid,display))"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["results"][0]["uuid"], uuid.as_str());
    assert_eq!(r.body["results"][0]["location"]["uuid"], bondeko.as_str());

    // A second enrolment in the same programme over the same period is refused; another
    // programme is fine.
    let r = c
        .post(
            &format!("{REST}/programenrollment"),
            &json!({"patient": p, "program": HIV, "dateEnrolled": "2026-06-01T08:00:00.000+0000"})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["globalErrors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("already enrolled")
    );
    let r = c
        .post(
            &format!("{REST}/programenrollment"),
            &json!({"patient": p, "program": TB, "dateEnrolled": "2026-06-01T08:00:00.000+0000"})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let tb = r.body["uuid"].as_str().unwrap().to_string();

    // Completion before enrolment, a state of another programme and an unknown outcome
    // are refused, naming the field.
    for (body, field) in [
        (
            json!({"dateCompleted": "2026-01-01T00:00:00.000+0000"}),
            "dateCompleted",
        ),
        (json!({"outcome": HIV_STATE_A}), "outcome"),
    ] {
        let r = c
            .post(
                &format!("{REST}/programenrollment/{uuid}"),
                &body.to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert!(
            r.body["error"]["fieldErrors"].get(field).is_some(),
            "{:?}",
            r.body
        );
    }
    let r = c
        .post(
            &format!("{REST}/programenrollment/{tb}"),
            &json!({"states": [{"state": HIV_STATE_A, "startDate": "2026-06-02T08:00:00.000+0000"}]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["fieldErrors"]
            .get("states[0].state")
            .is_some(),
        "{:?}",
        r.body
    );

    // Completing it keeps it in the list; voiding takes it out, keeping who and why.
    let r = c
        .post(
            &format!("{REST}/programenrollment/{uuid}"),
            &json!({"dateCompleted": "2026-09-01T08:00:00.000+0000"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // An update voids it and restores it too, as webservices.rest's data resources allow.
    let r = c
        .post(
            &format!("{REST}/programenrollment/{tb}"),
            r#"{"voided": true, "voidReason": "doublon"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["voided"], true);
    let r = c
        .get(&format!("{REST}/programenrollment?patient={p}"))
        .await;
    assert_eq!(displays(&r.body).len(), 1);
    let r = c
        .post(
            &format!("{REST}/programenrollment/{tb}"),
            r#"{"voided": false}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["voided"], false);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/programenrollment/{tb}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .get(&format!("{REST}/programenrollment?patient={p}"))
        .await;
    assert_eq!(displays(&r.body).len(), 1);
    let r = c
        .get(&format!("{REST}/programenrollment/{tb}?v=full"))
        .await;
    assert_eq!(r.body["voided"], true);

    // A backup holds the enrolments; a restore rebuilds their index.
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2).await;
    let r = c2
        .get(&format!("{REST}/programenrollment?patient={p}&v=full"))
        .await;
    assert_eq!(r.body["results"][0]["uuid"], uuid.as_str());
    assert_eq!(r.body["results"][0]["states"].as_array().unwrap().len(), 2);
    assert!(r.body["results"][0]["auditInfo"]["creator"]["uuid"].is_string());
}

#[tokio::test]
async fn enrolment_needs_a_patient_a_programme_and_a_date() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "300002").await;
    for (body, field) in [
        (
            json!({"program": HIV, "dateEnrolled": "2026-03-01"}),
            "patient",
        ),
        (
            json!({"patient": p, "dateEnrolled": "2026-03-01"}),
            "program",
        ),
        (json!({"patient": p, "program": HIV}), "dateEnrolled"),
        (
            json!({"patient": p, "program": "nope", "dateEnrolled": "2026-03-01"}),
            "program",
        ),
        (
            json!({"patient": p, "program": HIV, "dateEnrolled": "2999-03-01"}),
            "dateEnrolled",
        ),
    ] {
        let r = c
            .post(&format!("{REST}/programenrollment"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert!(
            r.body["error"]["fieldErrors"].get(field).is_some(),
            "{body}: {:?}",
            r.body
        );
    }
    let r = c.get(&format!("{REST}/programenrollment")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let anonymous = Client::new(st.clone())
        .get(&format!("{REST}/programenrollment?patient={p}"))
        .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

/// A workflow begins with an initial state, an enrolment cannot precede the patient's
/// birth, and a terminal state completes the enrolment.
#[tokio::test]
async fn workflows_begin_initial_and_end_terminal() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "300003").await;
    const TB_CONTINUATION: &str = "24927d8e-c48d-4dda-b369-9c600715d134";
    const HIV_TRANSFERRED: &str = "5b14ab1e-c973-41fe-96f4-f4368750fb7c";
    let r = c
        .post(
            &format!("{REST}/programenrollment"),
            &json!({"patient": p, "program": TB, "dateEnrolled": "2026-02-01",
                    "states": [{"state": TB_CONTINUATION, "startDate": "2026-02-01"}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["fieldErrors"]["states[0].state"][0]["message"]
            .as_str()
            .unwrap()
            .contains("initial")
    );
    let r = c
        .post(
            &format!("{REST}/programenrollment"),
            &json!({"patient": p, "program": TB, "dateEnrolled": "1901-02-01"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["fieldErrors"]["dateEnrolled"][0]["message"]
            .as_str()
            .unwrap()
            .contains("birth")
    );

    let r = c
        .post(
            &format!("{REST}/programenrollment"),
            &json!({"patient": p, "program": HIV, "dateEnrolled": "2026-02-01",
                    "states": [{"state": HIV_STATE_A, "startDate": "2026-02-01"}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/programenrollment/{uuid}"),
            &json!({"states": [{"state": HIV_TRANSFERRED, "startDate": "2026-07-01T10:00:00.000+0000"}]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["dateCompleted"], "2026-07-01T10:00:00.000+0000");
    // Completed enrolments stay in the patient's list.
    let r = c
        .get(&format!("{REST}/programenrollment?patient={p}"))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
}

/// The EMR API configuration the visit form and notes read, from the content's `emr.*`
/// settings, and the visit location above a login room.
#[tokio::test]
async fn the_emr_api_configuration_and_visit_location_come_from_the_content() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c
        .get(&format!("{REST}/emrapi/configuration?v=custom:clinicianEncounterRole:ref,visitNoteEncounterType:ref,atFacilityVisitType:ref,supportsVisitsLocationTag:(uuid,display,name,links)"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        r.body["clinicianEncounterRole"]["uuid"],
        "39394a04-5300-4e13-8008-aefffb53df48"
    );
    assert_eq!(r.body["visitNoteEncounterType"]["display"], "Consultation");
    // Left unset so that the visit form offers the choice of visit type.
    assert_eq!(r.body["atFacilityVisitType"], Value::Null);
    assert_eq!(
        r.body["supportsVisitsLocationTag"]["name"],
        "Visit Location"
    );
    assert!(r.body.get("uuid").is_none());
    // Every property in the default representation.
    let r = c.get(&format!("{REST}/emrapi/configuration")).await;
    assert!(r.body.as_object().unwrap().len() > 40);

    let room = location_uuid(&st, "Bondeko - Accueil");
    let r = c
        .get(&format!(
            "{REST}/emrapi/locationThatSupportsVisits?location={room}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        r.body["uuid"],
        location_uuid(&st, "Centre de santé Bondeko").as_str()
    );
    let r = c
        .get(&format!("{REST}/emrapi/locationThatSupportsVisits"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

/// A programme's display is its name, not its concept's name, as webservices.rest writes a
/// metadata's display; an enrolment's is its programme's name (the reference application's
/// "HIV Care and Treatment" over the concept "HIV disease", as the O3 chart suite reads it).
#[tokio::test]
async fn a_programme_is_shown_by_its_name_not_its_concepts() {
    let program = "64f950e6-1b07-4ac0-8e7e-f3e148f3463f";
    let bundle = bundle_of(&[
        (
            "openmrs_config/concepts/concepts.csv",
            "Uuid,Fully specified name:en,Data class,Data type\n\
             138405AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,Human immunodeficiency virus (HIV) disease,Diagnosis,N/A\n",
        ),
        (
            "openmrs_config/programs/programs.csv",
            "Uuid,Void/Retire,Name,Description,Program concept,Outcomes concept\n\
             64f950e6-1b07-4ac0-8e7e-f3e148f3463f,,HIV Care and Treatment,HIV care,138405AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,\n",
        ),
    ]);
    let st = state_with(bundle, crate::common::test_store());
    let mut c = Client::admin(st).await;
    let r = c
        .get(&format!(
            "{REST}/program/{program}?v=custom:(display,concept:(display))"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["display"], "HIV Care and Treatment");
    assert_eq!(
        r.body["concept"]["display"],
        "Human immunodeficiency virus (HIV) disease"
    );
}
