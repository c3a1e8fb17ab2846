//! The patient flag table and its index by patient (`patient|uuid`, the value the voided
//! flag): a chart reads one patient's few records with one range read.

use crate::domains::flag::PatientFlagRecord;
use crate::store::kv::{ReadTransaction, TableDefinition, WriteTransaction};
use crate::store::record::{Index, RecordTable, VOIDED, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("patient_flags");
const BY_PATIENT: Index = TableDefinition::new("patient_flags_by_patient");

pub const RECORDS: RecordTable = RecordTable {
    name: "patient_flags",
    table: TABLE,
    indexes: &[BY_PATIENT],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<PatientFlagRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_PATIENT)?;
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let r: PatientFlagRecord = crate::store::record::decode("patient_flags", bytes)?;
    write_index(txn, &r)
}

fn index_key(r: &PatientFlagRecord) -> String {
    key(&[&r.patient, &r.uuid])
}

fn write_index(txn: &WriteTransaction, r: &PatientFlagRecord) -> StoreResult<()> {
    let flags = if r.voiding.voided { VOIDED } else { 0 };
    txn.open_table(BY_PATIENT)?
        .insert(index_key(r).as_str(), flags)?;
    Ok(())
}

fn put_in(txn: &WriteTransaction, r: &PatientFlagRecord) -> StoreResult<()> {
    txn.open_table(TABLE)?
        .insert(r.uuid.as_str(), crate::store::record::encode(r).as_slice())?;
    write_index(txn, r)
}

/// A regeneration's changes, in one commit.
pub fn apply(
    store: &Store,
    remove: &[PatientFlagRecord],
    add: &[PatientFlagRecord],
) -> StoreResult<()> {
    store.write(|txn| {
        for r in remove {
            txn.open_table(TABLE)?.remove(r.uuid.as_str())?;
            txn.open_table(BY_PATIENT)?.remove(index_key(r).as_str())?;
        }
        for r in add {
            put_in(txn, r)?;
        }
        Ok(())
    })
}

/// Writes a changed record (voided or restored): its key does not change.
pub fn put(store: &Store, r: &PatientFlagRecord) -> StoreResult<()> {
    store.write(|txn| put_in(txn, r))
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<PatientFlagRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("patient_flags", v.value()))
        .transpose()
}

/// A patient's flag records, voided ones included, in `txn`.
pub fn of_patient_in(txn: &ReadTransaction, patient: &str) -> StoreResult<Vec<PatientFlagRecord>> {
    let records = txn.open_table(TABLE)?;
    let mut uuids = Vec::new();
    crate::store::record::walk(&txn.open_table(BY_PATIENT)?, patient, 0, true, |k| {
        uuids.push(crate::store::record::uuid_of(k).to_string());
        true
    })?;
    let mut out = Vec::with_capacity(uuids.len());
    for uuid in &uuids {
        if let Some(v) = records.get(uuid.as_str())? {
            out.push(crate::store::record::decode("patient_flags", v.value())?);
        }
    }
    Ok(out)
}

pub fn of_patient(store: &Store, patient: &str) -> StoreResult<Vec<PatientFlagRecord>> {
    let txn = store.begin_read()?;
    of_patient_in(&txn, patient)
}

/// Removes her flag records with her (`Registry::on_patient_purged`): the runtime made
/// them from her record, so they do not hold a purge back. A merge does not move them
/// either: the kept patient's flags are evaluated on her own record when next read.
pub fn purge_of_patient(txn: &WriteTransaction, patient: &str) -> StoreResult<()> {
    let mut uuids = Vec::new();
    crate::store::record::walk(&txn.open_table(BY_PATIENT)?, patient, 0, true, |k| {
        uuids.push(crate::store::record::uuid_of(k).to_string());
        true
    })?;
    let mut table = txn.open_table(TABLE)?;
    let mut index = txn.open_table(BY_PATIENT)?;
    for uuid in uuids {
        table.remove(uuid.as_str())?;
        index.remove(key(&[patient, &uuid]).as_str())?;
    }
    Ok(())
}
