//! FHIR `Patient` read.

use crate::http::AppState;
use crate::http::Caller;
use crate::http::error::ApiResult;
use crate::http::fhir::{fhir, iso, not_found};
use crate::store::PatientRecord;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

fn gender(g: &str) -> &'static str {
    match g {
        "M" => "male",
        "F" => "female",
        "O" => "other",
        _ => "unknown",
    }
}

pub fn patient_json(p: &PatientRecord, catalog: &crate::catalog::Catalog) -> Value {
    // Preferred first, as Person orders them in OpenMRS: the O3 forms take the first.
    let mut ordered_names: Vec<&crate::store::NameRecord> = p.names.iter().collect();
    ordered_names.sort_by_key(|n| !n.preferred);
    let names: Vec<Value> = ordered_names
        .into_iter()
        .map(|n| {
            let given: Vec<&String> = [&n.given_name, &n.middle_name].into_iter().flatten().collect();
            let text = [&n.given_name, &n.middle_name, &n.family_name].into_iter().flatten().cloned().collect::<Vec<_>>().join(" ");
            json!({"id": n.uuid, "use": if n.preferred { "usual" } else { "official" }, "text": text, "family": n.family_name, "given": given})
        })
        .collect();
    let identifiers: Vec<Value> = p
        .identifiers
        .iter()
        .map(|i| {
            let t = catalog.identifier_type(&i.identifier_type);
            json!({
                "id": i.uuid,
                "use": if i.preferred { "official" } else { "usual" },
                "type": {"coding": [{"code": i.identifier_type}], "text": t.map(|t| t.name.clone())},
                "value": i.identifier,
            })
        })
        .collect();
    let telecom: Vec<Value> = p
        .attributes
        .iter()
        .filter(|a| a.attribute_type == "14d4f066-15f5-102d-96e4-000c29c2a5d7")
        .map(|a| json!({"id": a.uuid, "system": "phone", "value": a.value}))
        .collect();
    // Preferred first, then the newest, as fhir2 lists them (`use` home, then old); fields
    // FHIR has no element for (the quartier in `address1`…) in OpenMRS's address extension,
    // which the O3 registration form reads back when editing.
    let mut ordered: Vec<(usize, &crate::store::AddressRecord)> =
        p.addresses.iter().enumerate().collect();
    ordered.sort_by_key(|(i, a)| (!a.preferred, std::cmp::Reverse(*i)));
    let addresses: Vec<Value> = ordered
        .into_iter()
        .map(|(_, a)| {
            let f = |k: &str| a.fields.get(k).cloned();
            let extension: Vec<Value> = a
                .fields
                .iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "cityVillage" | "countyDistrict" | "stateProvince" | "postalCode" | "country")
                })
                .map(|(k, v)| json!({"url": format!("http://fhir.openmrs.org/ext/address#{k}"), "valueString": v}))
                .collect();
            let mut r = json!({"id": a.uuid, "use": if a.preferred { "home" } else { "old" }, "city": f("cityVillage"), "district": f("countyDistrict"), "state": f("stateProvince"), "postalCode": f("postalCode"), "country": f("country")});
            if !extension.is_empty() {
                r["extension"] = json!([{"url": "http://fhir.openmrs.org/ext/address", "extension": extension}]);
            }
            r
        })
        .collect();
    let mut r = json!({
        "resourceType": "Patient",
        "id": p.uuid,
        "meta": {"lastUpdated": p.date_created},
        "identifier": identifiers,
        "active": !p.voided,
        "name": names,
        "telecom": telecom,
        "gender": gender(&p.gender),
        "address": addresses,
    });
    // FHIR leaves out an element with no value rather than writing an empty list (as
    // fhir2 does); the O3 vitals header reads `address[0].city` whenever `address` exists.
    if let Value::Object(m) = &mut r {
        m.retain(|_, v| !matches!(v, Value::Array(items) if items.is_empty()));
    }
    if let Some(b) = &p.birthdate {
        r["birthDate"] = json!(birth_date(b, p.birthdate_estimated, crate::wire::today()));
    }
    match (&p.death_date, p.dead) {
        (Some(d), _) if d.contains('T') => r["deceasedDateTime"] = iso(d),
        (Some(d), _) => r["deceasedDateTime"] = json!(d),
        (None, dead) => r["deceasedBoolean"] = json!(dead),
    }
    r
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
    caller.require(&["Get Patients"])?;
    let found = state.store.patient(&id)?;
    let catalog = state.catalog.load();
    Ok(match found {
        Some(p) if !p.voided => fhir(StatusCode::OK, patient_json(&p, &catalog)),
        _ => not_found("Patient", &id),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_estimated_birth_date_is_written_to_the_year_or_the_month() {
        let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 26).unwrap();
        assert_eq!(birth_date("1992-11-26", false, today), "1992-11-26");
        assert_eq!(birth_date("1992-11-26", true, today), "1992");
        assert_eq!(birth_date("2024-05-01", true, today), "2024-05");
    }
}
