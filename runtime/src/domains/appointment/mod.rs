//! Appointments, as the Bahmni appointments module keeps them and the O3 appointments app
//! books them: a patient, a service of the content (`appointmentservicedefinitions/`), a
//! start and an end, a kind (Scheduled, WalkIn, Virtual), a location, providers and a
//! status that moves forward (Requested/Scheduled → CheckedIn → Completed, Cancelled or
//! Missed).
//!
//! Rules (the module's validators and `AppointmentsServiceImpl`): a patient and a service
//! are required, the kind and status must be known names, providers must exist, the end
//! comes after the start. A status change may only move forward in the module's sequence
//! (`Requested 0, WaitList 0, Scheduled 1, Arrived 2, CheckedIn 2, Completed 3, Cancelled
//! 3, Missed 3`: the new status's rank above the current one), except back to Scheduled,
//! which needs Reset Appointment Status (unless from Requested). Conflicts are advice
//! (`appointments/conflicts`): outside the service's hours, or the patient already booked
//! at an overlapping time; saving does not check them, as in the module. Every status
//! change is kept in the record's history with who and when.
//!
//! Appointments are indexed by start (`start|uuid`: a day's list and the calendar's counts
//! read one range) and by patient (`patient|start|uuid`).

pub mod rest;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

/// The module's statuses with their rank in its sequence.
pub const STATUSES: &[(&str, u8)] = &[
    ("Requested", 0),
    ("WaitList", 0),
    ("Scheduled", 1),
    ("Arrived", 2),
    ("CheckedIn", 2),
    ("Completed", 3),
    ("Cancelled", 3),
    ("Missed", 3),
];

pub const KINDS: &[&str] = &["Scheduled", "WalkIn", "Virtual"];

pub fn rank(status: &str) -> Option<u8> {
    STATUSES.iter().find(|(s, _)| *s == status).map(|(_, r)| *r)
}

/// Whether the module lets an appointment go from `from` to `to` (Scheduled and Requested
/// may always be set again; the privilege rule is the caller's).
pub fn may_change(from: &str, to: &str) -> bool {
    match (rank(from), rank(to)) {
        (Some(f), Some(t)) => t > f || to == "Scheduled" || to == "Requested",
        _ => false,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderResponse {
    pub uuid: String,
    /// ACCEPTED, AWAITING, REJECTED, TENTATIVE or CANCELLED.
    pub response: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comments: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusChange {
    pub from: String,
    pub to: String,
    /// Key form: when it changed (the client's `onDate`, else the server's clock).
    pub on: String,
    pub by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppointmentRecord {
    pub v: u32,
    pub uuid: String,
    pub number: String,
    pub patient: String,
    pub service: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Key form (`datetime_key`).
    pub start: String,
    pub end: String,
    pub kind: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comments: Option<String>,
    pub date_scheduled: String,
    #[serde(default)]
    pub providers: Vec<ProviderResponse>,
    #[serde(default)]
    pub history: Vec<StatusChange>,
    pub audit: Audit,
    pub voiding: Voiding,
}

impl AppointmentRecord {
    /// Whether the two appointments' times meet (a cancelled one holds no time).
    pub fn overlaps(&self, start: &str, end: &str) -> bool {
        self.status != "Cancelled" && start < self.end.as_str() && end > self.start.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_move_forward_as_the_module_allows() {
        assert!(may_change("Scheduled", "CheckedIn"));
        assert!(may_change("Scheduled", "Missed"));
        assert!(may_change("CheckedIn", "Completed"));
        assert!(may_change("Requested", "Scheduled"));
        assert!(may_change("Completed", "Scheduled"));
        assert!(!may_change("CheckedIn", "CheckedIn"));
        assert!(!may_change("Completed", "Cancelled"));
        assert!(!may_change("Missed", "CheckedIn"));
        assert!(!may_change("Scheduled", "Gone"));
    }
}
