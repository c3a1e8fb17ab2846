//! Service-queue benchmark: the O3 service-queues dashboard over a facility's day.
//! `cargo bench -p runtime --bench queues` (needs `wrk`; about 1 GB free in the temporary
//! directory, or `BENCH_DIR` elsewhere).
//!
//! Generates straight into a fresh store: 100,000 patients; 60 days of history (40,000
//! visits, each with a triage entry ended by a consultation entry: 80,000 ended entries);
//! and today, 500 patients with an open visit, each with an open entry in one of the
//! content's queues (waiting or in service, every priority), half of them after an ended
//! triage entry (750 entries today). Then measures, with `wrk` (32 connections, 10 s each),
//! the calls the dashboard makes (the queue module's representations, exactly as the app
//! sends them): the queues, the checked-in visits tile, the table's pages (50 entries a
//! page, the app's `useOpenmrsFetchAll`), the waiting tile, its service metric, the
//! average-wait tile, and the patient banner's entry.
//!
//! Figures are recorded in docs/benchmarks.md.

mod common;

use common::*;
use runtime::domains::queue::QueueEntryRecord;
use runtime::domains::visit::VisitRecord;
use runtime::store::record::{Audit, Voiding};
use runtime::wire::datetime_key;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const HISTORY_VISITS: usize = 40_000;
const OPEN_TODAY: usize = 500;
const WAITING: &str = "878883c4-8db2-5fdf-b959-3d848d14dcd5";
const IN_SERVICE: &str = "91ed8388-f8b6-54b5-9f7c-6360060038e3";
const REP_LIST: &str = "custom:(uuid,display,queue,status,patient:(uuid,display,person,identifiers:(uuid,display,identifier,identifierType)),visit:(uuid,display,startDatetime,encounters:(uuid,display,diagnoses,encounterDatetime,encounterType,obs,encounterProviders,voided),attributes:(uuid,display,value,attributeType)),priority,priorityComment,sortWeight,startedAt,endedAt,locationWaitingFor,queueComingFrom,providerWaitingFor,previousQueueEntry)";

struct Refs {
    admin: String,
    visit_type: String,
    location: String,
    /// (queue, service, its priorities)
    queues: Vec<(String, String, Vec<String>)>,
}

/// Where and when an entry sits.
struct Slot<'a> {
    queue: usize,
    status: &'a str,
    priority: &'a str,
    started: String,
    ended: Option<String>,
    from: Option<usize>,
}

fn entry(r: &Refs, patient: &str, visit: &str, at: Slot) -> QueueEntryRecord {
    QueueEntryRecord {
        v: 1,
        uuid: runtime::store::record::new_uuid(),
        queue: r.queues[at.queue].0.clone(),
        patient: patient.to_string(),
        visit: Some(visit.to_string()),
        status: at.status.to_string(),
        priority: at.priority.to_string(),
        priority_comment: None,
        sort_weight: 0.0,
        started: at.started,
        ended: at.ended,
        location_waiting_for: None,
        provider_waiting_for: None,
        queue_coming_from: at.from.map(|q| r.queues[q].0.clone()),
        audit: Audit::new(&r.admin, chrono::Utc::now()),
        voiding: Voiding::default(),
    }
}

/// Writes the history and today's entries; answers (visits, entries) and today's patients.
fn generate(
    store: &runtime::store::Store,
    patients: &[String],
    r: &Refs,
) -> (usize, usize, Vec<String>) {
    let now = chrono::Utc::now();
    let (mut visits, mut entries) = (0, 0);
    let visit = |patient: &str,
                 start: chrono::DateTime<chrono::Utc>,
                 stop: Option<chrono::DateTime<chrono::Utc>>| VisitRecord {
        v: 1,
        uuid: runtime::store::record::new_uuid(),
        patient: patient.to_string(),
        visit_type: r.visit_type.clone(),
        location: Some(r.location.clone()),
        indication: None,
        start: datetime_key(start),
        stop: stop.map(datetime_key),
        audit: Audit::new(&r.admin, now),
        voiding: Voiding::default(),
        attributes: Vec::new(),
    };
    for chunk in (0..HISTORY_VISITS).collect::<Vec<_>>().chunks(5_000) {
        store
            .write(|txn| {
                for &n in chunk {
                    let patient = &patients[(n * 7919) % patients.len()];
                    let start = now
                        - chrono::Duration::days(1 + (n % 60) as i64)
                        - chrono::Duration::minutes((n % 480) as i64);
                    let v = visit(patient, start, Some(start + chrono::Duration::hours(3)));
                    runtime::domains::visit::store::put_in(txn, None, &v)?;
                    let priority = &r.queues[0].2[n % r.queues[0].2.len()];
                    let switched = datetime_key(start + chrono::Duration::minutes(40));
                    let triage = entry(
                        r,
                        patient,
                        &v.uuid,
                        Slot {
                            queue: 0,
                            status: IN_SERVICE,
                            priority,
                            started: datetime_key(start + chrono::Duration::minutes(5)),
                            ended: Some(switched.clone()),
                            from: None,
                        },
                    );
                    let consult = entry(
                        r,
                        patient,
                        &v.uuid,
                        Slot {
                            queue: 1,
                            status: IN_SERVICE,
                            priority,
                            started: switched.clone(),
                            ended: Some(datetime_key(start + chrono::Duration::minutes(90))),
                            from: Some(0),
                        },
                    );
                    runtime::domains::queue::store::put_in(
                        txn,
                        &[(None, &triage), (None, &consult)],
                    )?;
                    visits += 1;
                    entries += 2;
                }
                Ok(())
            })
            .unwrap();
    }
    let mut today = Vec::new();
    store
        .write(|txn| {
            for n in 0..OPEN_TODAY {
                let patient = &patients[patients.len() - 1 - n];
                let start = now - chrono::Duration::minutes(5 + (n % 300) as i64);
                let v = visit(patient, start, None);
                runtime::domains::visit::store::put_in(txn, None, &v)?;
                let queue = n % r.queues.len();
                let priority = &r.queues[queue].2[n % r.queues[queue].2.len()];
                let status = if n % 3 == 0 { IN_SERVICE } else { WAITING };
                let arrived = start + chrono::Duration::minutes(1);
                if n % 2 == 0 && queue != 0 {
                    let switched = datetime_key(arrived + chrono::Duration::minutes(2));
                    let triage = entry(
                        r,
                        patient,
                        &v.uuid,
                        Slot {
                            queue: 0,
                            status: IN_SERVICE,
                            priority,
                            started: datetime_key(arrived),
                            ended: Some(switched.clone()),
                            from: None,
                        },
                    );
                    let open = entry(
                        r,
                        patient,
                        &v.uuid,
                        Slot {
                            queue,
                            status,
                            priority,
                            started: switched.clone(),
                            ended: None,
                            from: Some(0),
                        },
                    );
                    runtime::domains::queue::store::put_in(txn, &[(None, &triage), (None, &open)])?;
                    entries += 2;
                } else {
                    let open = entry(
                        r,
                        patient,
                        &v.uuid,
                        Slot {
                            queue,
                            status,
                            priority,
                            started: datetime_key(arrived),
                            ended: None,
                            from: None,
                        },
                    );
                    runtime::domains::queue::store::put_in(txn, &[(None, &open)])?;
                    entries += 1;
                }
                visits += 1;
                today.push(patient.clone());
            }
            Ok(())
        })
        .unwrap();
    (visits, entries, today)
}

fn basic() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
}

fn get(port: u16, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {}\r\nConnection: close\r\n\r\n",
        basic()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut s, &mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, out)
}

fn post(port: u16, path: &str, body: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        basic(),
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut s, &mut out).unwrap();
    out.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Changes an open entry's priority comment `per_second` times a second until `stop`
/// (each write makes every kept dashboard answer stale); answers how many it made.
fn writer(
    port: u16,
    entry: String,
    per_second: u64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut n = 0;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let body = format!("{{\"priorityComment\": \"note {n}\"}}");
            let status = post(
                port,
                &format!("/openmrs/ws/rest/v1/queue-entry/{entry}"),
                &body,
            );
            assert_eq!(status, 200, "a write during the bench");
            n += 1;
            std::thread::sleep(Duration::from_millis(1000 / per_second));
        }
        n
    })
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

fn main() {
    let runtime_exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_runtime"));
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let content = &catalog.content;
    let queues: Vec<(String, String, Vec<String>)> = content
        .queues
        .iter()
        .filter(|q| !q.retired)
        .map(|q| {
            let priorities = q
                .priority_concept_set
                .as_deref()
                .and_then(|s| catalog.concept(s))
                .map(|s| s.set_members.clone())
                .unwrap_or_default();
            (q.uuid.clone(), q.service.clone(), priorities)
        })
        .collect();
    assert!(queues.len() >= 2 && queues.iter().all(|q| !q.2.is_empty()));
    let location = content.queues[0].location.clone();
    let visit_type = content
        .visit_types
        .iter()
        .find(|t| !t.retired)
        .expect("a visit type")
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
    let data = dir.path().join("data");
    let (_, child, _) = cold_start(&runtime_exe, false, &data);
    stop(child);
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let admin = store.user_by_username("admin").unwrap().unwrap().uuid;
    drop(store);

    let t = Instant::now();
    let patients = seed(&data, &type_uuid);
    println!(
        "seeded {} patients in {:.1} s",
        patients.len(),
        t.elapsed().as_secs_f64()
    );
    let refs = Refs {
        admin,
        visit_type,
        location: location.clone(),
        queues: queues.clone(),
    };
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let t = Instant::now();
    let (visits, entries, today) = generate(&store, &patients, &refs);
    drop(store);
    println!(
        "generated {visits} visits and {entries} queue entries ({OPEN_TODAY} open) in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let (_, child, port) = cold_start(&runtime_exe, false, &data);
    while get(port, "/openmrs/ws/rest/v1/patient?q=zzzz").0 != 200 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let day = chrono::Utc::now().format("%Y-%m-%d");
    let rest = "/openmrs/ws/rest/v1";
    let (_, open) = get(
        port,
        &format!("{rest}/queue-entry?v=custom:(uuid)&isEnded=false&totalCount=true&limit=1"),
    );
    assert!(
        open.contains(&format!("\"totalCount\":{OPEN_TODAY}")),
        "{open}"
    );
    let services: Vec<&String> = queues.iter().map(|q| &q.1).collect();
    let calls: Vec<(&str, Vec<String>)> = vec![
        ("queues (the service and status filters)", vec![format!("{rest}/queue?v=custom:(uuid,display,name,description,service:(uuid,display),allowedPriorities:(uuid,display),allowedStatuses:(uuid,display),location:(uuid,display))")]),
        ("checked-in patients tile (today's active visits at the location)", vec![format!("{rest}/visit?includeInactive=false&v=custom:(uuid,patient:(uuid,identifiers:(identifier,uuid),person:(age,display,gender,uuid)),visitType:(uuid,name,display),location:(uuid,name,display),startDatetime,stopDatetime)&fromStartDate={day}&location={location}")]),
        ("the table, a page of 50 open entries (REP_LIST)", (0..OPEN_TODAY).step_by(50).map(|start| format!("{rest}/queue-entry?v={REP_LIST}&totalCount=true&isEnded=false&startIndex={start}")).collect()),
        ("the waiting tile, one service's waiting entries (REP_LIST)", services.iter().map(|s| format!("{rest}/queue-entry?v={REP_LIST}&totalCount=true&service={s}&isEnded=false&status={WAITING}")).collect()),
        ("queue-entry-metrics, a service's waiting count", services.iter().map(|s| format!("{rest}/queue-entry-metrics?status=Waiting&isEnded=false&service={s}")).collect()),
        ("queue-metrics, a service's average wait today", services.iter().map(|s| format!("{rest}/queue-metrics?queue={s}&status={WAITING}")).collect()),
        ("the patient banner's open entry", today.iter().step_by(5).map(|p| format!("{rest}/queue-entry?v=custom:(uuid,display,priority,priorityComment,queue)&totalCount=true&patient={p}&isEnded=false")).collect()),
    ];
    for (name, paths) in &calls {
        for (i, p) in paths.iter().take(3).enumerate() {
            let (status, body) = get(port, p);
            assert_eq!(status, 200, "{name}: {p}: {}", &body[..body.len().min(400)]);
            if i == 0 {
                println!("  {name}: {} bytes an answer", body.len());
            }
        }
    }
    let base = format!("http://127.0.0.1:{port}");
    // `BENCH_ONLY=table` measures only the calls whose name holds it (to profile one).
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let (_, first_open) = get(
        port,
        &format!("{rest}/queue-entry?v=custom:(uuid)&isEnded=false&limit=1"),
    );
    let entry = first_open
        .split("\"uuid\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("an open entry")
        .to_string();
    // The dashboard's answers are kept between writes (`answer_cache`); the third pass
    // writes five times a second (ten times a busy facility's rate) while it reads.
    const WRITES_PER_SECOND: u64 = 5;
    for pass in ["first pass", "second pass", "third pass, 5 writes a second"] {
        println!("{pass}, wrk -t2 -c32 10 s each:");
        for (name, paths) in calls
            .iter()
            .filter(|(name, _)| name.contains(only.as_str()))
        {
            let file = script(dir.path(), "queues", paths);
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let writes = pass
                .starts_with("third")
                .then(|| writer(port, entry.clone(), WRITES_PER_SECOND, stop.clone()));
            let (rps, p50, p99) = wrk_with(&base, true, 10, Some(&file));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            let writes = writes.map(|w| format!(", {} writes", w.join().unwrap()));
            println!(
                "  {name}: {rps:.0} req/s, p50 {p50}, p99 {p99}{}",
                writes.unwrap_or_default()
            );
        }
    }
    println!(
        "resident memory at the end: {} MB",
        rss_kb(child.id()) / 1024
    );
    stop(child);
}
