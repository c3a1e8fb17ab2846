//! What the runtime's build script does: produce the bundle to embed, from the build
//! environment (`BUILD_TYPE`, `MVN_PROJECT`, `CONTENT_ROOT`, `BUNDLE_PATH`). Kept here so it
//! is tested like the rest of the compiler; `runtime/build.rs` only calls it.

use crate::diagnostics::{Diagnostic, Format, render};
use std::path::{Path, PathBuf};

/// The bundle to embed, or a message (with the compiler's diagnostics) that fails the build.
pub struct Embedded {
    pub bytes: Vec<u8>,
    /// Files and folders whose change must rebuild the runtime.
    pub inputs: Vec<PathBuf>,
    /// Warnings to show (the build goes on).
    pub warnings: Vec<Diagnostic>,
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
        });
    }
    let root = env("CONTENT_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| default_root.to_path_buf());
    let selection = crate::selection_from(None, None, env)?;
    let compiled = crate::compile(&root, &selection, &crate::NoProgress);
    if compiled.has_errors() {
        let errors = compiled.diagnostics.iter().filter(|d| d.is_error()).count();
        return Err(format!(
            "{}the content has {errors} error(s); the runtime is not built",
            render(&compiled.diagnostics, Format::Human, false)
        ));
    }
    let inputs = [
        "openmrs_config",
        "sites",
        "frontend/config",
        "frontend/assets",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    Ok(Embedded {
        bytes: compiled.encode(),
        inputs,
        warnings: compiled.diagnostics,
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
