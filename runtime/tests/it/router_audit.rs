//! The audit trail over REST (`GET audit`): every change made through the API is recorded
//! with who made it, from which address, what it did (created, changed, voided, unvoided,
//! purged) and each field's value before and after; read by patient, record, user, table
//! and time, paged, and only by those who may view the audit log.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const PHONE: &str = "14d4f066-15f5-102d-96e4-000c29c2a5d7";
/// Where the registration desk's computer is.
const DESK: &str = "10.20.30.40";

/// Now, as the audit's `since` and `until` take it (no `+` to escape in a query).
fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// A POST from the registration desk's address (as the proxy in front of the runtime
/// names it in `X-Real-IP`).
async fn post_from_desk(c: &mut Client, uri: &str, body: &Value) -> Response {
    c.send(
        "POST",
        uri,
        &[("content-type", "application/json"), ("x-real-ip", DESK)],
        Some(&body.to_string()),
    )
    .await
}

async fn audit(c: &mut Client, query: &str) -> Vec<Value> {
    let r = c.get(&format!("{REST}/audit?{query}")).await;
    assert_eq!(r.status, StatusCode::OK, "{query}: {:?}", r.body);
    r.body["results"].as_array().unwrap().clone()
}

/// (recordType, action) of each entry, newest first.
fn actions(entries: &[Value]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| {
            (
                e["recordType"].as_str().unwrap().to_string(),
                e["action"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The change of `field` in `entry`: (before, after).
fn change(entry: &Value, field: &str) -> (Value, Value) {
    let c = entry["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == field)
        .unwrap_or_else(|| panic!("no change of {field} in {entry:#}"));
    (c["before"].clone(), c["after"].clone())
}

fn pair(before: impl Into<Value>, after: impl Into<Value>) -> (Value, Value) {
    (before.into(), after.into())
}

/// A registration, an edit through the O3 registration form, a condition voided and
/// restored, an account created and its role changed, a password reset, a purge and a
/// merge: each is in the trail with its action, its author and her address, and the
/// values before and after; the trail is read by patient, record, user, table and time,
/// paged with its total, refused to those without View Audit Log, and a bad date is 400.
#[tokio::test]
async fn every_kind_of_change_is_in_the_audit_trail_with_before_and_after() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let admin_uuid = admin.user_uuid().await;
    let mut clerk = registration_clerk(&mut admin, &st, "accueil.audit").await;
    let clerk_uuid = clerk.user_uuid().await;
    let started = now();

    // The clerk registers a patient at the desk, then corrects her through the O3 form:
    // family name, birth date, address and telephone number.
    let body: Value =
        serde_json::from_str(&patient_body(&st, "Hélène", "Mbuyi", "900001")).unwrap();
    let r = post_from_desk(&mut clerk, &format!("{REST}/patient"), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let p = r.body["uuid"].as_str().unwrap().to_string();
    let name_uuid = r.body["person"]["preferredName"]["uuid"].clone();
    let edit = json!({
        "uuid": p,
        "person": {
            "uuid": p,
            "names": [{"uuid": name_uuid, "preferred": true, "givenName": "Hélène", "familyName": "Tshisekedi"}],
            "gender": "F",
            "birthdate": "1991-5-20",
            "birthdateEstimated": false,
            "addresses": [{"cityVillage": "Limete", "stateProvince": "Kinshasa", "country": "République démocratique du Congo"}],
            "attributes": [{"attributeType": PHONE, "value": "+243990000000"}],
            "dead": false
        },
        "identifiers": r.body["identifiers"].clone()
    });
    let r = post_from_desk(&mut clerk, &format!("{REST}/patient/{p}"), &edit).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let edited = now();

    // A clinician's condition, deleted from the chart, then restored.
    let r = admin
        .post(
            &format!("{REST}/condition"),
            &json!({"patient": p, "condition": {"coded": "DRC-EMR:2001"}, "clinicalStatus": "ACTIVE"})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let condition = r.body["uuid"].as_str().unwrap().to_string();
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/condition/{condition}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = admin
        .post(
            &format!("{REST}/condition/{condition}"),
            r#"{"voided": false}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);

    // Her whole history, newest first: the condition restored, deleted, recorded; her
    // record corrected, registered.
    let history = audit(&mut admin, &format!("patient={p}")).await;
    assert_eq!(
        actions(&history),
        [
            ("conditions", "unvoided"),
            ("conditions", "voided"),
            ("conditions", "created"),
            ("patients", "changed"),
            ("patients", "created"),
        ]
        .map(|(t, a)| (t.to_string(), a.to_string()))
    );
    // The registration: by the clerk, from the desk, naming the record and no values.
    let registered = &history[4];
    assert_eq!(registered["user"]["uuid"], clerk_uuid.as_str());
    assert_eq!(registered["user"]["display"], "accueil.audit");
    assert_eq!(registered["clientAddress"], DESK);
    assert_eq!(registered["record"], p.as_str());
    assert_eq!(registered["patients"], json!([p]));
    assert_eq!(registered["changes"], json!([]));
    assert!(
        registered["dateCreated"]
            .as_str()
            .unwrap()
            .ends_with("+0000")
    );
    // The correction: each field the form changed, before and after, and nothing else.
    let corrected = &history[3];
    assert_eq!(corrected["user"]["uuid"], clerk_uuid.as_str());
    assert_eq!(corrected["clientAddress"], DESK);
    assert_eq!(
        change(corrected, "names[0].family_name"),
        pair("Mbuyi", "Tshisekedi")
    );
    assert_eq!(
        change(corrected, "birthdate"),
        pair("1990-04-12", "1991-05-20")
    );
    // The form's address (sent without a uuid) is a new, preferred one; the old one is
    // kept, no longer preferred.
    assert_eq!(
        change(corrected, "addresses[1].fields.cityVillage"),
        pair(Value::Null, "Limete")
    );
    assert_eq!(
        change(corrected, "addresses[0].preferred"),
        pair(true, false)
    );
    assert_eq!(
        change(corrected, "attributes[0].value"),
        pair("+243810000000", "+243990000000")
    );
    let fields: Vec<&str> = corrected["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "addresses[0].preferred",
            "addresses[1].fields.cityVillage",
            "addresses[1].fields.country",
            "addresses[1].fields.stateProvince",
            "addresses[1].preferred",
            "addresses[1].uuid",
            "attributes[0].value",
            "birthdate",
            "names[0].family_name",
        ]
    );
    // Who and when are the entry's, not changes.
    assert!(
        !fields
            .iter()
            .any(|f| *f == "v" || f.starts_with("changed") || f.starts_with("audit")),
        "{fields:?}"
    );
    // The condition's void and restoration, by the administrator (no proxy: the address
    // the runtime sees).
    let (voided, unvoided) = (&history[1], &history[0]);
    assert_eq!(voided["user"]["uuid"], admin_uuid.as_str());
    assert_eq!(voided["record"], condition.as_str());
    assert_eq!(change(voided, "voiding.voided"), pair(false, true));
    assert_eq!(
        change(voided, "voiding.void_reason"),
        pair(Value::Null, "erreur")
    );
    assert_eq!(change(unvoided, "voiding.voided"), pair(true, false));
    assert_eq!(
        change(unvoided, "voiding.void_reason"),
        pair("erreur", Value::Null)
    );
    // One record's history alone.
    assert_eq!(
        actions(&audit(&mut admin, &format!("record={condition}")).await),
        [
            ("conditions", "unvoided"),
            ("conditions", "voided"),
            ("conditions", "created")
        ]
        .map(|(t, a)| (t.to_string(), a.to_string()))
    );

    // An account made, its role changed and its password reset, by the administrator.
    let r = admin
        .post(
            &format!("{REST}/user"),
            &json!({"username": "infirmier.audit", "password": "Nurse-pass-2026",
                    "person": {"names": [{"givenName": "Paul", "familyName": "Kasongo"}], "gender": "M"},
                    "roles": ["Application: Registers Patients"]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let nurse = r.body["uuid"].as_str().unwrap().to_string();
    let r = admin
        .post(
            &format!("{REST}/user/{nurse}"),
            &json!({"roles": ["Application: Manages Visits"]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = admin
        .post(
            &format!("{REST}/password/{nurse}"),
            r#"{"newPassword": "Reset-pass-2026"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let account = audit(&mut admin, &format!("type=users&record={nurse}")).await;
    assert_eq!(
        actions(&account),
        [
            ("users", "changed"),
            ("users", "changed"),
            ("users", "created")
        ]
        .map(|(t, a)| (t.to_string(), a.to_string()))
    );
    assert!(
        account
            .iter()
            .all(|e| e["user"]["uuid"] == admin_uuid.as_str())
    );
    assert_eq!(
        change(&account[1], "roles[0]"),
        pair(
            "Application: Registers Patients",
            "Application: Manages Visits"
        )
    );
    // A password is noted as changed, never shown.
    assert_eq!(
        change(&account[0], "password_hash"),
        pair("(hidden)", "(hidden)")
    );
    assert!(
        !account[0].to_string().contains("argon2"),
        "{:?}",
        account[0]
    );
    let users = audit(&mut admin, "type=users&limit=100").await;
    assert!(users.iter().all(|e| e["recordType"] == "users"));
    assert!(users.iter().any(|e| e["record"] == nurse.as_str()));
    assert!(!users.iter().any(|e| e["recordType"] == "patients"));

    // A patient registered in error and purged: the purge keeps what she was.
    let q = register_patient(&mut admin, &st, "Joseph", "Doublon", "900002").await;
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/patient/{q}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    let gone = audit(&mut admin, &format!("patient={q}")).await;
    assert_eq!(
        actions(&gone),
        [("patients", "purged"), ("patients", "created")]
            .map(|(t, a)| (t.to_string(), a.to_string()))
    );
    assert_eq!(
        change(&gone[0], "names[0].family_name"),
        pair("Doublon", Value::Null)
    );
    assert_eq!(
        change(&gone[0], "identifiers[0].identifier"),
        pair(emr_id("900002"), Value::Null)
    );

    // By author: the clerk's changes are the registration and the correction, both from
    // the desk.
    let by_clerk = audit(&mut admin, &format!("user={clerk_uuid}")).await;
    assert_eq!(
        actions(&by_clerk),
        [("patients", "changed"), ("patients", "created")]
            .map(|(t, a)| (t.to_string(), a.to_string()))
    );
    assert!(by_clerk.iter().all(|e| e["clientAddress"] == DESK));
    // A login's own bookkeeping is the system's.
    let system = audit(&mut admin, "user=system&limit=100").await;
    assert!(!system.is_empty());
    assert!(system.iter().all(|e| e["user"].is_null()), "{system:?}");
    // Filters combine: her record is no user's record.
    assert_eq!(
        audit(&mut admin, &format!("record={p}&type=users")).await,
        Vec::<Value>::new()
    );
    assert_eq!(
        actions(&audit(&mut admin, &format!("patient={p}&type=patients")).await),
        [("patients", "changed"), ("patients", "created")]
            .map(|(t, a)| (t.to_string(), a.to_string()))
    );
    assert_eq!(
        audit(&mut admin, &format!("user={clerk_uuid}&type=conditions")).await,
        Vec::<Value>::new()
    );

    // By time: `since` and `until` bound it, both inclusive, to the millisecond. The
    // bound is the correction's own time, so that two changes made within one
    // millisecond cannot make the test depend on the machine's speed.
    let at = |e: &Value| e["dateCreated"].as_str().unwrap().to_string();
    let bound = at(corrected);
    let query_bound = bound.replace('+', "%2B");
    let until: Vec<Value> = history.iter().filter(|e| at(e) <= bound).cloned().collect();
    let since: Vec<Value> = history.iter().filter(|e| at(e) >= bound).cloned().collect();
    // The correction and the registration up to it; the correction and the condition's
    // changes from it.
    assert_eq!(&until[until.len() - 2..], &history[3..]);
    assert_eq!(&since[..4], &history[..4]);
    assert_eq!(
        audit(&mut admin, &format!("patient={p}&until={query_bound}")).await,
        until
    );
    assert_eq!(
        audit(&mut admin, &format!("patient={p}&since={query_bound}")).await,
        since
    );
    assert!(
        audit(
            &mut admin,
            &format!("patient={p}&since={query_bound}&until={query_bound}")
        )
        .await
        .contains(corrected)
    );
    assert_eq!(
        audit(
            &mut admin,
            &format!("user={clerk_uuid}&since={started}&until={edited}")
        )
        .await
        .len(),
        2
    );
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    assert_eq!(
        audit(&mut admin, &format!("patient={p}&until={today}"))
            .await
            .len(),
        5
    );
    assert_eq!(
        audit(&mut admin, &format!("patient={p}&since={today}"))
            .await
            .len(),
        5
    );
    assert_eq!(
        audit(&mut admin, &format!("patient={p}&until={yesterday}"))
            .await
            .len(),
        0
    );
    for bad in ["since=hier", "until=2026-13-45", "since=2026-11-28T25:00"] {
        let r = admin.get(&format!("{REST}/audit?{bad}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {:?}", r.body);
        assert!(r.body["error"]["message"].is_string(), "{:?}", r.body);
    }

    // Paged as every list, with its total.
    let r = admin
        .get(&format!("{REST}/audit?patient={p}&limit=2&totalCount=true"))
        .await;
    assert_eq!(r.body["totalCount"], 5);
    assert_eq!(r.body["results"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["results"][0]["action"], "unvoided");
    assert!(
        r.body["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["rel"] == "next"),
        "{:?}",
        r.body
    );
    let r = admin
        .get(&format!("{REST}/audit?patient={p}&limit=2&startIndex=4"))
        .await;
    assert_eq!(
        actions(r.body["results"].as_array().unwrap()),
        [("patients".to_string(), "created".to_string())]
    );
    assert!(
        r.body
            .get("links")
            .is_none_or(|l| !l.to_string().contains("next")),
        "{:?}",
        r.body
    );
    let r = admin.get(&format!("{REST}/audit?limit=0")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // Only with View Audit Log: not the clerk, not anonymously.
    let r = clerk.get(&format!("{REST}/audit?patient={p}")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = Client::new(st.clone())
        .get(&format!("{REST}/audit?patient={p}"))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{:?}", r.body);

    // A merge: the duplicate voided, her visit moved (filed under both), the kept
    // patient given her identifier.
    let dup = register_patient(&mut admin, &st, "Hélène", "Tshisekedi", "900003").await;
    let r = admin
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": dup, "visitType": OUTPATIENT, "location": location_uuid(&st, "Centre de santé Bondeko"),
                    "startDatetime": "2026-01-05T08:00:00.000+0000", "stopDatetime": "2026-01-05T09:00:00.000+0000"})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let r = admin
        .post(
            &format!("{REST}/patient/{p}/merge"),
            &json!({"nonPreferred": dup}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // Every entry of the merge's moment (the time of the duplicate's voiding).
    let voiding = audit(&mut admin, &format!("record={dup}&limit=1")).await;
    let moment = at(&voiding[0]).replace('+', "%2B");
    let merged = audit(
        &mut admin,
        &format!("since={moment}&until={moment}&limit=100"),
    )
    .await;
    assert!(
        merged
            .iter()
            .all(|e| e["user"]["uuid"] == admin_uuid.as_str()),
        "{merged:#?}"
    );
    // Written in one transaction, its three entries share one moment: the duplicate
    // voided, the kept patient changed, the visit moved.
    let mut kinds = actions(&merged);
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("patients", "changed"),
            ("patients", "voided"),
            ("visits", "changed")
        ]
        .map(|(t, a)| (t.to_string(), a.to_string()))
    );
    let of = |record: &str| {
        merged
            .iter()
            .find(|e| e["record"] == record)
            .unwrap_or_else(|| panic!("no entry for {record}: {merged:#?}"))
            .clone()
    };
    let voided = of(&dup);
    assert_eq!(change(&voided, "voided"), pair(false, true));
    assert_eq!(
        change(&voided, "voiding.void_reason"),
        pair(Value::Null, format!("Merged with patient {p}"))
    );
    let moved = of(&visit);
    assert_eq!(moved["action"], "changed");
    assert_eq!(change(&moved, "patient"), pair(dup.as_str(), p.as_str()));
    assert_eq!(moved["patients"], json!([dup, p]));
    let kept = of(&p);
    assert_eq!(
        change(&kept, "identifiers[1].identifier"),
        pair(Value::Null, emr_id("900003"))
    );
    assert_eq!(
        change(&kept, "identifiers[1].preferred"),
        pair(Value::Null, false)
    );
    // The move is in both patients' histories; the visit's creation stays in the
    // duplicate's (an entry is filed under the patients the record had when it was made).
    assert_eq!(
        actions(&audit(&mut admin, &format!("patient={dup}&type=visits")).await),
        [("visits", "changed"), ("visits", "created")].map(|(t, a)| (t.to_string(), a.to_string()))
    );
    assert_eq!(
        actions(&audit(&mut admin, &format!("patient={p}&type=visits")).await),
        [("visits", "changed")].map(|(t, a)| (t.to_string(), a.to_string()))
    );
    // The visit's own history has both.
    assert_eq!(
        actions(&audit(&mut admin, &format!("record={visit}")).await),
        [("visits", "changed"), ("visits", "created")].map(|(t, a)| (t.to_string(), a.to_string()))
    );
}

/// A wrong password counts against the account: that change is in the trail as the
/// system's (nobody is logged in), with the address the guess came from.
#[tokio::test]
async fn a_failed_login_is_recorded_with_its_address() {
    use base64::Engine;
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let admin_uuid = admin.user_uuid().await;
    let before = audit(&mut admin, &format!("record={admin_uuid}"))
        .await
        .len();
    let wrong = base64::engine::general_purpose::STANDARD.encode("admin:not-the-password");
    let mut guesser = Client::new(st.clone());
    let r = guesser
        .send(
            "GET",
            &format!("{REST}/session"),
            &[
                ("authorization", &format!("Basic {wrong}")),
                ("x-real-ip", DESK),
            ],
            None,
        )
        .await;
    assert_eq!(r.body["authenticated"], false, "{:?}", r.body);
    let entries = audit(&mut admin, &format!("record={admin_uuid}")).await;
    assert_eq!(entries.len(), before + 1, "{entries:#?}");
    let e = &entries[0];
    assert_eq!(e["user"], Value::Null, "{e:#}");
    assert_eq!(e["clientAddress"], DESK, "{e:#}");
    assert_eq!(change(e, "failed_logins"), pair(0, 1));
}
