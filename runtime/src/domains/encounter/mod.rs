//! Encounters and their observations: what was recorded about a patient at one moment,
//! usually within a visit, by providers in encounter roles, often through a form.
//!
//! Validated as OpenMRS's `EncounterValidator` and `ObsValidator` do: an existing patient,
//! an encounter type of the content, a datetime not in the future and inside the visit,
//! the visit of the same patient; each observation on a concept of the content that is not
//! retired, with a value of the concept's datatype (a coded answer among the concept's
//! answers when it lists any, a number within the absolute range and whole where decimals
//! are not allowed), groups on set concepts with members and no value. Editing a saved
//! observation voids it and records the new value as a new observation that points back to
//! it (`previousVersion`), as OpenMRS does, so the history of a value is kept.

pub mod body;
pub mod compact;
pub mod diagnostic_report;
pub mod fhir;
pub mod obstree;
pub mod repr;
pub mod rest;
pub mod store;

use crate::clinic::Clinic;
use crate::domains::visit::VisitRecord;
use crate::invalid::Invalid;
use crate::store::record::{Audit, Effect, Voiding};
use crate::store::{Store, StoreResult};
use crate::wire::{CLOCK_SKEW, parse_datetime};
use chrono::Utc;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncounterProviderRecord {
    pub uuid: String,
    pub provider: String,
    pub encounter_role: String,
    /// The user acting as this provider, found when the encounter was written, so that
    /// rendering reads one cached user instead of looking through every account.
    #[serde(default)]
    pub user: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncounterRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    pub encounter_type: String,
    /// Key form.
    pub datetime: String,
    pub location: Option<String>,
    pub form: Option<String>,
    pub visit: Option<String>,
    pub providers: Vec<EncounterProviderRecord>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// An observation's value, by the datatype of its concept. A stored observation names its
/// variant by number (the order below): new variants go last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, bincode::Encode, bincode::Decode)]
#[serde(tag = "t", content = "v")]
pub enum ObsValue {
    Numeric(f64),
    Coded(String),
    Text(String),
    Boolean(bool),
    /// Key form.
    Datetime(String),
    /// `yyyy-mm-dd`
    Date(String),
    /// `HH:MM:SS`
    Time(String),
    /// An obs group: its members hold the values.
    Group,
}

/// A test of an observation's value: FHIR's `value-quantity`, `value-concept`,
/// `value-string` and `value-date` search parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueFilter {
    /// A numeric value compared with a number given to a precision: `eq` and `ne` mean
    /// the range the number's own precision implies (`100` is 99.5 to 100.5, `2.0` is 1.95
    /// to 2.05), `ap` within a tenth of it (or that range, when wider).
    Number(Comparison, f64, Precision),
    /// A coded value, one of these concepts.
    Concept(Vec<String>),
    /// A text value that starts with one of these, accents and case aside (FHIR's string
    /// search; values separated by commas are alternatives).
    Text(Vec<String>),
    /// A date or date-time value within these key-form bounds (inclusive, either open).
    Date(Option<String>, Option<String>),
    /// An obs group (its members hold the values).
    Group,
}

/// A number search's prefix (`sa` and `eb`, for a number, are `gt` and `lt`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Comparison {
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    Ap,
}

/// Half the unit of a number's last written digit (`100` → 0.5, `2.05` → 0.005).
pub type Precision = f64;

impl ValueFilter {
    /// Whether a value passes; a value of another kind never does.
    pub fn admits(&self, v: &ObsValue) -> bool {
        match (self, v) {
            (ValueFilter::Number(c, n, half), ObsValue::Numeric(x)) => {
                let within = |h: f64| *x >= n - h && *x < n + h;
                match c {
                    Comparison::Eq => within(*half),
                    Comparison::Ne => !within(*half),
                    Comparison::Gt => x > n,
                    Comparison::Lt => x < n,
                    Comparison::Ge => x >= n,
                    Comparison::Le => x <= n,
                    Comparison::Ap => within(half.max(n.abs() / 10.0)),
                }
            }
            (ValueFilter::Concept(list), ObsValue::Coded(c)) => list.contains(c),
            (ValueFilter::Text(starts), ObsValue::Text(t)) => {
                let t = crate::search::fold(t);
                starts
                    .iter()
                    .any(|s| t.starts_with(&crate::search::fold(s)))
            }
            (ValueFilter::Date(from, to), ObsValue::Date(d) | ObsValue::Datetime(d)) => {
                // A date is its day's first instant, in the key form the bounds have.
                let at = if d.len() == 10 {
                    format!("{d}T00:00:00.000Z")
                } else {
                    d.clone()
                };
                from.as_deref().is_none_or(|f| at.as_str() >= f)
                    && to.as_deref().is_none_or(|t| at.as_str() <= t)
            }
            (ValueFilter::Group, ObsValue::Group) => true,
            _ => false,
        }
    }
}

/// Stored in binary (`store::encode_obs`), not JSON like the other records: a facility
/// has millions, and the chart reads a hundred at a time. The binary form is positional:
/// a change of fields needs a new format tag there, with the old one still decoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, bincode::Encode, bincode::Decode)]
pub struct ObsRecord {
    pub v: u32,
    pub uuid: String,
    pub person: String,
    pub concept: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encounter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obs_group: Option<String>,
    /// Key form.
    pub datetime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    pub value: ObsValue,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form_field_namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form_field_path: Option<String>,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpretation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_version: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// The "Unknown" encounter role OpenMRS uses when a provider is given without a role.
pub const UNKNOWN_ENCOUNTER_ROLE: &str = "a0b03050-c99b-11e0-9572-0800200c9a66";

const OBS_FIELDS: &[&str] = &[
    "uuid",
    "concept",
    "value",
    "obsDatetime",
    "person",
    "encounter",
    "location",
    "comment",
    "groupMembers",
    "formFieldNamespace",
    "formFieldPath",
    "status",
    "interpretation",
    "order",
    "voided",
    "obsGroup",
    "valueCodedName",
    "valueModifier",
    "accessionNumber",
];

/// Checks an encounter's own fields (not its observations).
pub fn validate(
    state: &Clinic,
    e: &EncounterRecord,
    visit: Option<&VisitRecord>,
    inv: &mut Invalid,
) {
    let catalog = state.catalog.clone();
    match catalog
        .content
        .encounter_types
        .iter()
        .find(|t| t.uuid == e.encounter_type)
    {
        None => inv.field(
            "encounterType",
            "error.null",
            "Encounter type is required and must exist",
        ),
        Some(t) if t.retired => inv.field(
            "encounterType",
            "error.retired",
            "Encounter type is retired",
        ),
        Some(_) => {}
    }
    if let Some(l) = &e.location
        && catalog.location(l).is_none()
    {
        inv.field("location", "error.invalid", "Location does not exist");
    }
    if let Some(f) = &e.form
        && !catalog.content.forms.iter().any(|x| &x.uuid == f)
    {
        inv.field("form", "error.invalid", "Form does not exist");
    }
    if parse_datetime(&e.datetime).is_some_and(|t| t > Utc::now() + CLOCK_SKEW) {
        inv.field(
            "encounterDatetime",
            "Encounter.datetimeShouldBeBeforeCurrent",
            "The encounter date cannot be in the future",
        );
    }
    for p in &e.providers {
        if p.encounter_role != UNKNOWN_ENCOUNTER_ROLE
            && !catalog
                .content
                .encounter_roles
                .iter()
                .any(|r| r.uuid == p.encounter_role)
        {
            inv.field(
                "encounterProviders",
                "error.invalid",
                &format!("Encounter role {} does not exist", p.encounter_role),
            );
        }
    }
    match (e.visit.as_ref(), visit) {
        (Some(_), None) => inv.field("visit", "error.invalid", "Visit does not exist"),
        (Some(_), Some(v)) => {
            if v.patient != e.patient {
                inv.field(
                    "visit",
                    "Encounter.visit.patients.dontMatch",
                    "The visit belongs to another patient",
                );
            }
            if v.voiding.voided {
                inv.field("visit", "error.voided", "The visit is voided");
            }
            if !v.contains(&e.datetime) {
                inv.field(
                    "encounterDatetime",
                    "Encounter.datetimeShouldBeInVisitDatesRange",
                    "The encounter date must fall within the visit",
                );
            }
        }
        _ => {}
    }
}

/// A voided visit's encounters and their observations, voided with it (registered with
/// the visit's dependents).
pub fn voided_with_visit(
    store: &Store,
    visit: &str,
    user: &str,
    reason: &str,
) -> StoreResult<Effect> {
    let now = Utc::now();
    let mut changed_enc = Vec::new();
    let mut changed_obs = Vec::new();
    for e in store::of_visit(store, visit)? {
        let mut n = e.clone();
        n.voiding.void(user, now, reason);
        for o in store::obs_of_encounter(store, &e.uuid, false)? {
            let mut v = o.clone();
            v.voiding.void(user, now, reason);
            changed_obs.push((o, v));
        }
        changed_enc.push((e, n));
    }
    Ok(Box::new(move |txn| {
        for (o, n) in &changed_enc {
            store::write_in(
                txn,
                &store::Change {
                    encounter: Some((Some(o), n)),
                    obs: vec![],
                },
            )?;
        }
        store::write_in(
            txn,
            &store::Change {
                encounter: None,
                obs: changed_obs.iter().map(|(o, n)| (Some(o), n)).collect(),
            },
        )
    }))
}

/// Whether the visit holds encounters, voided ones included (a purge is refused then).
pub fn any_in_visit(store: &Store, visit: &str) -> StoreResult<bool> {
    Ok(!store::times_in_visit(store, visit)?.is_empty())
}

/// An encounter type named by uuid or name, as its uuid (unknown names pass through, for
/// validation to refuse).
pub fn encounter_type_uuid(catalog: &crate::catalog::Catalog, reference: &str) -> String {
    catalog
        .content
        .encounter_types
        .iter()
        .find(|x| x.uuid == reference || x.name == reference)
        .map_or_else(|| reference.to_string(), |x| x.uuid.clone())
}

/// What the domains that hang on encounters do when one is voided, registered in the
/// domains' registry (a bed the encounter put a patient in is freed): an encounter names
/// none of them.
pub struct EncounterDependents {
    /// What voiding an encounter writes with it: (store, encounter, user, reason).
    pub on_void: &'static [crate::store::record::Cascade],
}

/// What voiding the encounter writes with it.
pub fn voiding_effects(
    store: &Store,
    encounter: &str,
    user: &str,
    reason: &str,
) -> StoreResult<Vec<Effect>> {
    match store.registry().extension::<EncounterDependents>() {
        Some(d) => d
            .on_void
            .iter()
            .map(|f| f(store, encounter, user, reason))
            .collect(),
        None => Ok(Vec::new()),
    }
}

/// What placing an order in the encounter needs of it.
pub fn placement(e: &EncounterRecord) -> crate::domains::order::Placement {
    crate::domains::order::Placement {
        uuid: e.uuid.clone(),
        patient: e.patient.clone(),
        datetime: e.datetime.clone(),
        voided: e.voiding.voided,
    }
}

/// An encounter by uuid, as placing an order in it needs it (registered for orders).
pub fn placement_of(
    store: &Store,
    uuid: &str,
) -> StoreResult<Option<crate::domains::order::Placement>> {
    Ok(store::encounter(store, uuid)?.as_ref().map(placement))
}
