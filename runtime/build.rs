//! Compiles the content into the bundle the runtime embeds (`OUT_DIR/bundle.bin`).
//!
//! - `BUILD_TYPE` (`distro`, default, or `site`) and `MVN_PROJECT` (the site) choose the
//!   content, as for the compiler;
//! - `CONTENT_ROOT` points at another project root (default: this repository);
//! - `BUNDLE_PATH` embeds a bundle file built earlier instead of compiling.
//!
//! A content error fails the build with the compiler's diagnostics.

use std::path::PathBuf;

fn main() {
    for var in ["BUILD_TYPE", "MVN_PROJECT", "CONTENT_ROOT", "BUNDLE_PATH"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("bundle.bin");
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());

    if let Some(path) = env("BUNDLE_PATH") {
        println!("cargo::rerun-if-changed={path}");
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| fail(&format!("cannot read BUNDLE_PATH {path}: {e}")));
        if let Err(e) = model::decode(&bytes) {
            fail(&format!("BUNDLE_PATH {path} is not a usable bundle: {e}"));
        }
        std::fs::write(&out, bytes).expect("write bundle");
        return;
    }

    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = env("CONTENT_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join(".."));
    for dir in [
        "openmrs_config",
        "sites",
        "frontend/config",
        "frontend/assets",
    ] {
        println!("cargo::rerun-if-changed={}", root.join(dir).display());
    }
    let selection = compiler::selection_from(None, None, env).unwrap_or_else(|e| fail(&e));
    let compiled = compiler::compile(&root, &selection, &compiler::NoProgress);
    if compiled.has_errors() {
        let rendered = compiler::diagnostics::render(
            &compiled.diagnostics,
            compiler::diagnostics::Format::Human,
            false,
        );
        eprintln!("{rendered}");
        let errors = compiled.diagnostics.iter().filter(|d| d.is_error()).count();
        fail(&format!(
            "the content has {errors} error(s); the runtime is not built"
        ));
    }
    for d in compiled.diagnostics.iter() {
        println!("cargo::warning=content: {} {}", d.code, d.message);
    }
    std::fs::write(&out, compiled.encode()).expect("write bundle");
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}
