//! The content's read-only resources, as the REST and FHIR APIs show them: concepts,
//! locations, forms, the named metadata, reference ranges, the address hierarchy, identifier
//! and attribute types. Nothing here writes.

pub mod addresshierarchy;
pub mod concept;
pub mod fhir;
pub mod form;
pub mod location;
pub mod metadata;
pub mod person_types;
pub mod reference_range;
