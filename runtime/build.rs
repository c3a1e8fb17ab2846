//! Compiles the content into the bundle the runtime embeds (`OUT_DIR/bundle.bin`), as
//! `compiler::embed` decides from `BUILD_TYPE`, `MVN_PROJECT`, `CONTENT_ROOT` and
//! `BUNDLE_PATH`. A content error fails the build with the compiler's diagnostics.

use std::path::PathBuf;

fn main() {
    for var in ["BUILD_TYPE", "MVN_PROJECT", "CONTENT_ROOT", "BUNDLE_PATH"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("bundle.bin");
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    match compiler::embed::bundle_for_build(|k| std::env::var(k).ok(), &manifest.join("..")) {
        Ok(embedded) => {
            for input in &embedded.inputs {
                println!("cargo::rerun-if-changed={}", input.display());
            }
            for d in &embedded.warnings {
                println!("cargo::warning=content: {} {}", d.code, d.message);
            }
            std::fs::write(&out, &embedded.bytes).expect("write the bundle into OUT_DIR");
        }
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(1);
        }
    }
}
