//! The O3 application embedded in the binary (`spa_pack`), served under `{app}/spa/` the way
//! the front-end container's nginx serves it, so one binary is the whole distribution:
//!
//! - the placeholders `frontend/startup.sh` fills in a container (application path, API
//!   path, configuration address, default language) are filled once at start, from
//!   `EMR_APP_PATH` and `EMR_SPA_DEFAULT_LOCALE`; the configuration address is the
//!   bundle's `frontend/config.json`, so a site build shows its own configuration;
//! - `spa/config.json` and `spa/logo.png` come from the bundle too;
//! - a path without an extension is a client-side route and gets `index.html`;
//! - module scripts are cached for a year (their folder names carry their versions), the
//!   service worker never, everything else is revalidated with its ETag;
//! - text files are sent gzip-compressed as packed, and decompressed only for a client that
//!   does not accept gzip.

use crate::http::AppState;
use crate::http::error::ApiError;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

/// The application's files by path, ready to send.
pub struct Spa {
    files: HashMap<&'static str, Asset>,
}

struct Asset {
    body: Bytes,
    gzip: bool,
    content_type: &'static str,
    etag: HeaderValue,
    cache: &'static str,
}

impl Spa {
    /// Reads the pack `config.spa` and fills the start-time placeholders.
    pub fn load(config: &crate::http::Config) -> Result<Spa, String> {
        let mut files = HashMap::new();
        for file in crate::spa_pack::unpack(config.spa)? {
            let (body, hash) = if crate::spa_pack::filled_at_start(file.path) {
                let text = std::str::from_utf8(file.bytes)
                    .map_err(|_| format!("{} is not UTF-8", file.path))?;
                let filled = fill(text, &config.app_path, &config.spa_default_locale);
                let hash = crate::spa_pack::fnv1a(filled.as_bytes());
                (Bytes::from(filled), hash)
            } else {
                (Bytes::from_static(file.bytes), file.hash)
            };
            let etag = HeaderValue::from_str(&format!("\"{hash:016x}\""))
                .expect("hex digits make a header value");
            files.insert(
                file.path,
                Asset {
                    body,
                    gzip: file.gzip,
                    content_type: content_type(file.path),
                    etag,
                    cache: cache_policy(file.path),
                },
            );
        }
        if !files.is_empty() && !files.contains_key("index.html") {
            return Err("it has no index.html".into());
        }
        Ok(Spa { files })
    }

    /// Whether this binary was built without the front end.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// What `frontend/startup.sh` does with envsubst in the front-end container.
fn fill(text: &str, app_path: &str, locale: &str) -> String {
    text.replace(
        "\"$SPA_CONFIG_URLS\"",
        &format!("\"{app_path}/frontend/config.json\""),
    )
    .replace("$SPA_PATH", &format!("{app_path}/spa"))
    .replace("$API_URL", app_path)
    .replace("$SPA_DEFAULT_LOCALE", locale)
}

fn extension(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map(|(_, e)| e).unwrap_or("")
}

fn content_type(path: &str) -> &'static str {
    match extension(path) {
        "html" => "text/html;charset=UTF-8",
        "js" | "mjs" => "text/javascript;charset=UTF-8",
        "css" => "text/css;charset=UTF-8",
        "json" => "application/json;charset=UTF-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "txt" => "text/plain;charset=UTF-8",
        _ => "application/octet-stream",
    }
}

fn cache_policy(path: &str) -> &'static str {
    if path == "service-worker.js" {
        "no-store"
    } else if extension(path) == "js" {
        "public, max-age=31536000"
    } else {
        "no-cache, must-revalidate"
    }
}

fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or("");
            let refused = parts.any(|p| p.replace(' ', "").trim_start_matches("q=") == "0");
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// `{app}/spa`: the application lives one slash further.
pub async fn redirect_to_root(State(state): State<Arc<AppState>>) -> Response {
    let to = format!("{}/spa/", state.config.app_path);
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// `/`: the application's home, or the ready page when the binary has no front end.
pub async fn site_root(State(state): State<Arc<AppState>>) -> Response {
    let app = &state.config.app_path;
    let to = if state.spa.is_empty() {
        format!("{app}/login.htm")
    } else {
        format!("{app}/spa/home")
    };
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// `{app}/spa/`: the application's entry page.
pub async fn index(state: State<Arc<AppState>>, headers: HeaderMap) -> Response {
    file(state, Path(String::new()), headers).await
}

/// `{app}/spa/{*path}`.
pub async fn file(
    State(state): State<Arc<AppState>>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    if state.spa.is_empty() {
        return without_front_end();
    }
    match path.as_str() {
        "config.json" => {
            return frontend_config(State(state)).await;
        }
        "logo.png" if !state.catalog.load().content.logo_png.is_empty() => {
            return frontend_logo(State(state)).await;
        }
        _ => {}
    }
    let asset = match state.spa.files.get(path.as_str()) {
        Some(asset) => asset,
        // A client-side route (no extension) gets the application.
        None if path.is_empty() || !path.rsplit('/').next().unwrap_or("").contains('.') => {
            &state.spa.files["index.html"]
        }
        None => return ApiError::NotFound.into_response(),
    };
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == asset.etag.as_bytes());
    let mut response = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else if asset.gzip && accepts_gzip(&headers) {
        let mut r = Body::from(asset.body.clone()).into_response();
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        r
    } else if asset.gzip {
        let mut plain = Vec::new();
        if flate2::read::GzDecoder::new(&asset.body[..])
            .read_to_end(&mut plain)
            .is_err()
        {
            tracing::error!(path, "an embedded front-end file does not decompress");
            return ApiError::NotFound.into_response();
        }
        Body::from(plain).into_response()
    } else {
        Body::from(asset.body.clone()).into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(asset.cache));
    h.insert(header::ETAG, asset.etag.clone());
    if asset.gzip {
        h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    response
}

/// What a binary built without `EMR_SPA_DIR` answers under `spa/`.
fn without_front_end() -> Response {
    let body = "<!doctype html>\n<html lang=\"fr\"><head><meta charset=\"utf-8\"><title>DSE RDC</title></head>\n<body><p>Ce serveur a été construit sans l'application (le front end O3) : lancez <code>bash run.sh</code> pour construire et démarrer la distribution complète.</p>\n<p lang=\"en\">This server was built without the application (the O3 front end): run <code>bash run.sh</code> to build and start the whole distribution.</p></body></html>\n";
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/html;charset=UTF-8")],
        body,
    )
        .into_response()
}

/// `frontend/config.json`: the front-end configuration compiled into the bundle (the base
/// file merged with the site's, validated). Public: the login page needs it.
pub async fn frontend_config(
    axum::extract::State(state): axum::extract::State<std::sync::Arc<crate::http::AppState>>,
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
    axum::extract::State(state): axum::extract::State<std::sync::Arc<crate::http::AppState>>,
) -> Response {
    let catalog = state.catalog.load();
    if catalog.content.logo_png.is_empty() {
        return crate::http::error::ApiError::NotFound.into_response();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_the_placeholders_as_the_container_does() {
        let page = r#"<script>window.spaBase = "$SPA_PATH"; importmap("$SPA_PATH/importmap.json"); api("$API_URL"); configUrls: ["$SPA_CONFIG_URLS"], locale: "$SPA_DEFAULT_LOCALE"</script>"#;
        let filled = fill(page, "/emr", "fr");
        assert_eq!(
            filled,
            r#"<script>window.spaBase = "/emr/spa"; importmap("/emr/spa/importmap.json"); api("/emr"); configUrls: ["/emr/frontend/config.json"], locale: "fr"</script>"#
        );
    }

    #[test]
    fn gzip_is_refused_only_with_a_zero_quality() {
        let with = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(v));
            accepts_gzip(&h)
        };
        assert!(with("gzip, deflate, br"));
        assert!(with("br;q=1.0, gzip;q=0.8"));
        assert!(with("*"));
        assert!(!with("gzip;q=0"));
        assert!(!with("br"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
