//! Roles and privileges made through the API, next to the content's.
//!
//! The content package defines roles and privileges; those are read-only here (changing
//! one is refused with a message that says to change the content package). An
//! administrator may add roles and privileges through the API: they live in the store,
//! survive restarts, reloads and new images, and are backed up like clinical records. If
//! new content defines a role with the same name, the content's wins and the API's is
//! dropped (reported at start-up and in the reload's answer), as settings are.
//!
//! The in-memory view authorisation reads (`access::Access`) is rebuilt from the store
//! after every role write (a facility has tens of roles).

pub mod rest;
pub mod store;

use crate::access::{Access, RoleRecord};
use crate::catalog::Catalog;

/// Rebuilds the in-memory `Access` from the store (after a role or privilege write, and
/// at start).
pub fn reload_access(
    store: &crate::store::Store,
    access: &arc_swap::ArcSwap<Access>,
) -> crate::store::StoreResult<()> {
    access.store(std::sync::Arc::new(load_access(store)?));
    Ok(())
}

pub fn load_access(store: &crate::store::Store) -> crate::store::StoreResult<Access> {
    Ok(Access::new(store::roles(store)?, store::privileges(store)?))
}

/// Drops the API's roles whose names the content now defines (the content wins); returns
/// their names.
pub fn drop_redefined(
    store: &crate::store::Store,
    catalog: &Catalog,
) -> crate::store::StoreResult<Vec<String>> {
    let redefined: Vec<RoleRecord> = store::roles(store)?
        .into_iter()
        .filter(|r| catalog.role(&r.name).is_some())
        .collect();
    if redefined.is_empty() {
        return Ok(Vec::new());
    }
    let uuids: Vec<String> = redefined.iter().map(|r| r.uuid.clone()).collect();
    store::remove_roles(store, &uuids)?;
    let names: Vec<String> = redefined.into_iter().map(|r| r.name).collect();
    for name in &names {
        tracing::warn!(role = %name, "the content now defines this role: the one made through the API is dropped");
    }
    Ok(names)
}
