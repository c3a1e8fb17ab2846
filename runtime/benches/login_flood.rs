//! A real login during a flood of wrong passwords (run with
//! `cargo bench -p runtime --bench login_flood`; figures go to docs/benchmarks.md).
//!
//! The runtime is started on loopback (so `X-Real-IP` is trusted, as from the gateway);
//! 64 connections send wrong passwords for unknown user names, each from an address of its
//! own, so that the per-address throttle does not stop them and every attempt costs an
//! argon2 verification: the case the password gate exists for. Meanwhile users who have not
//! logged in yet log in one after the other; each login's time is measured until it
//! succeeds (a 503 "busy" is retried after its `Retry-After`), next to the same logins on
//! an idle server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const PASSWORD: &str = "Bench-password-1";
const USER_PASSWORD: &str = "Flood-bench-2026";
const FLOOD_CONNECTIONS: usize = 64;
const LOGINS: usize = 10;

fn main() {
    if std::env::args().skip(1).any(|a| a != "--bench") {
        eprintln!("usage: cargo bench -p runtime --bench login_flood");
    }
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_runtime"));
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(exe)
        .env("EMR_DATA_DIR", dir.path())
        .env("EMR_LISTEN", format!("127.0.0.1:{port}"))
        .env("EMR_ADMIN_PASSWORD", PASSWORD)
        .env("EMR_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let began = Instant::now();
    while request(port, "GET", "/openmrs/health/started", None, None, None).0 != 200 {
        assert!(began.elapsed() < Duration::from_secs(30), "no answer");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Accounts that have never logged in.
    for i in 0..3 * LOGINS {
        let body = format!(
            r#"{{"username": "agent{i}", "password": "{USER_PASSWORD}", "person": {{"names": [{{"givenName": "Agent", "familyName": "N{i}"}}]}}}}"#
        );
        let (status, _) = request(
            port,
            "POST",
            "/openmrs/ws/rest/v1/user",
            Some(("admin", PASSWORD)),
            Some(&body),
            Some("127.0.0.1"),
        );
        assert_eq!(status, 201, "creating agent{i}");
    }

    let idle: Vec<(Duration, u32)> = (0..LOGINS)
        .map(|i| login(port, &format!("agent{i}")))
        .collect();

    // Two floods: from 64 machines (one address per connection, as clients behind the
    // gateway are), and the worst case of a fresh address for every attempt (which only a
    // trusted proxy could claim), where the password gate alone stands.
    let machines = flood(port, LOGINS, false);
    let spoofed = flood(port, 2 * LOGINS, true);
    let _ = child.kill();
    let _ = child.wait();

    println!(
        "first logins of {LOGINS} users, idle server: {}",
        summary(&idle)
    );
    for (name, (logins, rate, busy)) in [
        ("64 machines, one address each", machines),
        ("a new address for every attempt", spoofed),
    ] {
        println!(
            "first logins of {LOGINS} users during a {FLOOD_CONNECTIONS}-connection wrong-password flood from {name}: {}; the flood: {rate:.0} attempts/s, {busy:.0} % answered 503 busy",
            summary(&logins)
        );
    }
}

fn summary(v: &[(Duration, u32)]) -> String {
    let mut ms: Vec<f64> = v.iter().map(|(d, _)| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let retries: u32 = v.iter().map(|(_, r)| r).sum();
    format!(
        "median {:.0} ms, max {:.0} ms, {} retries after 503",
        ms[ms.len() / 2],
        ms[ms.len() - 1],
        retries
    )
}

/// Runs a flood while users `first..first + LOGINS` log in; returns their logins, the
/// flood's attempts per second and its share of 503 answers.
fn flood(port: u16, first: usize, fresh_address: bool) -> (Vec<(Duration, u32)>, f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let attempts = Arc::new(AtomicU64::new(0));
    let busy = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..FLOOD_CONNECTIONS)
        .map(|t| {
            let (stop, attempts, busy) = (stop.clone(), attempts.clone(), busy.clone());
            std::thread::spawn(move || {
                let mut n = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let ip = if fresh_address {
                        format!("10.{}.{}.{}", t, (n >> 8) & 255, n & 255)
                    } else {
                        format!("172.20.{}.{}", u8::from(first > LOGINS), t)
                    };
                    let (status, _) = request(
                        port,
                        "GET",
                        "/openmrs/ws/rest/v1/session",
                        Some((&format!("intruder{t}x{n}"), "wrong-password")),
                        None,
                        Some(&ip),
                    );
                    attempts.fetch_add(1, Ordering::Relaxed);
                    if status == 503 {
                        busy.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2)); // the flood reaches its pace
    let began = Instant::now();
    let before = attempts.load(Ordering::Relaxed);
    let logins: Vec<(Duration, u32)> = (first..first + LOGINS)
        .map(|i| login(port, &format!("agent{i}")))
        .collect();
    let rate = (attempts.load(Ordering::Relaxed) - before) as f64 / began.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let busy = 100.0 * busy.load(Ordering::Relaxed) as f64
        / attempts.load(Ordering::Relaxed).max(1) as f64;
    (logins, rate, busy)
}

/// Logs a user in until it succeeds; returns the time taken and the 503s met on the way.
fn login(port: u16, user: &str) -> (Duration, u32) {
    let began = Instant::now();
    let mut retries = 0;
    loop {
        let (status, body) = request(
            port,
            "GET",
            "/openmrs/ws/rest/v1/session",
            Some((user, USER_PASSWORD)),
            None,
            Some("192.168.50.50"),
        );
        if status == 200 {
            assert!(body.contains("\"authenticated\":true"), "{user}: {body}");
            return (began.elapsed(), retries);
        }
        assert_eq!(status, 503, "{user}: {body}");
        retries += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One HTTP/1.1 request on its own connection: the status and the body.
fn request(
    port: u16,
    method: &str,
    path: &str,
    basic: Option<(&str, &str)>,
    body: Option<&str>,
    real_ip: Option<&str>,
) -> (u16, String) {
    use base64::Engine;
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, String::new());
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n");
    if let Some((u, p)) = basic {
        let b = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        head.push_str(&format!("Authorization: Basic {b}\r\n"));
    }
    if let Some(ip) = real_ip {
        head.push_str(&format!("X-Real-IP: {ip}\r\n"));
    }
    let body = body.unwrap_or("");
    if !body.is_empty() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    if s.write_all(head.as_bytes()).is_err() || s.write_all(body.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}
