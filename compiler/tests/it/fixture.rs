//! Multi-file fixtures: one text holds several files, each introduced by a line
//! `//- <path>`. A path of the form `dir/x.zip!member` puts the following text into the
//! zip `dir/x.zip` as `member`. Files are written to a fresh temporary project root.
//!
//! Modifiers after the path: `(latin1)` writes the text in ISO-8859-1 (to make invalid
//! UTF-8), `(base64)` decodes the text (binary files), `(repeat N)` repeats the text N times. `//~ symlink <path> <target>` makes a
//! symbolic link.

use std::io::Write;
use std::path::Path;

pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// Writes the fixture's files and returns the temporary project.
pub fn materialize(text: &str) -> Project {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut files: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(link) = line.strip_prefix("//~ symlink ") {
            let mut parts = link.split_whitespace();
            let (path, target) = (
                parts.next().expect("link path"),
                parts.next().expect("link target"),
            );
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::os::unix::fs::symlink(target, full).expect("symlink");
            files.push((String::new(), String::new()));
        } else if let Some(path) = line.strip_prefix("//- ") {
            files.push((path.trim().to_string(), String::new()));
        } else if let Some((_, body)) = files.last_mut() {
            body.push_str(line);
        }
    }
    let mut zips: std::collections::BTreeMap<String, Vec<(String, String)>> = Default::default();
    for (spec, body) in files {
        if spec.is_empty() {
            continue;
        }
        let (path, modifier) = match spec.split_once(" (") {
            Some((p, m)) => (p.to_string(), m.trim_end_matches(')').to_string()),
            None => (spec.clone(), String::new()),
        };
        let body = match modifier.strip_prefix("repeat ") {
            Some(n) => body.repeat(n.parse().expect("repeat count")),
            None => body,
        };
        let bytes: Vec<u8> = if modifier == "base64" {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(body.split_whitespace().collect::<String>())
                .expect("base64 body")
        } else if modifier == "latin1" {
            body.chars()
                .map(|c| u8::try_from(u32::from(c)).expect("latin-1 text"))
                .collect()
        } else {
            body.into_bytes()
        };
        match path.split_once('!') {
            Some((zip, member)) => zips.entry(zip.to_string()).or_default().push((
                member.to_string(),
                String::from_utf8(bytes).expect("zip members are UTF-8"),
            )),
            None => write(dir.path(), &path, &bytes),
        }
    }
    for (zip, members) in zips {
        write(dir.path(), &zip, &zip_of(&members));
    }
    Project { dir }
}

pub fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("has parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

pub fn zip_of(members: &[(String, String)]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, body) in members {
            z.start_file(name.as_str(), options).expect("zip entry");
            z.write_all(body.as_bytes()).expect("zip write");
        }
        z.finish().expect("zip finish");
    }
    buf.into_inner()
}

/// A valid 1×1 PNG image.
pub fn tiny_png() -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGPg7hbtBgADlAGWgPC7ZwAAAABJRU5ErkJggg==")
        .expect("valid base64")
}
