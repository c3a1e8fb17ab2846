//! The content compiler: reads an OpenMRS content package (the base `openmrs_config/`
//! and, for a site build, `sites/<site>/openmrs_config/`), validates it, and produces the
//! sealed bundle the runtime embeds.
//!
//! Pipeline (each stage collects diagnostics and carries on; none panics on bad input):
//! 1. `packages` resolves the content packages the base depends on (`content.properties`),
//!    then `vfs` reads the layers (dependencies, base, site) and applies the flat overlay;
//! 2. `domains` parse each content folder into entities (`Loaded`), OCL archives in
//!    parallel;
//! 3. `link` resolves every reference and builds the bundle's `model::Content`;
//! 4. `frontend` merges and checks the front-end configuration and logo;
//! 5. `model::encode` writes the bytes.
//!
//! `diagnostics` holds the codes and renderings; `main.rs` is the command line.

pub mod builtin;
pub mod csvtable;
pub mod diagnostics;
pub mod domains;
pub mod embed;
pub mod french;
pub mod frontend;
pub mod link;
pub mod packages;
pub mod resolve;
pub mod source;
pub mod store;
pub mod version;
pub mod vfs;
pub mod xml;

use diagnostics::{Code, Diagnostic, Sink};
use model::{BuildType, Content, Header};
use std::path::Path;
use vfs::Selection;

pub use domains::{NoProgress, Progress};

/// The version written into every bundle header.
pub const COMPILER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The result of a compilation: content (best effort, even with errors) and diagnostics.
pub struct Compiled {
    pub header: Header,
    pub content: Content,
    /// Sorted, deduplicated.
    pub diagnostics: Vec<Diagnostic>,
}

impl Compiled {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The bundle bytes.
    pub fn encode(&self) -> Vec<u8> {
        model::encode(&self.header, &self.content)
    }

    /// Writes the bundle without holding its bytes in memory; returns its size.
    pub fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<usize> {
        model::encode_to(&self.header, &self.content, out)
    }

    pub fn entity_count(&self) -> usize {
        self.content.counts().iter().map(|(_, n)| n).sum()
    }
}

/// Reads the build selection the way the Docker build and CI pass it: `BUILD_TYPE`
/// (`distro` or `site`, default `distro`) and `MVN_PROJECT` (the site). Explicit values
/// (command-line flags) win over the environment.
pub fn selection_from(
    build_type: Option<&str>,
    site: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Selection, String> {
    let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty());
    let flag_type = nonempty(build_type.map(str::to_string));
    let flag_site = nonempty(site.map(str::to_string));
    // Flags win over the environment; a site in the environment does not outvote an
    // explicit `--build-type distro`.
    let env_site = || nonempty(env("MVN_PROJECT"));
    let site = flag_site.clone().or_else(|| match flag_type.as_deref() {
        Some("distro") => None,
        _ => env_site(),
    });
    // A named site implies a site build.
    let build_type = flag_type
        .or_else(|| nonempty(env("BUILD_TYPE")))
        .unwrap_or_else(|| if site.is_some() { "site" } else { "distro" }.into());
    match build_type.as_str() {
        "distro" => match flag_site {
            // Naming a site for a distribution build is a mistake worth saying.
            Some(site) => Err(format!(
                "--site {site} was given for a distro build: add --build-type site to check or build the site, or drop --site"
            )),
            None => Ok(Selection::distro()),
        },
        "site" => Ok(Selection {
            build_type: BuildType::Site,
            site,
        }),
        other => Err(format!(
            "unknown build type '{other}': use 'distro' or 'site'"
        )),
    }
}

/// Compiles files held in memory as a base package (paths below `openmrs_config/`), with
/// no front-end configuration. For fuzzing and tests: no file system involved.
pub fn compile_files(files: Vec<(String, Vec<u8>)>) -> Vec<Diagnostic> {
    let mut sink = Sink::default();
    let mut inputs: Vec<vfs::InputFile> = files
        .into_iter()
        .map(|(rel, bytes)| vfs::InputFile {
            display: format!("openmrs_config/{rel}").into(),
            rel,
            layer: vfs::Layer::Base,
            bytes,
        })
        .collect();
    inputs.sort_by(|a, b| a.rel.cmp(&b.rel));
    let loaded = domains::load(&inputs, &NoProgress, &mut sink);
    let content = link::link(loaded, &mut sink);
    let _ = model::encode(
        &model::Header {
            format_version: model::FORMAT_VERSION,
            compiler_version: COMPILER_VERSION.into(),
            build_type: model::BuildType::Distro,
            site: None,
            content_hash: String::new(),
            body_sha256: String::new(),
            layers: Vec::new(),
        },
        &content,
    );
    sink.into_sorted()
}

/// Compiles the project at `root`.
pub fn compile(root: &Path, selection: &Selection, progress: &dyn Progress) -> Compiled {
    let mut sink = Sink::default();
    let project = vfs::load(root, selection, packages::resolve, &mut sink);
    let loaded = domains::load(&project.files, progress, &mut sink);
    let mut content = link::link(loaded, &mut sink);
    if !project.files.is_empty() {
        let fe = frontend::check(&project, &content, &mut sink);
        content.frontend_config = fe.config_json;
        content.logo_png = fe.logo_png;
    }
    if project.files.is_empty() && !sink.has_errors() {
        sink.emit(
            Code::Selection,
            &source::Loc::None,
            "The base package 'openmrs_config/' holds no files",
        );
    }
    let header = Header {
        format_version: model::FORMAT_VERSION,
        compiler_version: COMPILER_VERSION.to_string(),
        build_type: selection.build_type,
        site: selection.site.clone(),
        content_hash: project.content_hash,
        body_sha256: String::new(),
        layers: project.layers,
    };
    Compiled {
        header,
        content,
        diagnostics: diagnostics::summarise(sink.into_sorted()),
    }
}
