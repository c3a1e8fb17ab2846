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
    let dropped_settings = crate::overlay::apply_new_bundle(&store, &catalog)?;
    let dropped_roles = crate::domains::role::drop_redefined(&store, &catalog)?;
    let access = crate::domains::role::load_access(&store)?;
    let admin_created = crate::auth::ensure_admin(
        &store,
        &config.admin_username,
        config.admin_password.as_deref(),
    )?;
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
    if !config.data_dir.join("store.redb").exists() {
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

/// Opens the store in the configured data directory.
pub fn open_store(config: &Config) -> Result<crate::store::Store, StartError> {
    let path = config.data_dir.join("store.redb");
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| StartError::DataDir(config.data_dir.clone(), e))?;
    Ok(crate::store::Store::open(&path, &crate::domains::REGISTRY)?)
}
