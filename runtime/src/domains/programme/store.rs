//! The enrolment table and its index by patient (`patient|enrolled|uuid`, flagged voided and
//! completed), which the chart's programme list and the overlap rule read.

use crate::domains::programme::EnrolmentRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{ENDED, Index, Page, RecordTable, VOIDED, Window, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("programenrollments");
const BY_PATIENT: Index = TableDefinition::new("programenrollments_by_patient");

pub const RECORDS: RecordTable = RecordTable {
    name: "programenrollments",
    table: TABLE,
    indexes: &[BY_PATIENT],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<EnrolmentRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_PATIENT)?;
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let e: EnrolmentRecord = crate::store::record::decode("programenrollments", bytes)?;
    write_index(txn, None, &e)
}

fn flags(e: &EnrolmentRecord) -> u8 {
    let mut f = 0;
    if e.voiding.voided {
        f |= VOIDED;
    }
    if e.completed.is_some() {
        f |= ENDED;
    }
    f
}

fn write_index(
    txn: &WriteTransaction,
    old: Option<&EnrolmentRecord>,
    new: &EnrolmentRecord,
) -> StoreResult<()> {
    let mut by_patient = txn.open_table(BY_PATIENT)?;
    if let Some(old) = old {
        by_patient.remove(key(&[&old.patient, &old.enrolled, &old.uuid]).as_str())?;
    }
    by_patient.insert(
        key(&[&new.patient, &new.enrolled, &new.uuid]).as_str(),
        flags(new),
    )?;
    Ok(())
}

/// Writes an enrolment durably.
pub fn put(store: &Store, old: Option<&EnrolmentRecord>, new: &EnrolmentRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?.insert(
            new.uuid.as_str(),
            crate::store::record::encode(new).as_slice(),
        )?;
        write_index(txn, old, new)
    })
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<EnrolmentRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("programenrollments", v.value()))
        .transpose()
}

/// One page of a patient's enrolments, newest enrolment first; completed ones unless
/// `active_only`, voided ones only with `include_voided`.
pub fn of_patient(
    store: &Store,
    patient: &str,
    active_only: bool,
    include_voided: bool,
    window: Window,
) -> StoreResult<(Vec<EnrolmentRecord>, Page)> {
    let txn = store.begin_read()?;
    let records = txn.open_table(TABLE)?;
    let mut exclude = 0;
    if !include_voided {
        exclude |= VOIDED;
    }
    if active_only {
        exclude |= ENDED;
    }
    let page = crate::store::record::scan(
        &txn.open_table(BY_PATIENT)?,
        patient,
        exclude,
        true,
        window,
        |_| true,
    )?;
    let mut out = Vec::with_capacity(page.uuids.len());
    for uuid in &page.uuids {
        if let Some(bytes) = records.get(uuid.as_str())? {
            out.push(crate::store::record::decode(
                "programenrollments",
                bytes.value(),
            )?);
        }
    }
    Ok((out, page))
}

/// Every enrolment of a patient, voided ones left out (for the overlap rule).
pub fn all_of_patient(store: &Store, patient: &str) -> StoreResult<Vec<EnrolmentRecord>> {
    let all = Window {
        start: 0,
        limit: usize::MAX,
        count_all: false,
    };
    Ok(of_patient(store, patient, false, false, all)?.0)
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, BY_PATIENT, patient),
    adjust: None,
    counted_as: None,
};

fn decode_enrolment(bytes: &[u8]) -> StoreResult<EnrolmentRecord> {
    crate::store::record::decode("programenrollments", bytes)
}

/// A patient's enrolments, voided ones left out, in the caller's read transaction.
pub fn of_patient_in(
    txn: &crate::store::kv::ReadTransaction,
    patient: &str,
) -> StoreResult<Vec<EnrolmentRecord>> {
    crate::store::record::records_between_in(
        txn,
        TABLE,
        BY_PATIENT,
        patient,
        None,
        None,
        decode_enrolment,
    )
}

/// The patients with an enrolment (voided ones left out) in a programme, read from the
/// enrolments themselves: a facility's enrolments are thousands, not millions.
pub fn patients_enrolled_in(
    txn: &crate::store::kv::ReadTransaction,
    program: &str,
) -> StoreResult<std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeSet::new();
    for row in txn.open_table(TABLE)?.iter()? {
        let (_, v) = row?;
        let e = decode_enrolment(v.value())?;
        if e.program == program && !e.voiding.voided {
            out.insert(e.patient);
        }
    }
    Ok(out)
}
