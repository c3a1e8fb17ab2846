//! The pharmacy as the O3 dispensing app works: the worklist of encounters with
//! prescriptions, a prescription's details with its dispenses, dispensing (and refusing
//! more than prescribed), pausing and closing through the fulfiller status, deleting a
//! dispense, the formulary as FHIR Medications, privileges, and a backup's round trip.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const FHIR: &str = "/openmrs/ws/fhir2/R4";
const OUTPATIENT_VISIT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const ORDER_ENCOUNTER: &str = "39da3525-afe4-45ff-8977-c53b7b359158";
const OUTPATIENT: &str = "6f0c9a92-6f24-11e3-af88-005056821db0";
const PARACETAMOL: &str = "73577264-62d4-42cf-bd81-c18cb147b3f7";
const THRICE_DAILY: &str = "38c794d0-0f9e-4796-a7f4-0448923b71c0";
const TABLET: &str = "1513AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const ORAL: &str = "160240AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const DAYS: &str = "1072AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const EXT: &str = "http://fhir.openmrs.org/ext/medicationrequest/fulfillerstatus";

fn ago(minutes: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::minutes(minutes))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string()
}

struct Prescribed {
    patient: String,
    encounter: String,
    order: String,
    provider: String,
}

/// A patient with a visit and a signed prescription of 15 paracetamol tablets.
async fn prescribed(
    c: &mut Client,
    st: &runtime::http::AppState,
    id: &str,
    refills: u32,
) -> Prescribed {
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(st, "Sifa", "Ngoy", id),
        )
        .await;
    let patient = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": patient, "visitType": OUTPATIENT_VISIT, "location": location_uuid(st, "Centre de santé Bondeko"), "startDatetime": ago(120)}).to_string(),
        )
        .await;
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let provider = c.get(&format!("{REST}/session")).await.body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let concept = st.catalog.load().drug(PARACETAMOL).unwrap().concept.clone();
    let body = json!({"patient": patient, "encounterType": ORDER_ENCOUNTER, "encounterDatetime": ago(60), "visit": visit,
        "location": location_uuid(st, "Centre de santé Bondeko"), "orders": [{
        "action": "NEW", "type": "drugorder", "patient": patient, "careSetting": OUTPATIENT, "orderer": provider,
        "drug": PARACETAMOL, "concept": concept, "dose": 1, "doseUnits": TABLET, "route": ORAL, "frequency": THRICE_DAILY,
        "asNeeded": false, "numRefills": refills, "quantity": 15, "quantityUnits": TABLET, "duration": 5, "durationUnits": DAYS,
        "dosingType": "org.openmrs.SimpleDosingInstructions", "dosingInstructions": "après les repas", "dateActivated": ago(30)}]});
    let r = send_json(c, "POST", &format!("{REST}/encounter"), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    Prescribed {
        patient,
        encounter: r.body["uuid"].as_str().unwrap().to_string(),
        order: r.body["orders"][0]["uuid"].as_str().unwrap().to_string(),
        provider,
    }
}

/// The dispense body the app builds from a request it read.
fn dispense(p: &Prescribed, request: &Value, status: &str, quantity: f64) -> Value {
    json!({
        "resourceType": "MedicationDispense", "status": status,
        "authorizingPrescription": [{"reference": format!("MedicationRequest/{}", p.order), "type": "MedicationRequest"}],
        "medicationReference": request["medicationReference"], "subject": request["subject"],
        "performer": [{"actor": {"reference": format!("Practitioner/{}", p.provider)}}],
        "location": {"reference": ""},
        "whenHandedOver": chrono::Utc::now().to_rfc3339(), "whenPrepared": chrono::Utc::now().to_rfc3339(),
        "quantity": {"value": quantity, "code": request["dispenseRequest"]["quantity"]["code"], "unit": request["dispenseRequest"]["quantity"]["unit"]},
        "dosageInstruction": [{"text": "après les repas", "timing": {"code": {"coding": [{"code": THRICE_DAILY}]}},
            "asNeededBoolean": false, "route": request["dosageInstruction"][0]["route"],
            "doseAndRate": request["dosageInstruction"][0]["doseAndRate"]}],
        "substitution": {"wasSubstituted": false, "reason": [{"coding": [{"code": null}]}], "type": {"coding": [{"code": null}]}}
    })
}

async fn details(c: &mut Client, p: &Prescribed) -> Value {
    let r = c
        .get(&format!("{FHIR}/MedicationRequest?encounter={}&_revinclude=MedicationDispense:prescription&_include=MedicationRequest:encounter", p.encounter))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    r.body
}

fn of_type<'a>(bundle: &'a Value, kind: &str) -> Vec<&'a Value> {
    bundle["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["resource"])
        .filter(|r| r["resourceType"] == kind)
        .collect()
}

#[tokio::test]
async fn a_prescription_is_dispensed_completed_and_leaves_the_active_worklist() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = prescribed(&mut c, &st, "520001", 0).await;

    // The worklist: today's active prescriptions, the encounter with its request.
    let from = (chrono::Utc::now() - chrono::Duration::days(90)).format("%Y-%m-%dT00:00:00.000Z");
    let worklist = format!(
        "{FHIR}/Encounter?_query=encountersWithMedicationRequests&_getpagesoffset=0&_count=10&date=ge{from}&status=ACTIVE"
    );
    let r = c.get(&worklist).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let encounters = of_type(&r.body, "Encounter");
    assert!(encounters.iter().any(|e| e["id"] == p.encounter.as_str()));
    let mine = encounters
        .iter()
        .find(|e| e["id"] == p.encounter.as_str())
        .unwrap();
    assert_eq!(
        mine["subject"]["reference"],
        format!("Patient/{}", p.patient)
    );
    assert_eq!(
        mine["location"][0]["location"]["display"],
        "Centre de santé Bondeko"
    );
    assert!(
        of_type(&r.body, "MedicationRequest")
            .iter()
            .any(|m| m["id"] == p.order.as_str())
    );

    // The details: the request as fhir2 translates it, with its encounter.
    let b = details(&mut c, &p).await;
    let req = of_type(&b, "MedicationRequest")[0].clone();
    assert_eq!(req["status"], "active");
    assert_eq!(req["intent"], "order");
    assert_eq!(
        req["medicationReference"]["reference"],
        format!("Medication/{PARACETAMOL}")
    );
    assert_eq!(
        req["requester"]["reference"],
        format!("Practitioner/{}", p.provider)
    );
    assert_eq!(req["dispenseRequest"]["quantity"]["value"], 15.0);
    assert_eq!(req["dispenseRequest"]["quantity"]["code"], TABLET);
    assert_eq!(req["dispenseRequest"]["numberOfRepeatsAllowed"], 0);
    let dosage = &req["dosageInstruction"][0];
    assert_eq!(dosage["text"], "après les repas");
    assert_eq!(dosage["route"]["coding"][0]["code"], ORAL);
    assert_eq!(dosage["timing"]["repeat"]["duration"], 5);
    assert_eq!(dosage["timing"]["repeat"]["durationUnit"], "d");
    assert_eq!(dosage["doseAndRate"][0]["doseQuantity"]["code"], TABLET);
    assert!(req.get("extension").is_none());
    assert_eq!(of_type(&b, "Encounter").len(), 1);

    // Dispense all 15, then complete the request as the app does.
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "completed", 15.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let dispense_id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        r.body["performer"][0]["actor"]["reference"],
        format!("Practitioner/{}", p.provider)
    );
    assert_eq!(
        r.body["context"]["reference"],
        format!("Encounter/{}", p.encounter)
    );
    assert!(r.body["extension"][0]["valueDateTime"].is_string());
    let r = send_json(
        &mut c,
        "PATCH",
        &format!("{FHIR}/MedicationRequest/{}", p.order),
        &json!({"extension": [{"url": EXT, "valueCode": "COMPLETED"}]}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["status"], "completed");
    assert_eq!(r.body["extension"][0]["valueCode"], "COMPLETED");
    // The order's fulfiller status over REST too.
    let o = c.get(&format!("{REST}/order/{}?v=full", p.order)).await;
    assert_eq!(o.body["fulfillerStatus"], "COMPLETED");

    let b = details(&mut c, &p).await;
    let dispenses = of_type(&b, "MedicationDispense");
    assert_eq!(dispenses.len(), 1);
    assert_eq!(dispenses[0]["id"], dispense_id.as_str());
    assert_eq!(dispenses[0]["quantity"]["value"], 15.0);
    // Off the active worklist, still on the full one.
    let r = c.get(&worklist).await;
    assert!(
        !of_type(&r.body, "Encounter")
            .iter()
            .any(|e| e["id"] == p.encounter.as_str())
    );
    let r = c.get(&format!("{FHIR}/Encounter?_query=encountersWithMedicationRequests&_getpagesoffset=0&_count=10&status=")).await;
    assert!(
        of_type(&r.body, "Encounter")
            .iter()
            .any(|e| e["id"] == p.encounter.as_str())
    );
    // The patient search narrows it.
    let r = c.get(&format!("{FHIR}/Encounter?_query=encountersWithMedicationRequests&status=&patientSearchTerm=ngoy")).await;
    assert_eq!(of_type(&r.body, "Encounter").len(), 1);
    let r = c.get(&format!("{FHIR}/Encounter?_query=encountersWithMedicationRequests&status=&patientSearchTerm=personne")).await;
    assert_eq!(r.body["total"], 0);
}

#[tokio::test]
async fn without_the_dispensing_apps_restriction_the_total_is_not_capped() {
    // The distribution's content turns `restrictTotalQuantityDispensed` on; the same
    // content with it off dispenses past the prescription, as OpenMRS does by default.
    let mut bundle = model::decode(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let mut config: Value = serde_json::from_str(&bundle.content.frontend_config).unwrap();
    config["@openmrs/esm-dispensing-app"]["dispenseBehavior"] =
        json!({"allowModifyingPrescription": true, "restrictTotalQuantityDispensed": false});
    bundle.content.frontend_config = config.to_string();
    let st = state_with(model::encode(&bundle.header, &bundle.content), test_store());
    assert!(!st.catalog.load().dispense_total_restricted);
    let mut c = Client::admin(st.clone()).await;
    let p = prescribed(&mut c, &st, "520009", 0).await;
    let req = of_type(&details(&mut c, &p).await, "MedicationRequest")[0].clone();
    for quantity in [15.0, 10.0] {
        let r = send_json(
            &mut c,
            "POST",
            &format!("{FHIR}/MedicationDispense"),
            &dispense(&p, &req, "completed", quantity),
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
}

#[tokio::test]
async fn no_more_is_dispensed_than_the_prescription_and_its_refills_allow() {
    assert!(state().catalog.load().dispense_total_restricted);
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = prescribed(&mut c, &st, "520002", 1).await;
    let req = of_type(&details(&mut c, &p).await, "MedicationRequest")[0].clone();
    // 15 and one refill: 30 at most.
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "completed", 20.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "completed", 11.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", r.body);
    assert!(
        r.body["issue"][0]["diagnostics"]
            .as_str()
            .unwrap()
            .contains("allows")
    );
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "completed", 10.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // A completed dispense hands over something; an unknown prescription or status is refused.
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "completed", 0.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let mut bad = dispense(&p, &req, "completed", 1.0);
    bad["authorizingPrescription"][0]["reference"] =
        json!("MedicationRequest/00000000-0000-4000-8000-000000000000");
    let r = send_json(&mut c, "POST", &format!("{FHIR}/MedicationDispense"), &bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "handed", 1.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .get(&format!(
            "{FHIR}/MedicationDispense?prescription={}",
            p.order
        ))
        .await;
    assert_eq!(r.body["total"], 2);
}

#[tokio::test]
async fn pausing_and_closing_set_the_fulfiller_status_and_a_deleted_dispense_is_gone() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = prescribed(&mut c, &st, "520003", 0).await;
    let req = of_type(&details(&mut c, &p).await, "MedicationRequest")[0].clone();
    let out_of_stock = st
        .catalog
        .load()
        .concept("DRC-EMR:8121")
        .unwrap()
        .uuid
        .clone();
    let mut pause = dispense(&p, &req, "on-hold", 0.0);
    pause.as_object_mut().unwrap().remove("quantity");
    pause["statusReasonCodeableConcept"] = json!({"coding": [{"code": out_of_stock}]});
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &pause,
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(
        r.body["statusReasonCodeableConcept"]["coding"][0]["code"],
        out_of_stock.as_str()
    );
    let id = r.body["id"].as_str().unwrap().to_string();
    let r = send_json(
        &mut c,
        "PATCH",
        &format!("{FHIR}/MedicationRequest/{}", p.order),
        &json!({"extension": [{"url": EXT, "valueCode": "ON_HOLD"}]}),
    )
    .await;
    assert_eq!(r.body["extension"][0]["valueCode"], "ON_HOLD");
    assert_eq!(r.body["status"], "active");
    // The dispense changed (PUT), then the pause undone: a null code clears the status.
    let mut changed = pause.clone();
    changed["id"] = json!(id);
    changed["status"] = json!("declined");
    let r = send_json(
        &mut c,
        "PUT",
        &format!("{FHIR}/MedicationDispense/{id}"),
        &changed,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["status"], "declined");
    let r = send_json(
        &mut c,
        "PATCH",
        &format!("{FHIR}/MedicationRequest/{}", p.order),
        &json!({"extension": [{"url": EXT, "valueCode": null}]}),
    )
    .await;
    assert!(r.body.get("extension").is_none(), "{:?}", r.body);
    let r = send_json(
        &mut c,
        "PATCH",
        &format!("{FHIR}/MedicationRequest/{}", p.order),
        &json!({"status": "stopped"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .send(
            "DELETE",
            &format!("{FHIR}/MedicationDispense/{id}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        c.get(&format!("{FHIR}/MedicationDispense/{id}"))
            .await
            .status,
        StatusCode::GONE
    );
    assert_eq!(
        of_type(&details(&mut c, &p).await, "MedicationDispense").len(),
        0
    );
}

#[tokio::test]
async fn medications_are_the_formulary_and_dispensing_needs_its_privileges() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get(&format!("{FHIR}/Medication/{PARACETAMOL}")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["form"]["coding"][0]["code"], TABLET);
    let names: Vec<&str> = r.body["extension"][0]["extension"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["valueString"].as_str())
        .collect();
    assert!(names.contains(&"Paracétamol 500 mg comprimé"));
    let concept = st.catalog.load().drug(PARACETAMOL).unwrap().concept.clone();
    let r = c.get(&format!("{FHIR}/Medication?code={concept}")).await;
    assert_eq!(r.body["total"], 2, "the tablet and the syrup");
    assert_eq!(
        c.get(&format!("{FHIR}/Medication/nope")).await.status,
        StatusCode::NOT_FOUND
    );

    let p = prescribed(&mut c, &st, "520004", 0).await;
    let req = of_type(&details(&mut c, &p).await, "MedicationRequest")[0].clone();
    let mut clerk = registration_clerk(&mut c, &st, "accueil.pharmacie").await;
    let r = send_json(
        &mut clerk,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "completed", 1.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = send_json(
        &mut clerk,
        "PATCH",
        &format!("{FHIR}/MedicationRequest/{}", p.order),
        &json!({"extension": []}),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // A discontinuation is not a MedicationRequest.
    let dc = json!({"action": "DISCONTINUE", "type": "drugorder", "previousOrder": p.order, "patient": p.patient,
        "careSetting": OUTPATIENT, "encounter": p.encounter, "orderer": p.provider, "drug": PARACETAMOL});
    let r = send_json(&mut c, "POST", &format!("{REST}/order"), &dc).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let dc_uuid = r.body["uuid"].as_str().unwrap();
    assert_eq!(
        c.get(&format!("{FHIR}/MedicationRequest/{dc_uuid}"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let b = details(&mut c, &p).await;
    let requests = of_type(&b, "MedicationRequest");
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["status"], "cancelled");
}

#[tokio::test]
async fn dispenses_survive_a_backup_and_restore() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = prescribed(&mut c, &st, "520005", 0).await;
    let req = of_type(&details(&mut c, &p).await, "MedicationRequest")[0].clone();
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "completed", 15.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2).await;
    let r = c2
        .get(&format!("{FHIR}/MedicationDispense?patient={}", p.patient))
        .await;
    assert_eq!(r.body["total"], 1);
    assert_eq!(r.body["entry"][0]["resource"]["quantity"]["value"], 15.0);
}

#[tokio::test]
async fn a_dispense_moved_or_misplaced_keeps_every_count_and_list_right() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = prescribed(&mut c, &st, "520006", 0).await;
    let q = prescribed(&mut c, &st, "520007", 0).await;
    let req = of_type(&details(&mut c, &p).await, "MedicationRequest")[0].clone();
    // A merge patch without the extension changes nothing.
    let r = send_json(
        &mut c,
        "PATCH",
        &format!("{FHIR}/MedicationRequest/{}", p.order),
        &json!({"extension": [{"url": EXT, "valueCode": "ON_HOLD"}]}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = send_json(
        &mut c,
        "PATCH",
        &format!("{FHIR}/MedicationRequest/{}", p.order),
        &json!({"resourceType": "MedicationRequest"}),
    )
    .await;
    assert_eq!(
        r.body["extension"][0]["valueCode"], "ON_HOLD",
        "{:?}",
        r.body
    );
    // Another patient's encounter as the context: refused.
    let mut foreign = dispense(&p, &req, "completed", 5.0);
    foreign["context"] = json!({"reference": format!("Encounter/{}", q.encounter)});
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &foreign,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", r.body);
    // A dispense of all 15, then corrected to a close (declined): it no longer counts.
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "completed", 15.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    let mut moved = dispense(&p, &req, "declined", 15.0);
    moved["id"] = json!(id);
    let r = send_json(
        &mut c,
        "PUT",
        &format!("{FHIR}/MedicationDispense/{id}"),
        &moved,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // Declined: the 15 no longer count against the prescription.
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/MedicationDispense"),
        &dispense(&p, &req, "completed", 15.0),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // A deleted dispense is not brought back by a later replacement.
    let r = c
        .send(
            "DELETE",
            &format!("{FHIR}/MedicationDispense/{id}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = send_json(
        &mut c,
        "PUT",
        &format!("{FHIR}/MedicationDispense/{id}"),
        &moved,
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{FHIR}/MedicationDispense?prescription={}",
            p.order
        ))
        .await;
    assert_eq!(r.body["total"], 1);
    // Moved to another encounter of the patient: listed under that one only.
    let kept = r.body["entry"][0]["resource"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = send_json(&mut c, "POST", &format!("{REST}/encounter"),
        &json!({"patient": p.patient, "encounterType": ORDER_ENCOUNTER, "encounterDatetime": ago(10)})).await;
    assert_eq!(other.status, StatusCode::CREATED, "{:?}", other.body);
    let mut moved = dispense(&p, &req, "completed", 15.0);
    moved["id"] = json!(kept);
    moved["context"] =
        json!({"reference": format!("Encounter/{}", other.body["uuid"].as_str().unwrap())});
    let r = send_json(
        &mut c,
        "PUT",
        &format!("{FHIR}/MedicationDispense/{kept}"),
        &moved,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        c.get(&format!(
            "{FHIR}/MedicationDispense?context={}",
            p.encounter
        ))
        .await
        .body["total"],
        0
    );
    assert_eq!(
        c.get(&format!(
            "{FHIR}/MedicationDispense?context={}",
            other.body["uuid"].as_str().unwrap()
        ))
        .await
        .body["total"],
        1
    );
}
