//! The packed front end: the built O3 application's files in one blob that the runtime
//! embeds, so one binary serves both the API and the application.
//!
//! Shared by the build script (`pack`, reading `EMR_SPA_DIR`) and the runtime (`unpack`),
//! so both sides agree on one format by construction:
//!
//! ```text
//! "EMRSPA1\n"  then per file, sorted by path:
//!   u32 path length, path (UTF-8, '/'-separated, relative to the application's root)
//!   u8 flags (1 = the bytes are gzip-compressed)
//!   u64 FNV-1a hash of the uncompressed bytes (the HTTP validator)
//!   u64 length, the bytes
//! ```
//!
//! Text files are stored gzip-compressed: they are sent as they are to browsers that accept
//! gzip (all of them), which a facility's slow network needs. The few files the runtime fills
//! at start (the application path, the configuration's address, the default language) are
//! stored as they are. Source maps are left out: they are for the front end's developers.
//! Every integer is little-endian; packing the same files gives the same bytes.

use std::io::Write;

pub const MAGIC: &[u8; 8] = b"EMRSPA1\n";
const GZIP: u8 = 1;

/// One file of the packed application, borrowed from the blob.
pub struct PackedFile<'a> {
    pub path: &'a str,
    pub gzip: bool,
    pub hash: u64,
    pub bytes: &'a [u8],
}

/// Whether a file holds the placeholders `frontend/startup.sh` fills in a container; the
/// runtime fills them at start, so they are stored uncompressed.
pub fn filled_at_start(path: &str) -> bool {
    path == "index.html"
        || path == "service-worker.js"
        || (path.starts_with("manifest.") && path.ends_with(".json") && !path.contains('/'))
}

/// Whether a file is worth compressing (fonts and images already are).
fn compressible(path: &str) -> bool {
    let ext = path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    matches!(ext, "js" | "mjs" | "css" | "json" | "html" | "svg" | "txt")
}

/// Whether a file of the built application belongs in the pack.
pub fn wanted(path: &str) -> bool {
    !path.ends_with(".map")
}

/// FNV-1a, 64 bits: a stable content hash for ETags, the same on every build.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Packs files given as (relative path, bytes); the order given does not matter.
pub fn pack(files: &mut [(String, Vec<u8>)]) -> Vec<u8> {
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = MAGIC.to_vec();
    for (path, bytes) in files.iter() {
        let compress = compressible(path) && !filled_at_start(path);
        let stored = if compress {
            // No file name and a zero time in the gzip header: the same input, the same bytes.
            let mut encoder = flate2::GzBuilder::new()
                .mtime(0)
                .write(Vec::new(), flate2::Compression::best());
            encoder
                .write_all(bytes)
                .and_then(|_| encoder.finish())
                .expect("compressing into memory cannot fail")
        } else {
            bytes.clone()
        };
        out.extend_from_slice(&(path.len() as u32).to_le_bytes());
        out.extend_from_slice(path.as_bytes());
        out.push(if compress { GZIP } else { 0 });
        out.extend_from_slice(&fnv1a(bytes).to_le_bytes());
        out.extend_from_slice(&(stored.len() as u64).to_le_bytes());
        out.extend_from_slice(&stored);
    }
    out
}

/// Reads a pack; an empty blob is an application-less build.
pub fn unpack(blob: &[u8]) -> Result<Vec<PackedFile<'_>>, String> {
    if blob.is_empty() {
        return Ok(Vec::new());
    }
    let Some(mut rest) = blob.strip_prefix(MAGIC.as_slice()) else {
        return Err("the embedded front end does not start with its format marker".into());
    };
    let mut files = Vec::new();
    fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
        if rest.len() < n {
            return Err("the embedded front end is cut short".into());
        }
        let (head, tail) = rest.split_at(n);
        *rest = tail;
        Ok(head)
    }
    fn number<const N: usize>(rest: &mut &[u8]) -> Result<[u8; N], String> {
        let bytes = take(rest, N)?;
        Ok(bytes.try_into().expect("take returned N bytes"))
    }
    while !rest.is_empty() {
        let path_len = u32::from_le_bytes(number(&mut rest)?) as usize;
        let path = std::str::from_utf8(take(&mut rest, path_len)?)
            .map_err(|_| "a path in the embedded front end is not UTF-8".to_string())?;
        let flags = take(&mut rest, 1)?[0];
        let hash = u64::from_le_bytes(number(&mut rest)?);
        let len = usize::try_from(u64::from_le_bytes(number(&mut rest)?))
            .map_err(|_| "a file in the embedded front end is too large".to_string())?;
        let bytes = take(&mut rest, len)?;
        files.push(PackedFile {
            path,
            gzip: flags & GZIP != 0,
            hash,
            bytes,
        });
    }
    Ok(files)
}
