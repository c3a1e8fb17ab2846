//! Compiles the content into the bundle the runtime embeds (`OUT_DIR/bundle.bin`), as
//! `compiler::embed` decides from `BUILD_TYPE`, `MVN_PROJECT`, `CONTENT_ROOT` and
//! `BUNDLE_PATH`, with the baseline rules of `compiler check` (`VALIDATOR_BASELINE`, else
//! the root's `validator-baseline.json`). A content error the baseline does not record
//! fails the build with the compiler's diagnostics.
//!
//! With `EMR_SPA_DIR` (a built O3 application, as `frontend/build.sh` writes it), also packs
//! the front end into `OUT_DIR/spa.bin` (see `src/spa_pack.rs`), so the binary serves it;
//! without it the pack is empty and the binary serves the API only.

use std::path::{Path, PathBuf};

// The runtime reads what this packs; the build uses only the packing half.
#[allow(dead_code)]
#[path = "src/spa_pack.rs"]
mod spa_pack;

fn main() {
    for var in [
        "BUILD_TYPE",
        "MVN_PROJECT",
        "CONTENT_ROOT",
        "BUNDLE_PATH",
        "VALIDATOR_BASELINE",
        "EMR_SPA_DIR",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let out = out_dir.join("bundle.bin");
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let spa = match std::env::var("EMR_SPA_DIR") {
        Ok(dir) if !dir.is_empty() => pack_spa(&manifest.join("..").join(dir)),
        _ => Vec::new(),
    };
    std::fs::write(out_dir.join("spa.bin"), spa).expect("write the front end into OUT_DIR");
    match compiler::embed::bundle_for_build(|k| std::env::var(k).ok(), &manifest.join("..")) {
        Ok(embedded) => {
            // Only inputs that exist: cargo reruns a build script every time for a missing one.
            for input in embedded.inputs.iter().filter(|p| p.exists()) {
                println!("cargo::rerun-if-changed={}", input.display());
            }
            if let Some(summary) = &embedded.baseline_summary {
                println!("cargo::warning=content baseline {summary}");
            }
            for line in embedded.warning_lines() {
                println!("cargo::warning={line}");
            }
            std::fs::write(&out, &embedded.bytes).expect("write the bundle into OUT_DIR");
        }
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(1);
        }
    }
}

/// Packs a built front end, refusing a folder that is not one.
fn pack_spa(dir: &Path) -> Vec<u8> {
    println!("cargo::rerun-if-changed={}", dir.display());
    if !dir.join("index.html").is_file() {
        eprintln!(
            "EMR_SPA_DIR={} holds no built front end (no index.html); build it with `bash frontend/build.sh`",
            dir.display()
        );
        std::process::exit(1);
    }
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder).expect("read the front end's folder");
        for entry in entries {
            let path = entry.expect("read the front end's folder").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path
                .strip_prefix(dir)
                .expect("a file under the folder")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            if spa_pack::wanted(&relative) {
                let bytes = std::fs::read(&path).expect("read a front-end file");
                files.push((relative, bytes));
            }
        }
    }
    spa_pack::pack(&mut files)
}
