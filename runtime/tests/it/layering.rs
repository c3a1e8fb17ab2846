//! The runtime's layers only look down: a test that reads the sources (`crate::` paths,
//! test modules left out) and fails on an import that points up a layer, on a circle
//! between rooms, and on HTTP in a domain's core (`mod.rs`, `store.rs`). ARCHITECTURE.md ("Layers")
//! states the rules this checks.
//!
//! A room is a file directly under `src/` or a folder under it; each folder under
//! `src/domains/` is a room of its own, and the files directly in `src/domains/` (the
//! registry) are the room `domains`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every room and its layer: a room may import rooms of its own layer or a lower one.
/// `lib` and `main` are the crate's roots and only declare modules or start the binary.
fn layer_of(room: &str) -> Option<u8> {
    Some(match room {
        "wire" | "catalog" | "identifiers" | "spa_pack" | "throttle" | "serve" | "embedded"
        | "background" | "invalid" => 0,
        "store" | "access" | "search" | "overlay" | "clinic" => 1,
        "http" | "auth" => 2,
        "content" => 3,
        r if r.starts_with("domains/") => 4,
        "domains" => 5,
        "app" | "ops" => 6,
        "lib" | "main" => 7,
        _ => return None,
    })
}

const LAYER_NAMES: [&str; 8] = [
    "base", "store", "kernel", "content", "domain", "registry", "app", "root",
];

/// A source file: its path under `src/` (`domains/visit/rest.rs`) and its text.
type Source = (String, String);

/// The room of a module path (`["domains", "visit", "store"]`), given the folders under
/// `src/` and under `src/domains/`.
fn room(path: &[&str], dirs: &BTreeSet<String>) -> String {
    match path {
        [] => "lib".into(),
        ["domains", d, ..] if dirs.contains(&format!("domains/{d}")) => format!("domains/{d}"),
        [first, ..] => (*first).to_string(),
    }
}

/// The room a file belongs to.
fn room_of_file(file: &str, dirs: &BTreeSet<String>) -> String {
    let trimmed = file.trim_end_matches(".rs");
    let parts: Vec<&str> = trimmed.split('/').collect();
    match parts.as_slice() {
        ["lib"] => "lib".into(),
        ["main"] => "main".into(),
        _ => room(&parts, dirs),
    }
}

/// The text of a file without its `#[cfg(test)] mod tests` and without comments.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::` path of `code`, with `use` groups (`crate::a::{b, c::d}`) expanded.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while let Some(found) = code[i..].find("crate::") {
        let start = i + found;
        let preceded = start > 0 && {
            let c = bytes[start - 1];
            c.is_ascii_alphanumeric() || c == b'_' || c == b':'
        };
        i = start + "crate::".len();
        if !preceded {
            expand(&code[i..], Vec::new(), &mut out);
        }
    }
    out
}

/// Reads one use tree at the start of `text` under `prefix`.
fn expand(text: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut segments = prefix;
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(inner) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut from = 0;
            for (k, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        expand(&inner[from..k], segments.clone(), out);
                        from = k + 1;
                        if c == '}' {
                            return;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            return;
        }
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() {
            if !segments.is_empty() {
                out.push(segments);
            }
            return;
        }
        rest = &rest[word.len()..];
        segments.push(word);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => {
                out.push(segments);
                return;
            }
        }
    }
}

/// The room-to-room imports of a set of sources, each with the first file that makes it.
fn imports(sources: &[Source], domain_rooms: bool) -> BTreeMap<(String, String), String> {
    let mut dirs = BTreeSet::new();
    for (file, _) in sources {
        let parts: Vec<&str> = file.split('/').collect();
        if parts.len() > 1 {
            dirs.insert(parts[0].to_string());
        }
        if domain_rooms && parts.len() > 2 && parts[0] == "domains" {
            dirs.insert(format!("domains/{}", parts[1]));
        }
    }
    let mut edges = BTreeMap::new();
    for (file, text) in sources {
        let from = room_of_file(file, &dirs);
        for path in crate_paths(&code_of(text)) {
            let segments: Vec<&str> = path.iter().map(String::as_str).collect();
            // `crate::X` naming an item of the root, not a module, belongs to no room.
            if segments.len() == 1 && !dirs.contains(segments[0]) {
                let file_exists = sources
                    .iter()
                    .any(|(f, _)| f == &format!("{}.rs", segments[0]));
                if !file_exists {
                    continue;
                }
            }
            let to = room(&segments, &dirs);
            if to != from {
                edges
                    .entry((from.clone(), to))
                    .or_insert_with(|| file.clone());
            }
        }
    }
    edges
}

/// Every rule the sources break, in words.
fn violations(sources: &[Source]) -> Vec<String> {
    let edges = imports(sources, true);
    let mut found = Vec::new();
    for ((from, to), file) in &edges {
        match (layer_of(from), layer_of(to)) {
            (None, _) => found.push(format!(
                "{file}: the room `{from}` has no layer: add it to layer_of"
            )),
            (_, None) => found.push(format!("{file}: imports `{to}`, a room with no layer")),
            (Some(a), Some(b)) if b > a => found.push(format!(
                "{file}: `{from}` ({}) imports `{to}` ({}), a layer above it",
                LAYER_NAMES[a as usize], LAYER_NAMES[b as usize]
            )),
            _ => {}
        }
    }
    for (file, text) in sources {
        let parts: Vec<&str> = file.split('/').collect();
        let core = matches!(parts.as_slice(), ["domains", _, "mod.rs" | "store.rs"]);
        if core {
            let code = code_of(text);
            if code.contains("axum") || code.contains("crate::http") {
                found.push(format!(
                    "{file}: a domain's core knows HTTP (axum or crate::http)"
                ));
            }
        }
    }
    let graph: BTreeMap<&str, Vec<&str>> = edges.keys().fold(BTreeMap::new(), |mut g, (a, b)| {
        g.entry(a.as_str()).or_default().push(b.as_str());
        g
    });
    for circle in circles(&graph) {
        found.push(format!("a circle of rooms: {}", circle.join(" → ")));
    }
    found
}

/// The circles of a directed graph: each strongly connected component of more than one
/// room (Tarjan's algorithm).
fn circles<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct Walk<'a, 'g> {
        graph: &'g BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<&'a str>>,
    }
    impl<'a> Walk<'a, '_> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for &next in self.graph.get(node).map(Vec::as_slice).unwrap_or(&[]) {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top);
                    if top == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    let nodes: Vec<&str> = graph.keys().copied().collect();
    for node in nodes {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.found
}

fn read_sources(dir: &Path, under: &str, out: &mut Vec<Source>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().to_string();
        let path = if under.is_empty() {
            name.clone()
        } else {
            format!("{under}/{name}")
        };
        if entry.file_type().unwrap().is_dir() {
            read_sources(&entry.path(), &path, out);
        } else if name.ends_with(".rs") {
            out.push((path, std::fs::read_to_string(entry.path()).unwrap()));
        }
    }
}

fn sources_of(dir: &Path) -> Vec<Source> {
    let mut sources = Vec::new();
    read_sources(dir, "", &mut sources);
    sources
}

fn runtime_sources() -> Vec<Source> {
    sources_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The compiler's modules form no circle either (its `domains` folder is one room: its
/// content folders share one loader).
#[test]
fn the_compiler_has_no_circle() {
    let sources = sources_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../compiler/src"));
    let edges = imports(&sources, false);
    let graph: BTreeMap<&str, Vec<&str>> = edges.keys().fold(BTreeMap::new(), |mut g, (a, b)| {
        g.entry(a.as_str()).or_default().push(b.as_str());
        g
    });
    assert!(
        edges.len() > 20,
        "the compiler's imports were not read: {edges:?}"
    );
    assert_eq!(circles(&graph), Vec::<Vec<&str>>::new());
}

#[test]
fn the_runtime_layers_only_look_down() {
    let found = violations(&runtime_sources());
    assert!(
        found.is_empty(),
        "layering rules broken:\n{}",
        found.join("\n")
    );
}

/// The rule can fail: the real sources with one upward import injected into the store.
#[test]
fn an_injected_upward_import_is_refused() {
    let mut sources = runtime_sources();
    let store = sources
        .iter_mut()
        .find(|(f, _)| f == "store/mod.rs")
        .expect("the store's module");
    store.1.insert_str(0, "use crate::http::Caller;\n");
    let found = violations(&sources);
    assert!(
        found
            .iter()
            .any(|v| v.contains("`store` (store) imports `http` (kernel), a layer above it")),
        "{found:?}"
    );
}

#[test]
fn a_new_circle_between_domains_is_refused() {
    let mut sources = runtime_sources();
    let patient = sources
        .iter_mut()
        .find(|(f, _)| f == "domains/patient/rest.rs")
        .expect("the patient's REST module");
    patient
        .1
        .insert_str(0, "fn f() { crate::domains::visit::store::visits_of; }\n");
    let found = violations(&sources);
    assert!(
        found
            .iter()
            .any(|v| v.starts_with("a circle of rooms:") && v.contains("domains/patient")),
        "{found:?}"
    );
}

#[test]
fn http_in_a_domain_store_is_refused() {
    let mut sources = runtime_sources();
    let visits = sources
        .iter_mut()
        .find(|(f, _)| f == "domains/visit/store.rs")
        .expect("the visits' storage");
    visits.1.insert_str(0, "use axum::http::StatusCode;\n");
    let found = violations(&sources);
    assert!(
        found
            .iter()
            .any(|v| v.contains("domains/visit/store.rs: a domain's core knows HTTP")),
        "{found:?}"
    );
}

#[test]
fn http_in_a_domain_core_is_refused() {
    let mut sources = runtime_sources();
    let visits = sources
        .iter_mut()
        .find(|(f, _)| f == "domains/visit/mod.rs")
        .expect("the visits' rules");
    visits
        .1
        .insert_str(0, "fn f(_: &crate::http::AppState) {}\n");
    let found = violations(&sources);
    assert!(
        found
            .iter()
            .any(|v| v.contains("domains/visit/mod.rs: a domain's core knows HTTP")),
        "{found:?}"
    );
}

#[test]
fn use_groups_and_inline_paths_are_read() {
    let paths = crate_paths(
        "use crate::http::{AppState, answer::{nest, rep_of}};\nfn f() { crate::wire::today(); x::crate::no(); }",
    );
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        [
            "http::AppState",
            "http::answer::nest",
            "http::answer::rep_of",
            "wire::today"
        ]
    );
}
