//! The application: one flat router with full paths over every domain's and the content's
//! handlers (the request kernel they use is `http`), and what spans the whole application:
//! start-up, health, backups, reload, the EMR API's resources, FHIR's CapabilityStatement
//! and bulk export.
//!
//! Privileges each endpoint requires are listed in `docs/api.md`.

pub mod audit;
pub mod backup;
pub mod emrapi;
pub mod export;
pub mod fhir;
pub mod health;
pub mod jobs;
pub mod reload;
pub mod start;

use crate::domains::account::user;
use crate::domains::dispense::fhir as dispense_fhir;
use crate::domains::encounter::fhir as clinical_fhir;
use crate::domains::patient::rest as patient;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::{edge, spa};
use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use fhir as fhir_types;
use std::sync::Arc;

/// The whole application, for `axum::serve` and for tests (`oneshot`).
///
/// One flat router with full paths: nesting routers costs a prefix strip and a clone of
/// the nested router on every request, about a tenth of a small read's throughput.
pub fn app(state: Arc<AppState>) -> Router {
    let app_path = state.config.app_path.clone();
    let rest = |p: &str| format!("{app_path}/ws/rest/v1{p}");
    let fhir = |p: &str| format!("{app_path}/ws/fhir2/R4{p}");
    let top = |p: &str| format!("{app_path}{p}");
    let paths = crate::http::Paths::new(&app_path);
    let routes = Router::new()
        .merge(crate::content::routes(&paths))
        .merge(crate::domains::routes(&paths))
        .route(
            &rest("/patient/{uuid}/identifier"),
            get(user::patient_identifiers).post(patient::add_identifier),
        )
        .route(
            &rest("/person/{uuid}"),
            get(user::person).post(patient::update_person_resource),
        )
        .route(&rest("/emrapi/configuration"), get(emrapi::configuration))
        .route(
            &rest("/emrapi/patient/{uuid}/visitWithDiagnosesAndNotes"),
            get(emrapi::visits_with_diagnoses_and_notes),
        )
        .route(
            &rest("/emrapi/patient/{uuid}/visit"),
            get(emrapi::visits_with_diagnoses_and_notes),
        )
        .route(
            &rest("/emrapi/locationThatSupportsVisits"),
            get(emrapi::location_that_supports_visits),
        )
        .route(&rest("/initializer/reload"), post(reload::reload))
        .route(&rest("/backup"), get(backup::backup))
        .route(&rest("/audit"), get(audit::search))
        .route(
            &fhir("/Encounter"),
            get(encounter_search).post(clinical_fhir::create_encounter),
        )
        .route(
            &fhir("/Patient"),
            get(export::patient_search).post(crate::domains::patient::fhir_write::create),
        )
        .route(&fhir("/metadata"), get(fhir_types::metadata))
        .route(&fhir("/$export"), get(export::system))
        .route(&fhir("/Patient/$export"), get(export::patients))
        .route(&fhir("/Patient/{id}/$everything"), get(export::everything))
        .route(&fhir("/Group/{id}/$export"), get(export::group))
        .route(
            &fhir("/$export-poll-status"),
            get(export::status).delete(export::delete),
        )
        .route(&fhir("/$export-file/{export}/{name}"), get(export::file))
        .route(&fhir("/{*rest}"), get(crate::http::fhir::other))
        .route(&top("/health/started"), get(health::started))
        .route(&top("/health/alive"), get(health::alive))
        .route(&top("/login.htm"), get(health::login_page))
        .route(&top("/frontend/config.json"), get(spa::frontend_config))
        .route(&top("/frontend/logo.png"), get(spa::frontend_logo))
        .route(&top("/spa"), get(spa::redirect_to_root))
        .route(&top("/spa/"), get(spa::index))
        .route(&top("/spa/{*path}"), get(spa::file))
        .route("/", get(spa::site_root))
        .method_not_allowed_fallback(method_not_allowed)
        // Under /ws/fhir2: unknown types and search parameters, and errors as
        // OperationOutcomes (the other paths pass through untouched).
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            fhir_types::outcomes,
        ))
        // Each request's changes are recorded in the audit trail under its caller.
        .layer(axum::middleware::from_fn(with_author));
    let routes: Router = routes.with_state(state);
    // A path that matched nothing is tried once more normalised (repeated slashes, an API
    // path's trailing slash): only such requests pay for it, and routing stays one flat table.
    let rest_prefix: Arc<str> = rest("/").into();
    let prefix = rest_prefix.clone();
    let retry = routes
        .clone()
        .fallback(move |req: Request| unmatched(req, prefix.clone()));
    routes
        .fallback_service(tower::service_fn(move |mut req: Request| {
            let retry = retry.clone();
            let prefix = rest_prefix.clone();
            async move {
                if edge::normalise_path(&mut req) {
                    tower::ServiceExt::oneshot(retry, req).await
                } else {
                    Ok(unmatched(req, prefix).await.into_response())
                }
            }
        }))
        .layer(edge::EdgeLayer::new(&app_path))
}

/// What no route serves: under the REST prefix, OpenMRS's unknown-resource error naming
/// the resource; elsewhere, not found.
async fn unmatched(req: Request, rest_prefix: Arc<str>) -> ApiError {
    match req.uri().path().strip_prefix(&*rest_prefix) {
        Some(rest) => {
            let name = rest.trim_start_matches('/').split('/').next().unwrap_or("");
            ApiError::UnknownResource(name.to_string())
        }
        None => ApiError::NotFound,
    }
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// `GET Encounter`: fhir2's named query `encountersWithMedicationRequests` (the pharmacy's
/// worklist, the dispensing domain's) or a search of encounters.
async fn encounter_search(
    state: axum::extract::State<Arc<AppState>>,
    caller: crate::http::Caller,
    crate::http::QueryPairs(query): crate::http::QueryPairs,
) -> crate::http::error::ApiResult<axum::response::Response> {
    if crate::http::param(&query, "_query") == Some("encountersWithMedicationRequests") {
        return dispense_fhir::encounters_with_requests(state.0, caller, query).await;
    }
    clinical_fhir::encounters(state, caller, crate::http::QueryPairs(query)).await
}

/// Enters the request's task with an empty author, which the `Caller` extractor names once
/// the caller is authenticated (`store::audit`).
async fn with_author(req: Request, next: axum::middleware::Next) -> axum::response::Response {
    crate::store::audit::acting(next.run(req)).await
}
