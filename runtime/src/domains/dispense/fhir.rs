//! FHIR R4 `MedicationDispense`, as fhir2 translates core's dispenses and the O3
//! dispensing app writes them: search by patient, prescription or encounter (`context`),
//! read, create (201), replace (`PUT`, 200) and delete (void). Privileges: Get, Edit and
//! Delete Medication Dispense.
//!
//! The app sends what it read back: a prescription reference, the medication, the
//! quantity and dosing (units as concept uuids, the frequency as an order frequency uuid
//! or a frequency concept), the performer and location (possibly empty references), and
//! codings whose code may be null (read as absent).

use crate::catalog::Catalog;
use crate::domains::dispense::{DispenseRecord, STATUSES, store};
use crate::domains::order::fhir::{
    Dosing, Listing, codeable, dosage_json, medication_fields, mixed_bundle, patient_reference,
    practitioner, unit_quantity,
};
use crate::domains::order::{Action, OrderClass, OrderRecord};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fhir::{
    Written, base, fhir, invalid, iso, not_found, outcome, patient_param, reference_id,
    unprocessable,
};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use crate::wire::{datetime_key, parse_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

const RECORDED_EXT: &str = "http://fhir.openmrs.org/ext/medicationdispense/recorded";

pub fn dispense_json(
    state: &AppState,
    catalog: &Catalog,
    d: &DispenseRecord,
    locale: &str,
) -> Value {
    let mut r = Map::new();
    r.insert("resourceType".into(), json!("MedicationDispense"));
    r.insert("id".into(), json!(d.uuid));
    r.insert(
        "meta".into(),
        json!({"lastUpdated": iso(d.audit.date_changed.as_deref().unwrap_or(&d.audit.date_created))}),
    );
    r.insert(
        "extension".into(),
        json!([{"url": RECORDED_EXT, "valueDateTime": iso(&d.audit.date_created)}]),
    );
    r.insert("status".into(), json!(d.status));
    if d.status_reason.is_some() {
        r.insert(
            "statusReasonCodeableConcept".into(),
            codeable(catalog, d.status_reason.as_deref(), locale),
        );
    }
    medication_fields(catalog, d.drug.as_deref(), &d.concept, locale, &mut r);
    r.insert(
        "subject".into(),
        patient_reference(&state.store, &d.patient),
    );
    if let Some(e) = &d.encounter {
        r.insert(
            "context".into(),
            json!({"reference": format!("Encounter/{e}"), "type": "Encounter"}),
        );
    }
    if let Some(p) = &d.dispenser {
        r.insert(
            "performer".into(),
            json!([{"actor": practitioner(&state.store, p)}]),
        );
    }
    if let Some(l) = d.location.as_deref().and_then(|l| catalog.location(l)) {
        r.insert("location".into(), json!({"reference": format!("Location/{}", l.uuid), "type": "Location", "display": l.name}));
    }
    if let Some(o) = &d.drug_order {
        r.insert(
            "authorizingPrescription".into(),
            json!([{"reference": format!("MedicationRequest/{o}"), "type": "MedicationRequest"}]),
        );
    }
    if d.quantity.is_some() || d.quantity_units.is_some() {
        r.insert(
            "quantity".into(),
            unit_quantity(catalog, d.quantity, d.quantity_units.as_deref(), locale),
        );
    }
    if let Some(t) = &d.date_prepared {
        r.insert("whenPrepared".into(), iso(t));
    }
    if let Some(t) = &d.date_handed_over {
        r.insert("whenHandedOver".into(), iso(t));
    }
    let dosing = Dosing {
        text: d.dosing_instructions.as_deref(),
        as_needed: d.as_needed,
        route: d.route.as_deref(),
        frequency: d.frequency.as_deref(),
        duration: None,
        duration_units: None,
        dose: d.dose,
        dose_units: d.dose_units.as_deref(),
    };
    if d.dosing_instructions.is_some()
        || d.route.is_some()
        || d.frequency.is_some()
        || d.dose.is_some()
    {
        r.insert(
            "dosageInstruction".into(),
            json!([dosage_json(catalog, &dosing, &Default::default(), locale)]),
        );
    }
    if d.was_substituted || d.substitution_type.is_some() || d.substitution_reason.is_some() {
        let mut s = Map::new();
        s.insert("wasSubstituted".into(), json!(d.was_substituted));
        if d.substitution_type.is_some() {
            s.insert(
                "type".into(),
                codeable(catalog, d.substitution_type.as_deref(), locale),
            );
        }
        if d.substitution_reason.is_some() {
            s.insert(
                "reason".into(),
                json!([codeable(catalog, d.substitution_reason.as_deref(), locale)]),
            );
        }
        r.insert("substitution".into(), Value::Object(s));
    }
    Value::Object(r)
}

/// The code of a CodeableConcept's first coding without a system (a concept uuid), or of
/// its first coding; a null code is absent.
fn first_code(v: Option<&Value>) -> Option<String> {
    let codings = v?.get("coding")?.as_array()?;
    fn pick(c: &Value) -> Option<&str> {
        c.get("code")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    }
    codings
        .iter()
        .filter(|c| c.get("system").is_none_or(Value::is_null))
        .find_map(pick)
        .or_else(|| codings.iter().find_map(pick))
        .map(str::to_string)
}

/// A concept code of a body (uuid or `SOURCE:CODE`), checked against the content.
fn concept_of(
    catalog: &Catalog,
    code: Option<String>,
    field: &str,
    inv: &mut Invalid,
) -> Option<String> {
    let code = code?;
    match catalog.concept(&code) {
        Some(c) => Some(c.uuid.clone()),
        None => {
            inv.field(
                field,
                "error.invalid",
                &format!("Concept {code} does not exist"),
            );
            None
        }
    }
}

fn number(v: Option<&Value>, field: &str) -> Result<Option<f64>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .map(Some)
            .ok_or_else(|| format!("{field} must be a number")),
        Some(_) => Err(format!("{field} must be a number")),
    }
}

fn date(body: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => parse_datetime(s)
            .map(|t| Some(datetime_key(t)))
            .ok_or_else(|| format!("{field}: '{s}' is not a date and time")),
        Some(_) => Err(format!("{field} must be a date and time")),
    }
}

/// Reads a MedicationDispense body into `d` (keeping its uuid, audit and voiding). A
/// malformed body is `Err` (400); unknown concepts and references go to `inv` (422).
fn apply(
    body: &Map<String, Value>,
    d: &mut DispenseRecord,
    state: &AppState,
    catalog: &Catalog,
    inv: &mut Invalid,
) -> Result<(), String> {
    if body
        .get("resourceType")
        .and_then(Value::as_str)
        .is_some_and(|t| t != "MedicationDispense")
    {
        return Err("resourceType must be MedicationDispense".into());
    }
    match body.get("status").and_then(Value::as_str) {
        Some(s) if STATUSES.contains(&s) => d.status = s.to_string(),
        Some(s) => {
            return Err(format!(
                "status '{s}' is not one of {}",
                STATUSES.join(", ")
            ));
        }
        None if d.status.is_empty() => inv.field("status", "error.null", "A dispense has a status"),
        None => {}
    }
    d.drug_order = body
        .get("authorizingPrescription")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|r| reference_id(Some(r), "MedicationRequest"));
    if let Some(p) = reference_id(body.get("subject"), "Patient") {
        d.patient = p;
    }
    d.encounter = reference_id(body.get("context"), "Encounter");
    d.drug = reference_id(body.get("medicationReference"), "Medication");
    let concept = match &d.drug {
        Some(drug) => match catalog.drug(drug) {
            Some(x) => Some(x.concept.clone()),
            None => {
                inv.field(
                    "medicationReference",
                    "error.invalid",
                    &format!("Medication {drug} does not exist"),
                );
                None
            }
        },
        None => concept_of(
            catalog,
            first_code(body.get("medicationCodeableConcept")),
            "medicationCodeableConcept",
            inv,
        ),
    };
    d.concept = concept.unwrap_or_default();
    d.status_reason = concept_of(
        catalog,
        first_code(body.get("statusReasonCodeableConcept")),
        "statusReasonCodeableConcept",
        inv,
    );
    d.dispenser = body
        .get("performer")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|p| reference_id(p.get("actor"), "Practitioner"));
    d.location = reference_id(body.get("location"), "Location");
    let quantity = body.get("quantity");
    d.quantity = number(quantity.and_then(|q| q.get("value")), "quantity.value")?;
    d.quantity_units = concept_of(
        catalog,
        quantity
            .and_then(|q| q.get("code"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        "quantity.code",
        inv,
    );
    d.date_prepared = date(body, "whenPrepared")?;
    d.date_handed_over = date(body, "whenHandedOver")?;
    let dosage = body
        .get("dosageInstruction")
        .and_then(Value::as_array)
        .and_then(|a| a.first());
    d.dosing_instructions = dosage
        .and_then(|x| x.get("text"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    d.as_needed = dosage
        .and_then(|x| x.get("asNeededBoolean"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    d.route = concept_of(
        catalog,
        first_code(dosage.and_then(|x| x.get("route"))),
        "dosageInstruction.route",
        inv,
    );
    // The frequency: an order frequency's uuid (what the app sends), else its concept.
    d.frequency = match first_code(
        dosage
            .and_then(|x| x.get("timing"))
            .and_then(|t| t.get("code")),
    ) {
        None => None,
        Some(code) => match catalog.order_frequency(&code) {
            Some(f) => Some(f.uuid.clone()),
            None => {
                let concept = catalog.concept(&code).map(|c| c.uuid.clone());
                match concept.and_then(|c| {
                    catalog
                        .content
                        .order_frequencies
                        .iter()
                        .find(|f| f.concept == c)
                }) {
                    Some(f) => Some(f.uuid.clone()),
                    None => {
                        inv.field(
                            "dosageInstruction.timing",
                            "error.invalid",
                            &format!("{code} is not an order frequency"),
                        );
                        None
                    }
                }
            }
        },
    };
    let dose = dosage
        .and_then(|x| x.get("doseAndRate"))
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|x| x.get("doseQuantity"));
    d.dose = number(dose.and_then(|q| q.get("value")), "doseQuantity.value")?;
    d.dose_units = concept_of(
        catalog,
        dose.and_then(|q| q.get("code"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        "doseQuantity.code",
        inv,
    );
    let substitution = body.get("substitution");
    d.was_substituted = substitution
        .and_then(|s| s.get("wasSubstituted"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    d.substitution_type = concept_of(
        catalog,
        first_code(substitution.and_then(|s| s.get("type"))),
        "substitution.type",
        inv,
    );
    d.substitution_reason = concept_of(
        catalog,
        first_code(
            substitution
                .and_then(|s| s.get("reason"))
                .and_then(Value::as_array)
                .and_then(|a| a.first()),
        ),
        "substitution.reason",
        inv,
    );
    if let Some(p) = &d.dispenser
        && crate::domains::provider::find(&state.store, p)
            .ok()
            .flatten()
            .is_none()
    {
        inv.field(
            "performer",
            "error.invalid",
            &format!("Practitioner {p} does not exist"),
        );
    }
    if let Some(l) = &d.location
        && catalog.location(l).is_none()
    {
        inv.field(
            "location",
            "error.invalid",
            &format!("Location {l} does not exist"),
        );
    }
    if d.dosing_instructions
        .as_deref()
        .is_some_and(|t| t.chars().count() > 1024)
    {
        inv.field(
            "dosageInstruction.text",
            "error.size",
            "At most 1024 characters",
        );
    }
    Ok(())
}

/// The rules against other records (see the module's documentation); the caller holds the
/// clinical write lock, so the prescription's other dispenses cannot change meanwhile.
fn check(state: &AppState, d: &mut DispenseRecord, inv: &mut Invalid) -> ApiResult<()> {
    let order: Option<OrderRecord> = match &d.drug_order {
        Some(o) => match crate::domains::order::store::get(&state.store, o)? {
            Some(o) => Some(o),
            None => {
                inv.field(
                    "authorizingPrescription",
                    "error.invalid",
                    "The prescription does not exist",
                );
                None
            }
        },
        None => None,
    };
    if let Some(o) = &order {
        if o.class != OrderClass::Drug || o.action == Action::Discontinue || o.voiding.voided {
            inv.field(
                "authorizingPrescription",
                "error.invalid",
                "A dispense fills a drug order that is neither voided nor a discontinuation",
            );
        }
        if d.patient.is_empty() {
            d.patient = o.patient.clone();
        }
        if d.patient != o.patient {
            inv.field(
                "subject",
                "error.invalid",
                "The prescription is another patient's",
            );
        }
        if d.encounter.is_none() {
            d.encounter = Some(o.encounter.clone());
        }
    }
    if d.patient.is_empty() {
        inv.field("subject", "error.null", "A dispense names its patient");
    } else if state.store.patient(&d.patient)?.is_none_or(|p| p.voided) {
        inv.field("subject", "error.invalid", "Patient does not exist");
    }
    // The encounter (`context`): an encounter of the same patient that stands.
    if let Some(e) = &d.encounter {
        match crate::domains::encounter::store::encounter(&state.store, e)? {
            Some(enc) if !enc.voiding.voided && enc.patient == d.patient => {}
            _ => inv.field(
                "context",
                "error.invalid",
                "The encounter does not exist, is voided or is another patient's",
            ),
        }
    }
    if d.concept.is_empty() {
        inv.field(
            "medicationReference",
            "error.null",
            "A dispense names what it hands over",
        );
    }
    if let Some(q) = d.quantity
        && q <= 0.0
    {
        inv.field(
            "quantity",
            "error.invalid",
            "A quantity handed over is positive",
        );
    }
    if d.quantity.is_some() && d.quantity_units.is_none() {
        inv.field(
            "quantity.code",
            "error.null",
            "The quantity's unit is required",
        );
    }
    if d.status == "completed"
        && let Some(o) = &order
        && let Some(details) = &o.drug
        && let Some(ordered) = details.quantity
    {
        // A prescription that states a quantity is handed over in quantities; where the
        // dispensing app restricts the total, never more than it allows with its refills
        // (in its unit).
        match d.quantity {
            None => inv.field(
                "quantity",
                "error.null",
                "The prescription states a quantity: say how much is handed over",
            ),
            Some(q)
                if details.quantity_units == d.quantity_units
                    && state.catalog.load().dispense_total_restricted =>
            {
                let allowed = ordered * f64::from(1 + details.num_refills.unwrap_or(0));
                let given: f64 = store::of_order(&state.store, &o.uuid)?
                    .iter()
                    .filter(|x| {
                        x.uuid != d.uuid
                            && x.status == "completed"
                            && x.quantity_units == d.quantity_units
                    })
                    .filter_map(|x| x.quantity)
                    .sum();
                if given + q > allowed + 1e-9 {
                    inv.field(
                        "quantity",
                        "MedicationDispense.error.quantityExceedsOrdered",
                        &format!(
                            "This would hand over {} of the {allowed} the prescription allows ({given} already dispensed)",
                            given + q
                        ),
                    );
                }
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn blank(uuid: String, user: &str) -> DispenseRecord {
    DispenseRecord {
        v: 1,
        uuid,
        patient: String::new(),
        encounter: None,
        drug_order: None,
        concept: String::new(),
        drug: None,
        location: None,
        dispenser: None,
        status: String::new(),
        status_reason: None,
        quantity: None,
        quantity_units: None,
        dose: None,
        dose_units: None,
        route: None,
        frequency: None,
        as_needed: false,
        dosing_instructions: None,
        date_prepared: None,
        date_handed_over: None,
        was_substituted: false,
        substitution_type: None,
        substitution_reason: None,
        audit: Audit::new(user, Utc::now()),
        voiding: Voiding::default(),
    }
}

/// `POST MedicationDispense` — privilege: Edit Medication Dispense.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Medication Dispense"])?;
    let uuid = body
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| uuid::Uuid::parse_str(id).is_ok())
        .map_or_else(crate::store::record::new_uuid, str::to_string);
    write(state, caller, Target::New(uuid), body).await
}

/// `PUT MedicationDispense/{id}` replaces what the resource carries — privilege: Edit
/// Medication Dispense.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Medication Dispense"])?;
    if body
        .get("id")
        .and_then(Value::as_str)
        .is_some_and(|b| b != id)
    {
        return Ok(invalid("The resource's id is not the one in the path"));
    }
    write(state, caller, Target::Existing(id), body).await
}

/// What a write starts from: a new dispense (with its uuid), or a stored one read under the
/// write lock (so a deletion meanwhile is not undone).
enum Target {
    New(String),
    Existing(String),
}

async fn write(
    state: Arc<AppState>,
    caller: Caller,
    target: Target,
    body: Map<String, Value>,
) -> ApiResult<Response> {
    let user = caller.user_uuid();
    let new = matches!(target, Target::New(_));
    let st = state.clone();
    let written = blocking(move || {
        let catalog = st.catalog.load();
        let _one_writer = st.store.write_lock();
        let (old, mut d) = match target {
            Target::New(uuid) => {
                if store::get(&st.store, &uuid)?.is_some() {
                    return Ok(Written::Refused(invalid(&format!(
                        "A dispense with id {uuid} already exists"
                    ))));
                }
                (None, blank(uuid, &user))
            }
            Target::Existing(id) => match store::get(&st.store, &id)? {
                Some(d) if !d.voiding.voided => (Some(d.clone()), d),
                _ => return Ok(Written::Refused(not_found("MedicationDispense", &id))),
            },
        };
        let mut inv = Invalid::default();
        if let Err(e) = apply(&body, &mut d, &st, &catalog, &mut inv) {
            return Ok(Written::Refused(invalid(&e)));
        }
        if old.is_some() {
            d.audit.changed(&user, Utc::now());
        }
        check(&st, &mut d, &mut inv)?;
        if !inv.is_empty() {
            return Ok(Written::Refused(unprocessable(&inv)));
        }
        store::put(&st.store, old.as_ref(), &d)?;
        Ok::<_, ApiError>(Written::Done(Box::new(d)))
    })
    .await?;
    let d = match written {
        Written::Done(d) => d,
        Written::Refused(r) => return Ok(r),
    };
    let catalog = state.catalog.load();
    let status = if new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut res = fhir(
        status,
        dispense_json(&state, &catalog, &d, &caller.locale(&catalog)),
    );
    if new {
        res = crate::http::fhir::located(res, &state, &caller, "MedicationDispense", &d.uuid);
    }
    Ok(res)
}

/// `GET MedicationDispense/{id}` — privilege: Get Medication Dispense.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Medication Dispense"])?;
    let catalog = state.catalog.load();
    Ok(match store::get(&state.store, &id)? {
        Some(d) if !d.voiding.voided => fhir(
            StatusCode::OK,
            dispense_json(&state, &catalog, &d, &caller.locale(&catalog)),
        ),
        Some(_) => outcome(
            StatusCode::GONE,
            "error",
            "deleted",
            &format!("MedicationDispense {id} was deleted"),
        ),
        None => not_found("MedicationDispense", &id),
    })
}

/// `GET MedicationDispense?patient=…|prescription=…|context=…` — privilege: Get
/// Medication Dispense.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Medication Dispense"])?;
    let list = if let Some(p) = param(&query, "prescription") {
        store::of_order(&state.store, p.trim_start_matches("MedicationRequest/"))?
    } else if let Some(e) = param(&query, "context").or(param(&query, "encounter")) {
        store::of_encounter(&state.store, e.trim_start_matches("Encounter/"))?
    } else if let Some(p) = patient_param(&query) {
        store::of_patient(&state.store, &p)?
    } else {
        return Err(ApiError::BadRequest(
            "MedicationDispense searches name a patient, a prescription or an encounter".into(),
        ));
    };
    let catalog = state.catalog.load();
    let locale = caller.locale(&catalog);
    let w = crate::http::fhir::window(&query);
    let page: Vec<Value> = list
        .iter()
        .skip(w.start)
        .take(w.limit)
        .map(|d| dispense_json(&state, &catalog, d, &locale))
        .collect();
    Ok(fhir(
        StatusCode::OK,
        mixed_bundle(
            &base(&state, &caller),
            "MedicationDispense",
            &query,
            &w,
            Listing {
                total: list.len(),
                matches: page,
                included: vec![],
            },
        ),
    ))
}

/// `DELETE MedicationDispense/{id}` voids it — privilege: Delete Medication Dispense.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Delete Medication Dispense"])?;
    let user = caller.user_uuid();
    let st = state.clone();
    let missing = id.clone();
    let found = blocking(move || {
        let _one_writer = st.store.write_lock();
        let Some(mut d) = store::get(&st.store, &id)? else {
            return Ok(false);
        };
        if !d.voiding.voided {
            let old = d.clone();
            d.voiding.void(&user, Utc::now(), "Voided via FHIR API");
            store::put(&st.store, Some(&old), &d)?;
        }
        Ok::<_, ApiError>(true)
    })
    .await?;
    Ok(if found {
        outcome(
            StatusCode::OK,
            "information",
            "informational",
            "Resource successfully deleted",
        )
    } else {
        not_found("MedicationDispense", &missing)
    })
}

/// `GET Encounter?_query=encountersWithMedicationRequests[&date=ge…][&status=ACTIVE]
/// [&patientSearchTerm=…][&location=a,b]`: the pharmacy's worklist, as fhir2's named query
/// answers it: encounters (newest first) holding drug orders (with `status=active`, one not
/// stopped, declined nor completed), each with its MedicationRequests and their dispenses
/// — privilege: Get Encounters, Get Orders.
pub async fn encounters_with_requests(
    state: Arc<AppState>,
    caller: Caller,
    query: Vec<(String, String)>,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters", "Get Orders"])?;
    // Dispenses are shown to those who may read them.
    let with_dispenses = caller.require(&["Get Medication Dispense"]).is_ok();
    let catalog = state.catalog.load();
    let snomed = crate::domains::order::rules::OrderEntry::of(&state).snomed;
    let locale = caller.locale(&catalog);
    let now = datetime_key(Utc::now());
    let from = match query
        .iter()
        .find(|(k, _)| k == "date")
        .map(|(_, v)| v.as_str())
    {
        None => None,
        Some(v) => {
            let v = v.trim_start_matches("ge").trim_start_matches("gt");
            match parse_datetime(v) {
                Some(t) => Some(datetime_key(t)),
                None => {
                    return Ok(crate::http::fhir::invalid(&format!(
                        "date: '{v}' is not a date (ge… or gt…)"
                    )));
                }
            }
        }
    };
    let active_only = param(&query, "status").is_some_and(|s| s.eq_ignore_ascii_case("active"));
    let term = param(&query, "patientSearchTerm")
        .map(crate::search::fold)
        .filter(|t| !t.trim().is_empty());
    let locations: Option<Vec<String>> =
        param(&query, "location")
            .filter(|l| !l.is_empty())
            .map(|l| {
                l.split(',')
                    .map(|x| x.trim().trim_start_matches("Location/").to_string())
                    .collect()
            });
    let drug_types: Vec<String> = catalog
        .content
        .order_types
        .iter()
        .filter(|t| t.java_class_name == OrderClass::Drug.java_class())
        .map(|t| t.uuid.clone())
        .collect();
    // Drug orders activated since the date (an encounter's orders start at or after it),
    // newest first, grouped by encounter in that order.
    let uuids = crate::domains::order::store::candidates(
        &state.store,
        &crate::domains::order::store::Source::Types {
            types: &drug_types,
            from: from.as_deref(),
            to: None,
        },
        false,
    )?;
    let mut by_encounter: Vec<(String, Vec<OrderRecord>)> = Vec::new();
    let mut slot: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for chunk in uuids.chunks(256) {
        for o in crate::domains::order::store::records(&state.store, chunk)? {
            if !crate::domains::order::fhir::is_request(&o) {
                continue;
            }
            match slot.get(&o.encounter) {
                Some(&i) => by_encounter[i].1.push(o),
                None => {
                    slot.insert(o.encounter.clone(), by_encounter.len());
                    by_encounter.push((o.encounter.clone(), vec![o]));
                }
            }
        }
    }
    let mut rows = Vec::new();
    for (encounter, orders) in by_encounter {
        if active_only
            && !orders.iter().any(|o| {
                o.date_stopped.as_deref().is_none_or(|s| s > now.as_str())
                    && !matches!(
                        o.fulfiller_status,
                        Some(
                            crate::domains::order::FulfillerStatus::Declined
                                | crate::domains::order::FulfillerStatus::Completed
                        )
                    )
            })
        {
            continue;
        }
        let Some(e) = crate::domains::encounter::store::encounter(&state.store, &encounter)? else {
            continue;
        };
        if e.voiding.voided || from.as_ref().is_some_and(|f| e.datetime < *f) {
            continue;
        }
        if let Some(ls) = &locations
            && !e.location.as_ref().is_some_and(|l| ls.contains(l))
        {
            continue;
        }
        if let Some(t) = &term {
            let Some(p) = state.store.patient(&e.patient)? else {
                continue;
            };
            let name = crate::search::fold(&crate::domains::patient::repr::person_display(&p));
            let ids = p
                .identifiers
                .iter()
                .any(|i| i.identifier.eq_ignore_ascii_case(t.trim()));
            if !t.split_whitespace().all(|w| name.contains(w)) && !ids {
                continue;
            }
        }
        rows.push((e, orders));
    }
    rows.sort_by(|a, b| b.0.datetime.cmp(&a.0.datetime));
    let w = crate::http::fhir::window(&query);
    let total = rows.len();
    let mut matches = Vec::new();
    let mut included = Vec::new();
    for (e, orders) in rows.iter().skip(w.start).take(w.limit) {
        let mut r = crate::domains::encounter::fhir::encounter_json(e, &catalog);
        r["subject"] = crate::domains::order::fhir::patient_reference(&state.store, &e.patient);
        matches.push(r);
        for o in orders {
            included.push(crate::domains::order::fhir::medication_request_json(
                &state, &catalog, &snomed, o, &locale,
            ));
        }
        if with_dispenses {
            let refs: Vec<&OrderRecord> = orders.iter().collect();
            included.extend(crate::domains::order::fhir::dispenses_json(
                &state, &catalog, &refs, &locale,
            )?);
        }
    }
    Ok(fhir(
        StatusCode::OK,
        crate::domains::order::fhir::mixed_bundle(
            &base(&state, &caller),
            "Encounter",
            &query,
            &w,
            crate::domains::order::fhir::Listing {
                total,
                matches,
                included,
            },
        ),
    ))
}

/// The FHIR MedicationDispenses of some orders (registered for orders' `_revinclude`).
pub fn of_orders_json(
    state: &AppState,
    catalog: &Catalog,
    orders: &[&OrderRecord],
    locale: &str,
) -> ApiResult<Vec<Value>> {
    let mut out = Vec::new();
    for o in orders {
        for d in store::of_order(&state.store, &o.uuid)? {
            out.push(dispense_json(state, catalog, &d, locale));
        }
    }
    Ok(out)
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.fhir("/MedicationDispense"),
            get(crate::domains::dispense::fhir::search)
                .post(crate::domains::dispense::fhir::create),
        )
        .route(
            &paths.fhir("/MedicationDispense/{id}"),
            get(crate::domains::dispense::fhir::read)
                .put(crate::domains::dispense::fhir::update)
                .delete(crate::domains::dispense::fhir::delete),
        )
}
