//! The only place that reads the file system: finds the project's layers, applies the
//! flat overlay (a site file replaces the base file with the same relative path), and
//! reads zip members with size caps.

use crate::diagnostics::{Code, Diagnostic, Sink};
use crate::source::{Loc, MAX_COMPRESSION_RATIO, MAX_FILE_BYTES, TextFile, decode_utf8};
use model::BuildType;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub build_type: BuildType,
    pub site: Option<String>,
}

impl Selection {
    pub fn distro() -> Selection {
        Selection {
            build_type: BuildType::Distro,
            site: None,
        }
    }

    pub fn site(name: &str) -> Selection {
        Selection {
            build_type: BuildType::Site,
            site: Some(name.to_string()),
        }
    }
}

/// Which package a file comes from; later layers override earlier ones. Dependency
/// packages come first, numbered in the order they are laid down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    Dependency(u16),
    Base,
    Site,
}

#[derive(Debug)]
pub struct InputFile {
    /// Path below `openmrs_config/`, with `/` separators: `concepts/diagnoses.csv`.
    pub rel: String,
    /// Path relative to the project root, for diagnostics.
    pub display: Arc<str>,
    pub layer: Layer,
    pub bytes: Vec<u8>,
}

impl InputFile {
    /// The domain folder this file belongs to (its first path component).
    pub fn domain(&self) -> &str {
        self.rel.split('/').next().unwrap_or("")
    }

    pub fn extension(&self) -> &str {
        self.rel.rsplit_once('.').map_or("", |(_, e)| e)
    }
}

/// An extra file outside `openmrs_config/` (front-end configuration and logo).
#[derive(Debug)]
pub struct ExtraFile {
    pub display: Arc<str>,
    pub bytes: Vec<u8>,
}

/// The distribution's translation overrides of the front-end modules it ships.
pub const TRANSLATIONS_PATH: &str = "frontend/config/translations.json";

/// The pinned front-end modules the image is built with.
pub const SHIPPED_MODULES_PATH: &str = "frontend/spa-modules.json";

#[derive(Debug, Default)]
pub struct Project {
    /// After overlay, sorted by `rel`.
    pub files: Vec<InputFile>,
    /// Front-end configuration files, first to last: the distribution's translations
    /// (`frontend/config/translations.json`), the dependencies'
    /// `frontend_configuration/*.json`, `frontend/config/config.json`, the site's.
    pub frontend_configs: Vec<ExtraFile>,
    pub logo: Option<ExtraFile>,
    /// `frontend/spa-modules.json` and the distribution's own modules' `package.json`
    /// (`frontend/modules/*/`): which front-end modules the image ships.
    pub shipped_modules: Vec<ExtraFile>,
    /// The content packages laid down, first to last.
    pub layers: Vec<model::PackageLayer>,
    /// Hex SHA-256 over the selection and every input (path and bytes).
    pub content_hash: String,
}

/// A dependency package, resolved.
#[derive(Debug, Clone)]
pub struct Package {
    /// The folder name below `content-packages/`, which is the name dependencies use.
    pub name: String,
    pub version: Option<String>,
    /// Its backend configuration: what `openmrs_config/` is for the base package.
    pub config_dir: PathBuf,
    /// Its front-end configuration files (`configuration/frontend_configuration/*.json`).
    pub frontend_files: Vec<PathBuf>,
}

/// Every package under the project, dependencies first.
#[derive(Debug, Default)]
pub struct Resolved {
    pub dependencies: Vec<Package>,
    /// The base package's own name and version, when the root `content.properties` has them.
    pub base_name: Option<String>,
    pub base_version: Option<String>,
    /// Every `content.properties` and `pom.xml` read, for the content hash.
    pub descriptors: Vec<ExtraFile>,
}

/// Sites available under `<root>/sites/`.
pub fn list_sites(root: &Path) -> Vec<String> {
    let mut sites: Vec<String> = std::fs::read_dir(root.join("sites"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("openmrs_config").is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    sites.sort();
    sites
}

/// Reads the project's inputs. `resolve` finds the content packages (see
/// `packages::resolve`); it is called only once the base package is known to exist.
pub fn load(
    root: &Path,
    selection: &Selection,
    resolve: impl FnOnce(&Path, &mut Sink) -> Resolved,
    sink: &mut Sink,
) -> Project {
    let mut project = Project::default();
    let base_dir = root.join("openmrs_config");
    if !base_dir.is_dir() {
        sink.emit(
            Code::Selection,
            &Loc::None,
            format!("No base package: '{}' is not a folder", base_dir.display()),
        )
        .help = Some("run the compiler from the project root, or pass --root".into());
        return project;
    }
    let packages = resolve(root, sink);
    let mut layers: Vec<(Layer, PathBuf)> = Vec::new();
    for (i, dep) in packages.dependencies.iter().enumerate() {
        let index = u16::try_from(i).expect("fewer than 65536 packages");
        layers.push((Layer::Dependency(index), dep.config_dir.clone()));
        project.layers.push(model::PackageLayer {
            role: "dependency".into(),
            name: dep.name.clone(),
            version: dep.version.clone(),
        });
    }
    layers.push((Layer::Base, base_dir));
    project.layers.push(model::PackageLayer {
        role: "base".into(),
        name: packages
            .base_name
            .clone()
            .unwrap_or_else(|| "openmrs_config".into()),
        version: packages.base_version.clone(),
    });
    let mut site_root = None;
    match (selection.build_type, &selection.site) {
        (BuildType::Site, None) => {
            let sites = list_sites(root);
            sink.emit(
                Code::Selection,
                &Loc::None,
                "A site build needs a site name",
            )
            .help = Some(format!(
                "set MVN_PROJECT or --site to one of: {}",
                display_list(&sites)
            ));
            return project;
        }
        (BuildType::Site, Some(site)) => {
            let dir = root.join("sites").join(site);
            let sites = list_sites(root);
            if site.contains(['/', '\\']) || site.starts_with('.') || !sites.contains(site) {
                sink.emit(
                    Code::Selection,
                    &Loc::None,
                    format!("Unknown site '{site}'"),
                )
                .help = Some(format!("sites that exist: {}", display_list(&sites)));
                return project;
            }
            layers.push((Layer::Site, dir.join("openmrs_config")));
            project.layers.push(model::PackageLayer {
                role: "site".into(),
                name: site.clone(),
                version: None,
            });
            site_root = Some(dir);
        }
        (BuildType::Distro, _) => {}
    }

    let mut by_rel: BTreeMap<String, InputFile> = BTreeMap::new();
    for (layer, dir) in &layers {
        let mut found = Vec::new();
        walk(dir, &mut found, sink, root);
        for path in found {
            let rel = relative(&path, dir);
            let display: Arc<str> = relative(&path, root).into();
            if let Some(bytes) = read_capped(&path, &display, sink) {
                by_rel.insert(
                    rel.clone(),
                    InputFile {
                        rel,
                        display,
                        layer: *layer,
                        bytes,
                    },
                );
            }
        }
    }
    project.files = by_rel.into_values().collect();

    let read_extra = |path: PathBuf, sink: &mut Sink| {
        path.is_file().then(|| {
            let display: Arc<str> = relative(&path, root).into();
            read_capped(&path, &display, sink).map(|bytes| ExtraFile { display, bytes })
        })?
    };
    // The distribution's translations of the modules it ships lie under every
    // configuration, so a package's own `config.json` keeps them (its keys still win).
    let mut frontend_paths = vec![root.join(TRANSLATIONS_PATH)];
    frontend_paths.extend(
        packages
            .dependencies
            .iter()
            .flat_map(|d| d.frontend_files.iter().cloned()),
    );
    frontend_paths.push(root.join("frontend/config/config.json"));
    if let Some(dir) = &site_root {
        frontend_paths.push(dir.join("frontend/config.json"));
    }
    project.frontend_configs = frontend_paths
        .into_iter()
        .filter_map(|p| read_extra(p, sink))
        .collect();
    project.logo = read_extra(root.join("frontend/assets/logo.png"), sink);
    // The front-end modules the distribution ships: the pinned npm ones and its own.
    let mut module_files: Vec<PathBuf> = vec![root.join(SHIPPED_MODULES_PATH)];
    if let Ok(dirs) = std::fs::read_dir(root.join("frontend/modules")) {
        let mut own: Vec<PathBuf> = dirs
            .filter_map(|d| d.ok())
            .map(|d| d.path().join("package.json"))
            .collect();
        own.sort();
        module_files.extend(own);
    }
    project.shipped_modules = module_files
        .into_iter()
        .filter_map(|p| read_extra(p, sink))
        .collect();
    // Package descriptors decide the layers, so they count as inputs too.
    let descriptors = &packages.descriptors;

    let mut hasher = Sha256::new();
    hasher.update(selection.build_type.as_str());
    hasher.update([0]);
    hasher.update(selection.site.as_deref().unwrap_or(""));
    hasher.update([0]);
    for f in &project.files {
        hash_file(&mut hasher, &f.rel, &f.bytes);
    }
    let extras = project
        .frontend_configs
        .iter()
        .chain(&project.logo)
        .chain(&project.shipped_modules)
        .chain(descriptors);
    for e in extras {
        hash_file(&mut hasher, &e.display, &e.bytes);
    }
    project.content_hash = model::hex(&hasher.finalize());
    project
}

fn hash_file(hasher: &mut Sha256, name: &str, bytes: &[u8]) {
    hasher.update((name.len() as u64).to_le_bytes());
    hasher.update(name.as_bytes());
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

fn display_list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".into()
    } else {
        items.join(", ")
    }
}

pub fn relative(path: &Path, base: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Collects regular files below `dir`, in a stable order; hidden files are skipped.
fn walk(dir: &Path, out: &mut Vec<PathBuf>, sink: &mut Sink, root: &Path) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            sink.emit(
                Code::Io,
                &Loc::File(relative(dir, root).into()),
                format!("Cannot read folder: {e}"),
            );
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                sink.emit(
                    Code::Io,
                    &Loc::File(relative(&path, root).into()),
                    format!("Cannot read file: {e}"),
                )
                .help = Some("a broken link or a file without read permission".into());
                continue;
            }
        };
        if meta.is_dir() {
            walk(&path, out, sink, root);
        } else if meta.is_file() {
            out.push(path);
        }
    }
}

/// Decodes a file as UTF-8 text, reporting invalid bytes and a byte-order mark.
pub fn decode(f: &InputFile, sink: &mut Sink) -> Option<Arc<TextFile>> {
    decode_bytes(f.display.clone(), f.bytes.clone(), sink)
}

pub fn decode_bytes(path: Arc<str>, bytes: Vec<u8>, sink: &mut Sink) -> Option<Arc<TextFile>> {
    match decode_utf8(bytes) {
        Ok((text, bom)) => {
            let file = TextFile::new(path, text);
            if bom {
                sink.emit(Code::ByteOrderMark, &file.whole(), "File starts with a byte-order mark")
                    .help = Some(
                    "the compiler strips it, but Initializer keeps it in the first header cell; save the file as UTF-8 without BOM"
                        .into(),
                );
            }
            Some(file)
        }
        Err(p) => {
            sink.emit(
                Code::InvalidUtf8,
                &Loc::Point {
                    path,
                    line: p.line,
                    col: p.column,
                },
                format!("Invalid UTF-8 at byte {}", p.offset),
            )
            .help = Some("save the file as UTF-8".into());
            None
        }
    }
}

pub(crate) fn read_capped(path: &Path, display: &Arc<str>, sink: &mut Sink) -> Option<Vec<u8>> {
    let loc = Loc::File(display.clone());
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_FILE_BYTES => {
            sink.emit(
                Code::TooLarge,
                &loc,
                format!("File is too large ({} bytes)", m.len()),
            )
            .help = Some(format!("files are limited to {MAX_FILE_BYTES} bytes"));
            return None;
        }
        _ => {}
    }
    match std::fs::read(path) {
        Ok(b) => Some(b),
        Err(e) => {
            sink.emit(Code::Io, &loc, format!("Cannot read file: {e}"));
            None
        }
    }
}

/// Reads the member `name` of a zip archive held in memory, refusing members whose
/// inflated size or compression ratio is over the caps (zip bombs).
pub fn read_zip_member(
    bytes: &[u8],
    name: &str,
    display: &Arc<str>,
) -> Result<Vec<u8>, Box<Diagnostic>> {
    let loc = Loc::File(display.clone());
    let bad = |msg: String| Box::new(Diagnostic::new(Code::BadArchive, &loc, msg));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| bad(format!("Not a readable zip archive: {e}")))?;
    let mut entry = match archive.by_name(name) {
        Ok(e) => e,
        Err(zip::result::ZipError::FileNotFound) => {
            return Err(Box::new(
                bad(format!("The archive has no '{name}' member"))
                    .help("an OCL export zip holds its concepts in export.json at the top level"),
            ));
        }
        Err(e) => return Err(bad(format!("Cannot open '{name}' in the archive: {e}"))),
    };
    let declared = entry.size();
    let compressed = entry.compressed_size().max(1);
    let member: Arc<str> = format!("{display}!/{name}").into();
    let too_large = |size: u64| {
        Box::new(Diagnostic::new(
            Code::TooLarge,
            &Loc::File(member.clone()),
            format!("Archive member inflates to {size} bytes or more, over the limit"),
        )
        .help(format!(
            "members are limited to {MAX_FILE_BYTES} bytes and a compression ratio of {MAX_COMPRESSION_RATIO}:1 (zip bomb protection)"
        )))
    };
    let cap = MAX_FILE_BYTES.min(
        compressed
            .saturating_mul(MAX_COMPRESSION_RATIO)
            .max(64 * 1024),
    );
    if declared > cap {
        return Err(too_large(declared));
    }
    let mut out = Vec::with_capacity(declared.min(cap) as usize);
    // The declared size can lie: read at most one byte over the cap to detect it.
    match (&mut entry).take(cap + 1).read_to_end(&mut out) {
        Ok(n) if n as u64 > cap => Err(too_large(n as u64)),
        Ok(_) => Ok(out),
        Err(e) => Err(Box::new(Diagnostic::new(
            Code::BadArchive,
            &Loc::File(member.clone()),
            format!("Cannot inflate archive member: {e}"),
        ))),
    }
}
