//! Patient lists, as the cohort module keeps them (`cohortm/cohort`, `cohortm/cohortmember`,
//! `cohortm/cohorttype`): a named list of patients, of a type, at a location, and its
//! memberships, each with a start and an end. The O3 patient-lists app creates and edits
//! lists, adds patients and removes them by ending their membership.
//!
//! Rules (the module's `CohortMValidator` and `CohortMemberServiceImpl`): a list has a name
//! no other list has (in any case), a type among the known ones, a known location, and an
//! end not before its start; a patient is in a list at most once at a time: adding one who
//! is already in it is refused, adding one whose membership has ended reopens that
//! membership (its start kept, as the module does); a voided list takes no one.
//! Removing a member ends the membership (O3 sends its `endDate`); deleting one voids it.
//! A list's `size` counts the memberships begun and not ended.
//!
//! Lists are few (a facility's dozens), so they are read whole; memberships are indexed by
//! list (`cohort|created|uuid`) and by patient (`patient|cohort|uuid`, which also finds a
//! patient's membership of one list).

pub mod fhir;
pub mod rest;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

/// The list types: those the O3 patient-lists app names in its configuration
/// (`myListCohortTypeUUID`, `systemListCohortTypeUUID`), which a distribution provides.
/// (uuid, name, description)
pub const COHORT_TYPES: &[(&str, &str, &str)] = &[
    (
        "e71857cb-33af-4f2c-86ab-7223bcfa37ad",
        "Ma liste",
        "Liste de patients faite par un utilisateur",
    ),
    (
        "eee9970e-7ca0-4e8c-a280-c33e9d5f6a04",
        "Liste du système",
        "Liste de patients tenue par l'établissement",
    ),
];

/// The definition handler of a list of patients named one by one (the only kind here).
pub const DEFAULT_HANDLER: &str =
    "org.openmrs.module.cohort.definition.handler.DefaultCohortDefinitionHandler";

/// A type by uuid or by name (any case), as the module finds one.
pub fn cohort_type(
    uuid_or_name: &str,
) -> Option<&'static (&'static str, &'static str, &'static str)> {
    COHORT_TYPES
        .iter()
        .find(|t| t.0 == uuid_or_name || t.1.eq_ignore_ascii_case(uuid_or_name))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CohortRecord {
    pub v: u32,
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub cohort_type: Option<String>,
    pub location: Option<String>,
    /// Key form (`datetime_key`).
    pub start_date: Option<String>,
    pub end_date: Option<String>,
    pub group_cohort: bool,
    pub definition_handler: String,
    pub audit: Audit,
    pub voiding: Voiding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberRecord {
    pub v: u32,
    pub uuid: String,
    pub cohort: String,
    pub patient: String,
    /// Key form.
    pub start_date: Option<String>,
    pub end_date: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}

impl MemberRecord {
    /// Not ended at `now` (key form): listed as a member.
    pub fn current(&self, now: &str) -> bool {
        !self.voiding.voided && self.end_date.as_deref().is_none_or(|e| e > now)
    }

    /// Begun and not ended at `now`: counted in the list's size.
    pub fn active(&self, now: &str) -> bool {
        self.current(now) && self.start_date.as_deref().is_none_or(|s| s <= now)
    }
}
