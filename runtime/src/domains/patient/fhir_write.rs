//! FHIR `Patient` writes, as a client registry or a national system registers and corrects
//! a patient: `POST Patient` and `PUT Patient/{id}`. The resource is translated to the REST
//! API's create-shaped body and goes through exactly the rules of a registration
//! (`body::build_patient`), so FHIR cannot store what the registration desk could not.
//!
//! Translated as fhir2 reads a Patient: `name` (the first `given` the given name, the
//! others the middle name, `use: usual` the preferred name), `gender`, `birthDate` (a year
//! or a month is an estimated birth date), `deceasedBoolean` / `deceasedDateTime`,
//! `address` (with OpenMRS's address extension for the fields FHIR has no element for),
//! the `phone` of `telecom` (the telephone attribute), and `identifier` (its type by
//! `type.coding[].code` or `type.text`, a uuid or a name; `use: official` the preferred
//! one; its location in the `…/patient/identifier#location` extension). Elements this
//! server does not keep are refused (400) rather than silently dropped.

use crate::domains::patient::fhir::{TELEPHONE_ATTRIBUTE_TYPE, patient_json};
use crate::domains::patient::rest::{change_patient, create_record};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fhir::{fhir, located, unprocessable};
use crate::http::{AppState, Caller, JsonBody};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The extension holding an identifier's location, as fhir2 writes it.
pub const IDENTIFIER_LOCATION_EXTENSION: &str =
    "http://fhir.openmrs.org/ext/patient/identifier#location";
const ADDRESS_EXTENSION: &str = "http://fhir.openmrs.org/ext/address";

/// `POST Patient` — privilege: Add Patients. 201 with `Location` and the Patient read back;
/// a malformed resource 400, a rule of registration broken 422 (each an OperationOutcome).
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(resource): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Patients"])?;
    let (person, identifiers) =
        translate(&Value::Object(resource)).map_err(ApiError::BadRequest)?;
    let mut body = Map::new();
    body.insert("person".into(), Value::Object(person));
    body.insert("identifiers".into(), Value::Array(identifiers));
    let record = match create_record(&state, &caller, &body).await {
        Ok(r) => r,
        Err(ApiError::Invalid(inv)) => return Ok(unprocessable(&inv)),
        Err(e) => return Err(e),
    };
    let res = fhir(
        StatusCode::CREATED,
        patient_json(&record, &state.catalog.load()),
    );
    Ok(located(res, &state, &caller, "Patient", &record.uuid))
}

/// `PUT Patient/{id}` — privilege: Edit Patients. The resource replaces what FHIR says of
/// the patient: names, sex, birth, death, addresses, telephone and identifiers (a name,
/// address or identifier keeps its uuid when the resource names it by `id`); what FHIR
/// does not carry (other person attributes, a name's prefix or second family name, the
/// cause of death while she is still dead) is kept. Its `id` must be the path's; an
/// unknown patient is 404.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(resource): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    if resource.get("id").and_then(Value::as_str) != Some(id.as_str()) {
        return Err(ApiError::BadRequest(format!(
            "The resource's id must be the one in the URL ({id})"
        )));
    }
    let (person, identifiers) =
        translate(&Value::Object(resource)).map_err(ApiError::BadRequest)?;
    let changed = change_patient(&state, &caller, &id, move |stored| {
        replace(stored, person, identifiers);
        Ok(())
    })
    .await;
    let record = match changed {
        Ok(r) => r,
        Err(ApiError::Invalid(inv)) => return Ok(unprocessable(&inv)),
        Err(e) => return Err(e),
    };
    Ok(fhir(
        StatusCode::OK,
        patient_json(&record, &state.catalog.load()),
    ))
}

/// Lays a translated resource over a stored patient's create-shaped body (`as_body`).
fn replace(stored: &mut Map<String, Value>, mut person: Map<String, Value>, ids: Vec<Value>) {
    let before = stored.get("person").cloned().unwrap_or(json!({}));
    let kept = |key: &str| before.get(key).and_then(Value::as_array).cloned();
    // A name named by id keeps what FHIR does not carry (prefix, degree, second family
    // name); so does the cause of death of a patient still dead.
    if let Some(Value::Array(names)) = person.get_mut("names") {
        let old = kept("names").unwrap_or_default();
        for name in names.iter_mut() {
            let known = name
                .get("uuid")
                .and_then(|u| old.iter().find(|o| o.get("uuid") == Some(u)));
            if let (Some(Value::Object(old)), Value::Object(new)) = (known, &mut *name) {
                for k in ["prefix", "degree", "familyName2"] {
                    if let Some(v) = old.get(k) {
                        new.entry(k).or_insert_with(|| v.clone());
                    }
                }
            }
        }
    }
    // An estimated birth date reads as its year or its month (`fhir::birth_date`): the
    // same year or month put back keeps the stored day rather than moving it to the 1st.
    let estimated = |m: &Map<String, Value>| m.get("birthdateEstimated") == Some(&json!(true));
    if let (Some(Value::String(new)), Some(Value::String(old))) =
        (person.get("birthdate"), before.get("birthdate"))
    {
        let precision = if new.ends_with("-01-01") { 4 } else { 7 };
        if estimated(&person)
            && before.as_object().is_some_and(estimated)
            && new.get(..precision) == old.get(..precision)
        {
            person.insert("birthdate".into(), json!(old));
        }
    }
    if person.get("dead") == Some(&json!(true)) {
        for k in ["causeOfDeath", "causeOfDeathNonCoded"] {
            if let Some(v) = before.get(k) {
                person.insert(k.into(), v.clone());
            }
        }
    }
    // Attributes FHIR does not carry stay; the telephone is the resource's.
    let mut attributes: Vec<Value> = kept("attributes")
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a.get("attributeType") != Some(&json!(TELEPHONE_ATTRIBUTE_TYPE)))
        .collect();
    if let Some(Value::Array(phone)) = person.remove("attributes") {
        attributes.extend(phone);
    }
    person.insert("attributes".into(), Value::Array(attributes));
    if let Some(uuid) = before.get("uuid") {
        person.insert("uuid".into(), uuid.clone());
    }
    stored.insert("person".into(), Value::Object(person));
    stored.insert("identifiers".into(), Value::Array(ids));
}

/// A FHIR Patient as the REST API's person and identifiers, or why it cannot be one.
fn translate(r: &Value) -> Result<(Map<String, Value>, Vec<Value>), String> {
    let Value::Object(fields) = r else {
        return Err("The body must be a Patient resource".into());
    };
    if r.get("resourceType").and_then(Value::as_str) != Some("Patient") {
        return Err("resourceType must be Patient".into());
    }
    const KEPT: &[&str] = &[
        "resourceType",
        "id",
        "meta",
        "text",
        "active",
        "identifier",
        "name",
        "telecom",
        "gender",
        "birthDate",
        "deceasedBoolean",
        "deceasedDateTime",
        "address",
    ];
    if let Some(other) = fields.keys().find(|k| !KEPT.contains(&k.as_str())) {
        return Err(format!("Patient.{other} is not kept by this server"));
    }
    if r.get("active") == Some(&json!(false)) {
        return Err("Patient.active: false is not kept: a patient is removed with DELETE through the REST API".into());
    }
    let mut person = Map::new();
    person.insert("names".into(), Value::Array(names(r)?));
    if let Some(g) = r.get("gender") {
        let code = match g.as_str() {
            Some("male") => "M",
            Some("female") => "F",
            Some("other") => "O",
            Some("unknown") => "U",
            _ => {
                return Err(format!(
                    "Patient.gender: male, female, other or unknown, not {g}"
                ));
            }
        };
        person.insert("gender".into(), json!(code));
    }
    if let Some(b) = r.get("birthDate") {
        let b = b.as_str().ok_or("Patient.birthDate must be a date")?;
        let (day, estimated) = match b.len() {
            4 => (format!("{b}-01-01"), true),
            7 => (format!("{b}-01"), true),
            10 => (b.to_string(), false),
            _ => return Err(format!("Patient.birthDate: not a date: {b}")),
        };
        if chrono::NaiveDate::parse_from_str(&day, "%Y-%m-%d").is_err() {
            return Err(format!("Patient.birthDate: not a date: {b}"));
        }
        person.insert("birthdate".into(), json!(day));
        person.insert("birthdateEstimated".into(), json!(estimated));
    }
    match (r.get("deceasedBoolean"), r.get("deceasedDateTime")) {
        (Some(_), Some(_)) => {
            return Err("Patient: deceasedBoolean or deceasedDateTime, not both".into());
        }
        (Some(Value::Bool(dead)), None) => {
            person.insert("dead".into(), json!(dead));
        }
        (None, Some(Value::String(when))) => {
            person.insert("dead".into(), json!(true));
            person.insert("deathDate".into(), json!(when));
        }
        (None, None) => {
            person.insert("dead".into(), json!(false));
        }
        _ => return Err("Patient.deceased[x]: a boolean or a dateTime".into()),
    }
    person.insert("addresses".into(), Value::Array(addresses(r)?));
    person.insert("attributes".into(), Value::Array(telephone(r)?));
    Ok((person, identifiers(r)?))
}

/// The elements of a list (none when absent), or why it is not a list of objects.
fn items<'a>(r: &'a Value, key: &str) -> Result<Vec<&'a Map<String, Value>>, String> {
    match r.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_object()
                    .ok_or_else(|| format!("Patient.{key} must be a list of objects"))
            })
            .collect(),
        Some(_) => Err(format!("Patient.{key} must be a list")),
    }
}

/// A string element, or why it is not one.
fn text(item: &Map<String, Value>, key: &str, path: &str) -> Result<Option<String>, String> {
    match item.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{path}.{key} must be a string")),
    }
}

/// Refuses an element of `item` outside `known`.
fn only(item: &Map<String, Value>, known: &[&str], path: &str) -> Result<(), String> {
    match item.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!("{path}.{k} is not kept by this server")),
        None => Ok(()),
    }
}

fn names(r: &Value) -> Result<Vec<Value>, String> {
    items(r, "name")?
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            let path = format!("Patient.name[{i}]");
            only(n, &["id", "use", "text", "family", "given"], &path)?;
            let given: Vec<String> = match n.get("given") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(g)) => g
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| format!("{path}.given must be strings"))
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(format!("{path}.given must be a list")),
            };
            let mut name = Map::new();
            if let Some(id) = text(n, "id", &path)? {
                name.insert("uuid".into(), json!(id));
            }
            if let Some(first) = given.first() {
                name.insert("givenName".into(), json!(first));
            }
            if given.len() > 1 {
                name.insert("middleName".into(), json!(given[1..].join(" ")));
            }
            if let Some(family) = text(n, "family", &path)? {
                name.insert("familyName".into(), json!(family));
            }
            let usual = text(n, "use", &path)?.as_deref() == Some("usual");
            name.insert("preferred".into(), json!(usual));
            Ok(Value::Object(name))
        })
        .collect()
}

fn addresses(r: &Value) -> Result<Vec<Value>, String> {
    items(r, "address")?
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            let path = format!("Patient.address[{i}]");
            only(
                a,
                &[
                    "id",
                    "use",
                    "city",
                    "district",
                    "state",
                    "postalCode",
                    "country",
                    "extension",
                ],
                &path,
            )?;
            let mut address = Map::new();
            if let Some(id) = text(a, "id", &path)? {
                address.insert("uuid".into(), json!(id));
            }
            for (fhir_name, field) in [
                ("city", "cityVillage"),
                ("district", "countyDistrict"),
                ("state", "stateProvince"),
                ("postalCode", "postalCode"),
                ("country", "country"),
            ] {
                if let Some(v) = text(a, fhir_name, &path)? {
                    address.insert(field.into(), json!(v));
                }
            }
            let outer = match a.get("extension") {
                None => Vec::new(),
                Some(Value::Array(list)) => list.iter().collect(),
                Some(_) => return Err(format!("{path}.extension must be a list")),
            };
            for ext in outer {
                if ext.get("url").and_then(Value::as_str) != Some(ADDRESS_EXTENSION) {
                    return Err(format!(
                        "{path}.extension: only {ADDRESS_EXTENSION} is kept"
                    ));
                }
                for part in ext
                    .get("extension")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let field = part
                        .get("url")
                        .and_then(Value::as_str)
                        .and_then(|u| u.strip_prefix(ADDRESS_EXTENSION))
                        .and_then(|u| u.strip_prefix('#'))
                        .ok_or_else(|| {
                            format!(
                                "{path}: an address extension's url is {ADDRESS_EXTENSION}#<field>"
                            )
                        })?;
                    let value =
                        part.get("valueString")
                            .and_then(Value::as_str)
                            .ok_or_else(|| {
                                format!("{path}: the address extension {field} needs a valueString")
                            })?;
                    address.insert(field.into(), json!(value));
                }
            }
            let home = text(a, "use", &path)?.as_deref() == Some("home");
            address.insert("preferred".into(), json!(home));
            Ok(Value::Object(address))
        })
        .collect()
}

/// The telephone number of `telecom` as the person attribute OpenMRS keeps it in.
fn telephone(r: &Value) -> Result<Vec<Value>, String> {
    let mut phones = Vec::new();
    for (i, t) in items(r, "telecom")?.into_iter().enumerate() {
        let path = format!("Patient.telecom[{i}]");
        only(t, &["id", "system", "value", "use"], &path)?;
        if text(t, "system", &path)?.as_deref() != Some("phone") {
            return Err(format!("{path}: only a phone number is kept"));
        }
        let Some(value) = text(t, "value", &path)? else {
            return Err(format!("{path}.value is missing"));
        };
        let mut attribute = json!({"attributeType": TELEPHONE_ATTRIBUTE_TYPE, "value": value});
        if let Some(id) = text(t, "id", &path)? {
            attribute["uuid"] = json!(id);
        }
        phones.push(attribute);
    }
    if phones.len() > 1 {
        return Err("Patient.telecom: one phone number is kept".into());
    }
    Ok(phones)
}

fn identifiers(r: &Value) -> Result<Vec<Value>, String> {
    items(r, "identifier")?
        .into_iter()
        .enumerate()
        .map(|(i, id)| {
            let path = format!("Patient.identifier[{i}]");
            only(id, &["id", "use", "type", "value", "extension"], &path)?;
            let mut identifier = Map::new();
            if let Some(uuid) = text(id, "id", &path)? {
                identifier.insert("uuid".into(), json!(uuid));
            }
            if let Some(value) = text(id, "value", &path)? {
                identifier.insert("identifier".into(), json!(value));
            }
            let kind = id.get("type");
            let type_ref = kind
                .and_then(|t| t.get("coding"))
                .and_then(Value::as_array)
                .and_then(|c| c.iter().find_map(|c| c.get("code").and_then(Value::as_str)))
                .or_else(|| kind.and_then(|t| t.get("text")).and_then(Value::as_str))
                .ok_or_else(|| {
                    format!("{path}.type: an identifier type, by its uuid as a code or its name as text")
                })?;
            identifier.insert("identifierType".into(), json!(type_ref));
            for ext in id
                .get("extension")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let location = (ext.get("url").and_then(Value::as_str)
                    == Some(IDENTIFIER_LOCATION_EXTENSION))
                .then(|| ext.get("valueReference")?.get("reference")?.as_str())
                .flatten()
                .ok_or_else(|| {
                    format!("{path}.extension: only {IDENTIFIER_LOCATION_EXTENSION} with a valueReference is kept")
                })?;
                identifier.insert(
                    "location".into(),
                    json!(location.trim_start_matches("Location/")),
                );
            }
            let official = text(id, "use", &path)?.as_deref() == Some("official");
            identifier.insert("preferred".into(), json!(official));
            Ok(Value::Object(identifier))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patient_reads_as_the_registration_desk_would_send_her() {
        let (person, ids) = translate(&json!({
            "resourceType": "Patient",
            "name": [{"use": "usual", "family": "Mbuyi", "given": ["Marie", "Claire", "Ange"]}],
            "gender": "female",
            "birthDate": "1990-05",
            "address": [{"use": "home", "city": "Kinshasa", "extension": [{"url": ADDRESS_EXTENSION,
                "extension": [{"url": format!("{ADDRESS_EXTENSION}#address1"), "valueString": "Q. Matonge"}]}]}],
            "telecom": [{"system": "phone", "value": "+243 81 000 0000"}],
            "identifier": [{"use": "official", "type": {"text": "OpenMRS ID"}, "value": "100000Y",
                "extension": [{"url": IDENTIFIER_LOCATION_EXTENSION, "valueReference": {"reference": "Location/abc"}}]}],
        }))
        .unwrap();
        assert_eq!(
            person["names"],
            json!([{"givenName": "Marie", "middleName": "Claire Ange", "familyName": "Mbuyi", "preferred": true}])
        );
        assert_eq!(person["birthdate"], "1990-05-01");
        assert_eq!(person["birthdateEstimated"], true);
        assert_eq!(person["gender"], "F");
        assert_eq!(person["dead"], false);
        assert_eq!(
            person["addresses"],
            json!([{"cityVillage": "Kinshasa", "address1": "Q. Matonge", "preferred": true}])
        );
        assert_eq!(person["attributes"][0]["value"], "+243 81 000 0000");
        assert_eq!(
            ids,
            vec![
                json!({"identifier": "100000Y", "identifierType": "OpenMRS ID", "location": "abc", "preferred": true})
            ]
        );
    }

    #[test]
    fn what_this_server_does_not_keep_is_refused() {
        let refused = |r: Value| translate(&r).unwrap_err();
        assert!(refused(json!({"resourceType": "Person"})).contains("resourceType"));
        assert!(refused(json!({"resourceType": "Patient", "photo": []})).contains("Patient.photo"));
        assert!(
            refused(
                json!({"resourceType": "Patient", "telecom": [{"system": "email", "value": "a@b"}]})
            )
            .contains("phone")
        );
        assert!(refused(json!({"resourceType": "Patient", "gender": "f"})).contains("gender"));
        assert!(
            refused(json!({"resourceType": "Patient", "birthDate": "1990-13"}))
                .contains("birthDate")
        );
        assert!(
            refused(json!({"resourceType": "Patient", "identifier": [{"value": "1"}]}))
                .contains("type")
        );
    }
}
