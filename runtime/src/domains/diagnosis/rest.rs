//! `patientdiagnoses` over REST (create, read, update, void, search by patient or
//! encounter), and the `diagnoses` an encounter shows. Diagnoses belong to encounters, so
//! the encounter privileges govern them: Get Encounters to read, Edit Encounters to write,
//! Delete Encounters to void.

use crate::content::concept::ConceptRes;
use crate::domains::diagnosis::DiagnosisRecord;
use crate::domains::diagnosis::store;
use crate::domains::patient::repr::PatientRes;
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, nest, page_answer, rep_of, window};
use crate::http::body::{apply_voided, only_known, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct DiagnosisRes<'a>(pub &'a DiagnosisRecord);

impl Resource for DiagnosisRes<'_> {
    fn alias(&self) -> &'static str {
        "patientdiagnoses"
    }
    fn version(&self) -> &'static str {
        "2.2"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    /// The coded concept's name in the caller's language, or the free text.
    fn display(&self, ctx: &Ctx) -> String {
        match &self.0.coded {
            Some(c) => ctx
                .catalog
                .concept(c)
                .map(|c| ConceptRes(c).display(ctx))
                .unwrap_or_default(),
            None => self.0.non_coded.clone().unwrap_or_default(),
        }
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("diagnosis", Rep::Ref),
            ("condition", Rep::Ref),
            ("encounter", Rep::Ref),
            ("certainty", Rep::Default),
            ("rank", Rep::Default),
            ("voided", Rep::Default),
            ("patient", Rep::Ref),
            ("formFieldNamespace", Rep::Default),
            ("formFieldPath", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("diagnosis", Rep::Default),
            ("condition", Rep::Default),
            ("encounter", Rep::Ref),
            ("certainty", Rep::Default),
            ("rank", Rep::Default),
            ("voided", Rep::Default),
            ("patient", Rep::Ref),
            ("formFieldNamespace", Rep::Default),
            ("formFieldPath", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let d = self.0;
        Some(match name {
            // OpenMRS's CodedOrFreeText: `coded:(…)` chooses the concept's representation.
            "diagnosis" => {
                let coded_rep = match rep {
                    Rep::Custom(props) => props
                        .iter()
                        .find(|(p, _)| p == "coded")
                        .map(|(_, r)| r.clone())
                        .unwrap_or(Rep::Ref),
                    Rep::Full => Rep::Default,
                    _ => Rep::Ref,
                };
                let coded = d
                    .coded
                    .as_deref()
                    .and_then(|c| ctx.catalog.concept(c))
                    .map(ConceptRes);
                json!({
                    "coded": nested(coded.as_ref().map(|c| c as &dyn Resource), &coded_rep, ctx),
                    "nonCoded": d.non_coded,
                    "specificName": null,
                })
            }
            // A diagnosis is not linked to a problem-list condition here.
            "condition" => Value::Null,
            "encounter" => {
                json!({"uuid": d.encounter, "links": [{"rel": "self", "uri": format!("{}/encounter/{}", ctx.base, d.encounter), "resourceAlias": "encounter"}]})
            }
            "certainty" => json!(d.certainty),
            "rank" => json!(d.rank),
            "voided" => json!(d.voiding.voided),
            "patient" => nest(
                ctx.store
                    .patient(&d.patient)
                    .ok()
                    .flatten()
                    .as_ref()
                    .map(PatientRes),
                rep,
                ctx,
            ),
            "formFieldNamespace" => json!(d.form_field_namespace),
            "formFieldPath" => json!(d.form_field_path),
            "auditInfo" => audit_info(&d.audit, ctx),
            _ => return None,
        })
    }
}

/// An encounter's `diagnoses`, in a representation.
pub fn of_encounter(encounter: &str, rep: &Rep, ctx: &Ctx) -> Value {
    let list = store::of_encounter(ctx.store, encounter).unwrap_or_default();
    Value::Array(
        list.iter()
            .map(|d| nested(Some(&DiagnosisRes(d)), rep, ctx))
            .collect(),
    )
}

const FIELDS: &[&str] = &[
    "uuid",
    "patient",
    "encounter",
    "diagnosis",
    "condition",
    "certainty",
    "rank",
    "formFieldNamespace",
    "formFieldPath",
    "voided",
    "voidReason",
];

/// Applies the changeable fields, collecting what is wrong.
fn apply(
    state: &AppState,
    d: &mut DiagnosisRecord,
    body: &Map<String, Value>,
    inv: &mut Invalid,
) -> ApiResult<()> {
    if let Some(diagnosis) = body.get("diagnosis") {
        let Value::Object(o) = diagnosis else {
            return Err(ApiError::BadRequest(
                "diagnosis must be an object: {\"coded\": concept} or {\"nonCoded\": text}".into(),
            ));
        };
        d.coded = opt_ref(o, "coded")?;
        d.non_coded = opt_str(o, "nonCoded")?.filter(|t| !t.trim().is_empty());
        match &d.coded {
            Some(c) => match state.catalog.load().concept(c) {
                Some(concept) if !concept.retired => d.coded = Some(concept.uuid.clone()),
                Some(_) => inv.field("diagnosis", "error.retired", "The concept is retired"),
                None => inv.field("diagnosis", "error.invalid", "Concept does not exist"),
            },
            None if d.non_coded.is_none() => inv.field(
                "diagnosis",
                "error.null",
                "A diagnosis needs a coded concept or a text",
            ),
            None => {}
        }
    }
    if let Some(c) = body.get("condition")
        && !c.is_null()
    {
        return Err(ApiError::BadRequest(
            "condition must be null: a diagnosis is not linked to a problem-list condition here"
                .into(),
        ));
    }
    if let Some(certainty) = opt_str(body, "certainty")? {
        d.certainty = certainty.to_uppercase();
    }
    if !matches!(d.certainty.as_str(), "PROVISIONAL" | "CONFIRMED") {
        inv.field(
            "certainty",
            "error.invalid",
            "Certainty is PROVISIONAL or CONFIRMED",
        );
    }
    match body.get("rank") {
        None => {}
        Some(Value::Number(n)) if matches!(n.as_u64(), Some(1) | Some(2)) => {
            d.rank = n.as_u64().unwrap_or(1) as u8;
        }
        Some(_) => inv.field(
            "rank",
            "error.invalid",
            "Rank is 1 (primary) or 2 (secondary)",
        ),
    }
    if body.contains_key("formFieldNamespace") {
        d.form_field_namespace = opt_str(body, "formFieldNamespace")?;
    }
    if body.contains_key("formFieldPath") {
        d.form_field_path = opt_str(body, "formFieldPath")?;
    }
    Ok(())
}

/// `POST patientdiagnoses` — privilege: Edit Encounters.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Encounters"])?;
    only_known(&body, FIELDS)?;
    let user = caller.user_uuid();
    let now = Utc::now();
    let mut inv = Invalid::default();
    let patient = opt_ref(&body, "patient")?;
    let encounter = opt_ref(&body, "encounter")?;
    if patient.is_none() {
        inv.field("patient", "error.null", "Patient is required");
    }
    if encounter.is_none() {
        inv.field("encounter", "error.null", "Encounter is required");
    }
    for required in ["diagnosis", "certainty", "rank"] {
        if body.get(required).is_none_or(Value::is_null) {
            inv.field(required, "error.null", &format!("{required} is required"));
        }
    }
    if let (Some(p), Some(e)) = (&patient, &encounter) {
        match crate::domains::encounter::store::encounter(&state.store, e)? {
            Some(enc) if enc.voiding.voided => {
                inv.field("encounter", "error.voided", "The encounter is voided")
            }
            Some(enc) if &enc.patient != p => inv.field(
                "encounter",
                "error.invalid",
                "The encounter belongs to another patient",
            ),
            Some(_) => {}
            None => inv.field("encounter", "error.invalid", "Encounter does not exist"),
        }
    }
    let mut d = DiagnosisRecord {
        v: 1,
        uuid: crate::http::body::client_uuid(&body)?,
        patient: patient.unwrap_or_default(),
        encounter: encounter.unwrap_or_default(),
        coded: None,
        non_coded: None,
        certainty: "PROVISIONAL".into(),
        rank: 1,
        form_field_namespace: None,
        form_field_path: None,
        audit: Audit::new(&user, now),
        voiding: Voiding::default(),
    };
    apply(&state, &mut d, &body, &mut inv)?;
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }
    let rep = rep_of(&query)?;
    let st = state.clone();
    let d = blocking(move || {
        let _one_writer = st.store.write_lock();
        if store::get(&st.store, &d.uuid)?.is_some() {
            return Err(ApiError::BadRequest(format!(
                "A diagnosis with uuid {} already exists",
                d.uuid
            )));
        }
        store::put(&st.store, &d)?;
        Ok(d)
    })
    .await?;
    answer(
        &state,
        &caller,
        &DiagnosisRes(&d),
        &rep,
        StatusCode::CREATED,
    )
}

/// `POST patientdiagnoses/{uuid}` (diagnosis, certainty, rank) — privilege: Edit Encounters.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Encounters"])?;
    only_known(&body, FIELDS)?;
    for fixed in ["patient", "encounter"] {
        if body.contains_key(fixed) {
            return Err(ApiError::BadRequest(format!(
                "The {fixed} of a diagnosis cannot be changed"
            )));
        }
    }
    let user = caller.user_uuid();
    let rep = rep_of(&query)?;
    let st = state.clone();
    let d = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut d = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let mut inv = Invalid::default();
        apply(&st, &mut d, &body, &mut inv)?;
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        // `voided` on an update voids (or restores) it, as webservices.rest's data
        // resources allow.
        apply_voided(&body, &mut d.voiding, &user, Utc::now())?;
        d.audit.changed(&user, Utc::now());
        store::put(&st.store, &d)?;
        Ok(d)
    })
    .await?;
    answer(&state, &caller, &DiagnosisRes(&d), &rep, StatusCode::OK)
}

/// `GET patientdiagnoses/{uuid}` — privilege: Get Encounters.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters"])?;
    let d = store::get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &DiagnosisRes(&d),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE patientdiagnoses/{uuid}[?reason=]` voids it — privilege: Delete Encounters.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Delete Encounters"])?;
    crate::http::answer::void_answer(
        state,
        &caller,
        uuid,
        &query,
        store::get,
        |d| &mut d.voiding,
        |store, _, d| store::put(store, d),
    )
    .await
}

/// `GET patientdiagnoses?patient=…` (or `patientUuid`; newest first) or `?encounter=…` —
/// privilege: Get Encounters.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters"])?;
    let paging = Paging::from_query(&query)?;
    let include_voided = flag(&query, "includeAll").unwrap_or(false);
    let (list, page) = if let Some(e) = param(&query, "encounter") {
        let all = store::of_encounter(&state.store, e)?;
        let uuids: Vec<String> = all.iter().map(|d| d.uuid.clone()).collect();
        let page = crate::store::record::Page::cut(uuids, window(&paging));
        let list = all
            .into_iter()
            .filter(|d| page.uuids.contains(&d.uuid))
            .collect::<Vec<_>>();
        (list, page)
    } else if let Some(p) = param(&query, "patient").or(param(&query, "patientUuid")) {
        store::of_patient(&state.store, p, include_voided, window(&paging))?
    } else {
        return Err(ApiError::BadRequest(
            "Search diagnoses by patient (or patientUuid) or encounter".into(),
        ));
    };
    page_answer(
        &state,
        &caller,
        &query,
        "/patientdiagnoses",
        &paging,
        &page,
        list.iter().map(DiagnosisRes),
    )
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/patientdiagnoses"),
            get(crate::domains::diagnosis::rest::search)
                .post(crate::domains::diagnosis::rest::create),
        )
        .route(
            &paths.rest("/patientdiagnoses/{uuid}"),
            get(crate::domains::diagnosis::rest::read)
                .post(crate::domains::diagnosis::rest::update)
                .delete(crate::domains::diagnosis::rest::delete),
        )
}
