//! `attachment` over REST, in the attachments module's wire shapes: a multipart upload
//! (`file`, `patient`, `fileCaption`, optional `visit`, `encounter`, `base64Content` for a
//! camera's picture), a patient's list, one attachment, its bytes, void and purge.
//! Privileges: Get Observations to read (an attachment is a complex observation in
//! OpenMRS), Add Observations to upload, Delete Observations to void, Purge Observations to
//! purge.

use crate::domains::attachment::{AttachmentRecord, extension, sniff, store};
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, rep_of};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, render};
use crate::http::{Caller, QueryPairs, blocking, param};
use crate::store::record::{Audit, Voiding};
use crate::wire::{datetime_key, wire_datetime};
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// OpenMRS's default for `attachments.maxUploadFileSize`, in MB, when no setting names one.
const DEFAULT_MAX_MB: f64 = 1.2;

pub struct AttachmentRes(pub AttachmentRecord);

impl Resource for AttachmentRes {
    fn alias(&self) -> &'static str {
        "attachment"
    }
    fn version(&self) -> &'static str {
        "1.10"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.filename.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    // The module answers the same properties whatever the representation.
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("dateTime", Rep::Default),
            ("filename", Rep::Default),
            ("comment", Rep::Default),
            ("bytesMimeType", Rep::Default),
            ("bytesContentFamily", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("dateTime", Rep::Default),
            ("filename", Rep::Default),
            ("comment", Rep::Default),
            ("bytesMimeType", Rep::Default),
            ("bytesContentFamily", Rep::Default),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let a = &self.0;
        Some(match name {
            "dateTime" => wire_datetime(&a.datetime),
            "filename" => json!(a.filename),
            "comment" => json!(a.caption.clone().unwrap_or_default()),
            "bytesMimeType" => json!(a.mime_type),
            "bytesContentFamily" => json!(a.content_family()),
            "patient" => json!({"uuid": a.patient}),
            "visit" => a.visit.as_ref().map_or(Value::Null, |v| json!({"uuid": v})),
            "encounter" => a
                .encounter
                .as_ref()
                .map_or(Value::Null, |e| json!({"uuid": e})),
            "voided" => json!(a.voiding.voided),
            "auditInfo" => audit_info(&a.audit, ctx),
            _ => return None,
        })
    }
}

/// The largest upload allowed, in bytes (`attachments.maxUploadFileSize`, in MB).
fn max_bytes(state: &AppState) -> u64 {
    let mb = state
        .setting("attachments.maxUploadFileSize")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|mb| mb.is_finite() && *mb > 0.0)
        .unwrap_or(DEFAULT_MAX_MB);
    (mb * 1024.0 * 1024.0) as u64
}

/// The extensions allowed (`attachments.allowedFileExtensions`); empty allows any.
fn allowed_extensions(state: &AppState) -> Vec<String> {
    state
        .setting("attachments.allowedFileExtensions")
        .unwrap_or_default()
        .split(',')
        .map(|e| e.trim().trim_start_matches('.').to_lowercase())
        .filter(|e| !e.is_empty())
        .collect()
}

/// What a multipart upload carried.
#[derive(Default)]
struct Upload {
    patient: Option<String>,
    visit: Option<String>,
    encounter: Option<String>,
    caption: Option<String>,
    filename: Option<String>,
    part_type: Option<String>,
    content: Vec<u8>,
    base64_content: Option<String>,
}

fn too_large() -> ApiError {
    ApiError::BadRequest("The file exceeds the maximum size".into())
}

/// Reads the parts, stopping as soon as the file passes `limit` (the body is read as it
/// comes, never held whole beyond the limit).
async fn read_upload(mut parts: Multipart, limit: u64) -> ApiResult<Upload> {
    let bad = |e: axum::extract::multipart::MultipartError| {
        ApiError::BadRequest(format!("The upload could not be read: {}", e.body_text()))
    };
    let mut up = Upload::default();
    let mut count = 0;
    while let Some(mut part) = parts.next_field().await.map_err(bad)? {
        count += 1;
        if count > 32 {
            return Err(ApiError::BadRequest(
                "Too many parts in an attachment upload".into(),
            ));
        }
        let name = part.name().unwrap_or_default().to_string();
        match name.as_str() {
            "file" => {
                up.filename = part.file_name().map(str::to_string);
                up.part_type = part.content_type().map(str::to_string);
                while let Some(chunk) = part.chunk().await.map_err(bad)? {
                    if (up.content.len() + chunk.len()) as u64 > limit {
                        return Err(too_large());
                    }
                    up.content.extend_from_slice(&chunk);
                }
            }
            "base64Content" => {
                // A data URI holds the file base64-encoded: a third larger.
                let mut text = Vec::new();
                while let Some(chunk) = part.chunk().await.map_err(bad)? {
                    if (text.len() + chunk.len()) as u64 > limit / 3 * 4 + 1024 {
                        return Err(too_large());
                    }
                    text.extend_from_slice(&chunk);
                }
                up.base64_content = Some(String::from_utf8_lossy(&text).into_owned());
            }
            _ => {
                let mut text = Vec::new();
                while let Some(chunk) = part.chunk().await.map_err(bad)? {
                    if text.len() + chunk.len() > 64 * 1024 {
                        return Err(ApiError::BadRequest(format!("The part {name} is too long")));
                    }
                    text.extend_from_slice(&chunk);
                }
                let text = String::from_utf8_lossy(&text).trim().to_string();
                let value = (!text.is_empty()).then_some(text);
                match name.as_str() {
                    "patient" => up.patient = value,
                    "visit" => up.visit = value,
                    "encounter" => up.encounter = value,
                    "fileCaption" => up.caption = value,
                    // Read and not kept, as the module keeps them only for its own forms.
                    "provider" | "instructions" | "formFieldNamespace" | "formFieldPath" => {}
                    other => {
                        return Err(ApiError::BadRequest(format!(
                            "Unknown part {other} in an attachment upload"
                        )));
                    }
                }
            }
        }
    }
    Ok(up)
}

/// `POST attachment` (multipart/form-data), answered 201 with `{uuid, comment, obsDatetime}`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    parts: Multipart,
) -> ApiResult<Response> {
    caller.require(&["Add Observations"])?;
    let limit = max_bytes(&state);
    let mut up = read_upload(parts, limit).await?;
    if let Some(uri) = up.base64_content.take() {
        // "data:image/png;base64,…" from the camera: it replaces the (empty) file.
        let (head, data) = uri
            .split_once(',')
            .ok_or_else(|| ApiError::BadRequest("base64Content is not a data URI".into()))?;
        up.part_type = head
            .strip_prefix("data:")
            .and_then(|h| h.split(';').next())
            .map(str::to_string);
        up.content = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|_| ApiError::BadRequest("base64Content is not base64".into()))?;
        if up.content.len() as u64 > limit {
            return Err(too_large());
        }
    }
    let patient = up.patient.clone().ok_or_else(|| {
        ApiError::BadRequest(
            "A patient parameter must be provided when uploading an attachment.".into(),
        )
    })?;
    let filename = up
        .filename
        .clone()
        .filter(|f| !f.trim().is_empty())
        .ok_or_else(|| {
            ApiError::BadRequest("The upload has no file part with a file name".into())
        })?;
    if up.content.is_empty() {
        return Err(ApiError::BadRequest("The file is empty".into()));
    }
    let ext = extension(&filename);
    let allowed = allowed_extensions(&state);
    if !allowed.is_empty() && !allowed.contains(&ext) {
        return Err(ApiError::BadRequest(format!(
            "The extension {ext} is not valid"
        )));
    }
    // What the bytes are, not what the name or the browser says.
    let mime_type = match sniff(&up.content) {
        Some((mime, exts)) => {
            if !allowed.is_empty() && !exts.iter().any(|e| allowed.iter().any(|a| a == e)) {
                return Err(ApiError::BadRequest(format!(
                    "The file content type {mime} is not allowed"
                )));
            }
            if !ext.is_empty() && !exts.contains(&ext.as_str()) {
                return Err(ApiError::BadRequest("The file has invalid content".into()));
            }
            mime.to_string()
        }
        None if allowed.is_empty() => up
            .part_type
            .clone()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "application/octet-stream".into()),
        None => {
            return Err(ApiError::BadRequest(
                "The file content type application/octet-stream is not allowed".into(),
            ));
        }
    };
    let now = chrono::Utc::now();
    let record = AttachmentRecord {
        v: 1,
        uuid: crate::store::record::new_uuid(),
        patient,
        visit: up.visit.clone(),
        encounter: up.encounter.clone(),
        filename: filename.trim().to_string(),
        caption: up.caption.clone(),
        mime_type,
        datetime: datetime_key(now),
        size: up.content.len() as u64,
        sha256: hex(&Sha256::digest(&up.content)),
        audit: Audit::new(&caller.user_uuid(), now),
        voiding: Voiding::default(),
    };
    let content = up.content;
    let st = state.clone();
    let record = blocking(move || {
        check_references(&st, &record)?;
        store::create_with_bytes(&st.store, &record, &content)?;
        Ok(record)
    })
    .await?;
    Ok(crate::http::json(
        StatusCode::CREATED,
        json!({"uuid": record.uuid, "comment": record.caption.clone().unwrap_or_default(),
               "obsDatetime": wire_datetime(&record.datetime)}),
    ))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The patient exists; a visit and an encounter, when named, are that patient's, and the
/// encounter belongs to the visit.
fn check_references(state: &AppState, a: &AttachmentRecord) -> ApiResult<()> {
    match state.store.patient(&a.patient)? {
        Some(p) if !p.voided => {}
        _ => {
            return Err(ApiError::BadRequest(format!(
                "The patient {} does not exist",
                a.patient
            )));
        }
    }
    if let Some(v) = &a.visit {
        match crate::domains::visit::store::get(&state.store, v)? {
            Some(visit) if visit.patient == a.patient => {}
            _ => {
                return Err(ApiError::BadRequest(format!(
                    "The visit {v} is not one of the patient's"
                )));
            }
        }
    }
    if let Some(e) = &a.encounter {
        match crate::domains::encounter::store::encounter(&state.store, e)? {
            Some(enc) if enc.patient == a.patient => {
                if a.visit.is_some() && enc.visit != a.visit {
                    return Err(ApiError::BadRequest(
                        "The specified encounter does not belong to the provided visit, upload aborted."
                            .into(),
                    ));
                }
            }
            _ => {
                return Err(ApiError::BadRequest(format!(
                    "The encounter {e} is not one of the patient's"
                )));
            }
        }
    }
    Ok(())
}

/// `GET attachment?patient=…[&includeEncounterless=…][&visit=…][&encounter=…][&includeVoided=true]`,
/// newest first.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let patient = param(&query, "patient")
        .filter(|p| !p.is_empty())
        .ok_or_else(|| {
            ApiError::BadRequest(
                "A patient parameter must be provided when searching the attachments.".into(),
            )
        })?
        .to_string();
    let include_voided = flag(&query, "includeVoided").unwrap_or(false);
    let encounterless = param(&query, "includeEncounterless").map(str::to_lowercase);
    let visit = param(&query, "visit").map(str::to_string);
    let encounter = param(&query, "encounter").map(str::to_string);
    let st = state.clone();
    let found =
        blocking(move || Ok(store::of_patient(&st.store, &patient, include_voided)?)).await?;
    let items: Vec<AttachmentRes> = found
        .into_iter()
        .filter(|a| match encounterless.as_deref() {
            Some("only") => a.encounter.is_none(),
            Some("false") => a.encounter.is_some(),
            _ => true,
        })
        .filter(|a| visit.as_ref().is_none_or(|v| a.visit.as_ref() == Some(v)))
        .filter(|a| {
            encounter
                .as_ref()
                .is_none_or(|e| a.encounter.as_ref() == Some(e))
        })
        .map(AttachmentRes)
        .collect();
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let paging = Paging::from_query(&query)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let total = items.len();
    let results = items
        .iter()
        .skip(paging.start)
        .take(paging.limit)
        .map(|a| render(a, &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(crate::http::ok(paging.answer(
        results,
        paging.start.saturating_add(paging.limit) < total,
        paging.total_count.then_some(total),
        &caller.request_url(&state, "/attachment", &query),
    )))
}

/// `GET attachment/{uuid}`.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let a = store::get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &AttachmentRes(a),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `GET attachment/{uuid}/bytes[?view=…]`: the file, with the module's headers
/// (`Content-Family`, `File-Name`, `File-Ext`). There are no thumbnails: every view is the
/// original. The browser asks with its session cookie (an `<img>` or `<iframe>`).
pub async fn bytes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let st = state.clone();
    let (a, content) = blocking(move || {
        let a = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let content = store::bytes(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        Ok((a, content))
    })
    .await?;
    let header_value = |s: &str| {
        HeaderValue::from_str(s).unwrap_or_else(|_| HeaderValue::from_static("attachment"))
    };
    // A name the header cannot carry as it is (accents) goes percent-encoded.
    let name: String = a
        .filename
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b".-_ ".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let mut res = (StatusCode::OK, content).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, header_value(&a.mime_type));
    h.insert("Content-Family", header_value(a.content_family()));
    h.insert("File-Name", header_value(&name));
    h.insert("File-Ext", header_value(&extension(&a.filename)));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    // Never run as a page of this site, whatever it holds.
    h.insert(
        "Content-Security-Policy",
        HeaderValue::from_static(
            "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'",
        ),
    );
    Ok(res)
}

/// `DELETE attachment/{uuid}[?reason=…]` voids it; `purge=true` removes it and its bytes.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let purge = param(&query, "purge").is_some_and(|v| v != "false");
    caller.require(&[if purge {
        "Purge Observations"
    } else {
        "Delete Observations"
    }])?;
    let reason = param(&query, "reason")
        .unwrap_or("REST web service")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut a = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if purge {
            store::purge(&st.store, &a)?;
        } else if !a.voiding.voided {
            a.voiding.void(&user, chrono::Utc::now(), &reason);
            store::put(&st.store, &a)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/attachment"),
            get(crate::domains::attachment::rest::search)
                // The upload enforces `attachments.maxUploadFileSize` itself, part by part.
                .post(crate::domains::attachment::rest::create)
                .layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route(
            &paths.rest("/attachment/{uuid}"),
            get(crate::domains::attachment::rest::read)
                .delete(crate::domains::attachment::rest::delete),
        )
        .route(
            &paths.rest("/attachment/{uuid}/bytes"),
            get(crate::domains::attachment::rest::bytes),
        )
}
