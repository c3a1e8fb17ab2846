//! FHIR `Patient` (and `Person`): read, and search by fhir2's parameters (`_id`,
//! `identifier`, `name`, `given`, `family`, `gender`, `birthdate`, `deathdate`, `deceased`,
//! `address-city`, `address-state`, `address-country`, `address-postalcode`,
//! `_lastUpdated`). The patients are found through the search index (a name or an
//! identifier; names alone are answered by the index, total included) or, for
//! `_lastUpdated` alone, the store's index by last change, then filtered on the records;
//! only a page's records are rendered, typed (`patient_resource`). Writes are in
//! `fhir_write.rs`; `_revinclude` in `app/export.rs`.

use crate::http::AppState;
use crate::http::Caller;
use crate::http::error::ApiResult;
use crate::http::fhir::{fhir, iso, not_found};
use crate::search::NameField;
use crate::store::PatientRecord;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

/// The person attribute type OpenMRS keeps a telephone number in, FHIR's `telecom` phone.
pub const TELEPHONE_ATTRIBUTE_TYPE: &str = "14d4f066-15f5-102d-96e4-000c29c2a5d7";

fn gender(g: &str) -> &'static str {
    match g {
        "M" => "male",
        "F" => "female",
        "O" => "other",
        _ => "unknown",
    }
}

/// A patient as FHIR's Patient, as a JSON tree (for those that pick or add elements).
pub fn patient_json(p: &PatientRecord, catalog: &crate::catalog::Catalog) -> Value {
    serde_json::to_value(patient_resource(p, catalog)).unwrap_or(Value::Null)
}

/// A patient as FHIR's Patient, typed, so that a search page is serialised straight to
/// bytes (a name search answers ten of them). No element without a value: no null, no
/// empty list, no empty string (as fhir2 writes them; the O3 vitals header reads
/// `address[0].city` whenever `address` exists).
pub fn patient_resource<'a>(
    p: &'a PatientRecord,
    catalog: &'a crate::catalog::Catalog,
) -> FhirPatient<'a> {
    let text = |v: &'a Option<String>| v.as_deref().filter(|s| !s.is_empty());
    // Preferred first, as Person orders them in OpenMRS: the O3 forms take the first.
    let mut ordered_names: Vec<&crate::store::NameRecord> = p.names.iter().collect();
    ordered_names.sort_by_key(|n| !n.preferred);
    let name = ordered_names
        .into_iter()
        .map(|n| {
            let given: Vec<&str> = [&n.given_name, &n.middle_name]
                .into_iter()
                .filter_map(text)
                .collect();
            let whole = [&n.given_name, &n.middle_name, &n.family_name]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(" ");
            HumanName {
                id: &n.uuid,
                usage: if n.preferred { "usual" } else { "official" },
                text: Some(whole).filter(|t| !t.is_empty()),
                family: text(&n.family_name),
                given,
            }
        })
        .collect();
    let identifier = p
        .identifiers
        .iter()
        .filter(|i| !i.identifier.is_empty())
        .map(|i| FhirIdentifier {
            id: &i.uuid,
            usage: if i.preferred { "official" } else { "usual" },
            kind: IdentifierKind {
                coding: Some(&i.identifier_type)
                    .filter(|t| !t.is_empty())
                    .map(|code| TypeCoding { code })
                    .into_iter()
                    .collect(),
                text: catalog
                    .identifier_type(&i.identifier_type)
                    .map(|t| t.name.as_str())
                    .filter(|t| !t.is_empty()),
            },
            value: &i.identifier,
            extension: i
                .location
                .as_deref()
                .map(|l| {
                    vec![LocationExtension {
                        url: crate::domains::patient::fhir_write::IDENTIFIER_LOCATION_EXTENSION,
                        value_reference: Reference {
                            reference: format!("Location/{l}"),
                            kind: "Location",
                        },
                    }]
                })
                .unwrap_or_default(),
        })
        .collect();
    let telecom = p
        .attributes
        .iter()
        .filter(|a| a.attribute_type == TELEPHONE_ATTRIBUTE_TYPE && !a.value.is_empty())
        .map(|a| ContactPoint {
            id: &a.uuid,
            system: "phone",
            value: &a.value,
        })
        .collect();
    // Preferred first, then the newest, as fhir2 lists them (`use` home, then old); fields
    // FHIR has no element for (the quartier in `address1`…) in OpenMRS's address extension,
    // which the O3 registration form reads back when editing.
    let mut ordered: Vec<(usize, &crate::store::AddressRecord)> =
        p.addresses.iter().enumerate().collect();
    ordered.sort_by_key(|(i, a)| (!a.preferred, std::cmp::Reverse(*i)));
    let address = ordered
        .into_iter()
        .map(|(_, a)| {
            let f = |k: &str| {
                a.fields
                    .get(k)
                    .map(String::as_str)
                    .filter(|v| !v.is_empty())
            };
            let parts: Vec<AddressPart> = a
                .fields
                .iter()
                .filter(|(k, v)| {
                    !v.is_empty()
                        && !matches!(
                            k.as_str(),
                            "cityVillage"
                                | "countyDistrict"
                                | "stateProvince"
                                | "postalCode"
                                | "country"
                        )
                })
                .map(|(k, v)| AddressPart {
                    url: format!("http://fhir.openmrs.org/ext/address#{k}"),
                    value_string: v,
                })
                .collect();
            FhirAddress {
                id: &a.uuid,
                usage: if a.preferred { "home" } else { "old" },
                city: f("cityVillage"),
                district: f("countyDistrict"),
                state: f("stateProvince"),
                postal_code: f("postalCode"),
                country: f("country"),
                extension: if parts.is_empty() {
                    Vec::new()
                } else {
                    vec![AddressExtension {
                        url: "http://fhir.openmrs.org/ext/address",
                        extension: parts,
                    }]
                },
            }
        })
        .collect();
    let (deceased_date_time, deceased_boolean) = match (&p.death_date, p.dead) {
        (Some(d), _) if d.contains('T') => (iso(d).as_str().map(str::to_string), None),
        (Some(d), _) => (Some(d.clone()), None),
        (None, dead) => (None, Some(dead)),
    };
    FhirPatient {
        resource_type: "Patient",
        id: &p.uuid,
        meta: PatientMeta {
            last_updated: p.changed.as_ref().map_or(&p.date_created, |(_, at)| at),
        },
        identifier,
        active: !p.voided,
        name,
        telecom,
        gender: gender(&p.gender),
        address,
        birth_date: p
            .birthdate
            .as_ref()
            .map(|b| birth_date(b, p.birthdate_estimated, crate::wire::today())),
        deceased_date_time,
        deceased_boolean,
    }
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FhirPatient<'a> {
    resource_type: &'static str,
    id: &'a str,
    meta: PatientMeta<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    identifier: Vec<FhirIdentifier<'a>>,
    active: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    name: Vec<HumanName<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    telecom: Vec<ContactPoint<'a>>,
    gender: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    address: Vec<FhirAddress<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    birth_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deceased_date_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deceased_boolean: Option<bool>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PatientMeta<'a> {
    last_updated: &'a str,
}

#[derive(serde::Serialize)]
struct HumanName<'a> {
    id: &'a str,
    #[serde(rename = "use")]
    usage: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    family: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    given: Vec<&'a str>,
}

#[derive(serde::Serialize)]
struct FhirIdentifier<'a> {
    id: &'a str,
    #[serde(rename = "use")]
    usage: &'static str,
    #[serde(rename = "type")]
    kind: IdentifierKind<'a>,
    value: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    extension: Vec<LocationExtension>,
}

#[derive(serde::Serialize)]
struct IdentifierKind<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    coding: Vec<TypeCoding<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
}

#[derive(serde::Serialize)]
struct TypeCoding<'a> {
    code: &'a str,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct LocationExtension {
    url: &'static str,
    value_reference: Reference,
}

#[derive(serde::Serialize)]
struct Reference {
    reference: String,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(serde::Serialize)]
struct ContactPoint<'a> {
    id: &'a str,
    system: &'static str,
    value: &'a str,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct FhirAddress<'a> {
    id: &'a str,
    #[serde(rename = "use")]
    usage: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    city: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    district: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    postal_code: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    country: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    extension: Vec<AddressExtension<'a>>,
}

#[derive(serde::Serialize)]
struct AddressExtension<'a> {
    url: &'static str,
    extension: Vec<AddressPart<'a>>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct AddressPart<'a> {
    url: String,
    value_string: &'a str,
}

/// A patient as fhir2 writes her Person: her names, sex, birth date, addresses and
/// telephone, and a link to her Patient (every person of this server is a patient's).
pub fn person_json(p: &PatientRecord, catalog: &crate::catalog::Catalog) -> Value {
    let patient = patient_json(p, catalog);
    let mut r = serde_json::Map::new();
    r.insert("resourceType".into(), json!("Person"));
    for k in [
        "id",
        "meta",
        "name",
        "telecom",
        "gender",
        "birthDate",
        "address",
        "active",
    ] {
        if let Some(v) = patient.get(k) {
            r.insert(k.into(), v.clone());
        }
    }
    r.insert(
        "link".into(),
        json!([{"target": {"reference": format!("Patient/{}", p.uuid), "type": "Patient"}}]),
    );
    Value::Object(r)
}

/// `GET Person/{uuid}` — privilege: Get Patients.
pub async fn person(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    read_as(&state, &caller, &id, "Person", person_json)
}

/// A patient who is not voided, answered as a resource of `kind` written by `render`.
fn read_as(
    state: &AppState,
    caller: &Caller,
    id: &str,
    kind: &str,
    render: fn(&PatientRecord, &crate::catalog::Catalog) -> Value,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    let found = state.store.patient(id)?;
    let catalog = state.catalog.load();
    Ok(match found {
        Some(p) if !p.voided => fhir(StatusCode::OK, render(&p, &catalog)),
        _ => not_found(kind, id),
    })
}

/// A birth date as fhir2 writes it: an estimated one only to the year (past five years of
/// age) or the month, which is how the O3 registration form knows it was estimated.
fn birth_date(b: &str, estimated: bool, today: chrono::NaiveDate) -> String {
    if !estimated {
        return b.to_string();
    }
    let years = chrono::NaiveDate::parse_from_str(b, "%Y-%m-%d")
        .ok()
        .and_then(|d| today.years_since(d))
        .unwrap_or(0);
    let cut = if years > 5 { 4 } else { 7 };
    b.get(..cut).unwrap_or(b).to_string()
}

/// `GET Patient/{uuid}` — privilege: Get Patients.
pub async fn patient(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    read_as(&state, &caller, &id, "Patient", patient_json)
}

/// The search parameters `Patient?` accepts (also what `metadata` lists).
pub const SEARCH_PARAMS: &[&str] = &[
    "_id",
    "identifier",
    "name",
    "given",
    "family",
    "gender",
    "birthdate",
    "deathdate",
    "deceased",
    "address-city",
    "address-state",
    "address-country",
    "address-postalcode",
    "_lastUpdated",
    "_total",
    "_revinclude",
    "_summary",
];

/// The search parameters `Person?` accepts: FHIR Person's among those of `Patient?`.
pub const PERSON_SEARCH_PARAMS: &[&str] = &[
    "_id",
    "identifier",
    "name",
    "gender",
    "birthdate",
    "address-city",
    "address-state",
    "address-country",
    "address-postalcode",
    "_lastUpdated",
    "_total",
];

/// A date search value: its prefix and the range of days it names (`2024`, `2024-05`,
/// `2024-05-01`; a datetime is cut to its day).
struct DateParam {
    prefix: &'static str,
    from: String,
    to: String,
}

fn date_param(v: &str) -> Option<DateParam> {
    let prefixes = ["eq", "ne", "ge", "le", "gt", "lt"];
    let (prefix, rest) = prefixes
        .iter()
        .find_map(|p| v.strip_prefix(p).map(|r| (*p, r)))
        .unwrap_or(("eq", v));
    let day = rest.get(..10.min(rest.len()))?;
    let (from, to) = match day.len() {
        4 if day.parse::<u16>().is_ok() => (format!("{day}-01-01"), format!("{day}-12-31")),
        7 => {
            let first = chrono::NaiveDate::parse_from_str(&format!("{day}-01"), "%Y-%m-%d").ok()?;
            let last = first
                .checked_add_months(chrono::Months::new(1))?
                .pred_opt()?;
            (first.to_string(), last.to_string())
        }
        10 => {
            let d = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
            (d.to_string(), d.to_string())
        }
        _ => return None,
    };
    Some(DateParam { prefix, from, to })
}

impl DateParam {
    /// Whether a stored date (`yyyy-mm-dd`, or a datetime whose day is its first ten
    /// characters) matches.
    fn matches(&self, stored: &str) -> bool {
        let Some(day) = stored.get(..10) else {
            return false;
        };
        let (from, to) = (self.from.as_str(), self.to.as_str());
        match self.prefix {
            "eq" => day >= from && day <= to,
            "ne" => day < from || day > to,
            "ge" => day >= from,
            "le" => day <= to,
            "gt" => day > to,
            "lt" => day < from,
            _ => false,
        }
    }
}

/// Whether a word of `field` starts with `term`, accents and case aside.
fn starts_a_word(field: Option<&String>, term: &str) -> bool {
    field.is_some_and(|f| crate::search::starts_a_word(f, term))
}

/// What a search's parameters ask of one patient.
struct Filters {
    names: Vec<(String, String)>,
    gender: Option<String>,
    birthdate: Vec<DateParam>,
    deathdate: Vec<DateParam>,
    deceased: Option<bool>,
    address: Vec<(&'static str, String)>,
    /// `_lastUpdated`: inclusive key-form bounds of her last change.
    updated: Option<crate::http::fhir::Bounds>,
}

impl Filters {
    /// Whether a filter needs the record's sex, dates or addresses (neither index has them).
    fn by_record_fields(&self) -> bool {
        self.gender.is_some()
            || !self.birthdate.is_empty()
            || !self.deathdate.is_empty()
            || !self.address.is_empty()
    }

    /// Whether only the names (and `deceased`) filter, which the search index can tell.
    fn by_names_alone(&self) -> bool {
        !self.by_record_fields() && self.updated.is_none()
    }

    fn matches(&self, p: &PatientRecord) -> bool {
        let names_ok = self.names.iter().all(|(kind, term)| {
            p.names.iter().any(|n| match kind.as_str() {
                "given" => {
                    starts_a_word(n.given_name.as_ref(), term)
                        || starts_a_word(n.middle_name.as_ref(), term)
                }
                "family" => {
                    starts_a_word(n.family_name.as_ref(), term)
                        || starts_a_word(n.family_name2.as_ref(), term)
                }
                _ => [
                    &n.given_name,
                    &n.middle_name,
                    &n.family_name,
                    &n.family_name2,
                ]
                .into_iter()
                .any(|f| starts_a_word(f.as_ref(), term)),
            })
        });
        let gender_ok = self
            .gender
            .as_deref()
            .is_none_or(|g| gender(&p.gender) == g);
        let birth_ok = self
            .birthdate
            .iter()
            .all(|d| p.birthdate.as_deref().is_some_and(|b| d.matches(b)));
        let death_ok = self
            .deathdate
            .iter()
            .all(|d| p.death_date.as_deref().is_some_and(|b| d.matches(b)));
        let deceased_ok = self.deceased.is_none_or(|dead| p.dead == dead);
        let address_ok = self.address.iter().all(|(field, term)| {
            p.addresses
                .iter()
                .any(|a| starts_a_word(a.fields.get(*field), term))
        });
        let updated_ok = self.updated.as_ref().is_none_or(|(from, to)| {
            let at = crate::store::patient_last_updated(p);
            from.as_deref().is_none_or(|f| at.as_str() >= f)
                && to.as_deref().is_none_or(|t| at.as_str() <= t)
        });
        names_ok && gender_ok && birth_ok && death_ok && deceased_ok && address_ok && updated_ok
    }
}

/// `GET Patient?…` — privilege: Get Patients. The patients are found by `_id`, an
/// `identifier` (`value` or `system|value`, the system being the identifier type's uuid or
/// name) or a name parameter through the search index, then every other parameter filters
/// them; a search with none of those is refused (it would read every patient).
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    crate::http::QueryPairs(query): crate::http::QueryPairs,
) -> ApiResult<Response> {
    search_as(state, caller, query, "Patient", patient_json).await
}

/// `GET Person?…`: the same search, each found patient answered as her Person —
/// privilege: Get Patients.
pub async fn persons(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    crate::http::QueryPairs(query): crate::http::QueryPairs,
) -> ApiResult<Response> {
    search_as(state, caller, query, "Person", person_json).await
}

/// A patient search answered as resources of `kind`, each written by `render`.
async fn search_as(
    state: Arc<AppState>,
    caller: Caller,
    query: Vec<(String, String)>,
    kind: &'static str,
    render: fn(&PatientRecord, &crate::catalog::Catalog) -> Value,
) -> ApiResult<Response> {
    use crate::http::fhir::invalid;
    caller.require(&["Get Patients"])?;
    let all = |k: &str| -> Vec<String> {
        query
            .iter()
            .filter(|(key, _)| key == k)
            .flat_map(|(_, v)| v.split(',').map(|s| s.trim().to_string()))
            .filter(|v| !v.is_empty())
            .collect()
    };
    let dates = |k: &str| -> Result<Vec<DateParam>, String> {
        all(k)
            .iter()
            .map(|v| date_param(v).ok_or_else(|| format!("{k}: not a date: {v}")))
            .collect()
    };
    let birthdate = match dates("birthdate") {
        Ok(d) => d,
        Err(e) => return Ok(invalid(&e)),
    };
    let deathdate = match dates("deathdate") {
        Ok(d) => d,
        Err(e) => return Ok(invalid(&e)),
    };
    let deceased = match all("deceased").first().map(String::as_str) {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => return Ok(invalid(&format!("deceased: true or false, not {other}"))),
    };
    let gender = all("gender").into_iter().next();
    if let Some(g) = &gender
        && !matches!(g.as_str(), "male" | "female" | "other" | "unknown")
    {
        return Ok(invalid(&format!(
            "gender: male, female, other or unknown, not {g}"
        )));
    }
    let mut names = Vec::new();
    for kind in ["name", "given", "family"] {
        for term in all(kind) {
            names.push((kind.to_string(), term));
        }
    }
    let address = [
        ("address-city", "cityVillage"),
        ("address-state", "stateProvince"),
        ("address-country", "country"),
        ("address-postalcode", "postalCode"),
    ]
    .iter()
    .flat_map(|(param, field)| all(param).into_iter().map(move |v| (*field, v)))
    .collect();
    let updated = crate::http::fhir::instant_bounds(&query, "_lastUpdated")
        .map_err(crate::http::error::ApiError::BadRequest)?;
    let filters = Filters {
        names,
        gender,
        birthdate,
        deathdate,
        deceased,
        address,
        updated,
    };
    // The candidates: by id, by identifier, by the index's name words.
    let candidates: Vec<String> = if let Some(id) = all("_id").into_iter().next() {
        vec![id]
    } else if let Some(identifier) = all("identifier").into_iter().next() {
        let (system, value) = match identifier.split_once('|') {
            Some((s, v)) => (Some(s.to_string()), v.to_string()),
            None => (None, identifier.clone()),
        };
        let wanted_type = match &system {
            Some(s) if !s.is_empty() => match state.catalog.load().identifier_type(s) {
                Some(t) => Some(t.uuid.clone()),
                None => {
                    return Ok(invalid(&format!(
                        "identifier: unknown identifier system {s}"
                    )));
                }
            },
            _ => None,
        };
        let found: Vec<String> = {
            let index = state.patient_index().await?;
            index
                .by_identifier(&value)
                .into_iter()
                .map(String::from)
                .collect()
        };
        let st = state.clone();
        crate::http::blocking(move || {
            let records = st
                .store
                .patients_in(&found.iter().map(String::as_str).collect::<Vec<_>>())?;
            Ok(records
                .into_iter()
                .filter(|p| {
                    p.identifiers.iter().any(|i| {
                        i.identifier.eq_ignore_ascii_case(value.trim())
                            && wanted_type
                                .as_deref()
                                .is_none_or(|t| t == i.identifier_type)
                    })
                })
                .map(|p| p.uuid.clone())
                .collect())
        })
        .await?
    } else if !filters.names.is_empty() {
        let terms: Vec<(NameField, &str)> = filters
            .names
            .iter()
            .map(|(kind, t)| {
                let field = match kind.as_str() {
                    "given" => NameField::Given,
                    "family" => NameField::Family,
                    _ => NameField::Any,
                };
                (field, t.as_str())
            })
            .collect();
        // Names alone (and `deceased`) are answered by the index: the total without
        // reading a record, then only the page's records.
        let answered = {
            let index = state.patient_index().await?;
            let by_index = if filters.by_names_alone() {
                index.by_name_fields(&terms)
            } else {
                None
            };
            match by_index {
                Some(found) => Ok(found
                    .into_iter()
                    .filter(|(_, dead)| filters.deceased.is_none_or(|d| d == *dead))
                    .map(|(uuid, _)| uuid.to_string())
                    .collect::<Vec<_>>()),
                // Every name term at once: the index intersects their words, rarest
                // first, so `name=Mbuyi&given=Marie` reads the few Marie Mbuyi, not every
                // Mbuyi, whose records then tell.
                None => {
                    let words: Vec<&str> = terms.iter().map(|(_, t)| *t).collect();
                    Err(index
                        .search(&words.join(" "), true, 1)
                        .into_iter()
                        .map(String::from)
                        .collect::<Vec<_>>())
                }
            }
        };
        match answered {
            Ok(found) => return answer(&state, &caller, &query, kind, render, found).await,
            Err(candidates) => candidates,
        }
    } else if let Some((from, to)) = filters.updated.clone() {
        return changed_between(state, caller, query, kind, render, filters, from, to).await;
    } else {
        return Ok(invalid(
            "Patient searches need _id, identifier, name, given, family or _lastUpdated: a search by the other parameters alone would read every patient",
        ));
    };
    let st = state.clone();
    let found = crate::http::blocking(move || {
        let records = st
            .store
            .patients_in(&candidates.iter().map(String::as_str).collect::<Vec<_>>())?;
        Ok(records
            .into_iter()
            .filter(|p| !p.voided && filters.matches(p))
            .map(|p| p.uuid.clone())
            .collect::<Vec<_>>())
    })
    .await?;
    answer(&state, &caller, &query, kind, render, found).await
}

/// The patients changed within `from..=to` (`_lastUpdated` without a name or an
/// identifier: a warehouse's incremental extraction), oldest first, from the index by last
/// change; the other parameters filter them. Their total, optional in FHIR, is counted
/// only with `_total=accurate` (or `_summary=count`): the `next` link says whether more
/// follow.
#[allow(clippy::too_many_arguments)]
async fn changed_between(
    state: Arc<AppState>,
    caller: Caller,
    query: Vec<(String, String)>,
    kind: &'static str,
    render: fn(&PatientRecord, &crate::catalog::Catalog) -> Value,
    filters: Filters,
    from: Option<String>,
    to: Option<String>,
) -> ApiResult<Response> {
    use crate::http::fhir::{search_bundle_paged, window};
    let summary_count = crate::http::param(&query, "_summary") == Some("count");
    let mut w = window(&query);
    w.count_all = summary_count || crate::http::param(&query, "_total") == Some("accurate");
    if summary_count {
        w.limit = 0;
    }
    // Only a filter beyond the bounds reads each record the index names.
    let by_bounds_alone =
        filters.names.is_empty() && filters.deceased.is_none() && !filters.by_record_fields();
    let st = state.clone();
    let (page, records) = crate::http::blocking(move || {
        let page =
            st.store
                .patients_updated_between(from.as_deref(), to.as_deref(), w, |txn, uuid| {
                    if by_bounds_alone {
                        return Ok(true);
                    }
                    Ok(crate::store::Store::patient_in(txn, uuid)?
                        .is_some_and(|p| !p.voided && filters.matches(&p)))
                })?;
        let records = st
            .store
            .patients_in(&page.uuids.iter().map(String::as_str).collect::<Vec<_>>())?;
        Ok((page, records))
    })
    .await?;
    let catalog = state.catalog.load();
    let entries: Vec<(String, Value)> = records
        .iter()
        .map(|p| (p.uuid.clone(), render(p, &catalog)))
        .collect();
    let bundle = search_bundle_paged(
        &crate::http::fhir::base(&state, &caller),
        kind,
        &query,
        page.total,
        page.more,
        w.start,
        w.limit,
        entries,
    );
    Ok(fhir(
        StatusCode::OK,
        serde_json::to_value(bundle).map_err(crate::http::error::ApiError::internal)?,
    ))
}

/// The searchset Bundle of the patients `found` (every match, in order): its total, and
/// the window's page read from the store (none for `_summary=count`).
async fn answer(
    state: &Arc<AppState>,
    caller: &Caller,
    query: &[(String, String)],
    kind: &'static str,
    render: fn(&PatientRecord, &crate::catalog::Catalog) -> Value,
    found: Vec<String>,
) -> ApiResult<Response> {
    use crate::http::fhir::{fhir_of, search_bundle, search_bundle_of, window};
    let window = window(query);
    let total = found.len();
    let summary_count = crate::http::param(query, "_summary") == Some("count");
    let wanted: Vec<String> = if summary_count {
        Vec::new()
    } else {
        found
            .into_iter()
            .skip(window.start)
            .take(window.limit)
            .collect()
    };
    let st = state.clone();
    let records = crate::http::blocking(move || {
        Ok(st
            .store
            .patients_in(&wanted.iter().map(String::as_str).collect::<Vec<_>>())?)
    })
    .await?;
    let catalog = state.catalog.load();
    // A patient voided since she was found is left out of the page.
    let shown = records.iter().filter(|p| !p.voided);
    let base = crate::http::fhir::base(state, caller);
    let (start, limit) = (window.start, window.limit);
    if kind == "Patient" {
        // Typed, straight to bytes: a page of ten patients is most of a name search's time.
        let page = shown
            .map(|p| (p.uuid.clone(), patient_resource(p, &catalog)))
            .collect();
        let bundle = search_bundle_of(&base, kind, query, total, start, limit, page);
        return Ok(fhir_of(StatusCode::OK, &bundle));
    }
    let page: Vec<Value> = shown.map(|p| render(p, &catalog)).collect();
    Ok(fhir(
        StatusCode::OK,
        search_bundle(&base, kind, query, total, start, limit, page),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_parameters_name_a_day_a_month_or_a_year() {
        let d = date_param("1990-05").unwrap();
        assert!(d.matches("1990-05-31") && !d.matches("1990-06-01"));
        assert!(date_param("ge1990").unwrap().matches("1990-01-01"));
        assert!(!date_param("gt1990").unwrap().matches("1990-12-31"));
        assert!(
            date_param("lt1990-05-02")
                .unwrap()
                .matches("1990-05-01T23:00:00.000+0000")
        );
        assert!(date_param("not-a-date").is_none() && date_param("1990-13").is_none());
    }

    #[test]
    fn an_estimated_birth_date_is_written_to_the_year_or_the_month() {
        let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 26).unwrap();
        assert_eq!(birth_date("1992-11-26", false, today), "1992-11-26");
        assert_eq!(birth_date("1992-11-26", true, today), "1992");
        assert_eq!(birth_date("2024-05-01", true, today), "2024-05");
    }
}
