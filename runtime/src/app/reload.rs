//! `POST initializer/reload` (this project's own endpoint; OpenMRS has none).
//!
//! Sealed mode re-applies the bundle compiled into the binary; with `EMR_CONTENT_DIR` the
//! content is recompiled from disk first, and a content with errors is refused (400 with
//! the diagnostics) while the previous bundle keeps being served. Either way API-made values
//! of entities the content defines are dropped (see `overlay`), and the new catalog is
//! swapped in atomically: requests in flight finish with the one they started with.

use crate::catalog::Catalog;
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::{Caller, ok};
use crate::overlay;
use axum::extract::State;
use axum::response::Response;
use serde_json::json;
use std::sync::Arc;

pub const RELOAD_PRIVILEGE: &str = "Reload Content Configuration";

pub async fn reload(State(state): State<Arc<AppState>>, caller: Caller) -> ApiResult<Response> {
    caller.require(&[RELOAD_PRIVILEGE])?;
    let _guard = state.reload_lock.lock().await;
    let st = state.clone();
    let (catalog, mode) =
        tokio::task::spawn_blocking(move || -> ApiResult<(Catalog, &'static str)> {
            match &st.config.content_dir {
                None => Ok((
                    Catalog::from_bytes(&st.sealed_bundle).map_err(ApiError::internal)?,
                    "sealed",
                )),
                Some(dir) => {
                    let current = st.catalog.load();
                    let selection = compiler::vfs::Selection {
                        build_type: current.header.build_type,
                        site: current.header.site.clone(),
                    };
                    let compiled = compiler::compile(dir, &selection, &compiler::NoProgress);
                    if compiled.has_errors() {
                        let diagnostics = serde_json::to_value(&compiled.diagnostics)
                            .map_err(ApiError::internal)?;
                        return Err(ApiError::ContentErrors(diagnostics));
                    }
                    let bytes = compiled.encode();
                    Ok((
                        Catalog::from_bytes(&bytes).map_err(ApiError::internal)?,
                        "content-directory",
                    ))
                }
            }
        })
        .await
        .map_err(ApiError::internal)??;
    let st = state.clone();
    // The settings and roles the reload resets are the caller's changes in the audit trail.
    let author = crate::store::audit::current_slot();
    let (catalog, reset, roles) =
        tokio::task::spawn_blocking(move || -> ApiResult<(Catalog, Vec<String>, Vec<String>)> {
            crate::store::audit::acting_sync(author, || {
                let reset = overlay::reset_to_content(&st.store, &catalog)?;
                let roles = crate::domains::role::drop_redefined(&st.store, &catalog)?;
                crate::domains::role::reload_access(&st.store, &st.access)?;
                Ok((catalog, reset, roles))
            })
        })
        .await
        .map_err(ApiError::internal)??;
    let hash = catalog.header.content_hash.clone();
    let counts: serde_json::Map<String, serde_json::Value> = catalog
        .content
        .counts()
        .into_iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    state.catalog.store(Arc::new(catalog));
    state.answers.invalidate();
    tracing::info!(mode, bundle = %hash, reset = ?reset, roles = ?roles, "content reloaded");
    Ok(ok(json!({
        "mode": mode,
        "bundleHash": hash,
        "reset": {"systemsettings": reset, "roles": roles},
        "entities": counts,
    })))
}
