//! Conditions: the patient's problem list, as OpenMRS core keeps it (`conditions`) and as
//! the O3 conditions widget reads and writes it through FHIR `Condition`; the REST
//! `condition` resource serves the same records. A condition is a coded concept of the
//! content or free text, a clinical status (active, inactive, history of), an optional
//! verification status, an onset and an end date, and a note.
//!
//! Rules: core's `ConditionValidator` (a condition and a clinical status are required),
//! plus what the O3 form promises its users and a record must not contradict: the patient
//! exists, the concept is the content's and not retired, the onset is not in the future
//! and the end is not before the onset. Edits change the record in place (as fhir2 does)
//! and record who and when; deleting voids it.

pub mod fhir;
pub mod rest;
pub mod store;

use crate::catalog::Catalog;
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use crate::wire::CLOCK_SKEW;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClinicalStatus {
    Active,
    Inactive,
    HistoryOf,
}

impl ClinicalStatus {
    /// OpenMRS's names, in any case (`ACTIVE`, `inactive`, `HISTORY_OF`).
    pub fn parse(s: &str) -> Option<ClinicalStatus> {
        match s.trim().to_ascii_uppercase().as_str() {
            "ACTIVE" => Some(ClinicalStatus::Active),
            "INACTIVE" => Some(ClinicalStatus::Inactive),
            "HISTORY_OF" => Some(ClinicalStatus::HistoryOf),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ClinicalStatus::Active => "ACTIVE",
            ClinicalStatus::Inactive => "INACTIVE",
            ClinicalStatus::HistoryOf => "HISTORY_OF",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verification {
    Confirmed,
    Provisional,
}

impl Verification {
    pub fn parse(s: &str) -> Option<Verification> {
        match s.trim().to_ascii_uppercase().as_str() {
            "CONFIRMED" => Some(Verification::Confirmed),
            "PROVISIONAL" => Some(Verification::Provisional),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Verification::Confirmed => "CONFIRMED",
            Verification::Provisional => "PROVISIONAL",
        }
    }

    /// FHIR's code and display (`condition-ver-status`).
    pub fn code(self) -> &'static str {
        match self {
            Verification::Confirmed => "confirmed",
            Verification::Provisional => "provisional",
        }
    }

    pub fn display(self) -> &'static str {
        match self {
            Verification::Confirmed => "Confirmed",
            Verification::Provisional => "Provisional",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    /// A concept uuid, or `None` with `non_coded` text.
    pub coded: Option<String>,
    pub non_coded: Option<String>,
    pub clinical_status: Option<ClinicalStatus>,
    pub verification: Option<Verification>,
    /// Key form (`crate::wire::datetime_key`).
    pub onset: Option<String>,
    pub end: Option<String>,
    pub additional_detail: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}

impl ConditionRecord {
    pub fn new(uuid: String, patient: String, audit: Audit) -> ConditionRecord {
        ConditionRecord {
            v: 1,
            uuid,
            patient,
            coded: None,
            non_coded: None,
            clinical_status: None,
            verification: None,
            onset: None,
            end: None,
            additional_detail: None,
            audit,
            voiding: Voiding::default(),
        }
    }

    pub fn is_active(&self) -> bool {
        self.clinical_status == Some(ClinicalStatus::Active)
    }

    /// The coded concept's name in `locale`, or the free text.
    pub fn display<'c>(&'c self, catalog: &'c Catalog, locale: &str) -> &'c str {
        coded_or_text(
            catalog,
            self.coded.as_deref(),
            self.non_coded.as_deref(),
            locale,
        )
    }
}

/// A coded-or-free-text value's name (OpenMRS's CodedOrFreeText): the concept's name in
/// `locale`, or the text.
pub fn coded_or_text<'c>(
    catalog: &'c Catalog,
    coded: Option<&str>,
    text: Option<&'c str>,
    locale: &str,
) -> &'c str {
    match coded {
        Some(c) => catalog
            .concept(c)
            .and_then(|c| c.display_name(locale, &[catalog.default_locale()]))
            .map_or("", |n| n.name.as_str()),
        None => text.unwrap_or_default(),
    }
}

/// The longest free text OpenMRS's `conditions` columns keep (non-coded, additional detail).
const MAX_TEXT: usize = 255;

/// What is wrong with a condition about to be stored, field by field (REST names); a coded
/// concept given by a mapping is stored as its uuid. `was_coded` is the concept the stored
/// record had: a concept retired since stays acceptable on it, so that the condition can
/// still be ended.
pub fn check(
    c: &mut ConditionRecord,
    was_coded: Option<&str>,
    catalog: &Catalog,
    patient_exists: bool,
    inv: &mut Invalid,
) {
    if !patient_exists {
        inv.field("patient", "error.invalid", "Patient does not exist");
    }
    match &c.coded {
        Some(reference) => match catalog.concept(reference) {
            Some(concept) if concept.retired && was_coded != Some(concept.uuid.as_str()) => {
                inv.field("condition", "error.retired", "The concept is retired")
            }
            Some(concept) => c.coded = Some(concept.uuid.clone()),
            None => inv.field("condition", "error.invalid", "Concept does not exist"),
        },
        None if c.non_coded.as_deref().is_none_or(|t| t.trim().is_empty()) => inv.field(
            "condition",
            "Condition.conditionShouldNotBeNull",
            "The condition is required",
        ),
        None => {}
    }
    for (field, text) in [
        ("condition", &c.non_coded),
        ("additionalDetail", &c.additional_detail),
    ] {
        if text.as_ref().is_some_and(|t| t.chars().count() > MAX_TEXT) {
            inv.field(
                field,
                "error.exceededMaxLengthOfField",
                &format!("At most {MAX_TEXT} characters"),
            );
        }
    }
    if c.clinical_status.is_none() {
        inv.field(
            "clinicalStatus",
            "Condition.clinicalStatusShouldNotBeNull",
            "The clinical status is required",
        );
    }
    let now = crate::wire::datetime_key(chrono::Utc::now() + CLOCK_SKEW);
    if c.onset.as_deref().is_some_and(|o| o > now.as_str()) {
        inv.field(
            "onsetDate",
            "error.date.future",
            "The onset date cannot be in the future",
        );
    }
    if let (Some(onset), Some(end)) = (&c.onset, &c.end)
        && end < onset
    {
        inv.field(
            "endDate",
            "error.date.beforeOnset",
            "The end date cannot be before the onset date",
        );
    }
}
