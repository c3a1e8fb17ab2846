//! Which API-made values survive a change of content.
//!
//! - At start with a bundle different from the one last served, an API-made value whose
//!   entity the new bundle defines differently (or newly defines) is dropped: the
//!   configuration wins, as Initializer does for a changed file. Values over unchanged
//!   entities stay. Each dropped value is logged.
//! - `initializer/reload` re-applies the content: every API-made value over an entity the
//!   bundle defines is dropped; API-created data (patients, users, values of settings the
//!   bundle does not define) stays.

use crate::catalog::{Catalog, setting_fingerprint};
use crate::store::{Store, StoreResult};

use crate::store::SERVED_CONTENT as BUNDLE_HASH;

/// The content hash of the bundle the store was last served with (`None` for a new store).
pub fn served_content(store: &Store) -> StoreResult<Option<String>> {
    store.meta(BUNDLE_HASH)
}

/// Applies the start-up rule; returns the properties whose API-made values were dropped.
pub fn apply_new_bundle(store: &Store, catalog: &Catalog) -> StoreResult<Vec<String>> {
    let hash = &catalog.header.content_hash;
    store.expect_content(hash);
    if store.meta(BUNDLE_HASH)?.as_deref() == Some(hash.as_str()) {
        return Ok(Vec::new());
    }
    let changed: Vec<String> = store
        .settings()?
        .into_iter()
        .filter(|s| setting_fingerprint(catalog.global_property(&s.property)) != s.base_fingerprint)
        .map(|s| s.property)
        .collect();
    let dropped = store.remove_settings(&changed)?;
    for property in &dropped {
        tracing::warn!(%property, "the new content changed this setting: the value set through the API is dropped");
    }
    store.set_meta(BUNDLE_HASH, hash)?;
    Ok(dropped)
}

/// Applies the reload rule; returns the properties reset to the content's values.
pub fn reset_to_content(store: &Store, catalog: &Catalog) -> StoreResult<Vec<String>> {
    let defined: Vec<String> = store
        .settings()?
        .into_iter()
        .filter(|s| catalog.global_property(&s.property).is_some())
        .map(|s| s.property)
        .collect();
    let reset = store.remove_settings(&defined)?;
    store.expect_content(&catalog.header.content_hash);
    store.set_meta(BUNDLE_HASH, &catalog.header.content_hash)?;
    Ok(reset)
}
