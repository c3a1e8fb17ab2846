//! The queue rooms' table: one small table keyed by uuid, read whole.

use crate::domains::queue_room::QueueRoomRecord;
use crate::store::kv::TableDefinition;
use crate::store::record::RecordTable;
use crate::store::{Store, StoreResult};

pub(crate) const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("queue_rooms");
/// The queue module's `queue_room.name` column.
pub(crate) const NAME_MAX: usize = 255;

pub const RECORDS: RecordTable = RecordTable {
    name: "queue_rooms",
    table: TABLE,
    indexes: &[],
    covering: &[],
    create: |txn| {
        txn.open_table(TABLE)?;
        Ok(())
    },
    reindex: |_, bytes| {
        crate::store::record::decode::<QueueRoomRecord>("queue_rooms", bytes).map(drop)
    },
    codec: crate::store::record::json_codec::<QueueRoomRecord>(),
};

pub(crate) fn all(store: &Store) -> StoreResult<Vec<QueueRoomRecord>> {
    let mut rooms: Vec<QueueRoomRecord> =
        crate::store::record::all_records(store, TABLE, "queue_rooms")?;
    rooms.sort_by(|a, b| (&a.name, &a.uuid).cmp(&(&b.name, &b.uuid)));
    Ok(rooms)
}

pub(crate) fn get(store: &Store, uuid: &str) -> StoreResult<Option<QueueRoomRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("queue_rooms", v.value()))
        .transpose()
}

pub(crate) fn put(store: &Store, r: &QueueRoomRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?
            .insert(r.uuid.as_str(), crate::store::record::encode(r).as_slice())?;
        Ok(())
    })
}

pub(crate) fn purge(store: &Store, uuid: &str) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?.remove(uuid)?;
        Ok(())
    })
}
