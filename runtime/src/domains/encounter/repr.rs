//! The REST representations of encounters, their providers and observations, and what other
//! domains nest in them (registered in the domains' registry).

use crate::content::concept::ConceptRes;
use crate::content::location::LocationRes;
use crate::content::metadata::{EncounterTypeRes, NamedRes};
use crate::domains::encounter::store;
use crate::domains::encounter::{EncounterProviderRecord, EncounterRecord, ObsRecord, ObsValue};
use crate::domains::order::rest as order_rest;
use crate::domains::patient::repr::PatientRes;
use crate::domains::provider::rest::ProviderRes;
use crate::domains::visit::rest::VisitRes;
use crate::http::answer::{audit_info, nest, user_ref};
use crate::http::repr::{
    Ctx, Props, Rep, Resource, nested_list, nested_list_to, nested_to, write_json,
};
use crate::wire::wire_datetime;
use serde_json::{Value, json};

/// An encounter as REST represents it; with its observations when the handler read them
/// ahead for a whole page (`store::obs_of_encounters`), else they are read when rendered.
pub struct EncounterRes<'a>(pub &'a EncounterRecord, pub Option<&'a [ObsRecord]>);

impl<'a> EncounterRes<'a> {
    /// An encounter whose observations are read when rendered.
    pub fn of(e: &'a EncounterRecord) -> Self {
        EncounterRes(e, None)
    }
}

pub(crate) fn encounter_type<'c>(ctx: &Ctx<'c>, uuid: &str) -> Option<&'c model::EncounterType> {
    ctx.catalog
        .content
        .encounter_types
        .iter()
        .find(|t| t.uuid == uuid)
}

pub(crate) fn form<'c>(ctx: &Ctx<'c>, uuid: &str) -> Option<&'c model::Form> {
    ctx.catalog.content.forms.iter().find(|f| f.uuid == uuid)
}

/// An encounter's observations: those its handler read ahead, else read now.
fn obs_of<'a>(ctx: &Ctx, e: &EncounterRes<'a>) -> std::borrow::Cow<'a, [ObsRecord]> {
    match e.1 {
        Some(read) => read.into(),
        None => store::obs_of_encounter(ctx.store, &e.0.uuid, false)
            .unwrap_or_default()
            .into(),
    }
}

/// Those of `all` that are not members of a group (members nest in theirs).
fn top_level(all: &[ObsRecord]) -> Vec<ObsRes<'_>> {
    all.iter()
        .filter(|o| o.obs_group.is_none())
        .map(ObsRes)
        .collect()
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
    nest(e.as_ref().map(EncounterRes::of), rep, ctx)
}

/// The same, written straight to bytes.
pub fn nested_by_uuid_to(uuid: &str, rep: &Rep, ctx: &Ctx, out: &mut Vec<u8>) {
    let e = store::encounter(ctx.store, uuid).ok().flatten();
    let e = e.as_ref().map(EncounterRes::of);
    crate::http::repr::nested_to(e.as_ref().map(|e| e as &dyn Resource), rep, ctx, out)
}

/// A visit's encounters, as its representation nests them (registered for the visit).
pub fn of_visit(visit: &str, rep: &Rep, ctx: &Ctx) -> Value {
    let list = store::of_visit(ctx.store, visit).unwrap_or_default();
    let res: Vec<EncounterRes> = list.iter().map(EncounterRes::of).collect();
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
                let all = obs_of(ctx, self);
                let top = top_level(&all);
                nested_list(top.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "diagnoses" => match ctx.store.registry().extension::<EncounterNesting>() {
                Some(nesting) => (nesting.diagnoses)(&e.uuid, rep, ctx),
                None => Value::Array(Vec::new()),
            },
            "orders" => {
                let orders = order_rest::encounter_orders(ctx, &e.uuid);
                let res: Vec<crate::domains::order::repr::OrderRes> = orders
                    .iter()
                    .map(crate::domains::order::repr::OrderRes)
                    .collect();
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
                let all = obs_of(ctx, self);
                let top = top_level(&all);
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

pub(crate) fn role<'c>(ctx: &Ctx<'c>, uuid: &str) -> Option<NamedRes<'c>> {
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
        ObsValue::Boolean(b) => crate::clinic::boolean_concept(ctx.store, ctx.catalog, *b)
            .map(|c| ConceptRes(c).display(ctx))
            .unwrap_or_else(|| b.to_string()),
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
pub(crate) fn format_number(n: f64) -> String {
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
                    p.as_ref().map(crate::domains::patient::repr::PersonRes),
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
                    (Some(x), _) => nest(Some(crate::domains::order::repr::OrderRes(&x)), rep, ctx),
                    (None, Some(u)) => json!({"uuid": u}),
                    (None, None) => Value::Null,
                }
            }
            "encounter" => {
                let e = o
                    .encounter
                    .as_deref()
                    .and_then(|e| store::encounter(ctx.store, e).ok().flatten());
                nest(e.as_ref().map(EncounterRes::of), rep, ctx)
            }
            "voided" => json!(o.voiding.voided),
            "value" => match &o.value {
                ObsValue::Numeric(n) => json!(n),
                ObsValue::Coded(c) => nest(ctx.catalog.concept(c).map(ConceptRes), rep, ctx),
                ObsValue::Text(t) => json!(t),
                ObsValue::Boolean(b) => {
                    match crate::clinic::boolean_concept(ctx.store, ctx.catalog, *b) {
                        Some(c) => nest(Some(ConceptRes(c)), rep, ctx),
                        None => json!(b),
                    }
                }
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
            // Bean properties a custom representation may name, as OpenMRS reads them off
            // the obs (the ward app's inpatient notes ask for them, with their history).
            "dateCreated" => wire_datetime(&o.audit.date_created),
            "creator" => user_ref(&o.audit.creator, ctx),
            // Every earlier version, the latest first (webservices.rest's `previousVersions`).
            "previousVersions" => {
                let mut versions = Vec::new();
                let mut next = o.previous_version.clone();
                while let Some(uuid) = next.take() {
                    let Some(earlier) = store::obs(ctx.store, &uuid).ok().flatten() else {
                        break;
                    };
                    next = earlier.previous_version.clone();
                    versions.push(earlier);
                    // A chain is as long as the edits made to one answer; a loop would be
                    // a damaged store, not a reason to spin.
                    if versions.len() > 1000 {
                        break;
                    }
                }
                let res: Vec<ObsRes> = versions.iter().map(ObsRes).collect();
                nested_list(res.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
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
