//! The dispense table, indexed by patient (`patient|recorded|uuid`), by the drug order each
//! fills (`order|uuid`) and by encounter (`encounter|uuid`). A replaced dispense's old keys
//! are removed before its new ones are written (a correction may name another order).

use crate::domains::dispense::DispenseRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{Index, RecordTable, VOIDED, key, uuid_of};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("medication_dispenses");
const BY_PATIENT: Index = TableDefinition::new("medication_dispenses_by_patient");
const BY_ORDER: Index = TableDefinition::new("medication_dispenses_by_order");
const BY_ENCOUNTER: Index = TableDefinition::new("medication_dispenses_by_encounter");

pub const RECORDS: RecordTable = RecordTable {
    name: "medication_dispenses",
    table: TABLE,
    indexes: &[BY_PATIENT, BY_ORDER, BY_ENCOUNTER],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<DispenseRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    for index in [BY_PATIENT, BY_ORDER, BY_ENCOUNTER] {
        txn.open_table(index)?;
    }
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let d: DispenseRecord = crate::store::record::decode("medication_dispenses", bytes)?;
    write_index(txn, &d)
}

fn keys(d: &DispenseRecord) -> Vec<(Index, String)> {
    let mut k = vec![(
        BY_PATIENT,
        key(&[&d.patient, &d.audit.date_created, &d.uuid]),
    )];
    if let Some(o) = &d.drug_order {
        k.push((BY_ORDER, key(&[o, &d.uuid])));
    }
    if let Some(e) = &d.encounter {
        k.push((BY_ENCOUNTER, key(&[e, &d.uuid])));
    }
    k
}

fn write_index(txn: &WriteTransaction, d: &DispenseRecord) -> StoreResult<()> {
    let flags = if d.voiding.voided { VOIDED } else { 0 };
    for (index, k) in keys(d) {
        txn.open_table(index)?.insert(k.as_str(), flags)?;
    }
    Ok(())
}

/// Writes a dispense durably, replacing `old` (its index keys removed first) if given.
pub fn put(store: &Store, old: Option<&DispenseRecord>, d: &DispenseRecord) -> StoreResult<()> {
    store.write(|txn| {
        if let Some(old) = old {
            for (index, k) in keys(old) {
                txn.open_table(index)?.remove(k.as_str())?;
            }
        }
        txn.open_table(TABLE)?
            .insert(d.uuid.as_str(), crate::store::record::encode(d).as_slice())?;
        write_index(txn, d)
    })
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<DispenseRecord>> {
    let txn = store.begin_read()?;
    txn.open_table(TABLE)?
        .get(uuid)?
        .map(|v| crate::store::record::decode("medication_dispenses", v.value()))
        .transpose()
}

fn under(store: &Store, index: Index, prefix: &str) -> StoreResult<Vec<DispenseRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    let mut uuids = Vec::new();
    crate::store::record::walk(&txn.open_table(index)?, prefix, VOIDED, true, |k| {
        uuids.push(uuid_of(k).to_string());
        true
    })?;
    let mut out = Vec::with_capacity(uuids.len());
    for u in uuids {
        if let Some(v) = t.get(u.as_str())? {
            out.push(crate::store::record::decode(
                "medication_dispenses",
                v.value(),
            )?);
        }
    }
    Ok(out)
}

/// A drug order's dispenses (not voided).
pub fn of_order(store: &Store, order: &str) -> StoreResult<Vec<DispenseRecord>> {
    under(store, BY_ORDER, order)
}

/// A patient's dispenses (not voided), newest recorded first.
pub fn of_patient(store: &Store, patient: &str) -> StoreResult<Vec<DispenseRecord>> {
    under(store, BY_PATIENT, patient)
}

/// An encounter's dispenses (not voided).
pub fn of_encounter(store: &Store, encounter: &str) -> StoreResult<Vec<DispenseRecord>> {
    under(store, BY_ENCOUNTER, encounter)
}

/// Whether any dispense, voided or not, names the patient (a purge is refused then).
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
