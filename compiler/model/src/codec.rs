//! The bundle's byte layout and its only encoder and decoder.
//!
//! Layout: `MAGIC` (8 bytes) | format version (u16, little endian) | header length (u32,
//! little endian) | header (bincode) | body (bincode). The header can be read without
//! decoding the body, so a reader refuses an unknown format before touching the rest.
//! bincode stays behind this module so that replacing it is a one-file change plus a
//! `FORMAT_VERSION` bump.

use crate::{Bundle, Content, Header};
use sha2::{Digest, Sha256};

/// First bytes of every bundle.
pub const MAGIC: [u8; 8] = *b"EMRBNDL\0";
/// Bumped on every change of `Header` or `Content`; see docs/bundle-format.md.
pub const FORMAT_VERSION: u16 = 13;

const PREFIX_LEN: usize = MAGIC.len() + 2 + 4;

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not a bundle: the file does not start with the bundle magic number")]
    BadMagic,
    #[error("bundle format version {found} is not supported (this build reads version {expected})")]
    UnsupportedVersion { found: u16, expected: u16 },
    #[error("the bundle is truncated")]
    Truncated,
    #[error("the bundle body does not match its checksum (corrupted bundle)")]
    ChecksumMismatch,
    #[error("the bundle is malformed: {0}")]
    Malformed(String),
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
}

/// Counts and hashes what is written, keeping nothing.
struct HashingSink {
    hasher: Sha256,
    len: usize,
}

impl std::io::Write for HashingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.hasher.update(buf);
        self.len += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes a bundle. `header.body_sha256` and `header.format_version` are filled in here.
/// The body is encoded twice (once to hash it, once to write it) so no copy of it is
/// held in memory.
pub fn encode_to(
    header: &Header,
    content: &Content,
    out: &mut impl std::io::Write,
) -> std::io::Result<usize> {
    let mut sink = HashingSink {
        hasher: Sha256::new(),
        len: 0,
    };
    bincode::serde::encode_into_std_write(content, &mut sink, config())
        .map_err(std::io::Error::other)?;
    let mut header = header.clone();
    header.format_version = FORMAT_VERSION;
    header.body_sha256 = hex(&sink.hasher.finalize());
    let head = bincode::serde::encode_to_vec(&header, config()).map_err(std::io::Error::other)?;
    out.write_all(&MAGIC)?;
    out.write_all(&FORMAT_VERSION.to_le_bytes())?;
    out.write_all(&(head.len() as u32).to_le_bytes())?;
    out.write_all(&head)?;
    let written = bincode::serde::encode_into_std_write(content, out, config())
        .map_err(std::io::Error::other)?;
    debug_assert_eq!(written, sink.len);
    Ok(PREFIX_LEN + head.len() + written)
}

/// Encodes a bundle in memory.
pub fn encode(header: &Header, content: &Content) -> Vec<u8> {
    let mut out = Vec::new();
    encode_to(header, content, &mut out)
        .expect("writing to memory cannot fail; content always encodes");
    out
}

/// Reads and checks only the header; returns it with the offset where the body starts.
pub fn decode_header(bytes: &[u8]) -> Result<(Header, usize), DecodeError> {
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    if bytes.len() < PREFIX_LEN {
        return Err(DecodeError::Truncated);
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            found: version,
            expected: FORMAT_VERSION,
        });
    }
    let head_len = u32::from_le_bytes([bytes[10], bytes[11], bytes[12], bytes[13]]) as usize;
    let body_start = PREFIX_LEN
        .checked_add(head_len)
        .filter(|&end| end <= bytes.len())
        .ok_or(DecodeError::Truncated)?;
    let (header, _): (Header, usize) =
        bincode::serde::decode_from_slice(&bytes[PREFIX_LEN..body_start], config())
            .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    Ok((header, body_start))
}

/// Decodes a whole bundle, verifying the header and the body checksum.
pub fn decode(bytes: &[u8]) -> Result<Bundle, DecodeError> {
    let (header, body_start) = decode_header(bytes)?;
    let body = &bytes[body_start..];
    if hex(&Sha256::digest(body)) != header.body_sha256 {
        return Err(DecodeError::ChecksumMismatch);
    }
    let (content, _): (Content, usize) = bincode::serde::decode_from_slice(body, config())
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    Ok(Bundle { header, content })
}

/// Lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BuildType;

    fn header() -> Header {
        Header {
            format_version: 0,
            compiler_version: "0.0.0".into(),
            build_type: BuildType::Distro,
            site: None,
            content_hash: "00".into(),
            body_sha256: String::new(),
            layers: vec![crate::PackageLayer {
                role: "base".into(),
                name: "test".into(),
                version: Some("1.0.0".into()),
            }],
        }
    }

    #[test]
    fn round_trip_keeps_content() {
        let content = Content {
            frontend_config: "{}".into(),
            ..Content::default()
        };
        let bytes = encode(&header(), &content);
        let bundle = decode(&bytes).unwrap();
        assert_eq!(bundle.content, content);
        assert_eq!(bundle.header.format_version, FORMAT_VERSION);
    }

    #[test]
    fn refuses_other_format_versions_and_corruption() {
        let mut bytes = encode(&header(), &Content::default());
        let mut future = bytes.clone();
        future[8] = 99;
        assert!(matches!(
            decode(&future),
            Err(DecodeError::UnsupportedVersion { found: 99, .. })
        ));
        assert!(matches!(decode(b"garbage!"), Err(DecodeError::BadMagic)));
        assert!(matches!(decode(&bytes[..12]), Err(DecodeError::Truncated)));
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        assert!(matches!(decode(&bytes), Err(DecodeError::ChecksumMismatch)));
    }
}
