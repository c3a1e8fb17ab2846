//! Inpatients, as the EMR API module derives them from the clinical record (no table of its
//! own): who is admitted where, and which admission, transfer and discharge requests wait.
//!
//! - **Admitted.** A patient is in a ward while her active visit holds an Admission or a
//!   Transfer encounter (`emr.admissionEncounterType`, `emr.transferWithinHospitalEncounterType`)
//!   and no Discharge (`emr.exitFromInpatientEncounterType`) after the latest of them; the
//!   ward is that latest encounter's location. Encounters sort by datetime, then creation.
//! - **Requested.** A disposition observation (the concept mapped
//!   `org.openmrs.module.emrapi:Disposition`, answered with a disposition of the content's
//!   `dispositions/`) is a pending request while its visit is active, the patient alive,
//!   it is the visit's latest disposition, no admission, transfer or discharge encounter
//!   of the visit is at or after it, and no later encounter denies it (the admission
//!   decision answered "deny admission": the ward's cancel). Its ward is the text value of
//!   its group's admission-location or internal-transfer-location member, a location uuid.
//!
//! Both read the facility's open visits (an index of its own, so never the history), each
//! visit's encounters, and for requests only the patient's disposition and decision
//! observations (the patient-and-concept index), never a stay's vital signs.

pub mod rest;

use crate::clinic::Clinic;
use crate::domains::encounter::{EncounterRecord, ObsRecord, ObsValue, store as encounters};
use crate::domains::visit::{VisitRecord, store as visits};
use crate::store::StoreError;

/// The EMR API module's source, whose concept mappings name the disposition concepts.
pub use crate::clinic::EMRAPI_SOURCE;

/// Why the inpatient views cannot be computed.
#[derive(Debug, thiserror::Error)]
pub enum InpatientError {
    /// The EMR API configuration lacks what inpatient care needs (the API answers 400).
    #[error("{0}")]
    Unconfigured(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type InpatientResult<T> = Result<T, InpatientError>;

/// The concepts and encounter types the derivations need, from the content.
pub struct Adt {
    pub admission: String,
    pub transfer: String,
    pub discharge: String,
    pub disposition_concept: Option<String>,
    pub admission_location_concept: Option<String>,
    pub transfer_location_concept: Option<String>,
    pub admission_decision: Option<String>,
    pub deny_admission: Option<String>,
}

impl Adt {
    /// Read from the content's metadata term mappings or the settings (`emr_metadata`) and
    /// the dictionary; the three encounter types are required,
    /// as the module fails without them.
    pub fn of(state: &Clinic) -> InpatientResult<Adt> {
        let required = |name: &str| {
            state.emr_metadata(name).ok_or_else(|| {
                InpatientError::Unconfigured(format!(
                    "Neither a metadata term mapping nor a setting {name} names an encounter type: inpatient care needs the admission, transfer and discharge encounter types"
                ))
            })
        };
        let catalog = state.catalog.clone();
        let mapped = |code: &str| {
            catalog
                .concept(&format!("{EMRAPI_SOURCE}:{code}"))
                .map(|c| c.uuid.clone())
        };
        Ok(Adt {
            admission: required("emr.admissionEncounterType")?,
            transfer: required("emr.transferWithinHospitalEncounterType")?,
            discharge: required("emr.exitFromInpatientEncounterType")?,
            disposition_concept: mapped("Disposition"),
            admission_location_concept: mapped("Admission Location"),
            transfer_location_concept: mapped("Internal Transfer Location"),
            admission_decision: state.emr_concept("Admission Decision", "admissionDecisionConcept"),
            deny_admission: state.emr_concept("Deny Admission", "denyAdmissionConcept"),
        })
    }

    fn is_admission_or_transfer(&self, e: &EncounterRecord) -> bool {
        e.encounter_type == self.admission || e.encounter_type == self.transfer
    }

    fn is_adt(&self, e: &EncounterRecord) -> bool {
        self.is_admission_or_transfer(e) || e.encounter_type == self.discharge
    }
}

/// A pending request: the disposition observation and what it asks.
#[derive(Debug, Clone)]
pub struct Request {
    pub visit: VisitRecord,
    pub encounter: EncounterRecord,
    pub obs: ObsRecord,
    /// The disposition's concept uuid and its type (ADMIT, TRANSFER, DISCHARGE).
    pub disposition: String,
    pub kind: String,
    /// Location uuid.
    pub location: Option<String>,
}

/// An admitted patient (or one discharged in her active visit, when asked).
#[derive(Debug, Clone)]
pub struct Admission {
    pub visit: VisitRecord,
    pub first: EncounterRecord,
    pub latest: EncounterRecord,
    pub assigning: EncounterRecord,
    pub discharged: bool,
    /// Location uuid; none once discharged.
    pub location: Option<String>,
    pub request: Option<Request>,
}

/// Which visits a search considers.
#[derive(Default)]
pub struct Filter {
    pub patients: Vec<String>,
    pub visits: Vec<String>,
}

impl Filter {
    fn keeps(&self, v: &VisitRecord) -> bool {
        (self.patients.is_empty() || self.patients.contains(&v.patient))
            && (self.visits.is_empty() || self.visits.contains(&v.uuid))
    }
}

/// Encounters in the module's order: datetime, then creation.
fn sorted(mut list: Vec<EncounterRecord>) -> Vec<EncounterRecord> {
    list.sort_by(|a, b| {
        (&a.datetime, &a.audit.date_created, &a.uuid).cmp(&(
            &b.datetime,
            &b.audit.date_created,
            &b.uuid,
        ))
    });
    list
}

fn active_visits(state: &Clinic, filter: &Filter) -> InpatientResult<Vec<VisitRecord>> {
    Ok(visits::open_visits(state.store)?
        .into_iter()
        .filter(|v| !v.voiding.voided && filter.keeps(v))
        .filter(|v| {
            state
                .store
                .patient(&v.patient)
                .ok()
                .flatten()
                .is_some_and(|p| !p.voided)
        })
        .collect())
}

/// The pending requests of the active visits the filter keeps, of the given types (all
/// when empty), oldest first.
pub fn requests(
    state: &Clinic,
    adt: &Adt,
    filter: &Filter,
    kinds: &[String],
) -> InpatientResult<Vec<Request>> {
    let Some(concept) = adt.disposition_concept.as_deref() else {
        return Ok(Vec::new());
    };
    let catalog = state.catalog.clone();
    let dispositions: Vec<(&str, &str)> = catalog
        .content
        .dispositions
        .iter()
        .filter_map(|d| Some((d.concept.as_str(), d.kind.as_deref()?)))
        .collect();
    let mut out = Vec::new();
    for visit in active_visits(state, filter)? {
        if state.store.patient(&visit.patient)?.is_some_and(|p| p.dead) {
            continue;
        }
        if let Some(r) = request_of(state, adt, concept, &dispositions, visit)?
            && (kinds.is_empty() || kinds.contains(&r.kind))
        {
            out.push(r);
        }
    }
    out.sort_by(|a, b| (&a.obs.datetime, &a.obs.uuid).cmp(&(&b.obs.datetime, &b.obs.uuid)));
    Ok(out)
}

/// The visit's pending request, if its latest disposition still waits.
fn request_of(
    state: &Clinic,
    adt: &Adt,
    concept: &str,
    dispositions: &[(&str, &str)],
    visit: VisitRecord,
) -> InpatientResult<Option<Request>> {
    let list = sorted(encounters::of_visit(state.store, &visit.uuid)?);
    // The patient's disposition and admission-decision observations (a handful, read from
    // the patient-and-concept index), those of this visit's encounters only.
    let mut concepts = vec![concept.to_string()];
    concepts.extend(adt.admission_decision.clone());
    let query = encounters::ObsQuery {
        values: Vec::new(),
        patient: Some(visit.patient.clone()),
        concepts,
        ..Default::default()
    };
    let everything = crate::store::record::Window {
        start: 0,
        limit: usize::MAX,
        count_all: false,
    };
    let (found, _) = encounters::list_obs(state.store, &query, everything)?;
    let encounter_of = |o: &ObsRecord| {
        o.encounter
            .as_deref()
            .and_then(|e| list.iter().find(|x| x.uuid == e))
    };
    let mut latest: Option<(&EncounterRecord, &ObsRecord)> = None;
    let mut denials: Vec<&EncounterRecord> = Vec::new();
    for o in &found {
        let Some(e) = encounter_of(o) else {
            continue;
        };
        if o.concept == concept
            && latest.is_none_or(|(_, l)| (&o.datetime, &o.uuid) > (&l.datetime, &l.uuid))
        {
            latest = Some((e, o));
        }
        if adt.admission_decision.as_deref() == Some(o.concept.as_str())
            && matches!(&o.value, ObsValue::Coded(c) if Some(c.as_str()) == adt.deny_admission.as_deref())
        {
            denials.push(e);
        }
    }
    let Some((encounter, obs)) = latest else {
        return Ok(None);
    };
    let ObsValue::Coded(answer) = &obs.value else {
        return Ok(None);
    };
    let Some((_, kind)) = dispositions.iter().find(|(c, _)| c == answer) else {
        return Ok(None);
    };
    // Fulfilled by an admission, a transfer or a discharge at or after it, or denied by a
    // later decision (later as the module orders encounters: datetime, then creation).
    let order = |e: &EncounterRecord| (e.datetime.clone(), e.audit.date_created.clone());
    if list
        .iter()
        .any(|e| adt.is_adt(e) && e.datetime >= obs.datetime)
        || denials.iter().any(|e| order(e) > order(encounter))
    {
        return Ok(None);
    }
    let location = match obs.obs_group.as_deref() {
        None => None,
        Some(group) => {
            let members = encounters::group_members(state.store, group)?;
            let text_of = |c: Option<&str>| {
                members.iter().find_map(|m| match (&m.value, c) {
                    (ObsValue::Text(t), Some(c)) if m.concept == c => Some(t.clone()),
                    _ => None,
                })
            };
            text_of(adt.admission_location_concept.as_deref())
                .or_else(|| text_of(adt.transfer_location_concept.as_deref()))
        }
    };
    let (encounter, obs) = (encounter.clone(), obs.clone());
    Ok(Some(Request {
        visit,
        encounter,
        disposition: answer.clone(),
        kind: kind.to_string(),
        obs,
        location,
    }))
}

/// The admissions of the active visits the filter keeps, at the given wards (any when
/// empty), the discharged ones only if asked; each with its visit's pending request.
pub fn admissions(
    state: &Clinic,
    adt: &Adt,
    filter: &Filter,
    wards: &[String],
    include_discharged: bool,
) -> InpatientResult<Vec<Admission>> {
    let mut out = Vec::new();
    for visit in active_visits(state, filter)? {
        let list = sorted(encounters::of_visit(state.store, &visit.uuid)?);
        let moves: Vec<&EncounterRecord> = list
            .iter()
            .filter(|e| adt.is_admission_or_transfer(e))
            .collect();
        let (Some(first), Some(latest)) = (moves.first(), moves.last()) else {
            continue;
        };
        let latest_adt = list.iter().rev().find(|e| adt.is_adt(e));
        let discharged = latest_adt.is_some_and(|e| e.encounter_type == adt.discharge);
        let location = if discharged {
            None
        } else {
            latest.location.clone()
        };
        if !wards.is_empty() && !location.as_ref().is_some_and(|l| wards.contains(l)) {
            continue;
        }
        if discharged && !include_discharged {
            continue;
        }
        // The earliest of the trailing run of moves into the current ward.
        let mut assigning = *latest;
        for e in moves.iter().rev() {
            if e.location == latest.location {
                assigning = e;
            } else {
                break;
            }
        }
        out.push(Admission {
            first: (*first).clone(),
            latest: (*latest).clone(),
            assigning: assigning.clone(),
            discharged,
            location,
            request: None,
            visit,
        });
    }
    // Each admission carries its visit's pending request, of any type.
    if !out.is_empty() {
        let f = Filter {
            patients: Vec::new(),
            visits: out.iter().map(|a| a.visit.uuid.clone()).collect(),
        };
        let pending = requests(state, adt, &f, &[])?;
        for a in &mut out {
            a.request = pending
                .iter()
                .find(|r| r.visit.uuid == a.visit.uuid)
                .cloned();
        }
    }
    Ok(out)
}
