//! The diagnosis table and its indexes: by encounter (`encounter|uuid`, for the encounter's
//! `diagnoses`) and by patient (`patient|created|uuid`, newest first).

use crate::domains::diagnosis::DiagnosisRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{Index, Page, RecordTable, VOIDED, Window, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("diagnoses");
const BY_ENCOUNTER: Index = TableDefinition::new("diagnoses_by_encounter");
const BY_PATIENT: Index = TableDefinition::new("diagnoses_by_patient");

pub const RECORDS: RecordTable = RecordTable {
    name: "diagnoses",
    table: TABLE,
    indexes: &[BY_ENCOUNTER, BY_PATIENT],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<DiagnosisRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_ENCOUNTER)?;
    txn.open_table(BY_PATIENT)?;
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let d: DiagnosisRecord = crate::store::record::decode("diagnoses", bytes)?;
    write_index(txn, &d)
}

fn write_index(txn: &WriteTransaction, d: &DiagnosisRecord) -> StoreResult<()> {
    let flags = if d.voiding.voided { VOIDED } else { 0 };
    txn.open_table(BY_ENCOUNTER)?
        .insert(key(&[&d.encounter, &d.uuid]).as_str(), flags)?;
    txn.open_table(BY_PATIENT)?.insert(
        key(&[&d.patient, &d.audit.date_created, &d.uuid]).as_str(),
        flags,
    )?;
    Ok(())
}

/// Writes a diagnosis durably (its index keys never change: only its flags do).
pub fn put(store: &Store, d: &DiagnosisRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?
            .insert(d.uuid.as_str(), crate::store::record::encode(d).as_slice())?;
        write_index(txn, d)
    })
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<DiagnosisRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("diagnoses", v.value()))
        .transpose()
}

fn read_page(
    store: &Store,
    index: Index,
    prefix: &str,
    include_voided: bool,
    newest_first: bool,
    window: Window,
) -> StoreResult<(Vec<DiagnosisRecord>, Page)> {
    let txn = store.begin_read()?;
    let records = txn.open_table(TABLE)?;
    let exclude = if include_voided { 0 } else { VOIDED };
    let page = crate::store::record::scan(
        &txn.open_table(index)?,
        prefix,
        exclude,
        newest_first,
        window,
        |_| true,
    )?;
    let mut out = Vec::with_capacity(page.uuids.len());
    for uuid in &page.uuids {
        if let Some(bytes) = records.get(uuid.as_str())? {
            out.push(crate::store::record::decode("diagnoses", bytes.value())?);
        }
    }
    Ok((out, page))
}

/// An encounter's diagnoses that are not voided.
pub fn of_encounter(store: &Store, encounter: &str) -> StoreResult<Vec<DiagnosisRecord>> {
    let all = Window {
        start: 0,
        limit: usize::MAX,
        count_all: false,
    };
    Ok(read_page(store, BY_ENCOUNTER, encounter, false, false, all)?.0)
}

/// One page of a patient's diagnoses, newest first.
pub fn of_patient(
    store: &Store,
    patient: &str,
    include_voided: bool,
    window: Window,
) -> StoreResult<(Vec<DiagnosisRecord>, Page)> {
    read_page(store, BY_PATIENT, patient, include_voided, true, window)
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, BY_PATIENT, patient),
    adjust: None,
    counted_as: None,
};
