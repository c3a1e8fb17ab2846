//! Clinical store benchmark: a facility's years of data, and the chart's calls over it.
//! `cargo bench -p runtime --bench clinical` (needs `wrk`; about 40 GB free on the disk of
//! the temporary directory, or `BENCH_DIR` pointing elsewhere; `BENCH_SCALE=10` divides
//! every count by ten for a quicker look; `BENCH_GENERATE=<dir>` only generates the data
//! directory there, to look at it or to profile a runtime started on it).
//!
//! Generates, straight into a fresh store (not through HTTP, which would take hours): 100,000
//! patients, 500,000 visits (one open for one patient in 200), 1,000,000 encounters and
//! 10,000,000 numeric observations on the content's vital-sign concepts. Then measures:
//! - start to the first 200 on `health/started` with that store (median of 5, after the
//!   page cache was emptied when run as root), and the time until the patient index is
//!   loaded;
//! - resident memory at idle after start, and after the load;
//! - with `wrk` (32 connections, 10 s each, over 2,000 different patients), the calls the
//!   chart makes when it opens: banner, active visit, vitals (FHIR), encounters with their
//!   observations, observations of 5 concepts;
//! - durable encounter creations with 20 observations each, 32 concurrent clients;
//! - the store's size per observation.
//!
//! Figures are recorded in docs/benchmarks.md.

mod common;

use common::*;
use runtime::domains::encounter::store::{Change, write_in};
use runtime::domains::encounter::{EncounterRecord, ObsRecord, ObsValue};
use runtime::domains::visit::VisitRecord;
use runtime::store::record::{Audit, Voiding};
use runtime::wire::datetime_key;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const ENCOUNTERS_PER_PATIENT: usize = 10;
const OBS_PER_ENCOUNTER: usize = 10;
/// Patients written per transaction while generating.
const CHUNK: usize = 10_000;

/// The content's vital-sign and biometric concepts (CIEL), with a plausible value range.
const VITALS: &[(&str, f64, f64)] = &[
    ("5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 36.0, 39.5), // temperature
    ("5087AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 55.0, 120.0), // pulse
    ("5085AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 95.0, 170.0), // systolic
    ("5086AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 55.0, 100.0), // diastolic
    ("5242AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 12.0, 30.0), // respiratory rate
    ("5092AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 88.0, 100.0), // SpO2
    ("5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 3.0, 95.0),  // weight
    ("5090AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 50.0, 190.0), // height
    ("1343AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 11.0, 35.0), // MUAC
    ("5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 36.0, 39.5), // a second temperature
];

fn main() {
    if std::env::args().skip(1).any(|a| a != "--bench") {
        eprintln!("usage: cargo bench -p runtime --bench clinical");
    }
    run();
}

fn scale() -> usize {
    std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// What the generated records refer to.
struct Refs {
    admin: String,
    encounter_type: String,
    visit_type: String,
    location: String,
}

/// A cheap deterministic generator (xorshift), so two runs write the same values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn between(&mut self, low: f64, high: f64) -> f64 {
        let unit = (self.next() % 10_000) as f64 / 10_000.0;
        ((low + unit * (high - low)) * 10.0).round() / 10.0
    }
}

/// Writes the visits, encounters and observations: per patient, one visit every two
/// encounters a month apart, each encounter with `OBS_PER_ENCOUNTER` observations. Rounds go
/// over every patient, as a facility's days do. Answers (visits, encounters, observations).
fn generate(store: &runtime::store::Store, patients: &[String], refs: &Refs) -> (u64, u64, u64) {
    let first_day = chrono::DateTime::parse_from_rfc3339("2022-01-03T08:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let created = chrono::Utc::now();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut visits_of: Vec<String> = vec![String::new(); patients.len()];
    let (mut visits, mut encounters, mut observations) = (0u64, 0u64, 0u64);
    for round in 0..ENCOUNTERS_PER_PATIENT {
        let began = Instant::now();
        for (chunk_no, chunk) in patients.chunks(CHUNK).enumerate() {
            store
                .write(|txn| {
                    for (i, patient) in chunk.iter().enumerate() {
                        let n = chunk_no * CHUNK + i;
                        let day = first_day
                            + chrono::Duration::days((round * 30 + n % 28) as i64)
                            + chrono::Duration::minutes((n % 480) as i64);
                        let at = datetime_key(day);
                        if round % 2 == 0 {
                            let last = round + 2 >= ENCOUNTERS_PER_PATIENT;
                            let open = last && n.is_multiple_of(200);
                            let visit = VisitRecord {
                                v: 1,
                                uuid: uuid::Uuid::now_v7().to_string(),
                                patient: patient.clone(),
                                visit_type: refs.visit_type.clone(),
                                location: Some(refs.location.clone()),
                                indication: None,
                                start: at.clone(),
                                stop: (!open)
                                    .then(|| datetime_key(day + chrono::Duration::days(1))),
                                audit: Audit::new(&refs.admin, created),
                                voiding: Voiding::default(),
                                attributes: Vec::new(),
                            };
                            runtime::domains::visit::store::put_in(txn, None, &visit)?;
                            visits_of[n] = visit.uuid;
                            visits += 1;
                        }
                        let encounter = EncounterRecord {
                            v: 1,
                            uuid: uuid::Uuid::now_v7().to_string(),
                            patient: patient.clone(),
                            encounter_type: refs.encounter_type.clone(),
                            datetime: at.clone(),
                            location: Some(refs.location.clone()),
                            form: None,
                            visit: Some(visits_of[n].clone()),
                            providers: Vec::new(),
                            audit: Audit::new(&refs.admin, created),
                            voiding: Voiding::default(),
                        };
                        let obs: Vec<ObsRecord> = VITALS
                            .iter()
                            .take(OBS_PER_ENCOUNTER)
                            .map(|&(concept, low, high)| ObsRecord {
                                v: 1,
                                uuid: uuid::Uuid::now_v7().to_string(),
                                person: patient.clone(),
                                concept: concept.into(),
                                encounter: Some(encounter.uuid.clone()),
                                obs_group: None,
                                datetime: at.clone(),
                                location: Some(refs.location.clone()),
                                value: ObsValue::Numeric(rng.between(low, high)),
                                comment: None,
                                form_field_namespace: None,
                                form_field_path: None,
                                status: "FINAL".into(),
                                interpretation: None,
                                order: None,
                                previous_version: None,
                                audit: Audit::new(&refs.admin, created),
                                voiding: Voiding::default(),
                            })
                            .collect();
                        let change = Change {
                            encounter: Some((None, &encounter)),
                            obs: obs.iter().map(|o| (None, o)).collect(),
                        };
                        write_in(txn, &change)?;
                        encounters += 1;
                        observations += obs.len() as u64;
                    }
                    Ok(())
                })
                .unwrap();
        }
        println!(
            "  round {}/{ENCOUNTERS_PER_PATIENT}: {} encounters in {:.1} s ({observations} observations so far)",
            round + 1,
            patients.len(),
            began.elapsed().as_secs_f64()
        );
    }
    (visits, encounters, observations)
}

/// Empties the kernel's page cache when allowed (root), so a start reads from the disk.
fn drop_page_cache() -> bool {
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

fn basic() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
}

/// One authenticated GET; answers its status.
fn get(port: u16, path: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {}\r\n\r\n",
        basic()
    );
    s.write_all(req.as_bytes()).unwrap();
    read_response(&mut s)
}

/// A wrk script that cycles over `paths`.
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

/// 32 clients creating encounters with 20 observations for 10 seconds over keep-alive
/// connections; answers creations per second (each answered 201 after its commit).
fn creations(port: u16, patients: &[String], refs: &Refs) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let started = Instant::now();
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let basic = basic();
            let patients: Vec<String> = patients.iter().skip(t).step_by(32).take(500).cloned().collect();
            let (kind, location) = (refs.encounter_type.clone(), refs.location.clone());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let (mut ok, mut failed) = (0usize, 0usize);
                let mut n = 0;
                while Instant::now() < deadline {
                    let patient = &patients[n % patients.len()];
                    n += 1;
                    let obs: Vec<String> = (0..20)
                        .map(|i| {
                            let (concept, low, _) = VITALS[i % VITALS.len()];
                            format!(r#"{{"concept":"{concept}","value":{}}}"#, low + (i / 10) as f64)
                        })
                        .collect();
                    let body = format!(
                        r#"{{"patient":"{patient}","encounterType":"{kind}","location":"{location}","encounterDatetime":"2026-11-01T10:{:02}:00.000+0000","obs":[{}]}}"#,
                        n % 60,
                        obs.join(",")
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
        eprintln!("warning: {failed} encounter creations were not answered 201");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

fn run() {
    let runtime_exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_runtime"));
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    for (concept, _, _) in VITALS {
        assert!(
            catalog.concept(concept).is_some(),
            "the content lacks {concept}"
        );
    }
    let content = &catalog.content;
    let encounter_type = content
        .encounter_types
        .iter()
        .find(|t| t.name.contains("Signes vitaux"))
        .or(content.encounter_types.first())
        .expect("an encounter type")
        .uuid
        .clone();
    let visit_type = content
        .visit_types
        .first()
        .expect("a visit type")
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
    let dir = match std::env::var_os("BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let keep = std::env::var_os("BENCH_GENERATE").map(std::path::PathBuf::from);
    let data = keep.clone().unwrap_or_else(|| dir.path().join("data"));

    // A first start creates the administrator, whom the generated records name.
    let (_, child, _) = cold_start(&runtime_exe, false, &data);
    stop(child);
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let admin = store.user_by_username("admin").unwrap().unwrap().uuid;
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
        admin,
        encounter_type,
        visit_type,
        location,
    };
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let t = Instant::now();
    let (visits, encounters, observations) = generate(&store, &patients, &refs);
    drop(store);
    let store_bytes = std::fs::metadata(data.join("store.redb")).unwrap().len();
    println!(
        "generated {visits} visits, {encounters} encounters, {observations} observations in {:.0} s; store {:.2} GB, {:.0} bytes per observation (all tables and indexes included)",
        t.elapsed().as_secs_f64(),
        store_bytes as f64 / 1e9,
        store_bytes as f64 / observations as f64
    );

    if keep.is_some() {
        // The patients with clinical data, one per line, to drive a profiled runtime.
        std::fs::write(data.join("patients.txt"), patients.join("\n")).unwrap();
        println!(
            "generated into {} (patients with clinical data in patients.txt)",
            data.display()
        );
        return;
    }

    // Start: independent of the store's size.
    let cold = drop_page_cache();
    let mut starts = Vec::new();
    for _ in 0..5 {
        drop_page_cache();
        let (t, child, _) = cold_start(&runtime_exe, false, &data);
        starts.push(t);
        stop(child);
    }
    println!(
        "start to the first 200 on health/started, median of 5{}: {:.1} ms",
        if cold {
            " (page cache emptied before each)"
        } else {
            ""
        },
        median(starts).as_secs_f64() * 1e3
    );
    // After a crash or a power cut: the store was not closed.
    let (_, mut crashed, _) = cold_start(&runtime_exe, false, &data);
    let _ = crashed.kill();
    let _ = crashed.wait();
    drop_page_cache();
    let (after_crash, child, _) = cold_start(&runtime_exe, false, &data);
    stop(child);
    println!(
        "start after the process was killed (SIGKILL: the store was not closed): {:.1} ms",
        after_crash.as_secs_f64() * 1e3
    );
    drop_page_cache();
    let (_, child, port) = cold_start(&runtime_exe, false, &data);
    let t = Instant::now();
    while get(port, "/openmrs/ws/rest/v1/patient?q=zzzz") != 200 {
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "patient index loaded in the background {:.0} ms after start",
        t.elapsed().as_secs_f64() * 1e3
    );
    std::thread::sleep(Duration::from_secs(2));
    println!("resident memory at idle: {} MB", rss_kb(child.id()) / 1024);

    // The chart's calls, over 2,000 different patients.
    let sample: Vec<&String> = patients
        .iter()
        .step_by((patients.len() / 2000).max(1))
        .collect();
    let vitals = VITALS[..9]
        .iter()
        .map(|v| v.0)
        .collect::<Vec<_>>()
        .join(",");
    let five = VITALS[..5]
        .iter()
        .map(|v| v.0)
        .collect::<Vec<_>>()
        .join(",");
    let calls: Vec<(&str, Vec<String>)> = vec![
        ("banner (patient, full)", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/patient/{p}?v=full")).collect()),
        ("active visit", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/visit?patient={p}&includeInactive=false&v=custom:(uuid,display,startDatetime,stopDatetime,visitType:(uuid,display),location:(uuid,display),encounters:(uuid,encounterDatetime))")).collect()),
        ("vitals (FHIR Observation, 9 codes, 100 newest)", sample.iter().map(|p| format!("/openmrs/ws/fhir2/R4/Observation?subject:Patient={p}&code={vitals}&_summary=data&_sort=-date&_count=100")).collect()),
        ("encounters with their observations (10 newest)", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/encounter?patient={p}&limit=10&v=custom:(uuid,encounterDatetime,encounterType:(uuid,display),location:(uuid,display),obs:(uuid,concept:(uuid,display),value,obsDatetime))")).collect()),
        ("observations of 5 concepts (50 newest)", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/obs?patient={p}&concept={five}&limit=50&v=custom:(uuid,concept:(uuid),value,obsDatetime)")).collect()),
    ];
    for (name, paths) in &calls {
        assert_eq!(get(port, &paths[0]), 200, "{name}: {}", paths[0]);
    }
    let base = format!("http://127.0.0.1:{port}");
    for pass in ["first pass (cold pages)", "second pass"] {
        println!("{pass}, wrk -t2 -c32 10 s each:");
        for (name, paths) in &calls {
            let file = script(dir.path(), "chart", paths);
            let (rps, p50, p99) = wrk_with(&base, true, 10, Some(&file));
            println!("  {name}: {rps:.0} req/s, p50 {p50}, p99 {p99}");
        }
    }
    println!(
        "resident memory after the load: {} MB",
        rss_kb(child.id()) / 1024
    );
    let created = creations(port, &patients, &refs);
    println!(
        "durable encounter creations with 20 observations, 32 concurrent clients: {created:.0} per second"
    );
    println!(
        "resident memory at the end: {} MB",
        rss_kb(child.id()) / 1024
    );
    stop(child);
}
