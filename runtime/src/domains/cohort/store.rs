//! The list and membership tables, and the membership indexes by list
//! (`cohort|created|uuid`) and by patient (`patient|cohort|uuid`).

use crate::domains::cohort::{CohortRecord, MemberRecord};
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{Index, RecordTable, VOIDED, key};
use crate::store::{Store, StoreResult};

const COHORTS: TableDefinition<&str, &[u8]> = TableDefinition::new("cohorts");
const MEMBERS: TableDefinition<&str, &[u8]> = TableDefinition::new("cohort_members");
const MEMBERS_BY_COHORT: Index = TableDefinition::new("cohort_members_by_cohort");
const MEMBERS_BY_PATIENT: Index = TableDefinition::new("cohort_members_by_patient");

pub const COHORT_RECORDS: RecordTable = RecordTable {
    name: "cohorts",
    table: COHORTS,
    indexes: &[],
    covering: &[],
    create: create_cohorts,
    reindex: |_, bytes| crate::store::record::decode::<CohortRecord>("cohorts", bytes).map(|_| ()),
    codec: crate::store::record::json_codec::<CohortRecord>(),
};

pub const MEMBER_RECORDS: RecordTable = RecordTable {
    name: "cohort_members",
    table: MEMBERS,
    indexes: &[MEMBERS_BY_COHORT, MEMBERS_BY_PATIENT],
    covering: &[],
    create: create_members,
    reindex: reindex_member,
    codec: crate::store::record::json_codec::<MemberRecord>(),
};

fn create_cohorts(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(COHORTS)?;
    Ok(())
}

fn create_members(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(MEMBERS)?;
    txn.open_table(MEMBERS_BY_COHORT)?;
    txn.open_table(MEMBERS_BY_PATIENT)?;
    Ok(())
}

fn reindex_member(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let m: MemberRecord = crate::store::record::decode("cohort_members", bytes)?;
    write_member_index(txn, &m)
}

fn member_keys(m: &MemberRecord) -> [(Index, String); 2] {
    [
        (
            MEMBERS_BY_COHORT,
            key(&[&m.cohort, &m.audit.date_created, &m.uuid]),
        ),
        (MEMBERS_BY_PATIENT, key(&[&m.patient, &m.cohort, &m.uuid])),
    ]
}

fn write_member_index(txn: &WriteTransaction, m: &MemberRecord) -> StoreResult<()> {
    let flags = if m.voiding.voided { VOIDED } else { 0 };
    for (index, k) in member_keys(m) {
        txn.open_table(index)?.insert(k.as_str(), flags)?;
    }
    Ok(())
}

pub fn put_cohort(store: &Store, c: &CohortRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(COHORTS)?
            .insert(c.uuid.as_str(), crate::store::record::encode(c).as_slice())?;
        Ok(())
    })
}

pub fn cohort(store: &Store, uuid: &str) -> StoreResult<Option<CohortRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(COHORTS)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("cohorts", v.value()))
        .transpose()
}

/// Every list, voided ones included, by name.
pub fn cohorts(store: &Store) -> StoreResult<Vec<CohortRecord>> {
    let mut all: Vec<CohortRecord> = crate::store::record::all_records(store, COHORTS, "cohorts")?;
    all.sort_by_cached_key(|c| (c.name.to_lowercase(), c.uuid.clone()));
    Ok(all)
}

/// Removes a list and its memberships for good.
pub fn purge_cohort(store: &Store, c: &CohortRecord) -> StoreResult<()> {
    let members = members_of(store, &c.uuid, true)?;
    store.write(|txn| {
        txn.open_table(COHORTS)?.remove(c.uuid.as_str())?;
        for m in &members {
            remove_member_in(txn, m)?;
        }
        Ok(())
    })
}

/// Writes a membership durably. Its list and patient never change, so its keys stay.
pub fn put_member(store: &Store, m: &MemberRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(MEMBERS)?
            .insert(m.uuid.as_str(), crate::store::record::encode(m).as_slice())?;
        write_member_index(txn, m)
    })
}

pub fn member(store: &Store, uuid: &str) -> StoreResult<Option<MemberRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(MEMBERS)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("cohort_members", v.value()))
        .transpose()
}

/// A list's memberships, newest first.
pub fn members_of(
    store: &Store,
    cohort: &str,
    include_voided: bool,
) -> StoreResult<Vec<MemberRecord>> {
    crate::store::record::records_under(
        store,
        MEMBERS,
        MEMBERS_BY_COHORT,
        "cohort_members",
        cohort,
        include_voided,
    )
}

/// A patient's memberships (of every list, or of one list when `cohort` is given).
pub fn memberships_of(
    store: &Store,
    patient: &str,
    cohort: Option<&str>,
    include_voided: bool,
) -> StoreResult<Vec<MemberRecord>> {
    let prefix = match cohort {
        Some(c) => key(&[patient, c]),
        None => patient.to_string(),
    };
    crate::store::record::records_under(
        store,
        MEMBERS,
        MEMBERS_BY_PATIENT,
        "cohort_members",
        &prefix,
        include_voided,
    )
}

pub fn any_of_patient(store: &Store, patient: &str) -> StoreResult<bool> {
    let txn = store.begin_read()?;
    let mut found = false;
    crate::store::record::walk(
        &txn.open_table(MEMBERS_BY_PATIENT)?,
        patient,
        0,
        false,
        |_| {
            found = true;
            false
        },
    )?;
    Ok(found)
}

fn remove_member_in(txn: &WriteTransaction, m: &MemberRecord) -> StoreResult<()> {
    txn.open_table(MEMBERS)?.remove(m.uuid.as_str())?;
    for (index, k) in member_keys(m) {
        txn.open_table(index)?.remove(k.as_str())?;
    }
    Ok(())
}

/// Removes a membership for good, with its index keys.
pub fn purge_member(store: &Store, m: &MemberRecord) -> StoreResult<()> {
    store.write(|txn| remove_member_in(txn, m))
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &MEMBER_RECORDS,
    of_patient: |store, patient| {
        crate::store::record::uuids_under(store, MEMBERS_BY_PATIENT, patient)
    },
    adjust: None,
    counted_as: None,
};
