//! Managed providers: one small table keyed by uuid, read whole (a facility has tens of
//! providers), no index.

use crate::domains::provider::ProviderRecord;
use crate::store::kv::TableDefinition;
use crate::store::record::RecordTable;
use crate::store::{Store, StoreResult};

const PROVIDERS: TableDefinition<&str, &[u8]> = TableDefinition::new("providers");

pub const RECORDS: RecordTable = RecordTable {
    name: "providers",
    table: PROVIDERS,
    indexes: &[],
    covering: &[],
    create: |txn| {
        txn.open_table(PROVIDERS)?;
        Ok(())
    },
    reindex: |_, bytes| {
        crate::store::record::decode::<ProviderRecord>("providers", bytes).map(drop)
    },
    codec: crate::store::record::json_codec::<ProviderRecord>(),
};

pub fn providers(store: &Store) -> StoreResult<Vec<ProviderRecord>> {
    crate::store::record::all_records(store, PROVIDERS, "providers")
}

pub fn provider(store: &Store, uuid: &str) -> StoreResult<Option<ProviderRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(PROVIDERS)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("providers", v.value()))
        .transpose()
}

pub fn put(store: &Store, p: &ProviderRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(PROVIDERS)?
            .insert(p.uuid.as_str(), crate::store::record::encode(p).as_slice())?;
        Ok(())
    })
}
