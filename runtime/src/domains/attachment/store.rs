//! The attachment table, its index by patient (`patient|datetime|uuid`), and the bytes
//! table (uuid → the file as uploaded), which backups carry as base64 (the registry's blob tables, `domains::REGISTRY`).

use crate::domains::attachment::AttachmentRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{BlobTable, Index, RecordTable, VOIDED, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("attachments");
const BY_PATIENT: Index = TableDefinition::new("attachments_by_patient");
const BYTES: TableDefinition<&str, &[u8]> = TableDefinition::new("attachment_bytes");

pub const RECORDS: RecordTable = RecordTable {
    name: "attachments",
    table: TABLE,
    indexes: &[BY_PATIENT],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<AttachmentRecord>(),
};

pub const CONTENTS: BlobTable = BlobTable {
    name: "attachment_bytes",
    table: BYTES,
    check: check_bytes,
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_PATIENT)?;
    txn.open_table(BYTES)?;
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let a: AttachmentRecord = crate::store::record::decode("attachments", bytes)?;
    write_index(txn, &a)
}

fn index_key(a: &AttachmentRecord) -> String {
    key(&[&a.patient, &a.datetime, &a.uuid])
}

fn write_index(txn: &WriteTransaction, a: &AttachmentRecord) -> StoreResult<()> {
    let flags = if a.voiding.voided { VOIDED } else { 0 };
    txn.open_table(BY_PATIENT)?
        .insert(index_key(a).as_str(), flags)?;
    Ok(())
}

/// Writes a new attachment with its bytes, durably, in one commit.
pub fn create_with_bytes(store: &Store, a: &AttachmentRecord, content: &[u8]) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?
            .insert(a.uuid.as_str(), crate::store::record::encode(a).as_slice())?;
        txn.open_table(BYTES)?.insert(a.uuid.as_str(), content)?;
        write_index(txn, a)
    })
}

/// Writes a changed attachment (its patient and time never change, so its key stays).
pub fn put(store: &Store, a: &AttachmentRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?
            .insert(a.uuid.as_str(), crate::store::record::encode(a).as_slice())?;
        write_index(txn, a)
    })
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<AttachmentRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("attachments", v.value()))
        .transpose()
}

/// The file of an attachment.
pub fn bytes(store: &Store, uuid: &str) -> StoreResult<Option<Vec<u8>>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(BYTES)?;
    Ok(t.get(uuid)?.map(|v| v.value().to_vec()))
}

/// A patient's attachments, newest first (their records only: the bytes stay on disk).
pub fn of_patient(
    store: &Store,
    patient: &str,
    include_voided: bool,
) -> StoreResult<Vec<AttachmentRecord>> {
    crate::store::record::records_under(
        store,
        TABLE,
        BY_PATIENT,
        "attachments",
        patient,
        include_voided,
    )
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

/// Removes an attachment and its bytes for good.
pub fn purge(store: &Store, a: &AttachmentRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?.remove(a.uuid.as_str())?;
        txn.open_table(BYTES)?.remove(a.uuid.as_str())?;
        txn.open_table(BY_PATIENT)?.remove(index_key(a).as_str())?;
        Ok(())
    })
}

/// For `check-store`: every attachment has its bytes, whose SHA-256 is the one recorded,
/// and every file belongs to an attachment. Answers the number of files read.
pub fn check_bytes(
    txn: &crate::store::kv::ReadTransaction,
    problem: &mut dyn FnMut(String),
) -> StoreResult<u64> {
    use sha2::Digest;
    let records = txn.open_table(TABLE)?;
    let files = txn.open_table(BYTES)?;
    for row in records.iter()? {
        let (k, v) = row?;
        let Ok(a) = serde_json::from_slice::<AttachmentRecord>(v.value()) else {
            continue; // reported by the decoding check
        };
        match files.get(k.value())? {
            None => problem(format!("attachments {}: its file is missing", k.value())),
            Some(bytes) => {
                let digest: String = sha2::Sha256::digest(bytes.value())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                if digest != a.sha256 {
                    problem(format!(
                        "attachments {}: its file is not the one uploaded (checksum differs)",
                        k.value()
                    ));
                }
            }
        }
    }
    let mut count = 0;
    for row in files.iter()? {
        let (k, _) = row?;
        count += 1;
        if records.get(k.value())?.is_none() {
            problem(format!(
                "attachment_bytes {}: a file without its attachment",
                k.value()
            ));
        }
    }
    Ok(count)
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, BY_PATIENT, patient),
    adjust: None,
    counted_as: None,
};
