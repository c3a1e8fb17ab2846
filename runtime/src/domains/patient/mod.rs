pub mod body;
pub mod fhir;
pub mod repr;
pub mod rest;
pub mod merge;
