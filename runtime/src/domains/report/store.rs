//! The report requests (`report_requests`: each run asked for, with its parameters, status
//! and times), indexed by the time asked (`all|requested|uuid`), and their results
//! (`report_results`: a run's data as JSON, by the request's uuid), kept until the request
//! is deleted and carried by backups.

use crate::domains::report::ReportRequestRecord;
use crate::domains::report::eval::ReportData;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{BlobTable, Index, RecordTable, Window, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("report_requests");
const BY_TIME: Index = TableDefinition::new("report_requests_by_time");
const RESULTS: TableDefinition<&str, &[u8]> = TableDefinition::new("report_results");

pub const RECORDS: RecordTable = RecordTable {
    name: "report_requests",
    table: TABLE,
    indexes: &[BY_TIME],
    covering: &[],
    create,
    reindex: |txn, bytes| {
        let r: ReportRequestRecord = crate::store::record::decode("report_requests", bytes)?;
        write_index(txn, &r)
    },
    codec: crate::store::record::json_codec::<ReportRequestRecord>(),
};

pub const CONTENTS: BlobTable = BlobTable {
    name: "report_results",
    table: RESULTS,
    check: check_results,
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_TIME)?;
    txn.open_table(RESULTS)?;
    Ok(())
}

fn write_index(txn: &WriteTransaction, r: &ReportRequestRecord) -> StoreResult<()> {
    txn.open_table(BY_TIME)?
        .insert(key(&["all", &r.requested, &r.uuid]).as_str(), 0)?;
    Ok(())
}

/// Writes a request (its time asked never changes, so its key stays).
pub fn put(store: &Store, r: &ReportRequestRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?
            .insert(r.uuid.as_str(), crate::store::record::encode(r).as_slice())?;
        write_index(txn, r)
    })
}

/// Writes a finished request with its result, in one commit.
pub fn put_with_result(
    store: &Store,
    r: &ReportRequestRecord,
    data: &ReportData,
) -> StoreResult<()> {
    let bytes = serde_json::to_vec(data).expect("report data serialises");
    store.write(|txn| {
        txn.open_table(TABLE)?
            .insert(r.uuid.as_str(), crate::store::record::encode(r).as_slice())?;
        txn.open_table(RESULTS)?
            .insert(r.uuid.as_str(), bytes.as_slice())?;
        write_index(txn, r)
    })
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<ReportRequestRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("report_requests", v.value()))
        .transpose()
}

pub fn result(store: &Store, uuid: &str) -> StoreResult<Option<ReportData>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(RESULTS)?;
    t.get(uuid)?
        .map(|v| {
            serde_json::from_slice(v.value()).map_err(|e| crate::store::StoreError::Corrupt {
                table: "report_results",
                detail: format!("{uuid}: {e}"),
            })
        })
        .transpose()
}

/// Every request, newest first (a facility asks for a few a month: read whole, filtered
/// by the caller). Results stay on disk.
pub fn all(store: &Store) -> StoreResult<Vec<ReportRequestRecord>> {
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
        true,
        everything,
        |_| true,
    )?;
    let mut out = Vec::with_capacity(page.uuids.len());
    for uuid in &page.uuids {
        if let Some(v) = records.get(uuid.as_str())? {
            out.push(crate::store::record::decode("report_requests", v.value())?);
        }
    }
    Ok(out)
}

/// Removes a request and its result for good (the reporting module purges them).
pub fn purge(store: &Store, r: &ReportRequestRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?.remove(r.uuid.as_str())?;
        txn.open_table(RESULTS)?.remove(r.uuid.as_str())?;
        txn.open_table(BY_TIME)?
            .remove(key(&["all", &r.requested, &r.uuid]).as_str())?;
        Ok(())
    })
}

/// For `check-store`: every result decodes and belongs to a request.
fn check_results(
    txn: &crate::store::kv::ReadTransaction,
    problem: &mut dyn FnMut(String),
) -> StoreResult<u64> {
    let records = txn.open_table(TABLE)?;
    let mut n = 0;
    for row in txn.open_table(RESULTS)?.iter()? {
        let (k, v) = row?;
        n += 1;
        if serde_json::from_slice::<ReportData>(v.value()).is_err() {
            problem(format!("report_results {}: does not decode", k.value()));
        }
        if records.get(k.value())?.is_none() {
            problem(format!("report_results {}: no request", k.value()));
        }
    }
    Ok(n)
}
