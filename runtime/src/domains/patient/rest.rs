//! `patient`: search (`?q=`, `?identifier=`), read, and creation validated as OpenMRS
//! validates it; with the person, name, identifier, address and attribute objects nested in
//! its representations.

use crate::domains::patient::body::build_patient;
use crate::domains::patient::repr::{PatientRes, PersonRes};
use crate::http::AppState;
use crate::http::body::{only_known, ref_uuid};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Paging, Rep, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, json, ok, param};
use crate::invalid::Invalid;
use crate::store::{PatientRecord, PatientVoiding, StoreError, identifier_key};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// `GET patient?q=…` and `GET patient?identifier=…` — privilege: Get Patients.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    search_as(&state, &caller, &query, "/patient").await
}

/// `GET person?q=…`: the persons matching, as `patient?q=` finds them (the persons a
/// relationship can name are patients') — privilege: Get People.
pub async fn person_search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get People"])?;
    search_as(&state, &caller, &query, "/person").await
}

/// A search of patients, rendered as patients or as persons (`path`).
async fn search_as(
    state: &Arc<AppState>,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
) -> ApiResult<Response> {
    let query = query.to_vec();
    let state = state.clone();
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Ref);
    let paging = Paging::from_query(&query)?;
    let (q, by_identifier) = match (param(&query, "q"), param(&query, "identifier")) {
        (Some(q), _) => (q, false),
        (None, Some(id)) => (id, true),
        (None, None) => {
            return Err(ApiError::BadRequest(
                "The Resource Does not Support the Requested Operation".into(),
            ));
        }
    };
    let include_dead = by_identifier
        || param(&query, "includeDead").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let min_chars = state.int_setting("minSearchCharacters", 2) as usize;
    // The matches are found under the index's lock; only the requested page's records are
    // then read from the store.
    let (total, page): (usize, Vec<String>) = {
        let index = state.patient_index().await?;
        let hits = if by_identifier {
            index.by_identifier(q)
        } else {
            index.search(q, include_dead, min_chars)
        };
        let page = hits
            .iter()
            .skip(paging.start)
            .take(paging.limit)
            .map(|u| u.to_string())
            .collect();
        (hits.len(), page)
    };
    if total == 0 {
        return Ok(ok(json!({"results": []})));
    }
    let page: Vec<&str> = page.iter().map(String::as_str).collect();
    let records = state.store.patients_in(&page)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let results = records
        .iter()
        .map(|p| {
            if path == "/person" {
                render(&PersonRes(p), &rep, &ctx)
            } else {
                render(&PatientRes(p), &rep, &ctx)
            }
        })
        .collect::<ApiResult<Vec<Value>>>()?;
    Ok(ok(paging.answer(
        results,
        paging.start.saturating_add(paging.limit) < total,
        paging.total_count.then_some(total),
        &caller.request_url(&state, path, &query),
    )))
}

/// `GET patient/{uuid}` — privilege: Get Patients.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let patient = state.store.patient(&uuid)?.ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &PatientRes(&patient),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `POST patient` — privilege: Add Patients. Answers 201 with the default representation
/// once the patient is durably stored.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Patients"])?;
    let record = create_record(&state, &caller, &body).await?;
    let catalog = state.catalog.load();
    let body = render(
        &PatientRes(&record),
        &Rep::Default,
        &caller.ctx(&state, &catalog),
    )?;
    Ok(json(StatusCode::CREATED, body))
}

/// Registers the patient a create-shaped body describes, by every rule of a registration
/// (the REST and FHIR creations both come here); answers it once durably stored and
/// searchable.
pub(crate) async fn create_record(
    state: &Arc<AppState>,
    caller: &Caller,
    body: &Map<String, Value>,
) -> ApiResult<PatientRecord> {
    let (record, keys) = build_patient(state, caller, body)?;
    let st = state.clone();
    let stored = record.clone();
    blocking(move || {
        if st.store.patient_exists(&stored.uuid)? {
            return Err(ApiError::BadRequest(format!(
                "A patient with uuid {} already exists",
                stored.uuid
            )));
        }
        match st.store.insert_patient(&stored, &keys) {
            Ok(()) => Ok(()),
            Err(StoreError::IdentifierInUse(id)) => {
                let mut inv = Invalid::default();
                inv.global(format!("Identifier {id} already in use by another patient"));
                Err(ApiError::Invalid(inv))
            }
            Err(e) => Err(ApiError::from(e)),
        }
    })
    .await?;
    state.patient_index_mut().await?.upsert(&record);
    Ok(record)
}

/// The create-shaped body of a stored patient, so that an edit is checked by exactly the
/// rules of a creation once the change is laid over it.
fn as_body(p: &PatientRecord) -> Map<String, Value> {
    let some = |pairs: Vec<(&str, Value)>| -> Value {
        Value::Object(
            pairs
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    };
    let names: Vec<Value> = p
        .names
        .iter()
        .map(|n| {
            some(vec![
                ("uuid", json!(n.uuid)),
                ("preferred", json!(n.preferred)),
                ("givenName", json!(n.given_name)),
                ("middleName", json!(n.middle_name)),
                ("familyName", json!(n.family_name)),
                ("familyName2", json!(n.family_name2)),
                ("prefix", json!(n.prefix)),
                ("degree", json!(n.degree)),
            ])
        })
        .collect();
    let addresses: Vec<Value> = p
        .addresses
        .iter()
        .map(|a| {
            let mut o = Map::new();
            o.insert("uuid".into(), json!(a.uuid));
            o.insert("preferred".into(), json!(a.preferred));
            for (k, v) in &a.fields {
                o.insert(k.clone(), json!(v));
            }
            Value::Object(o)
        })
        .collect();
    let attributes: Vec<Value> = p
        .attributes
        .iter()
        .map(|a| json!({"uuid": a.uuid, "attributeType": a.attribute_type, "value": a.value}))
        .collect();
    let identifiers: Vec<Value> = p
        .identifiers
        .iter()
        .map(|i| {
            some(vec![
                ("uuid", json!(i.uuid)),
                ("identifier", json!(i.identifier)),
                ("identifierType", json!(i.identifier_type)),
                ("location", json!(i.location)),
                ("preferred", json!(i.preferred)),
            ])
        })
        .collect();
    let person = some(vec![
        ("uuid", json!(p.uuid)),
        ("names", json!(names)),
        ("gender", json!(p.gender)),
        ("birthdate", json!(p.birthdate)),
        ("birthdateEstimated", json!(p.birthdate_estimated)),
        ("dead", json!(p.dead)),
        ("deathDate", json!(p.death_date)),
        ("causeOfDeath", json!(p.cause_of_death)),
        ("causeOfDeathNonCoded", json!(p.cause_of_death_non_coded)),
        ("attributes", json!(attributes)),
        ("addresses", json!(addresses)),
    ]);
    let mut body = Map::new();
    body.insert("person".into(), person);
    body.insert("identifiers".into(), json!(identifiers));
    body
}

/// The identifiers of a create-shaped body.
fn identifiers_of(body: &mut Map<String, Value>) -> ApiResult<&mut Vec<Value>> {
    body.get_mut("identifiers")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| ApiError::internal("a stored patient has identifiers"))
}

/// Clears `preferred` on every item, before another one becomes the preferred one.
fn prefer_none(list: &mut [Value]) {
    for e in list {
        e["preferred"] = json!(false);
    }
}

/// The uuid a list item names, if any.
fn item_uuid(v: &Value) -> Option<&str> {
    v.get("uuid").and_then(Value::as_str)
}

/// Lays a person change over the stored person, as OpenMRS applies `POST person/{uuid}`:
/// names and addresses with a known uuid are changed, others added (a new address becomes
/// the preferred one); an attribute replaces the one of its type (an empty value removes
/// it); `dead: false` clears the death date and cause.
fn merge_person(base: &mut Map<String, Value>, change: &Map<String, Value>) -> ApiResult<()> {
    for (key, value) in change {
        match (key.as_str(), value) {
            ("uuid", Value::String(u)) if base.get("uuid").and_then(Value::as_str) != Some(u) => {
                return Err(ApiError::BadRequest(
                    "Some properties are not allowed to be set: uuid".into(),
                ));
            }
            ("names" | "addresses", Value::Array(items)) => {
                let list = base
                    .entry(key.clone())
                    .or_insert_with(|| json!([]))
                    .as_array_mut()
                    .ok_or_else(|| ApiError::BadRequest(format!("person.{key} must be a list")))?;
                for item in items {
                    let Value::Object(fields) = item else {
                        return Err(ApiError::BadRequest(format!(
                            "person.{key} must be a list of objects"
                        )));
                    };
                    let known = item_uuid(item)
                        .and_then(|u| list.iter_mut().find(|e| item_uuid(e) == Some(u)));
                    match known {
                        Some(existing) => {
                            if let Value::Object(e) = existing {
                                e.extend(fields.clone());
                            }
                        }
                        None if key == "addresses" => {
                            let mut fields = fields.clone();
                            if fields.keys().all(|k| k == "uuid" || k == "preferred") {
                                continue; // O3 sends `{}` when no address was entered.
                            }
                            if fields.get("preferred") != Some(&json!(false)) {
                                prefer_none(list);
                                fields.insert("preferred".into(), json!(true));
                            }
                            list.push(Value::Object(fields));
                        }
                        None => {
                            let mut fields = fields.clone();
                            if fields.get("preferred") == Some(&json!(true)) {
                                prefer_none(list);
                            } else {
                                fields.insert("preferred".into(), json!(false));
                            }
                            list.push(Value::Object(fields));
                        }
                    }
                }
            }
            ("attributes", Value::Array(items)) => {
                let list = base
                    .entry("attributes")
                    .or_insert_with(|| json!([]))
                    .as_array_mut()
                    .ok_or_else(|| {
                        ApiError::BadRequest("person.attributes must be a list".into())
                    })?;
                for item in items {
                    let type_ref =
                        item.get("attributeType")
                            .and_then(ref_uuid)
                            .ok_or_else(|| {
                                ApiError::BadRequest(
                                    "person.attributes: attributeType is missing".into(),
                                )
                            })?;
                    let empty = matches!(item.get("value"), None | Some(Value::Null))
                        || item.get("value") == Some(&json!(""));
                    let position = list.iter().position(|e| {
                        e.get("attributeType").and_then(ref_uuid).as_deref() == Some(&type_ref)
                    });
                    match (position, empty) {
                        (Some(i), true) => {
                            list.remove(i);
                        }
                        (Some(i), false) => {
                            list[i]["value"] = item["value"].clone();
                        }
                        (None, true) => {}
                        (None, false) => {
                            let mut fresh = item.clone();
                            fresh["attributeType"] = json!(type_ref);
                            list.push(fresh);
                        }
                    }
                }
            }
            ("dead", Value::Bool(false)) => {
                base.insert("dead".into(), json!(false));
                for k in ["deathDate", "causeOfDeath", "causeOfDeathNonCoded"] {
                    base.remove(k);
                }
            }
            ("birthdate", _) => {
                base.remove("age");
                base.insert(key.clone(), value.clone());
            }
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
    // A death without `dead: true` said is still a death.
    if change.get("dead").is_none() && change.get("deathDate").is_some_and(|d| !d.is_null()) {
        base.insert("dead".into(), json!(true));
    }
    Ok(())
}

/// The uniqueness keys a stored patient's identifiers hold (see `identifier_key`).
fn keys_of(p: &PatientRecord, catalog: &crate::catalog::Catalog) -> Vec<String> {
    p.identifiers
        .iter()
        .filter_map(|i| {
            let t = catalog.identifier_type(&i.identifier_type)?;
            identifier_key(
                &t.uuid,
                t.uniqueness_behavior,
                i.location.as_deref(),
                &i.identifier,
            )
        })
        .collect()
}

/// Changes a stored patient: `change` edits its create-shaped body (see `as_body`), the
/// result is checked by every rule of a registration and stored with who changed it. Every
/// edit (person, names, attributes, identifiers) goes through here.
pub(crate) async fn change_patient(
    state: &Arc<AppState>,
    caller: &Caller,
    uuid: &str,
    change: impl FnOnce(&mut Map<String, Value>) -> ApiResult<()>,
) -> ApiResult<PatientRecord> {
    let st = state.clone();
    let id = uuid.to_string();
    let stored = blocking(move || st.store.patient(&id).map_err(ApiError::from))
        .await?
        .ok_or(ApiError::NotFound)?;
    // A voided record (one merged into another among them, whose identifiers are now the
    // kept patient's) is kept as it was.
    if stored.voided {
        return Err(ApiError::BadRequest(
            "A voided patient cannot be changed: unvoid it first".into(),
        ));
    }
    let mut body = as_body(&stored);
    change(&mut body)?;
    let (mut record, new_keys) = build_patient(state, caller, &body)?;
    record.date_created = stored.date_created.clone();
    record.creator = stored.creator.clone();
    record.voided = stored.voided;
    record.voiding = stored.voiding.clone();
    let who = caller.user_uuid();
    record.changed = Some((who, chrono::Utc::now().to_rfc3339()));
    let old_keys = keys_of(&stored, &state.catalog.load());
    let st = state.clone();
    let saved = record.clone();
    blocking(move || {
        // The edit was made on the record as read above: if it changed meanwhile (another
        // edit, a merge), writing this one would undo that change.
        let _one_writer = st.store.write_lock();
        if st.store.patient(&saved.uuid)?.as_ref() != Some(&stored) {
            return Err(ApiError::BadRequest(
                "The patient was changed by someone else meanwhile: read it again and make the change again".into(),
            ));
        }
        match st.store.replace_patient(&saved, &old_keys, &new_keys) {
            Ok(()) => Ok(()),
            Err(StoreError::IdentifierInUse(id)) => {
                let mut inv = Invalid::default();
                inv.global(format!("Identifier {id} already in use by another patient"));
                Err(ApiError::Invalid(inv))
            }
            Err(e) => Err(ApiError::from(e)),
        }
    })
    .await?;
    state.patient_index_mut().await?.upsert(&record);
    Ok(record)
}

/// Applies a person change to a stored patient (see `merge_person`). Identifiers are not
/// changed this way (OpenMRS ignores them on update too).
async fn update_person(
    state: &Arc<AppState>,
    caller: &Caller,
    uuid: &str,
    change: &Map<String, Value>,
) -> ApiResult<PatientRecord> {
    change_patient(state, caller, uuid, |body| match body.get_mut("person") {
        Some(Value::Object(person)) => merge_person(person, change),
        _ => Err(ApiError::internal("a stored patient renders as a person")),
    })
    .await
}

/// Removes the item with `item` uuid from the list `key` of a body object, or answers 404.
fn remove_item(list_owner: &mut Map<String, Value>, key: &str, item: &str) -> ApiResult<()> {
    let list = list_owner
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .ok_or(ApiError::NotFound)?;
    let before = list.len();
    list.retain(|e| item_uuid(e) != Some(item));
    if list.len() == before {
        return Err(ApiError::NotFound);
    }
    Ok(())
}

/// `DELETE person/{uuid}/name/{name}` and `DELETE person/{uuid}/attribute/{attribute}`
/// (`?purge` or not: the item goes; a person keeps at least one name) — privilege: Edit
/// People. Answers 204.
pub async fn delete_person_item(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((uuid, kind, item)): Path<(String, String, String)>,
) -> ApiResult<Response> {
    caller.require(&["Edit People"])?;
    let key = match kind.as_str() {
        "name" => "names",
        "attribute" => "attributes",
        "address" => "addresses",
        _ => return Err(ApiError::NotFound),
    };
    change_patient(&state, &caller, &uuid, |body| {
        match body.get_mut("person") {
            Some(Value::Object(person)) => remove_item(person, key, &item),
            _ => Err(ApiError::internal("a stored patient renders as a person")),
        }
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST patient/{uuid}/identifier` — adds an identifier (checked as at registration:
/// type, format, check digit, uniqueness, location); privilege: Edit Patients. Answers 201
/// with the identifier.
pub async fn add_identifier(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    let mut fresh = body.clone();
    let new_uuid = match fresh.get("uuid").and_then(Value::as_str) {
        Some(u) => u.to_string(),
        None => crate::store::record::new_uuid(),
    };
    fresh.insert("uuid".into(), json!(new_uuid));
    let record = change_patient(&state, &caller, &uuid, |b| {
        let list = identifiers_of(b)?;
        if fresh.get("preferred") == Some(&json!(true)) {
            prefer_none(list);
        }
        list.push(Value::Object(fresh));
        Ok(())
    })
    .await?;
    identifier_answer(&state, &caller, &record, &new_uuid, StatusCode::CREATED)
}

/// `POST patient/{uuid}/identifier/{identifier}` — changes an identifier's value, type,
/// location or preference, checked as at registration; privilege: Edit Patients.
pub async fn update_identifier(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((uuid, item)): Path<(String, String)>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    let record = change_patient(&state, &caller, &uuid, |b| {
        let list = identifiers_of(b)?;
        let i = list
            .iter()
            .position(|e| item_uuid(e) == Some(&item))
            .ok_or(ApiError::NotFound)?;
        if body.get("preferred") == Some(&json!(true)) {
            prefer_none(list);
        }
        if let Value::Object(existing) = &mut list[i] {
            for (k, v) in &body {
                if k == "uuid" && v.as_str() != Some(item.as_str()) {
                    return Err(ApiError::BadRequest(
                        "Some properties are not allowed to be set: uuid".into(),
                    ));
                }
                existing.insert(k.clone(), v.clone());
            }
        }
        Ok(())
    })
    .await?;
    identifier_answer(&state, &caller, &record, &item, StatusCode::OK)
}

/// `DELETE patient/{uuid}/identifier/{identifier}` (`?purge` or not: it goes, and its
/// value is free again) — refused when it is the last one or the only one of a required
/// type; privilege: Edit Patients. Answers 204.
pub async fn delete_identifier(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((uuid, item)): Path<(String, String)>,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    change_patient(&state, &caller, &uuid, |b| {
        let list = identifiers_of(b)?;
        let before = list.len();
        list.retain(|e| item_uuid(e) != Some(&item));
        if list.len() == before {
            return Err(ApiError::NotFound);
        }
        if list.is_empty() {
            return Err(ApiError::BadRequest(
                "At least one nonvoided Patient Identifier is required".into(),
            ));
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The default representation of one identifier of a patient.
fn identifier_answer(
    state: &AppState,
    caller: &Caller,
    record: &PatientRecord,
    item: &str,
    status: StatusCode,
) -> ApiResult<Response> {
    let rendered = render(
        &PatientRes(record),
        &Rep::Full,
        &caller.ctx(state, &state.catalog.load()),
    )?;
    let found = rendered["identifiers"]
        .as_array()
        .and_then(|l| l.iter().find(|i| i["uuid"] == item))
        .cloned()
        .ok_or_else(|| ApiError::internal("a stored identifier renders"))?;
    Ok(json(status, found))
}

/// `POST patient/{uuid}` — privilege: Edit Patients. Only `person` changes (identifiers
/// have their own sub-resource, as in OpenMRS); answers the default representation.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    only_known(&body, &["uuid", "person", "identifiers"])?;
    if let Some(Value::String(u)) = body.get("uuid")
        && *u != uuid
    {
        return Err(ApiError::BadRequest(
            "Some properties are not allowed to be set: uuid".into(),
        ));
    }
    let change = match body.get("person") {
        Some(Value::Object(p)) => p.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) => return Err(ApiError::BadRequest("person must be an object".into())),
    };
    let record = update_person(&state, &caller, &uuid, &change).await?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &PatientRes(&record),
        &Rep::Default,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `POST person/{uuid}` — privilege: Edit People. The persons this server keeps are its
/// patients'; answers the person's default representation.
pub async fn update_person_resource(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit People"])?;
    let record = update_person(&state, &caller, &uuid, &body).await?;
    let catalog = state.catalog.load();
    Ok(ok(render(
        &PersonRes(&record),
        &Rep::Default,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `DELETE patient/{uuid}` — voids the patient (privilege: Delete Patients; `reason`
/// defaults to OpenMRS's "web service call"); with `purge` (privilege: Purge Patients)
/// removes it for good, which is refused while any visit, encounter, diagnosis, programme
/// enrolment, queue entry, condition or allergy (even voided) refers to it. Answers 204.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    let purge = param(&query, "purge").is_some_and(|v| v != "false");
    caller.require(&[if purge {
        "Purge Patients"
    } else {
        "Delete Patients"
    }])?;
    let st = state.clone();
    let id = uuid.clone();
    let stored = blocking(move || st.store.patient(&id).map_err(ApiError::from))
        .await?
        .ok_or(ApiError::NotFound)?;
    if purge {
        let st = state.clone();
        let id = uuid.clone();
        blocking(move || {
            // A record made for her meanwhile (under the same lock) would be left behind.
            let _one_writer = st.store.write_lock();
            let clinical = clinical_records(&st, &id)?;
            if !clinical.is_empty() {
                return Err(ApiError::BadRequest(format!(
                    "The patient cannot be purged: {} still refer to them; void the patient instead",
                    clinical.join(", ")
                )));
            }
            st.store.purge_patient(&id).map_err(ApiError::from)
        })
        .await?;
        state.patient_index_mut().await?.remove(&uuid);
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if !stored.voided {
        let voiding = PatientVoiding {
            voided_by: caller.user_uuid(),
            date_voided: chrono::Utc::now().to_rfc3339(),
            void_reason: param(&query, "reason")
                .filter(|r| !r.trim().is_empty())
                .unwrap_or("web service call")
                .to_string(),
        };
        let st = state.clone();
        let user = caller.user_uuid();
        let id = uuid.clone();
        let voided = blocking(move || {
            let _one_writer = st.store.write_lock();
            // Read again under the lock: a change made since the read above (an edit, a
            // merge) is kept, not overwritten by the record as it was.
            let Some(mut record) = st.store.patient(&id)? else {
                return Err(ApiError::NotFound);
            };
            if record.voided {
                return Ok(None);
            }
            record.voided = true;
            record.voiding = Some(voiding);
            st.store.update_patient(&record)?;
            for effect in st.store.registry().on_patient_voided {
                effect(&st.store, &record.uuid, &user)?;
            }
            Ok(Some(record))
        })
        .await?;
        if let Some(record) = voided {
            state.patient_index_mut().await?.upsert(&record);
        }
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// What clinical records of the patient exist, voided ones included, by kind (every domain
/// registers its kind in the store's registry).
fn clinical_records(state: &AppState, patient: &str) -> ApiResult<Vec<&'static str>> {
    let mut found = Vec::new();
    for kind in state.store.registry().patient_records {
        if (kind.any)(&state.store, patient)? {
            found.push(kind.kind);
        }
    }
    Ok(found)
}

/// `POST patient/{uuid}/merge` with `{"nonPreferred": "<uuid>"}`: merges the non-preferred
/// patient into this (preferred) one (`merge`); privilege: Edit Patients, as core's
/// `mergePatients`. Answers the preferred patient (in `v`, default `default`) and how many
/// records of each kind moved; 400 with the reason when refused, 404 when either is unknown.
pub async fn merge(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    only_known(&body, &["nonPreferred"])?;
    let rep = crate::http::answer::rep_of(&query)?;
    let from = match body.get("nonPreferred") {
        Some(Value::String(u)) if !u.trim().is_empty() => u.trim().to_string(),
        _ => {
            return Err(ApiError::BadRequest(
                "nonPreferred: the uuid of the patient to merge into this one is required".into(),
            ));
        }
    };
    let m = crate::store::record::PatientMerge {
        from,
        into: uuid,
        user: caller.user_uuid(),
        now: chrono::Utc::now(),
    };
    let st = state.clone();
    let merged = blocking(move || {
        let catalog = st.catalog.load();
        crate::domains::patient::merge::merge(&st.store, &m, |p| keys_of(p, &catalog)).map_err(
            |e| match e {
                crate::domains::patient::merge::MergeError::NotFound => ApiError::NotFound,
                crate::domains::patient::merge::MergeError::Refused(why) => {
                    ApiError::BadRequest(why)
                }
                crate::domains::patient::merge::MergeError::Store(e) => e.into(),
            },
        )
    })
    .await?;
    {
        let mut index = state.patient_index_mut().await?;
        index.upsert(&merged.preferred);
        index.upsert(&merged.non_preferred);
    }
    let catalog = state.catalog.load();
    let patient = render(
        &PatientRes(&merged.preferred),
        &rep,
        &caller.ctx(&state, &catalog),
    )?;
    Ok(ok(json!({
        "preferred": patient,
        "nonPreferred": {"uuid": merged.non_preferred.uuid, "voided": true},
        "moved": merged.moved,
    })))
}

/// `GET patient/duplicates`: the pairs of patients who may be the same person
/// (`merge::likely_duplicates`), each patient in the request's representation (default
/// `default`), with what they share; paged. Privilege: Edit Patients (it is the merge's
/// worklist).
pub async fn duplicates(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Edit Patients"])?;
    let paging = Paging::from_query(&query)?;
    let rep = crate::http::answer::rep_of(&query)?;
    let st = state.clone();
    let (pairs, patients) = blocking(move || {
        let pairs = crate::domains::patient::merge::likely_duplicates(&st.store)?;
        let shown: Vec<_> = pairs
            .iter()
            .skip(paging.start)
            .take(paging.limit)
            .cloned()
            .collect();
        let mut uuids: Vec<&str> = shown
            .iter()
            .flat_map(|c| [c.a.as_str(), c.b.as_str()])
            .collect();
        uuids.sort_unstable();
        uuids.dedup();
        let patients = st.store.patients_in(&uuids)?;
        Ok((pairs, (shown, patients)))
    })
    .await?;
    let (shown, records) = patients;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let find = |u: &str| records.iter().find(|p| p.uuid == u);
    let mut results = Vec::new();
    for c in &shown {
        let (Some(a), Some(b)) = (find(&c.a), find(&c.b)) else {
            continue;
        };
        results.push(json!({
            "patientA": render(&PatientRes(a), &rep, &ctx)?,
            "patientB": render(&PatientRes(b), &rep, &ctx)?,
            "reasons": c.reasons,
        }));
    }
    crate::http::answer::values_answer(
        &state,
        &caller,
        &query,
        "/patient/duplicates",
        &paging,
        &results,
        pairs.len(),
    )
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::{delete, get, post};
    axum::Router::new()
        .route(
            &paths.rest("/patient"),
            get(crate::domains::patient::rest::search).post(crate::domains::patient::rest::create),
        )
        .route(
            &paths.rest("/patient/"),
            get(crate::domains::patient::rest::search).post(crate::domains::patient::rest::create),
        )
        .route(
            &paths.rest("/patient/{uuid}"),
            get(crate::domains::patient::rest::read)
                .post(crate::domains::patient::rest::update)
                .delete(crate::domains::patient::rest::delete),
        )
        .route(
            &paths.rest("/patient/duplicates"),
            get(crate::domains::patient::rest::duplicates),
        )
        .route(
            &paths.rest("/patient/{uuid}/merge"),
            post(crate::domains::patient::rest::merge),
        )
        .route(
            &paths.rest("/patient/{uuid}/identifier/{identifier}"),
            post(crate::domains::patient::rest::update_identifier)
                .delete(crate::domains::patient::rest::delete_identifier),
        )
        .route(
            &paths.rest("/person"),
            get(crate::domains::patient::rest::person_search),
        )
        .route(
            &paths.rest("/person/{uuid}/{kind}/{item}"),
            delete(crate::domains::patient::rest::delete_person_item),
        )
        .route(
            &paths.fhir("/Patient/{id}"),
            get(crate::domains::patient::fhir::patient)
                .put(crate::domains::patient::fhir_write::update),
        )
        .route(
            &paths.fhir("/Person"),
            get(crate::domains::patient::fhir::persons),
        )
        .route(
            &paths.fhir("/Person/{id}"),
            get(crate::domains::patient::fhir::person),
        )
}
