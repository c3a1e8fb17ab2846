//! The bed domain's tables: bed types, tags, beds and stays, each one small table keyed by
//! uuid and read whole; beds and tags numbered from counters.

use crate::domains::bed::{AssignmentRecord, BedRecord, BedTagRecord, BedTypeRecord};
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::RecordTable;
use crate::store::{Store, StoreResult};
use serde::Serialize;

pub(crate) const BED_TYPES: TableDefinition<&str, &[u8]> = TableDefinition::new("bed_types");
pub(crate) const BED_TAGS: TableDefinition<&str, &[u8]> = TableDefinition::new("bed_tags");
pub(crate) const BEDS: TableDefinition<&str, &[u8]> = TableDefinition::new("beds");
pub(crate) const ASSIGNMENTS: TableDefinition<&str, &[u8]> =
    TableDefinition::new("bed_assignments");

/// The counters that number beds and tags (the ward app addresses beds by number).
pub(crate) const BED_IDS: &str = "bed.id";
pub(crate) const TAG_IDS: &str = "bed_tag.id";

macro_rules! small_table {
    ($name:ident, $table:expr, $label:literal, $record:ty, $counter:expr) => {
        pub const $name: RecordTable = RecordTable {
            name: $label,
            table: $table,
            indexes: &[],
            covering: &[],
            create: |txn| {
                txn.open_table($table)?;
                Ok(())
            },
            reindex: |txn, bytes| {
                let r: $record = crate::store::record::decode($label, bytes)?;
                match $counter(&r) {
                    Some((counter, used)) => crate::store::raise_counter_in(txn, counter, used),
                    None => Ok(()),
                }
            },
            codec: crate::store::record::json_codec::<$record>(),
        };
    };
}

small_table!(
    TYPE_RECORDS,
    BED_TYPES,
    "bed_types",
    BedTypeRecord,
    |_: &BedTypeRecord| None
);
small_table!(
    TAG_RECORDS,
    BED_TAGS,
    "bed_tags",
    BedTagRecord,
    |t: &BedTagRecord| Some((TAG_IDS, t.id))
);
small_table!(BED_RECORDS, BEDS, "beds", BedRecord, |b: &BedRecord| Some(
    (BED_IDS, b.id)
));
small_table!(
    ASSIGNMENT_RECORDS,
    ASSIGNMENTS,
    "bed_assignments",
    AssignmentRecord,
    |_: &AssignmentRecord| None
);

pub fn bed_types(store: &Store) -> StoreResult<Vec<BedTypeRecord>> {
    let mut all: Vec<BedTypeRecord> =
        crate::store::record::all_records(store, BED_TYPES, "bed_types")?;
    all.sort_by(|a, b| (&a.name, &a.uuid).cmp(&(&b.name, &b.uuid)));
    Ok(all)
}

pub fn bed_tags(store: &Store) -> StoreResult<Vec<BedTagRecord>> {
    let mut all: Vec<BedTagRecord> =
        crate::store::record::all_records(store, BED_TAGS, "bed_tags")?;
    all.sort_by_key(|t| t.id);
    Ok(all)
}

/// Every bed, removed ones too, in the order they were made.
pub fn beds(store: &Store) -> StoreResult<Vec<BedRecord>> {
    let mut all: Vec<BedRecord> = crate::store::record::all_records(store, BEDS, "beds")?;
    all.sort_by_key(|b| b.id);
    Ok(all)
}

/// The tags not removed.
pub fn tags_in_use(store: &Store) -> StoreResult<Vec<BedTagRecord>> {
    Ok(bed_tags(store)?
        .into_iter()
        .filter(|t| !t.voiding.voided)
        .collect())
}

/// The beds not removed, in the order they were made.
pub fn beds_in_use(store: &Store) -> StoreResult<Vec<BedRecord>> {
    Ok(beds(store)?
        .into_iter()
        .filter(|b| !b.voiding.voided)
        .collect())
}

pub(crate) fn put<T: Serialize>(
    txn: &WriteTransaction,
    table: TableDefinition<&str, &[u8]>,
    uuid: &str,
    r: &T,
) -> StoreResult<()> {
    txn.open_table(table)?
        .insert(uuid, crate::store::record::encode(r).as_slice())?;
    Ok(())
}

pub fn put_type(store: &Store, t: &BedTypeRecord) -> StoreResult<()> {
    store.write(|txn| put(txn, BED_TYPES, &t.uuid, t))
}

pub fn delete_type(store: &Store, uuid: &str) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(BED_TYPES)?.remove(uuid)?;
        Ok(())
    })
}

/// Writes a tag; a new one (`id` 0) is numbered in the same commit.
pub fn put_tag(store: &Store, t: &mut BedTagRecord) -> StoreResult<()> {
    store.write(|txn| {
        if t.id == 0 {
            t.id = crate::store::next_counter_in(txn, TAG_IDS)? + 1;
        }
        put(txn, BED_TAGS, &t.uuid, t)
    })
}

/// Writes a bed; a new one (`id` 0) is numbered in the same commit.
pub fn put_bed(store: &Store, b: &mut BedRecord) -> StoreResult<()> {
    store.write(|txn| {
        if b.id == 0 {
            b.id = crate::store::next_counter_in(txn, BED_IDS)? + 1;
        }
        put(txn, BEDS, &b.uuid, b)
    })
}

pub(crate) fn stay(store: &Store, uuid: &str) -> StoreResult<Option<AssignmentRecord>> {
    let txn = store.begin_read()?;
    txn.open_table(ASSIGNMENTS)?
        .get(uuid)?
        .map(|v| crate::store::record::decode("bed_assignments", v.value()))
        .transpose()
}

/// Where a merge finds the beds a patient occupies (the occupants live in the bed's record).
pub const MERGE_BEDS: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &BED_RECORDS,
    of_patient: |store, patient| {
        Ok(beds(store)?
            .into_iter()
            .filter(|b| b.occupants.iter().any(|o| o.patient == patient))
            .map(|b| b.uuid)
            .collect())
    },
    adjust: None,
    counted_as: Some("beds"),
};

/// Where a merge finds a patient's stays in beds.
pub const MERGE_STAYS: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &ASSIGNMENT_RECORDS,
    of_patient: |store, patient| {
        let stays: Vec<AssignmentRecord> =
            crate::store::record::all_records(store, ASSIGNMENTS, "bed_assignments")?;
        Ok(stays
            .into_iter()
            .filter(|s| s.patient == patient)
            .map(|s| s.uuid)
            .collect())
    },
    adjust: None,
    counted_as: None,
};
