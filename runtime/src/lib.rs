//! The runtime: serves the content bundle compiled into this binary over an
//! OpenMRS-compatible REST API under `/openmrs`, and keeps what the API changes in redb.
//!
//! - `catalog`: the decoded bundle with lookup maps (swapped whole by a reload);
//! - `store`: the redb tables and their versioned records;
//! - `overlay`: which API-made values survive a new bundle;
//! - `auth`: accounts, sessions, lockout, privileges;
//! - `search`: the in-memory patient index;
//! - `identifiers`: check digits and identifier generation;
//! - `repr`: representations, links and paging shared by every resource;
//! - `api`: routes and handlers, one module per resource;
//! - `error`: the OpenMRS error bodies;
//! - `ops`: the health check and the backup service run from the same binary.

pub mod answer_cache;
pub mod api;
pub mod auth;
pub mod catalog;
pub mod domains;
pub mod error;
pub mod identifiers;
pub mod ops;
pub mod overlay;
pub mod repr;
pub mod search;
pub mod serve;
pub mod spa_pack;
pub mod store;
pub mod throttle;

use arc_swap::ArcSwap;
use catalog::Catalog;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

pub use api::app;

/// The bundle compiled into this binary by `build.rs`.
pub static EMBEDDED_BUNDLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bundle.bin"));

/// The O3 application packed by `build.rs` from `EMR_SPA_DIR`; empty when built without it.
pub static EMBEDDED_SPA: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/spa.bin"));

/// Settings from the environment (see the README for each variable).
#[derive(Debug, Clone)]
pub struct Config {
    /// `EMR_APP_PATH`, default `/openmrs`.
    pub app_path: String,
    /// `EMR_LISTEN`, default `0.0.0.0:8080`.
    pub listen: SocketAddr,
    /// `EMR_DATA_DIR`, default `./data`.
    pub data_dir: PathBuf,
    /// `EMR_ADMIN_USERNAME`, default `admin`.
    pub admin_username: String,
    /// `EMR_ADMIN_PASSWORD`: needed only on a first start; never has a default.
    pub admin_password: Option<String>,
    /// `EMR_CONTENT_DIR`: a project root to recompile from on reload (content authors).
    pub content_dir: Option<PathBuf>,
    /// `EMR_SESSION_IDLE_MINUTES`, default 30.
    pub session_idle: Duration,
    /// `EMR_SESSION_MAX_HOURS`, default 12: a session ends this long after its login,
    /// however active it has been (a shift's length).
    pub session_max_age: Duration,
    /// `EMR_MAX_BODY_BYTES`, default 1 MiB.
    pub max_body_bytes: usize,
    /// `EMR_SPA_DEFAULT_LOCALE`, default `fr`: the embedded front end's language until the
    /// server says otherwise.
    pub spa_default_locale: String,
    /// The packed front end to serve under `spa/` (`EMBEDDED_SPA`; empty: none).
    pub spa: &'static [u8],
    /// `EMR_TRUSTED_PROXIES`, default loopback: peers whose `X-Real-IP` names the client
    /// (the gateway), for the login throttle.
    pub trusted_proxies: throttle::Networks,
    /// `EMR_MAX_CONNECTIONS` and `EMR_HEADER_TIMEOUT_SECS`: how many connections are served
    /// at once, and how long a request's headers (or a kept-alive connection's next ones)
    /// may take to arrive.
    pub connections: serve::Limits,
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let app_path = var("EMR_APP_PATH").unwrap_or_else(|| "/openmrs".into());
        let app_path = format!("/{}", app_path.trim_matches('/'));
        let listen = var("EMR_LISTEN")
            .unwrap_or_else(|| "0.0.0.0:8080".into())
            .parse()
            .map_err(|e| format!("EMR_LISTEN is not an address: {e}"))?;
        let number = |k: &str, default: u64| -> Result<u64, String> {
            var(k)
                .map(|v| v.parse().map_err(|_| format!("{k} is not a number")))
                .transpose()
                .map(|v| v.unwrap_or(default))
        };
        let minutes = number("EMR_SESSION_IDLE_MINUTES", 30)?;
        let max_hours = number("EMR_SESSION_MAX_HOURS", 12)?;
        if max_hours == 0 || max_hours > 24 * 365 {
            return Err("EMR_SESSION_MAX_HOURS must be from 1 to 8760".into());
        }
        let connections = serve::Limits {
            max_connections: (number("EMR_MAX_CONNECTIONS", 512)?
                .clamp(1, serve::MAX_CONNECTIONS as u64)) as usize,
            header_timeout: Duration::from_secs(number("EMR_HEADER_TIMEOUT_SECS", 30)?.max(1)),
        };
        let max_body_bytes = var("EMR_MAX_BODY_BYTES")
            .map(|v| {
                v.parse()
                    .map_err(|_| "EMR_MAX_BODY_BYTES is not a number".to_string())
            })
            .transpose()?
            .unwrap_or(1024 * 1024);
        Ok(Config {
            app_path,
            listen,
            data_dir: var("EMR_DATA_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("./data")),
            admin_username: var("EMR_ADMIN_USERNAME").unwrap_or_else(|| "admin".into()),
            admin_password: var("EMR_ADMIN_PASSWORD"),
            content_dir: var("EMR_CONTENT_DIR").map(PathBuf::from),
            session_idle: Duration::from_secs(minutes * 60),
            session_max_age: Duration::from_secs(max_hours * 3600),
            max_body_bytes,
            spa_default_locale: var("EMR_SPA_DEFAULT_LOCALE").unwrap_or_else(|| "fr".into()),
            spa: EMBEDDED_SPA,
            trusted_proxies: throttle::Networks::parse(
                &var("EMR_TRUSTED_PROXIES").unwrap_or_else(|| "127.0.0.0/8,::1".into()),
            )?,
            connections,
        })
    }

    /// Defaults for tests: in-memory store, no listening address used.
    pub fn for_tests(admin_password: &str) -> Config {
        Config {
            app_path: "/openmrs".into(),
            listen: "127.0.0.1:0".parse().expect("valid address"),
            data_dir: PathBuf::from("unused"),
            admin_username: "admin".into(),
            admin_password: Some(admin_password.into()),
            content_dir: None,
            session_idle: Duration::from_secs(1800),
            session_max_age: Duration::from_secs(12 * 3600),
            max_body_bytes: 1024 * 1024,
            spa_default_locale: "fr".into(),
            spa: &[],
            trusted_proxies: throttle::Networks::default(),
            connections: serve::Limits::default(),
        }
    }
}

/// Everything a request handler can reach.
pub struct AppState {
    pub catalog: ArcSwap<Catalog>,
    pub store: store::Store,
    pub sessions: auth::Sessions,
    pub index: RwLock<search::SearchIndex>,
    /// Raised once the patient index has loaded (or failed to): until then its lock is
    /// held by the loader, and requests wait for this instead (`patient_index`).
    pub index_ready: tokio::sync::watch::Sender<bool>,
    pub config: Config,
    /// The sealed bundle, re-applied by `initializer/reload` without a content directory.
    pub sealed_bundle: Vec<u8>,
    /// Serialises reloads.
    pub reload_lock: tokio::sync::Mutex<()>,
    /// Bounds password verifications of HTTP Basic credentials (see `throttle::PasswordGate`).
    pub password_gate: throttle::PasswordGate,
    /// Permits for backups running at once (`api::backup`).
    pub backups: Arc<tokio::sync::Semaphore>,
    /// The embedded O3 application, ready to serve.
    pub spa: api::spa::Spa,
    /// Roles and privileges made through the API (`domains::role`).
    pub access: ArcSwap<domains::role::Access>,
    /// Failed logins per client address.
    pub login_throttle: throttle::LoginThrottle,
    /// The ticket each service point is serving (`queueutil/assignticket`), for the
    /// waiting-room screen; in memory, as the queue module keeps it.
    pub queue_tickets: std::sync::Mutex<std::collections::BTreeMap<String, serde_json::Value>>,
    /// Rendered answers of the calls screens poll (the service-queue dashboard), kept
    /// until the next write.
    pub answers: answer_cache::AnswerCache,
}

impl AppState {
    /// Waits until the patient index has loaded, without holding a worker thread: a request
    /// that blocked on the index's lock while the loader holds it would take one of the
    /// runtime's few workers (one per core) with it, and a few searches at start-up would
    /// stall every other request until the load ends.
    async fn index_loaded(&self) {
        let mut ready = self.index_ready.subscribe();
        // The sender lives as long as the state, so this ends only when the flag is raised.
        let _ = ready.wait_for(|loaded| *loaded).await;
    }

    /// The loaded patient index, to search; a 500 naming why if it could not be loaded.
    pub async fn patient_index(
        &self,
    ) -> Result<std::sync::RwLockReadGuard<'_, search::SearchIndex>, error::ApiError> {
        self.index_loaded().await;
        let index = self.index.read().map_err(error::ApiError::internal)?;
        match index.failure() {
            Some(why) => Err(error::ApiError::Internal(format!(
                "the patient index could not be loaded: {why}"
            ))),
            None => Ok(index),
        }
    }

    /// The loaded patient index, to apply a patient write that has committed.
    pub async fn patient_index_mut(
        &self,
    ) -> Result<std::sync::RwLockWriteGuard<'_, search::SearchIndex>, error::ApiError> {
        self.index_loaded().await;
        self.index.write().map_err(error::ApiError::internal)
    }

    /// A setting's value: the API-made one, else the content's, else OpenMRS's built-in
    /// default (`api::systemsetting::BUILT_IN`).
    pub fn setting(&self, property: &str) -> Option<String> {
        let from_content = || {
            self.catalog
                .load()
                .global_property(property)
                .map(|g| g.value.clone())
                .or_else(|| api::systemsetting::built_in_default(property).map(str::to_string))
        };
        match self.store.setting_shared(property) {
            Ok(Some(s)) => Some(s.value.clone()),
            Ok(None) => from_content(),
            Err(e) => {
                tracing::error!(%e, property, "cannot read a setting; using the content's value");
                from_content()
            }
        }
    }

    /// A true/false setting; `default` when unset or unreadable.
    pub fn bool_setting(&self, property: &str, default: bool) -> bool {
        match self
            .setting(property)
            .map(|v| v.trim().to_ascii_lowercase())
        {
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            _ => default,
        }
    }

    pub fn int_setting(&self, property: &str, default: u64) -> u64 {
        self.setting(property)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    }

    /// The password rules (OpenMRS's `security.password*` settings and their defaults).
    pub fn password_policy(&self) -> auth::PasswordPolicy {
        auth::PasswordPolicy {
            min_length: self.int_setting(
                "security.passwordMinimumLength",
                auth::MIN_PASSWORD_LENGTH as u64,
            ) as usize,
            upper_and_lower: self.bool_setting("security.passwordRequiresUpperAndLowerCase", true),
            digit: self.bool_setting("security.passwordRequiresDigit", true),
            non_digit: self.bool_setting("security.passwordRequiresNonDigit", true),
            not_username: self.bool_setting("security.passwordCannotMatchUsername", true),
        }
    }

    pub fn lockout(&self) -> auth::Lockout {
        auth::Lockout {
            allowed_failures: self.int_setting("security.allowedFailedLoginsBeforeLockout", 7)
                as u32,
            wait_minutes: self.int_setting("security.unlockAccountWaitingTime", 5),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the embedded bundle is unusable: {0}")]
    Bundle(#[from] model::DecodeError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Setup(#[from] auth::SetupError),
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
    store: store::Store,
) -> Result<(Arc<AppState>, StartReport), StartError> {
    let began = Instant::now();
    let catalog = Catalog::from_bytes(&bundle)?;
    let spa = api::spa::Spa::load(&config).map_err(StartError::Spa)?;
    let dropped_settings = overlay::apply_new_bundle(&store, &catalog)?;
    let dropped_roles = domains::role::drop_redefined(&store, &catalog)?;
    let access = domains::role::load_access(&store)?;
    let admin_created = auth::ensure_admin(
        &store,
        &config.admin_username,
        config.admin_password.as_deref(),
    )?;
    let state = AppState {
        sessions: auth::Sessions::new(config.session_idle, config.session_max_age),
        catalog: ArcSwap::from_pointee(catalog),
        store,
        index: RwLock::new(search::SearchIndex::default()),
        index_ready: tokio::sync::watch::Sender::new(false),
        config,
        sealed_bundle: bundle,
        reload_lock: tokio::sync::Mutex::new(()),
        password_gate: throttle::PasswordGate::new(),
        backups: Arc::new(tokio::sync::Semaphore::new(api::backup::CONCURRENT_BACKUPS)),
        spa,
        access: ArcSwap::from_pointee(access),
        login_throttle: throttle::LoginThrottle::default(),
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
            match store::medium::catch_panic(|| search::SearchIndex::load(&st.store)) {
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
            None | Some("") => return Err(auth::SetupError::NoAdminPassword.into()),
            Some(p) if p.chars().count() < auth::MIN_PASSWORD_LENGTH => {
                return Err(auth::SetupError::WeakPassword.into());
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Opens the store in the configured data directory.
pub fn open_store(config: &Config) -> Result<store::Store, StartError> {
    let path = config.data_dir.join("store.redb");
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| StartError::DataDir(config.data_dir.clone(), e))?;
    Ok(store::Store::open(&path)?)
}
