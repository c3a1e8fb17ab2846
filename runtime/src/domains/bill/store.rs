//! The bill table and its indexes: by patient (`patient|created|uuid`), by visit
//! (`visit|created|uuid`), by creation (`all|created|uuid`, the cash desk's list), by
//! status (`status|created|uuid`, the list's filter; moved when the status changes), and
//! each line item's bill (`item|bill`).

use crate::domains::bill::BillRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{Index, Page, RecordTable, VOIDED, Window, key, scan, uuid_of};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("bills");
const BY_PATIENT: Index = TableDefinition::new("bills_by_patient");
const BY_VISIT: Index = TableDefinition::new("bills_by_visit");
const BY_CREATED: Index = TableDefinition::new("bills_by_created");
const BY_STATUS: Index = TableDefinition::new("bills_by_status");
const LINE_ITEMS: Index = TableDefinition::new("bill_line_items");
const RECEIPT_COUNTER: &str = "bill-receipt-number";

pub const RECORDS: RecordTable = RecordTable {
    name: "bills",
    table: TABLE,
    indexes: &[BY_PATIENT, BY_VISIT, BY_CREATED, BY_STATUS, LINE_ITEMS],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<BillRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    for index in [BY_PATIENT, BY_VISIT, BY_CREATED, BY_STATUS, LINE_ITEMS] {
        txn.open_table(index)?;
    }
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let b: BillRecord = crate::store::record::decode("bills", bytes)?;
    if let Some(n) = sequence_of(&b.number) {
        crate::store::raise_counter_in(txn, RECEIPT_COUNTER, n)?;
    }
    write_index(txn, None, &b)
}

/// The sequence part of a receipt number (`000042-7` → 42).
fn sequence_of(number: &str) -> Option<u64> {
    number.split('-').next().and_then(|n| n.parse().ok())
}

/// A receipt number for the `n`th bill: the sequence padded to six digits and its Luhn
/// check digit, as the module's sequential generator writes them (`000042-7`).
pub fn receipt_number(n: u64) -> String {
    let sequence = format!("{n:06}");
    let check = crate::identifiers::luhn_check_char(&sequence, "0123456789").unwrap_or('0');
    format!("{sequence}-{check}")
}

fn keys(b: &BillRecord) -> Vec<(Index, String)> {
    let created = b.audit.date_created.as_str();
    let mut out = vec![
        (BY_PATIENT, key(&[&b.patient, created, &b.uuid])),
        (BY_CREATED, key(&["all", created, &b.uuid])),
        (BY_STATUS, key(&[&b.status, created, &b.uuid])),
    ];
    if let Some(v) = &b.visit {
        out.push((BY_VISIT, key(&[v, created, &b.uuid])));
    }
    for item in &b.line_items {
        out.push((LINE_ITEMS, key(&[&item.uuid, &b.uuid])));
    }
    out
}

fn write_index(
    txn: &WriteTransaction,
    old: Option<&BillRecord>,
    new: &BillRecord,
) -> StoreResult<()> {
    if let Some(old) = old {
        for (index, k) in keys(old) {
            txn.open_table(index)?.remove(k.as_str())?;
        }
    }
    let flags = if new.voiding.voided { VOIDED } else { 0 };
    for (index, k) in keys(new) {
        txn.open_table(index)?.insert(k.as_str(), flags)?;
    }
    Ok(())
}

/// Writes a bill durably; a new one (without a receipt number) gets the next number in the
/// same transaction.
pub fn put(store: &Store, old: Option<&BillRecord>, new: &mut BillRecord) -> StoreResult<()> {
    store.write(|txn| {
        if new.number.is_empty() {
            new.number = receipt_number(crate::store::next_counter_in(txn, RECEIPT_COUNTER)? + 1);
        }
        txn.open_table(TABLE)?.insert(
            new.uuid.as_str(),
            crate::store::record::encode(&*new).as_slice(),
        )?;
        write_index(txn, old, new)
    })
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<BillRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("bills", v.value()))
        .transpose()
}

/// The bill holding a line item.
pub fn bill_of_item(store: &Store, item: &str) -> StoreResult<Option<BillRecord>> {
    let txn = store.begin_read()?;
    let mut bill = None;
    crate::store::record::walk(&txn.open_table(LINE_ITEMS)?, item, 0, false, |k| {
        bill = Some(uuid_of(k).to_string());
        false
    })?;
    drop(txn);
    match bill {
        Some(b) => get(store, &b),
        None => Ok(None),
    }
}

/// Which bills a listing reads.
pub enum Source<'a> {
    All,
    Patient(&'a str),
    Visit(&'a str),
    /// Any of these statuses (the list's filter), merged newest first.
    Statuses(&'a [String]),
}

/// One page of bills, newest first, voided ones left out, with their records. Without
/// `keep` the page is found from index keys alone and only its records are read; with it
/// (a patient's name, a status within a patient's bills) each candidate is read and
/// tested, so callers pass it only over a narrow source.
pub fn list(
    store: &Store,
    source: Source,
    window: Window,
    keep: Option<&dyn Fn(&BillRecord) -> bool>,
) -> StoreResult<(Page, Vec<BillRecord>)> {
    let txn = store.begin_read()?;
    let records = txn.open_table(TABLE)?;
    let read = |uuid: &str| -> StoreResult<Option<BillRecord>> {
        records
            .get(uuid)?
            .map(|v| crate::store::record::decode("bills", v.value()))
            .transpose()
    };
    let prefixes: Vec<(Index, &str)> = match source {
        Source::All => vec![(BY_CREATED, "all")],
        Source::Patient(p) => vec![(BY_PATIENT, p)],
        Source::Visit(v) => vec![(BY_VISIT, v)],
        Source::Statuses(s) => s.iter().map(|s| (BY_STATUS, s.as_str())).collect(),
    };
    let page = match (prefixes.as_slice(), keep) {
        ([(index, prefix)], None) => scan(
            &txn.open_table(*index)?,
            prefix,
            VOIDED,
            true,
            window,
            |_| true,
        )?,
        _ => {
            // Several statuses merge their ranges newest first by `created|uuid`.
            let mut keyed: Vec<(String, String)> = Vec::new();
            for (index, prefix) in &prefixes {
                crate::store::record::walk(&txn.open_table(*index)?, prefix, VOIDED, true, |k| {
                    let rest = k.get(prefix.len() + 1..).unwrap_or_default();
                    keyed.push((rest.to_string(), uuid_of(k).to_string()));
                    true
                })?;
            }
            keyed.sort_by(|a, b| b.0.cmp(&a.0));
            let mut uuids = Vec::new();
            for (_, uuid) in keyed {
                let kept = match keep {
                    None => true,
                    Some(keep) => read(&uuid)?.is_some_and(|b| keep(&b)),
                };
                if kept {
                    uuids.push(uuid);
                }
            }
            Page::cut(uuids, window)
        }
    };
    let mut bills = Vec::with_capacity(page.uuids.len());
    for uuid in &page.uuids {
        if let Some(b) = read(uuid)? {
            bills.push(b);
        }
    }
    Ok((page, bills))
}

/// Whether the patient has a bill in force that is not yet paid (the banner's tag).
pub fn has_unpaid(store: &Store, patient: &str) -> StoreResult<bool> {
    let (_, bills) = list(
        store,
        Source::Patient(patient),
        Window {
            start: 0,
            limit: 1,
            count_all: false,
        },
        Some(&|b: &BillRecord| {
            b.status == crate::domains::bill::PENDING || b.status == crate::domains::bill::POSTED
        }),
    )?;
    Ok(!bills.is_empty())
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, BY_PATIENT, patient),
    adjust: None,
    counted_as: None,
};

#[cfg(test)]
mod tests {
    #[test]
    fn receipt_numbers_carry_a_luhn_check_digit() {
        let n = super::receipt_number(42);
        assert!(n.starts_with("000042-"));
        let digits: String = n.chars().filter(|c| *c != '-').collect();
        assert!(crate::identifiers::luhn_valid(&digits, "0123456789"));
        assert_eq!(super::sequence_of(&n), Some(42));
    }
}
