//! What the runtime's build script does: produce the bundle to embed, from the build
//! environment (`BUILD_TYPE`, `MVN_PROJECT`, `CONTENT_ROOT`, `BUNDLE_PATH`,
//! `VALIDATOR_BASELINE`). Kept here so it is tested like the rest of the compiler;
//! `runtime/build.rs` only calls it.
//!
//! The baseline rules are the command line's: `VALIDATOR_BASELINE` names the file (relative
//! to the content root), else `<root>/validator-baseline.json` is used when it exists; the
//! problems it records are accepted, any other error fails the build.

use crate::diagnostics::{Baseline, Diagnostic, Format, render};
use std::path::{Path, PathBuf};

/// The bundle to embed, or a message (with the compiler's diagnostics) that fails the build.
pub struct Embedded {
    pub bytes: Vec<u8>,
    /// Files and folders whose change must rebuild the runtime.
    pub inputs: Vec<PathBuf>,
    /// Warnings to show (the build goes on), stale baseline entries among them.
    pub warnings: Vec<Diagnostic>,
    /// What the baseline accepted, when one applied: a line for the build's output.
    pub baseline_summary: Option<String>,
}

impl Embedded {
    /// The warnings as the build prints them, one line each: at most a few per code, then
    /// how many more (a large package can have thousands; `compiler check` shows them all).
    pub fn warning_lines(&self) -> Vec<String> {
        const PER_CODE: usize = 3;
        let mut per_code: std::collections::BTreeMap<(&str, &str), Vec<&Diagnostic>> =
            Default::default();
        for d in &self.warnings {
            per_code
                .entry((d.code.as_str(), d.name.as_str()))
                .or_default()
                .push(d);
        }
        let mut lines = Vec::new();
        for ((code, name), found) in per_code {
            for d in found.iter().take(PER_CODE) {
                let place = d
                    .position
                    .as_ref()
                    .map(|p| format!(" ({}:{})", p.path, p.line))
                    .unwrap_or_default();
                lines.push(format!("content: {code} {}{place}", d.message));
            }
            if found.len() > PER_CODE {
                lines.push(format!(
                    "content: … and {} more {code} {name}; `compiler check` lists them all",
                    found.len() - PER_CODE
                ));
            }
        }
        lines
    }
}

/// `default_root` is the project root used without `CONTENT_ROOT`.
pub fn bundle_for_build(
    env: impl Fn(&str) -> Option<String>,
    default_root: &Path,
) -> Result<Embedded, String> {
    let env = |k: &str| env(k).filter(|v| !v.is_empty());
    if let Some(path) = env("BUNDLE_PATH") {
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read BUNDLE_PATH {path}: {e}"))?;
        model::decode(&bytes)
            .map_err(|e| format!("BUNDLE_PATH {path} is not a usable bundle: {e}"))?;
        return Ok(Embedded {
            bytes,
            inputs: vec![PathBuf::from(path)],
            warnings: Vec::new(),
            baseline_summary: None,
        });
    }
    let root = env("CONTENT_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| default_root.to_path_buf());
    let selection = crate::selection_from(None, None, env)?;
    let compiled = crate::compile(&root, &selection, &crate::NoProgress);
    let baseline_path = match env("VALIDATOR_BASELINE") {
        Some(p) => Some(root.join(p)),
        None => Some(root.join("validator-baseline.json")).filter(|p| p.is_file()),
    };
    let (diagnostics, baseline_summary) = match &baseline_path {
        Some(path) => {
            let baseline = Baseline::read(path)?;
            let display = path
                .strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string();
            let (kept, accepted) = baseline.apply(compiled.diagnostics.clone(), &display);
            let stale = kept
                .iter()
                .filter(|d| d.code == crate::diagnostics::Code::StaleBaseline.id())
                .count();
            let summary = format!(
                "{display}: {accepted} known problem(s) accepted, {stale} stale entr{}",
                if stale == 1 { "y" } else { "ies" }
            );
            (kept, Some(summary))
        }
        None => (compiled.diagnostics.clone(), None),
    };
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    if errors > 0 {
        let accepted = baseline_summary
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        return Err(format!(
            "{}the content has {errors} error(s){accepted}; the runtime is not built",
            render(&diagnostics, Format::Human, false)
        ));
    }
    let mut inputs: Vec<PathBuf> = [
        "openmrs_config",
        "sites",
        "frontend/config",
        "frontend/assets",
        crate::packages::PACKAGES_DIR,
        crate::packages::PROPERTIES_FILE,
        "pom.xml",
        "validator-baseline.json",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    inputs.extend(baseline_path);
    Ok(Embedded {
        bytes: compiled.encode(),
        inputs,
        warnings: diagnostics,
        baseline_summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (p, t) in files {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, t).unwrap();
        }
        dir
    }

    const GOOD: (&str, &str) = (
        "openmrs_config/visittypes/v.csv",
        "Uuid,Name\n3f1c2b7e-9a4d-4c1e-8b2f-6d5e4c3b2a10,Outpatient\n",
    );

    #[test]
    fn a_content_error_fails_with_the_diagnostics() {
        let p = project(&[(
            "openmrs_config/locations/l.csv",
            "Uuid,Name,Parent\n3f1c2b7e-9a4d-4c1e-8b2f-6d5e4c3b2a10,Ward,Nowhere\n",
        )]);
        let err = bundle_for_build(
            env(&[("CONTENT_ROOT", p.path().to_str().unwrap())]),
            Path::new("/nonexistent"),
        )
        .err()
        .unwrap();
        assert!(
            err.starts_with("ERROR: Invalid parent location 'Nowhere' for location 'Ward'"),
            "{err}"
        );
        assert!(err.ends_with("the content has 1 error(s); the runtime is not built"));
    }

    const KNOWN_DEFECT: (&str, &str) = (
        "openmrs_config/locations/l.csv",
        "Uuid,Name,Parent\n3f1c2b7e-9a4d-4c1e-8b2f-6d5e4c3b2a10,Ward,Nowhere\n",
    );
    const BASELINE: &str = r#"{"entries":[{"code":"E0204","path":"openmrs_config/locations/l.csv","message":"Invalid parent location 'Nowhere' for location 'Ward'"}]}"#;

    #[test]
    fn a_baseline_at_the_root_lets_known_problems_build() {
        let p = project(&[KNOWN_DEFECT, ("validator-baseline.json", BASELINE)]);
        let root = p.path().to_str().unwrap();
        let built = bundle_for_build(env(&[("CONTENT_ROOT", root)]), Path::new("/x"))
            .unwrap_or_else(|e| panic!("the recorded problem is accepted: {e}"));
        assert_eq!(
            built.baseline_summary.as_deref(),
            Some("validator-baseline.json: 1 known problem(s) accepted, 0 stale entries")
        );
        assert_eq!(
            model::decode(&built.bytes).unwrap().content.locations.len(),
            1
        );

        // A new error still fails, and says what the baseline accepted.
        std::fs::write(
            p.path().join("openmrs_config/locations/m.csv"),
            "Uuid,Name,Parent\n8a6e3c1d-2b4f-4e5a-9c7d-1e2f3a4b5c6d,Lab,Elsewhere\n",
        )
        .unwrap();
        let err = bundle_for_build(env(&[("CONTENT_ROOT", root)]), Path::new("/x"))
            .err()
            .unwrap();
        assert!(err.contains("Invalid parent location 'Elsewhere'"), "{err}");
        assert!(!err.contains("'Nowhere'"), "{err}");
        assert!(
            err.ends_with("the content has 1 error(s) (validator-baseline.json: 1 known problem(s) accepted, 0 stale entries); the runtime is not built"),
            "{err}"
        );
    }

    #[test]
    fn many_warnings_print_a_few_lines_per_code() {
        let rows: String = (0..41).map(|i| format!(",Visit {i}\n")).collect();
        let p = project(&[(
            "openmrs_config/visittypes/v.csv",
            &format!("Uuid,Name\n{rows}"),
        )]);
        let built = bundle_for_build(
            env(&[("CONTENT_ROOT", p.path().to_str().unwrap())]),
            Path::new("/x"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(built.warnings.len(), 41);
        let lines = built.warning_lines();
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines[0].starts_with("content: W0005 "), "{lines:?}");
        assert_eq!(
            lines[3],
            "content: … and 38 more W0005 derived-uuid; `compiler check` lists them all"
        );
    }

    #[test]
    fn a_baseline_named_by_the_environment_replaces_the_default_one() {
        let p = project(&[
            KNOWN_DEFECT,
            ("validator-baseline.json", r#"{"entries":[]}"#),
            ("baselines/known.json", BASELINE),
        ]);
        let root = p.path().to_str().unwrap();
        assert!(bundle_for_build(env(&[("CONTENT_ROOT", root)]), Path::new("/x")).is_err());
        let built = bundle_for_build(
            env(&[
                ("CONTENT_ROOT", root),
                ("VALIDATOR_BASELINE", "baselines/known.json"),
            ]),
            Path::new("/x"),
        )
        .ok()
        .unwrap();
        assert!(
            built
                .baseline_summary
                .unwrap()
                .starts_with("baselines/known.json: 1 known")
        );
        // A baseline that cannot be read fails the build with the reason.
        let err = bundle_for_build(
            env(&[("CONTENT_ROOT", root), ("VALIDATOR_BASELINE", "nope.json")]),
            Path::new("/x"),
        )
        .err()
        .unwrap();
        assert!(err.starts_with("cannot read baseline"), "{err}");
    }

    #[test]
    fn selection_and_bundle_path_come_from_the_environment() {
        let p = project(&[
            GOOD,
            (
                "sites/north/openmrs_config/visittypes/n.csv",
                "Uuid,Name\n8a6e3c1d-2b4f-4e5a-9c7d-1e2f3a4b5c6d,Day\n",
            ),
        ]);
        let site = bundle_for_build(
            env(&[("BUILD_TYPE", "site"), ("MVN_PROJECT", "north")]),
            p.path(),
        )
        .ok()
        .unwrap();
        let decoded = model::decode(&site.bytes).unwrap();
        assert_eq!(decoded.header.site.as_deref(), Some("north"));
        assert_eq!(decoded.content.visit_types.len(), 2);
        assert!(
            bundle_for_build(
                env(&[("BUILD_TYPE", "site"), ("MVN_PROJECT", "south")]),
                p.path()
            )
            .is_err()
        );

        let file = p.path().join("x.bundle");
        std::fs::write(&file, &site.bytes).unwrap();
        let embedded = bundle_for_build(
            env(&[("BUNDLE_PATH", file.to_str().unwrap())]),
            Path::new("/nonexistent"),
        )
        .ok()
        .unwrap();
        assert_eq!(embedded.bytes, site.bytes);
        std::fs::write(&file, b"junk").unwrap();
        assert!(
            bundle_for_build(env(&[("BUNDLE_PATH", file.to_str().unwrap())]), p.path())
                .err()
                .unwrap()
                .contains("not a usable bundle")
        );
    }
}
