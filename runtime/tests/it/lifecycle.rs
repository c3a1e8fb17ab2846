//! Start-up and reload rules: what survives a new bundle, a reload and a restart.

use crate::common::*;
use axum::http::StatusCode;
use runtime::app::start::start;
use runtime::http::Config;
use runtime::store::Store;

fn gp_file(pairs: &[(&str, &str)]) -> String {
    let items: String = pairs
        .iter()
        .map(|(k, v)| {
            format!("<globalProperty><property>{k}</property><value>{v}</value></globalProperty>")
        })
        .collect();
    format!("<config><globalProperties>{items}</globalProperties></config>")
}

fn bundle(pairs: &[(&str, &str)]) -> Vec<u8> {
    bundle_of(&[("openmrs_config/globalproperties/gp.xml", &gp_file(pairs))])
}

#[tokio::test]
async fn a_new_bundle_drops_api_values_of_changed_settings_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let first = bundle(&[
        ("minSearchCharacters", "2"),
        ("visits.autoCloseVisitTimeout", "24"),
    ]);
    {
        let st = state_with(
            first,
            Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
        );
        let mut c = Client::admin(st.clone()).await;
        for (k, v) in [
            ("minSearchCharacters", "3"),
            ("visits.autoCloseVisitTimeout", "6"),
        ] {
            let r = c
                .post(
                    &format!("/openmrs/ws/rest/v1/systemsetting/{k}"),
                    &format!(r#"{{"value":"{v}"}}"#),
                )
                .await;
            assert_eq!(r.status, StatusCode::OK);
        }
    }
    // The new content changes one of the two settings.
    let second = bundle(&[
        ("minSearchCharacters", "2"),
        ("visits.autoCloseVisitTimeout", "48"),
    ]);
    let (st, report) = start(
        Config::for_tests(PASSWORD),
        second,
        Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
    )
    .unwrap();
    assert_eq!(report.dropped_settings, ["visits.autoCloseVisitTimeout"]);
    assert_eq!(
        st.setting("visits.autoCloseVisitTimeout").as_deref(),
        Some("48")
    );
    assert_eq!(st.setting("minSearchCharacters").as_deref(), Some("3"));
}

#[tokio::test]
async fn sealed_reload_resets_content_settings_and_keeps_patients() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    c.post(
        "/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout",
        r#"{"value":"6"}"#,
    )
    .await;
    let created = c
        .post(
            "/openmrs/ws/rest/v1/patient",
            &patient_body(&st, "Grâce", "Ngalula", "400001"),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let r = c
        .send(
            "POST",
            "/openmrs/ws/rest/v1/initializer/reload",
            &[("content-type", "application/json")],
            Some("{}"),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["mode"], "sealed");
    assert_eq!(
        r.body["reset"]["systemsettings"],
        serde_json::json!(["visits.autoCloseVisitTimeout"])
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/systemsetting/visits.autoCloseVisitTimeout")
            .await
            .body["value"],
        "24"
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient?q=grace").await.body["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn content_directory_reload_refuses_errors_and_swaps_valid_content() {
    let dir = tempfile::tempdir().unwrap();
    let gp = dir.path().join("openmrs_config/globalproperties/gp.xml");
    std::fs::create_dir_all(gp.parent().unwrap()).unwrap();
    std::fs::write(&gp, gp_file(&[("minSearchCharacters", "2")])).unwrap();
    let compiled = compiler::compile(
        dir.path(),
        &compiler::vfs::Selection::distro(),
        &compiler::NoProgress,
    );
    let mut config = Config::for_tests(PASSWORD);
    config.content_dir = Some(dir.path().to_path_buf());
    let (st, _) = start(
        config,
        compiled.encode(),
        Store::in_memory(&runtime::domains::REGISTRY).unwrap(),
    )
    .unwrap();
    let mut c = Client::admin(st.clone()).await;

    std::fs::write(&gp, "<config><globalProperties><globalProperty>").unwrap();
    let r = c
        .send("POST", "/openmrs/ws/rest/v1/initializer/reload", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["error"]["diagnostics"][0]["code"], "E0112");
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/systemsetting/minSearchCharacters")
            .await
            .body["value"],
        "2"
    );

    std::fs::write(&gp, gp_file(&[("minSearchCharacters", "4")])).unwrap();
    let r = c
        .send("POST", "/openmrs/ws/rest/v1/initializer/reload", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["mode"], "content-directory");
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/systemsetting/minSearchCharacters")
            .await
            .body["value"],
        "4"
    );
}

#[tokio::test]
async fn data_survives_a_restart_and_the_index_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let uuid = {
        let st = state_with(
            runtime::embedded::EMBEDDED_BUNDLE.to_vec(),
            Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
        );
        let mut c = Client::admin(st.clone()).await;
        let r = c
            .post(
                "/openmrs/ws/rest/v1/patient",
                &patient_body(&st, "Béatrice", "Kalala", "500001"),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
        r.body["uuid"].as_str().unwrap().to_string()
    };
    // A restart without EMR_ADMIN_PASSWORD works: the administrator exists.
    let mut config = Config::for_tests(PASSWORD);
    config.admin_password = None;
    let (st, report) = start(
        config,
        runtime::embedded::EMBEDDED_BUNDLE.to_vec(),
        Store::open(&path, &runtime::domains::REGISTRY).unwrap(),
    )
    .unwrap();
    assert!(!report.admin_created);
    assert_eq!(st.index.read().unwrap().len(), 1);
    let mut c = Client::admin(st).await;
    assert_eq!(
        c.get(&format!("/openmrs/ws/rest/v1/patient/{uuid}"))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/patient?q=beatrice").await.body["results"][0]["uuid"],
        uuid.as_str()
    );
}

/// While the patient index loads, its lock is held by the loader. Searches arriving then
/// wait for it without holding the runtime's worker threads (one per core), so other
/// requests are answered meanwhile, and the searches get the complete index afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_waiting_for_the_patient_index_leave_the_workers_to_other_requests() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    register_patient(&mut c, &st, "Béatrice", "Kalala", "500002").await;
    // As during the load: the flag down, the lock held by another thread.
    st.index_ready.send_replace(false);
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (held, is_held) = std::sync::mpsc::channel::<()>();
    let loader = {
        let st = st.clone();
        std::thread::spawn(move || {
            let _index = st.index.write().unwrap();
            held.send(()).unwrap();
            released.recv().unwrap();
        })
    };
    is_held.recv().unwrap();
    let session = |st: &std::sync::Arc<runtime::http::AppState>| Client {
        state: st.clone(),
        cookie: c.cookie.clone(),
    };
    let searches: Vec<_> = (0..4)
        .map(|_| {
            let mut s = session(&st);
            tokio::spawn(async move { s.get("/openmrs/ws/rest/v1/patient?q=beatrice").await })
        })
        .collect();
    let mut other = session(&st);
    let (answer, answered) = std::sync::mpsc::channel();
    tokio::spawn(async move {
        let r = other
            .get("/openmrs/ws/rest/v1/location?tag=Login+Location")
            .await;
        let _ = answer.send(r.status);
    });
    // Waited for on this thread, which is not one of the workers (blocked workers would
    // drive no timer). A guard against a hang, not a measure.
    let answered = answered.recv_timeout(std::time::Duration::from_secs(60));
    let waiting = searches.iter().all(|s| !s.is_finished());
    release.send(()).unwrap();
    assert_eq!(
        answered.ok(),
        Some(StatusCode::OK),
        "another request answered while searches wait for the index"
    );
    assert!(waiting);
    loader.join().unwrap();
    st.index_ready.send_replace(true);
    for s in searches {
        let r = s.await.unwrap();
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.body["results"].as_array().map(Vec::len), Some(1));
    }
}
