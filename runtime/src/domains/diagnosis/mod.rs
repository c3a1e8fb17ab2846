//! Diagnoses: what a clinician concluded in an encounter (`patientdiagnoses`, EMR API's
//! diagnosis resource, which the O3 visit notes write): a coded concept of the content or
//! free text, a certainty (`PROVISIONAL` or `CONFIRMED`) and a rank (1 primary, 2
//! secondary). Validated as OpenMRS's `DiagnosisValidator` does: a patient, an encounter of
//! that patient, a diagnosis, a certainty and a rank.

pub mod rest;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    pub encounter: String,
    /// A concept uuid, or `None` with `non_coded` text.
    pub coded: Option<String>,
    pub non_coded: Option<String>,
    pub certainty: String,
    pub rank: u8,
    pub form_field_namespace: Option<String>,
    pub form_field_path: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}
