//! The `compiler` binary: exit codes, output formats, baselines, selection and the
//! build/inspect round trip.

use crate::fixture::materialize;
use std::process::{Command, Output};

const A: &str = "3f1c2b7e-9a4d-4c1e-8b2f-6d5e4c3b2a10";

fn compiler(root: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_compiler"))
        .args(args)
        .arg("--root")
        .arg(root)
        .env_remove("BUILD_TYPE")
        .env_remove("MVN_PROJECT")
        .output()
        .expect("run compiler")
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

fn clean() -> String {
    format!("//- openmrs_config/visittypes/v.csv\nUuid,Name\n{A},Outpatient\n")
}

fn broken() -> String {
    format!("//- openmrs_config/locations/l.csv\nUuid,Name,Parent\n{A},Ward,Nowhere\n")
}

fn warning_only() -> String {
    format!("//- openmrs_config/visittypes/v.csv\nUuid,Name,Notes\n{A},Outpatient,x\n")
}

#[test]
fn exit_status_follows_errors_and_deny_warnings() {
    let ok = materialize(&clean());
    let out = compiler(ok.root(), &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("distro: 0 errors, 0 warnings"));

    let bad = materialize(&broken());
    let out = compiler(bad.root(), &["check"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("ERROR: Invalid parent location 'Nowhere' for location 'Ward'\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--> openmrs_config/locations/l.csv:2:43"),
        "{stderr}"
    );
    assert!(stderr.contains("distro: 1 error, 0 warnings"), "{stderr}");

    let warn = materialize(&warning_only());
    assert_eq!(compiler(warn.root(), &["check"]).status.code(), Some(0));
    assert_eq!(
        compiler(warn.root(), &["check", "--deny-warnings"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn json_and_github_formats() {
    let bad = materialize(&broken());
    let out = compiler(bad.root(), &["check", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let d = &json[0];
    assert_eq!(d["severity"], "error");
    assert_eq!(d["code"], "E0204");
    assert_eq!(d["name"], "invalid-parent");
    assert_eq!(d["path"], "openmrs_config/locations/l.csv");
    assert_eq!(d["line"], 2);
    assert_eq!(d["column"], 43);

    let out = compiler(bad.root(), &["check", "--format", "github"]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("::error file=openmrs_config/locations/l.csv,line=2,col=43,title=E0204 invalid-parent::Invalid parent location"),
        "{stdout}"
    );
}

#[test]
fn a_baseline_accepts_known_problems_and_reports_fixed_ones() {
    let bad = materialize(&broken());
    let baseline = bad.root().join("known.json");
    let out = compiler(
        bad.root(),
        &["check", "--write-baseline", baseline.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = compiler(
        bad.root(),
        &["check", "--baseline", baseline.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("1 accepted by the baseline"));

    // A new problem still fails.
    crate::fixture::write(
        bad.root(),
        "openmrs_config/roles/r.csv",
        b"Uuid,Description\n",
    );
    let out = compiler(
        bad.root(),
        &["check", "--baseline", baseline.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("Column 'Role name' is required but missing"));

    // Fixing the known problem turns its entry stale (a warning); the root file is found alone.
    std::fs::rename(&baseline, bad.root().join("validator-baseline.json")).unwrap();
    std::fs::remove_file(bad.root().join("openmrs_config/roles/r.csv")).unwrap();
    crate::fixture::write(
        bad.root(),
        "openmrs_config/locations/l.csv",
        format!("Uuid,Name\n{A},Ward\n").as_bytes(),
    );
    let out = compiler(bad.root(), &["check"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("W0011"), "{}", text(&out.stderr));
}

#[test]
fn selection_comes_from_flags_then_environment() {
    let p = materialize(&format!(
        "{}//- sites/north/openmrs_config/visittypes/n.csv\nUuid,Name\n8a6e3c1d-2b4f-4e5a-9c7d-1e2f3a4b5c6d,Day hospital\n",
        clean()
    ));
    let run_env = |envs: &[(&str, &str)], args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_compiler"));
        c.arg("check")
            .args(args)
            .arg("--root")
            .arg(p.root())
            .env_remove("BUILD_TYPE")
            .env_remove("MVN_PROJECT");
        for (k, v) in envs {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let out = run_env(&[("BUILD_TYPE", "site"), ("MVN_PROJECT", "north")], &[]);
    assert!(
        text(&out.stderr).contains("site north: 0 errors"),
        "{}",
        text(&out.stderr)
    );
    let out = run_env(&[("BUILD_TYPE", "site"), ("MVN_PROJECT", "south")], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("Unknown site 'south'")
            && text(&out.stderr).contains("sites that exist: north")
    );
    let out = run_env(
        &[("BUILD_TYPE", "site"), ("MVN_PROJECT", "south")],
        &["--build-type", "distro"],
    );
    assert!(
        text(&out.stderr).contains("distro: 0 errors"),
        "{}",
        text(&out.stderr)
    );
    let out = run_env(&[("BUILD_TYPE", "everything")], &[]);
    assert_eq!(out.status.code(), Some(2));
    // A named site implies a site build, from the flag or the environment…
    let out = run_env(&[], &["--site", "north"]);
    assert!(
        text(&out.stderr).contains("site north: 0 errors"),
        "{}",
        text(&out.stderr)
    );
    let out = run_env(&[("MVN_PROJECT", "north")], &[]);
    assert!(
        text(&out.stderr).contains("site north: 0 errors"),
        "{}",
        text(&out.stderr)
    );
    // …and naming one for an explicit distro build is refused, never silently ignored.
    let out = run_env(&[], &["--site", "north", "--build-type", "distro"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--build-type site"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn build_writes_a_bundle_that_inspect_reads_and_refuses_to_write_on_errors() {
    let p = materialize(&clean());
    let out_file = p.root().join("out/distro.bundle");
    let out = compiler(p.root(), &["build", "--out", out_file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let inspect = Command::new(env!("CARGO_BIN_EXE_compiler"))
        .args(["inspect"])
        .arg(&out_file)
        .output()
        .unwrap();
    let stdout = text(&inspect.stdout);
    assert!(stdout.contains("build type:       distro"), "{stdout}");
    assert!(
        stdout.contains("layers (first to last):\n  base        openmrs_config -\n"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("visit_types") && l.trim_end().ends_with(" 1")),
        "{stdout}"
    );

    let bad = materialize(&broken());
    let out_file = bad.root().join("distro.bundle");
    let out = compiler(bad.root(), &["build", "--out", out_file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!out_file.exists());
    assert!(text(&out.stderr).contains("bundle not written"));

    let garbage = bad.root().join("garbage.bundle");
    std::fs::write(&garbage, b"not a bundle at all").unwrap();
    let inspect = Command::new(env!("CARGO_BIN_EXE_compiler"))
        .args(["inspect"])
        .arg(&garbage)
        .output()
        .unwrap();
    assert_eq!(inspect.status.code(), Some(1));
    assert!(text(&inspect.stderr).contains("not a bundle"));
}
