//! `conceptreferencerange`: the ranges that apply to a patient for numeric concepts, read by
//! the chart's vitals to flag abnormal values (REST module 2.7's resource).
//!
//! OpenMRS 2.7 can narrow a range by age or sex with criteria; the content here carries one
//! range per numeric concept, so every patient gets the concept's own. Its uuid is the
//! concept's: there is one range per concept.

use crate::content::concept::ConceptRes;
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, render};
use crate::http::{Caller, QueryPairs, ok, param};
use axum::extract::State;
use axum::response::Response;
use model::Concept;
use serde_json::{Value, json};
use std::sync::Arc;

pub struct ReferenceRangeRes<'a>(pub &'a Concept);

impl Resource for ReferenceRangeRes<'_> {
    fn alias(&self) -> &'static str {
        "conceptreferencerange"
    }
    fn version(&self) -> &'static str {
        "2.7"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        let n = self.0.numeric.as_ref();
        let bound = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        format!(
            "{}: {} - {} {}",
            ConceptRes(self.0).display(ctx),
            bound(n.and_then(|n| n.low_normal)),
            bound(n.and_then(|n| n.hi_normal)),
            n.and_then(|n| n.units.clone()).unwrap_or_default()
        )
        .trim_end()
        .to_string()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("concept", Rep::Default),
            ("hiNormal", Rep::Default),
            ("hiAbsolute", Rep::Default),
            ("hiCritical", Rep::Default),
            ("lowNormal", Rep::Default),
            ("lowAbsolute", Rep::Default),
            ("lowCritical", Rep::Default),
            ("units", Rep::Default),
            ("allowDecimal", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let n = self.0.numeric.as_ref()?;
        Some(match name {
            // A plain uuid, as the REST module writes it.
            "concept" => json!(self.0.uuid),
            "hiNormal" => json!(n.hi_normal),
            "hiAbsolute" => json!(n.hi_absolute),
            "hiCritical" => json!(n.hi_critical),
            "lowNormal" => json!(n.low_normal),
            "lowAbsolute" => json!(n.low_absolute),
            "lowCritical" => json!(n.low_critical),
            "units" => json!(n.units),
            "allowDecimal" => json!(n.allow_decimal),
            _ => return None,
        })
    }
}

/// `GET conceptreferencerange?patient=&concept=a,b` — privilege: Get Concepts.
/// Concepts are uuids or `SOURCE:CODE` references; those without a numeric range are left
/// out, as OpenMRS leaves them out.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let paging = Paging::from_query(&query)?;
    let (Some(patient), Some(concepts)) = (param(&query, "patient"), param(&query, "concept"))
    else {
        return Err(ApiError::BadRequest(
            "The search needs both patient and concept (uuids or SOURCE:CODE, comma-separated)"
                .into(),
        ));
    };
    if state.store.patient(patient)?.is_none_or(|p| p.voided) {
        return Err(ApiError::NotFound);
    }
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let items = concepts
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .filter_map(|c| catalog.concept(c))
        .filter(|c| c.numeric.is_some())
        .map(|c| render(&ReferenceRangeRes(c), &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(paging.page(
        items,
        &caller.request_url(&state, "/conceptreferencerange", &query),
    )))
}
