//! Routes and the request pipeline: authentication (cookie or HTTP Basic), the caller's
//! privileges and locale, JSON bodies; request ids and logging in `edge`. One module per
//! resource.
//!
//! Privileges each endpoint requires are listed in `docs/api.md`.

pub mod account;
pub mod addresshierarchy;
pub mod backup;
pub mod concept;
pub mod edge;
pub mod emrapi;
pub mod fhir;
pub mod form;
pub mod health;
pub mod idgen;
pub mod location;
pub mod metadata;
pub mod patient;
pub mod reference_range;
pub mod reload;
pub mod session;
pub mod spa;
pub mod systemsetting;
pub mod user;

use crate::AppState;
use crate::auth::{self, Grants};
use crate::catalog::Catalog;
use crate::domains::allergy::fhir as allergy_fhir;
use crate::domains::allergy::rest as allergy;
use crate::domains::appointment::rest as appointment;
use crate::domains::attachment::rest as attachment;
use crate::domains::bed::rest as bed;
use crate::domains::bill::rest as bill;
use crate::domains::cohort::rest as cohort;
use crate::domains::condition::fhir as condition_fhir;
use crate::domains::condition::rest as condition;
use crate::domains::diagnosis::rest as diagnosis;
use crate::domains::dispense::fhir as dispense_fhir;
use crate::domains::encounter::fhir as clinical_fhir;
use crate::domains::encounter::rest as encounter;
use crate::domains::immunization::fhir as immunization_fhir;
use crate::domains::inpatient::rest as inpatient;
use crate::domains::order::fhir as order_fhir;
use crate::domains::order::formulary;
use crate::domains::order::rest as order;
use crate::domains::programme::rest as programme;
use crate::domains::provider::rest as provider;
use crate::domains::queue::rest as queue;
use crate::domains::queue::room as queue_room;
use crate::domains::relationship::rest as relationship;
use crate::domains::role::rest as role;
use crate::domains::visit::rest as visit;
use crate::error::{ApiError, ApiResult, json_headers};
use crate::repr::{Ctx, RequestUrl};
use crate::store::UserRecord;
use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde_json::Value;
use std::sync::Arc;

pub const SESSION_COOKIE: &str = "JSESSIONID";

/// The whole application, for `axum::serve` and for tests (`oneshot`).
///
/// One flat router with full paths: nesting routers costs a prefix strip and a clone of
/// the nested router on every request, about a tenth of a small read's throughput.
pub fn app(state: Arc<AppState>) -> Router {
    let app_path = state.config.app_path.clone();
    let rest = |p: &str| format!("{app_path}/ws/rest/v1{p}");
    let fhir = |p: &str| format!("{app_path}/ws/fhir2/R4{p}");
    let top = |p: &str| format!("{app_path}{p}");
    let routes = Router::new()
        .route(
            &rest("/session"),
            get(session::get)
                .post(session::post)
                .delete(session::delete),
        )
        .route(
            &rest("/patient"),
            get(patient::search).post(patient::create),
        )
        .route(
            &rest("/patient/"),
            get(patient::search).post(patient::create),
        )
        .route(
            &rest("/patient/{uuid}"),
            get(patient::read)
                .post(patient::update)
                .delete(patient::delete),
        )
        .route(
            &rest("/patient/{uuid}/identifier"),
            get(user::patient_identifiers).post(patient::add_identifier),
        )
        .route(
            &rest("/patient/{uuid}/identifier/{identifier}"),
            post(patient::update_identifier).delete(patient::delete_identifier),
        )
        .route(
            &rest("/patient/{uuid}/allergy"),
            get(allergy::list).post(allergy::create),
        )
        .route(
            &rest("/patient/{uuid}/allergy/{allergy}"),
            get(allergy::read)
                .post(allergy::update)
                .delete(allergy::delete),
        )
        .route(&rest("/person"), get(patient::person_search))
        .route(
            &rest("/person/{uuid}/{kind}/{item}"),
            delete(patient::delete_person_item),
        )
        .route(
            &rest("/person/{uuid}"),
            get(user::person).post(patient::update_person_resource),
        )
        .route(
            &rest("/person/{uuid}/attribute"),
            get(user::person_attributes),
        )
        .route(
            &rest("/obstree"),
            get(crate::domains::encounter::obstree::obstree),
        )
        .route(&rest("/user"), get(account::search).post(account::create))
        .route(
            &rest("/user/{uuid}"),
            get(user::read)
                .post(account::update)
                .delete(account::delete),
        )
        .route(&rest("/password"), post(account::change_own))
        .route(&rest("/password/{uuid}"), post(account::reset))
        .route(
            &rest("/role"),
            get(role::list_roles).post(role::create_role),
        )
        .route(
            &rest("/role/{uuid}"),
            get(role::read_role)
                .post(role::update_role)
                .delete(role::delete_role),
        )
        .route(
            &rest("/privilege"),
            get(role::list_privileges).post(role::create_privilege),
        )
        .route(&rest("/privilege/{uuid}"), get(role::read_privilege))
        .route(&rest("/module"), get(metadata::modules))
        .route(&rest("/addresstemplate"), get(metadata::address_template))
        .route(
            &rest("/patientidentifiertype"),
            get(metadata::identifier_types),
        )
        .route(
            &rest("/patientidentifiertype/{uuid}"),
            get(metadata::identifier_type),
        )
        .route(
            &rest("/personattributetype"),
            get(metadata::attribute_types),
        )
        .route(
            &rest("/personattributetype/{uuid}"),
            get(metadata::attribute_type),
        )
        .route(
            &rest("/relationshiptype"),
            get(metadata::relationship_types),
        )
        .route(&rest("/visittype"), get(metadata::visit_types))
        .route(&rest("/encountertype"), get(metadata::encounter_types))
        .route(
            &rest("/queue"),
            get(metadata::queues).post(metadata::queue_write),
        )
        .route(
            &rest("/queue/{uuid}"),
            get(metadata::queue)
                .post(metadata::queue_write)
                .delete(metadata::queue_write),
        )
        .route(
            &rest("/queue-room"),
            get(queue_room::search).post(queue_room::create),
        )
        .route(
            &rest("/queue-room/{uuid}"),
            get(queue_room::read)
                .post(queue_room::update)
                .delete(queue_room::delete),
        )
        .route(
            &rest("/metadatamapping/termmapping"),
            get(metadata::term_mappings),
        )
        .route(
            &rest("/queue-entry"),
            get(queue::search).post(queue::create),
        )
        .route(
            &rest("/queue-entry/transition"),
            post(queue::transition).delete(queue::undo_transition),
        )
        .route(
            &rest("/queue-entry/{uuid}"),
            get(queue::read).post(queue::update).delete(queue::delete),
        )
        .route(&rest("/visit-queue-entry"), post(queue::create_for_visit))
        .route(
            &rest("/queue/{queue}/entry/{uuid}"),
            post(queue::update_in_queue),
        )
        .route(&rest("/queue-entry-number"), get(queue::number))
        .route(&rest("/queue-entry-metrics"), get(queue::metrics))
        .route(&rest("/queue-metrics"), get(queue::queue_metrics))
        .route(&rest("/queueutil/assignticket"), post(queue::assign_ticket))
        .route(
            &rest("/queueutil/active-tickets"),
            get(queue::active_tickets),
        )
        .route(&rest("/visit"), get(visit::search).post(visit::create))
        .route(
            &rest("/visit/{uuid}"),
            get(visit::read).post(visit::update).delete(visit::delete),
        )
        .route(
            &rest("/visit/{uuid}/attribute"),
            get(visit::attributes).post(visit::attribute_create),
        )
        .route(
            &rest("/visit/{uuid}/attribute/{attribute}"),
            get(visit::attribute_read)
                .post(visit::attribute_update)
                .delete(visit::attribute_delete),
        )
        .route(&rest("/visittype/{uuid}"), get(visit::visit_type))
        .route(
            &rest("/patientdiagnoses"),
            get(diagnosis::search).post(diagnosis::create),
        )
        .route(
            &rest("/patientdiagnoses/{uuid}"),
            get(diagnosis::read)
                .post(diagnosis::update)
                .delete(diagnosis::delete),
        )
        .route(
            &rest("/condition"),
            get(condition::search).post(condition::create),
        )
        .route(
            &rest("/condition/{uuid}"),
            get(condition::read)
                .post(condition::update)
                .delete(condition::delete),
        )
        .route(&rest("/order"), get(order::search).post(order::create))
        .route(
            &rest("/order/{uuid}"),
            get(order::read).delete(order::delete),
        )
        .route(
            &rest("/order/{uuid}/fulfillerdetails"),
            post(order::fulfiller_details),
        )
        .route(&rest("/drug"), get(formulary::drugs))
        .route(&rest("/drug/{uuid}"), get(formulary::drug))
        .route(&rest("/orderfrequency"), get(formulary::frequencies))
        .route(&rest("/orderfrequency/{uuid}"), get(formulary::frequency))
        .route(&rest("/ordertype"), get(formulary::order_types))
        .route(&rest("/ordertype/{uuid}"), get(formulary::order_type))
        .route(&rest("/caresetting"), get(formulary::care_settings))
        .route(&rest("/caresetting/{uuid}"), get(formulary::care_setting))
        .route(
            &rest("/orderentryconfig"),
            get(formulary::order_entry_config),
        )
        .route(&rest("/program"), get(programme::programs))
        .route(&rest("/program/{uuid}"), get(programme::program))
        .route(
            &rest("/programenrollment"),
            get(programme::search).post(programme::create),
        )
        .route(
            &rest("/programenrollment/{uuid}"),
            get(programme::read)
                .post(programme::update)
                .delete(programme::delete),
        )
        .route(&rest("/visitattributetype"), get(visit::attribute_types))
        .route(
            &rest("/visitattributetype/{uuid}"),
            get(visit::attribute_type),
        )
        .route(
            &rest("/encounter"),
            get(encounter::search).post(encounter::create),
        )
        .route(
            &rest("/encounter/{uuid}"),
            get(encounter::read)
                .post(encounter::update)
                .delete(encounter::delete),
        )
        .route(
            &rest("/obs"),
            get(encounter::obs_search).post(encounter::obs_create),
        )
        .route(
            &rest("/obs/{uuid}"),
            get(encounter::obs_read)
                .post(encounter::obs_update)
                .delete(encounter::obs_delete),
        )
        .route(&rest("/encounterrole"), get(encounter::encounter_roles))
        .route(
            &rest("/encounterrole/{uuid}"),
            get(encounter::encounter_role),
        )
        .route(
            &rest("/provider"),
            get(provider::search).post(provider::create),
        )
        .route(
            &rest("/provider/{uuid}"),
            get(provider::read)
                .post(provider::update)
                .delete(provider::delete),
        )
        .route(
            &rest("/appointmentService/all/{rep}"),
            get(appointment::services),
        )
        .route(
            &rest("/appointmentService"),
            get(appointment::service)
                .post(appointment::service_write)
                .delete(appointment::service_write),
        )
        .route(&rest("/appointment/all"), get(appointment::for_date))
        .route(
            &rest("/appointment"),
            get(appointment::read_by_query).post(appointment::save),
        )
        .route(
            &rest("/appointment/search"),
            post(appointment::search_by_example),
        )
        .route(
            &rest("/appointment/appointmentSummary"),
            get(appointment::summary),
        )
        .route(
            &rest("/appointment/{uuid}/changeStatus"),
            post(appointment::change_status),
        )
        .route(
            &rest("/appointments"),
            get(appointment::for_date).post(appointment::create),
        )
        .route(&rest("/appointments/search"), post(appointment::search))
        .route(
            &rest("/appointments/conflicts"),
            post(appointment::conflicts),
        )
        .route(&rest("/appointments/{uuid}"), get(appointment::read))
        .route(
            &rest("/appointments/{uuid}/status-change"),
            post(appointment::change_status),
        )
        .route(
            &rest("/attachment"),
            get(attachment::search)
                // The upload enforces `attachments.maxUploadFileSize` itself, part by part.
                .post(attachment::create)
                .layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route(
            &rest("/attachment/{uuid}"),
            get(attachment::read).delete(attachment::delete),
        )
        .route(&rest("/attachment/{uuid}/bytes"), get(attachment::bytes))
        .route(
            &rest("/emrapi/inpatient/admission"),
            get(inpatient::search_admissions),
        )
        .route(
            &rest("/emrapi/inpatient/request"),
            get(inpatient::search_requests),
        )
        .route(&rest("/beds"), get(bed::patient_bed))
        .route(&rest("/beds/{id}"), post(bed::assign).delete(bed::unassign))
        .route(&rest("/bed"), get(bed::list_beds).post(bed::create_bed))
        .route(
            &rest("/bed/{uuid}"),
            get(bed::read_bed)
                .post(bed::update_bed)
                .delete(bed::delete_bed),
        )
        .route(
            &rest("/bedtype"),
            get(bed::bed_types).post(bed::create_bed_type),
        )
        .route(
            &rest("/bedtype/{uuid}"),
            get(bed::bed_type)
                .post(bed::update_bed_type)
                .delete(bed::delete_bed_type),
        )
        .route(
            &rest("/bedTag"),
            get(bed::bed_tags).post(bed::create_bed_tag),
        )
        .route(
            &rest("/bedTag/{uuid}"),
            get(bed::bed_tag)
                .post(bed::update_bed_tag)
                .delete(bed::delete_bed_tag),
        )
        .route(&rest("/bedTagMap"), post(bed::create_tag_map))
        .route(&rest("/bedTagMap/{uuid}"), delete(bed::delete_tag_map))
        .route(&rest("/admissionLocation"), get(bed::admission_locations))
        .route(
            &rest("/admissionLocation/{uuid}"),
            get(bed::admission_location),
        )
        .route(
            &rest("/billing/paymentMode"),
            get(bill::payment_modes).post(bill::metadata_write),
        )
        .route(
            &rest("/billing/cashPoint"),
            get(bill::cash_points).post(bill::metadata_write),
        )
        .route(
            &rest("/billing/billableService"),
            get(bill::billable_services).post(bill::metadata_write),
        )
        .route(
            &rest("/billing/cashierItemPrice"),
            post(bill::metadata_write),
        )
        .route(
            &rest("/billing/api/billable-service"),
            post(bill::metadata_write),
        )
        .route(
            &rest("/billing/{kind}/{uuid}"),
            get(bill::metadata_read)
                .post(bill::metadata_write)
                .delete(bill::metadata_write),
        )
        .route(&rest("/billing/bill"), get(bill::search).post(bill::create))
        .route(
            &rest("/billing/bill/{uuid}"),
            get(bill::read).post(bill::update).delete(bill::void),
        )
        .route(
            &rest("/billing/bill/{uuid}/payment"),
            get(bill::payments).post(bill::pay),
        )
        .route(
            &rest("/billing/billLineItem/{uuid}"),
            axum::routing::delete(bill::void_line_item),
        )
        .route(
            &rest("/billing/patientPaymentStatus/{uuid}"),
            get(bill::patient_payment_status),
        )
        .route(&rest("/billing/receipt"), get(bill::receipt))
        .route(
            &rest("/cohortm/cohorttype"),
            get(cohort::types).post(cohort::write_type),
        )
        .route(
            &rest("/cohortm/cohorttype/{uuid}"),
            get(cohort::read_type)
                .post(cohort::write_type)
                .delete(cohort::write_type),
        )
        .route(
            &rest("/cohortm/cohort"),
            get(cohort::search).post(cohort::create),
        )
        .route(
            &rest("/cohortm/cohort/{uuid}"),
            get(cohort::read)
                .post(cohort::update)
                .delete(cohort::delete),
        )
        .route(
            &rest("/cohortm/cohortmember"),
            get(cohort::member_search).post(cohort::member_create),
        )
        .route(
            &rest("/cohortm/cohortmember/{uuid}"),
            get(cohort::member_read)
                .post(cohort::member_update)
                .delete(cohort::member_delete),
        )
        .route(
            &rest("/relationship"),
            get(relationship::search).post(relationship::create),
        )
        .route(
            &rest("/relationship/{uuid}"),
            get(relationship::read)
                .post(relationship::update)
                .delete(relationship::delete),
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
        .route(&rest("/form"), get(form::search))
        .route(&rest("/form/{uuid}"), get(form::read))
        .route(&rest("/clobdata/{uuid}"), get(form::clob))
        .route(&rest("/o3/forms/{key}"), get(form::compiled))
        .route(&rest("/concept"), get(concept::search))
        .route(&rest("/conceptreferences"), post(concept::references))
        .route(
            &rest("/conceptreferencerange"),
            get(reference_range::search),
        )
        .route(&rest("/concept/{reference}"), get(concept::read))
        .route(&rest("/idgen/identifiersource"), get(idgen::sources))
        .route(
            &rest("/idgen/identifiersource/{uuid}/identifier"),
            post(idgen::generate),
        )
        .route(&rest("/idgen/autogenerationoption"), get(idgen::options))
        .route(&rest("/location"), get(location::list))
        .route(&rest("/location/{uuid}"), get(location::read))
        .route(
            &rest("/systemsetting"),
            get(systemsetting::list).post(systemsetting::create),
        )
        .route(
            &rest("/systemsetting/{name}"),
            get(systemsetting::read)
                .post(systemsetting::update)
                .delete(systemsetting::delete),
        )
        .route(&rest("/initializer/reload"), post(reload::reload))
        .route(&rest("/backup"), get(backup::backup))
        .route(&fhir("/Location"), get(fhir::locations))
        .route(&fhir("/Location/{id}"), get(fhir::location))
        .route(&fhir("/Patient/{id}"), get(fhir::patient))
        .route(&fhir("/Observation"), get(clinical_fhir::observations))
        .route(&fhir("/Observation/{id}"), get(clinical_fhir::observation))
        .route(&fhir("/Encounter"), get(clinical_fhir::encounters))
        .route(&fhir("/Encounter/{id}"), get(clinical_fhir::encounter))
        .route(
            &fhir("/Condition"),
            get(condition_fhir::search).post(condition_fhir::create),
        )
        .route(
            &fhir("/Condition/{id}"),
            get(condition_fhir::read)
                .put(condition_fhir::update)
                .delete(condition_fhir::delete),
        )
        .route(
            &fhir("/Immunization"),
            get(immunization_fhir::search).post(immunization_fhir::create),
        )
        .route(
            &fhir("/Immunization/{id}"),
            get(immunization_fhir::read)
                .put(immunization_fhir::update)
                .delete(immunization_fhir::delete),
        )
        .route(&fhir("/MedicationRequest"), get(order_fhir::search))
        .route(
            &fhir("/MedicationRequest/{id}"),
            get(order_fhir::read).patch(order_fhir::patch),
        )
        .route(&fhir("/Medication"), get(order_fhir::medications))
        .route(&fhir("/Medication/{id}"), get(order_fhir::medication))
        .route(
            &fhir("/MedicationDispense"),
            get(dispense_fhir::search).post(dispense_fhir::create),
        )
        .route(
            &fhir("/MedicationDispense/{id}"),
            get(dispense_fhir::read)
                .put(dispense_fhir::update)
                .delete(dispense_fhir::delete),
        )
        .route(&fhir("/AllergyIntolerance"), get(allergy_fhir::search))
        .route(&fhir("/AllergyIntolerance/{id}"), get(allergy_fhir::read))
        .route(&fhir("/ValueSet/{id}"), get(fhir::value_set))
        .route(&fhir("/{*rest}"), get(fhir::other))
        .route(&top("/health/started"), get(health::started))
        .route(&top("/health/alive"), get(health::alive))
        .route(&top("/login.htm"), get(health::login_page))
        .route(
            &top("/module/addresshierarchy/ajax/getOrderedAddressHierarchyLevels.form"),
            get(addresshierarchy::levels),
        )
        .route(
            &top("/module/addresshierarchy/ajax/getChildAddressHierarchyEntries.form"),
            get(addresshierarchy::children),
        )
        .route(
            &top("/module/addresshierarchy/ajax/getPossibleFullAddresses.form"),
            get(addresshierarchy::full_addresses),
        )
        .route(&top("/frontend/config.json"), get(health::frontend_config))
        .route(&top("/frontend/logo.png"), get(health::frontend_logo))
        .route(&top("/spa"), get(spa::redirect_to_root))
        .route(&top("/spa/"), get(spa::index))
        .route(&top("/spa/{*path}"), get(spa::file))
        .route("/", get(spa::site_root))
        .method_not_allowed_fallback(method_not_allowed);
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

/// Who is calling, established once per request by `authenticate`.
#[derive(Clone)]
pub struct Caller {
    pub user: Option<Arc<UserRecord>>,
    pub session_id: Option<String>,
    pub session: Option<auth::Session>,
    pub grants: Arc<Grants>,
    /// `scheme://host[:port]`
    pub origin: String,
}

impl Caller {
    /// 401 for anonymous callers, 403 when a privilege is missing.
    pub fn require(&self, privileges: &[&str]) -> ApiResult<()> {
        let names = || privileges.iter().map(|p| p.to_string()).collect();
        if self.user.is_none() {
            return Err(ApiError::Unauthenticated {
                privileges: names(),
            });
        }
        if privileges.iter().all(|p| self.grants.has(p)) {
            Ok(())
        } else {
            Err(ApiError::Forbidden {
                privileges: names(),
            })
        }
    }

    /// The uuid of the calling user, recorded as the author of what the request writes
    /// (handlers call it after `require`, so a user is there).
    pub fn user_uuid(&self) -> String {
        self.user
            .as_ref()
            .map(|u| u.uuid.clone())
            .unwrap_or_default()
    }

    /// The locale to display names in: the session's, the user's default, the content's
    /// `default_locale`; in OpenMRS form (`en_GB`).
    pub fn locale(&self, catalog: &Catalog) -> String {
        self.session
            .as_ref()
            .and_then(|s| s.locale.clone())
            .or_else(|| {
                self.user
                    .as_ref()
                    .and_then(|u| u.properties.get("defaultLocale").cloned())
            })
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| catalog.default_locale().to_string())
            .replace('-', "_")
    }

    pub fn ctx<'a>(&self, state: &'a AppState, catalog: &'a Catalog) -> Ctx<'a> {
        let locale = self.locale(catalog);
        let mut fallbacks = Vec::new();
        if let Some(d) = self
            .user
            .as_ref()
            .and_then(|u| u.properties.get("defaultLocale"))
        {
            fallbacks.push(d.replace('-', "_"));
        }
        fallbacks.push(catalog.default_locale().to_string());
        Ctx {
            base: format!("{}{}/ws/rest/v1", self.origin, state.config.app_path),
            locale,
            fallbacks,
            catalog,
            store: &state.store,
            access: &state.access,
            today: patient::today(),
            written: Default::default(),
        }
    }

    pub fn request_url(
        &self,
        state: &AppState,
        path: &str,
        query: &[(String, String)],
    ) -> RequestUrl {
        RequestUrl {
            base: format!("{}{}/ws/rest/v1", self.origin, state.config.app_path),
            path: path.into(),
            query: query.to_vec(),
        }
    }
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then(|| v.to_string())
        })
}

fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    use base64::Engine;
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let encoded = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, pass) = text.split_once(':')?;
    (!user.is_empty() && !pass.is_empty()).then(|| (user.to_string(), pass.to_string()))
}

/// `scheme://host[:port]` as the client sees it (honouring `X-Forwarded-*`).
fn origin(headers: &HeaderMap) -> String {
    let h = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.split(',').next().unwrap_or("").trim().to_string())
    };
    let scheme = h("x-forwarded-proto")
        .filter(|s| s == "http" || s == "https")
        .unwrap_or_else(|| "http".into());
    let mut host = h("x-forwarded-host")
        .or_else(|| h("host"))
        .unwrap_or_else(|| "localhost".into());
    if let Some(port) = h("x-forwarded-port")
        && !host.contains(':')
        && port.bytes().all(|b| b.is_ascii_digit())
        && !matches!(
            (scheme.as_str(), port.as_str()),
            ("http", "80") | ("https", "443")
        )
    {
        host = format!("{host}:{port}");
    }
    format!("{scheme}://{host}")
}

fn credentials_key(user: &str, pass: &str, stored_hash: &str) -> auth::CredentialsKey {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    for part in [user, pass, stored_hash] {
        digest.update(part.as_bytes());
        digest.update([0]);
    }
    digest.finalize().into()
}

/// Checks HTTP Basic credentials. Credentials verified before (and unchanged since) are
/// recognised from a digest without paying for argon2 again. New credentials are verified
/// once however many requests present them at the same moment (the others wait for that
/// one, then recognise them), and verifications of different credentials pass the
/// `PasswordGate`: as many at once as there are cores, a short queue, 503 past it.
async fn basic_login(
    state: &Arc<AppState>,
    name: &str,
    pass: &str,
    client: std::net::IpAddr,
) -> ApiResult<Option<Arc<UserRecord>>> {
    let recognised = |state: &AppState| -> ApiResult<Option<Arc<UserRecord>>> {
        let found = state.store.user_by_username_shared(name)?;
        Ok(found.filter(|u| {
            let key = credentials_key(name, pass, &u.password_hash);
            state.sessions.basic_verified(&key, &u.uuid) && u.locked_until.is_none() && !u.retired
        }))
    };
    if let Some(u) = recognised(state)? {
        return Ok(Some(u));
    }
    let same = state.password_gate.same_credentials(name, pass);
    let _only_one = same.lock().await;
    if let Some(u) = recognised(state)? {
        return Ok(Some(u));
    }
    let _turn = state
        .password_gate
        .enter(client)
        .await
        .map_err(|_| ApiError::Busy {
            message: "The server is busy checking passwords: try again in a moment",
            code: "emr.login.busy",
            retry_after_secs: 1,
        })?;
    // Another request with the same credentials may have verified them meanwhile.
    if let Some(u) = recognised(state)? {
        return Ok(Some(u));
    }
    let (st, n, p) = (state.clone(), name.to_string(), pass.to_string());
    let verified =
        tokio::task::spawn_blocking(move || auth::login(&st.store, st.lockout(), &n, &p))
            .await
            .map_err(ApiError::internal)??;
    Ok(verified.map(|u| {
        state
            .sessions
            .cache_basic(credentials_key(name, pass, &u.password_hash), &u.uuid);
        Arc::new(u)
    }))
}

/// Establishes the `Caller` of every handler that takes one: a live session cookie, else
/// HTTP Basic credentials, else anonymous. An extractor rather than a middleware, so
/// routes that need no caller (health, the login page) do not pay for it.
impl FromRequestParts<Arc<AppState>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Caller, ApiError> {
        let headers = &parts.headers;
        let mut user: Option<Arc<UserRecord>> = None;
        let mut session_id = None;
        let mut session = None;
        if let Some(id) = cookie(headers, SESSION_COOKIE)
            && let Some(s) = state.sessions.get(&id)
        {
            match state.store.user_shared(&s.user_uuid) {
                Ok(Some(u)) if !u.retired => {
                    user = Some(u);
                    session_id = Some(id);
                    session = Some(s);
                }
                Ok(_) => state.sessions.remove(&id),
                Err(e) => return Err(ApiError::from(e)),
            }
        }
        if user.is_none()
            && let Some((name, pass)) = basic_credentials(headers)
        {
            let peer = parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|c| c.0.ip());
            let client = crate::throttle::client_address(
                peer,
                headers.get("x-real-ip").and_then(|v| v.to_str().ok()),
                &state.config.trusted_proxies,
            );
            if let Some(wait) = state.login_throttle.wait(client) {
                return Err(ApiError::TooManyLogins {
                    retry_after_secs: wait.as_secs().max(1),
                });
            }
            let outcome = basic_login(state, &name, &pass, client).await;
            match &outcome {
                Ok(Some(_)) => state.login_throttle.succeeded(client),
                Ok(None) => state.login_throttle.failed(client),
                Err(_) => {}
            }
            user = outcome?;
        }
        let grants = match &user {
            Some(u) => auth::grants(u, &state.catalog.load(), &state.access.load()),
            None => Grants::default(),
        };
        Ok(Caller {
            user,
            session_id,
            session,
            grants: Arc::new(grants),
            origin: origin(headers),
        })
    }
}

/// The query string's pairs in order, percent-decoded (`+` as a space). Parsed directly:
/// axum's `Query` goes through serde and costs a few per cent of a small read.
pub struct QueryPairs(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<QueryPairs, Self::Rejection> {
        let pairs = parts
            .uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        Ok(QueryPairs(pairs))
    }
}

/// A JSON object body. Malformed JSON, non-objects and XML are client errors with an
/// OpenMRS error body; a body over the configured limit is 413.
pub struct JsonBody(pub serde_json::Map<String, Value>);

impl FromRequest<Arc<AppState>> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(
        req: Request<Body>,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_lowercase();
        if content_type.contains("xml") {
            return Err(ApiError::UnsupportedMediaType);
        }
        // A body that stops arriving would hold its connection's place for good.
        let read = axum::body::to_bytes(req.into_body(), state.config.max_body_bytes);
        let bytes = tokio::time::timeout(state.config.connections.body_timeout(), read)
            .await
            .map_err(|_| ApiError::RequestTimeout)?
            .map_err(|_| ApiError::PayloadTooLarge)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(serde_json::Map::new()));
        }
        // A body is JSON only when it says so (`application/json`, `…+json`): a form post or
        // plain text is refused rather than guessed at.
        let media = content_type.split(';').next().unwrap_or("").trim();
        if media != "application/json" && !media.ends_with("+json") {
            return Err(ApiError::UnsupportedMediaType);
        }
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(JsonBody(map)),
            Ok(_) => Err(ApiError::BadRequest(
                "The request body must be a JSON object".into(),
            )),
            Err(e) => Err(ApiError::BadRequest(format!("JSON parse error: {e}"))),
        }
    }
}

/// A JSON response with OpenMRS's content type.
pub fn json(status: StatusCode, value: Value) -> Response {
    // Straight into bytes: `to_string` goes through `fmt::Write`, a tenth slower.
    match serde_json::to_vec(&value) {
        Ok(body) => (status, json_headers(), body).into_response(),
        Err(e) => ApiError::internal(e).into_response(),
    }
}

pub fn ok(value: Value) -> Response {
    json(StatusCode::OK, value)
}

/// A 200 answer with an already serialized JSON body.
pub fn ok_bytes(body: axum::body::Bytes) -> Response {
    (StatusCode::OK, json_headers(), body).into_response()
}

/// The `v` parameter of a query.
pub fn param<'q>(query: &'q [(String, String)], name: &str) -> Option<&'q str> {
    query
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A paged list of resources in the requested representation (`ref` by default, as
/// OpenMRS lists are).
pub fn render_list<'a>(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
    items: impl Iterator<Item = &'a dyn crate::repr::Resource>,
) -> ApiResult<Response> {
    let rep = crate::repr::Rep::parse(param(query, "v"))?.unwrap_or(crate::repr::Rep::Ref);
    let paging = crate::repr::Paging::from_query(query)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(state, &catalog);
    let values = items
        .map(|r| crate::repr::render(r, &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(
        paging.page(values, &caller.request_url(state, path, query))
    ))
}

/// Runs blocking store work off the async threads. The store's commits made by `f` are
/// waited for (until durable) after `f` returns, so after the locks `f` held are released:
/// the next writer's work overlaps this one's fsync, which it may share (`group_commit`).
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(move || {
        let (out, pending) = crate::store::group_commit::durable_after(f);
        let durable = pending.map_or(Ok(()), |p| p.wait());
        // The handler's own error first: what it wrote before failing stays written, as a
        // handler without this scope would leave it.
        let out = out?;
        durable?;
        Ok(out)
    })
    .await
    .map_err(ApiError::internal)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_honours_forwarded_headers() {
        let mut h = HeaderMap::new();
        h.insert("host", "backend:8080".parse().unwrap());
        assert_eq!(origin(&h), "http://backend:8080");
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        h.insert("x-forwarded-host", "emr.example".parse().unwrap());
        h.insert("x-forwarded-port", "443".parse().unwrap());
        assert_eq!(origin(&h), "https://emr.example");
    }

    #[test]
    fn basic_credentials_need_a_user_and_a_password() {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            "Basic YWRtaW46c2VjcmV0".parse().unwrap(),
        );
        assert_eq!(
            basic_credentials(&h),
            Some(("admin".into(), "secret".into()))
        );
        h.insert(header::AUTHORIZATION, "Basic YWRtaW46".parse().unwrap());
        assert_eq!(basic_credentials(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer x".parse().unwrap());
        assert_eq!(basic_credentials(&h), None);
    }
}
