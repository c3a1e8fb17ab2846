//! Drug orders over FHIR R4, as fhir2 translates them and the O3 dispensing app reads
//! them: `MedicationRequest` (read, search by patient, encounter, status and fulfiller
//! status, with its dispenses and encounter included; a merge-patch of its fulfiller
//! status), `Medication` (a drug of the formulary) and the pharmacy's worklist,
//! `Encounter?_query=encountersWithMedicationRequests`.
//!
//! A MedicationRequest's status follows fhir2's rule: `completed` when the pharmacy
//! completed it, else `active` while the order is active, `cancelled` once stopped (a
//! revision or a discontinuation) or voided, `stopped` once expired. Discontinuations are
//! not MedicationRequests.

use crate::catalog::Catalog;
use crate::domains::order::{Action, FulfillerStatus, OrderClass, OrderRecord, store};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fhir::{base, concept_codeable, fhir, iso, not_found, outcome, patient_param};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::store::Store;
use crate::wire::datetime_key;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub const FULFILLER_STATUS_EXT: &str =
    "http://fhir.openmrs.org/ext/medicationrequest/fulfillerstatus";
const MEDICINE_EXT: &str = "http://fhir.openmrs.org/ext/medicine";

/// A concept as a CodeableConcept, `null` when there is none.
pub fn codeable(catalog: &Catalog, uuid: Option<&str>, locale: &str) -> Value {
    match uuid {
        Some(u) => {
            serde_json::to_value(concept_codeable(catalog, u, locale)).unwrap_or(Value::Null)
        }
        None => Value::Null,
    }
}

fn concept_name(catalog: &Catalog, uuid: &str, locale: &str) -> Option<String> {
    catalog
        .concept(uuid)
        .and_then(|c| c.display_name(locale, &[catalog.default_locale()]))
        .map(|n| n.name.clone())
}

/// A quantity in a unit concept: its uuid as the code (what the dispensing app compares).
pub fn unit_quantity(
    catalog: &Catalog,
    value: Option<f64>,
    unit: Option<&str>,
    locale: &str,
) -> Value {
    let mut q = Map::new();
    q.insert("value".into(), json!(value));
    if let Some(u) = unit {
        q.insert("unit".into(), json!(concept_name(catalog, u, locale)));
        q.insert("code".into(), json!(u));
    }
    Value::Object(q)
}

/// The FHIR unit of time of a duration unit, from its SNOMED CT code.
fn unit_of_time(snomed: &str) -> Option<&'static str> {
    use crate::domains::order::rules::*;
    Some(match snomed {
        SNOMED_SECONDS => "s",
        SNOMED_MINUTES => "min",
        SNOMED_HOURS => "h",
        SNOMED_DAYS => "d",
        SNOMED_WEEKS => "wk",
        SNOMED_MONTHS => "mo",
        SNOMED_YEARS => "a",
        _ => return None,
    })
}

/// What a dosage instruction is made of (a drug order's, or a dispense's).
pub struct Dosing<'a> {
    pub text: Option<&'a str>,
    pub as_needed: bool,
    pub route: Option<&'a str>,
    /// An order frequency uuid.
    pub frequency: Option<&'a str>,
    pub duration: Option<u32>,
    pub duration_units: Option<&'a str>,
    pub dose: Option<f64>,
    pub dose_units: Option<&'a str>,
}

pub fn dosage_json(
    catalog: &Catalog,
    d: &Dosing,
    snomed: &std::collections::HashMap<String, String>,
    locale: &str,
) -> Value {
    let mut out = Map::new();
    if let Some(t) = d.text {
        out.insert("text".into(), json!(t));
    }
    out.insert("asNeededBoolean".into(), json!(d.as_needed));
    if d.route.is_some() {
        out.insert("route".into(), codeable(catalog, d.route, locale));
    }
    let mut timing = Map::new();
    if let Some(f) = d.frequency.and_then(|f| catalog.order_frequency(f)) {
        timing.insert("code".into(), codeable(catalog, Some(&f.concept), locale));
    }
    if let Some(n) = d.duration {
        let mut repeat = Map::new();
        repeat.insert("duration".into(), json!(n));
        if let Some(u) = d
            .duration_units
            .and_then(|u| snomed.get(u))
            .and_then(|c| unit_of_time(c))
        {
            repeat.insert("durationUnit".into(), json!(u));
        }
        timing.insert("repeat".into(), Value::Object(repeat));
    }
    if !timing.is_empty() {
        out.insert("timing".into(), Value::Object(timing));
    }
    if d.dose.is_some() || d.dose_units.is_some() {
        out.insert(
            "doseAndRate".into(),
            json!([{"doseQuantity": unit_quantity(catalog, d.dose, d.dose_units, locale)}]),
        );
    }
    Value::Object(out)
}

/// The medication of an order or a dispense: the drug as a reference, else the concept.
pub fn medication_fields(
    catalog: &Catalog,
    drug: Option<&str>,
    concept: &str,
    locale: &str,
    out: &mut Map<String, Value>,
) {
    match drug.and_then(|d| catalog.drug(d)) {
        Some(d) => {
            out.insert(
                "medicationReference".into(),
                json!({"reference": format!("Medication/{}", d.uuid), "type": "Medication", "display": d.name}),
            );
        }
        None => {
            out.insert(
                "medicationCodeableConcept".into(),
                codeable(catalog, Some(concept), locale),
            );
        }
    }
}

pub fn practitioner(store: &Store, provider: &str) -> Value {
    let display = crate::domains::provider::find(store, provider)
        .ok()
        .flatten()
        .map(|p| format!("{} ({})", p.name, p.identifier));
    json!({"reference": format!("Practitioner/{provider}"), "type": "Practitioner", "display": display})
}

pub fn patient_reference(store: &Store, patient: &str) -> Value {
    let display = store
        .patient(patient)
        .ok()
        .flatten()
        .map(|p| crate::domains::patient::repr::person_display(&p));
    json!({"reference": format!("Patient/{patient}"), "type": "Patient", "display": display})
}

/// fhir2's status of a drug order.
pub fn request_status(o: &OrderRecord, now: &str) -> &'static str {
    if o.fulfiller_status == Some(FulfillerStatus::Completed) {
        "completed"
    } else if o.is_active(now) {
        "active"
    } else if o.voiding.voided || o.date_stopped.as_deref().is_some_and(|s| s <= now) {
        "cancelled"
    } else if o.auto_expire_date.as_deref().is_some_and(|e| e <= now) {
        "stopped"
    } else {
        "unknown"
    }
}

pub fn medication_request_json(
    state: &AppState,
    catalog: &Catalog,
    snomed: &std::collections::HashMap<String, String>,
    o: &OrderRecord,
    locale: &str,
) -> Value {
    let now = datetime_key(Utc::now());
    let mut r = Map::new();
    r.insert("resourceType".into(), json!("MedicationRequest"));
    r.insert("id".into(), json!(o.uuid));
    r.insert(
        "meta".into(),
        json!({"lastUpdated": iso(o.audit.date_changed.as_deref().unwrap_or(&o.audit.date_created))}),
    );
    if let Some(f) = o.fulfiller_status {
        r.insert(
            "extension".into(),
            json!([{"url": FULFILLER_STATUS_EXT, "valueCode": f.name()}]),
        );
    }
    r.insert(
        "identifier".into(),
        json!([{"use": "usual", "value": o.order_number}]),
    );
    r.insert("status".into(), json!(request_status(o, &now)));
    r.insert("intent".into(), json!("order"));
    r.insert(
        "priority".into(),
        json!(if o.urgency == crate::domains::order::Urgency::Stat {
            "stat"
        } else {
            "routine"
        }),
    );
    let d = o.drug.as_ref();
    medication_fields(
        catalog,
        d.and_then(|d| d.drug.as_deref()),
        &o.concept,
        locale,
        &mut r,
    );
    r.insert(
        "subject".into(),
        patient_reference(&state.store, &o.patient),
    );
    r.insert(
        "encounter".into(),
        json!({"reference": format!("Encounter/{}", o.encounter), "type": "Encounter"}),
    );
    r.insert("authoredOn".into(), iso(&o.audit.date_created));
    r.insert("requester".into(), practitioner(&state.store, &o.orderer));
    if let Some(reason) = &o.order_reason {
        r.insert(
            "reasonCode".into(),
            json!([codeable(catalog, Some(reason), locale)]),
        );
    } else if let Some(text) = &o.order_reason_non_coded {
        r.insert("reasonCode".into(), json!([{"text": text}]));
    }
    if let Some(c) = &o.comment_to_fulfiller {
        r.insert("note".into(), json!([{"text": c}]));
    }
    if let Some(prev) = &o.previous_order {
        let kind = if o.action == Action::Renew {
            "basedOn"
        } else {
            "priorPrescription"
        };
        let reference =
            json!({"reference": format!("MedicationRequest/{prev}"), "type": "MedicationRequest"});
        r.insert(
            kind.into(),
            if kind == "basedOn" {
                json!([reference])
            } else {
                reference
            },
        );
    }
    if let Some(d) = d {
        r.insert(
            "dosageInstruction".into(),
            json!([dosage_json(
                catalog,
                &Dosing {
                    text: d.dosing_instructions.as_deref(),
                    as_needed: d.as_needed,
                    route: d.route.as_deref(),
                    frequency: d.frequency.as_deref(),
                    duration: d.duration,
                    duration_units: d.duration_units.as_deref(),
                    dose: d.dose,
                    dose_units: d.dose_units.as_deref(),
                },
                snomed,
                locale,
            )]),
        );
        r.insert(
            "dispenseRequest".into(),
            json!({
                "validityPeriod": {"start": iso(&o.date_activated)},
                "numberOfRepeatsAllowed": d.num_refills,
                "quantity": unit_quantity(catalog, d.quantity, d.quantity_units.as_deref(), locale),
            }),
        );
    }
    Value::Object(r)
}

/// A drug of the formulary as a FHIR `Medication`.
pub fn medication_json(catalog: &Catalog, d: &model::Drug, locale: &str) -> Value {
    let mut ext = vec![json!({"url": format!("{MEDICINE_EXT}#drugName"), "valueString": d.name})];
    if let Some(s) = &d.strength {
        ext.push(json!({"url": format!("{MEDICINE_EXT}#strength"), "valueString": s}));
    }
    let mut r = json!({
        "resourceType": "Medication",
        "id": d.uuid,
        "extension": [{"url": MEDICINE_EXT, "extension": ext}],
        "code": codeable(catalog, Some(&d.concept), locale),
        "status": if d.retired { "inactive" } else { "active" },
    });
    if let Some(f) = &d.dosage_form {
        r["form"] = codeable(catalog, Some(f), locale);
    }
    r
}

/// One page of a search: how many match in all, the page's matches, and what they include.
pub struct Listing {
    pub total: usize,
    pub matches: Vec<Value>,
    pub included: Vec<Value>,
}

/// A searchset Bundle mixing resource types (matches and what they include), with its
/// paging links over the matches.
pub fn mixed_bundle(
    base: &str,
    kind: &str,
    query: &[(String, String)],
    w: &crate::store::record::Window,
    listing: Listing,
) -> Value {
    let Listing {
        total,
        matches,
        included,
    } = listing;
    let (offset, count) = (w.start, w.limit);
    let q: String = query
        .iter()
        .filter(|(k, _)| k != "_getpagesoffset")
        .map(|(k, v)| {
            format!(
                "{}={}",
                crate::http::repr::encode(k),
                crate::http::repr::encode(v)
            )
        })
        .collect::<Vec<_>>()
        .join("&");
    let mut link = vec![json!({"relation": "self", "url": format!("{base}/{kind}?{q}")})];
    if offset.saturating_add(count) < total {
        link.push(json!({"relation": "next", "url": format!("{base}/{kind}?{q}&_getpagesoffset={}", offset + count)}));
    }
    if offset > 0 {
        link.push(json!({"relation": "previous", "url": format!("{base}/{kind}?{q}&_getpagesoffset={}", offset.saturating_sub(count))}));
    }
    let entry = |r: Value, mode: &str| {
        let url = format!(
            "{base}/{}/{}",
            r["resourceType"].as_str().unwrap_or(""),
            r["id"].as_str().unwrap_or("")
        );
        json!({"fullUrl": url, "resource": r, "search": {"mode": mode}})
    };
    let entries: Vec<Value> = matches
        .into_iter()
        .map(|r| entry(r, "match"))
        .chain(included.into_iter().map(|r| entry(r, "include")))
        .collect();
    json!({
        "resourceType": "Bundle",
        "id": uuid::Uuid::new_v4().to_string(),
        "meta": {"lastUpdated": Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)},
        "type": "searchset",
        "total": total,
        "link": link,
        "entry": entries,
    })
}

pub fn includes(query: &[(String, String)], name: &str, value: &str) -> bool {
    query
        .iter()
        .any(|(k, v)| k.starts_with(name) && v.split(',').any(|x| x.eq_ignore_ascii_case(value)))
}

/// The orders a FHIR order search names: an encounter's, else a patient's; `None` when it
/// names neither.
fn orders_searched(
    state: &AppState,
    query: &[(String, String)],
) -> ApiResult<Option<Vec<OrderRecord>>> {
    Ok(if let Some(e) = param(query, "encounter") {
        Some(store::of_encounter(
            &state.store,
            e.trim_start_matches("Encounter/"),
            false,
        )?)
    } else if let Some(p) = patient_param(query) {
        Some(store::of_patient(&state.store, &p, false)?)
    } else {
        None
    })
}

/// Whether a drug order is a MedicationRequest (a discontinuation is not).
pub fn is_request(o: &OrderRecord) -> bool {
    o.class == OrderClass::Drug && o.action != Action::Discontinue
}

/// The FHIR MedicationDispenses of some orders, from the dispense domain.
pub fn dispenses_json(
    state: &AppState,
    catalog: &Catalog,
    orders: &[&OrderRecord],
    locale: &str,
) -> ApiResult<Vec<Value>> {
    match crate::domains::order::repr::order_encounters(&state.store) {
        Some(registered) => (registered.dispenses)(state, catalog, orders, locale),
        None => Ok(Vec::new()),
    }
}

/// `GET MedicationRequest?patient=…|encounter=…[&status=active][&fulfillerStatus=…]
/// [&_revinclude=MedicationDispense:prescription][&_include=MedicationRequest:encounter]` —
/// privilege: Get Orders (and Get Medication Dispense for the dispenses).
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Orders"])?;
    let with_dispenses = includes(&query, "_revinclude", "MedicationDispense:prescription");
    if with_dispenses {
        caller.require(&["Get Medication Dispense"])?;
    }
    let catalog = state.catalog.load();
    let snomed = crate::domains::order::rules::OrderEntry::of(&state).snomed;
    let locale = caller.locale(&catalog);
    let now = datetime_key(Utc::now());
    let Some(orders) = orders_searched(&state, &query)? else {
        return Ok(crate::http::fhir::invalid(
            "MedicationRequest searches name a patient (patient, subject) or an encounter",
        ));
    };
    let status = param(&query, "status").map(str::to_ascii_lowercase);
    let fulfiller = match param(&query, "fulfillerStatus") {
        None => None,
        Some(f) => match FulfillerStatus::parse(f) {
            Some(s) => Some(s),
            None => {
                return Ok(crate::http::fhir::invalid(&format!(
                    "fulfillerStatus: '{f}' is not a fulfiller status"
                )));
            }
        },
    };
    let matching: Vec<&OrderRecord> = orders
        .iter()
        .filter(|o| is_request(o))
        .filter(|o| {
            status
                .as_deref()
                .is_none_or(|s| s != "active" || o.is_active(&now))
        })
        .filter(|o| fulfiller.is_none_or(|f| o.fulfiller_status == Some(f)))
        .collect();
    let w = crate::http::fhir::window(&query);
    let page: Vec<&OrderRecord> = matching
        .iter()
        .skip(w.start)
        .take(w.limit)
        .copied()
        .collect();
    let resources: Vec<Value> = page
        .iter()
        .map(|o| medication_request_json(&state, &catalog, &snomed, o, &locale))
        .collect();
    let mut included = Vec::new();
    if includes(&query, "_include", "MedicationRequest:encounter") {
        let mut seen = std::collections::BTreeSet::new();
        for o in &page {
            if seen.insert(o.encounter.clone())
                && let Some(registered) =
                    crate::domains::order::repr::order_encounters(&state.store)
                && let Some(e) = (registered.fhir)(&state.store, &catalog, &o.encounter)?
            {
                included.push(e);
            }
        }
    }
    if with_dispenses {
        included.extend(dispenses_json(&state, &catalog, &page, &locale)?);
    }
    Ok(fhir(
        StatusCode::OK,
        mixed_bundle(
            &base(&state, &caller),
            "MedicationRequest",
            &query,
            &w,
            Listing {
                total: matching.len(),
                matches: resources,
                included,
            },
        ),
    ))
}

/// `GET MedicationRequest/{id}` (a discontinuation is not one: 404) — privilege: Get Orders.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Orders"])?;
    let catalog = state.catalog.load();
    let snomed = crate::domains::order::rules::OrderEntry::of(&state).snomed;
    match store::get(&state.store, &id)? {
        Some(o) if is_request(&o) && !o.voiding.voided => Ok(fhir(
            StatusCode::OK,
            medication_request_json(&state, &catalog, &snomed, &o, &caller.locale(&catalog)),
        )),
        _ => Ok(not_found("MedicationRequest", &id)),
    }
}

/// `PATCH MedicationRequest/{id}` with a JSON merge patch: only the fulfiller-status
/// extension may change (`valueCode` null or the extension left out clears it), as the
/// dispensing app pauses, closes and completes prescriptions — privilege: Edit Orders.
pub async fn patch(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Orders"])?;
    if let Some(k) = body
        .keys()
        .find(|k| !matches!(k.as_str(), "extension" | "resourceType" | "id"))
    {
        return Ok(outcome(
            StatusCode::BAD_REQUEST,
            "error",
            "not-supported",
            &format!("Only the fulfiller status of a MedicationRequest can be changed, not {k}"),
        ));
    }
    // A merge patch leaves out what it does not change: no `extension`, no change; the
    // extension left out of the list, or its `valueCode` null, clears the status.
    let status = match body.get("extension") {
        None => return read_after_patch(&state, &caller, &id),
        Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let ext = items
                .iter()
                .find(|e| e.get("url").and_then(Value::as_str) == Some(FULFILLER_STATUS_EXT));
            match ext.and_then(|e| e.get("valueCode")) {
                None | Some(Value::Null) => None,
                Some(Value::String(code)) => match FulfillerStatus::parse(code) {
                    Some(s) => Some(s),
                    None => {
                        return Ok(crate::http::fhir::invalid(&format!(
                            "'{code}' is not a fulfiller status"
                        )));
                    }
                },
                Some(_) => return Ok(crate::http::fhir::invalid("The fulfiller status is a code")),
            }
        }
        Some(_) => return Ok(crate::http::fhir::invalid("extension must be a list")),
    };
    let user = caller.user_uuid();
    let st = state.clone();
    let wanted = id.clone();
    let updated = blocking(move || {
        let _one_writer = st.store.write_lock();
        let Some(old) = store::get(&st.store, &id)?.filter(|o| is_request(o) && !o.voiding.voided)
        else {
            return Ok(None);
        };
        let mut o = old.clone();
        o.fulfiller_status = status;
        o.audit.changed(&user, Utc::now());
        store::put(&st.store, &old, &o)?;
        Ok::<_, ApiError>(Some(o))
    })
    .await?;
    let catalog = state.catalog.load();
    let snomed = crate::domains::order::rules::OrderEntry::of(&state).snomed;
    Ok(match updated {
        Some(o) => fhir(
            StatusCode::OK,
            medication_request_json(&state, &catalog, &snomed, &o, &caller.locale(&catalog)),
        ),
        None => not_found("MedicationRequest", &wanted),
    })
}

/// The MedicationRequest a patch that changes nothing answers with.
fn read_after_patch(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Response> {
    let catalog = state.catalog.load();
    let snomed = crate::domains::order::rules::OrderEntry::of(state).snomed;
    Ok(match store::get(&state.store, id)? {
        Some(o) if is_request(&o) && !o.voiding.voided => fhir(
            StatusCode::OK,
            medication_request_json(state, &catalog, &snomed, &o, &caller.locale(&catalog)),
        ),
        _ => not_found("MedicationRequest", id),
    })
}

/// `GET Medication/{id}` — privilege: Get Concepts.
pub async fn medication(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let catalog = state.catalog.load();
    Ok(match catalog.drug(&id) {
        Some(d) => fhir(
            StatusCode::OK,
            medication_json(&catalog, d, &caller.locale(&catalog)),
        ),
        None => not_found("Medication", &id),
    })
}

/// `GET Medication[?code=concept uuid or SOURCE:CODE]` (the drugs of a concept: the
/// formulations the dispensing app offers) — privilege: Get Concepts.
pub async fn medications(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let catalog = state.catalog.load();
    let locale = caller.locale(&catalog);
    let concept = param(&query, "code").map(|c| {
        let c = c.rsplit('|').next().unwrap_or(c);
        catalog
            .concept(c)
            .map(|x| x.uuid.clone())
            .unwrap_or_default()
    });
    let all: Vec<Value> = catalog
        .content
        .drugs
        .iter()
        .filter(|d| !d.retired && concept.as_ref().is_none_or(|c| &d.concept == c))
        .map(|d| medication_json(&catalog, d, &locale))
        .collect();
    Ok(fhir(
        StatusCode::OK,
        paged_bundle(&base(&state, &caller), "Medication", &query, all),
    ))
}

/// A searchset Bundle of every match, cut to the page `_count` and `_getpagesoffset` ask.
pub fn paged_bundle(base: &str, kind: &str, query: &[(String, String)], all: Vec<Value>) -> Value {
    let w = crate::http::fhir::window(query);
    let total = all.len();
    let page: Vec<Value> = all.into_iter().skip(w.start).take(w.limit).collect();
    mixed_bundle(
        base,
        kind,
        query,
        &w,
        Listing {
            total,
            matches: page,
            included: vec![],
        },
    )
}

/// Whether an order is a ServiceRequest: a test order, not a discontinuation.
pub fn is_service_request(o: &OrderRecord) -> bool {
    o.class == OrderClass::Test && o.action != Action::Discontinue
}

/// fhir2's status of a test order: `completed` once the laboratory completed it, `active`
/// while it stands, `revoked` once stopped or voided, `unknown` once expired.
fn service_status(o: &OrderRecord, now: &str) -> &'static str {
    if o.fulfiller_status == Some(FulfillerStatus::Completed) {
        "completed"
    } else if o.voiding.voided || o.date_stopped.as_deref().is_some_and(|s| s <= now) {
        "revoked"
    } else if o.is_active(now) {
        "active"
    } else {
        "unknown"
    }
}

/// A test order as fhir2 translates it to a ServiceRequest: the test's concept, the
/// patient, the encounter it was placed in, who ordered it, when it stands.
pub fn service_request_json(
    state: &AppState,
    catalog: &Catalog,
    o: &OrderRecord,
    locale: &str,
) -> Value {
    let now = datetime_key(Utc::now());
    let mut r = Map::new();
    r.insert("resourceType".into(), json!("ServiceRequest"));
    r.insert("id".into(), json!(o.uuid));
    if let Some(updated) = crate::wire::fhir_datetime(
        o.audit
            .date_changed
            .as_deref()
            .unwrap_or(&o.audit.date_created),
    ) {
        r.insert("meta".into(), json!({"lastUpdated": updated}));
    }
    let mut identifiers = vec![json!({"use": "usual", "value": o.order_number})];
    if let Some(accession) = &o.accession_number {
        identifiers.push(
            json!({"use": "secondary", "type": {"text": "Accession number"}, "value": accession}),
        );
    }
    r.insert("identifier".into(), json!(identifiers));
    r.insert("status".into(), json!(service_status(o, &now)));
    r.insert("intent".into(), json!("order"));
    r.insert(
        "priority".into(),
        json!(if o.urgency == crate::domains::order::Urgency::Stat {
            "stat"
        } else {
            "routine"
        }),
    );
    r.insert("code".into(), codeable(catalog, Some(&o.concept), locale));
    r.insert(
        "subject".into(),
        patient_reference(&state.store, &o.patient),
    );
    r.insert(
        "encounter".into(),
        json!({"reference": format!("Encounter/{}", o.encounter), "type": "Encounter"}),
    );
    r.insert("requester".into(), practitioner(&state.store, &o.orderer));
    let mut period = Map::new();
    if let Some(start) =
        crate::wire::fhir_datetime(o.scheduled_date.as_deref().unwrap_or(&o.date_activated))
    {
        period.insert("start".into(), json!(start));
    }
    if let Some(end) = o
        .date_stopped
        .as_deref()
        .or(o.auto_expire_date.as_deref())
        .and_then(crate::wire::fhir_datetime)
    {
        period.insert("end".into(), json!(end));
    }
    if !period.is_empty() {
        r.insert("occurrencePeriod".into(), Value::Object(period));
    }
    if let Some(reason) = &o.order_reason {
        r.insert(
            "reasonCode".into(),
            json!([codeable(catalog, Some(reason), locale)]),
        );
    } else if let Some(text) = o
        .order_reason_non_coded
        .as_deref()
        .filter(|t| !t.trim().is_empty())
    {
        r.insert("reasonCode".into(), json!([{"text": text}]));
    }
    let notes: Vec<Value> = [o.instructions.as_deref(), o.comment_to_fulfiller.as_deref()]
        .into_iter()
        .flatten()
        .filter(|t| !t.trim().is_empty())
        .map(|t| json!({"text": t}))
        .collect();
    if !notes.is_empty() {
        r.insert("note".into(), json!(notes));
    }
    // The specimen's kind, named: this server keeps no Specimen resource to reference.
    if let Some(name) = o
        .test
        .as_ref()
        .and_then(|t| t.specimen_source.as_deref())
        .and_then(|s| crate::http::fhir::concept_codeable(catalog, s, locale).text)
    {
        r.insert("specimen".into(), json!([{ "display": name }]));
    }
    Value::Object(r)
}

/// `GET ServiceRequest?patient=…|subject=…|encounter=…[&code=…][&status=…]`: test orders,
/// newest first, as the laboratory's systems read them — privilege: Get Orders.
pub async fn service_requests(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Orders"])?;
    let catalog = state.catalog.load();
    let locale = caller.locale(&catalog);
    let now = datetime_key(Utc::now());
    let Some(orders) = orders_searched(&state, &query)? else {
        return Ok(crate::http::fhir::invalid(
            "ServiceRequest searches name a patient (patient, subject) or an encounter",
        ));
    };
    let codes = crate::http::fhir::concepts_param(&catalog, &query, &["code"]);
    let statuses: Option<Vec<String>> = param(&query, "status").map(|s| {
        s.split(',')
            .map(|x| x.trim().to_ascii_lowercase())
            .collect()
    });
    let matching: Vec<&OrderRecord> = orders
        .iter()
        .filter(|o| is_service_request(o))
        .filter(|o| codes.is_empty() || codes.contains(&o.concept))
        .filter(|o| {
            statuses
                .as_ref()
                .is_none_or(|s| s.iter().any(|x| x == service_status(o, &now)))
        })
        .collect();
    let w = crate::http::fhir::window(&query);
    let resources: Vec<Value> = matching
        .iter()
        .skip(w.start)
        .take(w.limit)
        .map(|o| service_request_json(&state, &catalog, o, &locale))
        .collect();
    Ok(fhir(
        StatusCode::OK,
        crate::http::fhir::search_bundle(
            &base(&state, &caller),
            "ServiceRequest",
            &query,
            matching.len(),
            w.start,
            w.limit,
            resources,
        ),
    ))
}

/// `GET ServiceRequest/{id}`: a test order (a discontinuation or a voided one is 404) —
/// privilege: Get Orders.
pub async fn service_request(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Orders"])?;
    let catalog = state.catalog.load();
    match store::get(&state.store, &id)? {
        Some(o) if is_service_request(&o) && !o.voiding.voided => Ok(fhir(
            StatusCode::OK,
            service_request_json(&state, &catalog, &o, &caller.locale(&catalog)),
        )),
        _ => Ok(not_found("ServiceRequest", &id)),
    }
}
