//! The encounter and observation tables. Encounters: records by uuid, indexed by patient
//! (`patient|datetime|uuid`) and by visit (`visit|datetime|uuid`). Observations: records by
//! uuid, indexed by encounter (`encounter|uuid`), by patient (`patient|datetime|uuid`), by
//! patient and concept (`patient|concept|datetime|uuid`, the chart's "this value over
//! time") and by group (`group|uuid`, an obs group's members). An encounter and all its
//! observations are written in one transaction.

use super::{EncounterRecord, ObsRecord};
use crate::domains::{self, Index, Page, RecordTable, VOIDED, Window, key};
use crate::store::{Store, StoreResult};
use redb::{ReadableTable, TableDefinition, WriteTransaction};

const ENCOUNTERS: TableDefinition<&str, &[u8]> = TableDefinition::new("encounters");
const ENC_BY_PATIENT: Index = TableDefinition::new("encounters_by_patient");
const ENC_BY_VISIT: Index = TableDefinition::new("encounters_by_visit");
const OBS: TableDefinition<&str, &[u8]> = TableDefinition::new("obs");
const OBS_BY_ENCOUNTER: Index = TableDefinition::new("obs_by_encounter");
const OBS_BY_PATIENT: Index = TableDefinition::new("obs_by_patient");
const OBS_BY_CONCEPT: Index = TableDefinition::new("obs_by_patient_concept");
const OBS_BY_GROUP: Index = TableDefinition::new("obs_by_group");

pub const ENCOUNTER_RECORDS: RecordTable = RecordTable {
    name: "encounters",
    table: ENCOUNTERS,
    indexes: &[ENC_BY_PATIENT, ENC_BY_VISIT],
    create: create_encounter_tables,
    reindex: |txn, bytes| {
        let e: EncounterRecord = domains::decode("encounters", bytes)?;
        index_encounter(txn, None, &e)
    },
    decodes: |bytes| domains::decodes::<EncounterRecord>(bytes),
};

pub const OBS_RECORDS: RecordTable = RecordTable {
    name: "obs",
    table: OBS,
    indexes: &[
        OBS_BY_ENCOUNTER,
        OBS_BY_PATIENT,
        OBS_BY_CONCEPT,
        OBS_BY_GROUP,
    ],
    create: create_obs_tables,
    reindex: |txn, bytes| {
        let o: ObsRecord = domains::decode("obs", bytes)?;
        index_obs(txn, None, &o)
    },
    decodes: |bytes| domains::decodes::<ObsRecord>(bytes),
};

fn create_encounter_tables(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(ENCOUNTERS)?;
    txn.open_table(ENC_BY_PATIENT)?;
    txn.open_table(ENC_BY_VISIT)?;
    Ok(())
}

fn create_obs_tables(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(OBS)?;
    for t in [
        OBS_BY_ENCOUNTER,
        OBS_BY_PATIENT,
        OBS_BY_CONCEPT,
        OBS_BY_GROUP,
    ] {
        txn.open_table(t)?;
    }
    Ok(())
}

fn voided_flag(voided: bool) -> u8 {
    if voided { VOIDED } else { 0 }
}

fn encounter_keys(e: &EncounterRecord) -> (String, Option<String>) {
    (
        key(&[&e.patient, &e.datetime, &e.uuid]),
        e.visit.as_ref().map(|v| key(&[v, &e.datetime, &e.uuid])),
    )
}

fn index_encounter(
    txn: &WriteTransaction,
    old: Option<&EncounterRecord>,
    e: &EncounterRecord,
) -> StoreResult<()> {
    let mut by_patient = txn.open_table(ENC_BY_PATIENT)?;
    let mut by_visit = txn.open_table(ENC_BY_VISIT)?;
    if let Some(old) = old {
        let (p, v) = encounter_keys(old);
        by_patient.remove(p.as_str())?;
        if let Some(v) = v {
            by_visit.remove(v.as_str())?;
        }
    }
    let f = voided_flag(e.voiding.voided);
    let (p, v) = encounter_keys(e);
    by_patient.insert(p.as_str(), f)?;
    if let Some(v) = v {
        by_visit.insert(v.as_str(), f)?;
    }
    Ok(())
}

fn obs_keys(o: &ObsRecord) -> [Option<(Index, String)>; 4] {
    [
        o.encounter
            .as_ref()
            .map(|e| (OBS_BY_ENCOUNTER, key(&[e, &o.uuid]))),
        Some((OBS_BY_PATIENT, key(&[&o.person, &o.datetime, &o.uuid]))),
        Some((
            OBS_BY_CONCEPT,
            key(&[&o.person, &o.concept, &o.datetime, &o.uuid]),
        )),
        o.obs_group
            .as_ref()
            .map(|g| (OBS_BY_GROUP, key(&[g, &o.uuid]))),
    ]
}

fn index_obs(txn: &WriteTransaction, old: Option<&ObsRecord>, o: &ObsRecord) -> StoreResult<()> {
    if let Some(old) = old {
        for (table, k) in obs_keys(old).into_iter().flatten() {
            txn.open_table(table)?.remove(k.as_str())?;
        }
    }
    let f = voided_flag(o.voiding.voided);
    for (table, k) in obs_keys(o).into_iter().flatten() {
        txn.open_table(table)?.insert(k.as_str(), f)?;
    }
    Ok(())
}

/// One write: an encounter (new or changed, with its previous version) and observations
/// (each new or changed), committed together.
#[derive(Default)]
pub struct Change<'a> {
    pub encounter: Option<(Option<&'a EncounterRecord>, &'a EncounterRecord)>,
    pub obs: Vec<(Option<&'a ObsRecord>, &'a ObsRecord)>,
}

pub fn write_in(txn: &WriteTransaction, change: &Change) -> StoreResult<()> {
    if let Some((old, e)) = change.encounter {
        txn.open_table(ENCOUNTERS)?
            .insert(e.uuid.as_str(), domains::encode(e).as_slice())?;
        index_encounter(txn, old, e)?;
    }
    {
        let mut obs = txn.open_table(OBS)?;
        for (_, o) in &change.obs {
            obs.insert(o.uuid.as_str(), domains::encode(*o).as_slice())?;
        }
    }
    for (old, o) in &change.obs {
        index_obs(txn, *old, o)?;
    }
    Ok(())
}

pub fn write(store: &Store, change: &Change) -> StoreResult<()> {
    store.write(|txn| write_in(txn, change))
}

pub fn encounter(store: &Store, uuid: &str) -> StoreResult<Option<EncounterRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(ENCOUNTERS)?;
    t.get(uuid)?
        .map(|v| domains::decode("encounters", v.value()))
        .transpose()
}

pub fn obs(store: &Store, uuid: &str) -> StoreResult<Option<ObsRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(OBS)?;
    t.get(uuid)?
        .map(|v| domains::decode("obs", v.value()))
        .transpose()
}

fn read_all<T: for<'a> serde::Deserialize<'a>>(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    name: &'static str,
    uuids: &[String],
) -> StoreResult<Vec<T>> {
    let mut out = Vec::with_capacity(uuids.len());
    for u in uuids {
        if let Some(bytes) = table.get(u.as_str())? {
            out.push(domains::decode(name, bytes.value())?);
        }
    }
    Ok(out)
}

const EVERYTHING: Window = Window {
    start: 0,
    limit: usize::MAX,
    count_all: false,
};

/// The encounters of a visit, oldest first, voided ones left out.
pub fn of_visit(store: &Store, visit: &str) -> StoreResult<Vec<EncounterRecord>> {
    let txn = store.begin_read()?;
    let page = domains::scan(
        &txn.open_table(ENC_BY_VISIT)?,
        visit,
        VOIDED,
        false,
        EVERYTHING,
        |_| true,
    )?;
    read_all(&txn.open_table(ENCOUNTERS)?, "encounters", &page.uuids)
}

/// The datetimes (key form) of a visit's encounters that are not voided; keys only.
pub fn times_in_visit(store: &Store, visit: &str) -> StoreResult<Vec<String>> {
    let txn = store.begin_read()?;
    let mut times = Vec::new();
    domains::walk(&txn.open_table(ENC_BY_VISIT)?, visit, VOIDED, false, |k| {
        times.push(k.split('|').nth(1).unwrap_or_default().to_string());
        true
    })?;
    Ok(times)
}

/// What an encounter listing asks for.
#[derive(Debug, Default, Clone)]
pub struct EncounterQuery {
    pub patient: Option<String>,
    pub visit: Option<String>,
    pub encounter_type: Option<String>,
    pub form: Option<String>,
    /// Key-form bounds of the encounter datetime.
    pub from: Option<String>,
    pub to: Option<String>,
    pub include_voided: bool,
}

/// One page of a patient's or a visit's encounters, newest first.
pub fn list(
    store: &Store,
    q: &EncounterQuery,
    window: Window,
) -> StoreResult<(Vec<EncounterRecord>, Page)> {
    let txn = store.begin_read()?;
    let records = txn.open_table(ENCOUNTERS)?;
    let exclude = if q.include_voided { 0 } else { VOIDED };
    let needs_record = q.encounter_type.is_some() || q.form.is_some();
    let keep = |k: &str| -> bool {
        let mut parts = k.split('|');
        let (_, at, uuid) = (
            parts.next(),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        if q.from.as_deref().is_some_and(|f| at < f) || q.to.as_deref().is_some_and(|t| at > t) {
            return false;
        }
        if !needs_record {
            return true;
        }
        let Ok(Some(bytes)) = records.get(uuid) else {
            return false;
        };
        let Ok(e) = domains::decode::<EncounterRecord>("encounters", bytes.value()) else {
            return false;
        };
        q.encounter_type
            .as_ref()
            .is_none_or(|t| &e.encounter_type == t)
            && q.form.as_ref().is_none_or(|f| e.form.as_ref() == Some(f))
    };
    let page = match (&q.visit, &q.patient) {
        (Some(v), _) => domains::scan(
            &txn.open_table(ENC_BY_VISIT)?,
            v,
            exclude,
            true,
            window,
            keep,
        )?,
        (None, Some(p)) => domains::scan(
            &txn.open_table(ENC_BY_PATIENT)?,
            p,
            exclude,
            true,
            window,
            keep,
        )?,
        (None, None) => Page::default(),
    };
    let out = read_all(&records, "encounters", &page.uuids)?;
    Ok((out, page))
}

/// The observations of an encounter (groups and their members alike).
pub fn obs_of_encounter(
    store: &Store,
    encounter: &str,
    include_voided: bool,
) -> StoreResult<Vec<ObsRecord>> {
    let txn = store.begin_read()?;
    let exclude = if include_voided { 0 } else { VOIDED };
    let page = domains::scan(
        &txn.open_table(OBS_BY_ENCOUNTER)?,
        encounter,
        exclude,
        false,
        EVERYTHING,
        |_| true,
    )?;
    read_all(&txn.open_table(OBS)?, "obs", &page.uuids)
}

/// The members of an obs group.
pub fn group_members(store: &Store, group: &str) -> StoreResult<Vec<ObsRecord>> {
    let txn = store.begin_read()?;
    let page = domains::scan(
        &txn.open_table(OBS_BY_GROUP)?,
        group,
        VOIDED,
        false,
        EVERYTHING,
        |_| true,
    )?;
    read_all(&txn.open_table(OBS)?, "obs", &page.uuids)
}

/// What an observation listing asks for.
#[derive(Debug, Default, Clone)]
pub struct ObsQuery {
    pub patient: Option<String>,
    /// Any of these concepts (with a patient).
    pub concepts: Vec<String>,
    pub encounter: Option<String>,
    /// Only observations of encounters of this type (FHIR's `encounter.type`).
    pub encounter_type: Option<String>,
    pub include_voided: bool,
}

/// One page of observations, newest first. With several concepts, each concept's index
/// range is read and the ranges merged by datetime.
pub fn list_obs(
    store: &Store,
    q: &ObsQuery,
    window: Window,
) -> StoreResult<(Vec<ObsRecord>, Page)> {
    let txn = store.begin_read()?;
    let records = txn.open_table(OBS)?;
    let encounters = txn.open_table(ENCOUNTERS)?;
    let exclude = if q.include_voided { 0 } else { VOIDED };
    // The encounter-type filter reads the obs and its encounter; without it keys suffice.
    let of_type = |uuid: &str| -> bool {
        let Some(wanted) = &q.encounter_type else {
            return true;
        };
        let encounter = records
            .get(uuid)
            .ok()
            .flatten()
            .and_then(|b| domains::decode::<ObsRecord>("obs", b.value()).ok())
            .and_then(|o| o.encounter);
        encounter
            .and_then(|e| encounters.get(e.as_str()).ok().flatten())
            .and_then(|b| domains::decode::<EncounterRecord>("encounters", b.value()).ok())
            .is_some_and(|e| &e.encounter_type == wanted)
    };
    let keep = |k: &str| of_type(k.rsplit('|').next().unwrap_or_default());
    let page = match (&q.encounter, &q.patient) {
        (Some(e), _) => domains::scan(
            &txn.open_table(OBS_BY_ENCOUNTER)?,
            e,
            exclude,
            false,
            window,
            keep,
        )?,
        (None, Some(p)) if q.concepts.len() == 1 => {
            let prefix = key(&[p, &q.concepts[0]]);
            domains::scan(
                &txn.open_table(OBS_BY_CONCEPT)?,
                &prefix,
                exclude,
                true,
                window,
                keep,
            )?
        }
        (None, Some(p)) if !q.concepts.is_empty() => {
            // Several concepts: each one's keys, merged newest first, then cut.
            let index = txn.open_table(OBS_BY_CONCEPT)?;
            let mut keys: Vec<(String, String)> = Vec::new();
            for c in &q.concepts {
                domains::walk(&index, &key(&[p, c]), exclude, false, |k| {
                    let mut parts = k.rsplit('|');
                    let uuid = parts.next().unwrap_or_default().to_string();
                    let at = parts.next().unwrap_or_default().to_string();
                    if of_type(&uuid) {
                        keys.push((at, uuid));
                    }
                    true
                })?;
            }
            keys.sort_by(|a, b| b.cmp(a));
            Page::cut(keys.into_iter().map(|(_, uuid)| uuid).collect(), window)
        }
        (None, Some(p)) => domains::scan(
            &txn.open_table(OBS_BY_PATIENT)?,
            p,
            exclude,
            true,
            window,
            keep,
        )?,
        (None, None) => Page::default(),
    };
    let out = read_all(&records, "obs", &page.uuids)?;
    Ok((out, page))
}
