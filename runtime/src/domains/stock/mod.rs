//! The pharmacy's stock, as the OpenMRS stock management module keeps it: stock items (a
//! drug of the content, or a concept for what is not a drug: gloves, test kits) with their
//! packaging units; stock sources (suppliers, the provincial depot); batches; stock
//! operations (receipts, issues, transfers, requisitions, adjustments, disposals, stock
//! takes, returns, opening stock) moving quantities through the module's workflow; the
//! transactions those operations write; and the user role scopes that say who may do which
//! operation at which location.
//!
//! Rules, as the module's (`StockManagementServiceImpl` and its operation type processors):
//! - An operation is edited while `NEW` or `RETURNED`. `SUBMIT` makes it `SUBMITTED`;
//!   `APPROVE` completes it; `REJECT`, `RETURN` and `CANCEL` end or reopen it with a
//!   reason. Issues and returns are `DISPATCHED` first and `COMPLETE`d by the receiving
//!   location (quantities arrive there only then).
//! - What leaves a location leaves it when the operation is submitted or dispatched (the
//!   module's "reserved" transactions): a second issue of the same batch cannot take what
//!   the first already holds. A return, rejection or cancellation puts it back.
//! - No batch at a location goes below zero: the check and the movement are one write
//!   transaction, so two runtimes racing for the last box cannot both have it.
//! - Quantities are exact decimals (`Qty`), kept in the item's base unit; an operation's
//!   line carries its quantity in a packaging unit of the item (a box of 100), converted
//!   by the unit's factor.
//! - Every movement is a transaction record that is never rewritten: a correction or a
//!   reversal is a new transaction. A location's balance per item and batch is derived
//!   from them (`store::BALANCES`), updated in the same write.
//! - Who may act: the caller holds the privilege the action needs (`Task:
//!   stockmanagement.stockoperations.mutate`, `.approve`, `.receiveitems`) and a user role
//!   scope of hers, enabled and in force today, names one of her roles, the location (or
//!   an ancestor with `enableDescendants`) and the operation type.
//!
//! Parties (the module's `party` table, what an operation moves stock from and to) are the
//! content's locations and the stock sources, each under its own uuid.
//!
//! Files: `store.rs` the tables; `rest.rs` types, items, units, sources, parties and
//! scopes; `operation.rs` operations, their workflow, inventory, history, batches and line
//! costs; `dispense.rs` the dispensing app's dispenses from stock; `rules.rs` an item's
//! rules and supplier references; `evaluation.rs` the rules' evaluation into alerts;
//! `import.rs` items from a CSV file; `report.rs` the
//! stock reports run as batch jobs; `fhir.rs` the order basket's `InventoryItem`.

pub mod dispense;
pub mod evaluation;
pub mod fhir;
pub mod import;
pub mod operation;
pub mod report;
pub mod rest;
pub mod rules;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};
use std::fmt;

pub const MUTATE_OPERATIONS: &str = "Task: stockmanagement.stockoperations.mutate";
pub const APPROVE_OPERATIONS: &str = "Task: stockmanagement.stockoperations.approve";
pub const RECEIVE_ITEMS: &str = "Task: stockmanagement.stockoperations.receiveitems";
pub const VIEW_OPERATIONS: &str = "App: stockmanagement.stockoperations";
pub const VIEW_ITEMS: &str = "App: stockmanagement.stockItems";
pub const MUTATE_ITEMS: &str = "Task: stockmanagement.stockItems.mutate";
pub const VIEW_SOURCES: &str = "App: stockmanagement.stockSources";
pub const MUTATE_SOURCES: &str = "Task: stockmanagement.stockSources.mutate";
pub const VIEW_SCOPES: &str = "App: stockmanagement.userRoleScopes";
pub const MUTATE_SCOPES: &str = "Task: stockmanagement.userRoleScopes.mutate";
pub const DISPENSE: &str = "Task: stockmanagement.stockItems.dispense";
pub const READ_PARTIES: &str = "Task: stockmanagement.party.read";
pub const VIEW_TYPES: &str = "App: stockmanagement.stockOperationType";

/// An exact quantity, in ten-thousandths (the module's quantities are decimals: half a
/// bottle, 2.5 ml).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Qty(pub i64);

const SCALE: i64 = 10_000;

impl Qty {
    pub const ZERO: Qty = Qty(0);

    /// A decimal as text (`12`, `2.5`, `-3`): at most four places, no exponent, under
    /// 10¹³ in size.
    pub fn parse(text: &str) -> Option<Qty> {
        let text = text.trim();
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        if whole.is_empty()
            || whole.len() > 13
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || fraction.len() > 4
            || !fraction.bytes().all(|b| b.is_ascii_digit())
            || (digits.contains('.') && fraction.is_empty())
        {
            return None;
        }
        let value =
            whole.parse::<i64>().ok()? * SCALE + format!("{fraction:0<4}").parse::<i64>().ok()?;
        Some(Qty(if negative { -value } else { value }))
    }

    /// A JSON number or numeric string.
    pub fn of_json(v: &serde_json::Value) -> Option<Qty> {
        match v {
            serde_json::Value::Number(n) => Qty::parse(&n.to_string()),
            serde_json::Value::String(s) => Qty::parse(s),
            _ => None,
        }
    }

    /// This many packaging units of `factor` base units each, exactly, in base units.
    pub fn times(self, factor: Qty) -> Option<Qty> {
        let product = i128::from(self.0) * i128::from(factor.0);
        if product % i128::from(SCALE) != 0 {
            return None;
        }
        i64::try_from(product / i128::from(SCALE)).ok().map(Qty)
    }

    /// These base units in packaging units of `factor` (rounded to four places, for display).
    pub fn per(self, factor: Qty) -> Qty {
        if factor.0 == 0 {
            return self;
        }
        let scaled = i128::from(self.0) * i128::from(SCALE);
        let f = i128::from(factor.0);
        let rounded = (scaled + scaled.signum() * f / 2) / f;
        Qty(i64::try_from(rounded).unwrap_or(i64::MAX))
    }

    pub fn checked_add(self, other: Qty) -> Option<Qty> {
        self.0.checked_add(other.0).map(Qty)
    }

    /// As a JSON number: whole numbers as integers, others as the nearest double (for
    /// display; the stored value stays exact).
    pub fn json(self) -> serde_json::Value {
        if self.0 % SCALE == 0 {
            serde_json::json!(self.0 / SCALE)
        } else {
            serde_json::json!(self.0 as f64 / SCALE as f64)
        }
    }
}

impl std::ops::Neg for Qty {
    type Output = Qty;
    fn neg(self) -> Qty {
        Qty(-self.0)
    }
}

impl fmt::Display for Qty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let (whole, fraction) = (abs / SCALE as u64, abs % SCALE as u64);
        if fraction == 0 {
            write!(f, "{sign}{whole}")
        } else {
            let digits = format!("{fraction:04}");
            write!(f, "{sign}{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

/// One packaging unit of an item: `factor` base units in one `packaging_uom` (a concept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackagingUnit {
    pub uuid: String,
    pub packaging_uom: String,
    pub factor: Qty,
    pub audit: Audit,
    pub voiding: Voiding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemRecord {
    pub v: u32,
    pub uuid: String,
    /// A drug of the content; its concept is the item's concept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drug: Option<String>,
    pub concept: String,
    pub is_drug: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acronym: Option<String>,
    pub has_expiration: bool,
    /// Days before expiry a batch is flagged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry_notice: Option<u32>,
    /// A stock source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purchase_price: Option<Qty>,
    /// A packaging unit of this item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purchase_price_uom: Option<String>,
    /// A concept (tablet, ml).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispensing_unit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispensing_unit_packaging_uom: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_stock_operations_uom: Option<String>,
    /// A concept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_level: Option<Qty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_level_uom: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packaging_units: Vec<PackagingUnit>,
    pub audit: Audit,
    pub voiding: Voiding,
}

impl ItemRecord {
    /// A new item of a drug (with its concept) or of a concept alone, with nothing else
    /// set: expiring, no units yet.
    pub fn new(
        uuid: String,
        drug: Option<String>,
        concept: String,
        user: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> ItemRecord {
        ItemRecord {
            v: 1,
            uuid,
            is_drug: drug.is_some(),
            drug,
            concept,
            common_name: None,
            acronym: None,
            has_expiration: true,
            expiry_notice: None,
            preferred_vendor: None,
            purchase_price: None,
            purchase_price_uom: None,
            dispensing_unit: None,
            dispensing_unit_packaging_uom: None,
            default_stock_operations_uom: None,
            category: None,
            reorder_level: None,
            reorder_level_uom: None,
            packaging_units: Vec::new(),
            audit: Audit::new(user, now),
            voiding: Voiding::default(),
        }
    }

    /// A packaging unit of the item in use.
    pub fn unit(&self, uuid: &str) -> Option<&PackagingUnit> {
        self.packaging_units
            .iter()
            .find(|u| u.uuid == uuid && !u.voiding.voided)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceRecord {
    pub v: u32,
    pub uuid: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acronym: Option<String>,
    /// A concept (supplier, donor, central store…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    pub audit: Audit,
    pub retiring: Voiding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub v: u32,
    pub uuid: String,
    pub stock_item: String,
    pub batch_no: String,
    /// `yyyy-mm-dd`, for items that expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<String>,
    pub audit: Audit,
}

/// One line of an operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationItem {
    pub uuid: String,
    pub stock_item: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
    /// In `packaging_uom`; absent on a requisition's line that asks without a quantity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<Qty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packaging_uom: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purchase_price: Option<Qty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity_received: Option<Qty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity_received_uom: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity_requested: Option<Qty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity_requested_uom: Option<String>,
}

/// What an operation took from (or, for an adjustment, gave to) its source when it was
/// submitted or dispatched, in base units: put back if it is returned, rejected or
/// cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reserved {
    pub item: String,
    pub stock_item: String,
    pub batch: String,
    pub quantity: Qty,
}

/// Who took a step of the workflow, and when (key form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub by: String,
    pub date: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Steps {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted: Option<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatched: Option<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returned: Option<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<Step>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationRecord {
    pub v: u32,
    pub uuid: String,
    /// `RCPT-0001`: the type's acronym and the operation's sequence.
    pub number: String,
    /// A `TYPES` uuid.
    pub operation_type: String,
    pub status: String,
    pub at_location: String,
    /// Party uuids: a location's or a stock source's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// Key form.
    pub operation_date: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remarks: Option<String>,
    /// A concept: why stock was adjusted, disposed of or counted differently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responsible_person: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responsible_person_other: Option<String>,
    #[serde(default)]
    pub approval_required: bool,
    /// The requisition an issue answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requisition: Option<String>,
    pub items: Vec<OperationItem>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserved: Vec<Reserved>,
    #[serde(default)]
    pub steps: Steps,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_reason: Option<String>,
    pub audit: Audit,
}

impl OperationRecord {
    /// `NEW` or `RETURNED`: its lines may change.
    pub fn updateable(&self) -> bool {
        self.status == NEW || self.status == RETURNED
    }
}

/// One movement of stock at a party: positive in, negative out, in base units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransactionRecord {
    pub v: u32,
    pub uuid: String,
    pub party: String,
    pub stock_item: String,
    pub batch: String,
    pub quantity: Qty,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_item: Option<String>,
    /// The packaging unit the line was written in, to show the movement in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packaging_uom: Option<String>,
    /// A dispense to a patient (`dispenserequest`): who, for which order, in which
    /// encounter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patient: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encounter: Option<String>,
    /// Key form.
    pub date: String,
    pub audit: Audit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeLocation {
    pub uuid: String,
    pub location: String,
    #[serde(default)]
    pub enable_descendants: bool,
}

/// Who may do which operation types at which locations, through which of her roles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeRecord {
    pub v: u32,
    pub uuid: String,
    pub user: String,
    pub role: String,
    pub permanent: bool,
    /// `yyyy-mm-dd`, when not permanent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_to: Option<String>,
    pub enabled: bool,
    pub locations: Vec<ScopeLocation>,
    /// `TYPES` uuids.
    pub operation_types: Vec<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// An alert rule: warn when the item's stock at a location (and its descendants, with
/// `enable_descendants`) falls to `quantity` of a packaging unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleRecord {
    pub v: u32,
    pub uuid: String,
    pub stock_item: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub location: String,
    pub quantity: Qty,
    pub packaging_uom: String,
    pub enabled: bool,
    /// Minutes between evaluations, and between two alerts.
    pub evaluation_frequency: u64,
    pub action_frequency: u64,
    /// Role names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_role: Option<String>,
    #[serde(default)]
    pub enable_descendants: bool,
    /// When the evaluation last looked at the rule and when it looks again (key form),
    /// and when it last warned and may warn again (`evaluation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_evaluation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_evaluation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_action_date: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action_date: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// What a stock source calls an item (its catalogue code).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRecord {
    pub v: u32,
    pub uuid: String,
    pub stock_item: String,
    pub stock_source: String,
    pub reference_code: String,
    pub audit: Audit,
    pub voiding: Voiding,
}

pub const NEW: &str = "NEW";
pub const SUBMITTED: &str = "SUBMITTED";
pub const DISPATCHED: &str = "DISPATCHED";
pub const RETURNED: &str = "RETURNED";
pub const REJECTED: &str = "REJECTED";
pub const CANCELLED: &str = "CANCELLED";
pub const COMPLETED: &str = "COMPLETED";
pub const STATUSES: &[&str] = &[
    NEW, SUBMITTED, DISPATCHED, RETURNED, REJECTED, CANCELLED, COMPLETED,
];

/// What the parties of an operation type are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartyKind {
    Location,
    Other,
}

impl PartyKind {
    pub fn name(self) -> &'static str {
        match self {
            PartyKind::Location => "Location",
            PartyKind::Other => "Other",
        }
    }
}

/// How an operation type moves stock (the module's operation type processors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Movement {
    /// Adds the lines' quantities at the destination when completed (receipt).
    IntoDestination,
    /// Adds them at the source when completed (opening stock).
    IntoSource,
    /// Applies the lines' signed quantities at the source when submitted (adjustment).
    SignedAtSource,
    /// Takes the lines' quantities from the source when submitted (disposal).
    OutOfSource,
    /// Takes them from the source when submitted or dispatched, and gives what was
    /// received to the destination when completed (issue, transfer out, return).
    Across,
    /// Moves the difference between the counted and the recorded quantity when submitted
    /// (stock take).
    Count,
    /// Moves nothing: a request answered by an issue (requisition).
    Request,
}

/// An operation type (the module's nine, under their published uuids).
pub struct OperationType {
    pub uuid: &'static str,
    pub name: &'static str,
    /// The module's `operationType` code.
    pub code: &'static str,
    pub acronym: &'static str,
    pub description: &'static str,
    pub source: Option<PartyKind>,
    pub destination: Option<PartyKind>,
    pub movement: Movement,
    /// Lines name new batches by number and expiry (receipt, opening stock), not existing ones.
    pub new_batches: bool,
    /// The destination acknowledges what arrived (`DISPATCHED`, then `COMPLETE`).
    pub dispatched: bool,
    pub requires_reason: bool,
    pub captures_price: bool,
    /// Expired batches may be moved (disposal).
    pub expired_batches: bool,
    /// Location tags the module scopes it to: (tag, as source, as destination).
    pub location_scopes: &'static [(&'static str, bool, bool)],
}

impl OperationType {
    /// Whether a line's quantity may be negative (adjustments only).
    pub fn negative_allowed(&self) -> bool {
        self.movement == Movement::SignedAtSource
    }

    /// Whether a line may omit its quantity (requisitions).
    pub fn quantity_optional(&self) -> bool {
        self.movement == Movement::Request
    }

    /// Whether a line names an existing batch.
    pub fn needs_batch(&self) -> bool {
        !self.new_batches && self.movement != Movement::Request
    }
}

const STORES: &str = "Main Store";
const PHARMACY: &str = "Main Pharmacy";
const DISPENSARY: &str = "Dispensary";

pub static TYPES: &[OperationType] = &[
    OperationType {
        uuid: "11111111-1111-1111-1111-111111111111",
        name: "Adjustment",
        code: "adjustment",
        acronym: "ADJ",
        description: "Physical item quantities that do not match the current system quantity.",
        source: Some(PartyKind::Location),
        destination: None,
        movement: Movement::SignedAtSource,
        new_batches: false,
        dispatched: false,
        requires_reason: true,
        captures_price: false,
        expired_batches: false,
        location_scopes: &[(PHARMACY, true, false), (DISPENSARY, true, false)],
    },
    OperationType {
        uuid: "22222222-2222-2222-2222-222222222222",
        name: "Disposal",
        code: "disposed",
        acronym: "DIS",
        description: "Item stock quantities that have expired and must be removed from circulation.",
        source: Some(PartyKind::Location),
        destination: None,
        movement: Movement::OutOfSource,
        new_batches: false,
        dispatched: false,
        requires_reason: true,
        captures_price: false,
        expired_batches: true,
        location_scopes: &[
            (STORES, true, false),
            (PHARMACY, true, false),
            (DISPENSARY, true, false),
        ],
    },
    OperationType {
        uuid: "33333333-3333-3333-3333-333333333333",
        name: "Transfer Out",
        code: "transferout",
        acronym: "TFO",
        description: "Items that are distributed to other outside destination.",
        source: Some(PartyKind::Location),
        destination: Some(PartyKind::Other),
        movement: Movement::Across,
        new_batches: false,
        dispatched: false,
        requires_reason: false,
        captures_price: false,
        expired_batches: false,
        location_scopes: &[(STORES, true, false)],
    },
    OperationType {
        uuid: "44444444-4444-4444-4444-444444444444",
        name: "Receipt",
        code: "receipt",
        acronym: "RCPT",
        description: "Items that are added into the inventory system from an outside provider.",
        source: Some(PartyKind::Other),
        destination: Some(PartyKind::Location),
        movement: Movement::IntoDestination,
        new_batches: true,
        dispatched: false,
        requires_reason: false,
        captures_price: true,
        expired_batches: false,
        location_scopes: &[(STORES, false, true)],
    },
    OperationType {
        uuid: "55555555-5555-5555-5555-555555555555",
        name: "Return",
        code: "return",
        acronym: "RTU",
        description: "Items that are returned to the main store from other stock holding areas.",
        source: Some(PartyKind::Location),
        destination: Some(PartyKind::Location),
        movement: Movement::Across,
        new_batches: false,
        dispatched: true,
        requires_reason: false,
        captures_price: false,
        expired_batches: false,
        location_scopes: &[
            (PHARMACY, true, false),
            (DISPENSARY, true, false),
            (STORES, false, true),
        ],
    },
    OperationType {
        uuid: "66666666-6666-6666-6666-666666666666",
        name: "Stock Issue",
        code: "stockissue",
        acronym: "SIS",
        description: "Items that are transferred between two locations.",
        source: Some(PartyKind::Location),
        destination: Some(PartyKind::Location),
        movement: Movement::Across,
        new_batches: false,
        dispatched: true,
        requires_reason: false,
        captures_price: false,
        expired_batches: false,
        location_scopes: &[
            (PHARMACY, false, true),
            (DISPENSARY, false, true),
            (STORES, true, false),
        ],
    },
    OperationType {
        uuid: "77777777-7777-7777-7777-777777777777",
        name: "Requisition",
        code: "requisition",
        acronym: "REQ",
        description: "Request for items from another location.",
        source: Some(PartyKind::Location),
        destination: Some(PartyKind::Location),
        movement: Movement::Request,
        new_batches: false,
        dispatched: false,
        requires_reason: false,
        captures_price: false,
        expired_batches: false,
        location_scopes: &[
            (PHARMACY, true, false),
            (DISPENSARY, true, false),
            (STORES, false, true),
        ],
    },
    OperationType {
        uuid: "88888888-8888-8888-8888-888888888888",
        name: "Stock Take",
        code: "stocktake",
        acronym: "STK",
        description: "Physical verification of item quantities.",
        source: Some(PartyKind::Location),
        destination: None,
        movement: Movement::Count,
        new_batches: false,
        dispatched: false,
        requires_reason: true,
        captures_price: false,
        expired_batches: true,
        location_scopes: &[
            (STORES, true, false),
            (PHARMACY, true, false),
            (DISPENSARY, true, false),
        ],
    },
    OperationType {
        uuid: "99999999-9999-9999-9999-999999999999",
        name: "Opening Stock",
        code: "initial",
        acronym: "IST",
        description: "Initial physical item quantities.",
        source: Some(PartyKind::Location),
        destination: None,
        movement: Movement::IntoSource,
        new_batches: true,
        dispatched: false,
        requires_reason: false,
        captures_price: true,
        expired_batches: false,
        location_scopes: &[
            (STORES, true, false),
            (PHARMACY, true, false),
            (DISPENSARY, true, false),
        ],
    },
];

pub fn operation_type(uuid_or_code: &str) -> Option<&'static OperationType> {
    TYPES
        .iter()
        .find(|t| t.uuid == uuid_or_code || t.code == uuid_or_code)
}

/// The workflow's actions (`stockoperationaction`'s `name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Submit,
    Dispatch,
    Complete,
    Approve,
    Return,
    Reject,
    Cancel,
}

impl Action {
    pub fn parse(name: &str) -> Option<Action> {
        Some(match name.to_ascii_uppercase().as_str() {
            "SUBMIT" => Action::Submit,
            "DISPATCH" => Action::Dispatch,
            "COMPLETE" => Action::Complete,
            "APPROVE" => Action::Approve,
            "RETURN" => Action::Return,
            "REJECT" => Action::Reject,
            "CANCEL" => Action::Cancel,
            _ => return None,
        })
    }
}

/// Where the privilege an action needs is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    AtLocation,
    Destination,
}

/// Whether `action` may be taken on an operation of `ty` in `status`, and if so the
/// privilege it needs and where (the module's `processStockOperationAction`).
pub fn permitted(
    ty: &OperationType,
    status: &str,
    action: Action,
) -> Result<(&'static str, Target), &'static str> {
    let updateable = status == NEW || status == RETURNED;
    match action {
        Action::Submit if updateable => Ok((MUTATE_OPERATIONS, Target::AtLocation)),
        Action::Submit => Err("The stock operation cannot be changed in its current status"),
        Action::Complete if updateable && !ty.dispatched => {
            Ok((MUTATE_OPERATIONS, Target::AtLocation))
        }
        Action::Complete if ty.dispatched && status == DISPATCHED => {
            Ok((RECEIVE_ITEMS, Target::Destination))
        }
        Action::Complete => Err("The stock operation cannot be completed in its current status"),
        Action::Dispatch if ty.dispatched && updateable => {
            Ok((MUTATE_OPERATIONS, Target::AtLocation))
        }
        Action::Dispatch if ty.dispatched && status == SUBMITTED => {
            Ok((APPROVE_OPERATIONS, Target::AtLocation))
        }
        Action::Dispatch => Err("The stock operation cannot be dispatched"),
        Action::Approve if status == SUBMITTED && !ty.dispatched => {
            Ok((APPROVE_OPERATIONS, Target::AtLocation))
        }
        Action::Approve => Err("The approval action is not allowed in the current status"),
        Action::Return if status == SUBMITTED => Ok((APPROVE_OPERATIONS, Target::AtLocation)),
        Action::Return if status == DISPATCHED => Ok((RECEIVE_ITEMS, Target::Destination)),
        Action::Return => Err("The approval action is not allowed in the current status"),
        Action::Reject if status == SUBMITTED => Ok((APPROVE_OPERATIONS, Target::AtLocation)),
        Action::Reject => Err("The approval action is not allowed in the current status"),
        Action::Cancel if updateable => Ok((MUTATE_OPERATIONS, Target::AtLocation)),
        Action::Cancel if status == SUBMITTED => Ok((APPROVE_OPERATIONS, Target::AtLocation)),
        Action::Cancel => Err("The stock operation cannot be cancelled in its current status"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_exact_decimals_converted_by_packaging_factors() {
        assert_eq!(Qty::parse("2.5"), Some(Qty(25_000)));
        assert_eq!(Qty::parse("-3"), Some(Qty(-30_000)));
        assert_eq!(Qty::parse("1e3"), None);
        assert_eq!(Qty::parse("0.00001"), None);
        let box_of_100 = Qty::parse("100").unwrap();
        assert_eq!(
            Qty::parse("3").unwrap().times(box_of_100),
            Qty::parse("300")
        );
        assert_eq!(
            Qty::parse("250").unwrap().per(box_of_100),
            Qty::parse("2.5").unwrap()
        );
        assert_eq!(
            Qty::parse("0.0001")
                .unwrap()
                .times(Qty::parse("0.5").unwrap()),
            None
        );
        assert_eq!(Qty::parse("2.5").unwrap().to_string(), "2.5");
        assert_eq!(Qty::parse("-40").unwrap().to_string(), "-40");
    }

    #[test]
    fn the_workflow_allows_each_action_only_where_the_module_does() {
        let receipt = operation_type("receipt").unwrap();
        let issue = operation_type("stockissue").unwrap();
        assert!(permitted(receipt, NEW, Action::Submit).is_ok());
        assert!(permitted(receipt, SUBMITTED, Action::Submit).is_err());
        assert_eq!(
            permitted(receipt, SUBMITTED, Action::Approve),
            Ok((APPROVE_OPERATIONS, Target::AtLocation))
        );
        assert!(permitted(issue, SUBMITTED, Action::Approve).is_err());
        assert!(permitted(issue, NEW, Action::Complete).is_err());
        assert_eq!(
            permitted(issue, DISPATCHED, Action::Complete),
            Ok((RECEIVE_ITEMS, Target::Destination))
        );
        assert!(permitted(receipt, COMPLETED, Action::Cancel).is_err());
        assert!(permitted(receipt, REJECTED, Action::Return).is_err());
        assert!(permitted(receipt, RETURNED, Action::Complete).is_ok());
    }
}
