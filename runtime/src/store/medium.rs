//! The store's file and what can go wrong with it: how it is opened (and opened again after
//! an I/O failure), how a damaged file is told apart from a missing one, and the store's
//! write health.
//!
//! redb latches the first failed write (a full disk, an I/O error): every later write
//! transaction answers "previous I/O error" until the database is opened again, while
//! reads keep working. `WriteHealth` records that state for the health endpoint and the
//! API's 507/503 answers; `Store::try_recover` opens the file again once the medium has
//! room, and proves it with a small write.

use crate::store::StoreError;
use redb::{Database, DatabaseError};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Free space the data volume needs before the store tries to open its file again (the
/// open after a failed write repairs the file, which writes).
pub const ROOM_TO_RECOVER: u64 = 2 * 1024 * 1024;

/// How often a store that cannot write tries to open its file again.
pub const RECOVERY_INTERVAL: Duration = Duration::from_secs(1);

/// Why the store cannot write, since when.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteFailure {
    /// The volume is full (or the file hit a size or quota limit): 507 rather than 503.
    pub disk_full: bool,
    pub detail: String,
    /// RFC 3339.
    pub since: String,
}

impl WriteFailure {
    pub fn from_io(e: &std::io::Error) -> WriteFailure {
        use std::io::ErrorKind;
        // ENOSPC, EFBIG, EDQUOT: no room, whatever the kind the platform maps them to.
        let disk_full = matches!(
            e.kind(),
            ErrorKind::StorageFull | ErrorKind::FileTooLarge | ErrorKind::QuotaExceeded
        ) || matches!(e.raw_os_error(), Some(27 | 28 | 122));
        WriteFailure {
            disk_full,
            detail: e.to_string(),
            since: now(),
        }
    }

    pub fn latched() -> WriteFailure {
        WriteFailure {
            disk_full: false,
            detail: "an earlier write failed; the store opens its file again once it can".into(),
            since: now(),
        }
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Classifies a redb error: I/O failures make the store unwritable; a damaged file is
/// reported as such; anything else is a plain store error.
pub fn classify(e: redb::Error) -> StoreError {
    match e {
        redb::Error::Io(io) => StoreError::Unwritable(WriteFailure::from_io(&io)),
        redb::Error::PreviousIo => StoreError::Unwritable(WriteFailure::latched()),
        redb::Error::Corrupted(detail) => {
            StoreError::Redb(format!("the store file is damaged: {detail}"))
        }
        other => StoreError::Redb(other.to_string()),
    }
}

/// The store's write health. Reading it is one atomic load: every write and every health
/// probe asks.
#[derive(Default)]
pub struct WriteHealth {
    failed: AtomicBool,
    state: Mutex<HealthState>,
}

#[derive(Default)]
struct HealthState {
    failure: Option<WriteFailure>,
    last_attempt: Option<Instant>,
}

impl WriteHealth {
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    pub fn failure(&self) -> Option<WriteFailure> {
        if !self.failed() {
            return None;
        }
        self.lock().failure.clone()
    }

    /// Records a failure; keeps the first one's cause and time (a latched "previous I/O
    /// error" says less than the full disk that caused it).
    pub fn record(&self, failure: &WriteFailure) -> WriteFailure {
        let mut st = self.lock();
        let kept = st.failure.get_or_insert_with(|| failure.clone()).clone();
        if !self.failed.swap(true, Ordering::AcqRel) {
            tracing::error!(
                disk_full = kept.disk_full,
                detail = %kept.detail,
                "the store cannot write; it answers reads and retries writes once the volume has room"
            );
        }
        kept
    }

    pub fn clear(&self) {
        if self.failed.swap(false, Ordering::AcqRel) {
            self.lock().failure = None;
            tracing::info!("the store writes again");
        }
    }

    /// Whether a recovery attempt is due (at most one per `RECOVERY_INTERVAL`); marks it.
    pub fn attempt_due(&self) -> bool {
        let mut st = self.lock();
        if st.failure.is_none() {
            return false;
        }
        if st
            .last_attempt
            .is_some_and(|t| t.elapsed() < RECOVERY_INTERVAL)
        {
            return false;
        }
        st.last_attempt = Some(Instant::now());
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HealthState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// A storage layer given by the caller (tests inject faults with one): how to open the
/// database on it, and whether its medium has room.
pub struct CustomMedium {
    pub open: Box<dyn Fn() -> Result<Database, DatabaseError> + Send + Sync>,
    pub has_room: Box<dyn Fn() -> bool + Send + Sync>,
}

/// How the store's database is opened, kept so it can be opened again after an I/O failure.
pub enum Medium {
    File(PathBuf),
    Memory,
    Custom(CustomMedium),
    /// A database server (PostgreSQL): nothing to open again, its own disk.
    Server,
}

impl Medium {
    pub fn open(&self) -> Result<Database, StoreError> {
        match self {
            Medium::File(path) => open_file(path),
            Medium::Memory | Medium::Server => Err(StoreError::Redb(
                "a store in memory or on a server cannot be opened again".into(),
            )),
            Medium::Custom(c) => (c.open)().map_err(|e| classify(e.into())),
        }
    }

    pub fn has_room(&self) -> bool {
        match self {
            Medium::File(path) => {
                let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
                match rustix::fs::statvfs(dir.unwrap_or(Path::new("."))) {
                    Ok(s) => s.f_bavail.saturating_mul(s.f_frsize) >= ROOM_TO_RECOVER,
                    Err(_) => true,
                }
            }
            Medium::Memory | Medium::Server => true,
            Medium::Custom(c) => (c.has_room)(),
        }
    }

    /// Where a backup's temporary snapshot is written: beside the store, so its space is
    /// the data volume's.
    pub fn scratch_dir(&self) -> PathBuf {
        match self {
            Medium::File(path) => path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
            _ => std::env::temp_dir(),
        }
    }
}

/// redb's page cache when `EMR_STORE_CACHE_MB` does not say: enough for the pages a day's
/// work touches (index branches, the records of the patients seen today) and a group
/// commit's dirty pages, small enough that memory stays bounded over years of data. At a
/// facility's scale, 64 MiB saved 26 MB at idle but made the chart's large pages several
/// times slower in their tail (docs/benchmarks.md): the kernel's page cache behind redb's
/// is no substitute for it.
const DEFAULT_CACHE_MB: usize = 256;

fn builder() -> redb::Builder {
    let mb = std::env::var("EMR_STORE_CACHE_MB")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&mb| mb >= 16)
        .unwrap_or(DEFAULT_CACHE_MB);
    let mut b = Database::builder();
    b.set_cache_size(mb * 1024 * 1024);
    b
}

/// Opens the store file. Only a missing file starts a new store: a file that exists but is
/// empty or unreadable is damaged (a fresh start there would hide the facility's data
/// behind a new, empty system). redb may panic on a file damaged outside it; that is
/// caught and reported as damage too.
pub fn open_file(path: &Path) -> Result<Database, StoreError> {
    let damaged = |detail: String| StoreError::Damaged {
        path: path.to_path_buf(),
        detail,
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return builder().create(path).map_err(|e| classify(e.into()));
        }
        Err(e) => return Err(damaged(format!("cannot read it: {e}"))),
        Ok(m) if m.len() == 0 => {
            return Err(damaged(
                "the file is empty (0 bytes), so it holds no store".into(),
            ));
        }
        Ok(_) => {}
    }
    match catch_panic(|| builder().open(path)) {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(DatabaseError::DatabaseAlreadyOpen)) => Err(StoreError::Redb(format!(
            "{} is already open in another process",
            path.display()
        ))),
        Ok(Err(DatabaseError::Storage(redb::StorageError::Io(e))))
            if WriteFailure::from_io(&e).disk_full =>
        {
            Err(StoreError::Unwritable(WriteFailure::from_io(&e)))
        }
        Ok(Err(e)) => Err(damaged(e.to_string())),
        Err(panic) => Err(damaged(panic)),
    }
}

/// Runs `f`, turning a panic into its message.
pub fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "redb panicked".into())
    })
}
