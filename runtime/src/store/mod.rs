//! The redb store: only what the API changed (patients, users, system-setting values,
//! identifier-generator counters) plus a meta table (store schema version, hash of the
//! bundle last served).
//!
//! Records are this module's own versioned types, stored as JSON with a `v` field, never
//! the bundle's model types. Every write is durable before the API acknowledges it;
//! concurrent writers share their fsyncs (`group_commit`).

pub mod accounts;
pub mod audit;
pub mod check;
pub mod compact;
pub mod group_commit;
pub mod kv;
pub mod medium;
pub mod patients;
pub mod pg;
pub mod projection;
pub mod record;
mod snapshot;

pub use medium::{CustomMedium, WriteFailure};
pub use snapshot::{RestoreError, verify as verify_snapshot};

use crate::store::record::{RecordTable, Registry};
use kv::{ReadTransaction, TableDefinition, WriteTransaction};
use medium::{Medium, WriteHealth};
use redb::{Database, ReadableDatabase};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bumped when a table's meaning changes; `open` refuses a store with a newer version and
/// records this one in an older store it opens (which it may then write in the new way,
/// so the older runtime must refuse it from then on). 2: observations in binary
/// (`encounter::store::encode_obs`), the patients' search projection. 3: encounters by
/// time. 4: observations by when they last changed (`obs_by_updated`). 5: the chart's
/// covering index (`obs_chart`, in place of `obs_by_patient_concept`), observations
/// written in their compact form (the earlier forms still read). 6: patients by when they
/// last changed (`patients_by_updated`). 7: the audit trail one record per write, compact,
/// under binary indexes (`audit`; the entries of older stores still read). 8: the
/// observations' indexes by encounter, patient and last change in binary. 9: stock items
/// by drug (`stock_items_by_drug`).
pub const SCHEMA_VERSION: u32 = 9;

/// The `meta` entry of a store whose upgrade has begun and not ended: the version it was
/// written by (`Store::finish_upgrade`).
const UPGRADING_FROM: &str = "upgrading_from";

const META: TableDefinition<&str, &str> = TableDefinition::new("meta");
/// The meta key of the content hash of the bundle the store was last served with.
pub const SERVED_CONTENT: &str = "bundle_hash";
const PATIENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("patients");
/// Patient uuid → what the search index needs of that patient (`projection::projection`):
/// loading the index reads these few bytes per patient instead of whole records, so the
/// load neither takes long nor fills redb's cache with every patient's pages. Written with
/// each patient; rebuilt from the records when its count differs from theirs.
const PATIENT_SEARCH: TableDefinition<&str, &[u8]> = TableDefinition::new("patient_search");
/// Every patient by when she last changed (`all|updated|uuid`, flag 1 when voided): FHIR's
/// `Patient?_lastUpdated`, a warehouse's incremental extraction, read as a range rather
/// than a scan of every patient. Written with each patient (store version 6; built for an
/// older store when it is upgraded, and for a restored one from its records).
const PATIENTS_BY_UPDATED: record::Index = TableDefinition::new("patients_by_updated");
/// `<type uuid>|<scope>|<identifier>` → patient uuid, for uniqueness.
const IDENTIFIERS: TableDefinition<&str, &str> = TableDefinition::new("identifiers");
const USERS: TableDefinition<&str, &[u8]> = TableDefinition::new("users");
const USERNAMES: TableDefinition<&str, &str> = TableDefinition::new("usernames");
const SETTINGS: TableDefinition<&str, &[u8]> = TableDefinition::new("settings");
const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
/// Session id → `SessionRecord`: logins shared by the runtimes of one PostgreSQL store
/// (on redb sessions live in the process's memory and this table stays empty). Not in
/// backups: a restored system starts with everyone logged out.
const SESSIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("sessions");

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store error: {0}")]
    Redb(String),
    #[error("corrupt record in {table}: {detail}")]
    Corrupt { table: &'static str, detail: String },
    #[error("the store has schema version {found}, newer than this runtime's {supported}")]
    TooNew { found: u32, supported: u32 },
    /// The database server cannot be reached (PostgreSQL down, restarting, out of
    /// connections): 503, try again; the runtime reconnects by itself.
    #[error("the database cannot be reached: {0}")]
    Unavailable(String),
    #[error("identifier {0} is already in use")]
    IdentifierInUse(String),
    /// A write failed (full disk, I/O error); reads keep working.
    #[error("the store cannot write: {}", .0.detail)]
    Unwritable(WriteFailure),
    #[error(
        "the store file {} is damaged ({detail}). Keep the file aside, then restore the latest backup into an empty data directory with `runtime restore BACKUP`; `runtime check-store` reports what is damaged",
        path.display()
    )]
    Damaged { path: PathBuf, detail: String },
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(impl From<$t> for StoreError { fn from(e: $t) -> Self { medium::classify(e.into()) } })*};
}
from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

pub type StoreResult<T> = Result<T, StoreError>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NameRecord {
    pub uuid: String,
    pub given_name: Option<String>,
    pub middle_name: Option<String>,
    pub family_name: Option<String>,
    pub family_name2: Option<String>,
    pub prefix: Option<String>,
    pub degree: Option<String>,
    pub preferred: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentifierRecord {
    pub uuid: String,
    pub identifier: String,
    pub identifier_type: String,
    pub location: Option<String>,
    pub preferred: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddressRecord {
    pub uuid: String,
    pub preferred: bool,
    /// REST field name (`cityVillage`) → value.
    pub fields: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributeRecord {
    pub uuid: String,
    pub attribute_type: String,
    pub value: String,
}

/// A patient and its person (they share the uuid, as in OpenMRS).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatientRecord {
    pub v: u32,
    pub uuid: String,
    pub gender: String,
    /// `yyyy-mm-dd`
    pub birthdate: Option<String>,
    pub birthdate_estimated: bool,
    pub dead: bool,
    /// A date (`yyyy-mm-dd`, records before the time of death was kept) or a key-form
    /// datetime.
    pub death_date: Option<String>,
    pub cause_of_death: Option<String>,
    /// A cause of death written as text (with no coded cause).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause_of_death_non_coded: Option<String>,
    pub names: Vec<NameRecord>,
    pub identifiers: Vec<IdentifierRecord>,
    pub addresses: Vec<AddressRecord>,
    pub attributes: Vec<AttributeRecord>,
    pub voided: bool,
    /// RFC 3339.
    pub date_created: String,
    pub creator: String,
    /// The last change through `POST patient/{uuid}` or `POST person/{uuid}` (user uuid,
    /// RFC 3339); absent until the first.
    #[serde(default)]
    pub changed: Option<(String, String)>,
    /// Who voided the patient, when (RFC 3339) and why.
    #[serde(default)]
    pub voiding: Option<PatientVoiding>,
}

#[cfg(test)]
impl PatientRecord {
    /// A woman with one preferred name and nothing else, for tests to add to.
    pub(crate) fn for_test(uuid: &str, given: &str, family: &str) -> PatientRecord {
        PatientRecord {
            v: 1,
            uuid: uuid.into(),
            gender: "F".into(),
            birthdate: None,
            birthdate_estimated: false,
            dead: false,
            death_date: None,
            cause_of_death: None,
            cause_of_death_non_coded: None,
            names: vec![NameRecord {
                uuid: format!("{uuid}-n"),
                given_name: Some(given.into()),
                middle_name: None,
                family_name: Some(family.into()),
                family_name2: None,
                prefix: None,
                degree: None,
                preferred: true,
            }],
            identifiers: vec![],
            addresses: vec![],
            attributes: vec![],
            voided: false,
            date_created: String::new(),
            creator: String::new(),
            changed: None,
            voiding: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatientVoiding {
    pub voided_by: String,
    pub date_voided: String,
    pub void_reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserRecord {
    pub v: u32,
    pub uuid: String,
    pub username: String,
    pub system_id: String,
    pub person_uuid: String,
    pub person_name: String,
    /// Argon2 PHC string.
    pub password_hash: String,
    pub roles: Vec<String>,
    pub properties: BTreeMap<String, String>,
    pub retired: bool,
    pub failed_logins: u32,
    /// Unix milliseconds until which logins are refused.
    pub locked_until: Option<i64>,
    /// Who created the account and when (absent for accounts made before it was kept).
    #[serde(default)]
    pub audit: Option<crate::store::record::Audit>,
    /// Why and by whom the account was retired.
    #[serde(default)]
    pub retiring: Option<crate::store::record::Voiding>,
}

/// A login shared by several runtimes (`Store::put_session`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub user_uuid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Unix milliseconds.
    pub created_ms: i64,
    /// Unix milliseconds of the last request seen by any runtime (kept to the minute).
    pub last_seen_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingRecord {
    pub v: u32,
    pub property: String,
    pub value: String,
    pub description: Option<String>,
    /// `catalog::setting_fingerprint` of the bundle's definition when this value was set.
    pub base_fingerprint: String,
}

pub struct Store {
    /// Empty only while the file is being opened again after an I/O failure.
    db: arc_swap::ArcSwapOption<Database>,
    medium: Medium,
    health: Arc<WriteHealth>,
    commits: Arc<group_commit::GroupCommit>,
    /// Serialises the read-check-write sequences of the clinical domains (reading a record,
    /// validating the change against others, writing it), so two of them cannot interleave.
    clinical_writes: std::sync::Mutex<()>,
    users_by_uuid: Arc<ReadCache<UserRecord>>,
    /// By lower-case username or system id; only names that exist are kept.
    users_by_name: Arc<ReadCache<UserRecord>>,
    settings: Arc<ReadCache<SettingRecord>>,
    /// Decoded patient records by uuid: a chart's requests and every search page read the
    /// same few patients again and again, and decoding a record costs more than finding it.
    /// Emptied after every commit that wrote a patient (`write_as`), a restore, and another
    /// runtime's notice naming the table.
    patients: Arc<ReadCache<PatientRecord>>,
    /// Counts committed writes (and reopenings of the file): a reader that notes it before
    /// reading knows its result is current while the count has not moved
    /// (`answer_cache`). Raised after each commit, so a count read after a write's commit
    /// always comes with a view that includes the write.
    commit_count: Arc<std::sync::atomic::AtomicU64>,
    /// The PostgreSQL engine when the store lives there (`connect`); `None` on redb.
    pg: Option<Arc<pg::Engine>>,
    /// What the layers above keep in memory from the store and refresh when another
    /// runtime changes it (`on_remote_change`).
    remote_hooks: Arc<std::sync::RwLock<Vec<RemoteHook>>>,
    /// The content this runtime serves, and, on a shared store, the other content the
    /// database was since given by another runtime (its writes are then refused).
    content: Arc<ContentWatch>,
    /// The domains' tables: created at open, walked by backups, restores and checks.
    registry: &'static Registry,
    /// The tables whose changes the audit trail records (`audit`).
    audited: Arc<std::collections::HashSet<&'static str>>,
}

/// The content a runtime serves against the content its shared store records.
#[derive(Default)]
struct ContentWatch {
    expected: std::sync::RwLock<Option<String>>,
    /// The content the database records when it is not `expected`.
    changed_to: std::sync::RwLock<Option<String>>,
}

impl ContentWatch {
    /// Compares what the database records with what this runtime serves.
    fn check(&self, recorded: Option<String>) {
        let expected = self.expected.read().ok().and_then(|e| e.clone());
        let differs = match (&expected, &recorded) {
            (Some(e), Some(r)) => e != r,
            _ => false,
        };
        if let Ok(mut c) = self.changed_to.write() {
            *c = if differs { recorded } else { None };
        }
    }
}

/// Called with every change notice from another runtime (`Store::on_remote_change`).
pub type RemoteHook = Arc<dyn Fn(&pg::Notice) + Send + Sync>;

/// The clinical write lock, held; releasing it lets a gathering flush go on. On
/// PostgreSQL it is also held across runtimes (`pg::Lock::Clinical`).
pub struct ClinicalWriteGuard<'a> {
    _shared: Option<pg::HeldLock>,
    _guard: Option<std::sync::MutexGuard<'a, ()>>,
    commits: &'a group_commit::GroupCommit,
}

impl Drop for ClinicalWriteGuard<'_> {
    fn drop(&mut self) {
        group_commit::holding_lock(false);
        CLINICAL_LOCK_MISSING.set(false);
        self._shared.take();
        self._guard.take();
        self.commits.leave();
    }
}

thread_local! {
    /// Raised while this thread runs a read-check-write sequence whose lock could not be
    /// taken across runtimes (the database unreachable): its writes are refused, since
    /// another runtime could interleave with it.
    static CLINICAL_LOCK_MISSING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The tables the audit trail records: every domain record table but the trail's own, and
/// the store's patients, users and settings.
fn audited_tables(registry: &Registry) -> std::collections::HashSet<&'static str> {
    registry
        .records
        .iter()
        .map(|t| t.name)
        .filter(|name| *name != audit::RECORDS.name)
        .chain(["patients", "users", "settings"])
        .collect()
}

/// Decoded records of one table, kept because requests read them far more often than the
/// API writes them (every authenticated request reads its user; searches read a setting).
/// This process is the store's only writer, so each write to the table empties its cache;
/// `generation` keeps a read that began before such a write from putting a stale record
/// back. `None` records that the store has no value (settings are mostly the content's).
struct ReadCache<V> {
    state: std::sync::RwLock<ReadCacheState<V>>,
}

struct ReadCacheState<V> {
    generation: u64,
    entries: std::collections::HashMap<String, Option<Arc<V>>>,
}

/// Enough for every user and setting of a facility; past it the cache starts over.
const READ_CACHE_LIMIT: usize = 10_000;

impl<V> Default for ReadCache<V> {
    fn default() -> Self {
        ReadCache {
            state: std::sync::RwLock::new(ReadCacheState {
                generation: 0,
                entries: std::collections::HashMap::new(),
            }),
        }
    }
}

impl<V> ReadCache<V> {
    fn generation(&self) -> u64 {
        self.state.read().map(|s| s.generation).unwrap_or(u64::MAX)
    }

    /// `Some(found)` when the key is cached (`found` is `None` for a known absence).
    fn get(&self, key: &str) -> Option<Option<Arc<V>>> {
        self.state.read().ok()?.entries.get(key).cloned()
    }

    fn remember(&self, read_at: u64, key: &str, value: Option<&Arc<V>>) {
        if let Ok(mut s) = self.state.write()
            && s.generation == read_at
        {
            if s.entries.len() >= READ_CACHE_LIMIT {
                s.entries.clear();
            }
            s.entries.insert(key.to_string(), value.cloned());
        }
    }

    fn invalidate(&self) {
        let mut s = match self.state.write() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        s.generation += 1;
        s.entries.clear();
    }
}

/// Writes a user and its username and system-id keys.
fn write_user(txn: &WriteTransaction, user: &UserRecord) -> StoreResult<()> {
    txn.open_table(USERS)?
        .insert(user.uuid.as_str(), encode(user).as_slice())?;
    let mut names = txn.open_table(USERNAMES)?;
    names.insert(user.username.to_lowercase().as_str(), user.uuid.as_str())?;
    if !user.system_id.is_empty() {
        names.insert(user.system_id.to_lowercase().as_str(), user.uuid.as_str())?;
    }
    Ok(())
}

/// Writes a patient's record and its search projection.
fn write_patient(txn: &WriteTransaction, p: &PatientRecord) -> StoreResult<()> {
    let mut table = txn.open_table(PATIENTS)?;
    let before = table
        .get(p.uuid.as_str())?
        .map(|v| updated_entry(v.value()))
        .transpose()?;
    table.insert(p.uuid.as_str(), encode(p).as_slice())?;
    drop(table);
    let mut by_updated = txn.open_table(PATIENTS_BY_UPDATED)?;
    if let Some((old, _)) = before {
        by_updated.remove(old.as_str())?;
    }
    let (key, flags) = updated_entry_of(p);
    by_updated.insert(key.as_str(), flags)?;
    drop(by_updated);
    txn.open_table(PATIENT_SEARCH)?.insert(
        p.uuid.as_str(),
        crate::store::projection::projection(p).as_slice(),
    )?;
    Ok(())
}

/// What a patient's `patients_by_updated` entry needs of her record.
#[derive(Deserialize)]
struct UpdatedStamps {
    uuid: String,
    #[serde(default)]
    date_created: String,
    #[serde(default)]
    changed: Option<(String, String)>,
    #[serde(default)]
    voided: bool,
}

impl UpdatedStamps {
    /// `all|<when she last changed, key form>|uuid`, and the flags (1: voided).
    fn entry(&self) -> (String, u8) {
        let when = self
            .changed
            .as_ref()
            .map_or(self.date_created.as_str(), |(_, at)| at.as_str());
        // Written in several forms over the years (RFC 3339 with nanoseconds, key form):
        // the key form, so that the index sorts by time.
        let when = crate::wire::parse_datetime(when)
            .map(crate::wire::datetime_key)
            .unwrap_or_else(|| when.to_string());
        (
            record::key(&["all", &when, &self.uuid]),
            u8::from(self.voided),
        )
    }
}

/// When a patient last changed, in key form (`wire::datetime_key`): what her
/// `meta.lastUpdated` says and `patients_by_updated` sorts by.
pub fn patient_last_updated(p: &PatientRecord) -> String {
    let (key, _) = updated_entry_of(p);
    key.split('|').nth(1).unwrap_or_default().to_string()
}

/// A stored patient's `patients_by_updated` entry, from her record's bytes.
fn updated_entry(bytes: &[u8]) -> StoreResult<(String, u8)> {
    Ok(decode::<UpdatedStamps>("patients", bytes)?.entry())
}

/// A patient's `patients_by_updated` entry: as `meta.lastUpdated` says, her last change
/// or else her registration.
fn updated_entry_of(p: &PatientRecord) -> (String, u8) {
    UpdatedStamps {
        uuid: p.uuid.clone(),
        date_created: p.date_created.clone(),
        changed: p.changed.clone(),
        voided: p.voided,
    }
    .entry()
}

/// Writes `patients_by_updated` anew from the records (an upgrade from before version 6).
fn rebuild_patients_by_updated(txn: &WriteTransaction) -> StoreResult<()> {
    txn.delete_table(PATIENTS_BY_UPDATED)?;
    let mut by_updated = txn.open_table(PATIENTS_BY_UPDATED)?;
    for row in txn.open_table(PATIENTS)?.iter()? {
        let (_, v) = row?;
        let (key, flags) = updated_entry(v.value())?;
        by_updated.insert(key.as_str(), flags)?;
    }
    Ok(())
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("records serialize")
}

fn decode<T: for<'a> Deserialize<'a>>(table: &'static str, bytes: &[u8]) -> StoreResult<T> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        table,
        detail: e.to_string(),
    })
}

/// The key under which an identifier's uniqueness is recorded, or `None` when its type
/// allows duplicates.
pub fn identifier_key(
    type_uuid: &str,
    uniqueness: Option<model::UniquenessBehavior>,
    location: Option<&str>,
    identifier: &str,
) -> Option<String> {
    match uniqueness {
        Some(model::UniquenessBehavior::NonUnique) => None,
        Some(model::UniquenessBehavior::Location) => Some(format!(
            "{type_uuid}|{}|{identifier}",
            location.unwrap_or("")
        )),
        _ => Some(format!("{type_uuid}||{identifier}")),
    }
}

/// Makes every earlier commit on `db` durable: an empty durable transaction. Each durable
/// commit also records redb's allocator state, so that opening the store after a crash or
/// a power cut (frequent at a facility) takes milliseconds rather than a walk over every
/// page of years of data.
fn flush(db: &Database) -> StoreResult<()> {
    let mut txn = db.begin_write()?;
    txn.set_quick_repair(true);
    txn.commit()?;
    Ok(())
}

fn noted(health: &WriteHealth, e: StoreError) -> StoreError {
    match e {
        StoreError::Unwritable(f) => StoreError::Unwritable(health.record(&f)),
        other => other,
    }
}

impl Store {
    /// Opens the store file, checking its schema version; a missing file starts a new
    /// store, an empty or unreadable one is refused as damaged (`medium::open_file`).
    pub fn open(path: &Path, registry: &'static Registry) -> StoreResult<Store> {
        let medium = Medium::File(path.to_path_buf());
        let db = medium.open()?;
        Store::init(db, medium, registry).map_err(|e| match e {
            StoreError::Redb(detail) | StoreError::Corrupt { detail, .. } => StoreError::Damaged {
                path: path.to_path_buf(),
                detail,
            },
            other => other,
        })
    }

    /// The domains' tables and hooks this store was opened with.
    pub fn registry(&self) -> &'static Registry {
        self.registry
    }

    /// A store in memory, for tests.
    pub fn in_memory(registry: &'static Registry) -> StoreResult<Store> {
        let db = Database::builder().create_with_backend(redb::backends::InMemoryBackend::new())?;
        Store::init(db, Medium::Memory, registry)
    }

    /// A store on a storage layer the caller provides (tests inject faults with one).
    pub fn on_medium(custom: CustomMedium, registry: &'static Registry) -> StoreResult<Store> {
        let medium = Medium::Custom(custom);
        let db = medium.open()?;
        Store::init(db, medium, registry)
    }

    fn init(db: Database, medium: Medium, registry: &'static Registry) -> StoreResult<Store> {
        Store::init_on(Some(db), None, medium, registry)
    }

    /// The store in a PostgreSQL database, in `schema` (created if missing): several
    /// runtimes may open the same one (`store::pg`). Tables are created, and the schema
    /// version checked and recorded, in one write transaction, so runtimes starting
    /// together do it one at a time.
    pub fn connect(url: &str, schema: &str, registry: &'static Registry) -> StoreResult<Store> {
        Store::connect_with(url, None, schema, registry)
    }

    /// `connect`, with the password apart from the URL.
    pub fn connect_with(
        url: &str,
        password: Option<&str>,
        schema: &str,
        registry: &'static Registry,
    ) -> StoreResult<Store> {
        let engine = pg::Engine::connect(url, password, schema)?;
        let store = Store::init_on(None, Some(engine.clone()), Medium::Server, registry)?;
        let (by_uuid, by_name, settings, patients) = (
            store.users_by_uuid.clone(),
            store.users_by_name.clone(),
            store.settings.clone(),
            store.patients.clone(),
        );
        let (count, hooks) = (store.commit_count.clone(), store.remote_hooks.clone());
        let (content, weak) = (store.content.clone(), Arc::downgrade(&engine));
        engine.listen(Arc::new(move |notice: pg::Notice| {
            let touches = |names: &[&str]| match &notice {
                pg::Notice::Lost => true,
                pg::Notice::Changed(t) => names.iter().any(|n| t.contains_key(*n)),
            };
            if touches(&["users", "usernames"]) {
                by_uuid.invalidate();
                by_name.invalidate();
            }
            if touches(&["settings"]) {
                settings.invalidate();
            }
            if touches(&["patients"]) {
                patients.invalidate();
            }
            if touches(&["meta"])
                && let Some(engine) = weak.upgrade()
            {
                // Another runtime reloaded or upgraded the content.
                let recorded = pg::Txn::read(&engine).and_then(|txn| {
                    let bytes = txn.table("meta")?.get(SERVED_CONTENT.as_bytes())?;
                    Ok(bytes.map(|b| String::from_utf8_lossy(&b).into_owned()))
                });
                match recorded {
                    Ok(r) => content.check(r),
                    Err(e) => tracing::warn!("the database's content could not be read: {e}"),
                }
            }
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            for hook in hooks.read().map(|h| h.clone()).unwrap_or_default() {
                hook(&notice);
            }
        }));
        Ok(store)
    }

    /// Records the content this runtime serves (its start, a reload): on a shared store, a
    /// change of the database's content by another runtime is then noticed.
    pub fn expect_content(&self, hash: &str) {
        if let Ok(mut e) = self.content.expected.write() {
            *e = Some(hash.to_string());
        }
        if let Ok(mut c) = self.content.changed_to.write() {
            *c = None;
        }
    }

    /// The content the shared database was given by another runtime, when it is not the
    /// one this runtime serves: its writes are refused until it is started again with it.
    pub fn content_changed_to(&self) -> Option<String> {
        self.content.changed_to.read().ok().and_then(|c| c.clone())
    }

    /// Whether other runtimes may share this store (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        self.pg.is_some()
    }

    /// The PostgreSQL engine, when the store lives there.
    pub fn server(&self) -> Option<&Arc<pg::Engine>> {
        self.pg.as_ref()
    }

    /// Tells the other runtimes sharing this store of `keys` of `topic`, something kept in
    /// memory rather than stored (`pg::Engine::announce`); nothing to do on redb.
    pub fn announce(&self, topic: &str, keys: &[String]) -> StoreResult<()> {
        match &self.pg {
            Some(pg) => pg.announce(topic, keys),
            None => Ok(()),
        }
    }

    /// Calls `hook` with each change another runtime makes (never on redb, which has one
    /// process): what the runtime keeps in memory beside the store (sessions, the patient
    /// search index, roles) refreshes itself there.
    pub fn on_remote_change(&self, hook: RemoteHook) {
        if let Ok(mut hooks) = self.remote_hooks.write() {
            hooks.push(hook);
        }
    }

    fn init_on(
        db: Option<Database>,
        pg: Option<Arc<pg::Engine>>,
        medium: Medium,
        registry: &'static Registry,
    ) -> StoreResult<Store> {
        let store = Store {
            db: arc_swap::ArcSwapOption::new(db.map(Arc::new)),
            medium,
            health: Arc::default(),
            commits: Arc::default(),
            clinical_writes: std::sync::Mutex::new(()),
            users_by_uuid: Arc::default(),
            users_by_name: Arc::default(),
            settings: Arc::default(),
            patients: Arc::default(),
            commit_count: Default::default(),
            pg,
            remote_hooks: Arc::default(),
            content: Arc::default(),
            registry,
            audited: Arc::new(audited_tables(registry)),
        };
        let schema = medium::catch_panic(|| {
            store.write(|txn| {
                // Create every table so reads never meet a missing one.
                let mut meta = txn.open_table(META)?;
                txn.open_table(PATIENTS)?;
                txn.open_table(PATIENT_SEARCH)?;
                txn.open_table(PATIENTS_BY_UPDATED)?;
                txn.open_table(IDENTIFIERS)?;
                txn.open_table(USERS)?;
                txn.open_table(USERNAMES)?;
                txn.open_table(SETTINGS)?;
                txn.open_table(COUNTERS)?;
                txn.open_table(SESSIONS)?;
                for table in store.registry.records {
                    (table.create)(txn)?;
                }
                let found = meta
                    .get("schema_version")?
                    .map(|v| v.value().parse::<u32>().unwrap_or(u32::MAX));
                match found {
                    Some(v) if v > SCHEMA_VERSION => Err(StoreError::TooNew {
                        found: v,
                        supported: SCHEMA_VERSION,
                    }),
                    Some(v) if v == SCHEMA_VERSION => Ok(()),
                    Some(older) => {
                        // Marked with the new version at once, so that an older runtime
                        // refuses it from now on (the upgrade's first batches write what
                        // it cannot read); the upgrade itself follows in batches
                        // (`finish_upgrade`), and resumes there after an interruption.
                        let from = meta
                            .get(UPGRADING_FROM)?
                            .and_then(|v| v.value().parse::<u32>().ok())
                            .map_or(older, |earlier| earlier.min(older));
                        meta.insert(UPGRADING_FROM, from.to_string().as_str())?;
                        meta.insert("schema_version", SCHEMA_VERSION.to_string().as_str())?;
                        // An upgrade an older build began and did not end placed its
                        // cursors for its own passes, which wrote less than this build's:
                        // the passes start again from the first record (they are
                        // idempotent), so no record keeps only the older build's entries.
                        for table in store.registry.records {
                            meta.remove(format!("upgrade_cursor:{}", table.name).as_str())?;
                        }
                        Ok(())
                    }
                    None => {
                        meta.insert("schema_version", SCHEMA_VERSION.to_string().as_str())?;
                        Ok(())
                    }
                }
            })
        });
        match schema {
            Ok(result) => result?,
            Err(panic) => return Err(StoreError::Redb(panic)),
        }
        match medium::catch_panic(|| store.finish_upgrade()) {
            Ok(result) => result?,
            Err(panic) => return Err(StoreError::Redb(panic)),
        }
        Ok(store)
    }

    /// Finishes the upgrade of a store written by an older version (`UPGRADING_FROM`): the
    /// tables whose stored form or indexes changed since are walked in batches, each its
    /// own commit, with the place reached committed with it (`upgrade_cursor:<table>`),
    /// so an interrupted upgrade resumes where it stopped and a store of millions of
    /// records is never rewritten in one transaction; then the indexes no longer used are
    /// dropped and the mark removed. A progress line every hundred thousand records.
    fn finish_upgrade(&self) -> StoreResult<()> {
        let Some(from) = self.meta(UPGRADING_FROM)? else {
            return Ok(());
        };
        let from: u32 = from.parse().unwrap_or(0);
        let registry = self.registry;
        // Each table once, however many versions since changed it; recoding reindexes too.
        let mut tables: Vec<(&RecordTable, bool)> = Vec::new();
        for (recode, list) in [
            (true, registry.recoded_since),
            (false, registry.reindexed_since),
        ] {
            for (since, table) in list {
                if from < *since && !tables.iter().any(|(t, _)| t.name == table.name) {
                    tables.push((table, recode));
                }
            }
        }
        for (table, recode) in tables {
            let cursor_key = format!("upgrade_cursor:{}", table.name);
            let total = {
                let txn = self.begin_read()?;
                txn.open_table(table.table)?.len()?
            };
            let mut done = 0u64;
            loop {
                // Unaudited: the records are the same records, stored again.
                let step = self.write_unaudited(|txn| {
                    let meta = txn.open_table(META)?;
                    if meta.get(UPGRADING_FROM)?.is_none() {
                        // Another runtime finished it.
                        return Ok(None);
                    }
                    let after = meta
                        .get(cursor_key.as_str())?
                        .map(|v| v.value().to_string());
                    drop(meta);
                    let step = record::upgrade_batch(txn, table, after.as_deref(), recode)?;
                    if let Some((last, _)) = &step {
                        txn.open_table(META)?
                            .insert(cursor_key.as_str(), last.as_str())?;
                    }
                    Ok(step)
                })?;
                let Some((_, n)) = step else { break };
                let before = done;
                done += n;
                if done / 100_000 != before / 100_000 || done == total {
                    tracing::info!(
                        table = table.name,
                        records = done,
                        of = total,
                        "upgrading the store to version {SCHEMA_VERSION}"
                    );
                }
            }
        }
        if from < 6 {
            // A hundred thousand patients' small entries: one commit.
            tracing::info!(
                "upgrading the store to version {SCHEMA_VERSION}: patients by last change"
            );
            self.write_unaudited(rebuild_patients_by_updated)?;
        }
        self.write_unaudited(|txn| {
            for (since, index) in registry.dropped_since {
                if from < *since {
                    txn.drop_table(*index)?;
                }
            }
            let mut meta = txn.open_table(META)?;
            for table in registry.records {
                meta.remove(format!("upgrade_cursor:{}", table.name).as_str())?;
            }
            meta.remove(UPGRADING_FROM)?;
            Ok(())
        })
    }

    fn database(&self) -> StoreResult<Arc<Database>> {
        self.db.load_full().ok_or_else(|| {
            StoreError::Unwritable(self.health.failure().unwrap_or_else(WriteFailure::latched))
        })
    }

    /// How many writes have committed since the store was opened (see `commit_count`).
    pub fn commit_count(&self) -> u64 {
        self.commit_count.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A read transaction (reads keep working while writes fail).
    pub fn begin_read(&self) -> StoreResult<ReadTransaction> {
        if let Some(pg) = &self.pg {
            return Ok(ReadTransaction::Pg(pg::Txn::read(pg)?));
        }
        Ok(ReadTransaction::Redb(self.database()?.begin_read()?))
    }

    /// Runs `f` in one write transaction and commits it durably; any error leaves nothing
    /// written. A write that fails for lack of space or an I/O error marks the store
    /// unwritable (see `medium`); while it is, each write first tries to recover.
    ///
    /// Inside `group_commit::durable_after` the wait for the disk is left to the caller
    /// (after its locks are released); elsewhere this returns once the commit is durable.
    pub fn write<T>(&self, f: impl FnOnce(&WriteTransaction) -> StoreResult<T>) -> StoreResult<T> {
        self.write_as(true, f)
    }

    /// A write that the audit trail does not record: a restore, which puts back records
    /// (and their entries) as they were.
    pub fn write_unaudited<T>(
        &self,
        f: impl FnOnce(&WriteTransaction) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.write_as(false, f)
    }

    /// Runs `f`, then (when `audited`) records in the same transaction what it changed in
    /// the audited tables (`audit::record`).
    /// Answers too whether patient records may have been written (an unaudited write is
    /// not watched, so it may have).
    fn run_audited<T>(
        &self,
        audited: bool,
        txn: &WriteTransaction,
        f: impl FnOnce(&WriteTransaction) -> StoreResult<T>,
    ) -> StoreResult<(T, bool)> {
        if !audited {
            return Ok((f(txn)?, true));
        }
        let capture = kv::capture(self.audited.clone());
        let out = f(txn)?;
        let touched = capture.finish();
        let patients_written = touched.contains_key("patients");
        if !touched.is_empty() {
            // Begun while `txn` runs, which holds the only write slot: the last commit,
            // hence the values before `f`.
            let before = self.begin_read()?;
            audit::record(txn, &before, touched, |table| self.as_json(table))?;
        }
        Ok((out, patients_written))
    }

    /// How the audit reads the values of an audited table.
    fn as_json(&self, table: &str) -> Option<audit::ToJson> {
        fn plain(bytes: &[u8]) -> Result<serde_json::Value, String> {
            serde_json::from_slice(bytes).map_err(|e| e.to_string())
        }
        if !self.audited.contains(table) {
            return None;
        }
        match table {
            "patients" | "users" | "settings" => Some(plain),
            _ => self
                .registry
                .records
                .iter()
                .find(|t| t.name == table)
                .map(|t| t.codec.to_json),
        }
    }

    fn write_as<T>(
        &self,
        audited: bool,
        f: impl FnOnce(&WriteTransaction) -> StoreResult<T>,
    ) -> StoreResult<T> {
        if let Some(pg) = &self.pg {
            if CLINICAL_LOCK_MISSING.get() {
                return Err(StoreError::Unavailable(
                    "the clinical write lock could not be taken".into(),
                ));
            }
            if let Some(other) = self.content_changed_to() {
                return Err(StoreError::Unavailable(format!(
                    "another runtime gave the database the content {other}: this runtime's content is older; start it again with that content"
                )));
            }
            let txn = WriteTransaction::Pg(pg::Txn::write(pg)?);
            let (out, patients_written) = self.run_audited(audited, &txn, f)?;
            let WriteTransaction::Pg(txn) = txn else {
                unreachable!("made above")
            };
            txn.commit()?;
            if patients_written {
                self.patients.invalidate();
            }
            self.commit_count
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Ok(out);
        }
        if self.health.failed() && !self.try_recover() {
            return Err(self.noted(StoreError::Unwritable(WriteFailure::latched())));
        }
        let db = self.database()?;
        let mut txn = db.begin_write().map_err(|e| self.noted(e.into()))?;
        txn.set_durability(redb::Durability::None)
            .map_err(|e| StoreError::Redb(e.to_string()))?;
        let txn = WriteTransaction::Redb(txn);
        let (out, patients_written) = self
            .run_audited(audited, &txn, f)
            .map_err(|e| self.noted(e))?;
        let WriteTransaction::Redb(txn) = txn else {
            unreachable!("made above")
        };
        let seq = self.commits.assign();
        txn.commit().map_err(|e| self.noted(e.into()))?;
        if patients_written {
            self.patients.invalidate();
        }
        self.commit_count
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let pending = group_commit::Pending {
            seq,
            wait: group_commit::waiter(self.commits.clone(), {
                let health = self.health.clone();
                move || flush(&db).map_err(|e| noted(&health, e))
            }),
        };
        if let Some(pending) = group_commit::defer(pending) {
            pending.wait()?;
        }
        Ok(out)
    }

    /// Records an I/O failure in the write health; answers the error with the first
    /// failure's cause.
    fn noted(&self, e: StoreError) -> StoreError {
        noted(&self.health, e)
    }

    /// Why the store cannot write, or `None` when it can.
    pub fn write_failure(&self) -> Option<WriteFailure> {
        self.health.failure()
    }

    /// After a failed write: when the medium has room again (checked at most once per
    /// `medium::RECOVERY_INTERVAL`), opens the file again (redb needs it after an I/O
    /// failure) and proves it with a small write. Returns whether the store can write.
    pub fn try_recover(&self) -> bool {
        if !self.health.failed() {
            return true;
        }
        if matches!(self.medium, Medium::Memory | Medium::Server)
            || !self.medium.has_room()
            || !self.health.attempt_due()
        {
            return false;
        }
        // The old database must be closed before the file can be opened again; a write
        // transaction still running on it delays that, hence the few retries.
        drop(self.db.swap(None));
        let mut opened = self.medium.open();
        for _ in 0..50 {
            match &opened {
                Err(StoreError::Redb(m)) if m.contains("already open") => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    opened = self.medium.open();
                }
                _ => break,
            }
        }
        match opened {
            Ok(db) => {
                self.db.store(Some(Arc::new(db)));
                self.commit_count
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            Err(e) => {
                tracing::error!("the store file cannot be opened again yet: {e}");
                return false;
            }
        }
        let probe = (|| -> StoreResult<()> {
            let txn = self.database()?.begin_write()?;
            txn.open_table(META.redb())?
                .insert("write_probe", chrono::Utc::now().to_rfc3339().as_str())?;
            txn.commit()?;
            Ok(())
        })();
        match probe {
            Ok(()) => {
                self.health.clear();
                true
            }
            Err(e) => {
                tracing::warn!("the store still cannot write: {e}");
                false
            }
        }
    }

    /// Where a backup's temporary snapshot is written (beside the store file).
    pub fn scratch_dir(&self) -> PathBuf {
        self.medium.scratch_dir()
    }

    /// Held by a clinical read-check-write sequence (see `clinical_writes`). While it is
    /// held or awaited, flushes wait for its holder's commit (`group_commit`).
    pub fn write_lock(&self) -> ClinicalWriteGuard<'_> {
        self.commits.enter();
        let guard = match self.clinical_writes.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        group_commit::holding_lock(true);
        let shared = self
            .pg
            .as_ref()
            .and_then(|pg| match pg.hold(pg::Lock::Clinical) {
                Ok(held) => Some(held),
                Err(e) => {
                    tracing::warn!("the clinical write lock cannot be taken: {e}");
                    CLINICAL_LOCK_MISSING.set(true);
                    None
                }
            });
        ClinicalWriteGuard {
            _shared: shared,
            _guard: Some(guard),
            commits: &self.commits,
        }
    }

    pub fn meta(&self, key: &str) -> StoreResult<Option<String>> {
        let txn = self.begin_read()?;
        let t = txn.open_table(META)?;
        Ok(t.get(key)?.map(|v| v.value().to_string()))
    }

    pub fn set_meta(&self, key: &str, value: &str) -> StoreResult<()> {
        self.write(|txn| {
            txn.open_table(META)?.insert(key, value)?;
            Ok(())
        })
    }

    /// Empties the user caches after users were written.
    fn forget_users(&self) {
        self.users_by_uuid.invalidate();
        self.users_by_name.invalidate();
        self.count_cache_change();
    }

    /// A cache of decoded records was emptied after its write committed: answers rendered
    /// from it in between (`answer_cache`) must not outlive it, so the count moves again.
    fn count_cache_change(&self) {
        self.commit_count
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    // Identifier generators.

    /// The next value of a generator's counter (0 first), durably.
    pub fn next_counter(&self, source: &str) -> StoreResult<u64> {
        self.write(|txn| next_counter_in(txn, source))
    }
}

/// The next value of a counter (0 first), in the caller's transaction: what it numbers is
/// written in the same commit, so a number is never given twice nor lost.
pub fn next_counter_in(txn: &WriteTransaction, name: &str) -> StoreResult<u64> {
    let mut t = txn.open_table(COUNTERS)?;
    let current = t.get(name)?.map_or(0, |v| v.value());
    t.insert(name, current + 1)?;
    Ok(current)
}

/// Makes a counter give at least `used` next (numbers from it are its value + 1, so the
/// number `used` is never given again): a restore rebuilding records keeps it ahead.
pub fn raise_counter_in(txn: &WriteTransaction, name: &str, used: u64) -> StoreResult<()> {
    let mut t = txn.open_table(COUNTERS)?;
    let current = t.get(name)?.map_or(0, |v| v.value());
    if current < used {
        t.insert(name, used)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patient(uuid: &str) -> PatientRecord {
        let mut p = PatientRecord::for_test(uuid, "", "");
        p.names.clear();
        p
    }

    fn named(uuid: &str, given: &str) -> PatientRecord {
        PatientRecord::for_test(uuid, given, "Mbuyi")
    }

    fn by_updated(s: &Store) -> Vec<(String, u8)> {
        let txn = s.begin_read().unwrap();
        let t = txn.open_table(PATIENTS_BY_UPDATED).unwrap();
        t.iter()
            .unwrap()
            .map(|row| {
                let (k, v) = row.unwrap();
                (k.value().to_string(), v.value())
            })
            .collect()
    }

    #[test]
    fn every_patient_write_moves_her_entry_by_last_change() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let mut a = named("a", "Marie");
        a.date_created = "2026-11-01T08:00:00.000Z".into();
        let mut b = named("b", "Anne");
        // A change written as `chrono`'s RFC 3339 sorts by its time, not its text.
        b.date_created = "2026-11-02T08:00:00.000Z".into();
        s.insert_patient(&a, &[]).unwrap();
        s.import_patients(&[(b.clone(), vec![])]).unwrap();
        assert_eq!(
            by_updated(&s),
            vec![
                ("all|2026-11-01T08:00:00.000Z|a".into(), 0),
                ("all|2026-11-02T08:00:00.000Z|b".into(), 0)
            ]
        );
        a.changed = Some(("admin".into(), "2026-11-03T09:30:00.5+00:00".into()));
        s.replace_patient(&a, &[], &[]).unwrap();
        b.voided = true;
        s.update_patient(&b).unwrap();
        assert_eq!(
            by_updated(&s),
            vec![
                ("all|2026-11-02T08:00:00.000Z|b".into(), 1),
                ("all|2026-11-03T09:30:00.500Z|a".into(), 0)
            ]
        );
        let window = record::Window {
            start: 0,
            limit: 10,
            count_all: true,
        };
        let page = s
            .patients_updated_between(Some("2026-11-02"), None, window, |_, _| Ok(true))
            .unwrap();
        assert_eq!(page.uuids, ["a"], "the voided one is left out");
        let page = s
            .patients_updated_between(None, Some("2026-11-03T09:30:00.499Z"), window, |_, _| {
                Ok(true)
            })
            .unwrap();
        assert!(page.uuids.is_empty());
        s.purge_patient("a").unwrap();
        assert_eq!(by_updated(&s).len(), 1);
        // A backup restored elsewhere has its entries too.
        let mut backup = Vec::new();
        s.snapshot(&mut backup).unwrap();
        let restored = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        restored.restore(std::io::Cursor::new(backup)).unwrap();
        assert_eq!(by_updated(&restored), by_updated(&s));
    }

    #[test]
    fn a_version_5_store_gets_its_patients_by_last_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            let mut a = named("a", "Marie");
            a.date_created = "2026-11-01T08:00:00.000Z".into();
            s.insert_patient(&a, &[]).unwrap();
            // As version 5 left it: no entry.
            s.write(|txn| txn.delete_table(PATIENTS_BY_UPDATED).map(drop))
                .unwrap();
            s.set_meta("schema_version", "5").unwrap();
        }
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(s.meta("upgrading_from").unwrap(), None);
        assert_eq!(
            by_updated(&s),
            vec![("all|2026-11-01T08:00:00.000Z|a".into(), 0)]
        );
        drop(s);
        let report = check::check_store(&path, &crate::domains::REGISTRY).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }

    fn stored_projections(s: &Store) -> BTreeMap<String, Vec<u8>> {
        let txn = s.begin_read().unwrap();
        let t = txn.open_table(PATIENT_SEARCH).unwrap();
        t.iter()
            .unwrap()
            .map(|row| {
                let (k, v) = row.unwrap();
                (k.value().to_string(), v.value().to_vec())
            })
            .collect()
    }

    fn projections_of(patients: &[&PatientRecord]) -> BTreeMap<String, Vec<u8>> {
        patients
            .iter()
            .map(|p| (p.uuid.clone(), crate::store::projection::projection(p)))
            .collect()
    }

    #[test]
    fn every_patient_write_keeps_the_patients_search_projection() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let (a, b) = (named("a", "Hélène"), named("b", "Jean"));
        s.insert_patient(&a, &[]).unwrap();
        assert_eq!(stored_projections(&s), projections_of(&[&a]));
        s.import_patients(&[(b.clone(), vec![])]).unwrap();
        assert_eq!(stored_projections(&s), projections_of(&[&a, &b]));
        let renamed = named("a", "Grâce");
        s.replace_patient(&renamed, &[], &[]).unwrap();
        assert_eq!(stored_projections(&s), projections_of(&[&renamed, &b]));
        let mut voided = b.clone();
        voided.voided = true;
        s.update_patient(&voided).unwrap();
        assert_eq!(stored_projections(&s), projections_of(&[&renamed, &voided]));
        s.purge_patient("a").unwrap();
        assert_eq!(stored_projections(&s), projections_of(&[&voided]));
    }

    #[test]
    fn the_search_index_reads_projections_and_rebuilds_missing_ones_once() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let (a, b) = (named("a", "Hélène"), named("b", "Jean"));
        s.insert_patient(&a, &[]).unwrap();
        s.insert_patient(&b, &[]).unwrap();
        // What is handed over is the projection, not the record: a projection written
        // with another name is what comes out.
        let other = crate::store::projection::projection(&named("a", "Autre"));
        s.write(|txn| {
            txn.open_table(PATIENT_SEARCH)?
                .insert("a", other.as_slice())?;
            Ok(())
        })
        .unwrap();
        let mut seen = Vec::new();
        s.scan_patient_search(|bytes| {
            seen.push(bytes.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [other, crate::store::projection::projection(&b)]);
        // One missing (a store written before projections existed, in part): the whole
        // table is rebuilt from the records, and kept.
        s.write(|txn| {
            txn.open_table(PATIENT_SEARCH)?.remove("b")?;
            Ok(())
        })
        .unwrap();
        let mut count = 0;
        s.scan_patient_search(|_| {
            count += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(count, 2);
        assert_eq!(stored_projections(&s), projections_of(&[&a, &b]));
    }

    #[test]
    fn the_dead_are_listed_from_projections_or_records() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let mut dead = named("a", "Hélène");
        dead.dead = true;
        // A living patient whose name spells what a dead one's projection holds.
        let living = named("b", r#""dead":true"#);
        let mut voided = named("c", "Jean");
        voided.dead = true;
        voided.voided = true;
        for p in [&dead, &living, &voided] {
            s.insert_patient(p, &[]).unwrap();
        }
        let listed = |s: &Store| Store::dead_patient_uuids_in(&s.begin_read().unwrap()).unwrap();
        assert_eq!(listed(&s), ["a"]);
        // Projections incomplete (an older store before their rebuild): the records say.
        s.write(|txn| {
            txn.open_table(PATIENT_SEARCH)?.remove("a")?;
            Ok(())
        })
        .unwrap();
        assert_eq!(listed(&s), ["a"]);
    }

    #[test]
    fn unique_identifiers_are_refused_twice() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let keys = vec![("t||100".to_string(), "100".to_string())];
        s.insert_patient(&patient("a"), &keys).unwrap();
        assert!(matches!(
            s.insert_patient(&patient("b"), &keys),
            Err(StoreError::IdentifierInUse(_))
        ));
        assert!(s.patient("b").unwrap().is_none());
        assert_eq!(s.patients().unwrap().len(), 1);
    }

    #[test]
    fn snapshots_restore_into_an_empty_store_only() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        s.insert_patient(&patient("a"), &[("t||1".into(), "1".into())])
            .unwrap();
        s.next_counter("src").unwrap();
        let mut snap = Vec::new();
        let n = s.snapshot(&mut snap).unwrap();
        assert!(n >= 4);
        let r = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        assert_eq!(r.restore(std::io::Cursor::new(&snap)).unwrap(), n);
        assert_eq!(r.patient("a").unwrap(), s.patient("a").unwrap());
        assert_eq!(r.next_counter("src").unwrap(), 1);
        // The unique identifier index came back too.
        assert!(matches!(
            r.insert_patient(&patient("b"), &[("t||1".into(), "1".into())]),
            Err(StoreError::IdentifierInUse(_))
        ));
        assert!(matches!(
            r.restore(std::io::Cursor::new(&snap)),
            Err(RestoreError::NotEmpty)
        ));
        let truncated = &snap[..snap.len() - 30];
        assert!(matches!(
            Store::in_memory(&crate::domains::REGISTRY)
                .unwrap()
                .restore(std::io::Cursor::new(truncated)),
            Err(RestoreError::Truncated | RestoreError::BadLine { .. })
        ));
        let empty = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        assert!(matches!(
            empty.restore(std::io::Cursor::new(b"hello\n")),
            Err(RestoreError::BadFormat(_))
        ));
        assert!(empty.is_empty().unwrap());
    }

    fn user(uuid: &str, username: &str) -> UserRecord {
        UserRecord {
            v: 1,
            uuid: uuid.into(),
            username: username.into(),
            system_id: String::new(),
            person_uuid: format!("{uuid}-person"),
            person_name: username.into(),
            password_hash: "not a hash".into(),
            roles: vec![],
            properties: BTreeMap::new(),
            retired: false,
            failed_logins: 0,
            locked_until: None,
            audit: None,
            retiring: None,
        }
    }

    #[test]
    fn patient_pages_see_every_write() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let page = |s: &Store| -> Vec<PatientRecord> {
            s.patients_in(&["b", "a", "missing"])
                .unwrap()
                .iter()
                .map(|p| (**p).clone())
                .collect()
        };
        let (a, b) = (named("a", "Hélène"), named("b", "Jean"));
        s.insert_patient(&a, &[]).unwrap();
        assert_eq!(page(&s), vec![a.clone()]);
        s.insert_patient(&b, &[]).unwrap();
        // Read twice: the second read comes from the cache, in the order asked.
        for _ in 0..2 {
            assert_eq!(page(&s), vec![b.clone(), a.clone()]);
        }
        let renamed = named("a", "Grâce");
        s.replace_patient(&renamed, &[], &[]).unwrap();
        assert_eq!(page(&s), vec![b.clone(), renamed.clone()]);
        let mut voided = b.clone();
        voided.voided = true;
        s.update_patient(&voided).unwrap();
        assert_eq!(page(&s), vec![voided.clone(), renamed.clone()]);
        s.purge_patient("a").unwrap();
        assert_eq!(page(&s), vec![voided.clone()]);
        // A write through the generic path (a merge's, a domain's) empties it too.
        let mut edited = voided.clone();
        edited.gender = "M".into();
        s.write(|txn| write_patient(txn, &edited)).unwrap();
        assert_eq!(page(&s), vec![edited.clone()]);
        // A restore too.
        let mut snap = Vec::new();
        s.snapshot(&mut snap).unwrap();
        let r = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        assert_eq!(page(&r), vec![]);
        r.restore(std::io::Cursor::new(&snap)).unwrap();
        assert_eq!(page(&r), vec![edited]);
    }

    #[test]
    fn user_reads_see_every_write() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        assert_eq!(s.user_by_username("Nadia").unwrap(), None);
        let mut nadia = user("u1", "nadia");
        s.put_user(&nadia).unwrap();
        // Read twice: the second read comes from the cache.
        for _ in 0..2 {
            assert_eq!(s.user_by_username("NADIA").unwrap().as_ref(), Some(&nadia));
            assert_eq!(s.user("u1").unwrap().as_ref(), Some(&nadia));
        }
        nadia.failed_logins = 3;
        nadia.properties.insert("defaultLocale".into(), "en".into());
        s.put_user(&nadia).unwrap();
        assert_eq!(s.user_by_username("nadia").unwrap().as_ref(), Some(&nadia));
        assert_eq!(s.user("u1").unwrap().as_ref(), Some(&nadia));

        let mut snap = Vec::new();
        s.snapshot(&mut snap).unwrap();
        let r = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        assert_eq!(r.user("u1").unwrap(), None, "a miss is not remembered");
        r.restore(std::io::Cursor::new(&snap)).unwrap();
        assert_eq!(r.user("u1").unwrap().as_ref(), Some(&nadia));
    }

    #[test]
    fn setting_reads_see_every_write_including_removals() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let record = |value: &str| SettingRecord {
            v: 1,
            property: "minSearchCharacters".into(),
            value: value.into(),
            description: None,
            base_fingerprint: String::new(),
        };
        // Read twice: the absence is remembered, and forgotten by the first write.
        for _ in 0..2 {
            assert_eq!(s.setting("minSearchCharacters").unwrap(), None);
        }
        s.put_setting(&record("3")).unwrap();
        for _ in 0..2 {
            assert_eq!(s.setting("minSearchCharacters").unwrap(), Some(record("3")));
        }
        s.put_setting(&record("4")).unwrap();
        assert_eq!(s.setting("minSearchCharacters").unwrap(), Some(record("4")));
        let mut snap = Vec::new();
        s.snapshot(&mut snap).unwrap();
        assert_eq!(
            s.remove_settings(&["minSearchCharacters".into()]).unwrap(),
            vec!["minSearchCharacters".to_string()]
        );
        assert_eq!(s.setting("minSearchCharacters").unwrap(), None);

        let r = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        assert_eq!(r.setting("minSearchCharacters").unwrap(), None);
        r.restore(std::io::Cursor::new(&snap)).unwrap();
        assert_eq!(r.setting("minSearchCharacters").unwrap(), Some(record("4")));
    }

    #[test]
    fn counters_never_repeat() {
        let s = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        assert_eq!(s.next_counter("src").unwrap(), 0);
        assert_eq!(s.next_counter("src").unwrap(), 1);
        assert_eq!(s.next_counter("other").unwrap(), 0);
    }

    #[test]
    fn an_older_store_is_marked_with_this_schema_once_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            s.set_meta("schema_version", "1").unwrap();
        }
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(
            s.meta("schema_version").unwrap(),
            Some(SCHEMA_VERSION.to_string())
        );
    }

    #[test]
    fn refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            s.set_meta("schema_version", "99").unwrap();
        }
        assert!(matches!(
            Store::open(&path, &crate::domains::REGISTRY),
            Err(StoreError::TooNew { found: 99, .. })
        ));
    }
}
