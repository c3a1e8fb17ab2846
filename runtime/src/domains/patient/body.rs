//! A patient creation body read into a record and validated as OpenMRS validates it (names,
//! identifiers with their formats and check digits, addresses, attributes, limits).

use crate::domains::patient::repr::ADDRESS_FIELDS;
use crate::http::AppState;
use crate::http::Caller;
use crate::http::body::{only_known, opt_bool, opt_text, ref_uuid, uuid_or_new};
use crate::http::error::{ApiError, ApiResult};
use crate::identifiers::{self, CheckError};
use crate::invalid::Invalid;
use crate::store::{
    AddressRecord, AttributeRecord, IdentifierRecord, NameRecord, PatientRecord, identifier_key,
};
use crate::wire::{parse_date, today};
use chrono::Datelike;
use serde_json::{Map, Value};

/// Full-match, as Java's `String.matches` does.
pub(crate) fn full_match(pattern: &str, value: &str) -> Option<bool> {
    fancy_regex::Regex::new(&format!("^(?:{pattern})$"))
        .ok()?
        .is_match(value)
        .ok()
}

/// Parses and validates a patient creation body. Returns the record and the identifier
/// uniqueness keys to check atomically when storing.
pub(crate) fn build_patient(
    state: &AppState,
    caller: &Caller,
    body: &Map<String, Value>,
) -> ApiResult<(PatientRecord, Vec<(String, String)>)> {
    only_known(body, &["uuid", "person", "identifiers"])?;
    let person = match body.get("person") {
        None | Some(Value::Null) => {
            return Err(ApiError::BadRequest(
                "The person property is missing".into(),
            ));
        }
        Some(Value::Object(p)) => p,
        Some(Value::String(u)) => {
            return Err(ApiError::BadRequest(format!(
                "Person '{u}' not found: send the person as an object"
            )));
        }
        Some(_) => return Err(ApiError::BadRequest("person must be an object".into())),
    };
    only_known(
        person,
        &[
            "uuid",
            "names",
            "gender",
            "birthdate",
            "birthdateEstimated",
            "age",
            "dead",
            "deathDate",
            "causeOfDeath",
            "attributes",
            "addresses",
            "birthtime",
            "deathdateEstimated",
            "causeOfDeathNonCoded",
        ],
    )?;
    let person_uuid = opt_text(person, "uuid", "person.")?;
    let top_uuid = opt_text(body, "uuid", "")?;
    if let (Some(t), Some(p)) = (&top_uuid, &person_uuid)
        && t != p
    {
        return Err(ApiError::BadRequest(
            "Some properties are not allowed to be set: uuid".into(),
        ));
    }
    let uuid = uuid_or_new(person_uuid.or(top_uuid), "uuid")?;
    let identifiers = match body.get("identifiers") {
        None | Some(Value::Null) => {
            return Err(ApiError::BadRequest(
                "Some required properties are missing: identifiers".into(),
            ));
        }
        Some(Value::Array(a)) if a.is_empty() => {
            return Err(ApiError::BadRequest(
                "identifiers on class org.openmrs.Patient => At least one identifier required"
                    .into(),
            ));
        }
        Some(Value::Array(a)) => a,
        Some(_) => return Err(ApiError::BadRequest("identifiers must be a list".into())),
    };

    let mut invalid = Invalid::default();
    // Names.
    let mut names = Vec::new();
    match person.get("names") {
        Some(Value::Array(list)) => {
            for (i, n) in list.iter().enumerate() {
                let Value::Object(n) = n else {
                    return Err(ApiError::BadRequest(format!(
                        "person.names[{i}] must be an object"
                    )));
                };
                only_known(
                    n,
                    &[
                        "uuid",
                        "preferred",
                        "givenName",
                        "middleName",
                        "familyName",
                        "familyName2",
                        "prefix",
                        "familyNamePrefix",
                        "familyNameSuffix",
                        "degree",
                    ],
                )?;
                let path = format!("person.names[{i}].");
                let record = NameRecord {
                    uuid: uuid_or_new(opt_text(n, "uuid", &path)?, &format!("{path}uuid"))?,
                    given_name: opt_text(n, "givenName", &path)?,
                    middle_name: opt_text(n, "middleName", &path)?,
                    family_name: opt_text(n, "familyName", &path)?,
                    family_name2: opt_text(n, "familyName2", &path)?,
                    prefix: opt_text(n, "prefix", &path)?,
                    degree: opt_text(n, "degree", &path)?,
                    preferred: opt_bool(n, "preferred", &path)?.unwrap_or(false),
                };
                if record.given_name.is_none() || record.family_name.is_none() {
                    invalid.field(
                        &format!("names[{i}].givenName"),
                        "Patient.names.required.given.family",
                        "Given name and family name are required",
                    );
                }
                names.push(record);
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => return Err(ApiError::BadRequest("person.names must be a list".into())),
    }
    if names.is_empty() {
        invalid.field(
            "names",
            "Person.shouldHaveAtleastOneNonVoidedName",
            "The person should have at least one name",
        );
    }
    if names.iter().filter(|n| n.preferred).count() > 1 {
        invalid.global("Only one preferred name allowed");
    }
    if !names.is_empty() && !names.iter().any(|n| n.preferred) {
        names[0].preferred = true;
    }
    // Gender and dates.
    let gender = opt_text(person, "gender", "person.")?.map(|g| g.to_uppercase());
    let gender = match gender.as_deref() {
        Some("M" | "F" | "O" | "U") => gender.unwrap_or_default(),
        _ => {
            invalid.field("gender", "Person.gender.required", "Please select a gender");
            String::new()
        }
    };
    let mut birthdate_estimated =
        opt_bool(person, "birthdateEstimated", "person.")?.unwrap_or(false);
    let birthdate = match opt_text(person, "birthdate", "person.")? {
        Some(s) => match parse_date(&s) {
            Some(d) if d > today() => {
                invalid.field(
                    "birthdate",
                    "error.date.future",
                    "Cannot be a date in the future",
                );
                None
            }
            Some(d) if today().year() - d.year() > 140 => {
                invalid.field(
                    "birthdate",
                    "error.date.nonsensical",
                    "Birthdate cannot be more than 140 years ago",
                );
                None
            }
            Some(d) => Some(d.format("%Y-%m-%d").to_string()),
            None => {
                return Err(ApiError::BadRequest(format!(
                    "person.birthdate: cannot parse the date '{s}'"
                )));
            }
        },
        None => match person.get("age") {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|a| a <= 140) => {
                birthdate_estimated = true;
                Some(format!(
                    "{}-01-01",
                    today().year() - n.as_u64().unwrap_or(0) as i32
                ))
            }
            None | Some(Value::Null) => None,
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "person.age: expected a whole number of years up to 140, got {other}"
                )));
            }
        },
    };
    let dead = opt_bool(person, "dead", "person.")?.unwrap_or(false);
    // The moment of death, as OpenMRS keeps it (a date alone is midnight UTC): the chart
    // sends the local midnight of the day chosen, which is the day before in UTC.
    let death_date = match opt_text(person, "deathDate", "person.")? {
        Some(s) => {
            let t = crate::wire::parse_datetime(&s).ok_or_else(|| {
                ApiError::BadRequest(format!("person.deathDate: cannot parse the date '{s}'"))
            })?;
            if t > chrono::Utc::now() + crate::wire::CLOCK_SKEW {
                invalid.field(
                    "deathDate",
                    "error.date.future",
                    "Cannot be a date in the future",
                );
            }
            Some(crate::wire::datetime_key(t))
        }
        None => None,
    };
    let catalog = state.catalog.load();
    let cause_of_death = match person.get("causeOfDeath").and_then(ref_uuid) {
        Some(c) => Some(catalog.concept(&c).map(|x| x.uuid.clone()).ok_or_else(|| {
            ApiError::BadRequest(format!("causeOfDeath: concept '{c}' not found"))
        })?),
        None => None,
    };
    let cause_of_death_non_coded = opt_text(person, "causeOfDeathNonCoded", "person.")?
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    if let Some(t) = &cause_of_death_non_coded {
        if t.chars().count() > 255 || t.chars().any(char::is_control) {
            invalid.field(
                "causeOfDeathNonCoded",
                "error.invalid",
                "At most 255 characters, without control characters",
            );
        }
        // PersonValidator: a coded cause or a written one, not both.
        if cause_of_death.is_some() {
            invalid.field(
                "causeOfDeathNonCoded",
                "Person.causeOfDeathAndCauseOfDeathNonCoded.error",
                "Give a coded cause of death or a written one, not both",
            );
        }
    }
    // Attributes.
    let mut attributes = Vec::new();
    if let Some(list) = person.get("attributes") {
        let Value::Array(list) = list else {
            return Err(ApiError::BadRequest(
                "person.attributes must be a list".into(),
            ));
        };
        for (i, a) in list.iter().enumerate() {
            let Value::Object(a) = a else {
                return Err(ApiError::BadRequest(format!(
                    "person.attributes[{i}] must be an object"
                )));
            };
            only_known(a, &["uuid", "attributeType", "value", "hydratedObject"])?;
            let path = format!("person.attributes[{i}].");
            let type_ref = a
                .get("attributeType")
                .and_then(ref_uuid)
                .ok_or_else(|| ApiError::BadRequest(format!("{path}attributeType is missing")))?;
            let t = catalog.person_attribute_type(&type_ref).filter(|t| !t.retired).ok_or_else(|| {
                ApiError::BadRequest(format!("attributes on class org.openmrs.Person => attributeType: '{type_ref}' is not a person attribute type"))
            })?;
            let Some(value) = opt_text(a, "value", &path)? else {
                continue;
            };
            attributes.push(AttributeRecord {
                uuid: uuid_or_new(opt_text(a, "uuid", &path)?, &format!("{path}uuid"))?,
                attribute_type: t.uuid.clone(),
                value,
            });
        }
    }
    // Addresses.
    let mut addresses = Vec::new();
    if let Some(list) = person.get("addresses") {
        let Value::Array(list) = list else {
            return Err(ApiError::BadRequest(
                "person.addresses must be a list".into(),
            ));
        };
        for (i, a) in list.iter().enumerate() {
            let Value::Object(a) = a else {
                return Err(ApiError::BadRequest(format!(
                    "person.addresses[{i}] must be an object"
                )));
            };
            let mut allowed: Vec<&str> = ADDRESS_FIELDS.to_vec();
            allowed.extend(["uuid", "preferred"]);
            only_known(a, &allowed)?;
            let path = format!("person.addresses[{i}].");
            let mut fields = std::collections::BTreeMap::new();
            for f in ADDRESS_FIELDS {
                if let Some(v) = opt_text(a, f, &path)? {
                    fields.insert(f.to_string(), v);
                }
            }
            if fields.is_empty() {
                continue; // O3 sends `[{}]` when no address was entered.
            }
            addresses.push(AddressRecord {
                uuid: uuid_or_new(opt_text(a, "uuid", &path)?, &format!("{path}uuid"))?,
                preferred: opt_bool(a, "preferred", &path)?.unwrap_or(false),
                fields,
            });
        }
        if !addresses.is_empty() && !addresses.iter().any(|a| a.preferred) {
            addresses[0].preferred = true;
        }
    }
    // Identifiers.
    let global_regex = state
        .setting("patient.identifier.regex")
        .filter(|r| !r.trim().is_empty());
    let mut records = Vec::new();
    let mut keys = Vec::new();
    for (i, id) in identifiers.iter().enumerate() {
        let Value::Object(id) = id else {
            return Err(ApiError::BadRequest(format!(
                "identifiers[{i}] must be an object"
            )));
        };
        only_known(
            id,
            &[
                "uuid",
                "identifier",
                "identifierType",
                "location",
                "preferred",
            ],
        )?;
        let path = format!("identifiers[{i}].");
        let identifier = match id.get("identifier") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                return Err(ApiError::BadRequest(format!("{path}identifier is missing")));
            }
            Some(_) => return Err(ApiError::BadRequest(
                "Don't know how to convert from a number to a string: send identifiers as strings"
                    .into(),
            )),
        };
        let type_ref = match id.get("identifierType") {
            Some(Value::Object(o)) => o
                .get("uuid")
                .or_else(|| o.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string),
            other => other.and_then(ref_uuid),
        }
        .ok_or_else(|| ApiError::BadRequest(format!("{path}identifierType is missing")))?;
        let id_type = catalog.identifier_type(&type_ref).filter(|t| !t.retired).ok_or_else(|| {
            ApiError::BadRequest(format!("identifiers on class org.openmrs.Patient => identifierType: '{type_ref}' is not an identifier type in use"))
        })?;
        let location = match id.get("location").and_then(ref_uuid) {
            Some(l) => Some(
                catalog
                    .location(&l)
                    .filter(|x| x.uuid == l)
                    .map(|x| x.uuid.clone())
                    .ok_or_else(|| {
                        ApiError::BadRequest(format!(
                            "{path}location: '{l}' is not the UUID of any location."
                        ))
                    })?,
            ),
            None => None,
        };
        if let Some(format) = &id_type.format
            && full_match(format, &identifier) != Some(true)
        {
            invalid.global(format!(
                "Identifier \"{identifier}\" does not match : \"{format}\""
            ));
        }
        if let Some(r) = &global_regex
            && full_match(r.trim(), &identifier) == Some(false)
        {
            invalid.global(format!(
                "Identifier \"{identifier}\" does not match : \"{}\"",
                r.trim()
            ));
        }
        match identifiers::validate(&identifier, id_type.validator.as_deref()) {
            Ok(()) => {}
            Err(CheckError::Invalid) => {
                invalid.global(format!("Invalid check digit for identifier: {identifier}"))
            }
            Err(CheckError::Unsupported(v)) => invalid.global(format!(
                "The identifier validator {v} is not supported by this server"
            )),
        }
        if id_type.location_behavior == Some(model::LocationBehavior::Required)
            && location.is_none()
        {
            invalid.global(format!(
                "Identifier Location cannot be null for {identifier}"
            ));
        }
        if let Some(key) = identifier_key(
            &id_type.uuid,
            id_type.uniqueness_behavior,
            location.as_deref(),
            &identifier,
        ) {
            if keys.iter().any(|(k, _)| *k == key) {
                invalid.global(format!(
                    "Identifier {identifier} already in use by another patient"
                ));
            }
            keys.push((key, identifier.clone()));
        }
        records.push(IdentifierRecord {
            uuid: uuid_or_new(opt_text(id, "uuid", &path)?, &format!("{path}uuid"))?,
            identifier,
            identifier_type: id_type.uuid.clone(),
            location,
            preferred: opt_bool(id, "preferred", &path)?.unwrap_or(false),
        });
    }
    match records.iter().filter(|r| r.preferred).count() {
        0 => records[0].preferred = true,
        1 => {}
        _ => invalid.global("Only one preferred identifier allowed"),
    }
    let missing: Vec<&str> = catalog
        .content
        .patient_identifier_types
        .iter()
        .filter(|t| {
            t.required && !t.retired && !records.iter().any(|r| r.identifier_type == t.uuid)
        })
        .map(|t| t.name.as_str())
        .collect();
    if !missing.is_empty() {
        invalid.global(format!(
            "Patient is missing the following required identifier(s): {}",
            missing.join(", ")
        ));
    }
    if let (Some(birth), Some(death)) = (&birthdate, &death_date)
        && death.get(..10).unwrap_or(death) < birth.as_str()
    {
        invalid.field(
            "deathDate",
            "error.deathdate.before.birthdate",
            "The death date cannot be before the birth date",
        );
    }
    check_limits(&names, &records, &addresses, &attributes, &mut invalid);
    if !invalid.is_empty() {
        return Err(ApiError::Invalid(invalid));
    }
    let record = PatientRecord {
        v: 1,
        uuid,
        gender,
        birthdate,
        birthdate_estimated,
        dead,
        death_date,
        cause_of_death,
        cause_of_death_non_coded,
        names,
        identifiers: records,
        addresses,
        attributes,
        voided: false,
        date_created: chrono::Utc::now().to_rfc3339(),
        creator: caller.user_uuid(),
        changed: None,
        voiding: None,
    };
    Ok((record, keys))
}

/// At most this many names, identifiers, addresses and attributes in one patient.
pub(crate) const MAX_NAMES: usize = 10;
pub(crate) const MAX_IDENTIFIERS: usize = 20;
pub(crate) const MAX_ADDRESSES: usize = 10;
pub(crate) const MAX_ATTRIBUTES: usize = 50;
/// Lengths of OpenMRS's columns: a name part, an identifier and an attribute value hold 50
/// characters; an address field 255.
pub(crate) const NAME_PART_MAX: usize = 50;
pub(crate) const IDENTIFIER_MAX: usize = 50;
pub(crate) const ATTRIBUTE_MAX: usize = 50;
pub(crate) const ADDRESS_FIELD_MAX: usize = 255;

/// Bounds every free-text field and every list of a patient, and refuses control
/// characters (NUL included) in names and identifiers and NUL anywhere.
pub(crate) fn check_limits(
    names: &[NameRecord],
    identifiers: &[IdentifierRecord],
    addresses: &[AddressRecord],
    attributes: &[AttributeRecord],
    invalid: &mut Invalid,
) {
    for (what, count, max) in [
        ("names", names.len(), MAX_NAMES),
        ("identifiers", identifiers.len(), MAX_IDENTIFIERS),
        ("addresses", addresses.len(), MAX_ADDRESSES),
        ("attributes", attributes.len(), MAX_ATTRIBUTES),
    ] {
        if count > max {
            invalid.field(
                what,
                "error.size",
                &format!("At most {max} {what} per patient"),
            );
        }
    }
    let mut text = |field: String, value: &str, max: usize, controls: bool| {
        if value.chars().count() > max {
            invalid.field(
                &field,
                "error.exceeded.max.length",
                &format!("At most {max} characters"),
            );
        }
        if value.contains('\0') || (controls && value.chars().any(char::is_control)) {
            invalid.field(
                &field,
                "error.invalid.characters",
                "Control characters are not allowed",
            );
        }
    };
    for (i, n) in names.iter().enumerate() {
        for (part, v) in [
            ("givenName", &n.given_name),
            ("middleName", &n.middle_name),
            ("familyName", &n.family_name),
            ("familyName2", &n.family_name2),
            ("prefix", &n.prefix),
            ("degree", &n.degree),
        ] {
            if let Some(v) = v {
                text(format!("names[{i}].{part}"), v, NAME_PART_MAX, true);
            }
        }
    }
    for (i, id) in identifiers.iter().enumerate() {
        text(
            format!("identifiers[{i}].identifier"),
            &id.identifier,
            IDENTIFIER_MAX,
            true,
        );
    }
    for (i, a) in addresses.iter().enumerate() {
        for (k, v) in &a.fields {
            text(format!("addresses[{i}].{k}"), v, ADDRESS_FIELD_MAX, false);
        }
    }
    for (i, a) in attributes.iter().enumerate() {
        text(
            format!("attributes[{i}].value"),
            &a.value,
            ATTRIBUTE_MAX,
            false,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_must_match_whole_identifiers() {
        assert_eq!(full_match("[0-9]{3}", "123"), Some(true));
        assert_eq!(full_match("[0-9]{3}", "1234"), Some(false));
        assert_eq!(full_match("a|b", "ab"), Some(false));
    }
}
