//! `emrapi/inpatient/admission` and `emrapi/inpatient/request`, in the EMR API module's
//! shapes (the O3 ward app reads them with custom representations); beds are the `bed`
//! domain's.
//! Privileges: Get Visits and Get Encounters (Get Observations too for requests).

use crate::content::location::LocationRes;
use crate::domains::encounter::repr::{EncounterRes, ObsRes};
use crate::domains::inpatient::{Admission, Adt, Filter, Request, admissions, requests};
use crate::domains::patient::repr::PatientRes;
use crate::domains::visit::rest::VisitRes;
use crate::http::AppState;
use crate::http::answer::{flag, list_answer, nest};
use crate::http::error::ApiResult;
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource};
use crate::http::{Caller, QueryPairs};
use axum::extract::State;
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

/// Every value of a parameter that may be repeated or comma-separated (`patients=a&patients=b`,
/// `patients=a,b`).
fn list_param(query: &[(String, String)], name: &str) -> Vec<String> {
    query
        .iter()
        .filter(|(k, _)| k == name)
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

fn filter_of(query: &[(String, String)]) -> Filter {
    Filter {
        patients: list_param(query, "patients"),
        visits: list_param(query, "visits"),
    }
}

/// How the module nests an admission's encounters by default.
fn encounter_rep() -> Rep {
    Rep::Custom(vec![
        ("uuid".into(), Rep::Default),
        ("display".into(), Rep::Default),
        ("encounterDatetime".into(), Rep::Default),
        ("location".into(), Rep::Ref),
        ("encounterType".into(), Rep::Ref),
    ])
}

fn location(ctx: &Ctx, uuid: Option<&str>, rep: &Rep) -> Value {
    nest(
        uuid.and_then(|l| ctx.catalog.location(l)).map(LocationRes),
        rep,
        ctx,
    )
}

fn patient(ctx: &Ctx, uuid: &str, rep: &Rep) -> Value {
    let p = ctx.store.patient(uuid).ok().flatten();
    nest(p.as_ref().map(PatientRes), rep, ctx)
}

pub struct RequestRes(pub Request);

impl Resource for RequestRes {
    fn alias(&self) -> &'static str {
        "inpatientRequest"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        String::new()
    }
    fn display(&self, _: &Ctx) -> String {
        String::new()
    }
    fn path(&self) -> String {
        "emrapi/inpatient/request".into()
    }
    fn default_props(&self) -> Props {
        &[
            ("visit", Rep::Default),
            ("patient", Rep::Ref),
            ("dispositionType", Rep::Default),
            ("disposition", Rep::Ref),
            ("dispositionEncounter", Rep::Ref),
            ("dispositionObsGroup", Rep::Ref),
            ("dispositionLocation", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("visit", Rep::Default),
            ("patient", Rep::Default),
            ("dispositionType", Rep::Default),
            ("disposition", Rep::Default),
            ("dispositionEncounter", Rep::Default),
            ("dispositionObsGroup", Rep::Default),
            ("dispositionLocation", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let r = &self.0;
        Some(match name {
            "visit" => nest(Some(VisitRes(&r.visit)), rep, ctx),
            "patient" => patient(ctx, &r.visit.patient, rep),
            "dispositionType" => json!(r.kind),
            "disposition" => nest(
                ctx.catalog
                    .concept(&r.disposition)
                    .map(crate::content::concept::ConceptRes),
                rep,
                ctx,
            ),
            "dispositionEncounter" => nest(Some(EncounterRes::of(&r.encounter)), rep, ctx),
            "dispositionObsGroup" => {
                let group = r.obs.obs_group.as_deref().and_then(|g| {
                    crate::domains::encounter::store::obs(ctx.store, g)
                        .ok()
                        .flatten()
                });
                nest(group.as_ref().map(ObsRes), rep, ctx)
            }
            "dispositionLocation" => location(ctx, r.location.as_deref(), rep),
            _ => return None,
        })
    }
}

pub struct AdmissionRes(pub Admission);

impl Resource for AdmissionRes {
    fn alias(&self) -> &'static str {
        "inpatientAdmission"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        String::new()
    }
    fn display(&self, _: &Ctx) -> String {
        String::new()
    }
    fn path(&self) -> String {
        "emrapi/inpatient/admission".into()
    }
    fn default_props(&self) -> Props {
        &[
            ("visit", Rep::Default),
            ("currentInpatientLocation", Rep::Ref),
            ("firstAdmissionOrTransferEncounter", Rep::Default),
            ("latestAdmissionOrTransferEncounter", Rep::Default),
            ("encounterAssigningToCurrentInpatientLocation", Rep::Default),
            ("discharged", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("visit", Rep::Default),
            ("patient", Rep::Default),
            ("currentInpatientLocation", Rep::Default),
            ("firstAdmissionOrTransferEncounter", Rep::Default),
            ("latestAdmissionOrTransferEncounter", Rep::Default),
            ("encounterAssigningToCurrentInpatientLocation", Rep::Default),
            ("currentInpatientRequest", Rep::Default),
            ("discharged", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let a = &self.0;
        // Inside default and full, the module nests encounters in a representation of its own.
        let encounter = |e| {
            let rep = match rep {
                Rep::Custom(_) | Rep::Ref => rep.clone(),
                _ => encounter_rep(),
            };
            nest(Some(EncounterRes::of(e)), &rep, ctx)
        };
        Some(match name {
            "visit" => nest(Some(VisitRes(&a.visit)), rep, ctx),
            "patient" => patient(ctx, &a.visit.patient, rep),
            "currentInpatientLocation" => location(ctx, a.location.as_deref(), rep),
            "firstAdmissionOrTransferEncounter" => encounter(&a.first),
            "latestAdmissionOrTransferEncounter" => encounter(&a.latest),
            "encounterAssigningToCurrentInpatientLocation" => encounter(&a.assigning),
            "currentInpatientRequest" => match &a.request {
                Some(r) => nest(Some(RequestRes(r.clone())), rep, ctx),
                None => Value::Null,
            },
            "discharged" => json!(a.discharged),
            _ => return None,
        })
    }
}

/// `GET emrapi/inpatient/request[?dispositionType=ADMIT,TRANSFER][&dispositionLocation=…]
/// [&patients=…][&visits=…]`: the pending requests, oldest first.
pub async fn search_requests(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Visits", "Get Encounters", "Get Observations"])?;
    let paging = Paging::from_query(&query)?;
    let kinds: Vec<String> = list_param(&query, "dispositionType")
        .into_iter()
        .map(|k| k.to_uppercase())
        .collect();
    let wards = list_param(&query, "dispositionLocation");
    let st = state.clone();
    let q = query.clone();
    let found = crate::http::blocking(move || {
        let adt = Adt::of(&st.clinic())?;
        let mut found = requests(&st.clinic(), &adt, &filter_of(&q), &kinds)?;
        if !wards.is_empty() {
            found.retain(|r| r.location.as_ref().is_some_and(|l| wards.contains(l)));
        }
        Ok(found)
    })
    .await?;
    list_answer(
        &state,
        &caller,
        &query,
        "/emrapi/inpatient/request",
        &paging,
        found.into_iter().map(RequestRes).collect(),
    )
}

/// `GET emrapi/inpatient/admission[?currentInpatientLocation=…][&includeDischarged=true]
/// [&patients=…][&visits=…]`: who is admitted, and where.
pub async fn search_admissions(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Visits", "Get Encounters"])?;
    let paging = Paging::from_query(&query)?;
    let wards = list_param(&query, "currentInpatientLocation");
    let include_discharged = flag(&query, "includeDischarged").unwrap_or(false);
    let st = state.clone();
    let q = query.clone();
    let found = crate::http::blocking(move || {
        let adt = Adt::of(&st.clinic())?;
        Ok(admissions(
            &st.clinic(),
            &adt,
            &filter_of(&q),
            &wards,
            include_discharged,
        )?)
    })
    .await?;
    list_answer(
        &state,
        &caller,
        &query,
        "/emrapi/inpatient/admission",
        &paging,
        found.into_iter().map(AdmissionRes).collect(),
    )
}

impl From<crate::domains::inpatient::InpatientError> for crate::http::error::ApiError {
    fn from(e: crate::domains::inpatient::InpatientError) -> crate::http::error::ApiError {
        match e {
            crate::domains::inpatient::InpatientError::Unconfigured(why) => {
                crate::http::error::ApiError::BadRequest(why)
            }
            crate::domains::inpatient::InpatientError::Store(e) => {
                crate::http::error::ApiError::from(e)
            }
        }
    }
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/emrapi/inpatient/admission"),
            get(crate::domains::inpatient::rest::search_admissions),
        )
        .route(
            &paths.rest("/emrapi/inpatient/request"),
            get(crate::domains::inpatient::rest::search_requests),
        )
}
