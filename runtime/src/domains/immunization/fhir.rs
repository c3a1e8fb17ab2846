//! FHIR R4 `Immunization`: search by patient, read, create, replace (`PUT`) and delete, as
//! fhir2 translates them to and from an obs group and as the O3 immunizations app sends
//! them (its `encounter` reference names the visit).

use crate::catalog::Catalog;
use crate::domains::encounter::body::parse_obs;
use crate::domains::encounter::store::{self as encounters, Change, ObsQuery};
use crate::domains::encounter::{EncounterRecord, ObsRecord, ObsValue};
use crate::domains::immunization::*;
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fhir::{
    Written, base, concept_codeable, fhir, invalid, iso, not_found, outcome, patient_param,
    reference_id, search_bundle, unprocessable, window,
};
use crate::http::{Caller, JsonBody, QueryPairs, blocking};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use crate::wire::{datetime_key, parse_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The group's and members' concepts, as uuids of the content.
struct Concepts {
    group: String,
    /// (CIEL code, uuid) of each member concept the content defines.
    members: Vec<(&'static str, String)>,
}

impl Concepts {
    fn of(catalog: &Catalog) -> Option<Concepts> {
        let uuid = |code: &str| catalog.concept(code).map(|c| c.uuid.clone());
        let members = [
            VACCINE,
            DATE,
            DOSE,
            MANUFACTURER,
            LOT,
            EXPIRY,
            NOTE,
            NEXT_DOSE,
        ]
        .into_iter()
        .filter_map(|code| uuid(code).map(|u| (code, u)))
        .collect::<Vec<_>>();
        let has = |code: &str| members.iter().any(|(c, _)| *c == code);
        (has(VACCINE) && has(DATE)).then_some(())?;
        Some(Concepts {
            group: uuid(GROUP)?,
            members,
        })
    }

    fn uuid(&self, code: &str) -> Option<&str> {
        self.members
            .iter()
            .find(|(c, _)| *c == code)
            .map(|(_, u)| u.as_str())
    }
}

fn no_concepts() -> Response {
    invalid(
        "The content package does not define the immunization concepts (CIEL 1421 with 984 and 1410)",
    )
}

/// A date question's answer as FHIR writes a moment. A content may define the date
/// questions as Date rather than Datetime (the reference application's does); OpenMRS keeps
/// both in one column, so the date is its midnight.
fn moment(v: Option<&ObsValue>) -> Option<Value> {
    match v {
        Some(ObsValue::Datetime(t)) => Some(iso(t)),
        Some(ObsValue::Date(d)) => Some(iso(&format!("{d}T00:00:00.000Z"))),
        _ => None,
    }
}

/// An immunization as fhir2's translator writes it.
fn immunization_json(
    group: &ObsRecord,
    members: &[ObsRecord],
    encounter: Option<&EncounterRecord>,
    concepts: &Concepts,
    administering_role: Option<&str>,
    catalog: &Catalog,
    locale: &str,
) -> Value {
    let value = |code: &str| {
        let uuid = concepts.uuid(code)?;
        members.iter().find(|m| m.concept == uuid).map(|m| &m.value)
    };
    let mut r = json!({
        "resourceType": "Immunization",
        "id": group.uuid,
        "meta": {"lastUpdated": iso(group.audit.date_changed.as_deref().unwrap_or(&group.audit.date_created))},
        "status": "completed",
        "patient": {"reference": format!("Patient/{}", group.person), "type": "Patient"},
    });
    if let Some(ObsValue::Coded(vaccine)) = value(VACCINE) {
        r["vaccineCode"] =
            serde_json::to_value(concept_codeable(catalog, vaccine, locale)).unwrap_or(Value::Null);
    }
    if let Some(e) = encounter {
        let visit = e.visit.as_deref().unwrap_or(&e.uuid);
        r["encounter"] = json!({"reference": format!("Encounter/{visit}"), "type": "Encounter"});
        if let Some(p) = e
            .providers
            .iter()
            .find(|p| Some(p.encounter_role.as_str()) == administering_role)
        {
            r["performer"] = json!([{"actor": {"reference": format!("Practitioner/{}", p.provider), "type": "Practitioner"}}]);
        }
    }
    if let Some(t) = moment(value(DATE)) {
        r["occurrenceDateTime"] = t;
    }
    if let Some(ObsValue::Numeric(n)) = value(DOSE) {
        r["protocolApplied"] = json!([{"doseNumberPositiveInt": *n as u64}]);
    }
    if let Some(ObsValue::Text(m)) = value(MANUFACTURER) {
        r["manufacturer"] = json!({"display": m});
    }
    if let Some(ObsValue::Text(l)) = value(LOT) {
        r["lotNumber"] = json!(l);
    }
    if let Some(ObsValue::Date(d)) = value(EXPIRY) {
        r["expirationDate"] = json!(d);
    }
    if let Some(ObsValue::Text(n)) = value(NOTE) {
        r["note"] = json!([{"text": n}]);
    }
    if let Some(t) = moment(value(NEXT_DOSE)) {
        r["extension"] = json!([{"url": NEXT_DOSE_EXTENSION, "valueDateTime": t}]);
    }
    r
}

/// What a resource says, checked for form; `members` are the group's members as REST
/// observation bodies.
struct Parsed {
    patient: String,
    visit: String,
    location: Option<String>,
    performer: Option<String>,
    members: Vec<Map<String, Value>>,
}

/// Reads an Immunization resource. `Err` is the answer: 400 for what is malformed, 422
/// (fhir2's) for what is missing.
fn parse(
    body: &Map<String, Value>,
    concepts: &Concepts,
    catalog: &Catalog,
) -> Result<Parsed, Box<Response>> {
    let mut inv = Invalid::default();
    if body.get("resourceType").and_then(Value::as_str) != Some("Immunization") {
        return Err(Box::new(invalid("resourceType must be Immunization")));
    }
    let patient = reference_id(body.get("patient"), "Patient");
    if patient.is_none() {
        inv.global("No patient was specified for this request");
    }
    let visit = reference_id(body.get("encounter"), "Encounter");
    if visit.is_none() {
        inv.global(
            "No encounter was specified for this request: an immunization is recorded in a visit",
        );
    }
    let mut members = Vec::new();
    let mut member = |code: &str, value: Value| {
        if let Some(uuid) = concepts.uuid(code) {
            let mut m = Map::new();
            m.insert("concept".into(), json!(uuid));
            m.insert("value".into(), value);
            members.push(m);
        }
    };
    // The vaccine: the one coding without a system is a concept uuid; else a mapping.
    let codings: Vec<&Value> = body
        .get("vaccineCode")
        .and_then(|v| v.get("coding"))
        .and_then(Value::as_array)
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    let local: Vec<&str> = codings
        .iter()
        .filter(|c| c.get("system").is_none_or(Value::is_null))
        .filter_map(|c| c.get("code")?.as_str())
        .collect();
    let vaccine = if local.len() > 1 {
        inv.global(format!(
            "Multiple system-less codings found for the vaccine: {}. No unique concept could be identified",
            local.join(" and ")
        ));
        None
    } else if let Some(code) = local.first() {
        catalog.concept(code).map(|c| c.uuid.clone())
    } else {
        codings.iter().find_map(|c| {
            let system = c.get("system")?.as_str()?;
            let code = c.get("code")?.as_str()?;
            catalog
                .concept_of_coding(Some(system), code)
                .map(|c| c.uuid.clone())
        })
    };
    match vaccine {
        Some(v) => member(VACCINE, json!(v)),
        None if local.len() <= 1 => {
            inv.global("Could not find a valid coding for this immunization's vaccine")
        }
        None => {}
    }
    match body.get("occurrenceDateTime").and_then(Value::as_str) {
        None => inv.global("An Immunization must have a valid occurrenceDateTime value"),
        Some(t) => match parse_datetime(t) {
            Some(t) => member(DATE, json!(datetime_key(t))),
            None => {
                return Err(Box::new(invalid(&format!(
                    "occurrenceDateTime: '{t}' is not a date and time"
                ))));
            }
        },
    }
    match body
        .get("protocolApplied")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        None | Some([]) => {}
        Some([one]) => match one.get("doseNumberPositiveInt") {
            None | Some(Value::Null) => {}
            Some(n) => match n.as_u64().filter(|n| *n >= 1) {
                Some(n) => member(DOSE, json!(n)),
                None => {
                    return Err(Box::new(invalid(
                        "protocolApplied.doseNumberPositiveInt must be a whole number from 1",
                    )));
                }
            },
        },
        Some(_) => inv.global("Only one protocol applied is supported for each immunization"),
    }
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(m) = text(body.get("manufacturer").and_then(|m| m.get("display"))) {
        member(MANUFACTURER, json!(m));
    }
    if let Some(l) = text(body.get("lotNumber")) {
        member(LOT, json!(l));
    }
    if let Some(d) = text(body.get("expirationDate")) {
        match expiry_day(&d) {
            Some(day) => member(EXPIRY, json!(day.format("%Y-%m-%d").to_string())),
            None => {
                return Err(Box::new(invalid(&format!(
                    "expirationDate: '{d}' is not a date"
                ))));
            }
        }
    }
    if let Some(n) = text(
        body.get("note")
            .and_then(Value::as_array)
            .and_then(|n| n.first())
            .and_then(|n| n.get("text")),
    ) {
        member(NOTE, json!(n));
    }
    let next = body
        .get("extension")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|e| e.get("url").and_then(Value::as_str) == Some(NEXT_DOSE_EXTENSION))
        .and_then(|e| e.get("valueDateTime")?.as_str());
    if let Some(t) = next {
        match parse_datetime(t) {
            Some(t) => member(NEXT_DOSE, json!(datetime_key(t))),
            None => {
                return Err(Box::new(invalid(&format!(
                    "nextDoseDate: '{t}' is not a date and time"
                ))));
            }
        }
    }
    let performer = match body
        .get("performer")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        None | Some([]) => None,
        Some([one]) => reference_id(one.get("actor"), "Practitioner"),
        Some(_) => {
            inv.global("More than one performer was specified. Only a single performer is supported for each immunization");
            None
        }
    };
    if !inv.is_empty() {
        return Err(Box::new(unprocessable(&inv)));
    }
    Ok(Parsed {
        patient: patient.unwrap_or_default(),
        visit: visit.unwrap_or_default(),
        location: reference_id(body.get("location"), "Location"),
        performer,
        members,
    })
}

/// The day an `expirationDate` names: a date as it is; an instant (the app sends the chosen
/// day's local midnight in UTC, `2027-06-29T23:00:00.000Z` for 30 June in Kinshasa) as the
/// day whose midnight is nearest, which is that local day for any offset within 12 hours.
fn expiry_day(s: &str) -> Option<chrono::NaiveDate> {
    if s.len() == 10 {
        return chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
    }
    parse_datetime(s).map(|t| (t + chrono::Duration::hours(12)).date_naive())
}

/// The encounter roles' and type's settings (fhir2's), or the answer saying which is missing.
fn encounter_settings(state: &AppState) -> Result<(String, String), Box<Response>> {
    let get = |name: &str| state.setting(name).filter(|v| !v.trim().is_empty());
    match (
        get("fhir2.immunizationsEncounterTypeUuid"),
        get("fhir2.administeringEncounterRoleUuid"),
    ) {
        (Some(t), Some(r)) => Ok((t.trim().to_string(), r.trim().to_string())),
        _ => Err(Box::new(invalid(
            "Immunizations need the settings fhir2.immunizationsEncounterTypeUuid and fhir2.administeringEncounterRoleUuid",
        ))),
    }
}

fn found(
    state: &AppState,
    group: &ObsRecord,
    concepts: &Concepts,
    caller: &Caller,
    status: StatusCode,
) -> ApiResult<Response> {
    let catalog = state.catalog.load();
    let members = encounters::group_members(&state.store, &group.uuid)?;
    let encounter = match &group.encounter {
        Some(e) => encounters::encounter(&state.store, e)?,
        None => None,
    };
    let role = state.setting("fhir2.administeringEncounterRoleUuid");
    Ok(fhir(
        status,
        immunization_json(
            group,
            &members,
            encounter.as_ref(),
            concepts,
            role.as_deref(),
            &catalog,
            &caller.locale(&catalog),
        ),
    ))
}

/// `GET Immunization?patient=…` (newest first, paged with `next` links) — privilege: Get
/// Observations.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let Some(patient) = patient_param(&query) else {
        return Ok(invalid("Immunization searches need a patient"));
    };
    let catalog = state.catalog.load();
    let Some(concepts) = Concepts::of(&catalog) else {
        return Ok(no_concepts());
    };
    let w = window(&query);
    let q = ObsQuery {
        values: Vec::new(),
        patient: Some(patient),
        concepts: vec![concepts.group.clone()],
        ..ObsQuery::default()
    };
    let (groups, page) = encounters::list_obs(&state.store, &q, w)?;
    let role = state.setting("fhir2.administeringEncounterRoleUuid");
    let locale = caller.locale(&catalog);
    let mut seen: HashMap<String, Option<EncounterRecord>> = HashMap::new();
    let mut resources = Vec::with_capacity(groups.len());
    for g in &groups {
        let members = encounters::group_members(&state.store, &g.uuid)?;
        let encounter = match &g.encounter {
            Some(e) => {
                if !seen.contains_key(e) {
                    seen.insert(e.clone(), encounters::encounter(&state.store, e)?);
                }
                seen.get(e).and_then(Option::as_ref)
            }
            None => None,
        };
        resources.push(immunization_json(
            g,
            &members,
            encounter,
            &concepts,
            role.as_deref(),
            &catalog,
            &locale,
        ));
    }
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "Immunization",
            &query,
            page.total.unwrap_or(resources.len()),
            w.start,
            w.limit,
            resources,
        ),
    ))
}

/// The immunization group `id`, if it is one.
fn group_of(state: &AppState, id: &str, group_concept: &str) -> ApiResult<Option<ObsRecord>> {
    Ok(encounters::obs(&state.store, id)?.filter(|o| o.concept == group_concept))
}

/// fhir2's answer for a deleted immunization.
fn gone(id: &str) -> Response {
    outcome(
        StatusCode::GONE,
        "error",
        "deleted",
        &format!("Resource of type Immunization with ID {id} is gone/deleted"),
    )
}

/// `GET Immunization/{id}` — privilege: Get Observations.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let Some(concepts) = Concepts::of(&state.catalog.load()) else {
        return Ok(no_concepts());
    };
    match group_of(&state, &id, &concepts.group)? {
        None => Ok(not_found("Immunization", &id)),
        Some(g) if g.voiding.voided => Ok(gone(&id)),
        Some(g) => found(&state, &g, &concepts, &caller, StatusCode::OK),
    }
}

/// The members' REST bodies parsed into observations of `group` in `encounter`, with the
/// group's datetime and location, as fhir2 gives them.
fn members_of(
    state: &AppState,
    parsed: &Parsed,
    encounter: &EncounterRecord,
    group: &ObsRecord,
    audit: &Audit,
    inv: &mut Invalid,
) -> ApiResult<Vec<ObsRecord>> {
    let mut out = Vec::new();
    for m in &parsed.members {
        let mut m = m.clone();
        m.insert("obsDatetime".into(), json!(group.datetime));
        if let Some(l) = &group.location {
            m.insert("location".into(), json!(l));
        }
        parse_obs(
            state,
            &m,
            "",
            &parsed.patient,
            Some(encounter),
            Some(&group.uuid),
            audit,
            inv,
            &mut out,
        )?;
    }
    Ok(out)
}

/// `POST Immunization` — privilege: Add Observations (and Add Encounters when the visit
/// has no immunization encounter yet). 201 with the resource.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Observations"])?;
    let catalog = state.catalog.load();
    let Some(concepts) = Concepts::of(&catalog) else {
        return Ok(no_concepts());
    };
    let parsed = match parse(&body, &concepts, &catalog) {
        Ok(p) => p,
        Err(answer) => return Ok(*answer),
    };
    let (encounter_type, role) = match encounter_settings(&state) {
        Ok(s) => s,
        Err(answer) => return Ok(*answer),
    };
    let may_add_encounters = caller.grants.has("Add Encounters");
    // As fhir2 does, a location this server does not know falls back to the visit's.
    let mut parsed = parsed;
    parsed.location = parsed.location.filter(|l| catalog.location(l).is_some());
    let group_concept = concepts.group.clone();
    let user = caller.user_uuid();
    let st = state.clone();
    let written = blocking(move || {
        let _one_writer = st.store.write_lock();
        let refuse = |m: String| {
            let mut inv = Invalid::default();
            inv.global(m);
            Ok(Written::Refused(unprocessable(&inv)))
        };
        match st.store.patient(&parsed.patient)? {
            Some(p) if !p.voided => {}
            _ => {
                return refuse(format!(
                    "Could not find patient matching Patient/{}",
                    parsed.patient
                ));
            }
        }
        let visit = match crate::domains::visit::store::get(&st.store, &parsed.visit)? {
            Some(v) if !v.voiding.voided => v,
            _ => {
                return refuse(format!(
                    "Could not find visit matching Encounter/{}",
                    parsed.visit
                ));
            }
        };
        if visit.patient != parsed.patient {
            return refuse(format!(
                "The visit '{}' does not belong to patient '{}'",
                visit.uuid, parsed.patient
            ));
        }
        let now = Utc::now();
        let audit = Audit::new(&user, now);
        let mut inv = Invalid::default();
        // The visit's latest immunization encounter, or a new one.
        let existing = encounters::of_visit(&st.store, &visit.uuid)?
            .into_iter()
            .filter(|e| e.encounter_type == encounter_type)
            .max_by(|a, b| a.datetime.cmp(&b.datetime));
        let (encounter, is_new) = match existing {
            Some(e) => (e, false),
            None => {
                if !may_add_encounters {
                    return Err(ApiError::Forbidden {
                        privileges: vec!["Add Encounters".into()],
                    });
                }
                let mut providers = Map::new();
                if let Some(p) = &parsed.performer {
                    providers.insert(
                        "encounterProviders".into(),
                        json!([{"provider": p, "encounterRole": role}]),
                    );
                }
                let e = EncounterRecord {
                    v: 1,
                    uuid: crate::store::record::new_uuid(),
                    patient: parsed.patient.clone(),
                    encounter_type: encounter_type.clone(),
                    datetime: visit.stop.clone().unwrap_or_else(|| datetime_key(now)),
                    location: parsed.location.clone().or_else(|| visit.location.clone()),
                    form: None,
                    visit: Some(visit.uuid.clone()),
                    providers: crate::domains::encounter::rest::providers(&st, &providers)?
                        .unwrap_or_default(),
                    audit: audit.clone(),
                    voiding: Voiding::default(),
                };
                crate::domains::encounter::validate(&st.clinic(), &e, Some(&visit), &mut inv);
                (e, true)
            }
        };
        // The group and its members share one datetime (the recording's) and location.
        let mut shared = Map::new();
        shared.insert("obsDatetime".into(), json!(audit.date_created));
        if let Some(l) = parsed.location.as_ref().or(encounter.location.as_ref()) {
            shared.insert("location".into(), json!(l));
        }
        let mut group_body = shared.clone();
        group_body.insert("concept".into(), json!(group_concept));
        let members = parsed.members.iter().map(|m| {
            let mut m = m.clone();
            m.extend(shared.clone());
            Value::Object(m)
        });
        group_body.insert("groupMembers".into(), Value::Array(members.collect()));
        let mut obs = Vec::new();
        parse_obs(
            &st,
            &group_body,
            "",
            &parsed.patient,
            Some(&encounter),
            None,
            &audit,
            &mut inv,
            &mut obs,
        )?;
        if !inv.is_empty() {
            return Ok(Written::Refused(unprocessable(&inv)));
        }
        encounters::write(
            &st.store,
            &Change {
                encounter: is_new.then_some((None, &encounter)),
                obs: obs.iter().map(|o| (None, o)).collect(),
            },
        )?;
        // `parse_obs` puts the group first, its members after it.
        match obs.into_iter().next() {
            Some(group) => Ok(Written::Done(group)),
            None => Err(ApiError::internal("an immunization without its group")),
        }
    })
    .await?;
    let group = match written {
        Written::Done(g) => g,
        Written::Refused(answer) => return Ok(answer),
    };
    let res = found(&state, &group, &concepts, &caller, StatusCode::CREATED)?;
    Ok(crate::http::fhir::located(
        res,
        &state,
        &caller,
        "Immunization",
        &group.uuid,
    ))
}

/// `PUT Immunization/{id}`: the members whose value changed are voided and recorded anew
/// (pointing back to the old one), those left out voided, new ones added — privilege: Edit
/// Observations.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Observations"])?;
    match body.get("id").and_then(Value::as_str) {
        None => return Ok(invalid("Immunization resource is missing id")),
        Some(body_id) if body_id != id => {
            return Ok(invalid(&format!(
                "Resource id {body_id} does not match the id {id} of the request"
            )));
        }
        Some(_) => {}
    }
    let catalog = state.catalog.load();
    let Some(concepts) = Concepts::of(&catalog) else {
        return Ok(no_concepts());
    };
    let parsed = match parse(&body, &concepts, &catalog) {
        Ok(p) => p,
        Err(answer) => return Ok(*answer),
    };
    let user = caller.user_uuid();
    let st = state.clone();
    let group_concept = concepts.group.clone();
    let member_concepts: Vec<String> = concepts.members.iter().map(|(_, u)| u.clone()).collect();
    let written = blocking(move || {
        let _one_writer = st.store.write_lock();
        let group = match group_of(&st, &id, &group_concept)? {
            Some(g) if !g.voiding.voided => g,
            Some(_) => return Ok(Written::Refused(gone(&id))),
            None => return Ok(Written::Refused(not_found("Immunization", &id))),
        };
        if parsed.patient != group.person {
            return Ok(Written::Refused(invalid(
                "The patient of an immunization cannot be changed",
            )));
        }
        // A 1421 group posted through REST `obs` may have no encounter: not an immunization
        // fhir2 could have recorded, and not one to edit here.
        let Some(encounter) = group
            .encounter
            .as_deref()
            .map(|e| encounters::encounter(&st.store, e))
            .transpose()?
            .flatten()
        else {
            let mut inv = Invalid::default();
            inv.global(format!(
                "Immunization {id} is not recorded in a visit's encounter"
            ));
            return Ok(Written::Refused(unprocessable(&inv)));
        };
        if encounter
            .visit
            .as_deref()
            .is_some_and(|v| v != parsed.visit)
        {
            return Ok(Written::Refused(invalid(
                "An immunization stays in its visit: record it anew in the other visit",
            )));
        }
        let now = Utc::now();
        let audit = Audit::new(&user, now);
        let mut inv = Invalid::default();
        let fresh = members_of(&st, &parsed, &encounter, &group, &audit, &mut inv)?;
        if !inv.is_empty() {
            return Ok(Written::Refused(unprocessable(&inv)));
        }
        // Only the immunization's own members: another member a form may have added stays.
        let old: Vec<ObsRecord> = encounters::group_members(&st.store, &group.uuid)?
            .into_iter()
            .filter(|o| member_concepts.contains(&o.concept))
            .collect();
        let mut voided: Vec<(ObsRecord, ObsRecord)> = Vec::new();
        let mut added: Vec<ObsRecord> = Vec::new();
        // Each new value replaces at most one old one of its concept.
        let mut matched = vec![false; fresh.len()];
        for o in &old {
            let found = (0..fresh.len()).find(|i| !matched[*i] && fresh[*i].concept == o.concept);
            if let Some(i) = found {
                matched[i] = true;
                if fresh[i].value == o.value {
                    continue;
                }
            }
            let mut v = o.clone();
            v.voiding.void(&user, now, "Value updated");
            voided.push((o.clone(), v));
            if let Some(i) = found {
                let mut f = fresh[i].clone();
                f.previous_version = Some(o.uuid.clone());
                added.push(f);
            }
        }
        added.extend(
            fresh
                .iter()
                .zip(&matched)
                .filter(|(_, m)| !**m)
                .map(|(f, _)| f.clone()),
        );
        let mut g = group.clone();
        if !voided.is_empty() || !added.is_empty() {
            g.audit.changed(&user, now);
        }
        let mut change = Change::default();
        change.obs.push((Some(&group), &g));
        change.obs.extend(voided.iter().map(|(o, v)| (Some(o), v)));
        change.obs.extend(added.iter().map(|a| (None, a)));
        encounters::write(&st.store, &change)?;
        Ok(Written::Done(g))
    })
    .await?;
    match written {
        Written::Done(g) => found(&state, &g, &concepts, &caller, StatusCode::OK),
        Written::Refused(answer) => Ok(answer),
    }
}

/// `DELETE Immunization/{id}` voids the group and its members ("Voided via FHIR API") —
/// privilege: Delete Observations.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Delete Observations"])?;
    let Some(concepts) = Concepts::of(&state.catalog.load()) else {
        return Ok(no_concepts());
    };
    let user = caller.user_uuid();
    let st = state.clone();
    let done = blocking(move || {
        let _one_writer = st.store.write_lock();
        let Some(group) = group_of(&st, &id, &concepts.group)? else {
            return Ok::<_, ApiError>(Err(id));
        };
        if !group.voiding.voided {
            let now = Utc::now();
            let void = |o: &ObsRecord| {
                let mut v = o.clone();
                v.voiding.void(&user, now, "Voided via FHIR API");
                v
            };
            let members = encounters::group_members(&st.store, &group.uuid)?;
            let pairs: Vec<(ObsRecord, ObsRecord)> = std::iter::once(&group)
                .chain(&members)
                .map(|o| (o.clone(), void(o)))
                .collect();
            encounters::write(
                &st.store,
                &Change {
                    encounter: None,
                    obs: pairs.iter().map(|(o, v)| (Some(o), v)).collect(),
                },
            )?;
        }
        Ok(Ok(()))
    })
    .await?;
    Ok(match done {
        Ok(()) => outcome(
            StatusCode::OK,
            "information",
            "informational",
            "This resource has been deleted",
        ),
        Err(id) => not_found("Immunization", &id),
    })
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.fhir("/Immunization"),
            get(crate::domains::immunization::fhir::search)
                .post(crate::domains::immunization::fhir::create),
        )
        .route(
            &paths.fhir("/Immunization/{id}"),
            get(crate::domains::immunization::fhir::read)
                .put(crate::domains::immunization::fhir::update)
                .delete(crate::domains::immunization::fhir::delete),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The O3 immunization form read its saved dose back as undated when the content's
    /// vaccination date question is of type Date (found by the O3 chart suite).
    #[test]
    fn a_date_answer_is_a_moment_as_a_datetime_is() {
        assert_eq!(
            moment(Some(&ObsValue::Date("2024-03-08".into()))),
            Some(json!("2024-03-08T00:00:00+00:00"))
        );
        assert_eq!(
            moment(Some(&ObsValue::Datetime("2024-03-08T09:30:00.000Z".into()))),
            Some(json!("2024-03-08T09:30:00+00:00"))
        );
        assert_eq!(moment(Some(&ObsValue::Text("2024-03-08".into()))), None);
    }
}
