//! Merging a duplicate patient into the one kept (`POST patient/{preferred}/merge`), as a
//! data manager does it through REST: every kind of record the other patient holds moves,
//! the other patient is voided and her identifiers become the kept one's, the refusals of
//! core's `mergePatients`, the survival of a merge through a backup and restore, and the
//! list of likely duplicates (`GET patient/duplicates`).

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const FHIR: &str = "/openmrs/ws/fhir2/R4";
const OUTPATIENT_VISIT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const VITALS_TYPE: &str = "023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42";
const ORDER_ENCOUNTER: &str = "39da3525-afe4-45ff-8977-c53b7b359158";
const OUTPATIENT_CARE: &str = "6f0c9a92-6f24-11e3-af88-005056821db0";
const PARACETAMOL: &str = "73577264-62d4-42cf-bd81-c18cb147b3f7";
const THRICE_DAILY: &str = "38c794d0-0f9e-4796-a7f4-0448923b71c0";
const TABLET: &str = "1513AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const ORAL: &str = "160240AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const DAYS: &str = "1072AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const DRUG_ALLERGENS: &str = "162552AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const SEVERE: &str = "1500AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const HIV: &str = "55b7349b-d2b5-40d5-a813-7bc1044ca6b0";
const HIV_STATE_A: &str = "d53d6b86-d1fd-4c86-be22-3754c24d2f58";
const MY_LIST: &str = "e71857cb-33af-4f2c-86ab-7223bcfa37ad";
const LIST_HANDLER: &str =
    "org.openmrs.module.cohort.definition.handler.DefaultCohortDefinitionHandler";
const CPN: &str = "fa826f46-5383-45d4-b118-972476624277";
const CONSULTATION_ROOM: &str = "9fd33057-db14-4446-828a-90e96c109b6b";
const CASH: &str = "fc99ef44-6260-44b3-90db-05e7d0a91a14";
const CASH_POINT: &str = "fa8fab08-040b-4f5e-9a6d-e23268ccbdc5";
const TRIAGE: &str = "1bdf120a-03b8-4621-8e18-5cd2b68b514c";
const OBSERVATION_WARD: &str = "Bondeko - Salle d'observation";
const BOUNDARY: &str = "----dse-rdc-merge-boundary";
/// The smallest valid PNG (1×1, transparent).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\xff\xff?\0\x05\xfe\x02\xfe\xa7\x35\x81\x84\0\0\0\0IEND\xaeB`\x82";

fn ago(minutes: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::minutes(minutes))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string()
}

fn concept(st: &runtime::http::AppState, reference: &str) -> String {
    st.catalog.load().concept(reference).unwrap().uuid.clone()
}

fn uuid_of(r: &Response) -> String {
    r.body["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("no uuid in {:?}", r.body))
        .to_string()
}

async fn merge(c: &mut Client, preferred: &str, non_preferred: &str) -> Response {
    c.post(
        &format!("{REST}/patient/{preferred}/merge"),
        &json!({"nonPreferred": non_preferred}).to_string(),
    )
    .await
}

async fn start_visit(c: &mut Client, st: &runtime::http::AppState, patient: &str) -> String {
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": patient, "visitType": OUTPATIENT_VISIT,
                    "location": location_uuid(st, "Centre de santé Bondeko"), "startDatetime": ago(120)})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    uuid_of(&r)
}

async fn end_visit(c: &mut Client, visit: &str) {
    let r = c
        .post(
            &format!("{REST}/visit/{visit}"),
            &json!({"stopDatetime": ago(0)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
}

/// A multipart body as the O3 attachments app uploads a picture.
fn multipart(patient: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in [("fileCaption", "Plaie au pied"), ("patient", patient)] {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"pied.png\"\r\nContent-Type: image/png\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(PNG);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// The uuids of every kind of record seeded on one patient.
#[derive(Debug, Default)]
struct Seeded {
    visit: String,
    encounter: String,
    obs: String,
    diagnosis: String,
    order_encounter: String,
    order: String,
    dispense: String,
    queue_entry: String,
    bed: Value,
    condition: String,
    allergy: String,
    enrolment: String,
    relationship: String,
    list: String,
    membership: String,
    appointment: String,
    attachment: String,
    bill: String,
}

/// Seeds on `patient`, through the calls the O3 apps make, one record of every kind a
/// patient can hold: a visit (ended) with a vitals encounter and its observation, a
/// diagnosis, a signed drug order dispensed, a queue entry, then a bed, a condition, an
/// allergy, an HIV enrolment, a relationship to `relative`, a patient-list membership, an
/// appointment, an attachment and a bill.
async fn seed_everything(
    c: &mut Client,
    st: &runtime::http::AppState,
    patient: &str,
    relative: &str,
) -> Seeded {
    let mut s = Seeded {
        visit: start_visit(c, st, patient).await,
        ..Seeded::default()
    };
    let bondeko = location_uuid(st, "Centre de santé Bondeko");

    // A vitals encounter with a temperature, and a diagnosis on it.
    let temperature = concept(st, "DRC-EMR:5001");
    let r = c
        .post(
            &format!("{REST}/encounter"),
            &json!({"patient": patient, "encounterType": VITALS_TYPE, "visit": s.visit,
                    "encounterDatetime": ago(90), "obs": [{"concept": temperature, "value": 38.4}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.encounter = uuid_of(&r);
    s.obs = r.body["obs"][0]["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/patientdiagnoses"),
            &json!({"encounter": s.encounter, "patient": patient, "condition": null,
                    "diagnosis": {"coded": concept(st, "DRC-EMR:2001")}, "certainty": "PROVISIONAL", "rank": 1})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.diagnosis = uuid_of(&r);

    // A signed prescription, dispensed in full.
    let provider = c.get(&format!("{REST}/session")).await.body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let drug_concept = st.catalog.load().drug(PARACETAMOL).unwrap().concept.clone();
    let body = json!({"patient": patient, "encounterType": ORDER_ENCOUNTER, "encounterDatetime": ago(60),
        "visit": s.visit, "location": bondeko, "orders": [{
        "action": "NEW", "type": "drugorder", "patient": patient, "careSetting": OUTPATIENT_CARE,
        "orderer": provider, "drug": PARACETAMOL, "concept": drug_concept, "dose": 1, "doseUnits": TABLET,
        "route": ORAL, "frequency": THRICE_DAILY, "asNeeded": false, "numRefills": 0, "quantity": 15,
        "quantityUnits": TABLET, "duration": 5, "durationUnits": DAYS,
        "dosingType": "org.openmrs.SimpleDosingInstructions", "dosingInstructions": "après les repas",
        "dateActivated": ago(30)}]});
    let r = send_json(c, "POST", &format!("{REST}/encounter"), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.order_encounter = uuid_of(&r);
    s.order = r.body["orders"][0]["uuid"].as_str().unwrap().to_string();
    let r = c
        .get(&format!(
            "{FHIR}/MedicationRequest?encounter={}&_revinclude=MedicationDispense:prescription",
            s.order_encounter
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let request = r.body["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["resource"])
        .find(|r| r["resourceType"] == "MedicationRequest")
        .unwrap()
        .clone();
    let dispense = json!({
        "resourceType": "MedicationDispense", "status": "completed",
        "authorizingPrescription": [{"reference": format!("MedicationRequest/{}", s.order), "type": "MedicationRequest"}],
        "medicationReference": request["medicationReference"], "subject": request["subject"],
        "performer": [{"actor": {"reference": format!("Practitioner/{provider}")}}],
        "location": {"reference": ""},
        "whenHandedOver": chrono::Utc::now().to_rfc3339(), "whenPrepared": chrono::Utc::now().to_rfc3339(),
        "quantity": {"value": 15.0, "code": request["dispenseRequest"]["quantity"]["code"], "unit": request["dispenseRequest"]["quantity"]["unit"]},
        "dosageInstruction": [{"text": "après les repas", "timing": {"code": {"coding": [{"code": THRICE_DAILY}]}},
            "asNeededBoolean": false, "route": request["dosageInstruction"][0]["route"],
            "doseAndRate": request["dosageInstruction"][0]["doseAndRate"]}],
        "substitution": {"wasSubstituted": false, "reason": [{"coding": [{"code": null}]}], "type": {"coding": [{"code": null}]}}
    });
    let r = send_json(c, "POST", &format!("{FHIR}/MedicationDispense"), &dispense).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.dispense = r.body["id"].as_str().unwrap().to_string();

    // Queued at triage in the visit, which then ends (closing the entry).
    let r = c
        .post(
            &format!("{REST}/visit-queue-entry"),
            &json!({"visit": {"uuid": s.visit},
                   "queueEntry": {"status": {"uuid": concept(st, "DRC-EMR:6011")},
                                  "priority": {"uuid": concept(st, "DRC-EMR:6021")},
                                  "queue": {"uuid": TRIAGE}, "patient": {"uuid": patient},
                                  "startedAt": ago(50), "sortWeight": 0}})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.queue_entry = r.body["queueEntry"]["uuid"].as_str().unwrap().to_string();
    end_visit(c, &s.visit).await;

    // In a bed of the observation ward.
    let ward = location_uuid(st, OBSERVATION_WARD);
    let r = c
        .post(
            &format!("{REST}/bedtype"),
            r#"{"name": "Lit standard", "displayName": "Standard"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = c
        .post(
            &format!("{REST}/bed"),
            &json!({"bedNumber": "1", "bedType": "Lit standard", "row": 1, "column": 1,
                    "status": "AVAILABLE", "locationUuid": ward})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.bed = r.body.clone();
    let r = c
        .post(
            &format!("{REST}/beds/{}", s.bed["id"]),
            &json!({"patientUuid": patient}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);

    // Her problem list and allergies.
    let r = c
        .post(
            &format!("{REST}/condition"),
            &json!({"patient": patient, "condition": {"coded": "DRC-EMR:2001"}, "clinicalStatus": "ACTIVE",
                    "verificationStatus": "CONFIRMED", "additionalDetail": "vu au CS"})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.condition = uuid_of(&r);
    let r = c
        .get(&format!("{REST}/concept/{DRUG_ALLERGENS}?v=full"))
        .await;
    let amoxicillin = r.body["setMembers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["display"] == "Amoxicilline")
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = c
        .post(
            &format!("{REST}/patient/{patient}/allergy"),
            &json!({"allergen": {"allergenType": "DRUG", "codedAllergen": {"uuid": amoxicillin}},
                    "severity": {"uuid": SEVERE}, "comment": "Urticaire"})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.allergy = uuid_of(&r);

    // Enrolled in the HIV programme.
    let r = c
        .post(
            &format!("{REST}/programenrollment"),
            &json!({"patient": patient, "program": HIV, "dateEnrolled": "2026-03-01T08:00:00.000+0000",
                    "location": bondeko, "states": [{"state": HIV_STATE_A, "startDate": "2026-03-01T08:00:00.000+0000"}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.enrolment = uuid_of(&r);

    // The mother of `relative`.
    let kind = st
        .catalog
        .load()
        .content
        .relationship_types
        .iter()
        .find(|t| !t.retired)
        .cloned()
        .unwrap();
    let r = c
        .post(
            &format!("{REST}/relationship"),
            &json!({"personA": patient, "relationshipType": kind.uuid, "personB": relative, "startDate": "2020-03-01"})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.relationship = uuid_of(&r);

    // On a patient list.
    let r = c
        .post(
            &format!("{REST}/cohortm/cohort/"),
            &json!({"name": "CPN du mardi", "description": "Suivi", "cohortType": MY_LIST,
                    "location": location_uuid(st, "Bondeko - Accueil"), "startDate": "2026-11-20T08:00:00.000Z",
                    "groupCohort": false, "definitionHandlerClassname": LIST_HANDLER})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.list = uuid_of(&r);
    let r = c
        .post(
            &format!("{REST}/cohortm/cohortmember"),
            &json!({"cohort": s.list, "patient": patient, "startDate": "2026-11-25T09:00:00.000+0100"})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.membership = uuid_of(&r);

    // An appointment tomorrow.
    let day = (chrono::Utc::now() + chrono::Duration::days(1)).format("%Y-%m-%d");
    let r = c
        .post(
            &format!("{REST}/appointment"),
            &json!({"appointmentKind": "Scheduled", "status": "", "serviceUuid": CPN,
                "startDateTime": format!("{day}T09:00:00+00:00"), "endDateTime": format!("{day}T09:20:00+00:00"),
                "locationUuid": CONSULTATION_ROOM, "providers": [], "patientUuid": patient,
                "comments": "Deuxième CPN", "dateAppointmentScheduled": chrono::Utc::now().to_rfc3339()})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    s.appointment = uuid_of(&r);

    // A picture of her wound.
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    let r = c
        .send_bytes(
            "POST",
            &format!("{REST}/attachment"),
            &[("content-type", &content_type)],
            multipart(patient),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.attachment = uuid_of(&r);

    // A bill for a consultation.
    let r = c
        .get(&format!(
            "{REST}/billing/billableService?v=custom:(uuid,name,servicePrices:(price,paymentMode))"
        ))
        .await;
    let service = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "Consultation générale")
        .unwrap()
        .clone();
    let price = service["servicePrices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["paymentMode"]["uuid"] == CASH)
        .unwrap()["price"]
        .clone();
    let r = c
        .post(
            &format!("{REST}/billing/bill"),
            &json!({"cashPoint": CASH_POINT, "cashier": "", "payments": [], "patient": patient,
                "status": "PENDING", "lineItems": [{"quantity": 1, "price": price, "lineItemOrder": 0,
                "status": "PENDING", "billableService": service["uuid"]}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    s.bill = uuid_of(&r);
    s
}

/// The uuids listed by `uri` (a REST `results` list, a bare array, or a FHIR bundle).
async fn listed(c: &mut Client, uri: &str) -> Vec<String> {
    let r = c.get(uri).await;
    assert_eq!(r.status, StatusCode::OK, "{uri}: {:?}", r.body);
    uuids_in(&r.body)
}

fn uuids_in(body: &Value) -> Vec<String> {
    let items: Vec<&Value> = if let Some(a) = body.as_array() {
        a.iter().collect()
    } else if let Some(entries) = body["entry"].as_array() {
        entries.iter().map(|e| &e["resource"]).collect()
    } else if let Some(r) = body["results"].as_array() {
        r.iter().collect()
    } else {
        Vec::new()
    };
    items
        .iter()
        .filter_map(|i| i["uuid"].as_str().or(i["id"].as_str()))
        .map(str::to_string)
        .collect()
}

/// Every record of `s`, by the call that lists a patient's records of its kind (`{p}`
/// standing for the patient): (kind, list, the seeded record's uuid).
fn lists(s: &Seeded) -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "visit",
            "{REST}/visit?patient={p}&includeInactive=true",
            s.visit.clone(),
        ),
        (
            "encounter",
            "{REST}/encounter?patient={p}",
            s.encounter.clone(),
        ),
        (
            "order encounter",
            "{REST}/encounter?patient={p}",
            s.order_encounter.clone(),
        ),
        ("observation", "{REST}/obs?patient={p}", s.obs.clone()),
        (
            "diagnosis",
            "{REST}/patientdiagnoses?patient={p}",
            s.diagnosis.clone(),
        ),
        ("order", "{REST}/order?patient={p}", s.order.clone()),
        (
            "dispense",
            "{FHIR}/MedicationDispense?patient={p}",
            s.dispense.clone(),
        ),
        (
            "queue entry",
            "{REST}/queue-entry?patient={p}",
            s.queue_entry.clone(),
        ),
        (
            "condition",
            "{REST}/condition?patientUuid={p}",
            s.condition.clone(),
        ),
        ("allergy", "{REST}/patient/{p}/allergy", s.allergy.clone()),
        (
            "enrolment",
            "{REST}/programenrollment?patient={p}",
            s.enrolment.clone(),
        ),
        (
            "relationship",
            "{REST}/relationship?person={p}",
            s.relationship.clone(),
        ),
        (
            "membership",
            "{REST}/cohortm/cohortmember?patient={p}",
            s.membership.clone(),
        ),
        (
            "attachment",
            "{REST}/attachment?patient={p}&includeEncounterless=true",
            s.attachment.clone(),
        ),
        (
            "bill",
            "{REST}/billing/bill?patientUuid={p}",
            s.bill.clone(),
        ),
    ]
}

fn fill(template: &str, patient: &str) -> String {
    template
        .replace("{REST}", REST)
        .replace("{FHIR}", FHIR)
        .replace("{p}", patient)
}

async fn appointments_of(c: &mut Client, patient: &str) -> Vec<String> {
    let r = c
        .post(
            &format!("{REST}/appointments/search"),
            &json!({"patientUuid": patient, "startDate": "2000-01-01"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    uuids_in(&r.body)
}

async fn bed_of(c: &mut Client, patient: &str) -> Value {
    let r = c.get(&format!("{REST}/beds?patientUuid={patient}")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    r.body["results"].clone()
}

/// Asserts that every record of `s` is listed under `owner` and none under `other`.
async fn assert_all_belong_to(c: &mut Client, s: &Seeded, owner: &str, other: &str) {
    for (kind, template, uuid) in lists(s) {
        let mine = listed(c, &fill(template, owner)).await;
        assert!(
            mine.contains(&uuid),
            "the {kind} {uuid} is not listed for {owner}: {mine:?}"
        );
        // (A voided patient's allergies are not listed at all: 404.)
        let r = c.get(&fill(template, other)).await;
        assert!(
            r.status == StatusCode::OK || r.status == StatusCode::NOT_FOUND,
            "{kind}: {:?}",
            r.body
        );
        let theirs = uuids_in(&r.body);
        assert!(
            !theirs.contains(&uuid),
            "the {kind} {uuid} is still listed for {other}"
        );
    }
    assert!(appointments_of(c, owner).await.contains(&s.appointment));
    assert!(!appointments_of(c, other).await.contains(&s.appointment));
    let bed = bed_of(c, owner).await;
    assert_eq!(bed[0]["bedId"], s.bed["id"], "{bed:?}");
    assert_eq!(bed[0]["patients"][0]["uuid"], owner, "{bed:?}");
    assert_eq!(bed_of(c, other).await, json!([]));
}

/// The uuids of the patients `patient?q=` finds.
async fn search(c: &mut Client, q: &str) -> Vec<String> {
    listed(c, &format!("{REST}/patient?q={q}")).await
}

/// Every kind of record of the non-preferred patient moves to the preferred one, and reads
/// back as hers through the calls the chart makes; the other patient is voided with
/// core's reason, her identifiers are the kept patient's (non-preferred), search finds
/// the kept patient once, and the answer counts what moved of each kind.
#[tokio::test]
async fn a_merge_moves_every_kind_of_record_to_the_preferred_patient() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let kept = register_patient(&mut c, &st, "Aline", "Kabila", "810001").await;
    let duplicate = register_patient(&mut c, &st, "Aline", "Kabila", "810002").await;
    let relative = register_patient(&mut c, &st, "Joseph", "Lukusa", "810003").await;
    let s = seed_everything(&mut c, &st, &duplicate, &relative).await;
    assert_all_belong_to(&mut c, &s, &duplicate, &kept).await;

    let r = merge(&mut c, &kept, &duplicate).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let moved = r.body["moved"].clone();
    assert_eq!(r.body["preferred"]["uuid"], kept.as_str());
    assert_eq!(
        r.body["nonPreferred"],
        json!({"uuid": duplicate, "voided": true})
    );
    assert_eq!(
        r.body["moved"],
        json!({
            "visits": 1, "encounters": 2, "observations": 1, "diagnoses": 1,
            "orders": 1, "medication dispenses": 1, "queue entries": 1,
            "bed assignments": 1, "beds": 1, "conditions": 1, "allergies": 1,
            "programme enrolments": 1, "relationships": 1, "patient list memberships": 1,
            "appointments": 1, "attachments": 1, "bills": 1
        }),
        "{:?}",
        r.body["moved"]
    );

    // Every record is hers now, in every list the chart reads.
    assert_all_belong_to(&mut c, &s, &kept, &duplicate).await;
    // Read alone, the records name her too.
    for uri in [
        format!("{REST}/visit/{}?v=full", s.visit),
        format!("{REST}/encounter/{}?v=full", s.encounter),
        format!("{REST}/order/{}?v=full", s.order),
        format!("{REST}/condition/{}?v=full", s.condition),
        format!("{REST}/programenrollment/{}?v=full", s.enrolment),
        format!("{REST}/billing/bill/{}?v=full", s.bill),
        format!("{REST}/queue-entry/{}?v=full", s.queue_entry),
        format!("{REST}/patientdiagnoses/{}?v=full", s.diagnosis),
        format!("{REST}/cohortm/cohortmember/{}?v=full", s.membership),
    ] {
        let r = c.get(&uri).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}: {:?}", r.body);
        assert_eq!(
            r.body["patient"]["uuid"],
            kept.as_str(),
            "{uri}: {:?}",
            r.body
        );
    }
    let r = c.get(&format!("{REST}/obs/{}?v=full", s.obs)).await;
    assert_eq!(r.body["person"]["uuid"], kept.as_str(), "{:?}", r.body);
    // A relationship with a third person moves and stays in force.
    let r = c
        .get(&format!("{REST}/relationship/{}?v=full", s.relationship))
        .await;
    assert_eq!(r.body["personA"]["uuid"], kept.as_str());
    assert_eq!(r.body["personB"]["uuid"], relative.as_str());
    assert_eq!(r.body["voided"], false, "{:?}", r.body);
    let r = c
        .get(&format!("{REST}/appointment?uuid={}", s.appointment))
        .await;
    assert_eq!(r.body["patient"]["uuid"], kept.as_str(), "{:?}", r.body);
    let r = c
        .get(&format!("{FHIR}/MedicationDispense/{}", s.dispense))
        .await;
    assert_eq!(
        r.body["subject"]["reference"],
        format!("Patient/{kept}"),
        "{:?}",
        r.body
    );

    // The duplicate is voided, with core's reason.
    let r = c.get(&format!("{REST}/patient/{duplicate}?v=full")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["voided"], true);
    assert_eq!(
        r.body["auditInfo"]["voidReason"],
        format!("Merged with patient {kept}")
    );
    // Her identifier is the kept patient's, not preferred; the kept one's stays preferred.
    let r = c.get(&format!("{REST}/patient/{kept}?v=full")).await;
    let ids: Vec<(String, bool)> = r.body["identifiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["identifier"].as_str().unwrap().to_string(),
                i["preferred"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ids,
        vec![(emr_id("810001"), true), (emr_id("810002"), false)]
    );
    // The same name is not copied twice.
    assert_eq!(r.body["person"]["names"].as_array().unwrap().len(), 1);
    // Search finds the kept patient once, by name and by either identifier.
    assert_eq!(search(&mut c, "Kabila").await, vec![kept.clone()]);
    assert_eq!(search(&mut c, &emr_id("810002")).await, vec![kept.clone()]);
    assert_eq!(
        listed(
            &mut c,
            &format!("{REST}/patient?identifier={}", emr_id("810002"))
        )
        .await,
        vec![kept.clone()]
    );
    // The freed identifier is not free: it is hers.
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(&st, "Autre", "Personne", "810002"),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // Every write of the seeding (through REST, FHIR and multipart uploads alike) and of
    // the merge is in the duplicate's history, as the administrator's; each record the
    // merge moved is there once (the bed she occupied too: its occupant names her).
    let admin = c.user_uuid().await;
    let r = c
        .get(&format!(
            "{REST}/audit?patient={duplicate}&limit=100&totalCount=true"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let history = r.body["results"].as_array().unwrap();
    assert_eq!(r.body["totalCount"], history.len());
    assert!(
        history.iter().all(|e| e["user"]["uuid"] == admin.as_str()),
        "{history:#?}"
    );
    let moves: Vec<&Value> = history
        .iter()
        .filter(|e| {
            e["changes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["before"] == duplicate.as_str() && c["after"] == kept.as_str())
        })
        .collect();
    let moved_total: u64 = moved
        .as_object()
        .unwrap()
        .iter()
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert_eq!(moves.len() as u64, moved_total, "{moves:#?}");
    // A voided patient is not merged again.
    let r = merge(&mut c, &kept, &duplicate).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
}

/// What core's `mergePatients` refuses is refused with 400 and an OpenMRS error body, and
/// nothing is written: a patient with herself, a voided patient, two patients both in an
/// active visit, both actively enrolled in one programme, both with active orders of one
/// order type; a body without `nonPreferred` is 400, an unknown patient on either side
/// 404, and a caller without Edit Patients 403.
#[tokio::test]
async fn a_merge_is_refused_when_it_must_be() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let a = register_patient(&mut c, &st, "Ruth", "Mulumba", "820001").await;
    let b = register_patient(&mut c, &st, "Ruth", "Mulumba", "820002").await;
    let refused = |r: &Response, words: &str| {
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
        let message = r.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(words),
            "{words:?} not in {message:?}: {:?}",
            r.body
        );
    };

    // With herself.
    refused(&merge(&mut c, &a, &a).await, "herself");
    // Without the other patient, or with something else than her uuid.
    for body in [
        json!({}),
        json!({"nonPreferred": ""}),
        json!({"nonPreferred": 12}),
        json!({"nonPreferred": b, "reason": "doublon"}),
    ] {
        let r = c
            .post(&format!("{REST}/patient/{a}/merge"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert!(r.body["error"]["message"].is_string(), "{:?}", r.body);
    }
    // Unknown on either side.
    let unknown = "00000000-0000-4000-8000-000000000000";
    assert_eq!(
        merge(&mut c, &a, unknown).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        merge(&mut c, unknown, &a).await.status,
        StatusCode::NOT_FOUND
    );

    // Both in an active visit: refused, and nothing moved.
    let visit_a = start_visit(&mut c, &st, &a).await;
    let visit_b = start_visit(&mut c, &st, &b).await;
    refused(&merge(&mut c, &a, &b).await, "active visit");
    assert_eq!(
        listed(&mut c, &format!("{REST}/visit?patient={b}")).await,
        vec![visit_b.clone()]
    );
    assert_eq!(
        listed(&mut c, &format!("{REST}/visit?patient={a}")).await,
        vec![visit_a.clone()]
    );
    let r = c.get(&format!("{REST}/patient/{b}?v=full")).await;
    assert_eq!(r.body["voided"], false);
    assert_eq!(r.body["identifiers"].as_array().unwrap().len(), 1);
    let r = c.get(&format!("{REST}/patient/{a}?v=full")).await;
    assert_eq!(r.body["identifiers"].as_array().unwrap().len(), 1);
    assert_eq!(search(&mut c, "Mulumba").await.len(), 2);
    end_visit(&mut c, &visit_b).await;

    // Both with an active drug order: refused (core's rule on one order type).
    let provider = c.get(&format!("{REST}/session")).await.body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let drug_concept = st.catalog.load().drug(PARACETAMOL).unwrap().concept.clone();
    let mut orders = Vec::new();
    for (p, visit) in [(&a, &visit_a), (&b, &visit_b)] {
        let body = json!({"patient": p, "encounterType": ORDER_ENCOUNTER, "encounterDatetime": ago(60),
            "visit": visit, "orders": [{
            "action": "NEW", "type": "drugorder", "patient": p, "careSetting": OUTPATIENT_CARE,
            "orderer": provider, "drug": PARACETAMOL, "concept": drug_concept, "dose": 1, "doseUnits": TABLET,
            "route": ORAL, "frequency": THRICE_DAILY, "asNeeded": false, "numRefills": 0, "quantity": 15,
            "quantityUnits": TABLET, "duration": 5, "durationUnits": DAYS,
            "dosingType": "org.openmrs.SimpleDosingInstructions", "dateActivated": ago(30)}]});
        let r = send_json(&mut c, "POST", &format!("{REST}/encounter"), &body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        orders.push(r.body["orders"][0]["uuid"].as_str().unwrap().to_string());
    }
    refused(&merge(&mut c, &a, &b).await, "active orders");
    assert_eq!(
        listed(&mut c, &format!("{REST}/order?patient={b}")).await,
        vec![orders[1].clone()]
    );
    // Her order discontinued, that refusal is lifted.
    let r = c
        .send("DELETE", &format!("{REST}/order/{}", orders[1]), &[], None)
        .await;
    assert!(r.status.is_success(), "{:?}", r.body);

    // Both enrolled in the HIV programme: refused; completed on one side, merged.
    let mut enrolments = Vec::new();
    for p in [&a, &b] {
        let r = c
            .post(
                &format!("{REST}/programenrollment"),
                &json!({"patient": p, "program": HIV, "dateEnrolled": "2026-03-01T08:00:00.000+0000"})
                    .to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        enrolments.push(uuid_of(&r));
    }
    refused(&merge(&mut c, &a, &b).await, "programme");
    assert_eq!(
        listed(&mut c, &format!("{REST}/programenrollment?patient={b}")).await,
        vec![enrolments[1].clone()]
    );

    // A caller who may not edit patients (an administrator of the system, not of records).
    let r = c
        .post(
            &format!("{REST}/user"),
            &json!({"username": "admin.systeme", "password": "Systeme-pass-2026",
                    "person": {"names": [{"givenName": "Paul", "familyName": "Kasongo"}], "gender": "M"},
                    "roles": ["Application: Administers System"]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut sysadmin = Client::new(st.clone());
    sysadmin.login("admin.systeme", "Systeme-pass-2026").await;
    let r = merge(&mut sysadmin, &a, &b).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = sysadmin.get(&format!("{REST}/patient/duplicates")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    // Nor anonymously.
    let r = merge(&mut Client::new(st.clone()), &a, &b).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{:?}", r.body);

    // A voided patient is not merged, on either side.
    let r = c
        .post(
            &format!("{REST}/programenrollment/{}", enrolments[1]),
            &json!({"dateCompleted": "2026-06-01T08:00:00.000+0000"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let v = register_patient(&mut c, &st, "Ruth", "Mulumba", "820003").await;
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{v}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    refused(&merge(&mut c, &a, &v).await, "voided");
    refused(&merge(&mut c, &v, &a).await, "voided");

    // With every refusal lifted, the merge goes through.
    let r = merge(&mut c, &a, &b).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        r.body["moved"],
        json!({"visits": 1, "encounters": 1, "orders": 1, "programme enrolments": 1}),
        "{:?}",
        r.body["moved"]
    );
}

/// A merge is a change like any other for backups: the backup taken after it (`GET
/// backup`), restored into a new store, holds the moved records under the kept patient,
/// the voided duplicate, her identifier searched to the kept patient, and the audit
/// entries of the merge.
#[tokio::test]
async fn a_merge_survives_backup_and_restore() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let kept = register_patient(&mut c, &st, "Odile", "Ngalula", "830001").await;
    let duplicate = register_patient(&mut c, &st, "Odile", "Ngalula", "830002").await;
    let relative = register_patient(&mut c, &st, "Rachel", "Ngalula", "830003").await;
    let s = seed_everything(&mut c, &st, &duplicate, &relative).await;
    let r = merge(&mut c, &kept, &duplicate).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);

    let backed_up = chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let res = c.raw("GET", &format!("{REST}/backup"), &[], None).await;
    assert_eq!(res.status(), StatusCode::OK);
    let backup = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    let restored = test_store();
    restored
        .restore(std::io::Cursor::new(backup.to_vec()))
        .unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;

    assert_all_belong_to(&mut c2, &s, &kept, &duplicate).await;
    let r = c2.get(&format!("{REST}/patient/{duplicate}?v=full")).await;
    assert_eq!(r.body["voided"], true);
    assert_eq!(
        r.body["auditInfo"]["voidReason"],
        format!("Merged with patient {kept}")
    );
    assert_eq!(search(&mut c2, "Odile").await, vec![kept.clone()]);
    assert_eq!(search(&mut c2, &emr_id("830002")).await, vec![kept.clone()]);
    // The restored trail is the trail: the same entries, in the same order, for the kept
    // patient (who now holds the duplicate's history too) and for the moved visit.
    for uri in [
        format!("{REST}/audit?patient={kept}&limit=100"),
        format!("{REST}/audit?record={}", s.visit),
        format!("{REST}/audit?record={duplicate}"),
    ] {
        let (before, after) = (c.get(&uri).await, c2.get(&uri).await);
        assert_eq!(before.status, StatusCode::OK, "{uri}: {:?}", before.body);
        assert_eq!(before.body, after.body, "{uri}");
    }
    let r = c2.get(&format!("{REST}/audit?record={}", s.visit)).await;
    let newest = &r.body["results"][0];
    assert_eq!(newest["action"], "changed", "{newest:?}");
    assert_eq!(
        newest["changes"],
        json!([{"field": "patient", "before": duplicate, "after": kept}]),
        "{newest:?}"
    );
    let r = c2.get(&format!("{REST}/audit?record={duplicate}")).await;
    assert_eq!(r.body["results"][0]["action"], "voided", "{:?}", r.body);
    // The restore itself wrote no entry: up to the backup, the restored store's trail is
    // the original's (the administrator's login to the new runtime is recorded after it).
    let all = format!("{REST}/audit?limit=1&totalCount=true&until={backed_up}");
    let (a, b) = (c.get(&all).await, c2.get(&all).await);
    assert_eq!(
        a.body["totalCount"], b.body["totalCount"],
        "{:?}\n{:?}",
        a.body, b.body
    );
}

/// A relationship between the two merged patients would be one of the kept patient with
/// herself: it is voided, with the reason core gives, and kept (listed with `includeAll`).
#[tokio::test]
async fn a_relationship_between_the_two_is_voided_by_the_merge() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let kept = register_patient(&mut c, &st, "Esther", "Kalala", "840001").await;
    let duplicate = register_patient(&mut c, &st, "Esther", "Kalala", "840002").await;
    let other = register_patient(&mut c, &st, "Agnès", "Kalala", "840003").await;
    let kind = st
        .catalog
        .load()
        .content
        .relationship_types
        .iter()
        .find(|t| !t.retired)
        .cloned()
        .unwrap();
    let mut relate = async |a: &str, b: &str| {
        let r = c
            .post(
                &format!("{REST}/relationship"),
                &json!({"personA": a, "relationshipType": kind.uuid, "personB": b}).to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        uuid_of(&r)
    };
    let between = relate(&duplicate, &kept).await;
    let with_other = relate(&other, &duplicate).await;

    let r = merge(&mut c, &kept, &duplicate).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["moved"]["relationships"], 2, "{:?}", r.body);

    let r = c
        .get(&format!("{REST}/relationship/{between}?v=full"))
        .await;
    assert_eq!(r.body["voided"], true, "{:?}", r.body);
    assert_eq!(r.body["personA"]["uuid"], kept.as_str());
    assert_eq!(r.body["personB"]["uuid"], kept.as_str());
    // The other one is in force, now with the kept patient as person B.
    let r = c
        .get(&format!("{REST}/relationship/{with_other}?v=full"))
        .await;
    assert_eq!(r.body["voided"], false, "{:?}", r.body);
    assert_eq!(r.body["personA"]["uuid"], other.as_str());
    assert_eq!(r.body["personB"]["uuid"], kept.as_str());
    // The chart lists only the one in force; with includeAll, both.
    assert_eq!(
        listed(&mut c, &format!("{REST}/relationship?person={kept}")).await,
        vec![with_other.clone()]
    );
    let mut all = listed(
        &mut c,
        &format!("{REST}/relationship?person={kept}&includeAll=true"),
    )
    .await;
    all.sort();
    let mut expected = vec![between.clone(), with_other.clone()];
    expected.sort();
    assert_eq!(all, expected);
    // The audit says so, with the reason core gives (which the relationship resource does
    // not show).
    let r = c.get(&format!("{REST}/audit?record={between}")).await;
    let entry = &r.body["results"][0];
    assert_eq!(entry["action"], "voided", "{:?}", r.body);
    let reason = entry["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "voiding.void_reason")
        .unwrap_or_else(|| panic!("no reason in {entry:?}"));
    assert_eq!(
        reason["after"],
        format!("person {duplicate} was merged into person {kept}")
    );
    assert_eq!(reason["before"], Value::Null);
}

/// `patient/duplicates` pairs the living patients who share all the words of a name (in
/// any order, accents and case aside) or a telephone number, each pair with what else
/// they share; a patient sharing nothing, and a voided one, are not listed.
#[tokio::test]
async fn likely_duplicates_are_listed() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let register = async |c: &mut Client, body: Value| {
        let r = c.post(&format!("{REST}/patient"), &body.to_string()).await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        uuid_of(&r)
    };
    let body = |given: &str, family: &str, id: &str, phone: &str, gender: &str, birthdate: &str| {
        let mut b: Value = serde_json::from_str(&patient_body(&st, given, family, id)).unwrap();
        b["person"]["attributes"][0]["value"] = json!(phone);
        b["person"]["gender"] = json!(gender);
        b["person"]["birthdate"] = json!(birthdate);
        b
    };
    // The same names, in another order and written without accents: a name pair.
    let helene = register(
        &mut c,
        body(
            "Hélène",
            "Mbuyi",
            "850001",
            "+243811111111",
            "F",
            "1990-4-12",
        ),
    )
    .await;
    let helene2 = register(
        &mut c,
        body(
            "MBUYI",
            "Helene",
            "850002",
            "+243822222222",
            "F",
            "1990-4-12",
        ),
    )
    .await;
    // The same telephone number, written otherwise: a phone pair.
    let jean = register(
        &mut c,
        body(
            "Jean",
            "Tshibanda",
            "850003",
            "+243 833 333 333",
            "M",
            "1980-1-1",
        ),
    )
    .await;
    let jeannot = register(
        &mut c,
        body(
            "Jeannot",
            "Kasongo",
            "850004",
            "+243833333333",
            "M",
            "1985-1-1",
        ),
    )
    .await;
    // Nothing in common with anyone.
    let alone = register(
        &mut c,
        body(
            "Marie",
            "Ilunga",
            "850005",
            "+243844444444",
            "F",
            "1970-1-1",
        ),
    )
    .await;
    // A voided duplicate is not offered.
    let voided = register(
        &mut c,
        body(
            "Marie",
            "Ilunga",
            "850006",
            "+243855555555",
            "F",
            "1970-1-1",
        ),
    )
    .await;
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{voided}?reason=doublon"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);

    let r = c
        .get(&format!(
            "{REST}/patient/duplicates?v=custom:(uuid)&totalCount=true"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let pairs: Vec<(Vec<String>, Value)> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let mut two = vec![
                p["patientA"]["uuid"].as_str().unwrap().to_string(),
                p["patientB"]["uuid"].as_str().unwrap().to_string(),
            ];
            two.sort();
            (two, p["reasons"].clone())
        })
        .collect();
    let pair = |x: &str, y: &str| {
        let mut two = vec![x.to_string(), y.to_string()];
        two.sort();
        two
    };
    // Most reasons first.
    assert_eq!(
        pairs,
        vec![
            (
                pair(&helene, &helene2),
                json!(["name", "birthdate", "gender"])
            ),
            (pair(&jean, &jeannot), json!(["phone", "gender"])),
        ]
    );
    assert_eq!(r.body["totalCount"], 2);
    for p in [&alone, &voided] {
        assert!(!r.body.to_string().contains(p.as_str()), "{p} listed");
    }
    // Paged as every list.
    let r = c
        .get(&format!(
            "{REST}/patient/duplicates?v=custom:(uuid)&limit=1&startIndex=1"
        ))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["results"][0]["reasons"], json!(["phone", "gender"]));
    // The default representation names the patients.
    let r = c.get(&format!("{REST}/patient/duplicates")).await;
    assert!(
        r.body["results"][0]["patientA"]["display"].is_string(),
        "{:?}",
        r.body
    );
    // Once merged, a pair is no longer offered.
    assert_eq!(
        merge(&mut c, &helene, &helene2).await.status,
        StatusCode::OK
    );
    let r = c
        .get(&format!("{REST}/patient/duplicates?v=custom:(uuid)"))
        .await;
    assert_eq!(
        r.body["results"].as_array().unwrap().len(),
        1,
        "{:?}",
        r.body
    );
}

/// A merge is on disk when it is answered: after a restart on the same store file, the visit
/// is the kept patient's, the other is voided, search finds her alone (the index is rebuilt
/// from the store), and the merge's audit entries are there.
#[tokio::test]
async fn a_merge_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let open = || runtime::store::Store::open(&path, &runtime::domains::REGISTRY).unwrap();
    let (kept, duplicate, visit) = {
        let st = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), open());
        let mut c = Client::admin(st.clone()).await;
        let kept = register_patient(&mut c, &st, "Solange", "Mwamba", "820001").await;
        let duplicate = register_patient(&mut c, &st, "Solange", "Mwamba", "820002").await;
        let r = c
            .post(
                &format!("{REST}/visit"),
                &json!({"patient": duplicate, "visitType": OUTPATIENT_VISIT,
                    "location": location_uuid(&st, "Centre de santé Bondeko"),
                    "startDatetime": "2025-05-02T08:00:00.000+0000",
                    "stopDatetime": "2025-05-02T09:00:00.000+0000"})
                .to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        let visit = r.body["uuid"].as_str().unwrap().to_string();
        let r = merge(&mut c, &kept, &duplicate).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        (kept, duplicate, visit)
    };
    let (st, _) = runtime::app::start::start(
        runtime::http::Config::for_tests(PASSWORD),
        runtime::embedded::EMBEDDED_BUNDLE.to_vec(),
        open(),
    )
    .unwrap();
    let mut c = Client::admin(st).await;
    let r = c
        .get(&format!("{REST}/visit/{visit}?v=custom:(patient:(uuid))"))
        .await;
    assert_eq!(r.body["patient"]["uuid"], kept.as_str(), "{:?}", r.body);
    let r = c.get(&format!("{REST}/patient/{duplicate}?v=full")).await;
    assert_eq!(r.body["voided"], true, "{:?}", r.body);
    // The index loads in the background after a start: the search waits for it.
    let r = c.get(&format!("{REST}/patient?q=Solange%20Mwamba")).await;
    let found: Vec<&Value> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["uuid"])
        .collect();
    assert_eq!(found, vec![&json!(kept)], "{:?}", r.body);
    let r = c
        .get(&format!(
            "{REST}/audit?record={visit}&v=custom:(action,changes)"
        ))
        .await;
    assert_eq!(
        (
            &r.body["results"][0]["action"],
            &r.body["results"][0]["changes"]
        ),
        (
            &json!("changed"),
            &json!([{"field": "patient", "before": duplicate, "after": kept}])
        ),
        "{:?}",
        r.body
    );
}

/// The identifiers a merged patient held are the kept patient's: the voided record, which
/// still lists them, cannot be changed (removing one would free a value the kept patient
/// holds), and a third patient cannot take them.
#[tokio::test]
async fn a_merged_patients_identifiers_stay_the_kept_patients() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let kept = register_patient(&mut c, &st, "Prisca", "Ilunga", "830001").await;
    let duplicate = register_patient(&mut c, &st, "Prisca", "Ilunga", "830002").await;
    let national = "93ec706a-3859-49fb-a0ba-79a3d25ac7c7";
    let r = c
        .post(
            &format!("{REST}/patient/{duplicate}/identifier"),
            &json!({"identifier": "12-3456-830002", "identifierType": national}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let national_id = r.body["uuid"].as_str().unwrap().to_string();
    let r = merge(&mut c, &kept, &duplicate).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{duplicate}/identifier/{national_id}?purge"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{REST}/patient?identifier=12-3456-830002&v=custom:(uuid)"
        ))
        .await;
    assert_eq!(r.body["results"][0]["uuid"], kept.as_str(), "{:?}", r.body);
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    let third = register_patient(&mut c, &st, "Autre", "Personne", "830003").await;
    let r = c
        .post(
            &format!("{REST}/patient/{third}/identifier"),
            &json!({"identifier": "12-3456-830002", "identifierType": national}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
}
