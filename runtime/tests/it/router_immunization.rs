//! Immunizations as the O3 immunizations app records them (FHIR `Immunization`, its
//! `encounter` naming the visit) and as fhir2 keeps them: an obs group on CIEL 1421 in the
//! visit's vaccination encounter.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const FHIR: &str = "/openmrs/ws/fhir2/R4";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const IMMUNIZATION_TYPE: &str = "29c02aff-9a93-46c9-bf6f-48b552fcb1fa";
const OPV: &str = "783AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
/// The app's vaccine list call.
const VACCINES: &str = "concept?references=CIEL:984&v=custom:(uuid,display,answers:(uuid,display),conceptMappings:(conceptReferenceTerm:(conceptSource:(name),code)))";

async fn patient_in_visit(
    c: &mut Client,
    st: &runtime::http::AppState,
    id: &str,
) -> (String, String) {
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(st, "Bénédicte", "Mwamba", id),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let p = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": p, "visitType": OUTPATIENT, "location": location_uuid(st, "Centre de santé Bondeko")}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    (p, r.body["uuid"].as_str().unwrap().to_string())
}

/// The body the app's form sends.
fn dose(
    patient: &str,
    visit: &str,
    vaccine: &str,
    dose: u64,
    lot: &str,
    provider: Option<&str>,
) -> Value {
    let mut b = json!({
        "resourceType": "Immunization", "status": "completed",
        "vaccineCode": {"coding": [{"code": vaccine, "display": "Vaccin polio oral (VPO)"}]},
        "patient": {"type": "Patient", "reference": format!("Patient/{patient}")},
        "encounter": {"type": "Encounter", "reference": format!("Encounter/{visit}")},
        "occurrenceDateTime": "2026-11-22T23:00:00.000Z",
        "expirationDate": "2027-06-30",
        "extension": [{"url": "http://hl7.eu/fhir/StructureDefinition/immunization-nextDoseDate", "valueDateTime": "2026-12-20T23:00:00.000Z"}],
        "note": [],
        "manufacturer": {"display": "Bio Farma"},
        "lotNumber": lot,
        "protocolApplied": [{"doseNumberPositiveInt": dose}],
    });
    if let Some(p) = provider {
        b["performer"] =
            json!([{"actor": {"type": "Practitioner", "reference": format!("Practitioner/{p}")}}]);
    }
    b
}

#[tokio::test]
async fn the_immunizations_app_records_doses_in_the_visit_and_edits_and_deletes_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    // The form's vaccine list: the answers of CIEL 984, the oral polio vaccine among them
    // under CIEL's uuid (the app's default schedule names it).
    let r = c.get(&format!("{REST}/{VACCINES}")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let answers = r.body["results"][0]["answers"].as_array().unwrap();
    assert!(
        answers
            .iter()
            .any(|a| a["uuid"] == OPV && a["display"] == "Vaccin polio oral (VPO)"),
        "{answers:?}"
    );

    let (p, visit) = patient_in_visit(&mut c, &st, "430001").await;
    let session = c
        .get(&format!("{REST}/session?v=custom:(currentProvider)"))
        .await;
    let provider = session.body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/Immunization"),
        &dose(&p, &visit, OPV, 1, "L-2026-01", Some(&provider)),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let first = r.body["id"].as_str().unwrap().to_string();
    // What the app reads back.
    assert_eq!(r.body["vaccineCode"]["coding"][0]["code"], OPV);
    assert!(r.body["vaccineCode"]["coding"][0].get("system").is_none());
    assert_eq!(
        r.body["encounter"]["reference"],
        format!("Encounter/{visit}")
    );
    assert_eq!(r.body["occurrenceDateTime"], "2026-11-22T23:00:00+00:00");
    assert_eq!(r.body["protocolApplied"][0]["doseNumberPositiveInt"], 1);
    assert_eq!(r.body["lotNumber"], "L-2026-01");
    assert_eq!(r.body["expirationDate"], "2027-06-30");
    assert_eq!(r.body["manufacturer"]["display"], "Bio Farma");
    assert_eq!(
        r.body["extension"][0]["valueDateTime"],
        "2026-12-20T23:00:00+00:00"
    );
    assert_eq!(
        r.body["performer"][0]["actor"]["reference"],
        format!("Practitioner/{provider}")
    );
    // A second dose in the same visit goes in the same vaccination encounter.
    let r = send_json(
        &mut c,
        "POST",
        &format!("{FHIR}/Immunization"),
        &dose(&p, &visit, OPV, 2, "L-2026-02", None),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{REST}/encounter?visit={visit}&v=custom:(uuid,encounterType:(uuid),obs:(display))"
        ))
        .await;
    let encounters = r.body["results"].as_array().unwrap();
    assert_eq!(encounters.len(), 1, "{encounters:?}");
    assert_eq!(encounters[0]["encounterType"]["uuid"], IMMUNIZATION_TYPE);
    let r = c.get(&format!("{FHIR}/Immunization?patient={p}")).await;
    assert_eq!(r.body["total"], 2, "{:?}", r.body);

    // Edited: the lot changes and the next dose is dropped; only those two members are
    // voided, the new lot pointing back to the old one.
    let mut edit = dose(&p, &visit, OPV, 1, "L-2026-01B", Some(&provider));
    edit["id"] = json!(first);
    edit["extension"] = json!([]);
    let r = send_json(
        &mut c,
        "PUT",
        &format!("{FHIR}/Immunization/{first}"),
        &edit,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["lotNumber"], "L-2026-01B");
    assert_eq!(r.body["protocolApplied"][0]["doseNumberPositiveInt"], 1);
    assert!(r.body.get("extension").is_none(), "{:?}", r.body);
    let r = c
        .get(&format!("{REST}/obs?patient={p}&includeAll=true&v=custom:(uuid,display,voided,obsGroup:(uuid),previousVersion:(uuid))"))
        .await;
    let all = r.body["results"].as_array().unwrap();
    let of_first: Vec<&Value> = all
        .iter()
        .filter(|o| o["obsGroup"]["uuid"] == first.as_str())
        .collect();
    let voided: Vec<&&Value> = of_first.iter().filter(|o| o["voided"] == true).collect();
    assert_eq!(
        voided.len(),
        2,
        "the lot and the next dose only: {of_first:?}"
    );
    let old_lot = voided
        .iter()
        .find(|o| o["display"].as_str().unwrap().contains("L-2026-01"))
        .expect("the old lot, voided");
    let new_lot = of_first
        .iter()
        .find(|o| o["voided"] == false && o["display"].as_str().unwrap().contains("L-2026-01B"))
        .expect("the new lot");
    assert_eq!(new_lot["previousVersion"]["uuid"], old_lot["uuid"]);

    // Deleted: voided with every member, gone from the list.
    let r = c
        .send("DELETE", &format!("{FHIR}/Immunization/{first}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c.get(&format!("{FHIR}/Immunization/{first}")).await;
    assert_eq!(r.status, StatusCode::GONE);
    let r = c.get(&format!("{FHIR}/Immunization?patient={p}")).await;
    assert_eq!(r.body["total"], 1, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{REST}/obs?patient={p}&v=custom:(uuid,obsGroup:(uuid))"
        ))
        .await;
    assert!(
        !r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["obsGroup"]["uuid"] == first.as_str()),
        "no member of the deleted immunization is left: {:?}",
        r.body
    );
    let mut again = edit.clone();
    again["lotNumber"] = json!("L-X");
    let r = send_json(
        &mut c,
        "PUT",
        &format!("{FHIR}/Immunization/{first}"),
        &again,
    )
    .await;
    assert_eq!(r.status, StatusCode::GONE, "{:?}", r.body);
}

#[tokio::test]
async fn an_immunization_keeps_its_patient_visit_and_day_and_is_recorded_by_whom_may() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let (p, visit) = patient_in_visit(&mut c, &st, "430004").await;
    let (q, other_visit) = patient_in_visit(&mut c, &st, "430005").await;
    // A vaccine named by its CIEL mapping, as ValueSets write the system; the expiry the
    // app sends as the chosen day's local midnight in UTC.
    let mut body = dose(&p, &visit, OPV, 1, "L7", None);
    body["vaccineCode"] =
        json!({"coding": [{"system": "https://cielterminology.org", "code": "783"}]});
    body["expirationDate"] = json!("2027-06-29T23:00:00.000Z");
    body["note"] = json!([{"text": "Légère rougeur au point d'injection"}]);
    let r = send_json(&mut c, "POST", &format!("{FHIR}/Immunization"), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(r.body["vaccineCode"]["coding"][0]["code"], OPV);
    assert_eq!(r.body["expirationDate"], "2027-06-30");
    assert_eq!(
        r.body["note"][0]["text"],
        "Légère rougeur au point d'injection"
    );

    let put = |patient: &str, visit: &str, id: Option<&str>| {
        let mut b = dose(patient, visit, OPV, 1, "L8", None);
        if let Some(id) = id {
            b["id"] = json!(id);
        }
        b
    };
    let unknown = "0b5e1f64-0000-4000-8000-000000000009";
    for (body, uri_id, status) in [
        (put(&p, &visit, None), id.as_str(), StatusCode::BAD_REQUEST),
        (
            put(&p, &visit, Some(unknown)),
            id.as_str(),
            StatusCode::BAD_REQUEST,
        ),
        (
            put(&p, &other_visit, Some(&id)),
            id.as_str(),
            StatusCode::BAD_REQUEST,
        ),
        (
            put(&q, &visit, Some(&id)),
            id.as_str(),
            StatusCode::BAD_REQUEST,
        ),
        (
            put(&p, &visit, Some(unknown)),
            unknown,
            StatusCode::NOT_FOUND,
        ),
    ] {
        let r = send_json(
            &mut c,
            "PUT",
            &format!("{FHIR}/Immunization/{uri_id}"),
            &body,
        )
        .await;
        assert_eq!(r.status, status, "{body}: {:?}", r.body);
    }
    let r = c.get(&format!("{FHIR}/Immunization/{id}")).await;
    assert_eq!(
        r.body["lotNumber"], "L7",
        "nothing refused was changed: {:?}",
        r.body
    );

    // A clerk who registers patients records no immunization.
    let mut clerk = registration_clerk(&mut c, &st, "accueil.vaccin").await;
    let r = send_json(
        &mut clerk,
        "POST",
        &format!("{FHIR}/Immunization"),
        &dose(&p, &visit, OPV, 2, "L9", None),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = clerk.get(&format!("{FHIR}/Immunization?patient={p}")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn an_immunization_that_breaks_a_rule_is_refused() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let (p, visit) = patient_in_visit(&mut c, &st, "430002").await;
    let (_, other_visit) = patient_in_visit(&mut c, &st, "430003").await;
    let amoxicillin = st
        .catalog
        .load()
        .concept("DRC-EMR:4001")
        .unwrap()
        .uuid
        .clone();
    let without = |field: &str| {
        let mut b = dose(&p, &visit, OPV, 1, "L1", None);
        b.as_object_mut().unwrap().remove(field);
        b
    };
    let mut no_visit = dose(&p, &visit, OPV, 1, "L1", None);
    no_visit["encounter"] = Value::Null;
    let mut zero = dose(&p, &visit, OPV, 1, "L1", None);
    zero["protocolApplied"] = json!([{"doseNumberPositiveInt": 0}]);
    let cases = [
        (
            no_visit,
            StatusCode::UNPROCESSABLE_ENTITY,
            "recorded in a visit",
        ),
        (
            dose(&p, &other_visit, OPV, 1, "L1", None),
            StatusCode::UNPROCESSABLE_ENTITY,
            "does not belong to patient",
        ),
        (
            without("occurrenceDateTime"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "occurrenceDateTime",
        ),
        (
            without("vaccineCode"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "valid coding",
        ),
        // Not one of the vaccine question's answers: the observation rules refuse it.
        (
            dose(&p, &visit, &amoxicillin, 1, "L1", None),
            StatusCode::UNPROCESSABLE_ENTITY,
            "not one of the answers",
        ),
        (zero, StatusCode::BAD_REQUEST, "doseNumberPositiveInt"),
    ];
    for (body, status, message) in cases {
        let r = send_json(&mut c, "POST", &format!("{FHIR}/Immunization"), &body).await;
        assert_eq!(r.status, status, "{body}: {:?}", r.body);
        assert_eq!(r.body["resourceType"], "OperationOutcome");
        assert!(
            r.body.to_string().contains(message),
            "{message}: {:?}",
            r.body
        );
    }
    let r = c.get(&format!("{FHIR}/Immunization?patient={p}")).await;
    assert_eq!(
        r.body["total"], 0,
        "nothing refused is stored: {:?}",
        r.body
    );
    let r = c.get(&format!("{REST}/encounter?visit={visit}")).await;
    assert_eq!(
        r.body["results"].as_array().unwrap().len(),
        0,
        "no encounter either: {:?}",
        r.body
    );
}
