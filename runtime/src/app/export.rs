//! FHIR bulk data export, as the Bulk Data Access specification (v2) describes it: a
//! national warehouse or a shared health record asks for everything (`GET $export`) or for
//! the patients and what they hold (`GET Patient/$export`), optionally only some types
//! (`_type`) changed since an instant (`_since`); the kick-off answers 202 with the URL to
//! poll; the poll answers 202 with the progress until the export is complete, then the
//! manifest listing its NDJSON files; the client reads the files and deletes the export.
//!
//! The export runs in the background on the runtime that took the kick-off, as the user
//! who asked: each type is read through its own FHIR search or read (in-process requests
//! carrying `http::ActingAs`), so an exported resource is exactly what the API answers,
//! and a type the user may not read is reported in the manifest's errors rather than
//! exported. Records and files live in the store (`domains/bulk_export`), so every runtime
//! sharing it answers the polls and serves the files.

use crate::domains::bulk_export::store;
use crate::domains::bulk_export::{ExportFile, ExportRecord, ExportState, FILE_LIMIT};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fhir::outcome;
use crate::http::{ActingAs, AppState, Caller, QueryPairs, blocking, param};
use crate::wire::{datetime_key, parse_datetime};
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Value, json};
use std::sync::Arc;

/// What a patient's export holds: the patient and her compartment, in the order written.
pub const PATIENT_TYPES: &[&str] = &[
    "Patient",
    "Encounter",
    "Observation",
    "DiagnosticReport",
    "Condition",
    "AllergyIntolerance",
    "Immunization",
    "MedicationRequest",
    "MedicationDispense",
    "ServiceRequest",
    "RelatedPerson",
];

/// What a system export adds: the facility's own resources.
pub const SYSTEM_TYPES: &[&str] = &["Location", "Practitioner", "Medication"];

/// The output formats the specification names for NDJSON.
const NDJSON: &[&str] = &["application/fhir+ndjson", "application/ndjson", "ndjson"];

/// An export is kept a day after it was asked for, unless its client deletes it first.
const KEPT_HOURS: i64 = 24;

/// An export whose runner has recorded nothing for this long was stopped with its runtime.
const STALLED_MINUTES: i64 = 10;

fn invalid(message: &str) -> Response {
    outcome(StatusCode::BAD_REQUEST, "error", "invalid", message)
}

/// `GET $export`.
pub async fn system(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    uri: Uri,
    headers: HeaderMap,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    kick_off(state, caller, uri, headers, query, "system", None).await
}

/// `GET Patient/$export`.
pub async fn patients(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    uri: Uri,
    headers: HeaderMap,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    kick_off(state, caller, uri, headers, query, "patient", None).await
}

/// `GET Group/{id}/$export`: the members of a patient list, and what they hold.
pub async fn group(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Cohorts"])?;
    match crate::domains::cohort::store::cohort(&state.store, &id)? {
        Some(c) if !c.voiding.voided => {}
        _ => return Ok(crate::http::fhir::not_found("Group", &id)),
    }
    kick_off(state, caller, uri, headers, query, "group", Some(id)).await
}

async fn kick_off(
    state: Arc<AppState>,
    caller: Caller,
    uri: Uri,
    headers: HeaderMap,
    query: Vec<(String, String)>,
    level: &'static str,
    group: Option<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    let prefer = headers
        .get("prefer")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !prefer.split(',').any(|p| p.trim() == "respond-async") {
        return Ok(invalid(
            "A bulk export runs in the background: send the header Prefer: respond-async",
        ));
    }
    let allowed: Vec<&str> = match level {
        "system" => PATIENT_TYPES.iter().chain(SYSTEM_TYPES).copied().collect(),
        _ => PATIENT_TYPES.to_vec(),
    };
    let mut types: Option<Vec<String>> = None;
    let mut since = None;
    for (k, v) in &query {
        match k.as_str() {
            "_outputFormat" if NDJSON.contains(&v.as_str()) => {}
            "_outputFormat" => {
                return Ok(invalid(&format!(
                    "_outputFormat: {v} is not served; NDJSON is (application/fhir+ndjson)"
                )));
            }
            "_type" => {
                let mut asked = types.take().unwrap_or_default();
                for t in v.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                    if !allowed.contains(&t) {
                        return Ok(invalid(&format!(
                            "_type: {t} is not exported at this level; exported are {}",
                            allowed.join(", ")
                        )));
                    }
                    if !asked.iter().any(|a| a == t) {
                        asked.push(t.to_string());
                    }
                }
                types = Some(asked);
            }
            "_since" => match parse_datetime(v) {
                Some(t) if t <= Utc::now() => since = Some(datetime_key(t)),
                Some(_) => return Ok(invalid("_since: the instant is in the future")),
                None => return Ok(invalid(&format!("_since: '{v}' is not an instant"))),
            },
            other => {
                return Ok(invalid(&format!(
                    "{other} is not supported by this server's export (supported: _type, _since, _outputFormat)"
                )));
            }
        }
    }
    // In the order the server writes them, whatever the order asked.
    let types: Vec<String> = match types {
        Some(asked) => allowed
            .iter()
            .filter(|t| asked.iter().any(|a| a == *t))
            .map(|t| t.to_string())
            .collect(),
        None => allowed.iter().map(|t| t.to_string()).collect(),
    };
    let now = datetime_key(Utc::now());
    let record = ExportRecord {
        v: 1,
        uuid: uuid::Uuid::new_v4().to_string(),
        request: format!(
            "{}{}",
            caller.origin,
            uri.path_and_query().map(|p| p.as_str()).unwrap_or("")
        ),
        level: level.to_string(),
        group,
        types,
        since,
        requested: now.clone(),
        requested_by: caller.user_uuid(),
        state: ExportState::InProgress,
        progress: "asked".into(),
        updated: now,
        files: Vec::new(),
        errors: Vec::new(),
    };
    let st = state.clone();
    let r = record.clone();
    blocking(move || {
        forget_old(&st)?;
        store::put(&st.store, &r)?;
        Ok(())
    })
    .await?;
    tokio::spawn(run(state.clone(), record.uuid.clone()));
    let mut res = StatusCode::ACCEPTED.into_response();
    let poll = format!(
        "{}{}/ws/fhir2/R4/$export-poll-status?_jobId={}",
        caller.origin, state.config.app_path, record.uuid
    );
    res.headers_mut().insert(
        header::CONTENT_LOCATION,
        HeaderValue::from_str(&poll).map_err(ApiError::internal)?,
    );
    Ok(res)
}

/// Removes the exports asked for more than `KEPT_HOURS` ago, with their files.
fn forget_old(state: &AppState) -> ApiResult<()> {
    let cut = datetime_key(Utc::now() - chrono::Duration::hours(KEPT_HOURS));
    for r in store::all(&state.store)? {
        if r.requested < cut {
            store::purge(&state.store, &r)?;
        }
    }
    Ok(())
}

/// The export as its caller may see it: only the user who asked, or a super-user.
fn owned(state: &AppState, caller: &Caller, id: &str) -> ApiResult<ExportRecord> {
    caller.require(&["Get Patients"])?;
    let r = store::get(&state.store, id)?.ok_or(ApiError::NotFound)?;
    if r.requested_by != caller.user_uuid() && !caller.grants.super_user {
        // Not found rather than forbidden: the export's existence is the other user's.
        return Err(ApiError::NotFound);
    }
    Ok(r)
}

fn job_id(query: &[(String, String)]) -> ApiResult<String> {
    param(query, "_jobId")
        .map(str::to_string)
        .ok_or_else(|| ApiError::BadRequest("_jobId is required".into()))
}

/// `GET $export-poll-status?_jobId=`: 202 while it runs (`X-Progress`, `Retry-After`), the
/// manifest once complete, an OperationOutcome (500) if it failed.
pub async fn status(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let id = job_id(&query)?;
    let st = state.clone();
    let c = caller.clone();
    let r = blocking(move || owned(&st, &c, &id)).await?;
    let stalled = datetime_key(Utc::now() - chrono::Duration::minutes(STALLED_MINUTES));
    match &r.state {
        ExportState::InProgress if r.updated < stalled => Ok(outcome(
            StatusCode::INTERNAL_SERVER_ERROR,
            "error",
            "incomplete",
            "The runtime running this export stopped before it was complete: delete it and ask again",
        )),
        ExportState::InProgress => {
            let mut res = StatusCode::ACCEPTED.into_response();
            let h = res.headers_mut();
            if let Ok(p) = HeaderValue::from_str(&r.progress) {
                h.insert("x-progress", p);
            }
            h.insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
            Ok(res)
        }
        ExportState::Failed(why) => Ok(outcome(
            StatusCode::INTERNAL_SERVER_ERROR,
            "error",
            "exception",
            &format!("The export failed: {why}"),
        )),
        ExportState::Complete => {
            let base = format!(
                "{}{}/ws/fhir2/R4/$export-file/{}",
                caller.origin, state.config.app_path, r.uuid
            );
            let entry = |f: &ExportFile| json!({"type": f.kind, "url": format!("{base}/{}", f.name()), "count": f.count});
            let (errors, output): (Vec<&ExportFile>, Vec<&ExportFile>) =
                r.files.iter().partition(|f| f.kind == "OperationOutcome");
            let manifest = json!({
                "transactionTime": r.requested,
                "request": r.request,
                "requiresAccessToken": true,
                "output": output.into_iter().map(entry).collect::<Vec<_>>(),
                "error": errors.into_iter().map(entry).collect::<Vec<_>>(),
            });
            let mut res = (StatusCode::OK, manifest.to_string()).into_response();
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            Ok(res)
        }
    }
}

/// `DELETE $export-poll-status?_jobId=`: the export and its files are removed (a running
/// one stops at its next file).
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let id = job_id(&query)?;
    let st = state.clone();
    blocking(move || {
        let r = owned(&st, &caller, &id)?;
        store::purge(&st.store, &r)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

/// `GET $export-file/{export}/{name}`: one NDJSON file of a complete export.
pub async fn file(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((id, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let st = state.clone();
    let bytes = blocking(move || {
        let r = owned(&st, &caller, &id)?;
        if !r.files.iter().any(|f| f.name() == name) {
            return Err(ApiError::NotFound);
        }
        store::file(&st.store, &id, &name)?.ok_or(ApiError::NotFound)
    })
    .await?;
    let mut res = (StatusCode::OK, bytes).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/fhir+ndjson"),
    );
    Ok(res)
}

/// `GET Patient/{id}/$everything[?_type=…][&_since=…]`: the patient and everything in her
/// compartment, in one searchset Bundle, each type read through its own search as the
/// caller (a type the caller may not read is an OperationOutcome entry, `search.mode`
/// `outcome`, rather than left out silently).
pub async fn everything(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    let mut types: Vec<&str> = PATIENT_TYPES.to_vec();
    let mut since = None;
    for (k, v) in &query {
        match k.as_str() {
            "_type" => {
                let asked: Vec<&str> = v.split(',').map(str::trim).collect();
                if let Some(t) = asked.iter().find(|t| !PATIENT_TYPES.contains(t)) {
                    return Ok(invalid(&format!(
                        "_type: {t} is not in a patient's compartment; it holds {}",
                        PATIENT_TYPES.join(", ")
                    )));
                }
                types.retain(|t| asked.contains(t));
            }
            "_since" => match parse_datetime(v) {
                Some(t) => since = Some(t),
                None => return Ok(invalid(&format!("_since: '{v}' is not an instant"))),
            },
            other => {
                return Ok(invalid(&format!(
                    "{other} is not supported by $everything here (supported: _type, _since)"
                )));
            }
        }
    }
    let router = crate::app::app(state.clone());
    let fhir_base = format!("{}/ws/fhir2/R4", state.config.app_path);
    let user = caller.user_uuid();
    let full = |r: &Value| {
        format!(
            "{}{fhir_base}/{}/{}",
            caller.origin,
            r["resourceType"].as_str().unwrap_or(""),
            r["id"].as_str().unwrap_or("")
        )
    };
    // The patient first: one who is not there is a 404, not an empty Bundle.
    let patient = match read_all(
        &router,
        &user,
        &format!("{fhir_base}/Patient/{id}"),
        &fhir_base,
    )
    .await?
    {
        Read::Resources(mut r) if !r.is_empty() => r.remove(0),
        Read::Refused(why) => {
            return Ok(outcome(StatusCode::FORBIDDEN, "error", "forbidden", &why));
        }
        _ => {
            return Ok(outcome(
                StatusCode::NOT_FOUND,
                "error",
                "not-found",
                &format!("Patient/{id} is not known"),
            ));
        }
    };
    let mut entries = Vec::new();
    for kind in types {
        let found = if kind == "Patient" {
            Read::Resources(vec![patient.clone()])
        } else {
            read_all(
                &router,
                &user,
                &format!("{fhir_base}/{kind}?patient={id}&_count=100"),
                &fhir_base,
            )
            .await?
        };
        match found {
            Read::Resources(resources) => {
                for r in resources.into_iter().filter(|r| changed_since(r, since)) {
                    entries.push(
                        json!({"fullUrl": full(&r), "resource": r, "search": {"mode": "match"}}),
                    );
                }
            }
            Read::Missing => {}
            Read::Refused(why) => entries.push(outcome_entry(kind, &why)),
        }
    }
    let matches = entries
        .iter()
        .filter(|e| e["search"]["mode"] == "match")
        .count();
    let mut bundle = json!({
        "resourceType": "Bundle",
        "type": "searchset",
        "total": matches,
        "link": [{"relation": "self", "url": format!("{}{fhir_base}/Patient/{id}/$everything", caller.origin)}],
    });
    // R4 has no empty lists.
    if !entries.is_empty() {
        bundle["entry"] = Value::Array(entries);
    }
    Ok(crate::http::fhir::fhir(StatusCode::OK, bundle))
}

/// The reverse includes `Patient?` takes, as fhir2's Patient search allows them: each
/// type's resources that name a found patient as their `patient`.
pub const PATIENT_REVINCLUDES: &[&str] = &[
    "Observation:patient",
    "AllergyIntolerance:patient",
    "DiagnosticReport:patient",
    "Encounter:patient",
    "MedicationRequest:patient",
    "ServiceRequest:patient",
];

/// `GET Patient?…`: the patient search (`domains::patient::fhir::search`), and with
/// `_revinclude` each found patient's resources of the types named, read through their own
/// searches as the caller (`search.mode` `include`; a type the caller may not read is an
/// OperationOutcome entry, mode `outcome`). A reverse include fhir2 does not offer is
/// refused (400): answering without it would read as "she has none".
pub async fn patient_search(
    state: State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let mut kinds: Vec<&str> = Vec::new();
    for (_, v) in query.iter().filter(|(k, _)| k == "_revinclude") {
        for asked in v.split(',').map(str::trim) {
            if !PATIENT_REVINCLUDES.contains(&asked) {
                return Ok(invalid(&format!(
                    "_revinclude: {asked} is not offered; Patient takes {}",
                    PATIENT_REVINCLUDES.join(", ")
                )));
            }
            let kind = asked.split(':').next().unwrap_or(asked);
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    let found = crate::domains::patient::fhir::search(
        state.clone(),
        caller.clone(),
        QueryPairs(query.clone()),
    )
    .await?;
    if kinds.is_empty() || found.status() != StatusCode::OK {
        return Ok(found);
    }
    let bytes = axum::body::to_bytes(found.into_body(), 256 << 20)
        .await
        .map_err(ApiError::internal)?;
    let mut bundle: Value = serde_json::from_slice(&bytes).map_err(ApiError::internal)?;
    let patients: Vec<String> = bundle["entry"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["resource"]["id"].as_str().map(str::to_string))
        .collect();
    let router = crate::app::app(state.0.clone());
    let fhir_base = format!("{}/ws/fhir2/R4", state.config.app_path);
    let user = caller.user_uuid();
    let mut included = Vec::new();
    for patient in &patients {
        for kind in &kinds {
            let path = format!("{fhir_base}/{kind}?patient={patient}&_count=100");
            match read_all(&router, &user, &path, &fhir_base).await? {
                Read::Resources(resources) => {
                    for r in resources {
                        let url = format!(
                            "{}{fhir_base}/{kind}/{}",
                            caller.origin,
                            r["id"].as_str().unwrap_or("")
                        );
                        included.push(
                            json!({"fullUrl": url, "resource": r, "search": {"mode": "include"}}),
                        );
                    }
                }
                Read::Missing => {}
                Read::Refused(why) => included.push(outcome_entry(kind, &why)),
            }
        }
    }
    if let Some(entries) = bundle["entry"].as_array_mut() {
        // With included resources beside them, the patients say they are the matches.
        for e in entries.iter_mut() {
            e["search"] = json!({"mode": "match"});
        }
        entries.extend(included);
    }
    Ok(crate::http::fhir::fhir(StatusCode::OK, bundle))
}

/// A Bundle entry saying why a type of a patient's compartment is not in it: `why` begins
/// with the status its search answered (403: the caller may not read it).
fn outcome_entry(kind: &str, why: &str) -> Value {
    let code = if why.starts_with("403") {
        "forbidden"
    } else {
        "exception"
    };
    json!({
        "resource": {"resourceType": "OperationOutcome", "issue": [{"severity": "warning", "code": code, "diagnostics": format!("{kind}: {why}")}]},
        "search": {"mode": "outcome"},
    })
}

/// One type's resources on their way to files.
struct Output {
    kind: String,
    part: u32,
    count: u64,
    buf: Vec<u8>,
}

impl Output {
    /// Whether `more` bytes fit in the file being written without taking it past `limit`
    /// (an empty file takes anything: a resource larger than the limit goes alone).
    fn takes(&self, more: usize, limit: usize) -> bool {
        self.buf.is_empty() || self.buf.len() + more <= limit
    }
}

/// Runs an export to its end, recording progress and each file as it closes; stops if the
/// export was deleted meanwhile.
async fn run(state: Arc<AppState>, id: String) {
    let outcome = export(&state, &id).await;
    let st = state.clone();
    let recorded = blocking(move || {
        let Some(mut r) = store::get(&st.store, &id)? else {
            return Ok(()); // deleted meanwhile
        };
        r.state = match outcome {
            Ok(()) => ExportState::Complete,
            Err(e) => ExportState::Failed(e.to_string()),
        };
        r.progress = "done".into();
        r.updated = datetime_key(Utc::now());
        store::put(&st.store, &r)?;
        Ok(())
    })
    .await;
    if let Err(e) = recorded {
        tracing::error!("a bulk export's end could not be recorded: {e}");
    }
}

async fn export(state: &Arc<AppState>, id: &str) -> ApiResult<()> {
    let router = crate::app::app(state.clone());
    let st = state.clone();
    let (record, patients) = blocking({
        let id = id.to_string();
        move || {
            let r = store::get(&st.store, &id)?.ok_or(ApiError::NotFound)?;
            let patients = match &r.group {
                Some(list) => crate::domains::cohort::fhir::members(&st, list)?,
                None => {
                    let txn = st.store.begin_read()?;
                    crate::store::Store::patient_uuids_in(&txn)?
                }
            };
            Ok((r, patients))
        }
    })
    .await?;
    let fhir_base = format!("{}/ws/fhir2/R4", state.config.app_path);
    let since = record.since.as_deref().and_then(parse_datetime);
    let mut errors: Vec<String> = Vec::new();
    for kind in &record.types {
        let mut out = Output {
            kind: kind.clone(),
            part: 0,
            count: 0,
            buf: Vec::new(),
        };
        let per_patient = PATIENT_TYPES.contains(&kind.as_str());
        let reads: Vec<String> = if kind == "Patient" {
            patients
                .iter()
                .map(|p| format!("{fhir_base}/Patient/{p}"))
                .collect()
        } else if per_patient {
            patients
                .iter()
                .map(|p| format!("{fhir_base}/{kind}?patient={p}&_count=100"))
                .collect()
        } else {
            vec![format!("{fhir_base}/{kind}?_count=100")]
        };
        let mut refused = None;
        for (i, first) in reads.iter().enumerate() {
            let resources = match read_all(&router, &record.requested_by, first, &fhir_base).await?
            {
                Read::Resources(r) => r,
                // A patient voided or purged since the list was read.
                Read::Missing => continue,
                Read::Refused(why) => {
                    refused = Some(format!("{kind}: {why}"));
                    break;
                }
            };
            for resource in resources.iter().filter(|r| changed_since(r, since)) {
                let line = resource.to_string();
                if !out.takes(line.len() + 1, FILE_LIMIT) && !close(state, id, &mut out).await? {
                    return Ok(());
                }
                out.buf.extend_from_slice(line.as_bytes());
                out.buf.push(b'\n');
                out.count += 1;
            }
            if i % 1000 == 999
                && !note_progress(state, id, &format!("{kind} {}/{}", i + 1, reads.len())).await?
            {
                return Ok(());
            }
        }
        if let Some(why) = refused {
            errors.push(why);
            continue;
        }
        if out.count > 0 && !close(state, id, &mut out).await? {
            return Ok(());
        }
        if !note_progress(state, id, &format!("{kind} done")).await? {
            return Ok(());
        }
    }
    if !errors.is_empty() {
        let mut out = Output {
            kind: "OperationOutcome".into(),
            part: 0,
            count: 0,
            buf: Vec::new(),
        };
        for why in &errors {
            let o = json!({"resourceType": "OperationOutcome", "issue": [{"severity": "error", "code": "forbidden", "diagnostics": why}]});
            out.buf.extend_from_slice(o.to_string().as_bytes());
            out.buf.push(b'\n');
            out.count += 1;
        }
        close(state, id, &mut out).await?;
    }
    Ok(())
}

/// Whether a resource changed after `since` (`meta.lastUpdated`); one that does not say
/// when it changed is exported, rather than lost.
fn changed_since(resource: &Value, since: Option<chrono::DateTime<Utc>>) -> bool {
    let Some(since) = since else {
        return true;
    };
    match resource["meta"]["lastUpdated"]
        .as_str()
        .and_then(parse_datetime)
    {
        Some(t) => t > since,
        None => true,
    }
}

/// What one read of a type gave, all its pages followed.
enum Read {
    Resources(Vec<Value>),
    /// The resource read by id is not there (404, 410).
    Missing,
    /// Anything else: the status and the server's reason (a privilege the user lacks).
    Refused(String),
}

/// Reads `first` (a search, whose `next` pages are followed, or a read by id) as `user`.
async fn read_all(
    router: &axum::Router,
    user: &str,
    first: &str,
    fhir_base: &str,
) -> ApiResult<Read> {
    let mut found = Vec::new();
    let mut next = Some(first.to_string());
    while let Some(path) = next.take() {
        let (status, mut body) = read(router, user, &path).await?;
        match status {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND | StatusCode::GONE => return Ok(Read::Missing),
            s => {
                let why = body["issue"][0]["diagnostics"].as_str().unwrap_or("");
                return Ok(Read::Refused(format!("{} {why}", s.as_u16())));
            }
        }
        if body["resourceType"] != "Bundle" {
            found.push(body);
            continue;
        }
        next = body["link"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|l| l["relation"] == "next")
            .and_then(|l| l["url"].as_str())
            .and_then(|u| u.find(fhir_base).map(|at| u[at..].to_string()));
        if let Some(entries) = body["entry"].as_array_mut() {
            found.extend(entries.iter_mut().map(|e| e["resource"].take()));
        }
    }
    Ok(Read::Resources(found))
}

/// One in-process read as the exporting user.
async fn read(router: &axum::Router, user: &str, path: &str) -> ApiResult<(StatusCode, Value)> {
    let req = Request::builder()
        .uri(path)
        .header(header::HOST, "localhost")
        .extension(ActingAs(user.to_string()))
        .body(Body::empty())
        .map_err(ApiError::internal)?;
    let res = tower::ServiceExt::oneshot(router.clone(), req)
        .await
        .map_err(ApiError::internal)?;
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 256 << 20)
        .await
        .map_err(ApiError::internal)?;
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// Writes the buffered resources as the type's next file, with the record listing it;
/// answers false if the export was deleted meanwhile.
async fn close(state: &Arc<AppState>, id: &str, out: &mut Output) -> ApiResult<bool> {
    let file = ExportFile {
        kind: out.kind.clone(),
        part: out.part,
        count: out.count,
    };
    let bytes = std::mem::take(&mut out.buf);
    out.part += 1;
    out.count = 0;
    let progress = format!("{} file {}", file.kind, file.part + 1);
    record(state, id, progress, Some((file, bytes))).await
}

/// Records how far the export is; answers false if it was deleted meanwhile.
async fn note_progress(state: &Arc<AppState>, id: &str, progress: &str) -> ApiResult<bool> {
    record(state, id, progress.to_string(), None).await
}

/// Writes the export's progress, with a finished file when there is one, in one commit;
/// answers false if the export was deleted meanwhile.
async fn record(
    state: &Arc<AppState>,
    id: &str,
    progress: String,
    file: Option<(ExportFile, Vec<u8>)>,
) -> ApiResult<bool> {
    let st = state.clone();
    let id = id.to_string();
    blocking(move || {
        let Some(mut r) = store::get(&st.store, &id)? else {
            return Ok(false);
        };
        r.progress = progress;
        r.updated = datetime_key(Utc::now());
        match file {
            Some((file, bytes)) => {
                r.files.push(file.clone());
                store::put_with_file(&st.store, &r, &file, &bytes)?;
            }
            None => store::put(&st.store, &r)?,
        }
        Ok(true)
    })
    .await
}

/// The CapabilityStatement's system-level operations.
pub fn system_operations() -> Value {
    json!([
        {"name": "export", "definition": "http://hl7.org/fhir/uv/bulkdata/OperationDefinition/export"}
    ])
}

/// The CapabilityStatement's operations on the Patient type.
pub fn patient_operations() -> Value {
    json!([
        {"name": "export", "definition": "http://hl7.org/fhir/uv/bulkdata/OperationDefinition/patient-export"},
        {"name": "everything", "definition": "http://hl7.org/fhir/OperationDefinition/Patient-everything"}
    ])
}

/// The CapabilityStatement's operations on the Group type.
pub fn group_operations() -> Value {
    json!([
        {"name": "export", "definition": "http://hl7.org/fhir/uv/bulkdata/OperationDefinition/group-export"}
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_closed_before_a_resource_would_take_it_past_its_limit() {
        let mut out = Output {
            kind: "Observation".into(),
            part: 0,
            count: 0,
            buf: Vec::new(),
        };
        assert!(
            out.takes(30, 10),
            "an empty file takes even a resource over the limit"
        );
        out.buf = vec![b'x'; 6];
        assert!(out.takes(4, 10));
        assert!(!out.takes(5, 10));
        // Under the 8 MiB that a value's run of pages would otherwise round up from.
        const { assert!(FILE_LIMIT < 8 << 20) };
    }
}
