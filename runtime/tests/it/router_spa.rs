//! The front end embedded in the binary: served under `spa/` as the front-end container
//! serves it, from a pack made by the same code the build script uses.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use runtime::app::app;
use runtime::app::start::start;
use runtime::embedded::EMBEDDED_BUNDLE;
use runtime::http::{AppState, Config};
use runtime::spa_pack;
use std::io::Read;
use std::sync::Arc;
use tower::ServiceExt;

const INDEX: &str = r#"<html lang="$SPA_DEFAULT_LOCALE"><script>base("$SPA_PATH"); api("$API_URL"); configUrls(["$SPA_CONFIG_URLS"]);</script></html>"#;
const SCRIPT: &str = "console.log('the application, in a file large enough to compress well');";

fn state_with_front_end(app_path: &str) -> Arc<AppState> {
    let mut files = vec![
        ("index.html".to_string(), INDEX.as_bytes().to_vec()),
        (
            "openmrs.abc123.js".to_string(),
            SCRIPT.repeat(20).into_bytes(),
        ),
        ("importmap.json".to_string(), b"{\"imports\":{}}".to_vec()),
        ("fonts/a.woff2".to_string(), vec![0, 1, 2, 3]),
    ];
    let pack: &'static [u8] = Box::leak(spa_pack::pack(&mut files).into_boxed_slice());
    let mut config = Config::for_tests(crate::common::PASSWORD);
    config.app_path = app_path.into();
    config.spa = pack;
    start(
        config,
        EMBEDDED_BUNDLE.to_vec(),
        crate::common::test_store(),
    )
    .expect("starts")
    .0
}

async fn fetch(
    state: &Arc<AppState>,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut request = Request::builder().uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = app(state.clone())
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, headers, body.to_vec())
}

#[tokio::test]
async fn the_entry_page_is_filled_for_this_server() {
    let state = state_with_front_end("/emr");
    let (status, headers, body) = fetch(&state, "/emr/spa/", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "text/html;charset=UTF-8");
    assert_eq!(headers[header::CACHE_CONTROL], "no-cache, must-revalidate");
    assert_eq!(
        String::from_utf8(body).unwrap(),
        r#"<html lang="fr"><script>base("/emr/spa"); api("/emr"); configUrls(["/emr/frontend/config.json"]);</script></html>"#
    );
    // Client-side routes get the same page; a missing file does not.
    let (status, _, route) =
        fetch(&state, "/emr/spa/patient/123/chart/Patient%20Summary", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8(route).unwrap().contains("/emr/spa"));
    let (status, _, _) = fetch(&state, "/emr/spa/missing.js", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The bare path and the server's root lead to the application.
    let (status, headers, _) = fetch(&state, "/emr/spa", &[]).await;
    assert_eq!(status, StatusCode::FOUND);
    assert_eq!(headers[header::LOCATION], "/emr/spa/");
    let (status, headers, _) = fetch(&state, "/", &[]).await;
    assert_eq!(status, StatusCode::FOUND);
    assert_eq!(headers[header::LOCATION], "/emr/spa/home");
}

#[tokio::test]
async fn scripts_are_sent_compressed_and_revalidated_by_etag() {
    let state = state_with_front_end("/openmrs");
    let expected = SCRIPT.repeat(20);
    let (status, headers, body) = fetch(
        &state,
        "/openmrs/spa/openmrs.abc123.js",
        &[("accept-encoding", "gzip, br")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_ENCODING], "gzip");
    assert_eq!(headers[header::VARY], "Accept-Encoding");
    assert_eq!(headers[header::CACHE_CONTROL], "public, max-age=31536000");
    assert!(body.len() < expected.len() / 4, "{} bytes", body.len());
    let mut plain = String::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut plain)
        .unwrap();
    assert_eq!(plain, expected);
    // A client without gzip gets the plain file.
    let (_, headers, body) = fetch(&state, "/openmrs/spa/openmrs.abc123.js", &[]).await;
    assert!(headers.get(header::CONTENT_ENCODING).is_none());
    assert_eq!(String::from_utf8(body).unwrap(), expected);
    // The ETag answers 304; fonts are stored as they are.
    let etag = headers[header::ETAG].to_str().unwrap().to_string();
    let (status, _, body) = fetch(
        &state,
        "/openmrs/spa/openmrs.abc123.js",
        &[("if-none-match", &etag)],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    let (status, headers, body) = fetch(
        &state,
        "/openmrs/spa/fonts/a.woff2",
        &[("accept-encoding", "gzip")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "font/woff2");
    assert!(headers.get(header::CONTENT_ENCODING).is_none());
    assert_eq!(body, vec![0, 1, 2, 3]);
}

#[tokio::test]
async fn the_configuration_and_logo_come_from_the_bundle() {
    let state = state_with_front_end("/openmrs");
    let (status, _, body) = fetch(&state, "/openmrs/spa/config.json", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let config: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        config["core"]["Translation overrides"]["fr"]["Clinic"],
        "DSE RDC"
    );
    let (status, headers, body) = fetch(&state, "/openmrs/spa/logo.png", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "image/png");
    assert_eq!(&body[1..4], b"PNG");
}

#[tokio::test]
async fn a_binary_without_front_end_says_how_to_get_one() {
    let state = crate::common::state();
    let (status, headers, body) = fetch(&state, "/openmrs/spa/login", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers[header::CONTENT_TYPE], "text/html;charset=UTF-8");
    assert!(String::from_utf8(body).unwrap().contains("bash run.sh"));
    let (status, headers, _) = fetch(&state, "/", &[]).await;
    assert_eq!(status, StatusCode::FOUND);
    assert_eq!(headers[header::LOCATION], "/openmrs/login.htm");
}

#[test]
fn packing_is_deterministic_and_reads_back() {
    let files = || {
        vec![
            ("b.js".to_string(), SCRIPT.as_bytes().to_vec()),
            ("index.html".to_string(), INDEX.as_bytes().to_vec()),
            ("a/c.png".to_string(), vec![9; 10]),
        ]
    };
    let one = spa_pack::pack(&mut files());
    let mut reversed = files();
    reversed.reverse();
    assert_eq!(one, spa_pack::pack(&mut reversed));
    let read = spa_pack::unpack(&one).unwrap();
    let paths: Vec<&str> = read.iter().map(|f| f.path).collect();
    assert_eq!(paths, ["a/c.png", "b.js", "index.html"]);
    assert!(read[1].gzip && !read[0].gzip && !read[2].gzip);
    assert!(spa_pack::unpack(&one[..one.len() - 1]).is_err());
    assert!(spa_pack::unpack(b"not a pack").is_err());
}
