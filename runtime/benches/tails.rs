//! Latency tails at a hospital's load (`cargo bench -p runtime --bench tails`).
//!
//! OpenMRS's own performance suite ramps to 192 concurrent users with realistic pauses.
//! This benchmark replays, with 192 simulated users, the calls the O3 screens make (the
//! home dashboard, the patient search, the registration form's resources, the chart),
//! each user on a keep-alive connection of its own with its session cookie, pausing
//! between screens as a person does (about 93 requests per second in all), against a store
//! of 100,000 patients, some with years of visits. In the same run it replays the same
//! schedule against the minimal axum "hello world" server (every call to `/hello`), so that
//! the load generator's own share of the tails is seen, and one user without pauses, so
//! that each call's tail at 192 users can be compared with a single client's. It prints
//! p50 and p99 per call for the three runs. Figures are recorded in docs/benchmarks.md.
//!
//! `TAILS_USERS` (192) and `TAILS_SECONDS` (60) change the load and the measured time;
//! `TAILS_GENERATE=<dir>` only generates the data directory there (with `charted.txt`, the
//! uuids of the patients with records), to profile a runtime started on it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

mod common;

use common::clinic::{Refs, VITALS, generate};
use common::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Patients with clinical records (of the 100,000): the charts users open.
const CHARTED: usize = 2_000;

fn main() {
    if std::env::var("BENCH_MODE").as_deref() == Ok("hello") {
        hello();
        return;
    }
    run();
}

/// The baseline: the smallest axum server, answering every path.
fn hello() {
    let listen = std::env::var("EMR_LISTEN").expect("EMR_LISTEN");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        // `?bytes=N` answers N bytes: the same schedule with each call's answer as large as
        // the runtime's, so that sending and reading large answers is in the baseline too.
        let app = axum::Router::new().fallback(
            |axum::extract::RawQuery(q): axum::extract::RawQuery| async move {
                let n = q
                    .as_deref()
                    .and_then(|q| q.strip_prefix("bytes="))
                    .and_then(|n| n.parse::<usize>().ok());
                match n {
                    Some(n) => vec![b'x'; n],
                    None => b"{\"hello\":\"world\"}".to_vec(),
                }
            },
        );
        let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
        axum::serve(listener, app).await.unwrap();
    });
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One call of a screen: its name in the report, and its path.
type Call = (&'static str, String);

/// What the screens ask, as the pinned O3 modules ask it (docs/o3-frontend.md's tables).
struct Screens {
    login_location: String,
    today: String,
    patients: Vec<String>,
    charted: Vec<String>,
}

const PATIENT_SEARCH_REP: &str = "custom:(patientId,uuid,voided,identifiers,display,patientIdentifier:(uuid,identifier),person:(gender,age,birthdate,birthdateEstimated,personName,addresses,display,dead,deathDate),attributes:(value,attributeType:(uuid,display)))";
const VISIT_REP: &str = "custom:(uuid,display,voided,indication,startDatetime,stopDatetime,encounters:(uuid,display,encounterDatetime,form:(uuid,name),location:ref,encounterType:ref,encounterProviders:(uuid,display,provider:(uuid,display))),patient:(uuid,display),visitType:(uuid,name,display),attributes:(uuid,display,attributeType:(name,datatypeClassname,uuid),value),location:(uuid,name,display))";

impl Screens {
    /// The calls of screen `which` for user `user` (`r` varies the patient and the words).
    fn calls(&self, which: usize, r: u64, user_uuid: &str) -> Vec<Call> {
        const REST: &str = "/openmrs/ws/rest/v1";
        const FHIR: &str = "/openmrs/ws/fhir2/R4";
        let loc = &self.login_location;
        match which % 4 {
            0 => vec![
                ("session", format!("{REST}/session")),
                (
                    "module list",
                    format!("{REST}/module?v=custom:(uuid,version)"),
                ),
                (
                    "locations by tag (FHIR)",
                    format!("{FHIR}/Location?_summary=data&_tag=queue%20location"),
                ),
                (
                    "queues",
                    format!(
                        "{REST}/queue?v=custom:(uuid,display,name,description,service:(uuid,display),allowedPriorities:(uuid,display),allowedStatuses:(uuid,display),location:(uuid,display))"
                    ),
                ),
                (
                    "queue entries",
                    format!(
                        "{REST}/queue-entry?v=custom:(uuid,display,queue,status,patient:(uuid,display,person,identifiers:(uuid,display,identifier,identifierType)),visit:(uuid,display,startDatetime),priority,priorityComment,sortWeight,startedAt,endedAt,locationWaitingFor,queueComingFrom,providerWaitingFor,previousQueueEntry)&totalCount=true&isEnded=false"
                    ),
                ),
                (
                    "today's active visits",
                    format!(
                        "{REST}/visit?includeInactive=false&v=custom:(uuid,patient:(uuid,identifiers:(identifier,uuid),person:(age,display,gender,uuid)),visitType:(uuid,name,display),location:(uuid,name,display),startDatetime,stopDatetime)&fromStartDate={}&location={loc}",
                        self.today
                    ),
                ),
            ],
            1 => {
                let (given, family) = seeded_name(r as usize % PATIENTS);
                let start: String = given.chars().take(3).collect();
                let q = format!(
                    "{}%20{}",
                    pct(&family.to_lowercase()),
                    pct(&start.to_lowercase())
                );
                vec![
                    (
                        "patient search",
                        format!(
                            "{REST}/patient?q={q}&v={PATIENT_SEARCH_REP}&includeDead=false&limit=10&totalCount=true"
                        ),
                    ),
                    (
                        "user properties",
                        format!("{REST}/user/{user_uuid}?v=custom:(userProperties)"),
                    ),
                    (
                        "primary identifier term",
                        format!(
                            "{REST}/metadatamapping/termmapping?v=custom:(metadataUuid)&code=emr.primaryIdentifierType"
                        ),
                    ),
                    (
                        "patient by identifier",
                        format!(
                            "{REST}/patient?identifier={}&v={PATIENT_SEARCH_REP}",
                            seeded_identifier(r as usize % PATIENTS)
                        ),
                    ),
                ]
            }
            2 => vec![
                ("address template", format!("{REST}/addresstemplate")),
                (
                    "relationship types",
                    format!("{REST}/relationshiptype?v=default"),
                ),
                (
                    "identifier types",
                    format!(
                        "{REST}/patientidentifiertype?v=custom:(display,uuid,name,format,formatDescription,required,uniquenessBehavior)"
                    ),
                ),
                (
                    "identifier sources",
                    format!("{REST}/idgen/identifiersource?v=default"),
                ),
                (
                    "auto-generation options",
                    format!("{REST}/idgen/autogenerationoption?v=full"),
                ),
                (
                    "phone attribute type",
                    format!("{REST}/personattributetype/14d4f066-15f5-102d-96e4-000c29c2a5d7"),
                ),
                (
                    "login locations (FHIR)",
                    format!("{FHIR}/Location?_summary=data&_count=50&_tag=Login+Location"),
                ),
                (
                    "locations by tag and query",
                    format!("{REST}/location?tag=Login%20Location&q=a&v=default"),
                ),
                ("visit types", format!("{REST}/visittype?v=default")),
            ],
            _ => {
                let p = &self.charted[r as usize % self.charted.len()];
                let vitals = VITALS[..9]
                    .iter()
                    .map(|v| v.0)
                    .collect::<Vec<_>>()
                    .join(",");
                vec![
                    (
                        "patient (FHIR)",
                        format!("{FHIR}/Patient/{p}?_summary=data"),
                    ),
                    (
                        "active visit",
                        format!("{REST}/visit?patient={p}&v={VISIT_REP}&includeInactive=false"),
                    ),
                    (
                        "patient photo",
                        format!(
                            "{REST}/obs?patient={p}&concept=736e8771-e501-4615-bfa7-570c03f4bef5&v=full"
                        ),
                    ),
                    (
                        "cause of death",
                        format!(
                            "{REST}/person/{p}?v=custom:(causeOfDeath:(display),causeOfDeathNonCoded)"
                        ),
                    ),
                    (
                        "relationships",
                        format!(
                            "{REST}/relationship?v=custom:(display,uuid,personA:(age,display,birthdate,uuid),personB:(age,display,birthdate,uuid),relationshipType:(uuid,display,description,aIsToB,bIsToA))&person={p}"
                        ),
                    ),
                    (
                        "patient lists of the patient",
                        format!(
                            "{REST}/cohortm/cohortmember?patient={p}&v=custom:(uuid,patient:ref,cohort:(uuid,name,startDate,endDate))"
                        ),
                    ),
                    (
                        "vitals (FHIR)",
                        format!(
                            "{FHIR}/Observation?subject:Patient={p}&code={vitals}&_summary=data&_sort=-date&_count=100"
                        ),
                    ),
                    (
                        "encounters of the patient",
                        format!(
                            "{REST}/encounter?patient={p}&limit=10&v=custom:(uuid,encounterDatetime,encounterType:(uuid,display),location:(uuid,display),obs:(uuid,concept:(uuid,display),value,obsDatetime))"
                        ),
                    ),
                    ("encounter types", format!("{REST}/encountertype?v=default")),
                    (
                        "a patient's record",
                        format!(
                            "{REST}/patient/{}?v=full",
                            self.patients[r as usize % self.patients.len()]
                        ),
                    ),
                ]
            }
        }
    }
}

/// Percent-encodes a query word (accented names).
fn pct(word: &str) -> String {
    word.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A cheap deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A pause between `low` and `high` seconds.
    fn pause(&mut self, low: f64, high: f64) -> Duration {
        let unit = (self.next() % 10_000) as f64 / 10_000.0;
        Duration::from_secs_f64(low + unit * (high - low))
    }
}

/// One keep-alive request; answers (status, head, body), or `None` when the server had
/// closed the connection (it closes one idle for `EMR_HEADER_TIMEOUT_SECS`, as a long
/// pause leaves it; a browser then opens another, and so does `replay`).
fn exchange(
    s: &mut TcpStream,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> Option<(u16, String, Vec<u8>)> {
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((status, head, buf[head_end..head_end + len].to_vec()))
}

/// Logs in as the O3 login page does (Basic credentials once, then the session cookie),
/// chooses the session location; answers the cookie header and the user's uuid.
fn log_in(s: &mut TcpStream, location: &str) -> (String, String) {
    let (status, head, body) = exchange(
        s,
        "GET",
        "/openmrs/ws/rest/v1/session",
        &format!("Authorization: Basic {}\r\n", clinic::basic()),
        "",
    )
    .expect("an answer to the login");
    assert_eq!(status, 200);
    let cookie = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or_else(|| l.strip_prefix("Set-Cookie: "))
        })
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_string();
    let session: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let user = session["user"]["uuid"].as_str().unwrap().to_string();
    let header = format!("Cookie: {cookie}\r\n");
    let (status, _, _) = exchange(
        s,
        "POST",
        "/openmrs/ws/rest/v1/session",
        &header,
        &format!("{{\"sessionLocation\":\"{location}\"}}"),
    )
    .expect("an answer to the choice of location");
    assert_eq!(status, 200);
    (header, user)
}

/// Latencies by call name.
type Samples = BTreeMap<&'static str, Vec<Duration>>;

/// `users` users replaying the screens for `seconds` (after a warm-up of a tenth of that),
/// pausing between screens (`paced`) or not; every call sent to `hello_path` instead
/// when given (the hello world's run).
fn replay(
    port: u16,
    screens: &std::sync::Arc<Screens>,
    users: usize,
    seconds: u64,
    paced: bool,
    hello_sizes: Option<&std::sync::Arc<BTreeMap<&'static str, usize>>>,
) -> (Samples, usize, BTreeMap<&'static str, usize>) {
    let start = Instant::now();
    let warm = start + Duration::from_secs(seconds / 10 + 1);
    let end = warm + Duration::from_secs(seconds);
    let threads: Vec<_> = (0..users)
        .map(|u| {
            let screens = screens.clone();
            let hello_sizes = hello_sizes.cloned();
            std::thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((u as u64 + 1) * 0x1000_0001));
                // Users arrive over the first seconds, as a morning's do.
                std::thread::sleep(rng.pause(0.0, if paced { 2.0 } else { 0.0 }));
                let connect = || {
                    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                    s.set_nodelay(true).unwrap();
                    s
                };
                let mut s = connect();
                let (cookie, user) = match hello_sizes {
                    Some(_) => (String::new(), "u".to_string()),
                    None => log_in(&mut s, &screens.login_location),
                };
                let mut samples = Samples::new();
                let mut sizes = BTreeMap::new();
                let mut errors = 0usize;
                let mut screen = u;
                while Instant::now() < end {
                    let calls = screens.calls(screen, rng.next(), &user);
                    screen += 1;
                    for (name, path) in &calls {
                        let path = match &hello_sizes {
                            Some(sizes) => {
                                format!("/hello?bytes={}", sizes.get(name).copied().unwrap_or(0))
                            }
                            None => path.clone(),
                        };
                        let t = Instant::now();
                        let (status, len) = match exchange(&mut s, "GET", &path, &cookie, "") {
                            Some((status, _, body)) => (status, body.len()),
                            None => {
                                // Closed while the user paused: a new connection, whose
                                // opening counts in the call's time, as in a browser.
                                s = connect();
                                let (status, _, body) = exchange(&mut s, "GET", &path, &cookie, "")
                                    .expect("an answer on a new connection");
                                (status, body.len())
                            }
                        };
                        let took = t.elapsed();
                        sizes.insert(*name, len);
                        if status != 200 {
                            errors += 1;
                            if errors <= 3 {
                                eprintln!("{name}: {status} for {path}");
                            }
                        }
                        if t >= warm && t < end {
                            samples.entry(name).or_default().push(took);
                        }
                    }
                    if paced {
                        // A person reads a screen for a while: on average about two
                        // seconds per call it made.
                        std::thread::sleep(rng.pause(1.0, 3.2) * calls.len() as u32);
                    }
                }
                (samples, errors, sizes)
            })
        })
        .collect();
    let mut all = Samples::new();
    let mut errors = 0;
    let mut all_sizes = BTreeMap::new();
    for t in threads {
        let (samples, e, sizes) = t.join().unwrap();
        errors += e;
        all_sizes.extend(sizes);
        for (k, v) in samples {
            all.entry(k).or_default().extend(v);
        }
    }
    (all, errors, all_sizes)
}

/// User and system processor time of process `pid` so far, in seconds, and its major page
/// faults (pages read back from disk) (Linux).
fn process_usage(pid: u32) -> (f64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces), from its closing parenthesis.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // majflt, utime and stime are the 12th, 14th and 15th fields (10th, 12th and 13th
    // after the name).
    ((ticks(11) + ticks(12)) / 100.0, ticks(9) as u64)
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run() {
    let runtime_exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_runtime"));
    let me = std::env::current_exe().unwrap();
    let users = env_or("TAILS_USERS", 192) as usize;
    let seconds = env_or("TAILS_SECONDS", 60);
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let content = &catalog.content;
    let type_uuid = catalog
        .identifier_type("Numéro patient DSE")
        .unwrap()
        .uuid
        .clone();
    let location = content
        .locations
        .iter()
        .find(|l| !l.retired)
        .expect("a location")
        .uuid
        .clone();
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

    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("TAILS_GENERATE").map(std::path::PathBuf::from);
    let data = keep.clone().unwrap_or_else(|| dir.path().join("data"));
    let (_, child, _) = cold_start(&runtime_exe, false, &data);
    stop(child);
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let admin = store.user_by_username("admin").unwrap().unwrap().uuid;
    drop(store);
    let patients = seed(&data, &type_uuid);
    let charted: Vec<String> = patients
        .iter()
        .step_by(PATIENTS / CHARTED)
        .cloned()
        .collect();
    let store =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let refs = Refs {
        admin,
        encounter_type,
        visit_type,
        location,
    };
    let (visits, encounters, observations) = generate(&store, &charted, &refs);
    drop(store);
    println!(
        "{PATIENTS} patients, {} of them with {visits} visits, {encounters} encounters, {observations} observations",
        charted.len()
    );
    if let Some(keep) = keep {
        std::fs::write(keep.join("charted.txt"), charted.join("\n")).unwrap();
        println!("generated in {}", keep.display());
        return;
    }

    let login_tag = content
        .location_tags
        .iter()
        .find(|t| t.name == "Login Location")
        .map(|t| t.uuid.clone());
    let login_location = content
        .locations
        .iter()
        .find(|l| !l.retired && login_tag.as_ref().is_some_and(|t| l.tags.contains(t)))
        .map(|l| l.uuid.clone())
        .unwrap_or_else(|| refs.location.clone());
    let screens = std::sync::Arc::new(Screens {
        login_location,
        today: chrono::Utc::now().format("%Y-%m-%d").to_string(),
        patients,
        charted,
    });

    let (_, hello_child, hello_port) = cold_start(&me, true, &data);
    let (_, child, port) = cold_start(&runtime_exe, false, &data);
    // The search index loads after start: wait for it, as a morning's first search would.
    assert_eq!(
        clinic::get(port, "/openmrs/ws/rest/v1/patient?q=mbuyi&limit=1"),
        200
    );

    let before = process_usage(child.id());
    let (mut single, e1, sizes) = replay(port, &screens, 1, seconds.min(20), false, None);
    let sizes = std::sync::Arc::new(sizes);
    let (mut hello_samples, _, _) =
        replay(hello_port, &screens, users, seconds, true, Some(&sizes));
    let between = process_usage(child.id());
    let (mut loaded, e192, _) = replay(port, &screens, users, seconds, true, None);
    let after = process_usage(child.id());
    let (cpu_single, cpu_loaded) = (between.0 - before.0, after.0 - between.0);
    stop(child);
    stop(hello_child);

    let count: usize = loaded.values().map(Vec::len).sum();
    let mut hello_all: Vec<Duration> = hello_samples.values().flatten().copied().collect();
    println!(
        "{users} users for {seconds} s: {count} calls ({:.0} per second), {e192} errors; one user without pauses: {e1} errors",
        count as f64 / seconds as f64
    );
    // Every call of a run (warm-up included) against the runtime's processor time in it.
    let per_call = |cpu: f64, samples: &Samples, seconds: u64| {
        let counted: usize = samples.values().map(Vec::len).sum();
        let all = counted as f64 * (seconds + seconds / 10 + 1) as f64 / seconds as f64;
        cpu * 1e3 / all
    };
    println!(
        "runtime's processor time: one user {cpu_single:.1} s ({:.2} ms a call), {users} users {cpu_loaded:.1} s ({:.2} ms a call); major page faults: one user {}, {users} users {}",
        per_call(cpu_single, &single, seconds.min(20)),
        per_call(cpu_loaded, &loaded, seconds),
        between.1 - before.1,
        after.1 - between.1,
    );
    println!(
        "hello world under the same schedule, each answer as large as the runtime's: p50 {:.2} ms, p99 {:.2} ms ({} calls)",
        ms(percentile(&mut hello_all, 0.5)),
        ms(percentile(&mut hello_all, 0.99)),
        hello_all.len()
    );
    println!(
        "| call | answer bytes | 1 user p50 | 1 user p99 | {users} users p50 | {users} users p99 | p99 growth | hello world, same bytes, {users} users p99 | calls |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, v) in loaded.iter_mut() {
        let one = single
            .get_mut(name)
            .expect("the single user made every call");
        let (p50, p99) = (percentile(v, 0.5), percentile(v, 0.99));
        let (o50, o99) = (percentile(one, 0.5), percentile(one, 0.99));
        let hello99 = hello_samples
            .get_mut(name)
            .map_or(0.0, |h| ms(percentile(h, 0.99)));
        println!(
            "| {name} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1}x | {hello99:.2} | {} |",
            sizes.get(name).copied().unwrap_or(0),
            ms(o50),
            ms(o99),
            ms(p50),
            ms(p99),
            p99.as_secs_f64() / o99.as_secs_f64(),
            v.len()
        );
    }
}
