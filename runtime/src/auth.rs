//! Accounts, sessions and privileges.
//!
//! - Passwords are argon2 hashes; there is no default account: the first administrator
//!   comes from the environment (`ensure_admin`).
//! - `GET /session` with HTTP Basic logs in and sets an HttpOnly `JSESSIONID` cookie; later
//!   requests use the cookie. Basic credentials on other requests are accepted too (curl and
//!   scripts) and authenticate that request alone, without creating a session.
//! - After `security.allowedFailedLoginsBeforeLockout` consecutive failures (default 7) an
//!   account is locked for `security.unlockAccountWaitingTime` minutes (default 5); every
//!   attempt while locked fails and restarts the wait, as OpenMRS does.
//! - Privileges come from the user's roles (with inheritance, from the bundle); `System
//!   Developer` holds them all.

use crate::catalog::Catalog;
use crate::store::{Store, StoreError, UserRecord};
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const SUPER_USER_ROLE: &str = "System Developer";
pub const MIN_PASSWORD_LENGTH: usize = 8;

pub fn hash_password(password: &str) -> String {
    // A version-4 uuid carries 122 random bits from the OS generator: a unique salt.
    let salt = SaltString::encode_b64(uuid::Uuid::new_v4().as_bytes())
        .expect("16 bytes make a valid salt");
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 hashing with a fresh salt succeeds")
        .to_string()
}

pub fn verify_password(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc)
        .map(|h| {
            Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(
        "the store has no user yet: set EMR_ADMIN_PASSWORD (at least {MIN_PASSWORD_LENGTH} characters) to create the administrator; there is no default password"
    )]
    NoAdminPassword,
    #[error("EMR_ADMIN_PASSWORD is too short: use at least {MIN_PASSWORD_LENGTH} characters")]
    WeakPassword,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Creates the administrator on a first start (empty store). Returns true when created.
pub fn ensure_admin(
    store: &Store,
    username: &str,
    password: Option<&str>,
) -> Result<bool, SetupError> {
    if store.user_count()? > 0 {
        return Ok(false);
    }
    let password = password
        .filter(|p| !p.is_empty())
        .ok_or(SetupError::NoAdminPassword)?;
    if password.chars().count() < MIN_PASSWORD_LENGTH {
        return Err(SetupError::WeakPassword);
    }
    let user = UserRecord {
        v: 1,
        uuid: uuid::Uuid::new_v4().to_string(),
        username: username.to_string(),
        system_id: "admin".into(),
        person_uuid: uuid::Uuid::new_v4().to_string(),
        person_name: "Super User".into(),
        password_hash: hash_password(password),
        roles: vec![SUPER_USER_ROLE.to_string(), "Provider".to_string()],
        properties: BTreeMap::new(),
        retired: false,
        failed_logins: 0,
        locked_until: None,
        audit: None,
        retiring: None,
    };
    store.put_user(&user)?;
    Ok(true)
}

/// Password rules, as OpenMRS's `OpenmrsUtil.validatePassword` applies them.
#[derive(Debug, Clone, Copy)]
pub struct PasswordPolicy {
    pub min_length: usize,
    pub upper_and_lower: bool,
    pub digit: bool,
    pub non_digit: bool,
    pub not_username: bool,
}

impl PasswordPolicy {
    /// Every rule the password breaks, as messages for the user.
    pub fn problems(&self, username: &str, password: &str) -> Vec<String> {
        let mut out = Vec::new();
        if password.chars().count() < self.min_length {
            out.push(format!(
                "Password must be at least {} characters long",
                self.min_length
            ));
        }
        if self.upper_and_lower
            && !(password.chars().any(char::is_uppercase)
                && password.chars().any(char::is_lowercase))
        {
            out.push("Password must contain both upper and lower case characters".into());
        }
        if self.digit && !password.chars().any(|c| c.is_ascii_digit()) {
            out.push("Password must contain at least one digit".into());
        }
        if self.non_digit && password.chars().all(|c| c.is_ascii_digit()) {
            out.push("Password must contain at least one non-digit character".into());
        }
        if self.not_username && !username.is_empty() && password.eq_ignore_ascii_case(username) {
            out.push("Password cannot match the username".into());
        }
        if password.chars().any(char::is_control) {
            out.push("Password cannot contain control characters".into());
        }
        out
    }
}

/// A hash of no one's password, with the same parameters as real ones: what a login for
/// an unknown or unusable account is verified against.
fn unknown_user_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| hash_password(&uuid::Uuid::new_v4().to_string()))
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Checks a username and password, applying the lockout rules. Writes the user's
/// bookkeeping (attempts, lockout, last login) durably.
/// Lockout settings: failures allowed, then minutes to wait.
#[derive(Debug, Clone, Copy)]
pub struct Lockout {
    pub allowed_failures: u32,
    pub wait_minutes: u64,
}

pub fn login(
    store: &Store,
    lockout: Lockout,
    username: &str,
    password: &str,
) -> Result<Option<UserRecord>, StoreError> {
    let Some(mut user) = store.user_by_username(username)? else {
        // Unknown usernames are not counted, but cost the same verification as a wrong
        // password, so that timing does not tell which names exist.
        verify_password(password, unknown_user_hash());
        return Ok(None);
    };
    if user.retired {
        verify_password(password, unknown_user_hash());
        return Ok(None);
    }
    let allowed = lockout.allowed_failures;
    let wait_ms = lockout.wait_minutes as i64 * 60_000;
    let now = now_ms();
    if let Some(until) = user.locked_until {
        if now < until {
            // Still locked: refuse. The wait counts from the lock; further attempts do not
            // extend it (otherwise anyone could keep an account locked for ever).
            verify_password(password, unknown_user_hash());
            return Ok(None);
        }
        user.locked_until = None;
        user.failed_logins = 0;
    }
    if verify_password(password, &user.password_hash) {
        user.failed_logins = 0;
        user.properties.insert("loginAttempts".into(), "0".into());
        user.properties
            .insert("lastLoginTimestamp".into(), now.to_string());
        match store.put_user(&user) {
            // A full disk must not lock everyone out: the login stands, its bookkeeping
            // is lost. (A wrong password still fails with the store's error: attempts
            // that cannot be counted are not allowed.)
            Err(StoreError::Unwritable(f)) => {
                tracing::warn!(user = %user.username, "login bookkeeping not saved: {}", f.detail);
            }
            other => other?,
        }
        Ok(Some(user))
    } else {
        user.failed_logins += 1;
        user.properties
            .insert("loginAttempts".into(), user.failed_logins.to_string());
        if user.failed_logins > allowed {
            user.locked_until = Some(now + wait_ms);
            user.properties
                .insert("lockoutTimestamp".into(), now.to_string());
        }
        store.put_user(&user)?;
        Ok(None)
    }
}

/// A logged-in session.
#[derive(Debug, Clone)]
pub struct Session {
    pub user_uuid: String,
    /// Explicit session locale (`POST /session {locale}`), BCP-47.
    pub locale: Option<String>,
    pub location: Option<String>,
    created: Instant,
    last_seen: Instant,
    /// When this runtime last wrote `last_seen` to a shared store.
    synced: Instant,
}

/// How often a runtime sharing its store tells the others a session is still in use.
const SESSION_SYNC: Duration = Duration::from_secs(60);

/// Sessions live in memory on redb: a restart logs everyone out, nothing else is lost. On
/// a store shared by several runtimes (PostgreSQL) they are also kept in the store
/// (`store::SessionRecord`), so a login made on one runtime is valid on every other and a
/// logout, a password change or a retired account ends it on all of them; the memory is a
/// cache there, dropped for the sessions another runtime changed (`forget`).
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
    idle: Duration,
    max_age: Duration,
    /// SHA-256 of `username:password` and the stored hash → user uuid, so scripts sending
    /// Basic credentials on every call do not pay for argon2 each time.
    basic_cache: Mutex<HashMap<CredentialsKey, (String, Instant)>>,
}

fn unix_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Sessions {
    pub fn new(idle: Duration, max_age: Duration) -> Sessions {
        Sessions {
            map: Mutex::new(HashMap::new()),
            idle,
            max_age,
            basic_cache: Mutex::new(HashMap::new()),
        }
    }

    pub fn max_age(&self) -> Duration {
        self.max_age
    }

    fn live(&self, s: &Session, now: Instant) -> bool {
        now.duration_since(s.last_seen) < self.idle && now.duration_since(s.created) < self.max_age
    }

    fn expired_record(&self, r: &crate::store::SessionRecord, now_ms: i64) -> bool {
        now_ms - r.last_seen_ms >= self.idle.as_millis() as i64
            || now_ms - r.created_ms >= self.max_age.as_millis() as i64
    }

    fn record_of(s: &Session, now: Instant, now_ms: i64) -> crate::store::SessionRecord {
        crate::store::SessionRecord {
            user_uuid: s.user_uuid.clone(),
            locale: s.locale.clone(),
            location: s.location.clone(),
            created_ms: now_ms - now.duration_since(s.created).as_millis() as i64,
            last_seen_ms: now_ms - now.duration_since(s.last_seen).as_millis() as i64,
        }
    }

    pub fn create(
        &self,
        store: &Store,
        user_uuid: &str,
        location: Option<String>,
    ) -> Result<String, StoreError> {
        let id = uuid::Uuid::new_v4().simple().to_string().to_uppercase();
        let now = Instant::now();
        let session = Session {
            user_uuid: user_uuid.into(),
            locale: None,
            location,
            created: now,
            last_seen: now,
            synced: now,
        };
        if store.is_shared() {
            let now_ms = unix_ms();
            store.put_session(&id, &Sessions::record_of(&session, now, now_ms))?;
            // Each login is a moment to drop the sessions nobody ended.
            if let Err(e) = store.remove_sessions(None, None, |r| self.expired_record(r, now_ms)) {
                tracing::warn!("expired sessions not removed: {e}");
            }
        }
        let mut map = self.map.lock().expect("sessions lock");
        if map.len() > 10_000 {
            map.retain(|_, s| self.live(s, now));
        }
        map.insert(id.clone(), session);
        Ok(id)
    }

    /// The live session with this id, refreshing its idle timer.
    pub fn get(&self, store: &Store, id: &str) -> Result<Option<Session>, StoreError> {
        let now = Instant::now();
        let mut sync = None;
        {
            let mut map = self.map.lock().expect("sessions lock");
            match map.get_mut(id) {
                Some(s) if self.live(s, now) => {
                    s.last_seen = now;
                    if store.is_shared() && now.duration_since(s.synced) >= SESSION_SYNC {
                        s.synced = now;
                        sync = Some(s.clone());
                    } else {
                        return Ok(Some(s.clone()));
                    }
                }
                Some(_) => {
                    map.remove(id);
                }
                None => {}
            }
        }
        if let Some(s) = sync {
            store.put_session(id, &Sessions::record_of(&s, now, unix_ms()))?;
            return Ok(Some(s));
        }
        if !store.is_shared() {
            return Ok(None);
        }
        // Another runtime's login, or one this runtime thought idle while others saw it
        // used.
        let now_ms = unix_ms();
        let Some(r) = store.session(id)? else {
            return Ok(None);
        };
        if self.expired_record(&r, now_ms) {
            store.remove_sessions(Some(id), None, |_| false)?;
            return Ok(None);
        }
        let ago = |ms: i64| {
            now.checked_sub(Duration::from_millis((now_ms - ms).max(0) as u64))
                .unwrap_or(now)
        };
        let s = Session {
            user_uuid: r.user_uuid,
            locale: r.locale,
            location: r.location,
            created: ago(r.created_ms),
            last_seen: now,
            synced: ago(r.last_seen_ms),
        };
        self.map
            .lock()
            .expect("sessions lock")
            .insert(id.to_string(), s.clone());
        Ok(Some(s))
    }

    pub fn update(
        &self,
        store: &Store,
        id: &str,
        f: impl FnOnce(&mut Session),
    ) -> Result<(), StoreError> {
        let changed = {
            let mut map = self.map.lock().expect("sessions lock");
            map.get_mut(id).map(|s| {
                f(s);
                s.clone()
            })
        };
        if let Some(s) = changed
            && store.is_shared()
        {
            store.put_session(id, &Sessions::record_of(&s, Instant::now(), unix_ms()))?;
        }
        Ok(())
    }

    pub fn remove(&self, store: &Store, id: &str) -> Result<(), StoreError> {
        if store.is_shared() {
            store.remove_sessions(Some(id), None, |_| false)?;
        }
        self.map.lock().expect("sessions lock").remove(id);
        Ok(())
    }

    /// Ends every session of a user (e.g. after a password change).
    pub fn remove_user(&self, store: &Store, user_uuid: &str) -> Result<(), StoreError> {
        self.remove_user_except(store, user_uuid, None)
    }

    /// Ends every session of a user but `keep` (the one that changed its own password).
    pub fn remove_user_except(
        &self,
        store: &Store,
        user_uuid: &str,
        keep: Option<&str>,
    ) -> Result<(), StoreError> {
        if store.is_shared() {
            store.remove_sessions(None, Some((user_uuid, keep)), |_| false)?;
        }
        self.map
            .lock()
            .expect("sessions lock")
            .retain(|id, s| s.user_uuid != user_uuid || Some(id.as_str()) == keep);
        self.basic_cache
            .lock()
            .expect("cache lock")
            .retain(|_, (u, _)| u != user_uuid);
        Ok(())
    }

    /// Drops what this runtime remembers of sessions another runtime changed (`None`:
    /// all of them) and of verified credentials, so they are read again from the store.
    pub fn forget(&self, ids: Option<&std::collections::BTreeSet<String>>) {
        {
            let mut map = self.map.lock().expect("sessions lock");
            match ids {
                Some(ids) => map.retain(|id, _| !ids.contains(id)),
                None => map.clear(),
            }
        }
        self.basic_cache.lock().expect("cache lock").clear();
    }

    /// Whether these credentials were verified for this user in the last five minutes.
    pub fn basic_verified(&self, key: &CredentialsKey, user_uuid: &str) -> bool {
        let cache = self.basic_cache.lock().expect("cache lock");
        cache
            .get(key)
            .is_some_and(|(u, at)| u == user_uuid && at.elapsed() < Duration::from_secs(300))
    }

    pub fn cache_basic(&self, key: CredentialsKey, user_uuid: &str) {
        let mut cache = self.basic_cache.lock().expect("cache lock");
        if cache.len() > 1_000 {
            cache.clear();
        }
        cache.insert(key, (user_uuid.to_string(), Instant::now()));
    }
}

/// SHA-256 of a username, a password and the stored hash they were verified against.
pub type CredentialsKey = [u8; 32];

/// The privileges a user holds through its roles: the catalog's precomputed per-role
/// sets, shared rather than copied.
#[derive(Default)]
pub struct Grants {
    pub super_user: bool,
    role_privileges: Vec<Arc<HashSet<String>>>,
    /// Every role the user holds, directly or through inheritance.
    pub roles: HashSet<String>,
}

/// The privileges of a user's roles, through inheritance across the content's roles and
/// the API's (`domains::role`); a name the content defines is the content's role.
pub fn grants(user: &UserRecord, catalog: &Catalog, access: &crate::access::Access) -> Grants {
    let mut grants = Grants::default();
    let mut stack: Vec<&str> = user.roles.iter().map(String::as_str).collect();
    let mut seen = HashSet::new();
    while let Some(name) = stack.pop() {
        if !seen.insert(name) {
            continue;
        }
        if name == SUPER_USER_ROLE {
            grants.super_user = true;
        }
        if let Some(role) = catalog.role(name) {
            if let Some(set) = catalog.role_privileges(name) {
                grants.role_privileges.push(set.clone());
            }
            stack.extend(role.inherited_roles.iter().map(String::as_str));
        } else if let Some(role) = access.role(name) {
            grants.role_privileges.push(Arc::new(
                role.privileges.iter().map(|p| p.to_lowercase()).collect(),
            ));
            stack.extend(role.inherited_roles.iter().map(String::as_str));
        }
    }
    grants.roles = seen.into_iter().map(str::to_string).collect();
    grants
}

impl Grants {
    pub fn has(&self, privilege: &str) -> bool {
        self.super_user || self.holds_through_roles(privilege)
    }

    /// Held through a role, ignoring super-user status.
    pub fn holds_through_roles(&self, privilege: &str) -> bool {
        let lower = privilege.to_lowercase();
        self.role_privileges.iter().any(|set| set.contains(&lower))
    }
}

/// Converts a locale to BCP-47 (`en_GB` → `en-GB`).
pub fn bcp47(locale: &str) -> String {
    locale.replace('_', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_password_rule_names_what_the_password_breaks() {
        let every_rule = PasswordPolicy {
            min_length: 8,
            upper_and_lower: true,
            digit: true,
            non_digit: true,
            not_username: true,
        };
        let broken = |password: &str| every_rule.problems("Infirmiere1", password);
        assert!(broken("Bonne-garde-7").is_empty());
        assert_eq!(
            broken("Court-7"),
            ["Password must be at least 8 characters long"]
        );
        assert_eq!(
            broken("tout-en-minuscules-7"),
            ["Password must contain both upper and lower case characters"]
        );
        assert_eq!(
            broken("Sans-Chiffre"),
            ["Password must contain at least one digit"]
        );
        // Digits only: no letters of either case and no non-digit.
        assert_eq!(
            broken("12345678"),
            [
                "Password must contain both upper and lower case characters",
                "Password must contain at least one non-digit character"
            ]
        );
        assert_eq!(
            broken("infirmiere1"),
            [
                "Password must contain both upper and lower case characters",
                "Password cannot match the username"
            ]
        );
        assert_eq!(
            broken("Bonne-garde-7\u{7}"),
            ["Password cannot contain control characters"]
        );
        // Each rule is the content's to turn off.
        let lenient = PasswordPolicy {
            min_length: 4,
            upper_and_lower: false,
            digit: false,
            non_digit: false,
            not_username: false,
        };
        assert!(lenient.problems("abcd", "abcd").is_empty());
        assert!(lenient.problems("x", "1234").is_empty());
    }

    #[test]
    fn passwords_hash_and_verify() {
        let h = hash_password("s3cret-pass");
        assert!(h.starts_with("$argon2"));
        assert!(verify_password("s3cret-pass", &h));
        assert!(!verify_password("wrong", &h));
        assert!(!verify_password("x", "not a hash"));
    }

    #[test]
    fn no_admin_without_a_password() {
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        assert!(matches!(
            ensure_admin(&store, "admin", None),
            Err(SetupError::NoAdminPassword)
        ));
        assert!(matches!(
            ensure_admin(&store, "admin", Some("short")),
            Err(SetupError::WeakPassword)
        ));
        assert!(ensure_admin(&store, "admin", Some("long enough")).unwrap());
        // Only once: an existing store keeps its users whatever the environment says.
        assert!(!ensure_admin(&store, "admin", None).unwrap());
    }

    #[test]
    fn sessions_expire_when_idle() {
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let s = Sessions::new(Duration::from_millis(0), Duration::from_secs(60));
        let id = s.create(&store, "u", None).unwrap();
        assert!(s.get(&store, &id).unwrap().is_none());
        let s = Sessions::new(Duration::from_secs(60), Duration::from_secs(60));
        let id = s.create(&store, "u", None).unwrap();
        assert_eq!(s.get(&store, &id).unwrap().unwrap().user_uuid, "u");
        s.remove(&store, &id).unwrap();
        assert!(s.get(&store, &id).unwrap().is_none());
    }

    #[test]
    fn sessions_end_at_their_absolute_limit_however_active() {
        // EMR_SESSION_MAX_HOURS: an active session (idle limit far away) still ends.
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let s = Sessions::new(Duration::from_secs(3600), Duration::from_millis(0));
        let id = s.create(&store, "u", None).unwrap();
        assert!(s.get(&store, &id).unwrap().is_none());
        let s = Sessions::new(Duration::from_secs(3600), Duration::from_secs(3600));
        let id = s.create(&store, "u", None).unwrap();
        assert!(s.get(&store, &id).unwrap().is_some());
    }
}
