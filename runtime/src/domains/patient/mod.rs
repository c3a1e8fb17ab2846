pub mod body;
pub mod fhir;
pub mod merge;
pub mod repr;
pub mod rest;
