//! Serving benchmark (run with the largest site embedded:
//! `BUILD_TYPE=site MVN_PROJECT=makala cargo bench -p runtime --bench serve`; needs `wrk`).
//!
//! Measures, next to a minimal axum "hello world" server started the same way in the same
//! run (this benchmark binary re-executed in `hello` mode):
//! - cold start: from exec to the first 200 on `health/started` (median of 15 runs), for a
//!   first start (empty data directory: the administrator's password is hashed) and a
//!   restart (existing store);
//! - resident memory at idle after start;
//! - throughput and latency (wrk, loopback, 32 connections, three rounds of 5 s with the
//!   hello world measured right before each target) of concept reads and of patient search
//!   over 100,000 patients;
//! - durable patient creations per second with 32 concurrent clients.
//!
//! Figures are recorded in docs/benchmarks.md.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

mod common;

use common::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if std::env::var("BENCH_MODE").as_deref() == Ok("hello") {
        hello();
        return;
    }
    let mut args = std::env::args().skip(1);
    // `cargo bench` passes `--bench`; nothing else is expected.
    if args.any(|a| a != "--bench") {
        eprintln!("usage: cargo bench -p runtime --bench serve");
    }
    run();
}

/// The baseline: the smallest axum server answering the same health path.
fn hello() {
    let listen = std::env::var("EMR_LISTEN").expect("EMR_LISTEN");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let app = axum::Router::new()
            .route(
                "/openmrs/health/started",
                axum::routing::get(|| async { "{\"status\":\"started\"}" }),
            )
            .route(
                "/hello",
                axum::routing::get(|| async { "{\"hello\":\"world\"}" }),
            );
        let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
        axum::serve(listener, app).await.unwrap();
    });
}

/// 32 clients creating patients for 10 seconds over keep-alive connections; returns
/// creations per second (each answered 201 after its commit).
fn creations(port: u16, type_uuid: &str) -> f64 {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    let started = Instant::now();
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let (basic, type_uuid) = (basic.clone(), type_uuid.to_string());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let mut ok = 0usize;
                let mut n = 0;
                while Instant::now() < deadline {
                    let id = runtime::identifiers::with_check(&format!("{}", 5_000_000 + t * 100_000 + n), Some(MOD30)).unwrap();
                    n += 1;
                    let body = format!(
                        r#"{{"person":{{"names":[{{"givenName":"Bench","familyName":"Creation{t}"}}],"gender":"F","birthdate":"1990-01-01"}},"identifiers":[{{"identifier":"{id}","identifierType":"{type_uuid}"}}]}}"#
                    );
                    let req = format!(
                        "POST /openmrs/ws/rest/v1/patient HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {basic}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    s.write_all(req.as_bytes()).unwrap();
                    if read_response(&mut s) == 201 {
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    total as f64 / started.elapsed().as_secs_f64()
}

fn run() {
    let runtime_exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_runtime"));
    let me = std::env::current_exe().unwrap();
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let h = &catalog.header;
    println!(
        "bundle: {} {} ({} bytes, {} concepts, {} locations)",
        h.build_type.as_str(),
        h.site.as_deref().unwrap_or("-"),
        runtime::embedded::EMBEDDED_BUNDLE.len(),
        catalog.content.concepts.len(),
        catalog.content.locations.len()
    );

    // Cold start.
    let mut first = Vec::new();
    let mut restart = Vec::new();
    let mut hello = Vec::new();
    for _ in 0..15 {
        let dir = tempfile::tempdir().unwrap();
        let (t, c, _) = cold_start(&runtime_exe, false, dir.path());
        first.push(t);
        stop(c);
        let (t, c, _) = cold_start(&runtime_exe, false, dir.path());
        restart.push(t);
        stop(c);
        let (t, c, _) = cold_start(&me, true, dir.path());
        hello.push(t);
        stop(c);
    }
    let (first, restart, hello) = (median(first), median(restart), median(hello));
    println!(
        "cold start, median of 15: hello world {:.1} ms; runtime restart {:.1} ms ({:.2}x); runtime first start {:.1} ms ({:.2}x, includes hashing the administrator's password)",
        hello.as_secs_f64() * 1e3,
        restart.as_secs_f64() * 1e3,
        restart.as_secs_f64() / hello.as_secs_f64(),
        first.as_secs_f64() * 1e3,
        first.as_secs_f64() / hello.as_secs_f64()
    );

    // Throughput and latency.
    let type_uuid = catalog
        .identifier_type("Numéro patient DSE")
        .unwrap()
        .uuid
        .clone();
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    seed(dir.path(), &type_uuid);
    println!(
        "seeded {PATIENTS} patients in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let (_, hello_child, hello_port) = cold_start(&me, true, dir.path());
    let (ready, child, port) = cold_start(&runtime_exe, false, dir.path());
    std::thread::sleep(Duration::from_secs(1));
    println!(
        "start with {PATIENTS} patients in the store: {:.0} ms; resident memory at idle: {} MB",
        ready.as_secs_f64() * 1e3,
        rss_kb(child.id()) / 1024
    );
    // Throughput and latency: three rounds; in each, the hello world is measured right
    // before each target, so a drift of the shared machine weighs on both alike.
    let hello_url = format!("http://127.0.0.1:{hello_port}/hello");
    let concept_url = format!("http://127.0.0.1:{port}/openmrs/ws/rest/v1/concept/DRC-EMR:5001");
    let search_url = format!(
        "http://127.0.0.1:{port}/openmrs/ws/rest/v1/patient?q=mbuyi%20mar&limit=10&totalCount=true&v=custom:(uuid,display,person:(gender,age,birthdate))"
    );
    let mut concept_ratios = Vec::new();
    let mut search_ratios = Vec::new();
    for round in 1..=3 {
        let (h1, h1_50, h1_99) = wrk(&hello_url, false, 5);
        let (c, c50, c99) = wrk(&concept_url, true, 5);
        let (h2, h2_50, h2_99) = wrk(&hello_url, false, 5);
        let (s, s50, s99) = wrk(&search_url, true, 5);
        println!("round {round}:");
        println!("  hello world: {h1:.0} req/s, p50 {h1_50}, p99 {h1_99}");
        println!(
            "  concept read (default representation): {c:.0} req/s ({:.1}% of hello world), p50 {c50}, p99 {c99}",
            c / h1 * 100.0
        );
        println!("  hello world: {h2:.0} req/s, p50 {h2_50}, p99 {h2_99}");
        println!(
            "  patient search over {PATIENTS} patients: {s:.0} req/s ({:.1}% of hello world), p50 {s50}, p99 {s99}",
            s / h2 * 100.0
        );
        concept_ratios.push(c / h1);
        search_ratios.push(s / h2);
    }
    let median_ratio = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 100.0
    };
    println!(
        "median of the rounds: concept read {:.1}% of hello world, patient search {:.1}%",
        median_ratio(concept_ratios),
        median_ratio(search_ratios)
    );
    let created = creations(port, &type_uuid);
    println!("durable patient creations, 32 concurrent clients: {created:.0} per second");
    println!(
        "resident memory after the load: {} MB",
        rss_kb(child.id()) / 1024
    );
    stop(child);
    stop(hello_child);
}
