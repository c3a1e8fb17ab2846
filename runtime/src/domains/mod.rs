//! The clinical record, one module per aggregate: `visit` (visits and their attributes),
//! `encounter` (encounters with their observations), `diagnosis` (an encounter's
//! diagnoses), `condition` (the problem list), `allergy` (allergies), `immunization` (vaccinations, as observation groups in
//! encounters), `order` (drug and test orders, the formulary's REST resources, FHIR MedicationRequest), `dispense` (medication dispenses, FHIR MedicationDispense), `programme`
//! (programme enrolments with their workflow states), `queue` (service-queue entries),
//! `provider` (managed providers, next to each account's own), `relationship` (relationships
//! between persons), `cohort` (patient lists and their members), `attachment` (images and PDFs uploaded to a chart, their bytes in the store), `appointment` (appointments of the content's services) and `role` (roles and
//! privileges made through the API). Each owns its record types, its redb
//! tables and secondary indexes, its validation and its REST representations; they share
//! what is here: who-and-when records, the index scans that page newest first, and the
//! registry of record tables that backups and restores walk.
//!
//! Storage shape (see ARCHITECTURE.md, "The clinical store"): a record table maps a uuid to
//! the record as versioned JSON; each query has an index table whose keys sort the way the
//! query reads (`patient|datetime|uuid`) and whose one-byte value carries the flags a
//! listing filters on (voided, ended), so a page is found by reading keys only and then
//! reading the page's records. Index tables are derived: backups hold the records alone and
//! a restore rebuilds the indexes from them.

pub mod allergy;
pub mod appointment;
pub mod attachment;
pub mod bed;
pub mod bill;
pub mod cohort;
pub mod condition;
pub mod diagnosis;
pub mod dispense;
pub mod encounter;
pub mod immunization;
pub mod inpatient;
pub mod order;
pub mod programme;
pub mod provider;
pub mod queue;
pub mod relationship;
pub mod rest;
pub mod role;
pub mod visit;

use crate::store::{StoreError, StoreResult};
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use redb::{ReadableTable, TableDefinition, WriteTransaction};
use serde::{Deserialize, Serialize};

/// The flags an index entry carries.
pub const VOIDED: u8 = 1;
/// A visit with a stop datetime; a condition that is no longer active.
pub const ENDED: u8 = 2;

/// A new record's uuid: version 7, which begins with its creation time, so records created
/// together sit together in the uuid-keyed tables and a facility's daily inserts append to
/// the B-trees instead of landing on random pages of years of data. Any uuid a client
/// sends is kept as it is.
pub fn new_uuid() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// OpenMRS's daemon user, recorded as the author of what background jobs change.
pub const DAEMON_USER: &str = "A4F30A1B-5EB9-11DF-A648-37A07F9C90FB";

/// Who created a record and when, and who changed it last. Part of a stored observation's
/// binary layout (`encounter::store::encode_obs`): a field added here changes that layout,
/// and takes a new observation format tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, bincode::Encode, bincode::Decode)]
pub struct Audit {
    pub creator: String,
    /// Index-key form (`datetime_key`).
    pub date_created: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_changed: Option<String>,
}

impl Audit {
    pub fn new(user: &str, now: DateTime<Utc>) -> Audit {
        Audit {
            creator: user.into(),
            date_created: datetime_key(now),
            changed_by: None,
            date_changed: None,
        }
    }

    pub fn changed(&mut self, user: &str, now: DateTime<Utc>) {
        self.changed_by = Some(user.into());
        self.date_changed = Some(datetime_key(now));
    }
}

/// A voided record is kept, with who voided it, when and why. Part of a stored
/// observation's binary layout, as `Audit` is.
#[derive(
    Debug, Clone, Default, PartialEq, Serialize, Deserialize, bincode::Encode, bincode::Decode,
)]
pub struct Voiding {
    pub voided: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_voided: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub void_reason: Option<String>,
}

impl Voiding {
    pub fn void(&mut self, user: &str, now: DateTime<Utc>, reason: &str) {
        self.voided = true;
        self.voided_by = Some(user.into());
        self.date_voided = Some(datetime_key(now));
        self.void_reason = Some(reason.into());
    }

    pub fn unvoid(&mut self) {
        *self = Voiding::default();
    }
}

/// A datetime as index keys hold it: UTC, fixed width, so that keys sort by time.
pub fn datetime_key(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Whether `s` has exactly the shape `datetime_key` writes (`2026-11-23T09:15:30.000Z`),
/// so that formatting it again is a matter of cutting and appending: answers render
/// hundreds of stored datetimes, and parsing each one cost a tenth of an encounter page.
pub fn is_key_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
        // Ranges too, so that the shortcut answers exactly what parsing would have.
        && {
            let n = |from: usize, to: usize| s[from..to].parse::<u32>().unwrap_or(u32::MAX);
            chrono::NaiveDate::from_ymd_opt(n(0, 4) as i32, n(5, 7), n(8, 10)).is_some()
                && n(11, 13) < 24
                && n(14, 16) < 60
                && n(17, 19) < 60
        }
}

pub fn parse_key(key: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(key)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A datetime as clients send it: `2026-11-23T10:15:30.000+0100`, `…Z`, `…+01:00`, without
/// a zone (UTC), or a date alone (midnight UTC).
pub fn parse_datetime(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M:%S%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(s, f) {
            return Some(t.with_timezone(&Utc));
        }
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f) {
            return Some(t.and_utc());
        }
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

/// A stored key-form datetime in OpenMRS's wire form (`2026-11-23T10:15:30.000+0000`).
pub fn wire_datetime(key: &str) -> serde_json::Value {
    crate::api::patient::format_datetime(key)
}

/// A stored datetime as FHIR writes it (`2026-11-23T09:15:30+00:00`), `None` if unreadable.
pub fn fhir_datetime(key: &str) -> Option<String> {
    if is_key_shaped(key) {
        return Some(format!("{}+00:00", &key[..19]));
    }
    parse_key(key).map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false))
}

/// How far a client's clock may run ahead of the server's before a datetime counts as
/// "in the future".
pub const CLOCK_SKEW: chrono::Duration = chrono::Duration::minutes(5);

/// A record table that backups dump and restores fill; `reindex` decodes one record and
/// writes its index entries, and `indexes` are the tables it writes them to (so
/// `store::check` can rebuild them and compare).
pub struct RecordTable {
    pub name: &'static str,
    pub table: TableDefinition<'static, &'static str, &'static [u8]>,
    pub indexes: &'static [Index],
    pub create: fn(&WriteTransaction) -> StoreResult<()>,
    pub reindex: fn(&WriteTransaction, &[u8]) -> StoreResult<()>,
    pub codec: RecordCodec,
}

/// How a table's records are stored, and how backups, which carry every record as JSON,
/// read and write them.
pub struct RecordCodec {
    /// Whether stored bytes decode as the table's record, and why not (`store::check`).
    pub decodes: fn(&[u8]) -> Result<(), String>,
    /// A stored record as a backup writes it.
    pub to_json: fn(&[u8]) -> Result<serde_json::Value, String>,
    /// A backup's record, checked as the table's record type (a restore checks every one
    /// before writing anything), as it is stored.
    pub from_json: fn(&serde_json::Value) -> Result<Vec<u8>, String>,
}

/// The codec of a table whose records are stored as their JSON (every table but the
/// observations, `encounter::store::encode_obs`).
pub const fn json_codec<T: for<'a> Deserialize<'a>>() -> RecordCodec {
    RecordCodec {
        decodes: decodes::<T>,
        to_json: stored_json,
        from_json: checked_json::<T>,
    }
}

fn stored_json(bytes: &[u8]) -> Result<serde_json::Value, String> {
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

fn checked_json<T: for<'a> Deserialize<'a>>(v: &serde_json::Value) -> Result<Vec<u8>, String> {
    let bytes = serde_json::to_vec(v).map_err(|e| e.to_string())?;
    decodes::<T>(&bytes)?;
    Ok(bytes)
}

/// Every clinical record table, in the order a restore fills them.
pub const RECORD_TABLES: &[RecordTable] = &[
    visit::store::RECORDS,
    encounter::store::ENCOUNTER_RECORDS,
    encounter::store::OBS_RECORDS,
    programme::store::RECORDS,
    queue::store::RECORDS,
    queue::room::RECORDS,
    diagnosis::store::RECORDS,
    condition::store::RECORDS,
    allergy::store::RECORDS,
    order::store::RECORDS,
    dispense::store::RECORDS,
    role::store::ROLE_RECORDS,
    role::store::PRIVILEGE_RECORDS,
    provider::store::RECORDS,
    relationship::store::RECORDS,
    cohort::store::COHORT_RECORDS,
    cohort::store::MEMBER_RECORDS,
    attachment::store::RECORDS,
    appointment::store::RECORDS,
    bill::store::RECORDS,
    bed::TYPE_RECORDS,
    bed::TAG_RECORDS,
    bed::BED_RECORDS,
    bed::ASSIGNMENT_RECORDS,
];

/// A table of raw bytes keyed by uuid (an attachment's file), which backups carry as base64
/// and restores write back as they were. Its owner's `RecordTable::create` makes it.
pub struct BlobTable {
    pub name: &'static str,
    pub table: TableDefinition<'static, &'static str, &'static [u8]>,
}

/// Every blob table, written to backups after the record tables.
pub const BLOB_TABLES: &[BlobTable] = &[attachment::store::CONTENTS];

/// An index table: key → flags.
pub type Index = TableDefinition<'static, &'static str, u8>;

/// `a|b|c`
pub fn key(parts: &[&str]) -> String {
    parts.join("|")
}

/// Which part of a listing to read.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub start: usize,
    pub limit: usize,
    /// Count every match (for `totalCount`), not only up to the end of the page.
    pub count_all: bool,
}

/// One page of a listing: the keys' last parts (uuids), whether more follow, and the total
/// when it was counted.
#[derive(Debug, Default)]
pub struct Page {
    pub uuids: Vec<String>,
    pub more: bool,
    pub total: Option<usize>,
}

/// Walks the keys of `index` under `prefix` whose flags do not intersect `exclude`, in
/// key order or backwards (newest first when keys end in `datetime|uuid`), until `visit`
/// answers false. Only keys are read.
pub fn walk(
    index: &impl ReadableTable<&'static str, u8>,
    prefix: &str,
    exclude: u8,
    newest_first: bool,
    mut visit: impl FnMut(&str) -> bool,
) -> StoreResult<()> {
    walk_flags(index, prefix, newest_first, |k, flags| {
        flags & exclude != 0 || visit(k)
    })
}

/// Walks every key of `index` under `prefix` with its flags, until `visit` answers false.
fn walk_flags(
    index: &impl ReadableTable<&'static str, u8>,
    prefix: &str,
    newest_first: bool,
    mut visit: impl FnMut(&str, u8) -> bool,
) -> StoreResult<()> {
    let lower = format!("{prefix}|");
    let upper = format!("{prefix}}}"); // '}' sorts right after '|'
    let range = index.range(lower.as_str()..upper.as_str())?;
    let rows: Box<dyn Iterator<Item = _>> = if newest_first {
        Box::new(range.rev())
    } else {
        Box::new(range)
    };
    for row in rows {
        let (k, flags) = row?;
        if !visit(k.value(), flags.value()) {
            break;
        }
    }
    Ok(())
}

/// The last part of an index key: the record's uuid.
pub fn uuid_of(key: &str) -> &str {
    key.rsplit('|').next().unwrap_or_default()
}

/// The window of `walk`'s keys that `keep` accepts, as a page.
pub fn scan(
    index: &impl ReadableTable<&'static str, u8>,
    prefix: &str,
    exclude: u8,
    newest_first: bool,
    window: Window,
    mut keep: impl FnMut(&str) -> bool,
) -> StoreResult<Page> {
    scan_where(index, prefix, newest_first, window, |k, flags| {
        flags & exclude == 0 && keep(k)
    })
}

/// The window of the keys under `prefix` that `keep` accepts from their key and flags.
pub fn scan_where(
    index: &impl ReadableTable<&'static str, u8>,
    prefix: &str,
    newest_first: bool,
    window: Window,
    mut keep: impl FnMut(&str, u8) -> bool,
) -> StoreResult<Page> {
    let mut page = Page::default();
    let mut matched = 0usize;
    walk_flags(index, prefix, newest_first, |k, flags| {
        if !keep(k, flags) {
            return true;
        }
        if matched >= window.start {
            if page.uuids.len() < window.limit {
                page.uuids.push(uuid_of(k).to_string());
            } else {
                page.more = true;
                if !window.count_all {
                    return false;
                }
            }
        }
        matched += 1;
        true
    })?;
    if window.count_all {
        page.total = Some(matched);
    }
    Ok(page)
}

impl Page {
    /// The window of a list of uuids already in order.
    pub fn cut(all: Vec<String>, window: Window) -> Page {
        let total = all.len();
        Page {
            more: window.start.saturating_add(window.limit) < total,
            total: window.count_all.then_some(total),
            uuids: all
                .into_iter()
                .skip(window.start)
                .take(window.limit)
                .collect(),
        }
    }
}

/// Every record of `table` whose key in `index` falls under `prefix`, newest first, voided
/// ones only if asked: for what a patient or person has a handful of, read whole.
pub fn records_under<T: for<'a> Deserialize<'a>>(
    store: &crate::store::Store,
    table: TableDefinition<&str, &[u8]>,
    index: Index,
    name: &'static str,
    prefix: &str,
    include_voided: bool,
) -> StoreResult<Vec<T>> {
    let txn = store.begin_read()?;
    let records = txn.open_table(table)?;
    let mut uuids = Vec::new();
    let exclude = if include_voided { 0 } else { VOIDED };
    walk(&txn.open_table(index)?, prefix, exclude, true, |k| {
        uuids.push(uuid_of(k).to_string());
        true
    })?;
    let mut out = Vec::with_capacity(uuids.len());
    for uuid in &uuids {
        if let Some(bytes) = records.get(uuid.as_str())? {
            out.push(decode(name, bytes.value())?);
        }
    }
    Ok(out)
}

/// Every record of a small table keyed by uuid (the API's roles, privileges, providers).
pub fn all_records<T: for<'a> Deserialize<'a>>(
    store: &crate::store::Store,
    table: TableDefinition<&str, &[u8]>,
    name: &'static str,
) -> StoreResult<Vec<T>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(table)?;
    let mut out = Vec::new();
    for row in t.iter()? {
        let (_, v) = row?;
        out.push(decode(name, v.value())?);
    }
    Ok(out)
}

pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("records serialize")
}

pub fn decode<T: for<'a> Deserialize<'a>>(table: &'static str, bytes: &[u8]) -> StoreResult<T> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        table,
        detail: e.to_string(),
    })
}

/// Whether `bytes` decode as a `T` record, and why not.
pub fn decodes<T: for<'a> Deserialize<'a>>(bytes: &[u8]) -> Result<(), String> {
    serde_json::from_slice::<T>(bytes)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_datetimes_are_formatted_by_the_shortcut_as_by_parsing() {
        for key in [
            "2026-11-23T09:15:30.000Z",
            "2024-02-29T23:59:59.999Z",
            "1999-12-31T00:00:00.123Z",
        ] {
            assert!(is_key_shaped(key), "{key}");
            let t = parse_key(key).unwrap();
            assert_eq!(
                fhir_datetime(key).unwrap(),
                t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
            );
            assert_eq!(
                wire_datetime(key),
                serde_json::json!(t.format("%Y-%m-%dT%H:%M:%S%.3f+0000").to_string())
            );
        }
        for not_a_key in [
            "2023-02-29T10:00:00.000Z",
            "2026-13-01T10:00:00.000Z",
            "2026-11-23T24:00:00.000Z",
            "2026-11-23T09:15:30Z",
            "2026-11-23T09:15:30.000+01:00",
            "2026-11-23T09:15:30.000z",
        ] {
            assert!(!is_key_shaped(not_a_key), "{not_a_key}");
        }
        // Not key-shaped but readable: the slow path still answers.
        assert_eq!(
            fhir_datetime("2026-11-23T10:15:30.000+01:00").as_deref(),
            Some("2026-11-23T09:15:30+00:00")
        );
        assert_eq!(fhir_datetime("2023-02-29T10:00:00.000Z"), None);
    }

    #[test]
    fn datetimes_from_clients_in_every_form_openmrs_accepts() {
        let want = "2026-11-23T09:15:30.000Z";
        for s in [
            "2026-11-23T10:15:30.000+0100",
            "2026-11-23T10:15:30+01:00",
            "2026-11-23T09:15:30.000Z",
            "2026-11-23T09:15:30",
            "2026-11-23 09:15:30",
        ] {
            assert_eq!(
                parse_datetime(s).map(datetime_key).as_deref(),
                Some(want),
                "{s}"
            );
        }
        assert_eq!(
            parse_datetime("2026-11-23").map(datetime_key).as_deref(),
            Some("2026-11-23T00:00:00.000Z")
        );
        assert_eq!(parse_datetime("23/11/2026"), None);
        assert_eq!(parse_datetime(""), None);
    }

    #[test]
    fn keys_sort_by_time() {
        let a = parse_datetime("2026-01-02T03:04:05Z").unwrap();
        let b = parse_datetime("2026-01-02T03:04:05.001Z").unwrap();
        assert!(datetime_key(a) < datetime_key(b));
        assert_eq!(parse_key(&datetime_key(b)), Some(b));
    }
}
