//! Patient lists (`cohortm/…`), as the O3 patient-lists app makes them: a list created,
//! renamed, its members added, found and removed by ending their membership, the module's
//! rules, privileges, and survival through backup and restore.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const MY_LIST: &str = "e71857cb-33af-4f2c-86ab-7223bcfa37ad";
const SYSTEM_LIST: &str = "eee9970e-7ca0-4e8c-a280-c33e9d5f6a04";
const HANDLER: &str = "org.openmrs.module.cohort.definition.handler.DefaultCohortDefinitionHandler";
const LIST_REP: &str =
    "custom:(uuid,name,description,display,size,attributes,cohortType,location:(uuid,display))";

async fn patient(c: &mut Client, st: &runtime::http::AppState, given: &str, id: &str) -> String {
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(st, given, "Mwamba", id),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body["uuid"].as_str().unwrap().to_string()
}

/// A list as the O3 form creates it (trailing slash included).
async fn new_list(c: &mut Client, st: &runtime::http::AppState, name: &str) -> Value {
    let body = json!({"name": name, "description": "Suivi des femmes enceintes", "cohortType": MY_LIST,
        "location": location_uuid(st, "Bondeko - Accueil"), "startDate": "2026-11-20T08:00:00.000Z",
        "groupCohort": false, "definitionHandlerClassname": HANDLER});
    let r = c
        .post(&format!("{REST}/cohortm/cohort/"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body
}

async fn add(c: &mut Client, list: &str, patient: &str) -> crate::common::Response {
    c.post(
        &format!("{REST}/cohortm/cohortmember"),
        &json!({"cohort": list, "patient": patient, "startDate": "2026-11-25T09:00:00.000+0100"})
            .to_string(),
    )
    .await
}

fn names(body: &Value) -> Vec<String> {
    let mut out: Vec<String> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["patient"]["person"]["display"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_list_is_made_filled_read_and_emptied_as_the_o3_app_does() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let types = c.get(&format!("{REST}/cohortm/cohorttype")).await;
    assert_eq!(types.status, StatusCode::OK);
    let type_uuids: Vec<&str> = types.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(type_uuids, [MY_LIST, SYSTEM_LIST]);

    let list = new_list(&mut c, &st, "CPN du mardi").await;
    let uuid = list["uuid"].as_str().unwrap().to_string();
    assert_eq!(list["display"], "CPN du mardi");
    assert_eq!(list["cohortType"]["uuid"], MY_LIST);
    assert!(
        list["startDate"]
            .as_str()
            .unwrap()
            .starts_with("2026-11-20T08:00:00.000")
    );

    let (a, b) = (
        patient(&mut c, &st, "Esther", "500011").await,
        patient(&mut c, &st, "Ruth", "500012").await,
    );
    for p in [&a, &b] {
        let r = add(&mut c, &uuid, p).await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    // Twice in one list at once: refused with the module's message.
    let r = add(&mut c, &uuid, &a).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["error"]["message"],
        "[Patient already exists in group.]"
    );

    // The dashboard's list with its size, and the members' table.
    let r = c
        .get(&format!(
            "{REST}/cohortm/cohort?v={LIST_REP}&totalCount=true&cohortType={MY_LIST}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["totalCount"], 1);
    assert_eq!(r.body["results"][0]["size"], 2);
    assert_eq!(
        r.body["results"][0]["location"]["display"],
        "Bondeko - Accueil"
    );
    let members_url =
        format!("{REST}/cohortm/cohortmember?cohort={uuid}&startIndex=0&limit=10&v=full&q=");
    let r = c.get(&members_url).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(names(&r.body), ["Esther Mwamba", "Ruth Mwamba"]);
    let first = &r.body["results"][0];
    assert!(first["display"].as_str().unwrap().contains("-"), "{first}");
    assert!(first["patient"]["identifiers"][0]["identifier"].is_string());
    // The paging of the table.
    let r = c
        .get(&format!(
            "{REST}/cohortm/cohortmember?cohort={uuid}&startIndex=0&limit=1&v=full"
        ))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["links"][0]["rel"], "next");

    // The "add to list" modal: the patient's lists.
    let r = c
        .get(&format!(
            "{REST}/cohortm/cohortmember?patient={a}&v=default"
        ))
        .await;
    assert_eq!(r.body["results"][0]["cohort"]["uuid"], uuid.as_str());

    // Removing a member ends the membership: she leaves the table and the size.
    let membership = c
        .get(&format!(
            "{REST}/cohortm/cohortmember?patient={a}&v=default"
        ))
        .await
        .body["results"][0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = c
        .post(
            &format!("{REST}/cohortm/cohortmember/{membership}"),
            &json!({"endDate": chrono::Utc::now().to_rfc3339()}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(names(&c.get(&members_url).await.body), ["Ruth Mwamba"]);
    let r = c
        .get(&format!("{REST}/cohortm/cohort/{uuid}?v=custom:(uuid,name,description,display,size,attributes,startDate,endDate,cohortType)"))
        .await;
    assert_eq!(r.body["size"], 1);
    // Added again, she comes back on her first membership, its start kept.
    let r = add(&mut c, &uuid, &a).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["uuid"], membership.as_str());
    assert_eq!(r.body["endDate"], Value::Null);
    assert_eq!(
        names(&c.get(&members_url).await.body),
        ["Esther Mwamba", "Ruth Mwamba"]
    );

    // Renamed, the type left empty as the form sends it.
    let r = c
        .post(
            &format!("{REST}/cohortm/cohort/{uuid}"),
            &json!({"name": "CPN du mardi matin", "description": "", "cohortType": ""}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["name"], "CPN du mardi matin");
    assert_eq!(r.body["cohortType"], Value::Null);
    assert_eq!(r.body["description"], Value::Null);

    // Deleted: voided, no longer found, and nobody can be added to it.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/cohortm/cohort/{uuid}"),
            &[("content-type", "application/json")],
            Some(r#"{"voidReason":""}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        c.get(&format!("{REST}/cohortm/cohort/{uuid}")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get(&format!("{REST}/cohortm/cohort?v={LIST_REP}"))
            .await
            .body["results"],
        json!([])
    );
    let r = add(&mut c, &uuid, &b).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["error"]["message"],
        "[Cannot add patient to ended group.]"
    );
    // Her lists no longer show the voided one.
    let r = c
        .get(&format!("{REST}/cohortm/cohortmember?patient={b}"))
        .await;
    assert_eq!(r.body["results"], json!([]));
}

#[tokio::test]
async fn lists_are_checked_as_the_cohort_module_checks_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    new_list(&mut c, &st, "Perdus de vue").await;
    let bad = |body: Value| body.to_string();
    for (body, field, message) in [
        (json!({"name": "  "}), "name", "Cohort Name Required"),
        (
            json!({"name": "perdus DE VUE"}),
            "name",
            "A cohort with this name already exists",
        ),
        (
            json!({"name": "Dates", "startDate": "2026-11-20", "endDate": "2026-11-01"}),
            "startDate",
            "Start date should be before the end date",
        ),
        (
            json!({"name": "Type", "cohortType": "Liste secrète"}),
            "cohortType",
            "Could not find a Cohort Type matching 'Liste secrète' either by name or UUID",
        ),
        (
            json!({"name": "Lieu", "location": "2b3c4d5e-0000-4000-8000-000000000000"}),
            "location",
            "Location 2b3c4d5e-0000-4000-8000-000000000000 does not exist",
        ),
    ] {
        let r = c
            .post(&format!("{REST}/cohortm/cohort"), &bad(body.clone()))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert_eq!(
            r.body["error"]["fieldErrors"][field][0]["message"], message,
            "{body}: {:?}",
            r.body
        );
    }
    // A type by name, as the module finds one; attributes are not kept here.
    let r = c
        .post(
            &format!("{REST}/cohortm/cohort"),
            &json!({"name": "Système", "cohortType": "Liste du système"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["cohortType"]["uuid"], SYSTEM_LIST);
    let r = c
        .post(
            &format!("{REST}/cohortm/cohort"),
            &json!({"name": "Attr", "attributes": [{"value": "x"}]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // A membership names its list and patient, and ends after it starts.
    let r = c
        .post(
            &format!("{REST}/cohortm/cohortmember"),
            &json!({"patient": "x"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["fieldErrors"]["cohort"].is_array(),
        "{:?}",
        r.body
    );
    let r = c.get(&format!("{REST}/cohortm/cohortmember")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let list = new_list(&mut c, &st, "Dates des membres").await;
    let p = patient(&mut c, &st, "Judith", "500013").await;
    let r = c
        .post(
            &format!("{REST}/cohortm/cohortmember"),
            &json!({"cohort": list["uuid"], "patient": p, "startDate": "2026-11-20", "endDate": "2026-11-01"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // The types are the distribution's.
    let r = c
        .post(
            &format!("{REST}/cohortm/cohorttype"),
            &json!({"name": "Autre"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn lists_need_their_privileges_and_keep_patients_from_being_purged() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let mut clerk = registration_clerk(&mut admin, &st, "accueil.listes").await;
    assert_eq!(
        clerk.get(&format!("{REST}/cohortm/cohort")).await.status,
        StatusCode::FORBIDDEN
    );
    let r = clerk
        .post(
            &format!("{REST}/cohortm/cohort"),
            &json!({"name": "Non"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // A nurse who sees charts may keep lists.
    let r = admin
        .post(
            &format!("{REST}/user"),
            &json!({"username": "infirmiere.listes", "password": "Nurse-pass-2026",
                "person": {"names": [{"givenName": "Claire", "familyName": "Mbo"}]},
                "roles": ["Application: Sees Patient Charts"]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut nurse = Client::new(st.clone());
    nurse.login("infirmiere.listes", "Nurse-pass-2026").await;
    let list = new_list(&mut nurse, &st, "Vaccinations à rattraper").await;
    let p = patient(&mut admin, &st, "Noëlla", "500014").await;
    let r = add(&mut nurse, list["uuid"].as_str().unwrap(), &p).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["auditInfo"], Value::Null); // default representation
    // A patient on a list is not purged: the list refers to her.
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/patient/{p}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("patient list memberships"),
        "{:?}",
        r.body
    );
}

#[tokio::test]
async fn a_backup_restores_lists_and_members_with_their_indexes() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let list = new_list(&mut c, &st, "Sortis de l'hôpital").await;
    let uuid = list["uuid"].as_str().unwrap();
    let p = patient(&mut c, &st, "Béatrice", "500015").await;
    assert_eq!(add(&mut c, uuid, &p).await.status, StatusCode::CREATED);
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;
    for path in [
        format!("{REST}/cohortm/cohort?v={LIST_REP}"),
        format!("{REST}/cohortm/cohortmember?cohort={uuid}&v=full"),
        format!("{REST}/cohortm/cohortmember?patient={p}"),
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

async fn current_members(c: &mut Client, list: &str) -> Vec<String> {
    let url = format!("{REST}/cohortm/cohortmember?cohort={list}&v=full");
    names(&c.get(&url).await.body)
}

#[tokio::test]
async fn a_group_sessions_members_come_with_its_list_as_fast_data_entry_sends_them() {
    // The fast data entry app's group sessions post the list with `cohortMembers`, then
    // post it again with the members as they now are.
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let a = patient(&mut c, &st, "Amani", "620001").await;
    let b = patient(&mut c, &st, "Bahati", "620002").await;
    let d = patient(&mut c, &st, "Dorcas", "620003").await;
    let location = location_uuid(&st, "Bondeko - Accueil");
    let body = json!({"name": "Causerie du mardi", "cohortType": MY_LIST, "location": location,
        "cohortMembers": [{"patient": a, "startDate": "2026-11-24T09:00:00.000Z"}, {"patient": b, "startDate": "2026-11-24T09:00:00.000Z"}]});
    let r = c
        .post(&format!("{REST}/cohortm/cohort"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let list = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(
        current_members(&mut c, &list).await,
        ["Amani Mwamba", "Bahati Mwamba"]
    );
    // Bahati leaves, Dorcas joins; Amani stays on her membership.
    let body = json!({"cohortMembers": [{"patient": a}, {"patient": d}]});
    let r = c
        .post(&format!("{REST}/cohortm/cohort/{list}"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        current_members(&mut c, &list).await,
        ["Amani Mwamba", "Dorcas Mwamba"]
    );
    // A member who is no patient: refused, and nothing changes.
    let body = json!({"cohortMembers": [{"patient": a}, {"patient": "0e1f2a3b-0000-4000-8000-000000000000"}]});
    let r = c
        .post(&format!("{REST}/cohortm/cohort/{list}"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(
        current_members(&mut c, &list).await,
        ["Amani Mwamba", "Dorcas Mwamba"]
    );
}
