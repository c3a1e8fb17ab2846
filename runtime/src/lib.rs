//! The runtime: serves the content bundle compiled into this binary over an
//! OpenMRS-compatible REST API under `/openmrs`, and keeps what the API changes in redb.
//!
//! - `catalog`: the decoded bundle with lookup maps (swapped whole by a reload);
//! - `store`: the redb tables and their versioned records;
//! - `overlay`: which API-made values survive a new bundle;
//! - `auth`: accounts, sessions, lockout, privileges;
//! - `search`: the in-memory patient index;
//! - `identifiers`: check digits and identifier generation;
//! - `repr`: representations, links and paging shared by every resource;
//! - `api`: routes and handlers, one module per resource;
//! - `error`: the OpenMRS error bodies;
//! - `ops`: the health check and the backup service run from the same binary.

pub mod access;
pub mod app;
pub mod auth;
pub mod background;
pub mod catalog;
pub mod clinic;
pub mod content;
pub mod domains;
pub mod embedded;
pub mod http;
pub mod identifiers;
pub mod invalid;
pub mod ops;
pub mod overlay;
pub mod search;
pub mod serve;
pub mod spa_pack;
pub mod store;
pub mod throttle;
pub mod wire;
