//! Evaluating a report definition of the content over the store, as the reporting module
//! evaluates its cohort definitions: each criterion is a set of patients, composed with
//! AND, OR and NOT; a cross-tab cell is the patients of its row and its column; a line list
//! is one line per patient of its population.
//!
//! Everything is read in one read transaction (one snapshot, whatever the clinic writes
//! meanwhile), through the indexes: a criterion that can list its own patients (visits,
//! encounters and appointments in a period from the indexes by time, enrolments from the
//! enrolment records) gives the candidates, and every other criterion is then tested on
//! each candidate alone, through the indexes by patient (a patient's observations of one
//! concept in a period are one range read). Only when nothing in a criterion can list its
//! patients are all the patients' uuids read (keys only). Memory is the candidates and
//! what each of them needs, never all the observations.
//!
//! Voided patients and voided records count nowhere, as in the reporting module.

use crate::catalog::Catalog;
use crate::domains::{appointment, encounter, patient, programme, visit};
use crate::store::kv::ReadTransaction;
use crate::store::{PatientRecord, Store, StoreResult};
use crate::wire::datetime_key;
use chrono::{Datelike, Months, NaiveDate, NaiveTime, TimeZone, Utc};
use model::reports::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

/// A run's parameters: the period (whole days, UTC) and the location where one is taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Period {
    pub start: NaiveDate,
    pub end: NaiveDate,
    pub location: Option<String>,
}

impl Period {
    /// Whether a record at `location` counts for a criterion asking for the report's
    /// location (`wanted`): always when it does not ask or the report takes none.
    fn admits(&self, wanted: bool, location: Option<&str>) -> bool {
        match (&self.location, wanted) {
            (Some(l), true) => location == Some(l.as_str()),
            _ => true,
        }
    }
}

/// What a run gives: each data set's columns and rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportData {
    pub data_sets: Vec<DataSetData>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataSetData {
    pub name: String,
    pub columns: Vec<ColumnMeta>,
    /// Each row's cells, in the order of `columns`.
    pub rows: Vec<Vec<Cell>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnMeta {
    pub name: String,
    pub label: String,
    /// The Java class the reporting module names for the column's values.
    pub datatype: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Cell {
    /// A cohort: its patients' uuids.
    Cohort(Vec<String>),
    Text(String),
    Int(i64),
    Empty,
}

impl Cell {
    /// The cell as a spreadsheet shows it: a cohort as its size.
    pub fn as_text(&self) -> String {
        match self {
            Cell::Cohort(m) => m.len().to_string(),
            Cell::Text(t) => t.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Empty => String::new(),
        }
    }
}

/// Runs `report` for `period` in one snapshot of the store. `locale` names coded values.
pub fn evaluate(
    store: &Store,
    catalog: &Catalog,
    report: &ReportDefinition,
    period: &Period,
    locale: &str,
) -> StoreResult<ReportData> {
    let txn = store.begin_read()?;
    let mut eval = Evaluator::new(&txn, catalog, period, locale, YesNo::of(store, catalog));
    let mut data_sets = Vec::with_capacity(report.data_sets.len());
    for d in &report.data_sets {
        data_sets.push(eval.data_set(d)?);
    }
    Ok(ReportData { data_sets })
}

/// Which of `criteria` one patient meets on `day` (both report dates that day), in one
/// snapshot `txn`: the patient flags' evaluation. Every criterion is tested on her alone,
/// through the indexes by patient, so a chart's flags cost a few range reads whatever the
/// size of the store. A voided or unknown patient meets none.
pub fn met_by(
    txn: &ReadTransaction,
    catalog: &Catalog,
    yes_no: YesNo,
    criteria: &[&Criterion],
    patient: &str,
    day: NaiveDate,
) -> StoreResult<Vec<bool>> {
    let period = Period {
        start: day,
        end: day,
        location: None,
    };
    let mut eval = Evaluator::new(txn, catalog, &period, "en", yes_no);
    if eval.facts(patient)?.is_none() {
        return Ok(vec![false; criteria.len()]);
    }
    criteria.iter().map(|c| eval.test(c, patient)).collect()
}

/// The concepts a Boolean answer is (`concept.true`, `concept.false`): OpenMRS stores a
/// Boolean observation as that coded answer, so the reporting module's coded criteria and
/// columns see "Yes" and "No" where this store keeps `true` and `false`.
#[derive(Debug, Clone, Default)]
pub struct YesNo {
    pub yes: Option<String>,
    pub no: Option<String>,
}

impl YesNo {
    pub fn of(store: &Store, catalog: &Catalog) -> YesNo {
        let concept = |b| crate::clinic::boolean_concept(store, catalog, b).map(|c| c.uuid.clone());
        YesNo {
            yes: concept(true),
            no: concept(false),
        }
    }

    /// A Boolean answer as its concept; any other value as it is.
    fn coded<'v>(
        &self,
        value: &'v encounter::ObsValue,
    ) -> std::borrow::Cow<'v, encounter::ObsValue> {
        use encounter::ObsValue;
        match value {
            ObsValue::Boolean(b) => match if *b { &self.yes } else { &self.no } {
                Some(c) => std::borrow::Cow::Owned(ObsValue::Coded(c.clone())),
                None => std::borrow::Cow::Borrowed(value),
            },
            _ => std::borrow::Cow::Borrowed(value),
        }
    }
}

/// The bounds of a window in key form, inclusive (`None`: open).
type Bounds = (Option<String>, Option<String>);

struct Evaluator<'t> {
    txn: &'t ReadTransaction,
    catalog: &'t Catalog,
    period: &'t Period,
    locale: &'t str,
    yes_no: YesNo,
    /// What the tests read of each patient met (`None`: voided or gone).
    facts: HashMap<String, Option<Facts>>,
    /// Whole records, for the line lists' columns.
    records: HashMap<String, Option<PatientRecord>>,
    visits: HashMap<String, Vec<visit::VisitRecord>>,
    enrolments: HashMap<String, Vec<programme::EnrolmentRecord>>,
    appointments: HashMap<String, Vec<appointment::AppointmentRecord>>,
    everyone: Option<Rc<BTreeSet<String>>>,
    windows: HashMap<When, Bounds>,
    /// The visits and the encounters of a window, read once a run: a report's rows ask
    /// about the same month again and again.
    briefs: HashMap<(Kind, When), Rc<Vec<Brief>>>,
    /// Each criterion's patients, by the criterion's text: rows share criteria.
    cohorts: HashMap<String, Rc<BTreeSet<String>>>,
}

/// What the tests need of a patient, read from the record without the rest of it.
#[derive(Deserialize)]
struct StoredFacts {
    #[serde(default)]
    gender: String,
    #[serde(default)]
    birthdate: Option<String>,
    #[serde(default)]
    dead: bool,
    #[serde(default)]
    death_date: Option<String>,
    #[serde(default)]
    voided: bool,
}

struct Facts {
    /// `U` when unknown.
    gender: String,
    birth: Option<NaiveDate>,
    dead: bool,
    death: Option<NaiveDate>,
}

impl Facts {
    /// Whether the patient had died by the end of `end` (a death without a date counts).
    fn died_by(&self, end: NaiveDate) -> bool {
        self.dead && self.death.is_none_or(|d| d <= end)
    }
}

/// Which records a window's briefs are of.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Visits,
    Encounters,
}

/// A visit or an encounter as a lister reads it: whose, of which type, where.
struct Brief {
    patient: String,
    kind: String,
    location: Option<String>,
}

fn day_start(d: NaiveDate) -> String {
    datetime_key(Utc.from_utc_datetime(&d.and_time(NaiveTime::MIN)))
}

fn day_end(d: NaiveDate) -> String {
    let t = NaiveTime::from_hms_milli_opt(23, 59, 59, 999).expect("a valid time");
    datetime_key(Utc.from_utc_datetime(&d.and_time(t)))
}

/// `d` minus an amount of a unit, saturating at the calendar's start.
fn minus(d: NaiveDate, amount: u32, unit: AgeUnit) -> NaiveDate {
    match unit {
        AgeUnit::Days => d - chrono::Duration::days(i64::from(amount)),
        AgeUnit::Months => d
            .checked_sub_months(Months::new(amount))
            .unwrap_or(NaiveDate::MIN),
        AgeUnit::Years => d
            .checked_sub_months(Months::new(amount.saturating_mul(12)))
            .unwrap_or(NaiveDate::MIN),
    }
}

/// The day part of a stored date or datetime (`yyyy-mm-dd…`).
fn day_of(s: &str) -> Option<NaiveDate> {
    s.get(..10)
        .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
}

/// How cheaply a criterion lists its own patients (lower first), or `None` when it can
/// only test them: a month's visits before the dead (a scan of every patient's few bytes),
/// before a year's visits or an enrolment's whole history.
fn listing_rank(c: &Criterion) -> Option<u8> {
    match c {
        Criterion::Visit { when, .. }
        | Criterion::Encounter { when, .. }
        | Criterion::Appointment { when, .. } => Some(match when {
            When::Period => 0,
            When::MonthsBeforeEnd(_) => 2,
            _ => 3,
        }),
        Criterion::Died { .. } => Some(1),
        Criterion::Enrolled { .. } => Some(2),
        Criterion::All(items) => items
            .iter()
            .filter_map(listing_rank)
            .min()
            .map(|r| r.max(3)),
        Criterion::Any(items) => items
            .iter()
            .map(listing_rank)
            .collect::<Option<Vec<u8>>>()
            .map(|r| r.into_iter().max().unwrap_or(3).max(3)),
        _ => None,
    }
}

impl<'t> Evaluator<'t> {
    fn new(
        txn: &'t ReadTransaction,
        catalog: &'t Catalog,
        period: &'t Period,
        locale: &'t str,
        yes_no: YesNo,
    ) -> Self {
        Evaluator {
            txn,
            catalog,
            period,
            locale,
            yes_no,
            facts: HashMap::new(),
            records: HashMap::new(),
            visits: HashMap::new(),
            enrolments: HashMap::new(),
            appointments: HashMap::new(),
            everyone: None,
            windows: HashMap::new(),
            briefs: HashMap::new(),
            cohorts: HashMap::new(),
        }
    }

    /// A window's bounds, computed once per run: every candidate's every test asks.
    fn bounds(&mut self, when: When) -> Bounds {
        if let Some(b) = self.windows.get(&when) {
            return b.clone();
        }
        let b = self.window(when);
        self.windows.insert(when, b.clone());
        b
    }

    fn window(&self, when: When) -> Bounds {
        let (start, end) = (self.period.start, self.period.end);
        match when {
            When::Period | When::AtEnd => (Some(day_start(start)), Some(day_end(end))),
            When::BeforeStart => (
                None,
                Some(day_end(start.pred_opt().unwrap_or(NaiveDate::MIN))),
            ),
            When::UpToEnd => (None, Some(day_end(end))),
            When::MonthsBeforeEnd(n) => (
                Some(day_start(
                    minus(end, n, AgeUnit::Months).succ_opt().unwrap_or(end),
                )),
                Some(day_end(end)),
            ),
        }
    }

    fn within(t: &str, (from, to): &Bounds) -> bool {
        from.as_deref().is_none_or(|f| t >= f) && to.as_deref().is_none_or(|e| t <= e)
    }

    /// What the tests need of a patient; `None` for a voided (or purged) one.
    fn facts(&mut self, uuid: &str) -> StoreResult<Option<&Facts>> {
        if !self.facts.contains_key(uuid) {
            let f = Store::patient_as_in::<StoredFacts>(self.txn, uuid)?
                .filter(|f| !f.voided)
                .map(|f| Facts {
                    gender: if f.gender.is_empty() {
                        "U".into()
                    } else {
                        f.gender
                    },
                    birth: f.birthdate.as_deref().and_then(day_of),
                    dead: f.dead,
                    death: f.death_date.as_deref().and_then(day_of),
                });
            self.facts.insert(uuid.to_string(), f);
        }
        Ok(self.facts[uuid].as_ref())
    }

    /// A patient's whole record (line lists); `None` for a voided one.
    fn record(&mut self, uuid: &str) -> StoreResult<Option<&PatientRecord>> {
        if !self.records.contains_key(uuid) {
            let p = Store::patient_in(self.txn, uuid)?.filter(|p| !p.voided);
            self.records.insert(uuid.to_string(), p);
        }
        Ok(self.records[uuid].as_ref())
    }

    fn visits_of(&mut self, patient: &str) -> StoreResult<&[visit::VisitRecord]> {
        if !self.visits.contains_key(patient) {
            let v = visit::store::of_patient_in(self.txn, patient)?;
            self.visits.insert(patient.to_string(), v);
        }
        Ok(&self.visits[patient])
    }

    fn enrolments_of(&mut self, patient: &str) -> StoreResult<&[programme::EnrolmentRecord]> {
        if !self.enrolments.contains_key(patient) {
            let e = programme::store::of_patient_in(self.txn, patient)?;
            self.enrolments.insert(patient.to_string(), e);
        }
        Ok(&self.enrolments[patient])
    }

    fn appointments_of(&mut self, patient: &str) -> StoreResult<&[appointment::AppointmentRecord]> {
        if !self.appointments.contains_key(patient) {
            let a = appointment::store::of_patient_in(self.txn, patient)?;
            self.appointments.insert(patient.to_string(), a);
        }
        Ok(&self.appointments[patient])
    }

    /// The visits started, or the encounters made, in a window: read once a run.
    fn briefs(&mut self, kind: Kind, when: When) -> StoreResult<Rc<Vec<Brief>>> {
        if let Some(list) = self.briefs.get(&(kind, when)) {
            return Ok(list.clone());
        }
        let (from, to) = self.bounds(when);
        let (from, to) = (from.as_deref(), to.as_deref());
        let list: Vec<Brief> = match kind {
            Kind::Visits => visit::store::briefs_started_between_in(self.txn, from, to)?
                .into_iter()
                .map(|v| Brief {
                    patient: v.patient,
                    kind: v.visit_type,
                    location: v.location,
                })
                .collect(),
            Kind::Encounters => encounter::store::briefs_between_in(self.txn, from, to)?
                .into_iter()
                .map(|e| Brief {
                    patient: e.patient,
                    kind: e.encounter_type,
                    location: e.location,
                })
                .collect(),
        };
        let list = Rc::new(list);
        self.briefs.insert((kind, when), list.clone());
        Ok(list)
    }

    /// The patients of a criterion (living or dead, never voided), computed once a run.
    fn cohort(&mut self, c: &Criterion) -> StoreResult<Rc<BTreeSet<String>>> {
        let key = format!("{c:?}");
        if let Some(set) = self.cohorts.get(&key) {
            return Ok(set.clone());
        }
        let set = Rc::new(self.cohort_read(c)?);
        self.cohorts.insert(key, set.clone());
        Ok(set)
    }

    /// A cohort from the cheapest criterion that lists its own patients, the others tested
    /// on each of them alone; from every patient when nothing lists.
    fn cohort_read(&mut self, c: &Criterion) -> StoreResult<BTreeSet<String>> {
        let (candidates, rest): (Rc<BTreeSet<String>>, Vec<&Criterion>) = match c {
            Criterion::All(items) => {
                let lister = items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| listing_rank(c).map(|r| (r, i)))
                    .min();
                match lister {
                    Some((_, i)) => (
                        self.cohort(&items[i])?,
                        items
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| *j != i)
                            .map(|(_, c)| c)
                            .collect(),
                    ),
                    None => (self.everyone()?, items.iter().collect()),
                }
            }
            Criterion::Any(items) if listing_rank(c).is_some() => {
                let mut all = BTreeSet::new();
                for c in items {
                    all.extend(self.cohort(c)?.iter().cloned());
                }
                return Ok(all);
            }
            c if listing_rank(c).is_some() => return self.listed(c),
            c => (self.everyone()?, vec![c]),
        };
        let mut out = BTreeSet::new();
        'candidates: for p in candidates.iter() {
            if self.facts(p)?.is_none() {
                continue;
            }
            for c in &rest {
                if !self.test(c, p)? {
                    continue 'candidates;
                }
            }
            out.insert(p.clone());
        }
        Ok(out)
    }

    fn everyone(&mut self) -> StoreResult<Rc<BTreeSet<String>>> {
        if self.everyone.is_none() {
            self.everyone = Some(Rc::new(
                Store::patient_uuids_in(self.txn)?.into_iter().collect(),
            ));
        }
        Ok(self.everyone.clone().unwrap_or_default())
    }

    /// The patients (not voided) of a criterion that lists them (`listing_rank`), read
    /// from the indexes of its records.
    fn listed(&mut self, c: &Criterion) -> StoreResult<BTreeSet<String>> {
        let period = self.period;
        let candidates: Vec<String> = match c {
            Criterion::Visit {
                visit_types: types,
                when,
                at_location,
            }
            | Criterion::Encounter {
                encounter_types: types,
                when,
                at_location,
            } => {
                let kind = match c {
                    Criterion::Visit { .. } => Kind::Visits,
                    _ => Kind::Encounters,
                };
                self.briefs(kind, *when)?
                    .iter()
                    .filter(|b| {
                        (types.is_empty() || types.contains(&b.kind))
                            && period.admits(*at_location, b.location.as_deref())
                    })
                    .map(|b| b.patient.clone())
                    .collect()
            }
            Criterion::Appointment {
                services,
                statuses,
                when,
            } => {
                let bounds = self.bounds(*when);
                appointment::store::starting_between_in(
                    self.txn,
                    bounds.0.as_deref(),
                    bounds.1.as_deref(),
                )?
                .into_iter()
                .filter(|a| appointment_matches(a, services, statuses, &bounds))
                .map(|a| a.patient)
                .collect()
            }
            // Listed by a superset, each tested.
            Criterion::Enrolled { programme, .. } => {
                programme::store::patients_enrolled_in(self.txn, programme)?
                    .into_iter()
                    .collect()
            }
            Criterion::Died { .. } => Store::dead_patient_uuids_in(self.txn)?,
            _ => return Ok(BTreeSet::new()),
        };
        let exact = !matches!(c, Criterion::Enrolled { .. } | Criterion::Died { .. });
        let mut out = BTreeSet::new();
        for p in candidates {
            if out.contains(&p) || self.facts(&p)?.is_none() {
                continue;
            }
            if exact || self.test(c, &p)? {
                out.insert(p);
            }
        }
        Ok(out)
    }

    /// Whether one patient (known, not voided) meets the criterion.
    fn test(&mut self, c: &Criterion, p: &str) -> StoreResult<bool> {
        Ok(match c {
            Criterion::All(items) => {
                for c in items {
                    if !self.test(c, p)? {
                        return Ok(false);
                    }
                }
                true
            }
            Criterion::Any(items) => {
                for c in items {
                    if self.test(c, p)? {
                        return Ok(true);
                    }
                }
                false
            }
            Criterion::Not(c) => !self.test(c, p)?,
            Criterion::Visit {
                visit_types,
                when,
                at_location,
            } => {
                let bounds = self.bounds(*when);
                let period = self.period;
                if visit_types.is_empty() && !(*at_location && period.location.is_some()) {
                    // Only whether there was one: the index's keys say.
                    return visit::store::patient_has_visit_between_in(
                        self.txn,
                        p,
                        bounds.0.as_deref(),
                        bounds.1.as_deref(),
                    );
                }
                let visits = self.visits_of(p)?;
                visits.iter().any(|v| {
                    Self::within(&v.start, &bounds)
                        && (visit_types.is_empty() || visit_types.contains(&v.visit_type))
                        && period.admits(*at_location, v.location.as_deref())
                })
            }
            Criterion::Encounter {
                encounter_types,
                when,
                at_location,
            } => {
                let (from, to) = self.bounds(*when);
                let list = encounter::store::of_patient_between_in(
                    self.txn,
                    p,
                    from.as_deref(),
                    to.as_deref(),
                )?;
                list.iter().any(|e| {
                    (encounter_types.is_empty() || encounter_types.contains(&e.encounter_type))
                        && self.period.admits(*at_location, e.location.as_deref())
                })
            }
            Criterion::Obs {
                concept,
                which,
                when,
                test,
            } => {
                let (from, to) = self.bounds(*when);
                let list = encounter::store::obs_of_concept_in(
                    self.txn,
                    p,
                    concept,
                    from.as_deref(),
                    to.as_deref(),
                )?;
                let chosen: Vec<&encounter::ObsRecord> = match which {
                    Which::Any => list.iter().collect(),
                    Which::First => list.first().into_iter().collect(),
                    Which::Last => list.last().into_iter().collect(),
                };
                chosen
                    .iter()
                    .any(|o| passes(test, &self.yes_no.coded(&o.value)))
            }
            Criterion::Enrolled {
                programme,
                state,
                when,
            } => {
                let bounds = self.bounds(*when);
                let end = self.bounds(When::UpToEnd).1.unwrap_or_default();
                let enrolments = self.enrolments_of(p)?;
                enrolments.iter().any(|e| {
                    if &e.program != programme || e.voiding.voided {
                        return false;
                    }
                    let taken = match when {
                        When::Period => Self::within(&e.enrolled, &bounds),
                        _ => {
                            e.enrolled <= end
                                && e.completed.as_deref().is_none_or(|c| c > end.as_str())
                        }
                    };
                    taken
                        && state.as_ref().is_none_or(|s| {
                            e.states.iter().any(|st| {
                                !st.voided
                                    && &st.state == s
                                    && st.start <= end
                                    && st.end.as_deref().is_none_or(|x| x > end.as_str())
                            })
                        })
                })
            }
            Criterion::Gender(list) => self.facts(p)?.is_some_and(|f| list.contains(&f.gender)),
            Criterion::Age { min, max } => {
                let end = self.period.end;
                let Some(birth) = self.facts(p)?.and_then(|f| f.birth) else {
                    return Ok(false);
                };
                // The reporting module's age cohort: at least `min` old on the date, and not
                // yet `max` + 1 of the unit.
                min.is_none_or(|a| birth <= minus(end, a.amount, a.unit))
                    && max.is_none_or(|a| birth > minus(end, a.amount.saturating_add(1), a.unit))
            }
            Criterion::Alive => {
                let end = self.period.end;
                self.facts(p)?.is_some_and(|f| !f.died_by(end))
            }
            Criterion::Died { when } => {
                let bounds = self.bounds(*when);
                self.facts(p)?.is_some_and(|f| {
                    f.dead
                        && f.death
                            .is_some_and(|d| Self::within(&day_start(d), &bounds))
                })
            }
            Criterion::Appointment {
                services,
                statuses,
                when,
            } => {
                let bounds = self.bounds(*when);
                let list = self.appointments_of(p)?;
                list.iter()
                    .any(|a| appointment_matches(a, services, statuses, &bounds))
            }
        })
    }

    fn data_set(&mut self, d: &ReportDataSet) -> StoreResult<DataSetData> {
        match &d.kind {
            DataSetKind::CrossTab { rows, columns } => {
                let mut metas = Vec::new();
                let mut cells = Vec::new();
                for r in rows {
                    let members = self.cohort(&r.criterion)?;
                    for c in columns {
                        let mut in_cell = Vec::new();
                        for p in members.iter() {
                            if self.test(&c.criterion, p)? {
                                in_cell.push(p.clone());
                            }
                        }
                        metas.push(ColumnMeta {
                            name: format!("{}.{}", r.name, c.name),
                            label: format!("{}.{}", r.name, c.name),
                            datatype: "org.openmrs.Cohort".into(),
                        });
                        cells.push(Cell::Cohort(in_cell));
                    }
                }
                Ok(DataSetData {
                    name: d.name.clone(),
                    columns: metas,
                    rows: vec![cells],
                })
            }
            DataSetKind::LineList {
                population,
                columns,
            } => {
                let members = self.cohort(population)?;
                let appointment_rule = first_appointment_criterion(population);
                let mut rows = Vec::with_capacity(members.len());
                for p in members.iter() {
                    let mut row = Vec::with_capacity(columns.len());
                    for c in columns {
                        row.push(self.line_value(p, &c.value, appointment_rule)?);
                    }
                    rows.push(row);
                }
                // By name, then by uuid: the same data gives the same list.
                let name_at = columns.iter().position(|c| c.value == LineValue::Name);
                if let Some(i) = name_at {
                    rows.sort_by(|a, b| a[i].as_text().cmp(&b[i].as_text()));
                }
                Ok(DataSetData {
                    name: d.name.clone(),
                    columns: columns
                        .iter()
                        .map(|c| ColumnMeta {
                            name: c.name.clone(),
                            label: c.name.clone(),
                            datatype: datatype_of(&c.value).into(),
                        })
                        .collect(),
                    rows,
                })
            }
        }
    }

    fn line_value(
        &mut self,
        p: &str,
        value: &LineValue,
        appointment_rule: Option<&Criterion>,
    ) -> StoreResult<Cell> {
        let end = self.period.end;
        let end_key = self.bounds(When::UpToEnd).1.unwrap_or_default();
        let text = |s: Option<String>| s.filter(|s| !s.is_empty()).map_or(Cell::Empty, Cell::Text);
        Ok(match value {
            LineValue::Identifier(kind) => {
                let r = self.record(p)?;
                text(
                    r.and_then(|r| match kind {
                        Some(t) => r.identifiers.iter().find(|i| &i.identifier_type == t),
                        None => patient::repr::preferred_identifier(r),
                    })
                    .map(|i| i.identifier.clone()),
                )
            }
            LineValue::Name => text(self.record(p)?.map(patient::repr::person_display)),
            LineValue::Gender => text(self.record(p)?.map(|r| r.gender.clone())),
            LineValue::Birthdate => text(
                self.record(p)?
                    .and_then(|r| r.birthdate.as_deref())
                    .and_then(day_of)
                    .map(|d| d.to_string()),
            ),
            LineValue::Age => self
                .record(p)?
                .and_then(|r| r.birthdate.as_deref())
                .and_then(|b| crate::wire::age_on(b, end))
                .map_or(Cell::Empty, |a| Cell::Int(i64::from(a))),
            LineValue::Attribute(t) => text(
                self.record(p)?
                    .and_then(|r| r.attributes.iter().find(|a| &a.attribute_type == t))
                    .map(|a| a.value.clone()),
            ),
            LineValue::LastVisitDate => {
                let visits = self.visits_of(p)?;
                text(
                    visits
                        .iter()
                        .filter(|v| v.start <= end_key)
                        .map(|v| v.start.as_str())
                        .max()
                        .and_then(day_of)
                        .map(|d| d.to_string()),
                )
            }
            LineValue::LastObsValue(concept) | LineValue::LastObsDate(concept) => {
                let list = encounter::store::obs_of_concept_in(
                    self.txn,
                    p,
                    concept,
                    None,
                    Some(&end_key),
                )?;
                match (list.last(), value) {
                    (None, _) => Cell::Empty,
                    (Some(o), LineValue::LastObsDate(_)) => {
                        text(day_of(&o.datetime).map(|d| d.to_string()))
                    }
                    (Some(o), _) => text(Some(self.value_text(&o.value))),
                }
            }
            LineValue::EnrolmentDate(programme) => {
                let enrolments = self.enrolments_of(p)?;
                text(
                    enrolments
                        .iter()
                        .filter(|e| &e.program == programme && e.enrolled <= end_key)
                        .map(|e| e.enrolled.as_str())
                        .max()
                        .and_then(day_of)
                        .map(|d| d.to_string()),
                )
            }
            LineValue::AppointmentDate | LineValue::AppointmentService => {
                let (services, statuses, when) = match appointment_rule {
                    Some(Criterion::Appointment {
                        services,
                        statuses,
                        when,
                    }) => (services.clone(), statuses.clone(), *when),
                    _ => (Vec::new(), Vec::new(), When::Period),
                };
                let bounds = self.bounds(when);
                let catalog = self.catalog;
                let list = self.appointments_of(p)?;
                let found = list
                    .iter()
                    .filter(|a| appointment_matches(a, &services, &statuses, &bounds))
                    .max_by(|a, b| a.start.cmp(&b.start));
                match (found, value) {
                    (None, _) => Cell::Empty,
                    (Some(a), LineValue::AppointmentDate) => {
                        text(day_of(&a.start).map(|d| d.to_string()))
                    }
                    (Some(a), _) => text(Some(
                        catalog
                            .content
                            .appointment_services
                            .iter()
                            .find(|s| s.uuid == a.service)
                            .map_or_else(|| a.service.clone(), |s| s.name.clone()),
                    )),
                }
            }
        })
    }

    fn value_text(&self, v: &encounter::ObsValue) -> String {
        use encounter::ObsValue;
        match self.yes_no.coded(v).as_ref() {
            ObsValue::Numeric(n) => {
                if n.fract() == 0.0 && n.abs() < 1e15 {
                    format!("{}", *n as i64)
                } else {
                    n.to_string()
                }
            }
            ObsValue::Coded(c) => self
                .catalog
                .concept(c)
                .and_then(|k| k.display_name(self.locale, &[self.catalog.default_locale()]))
                .map_or_else(|| c.clone(), |n| n.name.clone()),
            ObsValue::Text(t) | ObsValue::Date(t) | ObsValue::Time(t) => t.clone(),
            ObsValue::Datetime(t) => day_of(t).map_or_else(|| t.clone(), |d| d.to_string()),
            ObsValue::Boolean(b) => b.to_string(),
            ObsValue::Group => String::new(),
        }
    }
}

fn passes(test: &ValueTest, value: &encounter::ObsValue) -> bool {
    use encounter::ObsValue;
    match (test, value) {
        (ValueTest::Exists, _) => true,
        (ValueTest::In(list), ObsValue::Coded(c)) => list.contains(c),
        (ValueTest::NotIn(list), ObsValue::Coded(c)) => !list.contains(c),
        (ValueTest::Range { min, max }, ObsValue::Numeric(n)) => {
            min.is_none_or(|m| *n >= m) && max.is_none_or(|m| *n <= m)
        }
        // A value of another kind is in no set and no range (SQL's NULL).
        _ => false,
    }
}

fn appointment_matches(
    a: &appointment::AppointmentRecord,
    services: &[String],
    statuses: &[String],
    bounds: &Bounds,
) -> bool {
    Evaluator::within(&a.start, bounds)
        && (services.is_empty() || services.contains(&a.service))
        && (statuses.is_empty() || statuses.contains(&a.status))
}

fn first_appointment_criterion(c: &Criterion) -> Option<&Criterion> {
    match c {
        Criterion::Appointment { .. } => Some(c),
        Criterion::All(items) | Criterion::Any(items) => {
            items.iter().find_map(first_appointment_criterion)
        }
        _ => None,
    }
}

fn datatype_of(v: &LineValue) -> &'static str {
    match v {
        LineValue::Age => "java.lang.Integer",
        LineValue::Birthdate
        | LineValue::LastVisitDate
        | LineValue::LastObsDate(_)
        | LineValue::EnrolmentDate(_)
        | LineValue::AppointmentDate => "java.util.Date",
        _ => "java.lang.String",
    }
}

/// The first day of the month before `today`'s and its last day: the period a monthly
/// schedule reports on.
pub fn previous_month(today: NaiveDate) -> (NaiveDate, NaiveDate) {
    let first_this = today.with_day(1).unwrap_or(today);
    let last_prev = first_this.pred_opt().unwrap_or(first_this);
    (last_prev.with_day(1).unwrap_or(last_prev), last_prev)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn ages_follow_the_reporting_modules_bounds() {
        // "1 to 4 years" on 2026-01-31: born after 2021-01-31 and on or before 2025-01-31.
        let end = d("2026-01-31");
        assert_eq!(minus(end, 1, AgeUnit::Years), d("2025-01-31"));
        assert_eq!(minus(end, 5, AgeUnit::Years), d("2021-01-31"));
        // "under 11 months": born after 2025-01-31 (12 months back).
        assert_eq!(minus(end, 12, AgeUnit::Months), d("2025-01-31"));
        assert_eq!(minus(d("2026-03-31"), 1, AgeUnit::Months), d("2026-02-28"));
    }

    #[test]
    fn a_monthly_schedule_reports_on_the_month_before() {
        assert_eq!(
            previous_month(d("2026-03-01")),
            (d("2026-02-01"), d("2026-02-28"))
        );
        assert_eq!(
            previous_month(d("2026-01-15")),
            (d("2025-12-01"), d("2025-12-31"))
        );
    }

    #[test]
    fn values_of_another_kind_are_in_no_set() {
        use encounter::ObsValue;
        let set = ValueTest::NotIn(vec!["a".into()]);
        assert!(passes(&set, &ObsValue::Coded("b".into())));
        assert!(!passes(&set, &ObsValue::Coded("a".into())));
        assert!(!passes(&set, &ObsValue::Numeric(1.0)));
        let range = ValueTest::Range {
            min: Some(1000.0),
            max: None,
        };
        assert!(passes(&range, &ObsValue::Numeric(1000.0)));
        assert!(!passes(&range, &ObsValue::Numeric(999.0)));
    }

    #[test]
    fn a_boolean_answer_is_its_yes_or_no_concept() {
        use encounter::ObsValue;
        let yes_no = YesNo {
            yes: Some("yes".into()),
            no: Some("no".into()),
        };
        let yes = ValueTest::In(vec!["yes".into()]);
        let not_yes = ValueTest::NotIn(vec!["yes".into()]);
        assert!(passes(&yes, &yes_no.coded(&ObsValue::Boolean(true))));
        assert!(!passes(&yes, &yes_no.coded(&ObsValue::Boolean(false))));
        assert!(passes(&not_yes, &yes_no.coded(&ObsValue::Boolean(false))));
        // Without the concepts, a Boolean is in no set, as any value of another kind.
        assert!(!passes(
            &yes,
            &YesNo::default().coded(&ObsValue::Boolean(true))
        ));
    }
}
