//! The alert table and its index by expiry (`expiry|uuid`, `~` for an alert that never
//! expires), so that a listing of the alerts in force reads only theirs, however many
//! expired ones years of stock rules have left.

use crate::domains::alert::AlertRecord;
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::{Index, RecordTable, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("alerts");
const BY_EXPIRY: Index = TableDefinition::new("alerts_by_expiry");
/// Numbers alerts (`alertId`).
const ALERT_IDS: &str = "alert.id";
/// Sorts after every datetime key.
const NEVER: &str = "~";

pub const RECORDS: RecordTable = RecordTable {
    name: "alerts",
    table: TABLE,
    indexes: &[BY_EXPIRY],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<AlertRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    txn.open_table(BY_EXPIRY)?;
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let a: AlertRecord = crate::store::record::decode("alerts", bytes)?;
    crate::store::raise_counter_in(txn, ALERT_IDS, a.alert_id)?;
    txn.open_table(BY_EXPIRY)?
        .insert(expiry_key(&a).as_str(), 0)?;
    Ok(())
}

fn expiry_key(a: &AlertRecord) -> String {
    key(&[a.date_to_expire.as_deref().unwrap_or(NEVER), &a.uuid])
}

/// Writes an alert in `txn`, numbering a new one (`alert_id` 0); `old` is what it replaces.
pub fn put_in(
    txn: &WriteTransaction,
    a: &mut AlertRecord,
    old: Option<&AlertRecord>,
) -> StoreResult<()> {
    if a.alert_id == 0 {
        a.alert_id = crate::store::next_counter_in(txn, ALERT_IDS)? + 1;
    }
    let mut index = txn.open_table(BY_EXPIRY)?;
    if let Some(old) = old {
        index.remove(expiry_key(old).as_str())?;
    }
    index.insert(expiry_key(a).as_str(), 0)?;
    txn.open_table(TABLE)?
        .insert(a.uuid.as_str(), crate::store::record::encode(a).as_slice())?;
    Ok(())
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<AlertRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("alerts", v.value()))
        .transpose()
}

/// The alerts in force at `now_key` (every alert with `include_expired`), newest first.
pub fn list(store: &Store, now_key: &str, include_expired: bool) -> StoreResult<Vec<AlertRecord>> {
    let txn = store.begin_read()?;
    let index = txn.open_table(BY_EXPIRY)?;
    let table = txn.open_table(TABLE)?;
    // An alert expires at its `dateToExpire`: in force while that is after now.
    let from = if include_expired {
        String::new()
    } else {
        format!("{now_key}\u{10ffff}")
    };
    let mut out = Vec::new();
    for row in index.range::<&str>(from.as_str()..)? {
        let (k, _) = row?;
        let uuid = crate::store::record::uuid_of(k.value()).to_string();
        if let Some(v) = table.get(uuid.as_str())? {
            out.push(crate::store::record::decode::<AlertRecord>(
                "alerts",
                v.value(),
            )?);
        }
    }
    out.sort_by_key(|a| std::cmp::Reverse(a.alert_id));
    Ok(out)
}

/// Removes an alert for good, with its index key.
pub fn purge(store: &Store, a: &AlertRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?.remove(a.uuid.as_str())?;
        txn.open_table(BY_EXPIRY)?.remove(expiry_key(a).as_str())?;
        Ok(())
    })
}
