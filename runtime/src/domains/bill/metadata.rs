//! The content's billing metadata as the billing module's REST resources: payment modes,
//! cash points, billable services with their prices (read-only here).

use crate::content::location::LocationRes;
use crate::domains::bill::Money;
use crate::domains::bill::rest::{METADATA, concept_ref};
use crate::http::AppState;
use crate::http::answer::{list_answer, nest, rep_of};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested_list, render};
use crate::http::{Caller, QueryPairs, param};
use axum::extract::{Path, State};
use axum::response::Response;
use model::{BillableService, CashPoint, PaymentMode, ServicePrice};
use serde_json::{Value, json};
use std::sync::Arc;

// ---- the content's billing metadata ----

pub struct PaymentModeRes<'a>(pub &'a PaymentMode);

impl Resource for PaymentModeRes<'_> {
    fn alias(&self) -> &'static str {
        "paymentMode"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("billing/paymentMode/{}", self.0.uuid)
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
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("retireReason", Rep::Default),
            ("attributeTypes", Rep::Default),
            ("sortOrder", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let m = self.0;
        Some(match name {
            "name" => json!(m.name),
            "description" => Value::Null,
            "retired" => json!(m.retired),
            "retireReason" => Value::Null,
            "sortOrder" => Value::Null,
            "attributeTypes" => json!(
                m.attributes
                    .iter()
                    .enumerate()
                    .map(|(i, a)| json!({
                        "name": a.name,
                        "description": null,
                        "retired": false,
                        "attributeOrder": i,
                        "format": a.format,
                        "foreignKey": null,
                        "regExp": a.regex,
                        "required": a.required,
                    }))
                    .collect::<Vec<_>>()
            ),
            _ => return None,
        })
    }
}

pub struct CashPointRes<'a>(pub &'a CashPoint);

impl Resource for CashPointRes<'_> {
    fn alias(&self) -> &'static str {
        "cashPoint"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("billing/cashPoint/{}", self.0.uuid)
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
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("retireReason", Rep::Default),
            ("location", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("retireReason", Rep::Default),
            ("location", Rep::Ref),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let c = self.0;
        Some(match name {
            "name" => json!(c.name),
            "description" => json!(c.description),
            "retired" => json!(c.retired),
            "retireReason" => Value::Null,
            "location" => nest(
                c.location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(LocationRes),
                rep,
                ctx,
            ),
            _ => return None,
        })
    }
}

pub struct ServicePriceRes<'a>(pub &'a ServicePrice, pub &'a BillableService);

impl Resource for ServicePriceRes<'_> {
    fn alias(&self) -> &'static str {
        "cashierItemPrice"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("billing/cashierItemPrice/{}", self.0.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("name", Rep::Default),
            ("price", Rep::Default),
            ("paymentMode", Rep::Ref),
            ("item", Rep::Default),
            ("billableService", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "name" => json!(self.0.name),
            "price" => Money::parse(&self.0.price).map_or(Value::Null, Money::to_json),
            "paymentMode" => nest(
                payment_mode(ctx, &self.0.payment_mode).map(PaymentModeRes),
                rep,
                ctx,
            ),
            "item" => json!(""),
            "billableService" => nest(Some(BillableServiceRes(self.1)), rep, ctx),
            _ => return None,
        })
    }
}

pub struct BillableServiceRes<'a>(pub &'a BillableService);

impl Resource for BillableServiceRes<'_> {
    fn alias(&self) -> &'static str {
        "billableService"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("billing/billableService/{}", self.0.uuid)
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
            ("shortName", Rep::Default),
            ("concept", Rep::Ref),
            ("serviceType", Rep::Ref),
            ("serviceStatus", Rep::Default),
            ("servicePrices", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let s = self.0;
        Some(match name {
            "name" => json!(s.name),
            "shortName" => json!(s.short_name),
            "description" => Value::Null,
            "concept" => concept_ref(s.concept.as_deref(), rep, ctx),
            "serviceType" => concept_ref(s.service_type.as_deref(), rep, ctx),
            "serviceCategory" => Value::Null,
            "serviceStatus" => json!(if s.enabled { "ENABLED" } else { "DISABLED" }),
            "retired" => json!(s.retired),
            "servicePrices" => {
                // Inside a service, a price names its service by reference only.
                let prices: Vec<ServicePriceRes> =
                    s.prices.iter().map(|p| ServicePriceRes(p, s)).collect();
                let rep = match rep {
                    Rep::Default => &Rep::Ref,
                    other => other,
                };
                nested_list(prices.iter().map(|p| p as &dyn Resource), rep, ctx)
            }
            _ => return None,
        })
    }
}

pub(crate) fn payment_mode<'c>(ctx: &'c Ctx, uuid: &str) -> Option<&'c PaymentMode> {
    ctx.catalog
        .content
        .payment_modes
        .iter()
        .find(|m| m.uuid == uuid)
}

pub(crate) fn include_all(query: &[(String, String)]) -> bool {
    crate::http::answer::flag(query, "includeAll").unwrap_or(false)
}

/// `GET billing/paymentMode`: the content's payment modes.
pub async fn payment_modes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[METADATA])?;
    let catalog = state.catalog.load();
    let all = include_all(&query);
    let items = catalog
        .content
        .payment_modes
        .iter()
        .filter(|m| all || !m.retired)
        .map(PaymentModeRes)
        .collect();
    list_answer(
        &state,
        &caller,
        &query,
        "/billing/paymentMode",
        &Paging::from_query(&query)?,
        items,
    )
}

/// `GET billing/cashPoint[?q=][&location_uuid=]`: the content's cash points.
pub async fn cash_points(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[METADATA])?;
    let catalog = state.catalog.load();
    let all = include_all(&query);
    let q = param(&query, "q").map(str::to_lowercase);
    let location = param(&query, "location_uuid").filter(|l| !l.is_empty());
    let items = catalog
        .content
        .cash_points
        .iter()
        .filter(|c| all || !c.retired)
        .filter(|c| {
            q.as_deref()
                .is_none_or(|q| c.name.to_lowercase().contains(q))
        })
        .filter(|c| location.is_none_or(|l| c.location.as_deref() == Some(l)))
        .map(CashPointRes)
        .collect();
    list_answer(
        &state,
        &caller,
        &query,
        "/billing/cashPoint",
        &Paging::from_query(&query)?,
        items,
    )
}

/// `GET billing/billableService[?serviceType=][&serviceName=][&isDisabled=]`: the
/// content's billable services; a search returns the enabled ones unless `isDisabled`
/// asks for the disabled, and no parameter returns every one (as the module's resource).
pub async fn billable_services(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[METADATA])?;
    let catalog = state.catalog.load();
    let service_type = param(&query, "serviceType").filter(|t| !t.is_empty());
    let name = param(&query, "serviceName").map(str::to_lowercase);
    let disabled = param(&query, "isDisabled").map(|v| v == "yes" || v == "1" || v == "true");
    let searching = service_type.is_some() || name.is_some() || disabled.is_some();
    let items = catalog
        .content
        .billable_services
        .iter()
        .filter(|s| !s.retired || include_all(&query))
        .filter(|s| !searching || s.enabled != disabled.unwrap_or(false))
        .filter(|s| service_type.is_none_or(|t| s.service_type.as_deref() == Some(t)))
        .filter(|s| {
            name.as_deref()
                .is_none_or(|n| s.name.to_lowercase().contains(n))
        })
        .map(BillableServiceRes)
        .collect();
    list_answer(
        &state,
        &caller,
        &query,
        "/billing/billableService",
        &Paging::from_query(&query)?,
        items,
    )
}

/// `GET billing/{paymentMode|cashPoint|billableService}/{uuid}`.
pub async fn metadata_read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((kind, uuid)): Path<(String, String)>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[METADATA])?;
    let catalog = state.catalog.load();
    let content = &catalog.content;
    let rep = rep_of(&query)?;
    let ctx = caller.ctx(&state, &catalog);
    let value = match kind.as_str() {
        "paymentMode" => content
            .payment_modes
            .iter()
            .find(|m| m.uuid == uuid)
            .map(|m| render(&PaymentModeRes(m), &rep, &ctx)),
        "cashPoint" => content
            .cash_points
            .iter()
            .find(|c| c.uuid == uuid)
            .map(|c| render(&CashPointRes(c), &rep, &ctx)),
        "billableService" => content
            .billable_services
            .iter()
            .find(|s| s.uuid == uuid)
            .map(|s| render(&BillableServiceRes(s), &rep, &ctx)),
        _ => return Err(ApiError::UnknownResource(format!("billing/{kind}"))),
    };
    Ok(crate::http::ok(value.ok_or(ApiError::NotFound)??))
}

/// Writes to the content's billing metadata (payment modes, cash points, billable
/// services, their prices): refused, naming the content folder to change.
pub async fn metadata_write(caller: Caller) -> ApiResult<Response> {
    caller.require(&["Manage Cashier Metadata"])?;
    Err(ApiError::BadRequest(
        "Payment modes, cash points, billable services and their prices are defined by the content package (paymentmodes/, cashpoints/, billableservices/ and cashieritemprices/ of openmrs_config): change them there".into(),
    ))
}
