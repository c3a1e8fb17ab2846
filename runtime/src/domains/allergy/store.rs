//! The allergy table and its index by patient (`patient|created|uuid`).

use crate::domains::allergy::AllergyRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{Index, RecordTable, VOIDED, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("allergies");
const BY_PATIENT: Index = TableDefinition::new("allergies_by_patient");

pub const RECORDS: RecordTable = RecordTable {
    name: "allergies",
    table: TABLE,
    indexes: &[BY_PATIENT],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<AllergyRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_PATIENT)?;
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let a: AllergyRecord = crate::store::record::decode("allergies", bytes)?;
    write_index(txn, &a)
}

fn write_index(txn: &WriteTransaction, a: &AllergyRecord) -> StoreResult<()> {
    let flags = if a.voiding.voided { VOIDED } else { 0 };
    txn.open_table(BY_PATIENT)?.insert(
        key(&[&a.patient, &a.audit.date_created, &a.uuid]).as_str(),
        flags,
    )?;
    Ok(())
}

/// Writes an allergy durably (its index key never changes: only its flags do).
pub fn put(store: &Store, a: &AllergyRecord) -> StoreResult<()> {
    store.write(|txn| put_in(txn, a))
}

/// Writes an allergy in the caller's transaction (imports and generated stores).
pub fn put_in(txn: &WriteTransaction, a: &AllergyRecord) -> StoreResult<()> {
    txn.open_table(TABLE)?
        .insert(a.uuid.as_str(), crate::store::record::encode(a).as_slice())?;
    write_index(txn, a)
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<AllergyRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("allergies", v.value()))
        .transpose()
}

/// A patient's allergies, newest first (a patient has a handful: they are read whole).
pub fn of_patient(
    store: &Store,
    patient: &str,
    include_voided: bool,
) -> StoreResult<Vec<AllergyRecord>> {
    crate::store::record::records_under(
        store,
        TABLE,
        BY_PATIENT,
        "allergies",
        patient,
        include_voided,
    )
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, BY_PATIENT, patient),
    adjust: None,
    counted_as: None,
};
