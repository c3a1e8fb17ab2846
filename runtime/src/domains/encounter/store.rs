//! The encounter and observation tables. Encounters: records by uuid, indexed by patient
//! (`patient|datetime|uuid`) and by visit (`visit|datetime|uuid`). Observations: records by
//! uuid, indexed by encounter (`encounter|uuid`), by patient (`patient|datetime|uuid`), by
//! group (`group|uuid`, an obs group's members), and by patient and concept in the chart's
//! covering index (`obs_chart`: binary keys `patient concept datetime uuid`, each entry
//! holding the observation itself, so that the chart's "these values over time" reads one
//! short run of adjacent pages per concept and no record). An encounter and all its
//! observations are written in one transaction. Encounters are stored as JSON,
//! observations in a compact binary form (`encode_obs`, `compact.rs`; the earlier binary
//! and JSON forms are still read).

use crate::domains::encounter::compact::CompactObs;
use crate::domains::encounter::{EncounterRecord, ObsRecord};
use crate::store::compact::{Uid, time_key_bytes};
use crate::store::kv::KeyRange;
use crate::store::kv::{ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};
use crate::store::record::{CoveringIndex, Index, Page, RecordTable, VOIDED, Window, key};
use crate::store::{Store, StoreResult};

const ENCOUNTERS: TableDefinition<&str, &[u8]> = TableDefinition::new("encounters");
const ENC_BY_PATIENT: Index = TableDefinition::new("encounters_by_patient");
const ENC_BY_VISIT: Index = TableDefinition::new("encounters_by_visit");
/// Every encounter by time (`all|datetime|uuid`), for the reports' "an encounter in the
/// period" (added in store version 3; `domains::REGISTRY` rebuilds it for older stores).
const ENC_BY_TIME: Index = TableDefinition::new("encounters_by_time");
const OBS: TableDefinition<&str, &[u8]> = TableDefinition::new("obs");
/// An encounter's observations (store version 8, binary): key `encounter uuid`
/// (`compact::Uid::key_bytes` each), value the observation's flags.
const OBS_BY_ENCOUNTER: CoveringIndex = TableDefinition::new("obs_encounter");
/// A patient's observations by their datetime (store version 8, binary): key `patient
/// datetime uuid`, value the flags.
const OBS_BY_PATIENT: CoveringIndex = TableDefinition::new("obs_patient");
/// The text-keyed indexes of stores before version 8 (`encounter|uuid`,
/// `patient|datetime|uuid`, `all|updated|uuid`), dropped when such a store is opened: the
/// same keys in binary take half the room.
pub const OBS_INDEXES_BEFORE_8: [Index; 3] = [
    TableDefinition::new("obs_by_encounter"),
    TableDefinition::new("obs_by_patient"),
    TableDefinition::new("obs_by_updated"),
];
/// The text-keyed index by patient and concept of stores before version 5, dropped when
/// such a store is opened (`obs_chart` replaces it).
pub const OBS_BY_CONCEPT_BEFORE_5: Index = TableDefinition::new("obs_by_patient_concept");
/// The chart's covering index (store version 5): key `patient concept datetime uuid` in
/// binary (`chart_key`), value the observation's flags then its stored bytes.
const OBS_CHART: CoveringIndex = TableDefinition::new("obs_chart");
const OBS_BY_GROUP: Index = TableDefinition::new("obs_by_group");
/// Every observation by when it last changed (`updated uuid` in binary, `last_updated`, value
/// the flags): FHIR's `_lastUpdated`, a warehouse's incremental extraction (added in store
/// version 4, binary since 8; `domains::REGISTRY` rebuilds it for older stores).
const OBS_BY_UPDATED: CoveringIndex = TableDefinition::new("obs_updated");

pub const ENCOUNTER_RECORDS: RecordTable = RecordTable {
    name: "encounters",
    table: ENCOUNTERS,
    indexes: &[ENC_BY_PATIENT, ENC_BY_VISIT, ENC_BY_TIME],
    covering: &[],
    create: create_encounter_tables,
    reindex: |txn, bytes| {
        let e: EncounterRecord = crate::store::record::decode("encounters", bytes)?;
        index_encounter(txn, None, &e)
    },
    codec: crate::store::record::json_codec::<EncounterRecord>(),
};

pub const OBS_RECORDS: RecordTable = RecordTable {
    name: "obs",
    table: OBS,
    indexes: &[OBS_BY_GROUP],
    covering: &[OBS_CHART, OBS_BY_ENCOUNTER, OBS_BY_PATIENT, OBS_BY_UPDATED],
    create: create_obs_tables,
    reindex: |txn, bytes| index_obs(txn, None, &decode_obs(bytes)?),
    codec: crate::store::record::RecordCodec {
        decodes: |bytes| decode_obs(bytes).map(drop).map_err(|e| e.to_string()),
        to_json: |bytes| {
            let o = decode_obs(bytes).map_err(|e| e.to_string())?;
            serde_json::to_value(&o).map_err(|e| e.to_string())
        },
        from_json: |v| {
            let o = <ObsRecord as serde::Deserialize>::deserialize(v).map_err(|e| e.to_string())?;
            Ok(encode_obs(&o))
        },
    },
};

/// The first byte of an observation stored in binary (bincode's standard configuration
/// of `ObsRecord`'s fields in order). Stores written before it hold JSON observations,
/// which start with `{`; every form is read, and every write is the newest. A change of
/// `ObsRecord`'s fields takes a new tag, the old ones still decoded.
const OBS_BINARY_V1: u8 = 1;
/// The compact form (`compact::CompactObs`: uuids in 16 bytes, datetimes in milliseconds),
/// written since store version 5.
const OBS_COMPACT_V2: u8 = 2;

/// bincode's standard configuration, with a bound on what one observation may claim, so
/// that a damaged length is an error rather than an allocation of that size.
fn obs_binary_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ 64 << 20 }>()
}

/// An observation as it is stored: in binary, which reads several times faster than JSON
/// and takes less room (the chart reads a hundred at a time, a facility keeps millions).
pub fn encode_obs(o: &ObsRecord) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    out.push(OBS_COMPACT_V2);
    bincode::encode_into_std_write(CompactObs::from(o), &mut out, obs_binary_config())
        .expect("an observation is far below the size limit");
    out
}

/// An observation in the first binary form, as stores before version 5 hold them.
#[cfg(test)]
fn encode_obs_v1(o: &ObsRecord) -> Vec<u8> {
    let mut out = vec![OBS_BINARY_V1];
    bincode::encode_into_std_write(o, &mut out, obs_binary_config()).unwrap();
    out
}

/// A stored observation, in binary or (written by an earlier version) in JSON.
pub fn decode_obs(bytes: &[u8]) -> StoreResult<ObsRecord> {
    let corrupt = |detail: String| crate::store::StoreError::Corrupt {
        table: "obs",
        detail,
    };
    fn whole<T: bincode::Decode<()>>(
        rest: &[u8],
        corrupt: impl Fn(String) -> crate::store::StoreError,
    ) -> StoreResult<T> {
        let (o, read) = bincode::decode_from_slice(rest, obs_binary_config())
            .map_err(|e| corrupt(e.to_string()))?;
        if read != rest.len() {
            return Err(corrupt(format!(
                "{} bytes after the observation",
                rest.len() - read
            )));
        }
        Ok(o)
    }
    match bytes.split_first() {
        Some((&OBS_COMPACT_V2, rest)) => Ok(whole::<CompactObs>(rest, corrupt)?.into()),
        Some((&OBS_BINARY_V1, rest)) => whole(rest, corrupt),
        Some((b'{', _)) => crate::store::record::decode("obs", bytes),
        _ => Err(corrupt("neither a binary nor a JSON observation".into())),
    }
}

fn create_encounter_tables(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(ENCOUNTERS)?;
    txn.open_table(ENC_BY_PATIENT)?;
    txn.open_table(ENC_BY_VISIT)?;
    txn.open_table(ENC_BY_TIME)?;
    Ok(())
}

fn create_obs_tables(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(OBS)?;
    txn.open_table(OBS_BY_GROUP)?;
    for t in [OBS_CHART, OBS_BY_ENCOUNTER, OBS_BY_PATIENT, OBS_BY_UPDATED] {
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

fn time_key(e: &EncounterRecord) -> String {
    key(&["all", &e.datetime, &e.uuid])
}

fn index_encounter(
    txn: &WriteTransaction,
    old: Option<&EncounterRecord>,
    e: &EncounterRecord,
) -> StoreResult<()> {
    let mut by_patient = txn.open_table(ENC_BY_PATIENT)?;
    let mut by_visit = txn.open_table(ENC_BY_VISIT)?;
    let mut by_time = txn.open_table(ENC_BY_TIME)?;
    if let Some(old) = old {
        let (p, v) = encounter_keys(old);
        by_time.remove(time_key(old).as_str())?;
        by_patient.remove(p.as_str())?;
        if let Some(v) = v {
            by_visit.remove(v.as_str())?;
        }
    }
    let f = voided_flag(e.voiding.voided);
    let (p, v) = encounter_keys(e);
    by_time.insert(time_key(e).as_str(), f)?;
    by_patient.insert(p.as_str(), f)?;
    if let Some(v) = v {
        by_visit.insert(v.as_str(), f)?;
    }
    Ok(())
}

/// When an observation last changed (key form): made, changed or voided, the latest.
pub fn last_updated(o: &ObsRecord) -> &str {
    [
        o.audit.date_changed.as_deref(),
        o.voiding.date_voided.as_deref(),
    ]
    .into_iter()
    .flatten()
    .fold(o.audit.date_created.as_str(), |latest, t| latest.max(t))
}

/// An observation's binary index keys but the chart's (whose value is the observation).
fn obs_keys(o: &ObsRecord) -> [Option<(CoveringIndex, Vec<u8>)>; 3] {
    let by_encounter = o.encounter.as_ref().map(|e| {
        let mut k = Vec::with_capacity(40);
        Uid::key_bytes(e, &mut k);
        Uid::key_bytes(&o.uuid, &mut k);
        (OBS_BY_ENCOUNTER, k)
    });
    let mut by_patient = Vec::with_capacity(48);
    Uid::key_bytes(&o.person, &mut by_patient);
    time_key_bytes(&o.datetime, &mut by_patient);
    Uid::key_bytes(&o.uuid, &mut by_patient);
    let mut by_updated = Vec::with_capacity(28);
    time_key_bytes(last_updated(o), &mut by_updated);
    Uid::key_bytes(&o.uuid, &mut by_updated);
    [
        by_encounter,
        Some((OBS_BY_PATIENT, by_patient)),
        Some((OBS_BY_UPDATED, by_updated)),
    ]
}

/// The binary index keys under one uuid part (an encounter's, a patient's): `[prefix,
/// after it)`, and where what follows the prefix begins.
fn under_uid(uuid: &str) -> (KeyRange, usize) {
    let mut prefix = Vec::with_capacity(20);
    Uid::key_bytes(uuid, &mut prefix);
    let len = prefix.len();
    let end = after_prefix(&prefix);
    ((prefix, end), len)
}

/// The patient-and-concept part of a chart key: every observation of one concept of one
/// patient sorts under it, oldest first.
fn chart_prefix(patient: &str, concept: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(64);
    Uid::key_bytes(patient, &mut k);
    Uid::key_bytes(concept, &mut k);
    k
}

/// An observation's key in the chart's index.
fn chart_key(o: &ObsRecord) -> Vec<u8> {
    let mut k = chart_prefix(&o.person, &o.concept);
    time_key_bytes(&o.datetime, &mut k);
    Uid::key_bytes(&o.uuid, &mut k);
    k
}

/// The first key after every key that starts with `prefix`.
fn after_prefix(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    vec![u8::MAX; prefix.len() + 1]
}

/// The chart keys of one patient's observations of one concept made between `from` and
/// `to` (key-form datetimes, inclusive, either open).
fn chart_range(patient: &str, concept: &str, from: Option<&str>, to: Option<&str>) -> KeyRange {
    let prefix = chart_prefix(patient, concept);
    let at = |t: &str| {
        let mut k = prefix.clone();
        time_key_bytes(t, &mut k);
        k
    };
    let low = from.map_or_else(|| prefix.clone(), at);
    let high = after_prefix(&to.map_or_else(|| prefix.clone(), at));
    (low, high)
}

/// A chart entry's value: the observation's index flags, then its stored bytes.
fn chart_value(o: &ObsRecord) -> Vec<u8> {
    let mut v = vec![voided_flag(o.voiding.voided)];
    v.extend_from_slice(&encode_obs(o));
    v
}

fn index_obs(txn: &WriteTransaction, old: Option<&ObsRecord>, o: &ObsRecord) -> StoreResult<()> {
    let mut chart = txn.open_table(OBS_CHART)?;
    let mut by_group = txn.open_table(OBS_BY_GROUP)?;
    let group_key = |o: &ObsRecord| o.obs_group.as_ref().map(|g| key(&[g, &o.uuid]));
    if let Some(old) = old {
        for (table, k) in obs_keys(old).into_iter().flatten() {
            txn.open_table(table)?.remove(k.as_slice())?;
        }
        if let Some(k) = group_key(old) {
            by_group.remove(k.as_str())?;
        }
        chart.remove(chart_key(old).as_slice())?;
    }
    let f = voided_flag(o.voiding.voided);
    for (table, k) in obs_keys(o).into_iter().flatten() {
        txn.open_table(table)?
            .insert(k.as_slice(), [f].as_slice())?;
    }
    if let Some(k) = group_key(o) {
        by_group.insert(k.as_str(), f)?;
    }
    chart.insert(chart_key(o).as_slice(), chart_value(o).as_slice())?;
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
            .insert(e.uuid.as_str(), crate::store::record::encode(e).as_slice())?;
        index_encounter(txn, old, e)?;
    }
    {
        let mut obs = txn.open_table(OBS)?;
        for (_, o) in &change.obs {
            obs.insert(o.uuid.as_str(), encode_obs(o).as_slice())?;
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
        .map(|v| crate::store::record::decode("encounters", v.value()))
        .transpose()
}

pub fn obs(store: &Store, uuid: &str) -> StoreResult<Option<ObsRecord>> {
    let txn = store.begin_read()?;
    let t = txn.open_table(OBS)?;
    t.get(uuid)?.map(|v| decode_obs(v.value())).transpose()
}

fn read_all<T>(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    uuids: &[String],
    decode: impl Fn(&[u8]) -> StoreResult<T>,
) -> StoreResult<Vec<T>> {
    let keys: Vec<&str> = uuids.iter().map(String::as_str).collect();
    let mut out = Vec::with_capacity(uuids.len());
    for bytes in table.get_many(&keys)?.into_iter().flatten() {
        out.push(decode(bytes.value())?);
    }
    Ok(out)
}

fn decode_encounter(bytes: &[u8]) -> StoreResult<EncounterRecord> {
    crate::store::record::decode("encounters", bytes)
}

const EVERYTHING: Window = Window {
    start: 0,
    limit: usize::MAX,
    count_all: false,
};

/// The encounters of a visit, oldest first, voided ones left out.
pub fn of_visit(store: &Store, visit: &str) -> StoreResult<Vec<EncounterRecord>> {
    let txn = store.begin_read()?;
    let page = crate::store::record::scan(
        &txn.open_table(ENC_BY_VISIT)?,
        visit,
        VOIDED,
        false,
        EVERYTHING,
        |_| true,
    )?;
    read_all(&txn.open_table(ENCOUNTERS)?, &page.uuids, decode_encounter)
}

/// The datetimes (key form) of a visit's encounters that are not voided; keys only.
pub fn times_in_visit(store: &Store, visit: &str) -> StoreResult<Vec<String>> {
    let txn = store.begin_read()?;
    let mut times = Vec::new();
    crate::store::record::walk(&txn.open_table(ENC_BY_VISIT)?, visit, VOIDED, false, |k| {
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
    /// Any of these locations.
    pub locations: Option<Vec<String>>,
    /// A provider among the encounter's (FHIR's `participant`).
    pub provider: Option<String>,
    /// Key-form bounds (inclusive) of when the encounter last changed (`_lastUpdated`).
    pub updated: Option<(Option<String>, Option<String>)>,
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
    let needs_record = q.encounter_type.is_some()
        || q.form.is_some()
        || q.locations.is_some()
        || q.provider.is_some()
        || q.updated.is_some();
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
        let Ok(e) = crate::store::record::decode::<EncounterRecord>("encounters", bytes.value())
        else {
            return false;
        };
        let changed = e
            .audit
            .date_changed
            .as_deref()
            .unwrap_or(&e.audit.date_created);
        q.encounter_type
            .as_ref()
            .is_none_or(|t| &e.encounter_type == t)
            && q.form.as_ref().is_none_or(|f| e.form.as_ref() == Some(f))
            && q.locations
                .as_ref()
                .is_none_or(|l| e.location.as_ref().is_some_and(|x| l.contains(x)))
            && q.provider.as_ref().is_none_or(|p| {
                // A Practitioner is named by its provider's uuid, or its user's (as a
                // recorder is written).
                e.providers
                    .iter()
                    .any(|x| &x.provider == p || x.user.as_ref() == Some(p))
            })
            && q.updated.as_ref().is_none_or(|(from, to)| {
                from.as_deref().is_none_or(|f| changed >= f)
                    && to.as_deref().is_none_or(|t| changed <= t)
            })
    };
    let page = match (&q.visit, &q.patient) {
        (Some(v), _) => crate::store::record::scan(
            &txn.open_table(ENC_BY_VISIT)?,
            v,
            exclude,
            true,
            window,
            keep,
        )?,
        (None, Some(p)) => crate::store::record::scan(
            &txn.open_table(ENC_BY_PATIENT)?,
            p,
            exclude,
            true,
            window,
            keep,
        )?,
        // Every patient's encounters of a period: the facility's index by time, bounded.
        (None, None) if q.from.is_some() || q.to.is_some() => {
            crate::store::record::scan_where_between(
                &txn.open_table(ENC_BY_TIME)?,
                "all",
                q.from.as_deref(),
                q.to.as_deref(),
                true,
                window,
                |k, flags| flags & exclude == 0 && keep(k),
            )?
        }
        (None, None) => Page::default(),
    };
    let out = read_all(&records, &page.uuids, decode_encounter)?;
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
    let (range, len) = under_uid(encounter);
    let page = crate::store::record::scan_keys(
        &txn.open_table(OBS_BY_ENCOUNTER)?,
        &range,
        len,
        false,
        EVERYTHING,
        |_, flags| flags & exclude == 0,
    )?;
    read_all(&txn.open_table(OBS)?, &page.uuids, decode_obs)
}

/// The observations of several encounters (not voided), by encounter, each in
/// `obs_of_encounter`'s order: read in one transaction, the index once and the records once
/// (a page of encounters, on PostgreSQL, in two statements instead of four per encounter).
pub fn obs_of_encounters(
    store: &Store,
    encounters: &[&str],
) -> StoreResult<std::collections::HashMap<String, Vec<ObsRecord>>> {
    let txn = store.begin_read()?;
    let ranges: Vec<KeyRange> = encounters.iter().map(|e| under_uid(e).0).collect();
    // (the encounter's position in `encounters`, the observation's uuid)
    let mut found: Vec<(usize, String)> = Vec::new();
    // The rows come range after range, in the order of the ranges.
    let mut at = 0;
    for (k, v) in txn.open_table(OBS_BY_ENCOUNTER)?.rows_in_ranges(&ranges)? {
        if v.first().is_none_or(|flags| flags & VOIDED != 0) {
            continue;
        }
        while at < ranges.len() && !k.starts_with(&ranges[at].0) {
            at += 1;
        }
        if at == ranges.len() {
            break;
        }
        let uuid = crate::store::record::key_uuid(&k, ranges[at].0.len())?;
        found.push((at, uuid));
    }
    let uuids: Vec<String> = found.iter().map(|(_, u)| u.clone()).collect();
    let mut by_encounter: std::collections::HashMap<String, Vec<ObsRecord>> = encounters
        .iter()
        .map(|e| (e.to_string(), Vec::new()))
        .collect();
    for ((at, _), o) in found
        .iter()
        .zip(read_all(&txn.open_table(OBS)?, &uuids, decode_obs)?)
    {
        if let Some(list) = by_encounter.get_mut(encounters[*at]) {
            list.push(o);
        }
    }
    Ok(by_encounter)
}

/// The members of an obs group.
pub fn group_members(store: &Store, group: &str) -> StoreResult<Vec<ObsRecord>> {
    let txn = store.begin_read()?;
    let page = crate::store::record::scan(
        &txn.open_table(OBS_BY_GROUP)?,
        group,
        VOIDED,
        false,
        EVERYTHING,
        |_| true,
    )?;
    read_all(&txn.open_table(OBS)?, &page.uuids, decode_obs)
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
    /// Key-form bounds (inclusive) of when the observation was made (FHIR's `date`).
    pub date: Option<(Option<String>, Option<String>)>,
    /// Key-form bounds (inclusive) of when it last changed (`_lastUpdated`): without a
    /// patient, the only way in (the `obs_updated` index, oldest change first).
    pub updated: Option<(Option<String>, Option<String>)>,
    /// Tests of the value, all of which must hold (FHIR's `value-*`).
    pub values: Vec<super::ValueFilter>,
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
    let within = |t: &str, bounds: &Option<(Option<String>, Option<String>)>| {
        bounds.as_ref().is_none_or(|(from, to)| {
            from.as_deref().is_none_or(|f| t >= f) && to.as_deref().is_none_or(|u| t <= u)
        })
    };
    // Without a patient the `updated` index is read, and the concepts are tested on the
    // record; with one, the patient's (and concept's) index already holds them.
    let by_updated = q.encounter.is_none() && q.patient.is_none();
    let needs_record = q.encounter_type.is_some()
        || q.date.is_some()
        || !q.values.is_empty()
        || (q.updated.is_some() && !by_updated)
        || (by_updated && !q.concepts.is_empty());
    // What the keys cannot tell is tested on the observation (and its encounter's type).
    let admits_record = |o: &ObsRecord| -> bool {
        if !within(&o.datetime, &q.date)
            || !q.values.iter().all(|f| f.admits(&o.value))
            || (!by_updated && !within(last_updated(o), &q.updated))
            || (by_updated && !q.concepts.is_empty() && !q.concepts.contains(&o.concept))
        {
            return false;
        }
        let Some(wanted) = &q.encounter_type else {
            return true;
        };
        o.encounter
            .as_ref()
            .and_then(|e| encounters.get(e.as_str()).ok().flatten())
            .and_then(|b| {
                crate::store::record::decode::<EncounterRecord>("encounters", b.value()).ok()
            })
            .is_some_and(|e| &e.encounter_type == wanted)
    };
    let admits = |uuid: &str| -> bool {
        !needs_record
            || records
                .get(uuid)
                .ok()
                .flatten()
                .and_then(|b| decode_obs(b.value()).ok())
                .is_some_and(|o| admits_record(&o))
    };
    // A binary key's uuid part, made text only when the record must be read.
    let admits_part =
        |part: &[u8]| !needs_record || Uid::from_key_bytes(part).is_some_and(|u| admits(&u));
    let page = match (&q.encounter, &q.patient) {
        (Some(e), _) => {
            let (range, len) = under_uid(e);
            crate::store::record::scan_keys(
                &txn.open_table(OBS_BY_ENCOUNTER)?,
                &range,
                len,
                false,
                window,
                |part, flags| flags & exclude == 0 && admits_part(part),
            )?
        }
        (None, Some(p)) if !q.concepts.is_empty() => {
            // The chart's index holds the observations: each concept's run read at once
            // (only the dates asked, when asked), merged newest first, then cut.
            let (from, to) = q.date.clone().unwrap_or_default();
            let ranges: Vec<KeyRange> = q
                .concepts
                .iter()
                .map(|c| chart_range(p, c, from.as_deref(), to.as_deref()))
                .collect();
            // (where the datetime begins in the key, key, value)
            let mut hits: Vec<(usize, Vec<u8>, Vec<u8>)> = Vec::new();
            let admitted = |v: &[u8]| -> StoreResult<bool> {
                let Some((&flags, stored)) = v.split_first() else {
                    return Ok(false);
                };
                Ok(flags & exclude == 0 && (!needs_record || admits_record(&decode_obs(stored)?)))
            };
            let chart = txn.open_table(OBS_CHART)?;
            if let [(low, high)] = ranges.as_slice()
                && !window.count_all
            {
                // One concept, no total: newest first, stopping once the page and one more
                // are found (the latest weight reads one entry, not years of them).
                let enough = window.start.saturating_add(window.limit).saturating_add(1);
                for row in chart.range::<&[u8]>(low.as_slice()..high.as_slice())?.rev() {
                    let (k, v) = row?;
                    if admitted(v.value())? {
                        let k = k.value().to_vec();
                        hits.push((chart_suffix_start(&k), k, v.value().to_vec()));
                        if hits.len() >= enough {
                            break;
                        }
                    }
                }
            } else {
                for (k, v) in chart.rows_in_ranges(&ranges)? {
                    if admitted(&v)? {
                        hits.push((chart_suffix_start(&k), k, v));
                    }
                }
                // Newest first: by the key's datetime and uuid, after patient and concept.
                hits.sort_by(|(a, ka, _), (b, kb, _)| kb[*b..].cmp(&ka[*a..]));
            }
            let total = hits.len();
            let out = hits
                .into_iter()
                .skip(window.start)
                .take(window.limit)
                .map(|(_, _, v)| decode_obs(&v[1..]))
                .collect::<StoreResult<Vec<ObsRecord>>>()?;
            let page = Page {
                uuids: out.iter().map(|o| o.uuid.clone()).collect(),
                more: window.start.saturating_add(window.limit) < total,
                total: window.count_all.then_some(total),
            };
            return Ok((out, page));
        }
        (None, Some(p)) => {
            let (range, len) = under_uid(p);
            // After the patient, the datetime's 8 bytes, then the uuid.
            crate::store::record::scan_keys(
                &txn.open_table(OBS_BY_PATIENT)?,
                &range,
                len + 8,
                true,
                window,
                |part, flags| flags & exclude == 0 && admits_part(part),
            )?
        }
        (None, None) => match &q.updated {
            Some((from, to)) => {
                // Inclusive at both ends: every key of the instant `to` sorts before the
                // key after its 8 bytes.
                let mut low = Vec::new();
                if let Some(from) = from {
                    time_key_bytes(from, &mut low);
                }
                let high = match to {
                    Some(to) => {
                        let mut k = Vec::new();
                        time_key_bytes(to, &mut k);
                        after_prefix(&k)
                    }
                    None => vec![u8::MAX; 9],
                };
                crate::store::record::scan_keys(
                    &txn.open_table(OBS_BY_UPDATED)?,
                    &(low, high),
                    8,
                    false,
                    window,
                    |part, flags| flags & exclude == 0 && admits_part(part),
                )?
            }
            None => Page::default(),
        },
    };
    let out = read_all(&records, &page.uuids, decode_obs)?;
    Ok((out, page))
}

/// Where what follows the patient and the concept in a chart key (its datetime and uuid)
/// begins.
fn chart_suffix_start(key: &[u8]) -> usize {
    let after_patient = Uid::key_len(key).unwrap_or(key.len());
    after_patient + Uid::key_len(&key[after_patient..]).unwrap_or(key.len() - after_patient)
}

/// The concepts a patient has observations of (voided ones left out), from the chart
/// index's keys and flags (`patient concept datetime uuid`), in the index's order.
pub fn concepts_of_patient(store: &Store, patient: &str) -> StoreResult<Vec<String>> {
    let txn = store.begin_read()?;
    let mut prefix = Vec::new();
    Uid::key_bytes(patient, &mut prefix);
    let range = (prefix.clone(), after_prefix(&prefix));
    let mut concepts: Vec<String> = Vec::new();
    let mut last: Vec<u8> = Vec::new();
    for (k, v) in txn.open_table(OBS_CHART)?.rows_in_ranges(&[range])? {
        if v.first().is_none_or(|flags| flags & VOIDED != 0) {
            continue;
        }
        let concept = &k[prefix.len()..chart_suffix_start(&k)];
        if concept != last.as_slice() {
            last = concept.to_vec();
            concepts.push(Uid::from_key_bytes(concept).ok_or_else(|| {
                crate::store::StoreError::Corrupt {
                    table: "obs_chart",
                    detail: "a key whose concept is not one".into(),
                }
            })?);
        }
    }
    Ok(concepts)
}

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE_ENCOUNTERS: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &ENCOUNTER_RECORDS,
    of_patient: |store, patient| crate::store::record::uuids_under(store, ENC_BY_PATIENT, patient),
    adjust: None,
    counted_as: None,
};

/// Where a merge finds a patient's records of this table (voided ones included).
pub const MERGE_OBS: crate::store::record::MergeMove = crate::store::record::MergeMove {
    table: &OBS_RECORDS,
    of_patient: |store, patient| {
        let txn = store.begin_read()?;
        let (range, len) = under_uid(patient);
        let page = crate::store::record::scan_keys(
            &txn.open_table(OBS_BY_PATIENT)?,
            &range,
            len + 8,
            false,
            EVERYTHING,
            |_, _| true,
        )?;
        Ok(page.uuids)
    },
    adjust: None,
    counted_as: Some("observations"),
};

/// Whose an encounter is, of which type, where: what a report's listing reads of each
/// encounter of a month, decoded without the rest of the record.
#[derive(serde::Deserialize)]
pub struct EncounterBrief {
    pub patient: String,
    pub encounter_type: String,
    #[serde(default)]
    pub location: Option<String>,
}

/// The encounters between `from` and `to` (key form, inclusive, either open), oldest
/// first, voided ones left out, in the caller's read transaction (reports).
pub fn briefs_between_in(
    txn: &ReadTransaction,
    from: Option<&str>,
    to: Option<&str>,
) -> StoreResult<Vec<EncounterBrief>> {
    crate::store::record::records_between_in(txn, ENCOUNTERS, ENC_BY_TIME, "all", from, to, |b| {
        crate::store::record::decode("encounters", b)
    })
}

/// A patient's encounters between `from` and `to`, oldest first, voided ones left out.
pub fn of_patient_between_in(
    txn: &ReadTransaction,
    patient: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> StoreResult<Vec<EncounterRecord>> {
    crate::store::record::records_between_in(
        txn,
        ENCOUNTERS,
        ENC_BY_PATIENT,
        patient,
        from,
        to,
        decode_encounter,
    )
}

/// A patient's observations of one concept between `from` and `to`, oldest first, voided
/// ones left out (the chart's index: one range read, no record).
pub fn obs_of_concept_in(
    txn: &ReadTransaction,
    patient: &str,
    concept: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> StoreResult<Vec<ObsRecord>> {
    let range = chart_range(patient, concept, from, to);
    let mut out = Vec::new();
    for (_, v) in txn.open_table(OBS_CHART)?.rows_in_ranges(&[range])? {
        if let Some((&flags, stored)) = v.split_first()
            && flags & VOIDED == 0
        {
            out.push(decode_obs(stored)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store written before the index by time (version 2) has it rebuilt when opened,
    /// so the reports find its encounters.
    #[test]
    fn an_older_store_gets_the_encounters_index_by_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        let e = EncounterRecord {
            v: 1,
            uuid: "encounter-1".into(),
            patient: "patient-1".into(),
            encounter_type: "type-1".into(),
            datetime: "2026-01-10T09:00:00.000Z".into(),
            location: None,
            form: None,
            visit: None,
            providers: Vec::new(),
            audit: Audit::new("admin", chrono::Utc::now()),
            voiding: Voiding::default(),
        };
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            write(
                &s,
                &Change {
                    encounter: Some((None, &e)),
                    obs: Vec::new(),
                },
            )
            .unwrap();
            // As version 2 left it: no entry by time.
            s.write(|txn| {
                txn.open_table(ENC_BY_TIME)?.remove(time_key(&e).as_str())?;
                Ok(())
            })
            .unwrap();
            s.set_meta("schema_version", "2").unwrap();
            let txn = s.begin_read().unwrap();
            assert!(briefs_between_in(&txn, None, None).unwrap().is_empty());
        }
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        let txn = s.begin_read().unwrap();
        let found = briefs_between_in(
            &txn,
            Some("2026-01-01T00:00:00.000Z"),
            Some("2026-01-31T23:59:59.999Z"),
        )
        .unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].patient.as_str(), found[0].encounter_type.as_str()),
            (e.patient.as_str(), e.encounter_type.as_str())
        );
        assert_eq!(found[0].location, e.location);
    }
    /// A store of version 3 had no observations by change; opening it builds the index, so
    /// `_lastUpdated` finds what was recorded before.
    #[test]
    fn an_older_store_gets_the_observations_index_by_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        let o = record(
            "obs-1",
            crate::domains::encounter::ObsValue::Numeric(38.5),
            false,
        );
        let changed = (
            Some("2026-11-01T00:00:00.000Z".to_string()),
            Some("2026-11-01T23:59:59.999Z".to_string()),
        );
        let query = ObsQuery {
            updated: Some(changed.clone()),
            ..ObsQuery::default()
        };
        let all = Window {
            start: 0,
            limit: 100,
            count_all: true,
        };
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            write(
                &s,
                &Change {
                    encounter: None,
                    obs: vec![(None, &o)],
                },
            )
            .unwrap();
            assert_eq!(list_obs(&s, &query, all).unwrap().0, vec![o.clone()]);
            // As version 3 left it: no entry by change.
            s.write(|txn| {
                let [.., by_updated] = obs_keys(&o);
                let (table, k) = by_updated.unwrap();
                txn.open_table(table)?.remove(k.as_slice())?;
                Ok(())
            })
            .unwrap();
            s.set_meta("schema_version", "3").unwrap();
            assert!(list_obs(&s, &query, all).unwrap().0.is_empty());
        }
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        let (found, page) = list_obs(&s, &query, all).unwrap();
        assert_eq!(found, vec![o.clone()]);
        assert_eq!(page.total, Some(1));
        // The day before names nothing.
        let before = ObsQuery {
            updated: Some((None, Some("2026-10-31T23:59:59.999Z".into()))),
            ..ObsQuery::default()
        };
        assert!(list_obs(&s, &before, all).unwrap().0.is_empty());
    }

    /// A store written by version 4 (observations in the first binary form, indexed by
    /// patient and concept with text keys) gets the chart's covering index built from its
    /// records when opened, its old index emptied, and answers the chart as before; what
    /// is written afterwards is compact and found with what was there.
    #[test]
    fn a_version_4_store_gets_the_charts_covering_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let patient = "0b3c5a7e-1f2d-4c6b-8a9e-0d1c2b3a4f5e";
        let weight = "5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let mut old = record(
            "0b3c5a7e-0000-4c6b-8a9e-0d1c2b3a4f5e",
            ObsValue::Numeric(61.5),
            false,
        );
        (old.person, old.concept) = (patient.into(), weight.into());
        let (query, all) = chart_query(patient, weight);
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            // As version 4 left it.
            s.write(|txn| {
                txn.open_table(OBS)?
                    .insert(old.uuid.as_str(), encode_obs_v1(&old).as_slice())?;
                txn.open_table(OBS_BY_CONCEPT_BEFORE_5)?.insert(
                    key(&[patient, weight, &old.datetime, &old.uuid]).as_str(),
                    0u8,
                )?;
                for (table, k) in obs_keys(&old).into_iter().flatten() {
                    txn.open_table(table)?
                        .insert(k.as_slice(), [0u8].as_slice())?;
                }
                Ok(())
            })
            .unwrap();
            s.set_meta("schema_version", "4").unwrap();
            assert!(list_obs(&s, &query, all).unwrap().0.is_empty());
        }
        // Checked before an upgrade: said, and its indexes not compared with version 5's.
        let report = crate::store::check::check_store(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert!(report.problems[0].starts_with("the store is at version 4 "));
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(
            s.meta("schema_version").unwrap(),
            Some(crate::store::SCHEMA_VERSION.to_string())
        );
        assert_eq!(s.meta("upgrading_from").unwrap(), None);
        assert_eq!(stored_form(&s, &old.uuid), OBS_COMPACT_V2);
        let (found, page) = list_obs(&s, &query, all).unwrap();
        assert_eq!(found, vec![old.clone()]);
        assert_eq!(page.total, Some(1));
        assert_eq!(concepts_of_patient(&s, patient).unwrap(), vec![weight]);
        {
            let txn = s.begin_read().unwrap();
            // Gone (redb drops the table).
            assert!(
                txn.open_table(OBS_BY_CONCEPT_BEFORE_5)
                    .map_or(true, |t| t.is_empty().unwrap())
            );
            let between = obs_of_concept_in(&txn, patient, weight, None, None).unwrap();
            assert_eq!(between, vec![old.clone()]);
        }
        // A new observation, later, stored compact, comes first; voiding the old one
        // takes it out of the chart's answers.
        let mut new = old.clone();
        new.uuid = "0b3c5a7e-0001-4c6b-8a9e-0d1c2b3a4f5e".into();
        new.datetime = "2026-11-02T10:00:00.000Z".into();
        let mut voided = old.clone();
        voided.voiding.voided = true;
        write(
            &s,
            &Change {
                encounter: None,
                obs: vec![(None, &new), (Some(&old), &voided)],
            },
        )
        .unwrap();
        assert_eq!(obs(&s, &new.uuid).unwrap(), Some(new.clone()));
        assert_eq!(list_obs(&s, &query, all).unwrap().0, vec![new.clone()]);
        let with_voided = ObsQuery {
            include_voided: true,
            ..query.clone()
        };
        assert_eq!(
            list_obs(&s, &with_voided, all).unwrap().0,
            vec![new.clone(), voided.clone()]
        );
        // Only the day of the old one.
        let that_day = ObsQuery {
            include_voided: true,
            date: Some((
                Some("2026-11-01T00:00:00.000Z".into()),
                Some("2026-11-01T23:59:59.999Z".into()),
            )),
            ..query.clone()
        };
        assert_eq!(list_obs(&s, &that_day, all).unwrap().0, vec![voided]);
        drop(s);
        let report = crate::store::check::check_store(&path, &crate::domains::REGISTRY).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert!(report.index_entries > 0);
        let chart = report
            .tables
            .iter()
            .find(|t| t.name == "obs_chart")
            .unwrap();
        assert_eq!(chart.entries, 2);
        assert!(chart.stored_bytes > 0 && chart.disk_bytes >= chart.stored_bytes);
        // The file: its pages in use hold every table, and the file holds them.
        let tables: u64 = report.tables.iter().map(|t| t.disk_bytes).sum();
        assert!(report.allocated_bytes >= tables && tables > 0);
        assert!(report.file_bytes >= report.allocated_bytes);
        assert!(
            !report
                .tables
                .iter()
                .any(|t| t.name == "obs_by_patient_concept")
        );
        // A chart entry that says other than its record is reported.
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            let mut changed = new.clone();
            changed.value = ObsValue::Numeric(99.0);
            s.write(|txn| {
                txn.open_table(OBS_CHART)?
                    .insert(chart_key(&new).as_slice(), chart_value(&changed).as_slice())?;
                Ok(())
            })
            .unwrap();
        }
        let report = crate::store::check::check_store(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert!(
            report.problems[0].starts_with("obs_chart ")
                && report.problems[0].ends_with(": differs from its record"),
            "{}",
            report.problems[0]
        );
    }

    fn stored_form(s: &Store, uuid: &str) -> u8 {
        let txn = s.begin_read().unwrap();
        let t = txn.open_table(OBS).unwrap();
        t.get(uuid).unwrap().unwrap().value()[0]
    }

    /// An upgrade interrupted after its first batch (the store marked with the new version,
    /// the place reached recorded) goes on from there when the store is opened again.
    #[test]
    fn an_interrupted_upgrade_resumes_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let patient = "0b3c5a7e-1f2d-4c6b-8a9e-0d1c2b3a4f5e";
        let weight = "5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let obs_of = |uuid: &str, day: u32| {
            let mut o = record(uuid, ObsValue::Numeric(60.0 + day as f64), false);
            (o.person, o.concept) = (patient.into(), weight.into());
            o.datetime = format!("2026-11-{day:02}T10:00:00.000Z");
            o
        };
        let (done, left) = (
            obs_of("0b3c5a7e-0000-4c6b-8a9e-0d1c2b3a4f5e", 1),
            obs_of("0b3c5a7e-0001-4c6b-8a9e-0d1c2b3a4f5e", 2),
        );
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            write(
                &s,
                &Change {
                    encounter: None,
                    obs: vec![(None, &done)],
                },
            )
            .unwrap();
            // The second still as version 4 wrote it: first binary form, no chart entry.
            s.write(|txn| {
                txn.open_table(OBS)?
                    .insert(left.uuid.as_str(), encode_obs_v1(&left).as_slice())?;
                for (table, k) in obs_keys(&left).into_iter().flatten() {
                    txn.open_table(table)?
                        .insert(k.as_slice(), [0u8].as_slice())?;
                }
                Ok(())
            })
            .unwrap();
            s.set_meta("upgrading_from", "4").unwrap();
            s.set_meta("upgrade_cursor:obs", &done.uuid).unwrap();
        }
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(s.meta("upgrading_from").unwrap(), None);
        assert_eq!(s.meta("upgrade_cursor:obs").unwrap(), None);
        assert_eq!(stored_form(&s, &left.uuid), OBS_COMPACT_V2);
        let (query, all) = chart_query(patient, weight);
        assert_eq!(
            list_obs(&s, &query, all).unwrap().0,
            vec![left.clone(), done.clone()]
        );
        // Without a total, one concept's entries are read newest first until the page and
        // one more are found: the page, and whether more follow, are the same.
        let page_of = |start: usize| Window {
            start,
            limit: 1,
            count_all: false,
        };
        let (first, page) = list_obs(&s, &query, page_of(0)).unwrap();
        assert_eq!((first, page.more, page.total), (vec![left], true, None));
        let (second, page) = list_obs(&s, &query, page_of(1)).unwrap();
        assert_eq!((second, page.more), (vec![done], false));
        assert!(list_obs(&s, &query, page_of(2)).unwrap().0.is_empty());
    }

    /// A store written by version 7: the observations' indexes by encounter, patient and
    /// last change in text; upgraded, they answer as before, in binary.
    #[test]
    fn a_version_7_store_gets_its_observation_indexes_in_binary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let (first, second) = two_obs_of_one_encounter();
        let mut voided = first.clone();
        voided.uuid = "0b3c5a7e-0002-4c6b-8a9e-0d1c2b3a4f5e".into();
        voided.voiding.voided = true;
        let all = Window {
            start: 0,
            limit: 10,
            count_all: true,
        };
        let uuids = |found: Vec<ObsRecord>| found.into_iter().map(|o| o.uuid).collect::<Vec<_>>();
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            let obs = [&first, &second, &voided];
            write(
                &s,
                &Change {
                    encounter: None,
                    obs: obs.iter().map(|o| (None, *o)).collect(),
                },
            )
            .unwrap();
            // As version 7 left them: text keys, and no binary index.
            s.write(|txn| {
                for t in [OBS_BY_ENCOUNTER, OBS_BY_PATIENT, OBS_BY_UPDATED] {
                    txn.delete_table(t)?;
                }
                let [by_encounter, by_patient, by_updated] = OBS_INDEXES_BEFORE_8;
                for o in obs {
                    let f = voided_flag(o.voiding.voided);
                    let e = o.encounter.as_deref().unwrap();
                    txn.open_table(by_encounter)?
                        .insert(key(&[e, &o.uuid]).as_str(), f)?;
                    txn.open_table(by_patient)?
                        .insert(key(&[&o.person, &o.datetime, &o.uuid]).as_str(), f)?;
                    txn.open_table(by_updated)?
                        .insert(key(&["all", last_updated(o), &o.uuid]).as_str(), f)?;
                }
                Ok(())
            })
            .unwrap();
            s.set_meta("schema_version", "7").unwrap();
        }
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(s.meta("upgrading_from").unwrap(), None);
        let by_patient = ObsQuery {
            patient: Some(first.person.clone()),
            ..ObsQuery::default()
        };
        let (found, page) = list_obs(&s, &by_patient, all).unwrap();
        assert_eq!(
            uuids(found),
            [second.uuid.clone(), first.uuid.clone()],
            "newest first, voided left out"
        );
        assert_eq!(page.total, Some(2));
        let by_encounter = ObsQuery {
            encounter: first.encounter.clone(),
            ..ObsQuery::default()
        };
        assert_eq!(
            uuids(list_obs(&s, &by_encounter, all).unwrap().0),
            [first.uuid.clone(), second.uuid.clone()]
        );
        let encounter = first.encounter.as_deref().unwrap();
        let of = obs_of_encounters(&s, &[encounter, "another"]).unwrap();
        assert_eq!(
            uuids(of[encounter].clone()),
            [first.uuid.clone(), second.uuid.clone()]
        );
        assert!(of["another"].is_empty());
        assert_eq!(obs_of_encounter(&s, encounter, true).unwrap().len(), 3);
        // Changed on the first of November, inclusive at both ends.
        let first_day = ObsQuery {
            updated: Some((
                Some("2026-11-01T10:00:01.000Z".into()),
                Some("2026-11-01T11:00:00.000Z".into()),
            )),
            ..ObsQuery::default()
        };
        assert_eq!(
            uuids(list_obs(&s, &first_day, all).unwrap().0),
            std::slice::from_ref(&first.uuid)
        );
        {
            let txn = s.begin_read().unwrap();
            for index in OBS_INDEXES_BEFORE_8 {
                assert!(
                    txn.open_table(index)
                        .map_or(true, |t| t.is_empty().unwrap())
                );
            }
        }
        // A merge finds every one of the patient's observations, the voided one too.
        assert_eq!((MERGE_OBS.of_patient)(&s, &first.person).unwrap().len(), 3);
        drop(s);
        let report = crate::store::check::check_store(&path, &crate::domains::REGISTRY).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }

    /// An upgrade an older build began and did not end (its cursor placed after an
    /// observation that build indexed its own way) is started again by this one.
    #[test]
    fn an_upgrade_an_older_build_left_unfinished_starts_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let (first, second) = two_obs_of_one_encounter();
        {
            let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
            let change = Change {
                encounter: None,
                obs: vec![(None, &first), (None, &second)],
            };
            write(&s, &change).unwrap();
            // As the version 7 build left it when stopped: this version's binary keys
            // missing, its cursor after the first observation.
            s.write(|txn| {
                for o in [&first, &second] {
                    for (table, k) in obs_keys(o).into_iter().flatten() {
                        txn.open_table(table)?.remove(k.as_slice())?;
                    }
                }
                Ok(())
            })
            .unwrap();
            s.set_meta("schema_version", "7").unwrap();
            s.set_meta("upgrading_from", "4").unwrap();
            s.set_meta("upgrade_cursor:obs", &first.uuid).unwrap();
        }
        let s = Store::open(&path, &crate::domains::REGISTRY).unwrap();
        assert_eq!(s.meta("upgrading_from").unwrap(), None);
        let by_patient = ObsQuery {
            patient: Some(first.person.clone()),
            ..ObsQuery::default()
        };
        let all = Window {
            start: 0,
            limit: 10,
            count_all: true,
        };
        assert_eq!(list_obs(&s, &by_patient, all).unwrap().1.total, Some(2));
        drop(s);
        let report = crate::store::check::check_store(&path, &crate::domains::REGISTRY).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }

    /// Two observations of one encounter, the second a day later.
    fn two_obs_of_one_encounter() -> (ObsRecord, ObsRecord) {
        let mut first = record(
            "0b3c5a7e-0000-4c6b-8a9e-0d1c2b3a4f5e",
            ObsValue::Numeric(61.5),
            false,
        );
        first.encounter = Some("0b3c5a7e-1111-4c6b-8a9e-0d1c2b3a4f5e".into());
        let mut second = first.clone();
        second.uuid = "0b3c5a7e-0001-4c6b-8a9e-0d1c2b3a4f5e".into();
        second.datetime = "2026-11-02T10:00:00.000Z".into();
        second.audit.date_created = "2026-11-02T10:00:01.000Z".into();
        (first, second)
    }

    /// A patient's observations of one concept, all of them, counted.
    fn chart_query(patient: &str, concept: &str) -> (ObsQuery, Window) {
        let query = ObsQuery {
            patient: Some(patient.into()),
            concepts: vec![concept.into()],
            ..ObsQuery::default()
        };
        let all = Window {
            start: 0,
            limit: 100,
            count_all: true,
        };
        (query, all)
    }

    use crate::domains::encounter::ObsValue;
    use crate::store::record::{Audit, Voiding};

    fn record(uuid: &str, value: ObsValue, full: bool) -> ObsRecord {
        let some = |s: &str| full.then(|| s.to_string());
        ObsRecord {
            v: 1,
            uuid: uuid.into(),
            person: "patient-1".into(),
            concept: "5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
            encounter: some("encounter-1"),
            obs_group: some("group-1"),
            datetime: "2026-11-01T10:00:00.000Z".into(),
            location: some("location-1"),
            value,
            comment: some("« fièvre » \"citée\"\n"),
            form_field_namespace: some("rfe-forms"),
            form_field_path: some("rfe-forms-temp"),
            status: "FINAL".into(),
            interpretation: some("ABNORMAL"),
            order: some("order-1"),
            previous_version: some("obs-0"),
            audit: Audit {
                creator: "admin".into(),
                date_created: "2026-11-01T10:00:01.000Z".into(),
                changed_by: some("nurse"),
                date_changed: some("2026-11-01T11:00:00.000Z"),
            },
            voiding: Voiding {
                voided: full,
                voided_by: some("nurse"),
                date_voided: some("2026-11-02T08:00:00.000Z"),
                void_reason: some("erreur de saisie"),
            },
        }
    }

    fn every_kind() -> Vec<ObsRecord> {
        let values = [
            ObsValue::Numeric(37.25),
            ObsValue::Numeric(-0.0),
            // Computed values (a BMI) with every digit significant.
            ObsValue::Numeric(70.0 / (1.75 * 1.75)),
            ObsValue::Numeric(0.1 + 0.2),
            ObsValue::Numeric(1.0 / 3.0),
            ObsValue::Coded("1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into()),
            ObsValue::Text("texte libre, accentué".into()),
            ObsValue::Boolean(true),
            ObsValue::Datetime("2026-10-31T23:59:59.000Z".into()),
            ObsValue::Date("2026-10-31".into()),
            ObsValue::Time("08:30:00".into()),
            ObsValue::Group,
        ];
        values
            .iter()
            .enumerate()
            .flat_map(|(i, v)| {
                [
                    record(&format!("a{i}"), v.clone(), false),
                    record(&format!("b{i}"), v.clone(), true),
                ]
            })
            .collect()
    }

    #[test]
    fn an_observation_reads_back_as_written_in_binary_and_in_the_earlier_json() {
        for o in every_kind() {
            let binary = encode_obs(&o);
            assert_eq!(binary[0], OBS_COMPACT_V2);
            assert_eq!(decode_obs(&binary).unwrap(), o);
            // The first binary form, which stores before version 5 hold, is still read,
            // and is larger.
            let first = encode_obs_v1(&o);
            assert_eq!(decode_obs(&first).unwrap(), o);
            assert!(
                binary.len() <= first.len(),
                "{} vs {}",
                binary.len(),
                first.len()
            );
            let json = serde_json::to_vec(&o).unwrap();
            assert!(
                binary.len() < json.len(),
                "{} vs {}",
                binary.len(),
                json.len()
            );
            assert_eq!(decode_obs(&json).unwrap(), o, "an earlier store's JSON");
            // A backup carries it as JSON, whichever way it was stored, and a restore
            // stores it in binary.
            let carried = (OBS_RECORDS.codec.to_json)(&binary).unwrap();
            assert_eq!(carried, (OBS_RECORDS.codec.to_json)(&json).unwrap());
            assert_eq!(carried, serde_json::to_value(&o).unwrap());
            assert_eq!((OBS_RECORDS.codec.from_json)(&carried).unwrap(), binary);
            // Through the backup's text, numbers come back to the last bit.
            let text = serde_json::to_string(&carried).unwrap();
            let read: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!((OBS_RECORDS.codec.from_json)(&read).unwrap(), binary);
        }
    }

    /// The stored layout of `OBS_BINARY_V1`, byte by byte: observations already on disk
    /// are read with it, so any change of `ObsRecord`, `ObsValue`, `Audit` or `Voiding`
    /// (fields added, removed or reordered, variants reordered) fails here and needs a new
    /// format tag.
    #[test]
    fn the_first_binary_layout_stays_readable() {
        let mut coded = record("u", ObsValue::Coded("x".into()), false);
        (coded.person, coded.concept, coded.datetime) = ("p".into(), "c".into(), "d".into());
        coded.encounter = Some("e".into());
        coded.audit.creator = "a".into();
        coded.audit.date_created = "t".into();
        let mut numeric = coded.clone();
        numeric.value = ObsValue::Numeric(37.5);
        numeric.voiding.voided = true;
        numeric.voiding.void_reason = Some("r".into());
        let head: &[u8] = &[
            OBS_BINARY_V1,
            1,
            1,
            b'u',
            1,
            b'p',
            1,
            b'c',
            1,
            1,
            b'e',
            0,
            1,
            b'd',
            0,
        ];
        let tail: &[u8] = &[
            0, 0, 0, 5, b'F', b'I', b'N', b'A', b'L', 0, 0, 0, 1, b'a', 1, b't', 0, 0,
        ];
        let layout = |value: &[u8], voiding: &[u8]| [head, value, tail, voiding].concat();
        let coded_bytes = layout(&[1, 1, b'x'], &[0, 0, 0, 0]);
        let numeric_bytes = layout(
            &[0, 0, 0, 0, 0, 0, 0xC0, 0x42, 0x40],
            &[1, 0, 0, 1, 1, b'r'],
        );
        assert_eq!(encode_obs_v1(&coded), coded_bytes);
        assert_eq!(decode_obs(&coded_bytes).unwrap(), coded);
        assert_eq!(encode_obs_v1(&numeric), numeric_bytes);
        assert_eq!(decode_obs(&numeric_bytes).unwrap(), numeric);
        // Every value kind keeps its variant number.
        for (value, number) in [
            (ObsValue::Numeric(0.0), 0),
            (ObsValue::Coded(String::new()), 1),
            (ObsValue::Text(String::new()), 2),
            (ObsValue::Boolean(false), 3),
            (ObsValue::Datetime(String::new()), 4),
            (ObsValue::Date(String::new()), 5),
            (ObsValue::Time(String::new()), 6),
            (ObsValue::Group, 7),
        ] {
            let mut o = coded.clone();
            o.value = value;
            assert_eq!(encode_obs_v1(&o)[head.len()], number, "{:?}", o.value);
        }
    }

    #[test]
    fn damaged_observation_bytes_are_reported_not_misread() {
        let binary = encode_obs(&every_kind()[1]);
        let mut longer = binary.clone();
        longer.push(0);
        for bad in [
            &binary[..binary.len() - 3],
            &longer[..],
            &[][..],
            &[7, 1, 2][..],
            // A string whose length claims the whole address space.
            &[
                OBS_BINARY_V1,
                1,
                253,
                255,
                255,
                255,
                255,
                255,
                255,
                255,
                255,
            ][..],
            &b"{\"uuid\": 1}"[..],
        ] {
            assert!(
                matches!(
                    decode_obs(bad),
                    Err(crate::store::StoreError::Corrupt { table: "obs", .. })
                ),
                "{bad:?}"
            );
            assert!((OBS_RECORDS.codec.decodes)(bad).is_err());
        }
        assert!((OBS_RECORDS.codec.from_json)(&serde_json::json!({"uuid": "x"})).is_err());
    }

    #[test]
    fn observations_stored_as_json_by_an_earlier_version_are_listed_with_new_ones() {
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let (mut old, mut new) = (
            record("0-old", ObsValue::Numeric(38.5), false),
            record("1-new", ObsValue::Numeric(37.0), false),
        );
        old.encounter = Some("encounter-1".into());
        new.encounter = Some("encounter-1".into());
        store
            .write(|txn| {
                txn.open_table(OBS)?.insert(
                    old.uuid.as_str(),
                    serde_json::to_vec(&old).unwrap().as_slice(),
                )?;
                index_obs(txn, None, &old)
            })
            .unwrap();
        write(
            &store,
            &Change {
                encounter: None,
                obs: vec![(None, &new)],
            },
        )
        .unwrap();
        assert_eq!(obs(&store, "0-old").unwrap(), Some(old.clone()));
        let mut listed = obs_of_encounter(&store, "encounter-1", false).unwrap();
        listed.sort_by(|a, b| a.uuid.cmp(&b.uuid));
        assert_eq!(listed, [old, new]);
    }

    #[test]
    fn a_page_of_encounters_reads_the_observations_each_would_read_alone() {
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        // Encounter uuids where one is a prefix of another, and one with none.
        let encounters = ["enc-1", "enc-10", "enc-2", "enc-empty"];
        let mut all = Vec::new();
        for (i, e) in ["enc-1", "enc-10", "enc-10", "enc-2", "enc-1"]
            .iter()
            .enumerate()
        {
            let mut o = record(&format!("{i}-obs"), ObsValue::Numeric(i as f64), false);
            o.encounter = Some(e.to_string());
            all.push(o);
        }
        let mut voided = record("9-voided", ObsValue::Numeric(0.0), false);
        voided.encounter = Some("enc-1".into());
        voided.voiding.voided = true;
        all.push(voided);
        write(
            &store,
            &Change {
                encounter: None,
                obs: all.iter().map(|o| (None, o)).collect(),
            },
        )
        .unwrap();
        let together = obs_of_encounters(&store, &encounters).unwrap();
        assert_eq!(together.len(), encounters.len());
        for e in encounters {
            assert_eq!(
                together[e],
                obs_of_encounter(&store, e, false).unwrap(),
                "{e}"
            );
        }
        assert_eq!(together["enc-1"].len(), 2, "the voided one left out");
        assert!(together["enc-empty"].is_empty());
    }
}
