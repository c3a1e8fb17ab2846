//! The visit tables: records by uuid, and three indexes — by patient (`patient|start|uuid`),
//! by start over all patients (`all|start|uuid`), and the visits still open
//! (`all|start|uuid`, an entry removed when the visit ends or is voided, so the active
//! visits of a whole facility are read without scanning its history).

use crate::domains::visit::VisitRecord;
use crate::store::kv::{ReadTransaction, TableDefinition, WriteTransaction};
use crate::store::record::{ENDED, Index, Page, RecordTable, VOIDED, Window, key};
use crate::store::{Store, StoreResult};

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("visits");
const BY_PATIENT: Index = TableDefinition::new("visits_by_patient");
const BY_START: Index = TableDefinition::new("visits_by_start");
const ACTIVE: Index = TableDefinition::new("visits_active");

pub const RECORDS: RecordTable = RecordTable {
    name: "visits",
    table: TABLE,
    indexes: &[BY_PATIENT, BY_START, ACTIVE],
    covering: &[],
    create,
    reindex,
    codec: crate::store::record::json_codec::<VisitRecord>(),
};

fn create(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(TABLE)?;
    for index in [BY_PATIENT, BY_START, ACTIVE] {
        txn.open_table(index)?;
    }
    Ok(())
}

fn reindex(txn: &WriteTransaction, bytes: &[u8]) -> StoreResult<()> {
    let v: VisitRecord = crate::store::record::decode("visits", bytes)?;
    write_index(txn, None, &v)
}

fn flags(v: &VisitRecord) -> u8 {
    let mut f = 0;
    if v.voiding.voided {
        f |= VOIDED;
    }
    if v.stop.is_some() {
        f |= ENDED;
    }
    f
}

fn write_index(
    txn: &WriteTransaction,
    old: Option<&VisitRecord>,
    new: &VisitRecord,
) -> StoreResult<()> {
    let mut by_patient = txn.open_table(BY_PATIENT)?;
    let mut by_start = txn.open_table(BY_START)?;
    let mut active = txn.open_table(ACTIVE)?;
    if let Some(old) = old {
        by_patient.remove(key(&[&old.patient, &old.start, &old.uuid]).as_str())?;
        let all = key(&["all", &old.start, &old.uuid]);
        by_start.remove(all.as_str())?;
        active.remove(all.as_str())?;
    }
    let f = flags(new);
    by_patient.insert(key(&[&new.patient, &new.start, &new.uuid]).as_str(), f)?;
    let all = key(&["all", &new.start, &new.uuid]);
    by_start.insert(all.as_str(), f)?;
    if f == 0 {
        active.insert(all.as_str(), 0)?;
    }
    Ok(())
}

/// Writes a visit and its index entries in the caller's transaction.
pub fn put_in(
    txn: &WriteTransaction,
    old: Option<&VisitRecord>,
    new: &VisitRecord,
) -> StoreResult<()> {
    txn.open_table(TABLE)?.insert(
        new.uuid.as_str(),
        crate::store::record::encode(new).as_slice(),
    )?;
    write_index(txn, old, new)
}

/// Writes a visit durably.
pub fn put(store: &Store, old: Option<&VisitRecord>, new: &VisitRecord) -> StoreResult<()> {
    store.write(|txn| put_in(txn, old, new))
}

pub fn get(store: &Store, uuid: &str) -> StoreResult<Option<VisitRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(TABLE)?;
    t.get(uuid)?
        .map(|v| crate::store::record::decode("visits", v.value()))
        .transpose()
}

/// What a visit listing asks for.
#[derive(Debug, Default, Clone)]
pub struct VisitQuery {
    pub patient: Option<String>,
    /// Ended visits too (OpenMRS's `includeInactive`, true by default).
    pub include_inactive: bool,
    pub include_voided: bool,
    /// Key-form lower bound of the start.
    pub from_start: Option<String>,
    /// The visit's location is one of these (a location, with its ancestors when the
    /// listing asks for `includeParentLocations`).
    pub location: Option<Vec<String>>,
    pub visit_type: Option<String>,
}

/// One page of visits, newest start first.
pub fn list(
    store: &Store,
    q: &VisitQuery,
    window: Window,
) -> StoreResult<(Vec<VisitRecord>, Page)> {
    let txn = store.begin_read()?;
    let records = txn.open_table(TABLE)?;
    let mut exclude = 0;
    if !q.include_voided {
        exclude |= VOIDED;
    }
    if !q.include_inactive {
        exclude |= ENDED;
    }
    let needs_record = q.location.is_some() || q.visit_type.is_some();
    let keep = |k: &str| -> bool {
        let mut parts = k.split('|');
        let (_, start, uuid) = (
            parts.next(),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        if q.from_start.as_deref().is_some_and(|from| start < from) {
            return false;
        }
        if !needs_record {
            return true;
        }
        let Ok(Some(bytes)) = records.get(uuid) else {
            return false;
        };
        let Ok(v) = crate::store::record::decode::<VisitRecord>("visits", bytes.value()) else {
            return false;
        };
        q.location
            .as_ref()
            .is_none_or(|ls| v.location.as_ref().is_some_and(|l| ls.contains(l)))
            && q.visit_type.as_ref().is_none_or(|t| &v.visit_type == t)
    };
    let page = match &q.patient {
        Some(p) => crate::store::record::scan(
            &txn.open_table(BY_PATIENT)?,
            p,
            exclude,
            true,
            window,
            keep,
        )?,
        None if !q.include_inactive && !q.include_voided => {
            crate::store::record::scan(&txn.open_table(ACTIVE)?, "all", 0, true, window, keep)?
        }
        None => crate::store::record::scan(
            &txn.open_table(BY_START)?,
            "all",
            exclude,
            true,
            window,
            keep,
        )?,
    };
    let keys: Vec<&str> = page.uuids.iter().map(String::as_str).collect();
    let mut out = Vec::with_capacity(page.uuids.len());
    for bytes in records.get_many(&keys)?.into_iter().flatten() {
        out.push(crate::store::record::decode("visits", bytes.value())?);
    }
    Ok((out, page))
}

/// Every visit of a patient, newest first, ended ones included (for the overlap rule).
pub fn visits_of(store: &Store, patient: &str) -> StoreResult<Vec<VisitRecord>> {
    let q = VisitQuery {
        patient: Some(patient.into()),
        include_inactive: true,
        ..VisitQuery::default()
    };
    let all = Window {
        start: 0,
        limit: usize::MAX,
        count_all: false,
    };
    Ok(list(store, &q, all)?.0)
}

/// The open visits of the whole facility, oldest first, for the auto-close job.
pub fn open_visits(store: &Store) -> StoreResult<Vec<VisitRecord>> {
    let q = VisitQuery::default();
    let all = Window {
        start: 0,
        limit: usize::MAX,
        count_all: false,
    };
    let (mut v, _) = list(store, &q, all)?;
    v.reverse();
    Ok(v)
}

/// Removes a visit and its index entries for good (a visit without encounters).
pub fn purge(store: &Store, v: &VisitRecord) -> StoreResult<()> {
    store.write(|txn| {
        txn.open_table(TABLE)?.remove(v.uuid.as_str())?;
        txn.open_table(BY_PATIENT)?
            .remove(key(&[&v.patient, &v.start, &v.uuid]).as_str())?;
        let all = key(&["all", &v.start, &v.uuid]);
        txn.open_table(BY_START)?.remove(all.as_str())?;
        txn.open_table(ACTIVE)?.remove(all.as_str())?;
        Ok(())
    })
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, BY_PATIENT, patient),
    adjust: None,
    counted_as: None,
};

fn decode_visit(bytes: &[u8]) -> StoreResult<VisitRecord> {
    crate::store::record::decode("visits", bytes)
}

/// Whose a visit is, of which type, where: what a report's listing reads of each visit of
/// a month, decoded without the rest of the record.
#[derive(serde::Deserialize)]
pub struct VisitBrief {
    pub patient: String,
    pub visit_type: String,
    #[serde(default)]
    pub location: Option<String>,
}

/// The visits started between `from` and `to` (key form, inclusive, either open), oldest
/// first, voided ones left out, in the caller's read transaction (reports).
pub fn briefs_started_between_in(
    txn: &ReadTransaction,
    from: Option<&str>,
    to: Option<&str>,
) -> StoreResult<Vec<VisitBrief>> {
    crate::store::record::records_between_in(txn, TABLE, BY_START, "all", from, to, |b| {
        crate::store::record::decode("visits", b)
    })
}

/// Whether a patient has a visit (not voided) started between `from` and `to` (key form,
/// inclusive, either open), from the index's keys alone, in the caller's transaction.
pub fn patient_has_visit_between_in(
    txn: &ReadTransaction,
    patient: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> StoreResult<bool> {
    crate::store::record::any_between_in(txn, BY_PATIENT, patient, from, to)
}

/// A patient's visits, oldest first, voided ones left out, in the caller's transaction.
pub fn of_patient_in(txn: &ReadTransaction, patient: &str) -> StoreResult<Vec<VisitRecord>> {
    crate::store::record::records_between_in(
        txn,
        TABLE,
        BY_PATIENT,
        patient,
        None,
        None,
        decode_visit,
    )
}
