//! The runtime's one integration-test binary.
//!
//! - `router_*`: the API through `app(state).oneshot(…)`, without a socket, over an
//!   in-memory store (or, with `EMR_TEST_BACKEND=postgres`, a PostgreSQL schema of its
//!   own) and the embedded distribution bundle (or fixture bundles);
//! - `lifecycle`: start-up rules (overlay of a new bundle, reload, restart);
//! - `process`: the real binary over TCP: crash safety, SIGTERM, the operating procedure;
//! - `cluster`: several runtime processes on one PostgreSQL database (`EMR_TEST_POSTGRES`);
//! - `store_faults`: injected faults: a full disk, a stalled backup, altered backups,
//!   damaged store files, `check-store`.

mod cluster;
mod common;
mod layering;
mod lifecycle;
mod process;
mod router_account;
mod router_allergy;
mod router_appointment;
mod router_attachment;
mod router_audit;
mod router_bed;
mod router_bill;
mod router_clinical;
mod router_cohort;
mod router_concept;
mod router_condition;
mod router_diagnosis;
mod router_dispense;
mod router_document;
mod router_fhir;
mod router_flag;
mod router_form;
mod router_immunization;
mod router_inpatient;
mod router_merge;
mod router_o3;
mod router_order;
mod router_patient;
mod router_programme;
mod router_provider;
mod router_queue;
mod router_relationship;
mod router_report;
mod router_session;
mod router_setting;
mod router_spa;
mod router_stock;
mod router_visit_attribute;
mod store_faults;
