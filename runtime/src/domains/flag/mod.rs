//! Patient flags, as the patient flags module keeps them (`PatientFlag`): the content's
//! flags (`flags/`, each a criterion of the reports' kind) that a patient meets, stored as
//! one record per patient and flag, so that a flag keeps its uuid while it holds and a
//! user's dismissal (a voided record) is kept.
//!
//! When they are made (the module regenerates a patient's flags after every save of her
//! encounters, observations, orders, allergies, conditions and enrolments; here the same
//! regeneration runs when her flags are read, which is when its result is needed, so no
//! domain's write has to know about flags):
//! - the criteria of every enabled, unretired flag are evaluated for her on the day, in one
//!   snapshot (`report::eval::met_by`);
//! - a flag she meets and has no record of gets one, made by the daemon user;
//! - a record of a flag she no longer meets (or that is retired, disabled or gone from the
//!   content) is removed, voided or not, so that a flag dismissed once shows again when it
//!   holds again later (the module deletes only the active records it no longer finds and
//!   keeps every dismissal);
//! - a dismissed (voided) record of a flag she still meets is kept as it is. The module
//!   would add a second, active record beside it at her next save; here a dismissal lasts
//!   while the flag holds (the O3 app's edit panel toggles one row per flag).
//!
//! The changes are written under the clinical write lock after the evaluation is made
//! again under it, so two runtimes reading her flags at once make one record per flag. A
//! write the store refuses (a full disk: redb refuses it before committing) leaves the
//! stored records as they were, and they are answered: a chart still opens.
//!
//! The records are derived: purging the patient removes them with her
//! (`Registry::on_patient_purged`), and a merge does not move them (the kept patient's are
//! evaluated on her own record).
//!
//! Privileges (the module's): reading a patient's flags needs Get Patients, one record by
//! uuid View Patient Flags, dismissing and restoring one Manage Patient Flags; the
//! definitions (flags, priorities, tags) are read with Manage Flags or Test Flags. The
//! definitions are content, read-only through the API. A flag whose tags all name roles
//! the reader holds none of is not shown to her (`rest::shown_to`).

pub mod rest;
pub mod store;

use crate::catalog::Catalog;
use crate::store::record::{Audit, DAEMON_USER, Voiding};
use crate::store::{Store, StoreResult};
use chrono::{DateTime, Utc};
use model::reports::FlagDefinition;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

pub const VIEW_PATIENT_FLAGS: &str = "View Patient Flags";
pub const MANAGE_PATIENT_FLAGS: &str = "Manage Patient Flags";
pub const MANAGE_FLAGS: &str = "Manage Flags";
pub const TEST_FLAGS: &str = "Test Flags";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatientFlagRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    /// The flag definition's uuid.
    pub flag: String,
    #[serde(flatten)]
    pub voiding: Voiding,
    pub audit: Audit,
}

/// The flags in force: enabled and not retired.
pub fn active_flags(catalog: &Catalog) -> impl Iterator<Item = &FlagDefinition> {
    catalog
        .content
        .patient_flags
        .flags
        .iter()
        .filter(|f| f.enabled && !f.retired)
}

/// What a regeneration changes.
#[derive(Debug, Default)]
struct Changes {
    remove: Vec<PatientFlagRecord>,
    add: Vec<PatientFlagRecord>,
}

/// Her stored flag records and what a regeneration would change, from one snapshot.
fn plan(
    store: &Store,
    catalog: &Catalog,
    patient: &str,
    now: DateTime<Utc>,
) -> StoreResult<(Vec<PatientFlagRecord>, Changes)> {
    let txn = store.begin_read()?;
    let stored = store::of_patient_in(&txn, patient)?;
    let flags: Vec<&FlagDefinition> = active_flags(catalog).collect();
    let criteria: Vec<_> = flags.iter().map(|f| &f.criterion).collect();
    let met = crate::domains::report::eval::met_by(
        &txn,
        catalog,
        crate::domains::report::eval::YesNo::of(store, catalog),
        &criteria,
        patient,
        now.date_naive(),
    )?;
    let holding: BTreeSet<&str> = flags
        .iter()
        .zip(&met)
        .filter(|(_, m)| **m)
        .map(|(f, _)| f.uuid.as_str())
        .collect();
    let mut changes = Changes::default();
    let mut recorded = BTreeSet::new();
    for r in &stored {
        if holding.contains(r.flag.as_str()) && recorded.insert(r.flag.clone()) {
            continue;
        }
        changes.remove.push(r.clone());
    }
    for flag in holding {
        if !recorded.contains(flag) {
            changes.add.push(PatientFlagRecord {
                v: 1,
                uuid: crate::store::record::new_uuid(),
                patient: patient.to_string(),
                flag: flag.to_string(),
                voiding: Voiding::default(),
                audit: Audit::new(DAEMON_USER, now),
            });
        }
    }
    Ok((stored, changes))
}

/// Her flag records once brought in line with what she meets now (see the module's
/// documentation), voided ones included. An unknown or voided patient meets no flag.
pub fn regenerate(
    store: &Store,
    catalog: &Catalog,
    patient: &str,
    now: DateTime<Utc>,
) -> StoreResult<Vec<PatientFlagRecord>> {
    let (stored, changes) = plan(store, catalog, patient, now)?;
    if changes.remove.is_empty() && changes.add.is_empty() {
        return Ok(stored);
    }
    let _one_writer = store.write_lock();
    let (stored, changes) = plan(store, catalog, patient, now)?;
    if changes.remove.is_empty() && changes.add.is_empty() {
        return Ok(stored);
    }
    let written =
        crate::store::audit::as_system(|| store::apply(store, &changes.remove, &changes.add));
    match written {
        Ok(()) => store::of_patient(store, patient),
        Err(e) => {
            tracing::warn!("the patient flags of {patient} could not be brought up to date: {e}");
            Ok(stored)
        }
    }
}
