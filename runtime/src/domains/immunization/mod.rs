//! Immunizations, as fhir2 keeps them and the O3 immunizations app records them (FHIR
//! `Immunization`): not a record of their own but an observation group on CIEL 1421
//! ("immunization history") in an encounter of the `fhir2.immunizationsEncounterTypeUuid`
//! type within a visit, with one member per fact: the vaccine (984, coded among its
//! answers), the date (1410), the dose number (1418), the manufacturer (1419), the lot
//! (1420) and its expiry (165907), a note (161011) and the next dose's date (170000).
//! So an immunization is part of the visit's encounters, its observations are listed and
//! charted like any other, and backups, voids and edits follow the encounter domain's rules
//! (an edited value is voided and replaced by a new observation pointing back to it).
//!
//! The visit's latest encounter of the immunization type is reused (its providers as they
//! are); otherwise one is created, with the performer as its provider in the
//! `fhir2.administeringEncounterRoleUuid` role. The group and its members share the
//! recording's datetime and location. A `PUT` changes the members' values only: the patient
//! and the visit stay, and `location` and `performer` are not changed, as in fhir2.

pub mod fhir;

/// The CIEL codes of the group and of its members, in fhir2's order.
pub const GROUP: &str = "CIEL:1421";
pub const VACCINE: &str = "CIEL:984";
pub const DATE: &str = "CIEL:1410";
pub const DOSE: &str = "CIEL:1418";
pub const MANUFACTURER: &str = "CIEL:1419";
pub const LOT: &str = "CIEL:1420";
pub const EXPIRY: &str = "CIEL:165907";
pub const NOTE: &str = "CIEL:161011";
pub const NEXT_DOSE: &str = "CIEL:170000";

pub const NEXT_DOSE_EXTENSION: &str =
    "http://hl7.eu/fhir/StructureDefinition/immunization-nextDoseDate";
