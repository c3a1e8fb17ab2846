//! The compiler's one integration-test binary.
//!
//! - `fixtures`: one multi-file fixture per diagnostic code under `tests/fixtures/`, each
//!   compared with its expected rendering (`UPDATE_EXPECT=1` rewrites the expectations);
//! - `merge`: how base, site, OCL and CSV definitions combine;
//! - `packages`: content packages the base depends on, and their layering;
//! - `national`: a national package laid out as published, its configuration honoured and
//!   its defects shown;
//! - `cli`: exit codes, output formats, baselines and build selection of the binary;
//! - `content`: the project's own content builds clean, and reproducibly;
//! - `hostile`: inputs that must end in diagnostics, never a panic.

mod cli;
mod content;
mod fixture;
mod fixtures;
mod hostile;
mod merge;
mod national;
mod packages;
