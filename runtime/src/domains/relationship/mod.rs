//! Relationships between persons (a mother and her child, a patient and the person who
//! accompanies them), as OpenMRS core keeps them: person A is to person B what the
//! relationship type says (`aIsToB`), from an optional start date to an optional end date.
//! The O3 registration form writes them and the chart's relationships widget reads them.
//!
//! Rules (core's `RelationshipValidator` and the REST resource): two different persons of
//! this system, a relationship type of the content that is not retired, an end date not
//! before the start date, and neither in the future. Relationships are voided, never
//! purged through the API; a patient who has any cannot be purged.

pub mod fhir;
pub mod rest;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationshipRecord {
    pub v: u32,
    pub uuid: String,
    pub person_a: String,
    pub relationship_type: String,
    pub person_b: String,
    /// Key form (`datetime_key`).
    pub start_date: Option<String>,
    pub end_date: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// A relationship between the two merged patients would become one of the preferred patient
/// with herself: it is voided, as core's merge voids it.
pub fn merged_between_the_two(r: &mut serde_json::Value, m: &crate::store::record::PatientMerge) {
    let voided = r
        .pointer("/voiding/voided")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    if r.get("person_a") == r.get("person_b") && !voided {
        r["voiding"] = serde_json::json!({
            "voided": true,
            "voided_by": m.user,
            "date_voided": crate::wire::datetime_key(m.now),
            "void_reason": format!("person {} was merged into person {}", m.from, m.into),
        });
    }
}
