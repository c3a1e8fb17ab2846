//! Relationships between persons (a mother and her child, a patient and the person who
//! accompanies them), as OpenMRS core keeps them: person A is to person B what the
//! relationship type says (`aIsToB`), from an optional start date to an optional end date.
//! The O3 registration form writes them and the chart's relationships widget reads them.
//!
//! Rules (core's `RelationshipValidator` and the REST resource): two different persons of
//! this system, a relationship type of the content that is not retired, an end date not
//! before the start date, and neither in the future. Relationships are voided, never
//! purged through the API; a patient who has any cannot be purged.

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
