//! The exports (`fhir_exports`, by uuid, indexed by the time asked: `all|requested|uuid`)
//! and their files (`fhir_export_files`, NDJSON by `export|name`), carried by backups like
//! every table until the client deletes the export.

use crate::domains::bulk_export::{ExportFile, ExportRecord};
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{BlobTable, Index, RecordTable, Window, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("fhir_exports");
const BY_TIME: Index = TableDefinition::new("fhir_exports_by_time");
const FILES: TableDefinition<&str, &[u8]> = TableDefinition::new("fhir_export_files");

pub const RECORDS: RecordTable = RecordTable {
    name: "fhir_exports",
    table: TABLE,
    indexes: &[BY_TIME],
    covering: &[],
    create,
    reindex: |txn, bytes| {
        let r: ExportRecord = crate::store::record::decode("fhir_exports", bytes)?;
        write_index(txn, &r)
    },
    codec: crate::store::record::json_codec::<ExportRecord>(),
};

pub const CONTENTS: BlobTable = BlobTable {
    name: "fhir_export_files",
    table: FILES,
    check: check_files,
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_TIME)?;
    txn.open_table(FILES)?;
    Ok(())
}

fn write_index(txn: &WriteTransaction, r: &ExportRecord) -> StoreResult<()> {
    txn.open_table(BY_TIME)?
        .insert(key(&["all", &r.requested, &r.uuid]).as_str(), 0)?;
    Ok(())
}

fn file_key(export: &str, name: &str) -> String {
    format!("{export}|{name}")
}

pub fn put(store: &Store, r: &ExportRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?
            .insert(r.uuid.as_str(), crate::store::record::encode(r).as_slice())?;
        write_index(txn, r)
    })
}

/// Writes one finished file with the export's record that now lists it, in one commit.
pub fn put_with_file(
    store: &Store,
    r: &ExportRecord,
    file: &ExportFile,
    ndjson: &[u8],
) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?
            .insert(r.uuid.as_str(), crate::store::record::encode(r).as_slice())?;
        txn.open_table(FILES)?
            .insert(file_key(&r.uuid, &file.name()).as_str(), ndjson)?;
        write_index(txn, r)
    })
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<ExportRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("fhir_exports", v.value()))
        .transpose()
}

pub fn file(store: &Store, export: &str, name: &str) -> StoreResult<Option<Vec<u8>>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(FILES)?;
    Ok(t.get(file_key(export, name).as_str())?
        .map(|v| v.value().to_vec()))
}

/// Every export, oldest first (a facility keeps a handful: each is deleted by its client
/// or, a day after it was asked for, by the next kick-off).
pub fn all(store: &Store) -> StoreResult<Vec<ExportRecord>> {
    let txn = store.begin_read()?;
    let records = txn.open_table(TABLE)?;
    let everything = Window {
        start: 0,
        limit: usize::MAX,
        count_all: false,
    };
    let page = crate::store::record::scan(
        &txn.open_table(BY_TIME)?,
        "all",
        0,
        false,
        everything,
        |_| true,
    )?;
    let mut out = Vec::with_capacity(page.uuids.len());
    for uuid in &page.uuids {
        if let Some(v) = records.get(uuid.as_str())? {
            out.push(crate::store::record::decode("fhir_exports", v.value())?);
        }
    }
    Ok(out)
}

/// Removes an export and its files for good.
pub fn purge(store: &Store, r: &ExportRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?.remove(r.uuid.as_str())?;
        let mut files = txn.open_table(FILES)?;
        for f in &r.files {
            files.remove(file_key(&r.uuid, &f.name()).as_str())?;
        }
        txn.open_table(BY_TIME)?
            .remove(key(&["all", &r.requested, &r.uuid]).as_str())?;
        Ok(())
    })
}

/// For `check-store`: every file belongs to an export that lists it.
fn check_files(
    txn: &crate::store::kv::ReadTransaction,
    problem: &mut dyn FnMut(String),
) -> StoreResult<u64> {
    let records = txn.open_table(TABLE)?;
    let mut n = 0;
    for row in txn.open_table(FILES)?.iter()? {
        let (k, _) = row?;
        n += 1;
        let k = k.value().to_string();
        let Some((export, name)) = k.split_once('|') else {
            problem(format!("fhir_export_files: a key without its export: {k}"));
            continue;
        };
        let listed = match records.get(export)? {
            Some(v) => {
                let r: ExportRecord = crate::store::record::decode("fhir_exports", v.value())?;
                r.files.iter().any(|f| f.name() == name)
            }
            None => false,
        };
        if !listed {
            problem(format!(
                "fhir_export_files: {name} of export {export} is not listed by an export"
            ));
        }
    }
    Ok(n)
}
