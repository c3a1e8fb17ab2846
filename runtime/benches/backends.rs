//! The two storage engines side by side: the chart's calls and durable encounter creations
//! on one runtime over redb and over PostgreSQL, with the same data, in one run.
//! `cargo bench -p runtime --bench backends` (needs `wrk` and Debian's `postgresql`: it
//! starts a private server with `tools/pg-test-cluster.sh`, or uses `EMR_TEST_POSTGRES`).
//! `BENCH_SCALE` divides the facility's clinical data (default 10: 10,000 patients with
//! visits, 100,000 encounters, 1,000,000 observations, beside 100,000 registered patients).
//!
//! Generates the data into redb as `clinical` does, moves it into a PostgreSQL schema with a
//! backup and a restore, then measures on each engine in turn, one runtime at a time:
//! - the time to serve, and to load the patient search index, after exec;
//! - the chart's five calls with `wrk` (32 connections, or `WRK_CONNECTIONS`, 10 s each,
//!   after a 5 s warm-up);
//! - durable encounter creations with 20 observations, 32 concurrent clients, 10 s;
//!
//! and, on PostgreSQL only, in this process (the engine's own counters):
//! - the statements each of the chart's calls and an encounter creation sends;
//! - how long a write transaction holds the write lock that serialises writes across
//!   runtimes;
//! - how long another runtime takes to learn of a write (from the write's start to its
//!   change notice).
//!
//! Figures are recorded in docs/benchmarks.md.

mod common;

use common::clinic::*;
use common::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tower::ServiceExt;

fn main() {
    if std::env::args().skip(1).any(|a| a != "--bench") {
        eprintln!("usage: cargo bench -p runtime --bench backends");
    }
    run();
}

fn scale() -> usize {
    std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(10)
}

/// The PostgreSQL server: the one named, or a private one stopped when dropped.
struct Server {
    url: String,
    private: Option<tempfile::TempDir>,
}

fn cluster_script(action: &str, dir: &std::path::Path) -> String {
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tools/pg-test-cluster.sh"
        ))
        .arg(action)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

impl Server {
    fn get() -> Server {
        match std::env::var("EMR_TEST_POSTGRES") {
            Ok(url) if !url.is_empty() => Server { url, private: None },
            _ => {
                let dir = tempfile::tempdir().unwrap();
                let url = cluster_script("start", dir.path());
                Server {
                    url,
                    private: Some(dir),
                }
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(dir) = &self.private {
            cluster_script("stop", dir.path());
        }
    }
}

fn spawn_on(data: &std::path::Path, database: Option<(&str, &str)>, port: u16) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_runtime"));
    c.env("EMR_DATA_DIR", data)
        .env("EMR_LISTEN", format!("127.0.0.1:{port}"))
        .env("EMR_ADMIN_PASSWORD", PASSWORD)
        .env("EMR_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some((url, schema)) = database {
        c.env("EMR_DATABASE_URL", url)
            .env("EMR_DATABASE_SCHEMA", schema);
    }
    let child = c.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while get_status(port, "/openmrs/health/started") != Some(200) {
        assert!(Instant::now() < deadline, "the runtime did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn run() {
    let server = Server::get();
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let content = &catalog.content;
    let refs_of = |admin: String| Refs {
        admin,
        encounter_type: content
            .encounter_types
            .iter()
            .find(|t| t.name.contains("Signes vitaux"))
            .or(content.encounter_types.first())
            .unwrap()
            .uuid
            .clone(),
        visit_type: content.visit_types.first().unwrap().uuid.clone(),
        location: content
            .locations
            .iter()
            .find(|l| !l.retired)
            .unwrap()
            .uuid
            .clone(),
    };
    let type_uuid = catalog
        .identifier_type("Numéro patient DSE")
        .unwrap()
        .uuid
        .clone();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");

    // The data, on redb.
    let (_, child, _) = cold_start(
        std::path::Path::new(env!("CARGO_BIN_EXE_runtime")),
        false,
        &data,
    );
    stop(child);
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let admin = store.user_by_username("admin").unwrap().unwrap().uuid;
    drop(store);
    let mut patients = seed(&data, &type_uuid);
    patients.truncate(PATIENTS / scale());
    let refs = refs_of(admin);
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let (visits, encounters, observations) = generate(&store, &patients, &refs);
    println!(
        "data: {PATIENTS} patients, {} with {visits} visits, {encounters} encounters, {observations} observations",
        patients.len()
    );

    // The same data in PostgreSQL, through a backup.
    let backup = dir.path().join("backup.ndjson");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&backup).unwrap());
    store.snapshot(&mut out).unwrap();
    drop(out);
    drop(store);
    let schema = format!("bench_{}", std::process::id());
    let t = Instant::now();
    let pg =
        runtime::store::Store::connect(&server.url, &schema, &runtime::domains::REGISTRY).unwrap();
    let restored = pg
        .restore(std::io::BufReader::new(
            std::fs::File::open(&backup).unwrap(),
        ))
        .unwrap();
    println!(
        "restored into PostgreSQL: {restored} records in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    drop(pg);

    let sample: Vec<&String> = patients
        .iter()
        .step_by((patients.len() / 2000).max(1))
        .collect();
    let calls = chart_calls(&sample);
    for (engine, database) in [
        ("redb", None),
        ("PostgreSQL", Some((server.url.as_str(), schema.as_str()))),
    ] {
        let port = free_port();
        let started = Instant::now();
        let child = spawn_on(&data, database, port);
        let serving = started.elapsed();
        // A search answers once the patient index has loaded (100,000 patients' projections).
        while get(port, "/openmrs/ws/rest/v1/patient?q=zzzz") != 200 {
            std::thread::sleep(Duration::from_millis(5));
        }
        println!(
            "{engine}: serving {:.0} ms after exec, patient index of {PATIENTS} loaded {:.0} ms after exec",
            serving.as_secs_f64() * 1000.0,
            started.elapsed().as_secs_f64() * 1000.0
        );
        for (name, paths) in &calls {
            assert_eq!(get(port, &paths[0]), 200, "{name}: {}", paths[0]);
        }
        let base = format!("http://127.0.0.1:{port}");
        println!(
            "{engine}, one runtime, wrk -t2 -c{} 10 s each (after 5 s of warm-up):",
            wrk_connections()
        );
        for (name, paths) in &calls {
            let file = script(dir.path(), "chart", paths);
            wrk_with(&base, true, 5, Some(&file));
            let (rps, p50, p99) = wrk_with(&base, true, 10, Some(&file));
            println!("  {name}: {rps:.0} req/s, p50 {p50}, p99 {p99}");
        }
        let created = creations(port, &patients, &refs);
        println!(
            "  durable encounter creations with 20 observations, 32 concurrent clients: {created:.0} per second"
        );
        stop(child);
    }

    // In this process, on PostgreSQL: statements per call, the write lock, notices.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let store =
        runtime::store::Store::connect(&server.url, &schema, &runtime::domains::REGISTRY).unwrap();
    let engine = store.server().unwrap().clone();
    let config = runtime::http::Config::for_tests(PASSWORD);
    let (state, _) =
        runtime::app::start::start(config, runtime::embedded::EMBEDDED_BUNDLE.to_vec(), store)
            .unwrap();
    let app = runtime::app::app(state.clone());
    let call = |method: &str, path: &str, body: Option<String>| {
        let req = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("Authorization", format!("Basic {}", basic()))
            .header("Content-Type", "application/json")
            .body(axum::body::Body::from(body.unwrap_or_default()))
            .unwrap();
        let status = rt.block_on(app.clone().oneshot(req)).unwrap().status();
        assert!(status.is_success(), "{method} {path}: {status}");
    };
    // Once first: the administrator's record is then in this runtime's cache, as it is
    // on a serving runtime.
    call("GET", &calls[0].1[0], None);
    println!("PostgreSQL, statements per request (mean over 50 patients):");
    for (name, paths) in &calls {
        let before = engine.stats().statements;
        for p in paths.iter().take(50) {
            call("GET", p, None);
        }
        let sent = engine.stats().statements - before;
        println!("  {name}: {:.1}", sent as f64 / 50.0);
    }
    let before = engine.stats();
    let n = 200;
    for i in 0..n {
        let obs: Vec<String> = (0..20)
            .map(|k| {
                let (concept, low, _) = VITALS[k % VITALS.len()];
                format!(r#"{{"concept":"{concept}","value":{low}}}"#)
            })
            .collect();
        let body = format!(
            r#"{{"patient":"{}","encounterType":"{}","location":"{}","encounterDatetime":"2026-11-01T10:{:02}:00.000+0000","obs":[{}]}}"#,
            patients[i % patients.len()],
            refs.encounter_type,
            refs.location,
            i % 60,
            obs.join(",")
        );
        call("POST", "/openmrs/ws/rest/v1/encounter", Some(body));
    }
    let after = engine.stats();
    println!(
        "  encounter creation with 20 observations: {:.1}",
        (after.statements - before.statements) as f64 / n as f64
    );
    let mut holds: Vec<f64> = after.write_lock_holds_us[before.write_lock_holds_us.len()..]
        .iter()
        .map(|&us| us as f64 / 1000.0)
        .collect();
    holds.sort_by(f64::total_cmp);
    println!(
        "PostgreSQL, write lock held by an encounter creation (grant to end of commit), {} writes: p50 {:.2} ms, p99 {:.2} ms",
        holds.len(),
        percentile(&holds, 0.5),
        percentile(&holds, 0.99)
    );

    // Two engines on one schema: commit on one, notice on the other.
    let (a, b) = (
        runtime::store::Store::connect(&server.url, &schema, &runtime::domains::REGISTRY).unwrap(),
        runtime::store::Store::connect(&server.url, &schema, &runtime::domains::REGISTRY).unwrap(),
    );
    let (seen, notices) = std::sync::mpsc::channel::<Instant>();
    let seen = std::sync::Mutex::new(seen);
    b.on_remote_change(std::sync::Arc::new(
        move |n: &runtime::store::pg::Notice| {
            if matches!(n, runtime::store::pg::Notice::Changed(t) if t.contains_key("settings")) {
                let _ = seen.lock().unwrap().send(Instant::now());
            }
        },
    ));
    std::thread::sleep(Duration::from_millis(500)); // the listener connects
    let mut delays = Vec::new();
    for i in 0..300 {
        let record = runtime::store::SettingRecord {
            v: 1,
            property: "bench.notice".into(),
            value: i.to_string(),
            description: None,
            base_fingerprint: String::new(),
        };
        // From the write's start: the notice leaves with the COMMIT, so it may arrive
        // before the writer has its answer.
        let began = Instant::now();
        a.put_setting(&record).unwrap();
        let arrived = notices.recv_timeout(Duration::from_secs(5)).unwrap();
        delays.push(arrived.saturating_duration_since(began).as_secs_f64() * 1000.0);
    }
    delays.sort_by(f64::total_cmp);
    println!(
        "PostgreSQL, from the start of a write on one runtime to its change notice on another, 300 writes: p50 {:.2} ms, p99 {:.2} ms",
        percentile(&delays, 0.5),
        percentile(&delays, 0.99)
    );
    drop((a, b, state));
    // The benchmark's schema goes with it (a server named by EMR_TEST_POSTGRES stays).
    let dropped = rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&server.url, tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        client
            .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .await
    });
    if let Err(e) = dropped {
        eprintln!("the schema {schema} was left behind: {e}");
    }
}
