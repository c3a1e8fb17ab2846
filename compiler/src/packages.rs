//! Content packages the project depends on: `content.properties` at the project root
//! declares them (`content.<name>=<version range>`), each lives in
//! `content-packages/<name>/`, and each may declare its own. Resolution checks that every
//! one is there, that its version is in every range asked of it, and that no package
//! depends on itself, then orders them so a dependency is laid down before what needs it.
//!
//! Two layouts of a dependency are read: a package as OpenMRS publishes it
//! (`configuration/backend_configuration/`, `configuration/frontend_configuration/*.json`,
//! its `name`/`version` possibly the Maven placeholders of the `pom.xml` beside it) and
//! this project's own (`openmrs_config/`). `omod.<module>` and `war.openmrs` requirements
//! are compared with what the runtime provides (`builtin::PROVIDED_MODULES`).

use crate::builtin;
use crate::diagnostics::{Code, Sink};
use crate::source::{Loc, TextFile};
use crate::version::{Range, Version};
use crate::vfs::{ExtraFile, Package, Resolved};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where dependency packages live, below the project root.
pub const PACKAGES_DIR: &str = "content-packages";
pub const PROPERTIES_FILE: &str = "content.properties";

/// One `key=value` line of a properties file.
#[derive(Debug, Clone)]
pub struct Property {
    pub key: String,
    pub value: String,
    /// The value as written, for diagnostics.
    pub value_loc: Loc,
}

/// Parses a Java properties file: `key=value`, `key: value` or `key value`; `#` and `!`
/// comments; a trailing backslash continues the value on the next line.
pub fn parse_properties(file: &Arc<TextFile>) -> Vec<Property> {
    let text = &file.text;
    let mut out = Vec::new();
    let mut offset = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(raw) = lines.next() {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with(['#', '!']) {
            continue;
        }
        let lead = line.len() - trimmed.len();
        let key_end = trimmed.find(['=', ':', ' ', '\t']).unwrap_or(trimmed.len());
        let key = trimmed[..key_end].to_string();
        let after = trimmed[key_end..].trim_start();
        let after = after.strip_prefix(['=', ':']).unwrap_or(after).trim_start();
        let value_start = start + lead + (trimmed.len() - after.len());
        let mut value = after.trim_end().to_string();
        let mut value_len = value.len();
        while value.ends_with('\\') {
            value.pop();
            match lines.next() {
                Some(next) => {
                    offset += next.len();
                    value.push_str(next.trim());
                    value_len = 0;
                }
                None => break,
            }
        }
        out.push(Property {
            key,
            value_loc: file.loc(value_start, value_len),
            value,
        });
    }
    out
}

struct Resolver<'a> {
    root: &'a Path,
    descriptors: Vec<ExtraFile>,
    /// Resolved packages by name, with the version they declared.
    done: BTreeMap<String, Option<Version>>,
    order: Vec<Package>,
    /// Packages being resolved, outermost first (for cycles).
    stack: Vec<String>,
    sink: &'a mut Sink,
}

pub fn resolve(root: &Path, sink: &mut Sink) -> Resolved {
    let mut resolved = Resolved::default();
    let path = root.join(PROPERTIES_FILE);
    if !path.is_file() {
        return resolved;
    }
    let mut resolver = Resolver {
        root,
        descriptors: Vec::new(),
        done: BTreeMap::new(),
        order: Vec::new(),
        stack: Vec::new(),
        sink,
    };
    let Some(file) = resolver.read_text(&path) else {
        resolved.descriptors = resolver.descriptors;
        return resolved;
    };
    let props = parse_properties(&file);
    let pom = resolver.read_pom(root);
    resolved.base_name = declared(&props, "name", pom.as_ref(), resolver.sink)
        .ok()
        .flatten();
    resolved.base_version = declared(&props, "version", pom.as_ref(), resolver.sink)
        .ok()
        .flatten();
    resolver.stack.push(
        resolved
            .base_name
            .clone()
            .unwrap_or_else(|| "(base)".into()),
    );
    resolver.requirements(&props);
    resolved.dependencies = resolver.order;
    resolved.descriptors = resolver.descriptors;
    resolved
}

impl Resolver<'_> {
    /// Reads a descriptor (with the size cap of every input), keeping its bytes for the
    /// content hash.
    fn read_text(&mut self, path: &Path) -> Option<Arc<TextFile>> {
        let display: Arc<str> = crate::vfs::relative(path, self.root).into();
        let bytes = crate::vfs::read_capped(path, &display, self.sink)?;
        self.descriptors.push(ExtraFile {
            display: display.clone(),
            bytes: bytes.clone(),
        });
        crate::vfs::decode_bytes(display, bytes, self.sink)
    }

    /// The `pom.xml` in `dir`, when there is one: what `${…}` placeholders can name.
    fn read_pom(&mut self, dir: &Path) -> Option<Pom> {
        let path = dir.join("pom.xml");
        if !path.is_file() {
            return None;
        }
        let file = self.read_text(&path)?;
        let tree = match crate::xml::parse(&file.text) {
            Ok(t) => t,
            Err(e) => {
                self.sink.emit(
                    Code::XmlSyntax,
                    &file.loc(e.offset, 0),
                    format!("Invalid XML: {}", e.message),
                );
                return None;
            }
        };
        let mut values = BTreeMap::new();
        let parent = tree.child("parent");
        for field in ["artifactId", "version", "groupId", "name"] {
            let own = tree.child_text(field);
            // A module's pom inherits the parent's version (and group) when it has none.
            let value = own.or_else(|| {
                (field != "artifactId")
                    .then(|| parent.and_then(|p| p.child_text(field)))
                    .flatten()
            });
            if let Some(v) = value {
                values.insert(format!("project.{field}"), v);
            }
            if let Some(v) = parent.and_then(|p| p.child_text(field)) {
                values.insert(format!("project.parent.{field}"), v);
            }
        }
        if let Some(props) = tree.child("properties") {
            for p in &props.children {
                values.insert(p.name.clone(), p.text.trim().to_string());
            }
        }
        Some(Pom { values })
    }

    /// Follows the `content.*` lines of one package and checks its module requirements.
    fn requirements(&mut self, props: &[Property]) {
        for p in props {
            if let Some(name) = p.key.strip_prefix("content.") {
                let range = match Range::parse(&p.value) {
                    Ok(r) => r,
                    Err(e) => {
                        self.bad_range(p, &e);
                        continue;
                    }
                };
                self.require(name, &range, &p.value_loc);
            } else if let Some(module) = p.key.strip_prefix("omod.") {
                self.provided(
                    &format!("module '{module}'"),
                    builtin::provided_module(module),
                    p,
                );
            } else if p.key == "war.openmrs" {
                self.provided("OpenMRS platform", Some(builtin::PLATFORM_VERSION), p);
            }
        }
    }

    fn bad_range(&mut self, p: &Property, why: &str) {
        self.sink
            .emit(
                Code::UnresolvedDependency,
                &p.value_loc,
                format!("Invalid version range '{}' for '{}'", p.value, p.key),
            )
            .help = Some(format!(
            "{why}; write a range such as >=1.0.0, ^1.2.0, 1.x or [1.0,2.0)"
        ));
    }

    fn provided(&mut self, what: &str, have: Option<&str>, p: &Property) {
        let range = match Range::parse(&p.value) {
            Ok(r) => r,
            Err(e) => return self.bad_range(p, &e),
        };
        match have {
            None => {
                self.sink
                    .emit(
                        Code::UnsupportedModule,
                        &p.value_loc,
                        format!("The package needs {what}, which the runtime does not provide"),
                    )
                    .help = Some(
                    "the content that needs it may not work; docs/content.md lists the modules the runtime stands in for".into(),
                );
            }
            Some(v) => {
                let version = Version::parse(v).expect("the runtime's versions parse");
                if !range.contains(&version) {
                    self.sink
                        .emit(
                            Code::UnsupportedModule,
                            &p.value_loc,
                            format!(
                                "The package needs {what} {range}; the runtime stands in for version {v}"
                            ),
                        )
                        .help = Some(
                        "check that the content works with this version, or lower the requirement".into(),
                    );
                }
            }
        }
    }

    fn require(&mut self, name: &str, range: &Range, at: &Loc) {
        if let Some(i) = self.stack.iter().position(|s| s == name) {
            let mut path: Vec<&str> = self.stack[i..].iter().map(String::as_str).collect();
            path.push(name);
            self.sink
                .emit(
                    Code::Cycle,
                    at,
                    format!("Content package dependency cycle: {}", path.join(" → ")),
                )
                .help = Some("a package cannot depend, even indirectly, on itself".into());
            return;
        }
        if let Some(version) = self.done.get(name) {
            self.check_version(name, version.clone().as_ref(), range, at);
            return;
        }
        let valid_name = !name.is_empty()
            && !name.starts_with('.')
            && !name.contains(['/', '\\', ':'])
            && !name.chars().any(char::is_control);
        if !valid_name {
            self.sink
                .emit(
                    Code::UnresolvedDependency,
                    at,
                    format!("'{name}' is not a content package name"),
                )
                .help = Some(format!(
                "a package's name is the name of its folder in {PACKAGES_DIR}/: no '/', '\\' or ':', not starting with '.'"
            ));
            return;
        }
        let dir = self.root.join(PACKAGES_DIR).join(name);
        if !dir.is_dir() {
            let available = available_packages(self.root);
            self.sink
                .emit(
                    Code::UnresolvedDependency,
                    at,
                    format!("Content package '{name}' not found"),
                )
                .help = Some(format!(
                "put the package in {PACKAGES_DIR}/{name}/ (packages there: {})",
                if available.is_empty() {
                    "none".into()
                } else {
                    available.join(", ")
                }
            ));
            return;
        }
        let props_path = dir.join(PROPERTIES_FILE);
        let props = if props_path.is_file() {
            match self.read_text(&props_path) {
                Some(f) => parse_properties(&f),
                None => return,
            }
        } else {
            self.sink
                .emit(
                    Code::UnresolvedDependency,
                    at,
                    format!("Content package '{name}' has no {PROPERTIES_FILE}"),
                )
                .help = Some(format!(
                "a content package declares its name and version in {PACKAGES_DIR}/{name}/{PROPERTIES_FILE}"
            ));
            return;
        };
        let pom = self.read_pom(&dir);
        // A placeholder nothing defines was reported; the version is then unknown, which
        // is not reported again.
        let (version_text, reported) = match declared(&props, "version", pom.as_ref(), self.sink) {
            Ok(v) => (v, false),
            Err(()) => (None, true),
        };
        let version = version_text.as_deref().and_then(Version::parse);
        if version_text.is_some() && version.is_none() {
            let loc = props
                .iter()
                .find(|p| p.key == "version")
                .map(|p| p.value_loc.clone())
                .unwrap_or_default();
            self.sink.emit(
                Code::UnresolvedDependency,
                &loc,
                format!(
                    "Version '{}' of content package '{name}' is not a version",
                    version_text.as_deref().unwrap_or("")
                ),
            );
        }
        if version.is_some() || (version_text.is_none() && !reported) {
            self.check_version(name, version.as_ref(), range, at);
        }
        let (config_dir, frontend_files) = match layout(&dir) {
            Some(l) => l,
            None => {
                self.sink
                    .emit(
                        Code::UnresolvedDependency,
                        at,
                        format!("Content package '{name}' holds no configuration"),
                    )
                    .help = Some(format!(
                    "a package holds configuration/backend_configuration/ (as OpenMRS publishes packages) or openmrs_config/ in {PACKAGES_DIR}/{name}/"
                ));
                return;
            }
        };
        self.done.insert(name.to_string(), version);
        self.stack.push(name.to_string());
        self.requirements(&props);
        self.stack.pop();
        self.order.push(Package {
            name: name.to_string(),
            version: version_text,
            config_dir,
            frontend_files,
        });
    }

    fn check_version(&mut self, name: &str, version: Option<&Version>, range: &Range, at: &Loc) {
        match version {
            Some(v) if !range.contains(v) => {
                self.sink
                    .emit(
                        Code::UnresolvedDependency,
                        at,
                        format!(
                            "Content package '{name}' is version {v}, outside the range '{range}' required here"
                        ),
                    )
                    .help = Some(format!(
                    "put a version of '{name}' that matches in {PACKAGES_DIR}/{name}/, or change the range"
                ));
            }
            None if range.contains(&Version::parse("0").expect("parses")) => {}
            None => {
                self.sink
                    .emit(
                        Code::UnresolvedDependency,
                        at,
                        format!(
                            "Content package '{name}' declares no version, so the range '{range}' cannot be checked"
                        ),
                    )
                    .help = Some(format!(
                    "add version=… to {PACKAGES_DIR}/{name}/{PROPERTIES_FILE}"
                ));
            }
            Some(_) => {}
        }
    }
}

/// The package's backend configuration folder and front-end configuration files.
fn layout(dir: &Path) -> Option<(PathBuf, Vec<PathBuf>)> {
    let published = dir.join("configuration/backend_configuration");
    if published.is_dir() {
        let mut frontend: Vec<PathBuf> =
            std::fs::read_dir(dir.join("configuration/frontend_configuration"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
                .collect();
        frontend.sort();
        return Some((published, frontend));
    }
    let own = dir.join("openmrs_config");
    own.is_dir().then(|| (own, Vec::new()))
}

fn available_packages(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(PACKAGES_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

/// What a `pom.xml` beside a package says, for `${…}` placeholders.
struct Pom {
    values: BTreeMap<String, String>,
}

/// A `name` or `version` line (the last one, as Java reads properties), its `${…}`
/// placeholders resolved from the `pom.xml`. `Err` when a placeholder cannot be resolved
/// (reported here).
fn declared(
    props: &[Property],
    key: &str,
    pom: Option<&Pom>,
    sink: &mut Sink,
) -> Result<Option<String>, ()> {
    let Some(p) = props.iter().rev().find(|p| p.key == key) else {
        return Ok(None);
    };
    let mut out = String::new();
    let mut rest = p.value.as_str();
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            // An unclosed `${` is kept as written.
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let placeholder = &rest[start + 2..start + end];
        match pom.and_then(|pom| pom.values.get(placeholder)) {
            Some(v) => out.push_str(v),
            None => {
                sink.emit(
                    Code::UnresolvedDependency,
                    &p.value_loc,
                    format!("Placeholder '${{{placeholder}}}' in '{key}' cannot be resolved"),
                )
                .help = Some(if pom.is_none() {
                    "no pom.xml beside content.properties defines it; write the value itself".into()
                } else {
                    "the pom.xml beside content.properties does not define it".into()
                });
                return Err(());
            }
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_keep_positions_and_skip_comments() {
        let f = TextFile::new(
            "content.properties".into(),
            "# a comment\nname=refapp\nversion = 1.2.0\ncontent.x: >=1.0\n".into(),
        );
        let props = parse_properties(&f);
        let keys: Vec<_> = props
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("name", "refapp"),
                ("version", "1.2.0"),
                ("content.x", ">=1.0")
            ]
        );
        let pos = props[1].value_loc.position().unwrap();
        assert_eq!((pos.line, pos.column), (3, 11));
    }
}
