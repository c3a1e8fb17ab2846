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
//!   observations, observations of 5 concepts; and what an integration asks of FHIR: a
//!   patient by identifier and by name, the observations changed since the day before;
//! - durable encounter creations with 20 observations each, 32 concurrent clients;
//! - the store's size per observation;
//! - the same chart calls and creations on a server whose store is larger than its memory:
//!   the runtime started again in a memory cgroup of `BENCH_MEMORY_MB` (512 by default: its
//!   own memory, its store cache of 256 MB by default, and what the kernel may keep of the
//!   file's pages) after the file's cached pages were dropped; all the chart's calls mixed
//!   for the first 10 seconds after start, then for the rest of the first minute, then
//!   each call alone (needs root for the cgroup; skipped, and said so, without it);
//! - last, a warehouse's whole-system `$export`, on a runtime started for it, once per store
//!   cache `BENCH_EXPORTS` lists (`default,64` by default: MiB, or `default`): its time and
//!   the runtime's peak resident memory. Its files stay in the store: at full scale each
//!   export adds about 18 GB.
//!
//! `BENCH_RUNTIME=<runtime binary>` measures another build of the runtime (with its own
//! bench binary, for the store it generates: an earlier commit's, for figures side by side).
//!
//! Figures are recorded in docs/benchmarks.md.

mod common;

use common::clinic::*;
use common::*;
use std::time::{Duration, Instant};

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

/// Empties the kernel's page cache when allowed (root), so a start reads from the disk.
fn drop_page_cache() -> bool {
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

fn run() {
    let runtime_exe = std::env::var_os("BENCH_RUNTIME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_runtime")));
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
    let calls = chart_calls(&sample);
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
    // What an integration asks of FHIR, over the same patients.
    let indexes: Vec<usize> = (0..patients.len())
        .step_by((patients.len() / 2000).max(1))
        .collect();
    let integration = integration_calls(&indexes);
    for (name, paths) in &integration {
        assert_eq!(get(port, &paths[0]), 200, "{name}: {}", paths[0]);
    }
    println!("integration calls, wrk -t2 -c32 10 s each:");
    for (name, paths) in &integration {
        let file = script(dir.path(), "integration", paths);
        let (rps, p50, p99) = wrk_with(&base, true, 10, Some(&file));
        println!("  {name}: {rps:.0} req/s, p50 {p50}, p99 {p99}");
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
    larger_than_memory(&runtime_exe, &data, dir.path(), &calls, &patients, &refs);
    // Last, since the files it makes stay in the store for a day. `BENCH_EXPORTS` lists the
    // store caches to export with (`default`, or MiB), each export's files kept: a full-scale
    // export takes a fifth of the store's size again.
    let caches = std::env::var("BENCH_EXPORTS").unwrap_or_else(|_| "default,64".into());
    for cache in caches.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let cache_mb =
            (cache != "default").then(|| cache.parse().expect("BENCH_EXPORTS: default or MiB"));
        export_everything(&runtime_exe, &data, cache_mb);
    }
}

/// A warehouse's whole-system bulk export, on a runtime started for it (with the store
/// cache `cache_mb` says, else the default): its time, and the runtime's peak resident
/// memory from its start to the manifest.
fn export_everything(exe: &std::path::Path, data: &std::path::Path, cache_mb: Option<usize>) {
    let port = free_port();
    let env: Vec<(&str, String)> = cache_mb
        .map(|mb| ("EMR_STORE_CACHE_MB", mb.to_string()))
        .into_iter()
        .collect();
    let child = spawn_with(exe, false, data, port, &env);
    while get_status(port, "/openmrs/health/started") != Some(200) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (took, resources, files) = bulk_export(port);
    println!(
        "bulk $export of everything ({}): {resources} resources in {files} files, {:.0} s, peak resident memory {} MB",
        cache_mb.map_or("the default store cache".to_string(), |mb| format!(
            "EMR_STORE_CACHE_MB={mb}"
        )),
        took.as_secs_f64(),
        peak_rss_kb(child.id()) / 1024
    );
    stop(child);
}

/// The chart's calls and the creations again, on the same store, from a runtime in a memory
/// cgroup started after the store's pages were dropped from the page cache.
fn larger_than_memory(
    runtime_exe: &std::path::Path,
    data: &std::path::Path,
    scratch: &std::path::Path,
    calls: &[(&'static str, Vec<String>)],
    patients: &[String],
    refs: &Refs,
) {
    let limit_mb: u64 = std::env::var("BENCH_MEMORY_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512);
    let Some(cage) = MemoryCage::new(limit_mb << 20) else {
        println!("larger than memory: not measured (a memory cgroup needs root)");
        return;
    };
    let store_file = data.join("store.redb");
    let store_gb = std::fs::metadata(&store_file).unwrap().len() as f64 / 1e9;
    if !drop_page_cache() {
        evict_from_page_cache(&store_file);
    }
    let port = free_port();
    let started = Instant::now();
    let child = spawn(runtime_exe, false, data, port);
    assert!(
        cage.admit(child.id()),
        "the runtime could not enter the cgroup"
    );
    while get_status(port, "/openmrs/health/started") != Some(200) {
        assert!(started.elapsed() < Duration::from_secs(30), "no start");
        std::thread::sleep(Duration::from_micros(200));
    }
    println!(
        "larger than memory: store {store_gb:.2} GB, the runtime in {limit_mb} MB (its memory and the pages it keeps), the file's pages dropped before start; started in {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let base = format!("http://127.0.0.1:{port}");
    // Every call of the chart, interleaved, as the chart opens for one patient after another.
    let rounds = calls.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
    let mixed: Vec<String> = (0..rounds)
        .flat_map(|i| calls.iter().filter_map(move |(_, p)| p.get(i).cloned()))
        .collect();
    let mixed = script(scratch, "mixed", &mixed);
    let (rps, p50, p99) = wrk_with(&base, true, 10, Some(&mixed));
    println!(
        "  the chart's calls mixed, first 10 s after start: {rps:.0} req/s, p50 {p50}, p99 {p99}"
    );
    let (rps, p50, p99) = wrk_with(&base, true, 50, Some(&mixed));
    println!(
        "  the chart's calls mixed, the rest of the first minute: {rps:.0} req/s, p50 {p50}, p99 {p99}"
    );
    println!("  after the first minute, wrk -t2 -c32 10 s each:");
    for (name, paths) in calls {
        let file = script(scratch, "chart", paths);
        let (rps, p50, p99) = wrk_with(&base, true, 10, Some(&file));
        println!("    {name}: {rps:.0} req/s, p50 {p50}, p99 {p99}");
    }
    let created = creations(port, patients, refs);
    println!(
        "  durable encounter creations with 20 observations, 32 concurrent clients: {created:.0} per second"
    );
    println!(
        "  memory charged to the cgroup at the end: {} MB (resident {} MB)",
        cage.usage_bytes() >> 20,
        rss_kb(child.id()) / 1024
    );
    stop(child);
}
