//! The relationship table and its index by person (`person|created|uuid`, one key for each
//! of the two persons).

use crate::domains::relationship::RelationshipRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{Index, RecordTable, VOIDED, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("relationships");
const BY_PERSON: Index = TableDefinition::new("relationships_by_person");

pub const RECORDS: RecordTable = RecordTable {
    name: "relationships",
    table: TABLE,
    indexes: &[BY_PERSON],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<RelationshipRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_PERSON)?;
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let r: RelationshipRecord = crate::store::record::decode("relationships", bytes)?;
    write_index(txn, &r)
}

fn write_index(txn: &WriteTransaction, r: &RelationshipRecord) -> StoreResult<()> {
    let flags = if r.voiding.voided { VOIDED } else { 0 };
    let mut index = txn.open_table(BY_PERSON)?;
    for person in [&r.person_a, &r.person_b] {
        index.insert(
            key(&[person, &r.audit.date_created, &r.uuid]).as_str(),
            flags,
        )?;
    }
    Ok(())
}

/// Writes a relationship durably. Its persons never change (a change of persons is a new
/// relationship), so its index keys stay; only their flags do.
pub fn put(store: &Store, r: &RelationshipRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?
            .insert(r.uuid.as_str(), crate::store::record::encode(r).as_slice())?;
        write_index(txn, r)
    })
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<RelationshipRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("relationships", v.value()))
        .transpose()
}

/// A person's relationships, on either side, newest first (a person has a handful).
pub fn of_person(
    store: &Store,
    person: &str,
    include_voided: bool,
) -> StoreResult<Vec<RelationshipRecord>> {
    crate::store::record::records_under(
        store,
        TABLE,
        BY_PERSON,
        "relationships",
        person,
        include_voided,
    )
}

/// Removes a relationship for good, with its index keys.
pub fn purge(store: &Store, r: &RelationshipRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?.remove(r.uuid.as_str())?;
        let mut index = txn.open_table(BY_PERSON)?;
        for person in [&r.person_a, &r.person_b] {
            index.remove(key(&[person, &r.audit.date_created, &r.uuid]).as_str())?;
        }
        Ok(())
    })
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, BY_PERSON, patient),
    adjust: Some(super::merged_between_the_two),
    counted_as: None,
};
