pub mod fhir;
pub mod rest;
