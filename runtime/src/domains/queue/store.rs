//! The queues made through the API (one small table, read whole), and the queue-entry
//! tables: records by uuid, indexed by patient (`patient|started|uuid`), by
//! visit (`visit|started|uuid`), by start over the whole facility (`all|started|uuid`), and
//! the entries still waiting or in service (`all|started|uuid`, removed when an entry ends
//! or is voided), so the queue screens read only today's few open entries however long
//! the history grows.

use crate::domains::queue::QueueEntryRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{ENDED, Index, RecordTable, VOIDED, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("queue_entries");
const BY_PATIENT: Index = TableDefinition::new("queue_entries_by_patient");
const BY_VISIT: Index = TableDefinition::new("queue_entries_by_visit");
const BY_START: Index = TableDefinition::new("queue_entries_by_start");
const OPEN: Index = TableDefinition::new("queue_entries_open");

const QUEUES: TableDefinition<&str, &[u8]> = TableDefinition::new("queues");

/// The queues made through the API: one small table keyed by uuid, read whole.
pub const QUEUE_RECORDS: RecordTable = RecordTable {
    name: "queues",
    table: QUEUES,
    indexes: &[],
    covering: &[],
    create: |txn| {
        txn.open_table(QUEUES)?;
        Ok(())
    },
    reindex: |_, bytes| {
        crate::store::record::decode::<crate::domains::queue::QueueDefinition>("queues", bytes)
            .map(drop)
    },
    codec: crate::store::record::json_codec::<crate::domains::queue::QueueDefinition>(),
};

pub(crate) fn api_queues(
    store: &Store,
) -> StoreResult<Vec<crate::domains::queue::QueueDefinition>> {
    let mut queues: Vec<crate::domains::queue::QueueDefinition> =
        crate::store::record::all_records(store, QUEUES, "queues")?;
    queues.sort_by(|a, b| (&a.queue.name, &a.queue.uuid).cmp(&(&b.queue.name, &b.queue.uuid)));
    Ok(queues)
}

pub(crate) fn api_queue(
    store: &Store,
    uuid: &str,
) -> StoreResult<Option<crate::domains::queue::QueueDefinition>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(QUEUES)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("queues", v.value()))
        .transpose()
}

pub(crate) fn put_api_queue(
    store: &Store,
    q: &crate::domains::queue::QueueDefinition,
) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(QUEUES)?.insert(
            q.queue.uuid.as_str(),
            crate::store::record::encode(q).as_slice(),
        )?;
        Ok(())
    })
}

pub(crate) fn purge_api_queue(store: &Store, uuid: &str) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(QUEUES)?.remove(uuid)?;
        Ok(())
    })
}

pub const RECORDS: RecordTable = RecordTable {
    name: "queue_entries",
    table: TABLE,
    indexes: &[BY_PATIENT, BY_VISIT, BY_START, OPEN],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<QueueEntryRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    for index in [BY_PATIENT, BY_VISIT, BY_START, OPEN] {
        txn.open_table(index)?;
    }
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let e: QueueEntryRecord = crate::store::record::decode("queue_entries", bytes)?;
    write_index(txn, None, &e)
}

fn flags(e: &QueueEntryRecord) -> u8 {
    let mut f = 0;
    if e.voiding.voided {
        f |= VOIDED;
    }
    if e.ended.is_some() {
        f |= ENDED;
    }
    f
}

fn write_index(
    txn: &WriteTransaction,
    old: Option<&QueueEntryRecord>,
    new: &QueueEntryRecord,
) -> StoreResult<()> {
    let mut by_patient = txn.open_table(BY_PATIENT)?;
    let mut by_visit = txn.open_table(BY_VISIT)?;
    let mut by_start = txn.open_table(BY_START)?;
    let mut open = txn.open_table(OPEN)?;
    if let Some(old) = old {
        by_patient.remove(key(&[&old.patient, &old.started, &old.uuid]).as_str())?;
        if let Some(v) = &old.visit {
            by_visit.remove(key(&[v, &old.started, &old.uuid]).as_str())?;
        }
        let all = key(&["all", &old.started, &old.uuid]);
        by_start.remove(all.as_str())?;
        open.remove(all.as_str())?;
    }
    let f = flags(new);
    by_patient.insert(key(&[&new.patient, &new.started, &new.uuid]).as_str(), f)?;
    if let Some(v) = &new.visit {
        by_visit.insert(key(&[v, &new.started, &new.uuid]).as_str(), f)?;
    }
    let all = key(&["all", &new.started, &new.uuid]);
    by_start.insert(all.as_str(), f)?;
    if f == 0 {
        open.insert(all.as_str(), 0)?;
    }
    Ok(())
}

/// Writes entries (each new or changed, with its previous version) in the caller's
/// transaction.
pub fn put_in(
    txn: &WriteTransaction,
    changes: &[(Option<&QueueEntryRecord>, &QueueEntryRecord)],
) -> StoreResult<()> {
    for (old, new) in changes {
        txn.open_table(TABLE)?.insert(
            new.uuid.as_str(),
            crate::store::record::encode(*new).as_slice(),
        )?;
        write_index(txn, *old, new)?;
    }
    Ok(())
}

/// Writes entries durably, together.
pub fn put_all(
    store: &Store,
    changes: &[(Option<&QueueEntryRecord>, &QueueEntryRecord)],
) -> StoreResult<()> {
    store.write(|txn| put_in(txn, changes))
}

pub fn put(store: &Store, old: &QueueEntryRecord, new: &QueueEntryRecord) -> StoreResult<()> {
    put_all(store, &[(Some(old), new)])
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<QueueEntryRecord>> {
    let txn = store.begin_read()?;
    txn.open_table(TABLE)?
        .get(uuid)?
        .map(|v| crate::store::record::decode("queue_entries", v.value()))
        .transpose()
}

/// Where a search starts reading: the narrowest index its criteria allow.
pub enum Source<'a> {
    Patient(&'a str),
    Visit(&'a str),
    /// Entries neither ended nor voided, facility-wide.
    Open,
    /// Entries started within `[from, to]` (datetime keys), facility-wide: a day's
    /// entries read one range of the start index, however long the history.
    StartedBetween(&'a str, &'a str),
    /// Every entry, facility-wide (a search with no narrower criterion).
    All,
}

/// The records under `source` (voided ones only with `include_voided`), in start order.
pub fn read(
    store: &Store,
    source: Source,
    include_voided: bool,
) -> StoreResult<Vec<QueueEntryRecord>> {
    let txn = store.begin_read()?;
    let records = txn.open_table(TABLE)?;
    let exclude = if include_voided { 0 } else { VOIDED };
    let mut uuids = Vec::new();
    let mut collect = |k: &str| {
        uuids.push(k.rsplit('|').next().unwrap_or_default().to_string());
        true
    };
    match source {
        Source::Patient(p) => crate::store::record::walk(
            &txn.open_table(BY_PATIENT)?,
            p,
            exclude,
            false,
            &mut collect,
        )?,
        Source::Visit(v) => {
            crate::store::record::walk(&txn.open_table(BY_VISIT)?, v, exclude, false, &mut collect)?
        }
        Source::Open => {
            crate::store::record::walk(&txn.open_table(OPEN)?, "all", 0, false, &mut collect)?
        }
        Source::StartedBetween(from, to) => {
            let lower = format!("all|{from}");
            // Every key of an entry started at `to` sorts below `all|{to}}` ('}' after '|').
            let upper = format!("all|{to}}}");
            for row in txn
                .open_table(BY_START)?
                .range(lower.as_str()..upper.as_str())?
            {
                let (k, flags) = row?;
                if flags.value() & exclude == 0 {
                    collect(k.value());
                }
            }
        }
        Source::All => crate::store::record::walk(
            &txn.open_table(BY_START)?,
            "all",
            exclude,
            false,
            &mut collect,
        )?,
    }
    let mut out = Vec::with_capacity(uuids.len());
    for u in &uuids {
        if let Some(bytes) = records.get(u.as_str())? {
            out.push(crate::store::record::decode(
                "queue_entries",
                bytes.value(),
            )?);
        }
    }
    Ok(out)
}

/// The open entries of a visit (to end them with it).
pub fn open_of_visit(store: &Store, visit: &str) -> StoreResult<Vec<QueueEntryRecord>> {
    Ok(read(store, Source::Visit(visit), false)?
        .into_iter()
        .filter(|e| e.ended.is_none())
        .collect())
}

/// Whether any entry, voided or not, names the patient (a purge is refused then).
pub fn any_of_patient(store: &Store, patient: &str) -> StoreResult<bool> {
    let txn = store.begin_read()?;
    let mut found = false;
    crate::store::record::walk(&txn.open_table(BY_PATIENT)?, patient, 0, false, |_| {
        found = true;
        false
    })?;
    Ok(found)
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, BY_PATIENT, patient),
    adjust: None,
    counted_as: None,
};
