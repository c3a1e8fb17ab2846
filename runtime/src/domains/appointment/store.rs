//! The appointment table and its indexes by start (`start|uuid`) and by patient
//! (`patient|start|uuid`).

use crate::domains::appointment::AppointmentRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{Index, RecordTable, VOIDED, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("appointments");
const BY_START: Index = TableDefinition::new("appointments_by_start");
const BY_PATIENT: Index = TableDefinition::new("appointments_by_patient");
const NUMBER_COUNTER: &str = "appointment-number";

pub const RECORDS: RecordTable = RecordTable {
    name: "appointments",
    table: TABLE,
    indexes: &[BY_START, BY_PATIENT],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<AppointmentRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_START)?;
    txn.open_table(BY_PATIENT)?;
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let a: AppointmentRecord = crate::store::record::decode("appointments", bytes)?;
    if let Some(n) = a
        .number
        .rsplit('-')
        .next()
        .and_then(|n| n.parse::<u64>().ok())
    {
        crate::store::raise_counter_in(txn, NUMBER_COUNTER, n)?;
    }
    write_index(txn, None, &a)
}

fn keys(a: &AppointmentRecord) -> (String, String) {
    (
        key(&["all", &a.start, &a.uuid]),
        key(&[&a.patient, &a.start, &a.uuid]),
    )
}

fn write_index(
    txn: &WriteTransaction,
    old: Option<&AppointmentRecord>,
    new: &AppointmentRecord,
) -> StoreResult<()> {
    let (mut by_start, mut by_patient) = (txn.open_table(BY_START)?, txn.open_table(BY_PATIENT)?);
    if let Some(old) = old {
        let (s, p) = keys(old);
        by_start.remove(s.as_str())?;
        by_patient.remove(p.as_str())?;
    }
    let flags = if new.voiding.voided { VOIDED } else { 0 };
    let (s, p) = keys(new);
    by_start.insert(s.as_str(), flags)?;
    by_patient.insert(p.as_str(), flags)?;
    Ok(())
}

/// Writes an appointment durably; a new one (without a number) gets the next number.
pub fn put(
    store: &Store,
    old: Option<&AppointmentRecord>,
    new: &mut AppointmentRecord,
) -> StoreResult<()> {
    store.write(|txn| {
        if new.number.is_empty() {
            new.number = format!(
                "RDV-{:06}",
                crate::store::next_counter_in(txn, NUMBER_COUNTER)? + 1
            );
        }
        txn.open_table(TABLE)?.insert(
            new.uuid.as_str(),
            crate::store::record::encode(&*new).as_slice(),
        )?;
        write_index(txn, old, new)
    })
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<AppointmentRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("appointments", v.value()))
        .transpose()
}

/// Appointments starting in `[from, to)` (key form), by start, voided ones left out.
pub fn starting_between(
    store: &Store,
    from: &str,
    to: &str,
) -> StoreResult<Vec<AppointmentRecord>> {
    read_range(store, BY_START, &key(&["all", from]), &key(&["all", to]))
}

/// A patient's appointments starting at or after `from` (key form), by start.
pub fn of_patient_from(
    store: &Store,
    patient: &str,
    from: &str,
) -> StoreResult<Vec<AppointmentRecord>> {
    read_range(
        store,
        BY_PATIENT,
        &key(&[patient, from]),
        &format!("{patient}}}"),
    )
}

/// The records under the keys of `index` in `[lower, upper)`, voided ones left out.
fn read_range(
    store: &Store,
    index: Index,
    lower: &str,
    upper: &str,
) -> StoreResult<Vec<AppointmentRecord>> {
    let txn = store.begin_read()?;
    let records = txn.open_table(TABLE)?;
    let mut out = Vec::new();
    for row in txn.open_table(index)?.range(lower..upper)? {
        let (k, flags) = row?;
        if flags.value() & VOIDED != 0 {
            continue;
        }
        if let Some(v) = records.get(crate::store::record::uuid_of(k.value()))? {
            out.push(crate::store::record::decode("appointments", v.value())?);
        }
    }
    Ok(out)
}

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

fn decode_appointment(bytes: &[u8]) -> StoreResult<AppointmentRecord> {
    crate::store::record::decode("appointments", bytes)
}

/// Appointments starting between `from` and `to` (key form, inclusive, either open), in
/// the caller's read transaction (reports).
pub fn starting_between_in(
    txn: &crate::store::kv::ReadTransaction,
    from: Option<&str>,
    to: Option<&str>,
) -> StoreResult<Vec<AppointmentRecord>> {
    crate::store::record::records_between_in(
        txn,
        TABLE,
        BY_START,
        "all",
        from,
        to,
        decode_appointment,
    )
}

/// A patient's appointments, by start, voided ones left out.
pub fn of_patient_in(
    txn: &crate::store::kv::ReadTransaction,
    patient: &str,
) -> StoreResult<Vec<AppointmentRecord>> {
    crate::store::record::records_between_in(
        txn,
        TABLE,
        BY_PATIENT,
        patient,
        None,
        None,
        decode_appointment,
    )
}
