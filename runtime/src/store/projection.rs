//! A patient's search projection: what the search index needs of a patient (uuid, names,
//! identifiers, living or dead, voided), kept next to each patient record so that the index
//! loads without reading whole records.

use crate::store::{PatientRecord, StoreError, StoreResult};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// What the index needs of a patient, borrowed from a record or read from its stored
/// search projection (`projection`), which is this struct's own JSON: the same fields,
/// under the same names, as in the stored patient record, so either can be read as one.
#[derive(Deserialize, Serialize)]
pub struct Searchable<'a> {
    #[serde(borrow)]
    pub uuid: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dead: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub voided: bool,
    #[serde(default, borrow, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<SearchableName<'a>>,
    #[serde(default, borrow, skip_serializing_if = "Vec::is_empty")]
    pub identifiers: Vec<SearchableIdentifier<'a>>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Deserialize, Serialize)]
pub struct SearchableName<'a> {
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub given_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub middle_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub family_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub family_name2: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Serialize)]
pub struct SearchableIdentifier<'a> {
    #[serde(borrow)]
    pub identifier: Cow<'a, str>,
}

impl<'a> From<&'a PatientRecord> for Searchable<'a> {
    fn from(p: &'a PatientRecord) -> Self {
        let text = |s: &'a Option<String>| s.as_deref().map(Cow::Borrowed);
        Searchable {
            uuid: Cow::Borrowed(&p.uuid),
            dead: p.dead,
            voided: p.voided,
            names: p
                .names
                .iter()
                .map(|n| SearchableName {
                    given_name: text(&n.given_name),
                    middle_name: text(&n.middle_name),
                    family_name: text(&n.family_name),
                    family_name2: text(&n.family_name2),
                })
                .collect(),
            identifiers: p
                .identifiers
                .iter()
                .map(|i| SearchableIdentifier {
                    identifier: Cow::Borrowed(&i.identifier),
                })
                .collect(),
        }
    }
}

/// The bytes stored for a patient in the store's search projection.
pub fn projection(p: &PatientRecord) -> Vec<u8> {
    serde_json::to_vec(&Searchable::from(p)).expect("a projection serializes")
}

/// A stored patient record's search projection, read from the record's bytes.
pub fn projection_of_stored(record: &[u8]) -> StoreResult<Vec<u8>> {
    let p = decode_searchable(record)?;
    Ok(serde_json::to_vec(&p).expect("a projection serializes"))
}

pub fn decode_searchable(bytes: &[u8]) -> StoreResult<Searchable<'_>> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        table: "patients",
        detail: e.to_string(),
    })
}
