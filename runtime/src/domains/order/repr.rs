//! An order's REST representation (drug and test orders, default and full), and what it
//! needs of the encounter domain (registered in the domains' registry).

use crate::content::concept::ConceptRes;
use crate::domains::order::formulary::{CareSettingRes, DrugRes, OrderFrequencyRes, OrderTypeRes};
use crate::domains::order::store;
use crate::domains::order::{
    Action, DosingType, DrugDetails, FulfillerStatus, OrderClass, OrderRecord,
};
use crate::domains::patient::repr::PatientRes;
use crate::domains::provider::rest::ProviderRes;
use crate::http::AppState;
use crate::http::answer::{audit_info, nest};
use crate::http::error::ApiResult;
use crate::http::repr::{
    Ctx, Props, Rep, Resource, nested_content_to, nested_once_to, write_json, written_once_to,
};
use crate::wire::wire_datetime;
use serde_json::{Value, json};

pub struct OrderRes<'a>(pub &'a OrderRecord);

pub(crate) const ORDER_DEFAULT: Props = &[
    ("uuid", Rep::Default),
    ("orderNumber", Rep::Default),
    ("accessionNumber", Rep::Default),
    ("patient", Rep::Ref),
    ("concept", Rep::Ref),
    ("action", Rep::Default),
    ("careSetting", Rep::Ref),
    ("previousOrder", Rep::Ref),
    ("dateActivated", Rep::Default),
    ("scheduledDate", Rep::Default),
    ("dateStopped", Rep::Default),
    ("autoExpireDate", Rep::Default),
    ("encounter", Rep::Ref),
    ("orderer", Rep::Ref),
    ("orderReason", Rep::Ref),
    ("orderReasonNonCoded", Rep::Default),
    ("orderType", Rep::Default),
    ("urgency", Rep::Default),
    ("instructions", Rep::Default),
    ("commentToFulfiller", Rep::Default),
    ("display", Rep::Default),
    ("type", Rep::Default),
];

pub(crate) const ORDER_FULL: Props = &[
    ("uuid", Rep::Default),
    ("orderNumber", Rep::Default),
    ("accessionNumber", Rep::Default),
    ("patient", Rep::Ref),
    ("concept", Rep::Ref),
    ("action", Rep::Default),
    ("careSetting", Rep::Default),
    ("previousOrder", Rep::Ref),
    ("dateActivated", Rep::Default),
    ("scheduledDate", Rep::Default),
    ("dateStopped", Rep::Default),
    ("autoExpireDate", Rep::Default),
    ("encounter", Rep::Ref),
    ("orderer", Rep::Ref),
    ("orderReason", Rep::Ref),
    ("orderReasonNonCoded", Rep::Default),
    ("orderType", Rep::Default),
    ("urgency", Rep::Default),
    ("instructions", Rep::Default),
    ("commentToFulfiller", Rep::Default),
    ("display", Rep::Default),
    ("fulfillerStatus", Rep::Default),
    ("fulfillerComment", Rep::Default),
    ("auditInfo", Rep::Default),
    ("type", Rep::Default),
];

pub(crate) const DRUG_DEFAULT: Props = &[
    ("uuid", Rep::Default),
    ("orderNumber", Rep::Default),
    ("accessionNumber", Rep::Default),
    ("patient", Rep::Ref),
    ("concept", Rep::Ref),
    ("action", Rep::Default),
    ("careSetting", Rep::Ref),
    ("previousOrder", Rep::Ref),
    ("dateActivated", Rep::Default),
    ("scheduledDate", Rep::Default),
    ("dateStopped", Rep::Default),
    ("autoExpireDate", Rep::Default),
    ("encounter", Rep::Ref),
    ("orderer", Rep::Ref),
    ("orderReason", Rep::Ref),
    ("orderReasonNonCoded", Rep::Default),
    ("orderType", Rep::Default),
    ("urgency", Rep::Default),
    ("instructions", Rep::Default),
    ("commentToFulfiller", Rep::Default),
    ("display", Rep::Default),
    ("drug", Rep::Ref),
    ("dosingType", Rep::Default),
    ("dose", Rep::Default),
    ("doseUnits", Rep::Ref),
    ("frequency", Rep::Ref),
    ("asNeeded", Rep::Default),
    ("asNeededCondition", Rep::Default),
    ("quantity", Rep::Default),
    ("quantityUnits", Rep::Ref),
    ("numRefills", Rep::Default),
    ("dosingInstructions", Rep::Default),
    ("duration", Rep::Default),
    ("durationUnits", Rep::Ref),
    ("route", Rep::Ref),
    ("brandName", Rep::Default),
    ("dispenseAsWritten", Rep::Default),
    ("drugNonCoded", Rep::Default),
    ("type", Rep::Default),
];

pub(crate) const DRUG_FULL: Props = &[
    ("uuid", Rep::Default),
    ("orderNumber", Rep::Default),
    ("accessionNumber", Rep::Default),
    ("patient", Rep::Ref),
    ("concept", Rep::Ref),
    ("action", Rep::Default),
    ("careSetting", Rep::Default),
    ("previousOrder", Rep::Ref),
    ("dateActivated", Rep::Default),
    ("scheduledDate", Rep::Default),
    ("dateStopped", Rep::Default),
    ("autoExpireDate", Rep::Default),
    ("encounter", Rep::Ref),
    ("orderer", Rep::Ref),
    ("orderReason", Rep::Ref),
    ("orderReasonNonCoded", Rep::Default),
    ("orderType", Rep::Default),
    ("urgency", Rep::Default),
    ("instructions", Rep::Default),
    ("commentToFulfiller", Rep::Default),
    ("display", Rep::Default),
    ("fulfillerStatus", Rep::Default),
    ("fulfillerComment", Rep::Default),
    ("drug", Rep::Ref),
    ("dosingType", Rep::Default),
    ("dose", Rep::Default),
    ("doseUnits", Rep::Default),
    ("frequency", Rep::Ref),
    ("asNeeded", Rep::Default),
    ("asNeededCondition", Rep::Default),
    ("quantity", Rep::Default),
    ("quantityUnits", Rep::Default),
    ("numRefills", Rep::Default),
    ("dosingInstructions", Rep::Default),
    ("duration", Rep::Default),
    ("durationUnits", Rep::Default),
    ("route", Rep::Ref),
    ("brandName", Rep::Default),
    ("dispenseAsWritten", Rep::Default),
    ("drugNonCoded", Rep::Default),
    ("auditInfo", Rep::Default),
    ("type", Rep::Default),
];

pub(crate) const TEST_DEFAULT: Props = &[
    ("uuid", Rep::Default),
    ("orderNumber", Rep::Default),
    ("accessionNumber", Rep::Default),
    ("patient", Rep::Ref),
    ("concept", Rep::Ref),
    ("action", Rep::Default),
    ("careSetting", Rep::Ref),
    ("previousOrder", Rep::Ref),
    ("dateActivated", Rep::Default),
    ("scheduledDate", Rep::Default),
    ("dateStopped", Rep::Default),
    ("autoExpireDate", Rep::Default),
    ("encounter", Rep::Ref),
    ("orderer", Rep::Ref),
    ("orderReason", Rep::Ref),
    ("orderReasonNonCoded", Rep::Default),
    ("orderType", Rep::Default),
    ("urgency", Rep::Default),
    ("instructions", Rep::Default),
    ("commentToFulfiller", Rep::Default),
    ("display", Rep::Default),
    ("specimenSource", Rep::Ref),
    ("laterality", Rep::Default),
    ("clinicalHistory", Rep::Default),
    ("frequency", Rep::Ref),
    ("numberOfRepeats", Rep::Default),
    ("type", Rep::Default),
];

pub(crate) const TEST_FULL: Props = &[
    ("uuid", Rep::Default),
    ("orderNumber", Rep::Default),
    ("accessionNumber", Rep::Default),
    ("patient", Rep::Ref),
    ("concept", Rep::Ref),
    ("action", Rep::Default),
    ("careSetting", Rep::Default),
    ("previousOrder", Rep::Ref),
    ("dateActivated", Rep::Default),
    ("scheduledDate", Rep::Default),
    ("dateStopped", Rep::Default),
    ("autoExpireDate", Rep::Default),
    ("encounter", Rep::Ref),
    ("orderer", Rep::Ref),
    ("orderReason", Rep::Ref),
    ("orderReasonNonCoded", Rep::Default),
    ("orderType", Rep::Default),
    ("urgency", Rep::Default),
    ("instructions", Rep::Default),
    ("commentToFulfiller", Rep::Default),
    ("display", Rep::Default),
    ("fulfillerStatus", Rep::Default),
    ("fulfillerComment", Rep::Default),
    ("specimenSource", Rep::Default),
    ("laterality", Rep::Default),
    ("clinicalHistory", Rep::Default),
    ("frequency", Rep::Default),
    ("numberOfRepeats", Rep::Default),
    ("auditInfo", Rep::Default),
    ("type", Rep::Default),
];

/// A number as Java's `Double.toString` writes it for everyday values (`1.0`, `2.5`).
pub(crate) fn java_double(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e7 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

impl OrderRes<'_> {
    fn concept_name(&self, uuid: Option<&str>, ctx: &Ctx) -> Option<String> {
        uuid.and_then(|u| ctx.catalog.concept(u))
            .map(|c| ConceptRes(c).display(ctx))
    }

    /// A drug order's dosing as core's dosing instructions write it.
    fn dosing_text(&self, d: &DrugDetails, ctx: &Ctx) -> Option<String> {
        match d.dosing_type {
            DosingType::FreeText => d.dosing_instructions.clone(),
            DosingType::Simple => {
                let mut parts: Vec<String> = Vec::new();
                parts.extend(d.dose.map(java_double));
                parts.extend(self.concept_name(d.dose_units.as_deref(), ctx));
                parts.extend(self.concept_name(d.route.as_deref(), ctx));
                parts.extend(
                    d.frequency
                        .as_deref()
                        .and_then(|f| ctx.catalog.order_frequency(f))
                        .map(|f| OrderFrequencyRes(f).display(ctx)),
                );
                if let Some(n) = d.duration {
                    parts.push(n.to_string());
                    parts.extend(self.concept_name(d.duration_units.as_deref(), ctx));
                }
                if d.as_needed {
                    parts.push("PRN".into());
                    parts.extend(d.as_needed_condition.clone().filter(|c| !c.is_empty()));
                }
                parts.extend(d.dosing_instructions.clone().filter(|c| !c.is_empty()));
                (!parts.is_empty()).then(|| parts.join(" "))
            }
        }
    }
}

/// The FHIR MedicationDispenses of some orders: (state, content, orders, locale).
pub type DispensesOf =
    fn(&AppState, &crate::catalog::Catalog, &[&OrderRecord], &str) -> ApiResult<Vec<Value>>;

/// What an order needs of the encounter domain, registered in the domains' registry (the
/// encounter holds its orders, so the order domain names no encounter).
pub struct OrderEncounters {
    /// An encounter by uuid, as placing an order in it needs it.
    pub placement: fn(
        &crate::store::Store,
        &str,
    ) -> crate::store::StoreResult<Option<crate::domains::order::Placement>>,
    /// The `encounter` property of an order's representation: (encounter, representation,
    /// context).
    pub nest: fn(&str, &Rep, &Ctx) -> Value,
    /// The same, written straight to bytes.
    pub nest_to: fn(&str, &Rep, &Ctx, &mut Vec<u8>),
    /// An encounter as FHIR shows it (`_include=MedicationRequest:encounter`).
    pub fhir: fn(
        &crate::store::Store,
        &crate::catalog::Catalog,
        &str,
    ) -> crate::store::StoreResult<Option<Value>>,
    /// The FHIR MedicationDispenses of some orders (`_revinclude=MedicationDispense:prescription`).
    pub dispenses: DispensesOf,
}

/// The order's encounter functions registered with the store.
pub fn order_encounters(store: &crate::store::Store) -> Option<&'static OrderEncounters> {
    store.registry().extension()
}

impl Resource for OrderRes<'_> {
    fn alias(&self) -> &'static str {
        "order"
    }
    fn version(&self) -> &'static str {
        "1.10"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    /// `(NEW) Paracétamol 500 mg comprimé: 1.0 Comprimé Voie orale …` for a drug order,
    /// the concept's name for any other.
    fn display(&self, ctx: &Ctx) -> String {
        let o = self.0;
        let concept = self.concept_name(Some(&o.concept), ctx).unwrap_or_default();
        match &o.drug {
            Some(d) => {
                let name = d
                    .drug
                    .as_deref()
                    .and_then(|u| ctx.catalog.drug(u))
                    .map(|x| x.name.clone())
                    .or_else(|| d.drug_non_coded.clone())
                    .unwrap_or(concept);
                let mut s = format!("({}) {name}", o.action.name());
                if o.action != Action::Discontinue
                    && let Some(text) = self.dosing_text(d, ctx)
                {
                    s.push_str(": ");
                    s.push_str(&text);
                }
                s
            }
            None => concept,
        }
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        match self.0.class {
            OrderClass::Drug => DRUG_DEFAULT,
            OrderClass::Test => TEST_DEFAULT,
            OrderClass::Plain => ORDER_DEFAULT,
        }
    }
    fn full_props(&self) -> Props {
        match self.0.class {
            OrderClass::Drug => DRUG_FULL,
            OrderClass::Test => TEST_FULL,
            OrderClass::Plain => ORDER_FULL,
        }
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let o = self.0;
        let concept = |u: Option<&str>| {
            nest(
                u.and_then(|u| ctx.catalog.concept(u)).map(ConceptRes),
                rep,
                ctx,
            )
        };
        let date = |d: &Option<String>| d.as_deref().map(wire_datetime).unwrap_or(Value::Null);
        let drug = o.drug.as_ref();
        let test = o.test.as_ref();
        let frequency = |f: Option<&str>| {
            nest(
                f.and_then(|f| ctx.catalog.order_frequency(f))
                    .map(OrderFrequencyRes),
                rep,
                ctx,
            )
        };
        Some(match name {
            "orderNumber" => json!(o.order_number),
            "accessionNumber" => json!(o.accession_number),
            "patient" => {
                let p = ctx.store.patient(&o.patient).ok().flatten();
                nest(p.as_ref().map(PatientRes), rep, ctx)
            }
            "concept" => concept(Some(&o.concept)),
            "action" => json!(o.action.name()),
            "careSetting" => nest(
                ctx.catalog
                    .care_setting(&o.care_setting)
                    .map(CareSettingRes),
                rep,
                ctx,
            ),
            "previousOrder" => {
                let p = o
                    .previous_order
                    .as_deref()
                    .and_then(|u| store::get(ctx.store, u).ok().flatten());
                nest(p.as_ref().map(OrderRes), rep, ctx)
            }
            "dateActivated" => wire_datetime(&o.date_activated),
            "scheduledDate" => date(&o.scheduled_date),
            "dateStopped" => date(&o.date_stopped),
            "autoExpireDate" => date(&o.auto_expire_date),
            "encounter" => match order_encounters(ctx.store) {
                Some(encounters) => (encounters.nest)(&o.encounter, rep, ctx),
                None => Value::Null,
            },
            "orderer" => {
                let p = crate::domains::provider::find(ctx.store, &o.orderer)
                    .ok()
                    .flatten();
                nest(p.map(ProviderRes), rep, ctx)
            }
            "orderReason" => concept(o.order_reason.as_deref()),
            "orderReasonNonCoded" => json!(o.order_reason_non_coded),
            "orderType" => nest(
                ctx.catalog.order_type(&o.order_type).map(OrderTypeRes),
                rep,
                ctx,
            ),
            "urgency" => json!(o.urgency.name()),
            "instructions" => json!(o.instructions),
            "commentToFulfiller" => json!(o.comment_to_fulfiller),
            "fulfillerStatus" => json!(o.fulfiller_status.map(FulfillerStatus::name)),
            "fulfillerComment" => json!(o.fulfiller_comment),
            "type" => json!(o.class.rest_type()),
            "auditInfo" => {
                let mut a = audit_info(&o.audit, ctx);
                if let Value::Object(m) = &mut a {
                    m.insert("voided".into(), json!(o.voiding.voided));
                }
                a
            }
            "voided" => json!(o.voiding.voided),
            // Drug orders.
            "drug" => nest(
                drug.and_then(|d| d.drug.as_deref())
                    .and_then(|u| ctx.catalog.drug(u))
                    .map(DrugRes),
                rep,
                ctx,
            ),
            "dosingType" => json!(drug.map(|d| d.dosing_type.java_class())),
            "dose" => json!(drug.and_then(|d| d.dose)),
            "doseUnits" => concept(drug.and_then(|d| d.dose_units.as_deref())),
            "asNeeded" => json!(drug.map(|d| d.as_needed)),
            "asNeededCondition" => json!(drug.and_then(|d| d.as_needed_condition.clone())),
            "quantity" => json!(drug.and_then(|d| d.quantity)),
            "quantityUnits" => concept(drug.and_then(|d| d.quantity_units.as_deref())),
            "numRefills" => json!(drug.and_then(|d| d.num_refills)),
            "dosingInstructions" => json!(drug.and_then(|d| d.dosing_instructions.clone())),
            "duration" => json!(drug.and_then(|d| d.duration)),
            "durationUnits" => concept(drug.and_then(|d| d.duration_units.as_deref())),
            "route" => concept(drug.and_then(|d| d.route.as_deref())),
            "brandName" => json!(drug.and_then(|d| d.brand_name.clone())),
            "dispenseAsWritten" => json!(drug.map(|d| d.dispense_as_written)),
            "drugNonCoded" => json!(drug.and_then(|d| d.drug_non_coded.clone())),
            // A drug order's frequency, or a test order's.
            "frequency" => frequency(
                drug.and_then(|d| d.frequency.as_deref())
                    .or(test.and_then(|t| t.frequency.as_deref())),
            ),
            // Test orders.
            "specimenSource" => concept(test.and_then(|t| t.specimen_source.as_deref())),
            "laterality" => json!(test.and_then(|t| t.laterality.clone())),
            "clinicalHistory" => json!(test.and_then(|t| t.clinical_history.clone())),
            "numberOfRepeats" => json!(test.and_then(|t| t.number_of_repeats)),
            _ => return None,
        })
    }
    /// What a list nests over and over is written once: the content's concepts, drugs,
    /// frequencies, care settings and order types once across requests
    /// (`nested_content_to`), the few encounters and providers of a patient's orders once a
    /// request (`nested_once_to`); the rest as `prop` writes it.
    fn write_prop(&self, name: &str, rep: &Rep, ctx: &Ctx, out: &mut Vec<u8>) -> Option<()> {
        let o = self.0;
        let catalog = ctx.catalog;
        let drug = o.drug.as_ref();
        let test = o.test.as_ref();
        let concept = |u: Option<&str>, out: &mut Vec<u8>| {
            nested_content_to("concept", u, rep, ctx, out, |u| {
                catalog.concept(u).map(ConceptRes)
            })
        };
        match name {
            "concept" => concept(Some(&o.concept), out),
            "orderReason" => concept(o.order_reason.as_deref(), out),
            "doseUnits" => concept(drug.and_then(|d| d.dose_units.as_deref()), out),
            "quantityUnits" => concept(drug.and_then(|d| d.quantity_units.as_deref()), out),
            "durationUnits" => concept(drug.and_then(|d| d.duration_units.as_deref()), out),
            "route" => concept(drug.and_then(|d| d.route.as_deref()), out),
            "specimenSource" => concept(test.and_then(|t| t.specimen_source.as_deref()), out),
            "careSetting" => {
                nested_content_to("caresetting", Some(&o.care_setting), rep, ctx, out, |u| {
                    catalog.care_setting(u).map(CareSettingRes)
                })
            }
            "orderType" => {
                nested_content_to("ordertype", Some(&o.order_type), rep, ctx, out, |u| {
                    catalog.order_type(u).map(OrderTypeRes)
                })
            }
            "drug" => nested_content_to(
                "drug",
                drug.and_then(|d| d.drug.as_deref()),
                rep,
                ctx,
                out,
                |u| catalog.drug(u).map(DrugRes),
            ),
            "frequency" => nested_content_to(
                "orderfrequency",
                drug.and_then(|d| d.frequency.as_deref())
                    .or(test.and_then(|t| t.frequency.as_deref())),
                rep,
                ctx,
                out,
                |f| catalog.order_frequency(f).map(OrderFrequencyRes),
            ),
            "encounter" => {
                written_once_to("encounter", Some(&o.encounter), rep, ctx, out, |u, out| {
                    match order_encounters(ctx.store) {
                        Some(encounters) => (encounters.nest_to)(u, rep, ctx, out),
                        None => out.extend_from_slice(b"null"),
                    }
                })
            }
            "orderer" => nested_once_to("provider", Some(&o.orderer), rep, ctx, out, |u| {
                crate::domains::provider::find(ctx.store, u)
                    .ok()
                    .flatten()
                    .map(ProviderRes)
            }),
            _ => write_json(out, &self.prop(name, rep, ctx)?),
        }
        Some(())
    }
}
