//! `patient`: search (`?q=`, `?identifier=`), read, and creation validated as OpenMRS
//! validates it; with the person, name, identifier, address and attribute objects nested in
//! its representations.

use crate::content::person_types::{AttributeTypeRes, IdentifierTypeRes};
use crate::http::AppState;
use crate::http::body::{only_known, opt_bool, opt_text, ref_uuid, uuid_or_new};
use crate::http::error::{ApiError, ApiResult, Invalid};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested, nested_list, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, json, ok, param};
use crate::identifiers::{self, CheckError};
use crate::store::{
    AddressRecord, AttributeRecord, IdentifierRecord, NameRecord, PatientRecord, PatientVoiding,
    StoreError, identifier_key,
};
use crate::wire::{age_on, format_date, format_datetime, parse_date, today};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Datelike;
use serde_json::{Map, Value, json};
use std::sync::Arc;

fn full_name(n: &NameRecord) -> String {
    [
        &n.prefix,
        &n.given_name,
        &n.middle_name,
        &n.family_name,
        &n.family_name2,
        &n.degree,
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.is_empty())
    .cloned()
    .collect::<Vec<_>>()
    .join(" ")
}

/// A patient's person as other records name it (a relationship's persons, a provider's
/// person): the preferred name in full.
pub fn person_display(p: &PatientRecord) -> String {
    preferred_name(p).map(full_name).unwrap_or_default()
}

fn preferred_name(p: &PatientRecord) -> Option<&NameRecord> {
    p.names
        .iter()
        .find(|n| n.preferred)
        .or_else(|| p.names.first())
}

fn preferred_identifier(p: &PatientRecord) -> Option<&IdentifierRecord> {
    p.identifiers
        .iter()
        .find(|i| i.preferred)
        .or_else(|| p.identifiers.first())
}

pub struct PatientRes<'a>(pub &'a PatientRecord);
pub struct PersonRes<'a>(pub &'a PatientRecord);
pub struct NameRes<'a>(pub &'a str, pub &'a NameRecord);
pub struct IdentifierRes<'a>(pub &'a str, pub &'a IdentifierRecord);
pub struct AddressRes<'a>(pub &'a str, pub &'a AddressRecord);
pub struct AttributeRes<'a>(pub &'a str, pub &'a AttributeRecord);

impl Resource for PatientRes<'_> {
    fn alias(&self) -> &'static str {
        "patient"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        match (preferred_identifier(self.0), preferred_name(self.0)) {
            (Some(i), Some(n)) => format!("{} - {}", i.identifier, full_name(n)),
            (None, Some(n)) => full_name(n),
            _ => String::new(),
        }
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("identifiers", Rep::Ref),
            ("person", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("identifiers", Rep::Default),
            ("person", Rep::Full),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let p = self.0;
        Some(match name {
            "identifiers" => {
                let ids: Vec<IdentifierRes> = p
                    .identifiers
                    .iter()
                    .map(|i| IdentifierRes(&p.uuid, i))
                    .collect();
                nested_list(ids.iter().map(|i| i as &dyn Resource), rep, ctx)
            }
            "patientIdentifier" => nested(
                preferred_identifier(p)
                    .map(|i| IdentifierRes(&p.uuid, i))
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "person" => nested(Some(&PersonRes(p)), rep, ctx),
            "voided" => json!(p.voided),
            "patientId" => Value::Null,
            "auditInfo" => audit(p, ctx),
            // O3 asks for person properties on the patient (Patient extends Person).
            other => return PersonRes(p).prop(other, rep, ctx),
        })
    }
}

fn audit(p: &PatientRecord, ctx: &Ctx) -> Value {
    use crate::http::answer::user_ref;
    let (changed_by, date_changed) = match &p.changed {
        Some((by, at)) => (user_ref(by, ctx), format_datetime(at)),
        None => (Value::Null, Value::Null),
    };
    let mut audit = json!({"creator": user_ref(&p.creator, ctx), "dateCreated": format_datetime(&p.date_created), "changedBy": changed_by, "dateChanged": date_changed});
    if let Some(v) = &p.voiding {
        audit["voidedBy"] = user_ref(&v.voided_by, ctx);
        audit["dateVoided"] = format_datetime(&v.date_voided);
        audit["voidReason"] = json!(v.void_reason);
    }
    audit
}

impl Resource for PersonRes<'_> {
    fn alias(&self) -> &'static str {
        "person"
    }
    fn version(&self) -> &'static str {
        "1.11"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        preferred_name(self.0).map(full_name).unwrap_or_default()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("gender", Rep::Default),
            ("age", Rep::Default),
            ("birthdate", Rep::Default),
            ("birthdateEstimated", Rep::Default),
            ("dead", Rep::Default),
            ("deathDate", Rep::Default),
            ("causeOfDeath", Rep::Ref),
            ("preferredName", Rep::Ref),
            ("preferredAddress", Rep::Ref),
            ("attributes", Rep::Ref),
            ("voided", Rep::Default),
            ("birthtime", Rep::Default),
            ("deathdateEstimated", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("gender", Rep::Default),
            ("age", Rep::Default),
            ("birthdate", Rep::Default),
            ("birthdateEstimated", Rep::Default),
            ("dead", Rep::Default),
            ("deathDate", Rep::Default),
            ("causeOfDeath", Rep::Default),
            ("preferredName", Rep::Default),
            ("preferredAddress", Rep::Default),
            ("names", Rep::Default),
            ("addresses", Rep::Default),
            ("attributes", Rep::Default),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
            ("birthtime", Rep::Default),
            ("deathdateEstimated", Rep::Default),
            ("causeOfDeathNonCoded", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let p = self.0;
        let uuid = p.uuid.as_str();
        Some(match name {
            "gender" => json!(p.gender),
            "age" => json!(p.birthdate.as_deref().and_then(|b| age_on(b, ctx.today))),
            "birthdate" => p
                .birthdate
                .as_deref()
                .map(format_date)
                .unwrap_or(Value::Null),
            "birthdateEstimated" => json!(p.birthdate_estimated),
            "dead" => json!(p.dead),
            "deathDate" => p
                .death_date
                .as_deref()
                .map(|d| {
                    if d.contains('T') {
                        crate::wire::wire_datetime(d)
                    } else {
                        format_date(d)
                    }
                })
                .unwrap_or(Value::Null),
            "causeOfDeath" => nested(
                p.cause_of_death
                    .as_deref()
                    .and_then(|c| ctx.catalog.content.concept(c))
                    .map(crate::content::concept::ConceptRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "causeOfDeathNonCoded" => json!(p.cause_of_death_non_coded),
            "preferredName" | "personName" => nested(
                preferred_name(p)
                    .map(|n| NameRes(uuid, n))
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "preferredAddress" => {
                let a = p
                    .addresses
                    .iter()
                    .find(|a| a.preferred)
                    .or_else(|| p.addresses.first());
                nested(
                    a.map(|a| AddressRes(uuid, a))
                        .as_ref()
                        .map(|r| r as &dyn Resource),
                    rep,
                    ctx,
                )
            }
            "names" => {
                let v: Vec<NameRes> = p.names.iter().map(|n| NameRes(uuid, n)).collect();
                nested_list(v.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "addresses" => {
                let v: Vec<AddressRes> = p.addresses.iter().map(|a| AddressRes(uuid, a)).collect();
                nested_list(v.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "attributes" => {
                let v: Vec<AttributeRes> =
                    p.attributes.iter().map(|a| AttributeRes(uuid, a)).collect();
                nested_list(v.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "voided" => json!(p.voided),
            "birthtime" => Value::Null,
            "deathdateEstimated" => json!(false),
            "isPatient" => json!(true),
            "auditInfo" => audit(p, ctx),
            _ => return None,
        })
    }
}

impl Resource for NameRes<'_> {
    fn alias(&self) -> &'static str {
        "name"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("person/{}/name/{}", self.0, self.1.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        full_name(self.1)
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("givenName", Rep::Default),
            ("middleName", Rep::Default),
            ("familyName", Rep::Default),
            ("familyName2", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("givenName", Rep::Default),
            ("middleName", Rep::Default),
            ("familyName", Rep::Default),
            ("familyName2", Rep::Default),
            ("voided", Rep::Default),
            ("preferred", Rep::Default),
            ("prefix", Rep::Default),
            ("familyNamePrefix", Rep::Default),
            ("familyNameSuffix", Rep::Default),
            ("degree", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let n = self.1;
        Some(match name {
            "givenName" => json!(n.given_name),
            "middleName" => json!(n.middle_name),
            "familyName" => json!(n.family_name),
            "familyName2" => json!(n.family_name2),
            "voided" => json!(false),
            "preferred" => json!(n.preferred),
            "prefix" => json!(n.prefix),
            "degree" => json!(n.degree),
            "familyNamePrefix" | "familyNameSuffix" => Value::Null,
            _ => return None,
        })
    }
}

impl Resource for IdentifierRes<'_> {
    fn alias(&self) -> &'static str {
        "identifier"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("patient/{}/identifier/{}", self.0, self.1.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        let type_name = ctx
            .catalog
            .identifier_type(&self.1.identifier_type)
            .map(|t| t.name.clone())
            .unwrap_or_default();
        format!("{type_name} = {}", self.1.identifier)
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("identifier", Rep::Default),
            ("identifierType", Rep::Ref),
            ("location", Rep::Ref),
            ("preferred", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("identifier", Rep::Default),
            ("identifierType", Rep::Default),
            ("location", Rep::Default),
            ("preferred", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let i = self.1;
        Some(match name {
            "identifier" => json!(i.identifier),
            "identifierType" => nested(
                ctx.catalog
                    .identifier_type(&i.identifier_type)
                    .map(IdentifierTypeRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "location" => nested(
                i.location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(crate::content::location::LocationRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "preferred" => json!(i.preferred),
            "voided" => json!(false),
            _ => return None,
        })
    }
}

impl Resource for AddressRes<'_> {
    fn alias(&self) -> &'static str {
        "address"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("person/{}/address/{}", self.0, self.1.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        [
            "address1",
            "cityVillage",
            "countyDistrict",
            "stateProvince",
            "country",
        ]
        .iter()
        .find_map(|k| self.1.fields.get(*k))
        .cloned()
        .unwrap_or_default()
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("preferred", Rep::Default),
            ("address1", Rep::Default),
            ("address2", Rep::Default),
            ("cityVillage", Rep::Default),
            ("stateProvince", Rep::Default),
            ("country", Rep::Default),
            ("postalCode", Rep::Default),
            ("countyDistrict", Rep::Default),
            ("address3", Rep::Default),
            ("address4", Rep::Default),
            ("address5", Rep::Default),
            ("address6", Rep::Default),
            ("latitude", Rep::Default),
            ("longitude", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "preferred" => json!(self.1.preferred),
            "voided" => json!(false),
            field if ADDRESS_FIELDS.contains(&field) => json!(self.1.fields.get(field)),
            _ => return None,
        })
    }
}

impl Resource for AttributeRes<'_> {
    fn alias(&self) -> &'static str {
        "attribute"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("person/{}/attribute/{}", self.0, self.1.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        let type_name = ctx
            .catalog
            .person_attribute_type(&self.1.attribute_type)
            .map(|t| t.name.clone())
            .unwrap_or_default();
        format!("{type_name} = {}", self.1.value)
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("value", Rep::Default),
            ("attributeType", Rep::Ref),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("value", Rep::Default),
            ("attributeType", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "value" => json!(self.1.value),
            "attributeType" => nested(
                ctx.catalog
                    .person_attribute_type(&self.1.attribute_type)
                    .map(AttributeTypeRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "voided" => json!(false),
            _ => return None,
        })
    }
}

pub const ADDRESS_FIELDS: &[&str] = &[
    "address1",
    "address2",
    "address3",
    "address4",
    "address5",
    "address6",
    "address7",
    "address8",
    "address9",
    "address10",
    "address11",
    "address12",
    "address13",
    "address14",
    "address15",
    "cityVillage",
    "countyDistrict",
    "stateProvince",
    "country",
    "postalCode",
    "latitude",
    "longitude",
    "startDate",
    "endDate",
];

/// `GET patient?q=…` and `GET patient?identifier=…` — privilege: Get Patients.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    search_as(&state, &caller, &query, "/patient").await
}

/// `GET person?q=…`: the persons matching, as `patient?q=` finds them (the persons a
/// relationship can name are patients') — privilege: Get People.
pub async fn person_search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get People"])?;
    search_as(&state, &caller, &query, "/person").await
}

/// A search of patients, rendered as patients or as persons (`path`).
async fn search_as(
    state: &Arc<AppState>,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
) -> ApiResult<Response> {
    let query = query.to_vec();
    let state = state.clone();
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Ref);
    let paging = Paging::from_query(&query)?;
    let (q, by_identifier) = match (param(&query, "q"), param(&query, "identifier")) {
        (Some(q), _) => (q, false),
        (None, Some(id)) => (id, true),
        (None, None) => {
            return Err(ApiError::BadRequest(
                "The Resource Does not Support the Requested Operation".into(),
            ));
        }
    };
    let include_dead = by_identifier
        || param(&query, "includeDead").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let min_chars = state.int_setting("minSearchCharacters", 2) as usize;
    // The matches are found under the index's lock; only the requested page's records are
    // then read from the store.
    let (total, page): (usize, Vec<String>) = {
        let index = state.patient_index().await?;
        let hits = if by_identifier {
            index.by_identifier(q)
        } else {
            index.search(q, include_dead, min_chars)
        };
        let page = hits
            .iter()
            .skip(paging.start)
            .take(paging.limit)
            .map(|u| u.to_string())
            .collect();
        (hits.len(), page)
    };
    if total == 0 {
        return Ok(ok(json!({"results": []})));
    }
    let page: Vec<&str> = page.iter().map(String::as_str).collect();
    let records = state.store.patients_in(&page)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let results = records
        .iter()
        .map(|p| {
            if path == "/person" {
                render(&PersonRes(p), &rep, &ctx)
            } else {
                render(&PatientRes(p), &rep, &ctx)
            }
        })
        .collect::<ApiResult<Vec<Value>>>()?;
    Ok(ok(paging.answer(
        results,
        paging.start.saturating_add(paging.limit) < total,
        paging.total_count.then_some(total),
        &caller.request_url(&state, path, &query),
    )))
}

/// `GET patient/{uuid}` — privilege: Get Patients.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let patient = state.store.patient(&uuid)?.ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &PatientRes(&patient),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

/// Full-match, as Java's `String.matches` does.
fn full_match(pattern: &str, value: &str) -> Option<bool> {
    fancy_regex::Regex::new(&format!("^(?:{pattern})$"))
        .ok()?
        .is_match(value)
        .ok()
}

/// Parses and validates a patient creation body. Returns the record and the identifier
/// uniqueness keys to check atomically when storing.
fn build_patient(
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
const MAX_NAMES: usize = 10;
const MAX_IDENTIFIERS: usize = 20;
const MAX_ADDRESSES: usize = 10;
const MAX_ATTRIBUTES: usize = 50;
/// Lengths of OpenMRS's columns: a name part, an identifier and an attribute value hold 50
/// characters; an address field 255.
const NAME_PART_MAX: usize = 50;
const IDENTIFIER_MAX: usize = 50;
const ATTRIBUTE_MAX: usize = 50;
const ADDRESS_FIELD_MAX: usize = 255;

/// Bounds every free-text field and every list of a patient, and refuses control
/// characters (NUL included) in names and identifiers and NUL anywhere.
fn check_limits(
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

/// `POST patient` — privilege: Add Patients. Answers 201 with the default representation
/// once the patient is durably stored.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Patients"])?;
    let (record, keys) = build_patient(&state, &caller, &body)?;
    let st = state.clone();
    let stored = record.clone();
    blocking(move || {
        if st.store.patient_exists(&stored.uuid)? {
            return Err(ApiError::BadRequest(format!(
                "A patient with uuid {} already exists",
                stored.uuid
            )));
        }
        match st.store.insert_patient(&stored, &keys) {
            Ok(()) => Ok(()),
            Err(StoreError::IdentifierInUse(id)) => {
                let mut inv = Invalid::default();
                inv.global(format!("Identifier {id} already in use by another patient"));
                Err(ApiError::Invalid(inv))
            }
            Err(e) => Err(ApiError::from(e)),
        }
    })
    .await?;
    state.patient_index_mut().await?.upsert(&record);
    let catalog = state.catalog.load();
    let body = render(
        &PatientRes(&record),
        &Rep::Default,
        &caller.ctx(&state, &catalog),
    )?;
    Ok(json(StatusCode::CREATED, body))
}

/// The create-shaped body of a stored patient, so that an edit is checked by exactly the
/// rules of a creation once the change is laid over it.
fn as_body(p: &PatientRecord) -> Map<String, Value> {
    let some = |pairs: Vec<(&str, Value)>| -> Value {
        Value::Object(
            pairs
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    };
    let names: Vec<Value> = p
        .names
        .iter()
        .map(|n| {
            some(vec![
                ("uuid", json!(n.uuid)),
                ("preferred", json!(n.preferred)),
                ("givenName", json!(n.given_name)),
                ("middleName", json!(n.middle_name)),
                ("familyName", json!(n.family_name)),
                ("familyName2", json!(n.family_name2)),
                ("prefix", json!(n.prefix)),
                ("degree", json!(n.degree)),
            ])
        })
        .collect();
    let addresses: Vec<Value> = p
        .addresses
        .iter()
        .map(|a| {
            let mut o = Map::new();
            o.insert("uuid".into(), json!(a.uuid));
            o.insert("preferred".into(), json!(a.preferred));
            for (k, v) in &a.fields {
                o.insert(k.clone(), json!(v));
            }
            Value::Object(o)
        })
        .collect();
    let attributes: Vec<Value> = p
        .attributes
        .iter()
        .map(|a| json!({"uuid": a.uuid, "attributeType": a.attribute_type, "value": a.value}))
        .collect();
    let identifiers: Vec<Value> = p
        .identifiers
        .iter()
        .map(|i| {
            some(vec![
                ("uuid", json!(i.uuid)),
                ("identifier", json!(i.identifier)),
                ("identifierType", json!(i.identifier_type)),
                ("location", json!(i.location)),
                ("preferred", json!(i.preferred)),
            ])
        })
        .collect();
    let person = some(vec![
        ("uuid", json!(p.uuid)),
        ("names", json!(names)),
        ("gender", json!(p.gender)),
        ("birthdate", json!(p.birthdate)),
        ("birthdateEstimated", json!(p.birthdate_estimated)),
        ("dead", json!(p.dead)),
        ("deathDate", json!(p.death_date)),
        ("causeOfDeath", json!(p.cause_of_death)),
        ("causeOfDeathNonCoded", json!(p.cause_of_death_non_coded)),
        ("attributes", json!(attributes)),
        ("addresses", json!(addresses)),
    ]);
    let mut body = Map::new();
    body.insert("person".into(), person);
    body.insert("identifiers".into(), json!(identifiers));
    body
}

/// The identifiers of a create-shaped body.
fn identifiers_of(body: &mut Map<String, Value>) -> ApiResult<&mut Vec<Value>> {
    body.get_mut("identifiers")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| ApiError::internal("a stored patient has identifiers"))
}

/// Clears `preferred` on every item, before another one becomes the preferred one.
fn prefer_none(list: &mut [Value]) {
    for e in list {
        e["preferred"] = json!(false);
    }
}

/// The uuid a list item names, if any.
fn item_uuid(v: &Value) -> Option<&str> {
    v.get("uuid").and_then(Value::as_str)
}

/// Lays a person change over the stored person, as OpenMRS applies `POST person/{uuid}`:
/// names and addresses with a known uuid are changed, others added (a new address becomes
/// the preferred one); an attribute replaces the one of its type (an empty value removes
/// it); `dead: false` clears the death date and cause.
fn merge_person(base: &mut Map<String, Value>, change: &Map<String, Value>) -> ApiResult<()> {
    for (key, value) in change {
        match (key.as_str(), value) {
            ("uuid", Value::String(u)) if base.get("uuid").and_then(Value::as_str) != Some(u) => {
                return Err(ApiError::BadRequest(
                    "Some properties are not allowed to be set: uuid".into(),
                ));
            }
            ("names" | "addresses", Value::Array(items)) => {
                let list = base
                    .entry(key.clone())
                    .or_insert_with(|| json!([]))
                    .as_array_mut()
                    .ok_or_else(|| ApiError::BadRequest(format!("person.{key} must be a list")))?;
                for item in items {
                    let Value::Object(fields) = item else {
                        return Err(ApiError::BadRequest(format!(
                            "person.{key} must be a list of objects"
                        )));
                    };
                    let known = item_uuid(item)
                        .and_then(|u| list.iter_mut().find(|e| item_uuid(e) == Some(u)));
                    match known {
                        Some(existing) => {
                            if let Value::Object(e) = existing {
                                e.extend(fields.clone());
                            }
                        }
                        None if key == "addresses" => {
                            let mut fields = fields.clone();
                            if fields.keys().all(|k| k == "uuid" || k == "preferred") {
                                continue; // O3 sends `{}` when no address was entered.
                            }
                            if fields.get("preferred") != Some(&json!(false)) {
                                prefer_none(list);
                                fields.insert("preferred".into(), json!(true));
                            }
                            list.push(Value::Object(fields));
                        }
                        None => {
                            let mut fields = fields.clone();
                            if fields.get("preferred") == Some(&json!(true)) {
                                prefer_none(list);
                            } else {
                                fields.insert("preferred".into(), json!(false));
                            }
                            list.push(Value::Object(fields));
                        }
                    }
                }
            }
            ("attributes", Value::Array(items)) => {
                let list = base
                    .entry("attributes")
                    .or_insert_with(|| json!([]))
                    .as_array_mut()
                    .ok_or_else(|| {
                        ApiError::BadRequest("person.attributes must be a list".into())
                    })?;
                for item in items {
                    let type_ref =
                        item.get("attributeType")
                            .and_then(ref_uuid)
                            .ok_or_else(|| {
                                ApiError::BadRequest(
                                    "person.attributes: attributeType is missing".into(),
                                )
                            })?;
                    let empty = matches!(item.get("value"), None | Some(Value::Null))
                        || item.get("value") == Some(&json!(""));
                    let position = list.iter().position(|e| {
                        e.get("attributeType").and_then(ref_uuid).as_deref() == Some(&type_ref)
                    });
                    match (position, empty) {
                        (Some(i), true) => {
                            list.remove(i);
                        }
                        (Some(i), false) => {
                            list[i]["value"] = item["value"].clone();
                        }
                        (None, true) => {}
                        (None, false) => {
                            let mut fresh = item.clone();
                            fresh["attributeType"] = json!(type_ref);
                            list.push(fresh);
                        }
                    }
                }
            }
            ("dead", Value::Bool(false)) => {
                base.insert("dead".into(), json!(false));
                for k in ["deathDate", "causeOfDeath", "causeOfDeathNonCoded"] {
                    base.remove(k);
                }
            }
            ("birthdate", _) => {
                base.remove("age");
                base.insert(key.clone(), value.clone());
            }
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
    // A death without `dead: true` said is still a death.
    if change.get("dead").is_none() && change.get("deathDate").is_some_and(|d| !d.is_null()) {
        base.insert("dead".into(), json!(true));
    }
    Ok(())
}

/// The uniqueness keys a stored patient's identifiers hold (see `identifier_key`).
fn keys_of(p: &PatientRecord, catalog: &crate::catalog::Catalog) -> Vec<String> {
    p.identifiers
        .iter()
        .filter_map(|i| {
            let t = catalog.identifier_type(&i.identifier_type)?;
            identifier_key(
                &t.uuid,
                t.uniqueness_behavior,
                i.location.as_deref(),
                &i.identifier,
            )
        })
        .collect()
}

/// Changes a stored patient: `change` edits its create-shaped body (see `as_body`), the
/// result is checked by every rule of a registration and stored with who changed it. Every
/// edit (person, names, attributes, identifiers) goes through here.
async fn change_patient(
    state: &Arc<AppState>,
    caller: &Caller,
    uuid: &str,
    change: impl FnOnce(&mut Map<String, Value>) -> ApiResult<()>,
) -> ApiResult<PatientRecord> {
    let st = state.clone();
    let id = uuid.to_string();
    let stored = blocking(move || st.store.patient(&id).map_err(ApiError::from))
        .await?
        .ok_or(ApiError::NotFound)?;
    let mut body = as_body(&stored);
    change(&mut body)?;
    let (mut record, new_keys) = build_patient(state, caller, &body)?;
    record.date_created = stored.date_created.clone();
    record.creator = stored.creator.clone();
    record.voided = stored.voided;
    record.voiding = stored.voiding.clone();
    let who = caller.user_uuid();
    record.changed = Some((who, chrono::Utc::now().to_rfc3339()));
    let old_keys = keys_of(&stored, &state.catalog.load());
    let st = state.clone();
    let saved = record.clone();
    blocking(
        move || match st.store.replace_patient(&saved, &old_keys, &new_keys) {
            Ok(()) => Ok(()),
            Err(StoreError::IdentifierInUse(id)) => {
                let mut inv = Invalid::default();
                inv.global(format!("Identifier {id} already in use by another patient"));
                Err(ApiError::Invalid(inv))
            }
            Err(e) => Err(ApiError::from(e)),
        },
    )
    .await?;
    state.patient_index_mut().await?.upsert(&record);
    Ok(record)
}

/// Applies a person change to a stored patient (see `merge_person`). Identifiers are not
/// changed this way (OpenMRS ignores them on update too).
async fn update_person(
    state: &Arc<AppState>,
    caller: &Caller,
    uuid: &str,
    change: &Map<String, Value>,
) -> ApiResult<PatientRecord> {
    change_patient(state, caller, uuid, |body| match body.get_mut("person") {
        Some(Value::Object(person)) => merge_person(person, change),
        _ => Err(ApiError::internal("a stored patient renders as a person")),
    })
    .await
}

/// Removes the item with `item` uuid from the list `key` of a body object, or answers 404.
fn remove_item(list_owner: &mut Map<String, Value>, key: &str, item: &str) -> ApiResult<()> {
    let list = list_owner
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .ok_or(ApiError::NotFound)?;
    let before = list.len();
    list.retain(|e| item_uuid(e) != Some(item));
    if list.len() == before {
        return Err(ApiError::NotFound);
    }
    Ok(())
}

/// `DELETE person/{uuid}/name/{name}` and `DELETE person/{uuid}/attribute/{attribute}`
/// (`?purge` or not: the item goes; a person keeps at least one name) — privilege: Edit
/// People. Answers 204.
pub async fn delete_person_item(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((uuid, kind, item)): Path<(String, String, String)>,
) -> ApiResult<Response> {
    caller.require(&["Edit People"])?;
    let key = match kind.as_str() {
        "name" => "names",
        "attribute" => "attributes",
        "address" => "addresses",
        _ => return Err(ApiError::NotFound),
    };
    change_patient(&state, &caller, &uuid, |body| {
        match body.get_mut("person") {
            Some(Value::Object(person)) => remove_item(person, key, &item),
            _ => Err(ApiError::internal("a stored patient renders as a person")),
        }
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST patient/{uuid}/identifier` — adds an identifier (checked as at registration:
/// type, format, check digit, uniqueness, location); privilege: Edit Patients. Answers 201
/// with the identifier.
pub async fn add_identifier(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    let mut fresh = body.clone();
    let new_uuid = match fresh.get("uuid").and_then(Value::as_str) {
        Some(u) => u.to_string(),
        None => crate::store::record::new_uuid(),
    };
    fresh.insert("uuid".into(), json!(new_uuid));
    let record = change_patient(&state, &caller, &uuid, |b| {
        let list = identifiers_of(b)?;
        if fresh.get("preferred") == Some(&json!(true)) {
            prefer_none(list);
        }
        list.push(Value::Object(fresh));
        Ok(())
    })
    .await?;
    identifier_answer(&state, &caller, &record, &new_uuid, StatusCode::CREATED)
}

/// `POST patient/{uuid}/identifier/{identifier}` — changes an identifier's value, type,
/// location or preference, checked as at registration; privilege: Edit Patients.
pub async fn update_identifier(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((uuid, item)): Path<(String, String)>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    let record = change_patient(&state, &caller, &uuid, |b| {
        let list = identifiers_of(b)?;
        let i = list
            .iter()
            .position(|e| item_uuid(e) == Some(&item))
            .ok_or(ApiError::NotFound)?;
        if body.get("preferred") == Some(&json!(true)) {
            prefer_none(list);
        }
        if let Value::Object(existing) = &mut list[i] {
            for (k, v) in &body {
                if k == "uuid" && v.as_str() != Some(item.as_str()) {
                    return Err(ApiError::BadRequest(
                        "Some properties are not allowed to be set: uuid".into(),
                    ));
                }
                existing.insert(k.clone(), v.clone());
            }
        }
        Ok(())
    })
    .await?;
    identifier_answer(&state, &caller, &record, &item, StatusCode::OK)
}

/// `DELETE patient/{uuid}/identifier/{identifier}` (`?purge` or not: it goes, and its
/// value is free again) — refused when it is the last one or the only one of a required
/// type; privilege: Edit Patients. Answers 204.
pub async fn delete_identifier(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((uuid, item)): Path<(String, String)>,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    change_patient(&state, &caller, &uuid, |b| {
        let list = identifiers_of(b)?;
        let before = list.len();
        list.retain(|e| item_uuid(e) != Some(&item));
        if list.len() == before {
            return Err(ApiError::NotFound);
        }
        if list.is_empty() {
            return Err(ApiError::BadRequest(
                "At least one nonvoided Patient Identifier is required".into(),
            ));
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The default representation of one identifier of a patient.
fn identifier_answer(
    state: &AppState,
    caller: &Caller,
    record: &PatientRecord,
    item: &str,
    status: StatusCode,
) -> ApiResult<Response> {
    let rendered = render(
        &PatientRes(record),
        &Rep::Full,
        &caller.ctx(state, &state.catalog.load()),
    )?;
    let found = rendered["identifiers"]
        .as_array()
        .and_then(|l| l.iter().find(|i| i["uuid"] == item))
        .cloned()
        .ok_or_else(|| ApiError::internal("a stored identifier renders"))?;
    Ok(json(status, found))
}

/// `POST patient/{uuid}` — privilege: Edit Patients. Only `person` changes (identifiers
/// have their own sub-resource, as in OpenMRS); answers the default representation.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    only_known(&body, &["uuid", "person", "identifiers"])?;
    if let Some(Value::String(u)) = body.get("uuid")
        && *u != uuid
    {
        return Err(ApiError::BadRequest(
            "Some properties are not allowed to be set: uuid".into(),
        ));
    }
    let change = match body.get("person") {
        Some(Value::Object(p)) => p.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) => return Err(ApiError::BadRequest("person must be an object".into())),
    };
    let record = update_person(&state, &caller, &uuid, &change).await?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &PatientRes(&record),
        &Rep::Default,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `POST person/{uuid}` — privilege: Edit People. The persons this server keeps are its
/// patients'; answers the person's default representation.
pub async fn update_person_resource(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit People"])?;
    let record = update_person(&state, &caller, &uuid, &body).await?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &PersonRes(&record),
        &Rep::Default,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `DELETE patient/{uuid}` — voids the patient (privilege: Delete Patients; `reason`
/// defaults to OpenMRS's "web service call"); with `purge` (privilege: Purge Patients)
/// removes it for good, which is refused while any visit, encounter, diagnosis, programme
/// enrolment, queue entry, condition or allergy (even voided) refers to it. Answers 204.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let purge = param(&query, "purge").is_some_and(|v| v != "false");
    caller.require(&[if purge {
        "Purge Patients"
    } else {
        "Delete Patients"
    }])?;
    let st = state.clone();
    let id = uuid.clone();
    let stored = blocking(move || st.store.patient(&id).map_err(ApiError::from))
        .await?
        .ok_or(ApiError::NotFound)?;
    if purge {
        let st = state.clone();
        let id = uuid.clone();
        blocking(move || {
            let clinical = clinical_records(&st, &id)?;
            if !clinical.is_empty() {
                return Err(ApiError::BadRequest(format!(
                    "The patient cannot be purged: {} still refer to them; void the patient instead",
                    clinical.join(", ")
                )));
            }
            st.store.purge_patient(&id).map_err(ApiError::from)
        })
        .await?;
        state.patient_index_mut().await?.remove(&uuid);
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if !stored.voided {
        let mut record = stored;
        record.voided = true;
        record.voiding = Some(PatientVoiding {
            voided_by: caller.user_uuid(),
            date_voided: chrono::Utc::now().to_rfc3339(),
            void_reason: param(&query, "reason")
                .filter(|r| !r.trim().is_empty())
                .unwrap_or("web service call")
                .to_string(),
        });
        let st = state.clone();
        let saved = record.clone();
        let user = caller.user_uuid();
        blocking(move || {
            let _one_writer = st.store.write_lock();
            st.store.update_patient(&saved)?;
            for effect in st.store.registry().on_patient_voided {
                effect(&st.store, &saved.uuid, &user)?;
            }
            Ok(())
        })
        .await?;
        state.patient_index_mut().await?.upsert(&record);
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// What clinical records of the patient exist, voided ones included, by kind (every domain
/// registers its kind in the store's registry).
fn clinical_records(state: &AppState, patient: &str) -> ApiResult<Vec<&'static str>> {
    let mut found = Vec::new();
    for kind in state.store.registry().patient_records {
        if (kind.any)(&state.store, patient)? {
            found.push(kind.kind);
        }
    }
    Ok(found)
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
