//! Several runtime processes on one PostgreSQL database (`EMR_TEST_POSTGRES`, a server the
//! test command starts with `tools/pg-test-cluster.sh`): the rules that redb's single
//! writer keeps in one process, raced across processes, and what one runtime's change does
//! to the others' memory (sessions, the search index). Each test works in a schema of its
//! own.

use crate::common::new_schema;
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PASSWORD: &str = "Cluster-pass-1";
const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";

/// The PostgreSQL server of the multi-runtime tests.
pub fn server() -> String {
    std::env::var("EMR_TEST_POSTGRES").ok().filter(|u| !u.is_empty()).expect(
        "the multi-runtime tests need a PostgreSQL server: \
         EMR_TEST_POSTGRES=$(bash tools/pg-test-cluster.sh start /tmp/emr-pg) (the test command, .ci/test.sh, starts one)",
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runtimes sharing one schema; killed when dropped.
struct Cluster {
    url: String,
    schema: String,
    data: tempfile::TempDir,
    runtimes: Vec<(Child, u16)>,
}

impl Cluster {
    fn new(n: usize) -> Cluster {
        Cluster::on(server(), n)
    }

    fn on(url: String, n: usize) -> Cluster {
        let mut c = Cluster {
            url,
            schema: new_schema(),
            data: tempfile::tempdir().unwrap(),
            runtimes: Vec::new(),
        };
        for _ in 0..n {
            c.add();
        }
        c
    }

    fn command(&self, port: u16) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_runtime"));
        cmd.env("EMR_DATABASE_URL", &self.url)
            .env("EMR_DATABASE_SCHEMA", &self.schema)
            .env("EMR_DATA_DIR", self.data.path())
            .env("EMR_LISTEN", format!("127.0.0.1:{port}"))
            .env("EMR_ADMIN_PASSWORD", PASSWORD)
            .env("EMR_LOG", "warn")
            .stdout(Stdio::null());
        cmd
    }

    /// Starts one more runtime and waits until it serves.
    fn add(&mut self) -> u16 {
        let port = free_port();
        let child = self.command(port).stderr(Stdio::null()).spawn().unwrap();
        wait_ready(port);
        self.runtimes.push((child, port));
        port
    }

    fn port(&self, i: usize) -> u16 {
        self.runtimes[i % self.runtimes.len()].1
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (child, _) in &mut self.runtimes {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

enum Auth<'a> {
    Basic,
    Cookie(&'a str),
}

struct Answer {
    status: u16,
    head: String,
    body: serde_json::Value,
    /// The body as sent (an NDJSON file is not one JSON value).
    text: String,
}

/// One HTTP/1.1 exchange on its own connection; `None` when the runtime does not answer.
fn http(port: u16, method: &str, path: &str, body: Option<&str>, auth: Auth) -> Option<Answer> {
    http_with(port, method, path, body, auth, "")
}

/// `http`, with more header lines (each ending in CRLF).
fn http_with(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    auth: Auth,
    headers: &str,
) -> Option<Answer> {
    use base64::Engine;
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let auth = match auth {
        Auth::Basic => format!(
            "Authorization: Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
        ),
        Auth::Cookie(c) => format!("Cookie: JSESSIONID={c}"),
    };
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let status = out.split_whitespace().nth(1)?.parse().ok()?;
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    Some(Answer {
        status,
        head: head.to_string(),
        body: serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
        text: body.to_string(),
    })
}

fn wait_ready(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(Answer { status: 200, .. }) =
            http(port, "GET", "/openmrs/health/started", None, Auth::Basic)
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the runtime did not become ready");
}

/// Waits for `done` (another runtime's change reaches this one by a notice, a few
/// milliseconds later), failing after ten seconds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{what}: not seen within ten seconds");
}

fn identifier_type() -> String {
    runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE)
        .unwrap()
        .identifier_type("Numéro patient DSE")
        .unwrap()
        .uuid
        .clone()
}

/// A new patient's body, as registration sends it.
fn patient_body(given: &str, identifier: &str, type_uuid: &str) -> String {
    serde_json::json!({
        "person": {"names": [{"givenName": given, "familyName": "Kabongo"}], "gender": "F", "birthdate": "1990-05-01"},
        "identifiers": [{"identifier": identifier, "identifierType": type_uuid, "preferred": true}]
    })
    .to_string()
}

/// `POST patient` with `body`; `None` when the runtime does not answer.
fn post_patient(port: u16, body: &str) -> Option<Answer> {
    http(
        port,
        "POST",
        &format!("{REST}/patient"),
        Some(body),
        Auth::Basic,
    )
}

fn new_patient(port: u16, given: &str, identifier: &str, type_uuid: &str) -> Option<String> {
    let body = patient_body(given, identifier, type_uuid);
    let a = post_patient(port, &body)?;
    (a.status == 201).then(|| a.body["uuid"].as_str().unwrap().to_string())
}

fn generated(port: u16, source: &str) -> String {
    let a = http(
        port,
        "POST",
        &format!("{REST}/idgen/identifiersource/{source}/identifier"),
        Some("{}"),
        Auth::Basic,
    )
    .unwrap();
    assert_eq!(a.status, 200, "{}", a.body);
    a.body["identifier"].as_str().unwrap().to_string()
}

#[test]
fn runtimes_racing_never_give_an_identifier_twice() {
    let cluster = Cluster::new(3);
    let sources = http(
        cluster.port(0),
        "GET",
        &format!("{REST}/idgen/identifiersource"),
        None,
        Auth::Basic,
    )
    .unwrap();
    let source = sources.body["results"][0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let type_uuid = identifier_type();
    let given = Arc::new(Mutex::new(Vec::new()));
    let patients = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for t in 0..12 {
            let (port, source, type_uuid) = (cluster.port(t), &source, &type_uuid);
            let (given, patients) = (given.clone(), patients.clone());
            s.spawn(move || {
                for n in 0..15 {
                    let id = generated(port, source);
                    given.lock().unwrap().push(id.clone());
                    // Every third one registers a patient with it, as registration does.
                    if n % 3 == 0 {
                        let p = new_patient(port, &format!("Course{t}x{n}"), &id, type_uuid);
                        patients.lock().unwrap().push(p.expect("registered"));
                    }
                }
            });
        }
    });
    let given = given.lock().unwrap();
    assert_eq!(given.len(), 180);
    assert_eq!(
        given.iter().collect::<HashSet<_>>().len(),
        given.len(),
        "an identifier was given twice"
    );
    assert_eq!(patients.lock().unwrap().len(), 60);
    // The same identifier entered on two runtimes at once: one registration only.
    let taken = Arc::new(Mutex::new(0));
    let id = generated(cluster.port(0), &source);
    std::thread::scope(|s| {
        for t in 0..3 {
            let (port, id, type_uuid, taken) = (cluster.port(t), &id, &type_uuid, taken.clone());
            s.spawn(move || {
                if new_patient(port, "Doublon", id, type_uuid).is_some() {
                    *taken.lock().unwrap() += 1;
                }
            });
        }
    });
    assert_eq!(*taken.lock().unwrap(), 1);
}

#[test]
fn the_visit_overlap_rule_holds_across_runtimes() {
    let cluster = Cluster::new(2);
    let type_uuid = identifier_type();
    let source = http(
        cluster.port(0),
        "GET",
        &format!("{REST}/idgen/identifiersource"),
        None,
        Auth::Basic,
    )
    .unwrap()
    .body["results"][0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    for round in 0..10 {
        let id = generated(cluster.port(0), &source);
        let patient =
            new_patient(cluster.port(0), &format!("Visite{round}"), &id, &type_uuid).unwrap();
        let started = Arc::new(Mutex::new(Vec::new()));
        let together = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for t in 0..8 {
                let (port, patient, started, together) =
                    (cluster.port(t), &patient, started.clone(), &together);
                s.spawn(move || {
                    let body = serde_json::json!({"patient": patient, "visitType": OUTPATIENT})
                        .to_string();
                    together.wait();
                    let a = http(
                        port,
                        "POST",
                        &format!("{REST}/visit"),
                        Some(&body),
                        Auth::Basic,
                    )
                    .unwrap();
                    started.lock().unwrap().push(a.status);
                });
            }
        });
        let statuses = started.lock().unwrap().clone();
        assert_eq!(
            statuses.iter().filter(|s| **s == 201).count(),
            1,
            "round {round}: {statuses:?}"
        );
        assert!(
            statuses.iter().all(|s| *s == 201 || *s == 400),
            "{statuses:?}"
        );
        let visits = http(
            cluster.port(1),
            "GET",
            &format!("{REST}/visit?patient={patient}&includeInactive=true"),
            None,
            Auth::Basic,
        )
        .unwrap();
        assert_eq!(visits.body["results"].as_array().unwrap().len(), 1);
    }
}

fn login(port: u16) -> String {
    let a = http(port, "GET", &format!("{REST}/session"), None, Auth::Basic).unwrap();
    assert_eq!(a.body["authenticated"], true);
    a.head
        .lines()
        .find_map(|l| {
            let l = l.to_ascii_lowercase();
            l.strip_prefix("set-cookie: jsessionid=")
                .map(|v| v.split(';').next().unwrap().to_uppercase())
        })
        .expect("a session cookie")
}

fn authenticated(port: u16, cookie: &str) -> bool {
    http(
        port,
        "GET",
        &format!("{REST}/session"),
        None,
        Auth::Cookie(cookie),
    )
    .unwrap()
    .body["authenticated"]
        == true
}

#[test]
fn a_login_holds_on_every_runtime_and_a_logout_ends_it_on_all() {
    let cluster = Cluster::new(2);
    let (a, b) = (cluster.port(0), cluster.port(1));
    let cookie = login(a);
    assert!(
        authenticated(b, &cookie),
        "a login on one runtime is valid on the other"
    );
    let out = http(
        a,
        "DELETE",
        &format!("{REST}/session"),
        None,
        Auth::Cookie(&cookie),
    )
    .unwrap();
    assert_eq!(out.status, 204);
    eventually("the logout on the other runtime", || {
        !authenticated(b, &cookie)
    });
    assert!(!authenticated(a, &cookie));
    // A session another runtime never saw before the logout is refused too.
    let second = login(b);
    let out = http(
        b,
        "DELETE",
        &format!("{REST}/session"),
        None,
        Auth::Cookie(&second),
    )
    .unwrap();
    assert_eq!(out.status, 204);
    assert!(!authenticated(a, &second));
}

#[test]
fn wrong_passwords_counted_on_one_runtime_are_counted_on_the_others() {
    let cluster = Cluster::new(2);
    let (a, b) = (cluster.port(0), cluster.port(1));
    let guess = |port: u16| {
        use base64::Engine;
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let auth = base64::engine::general_purpose::STANDARD.encode("nadine:not-her-password");
        write!(
            s,
            "GET {REST}/patient?q=kabongo HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u16>()
            .unwrap()
    };
    // Five wrong guesses at one name from one address, all on the first runtime...
    for _ in 0..5 {
        assert_eq!(guess(a), 401);
    }
    assert_eq!(guess(a), 429);
    // ...and the sixth, tried on the other, waits too.
    eventually("the other runtime refusing the sixth guess", || {
        guess(b) == 429
    });
    // The administrator, from the same address, still logs in on both.
    assert!(authenticated_basic(a) && authenticated_basic(b));
}

fn authenticated_basic(port: u16) -> bool {
    http(port, "GET", &format!("{REST}/session"), None, Auth::Basic)
        .is_some_and(|a| a.body["authenticated"] == true)
}

#[test]
fn a_runtime_whose_notices_were_cut_listens_again_and_catches_up() {
    let cluster = Cluster::new(2);
    let (a, b) = (cluster.port(0), cluster.port(1));
    let cookie = login(a);
    assert!(authenticated(b, &cookie));
    // The server ends every connection listening on this schema's channel.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ended = rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&server(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        // A runtime answers requests before its listener has connected (it listens in the
        // background): wait until both listen, then end both at once.
        let listening = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN emr_changes_%' AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND query LIKE $1";
        let channel = format!("LISTEN {}", channel_of(&cluster.schema));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while client
            .query_one(listening, &[&channel])
            .await
            .unwrap()
            .get::<_, i64>(0)
            < 2
        {
            assert!(std::time::Instant::now() < deadline, "both runtimes listen");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        client
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'LISTEN emr_changes_%' AND state = 'idle' AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND query LIKE $1",
                &[&format!("LISTEN {}", channel_of(&cluster.schema))],
            )
            .await
            .unwrap()
            .get::<_, i64>(0)
    });
    assert_eq!(ended, 2, "one listener per runtime");
    // A logout on one runtime still reaches the other once it listens again (and it drops
    // what it kept meanwhile).
    let out = http(
        a,
        "DELETE",
        &format!("{REST}/session"),
        None,
        Auth::Cookie(&cookie),
    )
    .unwrap();
    assert_eq!(out.status, 204);
    eventually(
        "the other runtime dropping what it kept when its notices were cut",
        || !authenticated(b, &cookie),
    );
    // It listens again: a patient registered on one runtime reaches the other's search
    // index, which only notices feed.
    let type_uuid = identifier_type();
    let id = runtime::identifiers::with_check("883001", Some(crate::common::MOD30)).unwrap();
    let uuid = new_patient(a, "Reconnexion", &id, &type_uuid).unwrap();
    eventually("the new patient in the other runtime's search", || {
        http(
            b,
            "GET",
            &format!("{REST}/patient?q=reconnexion"),
            None,
            Auth::Basic,
        )
        .is_some_and(|r| r.body["results"].to_string().contains(&uuid))
    });
}

/// The notice channel of a schema, as a runtime names it.
fn channel_of(schema: &str) -> String {
    let store =
        runtime::store::Store::connect(&server(), schema, &runtime::domains::REGISTRY).unwrap();
    store.server().unwrap().channel()
}

#[test]
fn a_patient_registered_on_one_runtime_is_found_by_the_others() {
    let cluster = Cluster::new(2);
    let type_uuid = identifier_type();
    let id = runtime::identifiers::with_check("777001", Some(crate::common::MOD30)).unwrap();
    let uuid = new_patient(cluster.port(0), "Wivine", &id, &type_uuid).unwrap();
    let found = |q: &str| {
        http(
            cluster.port(1),
            "GET",
            &format!("{REST}/patient?q={q}&v=default"),
            None,
            Auth::Basic,
        )
        .unwrap()
        .body["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["uuid"] == uuid.as_str())
    };
    eventually("the new patient in the other runtime's search", || {
        found("wivine")
    });
    assert!(found(&id));
    // A change made on one runtime shows in the other's search pages, which come from its
    // cache of decoded records once read.
    let gender = || {
        http(
            cluster.port(1),
            "GET",
            &format!("{REST}/patient?q=wivine&v=custom:(uuid,person:(gender))"),
            None,
            Auth::Basic,
        )
        .unwrap()
        .body["results"][0]["person"]["gender"]
            .clone()
    };
    assert_eq!(gender(), "F");
    let edited = http(
        cluster.port(0),
        "POST",
        &format!("{REST}/person/{uuid}"),
        Some(r#"{"gender": "M"}"#),
        Auth::Basic,
    )
    .unwrap();
    assert_eq!(edited.status, 200, "{:?}", edited.body);
    eventually("the change in the other runtime's search page", || {
        gender() == "M"
    });
    let voided = http(
        cluster.port(0),
        "DELETE",
        &format!("{REST}/patient/{uuid}?reason=doublon"),
        None,
        Auth::Basic,
    )
    .unwrap();
    assert_eq!(voided.status, 204);
    eventually(
        "the voided patient gone from the other runtime's search",
        || !found("wivine"),
    );
}

#[test]
fn a_bulk_export_asked_of_one_runtime_is_polled_and_read_on_another() {
    let cluster = Cluster::new(2);
    let type_uuid = identifier_type();
    let id = runtime::identifiers::with_check("777011", Some(crate::common::MOD30)).unwrap();
    let uuid = new_patient(cluster.port(0), "Exportée", &id, &type_uuid).unwrap();
    let r = http_with(
        cluster.port(0),
        "GET",
        "/openmrs/ws/fhir2/R4/Patient/$export?_type=Patient",
        None,
        Auth::Basic,
        "Prefer: respond-async\r\n",
    )
    .unwrap();
    assert_eq!(r.status, 202, "{}", r.head);
    let poll = r
        .head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("content-location:")
                .then(|| l[17..].trim().to_string())
        })
        .expect("where to poll");
    let poll = poll[poll.find("/openmrs/").unwrap()..].to_string();
    // The other runtime answers the polls from the store, then serves the file.
    let mut manifest = serde_json::Value::Null;
    eventually("the export complete, seen from the other runtime", || {
        let r = http(cluster.port(1), "GET", &poll, None, Auth::Basic).unwrap();
        assert!(r.status == 200 || r.status == 202, "{}", r.text);
        manifest = r.body;
        r.status == 200
    });
    let url = manifest["output"][0]["url"].as_str().unwrap();
    let file = http(
        cluster.port(1),
        "GET",
        &url[url.find("/openmrs/").unwrap()..],
        None,
        Auth::Basic,
    )
    .unwrap();
    assert_eq!(file.status, 200);
    assert!(
        file.text
            .lines()
            .any(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"] == uuid.as_str()),
        "{}",
        file.text
    );
}

#[test]
fn kill_9_of_one_runtime_loses_no_acknowledged_write_and_the_other_serves_on() {
    let mut cluster = Cluster::new(2);
    let type_uuid = identifier_type();
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Raised before the first runtime is killed: from then on the writers send to the
    // survivor only. Its port, once free, may be taken by a runtime of another test running
    // beside this one, which would answer 201 for a patient of its own schema.
    let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ports = [cluster.port(0), cluster.port(1)];
    let writers: Vec<_> = (0..32)
        .map(|t| {
            let (ack, stop, killed, type_uuid) = (
                acknowledged.clone(),
                stop.clone(),
                killed.clone(),
                type_uuid.clone(),
            );
            std::thread::spawn(move || {
                for n in 0..200 {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let i = t * 1000 + n;
                    let id = runtime::identifiers::with_check(
                        &format!("{}", 500000 + i),
                        Some(crate::common::MOD30),
                    )
                    .unwrap();
                    let port = if killed.load(std::sync::atomic::Ordering::SeqCst) {
                        ports[1]
                    } else {
                        ports[i % 2]
                    };
                    if let Some(uuid) = new_patient(port, &format!("Panne{i}"), &id, &type_uuid) {
                        ack.lock().unwrap().push(uuid);
                    }
                }
            })
        })
        .collect();
    eventually("a hundred acknowledged writes", || {
        acknowledged.lock().unwrap().len() >= 100
    });
    let (mut victim, _) = cluster.runtimes.remove(0);
    killed.store(true, std::sync::atomic::Ordering::SeqCst);
    Command::new("kill")
        .args(["-9", &victim.id().to_string()])
        .status()
        .unwrap();
    victim.wait().unwrap();
    // The survivor keeps serving while the writers go on against it alone.
    let before = acknowledged.lock().unwrap().len();
    eventually("writes acknowledged by the surviving runtime", || {
        acknowledged.lock().unwrap().len() >= before + 50
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let survivor = cluster.port(0);
    for uuid in acknowledged.lock().unwrap().iter() {
        let a = http(
            survivor,
            "GET",
            &format!("{REST}/patient/{uuid}"),
            None,
            Auth::Basic,
        )
        .unwrap();
        assert_eq!(a.status, 200, "acknowledged patient {uuid} lost");
    }
    // A runtime started again joins the one that stayed.
    let back = cluster.add();
    let first = acknowledged.lock().unwrap()[0].clone();
    let a = http(
        back,
        "GET",
        &format!("{REST}/patient/{first}"),
        None,
        Auth::Basic,
    )
    .unwrap();
    assert_eq!(a.status, 200);
}

#[test]
fn a_runtime_with_other_content_refuses_the_database_until_told_to_upgrade() {
    let mut cluster = Cluster::new(1);
    {
        let store =
            runtime::store::Store::connect(&server(), &cluster.schema, &runtime::domains::REGISTRY)
                .unwrap();
        store
            .set_meta("bundle_hash", "content-of-another-build")
            .unwrap();
    }
    let port = free_port();
    let out = cluster
        .command(port)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("content-of-another-build") && said.contains("EMR_CONTENT_UPGRADE=true"),
        "{said}"
    );
    let port = free_port();
    let child = cluster
        .command(port)
        .env("EMR_CONTENT_UPGRADE", "true")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port);
    cluster.runtimes.push((child, port));
}

#[test]
fn a_read_check_write_on_one_runtime_waits_for_another_runtimes() {
    let schema = new_schema();
    let open =
        || runtime::store::Store::connect(&server(), &schema, &runtime::domains::REGISTRY).unwrap();
    let (a, b) = (open(), open());
    let (space, clinical) = a
        .server()
        .unwrap()
        .lock_args(runtime::store::pg::Lock::Clinical);
    let (space, clinical) = (space as u32 as i64, clinical as i64);
    let held = a.write_lock();
    let acquired = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let _second = b.write_lock();
            acquired.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        // The other runtime's request is seen waiting on the lock by the server itself.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        eventually("the second runtime waiting for the clinical lock", || {
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(&server(), tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                let row = client
                    .query_one(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                         AND classid::bigint = $1 AND objid::bigint = $2",
                        &[&space, &clinical],
                    )
                    .await
                    .unwrap();
                row.get::<_, i64>(0) >= 1
            })
        });
        assert!(!acquired.load(std::sync::atomic::Ordering::SeqCst));
        drop(held);
    });
    assert!(acquired.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn change_notices_stay_within_their_schema() {
    use runtime::store::pg::Notice;
    let open = |schema: &str| {
        runtime::store::Store::connect(&server(), schema, &runtime::domains::REGISTRY).unwrap()
    };
    let (x, y) = (new_schema(), new_schema());
    let (x1, x2, y1, y2) = (open(&x), open(&x), open(&y), open(&y));
    let heard = |store: &runtime::store::Store| {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        store.on_remote_change(Arc::new(move |n: &Notice| {
            if let Notice::Changed(t) = n
                && let Some(Some(keys)) = t.get("settings")
            {
                into.lock().unwrap().extend(keys.iter().cloned());
            }
        }));
        seen
    };
    let (in_x, in_y) = (heard(&x2), heard(&y2));
    // The listeners connect in the background: wait until each hears its own schema.
    let setting = |store: &runtime::store::Store, name: &str| {
        store
            .put_setting(&runtime::store::SettingRecord {
                v: 1,
                property: name.into(),
                value: "1".into(),
                description: None,
                base_fingerprint: String::new(),
            })
            .unwrap()
    };
    eventually("the first schema's listener", || {
        setting(&x1, "x.ready");
        !in_x.lock().unwrap().is_empty()
    });
    eventually("the second schema's listener", || {
        setting(&y1, "y.ready");
        !in_y.lock().unwrap().is_empty()
    });
    setting(&x1, "x.only");
    setting(&y1, "y.after");
    // The server delivers in commit order: once the second schema's later notice has
    // arrived, a notice of the first schema would have arrived before it.
    eventually("the later notice in the second schema", || {
        in_y.lock().unwrap().contains(&"y.after".to_string())
    });
    eventually("the notice in the first schema", || {
        in_x.lock().unwrap().contains(&"x.only".to_string())
    });
    let y_heard = in_y.lock().unwrap().clone();
    assert!(y_heard.iter().all(|k| k.starts_with("y.")), "{y_heard:?}");
}

#[test]
fn content_given_to_the_database_by_another_runtime_stops_this_ones_writes() {
    let cluster = Cluster::new(1);
    let port = cluster.port(0);
    let type_uuid = identifier_type();
    let id = |n: u32| {
        runtime::identifiers::with_check(&n.to_string(), Some(crate::common::MOD30)).unwrap()
    };
    assert!(new_patient(port, "Avant", &id(882001), &type_uuid).is_some());
    // Another runtime, with other content, reloads it into the database.
    let other =
        runtime::store::Store::connect(&server(), &cluster.schema, &runtime::domains::REGISTRY)
            .unwrap();
    other
        .set_meta(runtime::store::SERVED_CONTENT, "content-of-a-newer-build")
        .unwrap();
    eventually("the runtime noticing the database's new content", || {
        http(port, "GET", "/openmrs/health/started", None, Auth::Basic)
            .is_some_and(|a| a.status == 503 && a.body["status"] == "content-changed")
    });
    // Its writes are refused; reads go on.
    let body = patient_body("Apres", &id(882002), &type_uuid);
    let refused = post_patient(port, &body).unwrap();
    assert_eq!(refused.status, 503, "{}", refused.body);
    let read = http(
        port,
        "GET",
        &format!("{REST}/patient?q=avant"),
        None,
        Auth::Basic,
    )
    .unwrap();
    assert_eq!(read.status, 200);
}

#[test]
fn background_jobs_run_on_one_runtime_at_a_time() {
    let schema = new_schema();
    let open =
        || runtime::store::Store::connect(&server(), &schema, &runtime::domains::REGISTRY).unwrap();
    let (a, b) = (open(), open());
    use runtime::store::pg::Lock;
    let held = a.server().unwrap().try_hold(Lock::Jobs).unwrap();
    assert!(held.is_some());
    assert!(b.server().unwrap().try_hold(Lock::Jobs).unwrap().is_none());
    // Each job has its own lock: the runtime running one runs the others in the same round.
    let schedules = a.server().unwrap().try_hold(Lock::ReportSchedules).unwrap();
    let rules = a.server().unwrap().try_hold(Lock::StockRules).unwrap();
    assert!(schedules.is_some() && rules.is_some());
    assert!(
        b.server()
            .unwrap()
            .try_hold(Lock::StockRules)
            .unwrap()
            .is_none()
    );
    drop(held);
    assert!(b.server().unwrap().try_hold(Lock::Jobs).unwrap().is_some());
}

#[test]
fn a_backup_moves_from_redb_to_postgresql_and_back_unchanged() {
    // Records of every kind, made through the API on redb.
    let st = crate::common::state_with(
        runtime::embedded::EMBEDDED_BUNDLE.to_vec(),
        runtime::store::Store::in_memory(&runtime::domains::REGISTRY).unwrap(),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(a_clinic_day(st.clone()));
    let mut from_redb = Vec::new();
    st.store.snapshot(&mut from_redb).unwrap();
    let pg = runtime::store::Store::connect(&server(), &new_schema(), &runtime::domains::REGISTRY)
        .unwrap();
    pg.restore(std::io::Cursor::new(&from_redb)).unwrap();
    let mut from_pg = Vec::new();
    pg.snapshot(&mut from_pg).unwrap();
    assert!(
        from_redb.len() > 10_000,
        "a day's records: {}",
        from_redb.len()
    );
    assert!(
        from_pg == from_redb,
        "the backup changed on its way through PostgreSQL"
    );
    let back = runtime::store::Store::in_memory(&runtime::domains::REGISTRY).unwrap();
    back.restore(std::io::Cursor::new(&from_pg)).unwrap();
    let mut again = Vec::new();
    back.snapshot(&mut again).unwrap();
    assert!(
        again == from_redb,
        "the backup changed on its way back to redb"
    );
}

/// Patients, their visits with vitals, an account and a setting, made through the API.
async fn a_clinic_day(st: Arc<runtime::http::AppState>) {
    use crate::common::{Client, register_patient, registration_clerk};
    let mut admin = Client::admin(st.clone()).await;
    registration_clerk(&mut admin, &st, "rose").await;
    let r = admin
        .post(
            &format!("{REST}/systemsetting"),
            &serde_json::json!({"property": "emr.backupRoundTrip", "value": "oui"}).to_string(),
        )
        .await;
    assert_eq!(r.status, axum::http::StatusCode::CREATED, "{:?}", r.body);
    for i in 0..20 {
        let p = register_patient(
            &mut admin,
            &st,
            &format!("Jour{i}"),
            "Mbala",
            &format!("{}", 610000 + i),
        )
        .await;
        crate::router_clinical::visit_with_vitals(&mut admin, &st, &p).await;
    }
}

fn private_server(action: &str, dir: &std::path::Path) -> String {
    private_server_with(action, dir, &[])
}

/// `tools/pg-test-cluster.sh action dir args…`, answering what it prints.
fn private_server_with(action: &str, dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tools/pg-test-cluster.sh"
        ))
        .arg(action)
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_database_that_goes_away_answers_503_and_is_found_again() {
    // A server of this test's own, since it is stopped.
    let dir = tempfile::tempdir().unwrap();
    let url = private_server("start", dir.path());
    let cluster = Cluster::on(url, 1);
    let port = cluster.port(0);
    let type_uuid = identifier_type();
    let id = |n: u32| {
        runtime::identifiers::with_check(&n.to_string(), Some(crate::common::MOD30)).unwrap()
    };
    assert!(new_patient(port, "Avant", &id(881001), &type_uuid).is_some());
    private_server("stop", dir.path());
    let body = patient_body("Pendant", &id(881002), &type_uuid);
    let refused = post_patient(port, &body).unwrap();
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(
        refused.head.to_ascii_lowercase().contains("retry-after:"),
        "{}",
        refused.head
    );
    let health = http(port, "GET", "/openmrs/health/started", None, Auth::Basic).unwrap();
    assert_eq!(health.status, 503);
    assert_eq!(health.body["status"], "database-unreachable");
    private_server("start", dir.path());
    eventually(
        "the runtime serving again once the database is back",
        || {
            http(port, "GET", "/openmrs/health/started", None, Auth::Basic)
                .is_some_and(|a| a.status == 200)
        },
    );
    let again = post_patient(port, &body).unwrap();
    assert_eq!(again.status, 201, "{}", again.body);
    drop(cluster);
    private_server("stop", dir.path());
}

/// Runs `sql` (several statements) on the server at `url`; answers the first error's
/// SQLSTATE.
fn sql_on(url: &str, sql: &str) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client
            .batch_execute(sql)
            .await
            .map_err(|e| e.code().map_or(e.to_string(), |c| c.code().to_string()))
    })
}

#[test]
fn a_full_database_disk_refuses_writes_with_507_and_takes_them_again_once_freed() {
    // A server of this test's own, whose tablespace lies on a small volume: it fills up
    // while the write-ahead log, on the server's own disk, keeps room (as when a data
    // volume fills; a full log volume stops PostgreSQL itself, which the runtime answers
    // with 503 as for a server gone).
    let dir = tempfile::tempdir().unwrap();
    let url = private_server("start", dir.path());
    let small = private_server_with("small-volume", dir.path(), &["24"]);
    sql_on(&url, &format!("CREATE TABLESPACE small LOCATION '{small}'")).unwrap();
    // Every table of the runtime's schema is made in it.
    let cluster = Cluster::on(format!("{url} options='-c default_tablespace=small'"), 1);
    let port = cluster.port(0);
    let type_uuid = identifier_type();
    let id = |n: u32| {
        runtime::identifiers::with_check(&n.to_string(), Some(crate::common::MOD30)).unwrap()
    };
    let before = new_patient(port, "Avant", &id(884001), &type_uuid).expect("stored");
    // Something else fills the volume.
    sql_on(&url, "CREATE TABLE filler (t text) TABLESPACE small").unwrap();
    let mut filled = false;
    for _ in 0..100 {
        match sql_on(
            &url,
            "INSERT INTO filler SELECT repeat(md5(g::text), 60) FROM generate_series(1, 2000) g",
        ) {
            Ok(()) => {}
            Err(code) => {
                assert_eq!(code, "53100", "the volume full, nothing else");
                filled = true;
                break;
            }
        }
    }
    assert!(filled, "24 MB filled");
    // A registration needs new pages: refused with 507 (a few may still fit in the free
    // space of the pages already there; each one acknowledged must then be kept).
    let mut kept = vec![before];
    let mut refused = None;
    for n in 0..50 {
        let body = patient_body("Pendant", &id(884100 + n), &type_uuid);
        let r = post_patient(port, &body).expect("an answer");
        match r.status {
            201 => kept.push(r.body["uuid"].as_str().unwrap().to_string()),
            _ => {
                refused = Some((r, body));
                break;
            }
        }
    }
    let (refusal, body) = refused.expect("a write refused once the volume is full");
    assert_eq!(refusal.status, 507, "{}", refusal.body);
    assert_eq!(refusal.body["error"]["code"], "emr.store.unwritable");
    assert!(
        refusal.head.to_ascii_lowercase().contains("retry-after:"),
        "{}",
        refusal.head
    );
    // Reads go on.
    let all_readable = |kept: &[String]| {
        for uuid in kept {
            let r = http(
                port,
                "GET",
                &format!("{REST}/patient/{uuid}"),
                None,
                Auth::Basic,
            )
            .unwrap();
            assert_eq!(r.status, 200, "{}", r.body);
        }
    };
    all_readable(&kept);
    // Space freed: the same registration is taken, with nothing left over from the refusal.
    sql_on(&url, "DROP TABLE filler").unwrap();
    let again = post_patient(port, &body).unwrap();
    assert_eq!(again.status, 201, "{}", again.body);
    kept.push(again.body["uuid"].as_str().unwrap().to_string());
    all_readable(&kept);
    drop(cluster);
    private_server("stop", dir.path());
}

/// POSTs `body` to a stock management resource on `port`, answering the created uuid.
fn stock_post(port: u16, resource: &str, body: serde_json::Value) -> String {
    let a = http(
        port,
        "POST",
        &format!("{REST}/stockmanagement/{resource}"),
        Some(&body.to_string()),
        Auth::Basic,
    )
    .unwrap();
    assert_eq!(a.status, 201, "{resource}: {}", a.body);
    a.body["uuid"].as_str().unwrap_or_default().to_string()
}

fn stock_action(port: u16, operation: &str, name: &str) -> u16 {
    let body = serde_json::json!({"name": name, "uuid": operation}).to_string();
    http(
        port,
        "POST",
        &format!("{REST}/stockmanagement/stockoperationaction"),
        Some(&body),
        Auth::Basic,
    )
    .unwrap()
    .status
}

#[test]
fn runtimes_racing_for_the_last_boxes_never_take_more_than_the_store_holds() {
    const AMOXICILLIN: &str = "6b5ba414-cd71-43c3-9872-ddb2ae0e0f2e";
    const CAPSULE: &str = "1608AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    const ISSUE: &str = "66666666-6666-6666-6666-666666666666";
    const RECEIPT: &str = "44444444-4444-4444-4444-444444444444";
    let cluster = Cluster::new(2);
    let port = cluster.port(0);
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let location = |name: &str| catalog.location(name).unwrap().uuid.clone();
    let (store, pharmacy) = (
        location("Bondeko - Magasin central"),
        location("Bondeko - Pharmacie"),
    );
    let admin = http(port, "GET", &format!("{REST}/session"), None, Auth::Basic)
        .unwrap()
        .body["user"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    stock_post(
        port,
        "userrolescope",
        serde_json::json!({"userUuid": admin, "role": "System Developer", "permanent": true,
            "enabled": true, "locations": [{"locationUuid": store}],
            "operationTypes": [{"operationTypeUuid": ISSUE}, {"operationTypeUuid": RECEIPT}]}),
    );
    let supplier = stock_post(
        port,
        "stocksource",
        serde_json::json!({"name": "CDR Kinshasa"}),
    );
    let item = stock_post(
        port,
        "stockitem",
        serde_json::json!({"drugUuid": AMOXICILLIN}),
    );
    let capsule = stock_post(
        port,
        "stockitempackaginguom",
        serde_json::json!({"stockItemUuid": item, "packagingUomUuid": CAPSULE, "factor": 1}),
    );
    let expiry = (chrono::Utc::now() + chrono::Duration::days(300))
        .format("%Y-%m-%d")
        .to_string();
    let receipt = stock_post(
        port,
        "stockoperation",
        serde_json::json!({"operationTypeUuid": RECEIPT, "atLocationUuid": store,
            "sourceUuid": supplier, "destinationUuid": store,
            "stockOperationItems": [{"stockItemUuid": item, "batchNo": "L1", "expiration": expiry,
                "quantity": 3, "stockItemPackagingUOMUuid": capsule}]}),
    );
    assert_eq!(stock_action(port, &receipt, "COMPLETE"), 201);
    let batch = http(
        port,
        "GET",
        &format!("{REST}/stockmanagement/stockbatch?stockItemUuid={item}"),
        None,
        Auth::Basic,
    )
    .unwrap()
    .body["results"][0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    // Eight issues of one capsule each, submitted at once on both runtimes: three can be.
    let issues: Vec<String> = (0..8)
        .map(|_| {
            stock_post(
                port,
                "stockoperation",
                serde_json::json!({"operationTypeUuid": ISSUE, "atLocationUuid": store,
                    "sourceUuid": store, "destinationUuid": pharmacy,
                    "stockOperationItems": [{"stockItemUuid": item, "stockBatchUuid": batch,
                        "quantity": 1, "stockItemPackagingUOMUuid": capsule}]}),
            )
        })
        .collect();
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let together = std::sync::Barrier::new(issues.len());
    std::thread::scope(|s| {
        for (i, issue) in issues.iter().enumerate() {
            let (port, statuses, together) = (cluster.port(i), statuses.clone(), &together);
            s.spawn(move || {
                together.wait();
                let status = stock_action(port, issue, "SUBMIT");
                statuses.lock().unwrap().push(status);
            });
        }
    });
    let statuses = statuses.lock().unwrap().clone();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        3,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 201 || *s == 400),
        "{statuses:?}"
    );
    for p in [cluster.port(0), cluster.port(1)] {
        let inventory = http(
            p,
            "GET",
            &format!(
                "{REST}/stockmanagement/stockiteminventory?locationUuid={store}&includeEmpty=true"
            ),
            None,
            Auth::Basic,
        )
        .unwrap();
        assert_eq!(
            inventory.body["results"][0]["quantity"], 0,
            "{}",
            inventory.body
        );
    }
}

/// A database written by store version 4 (observations as JSON records, the text index by
/// patient and concept) opened by two runtimes' stores at once: the upgrade's batches are
/// shared between them, never repeated or lost; every observation is stored again in the
/// compact form and found through the chart's index; the old index is dropped; the mark
/// is gone.
#[test]
fn two_runtimes_opening_an_older_database_together_upgrade_it_once() {
    use runtime::domains::encounter::store::{OBS_BY_CONCEPT_BEFORE_5, ObsQuery, list_obs};
    use runtime::domains::encounter::{ObsRecord, ObsValue};
    use runtime::store::kv::TableDefinition;
    use runtime::store::record::{Audit, Voiding, Window};
    const OBS: TableDefinition<&str, &[u8]> = TableDefinition::new("obs");
    let schema = new_schema();
    let connect = |schema: &str| {
        runtime::store::Store::connect(&server(), schema, &runtime::domains::REGISTRY).unwrap()
    };
    let patient = "0b3c5a7e-1f2d-4c6b-8a9e-0d1c2b3a4f5e";
    let weight = "5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    // More than two of the upgrade's batches.
    let count = 12_001usize;
    {
        let s = connect(&schema);
        s.write(|txn| {
            let mut obs = txn.open_table(OBS)?;
            for i in 0..count {
                let o = ObsRecord {
                    v: 1,
                    uuid: format!("0b3c5a7e-{:04x}-4c6b-8a9e-{:012x}", i % 0xffff, i),
                    person: patient.into(),
                    concept: weight.into(),
                    encounter: None,
                    obs_group: None,
                    datetime: format!("2026-11-{:02}T10:00:00.000Z", 1 + i % 28),
                    location: None,
                    value: ObsValue::Numeric(i as f64),
                    comment: None,
                    form_field_namespace: None,
                    form_field_path: None,
                    status: "FINAL".into(),
                    interpretation: None,
                    order: None,
                    previous_version: None,
                    audit: Audit {
                        creator: "admin".into(),
                        date_created: "2026-11-28T10:00:00.000Z".into(),
                        changed_by: None,
                        date_changed: None,
                    },
                    voiding: Voiding::default(),
                };
                obs.insert(o.uuid.as_str(), serde_json::to_vec(&o).unwrap().as_slice())?;
            }
            txn.open_table(OBS_BY_CONCEPT_BEFORE_5)?
                .insert("an entry of version 4", 0u8)?;
            Ok(())
        })
        .unwrap();
        s.set_meta("schema_version", "4").unwrap();
    }
    let stores: Vec<runtime::store::Store> = std::thread::scope(|scope| {
        let opening: Vec<_> = (0..2).map(|_| scope.spawn(|| connect(&schema))).collect();
        opening.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for s in &stores {
        assert_eq!(
            s.meta("schema_version").unwrap(),
            Some(runtime::store::SCHEMA_VERSION.to_string())
        );
        assert_eq!(s.meta("upgrading_from").unwrap(), None);
        assert_eq!(s.meta("upgrade_cursor:obs").unwrap(), None);
        let query = ObsQuery {
            patient: Some(patient.into()),
            concepts: vec![weight.into()],
            ..ObsQuery::default()
        };
        let window = Window {
            start: 0,
            limit: 5,
            count_all: true,
        };
        let (page, found) = list_obs(s, &query, window).unwrap();
        assert_eq!(found.total, Some(count));
        assert!(
            page.iter()
                .all(|o| o.datetime == "2026-11-28T10:00:00.000Z")
        );
        let txn = s.begin_read().unwrap();
        let compact = txn
            .open_table(OBS)
            .unwrap()
            .iter()
            .unwrap()
            .filter(|row| row.as_ref().unwrap().1.value().first() == Some(&2))
            .count();
        assert_eq!(
            compact, count,
            "every record stored again in the compact form"
        );
        // Read last: on PostgreSQL, reading a table that is gone ends the transaction.
        assert!(
            txn.open_table(OBS_BY_CONCEPT_BEFORE_5)
                .and_then(|t| t.is_empty())
                .unwrap_or(true),
            "the old index is dropped"
        );
    }
}

/// Two runtimes evaluating the stock rules at the same moment (their jobs' lock aside):
/// the rule is evaluated once and its users get one alert, not one from each.
#[test]
fn two_runtimes_evaluating_the_stock_rules_at_once_send_one_alert() {
    use crate::common::{Client, state_with};
    use runtime::domains::stock::evaluation::evaluate_due_rules;
    const AMOXICILLIN: &str = "6b5ba414-cd71-43c3-9872-ddb2ae0e0f2e";
    const BOX: &str = "162396AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let schema = new_schema();
    let open =
        || runtime::store::Store::connect(&server(), &schema, &runtime::domains::REGISTRY).unwrap();
    let bundle = runtime::embedded::EMBEDDED_BUNDLE.to_vec();
    let a = state_with(bundle.clone(), open());
    let b = state_with(bundle, open());
    let store = a
        .catalog
        .load()
        .location("Bondeko - Magasin central")
        .unwrap()
        .uuid
        .clone();
    let sm = format!("{REST}/stockmanagement");
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut c = Client::admin(a.clone()).await;
        let admin = c.user_uuid().await;
        let post = async |c: &mut Client, path: &str, body: serde_json::Value| {
            let r = c.post(&format!("{sm}/{path}"), &body.to_string()).await;
            assert_eq!(r.status, axum::http::StatusCode::CREATED, "{}", r.body);
            r.body["uuid"].as_str().unwrap().to_string()
        };
        post(
            &mut c,
            "userrolescope",
            serde_json::json!({"userUuid": admin, "role": "System Developer", "permanent": true,
                "enabled": true, "locations": [{"locationUuid": store}],
                "operationTypes": [{"operationTypeUuid": "44444444-4444-4444-4444-444444444444"}]}),
        )
        .await;
        let item = post(
            &mut c,
            "stockitem",
            serde_json::json!({"drugUuid": AMOXICILLIN}),
        )
        .await;
        let boxed = post(
            &mut c,
            "stockitempackaginguom",
            serde_json::json!({"stockItemUuid": item, "packagingUomUuid": BOX, "factor": 100}),
        )
        .await;
        post(
            &mut c,
            "stockrule",
            serde_json::json!({"stockItemUuid": item, "name": "Rupture", "locationUuid": store,
                "quantity": 1, "stockItemPackagingUOMUuid": boxed, "enabled": true,
                "evaluationFrequency": 60, "actionFrequency": 1440,
                "alertRole": "System Developer"}),
        )
        .await;
    });
    let now = chrono::Utc::now();
    let together = std::sync::Barrier::new(2);
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = [&a, &b]
            .into_iter()
            .map(|st| {
                let together = &together;
                s.spawn(move || {
                    together.wait();
                    evaluate_due_rules(st, now).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        results.iter().map(|r| r.evaluated).sum::<usize>(),
        1,
        "{results:?}"
    );
    assert_eq!(
        results.iter().map(|r| r.alerts).sum::<usize>(),
        1,
        "{results:?}"
    );
    let key = runtime::wire::datetime_key(now);
    for st in [&a, &b] {
        let alerts = runtime::domains::alert::store::list(&st.store, &key, false).unwrap();
        assert_eq!(alerts.len(), 1);
        assert!(
            alerts[0].text.starts_with("Stock alert: "),
            "{}",
            alerts[0].text
        );
    }
}

/// PostgreSQL answers the `COMMIT` of a transaction in which a statement failed with a
/// silent `ROLLBACK`: a write whose caller went on after such a failure is refused, never
/// acknowledged, and leaves nothing.
#[test]
fn a_write_in_which_a_statement_failed_is_refused_not_silently_rolled_back() {
    use runtime::store::pg::Txn;
    let schema = new_schema();
    let store =
        runtime::store::Store::connect(&server(), &schema, &runtime::domains::REGISTRY).unwrap();
    let engine = store.server().unwrap().clone();
    let setup = Txn::write(&engine).unwrap();
    setup.create_table("probe_rows").unwrap();
    setup.commit().unwrap();

    let txn = Txn::write(&engine).unwrap();
    txn.table("probe_rows")
        .unwrap()
        .put(b"kept?", b"no")
        .unwrap();
    // A read of a table that is not there fails, and its caller goes on.
    assert!(txn.table("no_such_table").unwrap().get(b"k").is_err());
    assert!(txn.commit().is_err());

    let read = Txn::read(&engine).unwrap();
    assert_eq!(
        read.table("probe_rows").unwrap().get(b"kept?").unwrap(),
        None
    );
}

/// Reading a patient's flags regenerates them (`domains::flag`): eight readers on two
/// runtimes at once make one record of her flag, whose uuid all of them then answer.
#[test]
fn runtimes_reading_a_patients_flags_at_once_make_one_record() {
    let cluster = Cluster::new(2);
    let type_uuid = identifier_type();
    let source = http(
        cluster.port(0),
        "GET",
        &format!("{REST}/idgen/identifiersource"),
        None,
        Auth::Basic,
    )
    .unwrap()
    .body["results"][0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    for round in 0..5 {
        let id = generated(cluster.port(0), &source);
        // Three years old: the content's "under five" flag holds.
        let mut body: serde_json::Value =
            serde_json::from_str(&patient_body(&format!("Enfant{round}"), &id, &type_uuid))
                .unwrap();
        let born = (chrono::Utc::now() - chrono::Duration::days(3 * 365))
            .format("%Y-%m-%d")
            .to_string();
        body["person"]["birthdate"] = serde_json::json!(born);
        let a = post_patient(cluster.port(0), &body.to_string()).unwrap();
        assert_eq!(a.status, 201, "{:?}", a.body);
        let patient = a.body["uuid"].as_str().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let together = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for t in 0..8 {
                let (port, patient, seen, together) =
                    (cluster.port(t), &patient, seen.clone(), &together);
                s.spawn(move || {
                    together.wait();
                    let a = http(
                        port,
                        "GET",
                        &format!("{REST}/patientflags/patientflag?patient={patient}"),
                        None,
                        Auth::Basic,
                    )
                    .unwrap();
                    assert_eq!(a.status, 200, "{:?}", a.body);
                    let uuids: Vec<String> = a.body["results"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r["uuid"].as_str().unwrap().to_string())
                        .collect();
                    seen.lock().unwrap().push(uuids);
                });
            }
        });
        let seen = seen.lock().unwrap().clone();
        assert!(
            seen.iter().all(|u| u.len() == 1 && u == &seen[0]),
            "round {round}: {seen:?}"
        );
    }
}
