//! A bill's REST representation, with its line items and payments.

use crate::domains::bill::metadata::{CashPointRes, PaymentModeRes, payment_mode};
use crate::domains::bill::{BillRecord, LineItem, Money, Payment};
use crate::domains::patient::repr::PatientRes;
use crate::domains::provider::rest::ProviderRes;
use crate::domains::visit::rest::VisitRes;
use crate::http::answer::{audit_info, nest};
use crate::http::repr::{Ctx, Props, Rep, Resource, nested_list};
use crate::wire::parse_key;
use model::BillableService;
use serde_json::{Value, json};

// ---- bills ----

pub struct BillRes(pub BillRecord);

/// The bill's number as an integer id (the module's database id; the O3 list keys its
/// rows by it): the receipt sequence, unique per bill.
pub(crate) fn bill_id(b: &BillRecord) -> i64 {
    b.number
        .split('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_default()
}

impl Resource for BillRes {
    fn alias(&self) -> &'static str {
        "bill"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("billing/bill/{}", self.0.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.number.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("voided", Rep::Default),
            ("voidReason", Rep::Default),
            ("id", Rep::Default),
            ("adjustedBy", Rep::Ref),
            ("billAdjusted", Rep::Ref),
            ("cashPoint", Rep::Default),
            ("cashier", Rep::Ref),
            ("dateCreated", Rep::Default),
            ("lineItems", Rep::Default),
            ("patient", Rep::Ref),
            ("visit", Rep::Ref),
            ("payments", Rep::Full),
            ("receiptNumber", Rep::Default),
            ("status", Rep::Default),
            ("adjustmentReason", Rep::Default),
            ("total", Rep::Default),
            ("amountAfterDiscount", Rep::Default),
            ("discounts", Rep::Default),
            ("refunds", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("voided", Rep::Default),
            ("voidReason", Rep::Default),
            ("id", Rep::Default),
            ("adjustedBy", Rep::Ref),
            ("billAdjusted", Rep::Ref),
            ("cashPoint", Rep::Default),
            ("cashier", Rep::Ref),
            ("dateCreated", Rep::Default),
            ("lineItems", Rep::Default),
            ("patient", Rep::Ref),
            ("visit", Rep::Ref),
            ("payments", Rep::Full),
            ("receiptNumber", Rep::Default),
            ("status", Rep::Default),
            ("adjustmentReason", Rep::Default),
            ("total", Rep::Default),
            ("amountAfterDiscount", Rep::Default),
            ("discounts", Rep::Default),
            ("refunds", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let b = &self.0;
        Some(match name {
            "voided" => json!(b.voiding.voided),
            "voidReason" => json!(b.voiding.void_reason),
            "id" => json!(bill_id(b)),
            "adjustedBy" | "discounts" | "refunds" => json!([]),
            "billAdjusted" | "adjustmentReason" => Value::Null,
            "cashPoint" => nest(
                ctx.catalog
                    .content
                    .cash_points
                    .iter()
                    .find(|c| c.uuid == b.cash_point)
                    .map(CashPointRes),
                rep,
                ctx,
            ),
            "cashier" => nest(ProviderRes::find(ctx, &b.cashier), rep, ctx),
            "dateCreated" => crate::wire::wire_datetime(&b.audit.date_created),
            "lineItems" => {
                let items: Vec<LineItemRes> = b
                    .live_items()
                    .map(|i| LineItemRes(i.clone(), b.uuid.clone()))
                    .collect();
                nested_list(items.iter().map(|i| i as &dyn Resource), rep, ctx)
            }
            "patient" => {
                let p = ctx.store.patient(&b.patient).ok().flatten();
                nest(p.as_ref().map(PatientRes), rep, ctx)
            }
            "visit" => {
                let v = b.visit.as_deref().and_then(|v| {
                    crate::domains::visit::store::get(ctx.store, v)
                        .ok()
                        .flatten()
                });
                nest(v.as_ref().map(VisitRes), rep, ctx)
            }
            "payments" => {
                let payments: Vec<PaymentRes> = b
                    .live_payments()
                    .map(|p| PaymentRes(p.clone(), b.uuid.clone()))
                    .collect();
                nested_list(payments.iter().map(|p| p as &dyn Resource), rep, ctx)
            }
            "receiptNumber" => json!(b.number),
            "status" => json!(b.status),
            "total" | "amountAfterDiscount" => b.total().map_or(Value::Null, Money::to_json),
            "auditInfo" => audit_info(&b.audit, ctx),
            _ => return None,
        })
    }
}

/// A line item with its bill's uuid.
pub struct LineItemRes(pub LineItem, pub String);

impl Resource for LineItemRes {
    fn alias(&self) -> &'static str {
        "billLineItem"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("billing/billLineItem/{}", self.0.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        "BillLineItem".into()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("voided", Rep::Default),
            ("voidReason", Rep::Default),
            ("item", Rep::Default),
            ("billableService", Rep::Default),
            ("quantity", Rep::Default),
            ("price", Rep::Default),
            ("priceName", Rep::Default),
            ("priceUuid", Rep::Default),
            ("lineItemOrder", Rep::Default),
            ("status", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let i = &self.0;
        Some(match name {
            "voided" => json!(i.voiding.voided),
            "voidReason" => json!(i.voiding.void_reason),
            "item" => json!(""),
            // The module answers the service's name here (and takes a uuid when written).
            "billableService" => json!(
                billable_service(&ctx.catalog.content, &i.service)
                    .map(|s| s.name.as_str())
                    .unwrap_or_default()
            ),
            "quantity" => json!(i.quantity),
            "price" => i.price.to_json(),
            "priceName" => json!(i.price_name.as_deref().unwrap_or_default()),
            "priceUuid" => json!(i.price_uuid.as_deref().unwrap_or_default()),
            "lineItemOrder" => json!(i.order),
            "status" => json!(i.status),
            _ => return None,
        })
    }
}

/// A payment with its bill's uuid.
pub struct PaymentRes(pub Payment, pub String);

impl Resource for PaymentRes {
    fn alias(&self) -> &'static str {
        "payment"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("billing/bill/{}/payment/{}", self.1, self.0.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        "Payment".into()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("instanceType", Rep::Default),
            ("attributes", Rep::Default),
            ("amount", Rep::Default),
            ("amountTendered", Rep::Default),
            ("dateCreated", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("instanceType", Rep::Default),
            ("attributes", Rep::Default),
            ("amount", Rep::Default),
            ("amountTendered", Rep::Default),
            ("dateCreated", Rep::Default),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let p = &self.0;
        Some(match name {
            "instanceType" => nest(payment_mode(ctx, &p.mode).map(PaymentModeRes), rep, ctx),
            "attributes" => json!(
                p.attributes
                    .iter()
                    .map(|a| json!({
                        "attributeType": {"name": a.name},
                        "value": a.value,
                        "valueName": a.value,
                        "voided": false,
                    }))
                    .collect::<Vec<_>>()
            ),
            "amount" => p.amount.to_json(),
            "amountTendered" => p.tendered.to_json(),
            // The module's payment answers its creation as epoch milliseconds.
            "dateCreated" => parse_key(&p.audit.date_created)
                .map_or(Value::Null, |t| json!(t.timestamp_millis())),
            "voided" => json!(p.voiding.voided),
            "auditInfo" => audit_info(&p.audit, ctx),
            _ => return None,
        })
    }
}

pub(crate) fn billable_service<'c>(
    content: &'c model::Content,
    uuid_or_name: &str,
) -> Option<&'c BillableService> {
    let services = &content.billable_services;
    services
        .iter()
        .find(|s| s.uuid == uuid_or_name)
        .or_else(|| services.iter().find(|s| s.name == uuid_or_name))
}

/// Amounts as the billing module writes and reads them in JSON.
impl crate::domains::bill::Money {
    /// An amount as a JSON request writes it: a number (as its shortest decimal text,
    /// which is the text the client wrote for any amount of fifteen digits or fewer) or a
    /// numeric string.
    pub fn from_json(v: &serde_json::Value) -> Option<Money> {
        match v {
            serde_json::Value::Number(n) => {
                let text = n.to_string();
                // serde_json writes whole floats as `5000.0`.
                Money::parse(text.strip_suffix(".0").unwrap_or(&text))
            }
            serde_json::Value::String(s) => Money::parse(s),
            _ => None,
        }
    }

    /// The amount as a JSON number (whole amounts as integers).
    pub fn to_json(self) -> serde_json::Value {
        if self.0 % crate::domains::bill::SCALE == 0 {
            serde_json::Value::from(self.0 / crate::domains::bill::SCALE)
        } else {
            self.to_string()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or(serde_json::Value::Null, serde_json::Value::Number)
        }
    }
}
