//! Beds over REST, as the O3 bed management pages and the ward app drive them: bed types,
//! tags and beds made by an administrator with the module's rules (one bed per row and
//! column, types named by name, an occupied bed kept), wards with their layouts, patients
//! put in beds and taken out (several may share one; a new bed frees the old), beds freed
//! when the visit ends, privileges, and a restart keeping it all.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const VITALS: &str = "023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42";
const OBSERVATION_WARD: &str = "Bondeko - Salle d'observation";

fn ago(minutes: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::minutes(minutes))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string()
}

/// A patient with an open visit and an encounter in it: (patient, visit, encounter).
async fn inpatient(
    c: &mut Client,
    st: &runtime::http::AppState,
    id: &str,
) -> (String, String, String) {
    let patient = register_patient(c, st, "Aline", "Kabila", id).await;
    let location = location_uuid(st, "Centre de santé Bondeko");
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": patient, "visitType": OUTPATIENT, "location": location,
                    "startDatetime": ago(120)})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": patient, "visit": visit, "encounterType": VITALS,
                    "encounterDatetime": ago(60), "location": location_uuid(st, OBSERVATION_WARD)})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    (patient, visit, r.body["uuid"].as_str().unwrap().to_string())
}

/// The bed type "Lit standard", which `new_bed` names.
async fn standard_bed_type(c: &mut Client) {
    let r = c
        .post(
            &format!("{REST}/bedtype"),
            r#"{"name": "Lit standard", "displayName": "Standard"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

async fn new_bed(c: &mut Client, ward: &str, number: &str, row: u32, column: u32) -> Value {
    let r = c
        .post(
            &format!("{REST}/bed"),
            &json!({"bedNumber": number, "bedType": "Lit standard", "row": row, "column": column,
                    "status": "AVAILABLE", "locationUuid": ward})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body
}

async fn bed_of(c: &mut Client, patient: &str) -> Value {
    let r = c.get(&format!("{REST}/beds?patientUuid={patient}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["results"].clone()
}

#[tokio::test]
async fn an_administrator_makes_bed_types_tags_and_beds_with_the_modules_rules() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ward = location_uuid(&st, OBSERVATION_WARD);
    let r = c
        .post(
            &format!("{REST}/bedtype"),
            r#"{"name": "Lit standard", "displayName": "Standard", "description": "Lit d'adulte"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let standard = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(&format!("{REST}/bedtype"), r#"{"name": "Berceau"}"#)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = c
        .post(&format!("{REST}/bedTag/"), r#"{"name": "Oxygène"}"#)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["id"], 1);
    let oxygen = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(&format!("{REST}/bedTag/"), r#"{"name": "oxygène"}"#)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(
        r.body["error"]["fieldErrors"]["name"][0]["code"],
        "general.error.nameAlreadyInUse"
    );

    let one = new_bed(&mut c, &ward, "1", 1, 1).await;
    assert_eq!(one["id"], 1);
    assert_eq!(one["bedType"]["displayName"], "Standard");
    assert_eq!(one["status"], "AVAILABLE");
    let two = new_bed(&mut c, &ward, "2", 1, 2).await;
    assert_eq!(two["id"], 2);
    for (body, message) in [
        (
            json!({"bedNumber": "3", "bedType": "Lit standard", "row": 1, "column": 2, "locationUuid": ward}),
            "A bed is already assigned to the given row & column",
        ),
        (
            json!({"bedNumber": "3", "bedType": "Hamac", "row": 2, "column": 1, "locationUuid": ward}),
            "Invalid bed type name",
        ),
        (
            json!({"bedNumber": "3", "bedType": "Lit standard", "row": 2, "locationUuid": ward}),
            "Required parameters: bedNumber, bedType, row, column, locationUuid",
        ),
    ] {
        let r = c.post(&format!("{REST}/bed"), &body.to_string()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(message),
            "{}",
            r.body
        );
    }
    let r = c
        .post(
            &format!("{REST}/bed"),
            &json!({"bedNumber": "3", "bedType": "Lit standard", "row": 0, "column": 1, "locationUuid": ward}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    // A tag on a bed, once.
    let map = json!({"bed": one["uuid"], "bedTag": oxygen}).to_string();
    let r = c.post(&format!("{REST}/bedTagMap"), &map).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["bedTag"]["name"], "Oxygène");
    let r = c.post(&format!("{REST}/bedTagMap"), &map).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    // The ward's layout, as the bed management summary and the ward app read it.
    let r = c.get(&format!("{REST}/admissionLocation?v=full")).await;
    let observation = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["ward"]["uuid"] == ward.as_str())
        .cloned()
        .unwrap();
    assert_eq!(observation["totalBeds"], 2);
    assert_eq!(observation["occupiedBeds"], 0);
    let layouts = observation["bedLayouts"].as_array().unwrap();
    assert_eq!(layouts[0]["bedNumber"], "1");
    assert_eq!(layouts[0]["bedTagMaps"][0]["bedTag"]["name"], "Oxygène");
    assert_eq!(layouts[1]["columnNumber"], 2);
    let r = c
        .get(&format!("{REST}/bed?locationUuid={ward}&v=full"))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 2);
    let r = c.get(&format!("{REST}/bed?bedType=Hamac")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // Moving a bed to a free place; a used type is not deleted, an unused one is.
    let r = c
        .post(
            &format!("{REST}/bed/{}", two["uuid"].as_str().unwrap()),
            &json!({"row": 2, "column": 1, "locationUuid": ward}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["row"], 2);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/bedtype/{standard}?reason=x"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    // Retired through an update, as the module does (the O3 suites send the flag as text),
    // even while beds are of that type; it stays listed, as the module lists it.
    let r = c
        .post(
            &format!("{REST}/bedtype/{standard}?v=full"),
            r#"{"retired": "true", "retiredReason": "remplacé"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["retired"], true);
    let r = c.get(&format!("{REST}/bedtype?v=full")).await;
    assert!(
        r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uuid"] == standard.as_str() && t["retired"] == true),
        "{}",
        r.body
    );
    let r = c
        .post(
            &format!("{REST}/bedtype/{standard}"),
            r#"{"retired": "maybe"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = c
        .post(
            &format!("{REST}/bedtype"),
            r#"{"name": "Berceau", "displayName": "Berceau"}"#,
        )
        .await;
    let cradle = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/bedtype/{cradle}?reason=x"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        c.get(&format!("{REST}/bedtype/{cradle}")).await.status,
        StatusCode::NOT_FOUND
    );

    // A registration clerk may not make beds.
    let mut clerk = registration_clerk(&mut c, &st, "accueil9").await;
    let r = clerk
        .post(
            &format!("{REST}/bed"),
            &json!({"bedNumber": "9", "bedType": "Lit standard", "row": 9, "column": 9, "locationUuid": ward}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
}

#[tokio::test]
async fn patients_are_put_in_beds_moved_share_them_and_leave_them_with_their_visit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let bundle = runtime::embedded::EMBEDDED_BUNDLE.to_vec();
    let st = state_with(
        bundle.clone(),
        runtime::store::Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
    );
    let mut c = Client::admin(st.clone()).await;
    let ward = location_uuid(&st, OBSERVATION_WARD);
    standard_bed_type(&mut c).await;
    let one = new_bed(&mut c, &ward, "1", 1, 1).await;
    let two = new_bed(&mut c, &ward, "2", 1, 2).await;
    let (mother, visit, encounter) = inpatient(&mut c, &st, "320001").await;
    let (baby, _, baby_encounter) = inpatient(&mut c, &st, "320002").await;
    assert_eq!(bed_of(&mut c, &mother).await, json!([]));

    let r = c
        .post(
            &format!("{REST}/beds/{}", one["id"]),
            &json!({"patientUuid": mother, "encounterUuid": encounter}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["bedNumber"], "1");
    let mine = bed_of(&mut c, &mother).await;
    assert_eq!(mine[0]["bedId"], one["id"]);
    assert_eq!(mine[0]["physicalLocation"]["uuid"], ward.as_str());
    assert_eq!(mine[0]["patients"][0]["uuid"], mother.as_str());

    // Into another bed: the first is free again.
    let r = c
        .post(
            &format!("{REST}/beds/{}", two["id"]),
            &json!({"patientUuid": mother, "encounterUuid": encounter}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = c
        .get(&format!(
            "{REST}/admissionLocation/{ward}?v=custom:(ward,totalBeds,occupiedBeds,bedLayouts:(bedNumber,bedId,status,patients:(uuid,person:full)))"
        ))
        .await;
    assert_eq!(r.body["occupiedBeds"], 1, "{}", r.body);
    assert_eq!(r.body["bedLayouts"][0]["status"], "AVAILABLE");
    assert_eq!(r.body["bedLayouts"][1]["status"], "OCCUPIED");
    assert!(
        r.body["bedLayouts"][1]["patients"][0]["person"]["preferredName"]["display"].is_string()
    );

    // Her baby shares her bed.
    let r = c
        .post(
            &format!("{REST}/beds/{}", two["uuid"].as_str().unwrap()),
            &json!({"patientUuid": baby, "encounterUuid": baby_encounter}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["patients"].as_array().unwrap().len(), 2);
    // An occupied bed is not removed.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/bed/{}", two["uuid"].as_str().unwrap()),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    // An encounter of another patient is refused.
    let r = c
        .post(
            &format!("{REST}/beds/{}", one["id"]),
            &json!({"patientUuid": mother, "encounterUuid": baby_encounter}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    // The baby leaves her bed; the mother stays.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/beds/0?patientUuid={baby}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(bed_of(&mut c, &baby).await, json!([]));
    assert_eq!(bed_of(&mut c, &mother).await[0]["bedId"], two["id"]);

    // Ending the mother's visit frees her bed.
    let r = c
        .post(
            &format!("{REST}/visit/{visit}"),
            &json!({"stopDatetime": ago(1)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(bed_of(&mut c, &mother).await, json!([]));
    let r = c
        .get(&format!("{REST}/bed/{}", two["uuid"].as_str().unwrap()))
        .await;
    assert_eq!(r.body["status"], "AVAILABLE");

    // A restart keeps the beds and their numbering.
    drop((c, st));
    let reopened = state_with(
        bundle,
        runtime::store::Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
    );
    let mut again = Client::admin(reopened).await;
    let r = again.get(&format!("{REST}/bed?locationUuid={ward}")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 2);
    let three = new_bed(&mut again, &ward, "3", 3, 1).await;
    assert_eq!(three["id"], 3);
}

#[tokio::test]
async fn a_backup_restores_beds_their_occupants_and_numbering() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ward = location_uuid(&st, OBSERVATION_WARD);
    standard_bed_type(&mut c).await;
    let r = c
        .post(&format!("{REST}/bedTag"), r#"{"name": "Oxygène"}"#)
        .await;
    let tag = r.body["uuid"].as_str().unwrap().to_string();
    let one = new_bed(&mut c, &ward, "1", 1, 1).await;
    let r = c
        .post(
            &format!("{REST}/bedTagMap"),
            &json!({"bed": one["uuid"], "bedTag": tag}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let (patient, _, encounter) = inpatient(&mut c, &st, "320009").await;
    let r = c
        .post(
            &format!("{REST}/beds/{}", one["id"]),
            &json!({"patientUuid": patient, "encounterUuid": encounter}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;
    for path in [
        format!("{REST}/admissionLocation/{ward}?v=full"),
        format!("{REST}/beds?patientUuid={patient}"),
        format!("{REST}/bedTag"),
        format!("{REST}/bedtype"),
    ] {
        let (a, b) = (c.get(&path).await, c2.get(&path).await);
        assert_eq!(a.status, StatusCode::OK, "{path}");
        assert_eq!(a.body, b.body, "{path}");
    }
    // Numbers go on after the restored beds and tags.
    let two = new_bed(&mut c2, &ward, "2", 1, 2).await;
    assert_eq!(two["id"], 2);
    let r = c2
        .post(&format!("{REST}/bedTag"), r#"{"name": "Isolement"}"#)
        .await;
    assert_eq!(r.body["id"], 2);
}

#[tokio::test]
async fn voiding_her_encounter_visit_or_record_frees_her_bed_and_a_bed_stops_a_purge() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ward = location_uuid(&st, OBSERVATION_WARD);
    standard_bed_type(&mut c).await;
    let bed = new_bed(&mut c, &ward, "1", 1, 1).await;
    let assign = |patient: &str, encounter: &str| {
        json!({"patientUuid": patient, "encounterUuid": encounter}).to_string()
    };
    let (a, _, a_encounter) = inpatient(&mut c, &st, "320011").await;
    let (b, b_visit, b_encounter) = inpatient(&mut c, &st, "320012").await;
    let (d, _, d_encounter) = inpatient(&mut c, &st, "320013").await;
    for (p, e) in [(&a, &a_encounter), (&b, &b_encounter), (&d, &d_encounter)] {
        let r = c
            .post(&format!("{REST}/beds/{}", bed["id"]), &assign(p, e))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    // Her admission encounter voided: she leaves the bed.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/encounter/{a_encounter}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(bed_of(&mut c, &a).await, json!([]));
    // Her visit voided.
    let r = c
        .send("DELETE", &format!("{REST}/visit/{b_visit}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(bed_of(&mut c, &b).await, json!([]));
    // A patient who was in a bed is not purged; voided, she leaves it.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{d}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{d}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .get(&format!("{REST}/bed/{}", bed["uuid"].as_str().unwrap()))
        .await;
    assert_eq!(r.body["status"], "AVAILABLE", "{}", r.body);
}

#[tokio::test]
async fn a_patient_who_was_in_a_bed_is_not_purged() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ward = location_uuid(&st, OBSERVATION_WARD);
    standard_bed_type(&mut c).await;
    let bed = new_bed(&mut c, &ward, "1", 1, 1).await;
    // No other record of hers but the stay in a bed, ended.
    let e = register_patient(&mut c, &st, "Esther", "Mwamba", "320014").await;
    let r = c
        .post(
            &format!("{REST}/beds/{}", bed["id"]),
            &json!({"patientUuid": e}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/beds/1?patientUuid={e}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{e}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("bed assignments"), "{message}");
}
