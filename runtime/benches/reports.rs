//! Reports benchmark: the content's reports over a facility's years of data, and what they
//! cost the chart meanwhile.
//! `cargo bench -p runtime --bench reports` (needs `wrk`; about 13 GB free on the disk of
//! the temporary directory, or `BENCH_DIR` pointing elsewhere; `BENCH_SCALE=10` divides
//! the clinical counts by ten for a quicker look; `BENCH_GENERATE=<dir>` only generates the
//! data directory there, to profile a runtime started on it; `BENCH_DATA=<dir>` measures on
//! such a directory instead of generating one, and `BENCH_RUNTIME=<runtime binary>` measures
//! another build of the runtime, an earlier commit's, for figures side by side).
//!
//! Generates the clinical benchmark's store (`clinical.rs`: 100,000 patients, 500,000
//! visits, 1,000,000 encounters, 10,000,000 numeric observations, May 2022 in the middle of
//! its span), with what makes the reports count real patients:
//! - the encounter that opens each visit is a consultation (one in 20 an admission), the
//!   visit's second one stays the vital signs; visits are at the location the activity
//!   report is run for;
//! - one patient in ten has in each encounter a WHO stage (CIEL 5356) and a referral
//!   (CIEL 1648) observation, their answers turning among the content's answers (200,000
//!   more observations);
//! - the patients marked dead get a date of death within the data's span.
//!
//! Then, on the release runtime started on it, measures for one month (May 2022):
//! - each report alone through `reportingrest/reportdata` (the HIV stages 3 and 4 report,
//!   and the monthly activity report at that location), 3 runs, wall time to the last byte
//!   of the answer, and the runtime's resident memory (VmRSS, and its peak VmHWM since
//!   just before the runs) before and after;
//! - the chart's calls as `clinical.rs` measures them (`wrk -t2 -c32` over 2,000 patients),
//!   each for as long as a loop of the two reports, first alone, then while another client
//!   runs the two reports back to back; and the reports' times under that load.
//!
//! Figures are recorded in docs/benchmarks.md.

mod common;

use common::clinic::*;
use common::*;
use model::reports::{Criterion, DataSetKind, ReportDefinition, ValueTest};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The DRC HIV stages 3 and 4 report.
const HIV: &str = "27b977d2-02bf-4ef9-b512-9b9c495962b8";
/// The monthly activity report (takes a location).
const ACTIVITY: &str = "6c1d7e52-3b8f-4f0e-9d4a-2b7c5e8f1a93";
/// The month reported on: the generated rounds put one visit (opened by a consultation) of
/// every patient in it, and no other encounter.
const MONTH: (&str, &str) = ("2022-05-01", "2022-05-31");
const WHO_STAGE: &str = "5356AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const REFERRAL: &str = "1648AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
/// One patient in this many has the coded observations.
const CODED_EVERY: usize = 10;
/// One patient in this many is admitted at each visit instead of consulted.
const ADMITTED_EVERY: usize = 20;
/// Runs of each report alone.
const RUNS: usize = 3;

fn main() {
    if std::env::args().skip(1).any(|a| a != "--bench") {
        eprintln!("usage: cargo bench -p runtime --bench reports");
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

/// A line of `/proc/<pid>/status` in kB (`VmRSS`, `VmHWM`).
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Resident memory now and at its peak, in MB.
#[derive(Clone, Copy)]
struct Memory {
    rss: u64,
    peak: u64,
}

fn memory(pid: u32) -> Memory {
    Memory {
        rss: status_kb(pid, "VmRSS") / 1024,
        peak: status_kb(pid, "VmHWM") / 1024,
    }
}

/// Starts the peak (VmHWM) over from the current resident memory; false when not allowed.
fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// Every criterion in a report's data sets, depth first.
fn criteria(report: &ReportDefinition) -> Vec<&Criterion> {
    fn walk<'a>(c: &'a Criterion, out: &mut Vec<&'a Criterion>) {
        out.push(c);
        match c {
            Criterion::All(items) | Criterion::Any(items) => {
                items.iter().for_each(|c| walk(c, out));
            }
            Criterion::Not(c) => walk(c, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for d in &report.data_sets {
        match &d.kind {
            DataSetKind::CrossTab { rows, columns } => {
                for x in rows.iter().chain(columns) {
                    walk(&x.criterion, &mut out);
                }
            }
            DataSetKind::LineList { population, .. } => walk(population, &mut out),
        }
    }
    out
}

/// The answers to give a question: the content's, or else those the report tests.
fn answers_of(
    catalog: &runtime::catalog::Catalog,
    report: &ReportDefinition,
    q: &str,
) -> Vec<String> {
    let content = catalog
        .concept(q)
        .map(|c| c.answers.clone())
        .unwrap_or_default();
    if !content.is_empty() {
        return content;
    }
    criteria(report)
        .into_iter()
        .filter_map(|c| match c {
            Criterion::Obs {
                concept,
                test: ValueTest::In(list) | ValueTest::NotIn(list),
                ..
            } if concept == q => Some(list.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// The reportdata path of a report for `MONTH`.
fn report_path(report: &str, location: Option<&str>) -> String {
    let mut path = format!(
        "/openmrs/ws/rest/v1/reportingrest/reportdata/{report}?startDate={}&endDate={}",
        MONTH.0, MONTH.1
    );
    if let Some(l) = location {
        path.push_str(&format!("&location={l}"));
    }
    path
}

/// One run of a report over HTTP: the wall time to the answer's last byte, and the answer.
fn run_report(agent: &ureq::Agent, port: u16, path: &str) -> (Duration, Vec<u8>) {
    let t = Instant::now();
    let mut response = agent
        .get(format!("http://127.0.0.1:{port}{path}"))
        .header("Authorization", format!("Basic {}", basic()))
        .call()
        .unwrap();
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(u64::MAX)
        .read_to_vec()
        .unwrap();
    let took = t.elapsed();
    assert_eq!(
        status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&body[..body.len().min(500)])
    );
    (took, body)
}

/// The cells of a report's answer that count everyone of a row (`….Total`, `….Tout`), with
/// their sizes.
fn totals(answer: &[u8]) -> Vec<(String, u64)> {
    let v: serde_json::Value = serde_json::from_slice(answer).unwrap();
    let mut out = Vec::new();
    for d in v["dataSets"].as_array().into_iter().flatten() {
        for row in d["rows"].as_array().into_iter().flatten() {
            for (name, cell) in row.as_object().into_iter().flatten() {
                if name.ends_with(".Total") || name.ends_with(".Tout") {
                    out.push((name.clone(), cell["size"].as_u64().unwrap_or(0)));
                }
            }
        }
    }
    out
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

/// Gives the patients marked dead a date of death within the data's span (2022), so the
/// activity report's deaths row has some in its month. Answers how many.
fn date_deaths(store: &runtime::store::Store, patients: &[String]) -> usize {
    let first = chrono::NaiveDate::from_ymd_opt(2022, 1, 3).unwrap();
    let mut dated = 0;
    for (i, uuid) in patients.iter().enumerate() {
        let mut p = store.patient(uuid).unwrap().unwrap();
        if !p.dead {
            continue;
        }
        let day = first + chrono::Duration::days((i * 7 % 300) as i64);
        let at = day.and_hms_opt(10, 0, 0).unwrap().and_utc();
        p.death_date = Some(runtime::wire::datetime_key(at));
        store.update_patient(&p).unwrap();
        dated += 1;
    }
    dated
}

struct Alone {
    name: &'static str,
    runs: Vec<Duration>,
    bytes: usize,
    before: Memory,
    after: Memory,
    totals: Vec<(String, u64)>,
}

struct UnderLoad {
    call: &'static str,
    alone: (f64, String, String),
    with_reports: (f64, String, String),
    /// (report, its times while the chart's call ran).
    reports: Vec<(&'static str, Vec<Duration>)>,
}

fn run() {
    // Another build of the runtime (an earlier commit's) measured on the same data, for
    // figures side by side.
    let runtime_exe = std::env::var_os("BENCH_RUNTIME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_runtime")));
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let content = &catalog.content;
    let report = |uuid: &str| {
        content
            .reports
            .iter()
            .find(|r| r.uuid == uuid)
            .unwrap_or_else(|| panic!("the content lacks the report {uuid}"))
    };
    let (hiv, activity) = (report(HIV), report(ACTIVITY));
    let type_named = |name: &str| {
        content
            .encounter_types
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("the content lacks the encounter type {name}"))
            .uuid
            .clone()
    };
    let (consultation, admission) = (type_named("Consultation"), type_named("Admission"));
    for t in [&consultation, &admission] {
        assert!(
            criteria(activity).iter().any(|c| matches!(c,
                Criterion::Encounter { encounter_types, .. } if encounter_types.contains(t))),
            "the activity report does not count encounters of type {t}"
        );
    }
    let coded: Vec<(String, Vec<String>)> = [WHO_STAGE, REFERRAL]
        .iter()
        .map(|q| (q.to_string(), answers_of(&catalog, hiv, q)))
        .collect();
    for (q, answers) in &coded {
        assert!(!answers.is_empty(), "no answers for {q}");
        println!("answers of {q}: {}", answers.join(" "));
    }
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
    let reused = std::env::var_os("BENCH_DATA").map(std::path::PathBuf::from);
    let data = reused
        .clone()
        .or(keep.clone())
        .unwrap_or_else(|| dir.path().join("data"));
    let (patients, visits, encounters, observations) = match &reused {
        Some(_) => {
            let patients: Vec<String> = std::fs::read_to_string(data.join("patients.txt"))
                .expect("BENCH_DATA names a directory generated with BENCH_GENERATE")
                .lines()
                .map(str::to_string)
                .collect();
            println!(
                "measuring on {} ({} patients with clinical data), generated earlier",
                data.display(),
                patients.len()
            );
            (patients, 0, 0, 0)
        }
        None => {
            // A first start creates the administrator, whom the generated records name.
            let (_, child, _) = cold_start(&runtime_exe, false, &data);
            stop(child);
            let store =
                runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY)
                    .unwrap();
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
                location: location.clone(),
            };
            let extra = Extra {
                opening_type: Some(consultation),
                admission: Some((admission, ADMITTED_EVERY)),
                coded,
                coded_every: CODED_EVERY,
            };
            let store =
                runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY)
                    .unwrap();
            let t = Instant::now();
            let (visits, encounters, observations) =
                generate_with(&store, &patients, &refs, &extra);
            let deaths = date_deaths(&store, &patients);
            drop(store);
            let bytes = std::fs::metadata(data.join("store.redb")).unwrap().len();
            println!(
                "generated {visits} visits, {encounters} encounters, {observations} observations, {deaths} dates of death in {:.0} s; store {:.2} GB",
                t.elapsed().as_secs_f64(),
                bytes as f64 / 1e9,
            );

            if keep.is_some() {
                // The patients with clinical data, one per line, to drive a profiled runtime.
                std::fs::write(data.join("patients.txt"), patients.join("\n")).unwrap();
                println!(
                    "generated into {} (patients with clinical data in patients.txt; the reports' paths: {} and {})",
                    data.display(),
                    report_path(HIV, None),
                    report_path(ACTIVITY, Some(&location))
                );
                return;
            }
            (patients, visits, encounters, observations)
        }
    };
    let store_bytes = std::fs::metadata(data.join("store.redb")).unwrap().len();

    let (_, child, port) = cold_start(&runtime_exe, false, &data);
    let pid = child.id();
    while get(port, "/openmrs/ws/rest/v1/patient?q=zzzz") != 200 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_secs(2));
    let idle = memory(pid);
    println!("resident memory at idle: {} MB", idle.rss);

    // Each report alone.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let reports: [(&'static str, String); 2] = [
        ("HIV stages 3 and 4", report_path(HIV, None)),
        ("monthly activity", report_path(ACTIVITY, Some(&location))),
    ];
    let mut alone = Vec::new();
    let mut peak_reset = true;
    for (name, path) in &reports {
        peak_reset &= reset_peak(pid);
        let before = memory(pid);
        let mut runs = Vec::new();
        let mut answer = Vec::new();
        for _ in 0..RUNS {
            let (took, body) = run_report(&agent, port, path);
            runs.push(took);
            answer = body;
        }
        let after = memory(pid);
        let totals = totals(&answer);
        println!(
            "{name}, alone: {} (runs {}), answer {:.1} MB, {}",
            ms(median(runs.clone())),
            runs.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", "),
            answer.len() as f64 / 1e6,
            totals
                .iter()
                .map(|(n, s)| format!("{n} = {s}"))
                .collect::<Vec<_>>()
                .join("; ")
        );
        alone.push(Alone {
            name,
            runs,
            bytes: answer.len(),
            before,
            after,
            totals,
        });
    }
    // A loop of the two reports, measured alone: the chart's calls run as long as a few.
    let pair: Duration = alone.iter().map(|a| median(a.runs.clone())).sum();
    let seconds = ((pair.as_secs_f64() * 3.0).ceil() as u32).clamp(10, 60);

    // The chart's calls, over 2,000 different patients, without and with the reports.
    let sample: Vec<&String> = patients
        .iter()
        .step_by((patients.len() / 2000).max(1))
        .collect();
    let calls = chart_calls(&sample);
    for (name, paths) in &calls {
        assert_eq!(get(port, &paths[0]), 200, "{name}: {}", paths[0]);
    }
    let base = format!("http://127.0.0.1:{port}");
    println!("the chart's calls, wrk -t2 -c32 {seconds} s each, without then with the reports:");
    let before_load = memory(pid);
    let mut loaded = Vec::new();
    for (call, paths) in &calls {
        let file = script(dir.path(), "chart", paths);
        // Warms the call's pages, as the clinical benchmark's first pass does.
        wrk_with(&base, true, 3, Some(&file));
        let without = wrk_with(&base, true, seconds, Some(&file));
        let stop_flag = Arc::new(AtomicBool::new(false));
        let looping = {
            let stop_flag = stop_flag.clone();
            let agent = agent.clone();
            let reports = reports.clone();
            std::thread::spawn(move || {
                let mut times: Vec<(&'static str, Vec<Duration>)> =
                    reports.iter().map(|(n, _)| (*n, Vec::new())).collect();
                'outer: loop {
                    for (i, (_, path)) in reports.iter().enumerate() {
                        if stop_flag.load(Ordering::Relaxed) {
                            break 'outer;
                        }
                        let (took, _) = run_report(&agent, port, path);
                        // Only the runs that ended while the chart's calls ran.
                        if !stop_flag.load(Ordering::Relaxed) {
                            times[i].1.push(took);
                        }
                    }
                }
                times
            })
        };
        let with_reports = wrk_with(&base, true, seconds, Some(&file));
        stop_flag.store(true, Ordering::Relaxed);
        let times = looping.join().unwrap();
        println!(
            "  {call}: without {:.0} req/s, p50 {}, p99 {}; with the reports {:.0} req/s, p50 {}, p99 {}; reports meanwhile: {}",
            without.0,
            without.1,
            without.2,
            with_reports.0,
            with_reports.1,
            with_reports.2,
            times
                .iter()
                .map(|(n, t)| format!(
                    "{n} {}",
                    t.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", ")
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        loaded.push(UnderLoad {
            call,
            alone: without,
            with_reports,
            reports: times,
        });
    }
    let end = memory(pid);
    stop(child);

    // The summary.
    println!();
    if reused.is_some() {
        println!(
            "SUMMARY: {} patients with data (the data generated earlier); store {:.2} GB; month {} to {}; runtime {}",
            patients.len(),
            store_bytes as f64 / 1e9,
            MONTH.0,
            MONTH.1,
            runtime_exe.display()
        );
    } else {
        println!(
            "SUMMARY: {} patients with data, {visits} visits, {encounters} encounters, {observations} observations; store {:.2} GB; month {} to {}",
            patients.len(),
            store_bytes as f64 / 1e9,
            MONTH.0,
            MONTH.1
        );
    }
    println!(
        "runtime resident memory: idle {} MB; before the load {} MB (peak so far {} MB); after it {} MB (peak {} MB)",
        idle.rss, before_load.rss, before_load.peak, end.rss, end.peak
    );
    println!();
    println!(
        "{:<22} | {:>9} | {:>26} | {:>8} | {:>16} | {:>22} | counts",
        "report alone", "median", "runs", "answer", "RSS before→after", "peak during (VmHWM)"
    );
    for a in &alone {
        println!(
            "{:<22} | {:>9} | {:>26} | {:>5.1} MB | {:>16} | {:>22} | {}",
            a.name,
            ms(median(a.runs.clone())),
            a.runs.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", "),
            a.bytes as f64 / 1e6,
            format!("{} → {} MB", a.before.rss, a.after.rss),
            if peak_reset {
                format!("{} MB", a.after.peak)
            } else {
                format!("{} MB (since start)", a.after.peak)
            },
            a.totals
                .iter()
                .map(|(n, s)| format!("{} {s}", n.split('.').next().unwrap_or(n)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    println!();
    println!(
        "chart calls (wrk -t2 -c32, {seconds} s each) without / with the two reports running back to back:"
    );
    println!(
        "{:<50} | {:>17} | {:>19} | {:>19} | reports that ran meanwhile",
        "call", "req/s", "p50", "p99"
    );
    for l in &loaded {
        println!(
            "{:<50} | {:>7.0} / {:>7.0} | {:>8} / {:>8} | {:>8} / {:>8} | {}",
            l.call,
            l.alone.0,
            l.with_reports.0,
            l.alone.1,
            l.with_reports.1,
            l.alone.2,
            l.with_reports.2,
            l.reports
                .iter()
                .map(|(n, t)| if t.is_empty() {
                    format!("{n}: none finished")
                } else {
                    format!(
                        "{n}: {}",
                        t.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", ")
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
}
