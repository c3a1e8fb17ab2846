//! Observations read from a request body (an encounter's `obs`, `POST obs`) into records:
//! their concept, value as the concept's datatype accepts it, group members, order, dates.

use crate::domains::encounter::{EncounterRecord, OBS_FIELDS, ObsRecord, ObsValue};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use crate::wire::{CLOCK_SKEW, datetime_key, parse_datetime};
use chrono::Utc;
use serde_json::{Map, Value};

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
        (_, Some(v)) => match value_of(&state.clinic(), concept, v) {
            Ok(v) => Some(v),
            Err(message) => {
                inv.field(&field("value"), "error.invalid", &message);
                None
            }
        },
    };
    // OpenMRS 2.7 judges a new numeric value by the concept's range for the patient and
    // keeps the result with the observation; a client's own interpretation stands.
    let interpretation = match (opt_str(body, "interpretation")?, &value) {
        (Some(given), _) => Some(given),
        (None, Some(ObsValue::Numeric(n))) => {
            crate::content::reference_range::interpretation_on_save(
                state,
                &catalog.content,
                concept,
                person,
                *n,
            )?
            .map(str::to_string)
        }
        _ => None,
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
        interpretation,
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
fn value_of(
    state: &crate::clinic::Clinic,
    concept: &model::Concept,
    v: &Value,
) -> Result<ObsValue, String> {
    let catalog = state.catalog.clone();
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
            // The yes and no concepts (the settings `concept.true` and `concept.false`), as
            // OpenMRS stores a Boolean answer and as forms send it: by uuid or reference.
            other => {
                let answer = crate::http::body::ref_uuid(other)
                    .and_then(|r| catalog.concept(&r))
                    .map(|c| c.uuid.clone());
                let named = |b| {
                    crate::clinic::boolean_concept(state.store, &catalog, b).map(|c| c.uuid.clone())
                };
                match answer {
                    Some(a) if Some(&a) == named(true).as_ref() => Ok(ObsValue::Boolean(true)),
                    Some(a) if Some(&a) == named(false).as_ref() => Ok(ObsValue::Boolean(false)),
                    _ => Err(format!("{v} is not true or false")),
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domains::{test_catalog, test_store};
    use serde_json::json;

    const YES: &str = "1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    const NO: &str = "1066AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

    /// A yes/no question answered as forms answer it: true and false, 1 and 0, or the yes
    /// and no concepts (`concept.true`, `concept.false`) by uuid or reference.
    #[test]
    fn a_boolean_takes_the_yes_and_no_concepts_as_openmrs_does() {
        let store = test_store();
        let clinic = crate::clinic::Clinic::new(&store, test_catalog());
        let mut question = clinic.catalog.content.concepts[0].clone();
        question.datatype = "Boolean".into();
        let value = |v: Value| value_of(&clinic, &question, &v);
        assert_eq!(value(json!(true)), Ok(ObsValue::Boolean(true)));
        assert_eq!(value(json!("false")), Ok(ObsValue::Boolean(false)));
        assert_eq!(value(json!(1)), Ok(ObsValue::Boolean(true)));
        assert_eq!(value(json!(YES)), Ok(ObsValue::Boolean(true)));
        assert_eq!(value(json!(NO)), Ok(ObsValue::Boolean(false)));
        assert_eq!(
            value(json!({"uuid": NO, "display": "Non"})),
            Ok(ObsValue::Boolean(false))
        );
        // Another concept, or text, is no answer to a yes/no question.
        let other = clinic
            .catalog
            .content
            .concepts
            .iter()
            .map(|c| c.uuid.clone())
            .find(|u| u != YES && u != NO)
            .unwrap();
        assert!(value(json!(other)).is_err());
        assert!(value(json!("peut-être")).is_err());
    }
}
