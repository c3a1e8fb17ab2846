//! Orders as the O3 order basket, the medications widget, the laboratory app and
//! OpenMRS clients write and read them: signing a basket (an encounter with its orders),
//! the medication list, revising, renewing and discontinuing, the duplicate-order rule,
//! the rules on units, routes and quantities, laboratory worklists and results, the
//! formulary resources, privileges, and survival through a backup and restore.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT_VISIT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const ORDER_ENCOUNTER: &str = "39da3525-afe4-45ff-8977-c53b7b359158";
const OUTPATIENT: &str = "6f0c9a92-6f24-11e3-af88-005056821db0";
const DRUG_ORDER: &str = "131168f4-15f5-102d-96e4-000c29c2a5d7";
const TEST_ORDER: &str = "52a447d3-a64a-11e3-9aeb-50e549534c5e";
const PARACETAMOL: &str = "73577264-62d4-42cf-bd81-c18cb147b3f7";
const AMOXICILLIN: &str = "6b5ba414-cd71-43c3-9872-ddb2ae0e0f2e";
const THRICE_DAILY: &str = "38c794d0-0f9e-4796-a7f4-0448923b71c0";
const ONCE_DAILY: &str = "d3d60b5b-f27f-4e53-9ee2-cd9c8fe3b8cc";
const TABLET: &str = "1513AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const CAPSULE: &str = "1608AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const ORAL: &str = "160240AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const DAYS: &str = "1072AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const HAEMOGLOBIN: &str = "21AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const BLOOD_COUNT: &str = "1019AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
/// The medication list's call in the O3 medications app 12.3.4.
const MEDICATIONS: &str = "careSetting=6f0c9a92-6f24-11e3-af88-005056821db0&orderTypes=131168f4-15f5-102d-96e4-000c29c2a5d7&v=custom:(uuid,dosingType,orderNumber,accessionNumber,patient:ref,action,careSetting:ref,previousOrder:ref,dateActivated,scheduledDate,dateStopped,autoExpireDate,orderType:ref,encounter:(uuid,display,visit),orderer:(uuid,display,person:(display)),orderReason,orderReasonNonCoded,orderType,urgency,instructions,commentToFulfiller,fulfillerStatus,drug:(uuid,display,strength,dosageForm:(display,uuid),concept),dose,doseUnits:ref,frequency:ref,asNeeded,asNeededCondition,quantity,quantityUnits:ref,numRefills,dosingInstructions,duration,durationUnits:ref,route:ref,brandName,dispenseAsWritten,concept)&excludeDiscontinueOrders=true";
/// The laboratory app's worklist representation (1.5.1).
const LAB_REP: &str = "custom:(uuid,orderNumber,patient:(uuid,display,person:(uuid,display,age,birthdate,gender)),concept:(uuid,display),action,careSetting:(uuid,display,description,careSettingType,display),previousOrder,dateActivated,scheduledDate,dateStopped,autoExpireDate,encounter:(uuid,display),orderer:(uuid,display),orderReason,orderReasonNonCoded,orderType:(uuid,display,name,description,conceptClasses,parent),urgency,instructions,commentToFulfiller,display,fulfillerStatus,fulfillerComment,accessionNumber,specimenSource,laterality,clinicalHistory,frequency,numberOfRepeats)";

fn ago(minutes: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::minutes(minutes))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string()
}

struct Chart {
    patient: String,
    visit: String,
    provider: String,
}

async fn chart(c: &mut Client, st: &runtime::http::AppState, id: &str) -> Chart {
    let r = c
        .post(
            &format!("{REST}/patient"),
            &patient_body(st, "Mireille", "Tshala", id),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let patient = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": patient, "visitType": OUTPATIENT_VISIT, "location": location_uuid(st, "Centre de santé Bondeko"), "startDatetime": ago(120)}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let session = c.get(&format!("{REST}/session")).await;
    let provider = session.body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    Chart {
        patient,
        visit,
        provider,
    }
}

/// A drug order as the O3 basket writes it (`prepMedicationOrderPostData`).
fn drug_order(ch: &Chart, drug: &str, concept: &str, unit: &str, frequency: &str) -> Value {
    json!({
        "action": "NEW", "patient": ch.patient, "type": "drugorder", "careSetting": OUTPATIENT,
        "orderer": ch.provider, "encounter": null, "drug": drug, "dose": 1, "doseUnits": unit,
        "route": ORAL, "frequency": frequency, "asNeeded": false, "asNeededCondition": "",
        "numRefills": 0, "quantity": 15, "quantityUnits": unit, "duration": 5, "durationUnits": DAYS,
        "dosingType": "org.openmrs.SimpleDosingInstructions", "dosingInstructions": "après les repas",
        "concept": concept, "dateActivated": ago(1), "orderReasonNonCoded": "Fièvre"
    })
}

/// Signs a basket: one encounter of the Order type holding the orders.
async fn sign(c: &mut Client, ch: &Chart, orders: Vec<Value>) -> Response {
    let body = json!({"patient": ch.patient, "location": null, "encounterType": ORDER_ENCOUNTER,
        "encounterDatetime": ago(40), "visit": ch.visit, "obs": [], "orders": orders});
    send_json(c, "POST", &format!("{REST}/encounter"), &body).await
}

fn drug_concept(st: &runtime::http::AppState, drug: &str) -> String {
    st.catalog.load().drug(drug).unwrap().concept.clone()
}

#[tokio::test]
async fn a_signed_basket_places_numbered_orders_the_medication_list_shows() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510001").await;
    let para = drug_concept(&st, PARACETAMOL);
    let amox = drug_concept(&st, AMOXICILLIN);
    let r = sign(
        &mut c,
        &ch,
        vec![
            drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY),
            drug_order(&ch, AMOXICILLIN, &amox, CAPSULE, THRICE_DAILY),
        ],
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let orders = r.body["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 2);
    let encounter = r.body["uuid"].as_str().unwrap().to_string();

    let r = c
        .get(&format!(
            "{REST}/order?patient={}&{MEDICATIONS}",
            ch.patient
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let list = r.body["results"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    let p = list
        .iter()
        .find(|o| o["drug"]["uuid"] == PARACETAMOL)
        .unwrap();
    assert!(p["orderNumber"].as_str().unwrap().starts_with("ORD-"));
    assert_ne!(list[0]["orderNumber"], list[1]["orderNumber"]);
    assert_eq!(p["action"], "NEW");
    assert_eq!(p["dose"], 1.0);
    assert_eq!(p["doseUnits"]["uuid"], TABLET);
    assert_eq!(p["route"]["uuid"], ORAL);
    assert_eq!(p["frequency"]["uuid"], THRICE_DAILY);
    assert_eq!(p["frequency"]["display"], "Trois fois par jour");
    assert_eq!(p["drug"]["dosageForm"]["uuid"], TABLET);
    assert_eq!(p["encounter"]["uuid"], encounter);
    assert_eq!(p["encounter"]["visit"]["uuid"], ch.visit);
    assert_eq!(p["orderer"]["uuid"], ch.provider);
    assert_eq!(p["careSetting"]["uuid"], OUTPATIENT);
    assert_eq!(p["orderType"]["uuid"], DRUG_ORDER);
    assert!(p["dateStopped"].is_null());
    assert_eq!(p["dosingType"], "org.openmrs.SimpleDosingInstructions");
    // Five days from its activation, less a second (duration units carry SNOMED codes).
    let activated = chrono::DateTime::parse_from_str(
        p["dateActivated"].as_str().unwrap(),
        "%Y-%m-%dT%H:%M:%S%.3f%z",
    )
    .unwrap();
    let expires = chrono::DateTime::parse_from_str(
        p["autoExpireDate"].as_str().unwrap(),
        "%Y-%m-%dT%H:%M:%S%.3f%z",
    )
    .unwrap();
    assert_eq!(
        expires - activated,
        chrono::Duration::days(5) - chrono::Duration::seconds(1)
    );

    // The order by uuid and by number, in the default representation.
    let uuid = p["uuid"].as_str().unwrap();
    let one = c.get(&format!("{REST}/order/{uuid}")).await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.body["type"], "drugorder");
    let display = one.body["display"].as_str().unwrap();
    assert!(
        display.starts_with(
            "(NEW) Paracétamol 500 mg comprimé: 1.0 Comprimé Voie orale Trois fois par jour 5 Jours"
        ),
        "{display}"
    );
    let by_number = c
        .get(&format!(
            "{REST}/order/{}",
            p["orderNumber"].as_str().unwrap()
        ))
        .await;
    assert_eq!(by_number.body["uuid"], uuid);
    // The encounter lists its orders.
    let e = c
        .get(&format!(
            "{REST}/encounter/{encounter}?v=custom:(uuid,orders:(uuid,display))"
        ))
        .await;
    assert_eq!(e.body["orders"].as_array().unwrap().len(), 2);

    // A list writes what it nests many times once per request and copies it: each listed
    // order is exactly the order read alone, in every representation.
    let reps = [
        MEDICATIONS
            .split("v=")
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap(),
        "default",
        "full",
        "ref",
        "custom:(uuid,concept:ref,drug:(uuid,concept:(uuid,display)),encounter:(uuid,visit:ref),orderer,frequency)",
    ];
    for rep in reps {
        let list = c
            .get(&format!("{REST}/order?patient={}&v={rep}", ch.patient))
            .await;
        assert_eq!(list.status, StatusCode::OK, "{rep}: {:?}", list.body);
        let listed = list.body["results"].as_array().unwrap();
        assert_eq!(listed.len(), 2, "{rep}");
        for o in listed {
            let alone = c
                .get(&format!(
                    "{REST}/order/{}?v={rep}",
                    o["uuid"].as_str().unwrap()
                ))
                .await;
            assert_eq!(&alone.body, o, "{rep}");
        }
    }
}

#[tokio::test]
async fn a_second_active_order_for_the_same_drug_is_refused_and_nothing_is_written() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510002").await;
    let para = drug_concept(&st, PARACETAMOL);
    let first = sign(
        &mut c,
        &ch,
        vec![drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY)],
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{:?}", first.body);
    let again = sign(
        &mut c,
        &ch,
        vec![drug_order(&ch, PARACETAMOL, &para, TABLET, ONCE_DAILY)],
    )
    .await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "{:?}", again.body);
    assert!(
        again.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than one active order")
    );
    // Twice in one basket too.
    let twice = sign(
        &mut c,
        &ch,
        vec![
            drug_order(
                &ch,
                AMOXICILLIN,
                &drug_concept(&st, AMOXICILLIN),
                CAPSULE,
                THRICE_DAILY,
            ),
            drug_order(
                &ch,
                AMOXICILLIN,
                &drug_concept(&st, AMOXICILLIN),
                CAPSULE,
                ONCE_DAILY,
            ),
        ],
    )
    .await;
    assert_eq!(twice.status, StatusCode::BAD_REQUEST);
    // Neither refused basket left an encounter or an order behind.
    let r = c
        .get(&format!(
            "{REST}/order?patient={}&{MEDICATIONS}",
            ch.patient
        ))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    let e = c
        .get(&format!(
            "{REST}/encounter?patient={}&encounterType={ORDER_ENCOUNTER}",
            ch.patient
        ))
        .await;
    assert_eq!(e.body["results"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn revising_renewing_and_discontinuing_stop_the_previous_order() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510003").await;
    let para = drug_concept(&st, PARACETAMOL);
    let mut first = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    first["dateActivated"] = json!(ago(30));
    let r = sign(&mut c, &ch, vec![first]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let encounter = r.body["uuid"].as_str().unwrap().to_string();
    let original = r.body["orders"][0]["uuid"].as_str().unwrap().to_string();

    // Modify: POST order into the previous order's encounter (the medications app's way).
    let mut revise = drug_order(&ch, PARACETAMOL, &para, TABLET, ONCE_DAILY);
    revise["action"] = json!("REVISE");
    revise["previousOrder"] = json!(original);
    revise["encounter"] = json!(encounter);
    revise["dose"] = json!(2);
    let r = send_json(&mut c, "POST", &format!("{REST}/order"), &revise).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["action"], "REVISE");
    assert_eq!(r.body["previousOrder"]["uuid"], original);
    let revised = r.body["uuid"].as_str().unwrap().to_string();
    let old = c.get(&format!("{REST}/order/{original}")).await;
    let stopped = old.body["dateStopped"]
        .as_str()
        .expect("the original is stopped")
        .to_string();
    let started = r.body["dateActivated"].as_str().unwrap();
    let gap = chrono::DateTime::parse_from_str(started, "%Y-%m-%dT%H:%M:%S%.3f%z").unwrap()
        - chrono::DateTime::parse_from_str(&stopped, "%Y-%m-%dT%H:%M:%S%.3f%z").unwrap();
    assert_eq!(gap, chrono::Duration::seconds(1));
    // The stopped original cannot be revised again.
    let r = send_json(&mut c, "POST", &format!("{REST}/order"), &revise).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already stopped")
    );
    // Active orders (the resource's own search) are the revision only.
    let active = c
        .get(&format!(
            "{REST}/order?patient={}&status=ACTIVE&careSetting={OUTPATIENT}&orderType={DRUG_ORDER}",
            ch.patient
        ))
        .await;
    assert_eq!(active.status, StatusCode::OK, "{:?}", active.body);
    let uuids: Vec<&str> = active.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(uuids, [revised.as_str()]);

    // Discontinue through the basket: the order stops and the discontinuation is listed
    // only with `status=any`.
    let dc = json!({"action": "DISCONTINUE", "type": "drugorder", "previousOrder": revised, "patient": ch.patient,
        "careSetting": OUTPATIENT, "encounter": null, "orderer": ch.provider, "concept": para, "drug": PARACETAMOL,
        "orderReasonNonCoded": null});
    let r = sign(&mut c, &ch, vec![dc]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let active = c
        .get(&format!(
            "{REST}/order?patient={}&status=active",
            ch.patient
        ))
        .await;
    assert_eq!(active.body["results"].as_array().unwrap().len(), 0);
    let meds = c
        .get(&format!(
            "{REST}/order?patient={}&{MEDICATIONS}",
            ch.patient
        ))
        .await;
    let meds = meds.body["results"].as_array().unwrap();
    assert_eq!(meds.len(), 2, "discontinuations are left out");
    assert!(meds.iter().all(|o| !o["dateStopped"].is_null()));
    let any = c
        .get(&format!("{REST}/order?patient={}&status=any", ch.patient))
        .await;
    assert_eq!(any.body["results"].as_array().unwrap().len(), 3);

    // Renew the past prescription: a new active order pointing back to it.
    let mut renew = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    renew["action"] = json!("RENEW");
    renew["previousOrder"] = json!(revised);
    let r = sign(&mut c, &ch, vec![renew]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let active = c
        .get(&format!(
            "{REST}/order?patient={}&status=active",
            ch.patient
        ))
        .await;
    assert_eq!(active.body["results"][0]["action"], "RENEW");
}

#[tokio::test]
async fn orders_are_checked_as_core_checks_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510004").await;
    let para = drug_concept(&st, PARACETAMOL);
    let refused = |body: &Response, field: &str, code: &str| {
        assert_eq!(body.status, StatusCode::BAD_REQUEST, "{:?}", body.body);
        let errors = &body.body["error"]["fieldErrors"][field];
        assert!(
            errors
                .as_array()
                .is_some_and(|e| e.iter().any(|x| x["code"] == code)),
            "{field} {code}: {:?}",
            body.body
        );
    };
    // An unknown drug.
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["drug"] = json!("00000000-0000-4000-8000-000000000000");
    refused(
        &sign(&mut c, &ch, vec![o]).await,
        "orders[0].drug",
        "error.invalid",
    );
    // A frequency that is not an order frequency (a concept is not one).
    let o = drug_order(
        &ch,
        PARACETAMOL,
        &para,
        TABLET,
        "160862AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    );
    refused(
        &sign(&mut c, &ch, vec![o]).await,
        "orders[0].frequency",
        "error.invalid",
    );
    // A route outside the routes set (the dose unit concept is not a route).
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["route"] = json!(TABLET);
    refused(
        &sign(&mut c, &ch, vec![o]).await,
        "orders[0].route",
        "DrugOrder.error.routeNotAmongAllowedConcepts",
    );
    // A dose unit outside the dosing units (a route is not one).
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["doseUnits"] = json!(ORAL);
    refused(
        &sign(&mut c, &ch, vec![o]).await,
        "orders[0].doseUnits",
        "DrugOrder.error.notAmongAllowedConcepts",
    );
    // An outpatient prescription states the quantity to dispense.
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["quantity"] = Value::Null;
    o["quantityUnits"] = Value::Null;
    refused(
        &sign(&mut c, &ch, vec![o]).await,
        "orders[0].quantity",
        "DrugOrder.error.quantityIsNullForOutPatient",
    );
    // Simple dosing needs a dose.
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["dose"] = Value::Null;
    refused(
        &sign(&mut c, &ch, vec![o]).await,
        "orders[0].dose",
        "DrugOrder.error.doseIsNullForDosingTypeSimple",
    );
    // A concept that is not the drug's.
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["concept"] = json!(drug_concept(&st, AMOXICILLIN));
    refused(
        &sign(&mut c, &ch, vec![o]).await,
        "orders[0].concept",
        "DrugOrder.error.conceptMismatch",
    );
    // Activated before its encounter.
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["dateActivated"] = json!(ago(60));
    refused(
        &sign(&mut c, &ch, vec![o]).await,
        "orders[0].dateActivated",
        "Order.error.encounterDatetimeAfterDateActivated",
    );
    // A revision names what it revises.
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["action"] = json!("REVISE");
    refused(
        &sign(&mut c, &ch, vec![o]).await,
        "orders[0].previousOrder",
        "Order.previous.required",
    );
    // Malformed values are 400 with the field named.
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["numRefills"] = json!(-1);
    assert_eq!(
        sign(&mut c, &ch, vec![o]).await.status,
        StatusCode::BAD_REQUEST
    );
    let mut o = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    o["urgency"] = json!("SOON");
    assert_eq!(
        sign(&mut c, &ch, vec![o]).await.status,
        StatusCode::BAD_REQUEST
    );
    // Nothing was written.
    let r = c
        .get(&format!("{REST}/order?patient={}&status=any", ch.patient))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn the_laboratory_picks_up_a_test_order_enters_its_result_and_completes_it() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510005").await;
    // The tests app's order: no order type, inferred from the test order class.
    let test = json!({"action": "NEW", "type": "testorder", "patient": ch.patient, "careSetting": OUTPATIENT,
        "orderer": ch.provider, "encounter": null, "concept": HAEMOGLOBIN, "instructions": "à jeun",
        "orderReason": null, "accessionNumber": null, "urgency": "STAT", "scheduledDate": null});
    let r = sign(&mut c, &ch, vec![test]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let encounter = r.body["uuid"].as_str().unwrap().to_string();
    let order = r.body["orders"][0]["uuid"].as_str().unwrap().to_string();

    // Over FHIR, a ServiceRequest a laboratory system reads, whose references resolve.
    let fhir = "/openmrs/ws/fhir2/R4";
    let r = c
        .get(&format!(
            "{fhir}/ServiceRequest?patient={}&status=active",
            ch.patient
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["total"], 1);
    let sr = &r.body["entry"][0]["resource"];
    assert_eq!(sr["id"], order.as_str());
    assert_eq!(
        (
            sr["status"].as_str(),
            sr["intent"].as_str(),
            sr["priority"].as_str()
        ),
        (Some("active"), Some("order"), Some("stat"))
    );
    assert_eq!(sr["code"]["coding"][0]["code"], HAEMOGLOBIN);
    assert_eq!(sr["note"][0]["text"], "à jeun");
    for reference in [
        &sr["encounter"]["reference"],
        &sr["requester"]["reference"],
        &sr["subject"]["reference"],
    ] {
        let r = c
            .get(&format!("{fhir}/{}", reference.as_str().unwrap()))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{reference}");
    }

    // Today's worklist, as the laboratory app asks for it (UTC day bounds from the browser).
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let worklist = |status: &str, exclude: bool| {
        format!(
            "{REST}/order?orderTypes={TEST_ORDER}&v={LAB_REP}{status}{}&activatedOnOrAfterDate={today}T00:00:00.000Z&activatedOnOrBeforeDate={}",
            if exclude {
                "&excludeCanceledAndExpired=true&excludeDiscontinueOrders=true"
            } else {
                ""
            },
            chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ")
        )
    };
    let r = c.get(&worklist("", true)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let listed = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["uuid"] == order)
        .cloned()
        .unwrap();
    assert!(listed["fulfillerStatus"].is_null() && listed.get("fulfillerStatus").is_some());
    assert_eq!(listed["urgency"], "STAT");
    assert_eq!(listed["orderType"]["uuid"], TEST_ORDER);
    assert_eq!(listed["patient"]["person"]["gender"], "F");
    assert!(listed.get("specimenSource").is_some());

    // Pick it up (with the app's trailing slash).
    let r = send_json(
        &mut c,
        "POST",
        &format!("{REST}/order/{order}/fulfillerdetails/"),
        &json!({"fulfillerStatus": "IN_PROGRESS"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = c.get(&worklist("&fulfillerStatus=IN_PROGRESS", true)).await;
    assert!(
        r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["uuid"] == order)
    );
    // An unknown status is refused.
    let r = send_json(
        &mut c,
        "POST",
        &format!("{REST}/order/{order}/fulfillerdetails"),
        &json!({"fulfillerStatus": "DONE"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // The result, in the order's encounter, then the order discontinued and completed.
    let r = send_json(&mut c, "POST", &format!("{REST}/encounter/{encounter}"),
        &json!({"obs": [{"concept": {"uuid": HAEMOGLOBIN}, "status": "FINAL", "order": {"uuid": order}, "value": 9.5}]})).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let dc = json!({"previousOrder": order, "type": "testorder", "action": "DISCONTINUE", "careSetting": OUTPATIENT,
        "encounter": encounter, "patient": ch.patient, "concept": HAEMOGLOBIN, "orderer": {"uuid": ch.provider, "display": "admin"}});
    let r = send_json(&mut c, "POST", &format!("{REST}/order"), &dc).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = send_json(
        &mut c,
        "POST",
        &format!("{REST}/order/{order}/fulfillerdetails/"),
        &json!({"fulfillerStatus": "COMPLETED", "fulfillerComment": "Test Results Entered"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);
    // Completed over FHIR too; the discontinuation is no ServiceRequest of its own.
    let r = c.get(&format!("{fhir}/ServiceRequest/{order}")).await;
    assert_eq!(r.body["status"], "completed", "{:?}", r.body);
    let r = c
        .get(&format!("{fhir}/ServiceRequest?patient={}", ch.patient))
        .await;
    assert_eq!(r.body["total"], 1);
    let r = c
        .get(&format!(
            "{fhir}/ServiceRequest?patient={}&status=active",
            ch.patient
        ))
        .await;
    assert_eq!(r.body["total"], 0);
    // Off the in-progress list, on the completed one.
    let r = c.get(&worklist("&fulfillerStatus=IN_PROGRESS", true)).await;
    assert!(
        !r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["uuid"] == order)
    );
    let r = c.get(&worklist("&fulfillerStatus=COMPLETED", false)).await;
    let done = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["uuid"] == order)
        .cloned()
        .unwrap();
    assert_eq!(done["fulfillerComment"], "Test Results Entered");
    assert!(!done["dateStopped"].is_null());
    // The encounter shows the result with its order, as the results form reads it.
    let e = c.get(&format!("{REST}/encounter/{encounter}?v=custom:(uuid,obs:(uuid,concept:(uuid),value,order:(uuid,display)))")).await;
    let obs = &e.body["obs"][0];
    assert_eq!(obs["order"]["uuid"], order);
    assert_eq!(obs["value"], 9.5);
    // A result naming another patient's order, or none that exists, is refused.
    let r = send_json(&mut c, "POST", &format!("{REST}/encounter/{encounter}"),
        &json!({"obs": [{"concept": HAEMOGLOBIN, "order": "00000000-0000-4000-8000-000000000000", "value": 10}]})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // The laboratory corrects the result (the app's `POST obs/{uuid}`): the old value is
    // voided, the new one points back to it and keeps the order.
    let first = obs["uuid"].as_str().unwrap().to_string();
    let r = send_json(
        &mut c,
        "POST",
        &format!("{REST}/obs/{first}"),
        &json!({"value": 10.1}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_ne!(r.body["uuid"], first.as_str());
    assert_eq!(r.body["value"], 10.1);
    let corrected = c
        .get(&format!(
            "{REST}/obs/{}?v=full",
            r.body["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(corrected.body["previousVersion"]["uuid"], first.as_str());
    assert_eq!(corrected.body["order"]["uuid"], order);
    assert_eq!(
        c.get(&format!("{REST}/obs/{first}?v=full")).await.body["voided"],
        true
    );
    let r = send_json(
        &mut c,
        "POST",
        &format!("{REST}/obs/{first}"),
        &json!({"value": 11}),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "a voided value is not corrected again"
    );
    let r = send_json(
        &mut c,
        "POST",
        &format!("{REST}/obs/{}", corrected.body["uuid"].as_str().unwrap()),
        &json!({"value": 99}),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "the concept's absolute range still holds: {:?}",
        r.body
    );
}

#[tokio::test]
async fn a_result_answers_a_test_order_never_a_medication_order() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510008").await;
    let para = drug_concept(&st, PARACETAMOL);
    let r = sign(
        &mut c,
        &ch,
        vec![drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY)],
    )
    .await;
    let encounter = r.body["uuid"].as_str().unwrap().to_string();
    let order = r.body["orders"][0]["uuid"].as_str().unwrap().to_string();
    let result = json!({"obs": [{"concept": HAEMOGLOBIN, "status": "FINAL", "order": {"uuid": order}, "value": 9.5}]});
    let r = send_json(
        &mut c,
        "POST",
        &format!("{REST}/encounter/{encounter}"),
        &result,
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(
        r.body["error"]["fieldErrors"]["obs.order"][0]["code"],
        "Obs.error.orderNotATest"
    );
    let r = send_json(&mut c, "POST", &format!("{REST}/obs"),
        &json!({"person": ch.patient, "encounter": encounter, "concept": HAEMOGLOBIN, "order": order, "value": 9.5})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let e = c
        .get(&format!("{REST}/encounter/{encounter}?v=custom:(obs)"))
        .await;
    assert_eq!(e.body["obs"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn the_formulary_and_order_entry_configuration_come_from_the_content() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c
        .get(&format!("{REST}/drug?q=para&v=custom:(uuid,display,name,strength,dosageForm:(display,uuid),concept:(display,uuid))"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let found = r.body["results"].as_array().unwrap();
    assert!(found.iter().any(|d| d["uuid"] == PARACETAMOL
        && d["strength"] == "500 mg"
        && d["dosageForm"]["uuid"] == TABLET));
    // Accents do not matter; a word of the concept's English name finds it too.
    let r = c.get(&format!("{REST}/drug?q=paracetamol")).await;
    assert!(
        r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["uuid"] == PARACETAMOL)
    );
    let r = c.get(&format!("{REST}/drug?q=zzzz")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 0);

    let r = c.get(&format!("{REST}/orderentryconfig")).await;
    assert_eq!(r.status, StatusCode::OK);
    let uuids = |key: &str| -> Vec<String> {
        r.body[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["uuid"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(uuids("drugRoutes").contains(&ORAL.to_string()));
    assert!(uuids("drugDosingUnits").contains(&TABLET.to_string()));
    assert!(
        uuids("drugDispensingUnits").contains(&TABLET.to_string()),
        "dosing units dispense too"
    );
    assert!(uuids("durationUnits").contains(&DAYS.to_string()));
    assert!(uuids("orderFrequencies").contains(&THRICE_DAILY.to_string()));
    assert!(!uuids("testSpecimenSources").is_empty());
    // The frequencies' call: concept names for the search, and the concept lists left out.
    let r = c.get(&format!("{REST}/orderentryconfig?v=custom:(uuid,display,frequencyPerDay,concept:(names:(display,uuid)))")).await;
    assert_eq!(r.status, StatusCode::OK);
    let f = r.body["orderFrequencies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["uuid"] == THRICE_DAILY)
        .unwrap();
    assert_eq!(f["frequencyPerDay"], 3.0);
    assert!(!f["concept"]["names"].as_array().unwrap().is_empty());
    assert!(r.body.get("drugRoutes").is_none());

    let r = c.get(&format!("{REST}/ordertype?v=full")).await;
    let types: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["javaClassName"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"org.openmrs.DrugOrder") && types.contains(&"org.openmrs.TestOrder"));
    let r = c.get(&format!("{REST}/caresetting/{OUTPATIENT}")).await;
    assert_eq!(r.body["careSettingType"], "OUTPATIENT");
    // The lab orderables the tests app lists: the set's members, panels among them.
    let r = c
        .get(&format!(
            "{REST}/concept/{BLOOD_COUNT}?v=custom:(uuid,display,set,setMembers:(uuid))"
        ))
        .await;
    assert_eq!(r.body["set"], true);
    assert!(
        r.body["setMembers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["uuid"] == HAEMOGLOBIN)
    );
}

#[tokio::test]
async fn ordering_needs_add_orders_and_reading_needs_get_orders() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let ch = chart(&mut admin, &st, "510006").await;
    let mut clerk = registration_clerk(&mut admin, &st, "accueil.ordres").await;
    let para = drug_concept(&st, PARACETAMOL);
    let r = sign(
        &mut clerk,
        &ch,
        vec![drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY)],
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = clerk
        .get(&format!("{REST}/order?patient={}", ch.patient))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = send_json(
        &mut clerk,
        "POST",
        &format!("{REST}/order/ORD-1/fulfillerdetails"),
        &json!({"fulfillerStatus": "RECEIVED"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn voiding_the_encounter_voids_its_orders_and_a_backup_keeps_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510007").await;
    let para = drug_concept(&st, PARACETAMOL);
    let amox = drug_concept(&st, AMOXICILLIN);
    let kept = sign(
        &mut c,
        &ch,
        vec![drug_order(&ch, AMOXICILLIN, &amox, CAPSULE, THRICE_DAILY)],
    )
    .await;
    let kept_order = kept.body["orders"][0]["uuid"].as_str().unwrap().to_string();
    let r = sign(
        &mut c,
        &ch,
        vec![drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY)],
    )
    .await;
    let encounter = r.body["uuid"].as_str().unwrap().to_string();
    let order = r.body["orders"][0]["uuid"].as_str().unwrap().to_string();
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/encounter/{encounter}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c.get(&format!("{REST}/order/{order}?v=full")).await;
    assert_eq!(r.body["auditInfo"]["voided"], true);
    let r = c
        .get(&format!(
            "{REST}/order?patient={}&{MEDICATIONS}",
            ch.patient
        ))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    // The patient has orders: no purge.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{}?purge=true", ch.patient),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;
    let r = c2
        .get(&format!(
            "{REST}/order?patient={}&{MEDICATIONS}",
            ch.patient
        ))
        .await;
    let list = r.body["results"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["uuid"], kept_order);
    // Numbers go on after the restore: never one already given.
    let ch2 = Chart {
        patient: ch.patient.clone(),
        visit: ch.visit.clone(),
        provider: ch.provider.clone(),
    };
    let r = sign(
        &mut c2,
        &ch2,
        vec![drug_order(&ch2, PARACETAMOL, &para, TABLET, ONCE_DAILY)],
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let numbers: Vec<String> = c2
        .get(&format!(
            "{REST}/order?patient={}&status=any&includeAll=true&v=custom:(orderNumber)",
            ch.patient
        ))
        .await
        .body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["orderNumber"].as_str().unwrap().to_string())
        .collect();
    let mut unique = numbers.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), numbers.len(), "{numbers:?}");
}

#[tokio::test]
async fn voiding_a_revision_puts_the_revised_order_back_in_force() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510009").await;
    let para = drug_concept(&st, PARACETAMOL);
    let mut first = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    first["dateActivated"] = json!(ago(30));
    let r = sign(&mut c, &ch, vec![first]).await;
    let encounter = r.body["uuid"].as_str().unwrap().to_string();
    let original = r.body["orders"][0]["uuid"].as_str().unwrap().to_string();
    let mut revise = drug_order(&ch, PARACETAMOL, &para, TABLET, ONCE_DAILY);
    revise["action"] = json!("REVISE");
    revise["previousOrder"] = json!(original);
    revise["encounter"] = json!(encounter);
    let r = send_json(&mut c, "POST", &format!("{REST}/order"), &revise).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let revision = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/order/{revision}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let back = c.get(&format!("{REST}/order/{original}")).await;
    assert!(back.body["dateStopped"].is_null(), "{:?}", back.body);
    let active = c
        .get(&format!(
            "{REST}/order?patient={}&status=active",
            ch.patient
        ))
        .await;
    assert_eq!(active.body["results"][0]["uuid"], original.as_str());
    // It can be revised again.
    let r = send_json(&mut c, "POST", &format!("{REST}/order"), &revise).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

#[tokio::test]
async fn a_basket_sees_its_own_earlier_orders() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510010").await;
    let para = drug_concept(&st, PARACETAMOL);
    let mut first = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    first["dateActivated"] = json!(ago(30));
    let r = sign(&mut c, &ch, vec![first]).await;
    let original = r.body["orders"][0]["uuid"].as_str().unwrap().to_string();
    let dc = json!({"action": "DISCONTINUE", "type": "drugorder", "previousOrder": original, "patient": ch.patient,
        "careSetting": OUTPATIENT, "orderer": ch.provider, "drug": PARACETAMOL});
    // Stopping the same order twice in one basket: the second finds it stopped.
    let r = sign(&mut c, &ch, vec![dc.clone(), dc.clone()]).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already stopped")
    );
    // Stopping it and prescribing the drug anew in one basket (both from now) is what a
    // change of dose is.
    let mut anew = drug_order(&ch, PARACETAMOL, &para, TABLET, ONCE_DAILY);
    anew.as_object_mut().unwrap().remove("dateActivated");
    let r = sign(&mut c, &ch, vec![dc, anew]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // Two orders with one uuid in a basket: refused, nothing written.
    let mut a = drug_order(
        &ch,
        AMOXICILLIN,
        &drug_concept(&st, AMOXICILLIN),
        CAPSULE,
        THRICE_DAILY,
    );
    a["uuid"] = json!("3c1d2e4f-0000-4000-8000-00000000aaaa");
    let mut b = a.clone();
    b["drug"] = json!(PARACETAMOL);
    let r = sign(&mut c, &ch, vec![a, b]).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(
        c.get(&format!(
            "{REST}/order/3c1d2e4f-0000-4000-8000-00000000aaaa"
        ))
        .await
        .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn schedules_durations_and_clocks_as_core_reads_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ch = chart(&mut c, &st, "510011").await;
    let para = drug_concept(&st, PARACETAMOL);
    // Scheduled in ten days, then a five-day course now: they do not overlap.
    let mut later = drug_order(&ch, PARACETAMOL, &para, TABLET, THRICE_DAILY);
    later.as_object_mut().unwrap().remove("dateActivated");
    later["urgency"] = json!("ON_SCHEDULED_DATE");
    later["scheduledDate"] = json!((chrono::Utc::now() + chrono::Duration::days(10)).to_rfc3339());
    let r = sign(&mut c, &ch, vec![later]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = sign(
        &mut c,
        &ch,
        vec![drug_order(&ch, PARACETAMOL, &para, TABLET, ONCE_DAILY)],
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // A duration past what a date holds is refused, not a fault.
    let mut huge = drug_order(
        &ch,
        AMOXICILLIN,
        &drug_concept(&st, AMOXICILLIN),
        CAPSULE,
        THRICE_DAILY,
    );
    huge["duration"] = json!(4_000_000_000u64);
    let r = sign(&mut c, &ch, vec![huge]).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // Revising a tablet prescription into the syrup (the same concept, another drug) is
    // not a revision.
    let meds = c
        .get(&format!(
            "{REST}/order?patient={}&status=active",
            ch.patient
        ))
        .await;
    let current = meds.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["scheduledDate"].is_null())
        .unwrap()["uuid"]
        .clone();
    let mut syrup = drug_order(
        &ch,
        "12f9fa2d-646e-42ef-beb0-5ea374c23fdf",
        &para,
        "1513AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ONCE_DAILY,
    );
    syrup["action"] = json!("REVISE");
    syrup["previousOrder"] = current;
    let r = sign(&mut c, &ch, vec![syrup]).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(
        r.body["error"]["fieldErrors"]["orders[0].previousOrder"][0]["code"],
        "Order.orderable.doesnot.match"
    );
    // A browser whose clock runs ahead: the encounter a few seconds in the future, a test
    // order without its own date starts with it.
    let ahead = (chrono::Utc::now() + chrono::Duration::seconds(20)).to_rfc3339();
    let body = json!({"patient": ch.patient, "encounterType": ORDER_ENCOUNTER, "encounterDatetime": ahead, "visit": ch.visit,
        "orders": [{"action": "NEW", "type": "testorder", "patient": ch.patient, "careSetting": OUTPATIENT,
            "orderer": ch.provider, "concept": HAEMOGLOBIN}]});
    let r = send_json(&mut c, "POST", &format!("{REST}/encounter"), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // Order numbers are found in any case.
    let number = c
        .get(&format!(
            "{REST}/order/{}",
            r.body["orders"][0]["uuid"].as_str().unwrap()
        ))
        .await
        .body["orderNumber"]
        .as_str()
        .unwrap()
        .to_lowercase();
    assert_eq!(
        c.get(&format!("{REST}/order/{number}")).await.status,
        StatusCode::OK
    );
}
