//! The appointments module's REST surface, in its wire shapes (plain JSON, lists as bare
//! arrays, datetimes as epoch milliseconds): `appointmentService`, `appointment`,
//! `appointments` (day lists, search, save, conflicts, status changes, the calendar's
//! summary). Privileges are the module's: View Appointments to read, Manage Appointments to
//! book and change, View Appointment Services for the services, Reset Appointment Status to
//! set an appointment back to Scheduled.

use crate::domains::appointment::{
    AppointmentRecord, KINDS, ProviderResponse, StatusChange, may_change, rank, store,
};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::store::record::{Audit, Voiding};
use crate::wire::{datetime_key, parse_datetime, parse_key};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use model::AppointmentService;
use serde_json::{Map, Value, json};
use std::sync::Arc;

fn epoch(key: &str) -> Value {
    parse_key(key).map_or(Value::Null, |t| json!(t.timestamp_millis()))
}

/// A datetime from a query string: as written, or with a `+` that form decoding made a
/// space (`…T00:00:00.000 0100`).
fn query_datetime(query: &[(String, String)], name: &str) -> ApiResult<Option<String>> {
    match param(query, name).map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => parse_datetime(v)
            .or_else(|| parse_datetime(&v.replace(' ', "+")))
            .map(|t| Some(datetime_key(t)))
            .ok_or_else(|| ApiError::BadRequest(format!("{name} is not a date: {v}"))),
    }
}

fn body_datetime(body: &Map<String, Value>, name: &str) -> ApiResult<Option<String>> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => parse_datetime(s)
            .map(|t| Some(datetime_key(t)))
            .ok_or_else(|| ApiError::BadRequest(format!("{name} is not a date: {s}"))),
        // Jackson takes epoch milliseconds too.
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(|t| Some(datetime_key(t)))
            .ok_or_else(|| ApiError::BadRequest(format!("{name} is not a date"))),
        Some(_) => Err(ApiError::BadRequest(format!("{name} is not a date"))),
    }
}

fn text(body: &Map<String, Value>, name: &str) -> Option<String> {
    body.get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

// ---- services ----

/// "07:30" → "07:30:00", as the module writes a `java.sql.Time`.
fn time_of_day(t: &Option<String>) -> Value {
    t.as_ref().map_or(json!(""), |t| json!(format!("{t}:00")))
}

pub fn service_json(state: &AppState, s: &AppointmentService, full: bool) -> Value {
    let catalog = state.catalog.load();
    let content = &catalog.content;
    let index = content
        .appointment_services
        .iter()
        .position(|x| x.uuid == s.uuid)
        .unwrap_or_default();
    let speciality = s
        .speciality
        .as_ref()
        .and_then(|u| {
            content
                .appointment_specialities
                .iter()
                .find(|x| &x.uuid == u)
        })
        .map_or(json!({}), |x| json!({"name": x.name, "uuid": x.uuid}));
    let location = s
        .location
        .as_ref()
        .and_then(|l| catalog.location(l))
        .map_or(json!({}), |l| json!({"name": l.name, "uuid": l.uuid}));
    let mut out = json!({
        "appointmentServiceId": index + 1,
        "name": s.name,
        "description": s.description,
        "speciality": speciality,
        "startTime": time_of_day(&s.start_time),
        "endTime": time_of_day(&s.end_time),
        "maxAppointmentsLimit": s.max_load,
        "durationMins": s.duration_mins,
        "location": location,
        "uuid": s.uuid,
        "color": s.color,
        "initialAppointmentStatus": null,
        "creatorName": null,
        "attributes": [],
    });
    if full {
        out["weeklyAvailability"] = json!([]);
        out["serviceTypes"] = json!(
            content
                .appointment_service_types
                .iter()
                .filter(|t| t.service == s.uuid && !t.retired)
                .map(|t| json!({"name": t.name, "duration": t.duration_mins, "uuid": t.uuid}))
                .collect::<Vec<_>>()
        );
    }
    out
}

/// `GET appointmentService/all/default` and `…/all/full`: the content's services.
pub async fn services(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(rep): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["View Appointment Services"])?;
    let full = match rep.as_str() {
        "default" => false,
        "full" => true,
        _ => return Err(ApiError::NotFound),
    };
    let catalog = state.catalog.load();
    let list: Vec<Value> = catalog
        .content
        .appointment_services
        .iter()
        .filter(|s| !s.retired)
        .map(|s| service_json(&state, s, full))
        .collect();
    Ok(crate::http::ok(json!(list)))
}

/// `GET appointmentService?uuid=…` (full).
pub async fn service(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["View Appointment Services"])?;
    let uuid = param(&query, "uuid").unwrap_or_default();
    let catalog = state.catalog.load();
    let s = catalog
        .content
        .appointment_services
        .iter()
        .find(|s| s.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    Ok(crate::http::ok(service_json(&state, s, true)))
}

/// `POST appointmentService`, `DELETE appointmentService`: the services are the content's.
pub async fn service_write(caller: Caller) -> ApiResult<Response> {
    caller.require(&["Manage Appointment Services"])?;
    Err(ApiError::BadRequest(
        "Appointment services are defined by the content package (appointmentservicedefinitions/ of openmrs_config): change them there".into(),
    ))
}

// ---- appointments ----

fn appointment_json(state: &AppState, a: &AppointmentRecord) -> Value {
    let catalog = state.catalog.load();
    let content = &catalog.content;
    let patient = state.store.patient(&a.patient).ok().flatten();
    let patient_json = match &patient {
        Some(p) => {
            let preferred = p
                .identifiers
                .iter()
                .find(|i| i.preferred)
                .or(p.identifiers.first());
            let mut out = json!({
                "name": crate::domains::patient::repr::person_display(p),
                "uuid": p.uuid,
                "identifier": preferred.map(|i| i.identifier.clone()),
                "age": p.birthdate.as_deref().and_then(|b| crate::wire::age_on(b, chrono::Utc::now().date_naive())),
                "gender": p.gender,
                "birthDate": p.birthdate.as_deref().and_then(|b| chrono::NaiveDate::parse_from_str(b, "%Y-%m-%d").ok()).and_then(|d| d.and_hms_opt(0, 0, 0)).map(|t| t.and_utc().timestamp_millis()),
                "customAttributes": {},
            });
            // Each identifier under its type's name without spaces or hyphens, as the
            // module adds them.
            for i in &p.identifiers {
                if let Some(t) = content
                    .patient_identifier_types
                    .iter()
                    .find(|t| t.uuid == i.identifier_type)
                {
                    let key: String = t
                        .name
                        .chars()
                        .filter(|c| !c.is_whitespace() && *c != '-')
                        .collect();
                    out[key] = json!(i.identifier);
                }
            }
            out
        }
        None => json!({"uuid": a.patient}),
    };
    let service = content
        .appointment_services
        .iter()
        .find(|s| s.uuid == a.service)
        .map_or(Value::Null, |s| service_json(state, s, false));
    let service_type = a.service_type.as_ref().and_then(|t| {
        content
            .appointment_service_types
            .iter()
            .find(|x| &x.uuid == t)
            .map(|x| json!({"name": x.name, "uuid": x.uuid, "duration": x.duration_mins}))
    });
    let location = a
        .location
        .as_ref()
        .and_then(|l| catalog.location(l))
        .map(|l| json!({"name": l.name, "uuid": l.uuid}));
    let providers: Vec<Value> = a
        .providers
        .iter()
        .filter(|p| p.response != "CANCELLED")
        .map(|p| {
            let name = crate::domains::provider::find(&state.store, &p.uuid)
                .ok()
                .flatten()
                .map(|x| x.name);
            json!({"uuid": p.uuid, "comments": p.comments, "response": p.response, "name": name})
        })
        .collect();
    json!({
        "uuid": a.uuid,
        "appointmentNumber": a.number,
        "dateCreated": epoch(&a.audit.date_created),
        "dateAppointmentScheduled": epoch(&a.date_scheduled),
        "patient": patient_json,
        "service": service,
        "serviceType": service_type,
        "provider": null,
        "location": location,
        "startDateTime": epoch(&a.start),
        "endDateTime": epoch(&a.end),
        "appointmentKind": a.kind,
        "status": a.status,
        "comments": a.comments,
        "priority": null,
        "additionalInfo": null,
        "providers": providers,
        "reasons": [],
        "recurring": false,
        "voided": a.voiding.voided,
        "extensions": {"patientEmailDefined": false},
        "teleconsultationLink": null,
    })
}

fn list_json(state: &AppState, list: &[AppointmentRecord]) -> Value {
    json!(
        list.iter()
            .map(|a| appointment_json(state, a))
            .collect::<Vec<_>>()
    )
}

/// Appointments whose patient is not voided (the module's listings leave those out).
fn of_living_patients(
    state: &AppState,
    list: Vec<AppointmentRecord>,
) -> ApiResult<Vec<AppointmentRecord>> {
    let mut out = Vec::with_capacity(list.len());
    for a in list {
        if state.store.patient(&a.patient)?.is_some_and(|p| !p.voided) {
            out.push(a);
        }
    }
    Ok(out)
}

/// `GET appointment/all?forDate=…` and `GET appointments?forDate=…`: the day's appointments
/// (starting on or after `forDate` and ending within the 24 hours after it), every status;
/// without `forDate`, today's (UTC).
pub async fn for_date(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["View Appointments"])?;
    let from = match query_datetime(&query, "forDate")? {
        Some(t) => t,
        None => datetime_key(
            chrono::Utc::now()
                .date_naive()
                .and_hms_opt(0, 0, 0)
                .expect("midnight")
                .and_utc(),
        ),
    };
    let to = datetime_key(parse_key(&from).expect("key form") + chrono::Duration::hours(24));
    let st = state.clone();
    let list = blocking(move || {
        let found = store::starting_between(&st.store, &from, &to)?;
        let found = found.into_iter().filter(|a| a.end < to).collect();
        of_living_patients(&st, found)
    })
    .await?;
    Ok(crate::http::ok(list_json(&state, &list)))
}

/// `GET appointment?uuid=…`.
pub async fn read_by_query(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["View Appointments"])?;
    let uuid = param(&query, "uuid").ok_or_else(|| {
        ApiError::BadRequest(
            "Name an appointment: appointment?uuid=… (or appointment/all?forDate=…)".into(),
        )
    })?;
    let a = store::get(&state.store, uuid)?.ok_or(ApiError::NotFound)?;
    Ok(crate::http::ok(appointment_json(&state, &a)))
}

/// `GET appointments/{uuid}`.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["View Appointments"])?;
    let a = store::get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    Ok(crate::http::ok(appointment_json(&state, &a)))
}

const SAVE_FIELDS: &[&str] = &[
    "uuid",
    "appointmentNumber",
    "patientUuid",
    "serviceUuid",
    "serviceTypeUuid",
    "locationUuid",
    "startDateTime",
    "endDateTime",
    "appointmentKind",
    "status",
    "comments",
    "providers",
    "providerUuid",
    "dateAppointmentScheduled",
    "priority",
    "reasonConceptUuids",
    "recurringPattern",
    "teleconsultation",
];

/// Reads a save request over `base` (a new appointment, or the stored one being edited) and
/// checks it as the module's validators do.
fn apply(
    state: &AppState,
    body: &Map<String, Value>,
    mut a: AppointmentRecord,
    user: &str,
) -> ApiResult<AppointmentRecord> {
    if let Some(k) = body.keys().find(|k| !SAVE_FIELDS.contains(&k.as_str())) {
        return Err(ApiError::BadRequest(format!(
            "Unrecognized field \"{k}\" in an appointment"
        )));
    }
    let mut problems = Vec::new();
    let new = a.patient.is_empty();
    match text(body, "patientUuid") {
        Some(p) if new => a.patient = p,
        Some(p) if p != a.patient => {
            problems.push("Appointment cannot be updated with that patient".to_string())
        }
        _ => {}
    }
    if let Some(s) = text(body, "serviceUuid") {
        a.service = s;
    }
    if body.contains_key("serviceTypeUuid") {
        a.service_type = text(body, "serviceTypeUuid");
    }
    if body.contains_key("locationUuid") {
        a.location = text(body, "locationUuid");
    }
    if let Some(t) = body_datetime(body, "startDateTime")? {
        a.start = t;
    }
    if let Some(t) = body_datetime(body, "endDateTime")? {
        a.end = t;
    }
    if let Some(t) = body_datetime(body, "dateAppointmentScheduled")? {
        a.date_scheduled = t;
    }
    if body.contains_key("appointmentKind") {
        match text(body, "appointmentKind") {
            Some(k) if KINDS.contains(&k.as_str()) => a.kind = k,
            other => {
                return Err(ApiError::BadRequest(format!(
                    "No enum constant org.openmrs.module.appointments.model.AppointmentKind.{}",
                    other.unwrap_or_default()
                )));
            }
        }
    }
    if let Some(s) = text(body, "status") {
        if rank(&s).is_none() {
            return Err(ApiError::BadRequest(format!(
                "No enum constant org.openmrs.module.appointments.model.AppointmentStatus.{s}"
            )));
        }
        a.status = s;
    }
    if body.contains_key("comments") {
        a.comments = text(body, "comments");
    }
    // Providers: those not named any more are cancelled, new ones accepted.
    let mut named: Vec<(String, String)> = Vec::new();
    if let Some(Value::Array(list)) = body.get("providers") {
        for p in list {
            let uuid = crate::http::body::ref_uuid(p)
                .ok_or_else(|| ApiError::BadRequest("Bad Request. No such provider.".into()))?;
            let response = p
                .get("response")
                .and_then(Value::as_str)
                .unwrap_or("ACCEPTED")
                .to_uppercase();
            named.push((uuid, response));
        }
    } else if let Some(p) = body
        .get("providerUuid")
        .and_then(crate::http::body::ref_uuid)
    {
        named.push((p, "ACCEPTED".into()));
    }
    if body.contains_key("providers") || body.contains_key("providerUuid") {
        for (uuid, _) in &named {
            if crate::domains::provider::find(&state.store, uuid)?.is_none() {
                return Err(ApiError::BadRequest(
                    "Bad Request. No such provider.".into(),
                ));
            }
        }
        for p in a.providers.iter_mut() {
            if !named.iter().any(|(u, _)| u == &p.uuid) {
                p.response = "CANCELLED".into();
            }
        }
        for (uuid, response) in named {
            match a.providers.iter_mut().find(|p| p.uuid == uuid) {
                Some(p) => p.response = response,
                None => a.providers.push(ProviderResponse {
                    uuid,
                    response,
                    comments: None,
                }),
            }
        }
    }
    if a.patient.is_empty() {
        problems.push("Appointment cannot be created without Patient".into());
    } else if state.store.patient(&a.patient)?.is_none_or(|p| p.voided) {
        problems.push(format!("Patient {} does not exist", a.patient));
    }
    let catalog = state.catalog.load();
    if a.service.is_empty() {
        problems.push("Appointment cannot be created without Service".into());
    } else if !catalog
        .content
        .appointment_services
        .iter()
        .any(|s| s.uuid == a.service && !s.retired)
    {
        problems.push(format!("Appointment service {} does not exist", a.service));
    }
    if let Some(t) = &a.service_type
        && !catalog
            .content
            .appointment_service_types
            .iter()
            .any(|x| &x.uuid == t && x.service == a.service)
    {
        problems.push(format!("Service type {t} is not one of the service's"));
    }
    if let Some(l) = &a.location
        && catalog.location(l).is_none()
    {
        problems.push(format!("Location {l} does not exist"));
    }
    if a.start.is_empty() || a.end.is_empty() {
        problems.push("An appointment has a start and an end (startDateTime, endDateTime)".into());
    } else if a.end <= a.start {
        problems.push("The appointment ends before it starts".into());
    }
    if !problems.is_empty() {
        return Err(ApiError::BadRequest(problems.join("\n")));
    }
    let now = chrono::Utc::now();
    if new {
        a.audit = Audit::new(user, now);
    } else {
        a.audit.changed(user, now);
    }
    Ok(a)
}

fn blank(user: &str) -> AppointmentRecord {
    let now = chrono::Utc::now();
    AppointmentRecord {
        v: 1,
        uuid: crate::store::record::new_uuid(),
        number: String::new(),
        patient: String::new(),
        service: String::new(),
        service_type: None,
        location: None,
        start: String::new(),
        end: String::new(),
        kind: "Scheduled".into(),
        status: "Scheduled".into(),
        comments: None,
        date_scheduled: datetime_key(now),
        providers: Vec::new(),
        history: Vec::new(),
        audit: Audit::new(user, now),
        voiding: Voiding::default(),
    }
}

async fn save_with(
    state: Arc<AppState>,
    caller: &Caller,
    body: Map<String, Value>,
    may_edit: bool,
) -> ApiResult<Response> {
    caller.require(&["Manage Appointments"])?;
    let user = caller.user_uuid();
    let st = state.clone();
    let saved = blocking(move || {
        let _one_writer = st.store.write_lock();
        let existing = match text(&body, "uuid") {
            Some(u) if may_edit => Some(
                store::get(&st.store, &u)?
                    .ok_or_else(|| ApiError::BadRequest("Invalid appointment for edit".into()))?,
            ),
            _ => None,
        };
        let base = existing.clone().unwrap_or_else(|| blank(&user));
        let mut a = apply(&st, &body, base, &user)?;
        store::put(&st.store, existing.as_ref(), &mut a)?;
        Ok(a)
    })
    .await?;
    // The module answers a save with 200 (the O3 form counts only 200 as saved).
    Ok(crate::http::ok(appointment_json(&state, &saved)))
}

/// `POST appointment`: creates, or edits when `uuid` names a stored appointment.
pub async fn save(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_with(state, &caller, body, true).await
}

/// `POST appointments`: creates (a `uuid` is ignored, as in the module).
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_with(state, &caller, body, false).await
}

/// `POST appointments/search` with `{patientUuid, providerUuid, status, startDate, endDate,
/// appointmentNumber, limit}`: by start, ascending; at most `limit` (50 without an end).
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["View Appointments"])?;
    let start = body_datetime(&body, "startDate")?
        .ok_or_else(|| ApiError::BadRequest("startDate is required".into()))?;
    let end = body_datetime(&body, "endDate")?;
    let patient = text(&body, "patientUuid");
    let provider = text(&body, "providerUuid");
    let status = text(&body, "status");
    let number = text(&body, "appointmentNumber");
    let limit = body
        .get("limit")
        .and_then(Value::as_u64)
        .filter(|l| *l > 0)
        .map(|l| l as usize)
        .or(if end.is_none() { Some(50) } else { None });
    let st = state.clone();
    let list = blocking(move || {
        let found = match &patient {
            Some(p) => store::of_patient_from(&st.store, p, &start)?,
            None => store::starting_between(&st.store, &start, "9999")?,
        };
        let found: Vec<AppointmentRecord> = found
            .into_iter()
            .filter(|a| end.as_ref().is_none_or(|e| a.start <= *e))
            .filter(|a| status.as_ref().is_none_or(|s| &a.status == s))
            .filter(|a| number.as_ref().is_none_or(|n| &a.number == n))
            .filter(|a| {
                provider.as_ref().is_none_or(|p| {
                    a.providers
                        .iter()
                        .any(|x| &x.uuid == p && x.response != "CANCELLED")
                })
            })
            .take(limit.unwrap_or(usize::MAX))
            .collect();
        of_living_patients(&st, found)
    })
    .await?;
    Ok(crate::http::ok(list_json(&state, &list)))
}

/// `POST appointment/search`: appointments like the example (`serviceUuid`, `patientUuid`,
/// `providerUuid`, `locationUuid`, `status`), every date.
pub async fn search_by_example(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["View Appointments"])?;
    let get = |k: &str| text(&body, k);
    let (service, patient, provider, location, status) = (
        get("serviceUuid"),
        get("patientUuid"),
        get("providerUuid"),
        get("locationUuid"),
        get("status"),
    );
    let st = state.clone();
    let list = blocking(move || {
        let found = match &patient {
            Some(p) => store::of_patient_from(&st.store, p, "")?,
            None => store::starting_between(&st.store, "", "9999")?,
        };
        let found = found
            .into_iter()
            .filter(|a| service.as_ref().is_none_or(|s| &a.service == s))
            .filter(|a| {
                location
                    .as_ref()
                    .is_none_or(|l| a.location.as_ref() == Some(l))
            })
            .filter(|a| status.as_ref().is_none_or(|s| &a.status == s))
            .filter(|a| {
                provider
                    .as_ref()
                    .is_none_or(|p| a.providers.iter().any(|x| &x.uuid == p))
            })
            .collect();
        of_living_patients(&st, found)
    })
    .await?;
    Ok(crate::http::ok(list_json(&state, &list)))
}

/// `POST appointments/conflicts`: 204 when none; otherwise 200 with the conflicting
/// appointments by kind (`SERVICE_UNAVAILABLE`: the candidate, outside the service's hours;
/// `PATIENT_DOUBLE_BOOKING`: the patient's other appointments from today on that overlap it).
pub async fn conflicts(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["View Appointments"])?;
    let user = caller.user_uuid();
    let st = state.clone();
    let found = blocking(move || {
        let existing = match text(&body, "uuid") {
            Some(u) => store::get(&st.store, &u)?,
            None => None,
        };
        let base = existing.unwrap_or_else(|| blank(&user));
        let candidate = apply(&st, &body, base, &user)?;
        let mut out = Map::new();
        let catalog = st.catalog.load();
        if let Some(service) = catalog
            .content
            .appointment_services
            .iter()
            .find(|s| s.uuid == candidate.service)
        {
            let day_time = |key: &str| key.get(11..16).unwrap_or_default().to_string();
            let (start, end) = (day_time(&candidate.start), day_time(&candidate.end));
            let opens = service.start_time.clone().unwrap_or_else(|| "00:00".into());
            let closes = service.end_time.clone().unwrap_or_else(|| "23:59".into());
            let other_day = candidate.start.get(..10) != candidate.end.get(..10);
            if start < opens || end > closes || other_day {
                out.insert(
                    "SERVICE_UNAVAILABLE".into(),
                    json!([appointment_json(&st, &candidate)]),
                );
            }
        }
        let today = datetime_key(
            chrono::Utc::now()
                .date_naive()
                .and_hms_opt(0, 0, 0)
                .expect("midnight")
                .and_utc(),
        );
        let double: Vec<Value> = store::of_patient_from(&st.store, &candidate.patient, &today)?
            .iter()
            .filter(|a| a.uuid != candidate.uuid && a.overlaps(&candidate.start, &candidate.end))
            .map(|a| appointment_json(&st, a))
            .collect();
        if !double.is_empty() {
            out.insert("PATIENT_DOUBLE_BOOKING".into(), json!(double));
        }
        Ok(out)
    })
    .await?;
    if found.is_empty() {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Ok(crate::http::ok(Value::Object(found)))
    }
}

/// `POST appointments/{uuid}/status-change` (and the older `appointment/{uuid}/changeStatus`)
/// with `{toStatus, onDate}`.
pub async fn change_status(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Appointments"])?;
    let to = text(&body, "toStatus")
        .ok_or_else(|| ApiError::BadRequest("toStatus is required".into()))?;
    if rank(&to).is_none() {
        return Err(ApiError::BadRequest(format!(
            "No enum constant org.openmrs.module.appointments.model.AppointmentStatus.{to}"
        )));
    }
    let on = body_datetime(&body, "onDate")?;
    let may_reset = caller.require(&["Reset Appointment Status"]).is_ok();
    let user = caller.user_uuid();
    let st = state.clone();
    let saved = blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &uuid)?
            .ok_or_else(|| ApiError::BadRequest("Appointment does not exist".into()))?;
        if to == "Scheduled" && old.status != "Requested" && !may_reset {
            return Err(ApiError::Forbidden {
                privileges: vec!["Reset Appointment Status".into()],
            });
        }
        if !may_change(&old.status, &to) {
            return Err(ApiError::BadRequest(format!(
                "Appointment status can not be changed from {} to {to}",
                old.status
            )));
        }
        let now = chrono::Utc::now();
        let mut a = old.clone();
        a.history.push(StatusChange {
            from: old.status.clone(),
            to: to.clone(),
            on: on.clone().unwrap_or_else(|| datetime_key(now)),
            by: user.clone(),
        });
        a.status = to;
        a.audit.changed(&user, now);
        store::put(&st.store, Some(&old), &mut a)?;
        Ok(a)
    })
    .await?;
    Ok(crate::http::ok(appointment_json(&state, &saved)))
}

/// `GET appointment/appointmentSummary?startDate=…&endDate=…`: for each service, its
/// appointments (Scheduled, CheckedIn, Completed, Missed) counted by day (UTC), with the
/// missed ones, as the calendar and the workload view read them.
pub async fn summary(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["View Appointments"])?;
    let start = query_datetime(&query, "startDate")?
        .ok_or_else(|| ApiError::BadRequest("startDate is required".into()))?;
    let end = query_datetime(&query, "endDate")?
        .ok_or_else(|| ApiError::BadRequest("endDate is required".into()))?;
    if end < start {
        return Err(ApiError::BadRequest("endDate is before startDate".into()));
    }
    // The end is inclusive, as the module's `between`.
    let until =
        datetime_key(parse_key(&end).expect("key form") + chrono::Duration::milliseconds(1));
    let st = state.clone();
    let list = blocking(move || {
        let found = store::starting_between(&st.store, &start, &until)?;
        of_living_patients(&st, found)
    })
    .await?;
    let catalog = state.catalog.load();
    let out: Vec<Value> = catalog
        .content
        .appointment_services
        .iter()
        .filter(|s| !s.retired)
        .map(|s| {
            let mut days: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
            for a in list.iter().filter(|a| {
                a.service == s.uuid
                    && ["Scheduled", "CheckedIn", "Completed", "Missed"].contains(&a.status.as_str())
            }) {
                let day = days.entry(&a.start[..10]).or_default();
                day.0 += 1;
                if a.status == "Missed" {
                    day.1 += 1;
                }
            }
            let counts: Map<String, Value> = days
                .into_iter()
                .map(|(day, (all, missed))| {
                    let midnight = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d")
                        .ok()
                        .and_then(|d| d.and_hms_opt(0, 0, 0))
                        .map(|t| t.and_utc().timestamp_millis());
                    (
                        day.to_string(),
                        json!({"allAppointmentsCount": all, "missedAppointmentsCount": missed,
                               "appointmentDate": midnight, "appointmentServiceUuid": s.uuid}),
                    )
                })
                .collect();
            json!({"appointmentService": service_json(&state, s, false), "appointmentCountMap": counts})
        })
        .collect();
    Ok(crate::http::ok(json!(out)))
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route(
            &paths.rest("/appointmentService/all/{rep}"),
            get(crate::domains::appointment::rest::services),
        )
        .route(
            &paths.rest("/appointmentService"),
            get(crate::domains::appointment::rest::service)
                .post(crate::domains::appointment::rest::service_write)
                .delete(crate::domains::appointment::rest::service_write),
        )
        .route(
            &paths.rest("/appointment/all"),
            get(crate::domains::appointment::rest::for_date),
        )
        .route(
            &paths.rest("/appointment"),
            get(crate::domains::appointment::rest::read_by_query)
                .post(crate::domains::appointment::rest::save),
        )
        .route(
            &paths.rest("/appointment/search"),
            post(crate::domains::appointment::rest::search_by_example),
        )
        .route(
            &paths.rest("/appointment/appointmentSummary"),
            get(crate::domains::appointment::rest::summary),
        )
        .route(
            &paths.rest("/appointment/{uuid}/changeStatus"),
            post(crate::domains::appointment::rest::change_status),
        )
        .route(
            &paths.rest("/appointments"),
            get(crate::domains::appointment::rest::for_date)
                .post(crate::domains::appointment::rest::create),
        )
        .route(
            &paths.rest("/appointments/search"),
            post(crate::domains::appointment::rest::search),
        )
        .route(
            &paths.rest("/appointments/conflicts"),
            post(crate::domains::appointment::rest::conflicts),
        )
        .route(
            &paths.rest("/appointments/{uuid}"),
            get(crate::domains::appointment::rest::read),
        )
        .route(
            &paths.rest("/appointments/{uuid}/status-change"),
            post(crate::domains::appointment::rest::change_status),
        )
}
