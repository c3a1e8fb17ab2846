//! What orders are made of, from the content: `drug` (the formulary), `orderfrequency`,
//! `ordertype`, `caresetting`, and `orderentryconfig` (the routes, units and frequencies
//! the prescription form offers), as webservices.rest shows them.

use crate::content::concept::ConceptRes;
use crate::domains::order::rules::OrderEntry;
use crate::http::AppState;
use crate::http::answer::{nest, rep_of};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource, render};
use crate::http::{Caller, QueryPairs, ok, param, render_list};
use axum::extract::{Path, State};
use axum::response::Response;
use model::{CareSetting, Drug, OrderFrequency, OrderType};
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct DrugRes<'a>(pub &'a Drug);

impl Resource for DrugRes<'_> {
    fn alias(&self) -> &'static str {
        "drug"
    }
    fn version(&self) -> &'static str {
        "1.12"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("dosageForm", Rep::Ref),
            ("maximumDailyDose", Rep::Default),
            ("minimumDailyDose", Rep::Default),
            ("concept", Rep::Ref),
            ("combination", Rep::Default),
            ("strength", Rep::Default),
            ("drugReferenceMaps", Rep::Ref),
            ("ingredients", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("dosageForm", Rep::Default),
            ("maximumDailyDose", Rep::Default),
            ("minimumDailyDose", Rep::Default),
            ("concept", Rep::Default),
            ("combination", Rep::Default),
            ("strength", Rep::Default),
            ("drugReferenceMaps", Rep::Default),
            ("ingredients", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let d = self.0;
        let concept = |u: &str| ctx.catalog.concept(u).map(ConceptRes);
        Some(match name {
            "name" => json!(d.name),
            "description" => json!(d.description),
            "retired" => json!(d.retired),
            "dosageForm" => nest(d.dosage_form.as_deref().and_then(concept), rep, ctx),
            "concept" => nest(concept(&d.concept), rep, ctx),
            "maximumDailyDose" | "minimumDailyDose" => Value::Null,
            "combination" => json!(false),
            "strength" => json!(d.strength),
            "drugReferenceMaps" => Value::Array(
                d.mappings
                    .iter()
                    .map(|m| {
                        json!({"uuid": m.uuid, "display": format!("{}: {}", m.source, m.code),
                            "conceptReferenceTerm": {"display": format!("{}: {}", m.source, m.code), "code": m.code, "conceptSource": {"display": m.source}},
                            "conceptMapType": {"display": m.map_type}})
                    })
                    .collect(),
            ),
            "ingredients" => json!([]),
            "auditInfo" => crate::content::concept::content_audit_info(),
            _ => return None,
        })
    }
}

pub struct OrderFrequencyRes<'a>(pub &'a OrderFrequency);

impl Resource for OrderFrequencyRes<'_> {
    fn alias(&self) -> &'static str {
        "orderfrequency"
    }
    fn version(&self) -> &'static str {
        "1.10"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    /// The frequency's concept's name in the caller's language.
    fn display(&self, ctx: &Ctx) -> String {
        ctx.catalog
            .concept(&self.0.concept)
            .map(|c| ConceptRes(c).display(ctx))
            .unwrap_or_default()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("frequencyPerDay", Rep::Default),
            ("retired", Rep::Default),
            ("concept", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("frequencyPerDay", Rep::Default),
            ("retired", Rep::Default),
            ("concept", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "name" => json!(self.display(ctx)),
            "frequencyPerDay" => json!(self.0.frequency_per_day),
            "retired" => json!(self.0.retired),
            "concept" => nest(
                ctx.catalog.concept(&self.0.concept).map(ConceptRes),
                rep,
                ctx,
            ),
            "auditInfo" => crate::content::concept::content_audit_info(),
            _ => return None,
        })
    }
}

pub struct OrderTypeRes<'a>(pub &'a OrderType);

impl Resource for OrderTypeRes<'_> {
    fn alias(&self) -> &'static str {
        "ordertype"
    }
    fn version(&self) -> &'static str {
        "1.10"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("javaClassName", Rep::Default),
            ("retired", Rep::Default),
            ("description", Rep::Default),
            ("conceptClasses", Rep::Ref),
            ("parent", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("javaClassName", Rep::Default),
            ("retired", Rep::Default),
            ("description", Rep::Default),
            ("conceptClasses", Rep::Default),
            ("parent", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let t = self.0;
        Some(match name {
            "name" => json!(t.name),
            "javaClassName" => json!(t.java_class_name),
            "retired" => json!(t.retired),
            "description" => json!(t.description),
            "conceptClasses" => Value::Array(
                t.concept_classes
                    .iter()
                    .filter_map(|u| {
                        ctx.catalog
                            .content
                            .concept_classes
                            .iter()
                            .find(|c| &c.uuid == u)
                    })
                    .map(|c| {
                        let mut o = Map::new();
                        o.insert("uuid".into(), json!(c.uuid));
                        o.insert("display".into(), json!(c.name));
                        if !matches!(rep, Rep::Ref) {
                            o.insert("name".into(), json!(c.name));
                        }
                        o.insert(
                            "links".into(),
                            json!([ctx.link(
                                "self",
                                &format!("conceptclass/{}", c.uuid),
                                "conceptclass",
                                ""
                            )]),
                        );
                        Value::Object(o)
                    })
                    .collect(),
            ),
            "parent" => nest(
                t.parent
                    .as_deref()
                    .and_then(|p| ctx.catalog.order_type(p))
                    .map(OrderTypeRes),
                rep,
                ctx,
            ),
            "auditInfo" => crate::content::concept::content_audit_info(),
            _ => return None,
        })
    }
}

pub struct CareSettingRes<'a>(pub &'a CareSetting);

impl Resource for CareSettingRes<'_> {
    fn alias(&self) -> &'static str {
        "caresetting"
    }
    fn version(&self) -> &'static str {
        "1.10"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("careSettingType", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("careSettingType", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let c = self.0;
        Some(match name {
            "name" => json!(c.name),
            "description" => json!(c.description),
            "retired" => json!(c.retired),
            "careSettingType" => json!(c.care_setting_type),
            "auditInfo" => crate::content::concept::content_audit_info(),
            _ => return None,
        })
    }
}

/// Lower case without accents, for matching what a user types.
fn folded(s: &str) -> String {
    crate::search::fold(s)
}

/// `GET drug?q=…` (the drug's name, its concept's names in any language, its reference
/// codes), `?concepts=a,b` (drugs of those concepts), or every drug; retired ones only
/// with `includeAll` — privilege: Get Concepts.
pub async fn drugs(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let catalog = state.catalog.load();
    let include_all = crate::http::answer::flag(&query, "includeAll").unwrap_or(false);
    let q = param(&query, "q").map(folded);
    let concepts: Option<Vec<String>> = param(&query, "concepts").map(|list| {
        list.split(',')
            .filter_map(|c| catalog.concept(c.trim()).map(|c| c.uuid.clone()))
            .collect()
    });
    let matches = |d: &Drug| -> bool {
        if let Some(cs) = &concepts
            && !cs.contains(&d.concept)
        {
            return false;
        }
        let Some(q) = &q else { return true };
        let words: Vec<&str> = q.split_whitespace().collect();
        let hay = |text: &str| {
            let t = folded(text);
            words.iter().all(|w| t.contains(w))
        };
        hay(&d.name)
            || catalog
                .concept(&d.concept)
                .is_some_and(|c| c.names.iter().any(|n| hay(&n.name)))
            || d.mappings
                .iter()
                .any(|m| m.code.eq_ignore_ascii_case(q.trim()))
    };
    let mut found: Vec<&Drug> = catalog
        .content
        .drugs
        .iter()
        .filter(|d| (include_all || !d.retired) && matches(d))
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    let items: Vec<DrugRes> = found.into_iter().map(DrugRes).collect();
    render_list(
        &state,
        &caller,
        &query,
        "/drug",
        items.iter().map(|r| r as &dyn Resource),
    )
}

/// `GET drug/{uuid}` — privilege: Get Concepts.
pub async fn drug(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let catalog = state.catalog.load();
    let d = catalog.drug(&uuid).ok_or(ApiError::NotFound)?;
    one(&state, &caller, &query, &DrugRes(d))
}

fn one(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    r: &dyn Resource,
) -> ApiResult<Response> {
    let catalog = state.catalog.load();
    Ok(ok(render(
        r,
        &rep_of(query)?,
        &caller.ctx(state, &catalog),
    )?))
}

/// `GET orderfrequency` — privilege: Get Order Frequencies.
pub async fn frequencies(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Order Frequencies"])?;
    let catalog = state.catalog.load();
    let items: Vec<OrderFrequencyRes> = catalog
        .content
        .order_frequencies
        .iter()
        .filter(|f| !f.retired)
        .map(OrderFrequencyRes)
        .collect();
    render_list(
        &state,
        &caller,
        &query,
        "/orderfrequency",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn frequency(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Order Frequencies"])?;
    let catalog = state.catalog.load();
    let f = catalog.order_frequency(&uuid).ok_or(ApiError::NotFound)?;
    one(&state, &caller, &query, &OrderFrequencyRes(f))
}

/// `GET ordertype` — privilege: Get Order Types.
pub async fn order_types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Order Types"])?;
    let catalog = state.catalog.load();
    let items: Vec<OrderTypeRes> = catalog
        .content
        .order_types
        .iter()
        .filter(|t| !t.retired)
        .map(OrderTypeRes)
        .collect();
    render_list(
        &state,
        &caller,
        &query,
        "/ordertype",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn order_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Order Types"])?;
    let catalog = state.catalog.load();
    let t = catalog.order_type(&uuid).ok_or(ApiError::NotFound)?;
    one(&state, &caller, &query, &OrderTypeRes(t))
}

/// `GET caresetting` — privilege: Get Care Settings.
pub async fn care_settings(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Care Settings"])?;
    let catalog = state.catalog.load();
    let items: Vec<CareSettingRes> = catalog
        .content
        .care_settings
        .iter()
        .map(CareSettingRes)
        .collect();
    render_list(
        &state,
        &caller,
        &query,
        "/caresetting",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn care_setting(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Care Settings"])?;
    let catalog = state.catalog.load();
    let c = catalog.care_setting(&uuid).ok_or(ApiError::NotFound)?;
    one(&state, &caller, &query, &CareSettingRes(c))
}

/// `GET orderentryconfig`: what the prescription form offers, each list in the request's
/// representation; a list whose items lack a property the representation asks for is
/// left out, as webservices.rest leaves it out — privilege: Get Concepts.
pub async fn order_entry_config(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let entry = OrderEntry::of(&state);
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let rep = rep_of(&query)?;
    let concepts = |uuids: &[String]| -> Vec<ConceptRes> {
        uuids
            .iter()
            .filter_map(|u| catalog.concept(u))
            .filter(|c| !c.retired)
            .map(ConceptRes)
            .collect()
    };
    let mut out = Map::new();
    let mut add = |key: &str, items: Vec<&dyn Resource>| {
        if let Ok(list) = items
            .iter()
            .map(|r| render(*r, &rep, &ctx))
            .collect::<ApiResult<Vec<_>>>()
        {
            out.insert(key.into(), Value::Array(list));
        }
    };
    let lists = [
        ("drugRoutes", concepts(&entry.routes)),
        ("drugDosingUnits", concepts(&entry.dosing_units)),
        (
            "drugDispensingUnits",
            concepts(&entry.all_dispensing_units()),
        ),
        ("durationUnits", concepts(&entry.duration_units)),
        ("testSpecimenSources", concepts(&entry.specimen_sources)),
    ];
    for (key, items) in &lists {
        add(key, items.iter().map(|r| r as &dyn Resource).collect());
    }
    let frequencies: Vec<OrderFrequencyRes> = catalog
        .content
        .order_frequencies
        .iter()
        .filter(|f| !f.retired)
        .map(OrderFrequencyRes)
        .collect();
    add(
        "orderFrequencies",
        frequencies.iter().map(|r| r as &dyn Resource).collect(),
    );
    Ok(ok(Value::Object(out)))
}
