//! `GET obstree?patient=…&concept=…`: a concept set as a tree (its members, recursively),
//! each leaf with the patient's observations of it, oldest first. The O3 test-results
//! dashboard draws its panels, tree and trends from it (one call per configured set).
//!
//! Shape, as webservices.rest's `ObsTreeResource` answers: the root is always a set node
//! (a concept that is not a set is wrapped as the root's only leaf); a set node has
//! `display` and `subSets`; a leaf has `display`, `conceptUuid`, `datatype`, for numeric
//! concepts `units` and the ranges it defines (`hiNormal`, `lowNormal`, `hiCritical`,
//! `lowCritical`, `hiAbsolute`, `lowAbsolute`), and `obs`: `{value, obsDatetime}` with
//! the recorded `interpretation` when there is one (the client derives it otherwise).
//! Privileges: Get Observations and Get Concepts.

use crate::content::concept::ConceptRes;
use crate::domains::encounter::repr::value_display;
use crate::domains::encounter::store::{ObsQuery, list_obs};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Resource};
use crate::http::{Caller, QueryPairs, blocking, ok, param};
use crate::store::record::Window;
use crate::wire::wire_datetime;
use axum::extract::State;
use axum::response::Response;
use model::Concept;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Deeper sets than this are cut (and cycles with them).
const MAX_DEPTH: usize = 8;
/// Observations per leaf at most (the newest).
const MAX_OBS: usize = 1000;

pub async fn obstree(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations", "Get Concepts"])?;
    let patient = param(&query, "patient")
        .ok_or_else(|| ApiError::BadRequest("patient is required".into()))?
        .to_string();
    let concept = param(&query, "concept")
        .ok_or_else(|| ApiError::BadRequest("concept is required".into()))?
        .to_string();
    let st = state.clone();
    blocking(move || {
        if !st.store.patient_exists(&patient)? {
            return Err(ApiError::NotFound);
        }
        let catalog = st.catalog.load();
        let root = catalog.concept(&concept).ok_or(ApiError::NotFound)?;
        let ctx = caller.ctx(&st, &catalog);
        let tree = if root.is_set {
            node(root, &patient, &ctx, 0)?
        } else {
            json!({"display": ConceptRes(root).display(&ctx), "subSets": [leaf(root, &patient, &ctx)?]})
        };
        Ok(ok(tree))
    })
    .await
}

fn node(c: &Concept, patient: &str, ctx: &Ctx, depth: usize) -> ApiResult<Value> {
    let mut members = Vec::new();
    if depth < MAX_DEPTH {
        for m in &c.set_members {
            let Some(member) = ctx.catalog.concept(m) else {
                continue;
            };
            members.push(if member.is_set {
                node(member, patient, ctx, depth + 1)?
            } else {
                leaf(member, patient, ctx)?
            });
        }
    }
    Ok(json!({"display": ConceptRes(c).display(ctx), "subSets": members}))
}

fn leaf(c: &Concept, patient: &str, ctx: &Ctx) -> ApiResult<Value> {
    let (mut records, _) = list_obs(
        ctx.store,
        &ObsQuery {
            values: Vec::new(),
            patient: Some(patient.to_string()),
            concepts: vec![c.uuid.clone()],
            ..ObsQuery::default()
        },
        Window {
            start: 0,
            limit: MAX_OBS,
            count_all: false,
        },
    )?;
    records.reverse(); // oldest first, as OpenMRS lists them
    let obs: Vec<Value> = records
        .iter()
        .map(|o| {
            let mut v = Map::new();
            v.insert("value".into(), json!(value_display(o, ctx)));
            v.insert("obsDatetime".into(), wire_datetime(&o.datetime));
            if let Some(i) = &o.interpretation {
                v.insert("interpretation".into(), json!(i));
            }
            Value::Object(v)
        })
        .collect();
    let mut out = Map::new();
    out.insert("display".into(), json!(ConceptRes(c).display(ctx)));
    out.insert("conceptUuid".into(), json!(c.uuid));
    out.insert("datatype".into(), json!(c.datatype));
    if let Some(n) = &c.numeric {
        for (k, v) in [
            ("hiAbsolute", n.hi_absolute),
            ("hiCritical", n.hi_critical),
            ("hiNormal", n.hi_normal),
            ("lowAbsolute", n.low_absolute),
            ("lowCritical", n.low_critical),
            ("lowNormal", n.low_normal),
        ] {
            if let Some(v) = v {
                out.insert(k.into(), json!(v));
            }
        }
        if let Some(u) = &n.units {
            out.insert("units".into(), json!(u));
        }
    }
    out.insert("obs".into(), Value::Array(obs));
    Ok(Value::Object(out))
}
