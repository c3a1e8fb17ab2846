//! The stock tables.
//!
//! - Items, sources, batches and user role scopes: small tables keyed by uuid and read
//!   whole (a facility has hundreds of items and sources, thousands of batches). Items are
//!   also indexed by drug (`stock_items_by_drug`: `drug|item`), which the dispensing app
//!   and the order basket ask by.
//! - Operations, keyed by uuid, listed newest first through `stock_operations_by_date`
//!   (`all|operation date|uuid`); numbered from a counter in the commit that makes them.
//! - Transactions, keyed by uuid and never rewritten, listed per item through
//!   `stock_transactions_by_item` (`item|date|uuid`).
//! - Balances (`stock_balances`): `party|item|batch` → the sum of the transactions there,
//!   in ten-thousandths of the base unit. It is derived: every write that adds
//!   transactions adds them to it in the same commit, and a restore rebuilds it from the
//!   transactions (each transaction's `reindex` adds its quantity once:
//!   `stock_transactions_counted` remembers which were added, so indexing a transaction
//!   again, as a merge or a check does, leaves the balance alone). An inventory page reads
//!   balances only.

use crate::domains::stock::{
    BatchRecord, ItemRecord, OperationRecord, Qty, ReferenceRecord, RuleRecord, ScopeRecord,
    SourceRecord, TransactionRecord,
};
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{Index, RecordTable, key, uuid_of};
use crate::store::{Store, StoreResult};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashMap;

pub const ITEMS: TableDefinition<&str, &[u8]> = TableDefinition::new("stock_items");
pub(crate) const SOURCES: TableDefinition<&str, &[u8]> = TableDefinition::new("stock_sources");
pub const BATCHES: TableDefinition<&str, &[u8]> = TableDefinition::new("stock_batches");
pub(crate) const RULES: TableDefinition<&str, &[u8]> = TableDefinition::new("stock_rules");
pub(crate) const REFERENCES: TableDefinition<&str, &[u8]> =
    TableDefinition::new("stock_item_references");
pub(crate) const SCOPES: TableDefinition<&str, &[u8]> =
    TableDefinition::new("stock_user_role_scopes");
pub(crate) const OPERATIONS: TableDefinition<&str, &[u8]> =
    TableDefinition::new("stock_operations");
const OPERATIONS_BY_DATE: Index = TableDefinition::new("stock_operations_by_date");
pub(crate) const TRANSACTIONS: TableDefinition<&str, &[u8]> =
    TableDefinition::new("stock_transactions");
const TRANSACTIONS_BY_ITEM: Index = TableDefinition::new("stock_transactions_by_item");
/// A patient's dispenses from stock (`patient|date|uuid`): what a merge moves and a purge
/// refuses.
const TRANSACTIONS_BY_PATIENT: Index = TableDefinition::new("stock_transactions_by_patient");
pub(crate) const BALANCES: TableDefinition<&str, i64> = TableDefinition::new("stock_balances");
/// The transactions already added to `BALANCES`, so that indexing one again (a merge
/// rewriting its patient, a check rebuilding the indexes) never counts it twice. Not an
/// index of `TRANSACTION_RECORDS`: nothing removes an entry but the transaction's absence.
const COUNTED: TableDefinition<&str, u8> = TableDefinition::new("stock_transactions_counted");
/// Report runs (`batchjob`), read whole (a few a month, removed a week after), and their
/// files by job uuid.
pub(crate) const JOBS: TableDefinition<&str, &[u8]> = TableDefinition::new("stock_batch_jobs");
pub(crate) const JOB_FILES: TableDefinition<&str, &[u8]> =
    TableDefinition::new("stock_batch_job_files");
/// Numbers operations (`RCPT-0001`), across types, as the module numbers them by row id.
const OPERATION_NUMBERS: &str = "stock_operation.number";

macro_rules! small_table {
    ($name:ident, $table:expr, $label:literal, $record:ty) => {
        pub const $name: RecordTable = RecordTable {
            name: $label,
            table: $table,
            indexes: &[],
            covering: &[],
            create: |txn| {
                txn.open_table($table)?;
                Ok(())
            },
            reindex: |_, bytes| crate::store::record::decode::<$record>($label, bytes).map(drop),
            codec: crate::store::record::json_codec::<$record>(),
        };
    };
}

const ITEMS_BY_DRUG: Index = TableDefinition::new("stock_items_by_drug");

pub const ITEM_RECORDS: RecordTable = RecordTable {
    name: "stock_items",
    table: ITEMS,
    indexes: &[ITEMS_BY_DRUG],
    covering: &[],
    create: |txn| {
        txn.open_table(ITEMS)?;
        txn.open_table(ITEMS_BY_DRUG)?;
        Ok(())
    },
    reindex: |txn, bytes| {
        let i: ItemRecord = crate::store::record::decode("stock_items", bytes)?;
        if let Some(d) = &i.drug {
            txn.open_table(ITEMS_BY_DRUG)?
                .insert(key(&[d, &i.uuid]).as_str(), 0)?;
        }
        Ok(())
    },
    codec: crate::store::record::json_codec::<ItemRecord>(),
};
small_table!(SOURCE_RECORDS, SOURCES, "stock_sources", SourceRecord);
small_table!(BATCH_RECORDS, BATCHES, "stock_batches", BatchRecord);
small_table!(SCOPE_RECORDS, SCOPES, "stock_user_role_scopes", ScopeRecord);
small_table!(RULE_RECORDS, RULES, "stock_rules", RuleRecord);
small_table!(
    REFERENCE_RECORDS,
    REFERENCES,
    "stock_item_references",
    ReferenceRecord
);
small_table!(
    JOB_RECORDS,
    JOBS,
    "stock_batch_jobs",
    crate::domains::stock::report::JobRecord
);
small_table!(
    JOB_FILE_RECORDS,
    JOB_FILES,
    "stock_batch_job_files",
    crate::domains::stock::report::JobFileRecord
);

pub const OPERATION_RECORDS: RecordTable = RecordTable {
    name: "stock_operations",
    table: OPERATIONS,
    indexes: &[OPERATIONS_BY_DATE],
    covering: &[],
    create: |txn| {
        txn.open_table(OPERATIONS)?;
        txn.open_table(OPERATIONS_BY_DATE)?;
        Ok(())
    },
    reindex: |txn, bytes| {
        let o: OperationRecord = crate::store::record::decode("stock_operations", bytes)?;
        if let Some(n) = sequence_of(&o.number) {
            crate::store::raise_counter_in(txn, OPERATION_NUMBERS, n)?;
        }
        txn.open_table(OPERATIONS_BY_DATE)?
            .insert(operation_key(&o).as_str(), 0)?;
        Ok(())
    },
    codec: crate::store::record::json_codec::<OperationRecord>(),
};

pub const TRANSACTION_RECORDS: RecordTable = RecordTable {
    name: "stock_transactions",
    table: TRANSACTIONS,
    indexes: &[TRANSACTIONS_BY_ITEM, TRANSACTIONS_BY_PATIENT],
    covering: &[],
    create: |txn| {
        txn.open_table(TRANSACTIONS)?;
        txn.open_table(TRANSACTIONS_BY_ITEM)?;
        txn.open_table(TRANSACTIONS_BY_PATIENT)?;
        txn.open_table(BALANCES)?;
        txn.open_table(COUNTED)?;
        Ok(())
    },
    reindex: |txn, bytes| {
        let t: TransactionRecord = crate::store::record::decode("stock_transactions", bytes)?;
        index_transaction(txn, &t)
    },
    codec: crate::store::record::json_codec::<TransactionRecord>(),
};

fn operation_key(o: &OperationRecord) -> String {
    key(&["all", &o.operation_date, &o.uuid])
}

/// `RCPT-0042` → 42.
fn sequence_of(number: &str) -> Option<u64> {
    number.rsplit('-').next().and_then(|n| n.parse().ok())
}

fn balance_key(party: &str, item: &str, batch: &str) -> String {
    key(&[party, item, batch])
}

fn index_transaction(txn: &WriteTransaction, t: &TransactionRecord) -> StoreResult<()> {
    txn.open_table(TRANSACTIONS_BY_ITEM)?
        .insert(key(&[&t.stock_item, &t.date, &t.uuid]).as_str(), 0)?;
    if let Some(p) = &t.patient {
        txn.open_table(TRANSACTIONS_BY_PATIENT)?
            .insert(key(&[p, &t.date, &t.uuid]).as_str(), 0)?;
    }
    let mut counted = txn.open_table(COUNTED)?;
    if counted.get(t.uuid.as_str())?.is_some() {
        return Ok(());
    }
    counted.insert(t.uuid.as_str(), 0)?;
    let k = balance_key(&t.party, &t.stock_item, &t.batch);
    let mut balances = txn.open_table(BALANCES)?;
    let now = balances.get(k.as_str())?.map_or(0, |v| v.value());
    balances.insert(k.as_str(), now.saturating_add(t.quantity.0))?;
    Ok(())
}

fn get<T: DeserializeOwned>(
    store: &Store,
    table: TableDefinition<&str, &[u8]>,
    label: &'static str,
    uuid: &str,
) -> StoreResult<Option<T>> {
    let txn = store.begin_read()?;
    txn.open_table(table)?
        .get(uuid)?
        .map(|v| crate::store::record::decode(label, v.value()))
        .transpose()
}

pub fn put_in<T: Serialize>(
    txn: &WriteTransaction,
    table: TableDefinition<&str, &[u8]>,
    uuid: &str,
    r: &T,
) -> StoreResult<()> {
    txn.open_table(table)?
        .insert(uuid, crate::store::record::encode(r).as_slice())?;
    Ok(())
}

pub fn jobs(store: &Store) -> StoreResult<Vec<crate::domains::stock::report::JobRecord>> {
    crate::store::record::all_records(store, JOBS, "stock_batch_jobs")
}

pub fn job(
    store: &Store,
    uuid: &str,
) -> StoreResult<Option<crate::domains::stock::report::JobRecord>> {
    get(store, JOBS, "stock_batch_jobs", uuid)
}

pub fn job_file(
    store: &Store,
    uuid: &str,
) -> StoreResult<Option<crate::domains::stock::report::JobFileRecord>> {
    get(store, JOB_FILES, "stock_batch_job_files", uuid)
}

/// A job and its file gone (expired, or deleted by a data manager).
pub fn remove_job_in(txn: &WriteTransaction, uuid: &str) -> StoreResult<()> {
    txn.open_table(JOBS)?.remove(uuid)?;
    txn.open_table(JOB_FILES)?.remove(uuid)?;
    Ok(())
}

/// Every movement, in no order: what a report over a period sums (a year of a busy
/// dispensary is some 200,000; a report reads them once).
pub fn all_transactions(store: &Store) -> StoreResult<Vec<TransactionRecord>> {
    crate::store::record::all_records(store, TRANSACTIONS, "stock_transactions")
}

pub fn items(store: &Store) -> StoreResult<Vec<ItemRecord>> {
    let mut all: Vec<ItemRecord> = crate::store::record::all_records(store, ITEMS, "stock_items")?;
    all.sort_by(|a, b| (&a.audit.date_created, &a.uuid).cmp(&(&b.audit.date_created, &b.uuid)));
    Ok(all)
}

pub fn item(store: &Store, uuid: &str) -> StoreResult<Option<ItemRecord>> {
    get(store, ITEMS, "stock_items", uuid)
}

/// Writes an item and keeps the index by drug current (a changed drug moves its key).
pub fn put_item_in(txn: &WriteTransaction, item: &ItemRecord) -> StoreResult<()> {
    let mut table = txn.open_table(ITEMS)?;
    let old: Option<ItemRecord> = table
        .get(item.uuid.as_str())?
        .map(|v| crate::store::record::decode("stock_items", v.value()))
        .transpose()?;
    table.insert(
        item.uuid.as_str(),
        crate::store::record::encode(item).as_slice(),
    )?;
    let mut by_drug = txn.open_table(ITEMS_BY_DRUG)?;
    if let Some(d) = old.as_ref().and_then(|o| o.drug.as_ref()) {
        by_drug.remove(key(&[d, &item.uuid]).as_str())?;
    }
    if let Some(d) = &item.drug {
        by_drug.insert(key(&[d, &item.uuid]).as_str(), 0)?;
    }
    Ok(())
}

/// The uuids of a drug's items, from the index (voided ones too: the caller decides).
pub fn items_of_drug(store: &Store, drug: &str) -> StoreResult<Vec<String>> {
    let txn = store.begin_read()?;
    crate::store::record::keys_under_all(&txn.open_table(ITEMS_BY_DRUG)?, &[drug], 0)
        .map(|keys| keys.iter().map(|k| uuid_of(k).to_string()).collect())
}

/// The items and batches an answer names, read in one transaction: those found, by uuid
/// (an empty uuid is skipped).
pub fn items_and_batches(
    store: &Store,
    items: &[&str],
    batches: &[&str],
) -> StoreResult<(HashMap<String, ItemRecord>, HashMap<String, BatchRecord>)> {
    let txn = store.begin_read()?;
    let mut found_items = HashMap::new();
    let table = txn.open_table(ITEMS)?;
    for &u in items {
        if u.is_empty() || found_items.contains_key(u) {
            continue;
        }
        if let Some(v) = table.get(u)? {
            found_items.insert(
                u.to_string(),
                crate::store::record::decode::<ItemRecord>("stock_items", v.value())?,
            );
        }
    }
    let mut found_batches = HashMap::new();
    let table = txn.open_table(BATCHES)?;
    for &u in batches {
        if u.is_empty() || found_batches.contains_key(u) {
            continue;
        }
        if let Some(v) = table.get(u)? {
            found_batches.insert(
                u.to_string(),
                crate::store::record::decode::<BatchRecord>("stock_batches", v.value())?,
            );
        }
    }
    Ok((found_items, found_batches))
}

pub fn batch(store: &Store, uuid: &str) -> StoreResult<Option<BatchRecord>> {
    get(store, BATCHES, "stock_batches", uuid)
}

pub fn sources(store: &Store) -> StoreResult<Vec<SourceRecord>> {
    let mut all: Vec<SourceRecord> =
        crate::store::record::all_records(store, SOURCES, "stock_sources")?;
    all.sort_by(|a, b| (&a.name, &a.uuid).cmp(&(&b.name, &b.uuid)));
    Ok(all)
}

pub fn batches(store: &Store) -> StoreResult<Vec<BatchRecord>> {
    let mut all: Vec<BatchRecord> =
        crate::store::record::all_records(store, BATCHES, "stock_batches")?;
    all.sort_by(|a, b| {
        (&a.stock_item, &a.expiration, &a.batch_no).cmp(&(
            &b.stock_item,
            &b.expiration,
            &b.batch_no,
        ))
    });
    Ok(all)
}

pub fn scopes(store: &Store) -> StoreResult<Vec<ScopeRecord>> {
    let mut all: Vec<ScopeRecord> =
        crate::store::record::all_records(store, SCOPES, "stock_user_role_scopes")?;
    all.sort_by(|a, b| (&a.audit.date_created, &a.uuid).cmp(&(&b.audit.date_created, &b.uuid)));
    Ok(all)
}

pub fn rules(store: &Store) -> StoreResult<Vec<RuleRecord>> {
    let mut all: Vec<RuleRecord> = crate::store::record::all_records(store, RULES, "stock_rules")?;
    all.sort_by(|a, b| (&a.audit.date_created, &a.uuid).cmp(&(&b.audit.date_created, &b.uuid)));
    Ok(all)
}

pub fn references(store: &Store) -> StoreResult<Vec<ReferenceRecord>> {
    let mut all: Vec<ReferenceRecord> =
        crate::store::record::all_records(store, REFERENCES, "stock_item_references")?;
    all.sort_by(|a, b| (&a.audit.date_created, &a.uuid).cmp(&(&b.audit.date_created, &b.uuid)));
    Ok(all)
}

pub fn operation(store: &Store, uuid: &str) -> StoreResult<Option<OperationRecord>> {
    get(store, OPERATIONS, "stock_operations", uuid)
}

/// Every operation, newest first (operations are read whole for the list's filters: a
/// facility makes a few thousand a year).
pub fn operations(store: &Store) -> StoreResult<Vec<OperationRecord>> {
    let txn = store.begin_read()?;
    let index = txn.open_table(OPERATIONS_BY_DATE)?;
    let mut uuids = Vec::new();
    crate::store::record::walk(&index, "all", 0, true, |k| {
        uuids.push(crate::store::record::uuid_of(k).to_string());
        true
    })?;
    let table = txn.open_table(OPERATIONS)?;
    let mut out = Vec::with_capacity(uuids.len());
    for u in uuids {
        if let Some(v) = table.get(u.as_str())? {
            out.push(crate::store::record::decode("stock_operations", v.value())?);
        }
    }
    Ok(out)
}

/// Writes an operation in the caller's transaction; a new one (no number yet) is numbered
/// with its type's acronym.
pub fn put_operation_in(
    txn: &WriteTransaction,
    old: Option<&OperationRecord>,
    new: &mut OperationRecord,
    acronym: &str,
) -> StoreResult<()> {
    if new.number.is_empty() {
        let n = crate::store::next_counter_in(txn, OPERATION_NUMBERS)? + 1;
        new.number = format!("{acronym}-{n:04}");
    }
    if let Some(old) = old {
        txn.open_table(OPERATIONS_BY_DATE)?
            .remove(operation_key(old).as_str())?;
    }
    txn.open_table(OPERATIONS_BY_DATE)?
        .insert(operation_key(new).as_str(), 0)?;
    put_in(txn, OPERATIONS, &new.uuid, &*new)
}

/// Adds transactions in the caller's transaction, with their balances.
pub fn add_transactions_in(txn: &WriteTransaction, all: &[TransactionRecord]) -> StoreResult<()> {
    for t in all {
        put_in(txn, TRANSACTIONS, &t.uuid, t)?;
        index_transaction(txn, t)?;
    }
    Ok(())
}

/// The balance of one batch of an item at a party, read in the write transaction that is
/// about to move it (so the check and the movement see the same stock).
pub fn balance_in(
    txn: &WriteTransaction,
    party: &str,
    item: &str,
    batch: &str,
) -> StoreResult<Qty> {
    let k = balance_key(party, item, batch);
    Ok(Qty(txn
        .open_table(BALANCES)?
        .get(k.as_str())?
        .map_or(0, |v| v.value())))
}

/// One balance: a party's stock of one batch of an item.
pub struct Balance {
    pub party: String,
    pub item: String,
    pub batch: String,
    pub quantity: Qty,
}

/// Every balance, or those of one party (`party|…`).
pub fn balances(store: &Store, party: Option<&str>) -> StoreResult<Vec<Balance>> {
    let txn = store.begin_read()?;
    let table = txn.open_table(BALANCES)?;
    let mut out = Vec::new();
    let rows: Vec<(String, i64)> = match party {
        Some(p) => {
            let (from, to) = (format!("{p}|"), format!("{p}}}"));
            table
                .range::<&str>(from.as_str()..to.as_str())?
                .map(|r| r.map(|(k, v)| (k.value().to_string(), v.value())))
                .collect::<Result<_, _>>()?
        }
        None => table
            .iter()?
            .map(|r| r.map(|(k, v)| (k.value().to_string(), v.value())))
            .collect::<Result<_, _>>()?,
    };
    for (k, v) in rows {
        let mut parts = k.splitn(3, '|');
        let (Some(party), Some(item), Some(batch)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        out.push(Balance {
            party: party.to_string(),
            item: item.to_string(),
            batch: batch.to_string(),
            quantity: Qty(v),
        });
    }
    Ok(out)
}

/// Which balances `visit_balances` visits.
#[derive(Default)]
pub struct BalanceFilter<'a> {
    /// One party's (`party|…`, one key range), else every party's.
    pub party: Option<&'a str>,
    /// Only these items' (a key range each when the party is given).
    pub items: Option<&'a [String]>,
    /// Only this batch's.
    pub batch: Option<&'a str>,
    /// Leaves out batches expired before this day (`yyyy-mm-dd`): each visited batch is
    /// read to know.
    pub unexpired_on: Option<&'a str>,
}

/// Visits balances in key order (`party|item|batch`, which is an inventory answer's
/// order) with their quantities, in one read, allocating nothing per balance: a page
/// keeps only what it shows.
pub fn visit_balances(
    store: &Store,
    filter: &BalanceFilter,
    mut visit: impl FnMut(&str, &str, &str, Qty),
) -> StoreResult<()> {
    let txn = store.begin_read()?;
    let table = txn.open_table(BALANCES)?;
    let batches = match filter.unexpired_on {
        Some(_) => Some(txn.open_table(BATCHES)?),
        None => None,
    };
    let ranges: Vec<(String, String)> = match (filter.party, filter.items) {
        (Some(p), Some(items)) => {
            let mut items: Vec<&String> = items.iter().collect();
            items.sort();
            items.dedup();
            items
                .into_iter()
                .map(|i| (format!("{p}|{i}|"), format!("{p}|{i}}}")))
                .collect()
        }
        (Some(p), None) => vec![(format!("{p}|"), format!("{p}}}"))],
        (None, _) => vec![(String::new(), "\u{10ffff}".to_string())],
    };
    for (from, to) in &ranges {
        for r in table.range::<&str>(from.as_str()..to.as_str())? {
            let (k, v) = r?;
            let k = k.value();
            let mut parts = k.splitn(3, '|');
            let (Some(party), Some(item), Some(batch)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if filter.batch.is_some_and(|b| b != batch)
                || (filter.party.is_none()
                    && filter
                        .items
                        .is_some_and(|items| !items.iter().any(|x| x == item)))
            {
                continue;
            }
            if let (Some(today), Some(batches)) = (filter.unexpired_on, &batches) {
                let expired = match batches.get(batch)? {
                    Some(b) => {
                        crate::store::record::decode::<BatchRecord>("stock_batches", b.value())?
                            .expiration
                            .is_some_and(|e| e.as_str() < today)
                    }
                    None => false,
                };
                if expired {
                    continue;
                }
            }
            visit(party, item, batch, Qty(v.value()));
        }
    }
    Ok(())
}

/// An item's balances at some parties (the facility's locations), batch by batch: one
/// read, a key range per party.
pub fn balances_of_item(
    store: &Store,
    parties: &[&str],
    item: &str,
) -> StoreResult<Vec<(String, Qty)>> {
    let txn = store.begin_read()?;
    let table = txn.open_table(BALANCES)?;
    let mut out = Vec::new();
    for party in parties {
        let (from, to) = (format!("{party}|{item}|"), format!("{party}|{item}}}"));
        for r in table.range::<&str>(from.as_str()..to.as_str())? {
            let (k, v) = r?;
            if let Some(batch) = k.value().rsplit('|').next() {
                out.push((batch.to_string(), Qty(v.value())));
            }
        }
    }
    Ok(out)
}

/// An item's transactions, newest first: the page `keep` accepts from `start`, and how
/// many it accepts in all. Without a filter (`keep` is `None`) the total is the index's
/// count and only the page's records are read; a filter reads each of the item's records.
pub fn transactions_of_item(
    store: &Store,
    item: &str,
    keep: Option<&dyn Fn(&TransactionRecord) -> bool>,
    start: usize,
    limit: usize,
) -> StoreResult<(Vec<TransactionRecord>, usize)> {
    let txn = store.begin_read()?;
    let index = txn.open_table(TRANSACTIONS_BY_ITEM)?;
    let mut uuids = Vec::new();
    crate::store::record::walk(&index, item, 0, true, |k| {
        uuids.push(crate::store::record::uuid_of(k).to_string());
        true
    })?;
    let table = txn.open_table(TRANSACTIONS)?;
    let decode = |u: &str| -> StoreResult<Option<TransactionRecord>> {
        table
            .get(u)?
            .map(|v| crate::store::record::decode("stock_transactions", v.value()))
            .transpose()
    };
    let Some(keep) = keep else {
        let mut page = Vec::new();
        for u in uuids.iter().skip(start).take(limit) {
            page.extend(decode(u)?);
        }
        return Ok((page, uuids.len()));
    };
    let mut matched = 0usize;
    let mut page = Vec::new();
    for u in &uuids {
        let Some(t) = decode(u)? else {
            continue;
        };
        if !keep(&t) {
            continue;
        }
        if matched >= start && page.len() < limit {
            page.push(t);
        }
        matched += 1;
    }
    Ok((page, matched))
}

/// Whether the patient was dispensed anything from stock.
pub fn any_of_patient(store: &Store, patient: &str) -> StoreResult<bool> {
    Ok(!crate::store::record::uuids_under(store, TRANSACTIONS_BY_PATIENT, patient)?.is_empty())
}

/// Where a merge finds a patient's dispenses from stock. A merge rewrites the patient
/// of these movements (as OpenMRS's merge does); their quantities never change, so the
/// balances derived from them stay right.
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &TRANSACTION_RECORDS,
    of_patient: |store, patient| {
        crate::store::record::uuids_under(store, TRANSACTIONS_BY_PATIENT, patient)
    },
    adjust: None,
    counted_as: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// A store written by version 8 has no index of items by drug: opened by this
    /// version, it is built from the items, and a changed drug moves the item's key.
    #[test]
    fn a_version_8_store_gets_its_items_indexed_by_drug() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let now = chrono::Utc::now();
        let amoxicillin = ItemRecord::new(
            "7d1c0a2e-0001-4b6a-9c8d-1e2f3a4b5c6d".into(),
            Some("drug-amoxicillin".into()),
            "concept-amoxicillin".into(),
            "admin",
            now,
        );
        let gloves = ItemRecord::new(
            "7d1c0a2e-0002-4b6a-9c8d-1e2f3a4b5c6d".into(),
            None,
            "concept-gloves".into(),
            "admin",
            now,
        );
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            s.write(|txn| {
                // As version 8 wrote them: the items alone.
                put_in(txn, ITEMS, &amoxicillin.uuid, &amoxicillin)?;
                put_in(txn, ITEMS, &gloves.uuid, &gloves)?;
                txn.delete_table(ITEMS_BY_DRUG)?;
                Ok(())
            })
            .unwrap();
            s.set_meta("schema_version", "8").unwrap();
        }
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(
            s.meta("schema_version").unwrap(),
            Some(crate::store::SCHEMA_VERSION.to_string())
        );
        assert_eq!(
            items_of_drug(&s, "drug-amoxicillin").unwrap(),
            std::slice::from_ref(&amoxicillin.uuid)
        );
        let mut changed = amoxicillin.clone();
        changed.drug = Some("drug-amoxicillin-250".into());
        s.write(|txn| put_item_in(txn, &changed)).unwrap();
        assert!(items_of_drug(&s, "drug-amoxicillin").unwrap().is_empty());
        assert_eq!(
            items_of_drug(&s, "drug-amoxicillin-250").unwrap(),
            std::slice::from_ref(&amoxicillin.uuid)
        );
        drop(s);
        let report = crate::store::check::check_store(&path, &crate::domains::REGISTRY).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }
}
