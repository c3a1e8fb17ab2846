//! The stock tables.
//!
//! - Items, sources, batches and user role scopes: small tables keyed by uuid and read
//!   whole (a facility has hundreds of items and sources, thousands of batches).
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
use crate::store::record::{Index, RecordTable, key};
use crate::store::{Store, StoreResult};
use serde::Serialize;
use serde::de::DeserializeOwned;

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

small_table!(ITEM_RECORDS, ITEMS, "stock_items", ItemRecord);
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
