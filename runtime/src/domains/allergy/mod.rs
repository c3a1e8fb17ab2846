//! Allergies: what a patient reacts to, as OpenMRS core keeps it (`allergy`) and as the O3
//! allergies widget writes it (REST `patient/{uuid}/allergy`) and reads it (FHIR
//! `AllergyIntolerance`). An allergy is an allergen (a type, DRUG, FOOD, ENVIRONMENT or
//! OTHER, and a concept of the content or free text with the "other" concept), a severity
//! concept, reactions (concepts, or free text with the "other" concept) and a comment.
//!
//! Rules: core's `AllergyValidator` (a patient, an allergen with its type, a coded or
//! free-text allergen, text when the allergen is "other"), no second active allergy to
//! the same allergen, every concept the content's and not retired, and OpenMRS's column
//! sizes. Core accepts only ASCII letters in a free-text reaction; this distribution takes
//! any printable text, since French reactions carry accents and spaces. The concepts come
//! from the `allergy.concept.*` settings (CIEL's by default).

pub mod fhir;
pub mod rest;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AllergenType {
    Drug,
    Food,
    Environment,
    Other,
}

impl AllergenType {
    pub fn parse(s: &str) -> Option<AllergenType> {
        match s.trim().to_ascii_uppercase().as_str() {
            "DRUG" => Some(AllergenType::Drug),
            "FOOD" => Some(AllergenType::Food),
            "ENVIRONMENT" => Some(AllergenType::Environment),
            "OTHER" => Some(AllergenType::Other),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AllergenType::Drug => "DRUG",
            AllergenType::Food => "FOOD",
            AllergenType::Environment => "ENVIRONMENT",
            AllergenType::Other => "OTHER",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reaction {
    /// A concept uuid (the "other" concept when the reaction is free text).
    pub reaction: String,
    pub non_coded: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllergyRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    pub allergen_type: AllergenType,
    /// A concept uuid; the "other" concept when the allergen is free text.
    pub coded_allergen: Option<String>,
    pub non_coded_allergen: Option<String>,
    /// A concept uuid (mild, moderate, severe).
    pub severity: Option<String>,
    pub comment: Option<String>,
    pub reactions: Vec<Reaction>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// The concepts the `allergy.concept.*` settings name, resolved to uuids.
pub struct AllergyConcepts {
    pub other: String,
    pub mild: String,
    pub moderate: String,
    pub severe: String,
}

impl AllergyConcepts {
    pub fn of(state: &crate::clinic::Clinic) -> AllergyConcepts {
        let catalog = state.catalog.clone();
        let concept = |setting: &str, ciel: &str| {
            let value = state
                .setting(setting)
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| format!("{ciel:A<36}"));
            catalog
                .concept(value.trim())
                .map_or_else(|| value.trim().to_string(), |c| c.uuid.clone())
        };
        AllergyConcepts {
            other: concept("allergy.concept.otherNonCoded", "5622"),
            mild: concept("allergy.concept.severity.mild", "1498"),
            moderate: concept("allergy.concept.severity.moderate", "1499"),
            severe: concept("allergy.concept.severity.severe", "1500"),
        }
    }

    /// FHIR's severity code of a severity concept.
    pub fn severity_code(&self, severity: &str) -> Option<&'static str> {
        if severity == self.mild {
            Some("mild")
        } else if severity == self.moderate {
            Some("moderate")
        } else if severity == self.severe {
            Some("severe")
        } else {
            None
        }
    }
}

impl AllergyRecord {
    /// Whether the allergen is a concept of its own (not free text with the "other"
    /// concept).
    pub fn is_coded(&self, other: &str) -> bool {
        self.coded_allergen.as_deref().is_some_and(|c| c != other)
    }

    /// Whether `self` and `o` name the same allergen (core's `Allergen.isSameAllergen`):
    /// the same concept, or the same text in any case.
    pub fn same_allergen(&self, o: &AllergyRecord, other: &str) -> bool {
        match (self.is_coded(other), o.is_coded(other)) {
            (true, true) => self.coded_allergen == o.coded_allergen,
            (false, false) => match (&self.non_coded_allergen, &o.non_coded_allergen) {
                (Some(a), Some(b)) => a.trim().to_lowercase() == b.trim().to_lowercase(),
                _ => false,
            },
            _ => false,
        }
    }
}
