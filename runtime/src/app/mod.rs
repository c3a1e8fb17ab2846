//! The application: one flat router with full paths over every domain's and the content's
//! handlers (the request kernel they use is `http`), and what spans the whole application:
//! start-up, health, backups, reload, the EMR API's resources.
//!
//! Privileges each endpoint requires are listed in `docs/api.md`.

pub mod backup;
pub mod emrapi;
pub mod health;
pub mod jobs;
pub mod reload;
pub mod start;

use crate::content::{addresshierarchy, concept, fhir, form, location, metadata, reference_range};
use crate::domains::account::{rest as account, user};
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
use crate::domains::idgen::rest as idgen;
use crate::domains::immunization::fhir as immunization_fhir;
use crate::domains::inpatient::rest as inpatient;
use crate::domains::order::fhir as order_fhir;
use crate::domains::order::formulary;
use crate::domains::order::rest as order;
use crate::domains::patient::rest as patient;
use crate::domains::programme::rest as programme;
use crate::domains::provider::rest as provider;
use crate::domains::queue::rest as queue;
use crate::domains::queue_room::rest as queue_room;
use crate::domains::relationship::rest as relationship;
use crate::domains::role::rest as role;
use crate::domains::session::rest as session;
use crate::domains::setting::rest as systemsetting;
use crate::domains::visit::rest as visit;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::{edge, spa};
use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::{delete, get, post};
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
        .route(
            &rest("/queue-entry-metrics"),
            get(crate::domains::queue::metrics::metrics),
        )
        .route(
            &rest("/queue-metrics"),
            get(crate::domains::queue::metrics::queue_metrics),
        )
        .route(
            &rest("/queueutil/assignticket"),
            post(crate::domains::queue::metrics::assign_ticket),
        )
        .route(
            &rest("/queueutil/active-tickets"),
            get(crate::domains::queue::metrics::active_tickets),
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
        .route(&rest("/beds"), get(crate::domains::bed::ward::patient_bed))
        .route(
            &rest("/beds/{id}"),
            post(crate::domains::bed::ward::assign).delete(crate::domains::bed::ward::unassign),
        )
        .route(&rest("/bed"), get(bed::list_beds).post(bed::create_bed))
        .route(
            &rest("/bed/{uuid}"),
            get(bed::read_bed)
                .post(bed::update_bed)
                .delete(bed::delete_bed),
        )
        .route(
            &rest("/bedtype"),
            get(crate::domains::bed::types::bed_types)
                .post(crate::domains::bed::types::create_bed_type),
        )
        .route(
            &rest("/bedtype/{uuid}"),
            get(crate::domains::bed::types::bed_type)
                .post(crate::domains::bed::types::update_bed_type)
                .delete(crate::domains::bed::types::delete_bed_type),
        )
        .route(
            &rest("/bedTag"),
            get(crate::domains::bed::types::bed_tags)
                .post(crate::domains::bed::types::create_bed_tag),
        )
        .route(
            &rest("/bedTag/{uuid}"),
            get(crate::domains::bed::types::bed_tag)
                .post(crate::domains::bed::types::update_bed_tag)
                .delete(crate::domains::bed::types::delete_bed_tag),
        )
        .route(&rest("/bedTagMap"), post(bed::create_tag_map))
        .route(&rest("/bedTagMap/{uuid}"), delete(bed::delete_tag_map))
        .route(
            &rest("/admissionLocation"),
            get(crate::domains::bed::ward::admission_locations),
        )
        .route(
            &rest("/admissionLocation/{uuid}"),
            get(crate::domains::bed::ward::admission_location),
        )
        .route(
            &rest("/billing/paymentMode"),
            get(crate::domains::bill::metadata::payment_modes)
                .post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &rest("/billing/cashPoint"),
            get(crate::domains::bill::metadata::cash_points)
                .post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &rest("/billing/billableService"),
            get(crate::domains::bill::metadata::billable_services)
                .post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &rest("/billing/cashierItemPrice"),
            post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &rest("/billing/api/billable-service"),
            post(crate::domains::bill::metadata::metadata_write),
        )
        .route(
            &rest("/billing/{kind}/{uuid}"),
            get(crate::domains::bill::metadata::metadata_read)
                .post(crate::domains::bill::metadata::metadata_write)
                .delete(crate::domains::bill::metadata::metadata_write),
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
        .route(
            &fhir("/Patient/{id}"),
            get(crate::domains::patient::fhir::patient),
        )
        .route(&fhir("/Observation"), get(clinical_fhir::observations))
        .route(&fhir("/Observation/{id}"), get(clinical_fhir::observation))
        .route(&fhir("/Encounter"), get(encounter_search))
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
        .route(&fhir("/{*rest}"), get(crate::http::fhir::other))
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
        .route(&top("/frontend/config.json"), get(spa::frontend_config))
        .route(&top("/frontend/logo.png"), get(spa::frontend_logo))
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
