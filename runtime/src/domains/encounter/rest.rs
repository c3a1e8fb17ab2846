//! `encounter`, `obs`, `encounterrole` and `provider` over REST, in OpenMRS's
//! representations. An encounter's `obs` are its top-level observations, each group with
//! its `groupMembers` nested.

use crate::content::concept::ConceptRes;
use crate::content::location::LocationRes;
use crate::content::metadata::{EncounterTypeRes, NamedRes};
use crate::domains::encounter::store::{self, Change, EncounterQuery, ObsQuery};
use crate::domains::encounter::{
    EncounterProviderRecord, EncounterRecord, ObsRecord, ObsValue, UNKNOWN_ENCOUNTER_ROLE,
};
use crate::domains::order::OrderRecord;
use crate::domains::order::rest as order_rest;
use crate::domains::patient::rest::PatientRes;
use crate::domains::provider::rest::ProviderRes;
use crate::domains::visit::rest::VisitRes;
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, nest, page_answer, rep_of, window};
use crate::http::body::{only_known, opt_datetime, opt_ref, ref_uuid};
use crate::http::error::{ApiError, ApiResult, Invalid};
use crate::http::repr::{
    Ctx, Paging, Props, Rep, Resource, nested_list, nested_list_to, nested_to, render, write_json,
};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, ok, param};
use crate::store::record::{Audit, Voiding};
use crate::wire::{datetime_key, wire_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct EncounterRes<'a>(pub &'a EncounterRecord);

fn encounter_type<'c>(ctx: &Ctx<'c>, uuid: &str) -> Option<&'c model::EncounterType> {
    ctx.catalog
        .content
        .encounter_types
        .iter()
        .find(|t| t.uuid == uuid)
}

fn form<'c>(ctx: &Ctx<'c>, uuid: &str) -> Option<&'c model::Form> {
    ctx.catalog.content.forms.iter().find(|f| f.uuid == uuid)
}

/// An encounter's observations that are not members of a group (members nest in theirs).
fn top_obs(ctx: &Ctx, e: &EncounterRecord) -> Vec<ObsRecord> {
    let mut all = store::obs_of_encounter(ctx.store, &e.uuid, false).unwrap_or_default();
    all.retain(|o| o.obs_group.is_none());
    all
}

/// What other domains nest in an encounter's representation, registered in the domains'
/// registry: its `diagnoses` are the diagnosis domain's to render.
pub struct EncounterNesting {
    /// The `diagnoses` property: (encounter, representation, context).
    pub diagnoses: fn(&str, &Rep, &Ctx) -> Value,
}

/// An order's encounter, as its representation nests it (registered for orders).
pub fn nested_by_uuid(uuid: &str, rep: &Rep, ctx: &Ctx) -> Value {
    let e = store::encounter(ctx.store, uuid).ok().flatten();
    nest(e.as_ref().map(EncounterRes), rep, ctx)
}

/// The same, written straight to bytes.
pub fn nested_by_uuid_to(uuid: &str, rep: &Rep, ctx: &Ctx, out: &mut Vec<u8>) {
    let e = store::encounter(ctx.store, uuid).ok().flatten();
    let e = e.as_ref().map(EncounterRes);
    crate::http::repr::nested_to(e.as_ref().map(|e| e as &dyn Resource), rep, ctx, out)
}

/// A visit's encounters, as its representation nests them (registered for the visit).
pub fn of_visit(visit: &str, rep: &Rep, ctx: &Ctx) -> Value {
    let list = store::of_visit(ctx.store, visit).unwrap_or_default();
    let res: Vec<EncounterRes> = list.iter().map(EncounterRes).collect();
    nested_list(res.iter().map(|r| r as &dyn Resource), rep, ctx)
}

impl Resource for EncounterRes<'_> {
    fn alias(&self) -> &'static str {
        "encounter"
    }
    fn version(&self) -> &'static str {
        "2.2"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        let t = encounter_type(ctx, &self.0.encounter_type)
            .map(|t| EncounterTypeRes(t).display(ctx))
            .unwrap_or_default();
        let day = crate::wire::parse_key(&self.0.datetime)
            .map(|d| d.format("%d/%m/%Y").to_string())
            .unwrap_or_default();
        format!("{t} {day}")
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("encounterDatetime", Rep::Default),
            ("patient", Rep::Ref),
            ("location", Rep::Ref),
            ("form", Rep::Ref),
            ("encounterType", Rep::Ref),
            ("obs", Rep::Ref),
            ("orders", Rep::Ref),
            ("voided", Rep::Default),
            ("visit", Rep::Ref),
            ("encounterProviders", Rep::Ref),
            ("diagnoses", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("encounterDatetime", Rep::Default),
            ("patient", Rep::Default),
            ("location", Rep::Default),
            ("form", Rep::Default),
            ("encounterType", Rep::Default),
            ("obs", Rep::Default),
            ("orders", Rep::Default),
            ("voided", Rep::Default),
            ("visit", Rep::Default),
            ("encounterProviders", Rep::Default),
            ("diagnoses", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let e = self.0;
        Some(match name {
            "encounterDatetime" => wire_datetime(&e.datetime),
            "patient" => {
                let p = ctx.store.patient(&e.patient).ok().flatten();
                nest(p.as_ref().map(PatientRes), rep, ctx)
            }
            "location" => nest(
                e.location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(LocationRes),
                rep,
                ctx,
            ),
            "form" => nest(
                e.form
                    .as_deref()
                    .and_then(|f| form(ctx, f))
                    .map(crate::content::form::FormRes),
                rep,
                ctx,
            ),
            "encounterType" => nest(
                encounter_type(ctx, &e.encounter_type).map(EncounterTypeRes),
                rep,
                ctx,
            ),
            "obs" => {
                let all = top_obs(ctx, e);
                let top: Vec<ObsRes> = all.iter().map(ObsRes).collect();
                nested_list(top.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "diagnoses" => match ctx.store.registry().extension::<EncounterNesting>() {
                Some(nesting) => (nesting.diagnoses)(&e.uuid, rep, ctx),
                None => Value::Array(Vec::new()),
            },
            "orders" => {
                let orders = order_rest::encounter_orders(ctx, &e.uuid);
                let res: Vec<order_rest::OrderRes> =
                    orders.iter().map(order_rest::OrderRes).collect();
                nested_list(res.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "voided" => json!(e.voiding.voided),
            "visit" => {
                let v = e.visit.as_deref().and_then(|v| {
                    crate::domains::visit::store::get(ctx.store, v)
                        .ok()
                        .flatten()
                });
                nest(v.as_ref().map(VisitRes), rep, ctx)
            }
            "encounterProviders" => {
                let res: Vec<EncounterProviderRes> = e
                    .providers
                    .iter()
                    .map(|p| EncounterProviderRes(&e.uuid, p))
                    .collect();
                nested_list(res.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "auditInfo" => audit_info(&e.audit, ctx),
            _ => return None,
        })
    }
    fn write_prop(&self, name: &str, rep: &Rep, ctx: &Ctx, out: &mut Vec<u8>) -> Option<()> {
        let e = self.0;
        match name {
            "obs" => {
                let all = top_obs(ctx, e);
                let top: Vec<ObsRes> = all.iter().map(ObsRes).collect();
                nested_list_to(top.iter().map(|r| r as &dyn Resource), rep, ctx, out);
            }
            "location" => {
                let l = e
                    .location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(LocationRes);
                nested_to(l.as_ref().map(|r| r as &dyn Resource), rep, ctx, out);
            }
            "encounterType" => {
                let t = encounter_type(ctx, &e.encounter_type).map(EncounterTypeRes);
                nested_to(t.as_ref().map(|r| r as &dyn Resource), rep, ctx, out);
            }
            _ => write_json(out, &self.prop(name, rep, ctx)?),
        }
        Some(())
    }
}

pub struct EncounterProviderRes<'a>(pub &'a str, pub &'a EncounterProviderRecord);

impl EncounterProviderRes<'_> {
    fn provider(&self, ctx: &Ctx) -> Option<ProviderRes> {
        let acting = match self.1.user.as_deref() {
            Some(u) => ctx.store.user_shared(u).ok()?,
            None => None,
        };
        crate::domains::provider::named_in_encounter(ctx.store, &self.1.provider, acting)
            .map(ProviderRes)
    }
}

impl Resource for EncounterProviderRes<'_> {
    fn alias(&self) -> &'static str {
        "encounterprovider"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("encounter/{}/encounterprovider/{}", self.0, self.1.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        let provider = self
            .provider(ctx)
            .map(|p| p.display(ctx))
            .unwrap_or_default();
        let role = role(ctx, &self.1.encounter_role)
            .map(|r| r.display(ctx))
            .unwrap_or_default();
        format!("{provider}: {role}")
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("provider", Rep::Ref),
            ("encounterRole", Rep::Ref),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("provider", Rep::Default),
            ("encounterRole", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "provider" => nest(self.provider(ctx), rep, ctx),
            "encounterRole" => nest(role(ctx, &self.1.encounter_role), rep, ctx),
            "voided" => json!(false),
            _ => return None,
        })
    }
}

fn role<'c>(ctx: &Ctx<'c>, uuid: &str) -> Option<NamedRes<'c>> {
    ctx.catalog
        .content
        .encounter_roles
        .iter()
        .find(|r| r.uuid == uuid)
        .map(|r| NamedRes("encounterrole", r))
}

pub struct ObsRes<'a>(pub &'a ObsRecord);

pub fn value_display(o: &ObsRecord, ctx: &Ctx) -> String {
    match &o.value {
        ObsValue::Numeric(n) => format_number(*n),
        ObsValue::Coded(c) => ctx
            .catalog
            .concept(c)
            .map(|c| ConceptRes(c).display(ctx))
            .unwrap_or_default(),
        ObsValue::Text(t) => t.clone(),
        ObsValue::Boolean(b) => b.to_string(),
        ObsValue::Datetime(t) => wire_datetime(t).as_str().unwrap_or_default().to_string(),
        ObsValue::Date(d) | ObsValue::Time(d) => d.clone(),
        ObsValue::Group => {
            let members = crate::domains::encounter::store::group_members(ctx.store, &o.uuid)
                .unwrap_or_default();
            members
                .iter()
                .map(|m| value_display(m, ctx))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

/// A number as Java prints a double: `37.5`, and a whole `72` as `72.0`.
fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{n:.1}")
    } else {
        n.to_string()
    }
}

impl Resource for ObsRes<'_> {
    fn alias(&self) -> &'static str {
        "obs"
    }
    fn version(&self) -> &'static str {
        "1.11"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        let concept = ctx
            .catalog
            .concept(&self.0.concept)
            .map(|c| ConceptRes(c).display(ctx))
            .unwrap_or_default();
        format!("{concept}: {}", value_display(self.0, ctx))
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("concept", Rep::Ref),
            ("person", Rep::Ref),
            ("obsDatetime", Rep::Default),
            ("accessionNumber", Rep::Default),
            ("obsGroup", Rep::Ref),
            ("valueCodedName", Rep::Ref),
            ("groupMembers", Rep::Ref),
            ("comment", Rep::Default),
            ("location", Rep::Ref),
            ("order", Rep::Ref),
            ("encounter", Rep::Ref),
            ("voided", Rep::Default),
            ("value", Rep::Ref),
            ("valueModifier", Rep::Default),
            ("formFieldPath", Rep::Default),
            ("formFieldNamespace", Rep::Default),
            ("status", Rep::Default),
            ("interpretation", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("concept", Rep::Default),
            ("person", Rep::Default),
            ("obsDatetime", Rep::Default),
            ("accessionNumber", Rep::Default),
            ("obsGroup", Rep::Default),
            ("valueCodedName", Rep::Default),
            ("groupMembers", Rep::Default),
            ("comment", Rep::Default),
            ("location", Rep::Default),
            ("order", Rep::Default),
            ("encounter", Rep::Default),
            ("voided", Rep::Default),
            ("value", Rep::Default),
            ("valueModifier", Rep::Default),
            ("formFieldPath", Rep::Default),
            ("formFieldNamespace", Rep::Default),
            ("status", Rep::Default),
            ("interpretation", Rep::Default),
            ("previousVersion", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let o = self.0;
        Some(match name {
            "concept" => nest(ctx.catalog.concept(&o.concept).map(ConceptRes), rep, ctx),
            "person" => {
                let p = ctx.store.patient(&o.person).ok().flatten();
                nest(
                    p.as_ref().map(crate::domains::patient::rest::PersonRes),
                    rep,
                    ctx,
                )
            }
            "obsDatetime" => wire_datetime(&o.datetime),
            "accessionNumber" | "valueCodedName" | "valueModifier" => Value::Null,
            "obsGroup" => {
                let g = o
                    .obs_group
                    .as_deref()
                    .and_then(|g| store::obs(ctx.store, g).ok().flatten());
                nest(g.as_ref().map(ObsRes), rep, ctx)
            }
            "groupMembers" => match o.value {
                ObsValue::Group => {
                    let members = store::group_members(ctx.store, &o.uuid).unwrap_or_default();
                    let res: Vec<ObsRes> = members.iter().map(ObsRes).collect();
                    nested_list(res.iter().map(|r| r as &dyn Resource), rep, ctx)
                }
                _ => Value::Null,
            },
            "comment" => json!(o.comment),
            "location" => nest(
                o.location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(LocationRes),
                rep,
                ctx,
            ),
            "order" => {
                let found = o.order.as_deref().and_then(|u| {
                    crate::domains::order::store::get(ctx.store, u)
                        .ok()
                        .flatten()
                });
                match (found, &o.order) {
                    (Some(x), _) => nest(Some(order_rest::OrderRes(&x)), rep, ctx),
                    (None, Some(u)) => json!({"uuid": u}),
                    (None, None) => Value::Null,
                }
            }
            "encounter" => {
                let e = o
                    .encounter
                    .as_deref()
                    .and_then(|e| store::encounter(ctx.store, e).ok().flatten());
                nest(e.as_ref().map(EncounterRes), rep, ctx)
            }
            "voided" => json!(o.voiding.voided),
            "value" => match &o.value {
                ObsValue::Numeric(n) => json!(n),
                ObsValue::Coded(c) => nest(ctx.catalog.concept(c).map(ConceptRes), rep, ctx),
                ObsValue::Text(t) => json!(t),
                ObsValue::Boolean(b) => json!(b),
                ObsValue::Datetime(t) => wire_datetime(t),
                ObsValue::Date(d) => crate::wire::format_date(d),
                ObsValue::Time(t) => json!(t),
                ObsValue::Group => Value::Null,
            },
            "formFieldPath" => json!(o.form_field_path),
            "formFieldNamespace" => json!(o.form_field_namespace),
            // OpenMRS keeps both in one column, "namespace^path"; the O3 sticky note reads it
            // to tell a free-standing note from a form's answer.
            "formNamespaceAndPath" => match (&o.form_field_namespace, &o.form_field_path) {
                (Some(ns), Some(path)) => json!(format!("{ns}^{path}")),
                (Some(ns), None) => json!(format!("{ns}^")),
                (None, Some(path)) => json!(format!("^{path}")),
                (None, None) => Value::Null,
            },
            "status" => json!(o.status),
            "interpretation" => json!(o.interpretation),
            "previousVersion" => o
                .previous_version
                .as_ref()
                .map(|u| json!({"uuid": u}))
                .unwrap_or(Value::Null),
            "auditInfo" => audit_info(&o.audit, ctx),
            _ => return None,
        })
    }
    fn write_prop(&self, name: &str, rep: &Rep, ctx: &Ctx, out: &mut Vec<u8>) -> Option<()> {
        let o = self.0;
        let concept = match (name, &o.value) {
            ("concept", _) => &o.concept,
            ("value", ObsValue::Coded(c)) => c,
            _ => {
                write_json(out, &self.prop(name, rep, ctx)?);
                return Some(());
            }
        };
        let c = ctx.catalog.concept(concept).map(ConceptRes);
        nested_to(c.as_ref().map(|r| r as &dyn Resource), rep, ctx, out);
        Some(())
    }
}

const ENCOUNTER_FIELDS: &[&str] = &[
    "uuid",
    "patient",
    "encounterType",
    "encounterDatetime",
    "location",
    "form",
    "visit",
    "obs",
    "encounterProviders",
    "orders",
    "voided",
    "diagnoses",
];

/// Diagnoses inside an encounter are written through `patientdiagnoses`: an empty list
/// (what the form engine sends) passes, anything else is refused rather than silently
/// dropped.
fn not_recorded_yet(body: &Map<String, Value>) -> ApiResult<()> {
    match body.get("diagnoses") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(items)) if items.is_empty() => Ok(()),
        Some(_) => Err(ApiError::BadRequest(
            "diagnoses cannot be recorded with an encounter: write them through patientdiagnoses"
                .into(),
        )),
    }
}

pub(crate) fn providers(
    state: &AppState,
    body: &Map<String, Value>,
) -> ApiResult<Option<Vec<EncounterProviderRecord>>> {
    let Some(list) = body.get("encounterProviders") else {
        return Ok(None);
    };
    let Value::Array(list) = list else {
        return Err(ApiError::BadRequest(
            "encounterProviders must be a list".into(),
        ));
    };
    list.iter()
        .map(|p| {
            let provider = p.get("provider").and_then(ref_uuid).ok_or_else(|| {
                ApiError::BadRequest("encounterProviders: each needs a provider".into())
            })?;
            let role = p
                .get("encounterRole")
                .and_then(ref_uuid)
                .unwrap_or_else(|| UNKNOWN_ENCOUNTER_ROLE.into());
            let found =
                crate::domains::provider::find(&state.store, &provider)?.ok_or_else(|| {
                    ApiError::invalid_field(
                        "encounterProviders",
                        "error.invalid",
                        &format!("Provider {provider} does not exist"),
                    )
                })?;
            Ok(EncounterProviderRecord {
                uuid: crate::store::record::new_uuid(),
                user: found.user.map(|u| u.uuid.clone()),
                provider,
                encounter_role: role,
            })
        })
        .collect::<ApiResult<Vec<_>>>()
        .map(Some)
}

fn obs_bodies(body: &Map<String, Value>) -> ApiResult<Vec<&Map<String, Value>>> {
    match body.get("obs") {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, o)| {
                o.as_object()
                    .ok_or_else(|| ApiError::BadRequest(format!("obs[{i}] must be an object")))
            })
            .collect(),
        Some(_) => Err(ApiError::BadRequest("obs must be a list".into())),
    }
}

/// Whether a body carries orders to place.
fn has_orders(body: &Map<String, Value>) -> bool {
    matches!(body.get("orders"), Some(Value::Array(items)) if !items.is_empty())
}

/// An observation that answers an order (a laboratory result) names a test order of the
/// same patient: a stored one, or one placed with it. A medication order has no result.
fn check_obs_orders(
    state: &AppState,
    obs: &[ObsRecord],
    patient: &str,
    placed: &[crate::domains::order::OrderRecord],
) -> ApiResult<()> {
    use crate::domains::order::OrderClass;
    for o in obs {
        let Some(order) = &o.order else { continue };
        let field = "obs.order";
        let found = match placed.iter().find(|p| &p.uuid == order) {
            Some(p) => Some((p.patient.clone(), p.class)),
            None => crate::domains::order::store::get(&state.store, order)?
                .map(|x| (x.patient, x.class)),
        };
        match found {
            None => {
                return Err(ApiError::invalid_field(
                    field,
                    "error.invalid",
                    "Order does not exist",
                ));
            }
            Some((p, _)) if p != patient => {
                return Err(ApiError::invalid_field(
                    field,
                    "error.invalid",
                    "The order is another patient's",
                ));
            }
            Some((_, OrderClass::Drug)) => {
                return Err(ApiError::invalid_field(
                    field,
                    "Obs.error.orderNotATest",
                    "A result answers a test order, not a medication order",
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The visit an encounter belongs to: the one named, else none (O3 names it).
fn load_visit(
    state: &AppState,
    e: &EncounterRecord,
) -> ApiResult<Option<crate::domains::visit::VisitRecord>> {
    match &e.visit {
        Some(v) => crate::domains::visit::store::get(&state.store, v).map_err(ApiError::from),
        None => Ok(None),
    }
}

pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Encounters"])?;
    only_known(&body, ENCOUNTER_FIELDS)?;
    not_recorded_yet(&body)?;
    if !obs_bodies(&body)?.is_empty() {
        caller.require(&["Add Observations"])?;
    }
    if has_orders(&body) {
        caller.require(&["Add Orders"])?;
    }
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let e = blocking(move || {
        let now = Utc::now();
        let audit = Audit::new(&user, now);
        let patient = opt_ref(&body, "patient")?.ok_or_else(|| {
            ApiError::invalid_field("patient", "error.null", "Patient is required")
        })?;
        match st.store.patient(&patient)? {
            Some(p) if !p.voided => {}
            _ => {
                return Err(ApiError::invalid_field(
                    "patient",
                    "error.invalid",
                    "Patient does not exist",
                ));
            }
        }
        let catalog = st.catalog.load();
        let encounter_type = opt_ref(&body, "encounterType")?
            .map(|t| crate::domains::encounter::encounter_type_uuid(&catalog, &t))
            .unwrap_or_default();
        let e = EncounterRecord {
            v: 1,
            uuid: crate::http::body::opt_str(&body, "uuid")?
                .unwrap_or_else(crate::store::record::new_uuid),
            patient: patient.clone(),
            encounter_type,
            datetime: opt_datetime(&body, "encounterDatetime")?
                .unwrap_or_else(|| datetime_key(now)),
            location: opt_ref(&body, "location")?,
            form: opt_ref(&body, "form")?,
            visit: opt_ref(&body, "visit")?,
            providers: providers(&st, &body)?.unwrap_or_default(),
            audit: audit.clone(),
            voiding: Voiding::default(),
        };
        let mut e = e;
        if e.visit.is_none() {
            // As OpenMRS's existing-visit assignment does: the patient's open visit that
            // holds the encounter's time, if there is one.
            let visits = crate::domains::visit::store::visits_of(&st.store, &patient)?;
            e.visit = visits
                .iter()
                .find(|v| v.is_active() && v.contains(&e.datetime))
                .map(|v| v.uuid.clone());
        }
        let mut inv = Invalid::default();
        let visit = load_visit(&st, &e)?;
        crate::domains::encounter::validate(&st, &e, visit.as_ref(), &mut inv);
        let mut obs = Vec::new();
        for (i, o) in obs_bodies(&body)?.into_iter().enumerate() {
            crate::domains::encounter::parse_obs(
                &st,
                o,
                &format!("obs[{i}]"),
                &patient,
                Some(&e),
                None,
                &audit,
                &mut inv,
                &mut obs,
            )?;
        }
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        let drafts = order_rest::drafts_of_encounter(&st, &body, &e.uuid, &patient, &audit)?;
        let _one_writer = st.store.write_lock();
        if store::encounter(&st.store, &e.uuid)?.is_some() {
            return Err(ApiError::BadRequest(format!(
                "An encounter with uuid {} already exists",
                e.uuid
            )));
        }
        check_obs_orders(&st, &obs, &patient, &drafts)?;
        let placed = order_rest::place_all(
            &st,
            drafts,
            &crate::domains::encounter::placement(&e),
            now,
            Some("orders"),
        )?;
        // The encounter, its observations and its orders (a signed order basket) commit
        // together.
        st.store.write(|txn| {
            store::write_in(
                txn,
                &Change {
                    encounter: Some((None, &e)),
                    obs: obs.iter().map(|o| (None, o)).collect(),
                },
            )?;
            placed.write_in(txn)
        })?;
        Ok(e)
    })
    .await?;
    answer(
        &state,
        &caller,
        &EncounterRes(&e),
        &rep,
        StatusCode::CREATED,
    )
}

/// `POST encounter/{uuid}`: changes the encounter's fields; in `obs`, an entry with the
/// uuid of a saved observation and `voided: true` voids it, one with a uuid and a new value
/// replaces it (the old one is voided, the new one points back to it), one without a uuid
/// is added.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Encounters"])?;
    only_known(&body, ENCOUNTER_FIELDS)?;
    not_recorded_yet(&body)?;
    if has_orders(&body) {
        caller.require(&["Add Orders"])?;
    }
    let patient = opt_ref(&body, "patient")?;
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let e = blocking(move || {
        let now = Utc::now();
        let _one_writer = st.store.write_lock();
        let old = store::encounter(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        // The form engine sends back the encounter as it read it, patient included: the
        // same patient is fine, another one is refused.
        if patient.as_ref().is_some_and(|p| p != &old.patient) {
            return Err(ApiError::BadRequest(
                "The patient of an encounter cannot be changed".into(),
            ));
        }
        let mut e = old.clone();
        if let Some(t) = opt_ref(&body, "encounterType")? {
            e.encounter_type = t;
        }
        if let Some(t) = opt_datetime(&body, "encounterDatetime")? {
            e.datetime = t;
        }
        if body.contains_key("location") {
            e.location = opt_ref(&body, "location")?;
        }
        if body.contains_key("form") {
            e.form = opt_ref(&body, "form")?;
        }
        if body.contains_key("visit") {
            e.visit = opt_ref(&body, "visit")?;
        }
        if let Some(p) = providers(&st, &body)? {
            // Providers already on the encounter keep their entry.
            let mut merged = Vec::new();
            for n in p {
                match e
                    .providers
                    .iter()
                    .find(|x| x.provider == n.provider && x.encounter_role == n.encounter_role)
                {
                    Some(existing) => merged.push(existing.clone()),
                    None => merged.push(n),
                }
            }
            e.providers = merged;
        }
        e.audit.changed(&user, now);
        let mut inv = Invalid::default();
        let visit = load_visit(&st, &e)?;
        crate::domains::encounter::validate(&st, &e, visit.as_ref(), &mut inv);
        let saved = store::obs_of_encounter(&st.store, &e.uuid, false)?;
        let audit = Audit::new(&user, now);
        let mut replaced: Vec<(ObsRecord, ObsRecord)> = Vec::new();
        let mut added = Vec::new();
        for (i, o) in obs_bodies(&body)?.into_iter().enumerate() {
            let existing = o
                .get("uuid")
                .and_then(ref_uuid)
                .and_then(|u| saved.iter().find(|s| s.uuid == u));
            match existing {
                Some(s) if o.get("voided") == Some(&Value::Bool(true)) => {
                    let mut v = s.clone();
                    v.voiding.void(&user, now, "voided through the encounter");
                    replaced.push((s.clone(), v));
                    // Its members go with it.
                    for m in saved
                        .iter()
                        .filter(|m| m.obs_group.as_deref() == Some(&s.uuid))
                    {
                        let mut v = m.clone();
                        v.voiding.void(&user, now, "voided with its group");
                        replaced.push((m.clone(), v));
                    }
                }
                Some(s) => {
                    let mut fresh = o.clone();
                    fresh.remove("uuid");
                    fresh.remove("voided");
                    if !fresh.contains_key("concept") {
                        fresh.insert("concept".into(), json!(s.concept));
                    }
                    // A corrected result still answers its order.
                    if !fresh.contains_key("order")
                        && let Some(order) = &s.order
                    {
                        fresh.insert("order".into(), json!(order));
                    }
                    let mut parsed = Vec::new();
                    crate::domains::encounter::parse_obs(
                        &st,
                        &fresh,
                        &format!("obs[{i}]"),
                        &e.patient,
                        Some(&e),
                        s.obs_group.as_deref(),
                        &audit,
                        &mut inv,
                        &mut parsed,
                    )?;
                    if let Some(first) = parsed.first_mut() {
                        first.previous_version = Some(s.uuid.clone());
                        if first.value == s.value && first.comment == s.comment {
                            continue; // unchanged: nothing to record
                        }
                    }
                    let mut v = s.clone();
                    v.voiding.void(&user, now, "edited");
                    replaced.push((s.clone(), v));
                    added.extend(parsed);
                }
                None if o.get("voided") == Some(&Value::Bool(true)) => {}
                None => {
                    let mut fresh = o.clone();
                    fresh.remove("uuid");
                    crate::domains::encounter::parse_obs(
                        &st,
                        &fresh,
                        &format!("obs[{i}]"),
                        &e.patient,
                        Some(&e),
                        None,
                        &audit,
                        &mut inv,
                        &mut added,
                    )?;
                }
            }
        }
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        let drafts = order_rest::drafts_of_encounter(&st, &body, &e.uuid, &e.patient, &audit)?;
        check_obs_orders(&st, &added, &e.patient, &drafts)?;
        let placed = order_rest::place_all(
            &st,
            drafts,
            &crate::domains::encounter::placement(&e),
            now,
            Some("orders"),
        )?;
        let mut obs: Vec<(Option<&ObsRecord>, &ObsRecord)> =
            replaced.iter().map(|(o, n)| (Some(o), n)).collect();
        obs.extend(added.iter().map(|o| (None, o)));
        st.store.write(|txn| {
            store::write_in(
                txn,
                &Change {
                    encounter: Some((Some(&old), &e)),
                    obs,
                },
            )?;
            placed.write_in(txn)
        })?;
        Ok(e)
    })
    .await?;
    answer(&state, &caller, &EncounterRes(&e), &rep, StatusCode::OK)
}

pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters"])?;
    let e = store::encounter(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &EncounterRes(&e),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE encounter/{uuid}`: voids it and its observations (`reason`).
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Delete Encounters"])?;
    if flag(&query, "purge").unwrap_or(false) {
        return Err(ApiError::BadRequest(
            "Encounters are voided, never purged: clinical records are kept".into(),
        ));
    }
    let user = caller.user_uuid();
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let st = state.clone();
    blocking(move || {
        let now = Utc::now();
        let _one_writer = st.store.write_lock();
        let old = store::encounter(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if old.voiding.voided {
            return Ok(());
        }
        let mut e = old.clone();
        e.voiding.void(&user, now, &reason);
        let changed: Vec<(ObsRecord, ObsRecord)> =
            store::obs_of_encounter(&st.store, &uuid, false)?
                .into_iter()
                .map(|o| {
                    let mut v = o.clone();
                    v.voiding.void(&user, now, &reason);
                    (o, v)
                })
                .collect();
        let obs = changed.iter().map(|(o, n)| (Some(o), n)).collect();
        // Its orders go with it, as core's voidEncounter voids them (and the orders their
        // revisions had stopped stand again).
        let orders: Vec<(OrderRecord, OrderRecord)> = crate::domains::order::voiding(
            &st.store,
            &crate::domains::order::store::of_encounter(&st.store, &uuid, false)?,
            &user,
            now,
            &reason,
        )?;
        // A bed it put the patient in is freed, as the bed management module does.
        let effects = crate::domains::encounter::voiding_effects(&st.store, &uuid, &user, &reason)?;
        st.store
            .write(|txn| {
                effects.into_iter().try_for_each(|effect| effect(txn))?;
                store::write_in(
                    txn,
                    &Change {
                        encounter: Some((Some(&old), &e)),
                        obs,
                    },
                )?;
                crate::domains::order::store::put_in(
                    txn,
                    &orders.iter().map(|(o, n)| (Some(o), n)).collect::<Vec<_>>(),
                )
            })
            .map_err(ApiError::from)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounters"])?;
    let date = |name: &str| -> ApiResult<Option<String>> {
        match param(&query, name) {
            None => Ok(None),
            Some(s) => crate::wire::parse_datetime(s)
                .map(|t| Some(datetime_key(t)))
                .ok_or_else(|| ApiError::BadRequest(format!("{name}: '{s}' is not a date"))),
        }
    };
    let catalog = state.catalog.load();
    let q = EncounterQuery {
        patient: param(&query, "patient").map(str::to_string),
        visit: param(&query, "visit").map(str::to_string),
        encounter_type: param(&query, "encounterType")
            .map(|t| crate::domains::encounter::encounter_type_uuid(&catalog, t)),
        form: param(&query, "form").map(str::to_string),
        from: date("fromdate")?,
        to: date("todate")?.map(|t| {
            if t.ends_with("T00:00:00.000Z") {
                t.replace("T00:00:00.000Z", "T23:59:59.999Z")
            } else {
                t
            }
        }),
        include_voided: flag(&query, "includeAll").unwrap_or(false),
    };
    if q.patient.is_none() && q.visit.is_none() {
        return Err(ApiError::BadRequest(
            "Search encounters by patient or visit".into(),
        ));
    }
    let paging = Paging::from_query(&query)?;
    let (list, page) = store::list(&state.store, &q, window(&paging))?;
    page_answer(
        &state,
        &caller,
        &query,
        "/encounter",
        &paging,
        &page,
        list.iter().map(EncounterRes),
    )
}

// Observations.

pub async fn obs_create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Observations"])?;
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let o = blocking(move || {
        let now = Utc::now();
        let audit = Audit::new(&user, now);
        let person = opt_ref(&body, "person")?
            .ok_or_else(|| ApiError::invalid_field("person", "error.null", "Person is required"))?;
        if st.store.patient(&person)?.is_none() {
            return Err(ApiError::invalid_field(
                "person",
                "error.invalid",
                "Person does not exist",
            ));
        }
        let encounter = match opt_ref(&body, "encounter")? {
            Some(e) => {
                let e = store::encounter(&st.store, &e)?.ok_or_else(|| {
                    ApiError::invalid_field(
                        "encounter",
                        "error.invalid",
                        "Encounter does not exist",
                    )
                })?;
                if e.patient != person {
                    return Err(ApiError::invalid_field(
                        "encounter",
                        "error.invalid",
                        "The encounter belongs to another patient",
                    ));
                }
                Some(e)
            }
            None => None,
        };
        let mut inv = Invalid::default();
        let mut obs = Vec::new();
        crate::domains::encounter::parse_obs(
            &st,
            &body,
            "",
            &person,
            encounter.as_ref(),
            None,
            &audit,
            &mut inv,
            &mut obs,
        )?;
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        check_obs_orders(&st, &obs, &person, &[])?;
        store::write(
            &st.store,
            &Change {
                encounter: None,
                obs: obs.iter().map(|o| (None, o)).collect(),
            },
        )?;
        Ok(obs.swap_remove(0))
    })
    .await?;
    answer(&state, &caller, &ObsRes(&o), &rep, StatusCode::CREATED)
}

/// `POST obs/{uuid}` with a new `value` (and `comment`, `obsDatetime`, `status`): as
/// OpenMRS saves an edited observation, the old one is voided and the new one, with a new
/// uuid, points back to it (`previousVersion`), in one transaction; answered with the new
/// one. What the laboratory app sends to correct a result — privilege: Edit Observations.
pub async fn obs_update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Observations"])?;
    only_known(
        &body,
        &[
            "uuid",
            "value",
            "comment",
            "obsDatetime",
            "status",
            "concept",
            "person",
        ],
    )?;
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let o = blocking(move || {
        let now = Utc::now();
        let _one_writer = st.store.write_lock();
        let old = store::obs(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if old.voiding.voided {
            return Err(ApiError::BadRequest(
                "A voided observation cannot be changed".into(),
            ));
        }
        if matches!(old.value, ObsValue::Group) {
            return Err(ApiError::BadRequest(
                "An obs group has no value: change its members".into(),
            ));
        }
        for (field, same) in [("concept", &old.concept), ("person", &old.person)] {
            if crate::http::body::opt_ref(&body, field)?.is_some_and(|v| {
                st.catalog
                    .load()
                    .concept(&v)
                    .map_or(v.clone(), |c| c.uuid.clone())
                    != *same
                    && v != *same
            }) {
                return Err(ApiError::BadRequest(format!(
                    "The {field} of an observation cannot be changed"
                )));
            }
        }
        let encounter = match &old.encounter {
            Some(e) => store::encounter(&st.store, e)?,
            None => None,
        };
        let mut fresh = serde_json::Map::new();
        fresh.insert("concept".into(), json!(old.concept));
        for field in ["value", "comment", "status"] {
            if let Some(v) = body.get(field) {
                fresh.insert(field.into(), v.clone());
            }
        }
        if !body.contains_key("value") {
            return Err(ApiError::invalid_field(
                "value",
                "error.null",
                "The new value is required",
            ));
        }
        if !fresh.contains_key("comment")
            && let Some(c) = &old.comment
        {
            fresh.insert("comment".into(), json!(c));
        }
        fresh.insert(
            "obsDatetime".into(),
            body.get("obsDatetime")
                .cloned()
                .unwrap_or_else(|| json!(old.datetime)),
        );
        let mut inv = Invalid::default();
        let mut parsed = Vec::new();
        crate::domains::encounter::parse_obs(
            &st,
            &fresh,
            "",
            &old.person,
            encounter.as_ref(),
            old.obs_group.as_deref(),
            &Audit::new(&user, now),
            &mut inv,
            &mut parsed,
        )?;
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        let mut new = parsed.swap_remove(0);
        new.previous_version = Some(old.uuid.clone());
        new.order = old.order.clone();
        new.location = old.location.clone();
        new.form_field_namespace = old.form_field_namespace.clone();
        new.form_field_path = old.form_field_path.clone();
        let mut voided = old.clone();
        voided.voiding.void(&user, now, "edited");
        store::write(
            &st.store,
            &Change {
                encounter: None,
                obs: vec![(Some(&old), &voided), (None, &new)],
            },
        )?;
        Ok(new)
    })
    .await?;
    answer(&state, &caller, &ObsRes(&o), &rep, StatusCode::OK)
}

pub async fn obs_read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let o = store::obs(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &ObsRes(&o),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

pub async fn obs_delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Delete Observations"])?;
    let user = caller.user_uuid();
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::obs(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if old.voiding.voided {
            return Ok(());
        }
        let mut o = old.clone();
        o.voiding.void(&user, Utc::now(), &reason);
        store::write(
            &st.store,
            &Change {
                encounter: None,
                obs: vec![(Some(&old), &o)],
            },
        )
        .map_err(ApiError::from)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn obs_search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Observations"])?;
    let concepts = crate::domains::encounter::concepts_param(
        &state.catalog.load(),
        &query,
        &["concept", "concepts"],
    );
    let q = ObsQuery {
        patient: param(&query, "patient")
            .or(param(&query, "person"))
            .map(str::to_string),
        concepts,
        encounter: param(&query, "encounter").map(str::to_string),
        encounter_type: None,
        include_voided: flag(&query, "includeAll").unwrap_or(false),
    };
    if q.patient.is_none() && q.encounter.is_none() {
        return Err(ApiError::BadRequest(
            "Search observations by patient or encounter".into(),
        ));
    }
    let paging = Paging::from_query(&query)?;
    let (list, page) = store::list_obs(&state.store, &q, window(&paging))?;
    page_answer(
        &state,
        &caller,
        &query,
        "/obs",
        &paging,
        &page,
        list.iter().map(ObsRes),
    )
}

// Encounter roles and providers.

pub async fn encounter_roles(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounter Roles"])?;
    let catalog = state.catalog.load();
    let items: Vec<NamedRes> = catalog
        .content
        .encounter_roles
        .iter()
        .filter(|r| !r.retired)
        .map(|r| NamedRes("encounterrole", r))
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/encounterrole",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn encounter_role(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Encounter Roles"])?;
    let catalog = state.catalog.load();
    let r = catalog
        .content
        .encounter_roles
        .iter()
        .find(|r| r.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    Ok(ok(render(
        &NamedRes("encounterrole", r),
        &rep_of(&query)?,
        &caller.ctx(&state, &catalog),
    )?))
}
