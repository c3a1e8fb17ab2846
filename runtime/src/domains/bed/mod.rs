//! Beds, as the bed management module keeps them: bed types, bed tags, and the beds of the
//! content's wards (locations tagged "Admission Location"), each at a row and column of its
//! ward, with the patients in it.
//!
//! None of this is content: an administrator makes bed types, tags and beds on the O3 bed
//! management pages, and the ward app puts patients in beds. A facility has tens or
//! hundreds of beds, so each kind is one small table keyed by uuid and read whole; a bed's
//! current occupants and its tags live inside its record, so a ward's layout is one read.
//! Each stay in a bed is also a record of `bed_assignments` (started, and ended when the
//! patient leaves the bed), the history the module keeps.
//!
//! The module's rules: one bed per row and column of a location; a bed type is named by its
//! name when a bed is written; a bed is `AVAILABLE` or `OCCUPIED`, set when a patient comes
//! (several may share a bed: a mother and her baby) and when the last one leaves; putting a
//! patient in a bed takes her out of the one she was in; an occupied bed cannot be
//! removed; ending a visit frees the beds of its patients. Stricter than the module: a bed
//! type still used by a bed is not deleted (the module fails with a server error), a bed
//! number is at most 50 characters, rows and columns are whole numbers from 1.

pub mod rest;
pub mod store;
pub mod types;
pub mod ward;

use crate::domains::bed::store::{ASSIGNMENTS, BEDS, beds, beds_in_use, put, stay};
use crate::store::kv::WriteTransaction;
use crate::store::record::{Audit, Voiding};
use crate::store::{Store, StoreResult};
use serde::{Deserialize, Serialize};

pub const AVAILABLE: &str = "AVAILABLE";
pub const OCCUPIED: &str = "OCCUPIED";
/// The tag of the locations beds are in (the module's constant).
pub const ADMISSION_LOCATION_TAG: &str = "Admission Location";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BedTypeRecord {
    pub v: u32,
    pub uuid: String,
    pub name: String,
    pub display_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Retired through an update (`retired`, `retiredReason`), as the module allows; a
    /// retired type stays listed, as the module lists it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retired: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retire_reason: Option<String>,
    pub audit: Audit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BedTagRecord {
    pub v: u32,
    pub uuid: String,
    pub id: u64,
    pub name: String,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// A tag put on a bed (`bedTagMap`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagMap {
    pub uuid: String,
    pub tag: String,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// A patient in a bed now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Occupant {
    /// Its `bed_assignments` record.
    pub assignment: String,
    pub patient: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encounter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BedRecord {
    pub v: u32,
    pub uuid: String,
    pub id: u64,
    pub bed_number: String,
    /// A bed type's uuid.
    pub bed_type: String,
    /// A location of the content.
    pub location: String,
    pub row: u32,
    pub column: u32,
    /// `AVAILABLE` or `OCCUPIED`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<TagMap>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub occupants: Vec<Occupant>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// One stay in a bed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssignmentRecord {
    pub v: u32,
    pub uuid: String,
    pub bed: String,
    pub patient: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encounter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visit: Option<String>,
    /// Key form.
    pub started: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    pub audit: Audit,
}

/// What a change of occupancy writes: the beds it changed and the stays it began or ended.
#[derive(Default)]
pub struct Moves {
    pub beds: Vec<BedRecord>,
    pub stays: Vec<AssignmentRecord>,
}

impl Moves {
    pub fn is_empty(&self) -> bool {
        self.beds.is_empty() && self.stays.is_empty()
    }

    pub fn write_in(&self, txn: &WriteTransaction) -> StoreResult<()> {
        for b in &self.beds {
            put(txn, BEDS, &b.uuid, b)?;
        }
        for s in &self.stays {
            put(txn, ASSIGNMENTS, &s.uuid, s)?;
        }
        Ok(())
    }
}

/// Takes the occupants `leaving` keeps out of their beds: their stays end at `now` and a
/// bed left empty becomes available.
pub fn vacate(
    store: &Store,
    beds: &[BedRecord],
    leaving: impl Fn(&Occupant) -> bool,
    user: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> StoreResult<Moves> {
    let mut moves = Moves::default();
    for bed in beds.iter().filter(|b| b.occupants.iter().any(&leaving)) {
        let mut b = bed.clone();
        for o in b.occupants.iter().filter(|o| leaving(o)) {
            if let Some(mut s) = stay(store, &o.assignment)? {
                s.ended = Some(crate::wire::datetime_key(now));
                s.audit.changed(user, now);
                moves.stays.push(s);
            }
        }
        b.occupants.retain(|o| !leaving(o));
        if b.occupants.is_empty() {
            b.status = AVAILABLE.into();
        }
        b.audit.changed(user, now);
        moves.beds.push(b);
    }
    Ok(moves)
}

/// The beds freed of the occupants `leaving` keeps, now (see `vacate`).
pub fn freed(store: &Store, leaving: impl Fn(&Occupant) -> bool, user: &str) -> StoreResult<Moves> {
    vacate(
        store,
        &beds_in_use(store)?,
        leaving,
        user,
        chrono::Utc::now(),
    )
}

/// The beds freed when a visit ends or is voided (the module's handlers of a visit's save).
pub fn freed_with_visit(store: &Store, visit: &str, user: &str) -> StoreResult<Moves> {
    freed(store, |o| o.visit.as_deref() == Some(visit), user)
}

/// The beds an encounter put patients in, freed when it is voided (registered with the
/// encounter's dependents).
pub fn free_with_voided_encounter(
    store: &Store,
    encounter: &str,
    user: &str,
    _reason: &str,
) -> StoreResult<crate::store::record::Effect> {
    let beds = freed(store, |o| o.encounter.as_deref() == Some(encounter), user)?;
    Ok(Box::new(move |txn| beds.write_in(txn)))
}

/// The beds of a visit that ends, freed with it (registered with the visit's dependents).
pub fn free_with_ended_visit(
    store: &Store,
    visit: &str,
    _stop: &str,
    user: &str,
) -> StoreResult<crate::store::record::Effect> {
    let beds = freed_with_visit(store, visit, user)?;
    Ok(Box::new(move |txn| beds.write_in(txn)))
}

/// The beds of a visit that is voided, freed with it (registered with the visit's
/// dependents).
pub fn free_with_voided_visit(
    store: &Store,
    visit: &str,
    user: &str,
    _reason: &str,
) -> StoreResult<crate::store::record::Effect> {
    let beds = freed_with_visit(store, visit, user)?;
    Ok(Box::new(move |txn| beds.write_in(txn)))
}

/// Whether the patient is in a bed or ever was (a purge is refused then).
pub fn any_of_patient(store: &Store, patient: &str) -> StoreResult<bool> {
    if beds(store)?
        .iter()
        .any(|b| b.occupants.iter().any(|o| o.patient == patient))
    {
        return Ok(true);
    }
    let stays: Vec<AssignmentRecord> =
        crate::store::record::all_records(store, ASSIGNMENTS, "bed_assignments")?;
    Ok(stays.iter().any(|s| s.patient == patient))
}
