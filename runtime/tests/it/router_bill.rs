//! Billing (`billing/…`), as the O3 billing app uses it: the content's payment modes, cash
//! point and billable services with their prices; a bill made in the chart for the
//! patient's visit, items added while it is pending, finalised, paid in two payments with
//! exact decimals, its receipt; the module's rules, privileges, and survival through
//! backup and restore.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const CASH: &str = "fc99ef44-6260-44b3-90db-05e7d0a91a14";
const MOBILE_MONEY: &str = "33e4e056-75f8-4dfe-8be3-ee36aaa01161";
const CASH_POINT: &str = "fa8fab08-040b-4f5e-9a6d-e23268ccbdc5";
const SERVICE_TYPES: &str = "8f75b05a-87b1-4457-99a2-02c4d1301454";
/// What the app's bill form asks for its service list.
const SERVICES_REP: &str = "custom:(uuid,name,shortName,serviceStatus,serviceType:(display),servicePrices:(uuid,name,price,paymentMode))";
/// What the cash desk's list asks for.
const LIST_REP: &str = "custom:(id,uuid,dateCreated,status,receiptNumber,patient:(uuid,display),lineItems:(uuid,item,billableService,voided))";

/// The content's billable service named `name`: (uuid, its cash price).
async fn service(c: &mut Client, name: &str) -> (String, Value) {
    let r = c
        .get(&format!("{REST}/billing/billableService?v={SERVICES_REP}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let s = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no service {name}: {:?}", r.body))
        .clone();
    let price = s["servicePrices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["paymentMode"]["uuid"] == CASH)
        .unwrap()["price"]
        .clone();
    (s["uuid"].as_str().unwrap().to_string(), price)
}

async fn start_visit(c: &mut Client, st: &runtime::http::AppState, patient: &str) -> String {
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": patient, "visitType": OUTPATIENT,
                "location": location_uuid(st, "Centre de santé Bondeko")})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body["uuid"].as_str().unwrap().to_string()
}

/// A bill as the app's form posts it.
async fn new_bill(c: &mut Client, patient: &str, items: &[(&str, Value, i64)]) -> Value {
    let line_items: Vec<Value> = items
        .iter()
        .map(|(s, price, q)| json!({"quantity": q, "price": price, "lineItemOrder": 0, "status": "PENDING", "billableService": s}))
        .collect();
    let r = c
        .post(
            &format!("{REST}/billing/bill"),
            &json!({"cashPoint": CASH_POINT, "cashier": "", "lineItems": line_items,
                "payments": [], "patient": patient, "status": "PENDING"})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body
}

async fn pay(c: &mut Client, bill: &str, mode: &str, tendered: Value) -> crate::common::Response {
    c.post(
        &format!("{REST}/billing/bill/{bill}/payment"),
        &json!({"instanceType": mode, "amountTendered": tendered, "amount": 0}).to_string(),
    )
    .await
}

#[tokio::test]
async fn the_content_billing_metadata_is_served_read_only() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let modes = c.get(&format!("{REST}/billing/paymentMode")).await;
    assert_eq!(modes.status, StatusCode::OK);
    let names: Vec<&str> = modes.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"Espèces") && names.contains(&"Monnaie mobile"),
        "{names:?}"
    );
    let mobile = c
        .get(&format!("{REST}/billing/paymentMode/{MOBILE_MONEY}"))
        .await;
    assert_eq!(mobile.body["attributeTypes"][1]["required"], true);
    assert_eq!(
        mobile.body["attributeTypes"][1]["regExp"],
        "^\\+?[0-9]{9,13}$"
    );

    let points = c.get(&format!("{REST}/billing/cashPoint?v=full")).await;
    assert_eq!(points.body["results"][0]["uuid"], CASH_POINT);
    assert_eq!(
        points.body["results"][0]["location"]["display"],
        "Bondeko - Accueil"
    );

    let (uuid, price) = service(&mut c, "Pansement simple").await;
    assert_eq!(price, json!(1500.5), "an exact decimal price");
    let full = c
        .get(&format!("{REST}/billing/billableService/{uuid}"))
        .await;
    assert_eq!(full.body["serviceStatus"], "ENABLED");
    assert_eq!(
        full.body["serviceType"]["display"],
        "Soins et actes infirmiers"
    );
    assert_eq!(full.body["servicePrices"].as_array().unwrap().len(), 4);
    // The service types are the members of the content's set the admin form reads.
    let types = c
        .get(&format!(
            "{REST}/concept/{SERVICE_TYPES}?v=custom:(setMembers:(uuid,display))"
        ))
        .await;
    assert_eq!(types.body["setMembers"].as_array().unwrap().len(), 3);

    for (method, path, body) in [
        (
            "POST",
            "billing/api/billable-service",
            json!({"name": "Radio"}),
        ),
        ("POST", "billing/paymentMode", json!({"name": "Chèque"})),
        ("POST", "billing/cashPoint", json!({"name": "Caisse 2"})),
        (
            "POST",
            &format!("billing/billableService/{uuid}") as &str,
            json!({"servicePrices": []}),
        ),
    ] {
        let r = send_json(&mut c, method, &format!("{REST}/{path}"), &body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}");
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("billableservices/"),
            "{:?}",
            r.body
        );
    }
}

#[tokio::test]
async fn a_bill_is_made_for_the_visit_finalised_paid_exactly_and_receipted() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Solange", "Kabila", "700001").await;
    let visit = start_visit(&mut c, &st, &p).await;
    let (consultation, consultation_price) = service(&mut c, "Consultation générale").await;
    let (dressing, dressing_price) = service(&mut c, "Pansement simple").await;

    let status = c
        .get(&format!("{REST}/billing/patientPaymentStatus/{p}"))
        .await;
    assert_eq!(status.body["status"], "PAID", "nothing owed yet");

    let bill = new_bill(&mut c, &p, &[(&consultation, consultation_price, 1)]).await;
    let uuid = bill["uuid"].as_str().unwrap().to_string();
    assert_eq!(bill["status"], "PENDING");
    assert_eq!(bill["visit"]["uuid"], visit, "linked to her active visit");
    assert_eq!(bill["total"], json!(5000));
    assert_eq!(bill["amountAfterDiscount"], json!(5000));
    assert_eq!(
        bill["lineItems"][0]["billableService"],
        "Consultation générale"
    );
    assert!(
        bill["patient"]["display"]
            .as_str()
            .unwrap()
            .ends_with(" - Solange Kabila")
    );
    assert!(bill["cashier"]["uuid"].is_string(), "the caller's provider");
    let number = bill["receiptNumber"].as_str().unwrap().to_string();
    assert_eq!(bill["display"], number.as_str());
    assert_eq!(
        c.get(&format!("{REST}/billing/patientPaymentStatus/{p}"))
            .await
            .body["status"],
        "UNPAID"
    );

    // Items added while pending: the line items sent back as read, plus a new one.
    let mut items: Vec<Value> = bill["lineItems"].as_array().unwrap().clone();
    items[0]["billableService"] = json!(consultation);
    items.push(json!({"quantity": 2, "price": dressing_price, "lineItemOrder": 1, "status": "PENDING", "billableService": dressing}));
    let r = c
        .post(
            &format!("{REST}/billing/bill/{uuid}"),
            &json!({"cashPoint": CASH_POINT, "cashier": bill["cashier"]["uuid"], "patient": p,
                "status": "PENDING", "uuid": uuid, "lineItems": items})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["total"], json!(8001), "5000 + 2 × 1500.50");

    // Not payable until finalised; then finalised, its items frozen.
    let early = pay(&mut c, &uuid, CASH, json!(100)).await;
    assert_eq!(early.status, StatusCode::BAD_REQUEST, "{:?}", early.body);
    let r = c
        .post(
            &format!("{REST}/billing/bill/{uuid}"),
            &json!({"status": "POSTED"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"], "POSTED");
    let frozen = c
        .post(
            &format!("{REST}/billing/bill/{uuid}"),
            &json!({"lineItems": [{"billableService": consultation, "quantity": 1, "price": 5000}]})
                .to_string(),
        )
        .await;
    assert_eq!(frozen.status, StatusCode::BAD_REQUEST);
    assert!(frozen.body.to_string().contains("PENDING state"));

    // Paid in two payments; a hundredth short is still owed.
    let first = pay(&mut c, &uuid, CASH, json!(3000.5)).await;
    assert_eq!(first.status, StatusCode::CREATED, "{:?}", first.body);
    // The payment history shows the mode's name.
    assert_eq!(first.body["instanceType"]["name"], "Espèces");
    assert!(first.body["dateCreated"].is_i64(), "epoch milliseconds");
    let second = pay(&mut c, &uuid, MOBILE_MONEY, json!("5000.49")).await;
    assert_eq!(second.status, StatusCode::CREATED, "{:?}", second.body);
    let read = c.get(&format!("{REST}/billing/bill/{uuid}")).await;
    assert_eq!(read.body["status"], "POSTED", "0.01 is still due");
    assert_eq!(read.body["payments"].as_array().unwrap().len(), 2);
    let last = pay(&mut c, &uuid, CASH, json!(0.01)).await;
    assert_eq!(last.status, StatusCode::CREATED);
    let read = c.get(&format!("{REST}/billing/bill/{uuid}")).await;
    assert_eq!(read.body["status"], "PAID");
    assert!(
        read.body["lineItems"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["status"] == "PAID")
    );
    let tendered: Vec<String> = read.body["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["amountTendered"].to_string())
        .collect();
    assert_eq!(tendered, ["3000.5", "5000.49", "0.01"]);
    let again = pay(&mut c, &uuid, CASH, json!(1)).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "nothing is due");
    assert_eq!(
        c.get(&format!("{REST}/billing/patientPaymentStatus/{p}"))
            .await
            .body["status"],
        "PAID"
    );

    // The lists: the chart's (patient, visit) and the cash desk's (status filter).
    let chart = c
        .get(&format!("{REST}/billing/bill?v=full&patientUuid={p}"))
        .await;
    assert_eq!(chart.body["results"][0]["uuid"], uuid.as_str());
    let panel = c
        .get(&format!(
            "{REST}/billing/bill?v=full&patientUuid={p}&visitUuid={visit}"
        ))
        .await;
    assert_eq!(panel.body["results"].as_array().unwrap().len(), 1);
    let paid = c
        .get(&format!(
            "{REST}/billing/bill?v={LIST_REP}&status=PAID&limit=10&startIndex=0&totalCount=true"
        ))
        .await;
    assert_eq!(paid.body["totalCount"], 1, "{:?}", paid.body);
    assert_eq!(paid.body["results"][0]["receiptNumber"], number.as_str());
    assert!(paid.body["results"][0]["id"].is_i64());
    let pending = c
        .get(&format!("{REST}/billing/bill?v={LIST_REP}&status=PENDING"))
        .await;
    assert_eq!(pending.body["results"], json!([]));
    let by_name = c
        .get(&format!(
            "{REST}/billing/bill?v={LIST_REP}&patientName=solange"
        ))
        .await;
    assert_eq!(by_name.body["results"].as_array().unwrap().len(), 1);

    // The receipt: a PDF naming the bill.
    let r = c
        .raw(
            "GET",
            &format!("{REST}/billing/receipt?billUuid={uuid}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/pdf");
    let bytes = http_body_util::BodyExt::collect(r.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert!(bytes.starts_with(b"%PDF-1.4"));
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains(&number), "receipt number on the receipt");
    assert!(text.contains("8001.00"), "the total");
}

#[tokio::test]
async fn bills_are_checked_as_a_cash_desk_needs() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Aimée", "Tshala", "700002").await;
    let (consultation, _) = service(&mut c, "Consultation générale").await;
    let bad = |body: Value| {
        let mut body = body;
        body["patient"] = json!(p);
        body["cashPoint"] = json!(CASH_POINT);
        body
    };
    for (body, field) in [
        (
            bad(
                json!({"lineItems": [{"billableService": "Radiographie", "quantity": 1, "price": 10}]}),
            ),
            "lineItems[0].billableService",
        ),
        (
            bad(
                json!({"lineItems": [{"billableService": consultation, "quantity": 0, "price": 10}]}),
            ),
            "lineItems[0].quantity",
        ),
        (
            bad(
                json!({"lineItems": [{"billableService": consultation, "quantity": 1, "price": -5}]}),
            ),
            "lineItems[0].price",
        ),
        (
            bad(
                json!({"lineItems": [{"billableService": consultation, "quantity": 1, "price": 0.00001}]}),
            ),
            "lineItems[0].price",
        ),
        (
            bad(
                json!({"lineItems": [{"billableService": consultation, "quantity": 1, "price": "beaucoup"}]}),
            ),
            "lineItems[0].price",
        ),
        (bad(json!({"lineItems": []})), "lineItems"),
        (
            bad(json!({"lineItems": [{"billableService": consultation}], "status": "PAID"})),
            "status",
        ),
        (
            json!({"lineItems": [{"billableService": consultation}], "cashPoint": CASH_POINT}),
            "patient",
        ),
        (
            json!({"lineItems": [{"billableService": consultation}], "patient": p, "cashPoint": "nowhere"}),
            "cashPoint",
        ),
    ] {
        let r = c
            .post(&format!("{REST}/billing/bill"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {:?}", r.body);
        assert!(
            r.body["error"]["fieldErrors"][field].is_array(),
            "{field}: {:?}",
            r.body
        );
    }
    // A line item needs its price when the service has several (one per payment mode).
    let r = c
        .post(
            &format!("{REST}/billing/bill"),
            &json!({"patient": p, "lineItems": [{"billableService": consultation}]}).to_string(),
        )
        .await;
    assert!(
        r.body["error"]["fieldErrors"]["lineItems[0].price"].is_array(),
        "{:?}",
        r.body
    );
    // A bill without a cash point takes the content's only one.
    let r = c
        .post(
            &format!("{REST}/billing/bill"),
            &json!({"patient": p, "lineItems": [{"billableService": consultation, "price": "5000.00"}]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["total"], json!(5000));
    assert_eq!(r.body["cashPoint"]["uuid"], CASH_POINT);
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    let item = r.body["lineItems"][0]["uuid"].as_str().unwrap().to_string();

    // Payments: a known mode, a positive amount, the mode's attribute patterns.
    c.post(
        &format!("{REST}/billing/bill/{uuid}"),
        &json!({"status": "POSTED"}).to_string(),
    )
    .await;
    for (body, field) in [
        (
            json!({"instanceType": "cheque", "amountTendered": 10}),
            "instanceType",
        ),
        (
            json!({"instanceType": CASH, "amountTendered": 0}),
            "amountTendered",
        ),
        (json!({"instanceType": CASH}), "amountTendered"),
        (
            json!({"instanceType": MOBILE_MONEY, "amountTendered": 10,
            "attributes": [{"attributeType": "Numéro de téléphone", "value": "pas un numéro"}]}),
            "attributes[0]",
        ),
    ] {
        let r = c
            .post(
                &format!("{REST}/billing/bill/{uuid}/payment"),
                &body.to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            r.body["error"]["fieldErrors"][field].is_array(),
            "{field}: {:?}",
            r.body
        );
    }
    let r = c
        .post(
            &format!("{REST}/billing/bill/{uuid}/payment"),
            &json!({"instanceType": MOBILE_MONEY, "amountTendered": 6000,
                "attributes": [{"attributeType": "Numéro de téléphone", "value": "+243812345678"}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["attributes"][0]["value"], "+243812345678");
    let paid = c.get(&format!("{REST}/billing/bill/{uuid}")).await;
    assert_eq!(paid.body["status"], "PAID", "more than due: change given");

    // Status changes other than finalising are the payments'.
    let r = c
        .post(
            &format!("{REST}/billing/bill/{uuid}"),
            &json!({"status": "PENDING"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // A paid bill's line items stay.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/billing/billLineItem/{item}?reason=erreur"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/billing/bill/{uuid}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "bills are never purged");
    let r = c.get(&format!("{REST}/billing/bill?status=NOPE")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .get(&format!(
            "{REST}/billing/patientPaymentStatus/{}",
            "no-such-patient"
        ))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_pending_bill_loses_an_item_or_is_voided_and_kept() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Nadine", "Mbuyi", "700003").await;
    let (consultation, price) = service(&mut c, "Consultation générale").await;
    let (test, test_price) = service(&mut c, "Goutte épaisse").await;
    let bill = new_bill(
        &mut c,
        &p,
        &[(&consultation, price, 1), (&test, test_price, 1)],
    )
    .await;
    let uuid = bill["uuid"].as_str().unwrap().to_string();
    assert_eq!(bill["total"], json!(7500));
    let item = bill["lineItems"][1]["uuid"].as_str().unwrap().to_string();
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/billing/billLineItem/{item}?reason=examen%20non%20fait"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let read = c.get(&format!("{REST}/billing/bill/{uuid}")).await;
    assert_eq!(read.body["total"], json!(5000));
    assert_eq!(read.body["lineItems"].as_array().unwrap().len(), 1);

    let r = c
        .send(
            "DELETE",
            &format!("{REST}/billing/bill/{uuid}?reason=doublon"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let read = c.get(&format!("{REST}/billing/bill/{uuid}?v=full")).await;
    assert_eq!(read.body["voided"], true);
    assert_eq!(read.body["voidReason"], "doublon");
    let list = c.get(&format!("{REST}/billing/bill?patientUuid={p}")).await;
    assert_eq!(
        list.body["results"],
        json!([]),
        "a voided bill leaves the lists"
    );
    assert_eq!(
        c.get(&format!("{REST}/billing/patientPaymentStatus/{p}"))
            .await
            .body["status"],
        "PAID"
    );
    // Her bill, voided, still holds her: she cannot be purged (it would be left without
    // its patient), only voided.
    let r = c
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
            .contains("bills"),
        "{:?}",
        r.body
    );
}

#[tokio::test]
async fn billing_needs_the_cashier_privileges() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let p = register_patient(&mut admin, &st, "Grâce", "Lukusa", "700004").await;
    let (consultation, price) = service(&mut admin, "Consultation générale").await;
    let bill = new_bill(&mut admin, &p, &[(&consultation, price, 1)]).await;
    let uuid = bill["uuid"].as_str().unwrap();
    let mut clerk = registration_clerk(&mut admin, &st, "accueil1").await;
    for path in [
        format!("{REST}/billing/bill?patientUuid={p}"),
        format!("{REST}/billing/bill/{uuid}"),
        format!("{REST}/billing/billableService"),
        format!("{REST}/billing/receipt?billUuid={uuid}"),
    ] {
        assert_eq!(
            clerk.get(&path).await.status,
            StatusCode::FORBIDDEN,
            "{path}"
        );
    }
    let r = clerk
        .post(
            &format!("{REST}/billing/bill"),
            &json!({"patient": p, "lineItems": [{"billableService": consultation, "price": 5000}]})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // The content's cashier role can bill and take payments.
    let r = admin
        .post(
            &format!("{REST}/user"),
            &json!({"username": "caisse1", "password": "Caisse-pass-2026",
                "person": {"names": [{"givenName": "Jeanne", "familyName": "Kasongo"}], "gender": "F"},
                "roles": ["Organizational: Cashier"]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut cashier = Client::new(st.clone());
    cashier.login("caisse1", "Caisse-pass-2026").await;
    let mine = new_bill(&mut cashier, &p, &[(&consultation, json!(5000), 1)]).await;
    assert_ne!(
        mine["cashier"]["uuid"], bill["cashier"]["uuid"],
        "her own provider"
    );
    let mine = mine["uuid"].as_str().unwrap();
    cashier
        .post(
            &format!("{REST}/billing/bill/{mine}"),
            &json!({"status": "POSTED"}).to_string(),
        )
        .await;
    assert_eq!(
        pay(&mut cashier, mine, CASH, json!(5000)).await.status,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn a_backup_restores_bills_with_their_indexes_and_numbering() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Béatrice", "Ngalula", "700005").await;
    let (consultation, price) = service(&mut c, "Consultation générale").await;
    let first = new_bill(&mut c, &p, &[(&consultation, price.clone(), 1)]).await;
    let uuid = first["uuid"].as_str().unwrap();
    c.post(
        &format!("{REST}/billing/bill/{uuid}"),
        &json!({"status": "POSTED"}).to_string(),
    )
    .await;
    pay(&mut c, uuid, CASH, json!(5000)).await;
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;
    for path in [
        format!("{REST}/billing/bill?v=full&patientUuid={p}"),
        format!("{REST}/billing/bill?v={LIST_REP}&status=PAID&totalCount=true"),
        format!("{REST}/billing/bill/{uuid}?v=full"),
    ] {
        let (a, b) = (c.get(&path).await, c2.get(&path).await);
        assert_eq!(a.status, StatusCode::OK, "{path}");
        assert_eq!(a.body, b.body, "{path}");
    }
    // The receipt numbering goes on after the restored bills.
    let next = new_bill(&mut c2, &p, &[(&consultation, price, 1)]).await;
    assert_ne!(next["receiptNumber"], first["receiptNumber"]);
    assert!(next["id"].as_i64() > first["id"].as_i64());
}

#[tokio::test]
async fn line_items_and_payments_keep_their_identity() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Esther", "Kalala", "700006").await;
    let (consultation, price) = service(&mut c, "Consultation générale").await;
    let (test, test_price) = service(&mut c, "Goutte épaisse").await;
    let bill = new_bill(
        &mut c,
        &p,
        &[(&consultation, price.clone(), 1), (&test, test_price, 1)],
    )
    .await;
    let uuid = bill["uuid"].as_str().unwrap().to_string();
    let kept = bill["lineItems"][0].clone();
    let dropped = bill["lineItems"][1]["uuid"].as_str().unwrap().to_string();
    let post = |items: Value| json!({"lineItems": items}).to_string();
    let mut first = kept.clone();
    first["billableService"] = json!(consultation);

    // An item left out of an update is removed (voided in the bill).
    let r = c
        .post(
            &format!("{REST}/billing/bill/{uuid}"),
            &post(json!([first])),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["total"], json!(5000));
    // Its uuid cannot come back, an item cannot be there twice, and another bill's item
    // uuid is not this bill's.
    for items in [
        json!([first, {"uuid": dropped, "billableService": test, "quantity": 1, "price": 2500}]),
        json!([first, first]),
    ] {
        let r = c
            .post(&format!("{REST}/billing/bill/{uuid}"), &post(items))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
        assert!(
            r.body["error"]["fieldErrors"]["lineItems[1].uuid"].is_array(),
            "{:?}",
            r.body
        );
    }
    let r = c
        .post(
            &format!("{REST}/billing/bill"),
            &json!({"patient": p, "lineItems": [{"uuid": kept["uuid"], "billableService": consultation, "price": 5000}]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(r.body["error"]["fieldErrors"]["lineItems[0].uuid"].is_array());
    // The last item is not removed alone: the bill is deleted instead.
    let r = c
        .send(
            "DELETE",
            &format!(
                "{REST}/billing/billLineItem/{}",
                kept["uuid"].as_str().unwrap()
            ),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // Finalised: the items may be sent back as read, in any order, but not changed.
    let r = c
        .post(
            &format!("{REST}/billing/bill/{uuid}"),
            &json!({"status": "POSTED"}).to_string(),
        )
        .await;
    assert_eq!(r.body["status"], "POSTED");
    let r = c
        .post(
            &format!("{REST}/billing/bill/{uuid}"),
            &post(json!([first])),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // A payment sent twice (a retry) is taken once.
    let payment = json!({"uuid": "0f3c2b1a-0000-4000-8000-000000000001", "instanceType": CASH, "amountTendered": 1000});
    let r = c
        .post(
            &format!("{REST}/billing/bill/{uuid}/payment"),
            &payment.to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let r = c
        .post(
            &format!("{REST}/billing/bill/{uuid}/payment"),
            &payment.to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let read = c.get(&format!("{REST}/billing/bill/{uuid}")).await;
    assert_eq!(read.body["payments"].as_array().unwrap().len(), 1);
    assert_eq!(read.body["status"], "POSTED");
}
