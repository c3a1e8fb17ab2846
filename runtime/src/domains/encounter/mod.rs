//! Encounters and their observations: what was recorded about a patient at one moment,
//! usually within a visit, by providers in encounter roles, often through a form.
//!
//! Validated as OpenMRS's `EncounterValidator` and `ObsValidator` do: an existing patient,
//! an encounter type of the content, a datetime not in the future and inside the visit,
//! the visit of the same patient; each observation on a concept of the content that is not
//! retired, with a value of the concept's datatype (a coded answer among the concept's
//! answers when it lists any, a number within the absolute range and whole where decimals
//! are not allowed), groups on set concepts with members and no value. Editing a saved
//! observation voids it and records the new value as a new observation that points back to
//! it (`previousVersion`), as OpenMRS does, so the history of a value is kept.

pub mod fhir;
pub mod obstree;
pub mod repr;
pub mod rest;
pub mod store;

use crate::domains::visit::VisitRecord;
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult, Invalid};
use crate::store::record::{Audit, Effect, Voiding};
use crate::store::{Store, StoreResult};
use crate::wire::{CLOCK_SKEW, datetime_key, parse_datetime};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncounterProviderRecord {
    pub uuid: String,
    pub provider: String,
    pub encounter_role: String,
    /// The user acting as this provider, found when the encounter was written, so that
    /// rendering reads one cached user instead of looking through every account.
    #[serde(default)]
    pub user: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncounterRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    pub encounter_type: String,
    /// Key form.
    pub datetime: String,
    pub location: Option<String>,
    pub form: Option<String>,
    pub visit: Option<String>,
    pub providers: Vec<EncounterProviderRecord>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// An observation's value, by the datatype of its concept. A stored observation names its
/// variant by number (the order below): new variants go last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, bincode::Encode, bincode::Decode)]
#[serde(tag = "t", content = "v")]
pub enum ObsValue {
    Numeric(f64),
    Coded(String),
    Text(String),
    Boolean(bool),
    /// Key form.
    Datetime(String),
    /// `yyyy-mm-dd`
    Date(String),
    /// `HH:MM:SS`
    Time(String),
    /// An obs group: its members hold the values.
    Group,
}

/// Stored in binary (`store::encode_obs`), not JSON like the other records: a facility
/// has millions, and the chart reads a hundred at a time. The binary form is positional:
/// a change of fields needs a new format tag there, with the old one still decoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, bincode::Encode, bincode::Decode)]
pub struct ObsRecord {
    pub v: u32,
    pub uuid: String,
    pub person: String,
    pub concept: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encounter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obs_group: Option<String>,
    /// Key form.
    pub datetime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    pub value: ObsValue,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form_field_namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form_field_path: Option<String>,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpretation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_version: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// The "Unknown" encounter role OpenMRS uses when a provider is given without a role.
pub const UNKNOWN_ENCOUNTER_ROLE: &str = "a0b03050-c99b-11e0-9572-0800200c9a66";

const OBS_FIELDS: &[&str] = &[
    "uuid",
    "concept",
    "value",
    "obsDatetime",
    "person",
    "encounter",
    "location",
    "comment",
    "groupMembers",
    "formFieldNamespace",
    "formFieldPath",
    "status",
    "interpretation",
    "order",
    "voided",
    "obsGroup",
    "valueCodedName",
    "valueModifier",
    "accessionNumber",
];

/// Builds one observation (and, for a group, its members after it) from a request body.
/// `path` names the field in error messages (`obs[2].groupMembers[0]`); empty for an obs
/// posted on its own, whose fields are named bare (`value`), as OpenMRS names them.
#[allow(clippy::too_many_arguments)]
pub fn parse_obs(
    state: &AppState,
    body: &Map<String, Value>,
    path: &str,
    person: &str,
    encounter: Option<&EncounterRecord>,
    group: Option<&str>,
    audit: &Audit,
    inv: &mut Invalid,
    out: &mut Vec<ObsRecord>,
) -> ApiResult<()> {
    use crate::http::body::{only_known, opt_datetime, opt_ref, opt_str};
    only_known(body, OBS_FIELDS)?;
    let catalog = state.catalog.load();
    let field = |f: &str| {
        if path.is_empty() {
            f.to_string()
        } else {
            format!("{path}.{f}")
        }
    };
    let concept_ref = opt_ref(body, "concept")?;
    let concept = concept_ref.as_deref().and_then(|c| catalog.concept(c));
    let uuid = opt_str(body, "uuid")?.unwrap_or_else(crate::store::record::new_uuid);
    let datetime = opt_datetime(body, "obsDatetime")?
        .or_else(|| encounter.map(|e| e.datetime.clone()))
        .unwrap_or_else(|| audit.date_created.clone());
    if parse_datetime(&datetime).is_some_and(|t| t > Utc::now() + CLOCK_SKEW) {
        inv.field(
            &field("obsDatetime"),
            "error.date.future",
            "The observation's date cannot be in the future",
        );
    }
    let Some(concept) = concept else {
        match concept_ref {
            None => inv.field(&field("concept"), "error.null", "Concept is required"),
            Some(c) => inv.field(
                &field("concept"),
                "error.invalid",
                &format!("Concept {c} does not exist"),
            ),
        }
        return Ok(());
    };
    if concept.retired {
        inv.field(
            &field("concept"),
            "error.retired",
            "This concept is retired and cannot be recorded",
        );
    }
    let members = match body.get("groupMembers") {
        None | Some(Value::Null) => None,
        Some(Value::Array(m)) => Some(m),
        Some(_) => {
            return Err(ApiError::BadRequest(format!(
                "{}: must be a list",
                field("groupMembers")
            )));
        }
    };
    let raw = body.get("value").filter(|v| !v.is_null());
    let value = match (members, raw) {
        (Some(m), _) if !m.is_empty() => {
            if raw.is_some() {
                inv.field(
                    &field("value"),
                    "Obs.error.groupCannotHaveValue",
                    "An obs group holds its members, not a value",
                );
            }
            Some(ObsValue::Group)
        }
        (_, None) => {
            inv.field(
                &field("value"),
                "error.null",
                "The observation has no value",
            );
            None
        }
        (_, Some(v)) => match value_of(state, concept, v) {
            Ok(v) => Some(v),
            Err(message) => {
                inv.field(&field("value"), "error.invalid", &message);
                None
            }
        },
    };
    let record = ObsRecord {
        v: 1,
        uuid: uuid.clone(),
        person: person.to_string(),
        concept: concept.uuid.clone(),
        encounter: encounter.map(|e| e.uuid.clone()),
        obs_group: group.map(str::to_string),
        datetime,
        location: opt_ref(body, "location")?.or_else(|| encounter.and_then(|e| e.location.clone())),
        value: value.unwrap_or(ObsValue::Group),
        comment: opt_str(body, "comment")?,
        form_field_namespace: opt_str(body, "formFieldNamespace")?,
        form_field_path: opt_str(body, "formFieldPath")?,
        status: opt_str(body, "status")?.unwrap_or_else(|| "FINAL".into()),
        interpretation: opt_str(body, "interpretation")?,
        order: opt_ref(body, "order")?,
        previous_version: None,
        audit: audit.clone(),
        voiding: Voiding::default(),
    };
    if !matches!(record.status.as_str(), "FINAL" | "PRELIMINARY" | "AMENDED") {
        inv.field(
            &field("status"),
            "error.invalid",
            "Status must be FINAL, PRELIMINARY or AMENDED",
        );
    }
    out.push(record);
    if let Some(members) = members {
        for (i, m) in members.iter().enumerate() {
            let Value::Object(m) = m else {
                return Err(ApiError::BadRequest(format!(
                    "{}[{i}]: must be an object",
                    field("groupMembers")
                )));
            };
            let p = format!("{}[{i}]", field("groupMembers"));
            parse_obs(
                state,
                m,
                &p,
                person,
                encounter,
                Some(&uuid),
                audit,
                inv,
                out,
            )?;
        }
    }
    Ok(())
}

/// A value of the concept's datatype, or why it is not one.
fn value_of(state: &AppState, concept: &model::Concept, v: &Value) -> Result<ObsValue, String> {
    let catalog = state.catalog.load();
    let text = || match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Object(_) => crate::http::body::ref_uuid(v),
        _ => None,
    };
    match concept.datatype.as_str() {
        "Numeric" => {
            let n = match v {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            }
            .filter(|n| n.is_finite())
            .ok_or_else(|| format!("{v} is not a number"))?;
            if let Some(num) = &concept.numeric {
                if num.hi_absolute.is_some_and(|hi| n > hi) {
                    return Err(format!(
                        "{n} is above the highest possible value, {}",
                        num.hi_absolute.unwrap_or_default()
                    ));
                }
                if num.low_absolute.is_some_and(|lo| n < lo) {
                    return Err(format!(
                        "{n} is below the lowest possible value, {}",
                        num.low_absolute.unwrap_or_default()
                    ));
                }
                if !num.allow_decimal && n.fract() != 0.0 {
                    return Err(format!("{n}: this concept takes whole numbers only"));
                }
            }
            Ok(ObsValue::Numeric(n))
        }
        "Coded" => {
            let r = text().ok_or_else(|| format!("{v} is not a concept"))?;
            let answer = catalog
                .concept(&r)
                .ok_or_else(|| format!("The answer {r} is not a concept of the dictionary"))?;
            if !concept.answers.is_empty() && !concept.answers.contains(&answer.uuid) {
                return Err(format!("{r} is not one of the answers of this question"));
            }
            Ok(ObsValue::Coded(answer.uuid.clone()))
        }
        "Text" => Ok(ObsValue::Text(
            text().ok_or_else(|| format!("{v} is not text"))?,
        )),
        "Boolean" => match v {
            Value::Bool(b) => Ok(ObsValue::Boolean(*b)),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(ObsValue::Boolean(true)),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(ObsValue::Boolean(false)),
            Value::Number(n) if n.as_f64() == Some(1.0) => Ok(ObsValue::Boolean(true)),
            Value::Number(n) if n.as_f64() == Some(0.0) => Ok(ObsValue::Boolean(false)),
            _ => Err(format!("{v} is not true or false")),
        },
        "Date" => {
            let s = text().ok_or_else(|| format!("{v} is not a date"))?;
            parse_datetime(&s)
                .map(|t| ObsValue::Date(t.date_naive().to_string()))
                .ok_or_else(|| format!("'{s}' is not a date"))
        }
        "Datetime" => {
            let s = text().ok_or_else(|| format!("{v} is not a date and time"))?;
            parse_datetime(&s)
                .map(|t| ObsValue::Datetime(datetime_key(t)))
                .ok_or_else(|| format!("'{s}' is not a date and time"))
        }
        "Time" => {
            let s = text().ok_or_else(|| format!("{v} is not a time"))?;
            chrono::NaiveTime::parse_from_str(&s, "%H:%M:%S")
                .or_else(|_| chrono::NaiveTime::parse_from_str(&s, "%H:%M"))
                .map(|t| ObsValue::Time(t.format("%H:%M:%S").to_string()))
                .map_err(|_| format!("'{s}' is not a time"))
        }
        "N/A" => Err("This concept takes no value (it is a question group or a heading)".into()),
        "Complex" => Err("Complex observations (files) are not supported yet".into()),
        other => Err(format!("Values of datatype {other} are not supported")),
    }
}

/// Checks an encounter's own fields (not its observations).
pub fn validate(
    state: &AppState,
    e: &EncounterRecord,
    visit: Option<&VisitRecord>,
    inv: &mut Invalid,
) {
    let catalog = state.catalog.load();
    match catalog
        .content
        .encounter_types
        .iter()
        .find(|t| t.uuid == e.encounter_type)
    {
        None => inv.field(
            "encounterType",
            "error.null",
            "Encounter type is required and must exist",
        ),
        Some(t) if t.retired => inv.field(
            "encounterType",
            "error.retired",
            "Encounter type is retired",
        ),
        Some(_) => {}
    }
    if let Some(l) = &e.location
        && catalog.location(l).is_none()
    {
        inv.field("location", "error.invalid", "Location does not exist");
    }
    if let Some(f) = &e.form
        && !catalog.content.forms.iter().any(|x| &x.uuid == f)
    {
        inv.field("form", "error.invalid", "Form does not exist");
    }
    if parse_datetime(&e.datetime).is_some_and(|t| t > Utc::now() + CLOCK_SKEW) {
        inv.field(
            "encounterDatetime",
            "Encounter.datetimeShouldBeBeforeCurrent",
            "The encounter date cannot be in the future",
        );
    }
    for p in &e.providers {
        if p.encounter_role != UNKNOWN_ENCOUNTER_ROLE
            && !catalog
                .content
                .encounter_roles
                .iter()
                .any(|r| r.uuid == p.encounter_role)
        {
            inv.field(
                "encounterProviders",
                "error.invalid",
                &format!("Encounter role {} does not exist", p.encounter_role),
            );
        }
    }
    match (e.visit.as_ref(), visit) {
        (Some(_), None) => inv.field("visit", "error.invalid", "Visit does not exist"),
        (Some(_), Some(v)) => {
            if v.patient != e.patient {
                inv.field(
                    "visit",
                    "Encounter.visit.patients.dontMatch",
                    "The visit belongs to another patient",
                );
            }
            if v.voiding.voided {
                inv.field("visit", "error.voided", "The visit is voided");
            }
            if !v.contains(&e.datetime) {
                inv.field(
                    "encounterDatetime",
                    "Encounter.datetimeShouldBeInVisitDatesRange",
                    "The encounter date must fall within the visit",
                );
            }
        }
        _ => {}
    }
}

/// A voided visit's encounters and their observations, voided with it (registered with
/// the visit's dependents).
pub fn voided_with_visit(
    store: &Store,
    visit: &str,
    user: &str,
    reason: &str,
) -> StoreResult<Effect> {
    let now = Utc::now();
    let mut changed_enc = Vec::new();
    let mut changed_obs = Vec::new();
    for e in store::of_visit(store, visit)? {
        let mut n = e.clone();
        n.voiding.void(user, now, reason);
        for o in store::obs_of_encounter(store, &e.uuid, false)? {
            let mut v = o.clone();
            v.voiding.void(user, now, reason);
            changed_obs.push((o, v));
        }
        changed_enc.push((e, n));
    }
    Ok(Box::new(move |txn| {
        for (o, n) in &changed_enc {
            store::write_in(
                txn,
                &store::Change {
                    encounter: Some((Some(o), n)),
                    obs: vec![],
                },
            )?;
        }
        store::write_in(
            txn,
            &store::Change {
                encounter: None,
                obs: changed_obs.iter().map(|(o, n)| (Some(o), n)).collect(),
            },
        )
    }))
}

/// Whether the visit holds encounters, voided ones included (a purge is refused then).
pub fn any_in_visit(store: &Store, visit: &str) -> StoreResult<bool> {
    Ok(!store::times_in_visit(store, visit)?.is_empty())
}

/// An encounter type named by uuid or name, as its uuid (unknown names pass through, for
/// validation to refuse).
pub fn encounter_type_uuid(catalog: &crate::catalog::Catalog, reference: &str) -> String {
    catalog
        .content
        .encounter_types
        .iter()
        .find(|x| x.uuid == reference || x.name == reference)
        .map_or_else(|| reference.to_string(), |x| x.uuid.clone())
}

/// The concepts a query names under `names`: repeated (`concept=a&concept=b`) or
/// comma-separated, each a uuid or `SOURCE:CODE`, or a FHIR token `system|code`; as uuids
/// (unknown ones pass through and match nothing).
pub fn concepts_param(
    catalog: &crate::catalog::Catalog,
    query: &[(String, String)],
    names: &[&str],
) -> Vec<String> {
    query
        .iter()
        .filter(|(k, _)| names.contains(&k.as_str()))
        .flat_map(|(_, v)| v.split(','))
        .map(|c| c.rsplit('|').next().unwrap_or(c).trim())
        .filter(|c| !c.is_empty())
        .map(|c| {
            catalog
                .concept(c)
                .map_or_else(|| c.to_string(), |x| x.uuid.clone())
        })
        .collect()
}

/// What the domains that hang on encounters do when one is voided, registered in the
/// domains' registry (a bed the encounter put a patient in is freed): an encounter names
/// none of them.
pub struct EncounterDependents {
    /// What voiding an encounter writes with it: (store, encounter, user, reason).
    pub on_void: &'static [fn(&Store, &str, &str, &str) -> StoreResult<Effect>],
}

/// What voiding the encounter writes with it.
pub fn voiding_effects(
    store: &Store,
    encounter: &str,
    user: &str,
    reason: &str,
) -> StoreResult<Vec<Effect>> {
    match store.registry().extension::<EncounterDependents>() {
        Some(d) => d
            .on_void
            .iter()
            .map(|f| f(store, encounter, user, reason))
            .collect(),
        None => Ok(Vec::new()),
    }
}

/// What placing an order in the encounter needs of it.
pub fn placement(e: &EncounterRecord) -> crate::domains::order::Placement {
    crate::domains::order::Placement {
        uuid: e.uuid.clone(),
        patient: e.patient.clone(),
        datetime: e.datetime.clone(),
        voided: e.voiding.voided,
    }
}

/// An encounter by uuid, as placing an order in it needs it (registered for orders).
pub fn placement_of(
    store: &Store,
    uuid: &str,
) -> StoreResult<Option<crate::domains::order::Placement>> {
    Ok(store::encounter(store, uuid)?.as_ref().map(placement))
}
