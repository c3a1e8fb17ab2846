//! The API's roles and privileges: two small tables keyed by uuid, read whole (a facility
//! has tens of roles), no index.

use crate::access::{PrivilegeRecord, RoleRecord};
use crate::store::kv::{TableDefinition, WriteTransaction};
use crate::store::record::RecordTable;
use crate::store::{Store, StoreResult};

const ROLES: TableDefinition<&str, &[u8]> = TableDefinition::new("roles");
const PRIVILEGES: TableDefinition<&str, &[u8]> = TableDefinition::new("privileges");

pub const ROLE_RECORDS: RecordTable = RecordTable {
    name: "roles",
    table: ROLES,
    indexes: &[],
    covering: &[],
    create: |txn| {
        txn.open_table(ROLES)?;
        Ok(())
    },
    reindex: |_, bytes| crate::store::record::decode::<RoleRecord>("roles", bytes).map(drop),
    codec: crate::store::record::json_codec::<RoleRecord>(),
};

pub const PRIVILEGE_RECORDS: RecordTable = RecordTable {
    name: "privileges",
    table: PRIVILEGES,
    indexes: &[],
    covering: &[],
    create: |txn| {
        txn.open_table(PRIVILEGES)?;
        Ok(())
    },
    reindex: |_, bytes| {
        crate::store::record::decode::<PrivilegeRecord>("privileges", bytes).map(drop)
    },
    codec: crate::store::record::json_codec::<PrivilegeRecord>(),
};

pub fn roles(store: &Store) -> StoreResult<Vec<RoleRecord>> {
    crate::store::record::all_records(store, ROLES, "roles")
}

pub fn privileges(store: &Store) -> StoreResult<Vec<PrivilegeRecord>> {
    crate::store::record::all_records(store, PRIVILEGES, "privileges")
}

pub fn put_role(store: &Store, r: &RoleRecord) -> StoreResult<()> {
    store.write(|txn: &WriteTransaction| {
        txn.open_table(ROLES)?
            .insert(r.uuid.as_str(), crate::store::record::encode(r).as_slice())?;
        Ok(())
    })
}

pub fn remove_roles(store: &Store, uuids: &[String]) -> StoreResult<()> {
    store.write(|txn| {
        let mut t = txn.open_table(ROLES)?;
        for u in uuids {
            t.remove(u.as_str())?;
        }
        Ok(())
    })
}

pub fn put_privilege(store: &Store, p: &PrivilegeRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(PRIVILEGES)?
            .insert(p.uuid.as_str(), crate::store::record::encode(p).as_slice())?;
        Ok(())
    })
}
