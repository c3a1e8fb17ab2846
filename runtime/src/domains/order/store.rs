//! The order tables: records by uuid, indexed by patient (`patient|activated|uuid`, a
//! chart's medications and tests), by encounter (`encounter|uuid`), by order type over the
//! whole facility (`type|activated|uuid`, the laboratory's and the pharmacy's worklists,
//! read from a date onwards) and by order number. Order numbers come from a counter in the
//! same transaction as the order, so two orders never share one.

use crate::domains::order::OrderRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{ENDED, Index, RecordTable, VOIDED, key, uuid_of};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("orders");
const BY_PATIENT: Index = TableDefinition::new("orders_by_patient");
const BY_ENCOUNTER: Index = TableDefinition::new("orders_by_encounter");
const BY_TYPE: Index = TableDefinition::new("orders_by_type");
const BY_NUMBER: Index = TableDefinition::new("orders_by_number");

/// The counter order numbers are drawn from.
const NUMBER_COUNTER: &str = "order-number";

pub const RECORDS: RecordTable = RecordTable {
    name: "orders",
    table: TABLE,
    indexes: &[BY_PATIENT, BY_ENCOUNTER, BY_TYPE, BY_NUMBER],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<OrderRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    for index in [BY_PATIENT, BY_ENCOUNTER, BY_TYPE, BY_NUMBER] {
        txn.open_table(index)?;
    }
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let o: OrderRecord = crate::store::record::decode("orders", bytes)?;
    write_index(txn, None, &o)?;
    // A restored store must not hand out a number it already holds.
    let n = number_of(&o.order_number);
    crate::store::raise_counter_in(txn, NUMBER_COUNTER, n)
}

/// The number in `ORD-<n>`, 0 for any other form.
fn number_of(order_number: &str) -> u64 {
    order_number
        .strip_prefix("ORD-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn flags(o: &OrderRecord) -> u8 {
    let mut f = 0;
    if o.voiding.voided {
        f |= VOIDED;
    }
    if o.date_stopped.is_some() {
        f |= ENDED;
    }
    f
}

fn keys(o: &OrderRecord) -> [(Index, String); 4] {
    [
        (BY_PATIENT, key(&[&o.patient, &o.date_activated, &o.uuid])),
        (BY_ENCOUNTER, key(&[&o.encounter, &o.uuid])),
        (BY_TYPE, key(&[&o.order_type, &o.date_activated, &o.uuid])),
        (BY_NUMBER, key(&[&o.order_number, &o.uuid])),
    ]
}

fn write_index(
    txn: &WriteTransaction,
    old: Option<&OrderRecord>,
    new: &OrderRecord,
) -> StoreResult<()> {
    if let Some(old) = old {
        for (index, k) in keys(old) {
            txn.open_table(index)?.remove(k.as_str())?;
        }
    }
    let f = flags(new);
    for (index, k) in keys(new) {
        txn.open_table(index)?.insert(k.as_str(), f)?;
    }
    Ok(())
}

/// The next order number, `ORD-<n>` from 1, in the caller's transaction.
pub fn next_number_in(txn: &WriteTransaction) -> StoreResult<String> {
    Ok(format!(
        "ORD-{}",
        crate::store::next_counter_in(txn, NUMBER_COUNTER)? + 1
    ))
}

/// Writes orders (each new or changed, with its previous version) in the caller's
/// transaction.
pub fn put_in(
    txn: &WriteTransaction,
    changes: &[(Option<&OrderRecord>, &OrderRecord)],
) -> StoreResult<()> {
    let mut t = txn.open_table(TABLE)?;
    for (old, new) in changes {
        t.insert(
            new.uuid.as_str(),
            crate::store::record::encode(*new).as_slice(),
        )?;
        write_index(txn, *old, new)?;
    }
    Ok(())
}

pub fn put(store: &Store, old: &OrderRecord, new: &OrderRecord) -> StoreResult<()> {
    store.write(|txn| put_in(txn, &[(Some(old), new)]))
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<OrderRecord>> {
    let txn = store.begin_read()?;
    txn.open_table(TABLE)?
        .get(uuid)?
        .map(|v| crate::store::record::decode("orders", v.value()))
        .transpose()
}

/// The order with this number (`ORD-12`), voided or not.
pub fn by_number(store: &Store, number: &str) -> StoreResult<Option<OrderRecord>> {
    let txn = store.begin_read()?;
    let mut found = None;
    crate::store::record::walk(&txn.open_table(BY_NUMBER)?, number, 0, false, |k| {
        found = Some(uuid_of(k).to_string());
        false
    })?;
    match found {
        Some(u) => get(store, &u),
        None => Ok(None),
    }
}

/// Where a search reads its candidates: the narrowest index its criteria allow.
pub enum Source<'a> {
    Patient(&'a str),
    Encounter(&'a str),
    /// Orders of these types activated within `[from, to]` (key-form bounds, either open).
    Types {
        types: &'a [String],
        from: Option<&'a str>,
        to: Option<&'a str>,
    },
    Number(&'a str),
}

/// The uuids under `source`, newest activation first, voided ones only if asked.
pub fn candidates(
    store: &Store,
    source: &Source,
    include_voided: bool,
) -> StoreResult<Vec<String>> {
    let txn = store.begin_read()?;
    let exclude = if include_voided { 0 } else { VOIDED };
    let mut uuids = Vec::new();
    let mut collect = |k: &str| {
        uuids.push(uuid_of(k).to_string());
        true
    };
    match source {
        Source::Patient(p) => crate::store::record::walk(
            &txn.open_table(BY_PATIENT)?,
            p,
            exclude,
            true,
            &mut collect,
        )?,
        Source::Encounter(e) => crate::store::record::walk(
            &txn.open_table(BY_ENCOUNTER)?,
            e,
            exclude,
            false,
            &mut collect,
        )?,
        Source::Number(n) => crate::store::record::walk(
            &txn.open_table(BY_NUMBER)?,
            n,
            exclude,
            false,
            &mut collect,
        )?,
        Source::Types { types, from, to } => {
            let index = txn.open_table(BY_TYPE)?;
            // Each type's range, then newest first across them.
            let mut keyed: Vec<(String, String)> = Vec::new();
            for t in types.iter() {
                let lower = format!("{t}|{}", from.unwrap_or(""));
                // '}' sorts after every character a key-form datetime or a uuid holds.
                let upper = format!("{t}|{}}}", to.unwrap_or("~"));
                for row in index.range(lower.as_str()..upper.as_str())? {
                    let (k, flags) = row?;
                    if flags.value() & exclude != 0 {
                        continue;
                    }
                    let k = k.value();
                    let mut parts = k.rsplitn(3, '|');
                    let uuid = parts.next().unwrap_or_default().to_string();
                    let date = parts.next().unwrap_or_default().to_string();
                    keyed.push((date, uuid));
                }
            }
            keyed.sort_by(|a, b| b.cmp(a));
            uuids.extend(keyed.into_iter().map(|(_, u)| u));
        }
    }
    Ok(uuids)
}

/// The records of these uuids, in that order (a missing one is skipped).
pub fn records(store: &Store, uuids: &[String]) -> StoreResult<Vec<OrderRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    let keys: Vec<&str> = uuids.iter().map(String::as_str).collect();
    let mut out = Vec::with_capacity(uuids.len());
    for v in t.get_many(&keys)?.into_iter().flatten() {
        out.push(crate::store::record::decode("orders", v.value())?);
    }
    Ok(out)
}

/// A patient's orders, newest first (the duplicate-order check reads them under the write
/// lock).
pub fn of_patient(
    store: &Store,
    patient: &str,
    include_voided: bool,
) -> StoreResult<Vec<OrderRecord>> {
    let uuids = candidates(store, &Source::Patient(patient), include_voided)?;
    records(store, &uuids)
}

/// An encounter's orders, voided ones only if asked.
pub fn of_encounter(
    store: &Store,
    encounter: &str,
    include_voided: bool,
) -> StoreResult<Vec<OrderRecord>> {
    let uuids = candidates(store, &Source::Encounter(encounter), include_voided)?;
    records(store, &uuids)
}

/// Whether any order, voided or not, names the patient (a purge is refused then).
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
