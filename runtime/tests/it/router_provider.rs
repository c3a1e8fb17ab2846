//! Providers: an account's own provider, providers an administrator manages (linked to a
//! person or only named), the session's current provider, and encounters naming them.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const CONSULTATION_TYPE: &str = "91edcf31-cf56-43c3-a7d8-b8097fbd0035";
const CLINICIAN_ROLE: &str = "39394a04-5300-4e13-8008-aefffb53df48";

async fn current_provider(c: &mut Client) -> Value {
    c.get(&format!("{REST}/session")).await.body["currentProvider"].clone()
}

fn field_codes(r: &Response, field: &str) -> Vec<String> {
    r.body["error"]["fieldErrors"][field]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["code"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A patient identifier body no other patient of these tests has.
fn next_identifier() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(300_011);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        .to_string()
}

/// An encounter in a new visit of a new patient, recorded by `provider`.
async fn encounter_by(c: &mut Client, st: &runtime::http::AppState, provider: &str) -> Response {
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(st, "Josué", "Mukendi", &next_identifier()),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let patient = r.body["uuid"].as_str().unwrap().to_string();
    let location = location_uuid(st, "Centre de santé Bondeko");
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": patient, "visitType": OUTPATIENT, "location": location}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let body = json!({"patient": patient, "encounterType": CONSULTATION_TYPE, "visit": r.body["uuid"],
        "location": location,
        "encounterProviders": [{"provider": provider, "encounterRole": CLINICIAN_ROLE}]});
    c.post(&format!("{REST}/encounter"), &body.to_string())
        .await
}

#[tokio::test]
async fn a_managed_provider_becomes_the_accounts_current_provider_until_it_is_retired() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let mut clerk = registration_clerk(&mut admin, &st, "accueil.rose").await;
    let clerk_user = clerk.user_uuid().await;
    let account = admin.get(&format!("{REST}/user/{clerk_user}")).await.body;
    let person = account["person"]["uuid"].as_str().unwrap().to_string();

    // Until a provider is managed, the account acts as its own, under its system id.
    let own = current_provider(&mut clerk).await;
    let listed = admin
        .get(&format!("{REST}/provider?user={clerk_user}"))
        .await;
    assert_eq!(listed.body["results"].as_array().unwrap().len(), 1);
    assert_eq!(listed.body["results"][0]["uuid"], own["uuid"]);
    assert_eq!(
        listed.body["results"][0]["display"],
        format!("{} - Rose Ilunga", account["systemId"].as_str().unwrap())
    );

    // The clerk may read providers but not manage them.
    let r = clerk
        .post(
            &format!("{REST}/provider"),
            &json!({"person": person, "identifier": "ACC-7"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);

    let r = admin
        .post(
            &format!("{REST}/provider?v=full"),
            &json!({"person": person, "identifier": "ACC-7", "attributes": []}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let managed = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["display"], "ACC-7 - Rose Ilunga");
    assert_eq!(r.body["person"]["uuid"], person.as_str());
    assert_eq!(r.body["retired"], false);
    assert!(r.body["auditInfo"]["dateCreated"].is_string());

    // The account now records as the managed provider, and only that one is listed for it.
    assert_eq!(current_provider(&mut clerk).await["uuid"], managed.as_str());
    let listed = admin
        .get(&format!("{REST}/provider?user={clerk_user}"))
        .await;
    let uuids: Vec<&str> = listed.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(uuids, vec![managed.as_str()]);
    let found = admin.get(&format!("{REST}/provider?q=acc-7")).await;
    assert_eq!(found.body["results"][0]["uuid"], managed.as_str());

    // Encounters name it, and keep it once it is retired.
    let r = encounter_by(&mut admin, &st, &managed).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let encounter = r.body["uuid"].as_str().unwrap().to_string();
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/provider/{managed}?reason=parti"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    let read = admin
        .get(&format!(
            "{REST}/provider/{managed}?v=custom:(retired,retireReason)"
        ))
        .await;
    assert_eq!(read.body["retired"], true);
    assert_eq!(read.body["retireReason"], "parti");
    let full = admin
        .get(&format!("{REST}/encounter/{encounter}?v=full"))
        .await;
    assert_eq!(
        full.body["encounterProviders"][0]["provider"]["display"],
        "ACC-7 - Rose Ilunga"
    );

    // Retired: not listed by default, and the account has no current provider.
    let listed = admin.get(&format!("{REST}/provider?q=ACC-7")).await;
    assert_eq!(listed.body["results"].as_array().unwrap().len(), 0);
    let listed = admin
        .get(&format!("{REST}/provider?q=ACC-7&includeAll=true"))
        .await;
    assert_eq!(listed.body["results"].as_array().unwrap().len(), 1);
    assert!(current_provider(&mut clerk).await.is_null());

    // Providers are never purged; unretiring gives the account its provider back.
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/provider/{managed}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let r = admin
        .post(
            &format!("{REST}/provider/{managed}"),
            &json!({"retired": false}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(current_provider(&mut clerk).await["uuid"], managed.as_str());
}

#[tokio::test]
async fn provider_rules_are_those_of_openmrs() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let r = admin
        .post(
            &format!("{REST}/provider"),
            &json!({"name": "Dr Kasongo (visiting)", "identifier": "VIS-1"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["display"], "VIS-1 - Dr Kasongo (visiting)");
    assert!(r.body["person"].is_null());
    let named = r.body["uuid"].as_str().unwrap().to_string();

    let refused = [
        (
            json!({"identifier": "X-1"}),
            "name",
            "Provider.error.personOrName.required",
        ),
        (
            json!({"name": "Sans numéro"}),
            "identifier",
            "Provider.error.identifier.required",
        ),
        (
            json!({"name": "Doublon", "identifier": "vis-1"}),
            "identifier",
            "Provider.error.duplicateIdentifier",
        ),
        (
            json!({"person": "no-such-person", "identifier": "X-2"}),
            "person",
            "error.invalid",
        ),
        (
            json!({"name": "Attributs", "identifier": "X-3", "attributes": [{"attributeType": "x", "value": "y"}]}),
            "attributes",
            "error.invalid",
        ),
        (
            json!({"name": "Ligne\u{0}nulle", "identifier": "X-4"}),
            "name",
            "error.invalid",
        ),
    ];
    for (body, field, code) in refused {
        let r = admin
            .post(&format!("{REST}/provider"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert!(
            field_codes(&r, field).iter().any(|c| c == code),
            "{body}: {:?}",
            r.body
        );
    }
    let r = admin
        .post(
            &format!("{REST}/provider"),
            &json!({"name": "Champ inconnu", "identifier": "X-5", "speciality": "x"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);

    // A retirement needs its reason.
    let r = admin
        .post(
            &format!("{REST}/provider/{named}"),
            &json!({"retired": true}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(field_codes(&r, "retireReason"), vec!["error.null"]);

    // Identifiers stay unique on a change too.
    let r = admin
        .post(
            &format!("{REST}/provider"),
            &json!({"name": "Infirmière de passage", "identifier": "VIS-2"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let second = r.body["uuid"].as_str().unwrap().to_string();
    let r = admin
        .post(
            &format!("{REST}/provider/{second}"),
            &json!({"identifier": "VIS-1"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(
        field_codes(&r, "identifier"),
        vec!["Provider.error.duplicateIdentifier"]
    );

    // An encounter names a provider without an account by its name.
    let r = encounter_by(&mut admin, &st, &named).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let full = admin
        .get(&format!(
            "{REST}/encounter/{}?v=full",
            r.body["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        full.body["encounterProviders"][0]["provider"]["display"],
        "VIS-1 - Dr Kasongo (visiting)"
    );

    // An encounter cannot name a provider that does not exist.
    let r = encounter_by(&mut admin, &st, "no-such-provider").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(field_codes(&r, "encounterProviders"), vec!["error.invalid"]);
}

#[tokio::test]
async fn a_provider_made_for_an_account_may_take_the_accounts_system_id() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let mut clerk = registration_clerk(&mut admin, &st, "accueil.paul").await;
    let clerk_user = clerk.user_uuid().await;
    let account = admin.get(&format!("{REST}/user/{clerk_user}")).await.body;
    let system_id = account["systemId"].as_str().unwrap();
    let r = admin
        .post(
            &format!("{REST}/provider"),
            &json!({"person": account["person"]["uuid"], "identifier": system_id}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(current_provider(&mut clerk).await["uuid"], r.body["uuid"]);
    // Retiring the account's own provider, made managed, keeps it retired on later changes.
    let mut other = registration_clerk(&mut admin, &st, "accueil.lea").await;
    let own = current_provider(&mut other).await["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = admin
        .send(
            "DELETE",
            &format!("{REST}/provider/{own}?reason=parti"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    let r = admin
        .post(
            &format!("{REST}/provider/{own}"),
            &json!({"identifier": "LEA-1"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["retired"], true);
    assert!(current_provider(&mut other).await.is_null());
}

#[tokio::test]
async fn changing_an_accounts_own_provider_keeps_its_uuid() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let own = current_provider(&mut admin).await;
    let uuid = own["uuid"].as_str().unwrap().to_string();
    let r = encounter_by(&mut admin, &st, &uuid).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let encounter = r.body["uuid"].as_str().unwrap().to_string();

    let r = admin
        .post(
            &format!("{REST}/provider/{uuid}"),
            &json!({"identifier": "ADM-1"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["uuid"], uuid.as_str());
    assert_eq!(r.body["identifier"], "ADM-1");
    let now = current_provider(&mut admin).await;
    assert_eq!(now["uuid"], uuid.as_str());
    assert!(now["display"].as_str().unwrap().starts_with("ADM-1 - "));
    // The encounter recorded before the change shows the provider as it is now.
    let full = admin
        .get(&format!("{REST}/encounter/{encounter}?v=full"))
        .await;
    assert_eq!(
        full.body["encounterProviders"][0]["provider"]["uuid"],
        uuid.as_str()
    );
    assert!(
        full.body["encounterProviders"][0]["provider"]["display"]
            .as_str()
            .unwrap()
            .starts_with("ADM-1 - ")
    );
    // Listed once, as the managed provider it has become.
    let listed = admin.get(&format!("{REST}/provider")).await;
    let count = listed.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["uuid"] == uuid.as_str())
        .count();
    assert_eq!(count, 1);
}
