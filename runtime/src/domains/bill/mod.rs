//! Bills, as the billing module (`openmrs-module-billing`, the former cashier) keeps them
//! and the O3 billing app makes them: a patient's bill at a cash point of the content,
//! line items charging the content's billable services, payments in the content's
//! payment modes, and a receipt number.
//!
//! Rules (the module's `Bill` and `BillServiceImpl`, stricter where the module trusts its
//! client):
//! - A bill is created PENDING (or POSTED); while PENDING its line items may change, and
//!   finalising it (PENDING → POSTED) freezes them. Any other status is the payments':
//!   once the amounts tendered reach the amount due, the bill and each of its line items
//!   are PAID, before that the bill is POSTED.
//! - A payment names a payment mode of the content and tenders a positive amount; it is
//!   taken only by a POSTED bill (the app's "finalise before recording a payment"), never
//!   by a PAID one. More than is due may be tendered (the cash desk gives change).
//! - Amounts are exact decimals (`Money`, ten-thousandths in an integer): no floating
//!   point ever touches a total.
//! - Voiding keeps the bill with who, when and why; a line item removed from a PENDING
//!   bill is voided in it, not lost.
//!
//! Bills are indexed by patient, by visit, by creation (the cash desk's list, newest
//! first) and by status and creation (the list's status filter), and each line item by
//! its uuid (`billLineItem/{uuid}` finds its bill).

pub mod metadata;
pub mod receipt;
pub mod repr;
pub mod rest;
pub mod store;

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};
use std::fmt;

/// An exact amount of money, in ten-thousandths of the currency's unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Money(pub i64);

/// Ten-thousandths in one unit.
const SCALE: i64 = 10_000;

impl Money {
    /// A decimal written as text (`1500`, `2.50`, `-3.2`): at most four places, no
    /// exponent; `None` for anything else or past ±10¹⁴.
    pub fn parse(text: &str) -> Option<Money> {
        let text = text.trim();
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        if whole.is_empty()
            || whole.len() > 14
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || fraction.len() > 4
            || !fraction.bytes().all(|b| b.is_ascii_digit())
            || (digits.contains('.') && fraction.is_empty())
        {
            return None;
        }
        let whole: i64 = whole.parse().ok()?;
        let fraction: i64 = format!("{fraction:0<4}").parse().ok()?;
        let value = whole * SCALE + fraction;
        Some(Money(if negative { -value } else { value }))
    }

    pub fn checked_add(self, other: Money) -> Option<Money> {
        self.0.checked_add(other.0).map(Money)
    }

    pub fn times(self, quantity: i64) -> Option<Money> {
        self.0.checked_mul(quantity).map(Money)
    }
}

/// `1500`, `1500.5`, `0.0025`: the shortest exact decimal.
impl fmt::Display for Money {
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

/// The module's bill statuses this runtime reaches.
pub const PENDING: &str = "PENDING";
pub const POSTED: &str = "POSTED";
pub const PAID: &str = "PAID";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineItem {
    pub uuid: String,
    /// Billable service uuid.
    pub service: String,
    pub quantity: i64,
    pub price: Money,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_uuid: Option<String>,
    pub order: i64,
    pub status: String,
    pub voiding: Voiding,
}

impl LineItem {
    pub fn total(&self) -> Option<Money> {
        self.price.times(self.quantity)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaymentAttribute {
    /// The attribute type's name (the content's payment modes name theirs).
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Payment {
    pub uuid: String,
    /// Payment mode uuid.
    pub mode: String,
    pub amount: Money,
    pub tendered: Money,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<PaymentAttribute>,
    pub audit: Audit,
    pub voiding: Voiding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BillRecord {
    pub v: u32,
    pub uuid: String,
    /// The receipt number (`000042-7`: a sequence and its Luhn check digit).
    pub number: String,
    pub patient: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visit: Option<String>,
    /// Provider uuid.
    pub cashier: String,
    /// Cash point uuid.
    pub cash_point: String,
    pub status: String,
    pub line_items: Vec<LineItem>,
    #[serde(default)]
    pub payments: Vec<Payment>,
    pub audit: Audit,
    pub voiding: Voiding,
}

impl BillRecord {
    pub fn live_items(&self) -> impl Iterator<Item = &LineItem> {
        self.line_items.iter().filter(|i| !i.voiding.voided)
    }

    pub fn live_payments(&self) -> impl Iterator<Item = &Payment> {
        self.payments.iter().filter(|p| !p.voiding.voided)
    }

    /// Σ price × quantity of the line items in force; `None` past the representable range
    /// (which validation refuses before anything is stored).
    pub fn total(&self) -> Option<Money> {
        self.live_items()
            .try_fold(Money(0), |sum, i| sum.checked_add(i.total()?))
    }

    pub fn tendered(&self) -> Money {
        self.live_payments().fold(Money(0), |sum, p| {
            sum.checked_add(p.tendered).unwrap_or(sum)
        })
    }

    /// What remains to be paid (never below zero).
    pub fn due(&self) -> Money {
        Money((self.total().unwrap_or_default().0 - self.tendered().0).max(0))
    }

    /// The module's `synchronizeBillStatus`: with money tendered, the bill is PAID (and so
    /// is each line item) once the tendered amounts cover the total, POSTED before.
    pub fn synchronize_status(&mut self) {
        let tendered = self.tendered();
        if tendered.0 <= 0 {
            return;
        }
        if tendered >= self.total().unwrap_or(Money(i64::MAX)) {
            self.status = PAID.into();
            for item in self.line_items.iter_mut().filter(|i| !i.voiding.voided) {
                item.status = PAID.into();
            }
        } else {
            self.status = POSTED.into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_exact_decimals() {
        assert_eq!(Money::parse("1500"), Some(Money(15_000_000)));
        assert_eq!(Money::parse("2.5"), Some(Money(25_000)));
        assert_eq!(Money::parse("0.0001"), Some(Money(1)));
        assert_eq!(Money::parse("-3.20"), Some(Money(-32_000)));
        for bad in [
            "",
            ".5",
            "5.",
            "1e3",
            "0.00001",
            "abc",
            "1,5",
            "123456789012345",
        ] {
            assert_eq!(Money::parse(bad), None, "{bad}");
        }
        // 0.1 + 0.2 is 0.3 here, as money must be.
        let sum = Money::parse("0.1")
            .unwrap()
            .checked_add(Money::parse("0.2").unwrap());
        assert_eq!(sum, Money::parse("0.3"));
        assert_eq!(Money::parse("1500.50").unwrap().to_string(), "1500.5");
        assert_eq!(Money::parse("0.0025").unwrap().to_string(), "0.0025");
        assert_eq!(Money::parse("-7").unwrap().to_string(), "-7");
        assert_eq!(
            Money::parse("5000").unwrap().to_json(),
            serde_json::json!(5000)
        );
        assert_eq!(
            Money::parse("1500.5").unwrap().to_json().to_string(),
            "1500.5"
        );
        assert_eq!(
            Money::from_json(&serde_json::json!(1500.5)),
            Money::parse("1500.5")
        );
        assert_eq!(
            Money::from_json(&serde_json::json!(5000.0)),
            Money::parse("5000")
        );
        assert_eq!(
            Money::from_json(&serde_json::json!("0.000")),
            Some(Money(0))
        );
        assert_eq!(Money::from_json(&serde_json::json!(true)), None);
    }

    fn bill(prices: &[(&str, i64)]) -> BillRecord {
        let audit = Audit::new("u", chrono::Utc::now());
        BillRecord {
            v: 1,
            uuid: "b".into(),
            number: "000001-8".into(),
            patient: "p".into(),
            visit: None,
            cashier: "c".into(),
            cash_point: "cp".into(),
            status: POSTED.into(),
            line_items: prices
                .iter()
                .enumerate()
                .map(|(i, (price, quantity))| LineItem {
                    uuid: format!("i{i}"),
                    service: "s".into(),
                    quantity: *quantity,
                    price: Money::parse(price).unwrap(),
                    price_name: None,
                    price_uuid: None,
                    order: i as i64,
                    status: PENDING.into(),
                    voiding: Voiding::default(),
                })
                .collect(),
            payments: Vec::new(),
            audit,
            voiding: Voiding::default(),
        }
    }

    fn pay(b: &mut BillRecord, tendered: &str) {
        b.payments.push(Payment {
            uuid: format!("p{}", b.payments.len()),
            mode: "cash".into(),
            amount: Money(0),
            tendered: Money::parse(tendered).unwrap(),
            attributes: Vec::new(),
            audit: b.audit.clone(),
            voiding: Voiding::default(),
        });
        b.synchronize_status();
    }

    #[test]
    fn a_bill_is_paid_when_the_tendered_amounts_cover_its_total() {
        let mut b = bill(&[("5000", 1), ("1500.50", 2)]);
        assert_eq!(b.total(), Money::parse("8001"));
        pay(&mut b, "3000");
        assert_eq!(b.status, POSTED);
        assert_eq!(Some(b.due()), Money::parse("5001"));
        assert!(b.line_items.iter().all(|i| i.status == PENDING));
        pay(&mut b, "5000.99");
        assert_eq!(b.status, POSTED, "a hundredth short is not paid");
        pay(&mut b, "0.01");
        assert_eq!(b.status, PAID);
        assert_eq!(b.due(), Money(0));
        assert!(b.line_items.iter().all(|i| i.status == PAID));
    }

    #[test]
    fn voided_line_items_and_payments_do_not_count() {
        let mut b = bill(&[("5000", 1), ("2000", 1)]);
        b.line_items[1]
            .voiding
            .void("u", chrono::Utc::now(), "removed");
        assert_eq!(b.total(), Money::parse("5000"));
        pay(&mut b, "4000");
        b.payments[0].voiding.void("u", chrono::Utc::now(), "error");
        assert_eq!(b.tendered(), Money(0));
        pay(&mut b, "5000");
        assert_eq!(b.status, PAID);
        assert_eq!(
            b.line_items[1].status, PENDING,
            "a removed item is not paid"
        );
    }

    #[test]
    fn an_overflowing_total_is_refused_not_wrapped() {
        let b = bill(&[("99999999999999", 1_000_000)]);
        assert_eq!(b.total(), None);
    }
}
