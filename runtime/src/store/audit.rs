//! The audit trail: every change to an audited table (the domains' record tables, patients,
//! users, settings), with who made it, when, from which client address, and the values of
//! each field before and after. Append-only: entries are written in the transaction of the
//! change they record (so a change is never stored without its entry, nor an entry without
//! its change) and never rewritten; backups and restores carry them as any record table.
//!
//! Nothing in the domains writes an entry. The storage seam notes the keys a write
//! transaction writes in the audited tables (`kv::capture`); before committing,
//! `Store::write` reads each one as it was (a read transaction begun while the write runs
//! sees the last commit, on both engines, since write transactions run one at a time) and
//! as it is now, and records the difference here. A domain added later is audited by being
//! registered, without a line of its own.
//!
//! What an entry keeps: a creation names the record and no values (its first version is the
//! record itself, or the `before` of its first change); a change keeps the fields that
//! changed, before and after; a purge keeps every field before. So every version a record
//! ever had can be read back from the trail. Bookkeeping fields (`v`, the `audit` who-and-
//! when, the patient's `changed`) are left out, since the entry says who and when; password
//! hashes are noted as changed without their values.
//!
//! Reads are not logged: a chart opens with dozens of calls, and an access log of them is
//! another feature (see ARCHITECTURE.md, "The audit trail").

use crate::store::compact::{Time, Uid, millis_of, time_key_bytes, time_key_of_millis};
use crate::store::kv::{ReadTransaction, TableDefinition, Touched, WriteTransaction};
use crate::store::record::{CoveringIndex, Index, Page, RecordCodec, RecordTable, Window};
use crate::store::{Store, StoreError, StoreResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Who makes the changes of the request (or job) being served: set around each
/// authenticated request by the HTTP layer, read by `Store::write`.
#[derive(Debug, Clone, Default)]
pub struct Actor {
    /// The user's uuid; `None` for the system (a background job, a failed login).
    pub user: Option<String>,
    /// The client's address, as the login throttle reads it.
    pub address: Option<String>,
}

/// The author of a request's changes, filled in once the request's caller is known. A
/// slot rather than a value: the request's task is entered (`acting`) before its caller is
/// authenticated, by an extractor inside the handler (`set_actor`).
pub type ActorSlot = std::sync::Arc<std::sync::Mutex<Actor>>;

tokio::task_local! {
    static ACTOR: ActorSlot;
}

/// Runs `f` (a request's handling) with an empty author, which `set_actor` fills.
pub async fn acting<F: std::future::Future>(f: F) -> F::Output {
    ACTOR.scope(ActorSlot::default(), f).await
}

/// Names the author of the changes the current request makes.
pub fn set_actor(actor: Actor) {
    let _ = ACTOR.try_with(|slot| {
        if let Ok(mut a) = slot.lock() {
            *a = actor;
        }
    });
}

/// The current request's author, to carry onto a blocking thread (`acting_sync`).
pub fn current_slot() -> Option<ActorSlot> {
    ACTOR.try_with(ActorSlot::clone).ok()
}

/// Runs the blocking `f` with the author of the request it was moved from (work moved to
/// a blocking thread leaves the request's task, and its author, behind).
pub fn acting_sync<R>(slot: Option<ActorSlot>, f: impl FnOnce() -> R) -> R {
    match slot {
        Some(slot) => ACTOR.sync_scope(slot, f),
        None => f(),
    }
}

/// Runs `f` with the system as the author of its changes, whoever the request's user is:
/// what the runtime derives on its own while serving a request (patient flags).
pub fn as_system<R>(f: impl FnOnce() -> R) -> R {
    ACTOR.sync_scope(ActorSlot::default(), f)
}

/// The author of the changes being made here: the system when none was named.
pub fn current_actor() -> Actor {
    ACTOR
        .try_with(|slot| slot.lock().map(|a| a.clone()).unwrap_or_default())
        .unwrap_or_default()
}

/// One write per record: the write's uuid → the write (`StoredWrite`, or an entry of a
/// store before version 7 as its JSON, read as a write of one entry).
const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("audit_log");
/// Binary keys `time write` (`store::compact` forms: the time's 8 bytes, the write's uuid),
/// each key's value the number of the write's entries it stands for (a varint), so that a
/// listing under one filter counts its total and skips whole writes without reading them.
const BY_TIME: CoveringIndex = TableDefinition::new("audit_time");
/// `patient time write`, under each patient an entry's record belonged to before or after.
const BY_PATIENT: CoveringIndex = TableDefinition::new("audit_patient");
/// `user time write` (`system` for writes no user made).
const BY_USER: CoveringIndex = TableDefinition::new("audit_user");
/// `table time write`
const BY_TABLE: CoveringIndex = TableDefinition::new("audit_table");
/// `record time write`
const BY_RECORD: CoveringIndex = TableDefinition::new("audit_record");

/// The text-keyed indexes of one entry each of stores before version 7, dropped by the
/// upgrade once every entry is indexed again.
pub const INDEXES_BEFORE_7: [Index; 5] = [
    TableDefinition::new("audit_by_time"),
    TableDefinition::new("audit_by_patient"),
    TableDefinition::new("audit_by_user"),
    TableDefinition::new("audit_by_table"),
    TableDefinition::new("audit_by_record"),
];

/// The trail's table, registered with the domains' so that backups, restores and
/// `check-store` carry it; it is never audited itself.
pub const RECORDS: RecordTable = RecordTable {
    name: "audit_log",
    table: TABLE,
    indexes: &[],
    covering: &[BY_TIME, BY_PATIENT, BY_USER, BY_TABLE, BY_RECORD],
    create,
    reindex,
    codec: RecordCodec {
        decodes: |bytes| decode_write(bytes).map(drop),
        to_json: |bytes| serde_json::to_value(decode_write(bytes)?).map_err(|e| e.to_string()),
        from_json: write_from_json,
    },
};

/// The user key of changes no user made.
pub const SYSTEM: &str = "system";

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    for index in RECORDS.covering {
        txn.open_table(*index)?;
    }
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let w = decode_write(bytes).map_err(|detail| StoreError::Corrupt {
        table: "audit_log",
        detail,
    })?;
    write_index(txn, &w)
}

/// What one write transaction changed, as backups carry it: who, when, from where, and
/// one entry per record changed. An encounter saved with twenty observations is one write
/// of twenty-one entries: who and when said once, and indexed once (but for each record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditWrite {
    pub uuid: String,
    /// `datetime_key` form.
    pub at: String,
    /// `None`: the system.
    pub user: Option<String>,
    pub address: Option<String>,
    pub entries: Vec<WriteEntry>,
}

/// One record's change within a write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteEntry {
    /// The store table: `patients`, `visits`, `users`…
    pub table: String,
    /// The record's key (its uuid).
    pub record: String,
    /// The patients the record belonged to before or after the change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patients: Vec<String>,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
}

/// One change to one record, as a listing answers it: an entry of a write, with the
/// write's who and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// The write's uuid for its first entry; for the others, the write's uuid with its last
    /// six hexadecimal digits replaced by the entry's number (a write's uuid is made with
    /// them zero), past 16,777,215 entries the write's uuid and `-n`.
    pub uuid: String,
    pub at: String,
    pub user: Option<String>,
    pub address: Option<String>,
    pub table: String,
    pub record: String,
    pub patients: Vec<String>,
    pub action: Action,
    pub changes: Vec<Change>,
}

/// An entry of a store before version 7 (one per record changed), as it was stored and
/// as backups of those stores carry it: restored as a write of one entry under its uuid.
#[derive(Debug, Deserialize)]
struct EntryBefore7 {
    uuid: String,
    at: String,
    user: Option<String>,
    address: Option<String>,
    table: String,
    record: String,
    #[serde(default)]
    patients: Vec<String>,
    action: Action,
    #[serde(default)]
    changes: Vec<Change>,
}

impl From<EntryBefore7> for AuditWrite {
    fn from(e: EntryBefore7) -> AuditWrite {
        AuditWrite {
            uuid: e.uuid,
            at: e.at,
            user: e.user,
            address: e.address,
            entries: vec![WriteEntry {
                table: e.table,
                record: e.record,
                patients: e.patients,
                action: e.action,
                changes: e.changes,
            }],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Created,
    Changed,
    Voided,
    Unvoided,
    Purged,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Changed => "changed",
            Action::Voided => "voided",
            Action::Unvoided => "unvoided",
            Action::Purged => "purged",
        }
    }

    const ALL: [Action; 5] = [
        Action::Created,
        Action::Changed,
        Action::Voided,
        Action::Unvoided,
        Action::Purged,
    ];
}

/// One field's values before and after (`None`: absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The field's path in the record as stored (`names[0].family_name`).
    pub field: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// The first byte of a write in its compact form (a JSON entry of an older store begins
/// with `{`).
const COMPACT: u8 = 0xA7;

/// The limit bounds what a damaged length could make decoding allocate; bincode counts
/// the decoded entries' memory (about a hundred bytes each), so a write of millions of
/// entries (a merge of a patient with millions of records) still reads back.
fn binary_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ 1 << 30 }>()
}

/// `AuditWrite` as stored: uuids and the time compact, each table and patient named once
/// for the write's entries (by position), values changed as JSON texts. Positional: a
/// change of fields takes another first byte, with this form still decoded.
#[derive(bincode::Encode, bincode::Decode)]
struct StoredWrite {
    uuid: Uid,
    at: Time,
    user: Option<Uid>,
    address: Option<String>,
    tables: Vec<String>,
    patients: Vec<Uid>,
    entries: Vec<StoredEntry>,
}

#[derive(bincode::Encode, bincode::Decode)]
struct StoredEntry {
    table: u32,
    record: Uid,
    patients: Vec<u32>,
    action: u8,
    changes: Vec<(String, Option<String>, Option<String>)>,
}

/// The position of `item` in `list`, added when absent.
fn position_in(list: &mut Vec<String>, item: &str) -> u32 {
    match list.iter().position(|x| x == item) {
        Some(i) => i as u32,
        None => {
            list.push(item.to_string());
            (list.len() - 1) as u32
        }
    }
}

fn encode_write(w: &AuditWrite) -> Vec<u8> {
    let (mut tables, mut patients) = (Vec::new(), Vec::new());
    let entries = w
        .entries
        .iter()
        .map(|e| StoredEntry {
            table: position_in(&mut tables, &e.table),
            record: Uid::from_text(&e.record),
            patients: e
                .patients
                .iter()
                .map(|p| position_in(&mut patients, p))
                .collect(),
            action: e.action as u8,
            changes: e
                .changes
                .iter()
                .map(|c| {
                    let text = |v: &Option<Value>| v.as_ref().map(Value::to_string);
                    (c.field.clone(), text(&c.before), text(&c.after))
                })
                .collect(),
        })
        .collect();
    let stored = StoredWrite {
        uuid: Uid::from_text(&w.uuid),
        at: Time::from_text(&w.at),
        user: w.user.as_deref().map(Uid::from_text),
        address: w.address.clone(),
        tables,
        patients: patients.iter().map(|p| Uid::from_text(p)).collect(),
        entries,
    };
    let mut out = vec![COMPACT];
    // Writing into a Vec cannot fail.
    bincode::encode_into_std_write(stored, &mut out, binary_config())
        .expect("an audit write encodes");
    out
}

/// A stored write, in its compact form or as an older store's JSON entry.
fn decode_write(bytes: &[u8]) -> Result<AuditWrite, String> {
    match bytes.first() {
        Some(&COMPACT) => {}
        Some(b'{') => {
            return serde_json::from_slice::<EntryBefore7>(bytes)
                .map(AuditWrite::from)
                .map_err(|e| e.to_string());
        }
        _ => return Err("neither an audit write nor an entry".into()),
    }
    let (stored, read): (StoredWrite, usize) =
        bincode::decode_from_slice(&bytes[1..], binary_config()).map_err(|e| e.to_string())?;
    if read != bytes.len() - 1 {
        return Err("bytes after the audit write".into());
    }
    let named = |list: &[String], i: u32| -> Result<String, String> {
        list.get(i as usize)
            .cloned()
            .ok_or_else(|| format!("no table or patient {i} in the write"))
    };
    let patients: Vec<String> = stored.patients.iter().map(Uid::to_text).collect();
    let mut entries = Vec::with_capacity(stored.entries.len());
    for e in stored.entries {
        let action = *Action::ALL
            .get(e.action as usize)
            .ok_or_else(|| format!("no action {}", e.action))?;
        let mut changes = Vec::with_capacity(e.changes.len());
        for (field, before, after) in e.changes {
            let value = |t: Option<String>| -> Result<Option<Value>, String> {
                t.map(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
                    .transpose()
            };
            changes.push(Change {
                field,
                before: value(before)?,
                after: value(after)?,
            });
        }
        entries.push(WriteEntry {
            table: named(&stored.tables, e.table)?,
            record: e.record.to_text(),
            patients: e
                .patients
                .iter()
                .map(|i| named(&patients, *i))
                .collect::<Result<_, _>>()?,
            action,
            changes,
        });
    }
    Ok(AuditWrite {
        uuid: stored.uuid.to_text(),
        at: stored.at.to_text(),
        user: stored.user.as_ref().map(Uid::to_text),
        address: stored.address,
        entries,
    })
}

/// A backup's line of the trail: a write, or an older store's entry.
fn write_from_json(v: &Value) -> Result<Vec<u8>, String> {
    let w: AuditWrite = if v.get("entries").is_some() {
        serde_json::from_value(v.clone()).map_err(|e| e.to_string())?
    } else {
        serde_json::from_value::<EntryBefore7>(v.clone())
            .map_err(|e| e.to_string())?
            .into()
    };
    Ok(encode_write(&w))
}

/// A key `prefix time write` of the trail's indexes.
fn index_key(prefix: Option<&str>, at: &str, write: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(64);
    if let Some(p) = prefix {
        Uid::key_bytes(p, &mut k);
    }
    time_key_bytes(at, &mut k);
    Uid::key_bytes(write, &mut k);
    k
}

/// A count as an index value (bincode's variable-length integer: one byte below 251).
fn count_bytes(n: u64) -> Vec<u8> {
    bincode::encode_to_vec(n, bincode::config::standard()).unwrap_or_default()
}

fn count_of(bytes: &[u8]) -> u64 {
    bincode::decode_from_slice(bytes, bincode::config::standard()).map_or(0, |(n, _)| n)
}

/// How many of the write's entries each key of one index stands for, in key order.
fn tally<'a>(keys: impl Iterator<Item = &'a str>) -> BTreeMap<&'a str, u64> {
    let mut out = BTreeMap::new();
    for k in keys {
        *out.entry(k).or_insert(0) += 1;
    }
    out
}

fn write_index(txn: &WriteTransaction, w: &AuditWrite) -> StoreResult<()> {
    let all = count_bytes(w.entries.len() as u64);
    txn.open_table(BY_TIME)?
        .insert(index_key(None, &w.at, &w.uuid).as_slice(), all.as_slice())?;
    let user = w.user.as_deref().unwrap_or(SYSTEM);
    txn.open_table(BY_USER)?.insert(
        index_key(Some(user), &w.at, &w.uuid).as_slice(),
        all.as_slice(),
    )?;
    for (index, by) in [
        (BY_TABLE, tally(w.entries.iter().map(|e| e.table.as_str()))),
        (
            BY_RECORD,
            tally(w.entries.iter().map(|e| e.record.as_str())),
        ),
        (
            BY_PATIENT,
            tally(
                w.entries
                    .iter()
                    .flat_map(|e| e.patients.iter().map(String::as_str)),
            ),
        ),
    ] {
        let mut t = txn.open_table(index)?;
        for (prefix, n) in by {
            t.insert(
                index_key(Some(prefix), &w.at, &w.uuid).as_slice(),
                count_bytes(n).as_slice(),
            )?;
        }
    }
    Ok(())
}

/// A new write's uuid: time-ordered (version 7), its last six hexadecimal digits zero so
/// that its entries' ids (`entry_uuid`) are its own with their number there.
pub fn new_write_uuid() -> String {
    let mut bytes = *uuid::Uuid::now_v7().as_bytes();
    bytes[13..].fill(0);
    uuid::Uuid::from_bytes(bytes).to_string()
}

/// The id of a write's `n`th entry (see `AuditEntry::uuid`).
fn entry_uuid(write: &str, n: usize) -> String {
    match n {
        0 => write.to_string(),
        _ if n < 1 << 24 && write.len() == 36 && write.is_char_boundary(30) => {
            format!("{}{:06x}", &write[..30], n & 0xff_ffff)
        }
        _ => format!("{write}-{n}"),
    }
}

impl AuditWrite {
    /// Its entries as a listing answers them, with their numbers.
    fn into_entries(self) -> impl Iterator<Item = AuditEntry> {
        let AuditWrite {
            uuid,
            at,
            user,
            address,
            entries,
        } = self;
        entries
            .into_iter()
            .enumerate()
            .map(move |(n, e)| AuditEntry {
                uuid: entry_uuid(&uuid, n),
                at: at.clone(),
                user: user.clone(),
                address: address.clone(),
                table: e.table,
                record: e.record,
                patients: e.patients,
                action: e.action,
                changes: e.changes,
            })
    }
}

/// How the audit reads a stored value of one audited table as JSON.
pub type ToJson = fn(&[u8]) -> Result<Value, String>;

/// Records the changes of the write transaction `txn` whose audited keys are `touched`,
/// in `txn`, before it commits: `before` is a read transaction begun while `txn` runs (the
/// last commit).
pub(crate) fn record(
    txn: &WriteTransaction,
    before: &ReadTransaction,
    touched: Touched,
    to_json: impl Fn(&str) -> Option<ToJson>,
) -> StoreResult<()> {
    if touched.is_empty() {
        return Ok(());
    }
    let mut entries = Vec::new();
    for (table, keys) in touched {
        let Some(to_json) = to_json(table) else {
            continue;
        };
        let def: TableDefinition<&str, &[u8]> = TableDefinition::new(table);
        let keys: Vec<&str> = keys
            .iter()
            .filter_map(|k| std::str::from_utf8(k).ok())
            .collect();
        let olds = before.open_table(def)?;
        let olds = olds.get_many(&keys)?;
        let news = txn.open_table(def)?;
        let news = news.get_many(&keys)?;
        for ((record, old), new) in keys.iter().zip(olds).zip(news) {
            let old = old.and_then(|v| to_json(v.value()).ok());
            let new = new.and_then(|v| to_json(v.value()).ok());
            if let Some(entry) = entry_of(table, record, old, new) {
                entries.push(entry);
            }
        }
    }
    if entries.is_empty() {
        return Ok(());
    }
    let actor = current_actor();
    let write = AuditWrite {
        uuid: new_write_uuid(),
        at: crate::wire::datetime_key(chrono::Utc::now()),
        user: actor.user,
        address: actor.address,
        entries,
    };
    append(txn, &write)
}

/// Records `write` in `txn` as the trail records one: for tools that load many writes'
/// records in one transaction, unaudited (the benchmarks' generated years of a facility),
/// so that the trail holds what those writes, made one at a time, would have left.
pub fn append(txn: &WriteTransaction, write: &AuditWrite) -> StoreResult<()> {
    txn.open_table(TABLE)?
        .insert(write.uuid.as_str(), encode_write(write).as_slice())?;
    write_index(txn, write)
}

/// The entry of one record's change, or `None` when nothing of it changed.
fn entry_of(
    table: &str,
    record: &str,
    old: Option<Value>,
    new: Option<Value>,
) -> Option<WriteEntry> {
    let mut patients = Vec::new();
    for v in [&old, &new].into_iter().flatten() {
        for p in patients_of(table, record, v) {
            if !patients.contains(&p) {
                patients.push(p);
            }
        }
    }
    let (action, changes) = match (&old, &new) {
        (None, None) => return None,
        (None, Some(_)) => (Action::Created, Vec::new()),
        (Some(old), None) => (Action::Purged, diff(Some(old), None)),
        (Some(old), Some(new)) => {
            let changes = diff(Some(old), Some(new));
            if changes.is_empty() {
                return None;
            }
            let action = match (voided(old), voided(new)) {
                (false, true) => Action::Voided,
                (true, false) => Action::Unvoided,
                _ => Action::Changed,
            };
            (action, changes)
        }
    };
    Some(WriteEntry {
        table: table.to_string(),
        record: record.to_string(),
        patients,
        action,
        changes,
    })
}

/// The patients a stored record belongs to: a patient is its own; the domains' records name
/// theirs in their patient fields (`record::PATIENT_FIELDS`: an observation's `person`, a
/// relationship's two sides, a bed's occupants), wherever they sit.
fn patients_of(table: &str, record: &str, v: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match v.as_str() {
                        Some(p) if crate::store::record::PATIENT_FIELDS.contains(&k.as_str()) => {
                            if !out.iter().any(|x| x == p) {
                                out.push(p.to_string());
                            }
                        }
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    if table == "patients" {
        return vec![record.to_string()];
    }
    let mut out = Vec::new();
    walk(v, &mut out);
    out
}

/// Whether a stored record is voided (or retired), whatever its type's field for it.
fn voided(v: &Value) -> bool {
    let flag = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(false);
    flag(v.get("voided"))
        || flag(v.get("retired"))
        || flag(v.get("voiding").and_then(|x| x.get("voided")))
}

/// Bookkeeping the entry itself says (who and when), left out of its changes; a user's time
/// of last login, written by every login, is not a change of the account.
fn is_bookkeeping(field: &str) -> bool {
    field == "properties.lastLoginTimestamp"
        || field == "v"
        || field == "audit"
        || field.starts_with("audit.")
        || field == "changed"
        || field.starts_with("changed[")
}

/// The fields whose values differ, by path.
fn diff(old: Option<&Value>, new: Option<&Value>) -> Vec<Change> {
    let mut before = BTreeMap::new();
    let mut after = BTreeMap::new();
    if let Some(v) = old {
        flatten("", v, &mut before);
    }
    if let Some(v) = new {
        flatten("", v, &mut after);
    }
    let mut fields: Vec<&String> = before.keys().chain(after.keys()).collect();
    fields.sort();
    fields.dedup();
    fields
        .into_iter()
        .filter(|f| !is_bookkeeping(f))
        .filter_map(|f| {
            let (b, a) = (before.get(f), after.get(f));
            if b == a {
                return None;
            }
            let hidden = |v: Option<&Value>| v.map(|_| Value::String("(hidden)".into()));
            if f.contains("password") {
                return Some(Change {
                    field: f.clone(),
                    before: hidden(b),
                    after: hidden(a),
                });
            }
            Some(Change {
                field: f.clone(),
                before: b.cloned(),
                after: a.cloned(),
            })
        })
        .collect()
}

/// Every leaf of `v` by its path (`a.b`, `a[0].b`); null leaves are absent.
fn flatten(path: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                flatten(&p, v, out);
            }
        }
        // An empty list is no value: a first name or attribute reads as added, not as `[]`
        // replaced.
        Value::Array(items) if items.is_empty() => {}
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten(&format!("{path}[{i}]"), v, out);
            }
        }
        Value::Null => {}
        leaf => {
            out.insert(path.to_string(), leaf.clone());
        }
    }
}

/// What an audit listing asks for; the most selective filter given drives the index read.
#[derive(Debug, Default, Clone)]
pub struct AuditQuery {
    pub patient: Option<String>,
    pub record: Option<String>,
    /// A user's uuid, or `system`.
    pub user: Option<String>,
    pub table: Option<String>,
    /// Key-form bounds of the time, inclusive.
    pub since: Option<String>,
    pub until: Option<String>,
}

impl AuditQuery {
    fn matches(&self, e: &AuditEntry) -> bool {
        self.patient.as_ref().is_none_or(|p| e.patients.contains(p))
            && self.record.as_ref().is_none_or(|r| &e.record == r)
            && self
                .user
                .as_ref()
                .is_none_or(|u| e.user.as_deref().unwrap_or(SYSTEM) == u)
            && self.table.as_ref().is_none_or(|t| &e.table == t)
    }
}

/// One page of entries, newest write first (a write's entries by table, then record).
pub fn list(store: &Store, q: &AuditQuery, window: Window) -> StoreResult<(Vec<AuditEntry>, Page)> {
    let txn = store.begin_read()?;
    let writes = txn.open_table(TABLE)?;
    let (index, prefix) = if let Some(r) = &q.record {
        (BY_RECORD, Some(r))
    } else if let Some(p) = &q.patient {
        (BY_PATIENT, Some(p))
    } else if let Some(u) = &q.user {
        (BY_USER, Some(u))
    } else if let Some(t) = &q.table {
        (BY_TABLE, Some(t))
    } else {
        (BY_TIME, None)
    };
    // Under one filter, a key's count is how many of its write's entries the listing
    // shows: whole writes before the page are skipped, and the total counted, unread.
    let counted = [&q.patient, &q.record, &q.user, &q.table]
        .iter()
        .filter(|f| f.is_some())
        .count()
        <= 1;
    let mut lower = Vec::new();
    if let Some(p) = prefix {
        Uid::key_bytes(p, &mut lower);
    }
    let prefix_len = lower.len();
    let mut upper = lower.clone();
    if let Some(since) = &q.since {
        time_key_bytes(since, &mut lower);
    }
    // The period bounds the range read; its end is inclusive.
    match q.until.as_deref().and_then(millis_of) {
        Some(ms) => time_key_of_millis(ms.saturating_add(1), &mut upper),
        None => upper.extend_from_slice(&[0xff; 9]),
    }
    let keys = txn.open_table(index)?;
    let mut page = Page::default();
    let mut out: Vec<AuditEntry> = Vec::new();
    let mut matched = 0usize;
    'keys: for row in keys
        .range::<&[u8]>(lower.as_slice()..upper.as_slice())?
        .rev()
    {
        let (k, v) = row?;
        if counted {
            let n = count_of(v.value()) as usize;
            let full = out.len() >= window.limit;
            if full || matched + n <= window.start {
                if full && n > 0 {
                    page.more = true;
                    if !window.count_all {
                        break;
                    }
                }
                matched += n;
                continue;
            }
        }
        let Some(uuid) = k
            .value()
            .get(prefix_len + 8..)
            .and_then(Uid::from_key_bytes)
        else {
            continue;
        };
        let Some(bytes) = writes.get(uuid.as_str())? else {
            continue;
        };
        let write = decode_write(bytes.value()).map_err(|detail| StoreError::Corrupt {
            table: "audit_log",
            detail,
        })?;
        for e in write.into_entries().filter(|e| q.matches(e)) {
            if matched >= window.start {
                if out.len() < window.limit {
                    out.push(e);
                } else {
                    page.more = true;
                    if !window.count_all {
                        break 'keys;
                    }
                }
            }
            matched += 1;
        }
    }
    if window.count_all {
        page.total = Some(matched);
    }
    page.uuids = out.iter().map(|e| e.uuid.clone()).collect();
    Ok((out, page))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_change_keeps_only_the_fields_that_changed_before_and_after() {
        let old = json!({"v": 1, "names": [{"given": "Grace", "family": "Kapinga"}], "audit": {"creator": "a"}});
        let new = json!({"v": 1, "names": [{"given": "Grâce", "family": "Kapinga"}], "audit": {"creator": "a", "changed_by": "b"}});
        let e = entry_of("patients", "p1", Some(old), Some(new)).unwrap();
        assert_eq!(e.action, Action::Changed);
        assert_eq!(e.patients, vec!["p1".to_string()]);
        assert_eq!(
            e.changes,
            vec![Change {
                field: "names[0].given".into(),
                before: Some(json!("Grace")),
                after: Some(json!("Grâce")),
            }]
        );
    }

    #[test]
    fn the_time_of_a_login_is_no_change_of_the_account() {
        let old = json!({"username": "admin", "properties": {"lastLoginTimestamp": "1"}});
        let new = json!({"username": "admin", "properties": {"lastLoginTimestamp": "2"}});
        assert!(entry_of("users", "u", Some(old), Some(new)).is_none());
    }

    #[test]
    fn voiding_is_named_and_an_unchanged_write_leaves_no_entry() {
        let old = json!({"patient": "p", "voiding": {"voided": false}});
        let new = json!({"patient": "p", "voiding": {"voided": true, "void_reason": "erreur"}});
        let e = entry_of("visits", "v1", Some(old.clone()), Some(new));
        assert_eq!(e.unwrap().action, Action::Voided);
        assert!(entry_of("visits", "v1", Some(old.clone()), Some(old)).is_none());
    }

    #[test]
    fn a_moved_record_is_filed_under_both_patients_and_passwords_are_hidden() {
        let e = entry_of(
            "visits",
            "v1",
            Some(json!({"patient": "a"})),
            Some(json!({"patient": "b"})),
        )
        .unwrap();
        assert_eq!(e.patients, vec!["a".to_string(), "b".to_string()]);
        let e = entry_of(
            "users",
            "u1",
            Some(json!({"password_hash": "x"})),
            Some(json!({"password_hash": "y"})),
        )
        .unwrap();
        assert_eq!(e.changes[0].before, Some(json!("(hidden)")));
        let purged = entry_of("visits", "v1", Some(json!({"patient": "a"})), None).unwrap();
        assert_eq!(
            (purged.action, purged.changes[0].before.clone()),
            (Action::Purged, Some(json!("a")))
        );
    }

    const VISITS: TableDefinition<&str, &[u8]> = TableDefinition::new("visits");

    /// One audited write creating a visit of `patient` per uuid.
    fn create_visits(s: &Store, patient: &str, uuids: &[&str]) {
        s.write(|txn| {
            let mut t = txn.open_table(VISITS)?;
            for u in uuids {
                let v = json!({"v": 1, "uuid": u, "patient": patient, "visit_type": "t",
                    "start": "2026-11-01T08:00:00.000Z",
                    "audit": {"creator": "u", "date_created": "2026-11-01T08:00:00.000Z"},
                    "voiding": {"voided": false}});
                t.insert(*u, serde_json::to_vec(&v).unwrap().as_slice())?;
            }
            Ok(())
        })
        .unwrap();
    }

    fn listing(s: &Store, q: &AuditQuery, start: usize, limit: usize) -> (Vec<String>, Page) {
        let window = Window {
            start,
            limit,
            count_all: true,
        };
        let (entries, page) = list(s, q, window).unwrap();
        let records = entries.into_iter().map(|e| e.record).collect();
        (records, page)
    }

    #[test]
    fn a_write_of_many_records_is_one_stored_write_listed_entry_by_entry() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        create_visits(&s, "p1", &["v1", "v2", "v3"]);
        create_visits(&s, "p2", &["v4"]);
        create_visits(&s, "p1", &["v5", "v6"]);
        assert_eq!(
            s.begin_read()
                .unwrap()
                .open_table(TABLE)
                .unwrap()
                .len()
                .unwrap(),
            3
        );
        let by_p1 = AuditQuery {
            patient: Some("p1".into()),
            ..Default::default()
        };
        // Newest write first, a write's entries by record; every window of the
        // listing, its total counted without reading the writes skipped.
        let (all, page) = listing(&s, &by_p1, 0, 10);
        assert_eq!(all, ["v5", "v6", "v1", "v2", "v3"]);
        assert_eq!((page.total, page.more), (Some(5), false));
        for start in 0..6 {
            for limit in 1..4 {
                let (part, page) = listing(&s, &by_p1, start, limit);
                let want: Vec<String> = all.iter().skip(start).take(limit).cloned().collect();
                assert_eq!(part, want, "start {start} limit {limit}");
                assert_eq!(page.total, Some(5));
                assert_eq!(page.more, start + limit < 5, "start {start} limit {limit}");
            }
        }
        let (everything, page) = listing(&s, &AuditQuery::default(), 1, 4);
        assert_eq!(everything, ["v6", "v4", "v1", "v2"]);
        assert_eq!((page.total, page.more), (Some(6), true));
        // Two filters read the writes: the system's entries of one record.
        let q = AuditQuery {
            record: Some("v2".into()),
            user: Some(SYSTEM.into()),
            ..Default::default()
        };
        assert_eq!(listing(&s, &q, 0, 10).0, ["v2"]);
        // Each entry has its own id, the write's uuid for the first.
        let (entries, _) = list(
            &s,
            &by_p1,
            Window {
                start: 0,
                limit: 10,
                count_all: false,
            },
        )
        .unwrap();
        let ids: std::collections::BTreeSet<&str> =
            entries.iter().map(|e| e.uuid.as_str()).collect();
        assert_eq!(ids.len(), 5);
        assert!(
            entries
                .iter()
                .all(|e| uuid::Uuid::try_parse(&e.uuid).is_ok())
        );
        assert_eq!(entries[0].uuid[..30], entries[1].uuid[..30]);
    }

    #[test]
    fn a_write_takes_its_compact_form_and_gives_back_its_json() {
        let w = AuditWrite {
            uuid: new_write_uuid(),
            at: "2026-11-29T10:00:00.123Z".into(),
            user: Some("0b3c5a7e-1f2d-4c6b-8a9e-0d1c2b3a4f5e".into()),
            address: Some("10.0.0.7".into()),
            entries: vec![
                WriteEntry {
                    table: "obs".into(),
                    record: "5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
                    patients: vec!["p".into()],
                    action: Action::Created,
                    changes: vec![],
                },
                WriteEntry {
                    table: "patients".into(),
                    record: "p".into(),
                    patients: vec!["p".into(), "q".into()],
                    action: Action::Changed,
                    changes: vec![Change {
                        field: "names[0].given".into(),
                        before: Some(json!("Grace")),
                        after: None,
                    }],
                },
            ],
        };
        let bytes = encode_write(&w);
        assert_eq!(decode_write(&bytes).unwrap(), w);
        let from_backup = write_from_json(&serde_json::to_value(&w).unwrap()).unwrap();
        assert_eq!(from_backup, bytes);
        assert!(decode_write(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode_write(b"x").is_err());
    }

    /// A store written by version 6: one JSON entry per record, under five text indexes.
    #[test]
    fn a_version_6_trail_is_upgraded_and_answers_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let old = |uuid: &str, at: &str, record: &str, action: &str| {
            json!({"v": 1, "uuid": uuid, "at": at, "user": "u1", "address": "10.0.0.1",
                   "table": "visits", "record": record, "patients": ["p1"], "action": action,
                   "changes": if action == "voided" {
                       json!([{"field": "voided", "before": false, "after": true}])
                   } else { json!([]) }})
        };
        let entries = [
            old(
                "3f0b8e1c-0000-4000-8000-000000000001",
                "2026-11-01T08:00:00.000Z",
                "v1",
                "created",
            ),
            old(
                "3f0b8e1c-0000-4000-8000-000000000002",
                "2026-11-02T08:00:00.000Z",
                "v1",
                "voided",
            ),
        ];
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            s.write_unaudited(|txn| {
                for index in RECORDS.covering {
                    txn.delete_table(*index)?;
                }
                let mut t = txn.open_table(TABLE)?;
                for e in &entries {
                    let uuid = e["uuid"].as_str().unwrap();
                    t.insert(uuid, serde_json::to_vec(e).unwrap().as_slice())?;
                    let at = e["at"].as_str().unwrap();
                    for (index, prefix) in INDEXES_BEFORE_7
                        .iter()
                        .zip(["all", "p1", "u1", "visits", "v1"])
                    {
                        txn.open_table(*index)?
                            .insert(format!("{prefix}|{at}|{uuid}").as_str(), 0)?;
                    }
                }
                Ok(())
            })
            .unwrap();
            s.set_meta("schema_version", "6").unwrap();
        }
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(s.meta("upgrading_from").unwrap(), None);
        let by_record = AuditQuery {
            record: Some("v1".into()),
            ..Default::default()
        };
        let window = Window {
            start: 0,
            limit: 10,
            count_all: true,
        };
        let (found, page) = list(&s, &by_record, window).unwrap();
        assert_eq!(page.total, Some(2));
        let seen: Vec<(String, Action, String)> = found
            .iter()
            .map(|e| (e.uuid.clone(), e.action, e.at.clone()))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "3f0b8e1c-0000-4000-8000-000000000002".into(),
                    Action::Voided,
                    "2026-11-02T08:00:00.000Z".into()
                ),
                (
                    "3f0b8e1c-0000-4000-8000-000000000001".into(),
                    Action::Created,
                    "2026-11-01T08:00:00.000Z".into()
                ),
            ]
        );
        assert_eq!(found[0].changes[0].after, Some(json!(true)));
        assert_eq!(
            (found[0].user.as_deref(), found[0].address.as_deref()),
            (Some("u1"), Some("10.0.0.1"))
        );
        // Stored compact now, the text indexes gone, and the period bounds still hold.
        {
            let txn = s.begin_read().unwrap();
            let t = txn.open_table(TABLE).unwrap();
            for e in &entries {
                let bytes = t.get(e["uuid"].as_str().unwrap()).unwrap().unwrap();
                assert_eq!(bytes.value()[0], COMPACT);
            }
            for index in INDEXES_BEFORE_7 {
                assert!(
                    txn.open_table(index)
                        .map_or(true, |t| t.is_empty().unwrap())
                );
            }
        }
        let q = AuditQuery {
            user: Some("u1".into()),
            since: Some("2026-11-01T08:00:00.001Z".into()),
            until: Some("2026-11-02T08:00:00.000Z".into()),
            ..Default::default()
        };
        assert_eq!(list(&s, &q, window).unwrap().1.total, Some(1));
        let q = AuditQuery {
            table: Some("visits".into()),
            until: Some("2026-11-01T08:00:00.000Z".into()),
            ..Default::default()
        };
        assert_eq!(list(&s, &q, window).unwrap().0[0].action, Action::Created);
        drop(s);
        let report = crate::store::check::check_store(&path, &crate::domains::REGISTRY).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }

    /// Backups carry writes; a backup of an older store, entries, restores too.
    #[test]
    fn backups_carry_the_writes_and_older_backups_entries_restore() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        create_visits(&s, "p1", &["v1", "v2"]);
        let mut backup = Vec::new();
        s.snapshot(&mut backup).unwrap();
        let text = String::from_utf8(backup.clone()).unwrap();
        let line = text.lines().find(|l| l.contains("\"audit_log\"")).unwrap();
        let line: Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["v"]["entries"].as_array().unwrap().len(), 2);
        let restored = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        restored.restore(std::io::Cursor::new(backup)).unwrap();
        let q = AuditQuery::default();
        assert_eq!(listing(&restored, &q, 0, 10).0, listing(&s, &q, 0, 10).0);
        // A line as a version 6 store's backup wrote it.
        let entry = json!({"v": 1, "uuid": "3f0b8e1c-0000-4000-8000-000000000009",
            "at": "2026-11-01T08:00:00.000Z", "user": null, "address": null,
            "table": "visits", "record": "v9", "patients": ["p9"], "action": "created"});
        let w = decode_write(&write_from_json(&entry).unwrap()).unwrap();
        assert_eq!(w.uuid, "3f0b8e1c-0000-4000-8000-000000000009");
        assert_eq!(w.entries[0].patients, ["p9"]);
    }
}
