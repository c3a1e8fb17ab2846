//! Medication dispenses: what the pharmacy handed over against a prescription (a drug
//! order), or why it paused or closed it, as OpenMRS core keeps them (`medication_dispense`,
//! since 2.6) and the O3 dispensing app writes and reads them (FHIR `MedicationDispense`).
//!
//! A dispense names its patient, the drug order it fills (`authorizingPrescription`), the
//! drug or concept handed over, its quantity and dosing, who dispensed it, where and when,
//! and a substitution if the drug differs from the prescription's. Its status is FHIR's
//! (`completed`, `on-hold` for a pause, `declined` for a close…), kept as its code.
//!
//! Rules: a patient and a status; a drug order of that patient, not voided, and not a
//! discontinuation; an encounter of that patient that stands; the drug and concept of the
//! content (the concept is the drug's); a quantity is positive and has its unit. Against a
//! prescription that states a quantity, a completed dispense says how much it hands over.
//! Where the front-end configuration restricts the total dispensed (the dispensing app's
//! `dispenseBehavior.restrictTotalQuantityDispensed`, off by default, as OpenMRS leaves
//! it), the quantities a prescription's completed dispenses hand over (in its unit) never
//! exceed what it allows: its quantity times one plus its refills. The rule is kept on the
//! server too, so that no client can get round the setting; this distribution turns it on.

pub mod fhir;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

/// FHIR's `MedicationDispense.status` codes.
pub const STATUSES: &[&str] = &[
    "preparation",
    "in-progress",
    "cancelled",
    "on-hold",
    "completed",
    "entered-in-error",
    "stopped",
    "declined",
    "unknown",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispenseRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encounter: Option<String>,
    /// The drug order filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drug_order: Option<String>,
    pub concept: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drug: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// A provider uuid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispenser: Option<String>,
    /// One of `STATUSES`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity_units: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dose: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dose_units: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// An order frequency uuid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency: Option<String>,
    #[serde(default)]
    pub as_needed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dosing_instructions: Option<String>,
    /// Key-form datetimes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_prepared: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_handed_over: Option<String>,
    #[serde(default)]
    pub was_substituted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substitution_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substitution_reason: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}

impl DispenseRecord {
    /// When it happened, for ordering a patient's dispenses: handed over, else prepared,
    /// else recorded.
    pub fn when(&self) -> &str {
        self.date_handed_over
            .as_deref()
            .or(self.date_prepared.as_deref())
            .unwrap_or(&self.audit.date_created)
    }
}
