//! Service-queue entries over REST, as the O3 service-queues app drives them: adding a
//! patient with a visit, the queue lists and metrics, serving (end and reopen), moving on
//! (transition) and undoing it, editing, removing and voiding, the queue module's rules
//! and messages, privileges, the visit's end closing its entries, and backup/restore.

use crate::common::*;
use axum::http::StatusCode;
use runtime::auth::hash_password;
use runtime::store::UserRecord;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const TRIAGE: &str = "1bdf120a-03b8-4621-8e18-5cd2b68b514c";
const CONSULTATION: &str = "c7dc5d77-ee65-4831-8277-8ad422eacd93";

fn concept(st: &runtime::http::AppState, reference: &str) -> String {
    st.catalog.load().concept(reference).unwrap().uuid.clone()
}

fn ago(minutes: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::minutes(minutes))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string()
}

/// A patient with an open visit started two hours ago: (patient, visit).
async fn visiting(c: &mut Client, st: &runtime::http::AppState, id: &str) -> (String, String) {
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(st, "Aline", "Kabila", id),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let patient = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": patient, "visitType": OUTPATIENT, "location": location_uuid(st, "Centre de santé Bondeko"), "startDatetime": ago(120)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    (patient, r.body["uuid"].as_str().unwrap().to_string())
}

/// What the O3 app posts to add a patient to a queue.
fn add_body(
    st: &runtime::http::AppState,
    patient: &str,
    visit: &str,
    queue: &str,
    started: &str,
) -> String {
    json!({"visit": {"uuid": visit},
           "queueEntry": {"status": {"uuid": concept(st, "DRC-EMR:6011")},
                          "priority": {"uuid": concept(st, "DRC-EMR:6021")},
                          "queue": {"uuid": queue}, "patient": {"uuid": patient},
                          "startedAt": started, "sortWeight": 0}})
    .to_string()
}

const LIST_REP: &str = "custom:(uuid,display,queue,status,patient:(uuid,display),visit:(uuid,startDatetime),priority,priorityComment,sortWeight,startedAt,endedAt,queueComingFrom,previousQueueEntry)";

#[tokio::test]
async fn a_patient_is_queued_served_moved_on_and_the_move_undone() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let (patient, visit) = visiting(&mut c, &st, "300001").await;
    // The O3 app asks for a number first; without a visit attribute type, it is empty.
    let r = c
        .get(&format!("{REST}/queue-entry-number?location=x&queue={TRIAGE}&visit={visit}&visitAttributeType=c0c579b0-8e59-401d-8a4a-976a0b183519"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, json!({"serviceType": "", "visitQueueNumber": ""}));
    let r = c
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &patient, &visit, TRIAGE, &ago(60)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let first = r.body["queueEntry"]["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["visit"]["uuid"], visit.as_str());
    assert_eq!(r.body["queueEntry"]["display"], "Aline Kabila");

    // The same patient twice in one queue is refused with the module's message.
    let r = c
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &patient, &visit, TRIAGE, &ago(50)),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // The O3 app compares the whole message.
    assert_eq!(
        r.body["error"]["message"], "[queue.entry.duplicate.patient]",
        "{:?}",
        r.body
    );

    // The dashboard's list: open entries of the triage service, with explicit nulls.
    let service = concept(&st, "DRC-EMR:6001");
    let r = c
        .get(&format!(
            "{REST}/queue-entry?v={LIST_REP}&totalCount=true&service={service}&isEnded=false&status={}",
            concept(&st, "DRC-EMR:6011")
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["totalCount"], 1);
    let row = &r.body["results"][0];
    assert_eq!(row["uuid"], first.as_str());
    assert_eq!(row["queue"]["uuid"], TRIAGE);
    assert_eq!(row["patient"]["uuid"], patient.as_str());
    assert!(row["previousQueueEntry"].is_null() && row.get("previousQueueEntry").is_some());
    assert!(row["endedAt"].is_null() && row.get("endedAt").is_some());
    // The list writes the queue, status and priority once a request: each row is exactly
    // the entry read alone, in the app's representation and the default one.
    for rep in [LIST_REP, "default", "full"] {
        let list = c
            .get(&format!(
                "{REST}/queue-entry?v={rep}&isEnded=false&patient={patient}"
            ))
            .await;
        let alone = c.get(&format!("{REST}/queue-entry/{first}?v={rep}")).await;
        assert_eq!(list.body["results"][0], alone.body, "{rep}");
    }
    // Status by name, as the "Waiting for" card sends it.
    let r = c
        .get(&format!(
            "{REST}/queue-entry-metrics?status=Waiting&isEnded=false&service={service}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["count"], 1);

    // Moved on to consultation, "in service", ten minutes ago.
    let moved_at = ago(10);
    let r = c
        .post(
            &format!("{REST}/queue-entry/transition"),
            &json!({"queueEntryToTransition": first, "newQueue": CONSULTATION,
                    "newStatus": concept(&st, "DRC-EMR:6012"), "newPriority": concept(&st, "DRC-EMR:6021"),
                    "newPriorityComment": "", "transitionDate": moved_at})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let second = r.body["uuid"].as_str().unwrap().to_string();
    let r = c.get(&format!("{REST}/queue-entry/{first}")).await;
    assert!(r.body["endedAt"].is_string(), "{:?}", r.body);
    let r = c
        .get(&format!("{REST}/queue-entry/{second}?v={LIST_REP}"))
        .await;
    assert_eq!(r.body["queue"]["uuid"], CONSULTATION);
    assert_eq!(r.body["queueComingFrom"]["uuid"], TRIAGE);
    assert_eq!(r.body["previousQueueEntry"]["uuid"], first.as_str());
    assert_eq!(r.body["status"]["uuid"], concept(&st, "DRC-EMR:6012"));
    // An ended entry cannot move on again.
    let r = c
        .post(
            &format!("{REST}/queue-entry/transition"),
            &json!({"queueEntryToTransition": first, "newQueue": CONSULTATION}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("queue entry that has already ended")
    );
    // The triage wait (50 minutes) shows in the queue's average of the entries started and
    // ended today (UTC days): none when the walk straddles midnight.
    let started_today = (chrono::Utc::now() - chrono::Duration::minutes(60)).date_naive()
        == chrono::Utc::now().date_naive();
    let r = c
        .get(&format!(
            "{REST}/queue-metrics?queue={service}&status={}",
            concept(&st, "DRC-EMR:6011")
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["queue"], "Bondeko - File de triage");
    assert_eq!(
        r.body["averageWaitTime"],
        if started_today { 50.0 } else { 0.0 }
    );

    // Undone: the new entry is voided, the first reopened.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/queue-entry/transition"),
            &[("content-type", "application/json")],
            Some(&json!({"queueEntry": second}).to_string()),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["uuid"], first.as_str());
    let r = c.get(&format!("{REST}/queue-entry/{second}?v=full")).await;
    assert_eq!(r.body["voided"], true);
    assert_eq!(r.body["voidReason"], "Transition undone");
    let r = c
        .get(&format!(
            "{REST}/queue-entry?patient={patient}&isEnded=false"
        ))
        .await;
    let open: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(open, [first.as_str()]);

    // Edited (200, as the app requires), then removed from the queue.
    let urgent = concept(&st, "DRC-EMR:6022");
    let r = c
        .post(
            &format!("{REST}/queue-entry/{first}"),
            &json!({"status": {"uuid": concept(&st, "DRC-EMR:6011"), "display": "x"}, "priority": {"uuid": urgent}, "priorityComment": "fièvre"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["priority"]["uuid"], urgent.as_str());
    assert_eq!(r.body["priorityComment"], "fièvre");
    let listed = c
        .get(&format!("{REST}/queue-entry?queue={TRIAGE}&isEnded=false"))
        .await;
    assert_eq!(listed.body["results"][0]["uuid"], first.as_str());
    let r = c
        .post(
            &format!("{REST}/queue/{TRIAGE}/entry/{first}"),
            &json!({"endedAt": ago(1)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{REST}/queue-entry?queue={TRIAGE}&isEnded=false&totalCount=true"
        ))
        .await;
    assert_eq!(r.body["totalCount"], 0);
    assert_eq!(r.body["results"], json!([]));
}

#[tokio::test]
async fn the_module_rules_are_enforced_with_its_messages() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let (patient, visit) = visiting(&mut c, &st, "300002").await;
    let base = || {
        json!({"queue": TRIAGE, "patient": patient, "visit": visit,
               "status": concept(&st, "DRC-EMR:6011"), "priority": concept(&st, "DRC-EMR:6021"),
               "startedAt": ago(30)})
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            {
                let mut b = base();
                b["status"] = json!(concept(&st, "DRC-EMR:6022"));
                b
            },
            "The property status should be a member of configured queue status conceptSet.",
        ),
        (
            {
                let mut b = base();
                b["priority"] = json!(concept(&st, "DRC-EMR:6011"));
                b
            },
            "The property priority should be a member of configured queue priority conceptSet.",
        ),
        (
            {
                let mut b = base();
                b["startedAt"] = json!(ago(600));
                b
            },
            "A queue entry cannot start before the associated visit start date",
        ),
        (
            {
                let mut b = base();
                b.as_object_mut().unwrap().remove("queue");
                b
            },
            "The property queue should not be null",
        ),
    ];
    for (body, message) in cases {
        let r = c
            .post(&format!("{REST}/queue-entry"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert!(
            r.body.to_string().contains(message),
            "{message}: {:?}",
            r.body
        );
    }
    // A visit of another patient.
    let (_, other_visit) = visiting(&mut c, &st, "300003").await;
    let mut b = base();
    b["visit"] = json!(other_visit);
    let r = c.post(&format!("{REST}/queue-entry"), &b.to_string()).await;
    assert!(
        r.body
            .to_string()
            .contains("This queue entry is associated with a visit for the wrong patient")
    );
    // Nothing was stored by the refusals.
    let r = c
        .get(&format!(
            "{REST}/queue-entry?patient={patient}&totalCount=true"
        ))
        .await;
    assert_eq!(r.body["results"], json!([]));
    // A good one, then its queue cannot change and it ends after it starts.
    let r = c
        .post(&format!("{REST}/queue-entry"), &base().to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/queue-entry/{uuid}"),
            &json!({"queue": CONSULTATION}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .post(
            &format!("{REST}/queue-entry/{uuid}"),
            &json!({"endedAt": ago(40)}).to_string(),
        )
        .await;
    assert!(
        r.body
            .to_string()
            .contains("Queue entry endedAt should be after the startedAt date")
    );
    // A sort weight that could not be stored and read back is refused.
    for weight in [json!("NaN"), json!("inf"), json!("lourd")] {
        let r = c
            .post(
                &format!("{REST}/queue-entry/{uuid}"),
                &json!({"sortWeight": weight}).to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{weight}");
    }
    let r = c.get(&format!("{REST}/queue-entry?queue={TRIAGE}")).await;
    assert_eq!(r.body["results"][0]["uuid"], uuid.as_str());
    assert_eq!(r.body["results"][0]["sortWeight"], 0.0);
    // A visit cannot end before one of its entries starts, nor be purged with entries.
    let r = c
        .post(
            &format!("{REST}/visit/{visit}"),
            &json!({"stopDatetime": ago(60)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(r.body.to_string().contains("queue entries"), "{:?}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/visit/{visit}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.to_string().contains("queue entries"), "{:?}", r.body);
    // Voided with a reason: kept, and no longer listed.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/queue-entry/{uuid}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c.get(&format!("{REST}/queue-entry/{uuid}?v=full")).await;
    assert_eq!(
        (r.body["voided"].clone(), r.body["voidReason"].clone()),
        (json!(true), json!("erreur"))
    );
    let r = c.get(&format!("{REST}/queue-entry?queue={TRIAGE}")).await;
    assert_eq!(r.body["results"], json!([]));
}

#[tokio::test]
async fn ending_a_visit_ends_its_entries_and_voiding_it_voids_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let (patient, visit) = visiting(&mut c, &st, "300004").await;
    let r = c
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &patient, &visit, TRIAGE, &ago(30)),
        )
        .await;
    let entry = r.body["queueEntry"]["uuid"].as_str().unwrap().to_string();
    let stop = ago(5);
    let r = c
        .post(
            &format!("{REST}/visit/{visit}"),
            &json!({"stopDatetime": stop}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c.get(&format!("{REST}/queue-entry/{entry}")).await;
    assert!(
        r.body["endedAt"].as_str().unwrap().starts_with(&stop[..16]),
        "{:?}",
        r.body
    );

    let (patient, visit) = visiting(&mut c, &st, "300005").await;
    let r = c
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &patient, &visit, TRIAGE, &ago(30)),
        )
        .await;
    let entry = r.body["queueEntry"]["uuid"].as_str().unwrap().to_string();
    let r = c
        .send("DELETE", &format!("{REST}/visit/{visit}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c.get(&format!("{REST}/queue-entry/{entry}?v=full")).await;
    assert_eq!(r.body["voided"], true);
    // A patient whose only clinical record is a queue entry is not purged.
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(&st, "Jean", "Mbala", "300007"),
        )
        .await;
    let walk_in = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/queue-entry"),
            &json!({"queue": TRIAGE, "patient": walk_in, "status": concept(&st, "DRC-EMR:6011"),
                    "priority": concept(&st, "DRC-EMR:6021"), "startedAt": ago(3)})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{walk_in}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.to_string().contains("queue entries"), "{:?}", r.body);
}

#[tokio::test]
async fn queue_privileges_are_the_modules() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let (patient, visit) = visiting(&mut admin, &st, "300006").await;
    let user = |username: &str, roles: Vec<String>| UserRecord {
        v: 1,
        uuid: format!("0b6e5a1c-0000-4000-8000-0000000001{}", username.len()),
        username: username.into(),
        system_id: username.into(),
        person_uuid: format!("0b6e5a1c-0000-4000-8000-0000000002{}", username.len()),
        person_name: "Agent".into(),
        password_hash: hash_password("Agent-pass-1"),
        roles,
        properties: Default::default(),
        retired: false,
        failed_logins: 0,
        locked_until: None,
        audit: None,
        retiring: None,
    };
    st.store
        .put_user(&user("lecteur", vec!["Application: Manages Visits".into()]))
        .unwrap();
    st.store
        .put_user(&user("infirmiere", vec!["Organizational: Nurse".into()]))
        .unwrap();
    let mut reader = Client::new(st.clone());
    reader.login("lecteur", "Agent-pass-1").await;
    let r = reader
        .get(&format!("{REST}/queue-entry?queue={TRIAGE}"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = reader
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &patient, &visit, TRIAGE, &ago(30)),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // A nurse of the content uses the queues.
    let mut nurse = Client::new(st.clone());
    nurse.login("infirmiere", "Agent-pass-1").await;
    let r = nurse
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &patient, &visit, TRIAGE, &ago(30)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = nurse
        .get(&format!("{REST}/queue-entry?queue={TRIAGE}&isEnded=false"))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_front_end_configuration_names_the_contents_queue_concepts() {
    let st = state();
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../frontend/config/config.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let concepts = &config["@openmrs/esm-service-queues-app"]["concepts"];
    for (key, code) in [
        ("defaultStatusConceptUuid", "DRC-EMR:6011"),
        ("defaultTransitionStatus", "DRC-EMR:6012"),
        ("defaultPriorityConceptUuid", "DRC-EMR:6021"),
        ("emergencyPriorityConceptUuid", "DRC-EMR:6023"),
    ] {
        assert_eq!(concepts[key], concept(&st, code).as_str(), "{key}");
    }
}

#[tokio::test]
async fn a_backup_restores_queue_entries_with_their_indexes() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let (patient, visit) = visiting(&mut c, &st, "300008").await;
    let r = c
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &patient, &visit, TRIAGE, &ago(30)),
        )
        .await;
    let first = r.body["queueEntry"]["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/queue-entry/transition"),
            &json!({"queueEntryToTransition": first, "newQueue": CONSULTATION}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;
    for (path, count) in [
        (
            format!("{REST}/queue-entry?patient={patient}&v={LIST_REP}"),
            2,
        ),
        (
            format!("{REST}/queue-entry?visit={visit}&isEnded=true&v=full"),
            1,
        ),
        (
            format!("{REST}/queue-entry?queue={CONSULTATION}&isEnded=false&v={LIST_REP}"),
            1,
        ),
    ] {
        let (a, b) = (c.get(&path).await, c2.get(&path).await);
        assert_eq!(
            a.body["results"].as_array().map(Vec::len),
            Some(count),
            "{path}"
        );
        assert_eq!(a.body, b.body, "{path}");
    }
}

#[tokio::test]
async fn the_contents_queues_are_read_only_and_there_are_no_rooms() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let all = c.get("/openmrs/ws/rest/v1/queue?v=default").await;
    let first = all.body["results"][0]["uuid"].as_str().unwrap().to_string();
    let one = c.get(&format!("/openmrs/ws/rest/v1/queue/{first}")).await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.body["uuid"], first.as_str());
    for r in [
        c.post(
            &format!("/openmrs/ws/rest/v1/queue/{first}"),
            r#"{"name": "Autre"}"#,
        )
        .await,
        c.send(
            "DELETE",
            &format!("/openmrs/ws/rest/v1/queue/{first}"),
            &[],
            None,
        )
        .await,
    ] {
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("content package")
        );
    }
    let r = c.get("/openmrs/ws/rest/v1/queue-room?v=custom:(uuid,display,name,description,queue:(uuid,display))").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["results"].as_array().unwrap().len(), 0);
    let r = c
        .post("/openmrs/ws/rest/v1/queue-room", r#"{"name": "Salle 1"}"#)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn an_administrator_adds_a_queue_that_serves_patients_and_retires_it() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let consultation = c.get(&format!("{REST}/queue/{CONSULTATION}?v=full")).await;
    let service = consultation.body["service"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let location = consultation.body["location"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    // The queue module's rules: a name, a location and a service of the services' set.
    let r = c.post(&format!("{REST}/queue"), r#"{"name": " "}"#).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    for field in ["name", "location", "service"] {
        assert!(
            r.body["error"]["fieldErrors"][field].is_array(),
            "{field}: {:?}",
            r.body
        );
    }
    let not_a_service = concept(&st, "DRC-EMR:6011");
    let r = c
        .post(
            &format!("{REST}/queue"),
            &json!({"name": "Vaccination", "service": {"uuid": not_a_service}, "location": {"uuid": location}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["error"]["fieldErrors"]["service"][0]["code"],
        "Queue.service.invalid"
    );
    // As the service-queues admin page posts it.
    let r = c
        .post(
            &format!("{REST}/queue"),
            &json!({"name": "Vaccination", "description": "Vaccins du PEV", "service": {"uuid": service}, "location": {"uuid": location}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let queue = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["display"], "Vaccination");
    // Listed with the content's, at its location; a patient is queued there with the
    // statuses and priorities the module's settings name.
    let listed = c.get(&format!("{REST}/queue?location={location}")).await;
    let uuids: Vec<&str> = listed.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|q| q["uuid"].as_str())
        .collect();
    assert!(
        uuids.contains(&queue.as_str()) && uuids.contains(&CONSULTATION),
        "{uuids:?}"
    );
    let (patient, visit) = visiting(&mut c, &st, "300091").await;
    let r = c
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &patient, &visit, &queue, &ago(5)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let entries = c
        .get(&format!(
            "{REST}/queue-entry?queue={queue}&isEnded=false&v=full"
        ))
        .await;
    assert_eq!(
        entries.body["results"][0]["queue"]["display"],
        "Vaccination"
    );
    // Renamed: the entries show the new name at once.
    let r = c
        .post(
            &format!("{REST}/queue/{queue}"),
            r#"{"name": "Vaccination (PEV)"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let entries = c
        .get(&format!(
            "{REST}/queue-entry?queue={queue}&isEnded=false&v=full"
        ))
        .await;
    assert_eq!(
        entries.body["results"][0]["queue"]["display"],
        "Vaccination (PEV)"
    );
    // Not purged while an entry names it; retired, it leaves the list and stays readable.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/queue/{queue}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/queue/{queue}?reason=fin%20de%20campagne"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let listed = c.get(&format!("{REST}/queue")).await;
    assert!(
        !listed.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|q| q["uuid"] == queue.as_str())
    );
    let r = c
        .get(&format!("{REST}/queue/{queue}?v=custom:(uuid,retired)"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["retired"], true);
    // A queue no entry names is purged.
    let r = c
        .post(
            &format!("{REST}/queue"),
            &json!({"name": "Provisoire", "service": service, "location": location}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let spare = r.body["uuid"].as_str().unwrap().to_string();
    // A room in it holds it too, until the room is purged.
    let r = c
        .post(
            &format!("{REST}/queue-room"),
            &json!({"name": "Salle provisoire", "queue": spare}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let room = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/queue/{spare}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/queue-room/{room}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/queue/{spare}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        c.get(&format!("{REST}/queue/{spare}")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn queue_rooms_are_made_changed_retired_and_kept() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let queues = c
        .get("/openmrs/ws/rest/v1/queue?v=custom:(uuid,display)")
        .await;
    let queue = queues.body["results"][0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let other = queues.body["results"][1]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let rep = "custom:(uuid,display,name,description,queue:(uuid,display))";
    // As the O3 admin page's form posts it.
    let r = c
        .post(
            "/openmrs/ws/rest/v1/queue-room",
            &json!({"name": "Salle 1", "description": "Au fond du couloir", "queue": {"uuid": queue}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["queue"]["uuid"], queue.as_str());
    let room = r.body["uuid"].as_str().unwrap().to_string();
    for (body, field) in [
        (json!({"name": "salle 1", "queue": queue}), "name"),
        (json!({"name": "Salle 2", "queue": "nowhere"}), "queue"),
        (json!({"name": "  ", "queue": queue}), "name"),
    ] {
        let r = c
            .post("/openmrs/ws/rest/v1/queue-room", &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            r.body["error"]["fieldErrors"][field].is_array(),
            "{field}: {:?}",
            r.body
        );
    }
    // The same name in another queue is another room.
    let r = c
        .post(
            "/openmrs/ws/rest/v1/queue-room",
            &json!({"name": "Salle 1", "queue": other}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let listed = c
        .get(&format!(
            "/openmrs/ws/rest/v1/queue-room?queue={queue}&v={rep}"
        ))
        .await;
    assert_eq!(listed.body["results"].as_array().unwrap().len(), 1);
    assert_eq!(
        listed.body["results"][0]["description"],
        "Au fond du couloir"
    );
    let r = c
        .post(
            &format!("/openmrs/ws/rest/v1/queue-room/{room}"),
            &json!({"name": "Salle A", "description": "", "queue": {"uuid": queue}}).to_string(),
        )
        .await;
    assert_eq!(r.body["name"], "Salle A");
    assert_eq!(r.body["description"], Value::Null);

    // Rooms need the queue privileges: a receptionist without the queue role neither
    // reads nor makes them.
    let mut clerk = registration_clerk(&mut c, &st, "accueil3").await;
    let r = clerk
        .get(&format!("/openmrs/ws/rest/v1/queue-room?queue={queue}"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = clerk
        .post(
            "/openmrs/ws/rest/v1/queue-room",
            &json!({"name": "Salle 3", "queue": queue}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // Kept through a backup.
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;
    let path = format!("/openmrs/ws/rest/v1/queue-room?v={rep}");
    assert_eq!(c.get(&path).await.body, c2.get(&path).await.body);

    // Retired: out of the list, kept; then purged.
    let r = c
        .send(
            "DELETE",
            &format!("/openmrs/ws/rest/v1/queue-room/{room}?reason=travaux"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let listed = c
        .get(&format!("/openmrs/ws/rest/v1/queue-room?queue={queue}"))
        .await;
    assert_eq!(listed.body["results"], json!([]));
    let all = c
        .get(&format!(
            "/openmrs/ws/rest/v1/queue-room?queue={queue}&includeAll=true&v=full"
        ))
        .await;
    assert_eq!(all.body["results"][0]["retired"], true);
    assert_eq!(all.body["results"][0]["retireReason"], "travaux");
    // Its name is free again; put back in service while another room has it, it is refused.
    let r = c
        .post(
            "/openmrs/ws/rest/v1/queue-room",
            &json!({"name": "Salle A", "queue": queue}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = c
        .post(
            &format!("/openmrs/ws/rest/v1/queue-room/{room}"),
            &json!({"retired": false}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("/openmrs/ws/rest/v1/queue-room/{room}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        c.get(&format!("/openmrs/ws/rest/v1/queue-room/{room}"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

/// The dashboard's answers are kept between writes (`answer_cache`): every write, whatever
/// it changes, shows in the next answer, and each locale gets its own.
#[tokio::test]
async fn the_dashboards_kept_answers_follow_every_write_and_each_locale() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let waiting = concept(&st, "DRC-EMR:6011");
    let list = format!("{REST}/queue-entry?v={LIST_REP}&totalCount=true&isEnded=false");
    let count = format!("{REST}/queue-entry-metrics?status={waiting}&isEnded=false&queue={TRIAGE}");
    assert_eq!(c.get(&list).await.body["totalCount"], 0);
    assert_eq!(c.get(&count).await.body["count"], 0);

    let (patient, visit) = visiting(&mut c, &st, "300077").await;
    let r = c
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &patient, &visit, TRIAGE, &ago(30)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let page = c.get(&list).await.body;
    assert_eq!(page["totalCount"], 1);
    assert!(
        page["results"][0]["patient"]["display"]
            .as_str()
            .unwrap()
            .contains("Aline Kabila")
    );
    assert_eq!(c.get(&count).await.body["count"], 1);
    // The same answer again, byte for byte, from the kept copy.
    assert_eq!(c.get(&list).await.body, page);

    // A write to another record (the patient's name) shows at once in the list.
    let r = c
        .post(
            &format!("{REST}/person/{patient}"),
            &json!({"names": [{"givenName": "Alinée", "familyName": "Kabila", "preferred": true}]})
                .to_string(),
        )
        .await;
    assert!(r.status.is_success(), "{:?}", r.body);
    let renamed = c.get(&list).await.body;
    assert!(
        renamed["results"][0]["patient"]["display"]
            .as_str()
            .unwrap()
            .contains("Alinée"),
        "{renamed}"
    );

    // An English session gets the status in English, the French one keeps French.
    let status_fr = renamed["results"][0]["status"]["display"].clone();
    let mut en = Client::admin(st.clone()).await;
    let r = en
        .post(&format!("{REST}/session"), r#"{"locale": "en"}"#)
        .await;
    assert!(r.status.is_success(), "{:?}", r.body);
    let status_en = en.get(&list).await.body["results"][0]["status"]["display"].clone();
    assert_ne!(status_fr, status_en);
    assert_eq!(
        c.get(&list).await.body["results"][0]["status"]["display"],
        status_fr
    );
}

/// The queue module's numbers: the first letters of the queue's name and the count of the
/// day's entries in it, kept on the visit as the content's queue-number attribute.
#[tokio::test]
async fn a_queue_number_is_given_and_kept_on_the_visit() {
    const NUMBER_TYPE: &str = "42ab7095-ab53-44e8-bc84-eed6b1faca15";
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let triage_location = st
        .catalog
        .load()
        .content
        .queues
        .iter()
        .find(|q| q.uuid == TRIAGE)
        .unwrap()
        .location
        .clone();
    let number = |visit: &str| {
        format!(
            "{REST}/queue-entry-number?location={triage_location}&queue={TRIAGE}&visit={visit}&visitAttributeType={NUMBER_TYPE}"
        )
    };
    let (first, first_visit) = visiting(&mut c, &st, "300101").await;
    let r = c.get(&number(&first_visit)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["visitQueueNumber"], "BON-001");
    assert_eq!(r.body["serviceType"], "Bondeko - File de triage");
    let r = c
        .post(
            &format!("{REST}/visit-queue-entry"),
            &add_body(&st, &first, &first_visit, TRIAGE, &ago(10)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let (_, second_visit) = visiting(&mut c, &st, "300102").await;
    let r = c.get(&number(&second_visit)).await;
    assert_eq!(r.body["visitQueueNumber"], "BON-002");
    // Numbered again, the visit keeps only its new number.
    let r = c.get(&number(&second_visit)).await;
    assert_eq!(r.body["visitQueueNumber"], "BON-002");
    let r = c
        .get(&format!(
            "{REST}/visit/{second_visit}?v=custom:(attributes:(value,attributeType:(uuid)))"
        ))
        .await;
    let attributes = r.body["attributes"].as_array().unwrap();
    assert_eq!(attributes.len(), 1, "{}", r.body);
    assert_eq!(attributes[0]["value"], "BON-002");
    assert_eq!(attributes[0]["attributeType"]["uuid"], NUMBER_TYPE);
    // The queue table's representation shows it with the entry.
    let list = format!(
        "{REST}/queue-entry?v=custom:(visit:(attributes:(value,attributeType:(uuid))))&isEnded=false"
    );
    let r = c.get(&list).await;
    assert_eq!(
        r.body["results"][0]["visit"]["attributes"][0]["value"],
        "BON-001"
    );
    // Without the parameters it needs, nothing is numbered.
    let r = c
        .get(&format!("{REST}/queue-entry-number?queue={TRIAGE}&visit={second_visit}&visitAttributeType={NUMBER_TYPE}"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
}

/// `GET visit-queue-entry?patient=`: the patient's entries still waiting or being served
/// that belong to a visit, as the queue module lists its visit queue entries; an ended one
/// leaves the list, another patient's is not in it.
#[tokio::test]
async fn a_patients_active_visit_queue_entries_are_listed() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let (patient, visit) = visiting(&mut c, &st, "300101").await;
    let (other, other_visit) = visiting(&mut c, &st, "300102").await;
    for (p, v) in [(&patient, &visit), (&other, &other_visit)] {
        let r = c
            .post(
                &format!("{REST}/visit-queue-entry"),
                &add_body(&st, p, v, TRIAGE, &ago(30)),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let r = c
        .get(&format!("{REST}/visit-queue-entry?patient={patient}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let results = r.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{:?}", r.body);
    assert_eq!(results[0]["visit"]["uuid"], visit.as_str());
    assert_eq!(
        results[0]["queueEntry"]["patient"]["uuid"],
        patient.as_str()
    );
    let entry = results[0]["queueEntry"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(results[0]["uuid"], entry.as_str());
    // Both patients without the filter.
    let r = c
        .get(&format!("{REST}/visit-queue-entry?totalCount=true"))
        .await;
    assert_eq!(r.body["totalCount"], 2, "{:?}", r.body);
    // Served and sent home: the entry ends and leaves the list.
    let r = c
        .post(
            &format!("{REST}/queue-entry/{entry}"),
            &json!({"endedAt": ago(1)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c
        .get(&format!("{REST}/visit-queue-entry?patient={patient}"))
        .await;
    assert_eq!(r.body["results"], json!([]), "{:?}", r.body);
    // Privilege: Get Queue Entries.
    let mut anonymous = Client::new(st.clone());
    let r = anonymous
        .get(&format!("{REST}/visit-queue-entry?patient={patient}"))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn managing_queues_is_not_purging_them() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let consultation = admin
        .get(&format!("{REST}/queue/{CONSULTATION}?v=full"))
        .await;
    let service = consultation.body["service"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let location = consultation.body["location"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = admin
        .post(
            &format!("{REST}/role"),
            r#"{"name": "Gestion des files", "privileges": ["Manage Queues", "Get Locations"]}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let body = json!({"username": "chef.files", "password": "Files-pass-2026",
        "person": {"names": [{"givenName": "Paul", "familyName": "Mbuyi"}], "gender": "M"},
        "roles": ["Gestion des files"]});
    let r = admin.post(&format!("{REST}/user"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut manager = Client::new(st.clone());
    manager.login("chef.files", "Files-pass-2026").await;
    let r = manager
        .post(
            &format!("{REST}/queue"),
            &json!({"name": "Dépistage", "service": service, "location": location}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let queue = r.body["uuid"].as_str().unwrap().to_string();
    let r = manager
        .send(
            "DELETE",
            &format!("{REST}/queue/{queue}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = manager
        .send("DELETE", &format!("{REST}/queue/{queue}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
}
