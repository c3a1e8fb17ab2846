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

use crate::store::kv::{ReadTransaction, TableDefinition, Touched, WriteTransaction};
use crate::store::record::{Index, Page, RecordTable, Window, key, new_uuid};
use crate::store::{Store, StoreResult};
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

/// The author of the changes being made here: the system when none was named.
pub fn current_actor() -> Actor {
    ACTOR
        .try_with(|slot| slot.lock().map(|a| a.clone()).unwrap_or_default())
        .unwrap_or_default()
}

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("audit_log");
/// `all|datetime|uuid`
const BY_TIME: Index = TableDefinition::new("audit_by_time");
/// `patient|datetime|uuid`, under each patient the record belonged to before or after.
const BY_PATIENT: Index = TableDefinition::new("audit_by_patient");
/// `user|datetime|uuid` (`system` for changes no user made).
const BY_USER: Index = TableDefinition::new("audit_by_user");
/// `table|datetime|uuid`
const BY_TABLE: Index = TableDefinition::new("audit_by_table");
/// `record|datetime|uuid`
const BY_RECORD: Index = TableDefinition::new("audit_by_record");

/// The trail's table, registered with the domains' so that backups, restores and
/// `check-store` carry it; it is never audited itself.
pub const RECORDS: RecordTable = RecordTable {
    name: "audit_log",
    table: TABLE,
    indexes: &[BY_TIME, BY_PATIENT, BY_USER, BY_TABLE, BY_RECORD],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<AuditEntry>(),
};

/// The user key of changes no user made.
pub const SYSTEM: &str = "system";

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    for index in RECORDS.indexes {
        txn.open_table(*index)?;
    }
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let e: AuditEntry = crate::store::record::decode("audit_log", bytes)?;
    write_index(txn, &e)
}

/// One change to one record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub v: u32,
    pub uuid: String,
    /// `datetime_key` form.
    pub at: String,
    /// `None`: the system.
    pub user: Option<String>,
    pub address: Option<String>,
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
}

/// One field's values before and after (`None`: absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The field's path in the record as stored (`names[0].family_name`).
    pub field: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

fn write_index(txn: &WriteTransaction, e: &AuditEntry) -> StoreResult<()> {
    let user = e.user.as_deref().unwrap_or(SYSTEM);
    txn.open_table(BY_TIME)?
        .insert(key(&["all", &e.at, &e.uuid]).as_str(), 0)?;
    txn.open_table(BY_USER)?
        .insert(key(&[user, &e.at, &e.uuid]).as_str(), 0)?;
    txn.open_table(BY_TABLE)?
        .insert(key(&[&e.table, &e.at, &e.uuid]).as_str(), 0)?;
    txn.open_table(BY_RECORD)?
        .insert(key(&[&e.record, &e.at, &e.uuid]).as_str(), 0)?;
    let mut by_patient = txn.open_table(BY_PATIENT)?;
    for p in &e.patients {
        by_patient.insert(key(&[p, &e.at, &e.uuid]).as_str(), 0)?;
    }
    Ok(())
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
    let actor = current_actor();
    let now = chrono::Utc::now();
    let at = crate::wire::datetime_key(now);
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
            if let Some(entry) = entry_of(table, record, old, new, &actor, &at) {
                entries.push(entry);
            }
        }
    }
    let mut t = txn.open_table(TABLE)?;
    for e in &entries {
        t.insert(
            e.uuid.as_str(),
            serde_json::to_vec(e).unwrap_or_default().as_slice(),
        )?;
    }
    drop(t);
    for e in &entries {
        write_index(txn, e)?;
    }
    Ok(())
}

/// The entry of one record's change, or `None` when nothing of it changed.
fn entry_of(
    table: &str,
    record: &str,
    old: Option<Value>,
    new: Option<Value>,
    actor: &Actor,
    at: &str,
) -> Option<AuditEntry> {
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
    Some(AuditEntry {
        v: 1,
        uuid: new_uuid(),
        at: at.to_string(),
        user: actor.user.clone(),
        address: actor.address.clone(),
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

/// One page of entries, newest first.
pub fn list(store: &Store, q: &AuditQuery, window: Window) -> StoreResult<(Vec<AuditEntry>, Page)> {
    let txn = store.begin_read()?;
    let records = txn.open_table(TABLE)?;
    let (index, prefix) = if let Some(r) = &q.record {
        (BY_RECORD, r.as_str())
    } else if let Some(p) = &q.patient {
        (BY_PATIENT, p.as_str())
    } else if let Some(u) = &q.user {
        (BY_USER, u.as_str())
    } else if let Some(t) = &q.table {
        (BY_TABLE, t.as_str())
    } else {
        (BY_TIME, "all")
    };
    let needs_record = [&q.patient, &q.user, &q.table]
        .iter()
        .filter(|f| f.is_some())
        .count()
        + usize::from(q.record.is_some())
        > 1;
    // The period bounds the index range read (every index key is `prefix|at|uuid`).
    let keep = |k: &str| -> bool {
        if !needs_record {
            return true;
        }
        let Ok(Some(bytes)) = records.get(crate::store::record::uuid_of(k)) else {
            return false;
        };
        let Ok(e) = crate::store::record::decode::<AuditEntry>("audit_log", bytes.value()) else {
            return false;
        };
        q.patient.as_ref().is_none_or(|p| e.patients.contains(p))
            && q.record.as_ref().is_none_or(|r| &e.record == r)
            && q.user
                .as_ref()
                .is_none_or(|u| e.user.as_deref().unwrap_or(SYSTEM) == u)
            && q.table.as_ref().is_none_or(|t| &e.table == t)
    };
    let page = crate::store::record::scan_between(
        &txn.open_table(index)?,
        prefix,
        q.since.as_deref(),
        q.until.as_deref(),
        true,
        window,
        keep,
    )?;
    let keys: Vec<&str> = page.uuids.iter().map(String::as_str).collect();
    let mut out = Vec::with_capacity(keys.len());
    for bytes in records.get_many(&keys)?.into_iter().flatten() {
        out.push(crate::store::record::decode("audit_log", bytes.value())?);
    }
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
        let e = entry_of(
            "patients",
            "p1",
            Some(old),
            Some(new),
            &Actor::default(),
            "t",
        )
        .unwrap();
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
        assert!(entry_of("users", "u", Some(old), Some(new), &Actor::default(), "t").is_none());
    }

    #[test]
    fn voiding_is_named_and_an_unchanged_write_leaves_no_entry() {
        let old = json!({"patient": "p", "voiding": {"voided": false}});
        let new = json!({"patient": "p", "voiding": {"voided": true, "void_reason": "erreur"}});
        let e = entry_of(
            "visits",
            "v1",
            Some(old.clone()),
            Some(new),
            &Actor::default(),
            "t",
        );
        assert_eq!(e.unwrap().action, Action::Voided);
        assert!(
            entry_of(
                "visits",
                "v1",
                Some(old.clone()),
                Some(old),
                &Actor::default(),
                "t"
            )
            .is_none()
        );
    }

    #[test]
    fn a_moved_record_is_filed_under_both_patients_and_passwords_are_hidden() {
        let e = entry_of(
            "visits",
            "v1",
            Some(json!({"patient": "a"})),
            Some(json!({"patient": "b"})),
            &Actor::default(),
            "t",
        )
        .unwrap();
        assert_eq!(e.patients, vec!["a".to_string(), "b".to_string()]);
        let e = entry_of(
            "users",
            "u1",
            Some(json!({"password_hash": "x"})),
            Some(json!({"password_hash": "y"})),
            &Actor::default(),
            "t",
        )
        .unwrap();
        assert_eq!(e.changes[0].before, Some(json!("(hidden)")));
        let purged = entry_of(
            "visits",
            "v1",
            Some(json!({"patient": "a"})),
            None,
            &Actor::default(),
            "t",
        )
        .unwrap();
        assert_eq!(
            (purged.action, purged.changes[0].before.clone()),
            (Action::Purged, Some(json!("a")))
        );
    }
}
