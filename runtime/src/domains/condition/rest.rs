//! The REST `condition` resource (webservices.rest's ConditionResource): search by
//! `patientUuid` (active only unless `includeInactive=true`), read, create, update, void.
//! Privileges: Get Conditions, Edit Conditions, Delete Conditions.

use crate::content::concept::ConceptRes;
use crate::domains::condition::{ClinicalStatus, ConditionRecord, Verification, store};
use crate::domains::patient::repr::PatientRes;
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, nest, page_answer, rep_of, window};
use crate::http::body::{only_known, opt_datetime, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::invalid::Invalid;
use crate::store::record::Audit;
use crate::wire::wire_datetime;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct ConditionRes<'a>(pub &'a ConditionRecord);

impl Resource for ConditionRes<'_> {
    fn alias(&self) -> &'static str {
        "condition"
    }
    fn version(&self) -> &'static str {
        "2.2"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
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
            ("condition", Rep::Ref),
            ("patient", Rep::Ref),
            ("clinicalStatus", Rep::Default),
            ("verificationStatus", Rep::Default),
            ("previousVersion", Rep::Ref),
            ("onsetDate", Rep::Default),
            ("endDate", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("condition", Rep::Default),
            ("patient", Rep::Ref),
            ("clinicalStatus", Rep::Default),
            ("verificationStatus", Rep::Default),
            ("previousVersion", Rep::Ref),
            ("onsetDate", Rep::Default),
            ("endDate", Rep::Default),
            ("additionalDetail", Rep::Default),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let c = self.0;
        Some(match name {
            // OpenMRS's CodedOrFreeText: `coded:(…)` chooses the concept's representation.
            "condition" => {
                let coded_rep = match rep {
                    Rep::Custom(props) => props
                        .iter()
                        .find(|(p, _)| p == "coded")
                        .map(|(_, r)| r.clone())
                        .unwrap_or(Rep::Ref),
                    Rep::Full | Rep::Default => Rep::Default,
                    _ => Rep::Ref,
                };
                let coded = c
                    .coded
                    .as_deref()
                    .and_then(|c| ctx.catalog.concept(c))
                    .map(ConceptRes);
                json!({
                    "coded": nested(coded.as_ref().map(|c| c as &dyn Resource), &coded_rep, ctx),
                    "nonCoded": c.non_coded,
                    "specificName": null,
                })
            }
            "patient" => nest(
                ctx.store
                    .patient(&c.patient)
                    .ok()
                    .flatten()
                    .as_ref()
                    .map(PatientRes),
                rep,
                ctx,
            ),
            "clinicalStatus" => json!(c.clinical_status.map(ClinicalStatus::name)),
            "verificationStatus" => json!(c.verification.map(Verification::name)),
            "previousVersion" => Value::Null,
            "onsetDate" => c.onset.as_deref().map_or(Value::Null, wire_datetime),
            "endDate" => c.end.as_deref().map_or(Value::Null, wire_datetime),
            "additionalDetail" => json!(c.additional_detail),
            "voided" => json!(c.voiding.voided),
            "auditInfo" => audit_info(&c.audit, ctx),
            _ => return None,
        })
    }
}

const FIELDS: &[&str] = &[
    "uuid",
    "patient",
    "condition",
    "clinicalStatus",
    "verificationStatus",
    "onsetDate",
    "endDate",
    "additionalDetail",
    "voided",
];

/// Applies the fields a body carries; what it leaves out stays as it was.
fn apply(c: &mut ConditionRecord, body: &Map<String, Value>) -> ApiResult<()> {
    if let Some(condition) = body.get("condition") {
        let Value::Object(o) = condition else {
            return Err(ApiError::BadRequest(
                "condition must be an object: {\"coded\": concept} or {\"nonCoded\": text}".into(),
            ));
        };
        c.coded = opt_ref(o, "coded")?;
        c.non_coded = opt_str(o, "nonCoded")?.filter(|t| !t.trim().is_empty());
    }
    if body.contains_key("clinicalStatus") {
        c.clinical_status = match opt_str(body, "clinicalStatus")? {
            None => None,
            Some(s) => Some(ClinicalStatus::parse(&s).ok_or_else(|| {
                ApiError::invalid_field(
                    "clinicalStatus",
                    "error.invalid",
                    "The clinical status is ACTIVE, INACTIVE or HISTORY_OF",
                )
            })?),
        };
    }
    if body.contains_key("verificationStatus") {
        c.verification = match opt_str(body, "verificationStatus")? {
            None => None,
            Some(s) => Some(Verification::parse(&s).ok_or_else(|| {
                ApiError::invalid_field(
                    "verificationStatus",
                    "error.invalid",
                    "The verification status is CONFIRMED or PROVISIONAL",
                )
            })?),
        };
    }
    if body.contains_key("onsetDate") {
        c.onset = opt_datetime(body, "onsetDate")?;
    }
    if body.contains_key("endDate") {
        c.end = opt_datetime(body, "endDate")?;
    }
    if body.contains_key("additionalDetail") {
        c.additional_detail = opt_str(body, "additionalDetail")?;
    }
    if let Some(v) = body.get("voided") {
        match v {
            Value::Bool(true) if !c.voiding.voided => {
                return Err(ApiError::BadRequest(
                    "Void a condition with DELETE condition/{uuid}".into(),
                ));
            }
            Value::Bool(false) => c.voiding.unvoid(),
            Value::Bool(_) => {}
            _ => return Err(ApiError::BadRequest("voided must be true or false".into())),
        }
    }
    Ok(())
}

/// `POST condition` — privilege: Edit Conditions.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Conditions"])?;
    only_known(&body, FIELDS)?;
    let Some(patient) = opt_ref(&body, "patient")? else {
        return Err(ApiError::invalid_field(
            "patient",
            "error.null",
            "Patient is required",
        ));
    };
    let uuid = crate::http::body::client_uuid(&body)?;
    let mut c = ConditionRecord::new(uuid, patient, Audit::new(&caller.user_uuid(), Utc::now()));
    apply(&mut c, &body)?;
    let rep = rep_of(&query)?;
    let st = state.clone();
    let c = blocking(move || {
        let mut c = c;
        let _one_writer = st.store.write_lock();
        if store::get(&st.store, &c.uuid)?.is_some() {
            return Err(ApiError::BadRequest(format!(
                "A condition with uuid {} already exists",
                c.uuid
            )));
        }
        let mut inv = Invalid::default();
        let patient = st.store.patient(&c.patient)?;
        crate::domains::condition::check(
            &mut c,
            None,
            &st.catalog.load(),
            patient.is_some_and(|p| !p.voided),
            &mut inv,
        );
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        store::put(&st.store, &c)?;
        Ok(c)
    })
    .await?;
    answer(
        &state,
        &caller,
        &ConditionRes(&c),
        &rep,
        StatusCode::CREATED,
    )
}

/// `POST condition/{uuid}` — privilege: Edit Conditions.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Conditions"])?;
    only_known(&body, FIELDS)?;
    let patient = opt_ref(&body, "patient")?;
    let user = caller.user_uuid();
    let rep = rep_of(&query)?;
    let st = state.clone();
    let c = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut c = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        // A client may send back the condition as it read it: the same patient is fine.
        if patient.as_ref().is_some_and(|p| p != &c.patient) {
            return Err(ApiError::BadRequest(
                "The patient of a condition cannot be changed".into(),
            ));
        }
        if c.voiding.voided && body.get("voided") != Some(&Value::Bool(false)) {
            return Err(ApiError::BadRequest(
                "A deleted condition cannot be changed; restore it with {\"voided\": false}".into(),
            ));
        }
        let was_coded = c.coded.clone();
        apply(&mut c, &body)?;
        let mut inv = Invalid::default();
        crate::domains::condition::check(
            &mut c,
            was_coded.as_deref(),
            &st.catalog.load(),
            true,
            &mut inv,
        );
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        c.audit.changed(&user, Utc::now());
        store::put(&st.store, &c)?;
        Ok(c)
    })
    .await?;
    answer(&state, &caller, &ConditionRes(&c), &rep, StatusCode::OK)
}

/// `GET condition/{uuid}` — privilege: Get Conditions.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Conditions"])?;
    let c = store::get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &ConditionRes(&c),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE condition/{uuid}[?reason=]` voids it — privilege: Delete Conditions.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Delete Conditions"])?;
    crate::http::answer::void_answer(
        state,
        &caller,
        uuid,
        &query,
        store::get,
        |c| &mut c.voiding,
        |store, _, c| store::put(store, c),
    )
    .await
}

/// `GET condition?patientUuid=…[&includeInactive=true]` (or `patient`), newest first —
/// privilege: Get Conditions.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Conditions"])?;
    let paging = Paging::from_query(&query)?;
    let Some(patient) = param(&query, "patientUuid").or(param(&query, "patient")) else {
        return Err(ApiError::BadRequest(
            "Search conditions by patientUuid".into(),
        ));
    };
    let which = if flag(&query, "includeInactive").unwrap_or(false) {
        store::Which::NotVoided
    } else {
        store::Which::Active
    };
    let (list, page) = store::of_patient(&state.store, patient, which, window(&paging))?;
    page_answer(
        &state,
        &caller,
        &query,
        "/condition",
        &paging,
        &page,
        list.iter().map(ConditionRes),
    )
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/condition"),
            get(crate::domains::condition::rest::search)
                .post(crate::domains::condition::rest::create),
        )
        .route(
            &paths.rest("/condition/{uuid}"),
            get(crate::domains::condition::rest::read)
                .post(crate::domains::condition::rest::update)
                .delete(crate::domains::condition::rest::delete),
        )
        .route(
            &paths.fhir("/Condition"),
            get(crate::domains::condition::fhir::search)
                .post(crate::domains::condition::fhir::create),
        )
        .route(
            &paths.fhir("/Condition/{id}"),
            get(crate::domains::condition::fhir::read)
                .put(crate::domains::condition::fhir::update)
                .delete(crate::domains::condition::fhir::delete),
        )
}
