//! What the runtime's benchmarks share: starting the binary, reading its memory, driving
//! `wrk`, reading keep-alive answers, and generating patients straight into a store.
#![allow(dead_code)] // each benchmark uses its own part

pub mod clinic;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const PASSWORD: &str = "Bench-password-1";
pub const PATIENTS: usize = 100_000;
pub const MOD30: &str = "org.openmrs.module.idgen.validator.LuhnMod30IdentifierValidator";

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn spawn(exe: &std::path::Path, hello_mode: bool, data: &std::path::Path, port: u16) -> Child {
    spawn_with(exe, hello_mode, data, port, &[])
}

/// `spawn` with more of the environment.
pub fn spawn_with(
    exe: &std::path::Path,
    hello_mode: bool,
    data: &std::path::Path,
    port: u16,
    env: &[(&str, String)],
) -> Child {
    let mut c = Command::new(exe);
    c.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    if hello_mode {
        c.env("BENCH_MODE", "hello");
    }
    c.env("EMR_DATA_DIR", data)
        .env("EMR_LISTEN", format!("127.0.0.1:{port}"))
        .env("EMR_ADMIN_PASSWORD", PASSWORD)
        .env("EMR_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

pub fn get_status(port: u16, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .ok()?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).ok()?;
    std::str::from_utf8(&buf[..n])
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Time from exec to the first 200 on health/started.
// The child is handed back to the caller, which stops and reaps it (`stop`).
#[allow(clippy::zombie_processes)]
pub fn cold_start(
    exe: &std::path::Path,
    hello_mode: bool,
    data: &std::path::Path,
) -> (Duration, Child, u16) {
    let port = free_port();
    let t = Instant::now();
    let mut child = spawn(exe, hello_mode, data, port);
    loop {
        if get_status(port, "/openmrs/health/started") == Some(200) {
            return (t.elapsed(), child, port);
        }
        if t.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no answer on health/started after 30 s");
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Stops the runtime as a service manager does (SIGTERM: it closes the store cleanly),
/// killing it only if it has not stopped after 10 s.
pub fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The process's peak resident memory (`VmHWM`) since it started or since its high-water
/// mark was reset (`/proc/<pid>/clear_refs`).
pub fn peak_rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmHWM:")
}

pub fn rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmRSS:")
}

/// One of `/proc/<pid>/status`'s figures in kB (0 if the process is gone).
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Runs wrk for `seconds`; returns (requests per second, p50, p99) as wrk prints them.
pub fn wrk(url: &str, auth: bool, seconds: u32) -> (f64, String, String) {
    wrk_with(url, auth, seconds, None)
}

/// wrk's connections: 32, or `WRK_CONNECTIONS` (to see latency below saturation).
pub fn wrk_connections() -> u32 {
    std::env::var("WRK_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

/// Runs wrk for `seconds` with a Lua script choosing each request's path (when given);
/// returns (requests per second, p50, p99) as wrk prints them.
pub fn wrk_with(
    url: &str,
    auth: bool,
    seconds: u32,
    script: Option<&std::path::Path>,
) -> (f64, String, String) {
    use base64::Engine;
    let mut c = Command::new("wrk");
    c.args([
        "-t2",
        &format!("-c{}", wrk_connections()),
        &format!("-d{seconds}s"),
        "--latency",
    ]);
    if let Some(script) = script {
        c.arg("-s").arg(script);
    }
    if auth {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
        c.args(["-H", &format!("Authorization: Basic {basic}")]);
    }
    let out = c
        .arg(url)
        .output()
        .expect("wrk is installed (apt-get install wrk)");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let rps = text
        .lines()
        .find(|l| l.starts_with("Requests/sec:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0.0);
    let pct = |p: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(p))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("?")
            .to_string()
    };
    if text.contains("Non-2xx") {
        eprintln!("warning: wrk saw non-2xx answers for {url}:\n{text}");
    }
    (rps, pct("50%"), pct("99%"))
}

pub const GIVEN: &[&str] = &[
    "Marie",
    "Jean",
    "Grâce",
    "Patrick",
    "Hélène",
    "Joseph",
    "Esther",
    "Pierre",
    "Ruth",
    "Daniel",
    "Sarah",
    "Emmanuel",
    "Béatrice",
    "Paul",
    "Odette",
    "Christian",
    "Chantal",
    "Didier",
    "Mireille",
    "Fabrice",
];
pub const FAMILY: &[&str] = &[
    "Mbuyi",
    "Kabila",
    "Tshisekedi",
    "Ilunga",
    "Mukendi",
    "Kalala",
    "Ngalula",
    "Lukusa",
    "Nsimba",
    "Kabeya",
    "Mwamba",
    "Kasongo",
    "Banza",
    "Mutombo",
    "Kapinga",
    "Lumbala",
    "Ngoy",
    "Kazadi",
    "Mbala",
    "Tshibangu",
];

/// Writes 100,000 patients into a fresh store in a few transactions; answers their uuids.
/// The identifier `seed` gives its `i`th patient.
pub fn seeded_identifier(i: usize) -> String {
    runtime::identifiers::with_check(&format!("{}", 1_000_000 + i), Some(MOD30)).unwrap()
}

/// The given and family names `seed` gives its `i`th patient.
pub fn seeded_name(i: usize) -> (&'static str, String) {
    (
        GIVEN[i % GIVEN.len()],
        format!(
            "{}{}",
            FAMILY[(i / GIVEN.len()) % FAMILY.len()],
            if i.is_multiple_of(7) { "-Nkulu" } else { "" }
        ),
    )
}

pub fn seed(data: &std::path::Path, type_uuid: &str) -> Vec<String> {
    use runtime::store::*;
    std::fs::create_dir_all(data).unwrap();
    let store = Store::open(&data.join("store.redb"), &runtime::domains::REGISTRY).unwrap();
    let mut batch = Vec::with_capacity(10_000);
    let mut uuids = Vec::with_capacity(PATIENTS);
    for i in 0..PATIENTS {
        let id = seeded_identifier(i);
        let p = PatientRecord {
            v: 1,
            uuid: uuid::Uuid::now_v7().to_string(),
            gender: if i % 2 == 0 { "F".into() } else { "M".into() },
            birthdate: Some(format!(
                "{}-{:02}-{:02}",
                1940 + i % 80,
                1 + i % 12,
                1 + i % 28
            )),
            birthdate_estimated: false,
            // Coprime with the name cycles, so every name pair has living patients.
            dead: i % 53 == 0,
            death_date: None,
            cause_of_death: None,
            cause_of_death_non_coded: None,
            names: vec![NameRecord {
                uuid: uuid::Uuid::new_v4().to_string(),
                given_name: Some(seeded_name(i).0.into()),
                middle_name: None,
                family_name: Some(seeded_name(i).1),
                family_name2: None,
                prefix: None,
                degree: None,
                preferred: true,
            }],
            identifiers: vec![IdentifierRecord {
                uuid: uuid::Uuid::new_v4().to_string(),
                identifier: id.clone(),
                identifier_type: type_uuid.into(),
                location: None,
                preferred: true,
            }],
            addresses: vec![],
            attributes: vec![],
            voided: false,
            date_created: "2026-01-01T00:00:00Z".into(),
            creator: String::new(),
            changed: None,
            voiding: None,
        };
        uuids.push(p.uuid.clone());
        batch.push((p, vec![(format!("{type_uuid}||{id}"), id)]));
        if batch.len() == 10_000 {
            store.import_patients(&batch).unwrap();
            batch.clear();
        }
    }
    store.import_patients(&batch).unwrap();
    uuids
}

/// Reads one keep-alive HTTP response; returns its status.
pub fn read_response(s: &mut TcpStream) -> u16 {
    read_whole_response(s).0
}

/// A response's status, head (status line and headers) and body.
pub fn read_whole_response(s: &mut TcpStream) -> (u16, String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
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
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (status, head, body)
}

/// A memory cgroup holding one runtime, so that the pages of its store it reads are charged
/// to it and the kernel keeps at most `limit` of them (with the process's own memory): a
/// server whose data is larger than its memory, on a machine that has plenty. Needs root
/// (cgroup v1's memory controller, or v2 with `memory` enabled for children); `None` where
/// it cannot be made.
pub struct MemoryCage {
    dir: std::path::PathBuf,
    limit_file: &'static str,
}

impl MemoryCage {
    pub fn new(limit_bytes: u64) -> Option<MemoryCage> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let (dir, limit_file) = own.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let path = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "memory") {
                Some((
                    std::path::Path::new("/sys/fs/cgroup/memory").join(path),
                    "memory.limit_in_bytes",
                ))
            } else if controllers.is_empty() {
                Some((
                    std::path::Path::new("/sys/fs/cgroup").join(path),
                    "memory.max",
                ))
            } else {
                None
            }
        })?;
        let dir = dir.join(format!("emr-bench-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let cage = MemoryCage { dir, limit_file };
        std::fs::write(cage.dir.join(limit_file), limit_bytes.to_string()).ok()?;
        Some(cage)
    }

    /// Moves a process (with all its threads) into the cage.
    pub fn admit(&self, pid: u32) -> bool {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).is_ok()
    }

    /// The memory charged to the cage now (the process's and the pages it keeps cached).
    pub fn usage_bytes(&self) -> u64 {
        let file = if self.limit_file == "memory.max" {
            "memory.current"
        } else {
            "memory.usage_in_bytes"
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for MemoryCage {
    fn drop(&mut self) {
        // Empty once its process has ended.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Asks the kernel to drop the file's cached pages (clean ones go at once), so the next
/// reads of it come from the disk; allowed without root.
pub fn evict_from_page_cache(file: &std::path::Path) -> bool {
    std::fs::File::open(file)
        .and_then(|f| {
            rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
                .map_err(std::io::Error::from)
        })
        .is_ok()
}
