//! `health/started`, `health/alive` and `login.htm`: the probes and the page the
//! distribution's operating procedures poll. The server listens only once the bundle is
//! loaded and the store opened, so answering at all means started.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

pub async fn started() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        "{\"status\":\"started\"}",
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

/// `frontend/config.json`: the front-end configuration compiled into the bundle (the base
/// file merged with the site's, validated). Public: the login page needs it.
pub async fn frontend_config(
    axum::extract::State(state): axum::extract::State<std::sync::Arc<crate::AppState>>,
) -> Response {
    let catalog = state.catalog.load();
    let body = if catalog.content.frontend_config.is_empty() {
        "{}".to_string()
    } else {
        catalog.content.frontend_config.clone()
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json;charset=UTF-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `frontend/logo.png`: the distribution's logo from the bundle.
pub async fn frontend_logo(
    axum::extract::State(state): axum::extract::State<std::sync::Arc<crate::AppState>>,
) -> Response {
    let catalog = state.catalog.load();
    if catalog.content.logo_png.is_empty() {
        return crate::error::ApiError::NotFound.into_response();
    }
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "image/png"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        catalog.content.logo_png.clone(),
    )
        .into_response()
}
