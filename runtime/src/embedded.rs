//! What `build.rs` compiled into this binary: the content bundle and the packed front end.

/// The bundle compiled into this binary by `build.rs`.
pub static EMBEDDED_BUNDLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bundle.bin"));

/// The O3 application packed by `build.rs` from `EMR_SPA_DIR`; empty when built without it.
pub static EMBEDDED_SPA: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/spa.bin"));
