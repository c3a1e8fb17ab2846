//! The clinical record, one module per aggregate: `visit` (visits and their attributes),
//! `encounter` (encounters with their observations), `diagnosis` (an encounter's
//! diagnoses), `condition` (the problem list), `allergy` (allergies), `immunization` (vaccinations, as observation groups in
//! encounters), `order` (drug and test orders, the formulary's REST resources, FHIR MedicationRequest), `dispense` (medication dispenses, FHIR MedicationDispense), `programme`
//! (programme enrolments with their workflow states), `queue` (service-queue entries),
//! `provider` (managed providers, next to each account's own), `relationship` (relationships
//! between persons), `cohort` (patient lists and their members), `attachment` (images and PDFs uploaded to a chart, their bytes in the store), `document` (what is printed for a patient: the identifier sticker), `appointment` (appointments of the content's services), `stock` (the pharmacy's
//! stock: items, sources, operations and the movements they make), `alert` (alerts
//! addressed to users: the stock rules' warnings), `flag` (patient flags: the content's
//! flags a patient meets, regenerated when read) and `role` (roles and
//! privileges made through the API). The records others hang on are
//! domains too: `patient`, `account` (users), `session`, `setting` and `idgen`. Each owns
//! its record types, its redb tables and secondary indexes, its validation and its REST
//! representations, built on the store's record toolkit (`store::record`). This file is the
//! registry (`REGISTRY`): every domain's tables and the kinds of record a patient holds,
//! handed to the store when it opens, so that nothing below the domains names one.
//!
//! Storage shape (see ARCHITECTURE.md, "The clinical store"): a record table maps a uuid to
//! the record as versioned JSON; each query has an index table whose keys sort the way the
//! query reads (`patient|datetime|uuid`) and whose one-byte value carries the flags a
//! listing filters on (voided, ended), so a page is found by reading keys only and then
//! reading the page's records. Index tables are derived: backups hold the records alone and
//! a restore rebuilds the indexes from them.

pub mod account;
pub mod alert;
pub mod allergy;
pub mod appointment;
pub mod attachment;
pub mod bed;
pub mod bill;
pub mod bulk_export;
pub mod cohort;
pub mod condition;
pub mod diagnosis;
pub mod dispense;
pub mod document;
pub mod encounter;
pub mod flag;
pub mod idgen;
pub mod immunization;
pub mod inpatient;
pub mod order;
pub mod patient;
pub mod programme;
pub mod provider;
pub mod queue;
pub mod queue_room;
pub mod relationship;
pub mod report;
pub mod role;
pub mod session;
pub mod setting;
pub mod stock;
pub mod visit;

use crate::store::record::{
    BlobTable, PatientRecords, PatientVoided, RecordTable, Registry, Window,
};
use crate::store::{Store, StoreResult};

/// Every clinical record table, in the order a restore fills them.
const RECORD_TABLES: &[RecordTable] = &[
    visit::store::RECORDS,
    encounter::store::ENCOUNTER_RECORDS,
    encounter::store::OBS_RECORDS,
    programme::store::RECORDS,
    queue::store::QUEUE_RECORDS,
    queue::store::RECORDS,
    queue_room::store::RECORDS,
    diagnosis::store::RECORDS,
    condition::store::RECORDS,
    allergy::store::RECORDS,
    order::store::RECORDS,
    dispense::store::RECORDS,
    role::store::ROLE_RECORDS,
    role::store::PRIVILEGE_RECORDS,
    provider::store::RECORDS,
    relationship::store::RECORDS,
    cohort::store::COHORT_RECORDS,
    cohort::store::MEMBER_RECORDS,
    attachment::store::RECORDS,
    appointment::store::RECORDS,
    bill::store::RECORDS,
    bed::store::TYPE_RECORDS,
    bed::store::TAG_RECORDS,
    bed::store::BED_RECORDS,
    bed::store::ASSIGNMENT_RECORDS,
    report::store::RECORDS,
    bulk_export::store::RECORDS,
    stock::store::ITEM_RECORDS,
    stock::store::SOURCE_RECORDS,
    stock::store::BATCH_RECORDS,
    stock::store::SCOPE_RECORDS,
    stock::store::RULE_RECORDS,
    stock::store::REFERENCE_RECORDS,
    stock::store::OPERATION_RECORDS,
    stock::store::TRANSACTION_RECORDS,
    stock::store::JOB_RECORDS,
    stock::store::JOB_FILE_RECORDS,
    alert::store::RECORDS,
    flag::store::RECORDS,
    crate::store::audit::RECORDS,
];

/// Every blob table, written to backups after the record tables.
const BLOB_TABLES: &[BlobTable] = &[
    attachment::store::CONTENTS,
    report::store::CONTENTS,
    bulk_export::store::CONTENTS,
];

/// The domains' tables, handed to the store when it is opened.
pub static REGISTRY: Registry = Registry {
    records: RECORD_TABLES,
    blobs: BLOB_TABLES,
    patient_records: PATIENT_RECORDS,
    merge_refusals: &[
        visit::both_in_an_active_visit,
        programme::both_enrolled_in_one_programme,
        order::both_with_active_orders_of_one_type,
    ],
    on_patient_voided: ON_PATIENT_VOIDED,
    on_patient_purged: &[flag::store::purge_of_patient],
    extensions: &[
        &VISIT_DEPENDENTS,
        &VISIT_NESTING,
        &ENCOUNTER_DEPENDENTS,
        &ENCOUNTER_NESTING,
        &ORDER_ENCOUNTERS,
        &QUEUE_DEPENDENTS,
    ],
    reindexed_since: &[
        (3, &encounter::store::ENCOUNTER_RECORDS),
        (4, &encounter::store::OBS_RECORDS),
        (8, &encounter::store::OBS_RECORDS),
        (9, &stock::store::ITEM_RECORDS),
    ],
    recoded_since: &[
        (5, &encounter::store::OBS_RECORDS),
        (7, &crate::store::audit::RECORDS),
    ],
    dropped_since: &[
        (5, encounter::store::OBS_BY_CONCEPT_BEFORE_5),
        (7, crate::store::audit::INDEXES_BEFORE_7[0]),
        (7, crate::store::audit::INDEXES_BEFORE_7[1]),
        (7, crate::store::audit::INDEXES_BEFORE_7[2]),
        (7, crate::store::audit::INDEXES_BEFORE_7[3]),
        (7, crate::store::audit::INDEXES_BEFORE_7[4]),
        (8, encounter::store::OBS_INDEXES_BEFORE_8[0]),
        (8, encounter::store::OBS_INDEXES_BEFORE_8[1]),
        (8, encounter::store::OBS_INDEXES_BEFORE_8[2]),
    ],
};

/// What voiding an encounter does to the records that hang on it.
static ENCOUNTER_DEPENDENTS: encounter::EncounterDependents = encounter::EncounterDependents {
    on_void: &[bed::free_with_voided_encounter],
};

/// What hangs on a queue, refusing its purge.
static QUEUE_DEPENDENTS: queue::QueueDependents = queue::QueueDependents {
    held: &[("Queue rooms", queue_room::rooms_name_queue)],
};

/// What an encounter's representation nests of other domains.
static ENCOUNTER_NESTING: encounter::repr::EncounterNesting = encounter::repr::EncounterNesting {
    diagnoses: diagnosis::rest::of_encounter,
};

/// What an order needs of its encounter, and of its dispenses in FHIR.
static ORDER_ENCOUNTERS: order::repr::OrderEncounters = order::repr::OrderEncounters {
    placement: encounter::placement_of,
    nest: encounter::repr::nested_by_uuid,
    nest_to: encounter::repr::nested_by_uuid_to,
    fhir: encounter::fhir::json_by_uuid,
    dispenses: dispense::fhir::of_orders_json,
};

/// What a visit's representation nests of other domains.
static VISIT_NESTING: visit::rest::VisitNesting = visit::rest::VisitNesting {
    encounters: encounter::repr::of_visit,
};

/// What ending, voiding or purging a visit does to the records that hang on it. The order
/// of `on_void` and `held` is the order their work is done and their refusals are named.
static VISIT_DEPENDENTS: visit::VisitDependents = visit::VisitDependents {
    times: &[encounter::store::times_in_visit],
    refusals: &[queue::visit_holds_entries],
    on_end: &[queue::end_with_visit, bed::free_with_ended_visit],
    on_void: &[
        encounter::voided_with_visit,
        queue::void_with_visit,
        bed::free_with_voided_visit,
    ],
    held: &[
        ("encounters", encounter::any_in_visit),
        ("queue entries", queue::any_in_visit),
    ],
};

/// Every kind of record a patient holds, in the order a refused purge names them.
const PATIENT_RECORDS: &[PatientRecords] = &[
    PatientRecords {
        kind: "visits",
        any: |s, p| Ok(!visit::store::visits_of(s, p)?.is_empty()),
        moves: &[visit::store::MERGE],
    },
    PatientRecords {
        kind: "encounters",
        any: |s, p| {
            let q = encounter::store::EncounterQuery {
                patient: Some(p.to_string()),
                include_voided: true,
                ..Default::default()
            };
            Ok(!encounter::store::list(s, &q, ONE)?.0.is_empty())
        },
        moves: &[
            encounter::store::MERGE_ENCOUNTERS,
            encounter::store::MERGE_OBS,
        ],
    },
    PatientRecords {
        kind: "diagnoses",
        any: |s, p| Ok(!diagnosis::store::of_patient(s, p, true, ONE)?.0.is_empty()),
        moves: &[diagnosis::store::MERGE],
    },
    PatientRecords {
        kind: "programme enrolments",
        any: |s, p| Ok(!programme::store::all_of_patient(s, p)?.is_empty()),
        moves: &[programme::store::MERGE],
    },
    PatientRecords {
        kind: "queue entries",
        any: queue::store::any_of_patient,
        moves: &[queue::store::MERGE],
    },
    PatientRecords {
        kind: "orders",
        any: order::store::any_of_patient,
        moves: &[order::store::MERGE],
    },
    PatientRecords {
        kind: "medication dispenses",
        any: dispense::store::any_of_patient,
        moves: &[dispense::store::MERGE],
    },
    PatientRecords {
        kind: "patient list memberships",
        any: cohort::store::any_of_patient,
        moves: &[cohort::store::MERGE],
    },
    PatientRecords {
        kind: "attachments",
        any: attachment::store::any_of_patient,
        moves: &[attachment::store::MERGE],
    },
    PatientRecords {
        kind: "appointments",
        any: appointment::store::any_of_patient,
        moves: &[appointment::store::MERGE],
    },
    PatientRecords {
        kind: "bed assignments",
        any: bed::any_of_patient,
        moves: &[bed::store::MERGE_BEDS, bed::store::MERGE_STAYS],
    },
    PatientRecords {
        kind: "conditions",
        any: |s, p| {
            Ok(
                !condition::store::of_patient(s, p, condition::store::Which::All, ONE)?
                    .0
                    .is_empty(),
            )
        },
        moves: &[condition::store::MERGE],
    },
    PatientRecords {
        kind: "allergies",
        any: |s, p| Ok(!allergy::store::of_patient(s, p, true)?.is_empty()),
        moves: &[allergy::store::MERGE],
    },
    PatientRecords {
        kind: "relationships",
        any: |s, p| Ok(!relationship::store::of_person(s, p, true)?.is_empty()),
        moves: &[relationship::store::MERGE],
    },
    PatientRecords {
        kind: "dispenses from stock",
        any: stock::store::any_of_patient,
        moves: &[stock::store::MERGE],
    },
    PatientRecords {
        kind: "bills",
        any: |s, p| Ok(!(bill::store::MERGE.of_patient)(s, p)?.is_empty()),
        moves: &[bill::store::MERGE],
    },
];

/// One record is enough to know there are some.
const ONE: Window = Window {
    start: 0,
    limit: 1,
    count_all: false,
};

const ON_PATIENT_VOIDED: &[PatientVoided] = &[free_beds_of_voided_patient];

/// A patient registered in error leaves the bed she was put in.
fn free_beds_of_voided_patient(store: &Store, patient: &str, user: &str) -> StoreResult<()> {
    let beds = bed::freed(store, |o| o.patient == patient, user)?;
    if !beds.is_empty() {
        store.write(|txn| beds.write_in(txn))?;
    }
    Ok(())
}

/// Every domain's routes, merged into one flat router (one line a domain).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    axum::Router::new()
        .merge(session::rest::routes(paths))
        .merge(patient::rest::routes(paths))
        .merge(allergy::rest::routes(paths))
        .merge(account::rest::routes(paths))
        .merge(encounter::rest::routes(paths))
        .merge(role::rest::routes(paths))
        .merge(queue_room::rest::routes(paths))
        .merge(queue::rest::routes(paths))
        .merge(visit::rest::routes(paths))
        .merge(diagnosis::rest::routes(paths))
        .merge(condition::rest::routes(paths))
        .merge(order::rest::routes(paths))
        .merge(programme::rest::routes(paths))
        .merge(provider::rest::routes(paths))
        .merge(appointment::rest::routes(paths))
        .merge(attachment::rest::routes(paths))
        .merge(document::rest::routes(paths))
        .merge(inpatient::rest::routes(paths))
        .merge(bed::rest::routes(paths))
        .merge(bill::rest::routes(paths))
        .merge(cohort::rest::routes(paths))
        .merge(relationship::rest::routes(paths))
        .merge(report::rest::routes(paths))
        .merge(idgen::rest::routes(paths))
        .merge(setting::rest::routes(paths))
        .merge(stock::rest::routes(paths))
        .merge(alert::rest::routes(paths))
        .merge(flag::rest::routes(paths))
        .merge(immunization::fhir::routes(paths))
        .merge(dispense::fhir::routes(paths))
}

/// A clinic over an empty store and the content compiled into this binary, for the
/// domains' unit tests of their rules.
#[cfg(test)]
pub(crate) fn test_store() -> Store {
    Store::in_memory(&REGISTRY).expect("an in-memory store opens")
}

#[cfg(test)]
pub(crate) fn test_catalog() -> std::sync::Arc<crate::catalog::Catalog> {
    std::sync::Arc::new(
        crate::catalog::Catalog::from_bytes(crate::embedded::EMBEDDED_BUNDLE)
            .expect("the embedded bundle decodes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A domain that finds no extension of its type treats it as "no dependents": every
    /// extension the domains look up must therefore be registered, or ending a visit would
    /// silently leave its queue entries open.
    #[test]
    fn every_extension_the_domains_look_up_is_registered() {
        assert!(REGISTRY.extension::<visit::VisitDependents>().is_some());
        assert!(REGISTRY.extension::<visit::rest::VisitNesting>().is_some());
        assert!(
            REGISTRY
                .extension::<encounter::EncounterDependents>()
                .is_some()
        );
        assert!(
            REGISTRY
                .extension::<encounter::repr::EncounterNesting>()
                .is_some()
        );
        assert!(
            REGISTRY
                .extension::<order::repr::OrderEncounters>()
                .is_some()
        );
        assert!(REGISTRY.extension::<queue::QueueDependents>().is_some());
        assert_eq!(REGISTRY.extensions.len(), 6);
    }
}
