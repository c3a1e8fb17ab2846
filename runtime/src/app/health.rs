//! `health/started`, `health/alive` and `login.htm`: the probes and the page the
//! distribution's operating procedures poll. The server listens only once the bundle is
//! loaded and the store opened; `started` also reports a store that cannot write.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// 200 when the service can serve and save; 503 while its store cannot write (a full
/// disk), with the cause, so the image's health check and an operator see it. Reads keep
/// working meanwhile, and `alive` stays 200.
pub async fn started(
    axum::extract::State(state): axum::extract::State<std::sync::Arc<crate::http::AppState>>,
) -> Response {
    let st = state.clone();
    let unreachable = match state.store.server() {
        Some(_) => tokio::task::spawn_blocking(move || {
            st.store.server().and_then(|pg| pg.reachable().err())
        })
        .await
        .ok()
        .flatten(),
        None => None,
    };
    if let Some(e) = unreachable {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::json!({"status": "database-unreachable", "detail": e.to_string()})
                .to_string(),
        )
            .into_response();
    }
    if let Some(other) = state.store.content_changed_to() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::json!({"status": "content-changed", "detail": format!("another runtime gave the database the content {other}; this runtime serves {} and refuses writes until it is started again with it", state.catalog.load().header.content_hash)})
                .to_string(),
        )
            .into_response();
    }
    let (status, body) = match state.store.write_failure() {
        None => (StatusCode::OK, serde_json::json!({"status": "started"})),
        Some(f) => (
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({
                "status": "store-unwritable",
                "diskFull": f.disk_full,
                "detail": f.detail,
                "since": f.since,
            }),
        ),
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub async fn alive() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        "{\"status\":\"alive\"}",
    )
        .into_response()
}

/// While the store cannot write, tries every few seconds to recover it (`Store::try_recover`),
/// so the service heals once space is freed even when no one writes.
pub fn spawn_store_recovery(
    state: std::sync::Arc<crate::http::AppState>,
    every: std::time::Duration,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if state.store.write_failure().is_some() {
                let st = state.clone();
                let _ = tokio::task::spawn_blocking(move || st.store.try_recover()).await;
            }
        }
    });
}

/// A small page for old bookmarks and for readiness polling; O3 logs in at `spa/login`.
pub async fn login_page() -> Response {
    let body = "<!doctype html>\n<html lang=\"fr\"><head><meta charset=\"utf-8\"><title>DSE RDC</title></head>\n<body><p>Le serveur est prêt. <a href=\"spa/login\">Se connecter</a></p>\n<p lang=\"en\">The server is ready. <a href=\"spa/login\">Log in</a></p></body></html>\n";
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html;charset=UTF-8")],
        body,
    )
        .into_response()
}
