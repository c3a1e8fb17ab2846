//! `GET patientdocuments/patientIdSticker?patientUuid=…[&inline=false]`, as the patient
//! documents module answers it: the sticker as `application/pdf`, shown in the browser
//! (`inline`, the default) or downloaded as `patientIdSticker.pdf`. Privileges: Get
//! Patients and `App: Can generate a Patient Identity Sticker`. No `patientUuid`: 400; a
//! patient nobody registered: 404.

use crate::domains::document::Sticker;
use crate::http::AppState;
use crate::http::answer::flag;
use crate::http::error::{ApiError, ApiResult};
use crate::http::{Caller, QueryPairs, blocking, param};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The privilege the module (and the O3 action that prints) asks for.
pub const PRINT_STICKER: &str = "App: Can generate a Patient Identity Sticker";

pub async fn patient_id_sticker(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patients", PRINT_STICKER])?;
    let patient = param(&query, "patientUuid")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| ApiError::BadRequest("The patientUuid parameter is required".into()))?
        .to_string();
    let inline = flag(&query, "inline").unwrap_or(true);
    let st = state.clone();
    let record = blocking(move || Ok(st.store.patient(&patient)?))
        .await?
        .ok_or(ApiError::NotFound)?;
    let clinic = state.clinic();
    let catalog = &clinic.catalog;
    let facility = caller
        .session
        .as_ref()
        .and_then(|s| s.location.as_deref())
        .and_then(|start| {
            clinic
                .visit_location_tag()
                .and_then(|tag| catalog.location_or_ancestor_tagged(start, &tag))
                .or_else(|| catalog.location(start))
        })
        .map(|l| l.name.clone());
    let sticker = Sticker::from_record(
        &record,
        |t| {
            catalog
                .identifier_type(t)
                .map_or_else(|| t.to_string(), |t| t.name.clone())
        },
        facility,
        crate::wire::today(),
        caller.locale(catalog).starts_with("fr"),
    );
    let disposition = if inline { "inline" } else { "attachment" };
    let mut res = (StatusCode::OK, sticker.pdf()).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/pdf"),
    );
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!("{disposition}; filename=\"patientIdSticker.pdf\""))
            .expect("an ASCII header value"),
    );
    // A patient's details: kept by no cache between her and the printer.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(res)
}

pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new().route(
        &paths.rest("/patientdocuments/patientIdSticker"),
        get(patient_id_sticker),
    )
}
