//! The real binary over TCP: crash safety under concurrent writes, SIGTERM, and the
//! refusal to start without an administrator password.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PASSWORD: &str = "Process-pass-1";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(data: &std::path::Path, port: u16) -> Child {
    Command::new(env!("CARGO_BIN_EXE_runtime"))
        .env("EMR_DATA_DIR", data)
        .env("EMR_LISTEN", format!("127.0.0.1:{port}"))
        .env("EMR_ADMIN_PASSWORD", PASSWORD)
        .env("EMR_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// A minimal HTTP/1.1 exchange (one request per connection).
fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> Option<(u16, String)> {
    use base64::Engine;
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let status = out.split_whitespace().nth(1)?.parse().ok()?;
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}

fn wait_ready(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some((200, _)) = http(port, "GET", "/openmrs/health/started", None) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the runtime did not become ready");
}

fn patient_json(i: usize, id: &str, type_uuid: &str) -> String {
    serde_json::json!({
        "person": {"names": [{"givenName": format!("Crash{i}"), "familyName": "Test"}], "gender": "M", "birthdate": "1980-01-01"},
        "identifiers": [{"identifier": id, "identifierType": type_uuid, "preferred": true}]
    })
    .to_string()
}

#[test]
fn every_acknowledged_patient_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = spawn(dir.path(), port);
    wait_ready(port);
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let type_uuid = catalog
        .identifier_type("Numéro patient DSE")
        .unwrap()
        .uuid
        .clone();
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut clients = Vec::new();
    for t in 0..32 {
        let (ack, stop, type_uuid) = (acknowledged.clone(), stop.clone(), type_uuid.clone());
        clients.push(std::thread::spawn(move || {
            for n in 0..200 {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let i = t * 1000 + n;
                let id = common_id(i);
                if let Some((201, body)) = http(
                    port,
                    "POST",
                    "/openmrs/ws/rest/v1/patient",
                    Some(&patient_json(i, &id, &type_uuid)),
                ) {
                    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                    ack.lock()
                        .unwrap()
                        .push((v["uuid"].as_str().unwrap().to_string(), id));
                }
            }
        }));
    }
    // Let writes flow, then kill without warning.
    let deadline = Instant::now() + Duration::from_secs(20);
    while acknowledged.lock().unwrap().len() < 100 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() >= 100,
        "only {} creations were acknowledged",
        acknowledged.len()
    );

    let port = free_port();
    let mut child = spawn(dir.path(), port);
    wait_ready(port);
    for (uuid, id) in &acknowledged {
        let (status, body) = http(
            port,
            "GET",
            &format!("/openmrs/ws/rest/v1/patient/{uuid}?v=full"),
            None,
        )
        .unwrap();
        assert_eq!(
            status, 200,
            "acknowledged patient {uuid} is missing after the crash"
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["identifiers"][0]["identifier"], id.as_str());
        assert_eq!(v["person"]["names"][0]["familyName"], "Test");
    }
    terminate(&mut child);
}

fn common_id(i: usize) -> String {
    runtime::identifiers::with_check(
        &format!("{}", 300000 + i),
        Some("org.openmrs.module.idgen.validator.LuhnMod30IdentifierValidator"),
    )
    .unwrap()
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the runtime did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_backup_taken_during_writes_restores_every_change_acknowledged_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = spawn(dir.path(), port);
    wait_ready(port);
    let catalog =
        runtime::catalog::Catalog::from_bytes(runtime::embedded::EMBEDDED_BUNDLE).unwrap();
    let type_uuid = catalog
        .identifier_type("Numéro patient DSE")
        .unwrap()
        .uuid
        .clone();
    assert_eq!(
        http(
            port,
            "POST",
            "/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout",
            Some(r#"{"value":"7"}"#)
        )
        .unwrap()
        .0,
        200
    );

    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (ack, stop, type_uuid) = (acknowledged.clone(), stop.clone(), type_uuid.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < 500 {
                    let i = 50_000 + t * 1000 + n;
                    n += 1;
                    if let Some((201, body)) = http(
                        port,
                        "POST",
                        "/openmrs/ws/rest/v1/patient",
                        Some(&patient_json(i, &common_id(i), &type_uuid)),
                    ) {
                        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                        ack.lock()
                            .unwrap()
                            .push(v["uuid"].as_str().unwrap().to_string());
                    }
                }
            })
        })
        .collect();
    while acknowledged.lock().unwrap().len() < 40 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before_backup = acknowledged.lock().unwrap().clone();
    let (status, backup) = http(port, "GET", "/openmrs/ws/rest/v1/backup", None).unwrap();
    assert_eq!(status, 200);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    terminate(&mut child);
    let backup_body = dechunk(&backup);
    assert!(
        backup_body.lines().last().unwrap().contains("\"end\":true"),
        "the backup ends with its end line"
    );

    // Wipe, restore into the empty directory, start again.
    std::fs::remove_dir_all(dir.path()).unwrap();
    std::fs::create_dir_all(dir.path()).unwrap();
    let file = dir.path().join("backup.ndjson");
    std::fs::write(&file, &backup_body).unwrap();
    let restored = Command::new(env!("CARGO_BIN_EXE_runtime"))
        .arg("restore")
        .arg(&file)
        .env("EMR_DATA_DIR", dir.path().join("data"))
        .output()
        .unwrap();
    assert!(
        restored.status.success(),
        "{}",
        String::from_utf8_lossy(&restored.stdout)
    );
    // Restoring twice is refused: the directory is not empty any more.
    let again = Command::new(env!("CARGO_BIN_EXE_runtime"))
        .arg("restore")
        .arg(&file)
        .env("EMR_DATA_DIR", dir.path().join("data"))
        .output()
        .unwrap();
    assert!(!again.status.success());

    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runtime"))
        .env("EMR_DATA_DIR", dir.path().join("data"))
        .env("EMR_LISTEN", format!("127.0.0.1:{port}"))
        .env_remove("EMR_ADMIN_PASSWORD")
        .env("EMR_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port);
    for uuid in &before_backup {
        assert_eq!(
            http(
                port,
                "GET",
                &format!("/openmrs/ws/rest/v1/patient/{uuid}"),
                None
            )
            .unwrap()
            .0,
            200,
            "patient {uuid} was acknowledged before the backup"
        );
    }
    let (_, setting) = http(
        port,
        "GET",
        "/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout?v=custom:(value)",
        None,
    )
    .unwrap();
    assert!(dechunk(&setting).contains("\"7\""), "{setting}");
    terminate(&mut child);
}

/// Removes HTTP/1.1 chunked framing, if any.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    loop {
        let Some((size, after)) = rest.split_once("\r\n") else {
            return body.to_string();
        };
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            return body.to_string();
        };
        if n == 0 {
            return out;
        }
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
}

#[test]
fn sigterm_stops_the_server_cleanly_and_the_log_has_a_line_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log_path = dir.path().join("runtime.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runtime"))
        .env("EMR_DATA_DIR", dir.path().join("data"))
        .env("EMR_LISTEN", format!("127.0.0.1:{port}"))
        .env("EMR_ADMIN_PASSWORD", PASSWORD)
        .env("EMR_LOG", "info")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    wait_ready(port);
    assert_eq!(
        http(port, "GET", "/openmrs/login.htm", None).unwrap().0,
        200
    );
    // Through the gateway: its request id names the line.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(
        b"GET /openmrs/ws/rest/v1/systemsetting HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: gw-7f3a\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(terminate(&mut child).success());
    let text = std::fs::read_to_string(&log_path).unwrap();
    let ready = text
        .lines()
        .find(|l| l.contains("ready"))
        .unwrap_or_default();
    for field in ["bundle=", "build_type=", "entities=", "ready_ms="] {
        assert!(ready.contains(field), "start-up line lacks {field}: {text}");
    }
    let request = text
        .lines()
        .find(|l| l.contains("path=/openmrs/login.htm") && l.contains("status=200"))
        .unwrap_or_else(|| panic!("no line for the request: {text}"));
    assert!(request.contains("id=local-"), "{request}");
    assert!(
        text.lines()
            .any(|l| l.contains("id=gw-7f3a") && l.contains("status=401")),
        "no line with the gateway's request id: {text}"
    );
    assert!(text.lines().any(|l| l.contains("stopped")), "{text}");
}

#[test]
fn refuses_to_start_without_an_administrator_password_and_leaves_no_store_behind() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_runtime"))
        .env("EMR_DATA_DIR", &dir)
        .env("EMR_LISTEN", "127.0.0.1:0")
        .env_remove("EMR_ADMIN_PASSWORD")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("EMR_ADMIN_PASSWORD"), "{text}");
    // The refused start left the data directory as it found it: not even created.
    assert!(!dir.exists(), "a refused start created {}", dir.display());
}

#[test]
fn the_backup_command_keeps_complete_backups_and_the_healthcheck_follows_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let health = |port: u16| {
        Command::new(env!("CARGO_BIN_EXE_runtime"))
            .arg("healthcheck")
            .env("EMR_LISTEN", format!("127.0.0.1:{port}"))
            .env("EMR_LOG", "off")
            .status()
            .unwrap()
            .success()
    };
    assert!(!health(port), "nothing listens yet");
    let mut child = spawn(&dir.path().join("data"), port);
    wait_ready(port);
    assert!(health(port));
    let backups = dir.path().join("backups");
    for _ in 0..3 {
        let out = Command::new(env!("CARGO_BIN_EXE_runtime"))
            .arg("backup")
            .env(
                "EMR_BACKUP_URL",
                format!("http://127.0.0.1:{port}/openmrs/ws/rest/v1/backup"),
            )
            .env("EMR_BACKUP_PASSWORD", PASSWORD)
            .env("EMR_BACKUP_DIR", &backups)
            .env("EMR_BACKUP_KEEP", "2")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let files: Vec<_> = std::fs::read_dir(&backups)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().all(|f| f.extension().unwrap() == "ndjson"));
    // A wrong password keeps nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_runtime"))
        .arg("backup")
        .env(
            "EMR_BACKUP_URL",
            format!("http://127.0.0.1:{port}/openmrs/ws/rest/v1/backup"),
        )
        .env("EMR_BACKUP_PASSWORD", "wrong-password")
        .env("EMR_BACKUP_DIR", &backups)
        .output()
        .unwrap();
    assert!(!out.status.success());
    terminate(&mut child);
    assert!(!health(port));
}

#[test]
fn sigterm_lets_a_request_in_flight_finish_and_keeps_its_write() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = spawn(dir.path(), port);
    wait_ready(port);
    // A request whose body is still to come when the signal arrives. `Expect:
    // 100-continue` makes the server say when the handler starts reading it, so the request
    // is known to be in flight (a connection whose request was not read yet is idle, and
    // closing idle connections is what a graceful shutdown should do).
    let body = r#"{"value":"11"}"#;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST /openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.flush().unwrap();
    let mut interim = Vec::new();
    let mut byte = [0u8; 1];
    while !interim.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        interim.push(byte[0]);
    }
    let interim = String::from_utf8_lossy(&interim).to_string();
    assert!(interim.starts_with("HTTP/1.1 100"), "{interim}");
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    // Shutdown has begun once new connections are refused.
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "the listener stayed open after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    s.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the runtime did not stop after draining"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());

    let mut child = spawn(dir.path(), port);
    wait_ready(port);
    let (code, setting) = http(
        port,
        "GET",
        "/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout?v=custom:(value)",
        None,
    )
    .unwrap();
    assert_eq!(code, 200);
    assert!(dechunk(&setting).contains(r#""value":"11""#), "{setting}");
    terminate(&mut child);
}

/// A closed store file with an administrator and `n` patients, written in this process.
fn store_with_patients(path: &std::path::Path, n: usize) {
    let store = runtime::store::Store::open(path, &runtime::domains::REGISTRY).unwrap();
    runtime::auth::ensure_admin(&store, "admin", Some(PASSWORD)).unwrap();
    for i in 0..n {
        let p: runtime::store::PatientRecord = serde_json::from_value(serde_json::json!({
            "v": 1, "uuid": format!("p{i}"), "gender": "M", "birthdate": "1980-05-05",
            "birthdate_estimated": false, "dead": false, "death_date": null,
            "cause_of_death": null,
            "names": [{"uuid": format!("n{i}"), "given_name": format!("Jean{i}"),
                "middle_name": null, "family_name": "Mukendi", "family_name2": null,
                "prefix": null, "degree": null, "preferred": true}],
            "identifiers": [], "addresses": [], "attributes": [], "voided": false,
            "date_created": "2026-11-23T08:00:00.000Z", "creator": "admin"
        }))
        .unwrap();
        store.insert_patient(&p, &[]).unwrap();
    }
}

/// Runs the binary to its end; one that is still running after a minute (a server that
/// started when it should not have) is killed and fails the test.
fn run(args: &[&str], data: &std::path::Path) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runtime"))
        .args(args)
        .env("EMR_DATA_DIR", data)
        .env("EMR_LISTEN", "127.0.0.1:0")
        .env("EMR_ADMIN_PASSWORD", PASSWORD)
        .env("EMR_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "runtime {args:?} did not stop: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status, text)
}

#[test]
fn a_damaged_store_file_stops_the_service_with_a_message_naming_it_and_the_restore_command() {
    // A 0-byte store file is not a fresh start: refused, and left as it is.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    std::fs::write(&path, b"").unwrap();
    let (status, text) = run(&[], dir.path());
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(text.contains("damaged") && text.contains("empty"), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("runtime restore"), "{text}");
    assert!(!text.contains("admin_created=true"), "{text}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);

    // A zeroed page the start-up reads: the service stops with the same message (exit 1,
    // not a panic's 101), and `check-store` reports the damage.
    std::fs::remove_file(&path).unwrap();
    store_with_patients(&path, 300);
    let (status, text) = run(&["check-store"], dir.path());
    assert!(status.success(), "{text}");
    assert!(text.contains("0 problem(s)"), "{text}");
    let pristine = std::fs::read(&path).unwrap();
    // Find, in this process, pages whose damage the start-up meets (redb panics on some in
    // debug builds, returns an error on others; unused pages go unnoticed).
    let damaged_at = |page: usize| {
        let mut d = pristine.clone();
        d[page * 4096..(page + 1) * 4096].fill(0);
        d
    };
    let probe = dir.path().join("probe.redb");
    let fatal: Vec<usize> = (1..pristine.len() / 4096)
        .filter(|&page| {
            std::fs::write(&probe, damaged_at(page)).unwrap();
            runtime::store::medium::catch_panic(|| {
                runtime::store::Store::open(&probe, &runtime::domains::REGISTRY)
                    .and_then(|s| s.patients())
            })
            .map_or(true, |r| r.is_err())
        })
        .take(3)
        .collect();
    assert!(!fatal.is_empty(), "no zeroed page is met at start-up");
    for page in fatal {
        std::fs::write(&path, damaged_at(page)).unwrap();
        let (status, text) = run(&[], dir.path());
        assert_eq!(status.code(), Some(1), "page {page}: {text}");
        assert!(text.contains("damaged"), "page {page}: {text}");
        assert!(text.contains("runtime restore"), "page {page}: {text}");
        let (status, text) = run(&["check-store"], dir.path());
        assert_eq!(status.code(), Some(1), "page {page}: {text}");
    }
}

#[test]
fn restore_refuses_an_altered_backup_naming_the_line_and_writes_nothing() {
    let source = tempfile::tempdir().unwrap();
    store_with_patients(&source.path().join("store.redb"), 5);
    let store = runtime::store::Store::open(
        &source.path().join("store.redb"),
        &runtime::domains::REGISTRY,
    )
    .unwrap();
    let mut backup = Vec::new();
    store.snapshot(&mut backup).unwrap();
    drop(store);
    let backup = String::from_utf8(backup).unwrap();
    let lines: Vec<&str> = backup.lines().collect();
    let patient_line = lines.iter().position(|l| l.contains("Jean3")).unwrap();

    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let file = work.path().join("backup.ndjson");
    let mut altered: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    // A record replaced by a value that is not a patient: named by its line.
    altered[patient_line] = r#"{"t":"patients","k":"p3","v":42}"#.into();
    std::fs::write(&file, altered.join("\n") + "\n").unwrap();
    let (status, text) = run(&["restore", file.to_str().unwrap()], &data);
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("line {}", patient_line + 1)),
        "{text}"
    );
    assert!(
        !data.exists(),
        "a refused restore touched the data directory"
    );

    // An edited name decodes, but the checksum catches it.
    altered[patient_line] = lines[patient_line].replace("Jean3", "Jeanne3");
    std::fs::write(&file, altered.join("\n") + "\n").unwrap();
    let (status, text) = run(&["restore", file.to_str().unwrap()], &data);
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(text.contains("checksum"), "{text}");
    assert!(!data.exists());

    // The intact backup restores, with every patient.
    std::fs::write(&file, &backup).unwrap();
    let (status, text) = run(&["restore", file.to_str().unwrap()], &data);
    assert!(status.success(), "{text}");
    let restored =
        runtime::store::Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    assert_eq!(restored.patients().unwrap().len(), 5);
}

/// Whether the server has closed `s` (its end read as EOF), without waiting.
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    let closed = matches!(s.read(&mut buf), Ok(0));
    s.set_nonblocking(false).unwrap();
    closed
}

/// The runtime started with connection limits, killed if the test fails.
struct Limited(Child);

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn limited(data: &std::path::Path, port: u16, max: &str, timeout: &str) -> Limited {
    let child = Command::new(env!("CARGO_BIN_EXE_runtime"))
        .env("EMR_DATA_DIR", data)
        .env("EMR_LISTEN", format!("127.0.0.1:{port}"))
        .env("EMR_ADMIN_PASSWORD", PASSWORD)
        .env("EMR_LOG", "warn")
        .env("EMR_MAX_CONNECTIONS", max)
        .env("EMR_HEADER_TIMEOUT_SECS", timeout)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port);
    Limited(child)
}

#[test]
fn silent_and_idle_connections_are_closed_and_the_cap_holds_the_others_back() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = limited(dir.path(), port, "2", "1");
    // A client that says nothing and one that stops in the middle of its headers take both
    // places.
    let mut silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut trickling = TcpStream::connect(("127.0.0.1", port)).unwrap();
    trickling
        .write_all(b"GET /openmrs/health/alive HTTP/1.1\r\nHo")
        .unwrap();
    // A third client is served once a place is free: by then the server has closed one of
    // them for not sending its headers in time.
    let (status, _) = http(port, "GET", "/openmrs/health/alive", None).expect("served");
    assert_eq!(status, 200);
    assert!(
        closed_by_server(&mut silent) || closed_by_server(&mut trickling),
        "the third connection was served while both places were held"
    );
    // Both are closed in the end, each with EOF (no answer).
    for s in [&mut silent, &mut trickling] {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        assert!(
            rest.is_empty() || rest.starts_with(b"HTTP/1.1 408"),
            "{:?}",
            String::from_utf8_lossy(&rest)
        );
    }

    // A kept-alive connection that goes quiet after its answer is closed too.
    let mut idle = TcpStream::connect(("127.0.0.1", port)).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    idle.write_all(b"GET /openmrs/health/alive HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    idle.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(
        answer.matches("HTTP/1.1").count(),
        1,
        "one answer, then the close: {answer}"
    );

    // A body that stops arriving is answered 408 (after twice the header timeout).
    let mut stalled = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stalled
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stalled
        .write_all(b"POST /openmrs/ws/rest/v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\"")
        .unwrap();
    let mut answer = [0u8; 12];
    stalled.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 408");
    assert!(terminate(&mut server.0).success());
}

#[test]
fn a_client_that_stops_reading_its_answers_loses_its_place() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // One place; a write that makes no progress for 2 s (twice the header timeout) ends it.
    let mut server = limited(dir.path(), port, "1", "1");
    let mut login = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
    login
        .write_all(format!("GET /openmrs/ws/rest/v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut answer = String::new();
    login.read_to_string(&mut answer).unwrap();
    let cookie = answer
        .lines()
        .find_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or(l.strip_prefix("Set-Cookie: "))
        })
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_string();

    // Far more answers than the sockets' buffers hold, asked at once and never read.
    const ASKED: usize = 100;
    let mut greedy = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let one = format!(
        "GET /openmrs/ws/rest/v1/concept?q=a&v=full HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n\r\n"
    );
    greedy.write_all(one.repeat(ASKED).as_bytes()).unwrap();

    // The next client is served once the server has given up on the one that stopped
    // reading (without the limit it would hold the only place for ever).
    let (status, _) = http(port, "GET", "/openmrs/health/alive", None).expect("served");
    assert_eq!(status, 200);
    greedy
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut received = Vec::new();
    let _ = greedy.read_to_end(&mut received);
    let answered = received
        .windows(12)
        .filter(|w| w == b"HTTP/1.1 200")
        .count();
    assert!(answered < ASKED, "every answer was written: {answered}");
    assert!(terminate(&mut server.0).success());
}

#[test]
fn a_shutdown_closes_idle_and_silent_connections_instead_of_waiting_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // Timeouts far longer than `terminate` waits: only the shutdown can close these.
    let mut server = limited(dir.path(), port, "8", "120");
    let _silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut idle = TcpStream::connect(("127.0.0.1", port)).unwrap();
    idle.write_all(b"GET /openmrs/health/alive HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut answer = [0u8; 12];
    idle.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");
    assert!(terminate(&mut server.0).success());
}

/// Reads one answer off a kept-alive connection: (head, body).
fn read_answer(s: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).ok()?;
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).ok()?;
    Some((head, body))
}

#[test]
fn a_request_body_the_answer_did_not_need_never_silently_drops_the_connection() {
    // A GET with a body (which no handler reads), and a write refused before its body was
    // read: either the connection stays usable for the next request, or the answer says
    // `Connection: close`; never a kept-alive connection dropped without a word.
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = limited(dir.path(), port, "100", "30");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
    let small = "{\"ignored\": \"x\"}".to_string();
    let large = small.repeat(4096);
    let signed_in = format!("Authorization: Basic {auth}\r\n");
    for (method, path, authorization, body) in [
        ("GET", "/openmrs/ws/rest/v1/session", &signed_in, &small),
        ("GET", "/openmrs/ws/rest/v1/session", &signed_in, &large),
        (
            "POST",
            "/openmrs/ws/rest/v1/patient",
            &String::new(),
            &small,
        ),
        (
            "POST",
            "/openmrs/ws/rest/v1/patient",
            &String::new(),
            &large,
        ),
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let first = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{authorization}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(first.as_bytes()).unwrap();
        let (head, _) = read_answer(&mut s).expect("the first answer");
        let said_close = head
            .lines()
            .any(|l| l.to_ascii_lowercase().replace(' ', "") == "connection:close");
        let second = format!(
            "GET /openmrs/ws/rest/v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\n\r\n"
        );
        let usable = s.write_all(second.as_bytes()).is_ok()
            && read_answer(&mut s).is_some_and(|(h, _)| h.starts_with("HTTP/1.1 200"));
        assert!(
            usable || said_close,
            "{method} {path}: the connection was dropped without `Connection: close`\n{head}"
        );
    }
    assert!(terminate(&mut server.0).success());
}
