//! Accounts and administration: users, passwords, roles and privileges made through the
//! API next to the content's, and operator-made system settings.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const CLERK_PASSWORD: &str = "Clerk-pass-2026";

fn clerk_body(username: &str, roles: Value) -> String {
    json!({
        "username": username,
        "password": CLERK_PASSWORD,
        "person": {"names": [{"givenName": "Grâce", "familyName": "Mbuyi"}], "gender": "F"},
        "roles": roles,
    })
    .to_string()
}

async fn create_user(admin: &mut Client, username: &str, roles: Value) -> Value {
    let r = admin
        .post(&format!("{REST}/user"), &clerk_body(username, roles))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body
}

#[tokio::test]
async fn an_administrator_creates_a_clerk_who_registers_patients_but_cannot_change_settings() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let clerk = create_user(
        &mut admin,
        "accueil.grace",
        json!(["Organizational: Registration Clerk"]),
    )
    .await;
    assert_eq!(clerk["username"], "accueil.grace");
    assert_eq!(clerk["person"]["display"], "Grâce Mbuyi");
    assert!(clerk["systemId"].as_str().unwrap().contains('-'));
    assert_eq!(
        clerk["roles"][0]["display"],
        "Organizational: Registration Clerk"
    );

    let mut c = Client::new(st.clone());
    assert_eq!(
        c.login("accueil.grace", CLERK_PASSWORD).await.body["authenticated"],
        true
    );
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(&st, "Josué", "Ilunga", "710001"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = c
        .post(
            &format!("{REST}/systemsetting/visits.autoCloseVisitTimeout"),
            r#"{"value": "12"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // Nor create accounts.
    let r = c
        .post(&format!("{REST}/user"), &clerk_body("autre", json!([])))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // Found by name, by username, and read in full with the privileges its roles grant
    // through inheritance (Registration Clerk → Registers Patients → Add Patients).
    let found = admin.get(&format!("{REST}/user?q=mbuyi")).await;
    assert_eq!(found.body["results"][0]["uuid"], clerk["uuid"]);
    let exact = admin
        .get(&format!("{REST}/user?username=ACCUEIL.GRACE"))
        .await;
    assert_eq!(exact.body["results"].as_array().unwrap().len(), 1);
    let full = admin
        .get(&format!(
            "{REST}/user/{}?v=full",
            clerk["uuid"].as_str().unwrap()
        ))
        .await;
    let privileges: Vec<&str> = full.body["privileges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["display"].as_str().unwrap())
        .collect();
    assert!(privileges.contains(&"Add Patients"), "{privileges:?}");
    assert!(privileges.contains(&"Add Visits"), "{privileges:?}");
    assert!(!privileges.contains(&"Manage Global Properties"));
    assert!(full.body["auditInfo"]["dateCreated"].is_string());
}

#[tokio::test]
async fn account_creation_is_validated_as_openmrs_does() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let post = |body: Value| {
        let st = st.clone();
        async move {
            let mut admin = Client::admin(st).await;
            admin.post(&format!("{REST}/user"), &body.to_string()).await
        }
    };
    let field = |r: &crate::common::Response, f: &str| -> String {
        r.body["error"]["fieldErrors"][f]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| e["message"].as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .unwrap_or_default()
    };
    let base = |username: &str, password: &str| {
        json!({"username": username, "password": password,
               "person": {"names": [{"givenName": "A", "familyName": "B"}]}, "roles": []})
    };
    // The password rules (OpenMRS's defaults), each named.
    for (password, message) in [
        ("Sh0rt", "at least 8 characters"),
        ("alllowercase1", "upper and lower case"),
        ("NoDigitsHere", "at least one digit"),
        ("Nurse-pass-1", ""),
    ] {
        let r = post(base("nurse.kabila1", password)).await;
        if message.is_empty() {
            assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        } else {
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{password}");
            assert!(
                field(&r, "password").contains(message),
                "{password}: {:?}",
                r.body
            );
        }
    }
    // The password may not be the username.
    let r = post(base("Pass.Word9", "pass.word9")).await;
    assert!(
        field(&r, "password").contains("cannot match the username"),
        "{:?}",
        r.body
    );
    // The username taken (any case), malformed, or with a control character.
    let r = post(base("NURSE.KABILA1", "Another-pass-1")).await;
    assert!(field(&r, "username").contains("taken"), "{:?}", r.body);
    for bad in ["x", "has space", "nul\u{0}byte", ".dot"] {
        let r = post(base(bad, "Another-pass-1")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad:?}");
        assert!(!field(&r, "username").is_empty(), "{bad:?}: {:?}", r.body);
    }
    // A role that does not exist; no person.
    let mut b = base("nurse.two", "Another-pass-1");
    b["roles"] = json!(["No Such Role"]);
    let r = post(b).await;
    assert!(field(&r, "roles").contains("No Such Role"), "{:?}", r.body);
    let mut b = base("nurse.three", "Another-pass-1");
    b.as_object_mut().unwrap().remove("person");
    let r = post(b).await;
    assert!(!field(&r, "person").is_empty(), "{:?}", r.body);
    // Nothing refused was stored.
    let all = admin.get(&format!("{REST}/user?v=custom:(username)")).await;
    let names: Vec<&str> = all.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "nurse.kabila1"]);
}

#[tokio::test]
async fn retiring_an_account_ends_its_sessions_and_unretiring_restores_access() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let clerk = create_user(&mut admin, "agent.retire", json!(["Organizational: Nurse"])).await;
    let uuid = clerk["uuid"].as_str().unwrap();
    let mut c = Client::new(st.clone());
    c.login("agent.retire", CLERK_PASSWORD).await;
    assert_eq!(
        c.get(&format!("{REST}/session")).await.body["authenticated"],
        true
    );

    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/user/{uuid}?reason=left"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    // The open session ended at once; logging in again fails.
    assert_eq!(
        c.get(&format!("{REST}/session")).await.body["authenticated"],
        false
    );
    assert_eq!(
        Client::new(st.clone())
            .login("agent.retire", CLERK_PASSWORD)
            .await
            .body["authenticated"],
        false
    );
    let read = admin.get(&format!("{REST}/user/{uuid}")).await;
    assert_eq!(read.body["retired"], true);
    // Not listed unless asked.
    assert!(
        admin.get(&format!("{REST}/user?q=retire")).await.body["results"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        admin
            .get(&format!("{REST}/user?q=retire&includeAll=true"))
            .await
            .body["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let r = admin
        .post(&format!("{REST}/user/{uuid}"), r#"{"retired": false}"#)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        Client::new(st.clone())
            .login("agent.retire", CLERK_PASSWORD)
            .await
            .body["authenticated"],
        true
    );
    // Nobody retires their own account.
    let me = admin.user_uuid().await;
    let r = admin
        .send("DELETE", &format!("{REST}/user/{me}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn passwords_are_changed_with_the_old_one_or_reset_by_an_administrator() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let clerk = create_user(&mut admin, "agent.pw", json!([])).await;
    let uuid = clerk["uuid"].as_str().unwrap().to_string();
    let mut c = Client::new(st.clone());
    c.login("agent.pw", CLERK_PASSWORD).await;
    let wrong = c
        .post(
            &format!("{REST}/password"),
            r#"{"oldPassword": "not-it", "newPassword": "Better-pass-7"}"#,
        )
        .await;
    assert_eq!(wrong.status, StatusCode::BAD_REQUEST);
    let weak = c
        .post(
            &format!("{REST}/password"),
            &json!({"oldPassword": CLERK_PASSWORD, "newPassword": "weak"}).to_string(),
        )
        .await;
    assert_eq!(weak.status, StatusCode::BAD_REQUEST);
    let r = c
        .post(
            &format!("{REST}/password"),
            &json!({"oldPassword": CLERK_PASSWORD, "newPassword": "Better-pass-7"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // The session that changed it stays; the new password works, the old does not.
    assert_eq!(
        c.get(&format!("{REST}/session")).await.body["authenticated"],
        true
    );
    assert_eq!(
        Client::new(st.clone())
            .login("agent.pw", "Better-pass-7")
            .await
            .body["authenticated"],
        true
    );
    assert_eq!(
        Client::new(st.clone())
            .login("agent.pw", CLERK_PASSWORD)
            .await
            .body["authenticated"],
        false
    );
    // A clerk cannot reset another's password; an administrator can, and the user's
    // sessions end.
    let r = c
        .post(
            &format!("{REST}/password/{}", admin.user_uuid().await),
            r#"{"newPassword": "Hijack-pass-1"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = admin
        .post(
            &format!("{REST}/password/{uuid}"),
            r#"{"newPassword": "Reset-pass-2026"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        c.get(&format!("{REST}/session")).await.body["authenticated"],
        false
    );
    assert_eq!(
        Client::new(st.clone())
            .login("agent.pw", "Reset-pass-2026")
            .await
            .body["authenticated"],
        true
    );
}

#[tokio::test]
async fn roles_made_through_the_api_grant_privileges_through_inheritance_and_content_roles_are_read_only()
 {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    // A privilege and a role of the API, inheriting a content role.
    let p = admin
        .post(
            &format!("{REST}/privilege"),
            r#"{"name": "Voir les rapports du district", "description": "Rapports"}"#,
        )
        .await;
    assert_eq!(p.status, StatusCode::CREATED, "{:?}", p.body);
    let dup = admin
        .post(&format!("{REST}/privilege"), r#"{"name": "Get Patients"}"#)
        .await;
    assert_eq!(dup.status, StatusCode::BAD_REQUEST);
    let role = admin
        .post(
            &format!("{REST}/role"),
            r#"{"name": "Superviseur de zone", "description": "Supervision",
                "privileges": ["Voir les rapports du district", "Manage Global Properties"],
                "inheritedRoles": ["Organizational: Nurse"]}"#,
        )
        .await;
    assert_eq!(role.status, StatusCode::CREATED, "{:?}", role.body);
    assert_eq!(role.body["definedBy"], "api");
    let role_uuid = role.body["uuid"].as_str().unwrap().to_string();
    let user = create_user(&mut admin, "superviseur", json!(["Superviseur de zone"])).await;
    // The account's role, made through the API, is named with its uuid like the content's.
    assert_eq!(user["roles"][0]["uuid"], role_uuid.as_str());
    let mut c = Client::new(st.clone());
    c.login("superviseur", CLERK_PASSWORD).await;
    // Its own privilege, and those inherited from the content's Nurse role.
    let r = c
        .post(
            &format!("{REST}/systemsetting/visits.autoCloseVisitTimeout"),
            r#"{"value": "10"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        c.get(&format!("{REST}/visit?includeInactive=false"))
            .await
            .status,
        StatusCode::OK
    );
    let full = admin
        .get(&format!(
            "{REST}/user/{}?v=full",
            user["uuid"].as_str().unwrap()
        ))
        .await;
    let names: Vec<&str> = full.body["privileges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["display"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Add Encounters"), "{names:?}");
    assert!(
        names
            .iter()
            .any(|n| n.eq_ignore_ascii_case("Voir les rapports du district")),
        "{names:?}"
    );

    // A cycle is refused; the content's roles cannot be changed here.
    let r = admin
        .post(
            &format!("{REST}/role/{role_uuid}"),
            r#"{"inheritedRoles": ["Superviseur de zone"]}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let nurse = admin
        .get(&format!("{REST}/role/Organizational:%20Nurse"))
        .await;
    assert_eq!(nurse.body["definedBy"], "content");
    let r = admin
        .post(
            &format!("{REST}/role/{}", nurse.body["uuid"].as_str().unwrap()),
            r#"{"description": "changed"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("content package"),
        "{:?}",
        r.body
    );
    // Retiring the API role takes its privileges away at once.
    let r = admin
        .send("DELETE", &format!("{REST}/role/{role_uuid}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .post(
            &format!("{REST}/systemsetting/visits.autoCloseVisitTimeout"),
            r#"{"value": "11"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // Roles list the content's and the API's.
    let list = admin
        .get(&format!("{REST}/role?includeAll=true&v=default&limit=100"))
        .await;
    let all: Vec<&str> = list.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["display"].as_str().unwrap())
        .collect();
    assert!(all.contains(&"Superviseur de zone") && all.contains(&"Organizational: Nurse"));
}

#[tokio::test]
async fn api_roles_and_privileges_survive_a_backup_and_restore() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let r = admin
        .post(
            &format!("{REST}/role"),
            r#"{"name": "Archiviste", "privileges": ["Get Patients"]}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut admin2 = Client::admin(st2).await;
    let r = admin2.get(&format!("{REST}/role/Archiviste")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["privileges"][0]["display"], "Get Patients");
}

#[tokio::test]
async fn operators_create_and_delete_their_own_settings_but_not_the_contents() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let r = admin
        .post(
            &format!("{REST}/systemsetting"),
            r#"{"property": "facility.reportingDay", "value": "monday", "description": "Jour du rapport"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["value"], "monday");
    let again = admin
        .post(
            &format!("{REST}/systemsetting"),
            r#"{"property": "facility.reportingDay", "value": "friday"}"#,
        )
        .await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    let bad = admin
        .post(
            &format!("{REST}/systemsetting"),
            r#"{"property": "has space"}"#,
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        admin
            .get(&format!("{REST}/systemsetting/facility.reportingDay"))
            .await
            .body["value"],
        "monday"
    );
    // A setting the content defines can be changed, not deleted.
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/systemsetting/visits.autoCloseVisitTimeout"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/systemsetting/facility.reportingDay"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        admin
            .get(&format!("{REST}/systemsetting/facility.reportingDay"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn an_administrator_locks_an_account_ending_its_sessions_and_unlocks_it() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let clerk = create_user(&mut admin, "agent.verrou", json!(["Organizational: Nurse"])).await;
    let uuid = clerk["uuid"].as_str().unwrap();
    let mut c = Client::new(st.clone());
    c.login("agent.verrou", CLERK_PASSWORD).await;
    assert_eq!(
        c.get(&format!("{REST}/session")).await.body["authenticated"],
        true
    );
    // The clerk's own language change sends back every property it read: no lock.
    let r = c
        .post(
            &format!("{REST}/user/{uuid}"),
            &json!({"userProperties": {"defaultLocale": "fr"}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);

    // Locked now, as OpenMRS locks: its open session ends and it cannot log in.
    let now_ms = chrono::Utc::now().timestamp_millis();
    let r = admin
        .post(
            &format!("{REST}/user/{uuid}"),
            &json!({"userProperties": {"defaultLocale": "fr", "lockoutTimestamp": now_ms.to_string()}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        c.get(&format!("{REST}/session")).await.body["authenticated"],
        false
    );
    let mut again = Client::new(st.clone());
    assert_eq!(
        again.login("agent.verrou", CLERK_PASSWORD).await.body["authenticated"],
        false
    );
    let r = admin
        .post(
            &format!("{REST}/user/{uuid}"),
            &json!({"userProperties": {"lockoutTimestamp": "hier"}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);

    // Taking the property away unlocks it.
    let r = admin
        .post(
            &format!("{REST}/user/{uuid}"),
            &json!({"userProperties": {"defaultLocale": "fr"}}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        again.login("agent.verrou", CLERK_PASSWORD).await.body["authenticated"],
        true
    );
}
