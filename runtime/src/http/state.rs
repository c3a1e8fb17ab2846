//! What every handler can reach: the settings from the environment (`Config`) and the
//! application state (`AppState`).

use crate::catalog::Catalog;
use crate::embedded::EMBEDDED_SPA;
use arc_swap::ArcSwap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

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
    pub trusted_proxies: crate::throttle::Networks,
    /// `EMR_MAX_CONNECTIONS` and `EMR_HEADER_TIMEOUT_SECS`: how many connections are served
    /// at once, and how long a request's headers (or a kept-alive connection's next ones)
    /// may take to arrive.
    pub connections: crate::serve::Limits,
    /// `EMR_DATABASE_URL` (with `EMR_DATABASE_PASSWORD` and `EMR_DATABASE_SCHEMA`, default
    /// `emr`): the store in PostgreSQL, shared by every runtime given the same; without
    /// it, the redb file in the data directory.
    pub database: Option<Database>,
    /// `EMR_CONTENT_UPGRADE=true`: this runtime may serve a shared store whose content was
    /// last served by a runtime built with other content (the first runtime of an upgrade,
    /// once the old ones are stopped). Without it such a runtime refuses to start.
    pub content_upgrade: bool,
    /// `EMR_DHIS2_URL` (with `EMR_DHIS2_USERNAME`, `EMR_DHIS2_PASSWORD` and
    /// `EMR_DHIS2_ORG_UNIT`): the national DHIS2 the reports' figures are sent to; without
    /// it, sending is refused (the figures can still be pulled from `reportdata`).
    pub dhis2: Option<Dhis2>,
}

/// Where the reports' figures go.
#[derive(Clone)]
pub struct Dhis2 {
    /// The instance's base URL (`https://snis.sante.gouv.cd`), without `/api`.
    pub url: String,
    pub username: String,
    pub password: String,
    /// The facility's organisation unit uid in that DHIS2.
    pub org_unit: String,
    /// `EMR_DHIS2_CA_FILE`: the certificates (PEM) an HTTPS DHIS2's certificate must chain
    /// to, instead of the public authorities' (a national health PKI); checked at start.
    pub ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for Dhis2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Dhis2 {{ url: {:?}, org_unit: {:?} }}",
            self.url, self.org_unit
        )
    }
}

/// Where the shared store lives.
#[derive(Clone)]
pub struct Database {
    pub url: String,
    /// Kept out of the URL, so that it is not written where URLs are.
    pub password: Option<String>,
    pub schema: String,
}

impl std::fmt::Debug for Database {
    // The URL may carry a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Database {{ schema: {:?} }}", self.schema)
    }
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
        let connections = crate::serve::Limits {
            max_connections: (number("EMR_MAX_CONNECTIONS", 512)?
                .clamp(1, crate::serve::MAX_CONNECTIONS as u64))
                as usize,
            header_timeout: Duration::from_secs(number("EMR_HEADER_TIMEOUT_SECS", 30)?.max(1)),
        };
        let max_body_bytes = var("EMR_MAX_BODY_BYTES")
            .map(|v| {
                v.parse()
                    .map_err(|_| "EMR_MAX_BODY_BYTES is not a number".to_string())
            })
            .transpose()?
            .unwrap_or(1024 * 1024);
        let database = var("EMR_DATABASE_URL").map(|url| Database {
            url,
            password: var("EMR_DATABASE_PASSWORD"),
            schema: var("EMR_DATABASE_SCHEMA").unwrap_or_else(|| "emr".into()),
        });
        let dhis2 = match var("EMR_DHIS2_URL") {
            None => None,
            Some(url) => {
                let need =
                    |k: &str| var(k).ok_or_else(|| format!("EMR_DHIS2_URL is set but {k} is not"));
                if !(url.starts_with("https://") || url.starts_with("http://")) {
                    return Err(format!(
                        "EMR_DHIS2_URL must start with https:// (or http:// for a local proxy): {url}"
                    ));
                }
                let ca_pem = var("EMR_DHIS2_CA_FILE")
                    .map(|path| {
                        let pem = std::fs::read(&path)
                            .map_err(|e| format!("EMR_DHIS2_CA_FILE {path}: {e}"))?;
                        let certificates = ureq::tls::parse_pem(&pem)
                            .filter(|i| matches!(i, Ok(ureq::tls::PemItem::Certificate(_))))
                            .count();
                        if certificates == 0 {
                            return Err(format!(
                                "EMR_DHIS2_CA_FILE {path} holds no PEM certificate"
                            ));
                        }
                        Ok(pem)
                    })
                    .transpose()?;
                Some(Dhis2 {
                    url: url.trim_end_matches('/').to_string(),
                    username: need("EMR_DHIS2_USERNAME")?,
                    password: need("EMR_DHIS2_PASSWORD")?,
                    org_unit: need("EMR_DHIS2_ORG_UNIT")?,
                    ca_pem,
                })
            }
        };
        Ok(Config {
            dhis2,
            database,
            content_upgrade: var("EMR_CONTENT_UPGRADE").is_some_and(|v| v == "true" || v == "1"),
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
            trusted_proxies: crate::throttle::Networks::parse(
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
            trusted_proxies: crate::throttle::Networks::default(),
            connections: crate::serve::Limits::default(),
            database: None,
            content_upgrade: false,
            dhis2: None,
        }
    }
}

/// Everything a request handler can reach.
pub struct AppState {
    pub catalog: ArcSwap<Catalog>,
    pub store: crate::store::Store,
    pub sessions: crate::auth::Sessions,
    pub index: RwLock<crate::search::SearchIndex>,
    /// Raised once the patient index has loaded (or failed to): until then its lock is
    /// held by the loader, and requests wait for this instead (`patient_index`).
    pub index_ready: tokio::sync::watch::Sender<bool>,
    pub config: Config,
    /// The sealed bundle, re-applied by `initializer/reload` without a content directory.
    pub sealed_bundle: Vec<u8>,
    /// Serialises reloads.
    pub reload_lock: tokio::sync::Mutex<()>,
    /// Bounds password verifications of HTTP Basic credentials (see `crate::throttle::PasswordGate`).
    pub password_gate: crate::throttle::PasswordGate,
    /// Permits for backups running at once (`crate::app::backup`).
    pub backups: Arc<tokio::sync::Semaphore>,
    /// The embedded O3 application, ready to serve.
    pub spa: crate::http::spa::Spa,
    /// Roles and privileges made through the API (`crate::domains::role`).
    pub access: ArcSwap<crate::access::Access>,
    /// Failed logins per client address.
    pub login_throttle: crate::throttle::LoginThrottle,
    /// The ticket each service point is serving (`queueutil/assignticket`), for the
    /// waiting-room screen; in memory, as the queue module keeps it.
    pub queue_tickets: std::sync::Mutex<std::collections::BTreeMap<String, serde_json::Value>>,
    /// Rendered answers of the calls screens poll (the service-queue dashboard), kept
    /// until the next write.
    pub answers: crate::http::answer_cache::AnswerCache,
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
    ) -> Result<
        std::sync::RwLockReadGuard<'_, crate::search::SearchIndex>,
        crate::http::error::ApiError,
    > {
        self.index_loaded().await;
        let index = self
            .index
            .read()
            .map_err(crate::http::error::ApiError::internal)?;
        match index.failure() {
            Some(why) => Err(crate::http::error::ApiError::Internal(format!(
                "the patient index could not be loaded: {why}"
            ))),
            None => Ok(index),
        }
    }

    /// The loaded patient index, to apply a patient write that has committed.
    pub async fn patient_index_mut(
        &self,
    ) -> Result<
        std::sync::RwLockWriteGuard<'_, crate::search::SearchIndex>,
        crate::http::error::ApiError,
    > {
        self.index_loaded().await;
        self.index
            .write()
            .map_err(crate::http::error::ApiError::internal)
    }

    /// A setting's value: the API-made one, else the content's, else OpenMRS's built-in
    /// default (`crate::catalog::BUILT_IN`).
    pub fn setting(&self, property: &str) -> Option<String> {
        crate::clinic::setting(&self.store, &self.catalog.load(), property)
    }

    /// `Clinic::emr_metadata`.
    pub fn emr_metadata(&self, code: &str) -> Option<String> {
        crate::clinic::emr_metadata(&self.store, &self.catalog.load(), code)
    }

    /// What a domain's rules read of this state: the store, the current content and the
    /// settings.
    pub fn clinic(&self) -> crate::clinic::Clinic<'_> {
        crate::clinic::Clinic::new(&self.store, self.catalog.load_full())
    }

    /// A true/false setting; `default` when unset or unreadable.
    pub fn bool_setting(&self, property: &str, default: bool) -> bool {
        crate::clinic::as_bool(self.setting(property), default)
    }

    pub fn int_setting(&self, property: &str, default: u64) -> u64 {
        crate::clinic::as_int(self.setting(property), default)
    }

    /// The password rules (OpenMRS's `security.password*` settings and their defaults).
    pub fn password_policy(&self) -> crate::auth::PasswordPolicy {
        crate::auth::PasswordPolicy {
            min_length: self.int_setting(
                "security.passwordMinimumLength",
                crate::auth::MIN_PASSWORD_LENGTH as u64,
            ) as usize,
            upper_and_lower: self.bool_setting("security.passwordRequiresUpperAndLowerCase", true),
            digit: self.bool_setting("security.passwordRequiresDigit", true),
            non_digit: self.bool_setting("security.passwordRequiresNonDigit", true),
            not_username: self.bool_setting("security.passwordCannotMatchUsername", true),
        }
    }

    /// The login throttle's limits (`emr.loginThrottle.*`; at least one failure each).
    pub fn login_limits(&self) -> crate::throttle::Limits {
        let defaults = crate::throttle::Limits::default();
        let count =
            |name: &str, default: usize| (self.int_setting(name, default as u64) as usize).max(1);
        crate::throttle::Limits {
            per_address_and_name: count(
                "emr.loginThrottle.perAddressAndUsername",
                defaults.per_address_and_name,
            ),
            per_address: count("emr.loginThrottle.perAddress", defaults.per_address),
            per_name: count("emr.loginThrottle.perUsername", defaults.per_name),
            window: std::time::Duration::from_secs(
                60 * self
                    .int_setting(
                        "emr.loginThrottle.windowMinutes",
                        defaults.window.as_secs() / 60,
                    )
                    .clamp(1, 24 * 60),
            ),
        }
    }

    pub fn lockout(&self) -> crate::auth::Lockout {
        crate::auth::Lockout {
            allowed_failures: self.int_setting("security.allowedFailedLoginsBeforeLockout", 7)
                as u32,
            wait_minutes: self.int_setting("security.unlockAccountWaitingTime", 5),
        }
    }
}
