//! The condition table and its index by patient (`patient|created|uuid`, newest first),
//! whose flags mark voided and no-longer-active conditions so that a problem list of
//! active conditions is read from keys alone.

use crate::domains::condition::ConditionRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{ENDED, Index, Page, RecordTable, VOIDED, Window, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("conditions");
const BY_PATIENT: Index = TableDefinition::new("conditions_by_patient");

/// An index flag: the condition is not active (inactive or history of).
pub const NOT_ACTIVE: u8 = ENDED;

pub const RECORDS: RecordTable = RecordTable {
    name: "conditions",
    table: TABLE,
    indexes: &[BY_PATIENT],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<ConditionRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_PATIENT)?;
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let c: ConditionRecord = crate::store::record::decode("conditions", bytes)?;
    write_index(txn, &c)
}

fn write_index(txn: &WriteTransaction, c: &ConditionRecord) -> StoreResult<()> {
    let mut flags = if c.voiding.voided { VOIDED } else { 0 };
    if !c.is_active() {
        flags |= NOT_ACTIVE;
    }
    txn.open_table(BY_PATIENT)?.insert(
        key(&[&c.patient, &c.audit.date_created, &c.uuid]).as_str(),
        flags,
    )?;
    Ok(())
}

/// Writes a condition durably (its index key never changes: only its flags do).
pub fn put(store: &Store, c: &ConditionRecord) -> StoreResult<()> {
    store.write(|txn| put_in(txn, c))
}

/// Writes an condition in the caller's transaction (imports and generated stores).
pub fn put_in(txn: &WriteTransaction, c: &ConditionRecord) -> StoreResult<()> {
    txn.open_table(TABLE)?
        .insert(c.uuid.as_str(), crate::store::record::encode(c).as_slice())?;
    write_index(txn, c)
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<ConditionRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("conditions", v.value()))
        .transpose()
}

/// Which of a patient's conditions a listing reads, from their index flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Voided ones too (whether a patient has any, before a purge).
    All,
    NotVoided,
    Active,
    /// Not voided and not active (inactive or history of).
    Inactive,
}

impl Which {
    fn admits(self, flags: u8) -> bool {
        match self {
            Which::All => true,
            Which::NotVoided => flags & VOIDED == 0,
            Which::Active => flags & (VOIDED | NOT_ACTIVE) == 0,
            Which::Inactive => flags & VOIDED == 0 && flags & NOT_ACTIVE != 0,
        }
    }
}

/// One page of a patient's conditions, newest first.
pub fn of_patient(
    store: &Store,
    patient: &str,
    which: Which,
    window: Window,
) -> StoreResult<(Vec<ConditionRecord>, Page)> {
    let txn = store.begin_read()?;
    let records = txn.open_table(TABLE)?;
    let page = crate::store::record::scan_where(
        &txn.open_table(BY_PATIENT)?,
        patient,
        true,
        window,
        |_, flags| which.admits(flags),
    )?;
    let mut out = Vec::with_capacity(page.uuids.len());
    for uuid in &page.uuids {
        if let Some(bytes) = records.get(uuid.as_str())? {
            out.push(crate::store::record::decode("conditions", bytes.value())?);
        }
    }
    Ok((out, page))
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, BY_PATIENT, patient),
    adjust: None,
    counted_as: None,
};
