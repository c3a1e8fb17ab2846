pub mod body;
pub mod fhir;
pub mod fhir_write;
pub mod merge;
pub mod repr;
pub mod rest;
