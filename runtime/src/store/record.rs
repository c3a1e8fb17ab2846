//! What every domain's records and indexes are made of: who-and-when (`Audit`, `Voiding`),
//! the record-table and blob-table descriptions backups walk, index keys, and the key-only
//! scans that page newest first.

use crate::store::kv::{ReadableTable, TableDefinition, WriteTransaction};
use crate::store::{StoreError, StoreResult};
use crate::wire::datetime_key;
use chrono::{DateTime, Utc};
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
/// A record table that backups dump and restores fill; `reindex` decodes one record and
/// writes its index entries, and `indexes` and `covering` are the tables it writes them to
/// (so `store::check` can rebuild them and compare, and a merge can remove a moved
/// record's old entries).
pub struct RecordTable {
    pub name: &'static str,
    pub table: TableDefinition<&'static str, &'static [u8]>,
    pub indexes: &'static [Index],
    pub covering: &'static [CoveringIndex],
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

/// A table of raw bytes keyed by uuid (an attachment's file), which backups carry as base64
/// and restores write back as they were. Its owner's `RecordTable::create` makes it.
pub struct BlobTable {
    pub name: &'static str,
    pub table: TableDefinition<&'static str, &'static [u8]>,
    /// Checks every stored blob against what its record says of it (`check-store`),
    /// reporting each problem; answers how many blobs it read.
    pub check: fn(&crate::store::kv::ReadTransaction, &mut dyn FnMut(String)) -> StoreResult<u64>,
}

/// The tables the domains own, handed to the store when it is opened: it creates them,
/// backs them up, restores and checks them without knowing any domain.
pub struct Registry {
    /// Every record table, in the order a restore fills them.
    pub records: &'static [RecordTable],
    /// Every blob table, written to backups after the record tables.
    pub blobs: &'static [BlobTable],
    /// Every kind of record a patient can hold, in the order a refused purge names them.
    pub patient_records: &'static [PatientRecords],
    /// What refuses a merge of two patients, in the order the refusals are checked.
    pub merge_refusals: &'static [MergeRefusal],
    /// What voiding a patient does to other domains' records (her bed is freed).
    pub on_patient_voided: &'static [PatientVoided],
    /// What purging a patient removes with her, in the purge's own write: records the
    /// runtime derives from hers (her patient flags), which must not refuse the purge.
    pub on_patient_purged: &'static [PatientPurged],
    /// What the domains above a domain register for it: what they do when its records
    /// change, what they nest in its representations (`extension`).
    pub extensions: &'static [&'static (dyn std::any::Any + Send + Sync)],
    /// Tables whose indexes changed in a store version: a store written by an older version
    /// has the table's indexes rebuilt from its records when it is opened, once
    /// (`(version, table)`: rebuilt for a store older than `version`).
    pub reindexed_since: &'static [(u32, &'static RecordTable)],
    /// Tables whose stored form changed in a store version: a store written by an older
    /// version has every record of the table stored again in the current form (and its
    /// indexes rebuilt) when it is opened, once.
    pub recoded_since: &'static [(u32, &'static RecordTable)],
    /// Index tables a store version stopped using: emptied when a store written by an
    /// older version is opened (`(version, index)`), since nothing keeps them current.
    pub dropped_since: &'static [(u32, Index)],
}

/// How many records a store upgrade rewrites or reindexes in one write transaction: a
/// table of millions is upgraded in many short commits, never held in memory whole.
const UPGRADE_BATCH: usize = 5_000;

/// Upgrades the records of `table` after the key `after` (from the first when `None`), at
/// most a batch of them, in the caller's write transaction: each record is stored again in
/// the table's current form when `recode` (through the codec: what a backup and a restore
/// do to it) and its index entries written (an entry that exists already is written
/// again, which changes nothing). Answers the last key done and how many were, or `None`
/// when no record follows `after`.
pub fn upgrade_batch(
    txn: &WriteTransaction,
    table: &RecordTable,
    after: Option<&str>,
    recode: bool,
) -> StoreResult<Option<(String, u64)>> {
    use std::ops::Bound;
    let batch: Vec<(String, Vec<u8>)> = {
        let t = txn.open_table(table.table)?;
        let lower = match after {
            Some(k) => Bound::Excluded(k),
            None => Bound::Unbounded,
        };
        let mut out = Vec::with_capacity(UPGRADE_BATCH);
        for row in t.range::<&str>((lower, Bound::Unbounded))? {
            let (k, v) = row?;
            out.push((k.value().to_string(), v.value().to_vec()));
            if out.len() == UPGRADE_BATCH {
                break;
            }
        }
        out
    };
    let Some((last, _)) = batch.last() else {
        return Ok(None);
    };
    let mut records = txn.open_table(table.table)?;
    for (key, bytes) in &batch {
        // A record that cannot be read is left as it is, without index entries, and said:
        // one damaged record must not keep the whole store from opening (it is marked
        // with the new version already, which an older runtime refuses); `check-store`
        // reports it as it reports any record that does not decode.
        let skipped = |detail: String| {
            tracing::warn!(
                table = table.name,
                record = key.as_str(),
                "left as it is by the upgrade: {detail}"
            );
        };
        let current;
        let bytes = if recode {
            match (table.codec.to_json)(bytes).and_then(|v| (table.codec.from_json)(&v)) {
                Ok(now) => current = now,
                Err(e) => {
                    skipped(e);
                    continue;
                }
            }
            if &current != bytes {
                records.insert(key.as_str(), current.as_slice())?;
            }
            &current
        } else {
            bytes
        };
        if let Err(e) = (table.reindex)(txn, bytes) {
            match e {
                StoreError::Corrupt { detail, .. } => skipped(detail),
                other => return Err(other),
            }
        }
    }
    Ok(Some((last.clone(), batch.len() as u64)))
}

impl Registry {
    /// The extension of type `T` registered for a domain: how a domain reaches what the
    /// domains that hang on its records do, without naming them. `None` when none was
    /// registered (a store opened without those domains).
    pub fn extension<T: std::any::Any>(&self) -> Option<&'static T> {
        self.extensions.iter().find_map(|e| e.downcast_ref::<T>())
    }
}

/// A write one domain makes in the transaction of another domain's change (a visit that
/// ends ends its queue entries in the same commit).
pub type Effect = Box<dyn FnOnce(&WriteTransaction) -> StoreResult<()>>;

/// What one domain does to its records when a record of another changes, as an `Effect`:
/// (store, the changed record's uuid, then two texts the extension names: a time or a
/// user, a user or a reason).
pub type Cascade = fn(&crate::store::Store, &str, &str, &str) -> StoreResult<Effect>;

/// Whether a record holds any records of another domain: (store, its uuid).
pub type Holds = fn(&crate::store::Store, &str) -> StoreResult<bool>;

/// A kind of record that belongs to a patient: a patient holding any cannot be purged.
pub struct PatientRecords {
    /// What a refused purge names ("visits", "orders").
    pub kind: &'static str,
    /// Whether the patient holds any, voided ones included.
    pub any: fn(&crate::store::Store, &str) -> StoreResult<bool>,
    /// Where a merge finds them to move them to the preferred patient.
    pub moves: &'static [MergeMove],
}

/// A rule that refuses a merge (both patients in an active visit): the refusal's message,
/// or `None`. Checked under the clinical write lock.
pub type MergeRefusal = fn(&crate::store::Store, &PatientMerge) -> StoreResult<Option<String>>;

/// What a merge of two patients moves of one kind: the table, and where the non-preferred
/// patient's records are (voided ones included). Every field that names a patient
/// (`PATIENT_FIELDS`, wherever it sits in the record) is pointed at the preferred one.
pub struct MergeMove {
    pub table: &'static RecordTable,
    pub of_patient: fn(&crate::store::Store, &str) -> StoreResult<Vec<String>>,
    /// What else changes in a moved record (a relationship between the two merged
    /// patients is voided).
    pub adjust: Option<fn(&mut serde_json::Value, &PatientMerge)>,
    /// The name its records are counted under in a merge's answer (`moved`), when it is
    /// not its kind's (`PatientRecords::kind`): an encounter's observations are counted
    /// apart from the encounters, the bed she occupies apart from her stays.
    pub counted_as: Option<&'static str>,
}

/// A merge: the non-preferred patient `from` into the preferred `into`.
#[derive(Debug, Clone)]
pub struct PatientMerge {
    pub from: String,
    pub into: String,
    pub user: String,
    pub now: DateTime<Utc>,
}

/// The fields of a stored record that name a patient (an observation's `person`, a
/// relationship's two sides, a bed's occupants' `patient`).
pub const PATIENT_FIELDS: &[&str] = &["patient", "person", "person_a", "person_b"];

/// Points every patient field of a record (as its codec's JSON) naming `m.from` at
/// `m.into`, and records who changed it when the record keeps an `audit`; answers whether
/// anything changed.
pub fn retarget(record: &mut serde_json::Value, m: &PatientMerge) -> bool {
    fn walk(v: &mut serde_json::Value, m: &PatientMerge) -> bool {
        let mut changed = false;
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if PATIENT_FIELDS.contains(&k.as_str()) && v.as_str() == Some(m.from.as_str()) {
                        *v = serde_json::Value::String(m.into.clone());
                        changed = true;
                    } else {
                        changed |= walk(v, m);
                    }
                }
            }
            serde_json::Value::Array(items) => {
                for v in items {
                    changed |= walk(v, m);
                }
            }
            _ => {}
        }
        changed
    }
    let changed = walk(record, m);
    if changed && let Some(audit) = record.get_mut("audit").and_then(|a| a.as_object_mut()) {
        audit.insert("changed_by".into(), m.user.clone().into());
        audit.insert("date_changed".into(), datetime_key(m.now).into());
    }
    changed
}

/// The uuids of the records under `prefix` in `index`, voided ones included.
pub fn uuids_under(
    store: &crate::store::Store,
    index: Index,
    prefix: &str,
) -> StoreResult<Vec<String>> {
    let txn = store.begin_read()?;
    let mut out = Vec::new();
    walk(&txn.open_table(index)?, prefix, 0, false, |k| {
        out.push(uuid_of(k).to_string());
        true
    })?;
    Ok(out)
}

/// One record a merge changes: its table, its uuid, its stored bytes before and after.
pub struct Rewrite {
    pub table: &'static RecordTable,
    pub uuid: String,
    pub old: Vec<u8>,
    pub new: Vec<u8>,
}

/// Replaces stored records whose index keys may change (they moved to another patient):
/// the old records' entries are found by indexing them without writing
/// (`kv::keys_to_write`) and removed, one statement per index table, then the new records
/// and their entries are written.
pub fn rewrite_all(txn: &WriteTransaction, rewrites: &[Rewrite]) -> StoreResult<()> {
    let mut stale: std::collections::BTreeMap<&'static str, (Index, Vec<Vec<u8>>)> =
        std::collections::BTreeMap::new();
    let mut stale_covering: std::collections::BTreeMap<
        &'static str,
        (CoveringIndex, Vec<Vec<u8>>),
    > = std::collections::BTreeMap::new();
    for r in rewrites {
        let (indexed, keys) = crate::store::kv::keys_to_write(|| (r.table.reindex)(txn, &r.old));
        indexed?;
        for index in r.table.indexes {
            if let Some(keys) = keys.get(index.name()) {
                stale
                    .entry(index.name())
                    .or_insert_with(|| (*index, Vec::new()))
                    .1
                    .extend(keys.iter().cloned());
            }
        }
        for index in r.table.covering {
            if let Some(keys) = keys.get(index.name()) {
                stale_covering
                    .entry(index.name())
                    .or_insert_with(|| (*index, Vec::new()))
                    .1
                    .extend(keys.iter().cloned());
            }
        }
    }
    for (index, keys) in stale.into_values() {
        txn.open_table(index)?.remove_many(&keys)?;
    }
    for (index, keys) in stale_covering.into_values() {
        txn.open_table(index)?.remove_many(&keys)?;
    }
    for r in rewrites {
        txn.open_table(r.table.table)?
            .insert(r.uuid.as_str(), r.new.as_slice())?;
        (r.table.reindex)(txn, &r.new)?;
    }
    Ok(())
}

/// Run after a patient has been voided, under the clinical write lock: (store, patient,
/// user).
pub type PatientVoided = fn(&crate::store::Store, &str, &str) -> StoreResult<()>;

/// Removes, in the purge's write transaction, what a domain derived for the patient.
pub type PatientPurged = fn(&WriteTransaction, &str) -> StoreResult<()>;

/// An index table: key → flags.
pub type Index = TableDefinition<&'static str, u8>;

/// A covering index: a binary key → what a reader needs of the record (so it reads no
/// record), e.g. the chart's observations by patient and concept.
pub type CoveringIndex = TableDefinition<&'static [u8], &'static [u8]>;

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
    visit: impl FnMut(&str, u8) -> bool,
) -> StoreResult<()> {
    walk_flags_between(index, prefix, None, None, newest_first, visit)
}

/// `walk_flags` over the keys `prefix|t|…` whose `t` lies between `from` and `to`
/// (inclusive, either open): the range read is bounded, so a period of a long history reads
/// that period's keys only.
fn walk_flags_between(
    index: &impl ReadableTable<&'static str, u8>,
    prefix: &str,
    from: Option<&str>,
    to: Option<&str>,
    newest_first: bool,
    mut visit: impl FnMut(&str, u8) -> bool,
) -> StoreResult<()> {
    let lower = format!("{prefix}|{}", from.unwrap_or(""));
    // '}' sorts right after '|': every key `prefix|to|…` sorts before `prefix|to}`.
    let upper = match to {
        Some(to) => format!("{prefix}|{to}}}"),
        None => format!("{prefix}}}"),
    };
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

/// Every key of `index` under each of `prefixes` whose flags are not in `exclude`, oldest
/// first within each prefix, the prefixes one after the other: all of them read at once
/// (one statement on PostgreSQL), for the queries that merge several ranges (a chart's
/// vital signs, a page of encounters' observations).
pub fn keys_under_all(
    index: &impl ReadableTable<&'static str, u8>,
    prefixes: &[&str],
    exclude: u8,
) -> StoreResult<Vec<String>> {
    let ranges: Vec<crate::store::kv::KeyRange> = prefixes
        .iter()
        // '}' sorts right after '|': every key `prefix|…` sorts before `prefix}`.
        .map(|p| (format!("{p}|").into_bytes(), format!("{p}}}").into_bytes()))
        .collect();
    let mut keys = Vec::new();
    for (k, flags) in index.rows_in_ranges(&ranges)? {
        if flags.first().copied().unwrap_or(0) & exclude != 0 {
            continue;
        }
        keys.push(String::from_utf8(k).map_err(|e| StoreError::Redb(e.to_string()))?);
    }
    Ok(keys)
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

/// `scan` over the keys `prefix|t|…` whose `t` (a key-form datetime) lies between `from`
/// and `to`, inclusive; only that range is read.
pub fn scan_between(
    index: &impl ReadableTable<&'static str, u8>,
    prefix: &str,
    from: Option<&str>,
    to: Option<&str>,
    newest_first: bool,
    window: Window,
    mut keep: impl FnMut(&str) -> bool,
) -> StoreResult<Page> {
    scan_where_between(index, prefix, from, to, newest_first, window, |k, _| {
        keep(k)
    })
}

/// The window of the keys under `prefix` that `keep` accepts from their key and flags.
pub fn scan_where(
    index: &impl ReadableTable<&'static str, u8>,
    prefix: &str,
    newest_first: bool,
    window: Window,
    keep: impl FnMut(&str, u8) -> bool,
) -> StoreResult<Page> {
    scan_where_between(index, prefix, None, None, newest_first, window, keep)
}

/// `scan_where` over the keys `prefix|t|…` whose `t` lies between `from` and `to`.
pub fn scan_where_between(
    index: &impl ReadableTable<&'static str, u8>,
    prefix: &str,
    from: Option<&str>,
    to: Option<&str>,
    newest_first: bool,
    window: Window,
    mut keep: impl FnMut(&str, u8) -> bool,
) -> StoreResult<Page> {
    let mut page = Page::default();
    let mut matched = 0usize;
    walk_flags_between(index, prefix, from, to, newest_first, |k, flags| {
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

/// The window of a binary index's keys in `range` (`[low, high)`, read in key order or
/// backwards) that `keep` accepts from their uuid part and flags: for indexes whose keys
/// end in the record's uuid in its key form (`compact::Uid::key_bytes`, from byte
/// `uuid_start`) and whose values begin with the flags. Only the page's uuids are made
/// text (a counted listing walks every key).
pub fn scan_keys(
    index: &impl ReadableTable<&'static [u8], &'static [u8]>,
    range: &crate::store::kv::KeyRange,
    uuid_start: usize,
    newest_first: bool,
    window: Window,
    mut keep: impl FnMut(&[u8], u8) -> bool,
) -> StoreResult<Page> {
    let rows = index.range::<&[u8]>(range.0.as_slice()..range.1.as_slice())?;
    let rows: Box<dyn Iterator<Item = _>> = if newest_first {
        Box::new(rows.rev())
    } else {
        Box::new(rows)
    };
    let mut page = Page::default();
    let mut matched = 0usize;
    for row in rows {
        let (k, v) = row?;
        let flags = v.value().first().copied().unwrap_or(0);
        let key = k.value();
        if !keep(key.get(uuid_start..).unwrap_or_default(), flags) {
            continue;
        }
        if matched >= window.start {
            if page.uuids.len() < window.limit {
                page.uuids.push(key_uuid(key, uuid_start)?);
            } else {
                page.more = true;
                if !window.count_all {
                    break;
                }
            }
        }
        matched += 1;
    }
    if window.count_all {
        page.total = Some(matched);
    }
    Ok(page)
}

/// The uuid that ends a binary index key, from byte `start`.
pub fn key_uuid(key: &[u8], start: usize) -> StoreResult<String> {
    key.get(start..)
        .and_then(crate::store::compact::Uid::from_key_bytes)
        .ok_or_else(|| StoreError::Corrupt {
            table: "index",
            detail: "a binary index key that does not end in a uuid".into(),
        })
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
    let keys: Vec<&str> = uuids.iter().map(String::as_str).collect();
    let mut out = Vec::with_capacity(uuids.len());
    for bytes in records.get_many(&keys)?.into_iter().flatten() {
        out.push(decode(name, bytes.value())?);
    }
    Ok(out)
}

/// The records of `table` whose key in `index` is `prefix|t|…` with `t` (a key-form
/// datetime) between `from` and `to` inclusive (either open), oldest first, voided ones
/// left out, read in the caller's transaction with `decode` (the reports' readers, which
/// make many such reads in one snapshot).
pub fn records_between_in<T>(
    txn: &crate::store::kv::ReadTransaction,
    table: TableDefinition<&'static str, &'static [u8]>,
    index: Index,
    prefix: &str,
    from: Option<&str>,
    to: Option<&str>,
    decode: fn(&[u8]) -> StoreResult<T>,
) -> StoreResult<Vec<T>> {
    let mut uuids = Vec::new();
    walk_flags_between(
        &txn.open_table(index)?,
        prefix,
        from,
        to,
        false,
        |k, flags| {
            if flags & VOIDED == 0 {
                uuids.push(uuid_of(k).to_string());
            }
            true
        },
    )?;
    let records = txn.open_table(table)?;
    let mut out = Vec::with_capacity(uuids.len());
    for chunk in uuids.chunks(500) {
        let keys: Vec<&str> = chunk.iter().map(String::as_str).collect();
        for bytes in records.get_many(&keys)?.into_iter().flatten() {
            out.push(decode(bytes.value())?);
        }
    }
    Ok(out)
}

/// Whether `index` holds a key `prefix|t|…` of a record not voided with `t` between `from`
/// and `to` (inclusive, either open): keys only, stopping at the first (a report asking
/// whether a patient was seen before a month).
pub fn any_between_in(
    txn: &crate::store::kv::ReadTransaction,
    index: Index,
    prefix: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> StoreResult<bool> {
    let mut found = false;
    walk_flags_between(
        &txn.open_table(index)?,
        prefix,
        from,
        to,
        false,
        |_, flags| {
            found = flags & VOIDED == 0;
            !found
        },
    )?;
    Ok(found)
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

    const INDEX: Index = TableDefinition::new("scan_between_test");

    /// A period reads the keys of that period only, inclusive at both ends, whatever the
    /// keys of other prefixes around them.
    #[test]
    fn a_bounded_scan_reads_its_period_only() {
        let store = crate::domains::test_store();
        store
            .write(|txn| {
                let mut t = txn.open_table(INDEX)?;
                for (p, at, u) in [
                    ("a", "2026-01-01T00:00:00.000Z", "1"),
                    ("a", "2026-02-01T00:00:00.000Z", "2"),
                    ("a", "2026-03-01T00:00:00.000Z", "3"),
                    ("b", "2026-02-01T00:00:00.000Z", "4"),
                ] {
                    t.insert(key(&[p, at, u]).as_str(), 0)?;
                }
                Ok(())
            })
            .unwrap();
        let txn = store.begin_read().unwrap();
        let index = txn.open_table(INDEX).unwrap();
        let all = Window {
            start: 0,
            limit: 10,
            count_all: true,
        };
        let uuids = |from: Option<&str>, to: Option<&str>| {
            scan_between(&index, "a", from, to, true, all, |_| true)
                .unwrap()
                .uuids
        };
        assert_eq!(uuids(None, None), vec!["3", "2", "1"]);
        assert_eq!(
            uuids(
                Some("2026-02-01T00:00:00.000Z"),
                Some("2026-03-01T00:00:00.000Z")
            ),
            vec!["3", "2"]
        );
        assert_eq!(uuids(None, Some("2026-01-31T23:59:59.999Z")), vec!["1"]);
        assert!(uuids(Some("2026-04-01T00:00:00.000Z"), None).is_empty());
    }
}
