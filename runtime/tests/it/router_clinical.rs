//! The clinical record over REST: visits, encounters with nested observations, obs, their
//! validation, voiding, paging, privileges, and survival through backup and restore.

use crate::common::*;
use axum::http::StatusCode;
use runtime::auth::hash_password;
use runtime::store::UserRecord;
use serde_json::{Value, json};
use std::sync::Arc;

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const VITALS_TYPE: &str = "023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42";
const CONSULTATION_TYPE: &str = "91edcf31-cf56-43c3-a7d8-b8097fbd0035";
const CLINICIAN_ROLE: &str = "39394a04-5300-4e13-8008-aefffb53df48";
const CHIEF_COMPLAINT: &str = "0590cede-ee69-4795-85dd-c0cd699086b0";
const HIV_DIAGNOSIS_DATE: &str = "40631b56-c082-4f20-9051-e5228e6031f0";

async fn patient(c: &mut Client, st: &runtime::http::AppState, id: &str) -> String {
    register_patient(c, st, "Aline", "Kabila", id).await
}

fn concept_uuid(st: &runtime::http::AppState, reference: &str) -> String {
    st.catalog.load().concept(reference).unwrap().uuid.clone()
}

fn ago(minutes: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::minutes(minutes))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string()
}

async fn start_visit(
    c: &mut Client,
    st: &runtime::http::AppState,
    patient: &str,
    start: &str,
) -> Value {
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": patient, "visitType": OUTPATIENT, "location": location_uuid(st, "Centre de santé Bondeko"), "startDatetime": start}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body
}

/// Starts a visit for `patient` and records a temperature in it (for tests of the store).
pub async fn visit_with_vitals(c: &mut Client, st: &runtime::http::AppState, patient: &str) {
    let visit = start_visit(c, st, patient, &ago(60)).await;
    let temperature = concept_uuid(st, "DRC-EMR:5001");
    let r = c
        .post(&format!("{REST}/encounter"), &json!({"patient": patient, "encounterType": VITALS_TYPE, "visit": visit["uuid"], "obs": [{"concept": temperature, "value": 37.2}]}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

#[tokio::test]
async fn a_visit_is_started_found_as_active_and_ended() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200001").await;
    let v = start_visit(&mut c, &st, &p, &ago(60)).await;
    let uuid = v["uuid"].as_str().unwrap();
    assert_eq!(
        v["stopDatetime"],
        Value::Null,
        "an open visit says so explicitly"
    );
    assert_eq!(v["visitType"]["uuid"], OUTPATIENT);
    assert!(
        v["display"]
            .as_str()
            .unwrap()
            .starts_with("Consultation externe @ ")
    );

    let custom = "custom:(uuid,patient:(uuid,uuid),visitType:(uuid,name,display),location:(uuid,name,display),startDatetime,stopDatetime,encounters:(uuid,encounterDatetime)";
    let active = c
        .get(&format!(
            "{REST}/visit?patient={p}&includeInactive=false&v={custom}"
        ))
        .await;
    assert_eq!(active.status, StatusCode::OK, "{:?}", active.body);
    assert_eq!(active.body["results"][0]["uuid"], uuid);
    assert_eq!(active.body["results"][0]["patient"]["uuid"], p.as_str());

    // The whole facility's open visits (the service queues' metrics).
    let all_active = c
        .get(&format!("{REST}/visit?includeInactive=false&v=ref"))
        .await;
    assert_eq!(all_active.body["results"].as_array().unwrap().len(), 1);

    // A second, overlapping visit is refused: the content sets allowOverlappingVisits=false.
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": p, "visitType": OUTPATIENT, "startDatetime": ago(30)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["globalErrors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("overlaps"),
        "{:?}",
        r.body
    );

    let ended = c
        .post(
            &format!("{REST}/visit/{uuid}"),
            &json!({"stopDatetime": ago(1)}).to_string(),
        )
        .await;
    assert_eq!(ended.status, StatusCode::OK, "{:?}", ended.body);
    assert_ne!(ended.body["stopDatetime"], Value::Null);
    let active = c
        .get(&format!("{REST}/visit?patient={p}&includeInactive=false"))
        .await;
    assert_eq!(active.body["results"], json!([]));
    let all = c.get(&format!("{REST}/visit?patient={p}&v=full")).await;
    assert_eq!(all.body["results"][0]["uuid"], uuid);
    assert_eq!(
        all.body["results"][0]["auditInfo"]["changedBy"]["uuid"],
        c.user_uuid().await.as_str()
    );

    // A stop before the start, a start in the future, and an unknown visit type are 400s.
    let r = c
        .post(
            &format!("{REST}/visit/{uuid}"),
            &json!({"stopDatetime": ago(120)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["error"]["fieldErrors"]["stopDatetime"][0]["code"],
        "Visit.error.endDateBeforeStartDate"
    );
    let p2 = patient(&mut c, &st, "200002").await;
    let future = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": p2, "visitType": OUTPATIENT, "startDatetime": future}).to_string(),
        )
        .await;
    assert_eq!(
        r.body["error"]["fieldErrors"]["startDatetime"][0]["code"],
        "Visit.startCannotBeInTheFuture"
    );
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": p2, "visitType": "nope"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body["error"]["fieldErrors"]["visitType"].is_array());
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": p2, "visitType": OUTPATIENT, "colour": "red"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c.get(&format!("{REST}/visit/no-such-visit")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_encounter_with_nested_obs_is_validated_saved_read_edited_and_voided() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200003").await;
    let visit = start_visit(&mut c, &st, &p, &ago(90)).await;
    let visit_uuid = visit["uuid"].as_str().unwrap();
    let temperature = concept_uuid(&st, "DRC-EMR:5001");
    let malaria_rdt = concept_uuid(&st, "DRC-EMR:3040");
    let positive = concept_uuid(&st, "DRC-EMR:1004");
    let cbc = concept_uuid(&st, "DRC-EMR:3058");
    let haemoglobin = concept_uuid(&st, "DRC-EMR:3001");
    let provider = c.get(&format!("{REST}/session")).await.body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let body = json!({
        "patient": p,
        "encounterType": CONSULTATION_TYPE,
        "encounterDatetime": ago(30),
        "visit": visit_uuid,
        "location": location_uuid(&st, "Centre de santé Bondeko"),
        "encounterProviders": [{"provider": provider, "encounterRole": CLINICIAN_ROLE}],
        "obs": [
            {"concept": temperature, "value": 38.6},
            {"concept": {"uuid": malaria_rdt, "display": ""}, "value": positive, "formFieldNamespace": "rfe-forms", "formFieldPath": "rfe-forms-tdr"},
            {"concept": CHIEF_COMPLAINT, "value": "Fièvre depuis trois jours", "display": "sent back as read"},
            {"concept": HIV_DIAGNOSIS_DATE, "value": "2024-03-05"},
            {"concept": cbc, "groupMembers": [{"concept": haemoglobin, "value": "9.5"}]}
        ]
    });
    let r = c
        .post(&format!("{REST}/encounter"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let enc = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["visit"]["uuid"], visit_uuid);

    let full = c.get(&format!("{REST}/encounter/{enc}?v=full")).await;
    let obs = full.body["obs"].as_array().unwrap();
    assert_eq!(obs.len(), 5, "top-level obs only: {obs:?}");
    let find = |concept: &str| {
        obs.iter()
            .find(|o| o["concept"]["uuid"] == concept)
            .unwrap()
            .clone()
    };
    assert_eq!(find(&temperature)["value"], 38.6);
    assert_eq!(find(&malaria_rdt)["value"]["uuid"], positive.as_str());
    assert_eq!(find(&malaria_rdt)["formFieldPath"], "rfe-forms-tdr");
    assert_eq!(find(CHIEF_COMPLAINT)["value"], "Fièvre depuis trois jours");
    assert_eq!(
        find(HIV_DIAGNOSIS_DATE)["value"],
        "2024-03-05T00:00:00.000+0000"
    );
    let group_uuid = find(&cbc)["uuid"].as_str().unwrap().to_string();
    let group = c.get(&format!("{REST}/obs/{group_uuid}?v=full")).await.body;
    assert_eq!(group["groupMembers"][0]["value"], 9.5, "{group}");
    assert_eq!(
        group["groupMembers"][0]["obsGroup"]["uuid"],
        group_uuid.as_str()
    );
    assert_eq!(
        full.body["encounterProviders"][0]["provider"]["uuid"],
        provider.as_str()
    );
    assert_eq!(
        full.body["encounterProviders"][0]["encounterRole"]["uuid"],
        CLINICIAN_ROLE
    );
    assert!(full.body["auditInfo"]["dateCreated"].is_string());

    // The visit nests it; the patient's encounters and obs list it, newest first.
    let v = c
        .get(&format!(
            "{REST}/visit/{visit_uuid}?v=custom:(uuid,encounters:(uuid,obs:(uuid,value)))"
        ))
        .await;
    assert_eq!(v.body["encounters"][0]["uuid"], enc.as_str());
    let list = c
        .get(&format!("{REST}/encounter?patient={p}&totalCount=true"))
        .await;
    assert_eq!(list.body["totalCount"], 1);
    let by_concept = c
        .get(&format!("{REST}/obs?patient={p}&concept={temperature}"))
        .await;
    assert_eq!(by_concept.body["results"].as_array().unwrap().len(), 1);

    // Edit: a changed value voids the old obs and records a new one pointing back to it.
    let temp_obs = find(&temperature)["uuid"].as_str().unwrap().to_string();
    let complaint_obs = find(CHIEF_COMPLAINT)["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/encounter/{enc}"),
            &json!({"obs": [{"uuid": temp_obs, "concept": temperature, "value": 37.2}, {"uuid": complaint_obs, "voided": true}]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let after = c
        .get(&format!(
            "{REST}/obs?patient={p}&concept={temperature}&v=full"
        ))
        .await;
    let results = after.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["value"], 37.2);
    assert_eq!(results[0]["previousVersion"]["uuid"], temp_obs.as_str());
    // Its history, as the O3 ward app's inpatient notes read it: the obs's creation and
    // creator, and every earlier version (the latest first) with its value.
    let rep = "custom:(uuid,obs:(uuid,concept:(uuid),dateCreated,value:(uuid),previousVersions:(value,dateCreated,creator),creator))";
    let notes = c
        .get(&format!("{REST}/encounter?patient={p}&v={rep}"))
        .await;
    assert_eq!(notes.status, StatusCode::OK, "{:?}", notes.body);
    let edited = notes.body["results"][0]["obs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["concept"]["uuid"] == temperature.as_str())
        .expect("the edited temperature, not null")
        .clone();
    assert_eq!(edited["value"], 37.2);
    assert!(edited["dateCreated"].is_string(), "{edited:?}");
    assert_eq!(edited["creator"]["display"], "admin", "{edited:?}");
    let versions = edited["previousVersions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{versions:?}");
    assert_ne!(versions[0]["value"], 37.2, "{versions:?}");
    assert!(versions[0]["creator"]["uuid"].is_string(), "{versions:?}");
    let old = c.get(&format!("{REST}/obs/{temp_obs}")).await;
    assert_eq!(old.body["voided"], true);
    let with_voided = c
        .get(&format!(
            "{REST}/obs?patient={p}&concept={temperature}&includeAll=true"
        ))
        .await;
    assert_eq!(with_voided.body["results"].as_array().unwrap().len(), 2);
    let enc_now = c.get(&format!("{REST}/encounter/{enc}")).await;
    assert_eq!(enc_now.body["obs"].as_array().unwrap().len(), 4);

    // Void the encounter: it and its obs leave the lists, and are kept.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/encounter/{enc}?reason=wrong%20patient"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let list = c.get(&format!("{REST}/encounter?patient={p}")).await;
    assert_eq!(list.body["results"], json!([]));
    let kept = c.get(&format!("{REST}/encounter/{enc}")).await;
    assert_eq!(kept.body["voided"], true);
    let obs = c.get(&format!("{REST}/obs?patient={p}")).await;
    assert_eq!(obs.body["results"], json!([]));
}

#[tokio::test]
async fn invalid_observations_are_refused_with_the_field_named() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200004").await;
    let temperature = concept_uuid(&st, "DRC-EMR:5001");
    let malaria_rdt = concept_uuid(&st, "DRC-EMR:3040");
    let haemoglobin = concept_uuid(&st, "DRC-EMR:3001");
    let cases = [
        (
            json!({"concept": temperature, "value": 80}),
            "obs[0].value",
            "highest possible",
        ),
        (
            json!({"concept": temperature, "value": "hot"}),
            "obs[0].value",
            "not a number",
        ),
        (
            json!({"concept": malaria_rdt, "value": haemoglobin}),
            "obs[0].value",
            "not one of the answers",
        ),
        (
            json!({"concept": "no-such-concept", "value": 1}),
            "obs[0].concept",
            "does not exist",
        ),
        (json!({"concept": temperature}), "obs[0].value", "no value"),
    ];
    for (obs, field, message) in cases {
        let r = c
            .post(
                &format!("{REST}/encounter"),
                &json!({"patient": p, "encounterType": VITALS_TYPE, "obs": [obs]}).to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{obs}");
        let m = r.body["error"]["fieldErrors"][field][0]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(m.contains(message), "{obs}: {:?}", r.body);
    }
    // Nothing was stored by the refused requests.
    let list = c.get(&format!("{REST}/encounter?patient={p}")).await;
    assert_eq!(list.body["results"], json!([]));

    // An encounter outside its visit, or in another patient's visit, is refused.
    let visit = start_visit(&mut c, &st, &p, &ago(60)).await;
    let r = c
        .post(&format!("{REST}/encounter"), &json!({"patient": p, "encounterType": VITALS_TYPE, "visit": visit["uuid"], "encounterDatetime": ago(120)}).to_string())
        .await;
    assert_eq!(
        r.body["error"]["fieldErrors"]["encounterDatetime"][0]["code"],
        "Encounter.datetimeShouldBeInVisitDatesRange"
    );
    let other = patient(&mut c, &st, "200005").await;
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": other, "encounterType": VITALS_TYPE, "visit": visit["uuid"]})
                .to_string(),
        )
        .await;
    assert_eq!(
        r.body["error"]["fieldErrors"]["visit"][0]["code"],
        "Encounter.visit.patients.dontMatch"
    );
}

#[tokio::test]
async fn clinical_writes_need_their_privileges() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let p = patient(&mut admin, &st, "200006").await;
    let clerk = UserRecord {
        v: 1,
        uuid: "0b6e5a1c-0000-4000-8000-000000000011".into(),
        username: "accueil".into(),
        system_id: "accueil".into(),
        person_uuid: "0b6e5a1c-0000-4000-8000-000000000012".into(),
        person_name: "Agent Accueil".into(),
        password_hash: hash_password("Clerk-pass-1"),
        roles: vec!["Application: Manages Visits".into()],
        properties: Default::default(),
        retired: false,
        failed_logins: 0,
        locked_until: None,
        audit: None,
        retiring: None,
    };
    st.store.put_user(&clerk).unwrap();
    let mut c = Client::new(st.clone());
    c.login("accueil", "Clerk-pass-1").await;
    // Visits are theirs to open; encounters are not.
    start_visit(&mut c, &st, &p, &ago(10)).await;
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": VITALS_TYPE}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Add Encounters")
    );
    let r = c.get(&format!("{REST}/obs?patient={p}")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let mut anon = Client::new(st.clone());
    assert_eq!(
        anon.get(&format!("{REST}/visit?patient={p}")).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn lists_page_newest_first() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200007").await;
    let temperature = concept_uuid(&st, "DRC-EMR:5001");
    for i in 0..5 {
        let r = c
            .post(
                &format!("{REST}/encounter"),
                &json!({"patient": p, "encounterType": VITALS_TYPE, "encounterDatetime": ago(100 - i), "obs": [{"concept": temperature, "value": 36 + i}]}).to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let page = c
        .get(&format!(
            "{REST}/obs?patient={p}&concept={temperature}&limit=2&v=custom:(value)&totalCount=true"
        ))
        .await;
    let values = |b: &Value| {
        b["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["value"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(values(&page.body), [json!(40.0), json!(39.0)]);
    assert_eq!(page.body["totalCount"], 5);
    let next = page.body["links"][0]["uri"].as_str().unwrap();
    assert!(next.contains("startIndex=2"), "{next}");
    let page2 = c
        .get(&format!(
            "{REST}/obs?patient={p}&concept={temperature}&limit=2&v=custom:(value)&startIndex=4"
        ))
        .await;
    assert_eq!(values(&page2.body), [json!(36.0)]);
    assert!(
        page2.body["links"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["rel"] != "next")
    );
}

#[tokio::test]
async fn visits_left_open_too_long_are_ended_by_the_auto_close_job() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let old = patient(&mut c, &st, "200008").await;
    let recent = patient(&mut c, &st, "200009").await;
    let old_visit = start_visit(&mut c, &st, &old, &ago(180)).await;
    let recent_visit = start_visit(&mut c, &st, &recent, &ago(10)).await;
    let r = c
        .post(
            &format!("{REST}/systemsetting/visits.autoCloseVisitTimeout"),
            r#"{"value":"1"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let closed =
        runtime::domains::visit::close_stale_visits(&st.clinic(), chrono::Utc::now()).unwrap();
    assert_eq!(closed, 1);
    let o = c
        .get(&format!(
            "{REST}/visit/{}?v=full",
            old_visit["uuid"].as_str().unwrap()
        ))
        .await;
    assert_ne!(o.body["stopDatetime"], Value::Null);
    assert_eq!(
        o.body["auditInfo"]["changedBy"]["uuid"],
        runtime::store::record::DAEMON_USER
    );
    let r = c
        .get(&format!(
            "{REST}/visit/{}",
            recent_visit["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.body["stopDatetime"], Value::Null);
}

#[tokio::test]
async fn a_backup_restores_every_visit_encounter_and_observation_with_their_indexes() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200010").await;
    let visit = start_visit(&mut c, &st, &p, &ago(60)).await;
    let temperature = concept_uuid(&st, "DRC-EMR:5001");
    let r = c
        .post(&format!("{REST}/encounter"), &json!({"patient": p, "encounterType": VITALS_TYPE, "visit": visit["uuid"], "obs": [{"concept": temperature, "value": 37.0}]}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2: Arc<runtime::http::AppState> =
        state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;
    for path in [
        format!("{REST}/visit?patient={p}&v=full"),
        format!("{REST}/encounter?patient={p}&v=full"),
        format!("{REST}/obs?patient={p}&concept={temperature}&v=full"),
        format!("{REST}/visit?includeInactive=false&v=full"),
    ] {
        let (a, b) = (c.get(&path).await, c2.get(&path).await);
        assert_eq!(
            a.body["results"].as_array().map(Vec::len),
            Some(1),
            "{path}"
        );
        assert_eq!(a.body, b.body, "{path}");
    }
}

#[tokio::test]
async fn repeated_slashes_are_one_as_in_openmrs() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200011").await;
    let r = c
        .get(&format!("/openmrs//ws/rest/v1/visit?patient={p}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c
        .get("/openmrs/ws/rest//v1//encountertype?q=Consultation")
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let names: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["display"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Consultation"]);
}

/// The content's `visits.assignmentHandler` is core's ExistingOrNewVisitAssignmentHandler:
/// an encounter saved without a visit joins the visit holding its time (open or ended), else
/// gets a visit of its own to the end of its day (left open for an encounter of today), of the
/// type `visits.encounterTypeToVisitTypeMapping` gives.
#[tokio::test]
async fn an_encounter_without_a_visit_joins_the_visit_holding_it_or_gets_its_own() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let facility = location_uuid(&st, "Centre de santé Bondeko");
    let reception = location_uuid(&st, "Bondeko - Accueil");
    let p = patient(&mut c, &st, "200091").await;
    let visits_url = format!(
        "{REST}/visit?patient={p}&includeInactive=true&v=custom:(uuid,visitType:(uuid),location:(uuid),startDatetime,stopDatetime)"
    );
    // A register's entry of three days ago: a visit of its own, from its time to the end
    // of its day, at its location, of the type mapped for its encounter type.
    let three_days_ago = (chrono::Utc::now() - chrono::Duration::days(3))
        .format("%Y-%m-%d")
        .to_string();
    let r = c
        .post(&format!("{REST}/encounter"), &json!({"patient": p, "encounterType": VITALS_TYPE,
            "location": reception, "encounterDatetime": format!("{three_days_ago}T09:30:00.000+0000")}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let made = r.body["visit"]["uuid"]
        .as_str()
        .expect("a visit was made")
        .to_string();
    let all = c.get(&visits_url).await.body["results"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["uuid"], made.as_str());
    assert_eq!(all[0]["visitType"]["uuid"], OUTPATIENT);
    assert_eq!(all[0]["location"]["uuid"], reception.as_str());
    assert_eq!(
        all[0]["startDatetime"],
        format!("{three_days_ago}T09:30:00.000+0000")
    );
    assert_eq!(
        all[0]["stopDatetime"],
        format!("{three_days_ago}T23:59:59.999+0000")
    );
    // A second entry of that day, later, joins it (an ended visit holding its time).
    let r = c
        .post(&format!("{REST}/encounter"), &json!({"patient": p, "encounterType": CONSULTATION_TYPE,
            "location": reception, "encounterDatetime": format!("{three_days_ago}T15:00:00.000+0000")}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["visit"]["uuid"], made.as_str());
    // Entries of today: the first gets a visit left open (core would end it at midnight;
    // here no visit ends in the future), which the chart shows as her current visit; the
    // second joins it.
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": VITALS_TYPE, "location": reception}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let todays = r.body["visit"]["uuid"].as_str().unwrap().to_string();
    assert_ne!(todays, made);
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE, "location": reception})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["visit"]["uuid"], todays.as_str());
    let all = c.get(&visits_url).await.body["results"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(all.len(), 2, "{all:?}");
    let v = all.iter().find(|v| v["uuid"] == todays.as_str()).unwrap();
    assert!(v["stopDatetime"].is_null(), "{v:?}");
    let current = c
        .get(&format!(
            "{REST}/visit?patient={p}&includeInactive=false&v=custom:(uuid)"
        ))
        .await;
    assert_eq!(
        current.body["results"][0]["uuid"],
        todays.as_str(),
        "{:?}",
        current.body
    );
    // So another visit for her today overlaps it, and the rule of overlapping visits (the
    // content allows none) refuses it: reception carries on with this one.
    let later = (chrono::Utc::now() + chrono::Duration::seconds(2))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string();
    let r = c
        .post(&format!("{REST}/visit"), &json!({"patient": p, "visitType": OUTPATIENT, "location": facility, "startDatetime": later}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(r.body.to_string().contains("overlaps"), "{:?}", r.body);
    // An encounter at a location the visit's does not hold takes no part in it: one at the
    // whole facility (reception's parent) three days ago needs a visit of its own, which
    // overlaps that day's.
    let elsewhere = facility.clone();
    let r = c
        .post(&format!("{REST}/encounter"), &json!({"patient": p, "encounterType": CONSULTATION_TYPE,
            "location": elsewhere, "encounterDatetime": format!("{three_days_ago}T16:00:00.000+0000")}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body.to_string().contains("overlaps"),
        "a visit of its own, overlapping that day's: {:?}",
        r.body
    );
}

/// Times are compared to the second, as OpenMRS compares them (its databases keep whole
/// seconds): a visit started at 10:00:00.600 holds an encounter sent as 10:00:00 without
/// milliseconds (the O3 ward suite starts a visit, then at once posts an admission request
/// without a visit, `dayjs().format()`), and a visit may end within the second it started.
#[tokio::test]
async fn visit_times_hold_encounters_to_the_second() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let facility = location_uuid(&st, "Centre de santé Bondeko");
    let p = patient(&mut c, &st, "200092").await;
    let base = chrono::Utc::now() - chrono::Duration::minutes(5);
    let second = base.format("%Y-%m-%dT%H:%M:%S").to_string();
    let r = c
        .post(&format!("{REST}/visit"), &json!({"patient": p, "visitType": OUTPATIENT, "location": facility, "startDatetime": format!("{second}.600+0000")}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE,
            "location": facility, "encounterDatetime": format!("{second}+00:00")})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["visit"]["uuid"], visit.as_str(), "{:?}", r.body);
    // Ended 400 ms before its start, within the same second: one second, as OpenMRS keeps it.
    let r = c
        .post(
            &format!("{REST}/visit/{visit}"),
            &json!({"stopDatetime": format!("{second}.200+0000")}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // A second earlier is before its start, and refused.
    let before = (base - chrono::Duration::seconds(1))
        .format("%Y-%m-%dT%H:%M:%S.999+0000")
        .to_string();
    let r = c
        .post(
            &format!("{REST}/visit/{visit}"),
            &json!({"stopDatetime": before}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
}

/// The handler follows its setting: an encounter type the mapping leaves out is refused a
/// visit with core's message, core's other handlers make none (the existing-visit one joins
/// the open visit), and a user who may not add visits gets none made for her.
#[tokio::test]
async fn the_visit_assignment_follows_its_settings_and_privileges() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let reception = location_uuid(&st, "Bondeko - Accueil");
    let p = patient(&mut c, &st, "200092").await;
    let with_visit = patient(&mut c, &st, "200093").await;
    let open = start_visit(&mut c, &st, &with_visit, &ago(60)).await;
    let vitals = |who: &str| {
        json!({"patient": who, "encounterType": VITALS_TYPE, "location": reception}).to_string()
    };
    set_setting(
        &mut c,
        "visits.encounterTypeToVisitTypeMapping",
        "91edcf31-cf56-43c3-a7d8-b8097fbd0035:f19c6fdb-bd43-41e7-bb4c-cc892e489c25",
    )
    .await;
    let r = c.post(&format!("{REST}/encounter"), &vitals(&p)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not have a mapping for encounter type: Signes vitaux"),
        "{:?}",
        r.body
    );
    // Core reads the mapping's types by uuid (or database id), not by name.
    set_setting(
        &mut c,
        "visits.encounterTypeToVisitTypeMapping",
        "Signes vitaux:Consultation externe",
    )
    .await;
    let r = c.post(&format!("{REST}/encounter"), &vitals(&p)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // An encounter of no known type gets its field's refusal, not the mapping's.
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": "Inconnu", "location": reception}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["fieldErrors"]["encounterType"].is_array(),
        "{:?}",
        r.body
    );
    set_setting(&mut c, "visits.encounterTypeToVisitTypeMapping", "").await;
    for (handler, joins) in [
        ("org.openmrs.api.handler.NoVisitAssignmentHandler", false),
        ("", false),
        (
            "org.openmrs.api.handler.ExistingVisitAssignmentHandler",
            true,
        ),
    ] {
        set_setting(&mut c, "visits.assignmentHandler", handler).await;
        let r = c.post(&format!("{REST}/encounter"), &vitals(&p)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        assert!(
            r.body["visit"].is_null(),
            "{handler}: no visit holds her encounter: {:?}",
            r.body
        );
        let r = c
            .post(&format!("{REST}/encounter"), &vitals(&with_visit))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        if joins {
            assert_eq!(r.body["visit"]["uuid"], open["uuid"], "{handler}");
        } else {
            assert!(r.body["visit"].is_null(), "{handler}: {:?}", r.body);
        }
    }
    set_setting(
        &mut c,
        "visits.assignmentHandler",
        "org.openmrs.api.handler.ExistingOrNewVisitAssignmentHandler",
    )
    .await;
    // A clerk who adds encounters, not visits.
    let role = json!({"name": "Saisie sans visites", "description": "Encode des rencontres",
        "privileges": [{"name": "Add Encounters"}, {"name": "Get Patients"}]});
    let r = c.post(&format!("{REST}/role"), &role.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let body = json!({"username": "saisie2", "password": "Saisie-pass-2026",
        "person": {"names": [{"givenName": "Paul", "familyName": "Mwamba"}], "gender": "M"},
        "roles": ["Saisie sans visites"]});
    let r = c.post(&format!("{REST}/user"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut clerk = Client::new(st.clone());
    clerk.login("saisie2", "Saisie-pass-2026").await;
    let before = c.get(&format!("{REST}/encounter?patient={p}")).await.body["results"]
        .as_array()
        .unwrap()
        .len();
    let r = clerk.post(&format!("{REST}/encounter"), &vitals(&p)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    assert!(r.body.to_string().contains("Add Visits"), "{:?}", r.body);
    let after = c.get(&format!("{REST}/encounter?patient={p}")).await.body["results"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after, "the refused encounter was not stored");
    // With the mapping empty, the administrator's entry gets the first visit type.
    let first = st
        .catalog
        .load()
        .content
        .visit_types
        .iter()
        .find(|t| !t.retired)
        .unwrap()
        .uuid
        .clone();
    let r = c
        .post(
            &format!("{REST}/encounter?v=custom:(visit:(visitType:(uuid)))"),
            &vitals(&p),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["visit"]["visitType"]["uuid"], first.as_str());
}

#[tokio::test]
async fn vitals_saved_without_a_visit_join_the_open_visit_and_read_back_through_fhir() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200012").await;
    let visit = start_visit(&mut c, &st, &p, &ago(60)).await;
    let temperature = concept_uuid(&st, "DRC-EMR:5001");
    let pulse = concept_uuid(&st, "DRC-EMR:5004");
    // The O3 vitals form sends no visit and no date.
    let r = c
        .post(&format!("{REST}/encounter"), &json!({"patient": p, "encounterType": VITALS_TYPE, "obs": [{"concept": temperature, "value": 39.2}, {"concept": pulse, "value": 80}]}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["visit"]["uuid"], visit["uuid"]);
    let enc = r.body["uuid"].as_str().unwrap().to_string();

    let url = format!(
        "/openmrs/ws/fhir2/R4/Observation?subject:Patient={p}&code={temperature}%2C{pulse}&_summary=data&_sort=-date&_count=1"
    );
    let b = c.get(&url).await;
    assert_eq!(b.status, StatusCode::OK, "{:?}", b.body);
    assert_eq!(b.body["resourceType"], "Bundle");
    assert_eq!(b.body["total"], 2);
    assert!(
        b.body["link"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["relation"] == "next")
    );
    let next = c.get(&format!("{url}&_getpagesoffset=1")).await;
    let mut seen: Vec<Value> = vec![
        b.body["entry"][0]["resource"].clone(),
        next.body["entry"][0]["resource"].clone(),
    ];
    seen.sort_by_key(|o| o["code"]["coding"][0]["code"].as_str().unwrap().to_string());
    let t = seen
        .iter()
        .find(|o| o["code"]["coding"][0]["code"] == temperature.as_str())
        .unwrap();
    assert_eq!(t["valueQuantity"]["value"], 39.2);
    assert_eq!(t["valueQuantity"]["unit"], "°C");
    assert_eq!(t["encounter"]["reference"], format!("Encounter/{enc}"));
    assert_eq!(
        t["interpretation"][0]["coding"][0]["code"], "H",
        "39.2 °C is above the normal range"
    );
    let normal = t["referenceRange"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"]["coding"][0]["code"] == "normal")
        .unwrap();
    assert_eq!(normal["high"]["value"], 37.5);
    let pulse_obs = seen
        .iter()
        .find(|o| o["code"]["coding"][0]["code"] == pulse.as_str())
        .unwrap();
    assert_eq!(pulse_obs["interpretation"][0]["coding"][0]["code"], "N");

    let e = c
        .get(&format!("/openmrs/ws/fhir2/R4/Encounter?subject={p}"))
        .await;
    assert_eq!(e.body["total"], 1);
    assert_eq!(
        e.body["entry"][0]["resource"]["partOf"]["reference"],
        format!("Encounter/{}", visit["uuid"].as_str().unwrap())
    );
    // The form engine asks for the previous encounter of its form's type only.
    let by_type = |t: &str| {
        format!(
            "/openmrs/ws/fhir2/R4/Encounter?patient={p}&_sort=-date&_count=1&type={t}&_summary=data"
        )
    };
    assert_eq!(c.get(&by_type(VITALS_TYPE)).await.body["total"], 1);
    assert_eq!(c.get(&by_type(CONSULTATION_TYPE)).await.body["total"], 0);
    // And the latest value of a concept in encounters of one type.
    let latest = |t: &str| {
        format!(
            "/openmrs/ws/fhir2/R4/Observation?patient={p}&code={temperature}&encounter.type={t}&_sort=-date&_count=1"
        )
    };
    let r = c.get(&latest(VITALS_TYPE)).await;
    assert_eq!(r.body["total"], 1, "{:?}", r.body);
    assert_eq!(
        r.body["entry"][0]["resource"]["valueQuantity"]["value"],
        39.2
    );
    assert_eq!(c.get(&latest(CONSULTATION_TYPE)).await.body["total"], 0);
    let missing = c.get("/openmrs/ws/fhir2/R4/Observation/no-such-obs").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

/// The vitals read their concepts by CIEL uuid and their ranges from
/// `conceptreferencerange/?patient=…&concept=…` (with the slash before `?`).
#[tokio::test]
async fn vital_signs_carry_ciel_identifiers_and_their_reference_ranges() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let patient = patient(&mut c, &st, "100777").await;
    // The standard concept answers by its CIEL uuid and by its CIEL mapping, with the
    // project's French name.
    const TEMPERATURE: &str = "5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    assert_eq!(concept_uuid(&st, "CIEL:5088"), TEMPERATURE);
    assert_eq!(concept_uuid(&st, "DRC-EMR:5001"), TEMPERATURE);
    let r = c
        .get(&format!(
            "{REST}/concept/{TEMPERATURE}?v=custom:(uuid,display,mappings:(display))"
        ))
        .await;
    assert_eq!(r.body["display"], "Température (°C)");
    let mappings: Vec<&str> = r.body["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["display"].as_str())
        .collect();
    assert!(mappings.contains(&"CIEL: 5088"), "{mappings:?}");

    // Ranges for numeric concepts only; the set and an unknown reference are left out.
    let r = c
        .get(&format!(
            "{REST}/conceptreferencerange/?patient={patient}&concept={TEMPERATURE},CIEL:5087,1114AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,CIEL:999999&v=full"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let results = r.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["concept"], TEMPERATURE);
    assert_eq!(results[0]["lowNormal"], 36.5);
    assert_eq!(results[0]["hiNormal"], 37.5);
    assert_eq!(results[0]["hiAbsolute"], 43.0);
    assert_eq!(results[0]["units"], "°C");
    assert_eq!(results[0]["allowDecimal"], true);
    assert_eq!(
        results[1]["concept"],
        "5087AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    );
    assert_eq!(results[1]["allowDecimal"], false);

    // Both parameters are needed; an unknown patient is not found.
    let r = c
        .get(&format!(
            "{REST}/conceptreferencerange?concept={TEMPERATURE}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("patient")
    );
    let r = c
        .get(&format!(
            "{REST}/conceptreferencerange?patient=00000000-0000-0000-0000-000000000000&concept={TEMPERATURE}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// A patient of the given birth date and sex, registered at reception.
async fn patient_born(
    c: &mut Client,
    st: &runtime::http::AppState,
    id: &str,
    birthdate: &str,
    gender: &str,
) -> String {
    let mut body: Value = serde_json::from_str(&patient_body(st, "Bébé", "Mukendi", id)).unwrap();
    body["person"]["birthdate"] = json!(birthdate);
    body["person"]["gender"] = json!(gender);
    let r = send_json(c, "POST", &format!("{REST}/patient"), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body["uuid"].as_str().unwrap().to_string()
}

/// The content's ranges by patient (`conceptreferencerange/`: a child's fast breathing, as
/// WHO's IMCI counts it) apply to the patients their criteria select: the range the chart
/// reads, and the interpretation recorded when an observation is saved, which FHIR gives
/// as fhir2 does (the O3 vitals table reads its display).
#[tokio::test]
async fn a_childs_vital_signs_are_judged_by_the_range_for_her_age() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    const RESPIRATORY_RATE: &str = "5242AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let today = chrono::Utc::now().date_naive();
    let toddler_birth = (today - chrono::Months::new(18))
        .format("%Y-%m-%d")
        .to_string();
    let infant_birth = (today - chrono::Months::new(5))
        .format("%Y-%m-%d")
        .to_string();
    let toddler = patient_born(&mut c, &st, "100781", &toddler_birth, "F").await;
    let infant = patient_born(&mut c, &st, "100782", &infant_birth, "M").await;
    let adult = patient(&mut c, &st, "100783").await;

    let range = |body: &Value| {
        let r = &body["results"][0];
        (
            r["uuid"].as_str().unwrap().to_string(),
            r["hiNormal"].clone(),
            r["lowNormal"].clone(),
        )
    };
    let mut seen = Vec::new();
    for p in [&toddler, &infant, &adult] {
        let r = c
            .get(&format!(
                "{REST}/conceptreferencerange?patient={p}&concept=CIEL:5242&v=full"
            ))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(r.body["results"][0]["concept"], RESPIRATORY_RATE);
        seen.push(range(&r.body));
    }
    // Fast breathing from 40 a minute at 18 months, from 50 at five months; an adult's is
    // the concept's own range (12 to 20), under the concept's uuid.
    assert_eq!(seen[0].0, "d19c9f51-2e93-4aaf-b75b-0dc5c02cc20c");
    assert_eq!(seen[0].1, 39.0);
    assert_eq!(seen[1].0, "2b6a5f15-8e31-4a32-94cb-dc59911d6492");
    assert_eq!(seen[1].1, 49.0);
    assert_eq!(
        seen[2],
        (RESPIRATORY_RATE.to_string(), json!(20.0), json!(12.0))
    );

    // 30 breaths a minute: normal for the toddler, high for the adult; 45 is fast for the
    // toddler, not for the infant. The interpretation is kept with the observation.
    let mut saved = Vec::new();
    for (p, value) in [(&toddler, 30), (&adult, 30), (&toddler, 45), (&infant, 45)] {
        let r = c
            .post(
                &format!("{REST}/obs"),
                &json!({"person": p, "concept": RESPIRATORY_RATE, "obsDatetime": ago(5), "value": value}).to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        saved.push(r.body["interpretation"].clone());
    }
    assert_eq!(
        saved,
        [
            json!("NORMAL"),
            json!("HIGH"),
            json!("HIGH"),
            json!("NORMAL")
        ]
    );

    // FHIR gives it as fhir2 does: the v3 code, and the name capitalised word by word.
    let r = c
        .get(&format!(
            "/openmrs/ws/fhir2/R4/Observation?subject:Patient={toddler}&code={RESPIRATORY_RATE}&_sort=-date"
        ))
        .await;
    let codes: Vec<(Value, Value)> = r.body["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let coding = &e["resource"]["interpretation"][0]["coding"][0];
            (coding["code"].clone(), coding["display"].clone())
        })
        .collect();
    assert!(codes.contains(&(json!("H"), json!("High"))), "{codes:?}");
    assert!(codes.contains(&(json!("N"), json!("Normal"))), "{codes:?}");

    // A client's own interpretation stands, and reads back as fhir2 writes it.
    let r = c
        .post(
            &format!("{REST}/obs"),
            &json!({"person": adult, "concept": RESPIRATORY_RATE, "obsDatetime": ago(1), "value": 60, "interpretation": "CRITICALLY_HIGH"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = c
        .get(&format!(
            "/openmrs/ws/fhir2/R4/Observation/{}",
            r.body["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.body["interpretation"][0]["coding"][0]["code"], "HH");
    assert_eq!(
        r.body["interpretation"][0]["coding"][0]["display"],
        "Critically High"
    );
    assert_eq!(r.body["interpretation"][0]["text"], "Critically High");
}

/// The form engine reads a saved encounter back in its own representation before editing
/// it; every provider must come back as an object (a null one breaks the edit).
#[tokio::test]
async fn the_form_engine_reads_back_providers_and_roles() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200077").await;
    let session = c.get(&format!("{REST}/session")).await;
    let provider = session.body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE, "location": location_uuid(&st, "Centre de santé Bondeko"),
                    "encounterProviders": [{"provider": provider, "encounterRole": CLINICIAN_ROLE}],
                    "obs": [{"concept": CHIEF_COMPLAINT, "value": "Toux", "formFieldNamespace": "rfe-forms", "formFieldPath": "rfe-forms-chiefComplaint"}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap();
    let rep = "custom:(uuid,encounterDatetime,encounterType:(uuid,name,description),location:(uuid,name),patient:(uuid,display),encounterProviders:(uuid,provider:(uuid,name),encounterRole:(uuid,name)),orders:(uuid,display,concept:(uuid,display),voided),diagnoses:(uuid,certainty,condition,formFieldPath,formFieldNamespace,display,rank,voided,diagnosis:(coded:(uuid,display))),obs:(uuid,obsDatetime,comment,voided,groupMembers,formFieldNamespace,formFieldPath,concept:(uuid,name:(uuid,name)),value:(uuid,name:(uuid,name),names:(uuid,conceptNameType,name))))";
    let r = c.get(&format!("{REST}/encounter/{uuid}?v={rep}")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let ep = &r.body["encounterProviders"][0];
    assert_eq!(ep["provider"]["uuid"], provider.as_str(), "{ep}");
    assert_eq!(ep["provider"]["name"], "Super User");
    assert_eq!(ep["encounterRole"]["uuid"], CLINICIAN_ROLE);
    assert_eq!(r.body["obs"][0]["value"], "Toux");

    // The edit sends the encounter back as read: the same patient passes, another does not.
    let obs_uuid = r.body["obs"][0]["uuid"].as_str().unwrap().to_string();
    let mut edit = r.body.clone();
    edit["obs"] = json!([{"uuid": obs_uuid, "value": "Toux et fièvre", "formFieldNamespace": "rfe-forms", "formFieldPath": "rfe-forms-chiefComplaint"}]);
    edit["location"] = json!(location_uuid(&st, "Centre de santé Bondeko"));
    let e = edit.as_object_mut().unwrap();
    e.remove("resourceVersion");
    let r = c
        .post(
            &format!("{REST}/encounter/{uuid}?v={rep}"),
            &edit.to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let values: Vec<&Value> = r.body["obs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["value"])
        .collect();
    assert_eq!(values, [&json!("Toux et fièvre")]);
    let other = patient(&mut c, &st, "200078").await;
    let r = c
        .post(
            &format!("{REST}/encounter/{uuid}"),
            &json!({"patient": {"uuid": other}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

/// Diagnoses inside an encounter are refused (they go through `patientdiagnoses`), never
/// dropped; an order the encounter carries is checked as any order, and a malformed one
/// refuses the whole encounter.
#[tokio::test]
async fn diagnoses_in_an_encounter_are_refused_and_malformed_orders_refuse_it() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200090").await;
    for (field, named) in [("orders", "certainty"), ("diagnoses", "diagnoses")] {
        let r = c
            .post(
                &format!("{REST}/encounter"),
                &json!({"patient": p, "encounterType": CONSULTATION_TYPE, field: [{"certainty": "CONFIRMED"}]}).to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{field}: {:?}", r.body);
        assert!(
            r.body["error"]["message"].as_str().unwrap().contains(named),
            "{:?}",
            r.body
        );
    }
    let none = c.get(&format!("{REST}/encounter?patient={p}")).await;
    assert_eq!(none.body["results"].as_array().unwrap().len(), 0);
    // Empty lists, as the form engine sends them, pass.
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE, "orders": [], "diagnoses": []}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

#[tokio::test]
async fn the_obs_tree_gives_a_sets_members_with_the_patients_values_oldest_first() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200077").await;
    let visit = start_visit(&mut c, &st, &p, &ago(120)).await;
    let temperature = concept_uuid(&st, "CIEL:5088");
    for (minutes, value) in [(90, 38.4), (30, 37.1)] {
        let r = c
            .post(&format!("{REST}/encounter"), &json!({"patient": p, "encounterType": VITALS_TYPE, "visit": visit["uuid"], "encounterDatetime": ago(minutes), "obs": [{"concept": temperature, "value": value, "obsDatetime": ago(minutes)}]}).to_string())
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let vitals_set = concept_uuid(&st, "CIEL:1114");
    let r = c
        .get(&format!("{REST}/obstree?patient={p}&concept={vitals_set}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert!(r.body["display"].is_string());
    assert!(r.body.get("obs").is_none(), "a set node has no obs");
    let leaves = r.body["subSets"].as_array().unwrap();
    let t = leaves
        .iter()
        .find(|l| l["conceptUuid"] == temperature.as_str())
        .expect("temperature is a member of the vitals set");
    assert_eq!(t["datatype"], "Numeric");
    assert_eq!(t["units"], "°C");
    assert!(
        t["hiNormal"].is_number() && t["lowNormal"].is_number(),
        "{t}"
    );
    let values: Vec<&str> = t["obs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["38.4", "37.1"]);
    assert!(
        t["obs"][0]["obsDatetime"]
            .as_str()
            .unwrap()
            .ends_with("+0000")
    );
    // Members without data are leaves with an empty list.
    assert!(leaves.iter().any(|l| l["obs"] == json!([])));
    // A concept that is not a set is wrapped as the root's only leaf.
    let r = c
        .get(&format!("{REST}/obstree?patient={p}&concept={temperature}"))
        .await;
    assert_eq!(r.body["subSets"][0]["conceptUuid"], temperature.as_str());
    assert_eq!(r.body["subSets"][0]["obs"].as_array().unwrap().len(), 2);
    // Unknown patient or concept: 404; missing parameters: 400.
    assert_eq!(
        c.get(&format!(
            "{REST}/obstree?patient=nobody&concept={vitals_set}"
        ))
        .await
        .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get(&format!("{REST}/obstree?patient={p}&concept=NOPE:1"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get(&format!("{REST}/obstree?patient={p}")).await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn a_concept_set_is_a_fhir_value_set() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let vitals_set = concept_uuid(&st, "CIEL:1114");
    let r = c
        .get(&format!("/openmrs/ws/fhir2/R4/ValueSet/{vitals_set}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["resourceType"], "ValueSet");
    assert_eq!(r.body["id"], vitals_set.as_str());
    assert_eq!(r.body["title"], "Signes vitaux");
    let include = r.body["compose"]["include"].as_array().unwrap();
    let local = include.iter().find(|i| i.get("system").is_none()).unwrap();
    assert!(local["concept"].as_array().unwrap().iter().any(|c| {
        c["code"] == "5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" && c["display"] == "Température (°C)"
    }));
    let ciel = include
        .iter()
        .find(|i| i["system"] == "https://cielterminology.org")
        .expect("the members' CIEL codes");
    assert!(
        ciel["concept"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["code"] == "5088")
    );
    // A concept that is not a set is no ValueSet.
    let r = c
        .get("/openmrs/ws/fhir2/R4/ValueSet/5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["resourceType"], "OperationOutcome");
}

#[tokio::test]
async fn a_patient_with_clinical_records_cannot_be_purged_and_edits_need_their_privileges() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let p = patient(&mut admin, &st, "200016").await;
    start_visit(&mut admin, &st, &p, &ago(30)).await;
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/patient/{p}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("visits still refer to them"),
        "{:?}",
        r.body
    );
    assert!(st.store.patient(&p).unwrap().is_some());

    // A user whose roles grant no patient privileges may neither edit nor delete.
    let nobody = UserRecord {
        v: 1,
        uuid: "0b6e5a1c-0000-4000-8000-000000000021".into(),
        username: "lecteur".into(),
        system_id: "lecteur".into(),
        person_uuid: "0b6e5a1c-0000-4000-8000-000000000022".into(),
        person_name: "Agent Lecteur".into(),
        password_hash: hash_password("Reader-pass-1"),
        roles: vec![],
        properties: Default::default(),
        retired: false,
        failed_logins: 0,
        locked_until: None,
        audit: None,
        retiring: None,
    };
    st.store.put_user(&nobody).unwrap();
    let mut c = Client::new(st.clone());
    c.login("lecteur", "Reader-pass-1").await;
    let r = c
        .post(
            &format!("{REST}/patient/{p}"),
            &json!({"person": {"gender": "M"}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Edit Patients")
    );
    let r = c
        .send("DELETE", &format!("{REST}/patient/{p}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{p}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Purge Patients")
    );
}

/// Lists write their items straight to bytes (`repr::render_to`), single reads build a
/// JSON tree (`repr::render`): both must give the same text, in every representation,
/// nested observations, obs groups, coded values and unknown nested properties included.
#[tokio::test]
async fn a_listed_encounter_is_written_exactly_as_it_is_read_alone() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200011").await;
    let visit = start_visit(&mut c, &st, &p, &ago(90)).await;
    let cbc = concept_uuid(&st, "DRC-EMR:3058");
    let haemoglobin = concept_uuid(&st, "DRC-EMR:3001");
    let body = json!({
        "patient": p,
        "encounterType": CONSULTATION_TYPE,
        "encounterDatetime": ago(30),
        "visit": visit["uuid"],
        "location": location_uuid(&st, "Centre de santé Bondeko"),
        "obs": [
            {"concept": concept_uuid(&st, "DRC-EMR:5001"), "value": 38.6},
            {"concept": concept_uuid(&st, "DRC-EMR:3040"), "value": concept_uuid(&st, "DRC-EMR:1004")},
            {"concept": CHIEF_COMPLAINT, "value": "Fièvre \"forte\" depuis trois jours"},
            {"concept": cbc, "groupMembers": [{"concept": haemoglobin, "value": "9.5"}]}
        ]
    });
    let r = c
        .post(&format!("{REST}/encounter"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let enc = r.body["uuid"].as_str().unwrap().to_string();
    for rep in [
        "ref",
        "default",
        "full",
        "custom:(uuid,encounterDatetime,encounterType:(uuid,display),location:(uuid,display),obs:(uuid,concept:(uuid,display),value,obsDatetime,groupMembers))",
        "custom:(uuid,links,obs:(concept:ref,value:full,links,auditInfo),visit:full,patient:ref)",
        "custom:(uuid,obs:(uuid,notAProperty))",
        "custom:(uuid,uuid,display)",
    ] {
        let alone = c.get(&format!("{REST}/encounter/{enc}?v={rep}")).await;
        assert_eq!(alone.status, StatusCode::OK, "{rep}: {:?}", alone.body);
        let listed = c
            .get(&format!("{REST}/encounter?patient={p}&v={rep}"))
            .await;
        assert_eq!(listed.status, StatusCode::OK, "{rep}: {:?}", listed.body);
        assert_eq!(
            listed.body["results"][0].to_string(),
            alone.body.to_string(),
            "{rep}"
        );
    }
    // An unknown property at the top level is refused in both.
    for uri in [
        format!("{REST}/encounter/{enc}?v=custom:(uuid,notAProperty)"),
        format!("{REST}/encounter?patient={p}&v=custom:(uuid,notAProperty)"),
    ] {
        assert_eq!(c.get(&uri).await.status, StatusCode::BAD_REQUEST, "{uri}");
    }
}

/// The results app asks for `category=laboratory`; the category follows the concept's
/// class, as in each Observation's own `category`.
#[tokio::test]
async fn fhir_observations_are_filtered_by_category() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200012").await;
    let visit = start_visit(&mut c, &st, &p, &ago(90)).await;
    let temperature = concept_uuid(&st, "DRC-EMR:5001");
    let haemoglobin = concept_uuid(&st, "DRC-EMR:3001");
    {
        let catalog = st.catalog.load();
        assert_eq!(catalog.concept(&temperature).unwrap().class, "Finding");
        assert_eq!(catalog.concept(&haemoglobin).unwrap().class, "Test");
    }
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE, "visit": visit["uuid"], "encounterDatetime": ago(30),
                "obs": [{"concept": temperature, "value": 37.9}, {"concept": haemoglobin, "value": 11.2}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let codes = |body: &Value| -> Vec<String> {
        body["entry"]
            .as_array()
            .map(|e| {
                e.iter()
                    .map(|e| {
                        e["resource"]["code"]["coding"][0]["code"]
                            .as_str()
                            .unwrap()
                            .to_string()
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let search = |q: &str| format!("/openmrs/ws/fhir2/R4/Observation?subject:Patient={p}&{q}");
    let lab = c.get(&search("category=laboratory")).await;
    assert_eq!(lab.status, StatusCode::OK, "{:?}", lab.body);
    assert_eq!(codes(&lab.body), vec![haemoglobin.clone()]);
    assert_eq!(lab.body["total"], 1);
    assert_eq!(
        lab.body["entry"][0]["resource"]["category"][0]["coding"][0]["code"],
        "laboratory"
    );
    let vitals = c
        .get(&search(
            "category=http://terminology.hl7.org/CodeSystem/observation-category%7Cvital-signs",
        ))
        .await;
    assert_eq!(codes(&vitals.body), vec![temperature.clone()]);
    let both = c.get(&search("category=laboratory,vital-signs")).await;
    assert_eq!(both.body["total"], 2);
    // With codes, the category narrows them; a code outside it matches nothing.
    let narrowed = c
        .get(&search(&format!(
            "category=laboratory&code={temperature},{haemoglobin}"
        )))
        .await;
    assert_eq!(codes(&narrowed.body), vec![haemoglobin.clone()]);
    let none = c
        .get(&search(&format!("category=laboratory&code={temperature}")))
        .await;
    assert_eq!(none.status, StatusCode::OK);
    assert_eq!(none.body["total"], 0, "{:?}", none.body);
    assert_eq!(codes(&none.body), Vec::<String>::new());
}

#[tokio::test]
async fn a_sticky_note_is_a_free_standing_text_obs_read_back_with_its_author() {
    // The O3 chart's sticky note: a text obs of CIEL 165095 without an encounter, listed
    // with the properties the note reads (a form's answer has a namespace and path).
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200013").await;
    let note = concept_uuid(&st, "CIEL:165095");
    assert_eq!(note, "165095AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    let r = c
        .post(
            &format!("{REST}/obs"),
            &json!({"person": p, "concept": note, "value": "Vit avec sa tante", "obsDatetime": ago(1)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let visit = start_visit(&mut c, &st, &p, &ago(30)).await;
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": CONSULTATION_TYPE, "visit": visit["uuid"],
                "obs": [{"concept": note, "value": "Dans un formulaire", "formFieldNamespace": "rfe-forms", "formFieldPath": "rfe-forms-note"}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = c
        .get(&format!("{REST}/obs?patient={p}&concept={note}&v=custom:(uuid,value,obsDatetime,encounter:(uuid),formNamespaceAndPath,auditInfo:(creator:(display)))"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let results = r.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{results:?}");
    let free = results
        .iter()
        .find(|o| o["value"] == "Vit avec sa tante")
        .unwrap();
    assert_eq!(free["formNamespaceAndPath"], Value::Null);
    assert_eq!(free["encounter"], Value::Null);
    assert_eq!(free["auditInfo"]["creator"]["display"], "admin");
    let in_form = results
        .iter()
        .find(|o| o["value"] == "Dans un formulaire")
        .unwrap();
    assert_eq!(in_form["formNamespaceAndPath"], "rfe-forms^rfe-forms-note");
}

/// webservices.rest accepts `voided` on every update of a data resource: the O3 projects'
/// own end-to-end helpers clear a patient's active visits with `POST visit/{uuid}
/// {"voided": true}` and expect them gone. An update that says so voids the visit as
/// DELETE does (its encounters and their observations with it); `voided: false` restores
/// the visit; an encounter is voided the same way, with the reason given.
#[tokio::test]
async fn visits_and_encounters_are_voided_through_an_update() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200078").await;
    let visit = start_visit(&mut c, &st, &p, &ago(30)).await;
    let v = visit["uuid"].as_str().unwrap().to_string();
    let temperature = concept_uuid(&st, "DRC-EMR:5001");
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": VITALS_TYPE,
            "visit": {"uuid": v}, "obs": [{"concept": temperature, "value": 37.9}]})
            .to_string(),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "a visit given as an object: {:?}",
        r.body
    );
    let e = r.body["uuid"].as_str().unwrap().to_string();

    let r = c
        .post(
            &format!("{REST}/visit/{v}"),
            &json!({"voided": true}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["voided"], true);
    let active = c
        .get(&format!("{REST}/visit?patient={p}&includeInactive=false"))
        .await;
    assert_eq!(
        active.body["results"],
        json!([]),
        "the voided visit is no longer active"
    );
    let r = c.get(&format!("{REST}/encounter/{e}")).await;
    assert_eq!(r.body["voided"], true, "its encounter went with it");
    let r = c
        .get(&format!("{REST}/obs?patient={p}&concept={temperature}"))
        .await;
    assert_eq!(
        r.body["results"],
        json!([]),
        "and the encounter's observations"
    );
    // A new visit can start: nothing overlaps a voided one.
    let again = start_visit(&mut c, &st, &p, &ago(10)).await;

    // Restoring it by an update checks it again: it would overlap the new visit.
    let r = c
        .post(
            &format!("{REST}/visit/{v}"),
            &json!({"voided": "false"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(r.body.to_string().contains("overlaps"), "{:?}", r.body);

    // An encounter, with the reason the client gives.
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": p, "encounterType": VITALS_TYPE,
            "visit": again["uuid"], "obs": [{"concept": temperature, "value": 38.4}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let e2 = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/encounter/{e2}"),
            &json!({"voided": true, "voidReason": "wrong patient"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["voided"], true);
    let r = c
        .get(&format!(
            "{REST}/obs?patient={p}&concept={temperature}&includeAll=true&v=full"
        ))
        .await;
    let reasons: Vec<&Value> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["value"] == json!(38.4))
        .map(|o| &o["voided"])
        .collect();
    assert_eq!(
        reasons,
        vec![&json!(true)],
        "its observation is voided with it"
    );
    // Anything but true or false is refused.
    let r = c
        .post(
            &format!("{REST}/encounter/{e2}"),
            &json!({"voided": "yes"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

const FHIR: &str = "/openmrs/ws/fhir2/R4";

#[tokio::test]
async fn fhir_finds_observations_by_value_group_and_newest_and_encounters_by_date_place_and_provider()
 {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "200099").await;
    let visit = start_visit(&mut c, &st, &p, &ago(90)).await;
    let visit_uuid = visit["uuid"].as_str().unwrap().to_string();
    let temperature = concept_uuid(&st, "DRC-EMR:5001");
    let malaria_rdt = concept_uuid(&st, "DRC-EMR:3040");
    let positive = concept_uuid(&st, "DRC-EMR:1004");
    let cbc = concept_uuid(&st, "DRC-EMR:3058");
    let haemoglobin = concept_uuid(&st, "DRC-EMR:3001");
    let here = location_uuid(&st, "Centre de santé Bondeko");
    let provider = c.get(&format!("{REST}/session")).await.body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let first = json!({
        "patient": p, "encounterType": CONSULTATION_TYPE, "encounterDatetime": ago(30),
        "visit": visit_uuid, "location": here,
        "encounterProviders": [{"provider": provider, "encounterRole": CLINICIAN_ROLE}],
        "obs": [
            {"concept": temperature, "value": 38.6},
            {"concept": malaria_rdt, "value": positive},
            {"concept": CHIEF_COMPLAINT, "value": "Fièvre depuis trois jours"},
            {"concept": HIV_DIAGNOSIS_DATE, "value": "2024-03-05"},
            {"concept": cbc, "groupMembers": [{"concept": haemoglobin, "value": "9.5"}]}
        ]
    });
    let r = c
        .post(&format!("{REST}/encounter"), &first.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let first = r.body["uuid"].as_str().unwrap().to_string();
    let second = json!({
        "patient": p, "encounterType": VITALS_TYPE, "encounterDatetime": ago(20),
        "visit": visit_uuid, "location": here,
        "obs": [{"concept": temperature, "value": 37.2}]
    });
    let r = c
        .post(&format!("{REST}/encounter"), &second.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let second = r.body["uuid"].as_str().unwrap().to_string();

    let search = async |c: &mut Client, q: &str| {
        let r = c.get(&format!("{FHIR}/{q}")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}: {:?}", r.body);
        r.body
    };
    let values = |b: &Value| -> Vec<Value> {
        b["entry"]
            .as_array()
            .map(|e| {
                e.iter()
                    .map(|x| x["resource"]["valueQuantity"]["value"].clone())
                    .collect()
            })
            .unwrap_or_default()
    };
    // By a number, with a prefix, and in the concept's units (as written, or UCUM).
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-quantity=gt38"),
    )
    .await;
    assert_eq!(values(&b), vec![json!(38.6)]);
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-quantity=lt10"),
    )
    .await;
    assert_eq!(values(&b), vec![json!(9.5)]);
    let haemoglobin_obs = fhir_ids(&b)[0].clone();
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-quantity=38.6|http://unitsofmeasure.org|Cel"),
    )
    .await;
    assert_eq!(values(&b), vec![json!(38.6)]);
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-quantity=38.6|http://unitsofmeasure.org|kg"),
    )
    .await;
    assert_eq!(b["total"], 0);
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-quantity=ge37&value-quantity=le38"),
    )
    .await;
    assert_eq!(values(&b), vec![json!(37.2)]);
    // Without a prefix, the number's own precision: 39 is 38.5 to 39.5; ap within a tenth.
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-quantity=39"),
    )
    .await;
    assert_eq!(values(&b), vec![json!(38.6)]);
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-quantity=39.0"),
    )
    .await;
    assert_eq!(b["total"], 0);
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-quantity=ap40"),
    )
    .await;
    assert_eq!(values(&b), vec![json!(37.2), json!(38.6)]);
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-quantity=ne38.6"),
    )
    .await;
    assert_eq!(b["total"], 2);
    let r = c
        .get(&format!(
            "{FHIR}/Observation?patient={p}&value-quantity=high"
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["resourceType"], "OperationOutcome");
    // By a coded answer, a text's start (accents and case aside), a date's month.
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-concept={positive}"),
    )
    .await;
    assert_eq!(b["total"], 1);
    assert_eq!(
        b["entry"][0]["resource"]["code"]["coding"][0]["code"],
        malaria_rdt
    );
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-string=fievre"),
    )
    .await;
    assert_eq!(
        b["entry"][0]["resource"]["valueString"],
        "Fièvre depuis trois jours"
    );
    assert_eq!(b["total"], 1);
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-string=toux,FIÈV"),
    )
    .await;
    assert_eq!(b["total"], 1);
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-string=toux"),
    )
    .await;
    assert_eq!(b["total"], 0);
    let b = search(
        &mut c,
        &format!("Observation?patient={p}&value-date=2024-03"),
    )
    .await;
    assert_eq!(b["total"], 1);
    let b = search(&mut c, &format!("Observation?patient={p}&value-date=2025")).await;
    assert_eq!(b["total"], 0);
    // The group a result belongs to.
    let b = search(
        &mut c,
        &format!("Observation?has-member=Observation/{haemoglobin_obs}"),
    )
    .await;
    assert_eq!(b["total"], 1);
    assert_eq!(b["entry"][0]["resource"]["code"]["coding"][0]["code"], cbc);
    assert_eq!(
        b["entry"][0]["resource"]["hasMember"][0]["reference"],
        format!("Observation/{haemoglobin_obs}")
    );
    // The panel as a laboratory report: its members its results; a single result or a
    // vital sign is none.
    let b = search(&mut c, &format!("DiagnosticReport?patient={p}")).await;
    assert_eq!(b["total"], 1, "{b}");
    let report = &b["entry"][0]["resource"];
    assert_eq!(report["code"]["coding"][0]["code"], cbc);
    assert_eq!(report["category"][0]["coding"][0]["code"], "LAB");
    assert_eq!(report["status"], "final");
    assert_eq!(
        report["encounter"]["reference"],
        format!("Encounter/{first}")
    );
    assert_eq!(
        report["result"],
        json!([{"reference": format!("Observation/{haemoglobin_obs}"), "type": "Observation"}])
    );
    assert!(report.get("basedOn").is_none(), "no order: {report}");
    let panel = report["id"].as_str().unwrap().to_string();
    let r = c.get(&format!("{FHIR}/DiagnosticReport/{panel}")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(&r.body, report);
    let r = c
        .get(&format!("{FHIR}/DiagnosticReport/{haemoglobin_obs}"))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["resourceType"], "OperationOutcome");
    let b = search(
        &mut c,
        &format!("DiagnosticReport?patient={p}&code={temperature}"),
    )
    .await;
    assert_eq!(b["total"], 0);
    let b = search(
        &mut c,
        &format!("DiagnosticReport?patient={p}&code={cbc}&date=lt2000"),
    )
    .await;
    assert_eq!(b["total"], 0);
    let b = search(
        &mut c,
        &format!("DiagnosticReport?encounter=Encounter/{first}"),
    )
    .await;
    assert_eq!(fhir_ids(&b), vec![panel.clone()]);
    let b = search(&mut c, &format!("DiagnosticReport?encounter={second}")).await;
    assert_eq!(b["total"], 0);
    let r = c.get(&format!("{FHIR}/DiagnosticReport?code={cbc}")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // has-member names one group: other filters would be ignored, so they are refused.
    let r = c
        .get(&format!(
            "{FHIR}/Observation?has-member={haemoglobin_obs}&code={cbc}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .get(&format!(
            "{FHIR}/Observation/$lastn?patient={p}&date=ge2026"
        ))
        .await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "an operation's unread parameter"
    );
    // The newest of each concept: one temperature (the later), two with max=2, and one of
    // each of her six concepts when none is named.
    let b = search(
        &mut c,
        &format!("Observation/$lastn?patient={p}&code={temperature}"),
    )
    .await;
    assert_eq!(values(&b), vec![json!(37.2)]);
    let b = search(
        &mut c,
        &format!("Observation/$lastn?patient={p}&code={temperature}&max=2"),
    )
    .await;
    assert_eq!(values(&b), vec![json!(37.2), json!(38.6)]);
    let b = search(&mut c, &format!("Observation/$lastn?patient={p}")).await;
    assert_eq!(b["total"], 6, "{b}");
    let r = c
        .get(&format!("{FHIR}/Observation/$lastn?patient={p}&max=0"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .get(&format!("{FHIR}/Observation/$lastn?code={temperature}"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // Encounters by date (with or without the patient), place, provider and last change.
    let day = (chrono::Utc::now() - chrono::Duration::minutes(100))
        .format("%Y-%m-%d")
        .to_string();
    let mut both = vec![first.clone(), second.clone()];
    both.sort();
    let sorted = |b: &Value| {
        let mut ids = fhir_ids(b);
        ids.sort();
        ids
    };
    let b = search(&mut c, &format!("Encounter?patient={p}&date=ge{day}")).await;
    assert_eq!(sorted(&b), both);
    let b = search(&mut c, &format!("Encounter?date=ge{day}")).await;
    assert_eq!(sorted(&b), both);
    // The facility's encounters of a period are counted only when asked.
    assert!(b.get("total").is_none(), "{b}");
    let b = search(&mut c, &format!("Encounter?date=ge{day}&_total=accurate")).await;
    assert_eq!(b["total"], 2);
    let b = search(&mut c, &format!("Encounter?patient={p}&date=lt2000")).await;
    assert_eq!(b["total"], 0);
    let b = search(
        &mut c,
        &format!("Encounter?patient={p}&participant=Practitioner/{provider}"),
    )
    .await;
    assert_eq!(fhir_ids(&b), vec![first.clone()]);
    assert_eq!(
        b["entry"][0]["resource"]["participant"][0]["individual"]["reference"],
        format!("Practitioner/{provider}")
    );
    let elsewhere = location_uuid(&st, "Bondeko - Accueil");
    let b = search(
        &mut c,
        &format!("Encounter?patient={p}&location={elsewhere}"),
    )
    .await;
    assert_eq!(b["total"], 0);
    let b = search(
        &mut c,
        &format!("Encounter?patient={p}&location=Location/{here}"),
    )
    .await;
    assert_eq!(sorted(&b), both);
    let b = search(
        &mut c,
        &format!("Encounter?patient={p}&_lastUpdated=ge{day}"),
    )
    .await;
    assert_eq!(sorted(&b), both);
    let b = search(
        &mut c,
        &format!("Encounter?patient={p}&_lastUpdated=lt2000"),
    )
    .await;
    assert_eq!(b["total"], 0);
    let r = c
        .get(&format!("{FHIR}/Encounter?patient={p}&status=active"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c.get(&format!("{FHIR}/Encounter?location={here}")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

/// The fast data entry app enters a paper register's page: each encounter comes with its
/// visit written out in full (a client-made uuid, the visit type, start and stop at the
/// encounter's time), and OpenMRS saves the visit with the encounter.
#[tokio::test]
async fn an_encounter_brings_its_visit_written_out_as_fast_data_entry_sends_it() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "700031").await;
    let at = location_uuid(&st, "Bondeko - Triage");
    let when = ago(60 * 24 * 3);
    let visit_uuid = "5b0c6f5e-7d3a-4c1e-9d8b-2a6f4e1c3b7a";
    let body = json!({
        "patient": p,
        "encounterType": VITALS_TYPE,
        "location": at,
        "encounterDatetime": when,
        "obs": [{"concept": "5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "value": 61}],
        "visit": {
            "uuid": visit_uuid,
            "patient": {"uuid": p},
            "location": {"uuid": at},
            "visitType": {"uuid": OUTPATIENT},
            "startDatetime": when,
            "stopDatetime": when,
        },
    });
    let r = send_json(&mut c, "POST", &format!("{REST}/encounter"), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["visit"]["uuid"], visit_uuid);
    let v = c
        .get(&format!("{REST}/visit/{visit_uuid}?v=custom:(uuid,patient:(uuid),visitType:(uuid),startDatetime,stopDatetime,encounters:(uuid))"))
        .await;
    assert_eq!(v.status, StatusCode::OK, "{:?}", v.body);
    assert_eq!(v.body["patient"]["uuid"], p.as_str());
    assert_eq!(v.body["visitType"]["uuid"], OUTPATIENT);
    assert!(!v.body["stopDatetime"].is_null(), "{:?}", v.body);
    assert_eq!(v.body["encounters"][0]["uuid"], r.body["uuid"]);

    // The same visit again is a reference to it, not a second one.
    let mut again = body.clone();
    again["obs"] = json!([]);
    let r = send_json(&mut c, "POST", &format!("{REST}/encounter"), &again).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["visit"]["uuid"], visit_uuid);
    let visits = c
        .get(&format!("{REST}/visit?patient={p}&includeInactive=true"))
        .await;
    assert_eq!(visits.body["results"].as_array().unwrap().len(), 1);

    // A written-out visit breaking a visit's rules leaves nothing behind: neither the visit
    // nor the encounter.
    let mut bad = body.clone();
    bad["visit"]["uuid"] = json!("0f8e2d4c-1a3b-4c5d-8e7f-9a0b1c2d3e4f");
    bad["visit"]["visitType"] = json!({"uuid": "0f8e2d4c-0000-4000-8000-000000000000"});
    let r = send_json(&mut c, "POST", &format!("{REST}/encounter"), &bad).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // Its fields are named inside the encounter's body.
    assert!(
        r.body["error"]["fieldErrors"]["visit.visitType"].is_array(),
        "{:?}",
        r.body
    );
    let gone = c
        .get(&format!(
            "{REST}/visit/0f8e2d4c-1a3b-4c5d-8e7f-9a0b1c2d3e4f"
        ))
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    // One whose encounter breaks the encounter's rules (a time outside the visit it writes
    // out) leaves no visit either.
    let mut outside = body.clone();
    outside["visit"]["uuid"] = json!("3f8e2d4c-1a3b-4c5d-8e7f-9a0b1c2d3e4f");
    outside["encounterDatetime"] = json!(ago(60 * 24 * 4));
    let r = send_json(&mut c, "POST", &format!("{REST}/encounter"), &outside).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let gone = c
        .get(&format!(
            "{REST}/visit/3f8e2d4c-1a3b-4c5d-8e7f-9a0b1c2d3e4f"
        ))
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    // Only the two encounters made above are hers.
    let hers = c.get(&format!("{REST}/encounter?patient={p}")).await;
    assert_eq!(
        hers.body["results"].as_array().unwrap().len(),
        2,
        "{:?}",
        hers.body
    );
    // One for another patient is refused as a reference to her visit would be.
    let other = patient(&mut c, &st, "700032").await;
    let mut foreign = body.clone();
    foreign["visit"]["uuid"] = json!("1f8e2d4c-1a3b-4c5d-8e7f-9a0b1c2d3e4f");
    foreign["visit"]["patient"] = json!({"uuid": other});
    let r = send_json(&mut c, "POST", &format!("{REST}/encounter"), &foreign).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let gone = c
        .get(&format!(
            "{REST}/visit/1f8e2d4c-1a3b-4c5d-8e7f-9a0b1c2d3e4f"
        ))
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);

    // Writing a visit out asks for Add Visits, as making one does.
    let role = json!({"name": "Saisie sans visites", "description": "Encode des consultations",
        "privileges": [{"name": "Add Encounters"}, {"name": "Add Observations"}, {"name": "Get Patients"}]});
    let r = send_json(&mut c, "POST", &format!("{REST}/role"), &role).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let user = json!({"username": "saisie.registre", "password": "Saisie-pass-2026",
        "person": {"names": [{"givenName": "Marie", "familyName": "Nsimba"}], "gender": "F"},
        "roles": ["Saisie sans visites"]});
    let r = send_json(&mut c, "POST", &format!("{REST}/user"), &user).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut clerk = Client::new(st.clone());
    clerk.login("saisie.registre", "Saisie-pass-2026").await;
    let mut theirs = body.clone();
    theirs["visit"]["uuid"] = json!("2f8e2d4c-1a3b-4c5d-8e7f-9a0b1c2d3e4f");
    let r = send_json(&mut clerk, "POST", &format!("{REST}/encounter"), &theirs).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    // Naming the stored visit again, written out as the app sends it, makes nothing new and
    // asks for no more than the encounter does.
    let r = send_json(&mut clerk, "POST", &format!("{REST}/encounter"), &again).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["visit"]["uuid"], visit_uuid);
}

/// The active visits app lists the visits of the login room's facility:
/// `visit?location=<room>&includeParentLocations=true` takes in the visits at the room's
/// ancestors; without the flag, only those at the room itself.
#[tokio::test]
async fn visits_at_a_rooms_facility_are_listed_with_its_parent_locations() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "700033").await;
    let facility = location_uuid(&st, "Centre de santé Bondeko");
    let room = location_uuid(&st, "Bondeko - Accueil");
    let body = json!({"patient": p, "visitType": OUTPATIENT, "location": facility, "startDatetime": ago(30)});
    let r = send_json(&mut c, "POST", &format!("{REST}/visit"), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let listed = |b: &Value| -> Vec<String> {
        b["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["uuid"].as_str().unwrap().to_string())
            .collect()
    };
    let at_room = c
        .get(&format!(
            "{REST}/visit?location={room}&includeInactive=false"
        ))
        .await;
    assert!(!listed(&at_room.body).contains(&r.body["uuid"].as_str().unwrap().to_string()));
    let with_parents = c
        .get(&format!(
            "{REST}/visit?location={room}&includeParentLocations=true&includeInactive=false&totalCount=true"
        ))
        .await;
    assert_eq!(with_parents.status, StatusCode::OK);
    assert!(listed(&with_parents.body).contains(&r.body["uuid"].as_str().unwrap().to_string()));
    // The room named rather than given by uuid finds it the same.
    let by_name = c
        .get(&format!(
            "{REST}/visit?location=Bondeko%20-%20Accueil&includeParentLocations=true&includeInactive=false"
        ))
        .await;
    assert!(listed(&by_name.body).contains(&r.body["uuid"].as_str().unwrap().to_string()));
    // Another health zone's ancestors are not the facility's: the visit stays out.
    let elsewhere = location_uuid(&st, "Zone de santé de Makala");
    let other_zone = c
        .get(&format!(
            "{REST}/visit?location={elsewhere}&includeParentLocations=true&includeInactive=false"
        ))
        .await;
    assert_eq!(other_zone.status, StatusCode::OK);
    assert!(!listed(&other_zone.body).contains(&r.body["uuid"].as_str().unwrap().to_string()));
}
