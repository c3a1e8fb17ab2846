//! Backups of the store as JSON lines, and restoring them.
//!
//! A snapshot is a header line, one line per record (`{"t":table,"k":key,"v":value}`) and
//! an end line that counts the records and carries the SHA-256 of every byte before it.
//! A restore reads the file twice: first it checks the checksum, the count and that every
//! record decodes as its table's record type, naming the first bad line; only then does
//! it write, in one transaction. Index tables are derived and rebuilt by the restore, so
//! a backup holds records alone (plus the identifier and username indexes, which are
//! small and carry the uniqueness rules).

use crate::store::kv::TableDefinition;
use crate::store::record::{BlobTable, RecordTable, Registry};
use crate::store::{
    COUNTERS, IDENTIFIERS, META, PATIENTS, PatientRecord, SCHEMA_VERSION, SETTINGS, SettingRecord,
    Store, StoreError, USERNAMES, USERS, UserRecord,
};
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{BufRead, Read, Seek, Write};

/// First line of a snapshot.
#[derive(Debug, Serialize, Deserialize)]
struct SnapshotHeader {
    format: String,
    version: u32,
    schema: u32,
}

const SNAPSHOT_FORMAT: &str = "emr-store-snapshot";
/// Version 2 added the end line's checksum; version 1 files still restore (their records
/// are checked, but an edit that keeps a record decodable cannot be detected).
const SNAPSHOT_VERSION: u32 = 2;

/// One line of a snapshot: a table's key and value.
#[derive(Debug, Serialize, Deserialize)]
struct SnapshotLine {
    t: String,
    k: String,
    v: serde_json::Value,
}

/// Last line of a snapshot, so a truncated or altered file is detected.
#[derive(Debug, Serialize, Deserialize)]
struct SnapshotEnd {
    end: bool,
    records: u64,
    /// Hex SHA-256 of every byte before this line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("the data directory already holds a store with data; restore needs an empty one")]
    NotEmpty,
    #[error("not a store snapshot: {0}")]
    BadFormat(String),
    #[error("line {line}: {detail}; nothing was restored")]
    BadLine { line: u64, detail: String },
    #[error(
        "the snapshot's checksum does not match its content (the file was altered or damaged after the backup); nothing was restored"
    )]
    ChecksumMismatch,
    #[error("the snapshot is truncated (no end line): the backup did not finish")]
    Truncated,
    #[error("cannot read the snapshot: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A `Write` that hashes what passes through it.
struct Hashing<'a, W: Write> {
    out: &'a mut W,
    digest: Sha256,
}

impl<W: Write> Write for Hashing<'_, W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(data)?;
        self.digest.update(&data[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn line(out: &mut impl Write, v: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, v).map_err(std::io::Error::other)?;
    out.write_all(b"\n")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The store's own tables, by how their values are written: JSON records, and strings.
const CORE_JSON: &[(TableDefinition<&str, &[u8]>, &str)] = &[
    (PATIENTS, "patients"),
    (USERS, "users"),
    (SETTINGS, "settings"),
];
const CORE_TEXT: &[(TableDefinition<&str, &str>, &str)] = &[
    (META, "meta"),
    (IDENTIFIERS, "identifiers"),
    (USERNAMES, "usernames"),
];

impl Store {
    /// Writes a consistent snapshot of every table (one read transaction) as JSON lines,
    /// ending with the record count and checksum. Returns the record count.
    pub fn snapshot(&self, out: &mut impl Write) -> Result<u64, RestoreError> {
        let txn = self.begin_read()?;
        let mut out = Hashing {
            out,
            digest: Sha256::new(),
        };
        line(
            &mut out,
            &SnapshotHeader {
                format: SNAPSHOT_FORMAT.into(),
                version: SNAPSHOT_VERSION,
                schema: SCHEMA_VERSION,
            },
        )?;
        let mut records = 0u64;
        let mut record = |out: &mut Hashing<_>, t: &str, k: &str, v: serde_json::Value| {
            records += 1;
            line(
                out,
                &SnapshotLine {
                    t: t.into(),
                    k: k.into(),
                    v,
                },
            )
        };
        let json = |name: &'static str, bytes: &[u8]| -> Result<serde_json::Value, RestoreError> {
            serde_json::from_slice(bytes).map_err(|e| {
                StoreError::Corrupt {
                    table: name,
                    detail: e.to_string(),
                }
                .into()
            })
        };
        for (def, name) in CORE_TEXT {
            for row in txn.open_table(*def)?.iter()? {
                let (k, v) = row?;
                record(&mut out, name, k.value(), v.value().into())?;
            }
        }
        for (def, name) in CORE_JSON {
            for row in txn.open_table(*def)?.iter()? {
                let (k, v) = row?;
                let value = json(name, v.value())?;
                record(&mut out, name, k.value(), value)?;
            }
        }
        for table in self.registry.records {
            for row in txn.open_table(table.table)?.iter()? {
                let (k, v) = row?;
                let value =
                    (table.codec.to_json)(v.value()).map_err(|detail| StoreError::Corrupt {
                        table: table.name,
                        detail,
                    })?;
                record(&mut out, table.name, k.value(), value)?;
            }
        }
        for blob in self.registry.blobs {
            for row in txn.open_table(blob.table)?.iter()? {
                let (k, v) = row?;
                let text = base64::engine::general_purpose::STANDARD.encode(v.value());
                record(&mut out, blob.name, k.value(), text.into())?;
            }
        }
        for row in txn.open_table(COUNTERS)?.iter()? {
            let (k, v) = row?;
            record(&mut out, "counters", k.value(), v.value().into())?;
        }
        let digest = hex(&out.digest.clone().finalize());
        line(
            out.out,
            &SnapshotEnd {
                end: true,
                records,
                sha256: Some(digest),
            },
        )?;
        out.flush()?;
        Ok(records)
    }

    /// Whether the store holds any record besides its schema version.
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        let txn = self.begin_read()?;
        Ok(txn.open_table(PATIENTS)?.len()? == 0
            && txn.open_table(USERS)?.len()? == 0
            && txn.open_table(SETTINGS)?.len()? == 0)
    }

    /// Fills an empty store from a snapshot: checks all of it first (`verify`), then
    /// writes it in one transaction (all or nothing). Returns the record count.
    pub fn restore<R: Read + Seek>(&self, mut input: R) -> Result<u64, RestoreError> {
        if !self.is_empty()? {
            return Err(RestoreError::NotEmpty);
        }
        let registry = self.registry;
        let records = verify(std::io::BufReader::new(&mut input), registry)?;
        input.seek(std::io::SeekFrom::Start(0))?;
        let reader = std::io::BufReader::new(&mut input);
        let written = self.write_unaudited(|txn| {
            let mut written = 0u64;
            // Verified above: the header, then records until the end line.
            for l in reader.lines().skip(1) {
                let l = l.map_err(|e| StoreError::Redb(format!("reading the snapshot: {e}")))?;
                if l.trim().is_empty() {
                    continue;
                }
                let Ok(rec) = serde_json::from_str::<SnapshotLine>(&l) else {
                    break; // the end line
                };
                let k = rec.k.as_str();
                let text = || rec.v.as_str().unwrap_or_default().to_string();
                let json = || serde_json::to_vec(&rec.v).unwrap_or_default();
                match rec.t.as_str() {
                    // The store's own schema stays: this runtime writes the records it
                    // restores in its own way, whatever version the backup was taken at;
                    // an upgrade's marks belong to the store that was upgrading.
                    "meta"
                        if k == "schema_version"
                            || k == "upgrading_from"
                            || k.starts_with("upgrade_cursor:") => {}
                    "meta" => {
                        txn.open_table(META)?.insert(k, text().as_str())?;
                    }
                    "identifiers" => {
                        txn.open_table(IDENTIFIERS)?.insert(k, text().as_str())?;
                    }
                    "usernames" => {
                        txn.open_table(USERNAMES)?.insert(k, text().as_str())?;
                    }
                    "patients" => {
                        let bytes = json();
                        txn.open_table(PATIENTS)?.insert(k, bytes.as_slice())?;
                        let (key, flags) = super::updated_entry(&bytes)?;
                        txn.open_table(super::PATIENTS_BY_UPDATED)?
                            .insert(key.as_str(), flags)?;
                    }
                    "users" => {
                        txn.open_table(USERS)?.insert(k, json().as_slice())?;
                    }
                    "settings" => {
                        txn.open_table(SETTINGS)?.insert(k, json().as_slice())?;
                    }
                    "counters" => {
                        txn.open_table(COUNTERS)?
                            .insert(k, rec.v.as_u64().unwrap_or_default())?;
                    }
                    other if blob_table(registry, other).is_some() => {
                        let blob = blob_table(registry, other).expect("matched");
                        let bytes = base64::engine::general_purpose::STANDARD
                            .decode(rec.v.as_str().unwrap_or_default())
                            .map_err(|e| StoreError::Redb(format!("{other}: {e}")))?;
                        txn.open_table(blob.table)?.insert(k, bytes.as_slice())?;
                    }
                    other => {
                        let table = record_table(registry, other)
                            .ok_or_else(|| StoreError::Redb(format!("unknown table {other}")))?;
                        let bytes = (table.codec.from_json)(&rec.v).map_err(|detail| {
                            StoreError::Corrupt {
                                table: table.name,
                                detail,
                            }
                        })?;
                        txn.open_table(table.table)?.insert(k, bytes.as_slice())?;
                        (table.reindex)(txn, &bytes)?;
                    }
                }
                written += 1;
            }
            Ok(written)
        });
        self.forget_users();
        self.settings.invalidate();
        let written = written?;
        if written != records {
            // Cannot happen after `verify`, unless the file changed between the two reads.
            return Err(RestoreError::BadFormat(format!(
                "the file changed while it was restored ({written} records written, {records} checked)"
            )));
        }
        Ok(records)
    }
}

fn blob_table<'r>(registry: &'r Registry, name: &str) -> Option<&'r BlobTable> {
    registry.blobs.iter().find(|t| t.name == name)
}

fn record_table<'r>(registry: &'r Registry, name: &str) -> Option<&'r RecordTable> {
    registry.records.iter().find(|t| t.name == name)
}

/// Reads a whole snapshot without writing anything: its header, every record (each must
/// decode as its table's record type), the end line's count and checksum. Returns the
/// record count, or the first problem with its line number.
pub fn verify(mut input: impl BufRead, registry: &Registry) -> Result<u64, RestoreError> {
    let mut digest = Sha256::new();
    let mut buf = Vec::new();
    let mut number = 0u64;
    let mut records = 0u64;
    let mut version = 0;
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            return Err(if number == 0 {
                RestoreError::BadFormat("the file is empty".into())
            } else {
                RestoreError::Truncated
            });
        }
        number += 1;
        let bad = |detail: String| RestoreError::BadLine {
            line: number,
            detail,
        };
        let text = std::str::from_utf8(&buf).map_err(|_| bad("not UTF-8 text".into()))?;
        if number == 1 {
            let header: SnapshotHeader = serde_json::from_str(text).map_err(|e| {
                RestoreError::BadFormat(format!("line 1 is not a snapshot header: {e}"))
            })?;
            if header.format != SNAPSHOT_FORMAT || !(1..=SNAPSHOT_VERSION).contains(&header.version)
            {
                return Err(RestoreError::BadFormat(format!(
                    "format {} version {}",
                    header.format, header.version
                )));
            }
            if header.schema > SCHEMA_VERSION {
                return Err(StoreError::TooNew {
                    found: header.schema,
                    supported: SCHEMA_VERSION,
                }
                .into());
            }
            version = header.version;
            digest.update(&buf);
            continue;
        }
        if text.trim().is_empty() {
            digest.update(&buf);
            continue;
        }
        if let Ok(end) = serde_json::from_str::<SnapshotEnd>(text) {
            if end.records != records {
                return Err(bad(format!(
                    "the end line counts {} records, the file holds {records}",
                    end.records
                )));
            }
            match (end.sha256, version) {
                (Some(expected), _) => {
                    if hex(&digest.finalize()) != expected {
                        return Err(RestoreError::ChecksumMismatch);
                    }
                }
                (None, 1) => tracing::warn!(
                    "this backup predates checksums (format version 1): its records were checked one by one, but an edit cannot be detected"
                ),
                (None, _) => return Err(bad("the end line has no checksum".into())),
            }
            return Ok(records);
        }
        let rec: SnapshotLine =
            serde_json::from_str(text).map_err(|e| bad(format!("not a record: {e}")))?;
        check_record(&rec, registry).map_err(|e| bad(format!("{} {}: {e}", rec.t, rec.k)))?;
        digest.update(&buf);
        records += 1;
    }
}

/// Whether a snapshot line holds a value its table can store.
fn check_record(rec: &SnapshotLine, registry: &Registry) -> Result<(), String> {
    if rec.k.is_empty() {
        return Err("empty key".into());
    }
    let json = || serde_json::to_vec(&rec.v).map_err(|e| e.to_string());
    let text = || match rec.v {
        serde_json::Value::String(_) => Ok(()),
        _ => Err("expected a string".to_string()),
    };
    match rec.t.as_str() {
        "meta" | "identifiers" | "usernames" => text(),
        "counters" => rec
            .v
            .as_u64()
            .map(drop)
            .ok_or_else(|| "expected a whole number".into()),
        "patients" => crate::store::record::decodes::<PatientRecord>(&json()?),
        "users" => crate::store::record::decodes::<UserRecord>(&json()?),
        "settings" => crate::store::record::decodes::<SettingRecord>(&json()?),
        other if blob_table(registry, other).is_some() => match &rec.v {
            serde_json::Value::String(text) => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map(drop)
                .map_err(|e| format!("not base64: {e}")),
            _ => Err("expected the bytes as a base64 string".into()),
        },
        other => match record_table(registry, other) {
            Some(table) => (table.codec.from_json)(&rec.v).map(drop),
            None => Err(format!("unknown table {other}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store with one patient named Amani, and its snapshot as lines.
    fn snapshot_lines() -> Vec<String> {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let p = PatientRecord {
            v: 1,
            uuid: "p1".into(),
            gender: "F".into(),
            birthdate: Some("1990-01-01".into()),
            birthdate_estimated: false,
            dead: false,
            death_date: None,
            cause_of_death: None,
            cause_of_death_non_coded: None,
            names: vec![crate::store::NameRecord {
                uuid: "n1".into(),
                given_name: Some("Amani".into()),
                middle_name: None,
                family_name: Some("Kabila".into()),
                family_name2: None,
                prefix: None,
                degree: None,
                preferred: true,
            }],
            identifiers: vec![],
            addresses: vec![],
            attributes: vec![],
            voided: false,
            date_created: String::new(),
            creator: String::new(),
            changed: None,
            voiding: None,
        };
        s.insert_patient(&p, &[]).unwrap();
        s.next_counter("src").unwrap();
        let mut out = Vec::new();
        s.snapshot(&mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn restore(lines: &[String]) -> (Store, Result<u64, RestoreError>) {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let text = lines.join("\n") + "\n";
        let r = s.restore(std::io::Cursor::new(text.into_bytes()));
        (s, r)
    }

    #[test]
    fn an_intact_snapshot_restores() {
        let (s, r) = restore(&snapshot_lines());
        assert!(r.unwrap() >= 2);
        assert_eq!(
            s.patient("p1").unwrap().unwrap().names[0]
                .given_name
                .as_deref(),
            Some("Amani")
        );
    }

    #[test]
    fn an_edited_name_fails_the_checksum_and_nothing_is_written() {
        let mut lines = snapshot_lines();
        let i = lines.iter().position(|l| l.contains("Amani")).unwrap();
        lines[i] = lines[i].replace("Amani", "Amina");
        let (s, r) = restore(&lines);
        assert!(matches!(r, Err(RestoreError::ChecksumMismatch)), "{r:?}");
        assert!(s.is_empty().unwrap());
        assert!(s.patient("p1").unwrap().is_none());
    }

    #[test]
    fn a_record_that_does_not_decode_is_named_by_its_line() {
        let mut lines = snapshot_lines();
        let i = lines
            .iter()
            .position(|l| l.contains("\"t\":\"patients\""))
            .unwrap();
        lines[i] = r#"{"t":"patients","k":"p1","v":42}"#.into();
        let (s, r) = restore(&lines);
        match r {
            Err(RestoreError::BadLine { line, detail }) => {
                assert_eq!(line, i as u64 + 1);
                assert!(detail.contains("patients p1"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert!(s.is_empty().unwrap());
    }

    #[test]
    fn version_1_snapshots_without_a_checksum_still_restore() {
        let mut lines = snapshot_lines();
        lines[0] = lines[0].replace("\"version\":2", "\"version\":1");
        let last = lines.len() - 1;
        let end: SnapshotEnd = serde_json::from_str(&lines[last]).unwrap();
        lines[last] = format!(r#"{{"end":true,"records":{}}}"#, end.records);
        let (s, r) = restore(&lines);
        assert_eq!(r.unwrap(), end.records);
        assert!(s.patient("p1").unwrap().is_some());
        // A version-2 file must carry its checksum.
        let mut v2 = snapshot_lines();
        let last = v2.len() - 1;
        v2[last] = format!(r#"{{"end":true,"records":{}}}"#, end.records);
        assert!(matches!(restore(&v2).1, Err(RestoreError::BadLine { .. })));
    }
}
