//! Orders benchmark: a facility's prescriptions and laboratory requests over years, and the
//! chart's order widgets over them.
//! `cargo bench -p runtime --bench orders` (needs `wrk`; about 6 GB free in the temporary
//! directory, or `BENCH_DIR` elsewhere; `BENCH_SCALE=10` divides every count by ten).
//!
//! Generates straight into a fresh store: 100,000 patients, each with four order encounters
//! of five orders (2,000,000 orders: four drug orders and one test order an encounter, all
//! ended long ago, as years of history are), one allergy and one condition. Then measures,
//! with `wrk` (32 connections, 10 s each, over 2,000 different patients), the calls the
//! chart's widgets make: the medications list (the medications app's exact call), the
//! active test orders (the tests app's), the orders dashboard's day, allergies and
//! conditions (FHIR); and durable signings of an order basket of five drugs (one encounter
//! with five orders, each checked against the patient's stored orders), 32 clients.
//!
//! Figures are recorded in docs/benchmarks.md.

mod common;

use common::*;
use runtime::domains::allergy::{AllergenType, AllergyRecord};
use runtime::domains::condition::{ClinicalStatus, ConditionRecord};
use runtime::domains::encounter::EncounterRecord;
use runtime::domains::order::{
    Action, DosingType, DrugDetails, OrderClass, OrderRecord, TestDetails, Urgency,
};
use runtime::store::record::{Audit, Voiding};
use runtime::wire::datetime_key;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const ENCOUNTERS_PER_PATIENT: usize = 4;
const CHUNK: usize = 5_000;
const OUTPATIENT: &str = "6f0c9a92-6f24-11e3-af88-005056821db0";
const DRUG_ORDER: &str = "131168f4-15f5-102d-96e4-000c29c2a5d7";
const TEST_ORDER: &str = "52a447d3-a64a-11e3-9aeb-50e549534c5e";
const ORDER_ENCOUNTER: &str = "39da3525-afe4-45ff-8977-c53b7b359158";
const TABLET: &str = "1513AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const ORAL: &str = "160240AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const DAYS: &str = "1072AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const HAEMOGLOBIN: &str = "21AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

fn scale() -> usize {
    std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

struct Refs {
    admin: String,
    provider: String,
    location: String,
    /// Tablet drugs of the formulary: (drug, concept).
    drugs: Vec<(String, String)>,
    frequency: String,
    allergen: String,
    condition: String,
}

/// Writes the order encounters, orders, allergies and conditions; answers the counts.
fn generate(store: &runtime::store::Store, patients: &[String], r: &Refs) -> (u64, u64) {
    let first_day = chrono::DateTime::parse_from_rfc3339("2022-01-03T08:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let created = chrono::Utc::now();
    let (mut encounters, mut orders) = (0u64, 0u64);
    let mut number = 0u64;
    for (chunk_no, chunk) in patients.chunks(CHUNK).enumerate() {
        store
            .write(|txn| {
                for (i, patient) in chunk.iter().enumerate() {
                    let n = chunk_no * CHUNK + i;
                    for round in 0..ENCOUNTERS_PER_PATIENT {
                        let day = first_day
                            + chrono::Duration::days((round * 90 + n % 60) as i64)
                            + chrono::Duration::minutes((n % 480) as i64);
                        let at = datetime_key(day);
                        let e = EncounterRecord {
                            v: 1,
                            uuid: uuid::Uuid::now_v7().to_string(),
                            patient: patient.clone(),
                            encounter_type: ORDER_ENCOUNTER.into(),
                            datetime: at.clone(),
                            location: Some(r.location.clone()),
                            form: None,
                            visit: None,
                            providers: vec![],
                            audit: Audit::new(&r.admin, created),
                            voiding: Voiding::default(),
                        };
                        runtime::domains::encounter::store::write_in(
                            txn,
                            &runtime::domains::encounter::store::Change {
                                encounter: Some((None, &e)),
                                obs: vec![],
                            },
                        )?;
                        encounters += 1;
                        let mut placed = Vec::with_capacity(5);
                        for k in 0..5 {
                            number += 1;
                            let test = k == 4;
                            let (drug, concept) = &r.drugs[(n + round * 4 + k) % r.drugs.len()];
                            placed.push(OrderRecord {
                                v: 1,
                                uuid: uuid::Uuid::now_v7().to_string(),
                                order_number: format!("ORD-{number}"),
                                class: if test {
                                    OrderClass::Test
                                } else {
                                    OrderClass::Drug
                                },
                                order_type: if test { TEST_ORDER } else { DRUG_ORDER }.into(),
                                patient: patient.clone(),
                                encounter: e.uuid.clone(),
                                care_setting: OUTPATIENT.into(),
                                concept: if test {
                                    HAEMOGLOBIN.into()
                                } else {
                                    concept.clone()
                                },
                                orderer: r.provider.clone(),
                                action: Action::New,
                                previous_order: None,
                                date_activated: at.clone(),
                                scheduled_date: None,
                                date_stopped: test
                                    .then(|| datetime_key(day + chrono::Duration::hours(2))),
                                auto_expire_date: (!test).then(|| {
                                    datetime_key(
                                        day + chrono::Duration::days(5)
                                            - chrono::Duration::seconds(1),
                                    )
                                }),
                                urgency: Urgency::Routine,
                                instructions: None,
                                comment_to_fulfiller: None,
                                accession_number: None,
                                order_reason: None,
                                order_reason_non_coded: Some("Fièvre".into()),
                                fulfiller_status: Some(
                                    runtime::domains::order::FulfillerStatus::Completed,
                                ),
                                fulfiller_comment: None,
                                drug: (!test).then(|| DrugDetails {
                                    drug: Some(drug.clone()),
                                    drug_non_coded: None,
                                    dosing_type: DosingType::Simple,
                                    dose: Some(1.0),
                                    dose_units: Some(TABLET.into()),
                                    route: Some(ORAL.into()),
                                    frequency: Some(r.frequency.clone()),
                                    as_needed: false,
                                    as_needed_condition: None,
                                    quantity: Some(15.0),
                                    quantity_units: Some(TABLET.into()),
                                    num_refills: Some(0),
                                    duration: Some(5),
                                    duration_units: Some(DAYS.into()),
                                    dosing_instructions: None,
                                    brand_name: None,
                                    dispense_as_written: false,
                                }),
                                test: test.then(TestDetails::default),
                                audit: Audit::new(&r.admin, created),
                                voiding: Voiding::default(),
                            });
                        }
                        let changes: Vec<(Option<&OrderRecord>, &OrderRecord)> =
                            placed.iter().map(|o| (None, o)).collect();
                        runtime::domains::order::store::put_in(txn, &changes)?;
                        orders += placed.len() as u64;
                    }
                    let mut allergy = AllergyRecord {
                        v: 1,
                        uuid: uuid::Uuid::now_v7().to_string(),
                        patient: patient.clone(),
                        allergen_type: AllergenType::Drug,
                        coded_allergen: Some(r.allergen.clone()),
                        non_coded_allergen: None,
                        severity: None,
                        comment: None,
                        reactions: vec![],
                        audit: Audit::new(&r.admin, created),
                        voiding: Voiding::default(),
                    };
                    allergy.comment = Some("Éruption".into());
                    runtime::domains::allergy::store::put_in(txn, &allergy)?;
                    let mut c = ConditionRecord::new(
                        uuid::Uuid::now_v7().to_string(),
                        patient.clone(),
                        Audit::new(&r.admin, created),
                    );
                    c.coded = Some(r.condition.clone());
                    c.clinical_status = Some(ClinicalStatus::Active);
                    runtime::domains::condition::store::put_in(txn, &c)?;
                }
                // Order numbers go on after the generated ones.
                runtime::store::raise_counter_in(txn, "order-number", number)?;
                Ok(())
            })
            .unwrap();
    }
    (encounters, orders)
}

fn basic() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
}

fn get(port: u16, path: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {}\r\n\r\n",
        basic()
    );
    s.write_all(req.as_bytes()).unwrap();
    read_response(&mut s)
}

fn script(dir: &std::path::Path, name: &str, paths: &[String]) -> std::path::PathBuf {
    let file = dir.join(format!("{name}.lua"));
    let mut lua = String::from("local paths = {\n");
    for p in paths {
        lua.push_str(&format!("  \"{p}\",\n"));
    }
    lua.push_str(
        "}\nlocal i = 0\nrequest = function()\n  i = i + 1\n  return wrk.format(\"GET\", paths[(i % #paths) + 1])\nend\n",
    );
    std::fs::write(&file, lua).unwrap();
    file
}

/// 32 clients signing baskets of five drugs for 10 seconds, each basket for another
/// patient; answers signings per second (each answered 201 after its commit).
fn signings(port: u16, patients: &[String], r: &Refs) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let started = Instant::now();
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let basic = basic();
            let patients: Vec<String> = patients.iter().skip(t).step_by(32).cloned().collect();
            let (provider, location, frequency) =
                (r.provider.clone(), r.location.clone(), r.frequency.clone());
            let drugs = r.drugs.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let (mut ok, mut failed) = (0usize, 0usize);
                let mut n = 0;
                while Instant::now() < deadline && n < patients.len() {
                    let patient = &patients[n];
                    n += 1;
                    let orders: Vec<String> = drugs
                        .iter()
                        .take(5)
                        .map(|(drug, concept)| {
                            format!(
                                r#"{{"action":"NEW","type":"drugorder","patient":"{patient}","careSetting":"{OUTPATIENT}","orderer":"{provider}","drug":"{drug}","concept":"{concept}","dose":1,"doseUnits":"{TABLET}","route":"{ORAL}","frequency":"{frequency}","asNeeded":false,"numRefills":0,"quantity":15,"quantityUnits":"{TABLET}","duration":5,"durationUnits":"{DAYS}","dosingType":"org.openmrs.SimpleDosingInstructions"}}"#
                            )
                        })
                        .collect();
                    let body = format!(
                        r#"{{"patient":"{patient}","encounterType":"{ORDER_ENCOUNTER}","location":"{location}","obs":[],"orders":[{}]}}"#,
                        orders.join(",")
                    );
                    let req = format!(
                        "POST /openmrs/ws/rest/v1/encounter HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {basic}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    s.write_all(req.as_bytes()).unwrap();
                    if read_response(&mut s) == 201 {
                        ok += 1;
                    } else {
                        failed += 1;
                    }
                }
                (ok, failed)
            })
        })
        .collect();
    let (mut total, mut failed) = (0, 0);
    for t in threads {
        let (ok, bad) = t.join().unwrap();
        total += ok;
        failed += bad;
    }
    if failed > 0 {
        eprintln!("warning: {failed} basket signings were not answered 201");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let runtime_exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_runtime"));
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let content = &catalog.content;
    let drugs: Vec<(String, String)> = content
        .drugs
        .iter()
        .filter(|d| d.dosage_form.as_deref() == Some(TABLET) && !d.retired)
        .map(|d| (d.uuid.clone(), d.concept.clone()))
        .collect();
    assert!(drugs.len() >= 5, "the formulary has five tablets");
    let frequency = content
        .order_frequencies
        .iter()
        .find(|f| f.frequency_per_day == Some(3.0))
        .expect("a thrice-daily frequency")
        .uuid
        .clone();
    let location = content
        .locations
        .iter()
        .find(|l| !l.retired)
        .expect("a location")
        .uuid
        .clone();
    let type_uuid = catalog
        .identifier_type("Numéro patient DSE")
        .unwrap()
        .uuid
        .clone();
    let allergen = catalog
        .concept("CIEL:162552")
        .map(|c| c.set_members[0].clone())
        .expect("drug allergens");
    let condition = catalog
        .concept("DRC-EMR:2001")
        .expect("a diagnosis")
        .uuid
        .clone();
    let dir = match std::env::var_os("BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let data = dir.path().join("data");

    let (_, child, _) = cold_start(&runtime_exe, false, &data);
    stop(child);
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let admin = store.user_by_username("admin").unwrap().unwrap();
    let provider = runtime::domains::provider::account_provider_uuid(&admin);
    drop(store);

    let t = Instant::now();
    let mut patients = seed(&data, &type_uuid);
    patients.truncate(PATIENTS / scale());
    println!(
        "seeded {} patients in {:.1} s",
        PATIENTS,
        t.elapsed().as_secs_f64()
    );
    let refs = Refs {
        admin: admin.uuid.clone(),
        provider,
        location,
        drugs,
        frequency,
        allergen,
        condition,
    };
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let t = Instant::now();
    let (encounters, orders) = generate(&store, &patients, &refs);
    drop(store);
    let store_bytes = std::fs::metadata(data.join("store.redb")).unwrap().len();
    println!(
        "generated {encounters} order encounters and {orders} orders in {:.0} s; store {:.2} GB",
        t.elapsed().as_secs_f64(),
        store_bytes as f64 / 1e9
    );

    let (_, child, port) = cold_start(&runtime_exe, false, &data);
    while get(port, "/openmrs/ws/rest/v1/patient?q=zzzz") != 200 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_secs(2));
    println!("resident memory at idle: {} MB", rss_kb(child.id()) / 1024);
    let sample: Vec<&String> = patients
        .iter()
        .step_by((patients.len() / 2000).max(1))
        .collect();
    let meds = "careSetting=6f0c9a92-6f24-11e3-af88-005056821db0&orderTypes=131168f4-15f5-102d-96e4-000c29c2a5d7&v=custom:(uuid,dosingType,orderNumber,accessionNumber,patient:ref,action,careSetting:ref,previousOrder:ref,dateActivated,scheduledDate,dateStopped,autoExpireDate,orderType:ref,encounter:(uuid,display,visit),orderer:(uuid,display,person:(display)),orderReason,orderReasonNonCoded,orderType,urgency,instructions,commentToFulfiller,fulfillerStatus,drug:(uuid,display,strength,dosageForm:(display,uuid),concept),dose,doseUnits:ref,frequency:ref,asNeeded,asNeededCondition,quantity,quantityUnits:ref,numRefills,dosingInstructions,duration,durationUnits:ref,route:ref,brandName,dispenseAsWritten,concept)&excludeDiscontinueOrders=true";
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let calls: Vec<(&str, Vec<String>)> = vec![
        ("medications list (16 drug orders, the medications app's call)", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/order?patient={p}&{meds}")).collect()),
        ("active test orders (the tests app's call)", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/order?patient={p}&careSetting={OUTPATIENT}&status=ACTIVE&orderType={TEST_ORDER}")).collect()),
        ("orders dashboard, today", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/order?patient={p}&careSetting={OUTPATIENT}&v=custom:(uuid,display,orderNumber,dateActivated,orderType,urgency,orderer:ref,fulfillerStatus)&activatedOnOrAfterDate={today}&activatedOnOrBeforeDate={today}&excludeDiscontinueOrders=true&excludeCanceledAndExpired=true")).collect()),
        ("allergies (FHIR AllergyIntolerance)", sample.iter().map(|p| format!("/openmrs/ws/fhir2/R4/AllergyIntolerance?patient={p}&_summary=data")).collect()),
        ("conditions (FHIR Condition)", sample.iter().map(|p| format!("/openmrs/ws/fhir2/R4/Condition?patient={p}&_count=100&_summary=data")).collect()),
    ];
    for (name, paths) in &calls {
        assert_eq!(get(port, &paths[0]), 200, "{name}: {}", paths[0]);
    }
    let base = format!("http://127.0.0.1:{port}");
    for pass in ["first pass (cold pages)", "second pass"] {
        println!("{pass}, wrk -t2 -c32 10 s each:");
        for (name, paths) in &calls {
            let file = script(dir.path(), "orders", paths);
            let (rps, p50, p99) = wrk_with(&base, true, 10, Some(&file));
            println!("  {name}: {rps:.0} req/s, p50 {p50}, p99 {p99}");
        }
    }
    let signed = signings(port, &patients, &refs);
    println!(
        "durable signings of an order basket of five drugs, 32 concurrent clients: {signed:.0} per second"
    );
    println!(
        "resident memory at the end: {} MB",
        rss_kb(child.id()) / 1024
    );
    stop(child);
}
