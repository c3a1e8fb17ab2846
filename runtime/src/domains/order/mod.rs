//! Orders: what a clinician asks for (a medicine, a laboratory test), as OpenMRS core keeps
//! them (`orders`, `drug_order`, `test_order`) and webservices.rest shows them (`order`).
//!
//! An order is never edited: a change is a new order that points back to the one it
//! changes (`previousOrder`) with an action: REVISE (a new dose) and DISCONTINUE (stop)
//! stop the previous one a second before the new one starts; RENEW (the same again)
//! leaves it as it is, to run out or stay stopped; as `OrderServiceImpl.saveOrder` does. Only the fulfiller's progress (`fulfillerStatus`,
//! `fulfillerComment`, `accessionNumber`: the laboratory's and the pharmacy's) and voiding
//! change a stored order.
//!
//! The rules are core's `OrderValidator`, `DrugOrderValidator` and `saveOrder` (`rules`),
//! with the units, routes and durations from the content's `order.*ConceptUuid` settings
//! (`OrderEntry`). A prescription's end (`autoExpireDate`) is computed from its duration
//! when the duration unit maps to SNOMED CT, as core's `Duration` does.

pub mod fhir;
pub mod formulary;
pub mod repr;
pub mod rest;
pub mod rules;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

/// `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    New,
    Revise,
    Discontinue,
    Renew,
}

/// `urgency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Urgency {
    Routine,
    Stat,
    OnScheduledDate,
}

/// `fulfillerStatus`: how far the laboratory or the pharmacy has got with an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FulfillerStatus {
    Received,
    InProgress,
    Exception,
    OnHold,
    Declined,
    Completed,
}

/// The order's Java class in OpenMRS (`type` over REST).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OrderClass {
    Drug,
    Test,
    Plain,
}

/// `dosingType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DosingType {
    Simple,
    FreeText,
}

macro_rules! wire_enum {
    ($t:ty { $($v:ident = $s:literal),* $(,)? }) => {
        impl $t {
            pub fn name(self) -> &'static str {
                match self { $(<$t>::$v => $s),* }
            }
            /// As a request body writes it (any case, as OpenMRS's enum conversion takes it).
            pub fn parse(s: &str) -> Option<$t> {
                let s = s.trim();
                $(if s.eq_ignore_ascii_case($s) { return Some(<$t>::$v); })*
                None
            }
            /// As a search parameter writes it: exactly (OpenMRS's `valueOf`).
            pub fn exact(s: &str) -> Option<$t> {
                match s { $($s => Some(<$t>::$v),)* _ => None }
            }
        }
    };
}

wire_enum!(Action { New = "NEW", Revise = "REVISE", Discontinue = "DISCONTINUE", Renew = "RENEW" });
wire_enum!(Urgency { Routine = "ROUTINE", Stat = "STAT", OnScheduledDate = "ON_SCHEDULED_DATE" });
wire_enum!(FulfillerStatus {
    Received = "RECEIVED",
    InProgress = "IN_PROGRESS",
    Exception = "EXCEPTION",
    OnHold = "ON_HOLD",
    Declined = "DECLINED",
    Completed = "COMPLETED",
});

impl OrderClass {
    /// The REST `type` of the class.
    pub fn rest_type(self) -> &'static str {
        match self {
            OrderClass::Drug => "drugorder",
            OrderClass::Test => "testorder",
            OrderClass::Plain => "order",
        }
    }

    pub fn from_rest_type(s: &str) -> Option<OrderClass> {
        match s.trim().to_ascii_lowercase().as_str() {
            "drugorder" => Some(OrderClass::Drug),
            "testorder" => Some(OrderClass::Test),
            "order" => Some(OrderClass::Plain),
            _ => None,
        }
    }

    pub fn java_class(self) -> &'static str {
        match self {
            OrderClass::Drug => "org.openmrs.DrugOrder",
            OrderClass::Test => "org.openmrs.TestOrder",
            OrderClass::Plain => "org.openmrs.Order",
        }
    }

    /// Whether an order type of `java_class` may hold orders of this class (its class or a
    /// superclass, as `isAssignableFrom`).
    pub fn fits(self, java_class: &str) -> bool {
        java_class == "org.openmrs.Order" || java_class == self.java_class()
    }
}

impl DosingType {
    pub fn java_class(self) -> &'static str {
        match self {
            DosingType::Simple => "org.openmrs.SimpleDosingInstructions",
            DosingType::FreeText => "org.openmrs.FreeTextDosingInstructions",
        }
    }

    pub fn parse(s: &str) -> Option<DosingType> {
        let s = s.trim();
        let simple = s.rsplit('.').next().unwrap_or(s);
        match simple {
            "SimpleDosingInstructions" => Some(DosingType::Simple),
            "FreeTextDosingInstructions" => Some(DosingType::FreeText),
            _ => None,
        }
    }
}

/// A drug order's own fields (core's `drug_order`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrugDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drug: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drug_non_coded: Option<String>,
    pub dosing_type: DosingType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dose: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dose_units: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// An order frequency uuid (not a concept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency: Option<String>,
    #[serde(default)]
    pub as_needed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_needed_condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity_units: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_refills: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_units: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dosing_instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brand_name: Option<String>,
    #[serde(default)]
    pub dispense_as_written: bool,
}

/// A test order's own fields (core's `test_order`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specimen_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub laterality: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clinical_history: Option<String>,
    /// An order frequency uuid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_repeats: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderRecord {
    pub v: u32,
    pub uuid: String,
    /// `ORD-<n>`, unique, given when the order is placed.
    pub order_number: String,
    pub class: OrderClass,
    pub order_type: String,
    pub patient: String,
    pub encounter: String,
    pub care_setting: String,
    pub concept: String,
    /// A provider uuid.
    pub orderer: String,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_order: Option<String>,
    /// Key form (`datetime_key`), as every datetime here.
    pub date_activated: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_date: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_stopped: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_expire_date: Option<String>,
    pub urgency: Urgency,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment_to_fulfiller: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accession_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_reason_non_coded: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fulfiller_status: Option<FulfillerStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fulfiller_comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drug: Option<DrugDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<TestDetails>,
    pub audit: Audit,
    pub voiding: Voiding,
}

impl OrderRecord {
    /// When the order takes effect: its scheduled date when it waits for one, else its
    /// activation (core's `getEffectiveStartDate`).
    pub fn effective_start(&self) -> &str {
        match (&self.urgency, &self.scheduled_date) {
            (Urgency::OnScheduledDate, Some(s)) => s,
            _ => &self.date_activated,
        }
    }

    /// Whether the order is stopped or expired at `at` (a key-form datetime).
    pub fn is_stopped_or_expired(&self, at: &str) -> bool {
        self.date_stopped.as_deref().is_some_and(|s| s <= at)
            || self.auto_expire_date.as_deref().is_some_and(|e| e <= at)
    }

    /// Core's `isActive(date)`: activated, not voided, not a discontinuation, neither
    /// stopped nor expired.
    pub fn is_active(&self, at: &str) -> bool {
        !self.voiding.voided
            && self.action != Action::Discontinue
            && self.date_activated.as_str() <= at
            && !self.is_stopped_or_expired(at)
    }

    /// Whether `self` and `o` ask for the same thing (core's `hasSameOrderableAs`): the same
    /// concept and, for drug orders, the same drug, or the same free-text drug in any case
    /// when either is not coded.
    pub fn same_orderable(&self, o: &OrderRecord) -> bool {
        if self.concept != o.concept {
            return false;
        }
        match (&self.drug, &o.drug) {
            (Some(a), Some(b)) => match (&a.drug_non_coded, &b.drug_non_coded) {
                (None, None) => a.drug == b.drug,
                (Some(x), Some(y)) => x.trim().eq_ignore_ascii_case(y.trim()),
                _ => false,
            },
            (None, None) => true,
            _ => false,
        }
    }
}

/// What voiding `orders` changes, as core's `voidOrder` does: each order voided, and the
/// order a voided revision or discontinuation had stopped active again (its `dateStopped`
/// cleared), unless another order that still stands stopped it or it is voided too.
/// Answers (old, new) pairs to write together. The caller holds the clinical write lock.
pub fn voiding(
    store: &crate::store::Store,
    orders: &[OrderRecord],
    user: &str,
    now: chrono::DateTime<chrono::Utc>,
    reason: &str,
) -> crate::store::StoreResult<Vec<(OrderRecord, OrderRecord)>> {
    let mut changes = Vec::new();
    for o in orders.iter().filter(|o| !o.voiding.voided) {
        let mut v = o.clone();
        v.voiding.void(user, now, reason);
        changes.push((o.clone(), v));
    }
    let voided: Vec<String> = changes.iter().map(|(o, _)| o.uuid.clone()).collect();
    for (o, _) in changes.clone() {
        let Some(prev_uuid) = o
            .previous_order
            .as_ref()
            .filter(|_| matches!(o.action, Action::Revise | Action::Discontinue))
        else {
            continue;
        };
        if voided.contains(prev_uuid) {
            continue;
        }
        let Some(prev) = store::get(store, prev_uuid)? else {
            continue;
        };
        if prev.date_stopped.is_none() {
            continue;
        }
        // Another revision or discontinuation of it that still stands keeps it stopped.
        let others = store::of_patient(store, &prev.patient, false)?;
        let still_stopped = others.iter().any(|x| {
            !voided.contains(&x.uuid)
                && x.previous_order.as_deref() == Some(prev_uuid)
                && matches!(x.action, Action::Revise | Action::Discontinue)
        });
        if !still_stopped {
            let mut active = prev.clone();
            active.date_stopped = None;
            active.audit.changed(user, now);
            changes.push((prev, active));
        }
    }
    Ok(changes)
}

/// What placing an order needs of the encounter it is placed in (the encounter domain's
/// record gives it: `encounter::placement`).
#[derive(Debug, Clone)]
pub struct Placement {
    pub uuid: String,
    pub patient: String,
    /// Its datetime, as index keys hold it.
    pub datetime: String,
    pub voided: bool,
}

/// Core's rule (`PatientServiceImpl.mergePatients`): a merge is refused while both patients
/// have active orders of the same order type.
pub fn both_with_active_orders_of_one_type(
    store: &crate::store::Store,
    m: &crate::store::record::PatientMerge,
) -> crate::store::StoreResult<Option<String>> {
    let now = crate::wire::datetime_key(m.now);
    let active = |p: &str| -> crate::store::StoreResult<Vec<OrderRecord>> {
        Ok(store::of_patient(store, p, false)?
            .into_iter()
            .filter(|o| o.is_active(&now))
            .collect())
    };
    let from = active(&m.from)?;
    let into = active(&m.into)?;
    Ok(from
        .iter()
        .find(|o| into.iter().any(|i| i.order_type == o.order_type))
        .map(|o| {
            format!(
                "Cannot merge patients: both have active orders of the order type {}",
                o.order_type
            )
        }))
}
