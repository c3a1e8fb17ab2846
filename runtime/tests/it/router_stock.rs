//! The pharmacy's stock over REST, as the O3 stock management app drives the stock
//! management module: items of the content's drugs with packaging units, a supplier, user
//! role scopes; a delivery received at the main store and approved; a requisition from the
//! pharmacy answered by an issue, dispatched and received; an adjustment, a stock take, a
//! rejected disposal; never a batch below zero; who may act where; inventory and history;
//! a restart and a restore keeping it all.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const SM: &str = "/openmrs/ws/rest/v1/stockmanagement";
const AMOXICILLIN: &str = "6b5ba414-cd71-43c3-9872-ddb2ae0e0f2e";
const CAPSULE: &str = "1608AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const BOX: &str = "162396AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const RECEIPT: &str = "44444444-4444-4444-4444-444444444444";
const ISSUE: &str = "66666666-6666-6666-6666-666666666666";
const REQUISITION: &str = "77777777-7777-7777-7777-777777777777";
const ADJUSTMENT: &str = "11111111-1111-1111-1111-111111111111";
const DISPOSAL: &str = "22222222-2222-2222-2222-222222222222";
const STOCK_TAKE: &str = "88888888-8888-8888-8888-888888888888";
const ALL_TYPES: &[&str] = &[
    ADJUSTMENT,
    DISPOSAL,
    "33333333-3333-3333-3333-333333333333",
    RECEIPT,
    "55555555-5555-5555-5555-555555555555",
    ISSUE,
    REQUISITION,
    STOCK_TAKE,
    "99999999-9999-9999-9999-999999999999",
];
const STORE: &str = "Bondeko - Magasin central";
const PHARMACY: &str = "Bondeko - Pharmacie";

fn concept(st: &runtime::http::AppState, name: &str) -> String {
    let catalog = st.catalog.load();
    catalog
        .content
        .concepts
        .iter()
        .find(|c| c.names.iter().any(|n| n.name == name))
        .unwrap_or_else(|| panic!("concept {name}"))
        .uuid
        .clone()
}

fn in_days(days: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::days(days))
        .format("%Y-%m-%d")
        .to_string()
}

/// What a facility sets up first: a scope letting `user` (through `role`) do every
/// operation at the store and the pharmacy, a supplier, and an item for amoxicillin sold
/// in capsules and boxes of 100: (item, capsule unit, box unit, supplier).
struct Setup {
    item: String,
    capsule: String,
    boxed: String,
    supplier: String,
    store: String,
    pharmacy: String,
}

async fn scope(c: &mut Client, user: &str, role: &str, locations: &[&str]) -> Value {
    let r = c
        .post(
            &format!("{SM}/userrolescope"),
            &json!({"userUuid": user, "role": role, "permanent": true, "enabled": true,
                    "locations": locations.iter().map(|l| json!({"locationUuid": l, "enableDescendants": false})).collect::<Vec<_>>(),
                    "operationTypes": ALL_TYPES.iter().map(|t| json!({"operationTypeUuid": t})).collect::<Vec<_>>()})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body
}

async fn setup(c: &mut Client, st: &runtime::http::AppState) -> Setup {
    let store = location_uuid(st, STORE);
    let pharmacy = location_uuid(st, PHARMACY);
    let admin = c.user_uuid().await;
    scope(c, &admin, "System Developer", &[&store, &pharmacy]).await;
    let r = c
        .post(
            &format!("{SM}/stocksource"),
            &json!({"name": "CDR Kinshasa", "acronym": "CDR",
                    "sourceType": concept(st, "Centrale de distribution régionale")})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let supplier = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{SM}/stockitem"),
            &json!({"drugUuid": AMOXICILLIN, "hasExpiration": true, "expiryNotice": 90,
                    "dispensingUnitUuid": CAPSULE, "preferredVendorUuid": supplier})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let item = r.body["uuid"].as_str().unwrap().to_string();
    let mut unit = async |uom: &str, factor: u32| {
        let body = json!({"stockItemUuid": item, "packagingUomUuid": uom, "factor": factor});
        let r = c
            .post(&format!("{SM}/stockitempackaginguom"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body["uuid"].as_str().unwrap().to_string()
    };
    let capsule = unit(CAPSULE, 1).await;
    let boxed = unit(BOX, 100).await;
    Setup {
        item,
        capsule,
        boxed,
        supplier,
        store,
        pharmacy,
    }
}

async fn operation(c: &mut Client, body: Value) -> Value {
    let r = c
        .post(&format!("{SM}/stockoperation"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body
}

async fn act(c: &mut Client, op: &Value, name: &str, reason: Option<&str>) -> (StatusCode, Value) {
    let r = c
        .post(
            &format!("{SM}/stockoperationaction"),
            &json!({"name": name, "uuid": op["uuid"], "reason": reason}).to_string(),
        )
        .await;
    (r.status, r.body)
}

/// The quantity (base units) of the item at a location, summed over its batches.
async fn on_hand(c: &mut Client, item: &str, location: &str) -> f64 {
    let r = c
        .get(&format!(
            "{SM}/stockiteminventory?stockItemUuid={item}&locationUuid={location}&groupBy=LocationStockItem"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["quantity"].as_f64().unwrap())
        .sum()
}

/// A delivery of `boxes` boxes of batch `batch` received at the store and approved.
async fn receive(c: &mut Client, s: &Setup, batch: &str, boxes: u32) -> Value {
    let receipt = operation(
        c,
        json!({"operationTypeUuid": RECEIPT, "atLocationUuid": s.store, "sourceUuid": s.supplier,
               "destinationUuid": s.store, "operationDate": in_days(0),
               "stockOperationItems": [{"stockItemUuid": s.item, "batchNo": batch,
                   "expiration": in_days(400), "quantity": boxes,
                   "stockItemPackagingUOMUuid": s.boxed, "purchasePrice": 12.5}]}),
    )
    .await;
    assert_eq!(
        act(c, &receipt, "SUBMIT", None).await.0,
        StatusCode::CREATED
    );
    assert_eq!(
        act(c, &receipt, "APPROVE", None).await.0,
        StatusCode::CREATED
    );
    receipt
}

async fn batch_of(c: &mut Client, s: &Setup, number: &str) -> String {
    let r = c
        .get(&format!("{SM}/stockbatch?stockItemUuid={}", s.item))
        .await;
    r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["batchNo"] == number)
        .unwrap_or_else(|| panic!("batch {number}: {}", r.body))["uuid"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_delivery_is_received_approved_issued_to_the_pharmacy_and_counted() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let s = setup(&mut c, &st).await;

    // The module's nine operation types under their published uuids.
    let r = c.get(&format!("{SM}/stockoperationtype")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 9);
    let r = c.get(&format!("{SM}/stockoperationtype/{RECEIPT}")).await;
    assert_eq!(r.body["operationType"], "receipt");
    // Named in the session's language from the content's messages, the module's name else.
    assert_eq!(r.body["name"], "Réception");
    assert_eq!(r.body["sourceType"], "Other");
    assert_eq!(r.body["destinationType"], "Location");

    // The item, with its units, in the full representation.
    let r = c.get(&format!("{SM}/stockitem/{}?v=full", s.item)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["drugUuid"], AMOXICILLIN);
    assert_eq!(r.body["drugName"], "Amoxicilline 500 mg gélule");
    assert_eq!(r.body["preferredVendorName"], "CDR Kinshasa");
    assert_eq!(r.body["packagingUnits"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["permission"]["canEdit"], true);
    let r = c.get(&format!("{SM}/stockitem?q=amoxi")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);

    // A delivery: submitted, nothing arrives yet; approved, 5 boxes = 500 capsules.
    let receipt = operation(
        &mut c,
        json!({"operationTypeUuid": RECEIPT, "atLocationUuid": s.store, "sourceUuid": s.supplier,
               "destinationUuid": s.store, "operationDate": in_days(0), "remarks": "Livraison de mars",
               "stockOperationItems": [{"stockItemUuid": s.item, "batchNo": "AMX-001",
                   "expiration": in_days(400), "quantity": 5,
                   "stockItemPackagingUOMUuid": s.boxed, "purchasePrice": 12.5}]}),
    )
    .await;
    assert_eq!(receipt["status"], "NEW");
    assert!(
        receipt["operationNumber"]
            .as_str()
            .unwrap()
            .starts_with("RCPT-")
    );
    let (status, body) = act(&mut c, &receipt, "SUBMIT", None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 0.0);
    // Approving twice, or completing what is submitted, is refused.
    let (status, body) = act(&mut c, &receipt, "APPROVE", None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = act(&mut c, &receipt, "APPROVE", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 500.0);
    let r = c
        .get(&format!(
            "{SM}/stockoperation/{}?v=full",
            receipt["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.body["status"], "COMPLETED");
    assert_eq!(r.body["sourceName"], "CDR Kinshasa");
    assert_eq!(r.body["stockOperationItems"][0]["batchNo"], "AMX-001");
    assert_eq!(r.body["stockOperationItems"][0]["quantity"], 5);
    assert!(r.body["completedDate"].is_string());
    let amx1 = batch_of(&mut c, &s, "AMX-001").await;

    // The pharmacy asks the store for 2 boxes; the store issues them against the request.
    let requisition = operation(
        &mut c,
        json!({"operationTypeUuid": REQUISITION, "atLocationUuid": s.pharmacy,
               "sourceUuid": s.pharmacy, "destinationUuid": s.store,
               "stockOperationItems": [{"stockItemUuid": s.item, "quantity": 2,
                   "stockItemPackagingUOMUuid": s.boxed}]}),
    )
    .await;
    assert_eq!(
        act(&mut c, &requisition, "SUBMIT", None).await.0,
        StatusCode::CREATED
    );
    assert_eq!(
        act(&mut c, &requisition, "APPROVE", None).await.0,
        StatusCode::CREATED
    );
    assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 500.0);
    let issue = operation(
        &mut c,
        json!({"operationTypeUuid": ISSUE, "atLocationUuid": s.store, "sourceUuid": s.store,
               "destinationUuid": s.pharmacy, "requisitionStockOperationUuid": requisition["uuid"],
               "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": amx1,
                   "quantity": 2, "stockItemPackagingUOMUuid": s.boxed}]}),
    )
    .await;
    // An issue is dispatched, then received: it cannot be approved.
    assert_eq!(
        act(&mut c, &issue, "APPROVE", None).await.0,
        StatusCode::BAD_REQUEST
    );
    let (status, body) = act(&mut c, &issue, "DISPATCH", None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 300.0);
    assert_eq!(on_hand(&mut c, &s.item, &s.pharmacy).await, 0.0);
    let (status, body) = act(&mut c, &issue, "COMPLETE", None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(on_hand(&mut c, &s.item, &s.pharmacy).await, 200.0);

    // Never below zero: issuing 4 boxes from a store holding 3 is refused, nothing moves.
    let too_much = operation(
        &mut c,
        json!({"operationTypeUuid": ISSUE, "atLocationUuid": s.store, "sourceUuid": s.store,
               "destinationUuid": s.pharmacy,
               "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": amx1,
                   "quantity": 4, "stockItemPackagingUOMUuid": s.boxed}]}),
    )
    .await;
    let (status, body) = act(&mut c, &too_much, "SUBMIT", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("below zero"),
        "{body}"
    );
    assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 300.0);
    let r = c
        .get(&format!(
            "{SM}/stockoperation/{}",
            too_much["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.body["status"], "NEW");
    assert_eq!(
        act(&mut c, &too_much, "CANCEL", Some("Erreur de saisie"))
            .await
            .0,
        StatusCode::CREATED
    );

    // A loss of 10 capsules at the pharmacy, with its reason.
    let loss = json!({"operationTypeUuid": ADJUSTMENT, "atLocationUuid": s.pharmacy,
        "sourceUuid": s.pharmacy,
        "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": amx1,
            "quantity": -10, "stockItemPackagingUOMUuid": s.capsule}]});
    let r = c
        .post(&format!("{SM}/stockoperation"), &loss.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body["error"]["fieldErrors"]["reasonUuid"].is_array(),
        "{}",
        r.body
    );
    let mut with_reason = loss.clone();
    with_reason["reasonUuid"] = json!(concept(&st, "Perte"));
    let adjustment = operation(&mut c, with_reason).await;
    let (status, body) = act(&mut c, &adjustment, "COMPLETE", None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(on_hand(&mut c, &s.item, &s.pharmacy).await, 190.0);

    // A stock take at the store counts 290 capsules where 300 are recorded.
    let count = operation(
        &mut c,
        json!({"operationTypeUuid": STOCK_TAKE, "atLocationUuid": s.store, "sourceUuid": s.store,
               "reasonUuid": concept(&st, "Correction d'inventaire"),
               "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": amx1,
                   "quantity": 290, "stockItemPackagingUOMUuid": s.capsule}]}),
    )
    .await;
    assert_eq!(
        act(&mut c, &count, "SUBMIT", None).await.0,
        StatusCode::CREATED
    );
    assert_eq!(
        act(&mut c, &count, "APPROVE", None).await.0,
        StatusCode::CREATED
    );
    assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 290.0);

    // A disposal submitted takes the stock at once; rejected, it is put back.
    let disposal = operation(
        &mut c,
        json!({"operationTypeUuid": DISPOSAL, "atLocationUuid": s.store, "sourceUuid": s.store,
               "reasonUuid": concept(&st, "Produit endommagé"),
               "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": amx1,
                   "quantity": 1, "stockItemPackagingUOMUuid": s.boxed}]}),
    )
    .await;
    assert_eq!(
        act(&mut c, &disposal, "SUBMIT", None).await.0,
        StatusCode::CREATED
    );
    assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 190.0);
    assert_eq!(
        act(&mut c, &disposal, "REJECT", None).await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        act(&mut c, &disposal, "REJECT", Some("Cartons intacts"))
            .await
            .0,
        StatusCode::CREATED
    );
    assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 290.0);
    let r = c
        .get(&format!(
            "{SM}/stockoperation/{}",
            disposal["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.body["status"], "REJECTED");
    assert_eq!(r.body["rejectionReason"], "Cartons intacts");

    // The item's history at the store, newest first: the disposal and its reversal, the
    // count's difference, the issue, the receipt.
    let r = c
        .get(&format!(
            "{SM}/stockitemtransaction?stockItemUuid={}&partyUuid={}&totalCount=true",
            s.item, s.store
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let quantities: Vec<f64> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["quantity"].as_f64().unwrap())
        .collect();
    assert_eq!(quantities, vec![100.0, -100.0, -10.0, -200.0, 500.0]);
    assert_eq!(r.body["totalCount"], 5);
    assert_eq!(r.body["results"][4]["stockOperationTypeName"], "Réception");
    assert_eq!(r.body["results"][4]["stockBatchNo"], "AMX-001");
    let sum: f64 = quantities.iter().sum();
    assert_eq!(sum, on_hand(&mut c, &s.item, &s.store).await);

    // The operations list, filtered as the app filters it.
    let r = c
        .get(&format!(
            "{SM}/stockoperation?v=full&operationTypeUuid={RECEIPT},{ISSUE}&status=COMPLETED"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["results"].as_array().unwrap().len(), 2);
    let r = c.get(&format!("{SM}/stockoperation?status=FINISHED")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn lines_are_checked_against_the_item_its_units_and_batches() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let s = setup(&mut c, &st).await;
    receive(&mut c, &s, "AMX-002", 1).await;
    let batch = batch_of(&mut c, &s, "AMX-002").await;
    let base = json!({"operationTypeUuid": RECEIPT, "atLocationUuid": s.store,
        "sourceUuid": s.supplier, "destinationUuid": s.store});
    for (line, field) in [
        (
            json!({"stockItemUuid": s.item, "batchNo": "X1", "expiration": in_days(30),
                "quantity": 1, "stockItemPackagingUOMUuid": CAPSULE}),
            "stockItemPackagingUOMUuid",
        ),
        (
            json!({"stockItemUuid": s.item, "batchNo": "X1", "quantity": 1,
                "stockItemPackagingUOMUuid": s.capsule}),
            "expiration",
        ),
        (
            json!({"stockItemUuid": s.item, "batchNo": "X1", "expiration": in_days(30),
                "quantity": -1, "stockItemPackagingUOMUuid": s.capsule}),
            "quantity",
        ),
        (
            json!({"stockItemUuid": s.item, "batchNo": "X1", "expiration": in_days(30),
                "quantity": 1.00001, "stockItemPackagingUOMUuid": s.capsule}),
            "quantity",
        ),
        (
            json!({"stockItemUuid": "no-such-item", "batchNo": "X1", "expiration": in_days(30),
                "quantity": 1, "stockItemPackagingUOMUuid": s.capsule}),
            "stockItemUuid",
        ),
        (
            json!({"stockItemUuid": s.item, "batchNo": "AMX-002", "expiration": in_days(31),
                "quantity": 1, "stockItemPackagingUOMUuid": s.capsule}),
            "expiration",
        ),
    ] {
        let mut body = base.clone();
        body["stockOperationItems"] = json!([line]);
        let r = c
            .post(&format!("{SM}/stockoperation"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{line}: {}", r.body);
        assert!(
            r.body["error"]["fieldErrors"][format!("stockOperationItems[0].{field}")].is_array(),
            "{line}: {}",
            r.body
        );
    }
    // A receipt takes a party of the right kind on each side.
    let mut body = base.clone();
    body["sourceUuid"] = json!(s.store);
    body["stockOperationItems"] = json!([{"stockItemUuid": s.item, "batchNo": "X1",
        "expiration": in_days(30), "quantity": 1, "stockItemPackagingUOMUuid": s.capsule}]);
    let r = c
        .post(&format!("{SM}/stockoperation"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    // An issue names an existing batch of the item, not an expired one.
    let r = c
        .post(
            &format!("{SM}/stockoperation"),
            &json!({"operationTypeUuid": ISSUE, "atLocationUuid": s.store, "sourceUuid": s.store,
                    "destinationUuid": s.pharmacy,
                    "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": "AMX-002",
                        "quantity": 1, "stockItemPackagingUOMUuid": s.capsule}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    // One item per drug; a unit once per item; a factor above zero.
    let r = c
        .post(
            &format!("{SM}/stockitem"),
            &json!({"drugUuid": AMOXICILLIN}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    for body in [
        json!({"stockItemUuid": s.item, "packagingUomUuid": BOX, "factor": 50}),
        json!({"stockItemUuid": s.item, "packagingUomUuid": concept(&st, "Perte"), "factor": 0}),
    ] {
        let r = c
            .post(&format!("{SM}/stockitempackaginguom"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
    }
    // A completed operation is not edited any more.
    let done = receive(&mut c, &s, "AMX-003", 1).await;
    let r = c
        .post(
            &format!("{SM}/stockoperation/{}", done["uuid"].as_str().unwrap()),
            &json!({"remarks": "changé"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(batch.len(), 36);
}

#[tokio::test]
async fn only_users_whose_scope_allows_an_operation_at_a_location_may_do_it() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let s = setup(&mut admin, &st).await;
    receive(&mut admin, &s, "AMX-010", 2).await;
    let batch = batch_of(&mut admin, &s, "AMX-010").await;
    let body = json!({"username": "magasinier", "password": "Stock-pass-2026",
        "person": {"names": [{"givenName": "Paul", "familyName": "Mbuyi"}], "gender": "M"},
        "roles": ["Stock Operator"]});
    let r = admin
        .post("/openmrs/ws/rest/v1/user", &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let operator_uuid = r.body["uuid"].as_str().unwrap().to_string();
    let mut operator = Client::new(st.clone());
    operator.login("magasinier", "Stock-pass-2026").await;
    let issue = json!({"operationTypeUuid": ISSUE, "atLocationUuid": s.store,
        "sourceUuid": s.store, "destinationUuid": s.pharmacy,
        "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": batch,
            "quantity": 1, "stockItemPackagingUOMUuid": s.boxed}]});
    // No scope yet: refused.
    let r = operator
        .post(&format!("{SM}/stockoperation"), &issue.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("permission")
    );
    // A scope at the pharmacy only does not reach the store.
    let pharmacy_scope = scope(&mut admin, &operator_uuid, "Stock Operator", &[&s.pharmacy]).await;
    let r = operator
        .post(&format!("{SM}/stockoperation"), &issue.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    // At the store: he makes and submits the issue, but may not dispatch what is
    // submitted (that takes the approve privilege); at the pharmacy he receives it.
    let r = admin
        .post(
            &format!(
                "{SM}/userrolescope/{}",
                pharmacy_scope["uuid"].as_str().unwrap()
            ),
            &json!({"locations": [{"locationUuid": s.pharmacy}, {"locationUuid": s.store}]})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = operator
        .post(&format!("{SM}/stockoperation"), &issue.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let op = r.body.clone();
    let r = operator
        .get(&format!(
            "{SM}/stockoperation/{}?v=full",
            op["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.body["permission"]["canEdit"], true);
    assert_eq!(r.body["permission"]["canApprove"], false);
    assert_eq!(
        act(&mut operator, &op, "SUBMIT", None).await.0,
        StatusCode::CREATED
    );
    assert_eq!(
        act(&mut operator, &op, "DISPATCH", None).await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        act(&mut admin, &op, "DISPATCH", None).await.0,
        StatusCode::CREATED
    );
    assert_eq!(
        act(&mut operator, &op, "COMPLETE", None).await.0,
        StatusCode::CREATED
    );
    assert_eq!(on_hand(&mut admin, &s.item, &s.pharmacy).await, 100.0);
    // A disabled scope allows nothing.
    let r = admin
        .post(
            &format!(
                "{SM}/userrolescope/{}",
                pharmacy_scope["uuid"].as_str().unwrap()
            ),
            &json!({"enabled": false}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = operator
        .post(&format!("{SM}/stockoperation"), &issue.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    // Items and sources are the stock manager's: the operator may read, not write.
    let r = operator
        .post(
            &format!("{SM}/stocksource"),
            &json!({"name": "Don UNICEF"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = operator.get(&format!("{SM}/stockitem")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = Client::new(st.clone())
        .get(&format!("{SM}/stockitem"))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_restart_and_a_restore_keep_the_stock_and_its_numbering() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("emr.redb");
    let bundle = runtime::embedded::EMBEDDED_BUNDLE.to_vec();
    let st = state_with(
        bundle.clone(),
        runtime::store::Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
    );
    let mut c = Client::admin(st.clone()).await;
    let s = setup(&mut c, &st).await;
    let first = receive(&mut c, &s, "AMX-020", 3).await;
    // A rule and an alert, which the stock rules' evaluation writes.
    let admin = c.user_uuid().await;
    let r = c
        .post(
            &format!("{SM}/stockrule"),
            &json!({"stockItemUuid": s.item, "name": "Seuil", "locationUuid": s.store,
                "quantity": 5, "stockItemPackagingUOMUuid": s.boxed, "enabled": true,
                "evaluationFrequency": 60, "actionFrequency": 1440, "alertRole": "System Developer"})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = c
        .post(
            "/openmrs/ws/rest/v1/alert",
            &json!({"text": "Stock alert", "recipients": [admin]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let first_alert = r.body["alertId"].as_u64().unwrap();
    let paths = [
        format!("{SM}/stockrule"),
        "/openmrs/ws/rest/v1/alert?v=full".to_string(),
        format!("{SM}/stockiteminventory?locationUuid={}", s.store),
        format!("{SM}/stockitemtransaction?stockItemUuid={}", s.item),
        format!("{SM}/stockoperation?v=full"),
        format!("{SM}/stockitem?v=full"),
        format!("{SM}/userrolescope"),
        format!("{SM}/stocksource"),
        format!("{SM}/stockbatch"),
    ];
    let mut before = Vec::new();
    for p in &paths {
        before.push(c.get(p).await.body);
    }
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    drop((c, st));

    let reopened = state_with(
        bundle.clone(),
        runtime::store::Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
    );
    let restored_store = test_store();
    restored_store
        .restore(std::io::Cursor::new(&snapshot))
        .unwrap();
    let restored = state_with(bundle, restored_store);
    for st in [reopened, restored] {
        let mut c = Client::admin(st.clone()).await;
        for (p, b) in paths.iter().zip(&before) {
            assert_eq!(&c.get(p).await.body, b, "{p}");
        }
        let next = receive(&mut c, &s, "AMX-021", 1).await;
        let n = |v: &Value| {
            v["operationNumber"].as_str().unwrap()[5..]
                .parse::<u32>()
                .unwrap()
        };
        assert_eq!(n(&next), n(&first) + 1);
        assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 400.0);
        // Alerts go on being numbered after the kept ones.
        let r = c
            .post(
                "/openmrs/ws/rest/v1/alert",
                &json!({"text": "Encore", "recipients": [admin]}).to_string(),
            )
            .await;
        assert_eq!(r.body["alertId"].as_u64().unwrap(), first_alert + 1);
    }
}

/// A patient with a visit and a signed prescription of amoxicillin: (patient, encounter,
/// order).
async fn prescribed(
    c: &mut Client,
    st: &runtime::http::AppState,
    id: &str,
) -> (String, String, String) {
    const REST: &str = "/openmrs/ws/rest/v1";
    let patient = register_patient(c, st, "Sifa", "Ngoy", id).await;
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": patient, "visitType": "f19c6fdb-bd43-41e7-bb4c-cc892e489c25",
                    "location": location_uuid(st, "Centre de santé Bondeko"),
                    "startDatetime": (chrono::Utc::now() - chrono::Duration::hours(2)).format("%Y-%m-%dT%H:%M:%S.000+0000").to_string()})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let provider = c.get(&format!("{REST}/session")).await.body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let concept = st.catalog.load().drug(AMOXICILLIN).unwrap().concept.clone();
    let body = json!({"patient": patient, "encounterType": "39da3525-afe4-45ff-8977-c53b7b359158",
        "visit": visit, "location": location_uuid(st, "Centre de santé Bondeko"), "orders": [{
        "action": "NEW", "type": "drugorder", "patient": patient,
        "careSetting": "6f0c9a92-6f24-11e3-af88-005056821db0", "orderer": provider,
        "drug": AMOXICILLIN, "concept": concept, "dose": 1, "doseUnits": CAPSULE,
        "route": "160240AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "frequency": "38c794d0-0f9e-4796-a7f4-0448923b71c0",
        "asNeeded": false, "numRefills": 0, "quantity": 15, "quantityUnits": CAPSULE, "duration": 5,
        "durationUnits": "1072AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "dosingType": "org.openmrs.SimpleDosingInstructions"}]});
    let r = send_json(c, "POST", &format!("{REST}/encounter"), &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    (
        patient,
        r.body["uuid"].as_str().unwrap().to_string(),
        r.body["orders"][0]["uuid"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn dispensing_a_prescription_draws_the_chosen_batch_at_the_pharmacy() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let s = setup(&mut c, &st).await;
    // Opening stock at the pharmacy: 20 capsules of batch AMX-P1.
    let opening = operation(
        &mut c,
        json!({"operationTypeUuid": "99999999-9999-9999-9999-999999999999",
               "atLocationUuid": s.pharmacy, "sourceUuid": s.pharmacy,
               "stockOperationItems": [{"stockItemUuid": s.item, "batchNo": "AMX-P1",
                   "expiration": in_days(200), "quantity": 20, "stockItemPackagingUOMUuid": s.capsule}]}),
    )
    .await;
    assert_eq!(
        act(&mut c, &opening, "COMPLETE", None).await.0,
        StatusCode::CREATED
    );

    // What the dispensing app asks to offer batches.
    let inventory = format!(
        "{SM}/stockiteminventory?v=default&totalCount=true&drugUuid={AMOXICILLIN}&includeBatchNo=true\
         &groupBy=LocationStockItemBatchNo&dispenseLocationUuid={p}&includeStrength=1\
         &includeConceptRefIds=1&emptyBatch=1&emptyBatchLocationUuid={p}&dispenseAtLocation=1",
        p = s.pharmacy
    );
    let r = c.get(&inventory).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let row = r.body["results"][0].clone();
    assert_eq!(row["batchNumber"], "AMX-P1");
    assert_eq!(row["quantity"], 20);
    assert_eq!(row["quantityUoMUuid"], json!(s.capsule));
    assert_eq!(row["locationUuid"], json!(s.pharmacy));
    assert_eq!(row["drugUuid"], AMOXICILLIN);

    let (patient, encounter, order) = prescribed(&mut c, &st, "330010").await;
    let request = |quantity: u32, patient: &str| {
        json!({"dispenseItems": [{"dispenseLocation": s.pharmacy, "patient": patient,
            "order": order, "encounter": encounter, "stockItem": s.item,
            "stockBatch": row["stockBatchUuid"], "stockItemPackagingUOM": row["quantityUoMUuid"],
            "quantity": quantity}]})
    };
    let r = c
        .post(
            &format!("{SM}/dispenserequest"),
            &request(15, &patient).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(on_hand(&mut c, &s.item, &s.pharmacy).await, 5.0);
    // More than the batch holds: refused whole.
    let r = c
        .post(
            &format!("{SM}/dispenserequest"),
            &request(15, &patient).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("below zero")
    );
    assert_eq!(on_hand(&mut c, &s.item, &s.pharmacy).await, 5.0);
    // Another patient's order is refused.
    let other = register_patient(&mut c, &st, "Amani", "Kasongo", "330028").await;
    let r = c
        .post(
            &format!("{SM}/dispenserequest"),
            &request(1, &other).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    // The movement is the patient's, in the item's history.
    let r = c
        .get(&format!(
            "{SM}/stockitemtransaction?stockItemUuid={}&partyUuid={}",
            s.item, s.pharmacy
        ))
        .await;
    assert_eq!(r.body["results"][0]["quantity"], -15);
    assert_eq!(r.body["results"][0]["isPatientTransaction"], true);
    assert_eq!(r.body["results"][0]["patientUuid"], json!(patient));
    // Her duplicate merged into her: the dispense follows her, the stock does not move.
    let r = c
        .post(
            &format!("/openmrs/ws/rest/v1/patient/{other}/merge"),
            &json!({"nonPreferred": patient}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(on_hand(&mut c, &s.item, &s.pharmacy).await, 5.0);
    let r = c
        .get(&format!(
            "{SM}/stockitemtransaction?stockItemUuid={}&partyUuid={}",
            s.item, s.pharmacy
        ))
        .await;
    assert_eq!(r.body["results"][0]["patientUuid"], json!(other));
    let r = c
        .send(
            "DELETE",
            &format!("/openmrs/ws/rest/v1/patient/{other}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body.to_string().contains("dispenses from stock"),
        "{}",
        r.body
    );
    // Dispensing from stock takes its privilege.
    let mut clerk = registration_clerk(&mut c, &st, "accueil").await;
    let r = clerk
        .post(
            &format!("{SM}/dispenserequest"),
            &request(1, &patient).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
}

#[tokio::test]
async fn an_items_rules_references_and_an_operations_lines_and_links() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let s = setup(&mut c, &st).await;
    // A rule: alert below 2 boxes at the pharmacy, to the stock managers.
    let rule = json!({"stockItemUuid": s.item, "name": "Seuil d'alerte pharmacie",
        "locationUuid": s.pharmacy, "quantity": 2, "stockItemPackagingUOMUuid": s.boxed,
        "enabled": true, "evaluationFrequency": 60, "actionFrequency": 1440,
        "alertRole": "Stock Manager", "enableDescendants": false});
    let r = c.post(&format!("{SM}/stockrule"), &rule.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["packagingUomName"], "Boîte");
    assert_eq!(r.body["locationName"], PHARMACY);
    let rule_uuid = r.body["uuid"].as_str().unwrap().to_string();
    for (field, value) in [
        ("quantity", json!(0)),
        ("evaluationFrequency", json!(0)),
        ("alertRole", json!("Nobody")),
        ("stockItemPackagingUOMUuid", json!(BOX)),
    ] {
        let mut bad = rule.clone();
        bad[field] = value;
        let r = c.post(&format!("{SM}/stockrule"), &bad.to_string()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{field}: {}", r.body);
        assert!(
            r.body["error"]["fieldErrors"][field].is_array(),
            "{field}: {}",
            r.body
        );
    }
    let r = c
        .get(&format!("{SM}/stockrule?stockItemUuid={}", s.item))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    let r = c
        .send("DELETE", &format!("{SM}/stockrule/{rule_uuid}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .get(&format!("{SM}/stockrule?stockItemUuid={}", s.item))
        .await;
    assert_eq!(r.body["results"], json!([]));

    // The supplier's code for the item, once per supplier.
    let reference = json!({"stockItemUuid": s.item, "stockSourceUuid": s.supplier, "referenceCode": "CDR-AMX500"});
    let r = c
        .post(&format!("{SM}/stockitemreference"), &reference.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["stockSourceName"], "CDR Kinshasa");
    // The item's full representation lists it.
    let r = c.get(&format!("{SM}/stockitem/{}?v=full", s.item)).await;
    assert_eq!(r.body["references"][0]["referenceCode"], "CDR-AMX500");
    assert_eq!(r.body["references"].as_array().unwrap().len(), 1);
    let r = c
        .post(&format!("{SM}/stockitemreference"), &reference.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    // A requisition of two lines: one taken off while it is edited, never the last.
    let requisition = operation(
        &mut c,
        json!({"operationTypeUuid": REQUISITION, "sourceUuid": s.pharmacy, "destinationUuid": s.store,
               "stockOperationItems": [
                   {"stockItemUuid": s.item, "quantity": 2, "stockItemPackagingUOMUuid": s.boxed},
                   {"stockItemUuid": s.item, "quantity": 10, "stockItemPackagingUOMUuid": s.capsule}]}),
    )
    .await;
    assert_eq!(requisition["atLocationUuid"], json!(s.pharmacy));
    let lines = c
        .get(&format!(
            "{SM}/stockoperation/{}?v=full",
            requisition["uuid"].as_str().unwrap()
        ))
        .await
        .body["stockOperationItems"]
        .clone();
    let line = |i: usize| lines[i]["uuid"].as_str().unwrap().to_string();
    let r = c
        .send(
            "DELETE",
            &format!("{SM}/stockoperationitem/{}", line(1)),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let r = c
        .send(
            "DELETE",
            &format!("{SM}/stockoperationitem/{}", line(0)),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(
        act(&mut c, &requisition, "COMPLETE", None).await.0,
        StatusCode::CREATED
    );
    // The issue answering it is linked to it, both ways.
    receive(&mut c, &s, "AMX-030", 2).await;
    let batch = batch_of(&mut c, &s, "AMX-030").await;
    let issue = operation(
        &mut c,
        json!({"operationTypeUuid": ISSUE, "sourceUuid": s.store, "destinationUuid": s.pharmacy,
               "requisitionStockOperationUuid": requisition["uuid"],
               "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": batch,
                   "quantity": 2, "stockItemPackagingUOMUuid": s.boxed}]}),
    )
    .await;
    for q in [&requisition, &issue] {
        let r = c
            .get(&format!(
                "{SM}/stockoperationlink?q={}",
                q["uuid"].as_str().unwrap()
            ))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_eq!(r.body["results"][0]["parentUuid"], requisition["uuid"]);
        assert_eq!(r.body["results"][0]["childUuid"], issue["uuid"]);
    }
    // A requisition names its source among the locations the type allows (a pharmacy or a
    // dispensary asks; the central store is asked).
    let r = c
        .post(
            &format!("{SM}/stockoperation"),
            &json!({"operationTypeUuid": REQUISITION, "sourceUuid": s.store, "destinationUuid": s.pharmacy,
                    "stockOperationItems": [{"stockItemUuid": s.item, "quantity": 1, "stockItemPackagingUOMUuid": s.boxed}]})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body["error"]["fieldErrors"]["sourceUuid"].is_array(),
        "{}",
        r.body
    );
}

/// A report run as the reports app runs it: the Java properties text it sends.
fn report_parameters(report: &str, params: &[(&str, &str)]) -> String {
    let mut text = format!("param.report={report}\r\n");
    for (name, value) in params {
        text.push_str(&format!(
            "param.{name}.value={value}\r\nparam.{name}.value.desc={value}\r\nparam.{name}.description={name}\r\n"
        ));
    }
    text
}

async fn run_report(c: &mut Client, name: &str, report: &str, params: &[(&str, &str)]) -> Response {
    c.post(
        &format!("{SM}/batchjob"),
        &json!({"batchJobType": "Report", "description": name,
                "parameters": report_parameters(report, params)})
        .to_string(),
    )
    .await
}

/// The job's file, as the app downloads it.
async fn report_file(c: &mut Client, job: &Value) -> Vec<Vec<String>> {
    let r = c
        .get(&format!(
            "{SM}/batchjobartifact?id={}&download=1",
            job["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let disposition = r.headers["content-disposition"].to_str().unwrap();
    assert!(disposition.starts_with("attachment;"), "{disposition}");
    assert!(disposition.contains(".csv"), "{disposition}");
    r.body
        .as_str()
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[tokio::test]
async fn the_stock_reports_are_run_as_jobs_and_downloaded_as_csv() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let s = setup(&mut c, &st).await;
    // Three boxes of one batch and one box of another, expiring sooner; then twenty
    // capsules damaged and disposed of: 380 capsules at the store.
    let delivery = receive(&mut c, &s, "AMX-100", 3).await;
    let soon = operation(
        &mut c,
        json!({"operationTypeUuid": RECEIPT, "sourceUuid": s.supplier, "destinationUuid": s.store,
               "stockOperationItems": [{"stockItemUuid": s.item, "batchNo": "AMX-101",
                   "expiration": in_days(30), "quantity": 1, "stockItemPackagingUOMUuid": s.boxed}]}),
    )
    .await;
    act(&mut c, &soon, "SUBMIT", None).await;
    act(&mut c, &soon, "APPROVE", None).await;
    let first_batch = batch_of(&mut c, &s, "AMX-100").await;
    let loss = operation(
        &mut c,
        json!({"operationTypeUuid": DISPOSAL, "sourceUuid": s.store,
               "reasonUuid": concept(&st, "Produit endommagé"),
               "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": first_batch,
                   "quantity": 20, "stockItemPackagingUOMUuid": s.capsule}]}),
    )
    .await;
    act(&mut c, &loss, "SUBMIT", None).await;
    act(&mut c, &loss, "APPROVE", None).await;
    assert_eq!(on_hand(&mut c, &s.item, &s.store).await, 380.0);

    // The reports offered, under the module's uuids and names.
    let r = c.get(&format!("{SM}/report?v=default")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let reports = r.body["results"].as_array().unwrap();
    let status_report = reports
        .iter()
        .find(|x| x["systemName"] == "STOCK_STATUS_REPORT")
        .unwrap();
    assert_eq!(
        status_report["uuid"],
        "8df8c605-6b37-11ed-93a2-806d973f13a9"
    );
    assert_eq!(status_report["name"], "Stock Status Report");
    assert_eq!(
        status_report["parameters"],
        json!([
            "Date",
            "StockItemCategory",
            "Location",
            "ChildLocations",
            "InventoryGroupBy"
        ])
    );

    // The locations the report form offers: those tagged as any of the three (one
    // `_tag` with alternatives is an OR; two `_tag` parameters must both hold).
    let r = c
        .get("/openmrs/ws/fhir2/R4/Location?_summary=data&_tag=main%20store,main%20pharmacy,dispensary")
        .await;
    let names: Vec<&str> = r.body["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["resource"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&STORE) && names.contains(&PHARMACY),
        "{names:?}"
    );
    let r = c
        .get("/openmrs/ws/fhir2/R4/Location?_tag=main%20store&_tag=dispensary")
        .await;
    assert_eq!(r.body["total"], 0, "{}", r.body);

    // Stock status today at the store, by batch: what each batch holds, in boxes.
    let today = in_days(0);
    let job = run_report(
        &mut c,
        "État des stocks",
        "STOCK_STATUS_REPORT",
        &[
            ("StockItemCategory", ""),
            ("InventoryGroupBy", "LocationStockItemBatchNo"),
            ("Location", &s.store),
            ("ChildLocations", "false"),
            // The app sends the browser's local midnight in UTC: Kinshasa's is 23:00 the
            // day before.
            ("Date", &format!("{}T23:00:00.000Z", in_days(-1))),
        ],
    )
    .await;
    assert_eq!(job.status, StatusCode::CREATED, "{}", job.body);
    assert_eq!(job.body["status"], "Completed");
    assert_eq!(job.body["locationScope"], STORE);
    assert_eq!(job.body["outputArtifactFileExt"], "csv");
    let rows = report_file(&mut c, &job.body).await;
    assert_eq!(rows[0][0], "Nom générique");
    assert_eq!(
        rows[0][5..9],
        ["Emplacement", "N° de lot", "Péremption du lot", "Quantité"]
    );
    let by_batch: Vec<(&str, &str, &str)> = rows[1..]
        .iter()
        .map(|r| (r[6].as_str(), r[8].as_str(), r[9].as_str()))
        .collect();
    assert_eq!(by_batch.len(), 2, "{rows:?}");
    assert!(by_batch.contains(&("AMX-100", "2.8", "Boîte")), "{rows:?}");
    assert!(by_batch.contains(&("AMX-101", "1", "Boîte")), "{rows:?}");
    assert!(
        rows[1..]
            .iter()
            .all(|r| r[5] == STORE && r[0] == "Amoxicilline 500 mg gélule")
    );

    // A day before anything was received, the store held nothing.
    let before = run_report(
        &mut c,
        "État des stocks",
        "STOCK_STATUS_REPORT",
        &[
            ("InventoryGroupBy", "StockItemOnly"),
            ("Location", &s.store),
            ("Date", &in_days(-2)),
        ],
    )
    .await;
    assert_eq!(report_file(&mut c, &before.body).await.len(), 1);

    // Consumption over the three days around today, by item: 400 capsules received, 20
    // consumed (disposed of), in boxes, the opening stock choosing the unit.
    let job = run_report(
        &mut c,
        "Consommation",
        "STOCK_CONSUMPTION_REPORT",
        &[
            ("StartDate", &in_days(-1)),
            ("EndDate", &in_days(1)),
            ("InventoryGroupBy", "LocationStockItem"),
            ("Location", &s.store),
            ("ChildLocations", "true"),
        ],
    )
    .await;
    assert_eq!(job.status, StatusCode::CREATED, "{}", job.body);
    let rows = report_file(&mut c, &job.body).await;
    assert_eq!(
        rows[0][6..12],
        [
            "Quantité initiale",
            "Quantité reçue",
            "Quantité consommée",
            "Quantité finale",
            "Consommation mensuelle",
            "Unité"
        ]
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    // 0.2 boxes in 3 days: 2.03 a month of 30.5 days.
    assert_eq!(rows[1][6..12], ["0", "4", "0.2", "3.8", "2.03", "Boîte"]);

    // Stock-outs: the item at or under half its reorder level of 5 boxes (250 capsules)
    // is not; at or under all of it (500), it is.
    let r = c
        .post(
            &format!("{SM}/stockitem/{}", s.item),
            &json!({"reorderLevel": 5, "reorderLevelUoMUuid": s.boxed}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    for (ratio, rows_expected) in [("50", 1), ("100", 2)] {
        let job = run_report(
            &mut c,
            "Ruptures",
            "STOCK_OUT_REPORT",
            &[
                ("Date", &today),
                ("InventoryGroupBy", "LocationStockItem"),
                ("Location", &s.store),
                ("MaxReorderLevelRatio", ratio),
            ],
        )
        .await;
        let rows = report_file(&mut c, &job.body).await;
        assert_eq!(rows.len(), rows_expected, "ratio {ratio}: {rows:?}");
    }

    // What the lines cost: the delivery at its price (12.5 a box); the disposal at the
    // item's purchase price, once it has one, in capsules (0.125 each).
    let costs = async |c: &mut Client, op: &Value| {
        let r = c
            .get(&format!(
                "{SM}/stockoperationitemcost?v=default&stockOperationUuid={}",
                op["uuid"].as_str().unwrap()
            ))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body["results"][0].clone()
    };
    let line = costs(&mut c, &delivery).await;
    assert_eq!(
        (line["unitCost"].clone(), line["totalCost"].clone()),
        (json!(12.5), json!(37.5))
    );
    assert_eq!(line["batchNo"], "AMX-100");
    assert_eq!(costs(&mut c, &loss).await["unitCost"], Value::Null);
    let r = c
        .post(
            &format!("{SM}/stockitem/{}", s.item),
            &json!({"purchasePrice": 12.5, "purchasePriceUoMUuid": s.boxed}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let line = costs(&mut c, &loss).await;
    assert_eq!(
        (line["unitCost"].clone(), line["totalCost"].clone()),
        (json!(0.125), json!(2.5))
    );
    assert_eq!(line["unitCostUOMName"], line["stockItemPackagingUOMName"]);
    let r = c.get(&format!("{SM}/stockoperationitemcost")).await;
    assert_eq!(r.body["results"], json!([]));

    // Expiring in the next two months: the second batch only.
    let job = run_report(
        &mut c,
        "Péremptions",
        "STOCK_EXPIRY_REPORT",
        &[
            ("StartDate", &today),
            ("EndDate", &in_days(60)),
            ("Location", &s.store),
        ],
    )
    .await;
    let rows = report_file(&mut c, &job.body).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1][5..7], [STORE, "AMX-101"]);
    assert_eq!(rows[1][9..11], ["1", "Boîte"]);

    // The jobs, newest first, as the app lists them.
    let r = c
        .get(&format!(
            "{SM}/batchjob?batchJobType=Report&v=default&limit=10&totalCount=true"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["totalCount"], 6);
    assert_eq!(r.body["results"][0]["uuid"], job.body["uuid"]);

    // Refused: an unknown report, a parameter the report does not take, a missing
    // location, a date that is not one, another job type, a field not allowed.
    for (body, field) in [
        (
            json!({"batchJobType": "Report", "description": "x", "parameters": "param.report=NO_SUCH_REPORT"}),
            "parameters",
        ),
        (
            json!({"batchJobType": "Report", "description": "x", "parameters": report_parameters("STOCK_EXPIRY_REPORT", &[("StartDate", &today), ("EndDate", &today), ("Location", &s.store), ("Patient", "")])}),
            "parameters",
        ),
        (
            json!({"batchJobType": "Report", "description": "x", "parameters": report_parameters("STOCK_EXPIRY_REPORT", &[("StartDate", &today), ("EndDate", &today)])}),
            "parameters",
        ),
        (
            json!({"batchJobType": "Report", "description": "x", "parameters": report_parameters("STOCK_STATUS_REPORT", &[("Date", "hier"), ("Location", &s.store)])}),
            "parameters",
        ),
        (
            json!({"batchJobType": "Other", "description": "x", "parameters": "param.report=STOCK_STATUS_REPORT"}),
            "batchJobType",
        ),
        (
            json!({"description": "x", "parameters": "param.report=STOCK_STATUS_REPORT"}),
            "batchJobType",
        ),
    ] {
        let r = c.post(&format!("{SM}/batchjob"), &body.to_string()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert!(
            r.body["error"]["fieldErrors"][field].is_array(),
            "{body}: {}",
            r.body
        );
    }
    let r = c
        .post(
            &format!("{SM}/batchjob"),
            &json!({"batchJobType": "Report", "description": "x", "parameters": "param.report=STOCK_STATUS_REPORT", "status": "Completed"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    // A data manager without a scope at the store neither runs nor sees its reports.
    let body = json!({"username": "gestionnaire", "password": "Gestion-2026-stock",
        "person": {"names": [{"givenName": "Marie", "familyName": "Kabila"}], "gender": "F"},
        "roles": ["Stock Manager"]});
    let r = c.post("/openmrs/ws/rest/v1/user", &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let manager = r.body["uuid"].as_str().unwrap().to_string();
    let mut other = Client::new(st.clone());
    other.login("gestionnaire", "Gestion-2026-stock").await;
    let r = other.get(&format!("{SM}/batchjob?v=default")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["results"], json!([]));
    let r = run_report(
        &mut other,
        "x",
        "STOCK_STATUS_REPORT",
        &[("Date", &today), ("Location", &s.store)],
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = other
        .get(&format!(
            "{SM}/batchjobartifact?id={}",
            job.body["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    // A scope at the facility alone: its report with its child locations leaves out the
    // store, which she may not see.
    let facility = location_uuid(&st, "Centre de santé Bondeko");
    scope(&mut c, &manager, "Stock Manager", &[&facility]).await;
    let with_children = [
        ("Date", today.as_str()),
        ("InventoryGroupBy", "LocationStockItem"),
        ("Location", facility.as_str()),
        ("ChildLocations", "true"),
    ];
    let own = run_report(&mut other, "x", "STOCK_STATUS_REPORT", &with_children).await;
    assert_eq!(own.status, StatusCode::CREATED, "{}", own.body);
    assert_eq!(report_file(&mut other, &own.body).await.len(), 1);
    // With a scope at the store too, she sees its jobs and its stock.
    scope(&mut c, &manager, "Stock Manager", &[&s.store]).await;
    let r = other.get(&format!("{SM}/batchjob?v=default")).await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 6 + 1);
    let own = run_report(&mut other, "x", "STOCK_STATUS_REPORT", &with_children).await;
    let rows = report_file(&mut other, &own.body).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1][5], STORE);

    // A job deleted is gone with its file.
    let uuid = job.body["uuid"].as_str().unwrap();
    let r = c
        .send("DELETE", &format!("{SM}/batchjob/{uuid}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(
        c.get(&format!("{SM}/batchjob/{uuid}")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.get(&format!("{SM}/batchjobartifact?id={uuid}"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

/// A CSV file as the items page's "Import" button uploads it.
async fn import(c: &mut Client, csv: &str) -> Response {
    const B: &str = "----stockimport";
    let body = format!(
        "--{B}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"Import_Stock_Items.csv\"\r\nContent-Type: text/csv\r\n\r\n{csv}\r\n--{B}\r\nContent-Disposition: form-data; name=\"hasHeader\"\r\n\r\ntrue\r\n--{B}--\r\n"
    );
    c.send_bytes(
        "POST",
        &format!("{SM}/stockitemimport"),
        &[(
            "content-type",
            &format!("multipart/form-data; boundary={B}"),
        )],
        body.into_bytes(),
    )
    .await
}

#[tokio::test]
async fn stock_items_are_imported_from_a_csv_file_row_by_row() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let s = setup(&mut c, &st).await;
    let paracetamol = "73577264-62d4-42cf-bd81-c18cb147b3f7";
    let header = "Drug ID,Concept Id,Expires,Expiry Notice,Category Concept Id,Dispensing Unit,Dispensing PUoM,Pack Size for Dispensing PUoM,Common Name,Abbreviation,Preferred Vendor,Reorder level,Reorder Level PUoM,Purchase Price,Purchase Price PUoM,Vendor code";
    let medicines = concept(&st, "Médicaments");
    let file = format!(
        "{header}\n\
         {paracetamol},,yes,90,{medicines},CIEL:1513,{BOX},100,Paracétamol,PCM,cdr kinshasa,5,{BOX},12.5,{BOX},CDR-PCM-500\n\
         {AMOXICILLIN},,no,30,,,,,,AMX,,,,,,\n\
         {AMOXICILLIN},,peut-être,,,,,,,,,,,,,\n\
         no-such-drug,,yes,,,,,,,,,,,,,\n\
         12f9fa2d-646e-42ef-beb0-5ea374c23fdf,,yes,,,,,,,,,,,,,\n\
         {paracetamol},,yes,,,,,,,,,3,,,,\n"
    );
    let r = import(&mut c, &file).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["createdCount"], 1, "{}", r.body);
    assert_eq!(r.body["updatedCount"], 1, "{}", r.body);
    assert_eq!(r.body["success"], false);
    assert_eq!(
        r.body["errors"],
        json!([
            "Row 3: Expires is invalid",
            "Row 4: Drug no-such-drug not found",
            "Row 5: Dispensing unit required, Dispensing packaging unit required, Pack size for dispensing packaging unit required",
            "Row 6: Reorder level and its packaging unit are both required if any specified",
        ]),
        "{}",
        r.body
    );

    // The new item, with its box of 100 as dispensing packaging unit, reorder level and
    // price in boxes, the existing supplier (matched by name whatever its case) and the
    // supplier's code.
    let r = c
        .get(&format!("{SM}/stockitem?drugUuid={paracetamol}&v=full"))
        .await;
    let item = &r.body["results"][0];
    assert_eq!(item["commonName"], "Paracétamol", "{item}");
    assert_eq!(item["acronym"], "PCM");
    assert_eq!(item["hasExpiration"], true);
    assert_eq!(item["expiryNotice"], 90);
    assert_eq!(item["categoryUuid"], medicines);
    assert_eq!(
        item["dispensingUnitUuid"],
        "1513AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    );
    assert_eq!(item["reorderLevel"], 5);
    assert_eq!(item["purchasePrice"], 12.5);
    assert_eq!(item["preferredVendorUuid"], s.supplier.as_str());
    let units = item["packagingUnits"].as_array().unwrap();
    assert_eq!(units.len(), 1, "{item}");
    assert_eq!(units[0]["factor"], 100);
    assert_eq!(item["dispensingUnitPackagingUoMUuid"], units[0]["uuid"]);
    assert_eq!(item["reorderLevelUoMUuid"], units[0]["uuid"]);
    let refs = c
        .get(&format!(
            "{SM}/stockitemreference?stockItemUuid={}",
            item["uuid"].as_str().unwrap()
        ))
        .await;
    assert_eq!(refs.body["results"][0]["referenceCode"], "CDR-PCM-500");
    // The existing item, changed where the row says.
    let r = c.get(&format!("{SM}/stockitem/{}?v=full", s.item)).await;
    assert_eq!(
        (
            r.body["hasExpiration"].clone(),
            r.body["expiryNotice"].clone(),
            r.body["acronym"].clone()
        ),
        (json!(false), json!(30), json!("AMX"))
    );

    // The same file again changes nothing: each valid row is counted unchanged.
    let r = import(&mut c, &file).await;
    assert_eq!(
        (
            r.body["createdCount"].clone(),
            r.body["updatedCount"].clone(),
            r.body["notChangedCount"].clone()
        ),
        (json!(0), json!(0), json!(2)),
        "{}",
        r.body
    );

    // As the stock app sends it: its form data under a JSON content type it sets itself.
    let body = format!(
        "------WebKitFormBoundaryA1b2\r\nContent-Disposition: form-data; name=\"file\"; filename=\"Import_Stock_Items.csv\"\r\nContent-Type: text/csv\r\n\r\n{header}\n{AMOXICILLIN},,yes,,,,,,,,,,,,,\r\n------WebKitFormBoundaryA1b2\r\nContent-Disposition: form-data; name=\"hasHeader\"\r\n\r\ntrue\r\n------WebKitFormBoundaryA1b2--\r\n"
    );
    let r = c
        .send_bytes(
            "POST",
            &format!("{SM}/stockitemimport"),
            &[("content-type", "application/json")],
            body.into_bytes(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["updatedCount"], 1, "{}", r.body);
    let r = c
        .send_bytes(
            "POST",
            &format!("{SM}/stockitemimport"),
            &[("content-type", "application/json")],
            b"{\"file\": \"x\"}".to_vec(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    // A refused row makes no vendor, and its number counts the empty rows above it.
    let r = import(
        &mut c,
        &format!("{header}\n,,,,,,,,,,,,,,,\n{paracetamol},,yes,,,,,,,,Fournisseur Fantôme,2,{CAPSULE},,,\n"),
    )
    .await;
    assert_eq!(
        r.body["errors"],
        json!([format!(
            "Row 2: Packaging unit with concept {CAPSULE} not found"
        )]),
        "{}",
        r.body
    );
    let sources = c.get(&format!("{SM}/stocksource")).await;
    assert!(
        !sources.body.to_string().contains("Fantôme"),
        "{}",
        sources.body
    );

    // A vendor no source answers to is made one; a file that is not CSV text is refused.
    let r = import(
        &mut c,
        &format!("{header}\n{paracetamol},,yes,,,,,,,,Pharmakina,,,,,PK-1\n"),
    )
    .await;
    assert_eq!(r.body["updatedCount"], 1, "{}", r.body);
    let sources = c.get(&format!("{SM}/stocksource")).await;
    assert!(
        sources.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "Pharmakina"),
        "{}",
        sources.body
    );
    let r = c
        .send_bytes(
            "POST",
            &format!("{SM}/stockitemimport"),
            &[("content-type", "multipart/form-data; boundary=x")],
            b"--x\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n\xff\xfe\r\n--x--\r\n"
                .to_vec(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
}

/// The uuid of an item's batch by its number.
async fn batch_uuid(c: &mut Client, item: &str, number: &str) -> String {
    let batches = c
        .get(&format!("{SM}/stockbatch?stockItemUuid={item}"))
        .await
        .body;
    batches["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["batchNo"] == number)
        .unwrap_or_else(|| panic!("{batches}"))["uuid"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A batch made to have expired yesterday (no operation can date one so).
fn expire_yesterday(st: &runtime::http::AppState, batch: &str) {
    use runtime::domains::stock::store;
    let mut expired = store::batch(&st.store, batch).unwrap().unwrap();
    expired.expiration = Some(in_days(-1));
    st.store
        .write(|txn| store::put_in(txn, store::BATCHES, batch, &expired))
        .unwrap();
}

/// The inventory as the stock pages and the dispensing app ask for it: by location, item
/// and batch (paged, with its total), by location and item, by item over every location;
/// narrowed to a drug, an item, a batch; the expired left out when asked.
#[tokio::test]
async fn the_inventory_groups_pages_and_narrows_by_drug_item_batch_and_expiry() {
    const PARACETAMOL: &str = "73577264-62d4-42cf-bd81-c18cb147b3f7";
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let s = setup(&mut c, &st).await;
    receive(&mut c, &s, "AMX-A", 3).await;
    receive(&mut c, &s, "AMX-B", 2).await;
    // Paracetamol in tablets, 40 at the store and 20 at the pharmacy (opening stock).
    let r = c
        .post(
            &format!("{SM}/stockitem"),
            &json!({"drugUuid": PARACETAMOL, "hasExpiration": true}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let paracetamol = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            &format!("{SM}/stockitempackaginguom"),
            &json!({"stockItemUuid": paracetamol, "packagingUomUuid": CAPSULE, "factor": 1})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let unit = r.body["uuid"].as_str().unwrap().to_string();
    for (location, quantity) in [(&s.store, 40), (&s.pharmacy, 20)] {
        let opening = operation(
            &mut c,
            json!({"operationTypeUuid": "99999999-9999-9999-9999-999999999999",
                   "atLocationUuid": location, "sourceUuid": location,
                   "stockOperationItems": [{"stockItemUuid": paracetamol, "batchNo": "PCM-1",
                       "expiration": in_days(300), "quantity": quantity,
                       "stockItemPackagingUOMUuid": unit}]}),
        )
        .await;
        assert_eq!(
            act(&mut c, &opening, "COMPLETE", None).await.0,
            StatusCode::CREATED
        );
    }
    let inventory = async |c: &mut Client, query: &str| -> (Vec<(String, String, f64)>, Value) {
        let r = c
            .get(&format!("{SM}/stockiteminventory?totalCount=true&{query}"))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{query}: {}", r.body);
        let rows = r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["stockItemUuid"].as_str().unwrap().to_string(),
                    x["batchNumber"].as_str().unwrap_or("").to_string(),
                    x["quantity"].as_f64().unwrap(),
                )
            })
            .collect();
        (rows, r.body["totalCount"].clone())
    };
    let sorted = |mut rows: Vec<(String, String, f64)>| {
        rows.sort_by(|a, b| (&a.0, &a.1).partial_cmp(&(&b.0, &b.1)).unwrap());
        rows
    };
    let (amx, pcm) = (s.item.clone(), paracetamol.clone());
    let row = |i: &str, b: &str, q: f64| (i.to_string(), b.to_string(), q);

    // The store by item and batch: three rows, in capsules and tablets.
    let (all, total) = inventory(&mut c, &format!("locationUuid={}", s.store)).await;
    assert_eq!(total, 3);
    assert_eq!(
        sorted(all.clone()),
        sorted(vec![
            row(&amx, "AMX-A", 300.0),
            row(&amx, "AMX-B", 200.0),
            row(&pcm, "PCM-1", 40.0)
        ])
    );
    // Paged: two, then the third, the total the same.
    let (first, total) = inventory(
        &mut c,
        &format!("locationUuid={}&limit=2&startIndex=0", s.store),
    )
    .await;
    assert_eq!((first.len(), &total), (2, &json!(3)));
    let (rest, _) = inventory(
        &mut c,
        &format!("locationUuid={}&limit=2&startIndex=2", s.store),
    )
    .await;
    assert_eq!([first, rest].concat(), all, "the pages cut one order");
    // By location and item; by item over every location.
    let (by_item, _) = inventory(
        &mut c,
        &format!("locationUuid={}&groupBy=LocationStockItem", s.store),
    )
    .await;
    assert_eq!(
        sorted(by_item),
        sorted(vec![row(&amx, "", 500.0), row(&pcm, "", 40.0)])
    );
    let (everywhere, total) = inventory(&mut c, "groupBy=StockItemOnly").await;
    assert_eq!(total, 2);
    assert_eq!(
        sorted(everywhere),
        sorted(vec![row(&amx, "", 500.0), row(&pcm, "", 60.0)])
    );
    let (rows, total) = inventory(&mut c, "groupBy=LocationStockItem").await;
    assert_eq!(
        total, 3,
        "amoxicillin at the store, paracetamol at both: {rows:?}"
    );
    // Narrowed: a drug at the store; a drug and another drug's item; a batch.
    let (of_drug, _) = inventory(
        &mut c,
        &format!("locationUuid={}&drugUuid={AMOXICILLIN}", s.store),
    )
    .await;
    assert_eq!(
        sorted(of_drug),
        sorted(vec![row(&amx, "AMX-A", 300.0), row(&amx, "AMX-B", 200.0)])
    );
    let (none, total) = inventory(
        &mut c,
        &format!("drugUuid={AMOXICILLIN}&stockItemUuid={pcm}"),
    )
    .await;
    assert_eq!((none.len(), total), (0, json!(0)));
    // Without a location: each location's batch.
    let (of_drug_everywhere, _) = inventory(&mut c, &format!("drugUuid={PARACETAMOL}")).await;
    let mut quantities: Vec<f64> = of_drug_everywhere.iter().map(|r| r.2).collect();
    quantities.sort_by(f64::total_cmp);
    assert_eq!(quantities, [20.0, 40.0], "{of_drug_everywhere:?}");
    let batch_b = batch_uuid(&mut c, &amx, "AMX-B").await;
    let (one, _) = inventory(
        &mut c,
        &format!("locationUuid={}&stockBatchUuid={batch_b}", s.store),
    )
    .await;
    assert_eq!(one, vec![row(&amx, "AMX-B", 200.0)]);
    // Batch B expired yesterday: left out when asked, still counted otherwise.
    expire_yesterday(&st, &batch_b);
    let (fresh, total) = inventory(
        &mut c,
        &format!("locationUuid={}&excludeExpired=true", s.store),
    )
    .await;
    assert_eq!(total, 2);
    assert!(fresh.iter().all(|r| r.1 != "AMX-B"), "{fresh:?}");
    let (with_expired, _) = inventory(&mut c, &format!("locationUuid={}", s.store)).await;
    assert_eq!(with_expired.len(), 3);
}

/// The order basket's stock indicator: `InventoryItem?code=` with a drug's uuid (or a
/// non-drug concept's) answers the facility's stock of its item, expired batches left
/// out; an unknown code answers an empty searchset; who may ask is the setting's.
#[tokio::test]
async fn the_order_basket_sees_a_drugs_stock_as_an_inventory_item() {
    const FHIR: &str = "/openmrs/ws/fhir2/R4";
    const GLOVES: &str = "a3e9c1d2-7b4f-4c8a-b6e5-1d2f3a4b5c62";
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let s = setup(&mut c, &st).await;
    // Before any stock: the item is known, and out of stock.
    let r = c
        .get(&format!("{FHIR}/InventoryItem?code={AMOXICILLIN}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["resourceType"], "Bundle");
    assert_eq!(r.body["type"], "searchset");
    let item = &r.body["entry"][0]["resource"];
    assert_eq!(item["resourceType"], "InventoryItem");
    assert_eq!(item["id"], json!(s.item));
    assert_eq!(item["status"], "active");
    assert_eq!(
        item["code"][0]["coding"][0],
        json!({"system": "http://fhir.openmrs.org/concept-system/inventory-item",
               "code": AMOXICILLIN, "display": item["name"][0]["name"]})
    );
    assert_eq!(item["netContent"]["value"], 0);

    // Three boxes at the store and 20 capsules at the pharmacy: 320 capsules.
    receive(&mut c, &s, "AMX-A", 3).await;
    let opening = operation(
        &mut c,
        json!({"operationTypeUuid": "99999999-9999-9999-9999-999999999999",
               "atLocationUuid": s.pharmacy, "sourceUuid": s.pharmacy,
               "stockOperationItems": [{"stockItemUuid": s.item, "batchNo": "AMX-P1",
                   "expiration": in_days(200), "quantity": 20, "stockItemPackagingUOMUuid": s.capsule}]}),
    )
    .await;
    assert_eq!(
        act(&mut c, &opening, "COMPLETE", None).await.0,
        StatusCode::CREATED
    );
    let net = async |c: &mut Client, code: &str| -> Value {
        let r = c.get(&format!("{FHIR}/InventoryItem?code={code}")).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body["entry"][0]["resource"]["netContent"].clone()
    };
    let content = net(&mut c, AMOXICILLIN).await;
    assert_eq!(content["value"], 320, "{content}");
    assert!(content["unit"].is_string(), "{content}");
    // Read by the item's uuid: the same.
    let r = c.get(&format!("{FHIR}/InventoryItem/{}", s.item)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["netContent"]["value"], 320);
    // The pharmacy's batch expired yesterday: no longer counted.
    let p1 = batch_uuid(&mut c, &s.item, "AMX-P1").await;
    expire_yesterday(&st, &p1);
    assert_eq!(net(&mut c, AMOXICILLIN).await["value"], 300);

    // A non-drug item is asked by its concept; a code without an item finds nothing.
    let r = c
        .post(
            &format!("{SM}/stockitem"),
            &json!({"conceptUuid": GLOVES, "hasExpiration": false}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = c
        .get(&format!("{FHIR}/InventoryItem?code={GLOVES},{GLOVES}"))
        .await;
    assert_eq!(
        r.body["total"], 1,
        "a code asked twice is one item: {}",
        r.body
    );
    assert_eq!(
        r.body["entry"][0]["resource"]["code"][0]["coding"][0]["code"],
        GLOVES
    );
    let r = c
        .get(&format!(
            "{FHIR}/InventoryItem?code=0f0e0d0c-0000-4000-8000-000000000000"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["total"], 0);
    assert!(
        r.body
            .get("entry")
            .is_none_or(|e| e.as_array().unwrap().is_empty())
    );
    let r = c
        .get(&format!("{FHIR}/InventoryItem/{}", "no-such-item"))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["resourceType"], "OperationOutcome");

    // Nobody logged in: 401; a receptionist does not hold the setting's privilege; a
    // clinician does.
    let r = Client::new(st.clone())
        .get(&format!("{FHIR}/InventoryItem?code={AMOXICILLIN}"))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    let mut clerk = registration_clerk(&mut c, &st, "accueil-stock").await;
    let r = clerk
        .get(&format!("{FHIR}/InventoryItem?code={AMOXICILLIN}"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(r.body["resourceType"], "OperationOutcome");
    let body = json!({"username": "clinicien-stock", "password": "Clinic-pass-2026",
        "person": {"names": [{"givenName": "Paul", "familyName": "Mbuyi"}], "gender": "M"},
        "roles": ["Application: Enters Clinical Notes"]});
    let r = c.post("/openmrs/ws/rest/v1/user", &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let mut clinician = Client::new(st.clone());
    clinician.login("clinicien-stock", "Clinic-pass-2026").await;
    assert_eq!(net(&mut clinician, AMOXICILLIN).await["value"], 300);
    // Without the setting, nobody may ask.
    let r = c
        .post(
            "/openmrs/ws/rest/v1/systemsetting/fhirproxy.inventory.item.privileges",
            &json!({"value": ""}).to_string(),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    let r = clinician
        .get(&format!("{FHIR}/InventoryItem?code={AMOXICILLIN}"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    // The order basket switches its indicator on when both modules are listed.
    let r = c
        .get("/openmrs/ws/rest/v1/module?v=custom:(uuid,version)")
        .await;
    let ids: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["uuid"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"stockmanagement") && ids.contains(&"fhirproxy"),
        "{ids:?}"
    );
}

/// A user with one role and a stock scope of that role at `locations`; her client.
async fn stock_user(
    admin: &mut Client,
    st: &std::sync::Arc<runtime::http::AppState>,
    username: &str,
    role: &str,
    locations: &[&str],
) -> (String, Client) {
    let body = json!({"username": username, "password": "Stock-pass-2026",
        "person": {"names": [{"givenName": username, "familyName": "Kabeya"}], "gender": "F"},
        "roles": [role]});
    let r = admin
        .post("/openmrs/ws/rest/v1/user", &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    scope(admin, &uuid, role, locations).await;
    let mut c = Client::new(st.clone());
    c.login(username, "Stock-pass-2026").await;
    (uuid, c)
}

fn rule_named<'a>(
    rules: &'a [runtime::domains::stock::RuleRecord],
    name: &str,
) -> &'a runtime::domains::stock::RuleRecord {
    rules.iter().find(|r| r.name == name).unwrap()
}

/// The stock rules' evaluation: a rule above its quantity is only marked evaluated; at or
/// below it, the users whose scope of the rule's role (or a role inheriting it) covers the
/// location get one alert, and the rule waits for its action frequency; expired batches
/// do not count; a user gets at most four alerts from one evaluation; the setting turns it
/// off. The alerts are read, written and purged through `alert` by who may.
#[tokio::test]
async fn stock_rules_at_or_below_their_quantity_alert_the_users_in_charge() {
    use runtime::domains::stock::evaluation::evaluate_due_rules;
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let s = setup(&mut admin, &st).await;
    receive(&mut admin, &s, "AMX-R1", 3).await;
    // In charge at the store: a stock manager (Stock Manager inherits Stock Operator).
    // Not in charge: a viewer at the store (a role below), a manager at the pharmacy only.
    let (manager, mut manager_c) = stock_user(
        &mut admin,
        &st,
        "gestionnaire",
        "Stock Manager",
        &[&s.store],
    )
    .await;
    let (_, mut viewer_c) =
        stock_user(&mut admin, &st, "lecteur", "Stock Viewer", &[&s.store]).await;
    stock_user(
        &mut admin,
        &st,
        "pharmacienne",
        "Stock Manager",
        &[&s.pharmacy],
    )
    .await;
    let rule = json!({"stockItemUuid": s.item, "name": "Seuil magasin",
        "locationUuid": s.store, "quantity": 2, "stockItemPackagingUOMUuid": s.boxed,
        "enabled": true, "evaluationFrequency": 60, "actionFrequency": 1440,
        "alertRole": "Stock Operator"});
    let r = admin
        .post(&format!("{SM}/stockrule"), &rule.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let rule_uuid = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["lastEvaluation"], Value::Null);
    // Frequencies are minutes in the module's `int`: a larger one is refused.
    let mut too_far = rule.clone();
    too_far["evaluationFrequency"] = json!(1u64 << 40);
    let r = admin
        .post(&format!("{SM}/stockrule"), &too_far.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    // Three boxes: above two. Evaluated, no alert, not due again for an hour.
    let t0 = chrono::Utc::now();
    let done = evaluate_due_rules(&st, t0).unwrap();
    assert_eq!((done.evaluated, done.alerts), (1, 0));
    let r = admin.get(&format!("{SM}/stockrule/{rule_uuid}")).await;
    assert!(r.body["lastEvaluation"].is_string(), "{}", r.body);
    assert!(r.body["nextEvaluation"].is_string(), "{}", r.body);
    assert_eq!(r.body["lastActionDate"], Value::Null);
    let done = evaluate_due_rules(&st, t0 + chrono::Duration::minutes(30)).unwrap();
    assert_eq!(done.evaluated, 0);

    // A stock take finds two boxes: at the threshold.
    let batch = batch_of(&mut admin, &s, "AMX-R1").await;
    let count = operation(
        &mut admin,
        json!({"operationTypeUuid": STOCK_TAKE, "atLocationUuid": s.store, "sourceUuid": s.store,
               "reasonUuid": concept(&st, "Correction d'inventaire"),
               "stockOperationItems": [{"stockItemUuid": s.item, "stockBatchUuid": batch,
                   "quantity": 2, "stockItemPackagingUOMUuid": s.boxed}]}),
    )
    .await;
    for action in ["SUBMIT", "APPROVE"] {
        assert_eq!(
            act(&mut admin, &count, action, None).await.0,
            StatusCode::CREATED
        );
    }
    assert_eq!(on_hand(&mut admin, &s.item, &s.store).await, 200.0);
    let t1 = t0 + chrono::Duration::minutes(61);
    let done = evaluate_due_rules(&st, t1).unwrap();
    assert_eq!((done.evaluated, done.alerts), (1, 1));
    let r = manager_c.get("/openmrs/ws/rest/v1/alert?v=default").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let alerts = r.body["results"].as_array().unwrap().clone();
    assert_eq!(alerts.len(), 1, "{}", r.body);
    let drug = st.catalog.load().drug(AMOXICILLIN).unwrap().name.clone();
    assert_eq!(
        alerts[0]["text"],
        format!("Stock alert: {drug} at {STORE} currently 2 Boîte at or below threshold 2 Boîte")
    );
    assert_eq!(alerts[0]["display"], alerts[0]["text"]);
    assert_eq!(alerts[0]["recipients"].as_array().unwrap().len(), 1);
    assert_eq!(alerts[0]["recipients"][0]["display"], "gestionnaire");
    assert!(alerts[0]["dateToExpire"].is_string());
    let alert_uuid = alerts[0]["uuid"].as_str().unwrap().to_string();
    let r = manager_c
        .get(&format!("/openmrs/ws/rest/v1/alert/{alert_uuid}?v=full"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["recipients"][0]["recipient"]["uuid"], manager);
    // The others are not in charge: nothing for them, and its alert is not found.
    let r = viewer_c.get("/openmrs/ws/rest/v1/alert").await;
    assert_eq!(r.body["results"], json!([]), "{}", r.body);
    let r = viewer_c
        .get(&format!("/openmrs/ws/rest/v1/alert/{alert_uuid}"))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // The rule was actioned: not due again until its action frequency has passed.
    let r = admin.get(&format!("{SM}/stockrule/{rule_uuid}")).await;
    assert!(r.body["lastActionDate"].is_string(), "{}", r.body);
    let done = evaluate_due_rules(&st, t1 + chrono::Duration::hours(2)).unwrap();
    assert_eq!(done.evaluated, 0);

    // The batch expires: expired stock does not count. Five rules now warn at once; the
    // manager gets four alerts from this evaluation, and every rule is actioned.
    expire_yesterday(&st, &batch);
    for n in 1..=5 {
        let mut r5 = rule.clone();
        r5["name"] = json!(format!("Seuil {n}"));
        r5["quantity"] = json!(n);
        let r = admin
            .post(&format!("{SM}/stockrule"), &r5.to_string())
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    let t2 = t1 + chrono::Duration::hours(3);
    let done = evaluate_due_rules(&st, t2).unwrap();
    assert_eq!((done.evaluated, done.alerts), (5, 4));
    let all = runtime::domains::stock::store::rules(&st.store).unwrap();
    for n in 1..=5 {
        assert!(
            rule_named(&all, &format!("Seuil {n}"))
                .last_action_date
                .is_some()
        );
    }
    let r = manager_c
        .get("/openmrs/ws/rest/v1/alert?v=default&limit=50")
        .await;
    let texts: Vec<String> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts.len(), 5, "{texts:?}");
    // Which four of the five rules warn follows their order of creation.
    let expired_out: Vec<&String> = texts
        .iter()
        .filter(|t| {
            t.starts_with(&format!(
                "Stock alert: {drug} at {STORE} currently 0 Boîte at or below threshold "
            ))
        })
        .collect();
    assert_eq!(expired_out.len(), 4, "{texts:?}");

    // Switched off by its setting: a due rule is left as it is.
    let mut r6 = rule.clone();
    r6["name"] = json!("Seuil 6");
    admin
        .post(&format!("{SM}/stockrule"), &r6.to_string())
        .await;
    let r = admin
        .post(
            "/openmrs/ws/rest/v1/systemsetting",
            &json!({"property": "stockmanagement.enableStockRuleJob", "value": "false"})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        evaluate_due_rules(&st, t2 + chrono::Duration::days(3)).unwrap(),
        Default::default()
    );
    let all = runtime::domains::stock::store::rules(&st.store).unwrap();
    assert!(rule_named(&all, "Seuil 6").last_evaluation.is_none());
}

/// `alert` as webservices.rest answers it: written and purged with Manage Alerts, read
/// whole with Get Alerts (a user reads hers), expired ones listed only when asked.
#[tokio::test]
async fn alerts_are_written_read_and_purged_by_who_may() {
    const ALERT: &str = "/openmrs/ws/rest/v1/alert";
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let store = location_uuid(&st, STORE);
    let (reader, mut reader_c) =
        stock_user(&mut admin, &st, "lectrice", "Stock Viewer", &[&store]).await;
    // Validation: a text, at most 512 characters; recipients that are users.
    for (body, field) in [
        (json!({"text": "", "recipients": [reader]}), Some("text")),
        (
            json!({"text": "x".repeat(513), "recipients": [reader]}),
            Some("text"),
        ),
        (
            json!({"text": "Inventaire demain", "recipients": ["nobody-here"]}),
            Some("recipients[0]"),
        ),
        (
            json!({"text": "Inventaire demain", "recipients": [reader],
                "dateToExpire": "+10000-01-01T00:00:00.000+0000"}),
            Some("dateToExpire"),
        ),
        (json!({"text": "Inventaire demain", "recipients": []}), None),
        (
            json!({"text": "Inventaire demain", "recipients": [reader], "colour": "red"}),
            None,
        ),
    ] {
        let r = admin.post(ALERT, &body.to_string()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        if let Some(field) = field {
            assert!(
                r.body["error"]["fieldErrors"][field].is_array(),
                "{}",
                r.body
            );
        }
    }
    let r = admin
        .post(
            ALERT,
            &json!({"text": "Inventaire demain", "recipients": [{"recipient": reader}]})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let current = r.body["uuid"].as_str().unwrap().to_string();
    assert!(r.body["alertId"].as_u64().unwrap() >= 1);
    let r = admin
        .post(
            ALERT,
            &json!({"text": "Ancienne note", "recipients": [reader],
                    "dateToExpire": "2020-01-01T00:00:00.000+0000"})
            .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let old = r.body["uuid"].as_str().unwrap().to_string();
    // Only who may write: the reader may not.
    let r = reader_c
        .post(
            ALERT,
            &json!({"text": "Moi aussi", "recipients": [reader]}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    // The expired one is listed only when asked.
    let uuids = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["uuid"].as_str().unwrap().to_string())
            .collect()
    };
    let r = reader_c.get(ALERT).await;
    assert_eq!(uuids(&r.body), vec![current.clone()]);
    let r = reader_c.get(&format!("{ALERT}?includeExpired=true")).await;
    assert_eq!(uuids(&r.body).len(), 2);
    assert!(uuids(&r.body).contains(&old));
    // An update keeps its id; anonymous callers are asked to log in.
    let r = admin
        .post(
            &format!("{ALERT}/{current}"),
            &json!({"text": "Inventaire lundi", "satisfiedByAny": true}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = reader_c.get(&format!("{ALERT}/{current}?v=full")).await;
    assert_eq!(r.body["text"], "Inventaire lundi");
    assert_eq!(r.body["satisfiedByAny"], true);
    assert!(r.body["changedBy"]["uuid"].is_string(), "{}", r.body);
    let mut anonymous = Client::new(st.clone());
    assert_eq!(anonymous.get(ALERT).await.status, StatusCode::UNAUTHORIZED);
    // Purged, never voided.
    let r = admin
        .send("DELETE", &format!("{ALERT}/{current}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = admin
        .send(
            "DELETE",
            &format!("{ALERT}/{current}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        admin.get(&format!("{ALERT}/{current}")).await.status,
        StatusCode::NOT_FOUND
    );
}
