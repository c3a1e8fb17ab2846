//! Start-up: decode the embedded bundle, apply the overlay rule, create the first
//! administrator, start loading the patient index.

pub use crate::app::app;
use crate::catalog::Catalog;
use crate::http::{AppState, Config};
use arc_swap::ArcSwap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the embedded bundle is unusable: {0}")]
    Bundle(#[from] model::DecodeError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Setup(#[from] crate::auth::SetupError),
    #[error("cannot create the data directory {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    #[error("the embedded front end is unusable: {0}")]
    Spa(String),
    #[error("cannot start the patient index loader: {0}")]
    Thread(std::io::Error),
    #[error(
        "the database was last served content {served}, and this runtime carries {own}: runtimes with different content must not write into one database. Stop the runtimes serving the old content, then start one runtime with EMR_CONTENT_UPGRADE=true (it applies the new content), and the others after it"
    )]
    ContentMismatch { served: String, own: String },
}

/// What start-up did, for the start-up log line.
pub struct StartReport {
    pub dropped_settings: Vec<String>,
    /// API roles dropped because the content now defines roles of the same names.
    pub dropped_roles: Vec<String>,
    pub admin_created: bool,
    pub elapsed: Duration,
}

/// Builds the state: decodes the bundle, applies the overlay rule to the store, creates the
/// administrator on a first start, and starts loading the patient search index.
pub fn start(
    config: Config,
    bundle: Vec<u8>,
    store: crate::store::Store,
) -> Result<(Arc<AppState>, StartReport), StartError> {
    let began = Instant::now();
    let catalog = Catalog::from_bytes(&bundle)?;
    let spa = crate::http::spa::Spa::load(&config).map_err(StartError::Spa)?;
    // Runtimes starting together on one database run these steps one at a time (the
    // clinical lock is held across runtimes there), so one administrator is created and
    // the content's rules applied once.
    let one_at_a_time = store.is_shared().then(|| store.write_lock());
    if store.is_shared()
        && !config.content_upgrade
        && let Some(served) = crate::overlay::served_content(&store)?
        && served != catalog.header.content_hash
    {
        return Err(StartError::ContentMismatch {
            served,
            own: catalog.header.content_hash.clone(),
        });
    }
    let dropped_settings = crate::overlay::apply_new_bundle(&store, &catalog)?;
    let dropped_roles = crate::domains::role::drop_redefined(&store, &catalog)?;
    let access = crate::domains::role::load_access(&store)?;
    let admin_created = crate::auth::ensure_admin(
        &store,
        &config.admin_username,
        config.admin_password.as_deref(),
    )?;
    drop(one_at_a_time);
    let state = AppState {
        sessions: crate::auth::Sessions::new(config.session_idle, config.session_max_age),
        catalog: ArcSwap::from_pointee(catalog),
        store,
        index: RwLock::new(crate::search::SearchIndex::default()),
        index_ready: tokio::sync::watch::Sender::new(false),
        config,
        sealed_bundle: bundle,
        reload_lock: tokio::sync::Mutex::new(()),
        password_gate: crate::throttle::PasswordGate::new(),
        backups: Arc::new(tokio::sync::Semaphore::new(
            crate::app::backup::CONCURRENT_BACKUPS,
        )),
        spa,
        access: ArcSwap::from_pointee(access),
        login_throttle: crate::throttle::LoginThrottle::default(),
        queue_tickets: Default::default(),
        answers: Default::default(),
    };
    let state = Arc::new(state);
    follow_other_runtimes(&state);
    spawn_index_load(&state)?;
    Ok((
        state,
        StartReport {
            dropped_settings,
            dropped_roles,
            admin_created,
            elapsed: began.elapsed(),
        },
    ))
}

/// On a store shared with other runtimes, keeps what this runtime holds in memory in step
/// with their writes: the sessions they changed, the patients they wrote (in the search
/// index), the roles (authorisation's view) and the rendered answers. The store itself
/// drops its user and setting caches. A lost notice connection refreshes everything.
fn follow_other_runtimes(state: &Arc<AppState>) {
    let weak = Arc::downgrade(state);
    state
        .store
        .on_remote_change(Arc::new(move |notice: &crate::store::pg::Notice| {
            use crate::store::pg::Notice;
            let Some(st) = weak.upgrade() else {
                return;
            };
            let keys = |table: &str| -> Option<Option<&std::collections::BTreeSet<String>>> {
                match notice {
                    Notice::Lost => Some(None),
                    Notice::Changed(t) => t.get(table).map(|k| k.as_ref()),
                }
            };
            if let Some(ids) = keys("sessions") {
                st.sessions.forget(ids);
            }
            if keys("users").is_some() {
                st.sessions.forget(Some(&Default::default()));
            }
            if (keys("roles").is_some() || keys("privileges").is_some())
                && let Err(e) = crate::domains::role::reload_access(&st.store, &st.access)
            {
                tracing::warn!("roles changed by another runtime not reloaded: {e}");
            }
            if let Some(Some(failures)) = keys(crate::throttle::FAILED_LOGINS) {
                let limits = st.login_limits();
                for (ip, name) in failures
                    .iter()
                    .filter_map(|k| crate::throttle::from_notice_key(k))
                {
                    st.login_throttle.failed(ip, name, &limits);
                }
            }
            match keys("patients") {
                Some(Some(uuids)) => refresh_patients(&st, uuids),
                Some(None) => reload_index(&st),
                None => {}
            }
            st.answers.invalidate();
        }));
}

/// Applies other runtimes' patient writes to the search index.
fn refresh_patients(st: &AppState, uuids: &std::collections::BTreeSet<String>) {
    for uuid in uuids {
        match st.store.patient(uuid) {
            Ok(found) => {
                let mut index = match st.index.write() {
                    Ok(i) => i,
                    Err(poisoned) => poisoned.into_inner(),
                };
                match found {
                    Some(p) => index.upsert(&p),
                    None => index.remove(uuid),
                }
            }
            Err(e) => {
                tracing::warn!("a patient written by another runtime could not be read: {e}");
                reload_index(st);
                return;
            }
        }
    }
}

/// Loads the whole search index again (after notices were lost, or a large import).
fn reload_index(st: &AppState) {
    match crate::search::SearchIndex::load(&st.store) {
        Ok(fresh) => {
            let mut index = match st.index.write() {
                Ok(i) => i,
                Err(poisoned) => poisoned.into_inner(),
            };
            *index = fresh;
        }
        Err(e) => tracing::error!("the patient index could not be loaded again: {e}"),
    }
}

/// Loads the patient search index from the store on a thread of its own, so that start-up
/// does not grow with the number of patients. The thread holds the index's write lock from
/// before this returns until the index is complete: a search, or a patient write (which
/// updates the index after its commit), waits for it rather than seeing a partial index,
/// asynchronously (`AppState::patient_index`) so that other requests go on meanwhile.
/// A write committed while the index loads is either in the loader's snapshot or applied
/// after it; both apply the same record, so neither order loses it.
fn spawn_index_load(state: &Arc<AppState>) -> Result<(), StartError> {
    let (taken, wait) = std::sync::mpsc::sync_channel(1);
    let st = state.clone();
    std::thread::Builder::new()
        .name("patient-index".into())
        .spawn(move || {
            let mut index = st
                .index
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let _ = taken.send(());
            let began = Instant::now();
            match crate::store::medium::catch_panic(|| crate::search::SearchIndex::load(&st.store))
            {
                Ok(Ok(loaded)) => {
                    *index = loaded;
                    tracing::info!(
                        patients = index.len(),
                        load_ms = began.elapsed().as_secs_f64() * 1000.0,
                        "patient index loaded"
                    );
                }
                Ok(Err(e)) => {
                    tracing::error!("the patient index could not be loaded: {e}");
                    index.fail(e.to_string());
                }
                Err(panic) => {
                    tracing::error!("the patient index could not be loaded: {panic}");
                    index.fail(format!("the store is damaged: {panic}"));
                }
            }
            drop(index);
            st.index_ready.send_replace(true);
        })
        .map_err(StartError::Thread)?;
    let _ = wait.recv();
    Ok(())
}

/// Refuses a first start (no store file yet) that could not create the administrator,
/// before anything is written, so the data directory is left as it was found.
pub fn check_first_start(config: &Config) -> Result<(), StartError> {
    // A shared database is checked once connected (`start` refuses to leave it without
    // an administrator).
    if config.database.is_none() && !config.data_dir.join("store.redb").exists() {
        match config.admin_password.as_deref() {
            None | Some("") => return Err(crate::auth::SetupError::NoAdminPassword.into()),
            Some(p) if p.chars().count() < crate::auth::MIN_PASSWORD_LENGTH => {
                return Err(crate::auth::SetupError::WeakPassword.into());
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Opens the store: in the PostgreSQL database when one is configured, else in the data
/// directory.
pub fn open_store(config: &Config) -> Result<crate::store::Store, StartError> {
    if let Some(db) = &config.database {
        return Ok(crate::store::Store::connect_with(
            &db.url,
            db.password.as_deref(),
            &db.schema,
            &crate::domains::REGISTRY,
        )?);
    }
    let path = config.data_dir.join("store.redb");
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| StartError::DataDir(config.data_dir.clone(), e))?;
    Ok(crate::store::Store::open(&path, &crate::domains::REGISTRY)?)
}
