//! `runtime check-store`: reads every record and every index of a store file and reports
//! what is inconsistent, for an operator who suspects damage (after a disk error, a crash
//! on a failing disk, or before trusting an old data directory).
//!
//! It checks, in order: redb's own page checksums (`Database::check_integrity`); that every
//! record decodes as its table's record type; that every attachment's file is there, as
//! uploaded (its SHA-256); that the identifier and username indexes
//! point at records that hold them; that each patient's search projection is its record's;
//! and, for the clinical records, that each index table is
//! exactly what the records imply. The last check rebuilds the indexes inside a write
//! transaction that is never committed, then compares them with the stored ones key by key
//! (both sorted), so memory stays flat however large the store is.

use crate::store::kv::{AccessGuard, Key, ReadTransaction, ReadableTable, Value, WriteTransaction};
use crate::store::medium::{catch_panic, open_file};
use crate::store::record::Registry;
use crate::store::record::decodes;
use crate::store::{
    COUNTERS, IDENTIFIERS, META, PATIENT_SEARCH, PATIENTS, PatientRecord, SETTINGS, SettingRecord,
    StoreError, USERNAMES, USERS, UserRecord,
};
use redb::{Database, ReadableDatabase};
use std::path::Path;

/// What a check found.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// Records read, all tables together.
    pub records: u64,
    /// Index entries compared.
    pub index_entries: u64,
    /// One line per inconsistency, naming the table and key.
    pub problems: Vec<String>,
    /// What each table holds and takes on the disk, largest first: where the space goes.
    pub tables: Vec<TableSize>,
    /// The file's size, and how much of it redb's pages hold (the tables', its own
    /// bookkeeping's); the rest is free room the file keeps for later writes.
    pub file_bytes: u64,
    pub allocated_bytes: u64,
}

/// One table's entries and pages.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSize {
    pub name: String,
    pub entries: u64,
    /// Keys and values as stored.
    pub stored_bytes: u64,
    /// What its B-tree takes: `stored_bytes`, the branch pages' keys and bookkeeping, and
    /// the pages' unused room.
    pub disk_bytes: u64,
}

/// More than this many problems are counted, not listed.
const LISTED_PROBLEMS: usize = 200;

impl CheckReport {
    fn problem(&mut self, p: String) {
        self.problems.push(p);
    }

    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks the store file at `path` (the service must be stopped: the file is opened
/// exclusively). An error means the file could not be read at all.
pub fn check_store(path: &Path, registry: &Registry) -> Result<CheckReport, StoreError> {
    if !path.exists() {
        return Err(StoreError::Redb(format!(
            "there is no store at {}",
            path.display()
        )));
    }
    let mut db = open_file(path)?;
    let damaged = |detail: String| StoreError::Damaged {
        path: path.to_path_buf(),
        detail,
    };
    let mut report = CheckReport::default();
    match catch_panic(|| db.check_integrity()) {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => report.problem(
            "redb: the file was not closed cleanly and was repaired (its last transactions may be missing)".into(),
        ),
        Ok(Err(e)) => report.problem(format!("redb: page checksums do not match: {e}")),
        Err(panic) => return Err(damaged(panic)),
    }
    match catch_panic(|| table_sizes(&db)) {
        Ok(Ok(tables)) => report.tables = tables,
        Ok(Err(e)) => report.problem(format!("cannot measure the tables: {e}")),
        Err(panic) => report.problem(format!("measuring the tables failed: {panic}")),
    }
    report.file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    // A write transaction only to read the allocator's figures; dropped unwritten.
    match catch_panic(|| -> Result<u64, StoreError> {
        let stats = db.begin_write()?.stats()?;
        Ok(stats.allocated_pages() * stats.page_size() as u64)
    }) {
        Ok(Ok(bytes)) => report.allocated_bytes = bytes,
        Ok(Err(e)) => report.problem(format!("cannot measure the file: {e}")),
        Err(panic) => report.problem(format!("measuring the file failed: {panic}")),
    }
    match catch_panic(|| check_tables(&db, registry, &mut report)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => report.problem(format!("cannot read every table: {e}")),
        Err(panic) => report.problem(format!("reading the tables failed: {panic}")),
    }
    if report.problems.len() > LISTED_PROBLEMS {
        let more = report.problems.len() - LISTED_PROBLEMS;
        report.problems.truncate(LISTED_PROBLEMS);
        report.problems.push(format!("… and {more} more"));
    }
    Ok(report)
}

/// Every table's entries and pages, largest first.
fn table_sizes(db: &Database) -> Result<Vec<TableSize>, StoreError> {
    use redb::{ReadableTableMetadata, TableHandle};
    let txn = db.begin_read()?;
    let mut sizes = Vec::new();
    for handle in txn.list_tables()? {
        let name = handle.name().to_string();
        let table = txn.open_untyped_table(handle)?;
        let stats = table.stats()?;
        sizes.push(TableSize {
            name,
            entries: table.len()?,
            stored_bytes: stats.stored_bytes(),
            disk_bytes: stats.stored_bytes() + stats.metadata_bytes() + stats.fragmented_bytes(),
        });
    }
    sizes.sort_by(|a, b| b.disk_bytes.cmp(&a.disk_bytes).then(a.name.cmp(&b.name)));
    Ok(sizes)
}

fn check_tables(
    db: &Database,
    registry: &Registry,
    report: &mut CheckReport,
) -> Result<(), StoreError> {
    let txn = ReadTransaction::Redb(db.begin_read()?);
    // Records decode.
    macro_rules! decode_all {
        ($def:expr, $name:literal, $ty:ty) => {{
            for row in txn.open_table($def)?.iter()? {
                let (k, v) = row?;
                report.records += 1;
                if let Err(e) = decodes::<$ty>(v.value()) {
                    report.problem(format!(
                        "{} {}: the record does not decode: {e}",
                        $name,
                        k.value()
                    ));
                }
            }
        }};
    }
    decode_all!(PATIENTS, "patients", PatientRecord);
    decode_all!(USERS, "users", UserRecord);
    decode_all!(SETTINGS, "settings", SettingRecord);
    report.records += txn.open_table(META)?.iter()?.count() as u64;
    report.records += txn.open_table(COUNTERS)?.iter()?.count() as u64;
    for table in registry.records {
        for row in txn.open_table(table.table)?.iter()? {
            let (k, v) = row?;
            report.records += 1;
            if let Err(e) = (table.codec.decodes)(v.value()) {
                report.problem(format!(
                    "{} {}: the record does not decode: {e}",
                    table.name,
                    k.value()
                ));
            }
        }
    }

    for blob in registry.blobs {
        report.records += (blob.check)(&txn, &mut |p| report.problems.push(p))?;
    }

    // `<type>|<scope>|<identifier>` → a patient that holds that identifier.
    let patients = txn.open_table(PATIENTS)?;
    for row in txn.open_table(IDENTIFIERS)?.iter()? {
        let (k, v) = row?;
        report.index_entries += 1;
        let (key, owner) = (k.value(), v.value());
        let identifier = key.rsplit('|').next().unwrap_or_default();
        match patients.get(owner)? {
            None => report.problem(format!(
                "identifiers {key}: points at patient {owner}, which does not exist"
            )),
            Some(p) => {
                if let Ok(p) = serde_json::from_slice::<PatientRecord>(p.value())
                    && !p.identifiers.iter().any(|i| i.identifier == identifier)
                {
                    report.problem(format!(
                        "identifiers {key}: patient {owner} does not hold identifier {identifier}"
                    ));
                }
            }
        }
    }
    let users = txn.open_table(USERS)?;
    for row in txn.open_table(USERNAMES)?.iter()? {
        let (k, v) = row?;
        report.index_entries += 1;
        if users.get(v.value())?.is_none() {
            report.problem(format!(
                "usernames {}: points at user {}, which does not exist",
                k.value(),
                v.value()
            ));
        }
    }

    // Each patient's search projection is its record's (or missing altogether, which the
    // next start rebuilds), and none is left of a removed patient.
    let search = txn.open_table(PATIENT_SEARCH)?;
    if !search.is_empty()? {
        for row in patients.iter()? {
            let (k, v) = row?;
            report.index_entries += 1;
            let Ok(expected) = crate::store::projection::projection_of_stored(v.value()) else {
                continue; // reported above as a record that does not decode
            };
            if search
                .get(k.value())?
                .map(|p| p.value() == expected.as_slice())
                != Some(true)
            {
                report.problem(format!(
                    "patient_search {}: differs from the patient's record",
                    k.value()
                ));
            }
        }
        for row in search.iter()? {
            let (k, _) = row?;
            if patients.get(k.value())?.is_none() {
                report.problem(format!(
                    "patient_search {}: the patient does not exist",
                    k.value()
                ));
            }
        }
    }

    // A store an older runtime wrote, or whose upgrade has not ended, has the indexes of
    // its own version: compared with this version's, every entry would differ.
    let meta = txn.open_table(META)?;
    let version = meta.get("schema_version")?.map(|v| v.value().to_string());
    let upgrading = meta.get("upgrading_from")?.map(|v| v.value().to_string());
    drop(meta);
    let current = crate::store::SCHEMA_VERSION.to_string();
    if version.as_deref() != Some(current.as_str()) || upgrading.is_some() {
        report.problem(format!(
            "the store is at version {}{} and this runtime's is {current}: start the runtime once (it upgrades the store), stop it, then check; its indexes were not compared",
            version.as_deref().unwrap_or("unknown"),
            upgrading
                .map(|from| format!(" (its upgrade from {from} has not ended)"))
                .unwrap_or_default(),
        ));
        return Ok(());
    }

    // Each patient's entry by last change, and nothing else.
    let mut expected = std::collections::BTreeMap::new();
    for row in patients.iter()? {
        let (_, v) = row?;
        if let Ok((key, flags)) = crate::store::updated_entry(v.value()) {
            expected.insert(key, flags);
        }
    }
    for row in txn.open_table(crate::store::PATIENTS_BY_UPDATED)?.iter()? {
        let (k, v) = row?;
        report.index_entries += 1;
        match expected.remove(k.value()) {
            Some(flags) if flags == v.value() => {}
            Some(_) => report.problem(format!(
                "patients_by_updated {}: its voided flag differs from the record's",
                k.value()
            )),
            None => report.problem(format!(
                "patients_by_updated {}: no patient last changed then",
                k.value()
            )),
        }
    }
    for key in expected.keys() {
        report.problem(format!("patients_by_updated: {key} is missing"));
    }

    // Clinical indexes: rebuild them in a transaction that is never committed, compare.
    let rebuild = WriteTransaction::Redb(db.begin_write()?);
    for table in registry.records {
        for index in table.indexes {
            rebuild.delete_table(*index)?;
        }
        for index in table.covering {
            rebuild.delete_table(*index)?;
        }
    }
    for table in registry.records {
        for index in table.indexes {
            rebuild.open_table(*index)?;
        }
        for index in table.covering {
            rebuild.open_table(*index)?;
        }
        for row in txn.open_table(table.table)?.iter()? {
            let (_, v) = row?;
            // Records that do not decode were reported above; they have no index entries.
            let _ = (table.reindex)(&rebuild, v.value());
        }
    }
    for table in registry.records {
        for index in table.indexes {
            let stored = txn.open_table(*index)?;
            let expected = rebuild.open_table(*index)?;
            let name = index.name();
            compare(name, &stored, &expected, report)?;
        }
        for index in table.covering {
            let stored = txn.open_table(*index)?;
            let expected = rebuild.open_table(*index)?;
            compare(index.name(), &stored, &expected, report)?;
        }
    }
    if let WriteTransaction::Redb(rebuild) = rebuild {
        rebuild.abort()?;
    }
    Ok(())
}

/// Walks two sorted index tables side by side, reporting entries only one holds and
/// entries whose values (flags, or a covering index's record) differ.
fn compare<K: Key + 'static, V: Value + 'static>(
    name: &str,
    stored: &impl ReadableTable<K, V>,
    expected: &impl ReadableTable<K, V>,
    report: &mut CheckReport,
) -> Result<(), StoreError> {
    let raw = |row: Option<crate::store::StoreResult<(AccessGuard<'_, K>, AccessGuard<'_, V>)>>| {
        row.transpose().map(|row| {
            row.map(|(k, v)| {
                (
                    K::as_bytes(&k.value()).as_ref().to_vec(),
                    V::as_bytes(&v.value()).as_ref().to_vec(),
                )
            })
        })
    };
    // Text keys as they are; binary ones (covering indexes) in hexadecimal.
    let show = |k: &[u8]| match std::str::from_utf8(k) {
        Ok(text) if !text.contains(char::is_control) => text.to_string(),
        _ => k.iter().map(|b| format!("{b:02x}")).collect(),
    };
    let mut a = stored.iter()?;
    let mut b = expected.iter()?;
    let mut x = raw(a.next())?;
    let mut y = raw(b.next())?;
    loop {
        match (&x, &y) {
            (None, None) => return Ok(()),
            (Some((k, _)), None) => {
                report.problem(format!("{name} {}: an entry no record implies", show(k)));
                x = raw(a.next())?;
            }
            (None, Some((k, _))) => {
                report.problem(format!("{name} {}: missing entry", show(k)));
                y = raw(b.next())?;
            }
            (Some((ks, vs)), Some((ke, ve))) => {
                report.index_entries += 1;
                match ks.cmp(ke) {
                    std::cmp::Ordering::Equal => {
                        if vs != ve {
                            let what = match (vs.as_slice(), ve.as_slice()) {
                                ([fs], [fe]) => format!("flags {fs} where the record implies {fe}"),
                                _ => "differs from its record".to_string(),
                            };
                            report.problem(format!("{name} {}: {what}", show(ks)));
                        }
                        x = raw(a.next())?;
                        y = raw(b.next())?;
                    }
                    std::cmp::Ordering::Less => {
                        report.problem(format!("{name} {}: an entry no record implies", show(ks)));
                        x = raw(a.next())?;
                    }
                    std::cmp::Ordering::Greater => {
                        report.problem(format!("{name} {}: missing entry", show(ke)));
                        y = raw(b.next())?;
                    }
                }
            }
        }
    }
}

/// `runtime compact-store`: gives back to the volume the space the store file no longer
/// uses (pages freed by updates, or pinned by a long read). The service must be stopped.
/// Returns the file's size before and after.
pub fn compact_store(path: &Path) -> Result<(u64, u64), StoreError> {
    if !path.exists() {
        return Err(StoreError::Redb(format!(
            "there is no store at {}",
            path.display()
        )));
    }
    let size = || std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let before = size();
    let mut db = open_file(path)?;
    loop {
        match catch_panic(|| db.compact()) {
            Ok(Ok(true)) => continue,
            Ok(Ok(false)) => break,
            Ok(Err(e)) => return Err(StoreError::Redb(format!("compaction failed: {e}"))),
            Err(panic) => {
                return Err(StoreError::Damaged {
                    path: path.to_path_buf(),
                    detail: panic,
                });
            }
        }
    }
    drop(db);
    Ok((before, size()))
}
