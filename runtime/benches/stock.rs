//! Stock benchmark: a year of a busy dispensary's movements.
//! `cargo bench -p runtime --bench stock` (needs `wrk`).
//!
//! Generates straight into a fresh store 300 stock items (the content's drugs, then
//! non-drug items for concepts of the content), each in capsules and boxes of 100 with
//! three batches, and 200,000 transactions over the past year: for each batch, cycles of a
//! receipt at the central store, an issue to the pharmacy (out of the store, into the
//! pharmacy) and seven dispenses at the pharmacy. Then measures with `wrk` (32
//! connections, 10 s each) the calls of the stock pages: the pharmacy's inventory, a page
//! of 50 rows by item and batch; an item's history, 10 movements a page with its total;
//! the dispensing app's batches of one drug at the pharmacy. Last, 32 clients send
//! dispense requests (one capsule each, of one batch) for 10 seconds: each is answered
//! once its movement is durable.
//!
//! Figures are recorded in docs/benchmarks.md.

mod common;

use common::clinic::{basic, script};
use common::*;
use runtime::domains::stock::{
    BatchRecord, ItemRecord, PackagingUnit, Qty, TransactionRecord, store as stock,
};
use runtime::store::record::{Audit, Voiding, new_uuid};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const ITEMS: usize = 300;
const BATCHES_PER_ITEM: usize = 3;
const TRANSACTIONS: usize = 200_000;
const CAPSULE: &str = "1608AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const BOX: &str = "162396AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// One HTTP/1.1 request on its own connection: (status, body).
fn request(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        basic(),
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut s, &mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn uuid_in(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{body}"));
    v["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .to_string()
}

/// The items, their batches and a year of movements, written in a few transactions.
fn generate(
    store: &runtime::store::Store,
    catalog: &runtime::catalog::Catalog,
    admin: &str,
    central: &str,
    pharmacy: &str,
) -> (Vec<ItemRecord>, Vec<BatchRecord>) {
    let now = chrono::Utc::now();
    let audit = || Audit::new(admin, now);
    let unit = |uom: &str, factor: i64| PackagingUnit {
        uuid: new_uuid(),
        packaging_uom: uom.to_string(),
        factor: Qty(factor * 10_000),
        audit: audit(),
        voiding: Voiding::default(),
    };
    let content = &catalog.content;
    let drugs = content.drugs.iter().filter(|d| !d.retired);
    let drug_concepts: Vec<&str> = content.drugs.iter().map(|d| d.concept.as_str()).collect();
    let others = content
        .concepts
        .iter()
        .filter(|c| !c.retired && !c.is_set && !drug_concepts.contains(&c.uuid.as_str()));
    let mut items: Vec<ItemRecord> = drugs
        .map(|d| {
            (
                Some(d.uuid.clone()),
                catalog
                    .concept(&d.concept)
                    .map_or(d.concept.clone(), |c| c.uuid.clone()),
            )
        })
        .chain(others.map(|c| (None, c.uuid.clone())))
        .take(ITEMS)
        .map(|(drug, concept)| {
            let capsule = unit(CAPSULE, 1);
            ItemRecord {
                v: 1,
                uuid: new_uuid(),
                is_drug: drug.is_some(),
                drug,
                concept,
                common_name: None,
                acronym: None,
                has_expiration: true,
                expiry_notice: Some(90),
                preferred_vendor: None,
                purchase_price: None,
                purchase_price_uom: None,
                dispensing_unit: Some(CAPSULE.to_string()),
                dispensing_unit_packaging_uom: Some(capsule.uuid.clone()),
                default_stock_operations_uom: None,
                category: None,
                reorder_level: None,
                reorder_level_uom: None,
                packaging_units: vec![capsule, unit(BOX, 100)],
                audit: audit(),
                voiding: Voiding::default(),
            }
        })
        .collect();
    items.sort_by_key(|i| i.drug.is_none());
    assert_eq!(
        items.len(),
        ITEMS,
        "the content has enough concepts for {ITEMS} items"
    );
    let batches: Vec<BatchRecord> = items
        .iter()
        .flat_map(|i| {
            (0..BATCHES_PER_ITEM).map(move |b| BatchRecord {
                v: 1,
                uuid: new_uuid(),
                stock_item: i.uuid.clone(),
                batch_no: format!("L{b}-{}", &i.uuid[..8]),
                expiration: Some(
                    (now + chrono::Duration::days(200 + 100 * b as i64))
                        .format("%Y-%m-%d")
                        .to_string(),
                ),
                audit: audit(),
            })
        })
        .collect();
    store
        .write(|txn| {
            for i in &items {
                stock::put_item_in(txn, i)?;
            }
            for b in &batches {
                stock::put_in(txn, stock::BATCHES, &b.uuid, b)?;
            }
            Ok(())
        })
        .unwrap();
    // A cycle of ten movements of one batch: received at the store, 1,000 issued to the
    // pharmacy, seven dispenses of 10 there.
    const CYCLE: [(bool, i64); 10] = [
        (true, 5_000),
        (true, -1_000),
        (false, 1_000),
        (false, -10),
        (false, -10),
        (false, -10),
        (false, -10),
        (false, -10),
        (false, -10),
        (false, -10),
    ];
    let span = chrono::Duration::days(365);
    let mut chunk = Vec::with_capacity(10_000);
    for n in 0..TRANSACTIONS {
        let cycle = n / CYCLE.len();
        let batch = &batches[cycle % batches.len()];
        let (at_store, quantity) = CYCLE[n % CYCLE.len()];
        let when = now - span + span * n as i32 / TRANSACTIONS as i32;
        chunk.push(TransactionRecord {
            v: 1,
            uuid: new_uuid(),
            party: if at_store { central } else { pharmacy }.to_string(),
            stock_item: batch.stock_item.clone(),
            batch: batch.uuid.clone(),
            quantity: Qty(quantity * 10_000),
            operation: None,
            operation_item: None,
            packaging_uom: None,
            patient: None,
            order: None,
            encounter: None,
            date: runtime::wire::datetime_key(when),
            audit: Audit::new(admin, when),
        });
        if chunk.len() == 10_000 || n + 1 == TRANSACTIONS {
            store
                .write(|txn| stock::add_transactions_in(txn, &chunk))
                .unwrap();
            chunk.clear();
        }
    }
    (items, batches)
}

fn main() {
    let runtime_exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_runtime"));
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let location = |name: &str| catalog.location(name).unwrap().uuid.clone();
    let (central, pharmacy) = (
        location("Bondeko - Magasin central"),
        location("Bondeko - Pharmacie"),
    );
    let dir = match std::env::var_os("BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let data = dir.path().join("data");
    let (_, child, _) = cold_start(&runtime_exe, false, &data);
    stop(child);
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let admin = store.user_by_username("admin").unwrap().unwrap().uuid;
    let t = Instant::now();
    let (items, batches) = generate(&store, &catalog, &admin, &central, &pharmacy);
    drop(store);
    println!(
        "generated {} items, {} batches and {TRANSACTIONS} transactions in {:.1} s",
        items.len(),
        batches.len(),
        t.elapsed().as_secs_f64()
    );

    let (start, child, port) = cold_start(&runtime_exe, false, &data);
    println!("start on this store: {} ms", start.as_millis());
    let sm = "/openmrs/ws/rest/v1/stockmanagement";
    let drug_item = &items[0];
    let drug = drug_item.drug.clone().expect("the first item is a drug");
    let calls: Vec<(&str, Vec<String>)> = vec![
        (
            "the pharmacy's inventory, a page of 50 rows by item and batch",
            (0..ITEMS * BATCHES_PER_ITEM).step_by(50).map(|s| format!("{sm}/stockiteminventory?v=default&locationUuid={pharmacy}&groupBy=LocationStockItemBatchNo&includeBatchNo=true&totalCount=true&limit=50&startIndex={s}")).collect(),
        ),
        (
            "an item's history, 10 movements with the total",
            items.iter().map(|i| format!("{sm}/stockitemtransaction?v=default&stockItemUuid={}&limit=10&totalCount=true", i.uuid)).collect(),
        ),
        (
            "the dispensing app's batches of a drug at the pharmacy",
            vec![format!("{sm}/stockiteminventory?v=default&totalCount=true&drugUuid={drug}&includeBatchNo=true&groupBy=LocationStockItemBatchNo&dispenseLocationUuid={pharmacy}&emptyBatch=1&dispenseAtLocation=1")],
        ),
    ];
    for (name, paths) in &calls {
        let (status, body) = request(port, "GET", &paths[0], "");
        assert_eq!(status, 200, "{name}: {body}");
        println!("  {name}: {} bytes an answer", body.len());
    }
    // The month's reports at the pharmacy, each read from every movement once.
    let (status, body) = request(
        port,
        "POST",
        &format!("{sm}/userrolescope"),
        &format!(
            r#"{{"userUuid": "{admin}", "role": "System Developer", "permanent": true, "enabled": true, "locations": [{{"locationUuid": "{pharmacy}"}}], "operationTypes": [{{"operationTypeUuid": "44444444-4444-4444-4444-444444444444"}}]}}"#
        ),
    );
    assert_eq!(status, 201, "{body}");
    for (report, params) in [
        (
            "STOCK_STATUS_REPORT",
            "param.Date.value=2030-01-01\\r\\nparam.InventoryGroupBy.value=LocationStockItemBatchNo",
        ),
        (
            "STOCK_CONSUMPTION_REPORT",
            "param.StartDate.value=2000-01-01\\r\\nparam.EndDate.value=2030-01-01\\r\\nparam.InventoryGroupBy.value=LocationStockItem",
        ),
    ] {
        let t = Instant::now();
        let (status, body) = request(
            port,
            "POST",
            &format!("{sm}/batchjob"),
            &format!(
                r#"{{"batchJobType": "Report", "description": "{report}", "parameters": "param.report={report}\r\nparam.Location.value={pharmacy}\r\n{params}"}}"#
            ),
        );
        assert_eq!(status, 201, "{report}: {body}");
        assert!(body.contains("\"Completed\""), "{report}: {body}");
        println!(
            "  {report} over every movement: {} ms",
            t.elapsed().as_millis()
        );
    }

    let base = format!("http://127.0.0.1:{port}");
    for pass in ["first pass", "second pass"] {
        println!("{pass}, wrk -t2 -c{} 10 s each:", wrk_connections());
        for (name, paths) in &calls {
            let file = script(dir.path(), "stock", paths);
            let (rps, p50, p99) = wrk_with(&base, true, 10, Some(&file));
            println!("  {name}: {rps:.0} req/s, p50 {p50}, p99 {p99}");
        }
    }

    // A prescription to dispense against: a patient, her visit, an encounter with the order.
    let rest = "/openmrs/ws/rest/v1";
    let type_uuid = catalog
        .identifier_type("Numéro patient DSE")
        .unwrap()
        .uuid
        .clone();
    let (status, body) = request(
        port,
        "POST",
        &format!("{rest}/patient"),
        &serde_json::json!({"person": {"names": [{"givenName": "Sifa", "familyName": "Ngoy"}], "gender": "F", "birthdate": "1990-04-12"},
            "identifiers": [{"identifier": seeded_identifier(7), "identifierType": type_uuid, "preferred": true}]})
        .to_string(),
    );
    assert_eq!(status, 201, "{body}");
    let patient = uuid_in(&body);
    let visit_type = catalog
        .content
        .visit_types
        .iter()
        .find(|t| !t.retired)
        .unwrap()
        .uuid
        .clone();
    let (status, body) = request(
        port,
        "POST",
        &format!("{rest}/visit"),
        &serde_json::json!({"patient": patient, "visitType": visit_type, "location": location("Centre de santé Bondeko")}).to_string(),
    );
    assert_eq!(status, 201, "{body}");
    let visit = uuid_in(&body);
    let (_, session) = request(port, "GET", &format!("{rest}/session"), "");
    let session: serde_json::Value = serde_json::from_str(&session).unwrap();
    let provider = session["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let order_type = catalog
        .content
        .encounter_types
        .iter()
        .find(|t| t.uuid == "39da3525-afe4-45ff-8977-c53b7b359158")
        .map(|t| t.uuid.clone())
        .expect("the order encounter type");
    let concept = catalog.drug(&drug).unwrap().concept.clone();
    let (status, body) = request(
        port,
        "POST",
        &format!("{rest}/encounter"),
        &serde_json::json!({"patient": patient, "encounterType": order_type, "visit": visit,
            "location": location("Centre de santé Bondeko"), "orders": [{
            "action": "NEW", "type": "drugorder", "patient": patient,
            "careSetting": "6f0c9a92-6f24-11e3-af88-005056821db0", "orderer": provider,
            "drug": drug, "concept": concept, "dose": 1, "doseUnits": CAPSULE,
            "route": "160240AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "frequency": "38c794d0-0f9e-4796-a7f4-0448923b71c0",
            "asNeeded": false, "numRefills": 0, "quantity": 15, "quantityUnits": CAPSULE, "duration": 5,
            "durationUnits": "1072AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "dosingType": "org.openmrs.SimpleDosingInstructions"}]})
        .to_string(),
    );
    assert_eq!(status, 201, "{body}");
    let encounter: serde_json::Value = serde_json::from_str(&body).unwrap();
    let order = encounter["orders"][0]["uuid"].as_str().unwrap().to_string();
    let encounter = encounter["uuid"].as_str().unwrap().to_string();
    let batch = batches
        .iter()
        .find(|b| b.stock_item == drug_item.uuid)
        .unwrap();
    let dispense = serde_json::json!({"dispenseItems": [{"dispenseLocation": pharmacy, "patient": patient,
        "order": order, "encounter": encounter, "stockItem": drug_item.uuid, "stockBatch": batch.uuid,
        "stockItemPackagingUOM": drug_item.packaging_units[0].uuid, "quantity": 1}]})
    .to_string();
    let before = request(
        port,
        "GET",
        &format!(
            "{sm}/stockiteminventory?stockItemUuid={}&locationUuid={pharmacy}&stockBatchUuid={}",
            drug_item.uuid, batch.uuid
        ),
        "",
    )
    .1;
    let deadline = Instant::now() + Duration::from_secs(10);
    let started = Instant::now();
    let done: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..32)
            .map(|_| {
                let dispense = &dispense;
                s.spawn(move || {
                    let mut n = 0usize;
                    while Instant::now() < deadline {
                        let (status, body) =
                            request(port, "POST", &format!("{sm}/dispenserequest"), dispense);
                        assert_eq!(status, 201, "{body}");
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let after = request(
        port,
        "GET",
        &format!(
            "{sm}/stockiteminventory?stockItemUuid={}&locationUuid={pharmacy}&stockBatchUuid={}",
            drug_item.uuid, batch.uuid
        ),
        "",
    )
    .1;
    let quantity = |body: &str| -> f64 {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        v["results"][0]["quantity"].as_f64().unwrap_or(0.0)
    };
    assert_eq!(
        quantity(&before) - quantity(&after),
        done as f64,
        "every dispense drew one capsule"
    );
    println!(
        "dispenses drawing stock, 32 clients, each answered once durable: {done} in {elapsed:.1} s, {:.0} a second",
        done as f64 / elapsed
    );
    println!(
        "resident memory at the end: {} MB",
        rss_kb(child.id()) / 1024
    );
    stop(child);
}
