//! Fixture-per-diagnostic tests: `tests/fixtures/<CODE>-<name>.txt` is a multi-file
//! project (see `fixture.rs`); its report, rendered as a content author sees it (folded,
//! with the tally per code),
//! must equal `<CODE>-<name>.stderr`. Run with `UPDATE_EXPECT=1` to rewrite expectations
//! after an intended change, then review the diff.

use crate::fixture::materialize;
use compiler::diagnostics::{Code, render_report};
use compiler::vfs::Selection;
use std::path::{Path, PathBuf};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn fixture_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    files
}

/// `//@ site: <name>` in a fixture selects a site build.
fn selection_of(text: &str) -> Selection {
    text.lines()
        .find_map(|l| l.strip_prefix("//@ site:"))
        .map_or_else(Selection::distro, |s| Selection::site(s.trim()))
}

pub fn run(text: &str) -> (String, Vec<String>) {
    let project = materialize(text);
    let compiled = compiler::compile(project.root(), &selection_of(text), &compiler::NoProgress);
    // A baseline at the root applies as it does for the command line.
    let mut diagnostics = compiled.diagnostics;
    let baseline = project.root().join("validator-baseline.json");
    if let Ok(json) = std::fs::read_to_string(&baseline) {
        let b: compiler::diagnostics::Baseline =
            serde_json::from_str(&json).expect("baseline json");
        diagnostics = b.apply(diagnostics, "validator-baseline.json").0;
    }
    let rendered = render_report(&diagnostics, false);
    let codes = diagnostics.iter().map(|d| d.code.clone()).collect();
    (rendered, codes)
}

#[test]
fn every_fixture_renders_as_expected() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    for path in fixture_files() {
        let text = std::fs::read_to_string(&path).expect("fixture text");
        let (rendered, codes) = run(&text);
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let code = name.split('-').next().unwrap_or("");
        if Code::from_id(code).is_some() && !codes.iter().any(|c| c == code) {
            failures.push(format!(
                "{name}: expected a {code} diagnostic, got {codes:?}"
            ));
        }
        let expected_path = path.with_extension("stderr");
        if update {
            std::fs::write(&expected_path, &rendered).expect("write expectation");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != rendered {
            failures.push(format!(
                "{name}: rendering differs\n--- expected\n{expected}\n--- got\n{rendered}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_code_has_a_fixture_and_a_documentation_entry() {
    let names: Vec<String> = fixture_files()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/diagnostics.md"),
    )
    .expect("docs/diagnostics.md");
    let mut missing = Vec::new();
    for code in Code::ALL {
        if !names.iter().any(|n| n.starts_with(code.id())) {
            missing.push(format!("no fixture for {}", code.id()));
        }
        if !docs.contains(&format!("### {} {}", code.id(), code.name())) {
            missing.push(format!(
                "no section '### {} {}' in docs/diagnostics.md",
                code.id(),
                code.name()
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
