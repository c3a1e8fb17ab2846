//! Patient flags (`patientflags/`): the content's flags (`openmrs_config/flags/`) a patient
//! meets, as the O3 patient flags app reads them, dismissed and restored by a user, and
//! following her record as it changes.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const VITALS_TYPE: &str = "023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42";
const TEMPERATURE: &str = "5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const FEVER: &str = "5b2e8d4f-1a7c-4f3e-a9b6-7c4e1d8f2b55";
const UNDER_FIVE: &str = "2d8b5f1a-7e3c-4b9d-a6f2-5e1c9b3d7f88";
const VIRAL_LOAD_DUE: &str = "e4c7a2d9-6b1f-4e5a-8d3c-9f2b6e1a4c66";
const RISK: &str = "3f6b2a0e-8c41-4d7a-9e15-6a2b7c9d0e11";

/// The app's list call.
fn flags_of(patient: &str) -> String {
    format!("{REST}/patientflags/patientflag?patient={patient}&v=full")
}

/// Records a temperature now, in a visit of today.
async fn temperature(
    c: &mut Client,
    st: &runtime::http::AppState,
    patient: &str,
    celsius: f64,
) -> String {
    let now = chrono::Utc::now();
    // A minute ago, but today (UTC) even just after midnight: the flag is about today.
    let midnight = now.date_naive().and_hms_opt(0, 0, 0).unwrap().and_utc();
    let taken = (now - chrono::Duration::minutes(1)).max(midnight);
    let location = location_uuid(st, "Centre de santé Bondeko");
    let visits = c
        .get(&format!(
            "{REST}/visit?patient={patient}&includeInactive=false"
        ))
        .await;
    let visit = match visits.body["results"].as_array().and_then(|v| v.first()) {
        Some(v) => v["uuid"].as_str().unwrap().to_string(),
        None => {
            let start = (now - chrono::Duration::minutes(30))
                .format("%Y-%m-%dT%H:%M:%S.000+0000")
                .to_string();
            let r = c
                .post(
                    &format!("{REST}/visit"),
                    &json!({"patient": patient, "visitType": OUTPATIENT, "location": location, "startDatetime": start}).to_string(),
                )
                .await;
            assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
            r.body["uuid"].as_str().unwrap().to_string()
        }
    };
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": patient, "encounterType": VITALS_TYPE, "visit": visit, "location": location,
                "encounterDatetime": taken.format("%Y-%m-%dT%H:%M:%S.000+0000").to_string(),
                "obs": [{"concept": TEMPERATURE, "value": celsius}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body["uuid"].as_str().unwrap().to_string()
}

fn flag_uuids(body: &Value) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["flag"]["uuid"].as_str().unwrap().to_string(),
                r["voided"].as_bool().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_fever_recorded_today_flags_her_until_it_is_voided() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Esther", "Kabila", "610001").await;

    // An adult with nothing recorded: no flag.
    let r = c.get(&flags_of(&p)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["results"], json!([]));

    // 37.2 °C does not flag her; 38.6 °C does.
    temperature(&mut c, &st, &p, 37.2).await;
    assert_eq!(c.get(&flags_of(&p)).await.body["results"], json!([]));
    let fever_encounter = temperature(&mut c, &st, &p, 38.6).await;
    let r = c.get(&flags_of(&p)).await;
    let results = r.body["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 1, "{:?}", r.body);
    let pf = &results[0];
    assert_eq!(pf["flag"]["uuid"], FEVER);
    assert_eq!(pf["flag"]["display"], "Fièvre du jour");
    assert_eq!(pf["message"], "Fièvre relevée aujourd'hui (38 °C ou plus)");
    assert_eq!(pf["display"], pf["message"]);
    assert_eq!(pf["patient"]["uuid"], p);
    assert_eq!(pf["voided"], false);
    assert_eq!(pf["tags"][0]["display"], "Clinique");
    assert_eq!(
        pf["auditInfo"]["creator"]["uuid"],
        "A4F30A1B-5EB9-11DF-A648-37A07F9C90FB"
    );
    assert!(pf["auditInfo"]["dateCreated"].is_string());
    let uuid = pf["uuid"].as_str().unwrap().to_string();

    // Read again: the same record, not a new one.
    let again = c.get(&flags_of(&p)).await;
    assert_eq!(again.body["results"][0]["uuid"], uuid.as_str());

    // The definitions the app merges in, with the priority's rank.
    let defs = c.get(&format!("{REST}/patientflags/flag?v=full")).await;
    assert_eq!(defs.status, StatusCode::OK);
    let fever = defs.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["uuid"] == FEVER)
        .unwrap()
        .clone();
    assert_eq!(fever["priority"]["uuid"], RISK);
    assert_eq!(fever["priority"]["name"], "Risque");
    assert_eq!(fever["priority"]["rank"], 1);
    assert_eq!(fever["enabled"], true);
    assert_eq!(fever["evaluator"], "criteria");
    // The flags she meets, evaluated.
    let met = c
        .get(&format!("{REST}/patientflags/flag?patient={p}"))
        .await;
    let met: Vec<&str> = met.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(met, vec![FEVER]);

    // Voiding the febrile measurement takes the flag away, record and all.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/encounter/{fever_encounter}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    assert_eq!(c.get(&flags_of(&p)).await.body["results"], json!([]));
    let r = c
        .get(&format!("{REST}/patientflags/patientflag/{uuid}"))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_dismissed_flag_stays_dismissed_while_it_holds_and_can_be_restored() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Aimée", "Tshala", "610002").await;
    temperature(&mut c, &st, &p, 39.1).await;
    let r = c.get(&flags_of(&p)).await;
    let uuid = r.body["results"][0]["uuid"].as_str().unwrap().to_string();

    // The app's edit panel: DELETE dismisses (voids), twice is the same.
    for _ in 0..2 {
        let r = c
            .send(
                "DELETE",
                &format!("{REST}/patientflags/patientflag/{uuid}"),
                &[],
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    }
    let r = c.get(&flags_of(&p)).await;
    assert_eq!(flag_uuids(&r.body), vec![(FEVER.to_string(), true)]);
    assert_eq!(r.body["results"][0]["uuid"], uuid.as_str());
    assert_eq!(
        r.body["results"][0]["auditInfo"]["voidReason"],
        "REST web service"
    );

    // Another febrile measurement does not bring a second, active one.
    temperature(&mut c, &st, &p, 38.4).await;
    let r = c.get(&flags_of(&p)).await;
    assert_eq!(flag_uuids(&r.body), vec![(FEVER.to_string(), true)]);

    // Restored with the app's call.
    let r = c
        .post(
            &format!("{REST}/patientflags/patientflag/{uuid}"),
            r#"{"voided": false}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["voided"], false);
    let r = c.get(&flags_of(&p)).await;
    assert_eq!(flag_uuids(&r.body), vec![(FEVER.to_string(), false)]);

    // Only `voided` may be changed; purging is refused; unknown records are 404.
    let r = c
        .post(
            &format!("{REST}/patientflags/patientflag/{uuid}"),
            r#"{"message": "autre"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patientflags/patientflag/{uuid}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patientflags/patientflag/00000000-0000-0000-0000-000000000000"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Definitions come from the content.
    let r = c
        .post(
            &format!("{REST}/patientflags/flag"),
            r#"{"name": "Nouveau", "criteria": "select 1", "evaluator": "sql"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
}

#[tokio::test]
async fn flags_on_age_follow_the_day_and_definitions_need_their_privilege() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    // A child born three years ago is under five.
    let born = (chrono::Utc::now() - chrono::Duration::days(3 * 365))
        .format("%Y-%m-%d")
        .to_string();
    let body: Value = serde_json::from_str(&patient_body(&st, "Petit", "Mbuyi", "610003")).unwrap();
    let mut body = body;
    body["person"]["birthdate"] = json!(born);
    let r = admin
        .post(&format!("{REST}/patient"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let child = r.body["uuid"].as_str().unwrap().to_string();
    let r = admin.get(&flags_of(&child)).await;
    assert_eq!(flag_uuids(&r.body), vec![(UNDER_FIVE.to_string(), false)]);
    assert_eq!(r.body["results"][0]["message"], "Enfant de moins de 5 ans");

    // Unknown patient or none: an empty list, as the module answers.
    let r = admin
        .get(&format!("{REST}/patientflags/patientflag?patient=nobody"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["results"], json!([]));
    let r = admin.get(&format!("{REST}/patientflags/patientflag")).await;
    assert_eq!(r.body["results"], json!([]));

    // Priorities by rank, tags with their roles, each readable alone.
    let r = admin.get(&format!("{REST}/patientflags/priority")).await;
    let names: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["display"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["Risque", "Information"]);
    let r = admin
        .get(&format!("{REST}/patientflags/priority/{RISK}"))
        .await;
    assert_eq!(r.body["rank"], 1);
    let r = admin.get(&format!("{REST}/patientflags/tag?v=full")).await;
    let clinique = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Clinique")
        .unwrap()
        .clone();
    assert_eq!(
        clinique["roles"][0]["display"],
        "Application: Sees Patient Charts"
    );
    let r = admin
        .get(&format!("{REST}/patientflags/flag?tags=VIH"))
        .await;
    let names: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["display"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["Charge virale due"]);
    let r = admin
        .get(&format!("{REST}/patientflags/flag/{UNDER_FIVE}?v=full"))
        .await;
    assert_eq!(r.body["priority"]["name"], "Information");
    assert_eq!(r.body["criteria"], r#"{"age":{"max":4}}"#);

    // A receptionist reads the patient's flags (Get Patients), without the clinical ones
    // (tagged "Clinique" for the roles that see charts), and the definitions (Test Flags,
    // which every role that opens a chart holds, so the app shows their priority), but
    // does not dismiss one (Manage Patient Flags).
    let uuid = admin.get(&flags_of(&child)).await.body["results"][0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let mut clerk = registration_clerk(&mut admin, &st, "accueil-drapeaux").await;
    let r = clerk.get(&flags_of(&child)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["results"], json!([]));
    let r = clerk.get(&format!("{REST}/patientflags/flag?v=full")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // A stock viewer reads neither.
    let body = json!({"username": "magasin-drapeaux", "password": "Stock-pass-2026",
        "person": {"names": [{"givenName": "Paul", "familyName": "Ilunga"}], "gender": "M"},
        "roles": ["Stock Viewer"]});
    let r = admin.post(&format!("{REST}/user"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut stock = Client::new(st.clone());
    stock.login("magasin-drapeaux", "Stock-pass-2026").await;
    let r = stock.get(&format!("{REST}/patientflags/flag?v=full")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = stock.get(&flags_of(&child)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = clerk
        .send(
            "DELETE",
            &format!("{REST}/patientflags/patientflag/{uuid}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = clerk
        .get(&format!("{REST}/patientflags/patientflag/{uuid}"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    // Nothing was dismissed.
    let r = admin.get(&flags_of(&child)).await;
    assert_eq!(flag_uuids(&r.body), vec![(UNDER_FIVE.to_string(), false)]);

    // Her flag records are the runtime's own: they do not hold back her purge, and go
    // with her.
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/patient/{child}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    let r = admin
        .get(&format!("{REST}/patientflags/patientflag/{uuid}"))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_flag_tagged_for_some_roles_is_shown_to_them_alone() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let p = register_patient(&mut admin, &st, "Odette", "Kanku", "610004").await;
    // Enrolled in the HIV programme, no viral load result: "Charge virale due", tagged VIH
    // for doctors.
    let hiv = st
        .catalog
        .load()
        .content
        .programs
        .iter()
        .find(|p| p.name == "Programme de soins et traitement du VIH")
        .unwrap()
        .uuid
        .clone();
    let r = admin
        .post(
            &format!("{REST}/programenrollment"),
            &json!({"patient": p, "program": hiv, "dateEnrolled": "2026-03-01T08:00:00.000+0000"})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = admin.get(&flags_of(&p)).await;
    assert_eq!(
        flag_uuids(&r.body),
        vec![(VIRAL_LOAD_DUE.to_string(), false)]
    );
    let uuid = r.body["results"][0]["uuid"].as_str().unwrap().to_string();

    // The reception desk does not see it, in either list nor by its uuid.
    let mut clerk = registration_clerk(&mut admin, &st, "accueil-vih").await;
    let r = clerk.get(&flags_of(&p)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["results"], json!([]));
    let r = clerk
        .get(&format!("{REST}/patientflags/flag?patient={p}"))
        .await;
    assert_eq!(r.body["results"], json!([]), "{:?}", r.body);

    // A doctor does.
    let body = json!({"username": "medecin-vih", "password": "Doctor-pass-2026",
        "person": {"names": [{"givenName": "Jean", "familyName": "Mputu"}], "gender": "M"},
        "roles": ["Organizational: Doctor"]});
    let r = admin.post(&format!("{REST}/user"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut doctor = Client::new(st.clone());
    doctor.login("medecin-vih", "Doctor-pass-2026").await;
    let r = doctor.get(&flags_of(&p)).await;
    assert_eq!(
        flag_uuids(&r.body),
        vec![(VIRAL_LOAD_DUE.to_string(), false)]
    );
    let r = doctor
        .get(&format!("{REST}/patientflags/patientflag/{uuid}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
}
