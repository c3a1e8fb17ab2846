//! FHIR R4 `Condition` as fhir2 serves it and the O3 conditions widget calls it: search
//! by patient (with `clinical-status` and `category`), read, create, replace (`PUT`) and
//! delete (void). `category=problem-list-item` is the problem list (this domain's
//! records); `encounter-diagnosis` is the visit notes' diagnoses, read-only here; without a
//! category a search answers both, conditions first, as fhir2 does.

use crate::catalog::Catalog;
use crate::domains::condition::{ClinicalStatus, ConditionRecord, Verification, store};
use crate::domains::diagnosis::DiagnosisRecord;
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fhir::{
    Written, base, concept_codeable, fhir, invalid, iso, outcome, patient_param, reference_id,
    search_bundle, unprocessable, window,
};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Window};
use crate::wire::{datetime_key, parse_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

const CLINICAL: &str = "http://terminology.hl7.org/CodeSystem/condition-clinical";
const VERIFICATION: &str = "http://terminology.hl7.org/CodeSystem/condition-ver-status";
const CATEGORY: &str = "http://terminology.hl7.org/CodeSystem/condition-category";
const NON_CODED: &str = "http://fhir.openmrs.org/ext/non-coded-condition";
const PROBLEM: &str = "problem-list-item";
const DIAGNOSIS: &str = "encounter-diagnosis";

fn code(catalog: &Catalog, coded: Option<&str>, text: &str, locale: &str) -> Value {
    let mut code = match coded {
        Some(uuid) => {
            serde_json::to_value(concept_codeable(catalog, uuid, locale)).unwrap_or(Value::Null)
        }
        None => json!({}),
    };
    code["text"] = json!(text);
    code
}

fn category(code: &str, display: &str) -> Value {
    json!([{"coding": [{"system": CATEGORY, "code": code, "display": display}]}])
}

/// A condition as fhir2's ConditionTranslator writes it.
pub fn condition_json(c: &ConditionRecord, catalog: &Catalog, locale: &str) -> Value {
    let text = c.display(catalog, locale);
    let (status, display) = match c.clinical_status {
        Some(ClinicalStatus::Active) => ("active", "Active"),
        _ => ("inactive", "Inactive"),
    };
    let mut r = json!({
        "resourceType": "Condition",
        "id": c.uuid,
        "meta": {"lastUpdated": iso(c.audit.date_changed.as_deref().unwrap_or(&c.audit.date_created))},
        "clinicalStatus": {"coding": [{"system": CLINICAL, "code": status, "display": display}]},
        "category": category(PROBLEM, "Problem List Item"),
        "code": code(catalog, c.coded.as_deref(), text, locale),
        "subject": {"reference": format!("Patient/{}", c.patient), "type": "Patient"},
        "recorder": {"reference": format!("Practitioner/{}", c.audit.creator), "type": "Practitioner"},
        "recordedDate": iso(&c.audit.date_created),
    });
    if let Some(v) = c.verification {
        r["verificationStatus"] =
            json!({"coding": [{"system": VERIFICATION, "code": v.code(), "display": v.display()}]});
    }
    if c.coded.is_none() {
        r["extension"] = json!([{"url": NON_CODED, "valueString": text}]);
    }
    if let Some(o) = &c.onset {
        r["onsetDateTime"] = iso(o);
    }
    if let Some(e) = &c.end {
        r["abatementDateTime"] = iso(e);
    }
    if let Some(d) = &c.additional_detail {
        r["note"] = json!([{"text": d}]);
    }
    r
}

/// A visit note's diagnosis as an encounter-diagnosis Condition.
fn diagnosis_json(d: &DiagnosisRecord, catalog: &Catalog, locale: &str) -> Value {
    let text = crate::domains::condition::coded_or_text(
        catalog,
        d.coded.as_deref(),
        d.non_coded.as_deref(),
        locale,
    );
    let certainty = Verification::parse(&d.certainty).unwrap_or(Verification::Provisional);
    let mut r = json!({
        "resourceType": "Condition",
        "id": d.uuid,
        "meta": {"lastUpdated": iso(d.audit.date_changed.as_deref().unwrap_or(&d.audit.date_created))},
        "verificationStatus": {"coding": [{"system": VERIFICATION, "code": certainty.code(), "display": certainty.display()}]},
        "category": category(DIAGNOSIS, "Encounter Diagnosis"),
        "code": code(catalog, d.coded.as_deref(), text, locale),
        "subject": {"reference": format!("Patient/{}", d.patient), "type": "Patient"},
        "encounter": {"reference": format!("Encounter/{}", d.encounter), "type": "Encounter"},
        "recorder": {"reference": format!("Practitioner/{}", d.audit.creator), "type": "Practitioner"},
        "recordedDate": iso(&d.audit.date_created),
    });
    if d.coded.is_none() {
        r["extension"] = json!([{"url": NON_CODED, "valueString": text}]);
    }
    r
}

/// Whether a FHIR clinical-status code (with or without its system) means active:
/// `Some(true)` for `active` (and `recurrence`, `relapse`), `Some(false)` for `inactive`,
/// `resolved`, `remission`, `None` for anything else.
fn fhir_status(code: &str) -> Option<bool> {
    match code
        .rsplit('|')
        .next()
        .unwrap_or(code)
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "active" | "recurrence" | "relapse" => Some(true),
        "inactive" | "resolved" | "remission" => Some(false),
        _ => None,
    }
}

/// The categories a search asks for: `(conditions, diagnoses)`; `None` when it names a
/// category that is neither.
fn categories(query: &[(String, String)]) -> Option<(bool, bool)> {
    let Some(asked) = param(query, "category") else {
        return Some((true, true));
    };
    let (mut problems, mut diagnoses) = (false, false);
    for c in asked.split(',') {
        match c.rsplit('|').next().unwrap_or(c).trim() {
            PROBLEM => problems = true,
            DIAGNOSIS => diagnoses = true,
            _ => return None,
        }
    }
    Some((problems, diagnoses))
}

/// `GET Condition?patient=…[&clinical-status=active|inactive][&category=…]` — privilege:
/// Get Conditions (and Get Encounters for the diagnoses).
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Conditions"])?;
    let Some(patient) = patient_param(&query) else {
        return Ok(invalid(
            "Condition searches need a patient (patient or subject)",
        ));
    };
    let Some((problems, diagnoses)) = categories(&query) else {
        return Ok(invalid(
            "Condition.category must be problem-list-item or encounter-diagnosis",
        ));
    };
    // Diagnoses have no clinical status: a search by status reads conditions alone
    // (`inactive` covers history-of too: fhir2 writes both as inactive).
    let status = param(&query, "clinical-status");
    let which = match status.map(|s| s.split(',').map(fhir_status).collect::<Vec<_>>()) {
        None => store::Which::NotVoided,
        Some(codes) if codes.contains(&None) => {
            return Ok(invalid(
                "clinical-status must be active or inactive (resolved, remission)",
            ));
        }
        Some(codes) if codes.contains(&Some(true)) && codes.contains(&Some(false)) => {
            store::Which::NotVoided
        }
        Some(codes) if codes.contains(&Some(true)) => store::Which::Active,
        Some(_) => store::Which::Inactive,
    };
    let diagnoses = diagnoses && status.is_none() && caller.grants.has("Get Encounters");
    let w = window(&query);
    let catalog = state.catalog.load();
    let locale = caller.locale(&catalog);
    let mut resources = Vec::new();
    let mut total = 0;
    let mut condition_total = 0;
    if problems {
        let (list, page) = store::of_patient(&state.store, &patient, which, w)?;
        condition_total = page.total.unwrap_or(list.len());
        total += condition_total;
        resources.extend(list.iter().map(|c| condition_json(c, &catalog, &locale)));
    }
    if diagnoses {
        // The diagnoses' window continues where the conditions' ended.
        let skip = w.start.saturating_sub(condition_total);
        let room = w.limit.saturating_sub(resources.len());
        let dw = Window {
            start: skip,
            limit: room,
            count_all: true,
        };
        let (list, page) =
            crate::domains::diagnosis::store::of_patient(&state.store, &patient, false, dw)?;
        total += page.total.unwrap_or(list.len());
        resources.extend(list.iter().map(|d| diagnosis_json(d, &catalog, &locale)));
    }
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "Condition",
            &query,
            total,
            w.start,
            w.limit,
            resources,
        ),
    ))
}

/// `GET Condition/{id}`: a condition or a diagnosis; 410 once voided, as fhir2 answers.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Conditions"])?;
    let catalog = state.catalog.load();
    let locale = caller.locale(&catalog);
    let (voided, resource) = if let Some(c) = store::get(&state.store, &id)? {
        (c.voiding.voided, condition_json(&c, &catalog, &locale))
    } else if let Some(d) = crate::domains::diagnosis::store::get(&state.store, &id)?
        && caller.grants.has("Get Encounters")
    {
        (d.voiding.voided, diagnosis_json(&d, &catalog, &locale))
    } else {
        return Ok(crate::http::fhir::not_found("Condition", &id));
    };
    if voided {
        return Ok(outcome(
            StatusCode::GONE,
            "error",
            "deleted",
            &format!("Resource of type Condition with ID {id} is gone/deleted"),
        ));
    }
    Ok(fhir(StatusCode::OK, resource))
}

fn date_of(
    body: &Map<String, Value>,
    field: &str,
    period: &str,
    end: &str,
) -> Result<Option<String>, String> {
    let text = match body.get(field) {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(Value::Null) | None => body
            .get(period)
            .and_then(|p| p.get(end))
            .and_then(Value::as_str),
        Some(_) => return Err(format!("Condition.{field} must be a date and time")),
    };
    match text {
        None => Ok(None),
        Some(t) => parse_datetime(t)
            .map(|t| Some(datetime_key(t)))
            .ok_or_else(|| format!("Condition.{field}: '{t}' is not a date and time")),
    }
}

/// The coding of `field` in `system` (`None` when none is).
fn coded_in<'b>(body: &'b Map<String, Value>, field: &str, system: &str) -> Option<&'b str> {
    body.get(field)?
        .get("coding")?
        .as_array()?
        .iter()
        .filter(|c| c.get("system").and_then(Value::as_str) == Some(system))
        .find_map(|c| c.get("code").and_then(Value::as_str))
}

/// Reads a Condition resource onto a record, as fhir2's translator does: what the
/// resource does not carry is cleared (a `PUT` replaces).
fn apply(
    body: &Map<String, Value>,
    c: &mut ConditionRecord,
    catalog: &Catalog,
) -> Result<(), String> {
    if body.get("resourceType").and_then(Value::as_str) != Some("Condition") {
        return Err("resourceType must be Condition".into());
    }
    if let Some(cats) = body.get("category").and_then(Value::as_array) {
        let codes = cats
            .iter()
            .filter_map(|c| c.get("coding")?.as_array())
            .flatten()
            .filter_map(|c| c.get("code")?.as_str());
        for code in codes {
            if code != PROBLEM {
                return Err(format!(
                    "Condition.category must be {PROBLEM}: encounter diagnoses are written with the visit note (patientdiagnoses), not '{code}'"
                ));
            }
        }
    }
    c.coded = None;
    c.non_coded = None;
    if let Some(code) = body.get("code") {
        let codings = code.get("coding").and_then(Value::as_array);
        for coding in codings.into_iter().flatten() {
            let Some(value) = coding.get("code").and_then(Value::as_str) else {
                continue;
            };
            let system = coding.get("system").and_then(Value::as_str);
            if let Some(concept) = catalog.concept_of_coding(system, value) {
                c.coded = Some(concept.uuid.clone());
                break;
            }
        }
        if c.coded.is_none() && codings.is_some_and(|l| !l.is_empty()) {
            return Err("Condition.code: no coding names a concept of this server".into());
        }
    }
    if c.coded.is_none() {
        c.non_coded = body
            .get("extension")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|e| e.get("url").and_then(Value::as_str) == Some(NON_CODED))
            .and_then(|e| e.get("valueString")?.as_str())
            .or_else(|| body.get("code")?.get("text")?.as_str())
            .map(str::to_string);
    }
    // fhir2 writes history-of as inactive: a condition sent back inactive stays history-of.
    c.clinical_status = match coded_in(body, "clinicalStatus", CLINICAL) {
        None => None,
        Some(code) => match fhir_status(code) {
            Some(true) => Some(ClinicalStatus::Active),
            Some(false) if c.clinical_status == Some(ClinicalStatus::HistoryOf) => {
                Some(ClinicalStatus::HistoryOf)
            }
            Some(false) => Some(ClinicalStatus::Inactive),
            None => {
                return Err(format!(
                    "Condition.clinicalStatus must be active or inactive, not '{code}'"
                ));
            }
        },
    };
    c.verification = match coded_in(body, "verificationStatus", VERIFICATION) {
        None => None,
        Some(v) => Some(Verification::parse(v).ok_or_else(|| {
            format!("Condition.verificationStatus must be confirmed or provisional, not '{v}'")
        })?),
    };
    c.onset = date_of(body, "onsetDateTime", "onsetPeriod", "start")?;
    c.end = date_of(body, "abatementDateTime", "abatementPeriod", "end")?;
    c.additional_detail = body
        .get("note")
        .and_then(Value::as_array)
        .and_then(|n| n.first())
        .and_then(|n| n.get("text")?.as_str())
        .map(str::to_string);
    Ok(())
}

/// `POST Condition` — privilege: Edit Conditions. 201 with the resource and its Location.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Conditions"])?;
    let catalog = state.catalog.load();
    let Some(patient) = reference_id(body.get("subject").or(body.get("patient")), "Patient") else {
        return Ok(invalid("Condition.subject must name a patient (Patient/…)"));
    };
    let uuid = body
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| uuid::Uuid::parse_str(id).is_ok())
        .map_or_else(crate::store::record::new_uuid, str::to_string);
    let mut c = ConditionRecord::new(uuid, patient, Audit::new(&caller.user_uuid(), Utc::now()));
    if let Err(e) = apply(&body, &mut c, &catalog) {
        return Ok(invalid(&e));
    }
    let st = state.clone();
    let cat = catalog.clone();
    let written = blocking(move || {
        let mut c = c;
        let _one_writer = st.store.write_lock();
        if store::get(&st.store, &c.uuid)?.is_some() {
            return Ok(Written::Refused(invalid(&format!(
                "A condition with id {} already exists",
                c.uuid
            ))));
        }
        let mut inv = Invalid::default();
        let patient = st.store.patient(&c.patient)?;
        crate::domains::condition::check(
            &mut c,
            None,
            &cat,
            patient.is_some_and(|p| !p.voided),
            &mut inv,
        );
        if !inv.is_empty() {
            return Ok(Written::Refused(unprocessable(&inv)));
        }
        store::put(&st.store, &c)?;
        Ok::<_, ApiError>(Written::Done(Box::new(c)))
    })
    .await?;
    let c = match written {
        Written::Done(c) => c,
        Written::Refused(r) => return Ok(r),
    };
    let res = fhir(
        StatusCode::CREATED,
        condition_json(&c, &catalog, &caller.locale(&catalog)),
    );
    Ok(crate::http::fhir::located(
        res,
        &state,
        &caller,
        "Condition",
        &c.uuid,
    ))
}

/// `PUT Condition/{id}` replaces what the resource carries — privilege: Edit Conditions.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Conditions"])?;
    if let Some(body_id) = body.get("id").and_then(Value::as_str)
        && body_id != id
    {
        return Ok(invalid(&format!(
            "Resource id {body_id} does not match the id {id} of the request"
        )));
    }
    let catalog = state.catalog.load();
    let user = caller.user_uuid();
    let st = state.clone();
    let cat = catalog.clone();
    let written = blocking(move || {
        let _one_writer = st.store.write_lock();
        let Some(mut c) = store::get(&st.store, &id)? else {
            return Ok(Written::Refused(crate::http::fhir::not_found(
                "Condition",
                &id,
            )));
        };
        if c.voiding.voided {
            return Ok(Written::Refused(invalid(&format!(
                "Condition {id} is deleted"
            ))));
        }
        if let Some(p) = reference_id(body.get("subject"), "Patient")
            && p != c.patient
        {
            return Ok(Written::Refused(invalid(
                "The patient of a condition cannot be changed",
            )));
        }
        let was_coded = c.coded.clone();
        if let Err(e) = apply(&body, &mut c, &cat) {
            return Ok(Written::Refused(invalid(&e)));
        }
        let mut inv = Invalid::default();
        crate::domains::condition::check(&mut c, was_coded.as_deref(), &cat, true, &mut inv);
        if !inv.is_empty() {
            return Ok(Written::Refused(unprocessable(&inv)));
        }
        c.audit.changed(&user, Utc::now());
        store::put(&st.store, &c)?;
        Ok::<_, ApiError>(Written::Done(Box::new(c)))
    })
    .await?;
    match written {
        Written::Done(c) => Ok(fhir(
            StatusCode::OK,
            condition_json(&c, &catalog, &caller.locale(&catalog)),
        )),
        Written::Refused(r) => Ok(r),
    }
}

/// `DELETE Condition/{id}` voids it ("Voided via FHIR API") — privilege: Delete Conditions.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Delete Conditions"])?;
    let user = caller.user_uuid();
    let st = state.clone();
    let found = blocking(move || {
        let _one_writer = st.store.write_lock();
        let Some(mut c) = store::get(&st.store, &id)? else {
            return Ok::<_, ApiError>(Err(id));
        };
        if !c.voiding.voided {
            c.voiding.void(&user, Utc::now(), "Voided via FHIR API");
            store::put(&st.store, &c)?;
        }
        Ok(Ok(()))
    })
    .await?;
    Ok(match found {
        Ok(()) => outcome(
            StatusCode::OK,
            "information",
            "informational",
            "This resource has been deleted",
        ),
        Err(id) => crate::http::fhir::not_found("Condition", &id),
    })
}
