//! Attachments: images and PDFs uploaded to a patient's chart, as the attachments module
//! keeps them (`attachment`, `attachment/{uuid}/bytes`). The O3 attachments app uploads
//! with a caption, lists a patient's files, shows an image or a PDF inline, and deletes.
//!
//! Rules (the module's `AttachmentResource`): a patient is required; a file no larger than
//! the setting `attachments.maxUploadFileSize` (MB); its extension among
//! `attachments.allowedFileExtensions` (any, when the setting is empty); its content what
//! the extension says (read from the file's first bytes: a `.png` that is not a PNG image
//! is refused); a visit and an encounter, when given, of that patient, the encounter in
//! the visit. Deleting voids the attachment; a purge removes its bytes.
//!
//! The bytes are kept in the store, in a table of their own next to the attachment's
//! record, so an upload is durable in one commit with its record, a backup holds both,
//! and no file can be left without its record or the reverse.

pub mod rest;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttachmentRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    pub visit: Option<String>,
    pub encounter: Option<String>,
    /// The name it was uploaded under, with its extension.
    pub filename: String,
    pub caption: Option<String>,
    pub mime_type: String,
    /// Key form (`datetime_key`): when it was uploaded.
    pub datetime: String,
    pub size: u64,
    /// Hex SHA-256 of the bytes (what `check-store` compares).
    pub sha256: String,
    pub audit: Audit,
    pub voiding: Voiding,
}

impl AttachmentRecord {
    /// IMAGE, PDF or OTHER, as the module classes a file (the O3 app shows an image and a
    /// PDF inline and offers anything else for download).
    pub fn content_family(&self) -> &'static str {
        if self.mime_type.starts_with("image/") {
            "IMAGE"
        } else if self.mime_type == "application/pdf" {
            "PDF"
        } else {
            "OTHER"
        }
    }
}

/// The media type a file's first bytes show, if one this distribution recognises, with the
/// extensions that name it.
pub fn sniff(bytes: &[u8]) -> Option<(&'static str, &'static [&'static str])> {
    const KINDS: &[(&[u8], &str, &[&str])] = &[
        (b"%PDF-", "application/pdf", &["pdf"]),
        (b"\x89PNG\r\n\x1a\n", "image/png", &["png"]),
        (b"\xff\xd8\xff", "image/jpeg", &["jpg", "jpeg"]),
        (b"GIF87a", "image/gif", &["gif"]),
        (b"GIF89a", "image/gif", &["gif"]),
    ];
    KINDS
        .iter()
        .find(|(magic, _, _)| bytes.starts_with(magic))
        .map(|(_, mime, exts)| (*mime, *exts))
}

/// A file name's extension, lowercase (empty when it has none).
pub fn extension(filename: &str) -> String {
    match filename.rsplit_once('.') {
        Some((base, ext)) if !base.is_empty() => ext.to_lowercase(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_known_by_their_first_bytes_not_their_names() {
        assert_eq!(
            sniff(b"%PDF-1.7\n...").map(|k| k.0),
            Some("application/pdf")
        );
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n\0\0").map(|k| k.0),
            Some("image/png")
        );
        assert_eq!(
            sniff(b"\xff\xd8\xff\xe0").map(|k| k.1),
            Some(&["jpg", "jpeg"][..])
        );
        assert_eq!(sniff(b"<html>"), None);
        assert_eq!(extension("Radio thorax.PNG"), "png");
        assert_eq!(extension(".bashrc"), "");
        assert_eq!(extension("sans extension"), "");
    }
}
