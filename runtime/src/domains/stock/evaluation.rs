//! The stock rules' evaluation, as the module's "Stock Rules Evaluation Job" does it: each
//! rule that is due is compared with the stock it watches, and when that stock is at or
//! below the rule's quantity the users in charge are sent an alert (core's `alert`).
//!
//! Rules, as the module's (`StockRuleEvaluationJob`, `getDueStockRules`):
//! - A rule is due when it is enabled, neither it nor its item is voided, and both its
//!   next evaluation and its next action date have come (or were never set).
//! - The stock watched is the item's at the rule's location (with its descendants, with
//!   `enableDescendants`), in base units, counting only batches that expire after today.
//! - The users in charge hold a user role scope, in force today, of the rule's alert role
//!   or of a role that inherits it, at the rule's location (or at an ancestor with
//!   descendants); their accounts are not retired. The mail role names users the same way.
//! - A rule with nobody in charge, or whose stock is above its quantity, is only marked
//!   evaluated: `lastEvaluation` now, `nextEvaluation` after its evaluation frequency.
//! - Otherwise it warns: one alert per rule, addressed to its alert users, reading "Stock
//!   alert: <item> at <location> currently <q> <unit> at or below threshold <t> <unit>"
//!   (quantities in the rule's packaging unit, to two places), expiring in seven days; a
//!   user gets at most four alerts from one evaluation. The rule is marked evaluated and
//!   actioned: `lastActionDate` now, `nextActionDate` after its action frequency, and it
//!   is not due again before then.
//! - Mail is not sent: the module mails only where an SMTP server is set up, which this
//!   distribution does not configure; a rule whose only users in charge are its mail
//!   role's is still marked actioned, as the module marks it.
//! - Nothing happens when `stockmanagement.enableStockRuleJob` is false.
//!
//! The module runs the job once a day; here the application looks for due rules every
//! minute, so each rule is evaluated as often as its own evaluation frequency says. One
//! evaluation at a time: it holds the clinical write lock (across runtimes on one
//! database), and every rule and alert it changes is written in one transaction.

use crate::catalog::Catalog;
use crate::domains::alert::AlertRecord;
use crate::domains::stock::operation::{covers, in_force, lineage, with_descendants};
use crate::domains::stock::rest::{concept_name, item_name, location_name};
use crate::domains::stock::store::*;
use crate::domains::stock::*;
use crate::http::AppState;
use crate::http::repr::Ctx;
use crate::store::StoreResult;
use crate::store::record::DAEMON_USER;
use crate::wire::datetime_key;
use chrono::{DateTime, Duration, Utc};
use std::collections::{HashMap, HashSet};

pub const ENABLE_SETTING: &str = "stockmanagement.enableStockRuleJob";
/// How long a rule's alert stays in force.
const ALERT_DAYS: i64 = 7;
/// The most alerts one evaluation sends one user.
const MAX_ALERTS_PER_USER: usize = 4;

/// What one evaluation did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Evaluation {
    /// Rules that were due and were evaluated.
    pub evaluated: usize,
    /// Alerts written.
    pub alerts: usize,
}

/// Whether the setting lets the evaluation run (the module's default: yes).
fn enabled(state: &AppState) -> bool {
    state.setting(ENABLE_SETTING).is_none_or(|v| {
        let v = v.trim();
        v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("yes") || v == "1"
    })
}

/// Whether a rule is due at `now_key`.
fn due(r: &RuleRecord, items: &HashMap<&str, &ItemRecord>, now_key: &str) -> bool {
    r.enabled
        && !r.voiding.voided
        && items
            .get(r.stock_item.as_str())
            .is_some_and(|i| !i.voiding.voided)
        && due_dates_passed(r, now_key)
}

/// Whether a rule's next evaluation and next action have come (or were never set).
fn due_dates_passed(r: &RuleRecord, now_key: &str) -> bool {
    r.next_evaluation.as_deref().is_none_or(|d| d <= now_key)
        && r.next_action_date.as_deref().is_none_or(|d| d <= now_key)
}

/// A role and every role that inherits it, directly or not (the content's and the API's,
/// retired ones left out); empty when the role does not exist or is retired.
fn role_and_heirs(state: &AppState, catalog: &Catalog, role: &str) -> HashSet<String> {
    let access = state.access.load();
    let exists = |name: &str| catalog.role(name).is_some() || access.role(name).is_some();
    let parents = |name: &str| -> Vec<String> {
        catalog
            .role(name)
            .map(|r| r.inherited_roles.clone())
            .or_else(|| access.role(name).map(|r| r.inherited_roles.clone()))
            .unwrap_or_default()
    };
    if !exists(role) {
        return HashSet::new();
    }
    let inherits = |name: &str| {
        let mut stack = vec![name.to_string()];
        let mut seen = HashSet::new();
        while let Some(n) = stack.pop() {
            if n.eq_ignore_ascii_case(role) {
                return true;
            }
            if seen.insert(n.to_lowercase()) {
                stack.extend(parents(&n));
            }
        }
        false
    };
    let names = catalog.content.roles.iter().map(|r| r.name.clone()).chain(
        access
            .roles
            .iter()
            .filter(|r| !r.retiring.voided)
            .map(|r| r.name.clone()),
    );
    names
        .filter(|n| inherits(n))
        .map(|n| n.to_lowercase())
        .collect()
}

/// The users in charge of a rule for `role` at its location, in a stable order.
fn users_in_charge(
    state: &AppState,
    catalog: &Catalog,
    scopes: &[ScopeRecord],
    active_users: &HashSet<String>,
    role: Option<&str>,
    location: &str,
    today: &str,
) -> Vec<String> {
    let Some(role) = role else {
        return Vec::new();
    };
    let roles = role_and_heirs(state, catalog, role);
    let lineage = lineage(catalog, location);
    let mut users: Vec<String> = scopes
        .iter()
        .filter(|s| {
            in_force(s, today)
                && roles.contains(&s.role.to_lowercase())
                && covers(s, location, &lineage)
                && active_users.contains(&s.user)
        })
        .map(|s| s.user.clone())
        .collect();
    users.sort();
    users.dedup();
    users
}

/// The item's stock at the rule's location (and its descendants), in base units,
/// counting only batches that expire after `today`.
fn stock_watched(
    state: &AppState,
    catalog: &Catalog,
    r: &RuleRecord,
    today: &str,
    expiries: &mut HashMap<String, Option<String>>,
) -> StoreResult<Qty> {
    let locations = if r.enable_descendants {
        with_descendants(catalog, &r.location)
    } else {
        vec![r.location.clone()]
    };
    let parties: Vec<&str> = locations.iter().map(String::as_str).collect();
    let mut total = Qty::ZERO;
    for (batch, quantity) in balances_of_item(&state.store, &parties, &r.stock_item)? {
        if !expiries.contains_key(&batch) {
            let expiration = crate::domains::stock::store::batch(&state.store, &batch)?
                .and_then(|b| b.expiration);
            expiries.insert(batch.clone(), expiration);
        }
        let unexpired = expiries[&batch].as_deref().is_none_or(|e| e > today);
        if unexpired {
            total = total.checked_add(quantity).unwrap_or(total);
        }
    }
    Ok(total)
}

/// `base` base units in units of `factor`, to two places rounded half to even, written
/// as the module writes quantities (`#,###,##0.##`: `1,250`, `2.5`).
pub fn display_in_units(base: Qty, factor: Qty) -> String {
    let (value, factor) = (i128::from(base.0), i128::from(factor.0.max(1)));
    let scaled = value * 100;
    let (mut hundredths, rest) = (scaled.div_euclid(factor), scaled.rem_euclid(factor));
    if 2 * rest > factor || (2 * rest == factor && hundredths % 2 != 0) {
        hundredths += 1;
    }
    let negative = hundredths < 0;
    let abs = hundredths.unsigned_abs();
    let (whole, fraction) = (abs / 100, abs % 100);
    let digits = whole.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if negative { "-" } else { "" };
    match fraction {
        0 => format!("{sign}{grouped}"),
        f if f % 10 == 0 => format!("{sign}{grouped}.{}", f / 10),
        f => format!("{sign}{grouped}.{f:02}"),
    }
}

/// A frequency in minutes as a duration; the API takes at most `i32::MAX` (about 4,000
/// years, so the dates stay within the four-digit years of `datetime_key`).
fn minutes(m: u64) -> Duration {
    Duration::minutes(m.min(i32::MAX as u64) as i64)
}

/// A rule found at or below its quantity, with the alert it would send.
struct Warning {
    rule: usize,
    users: Vec<String>,
    text: String,
}

/// Evaluates every rule due at `now`, writing the alerts and the rules' dates in one
/// transaction.
pub fn evaluate_due_rules(state: &AppState, now: DateTime<Utc>) -> StoreResult<Evaluation> {
    if !enabled(state) {
        return Ok(Evaluation::default());
    }
    let now_key = datetime_key(now);
    // Most minutes no rule is due: found without the lock, which other writers would wait for.
    let items = items(&state.store)?;
    let by_uuid: HashMap<&str, &ItemRecord> = items.iter().map(|i| (i.uuid.as_str(), i)).collect();
    if !rules(&state.store)?
        .iter()
        .any(|r| due(r, &by_uuid, &now_key))
    {
        return Ok(Evaluation::default());
    }
    let _one_writer = state.store.write_lock();
    let today = now.date_naive().to_string();
    let mut all = rules(&state.store)?;
    let due_rules: Vec<usize> = (0..all.len())
        .filter(|&i| due(&all[i], &by_uuid, &now_key))
        .collect();
    if due_rules.is_empty() {
        return Ok(Evaluation::default());
    }
    let scopes = scopes(&state.store)?;
    let active_users: HashSet<String> = state
        .store
        .users()?
        .into_iter()
        .filter(|u| !u.retired)
        .map(|u| u.uuid)
        .collect();
    let catalog = state.catalog.load();
    let locale = catalog.default_locale().to_string();
    let ctx = Ctx {
        base: String::new(),
        locale: locale.clone(),
        fallbacks: vec![locale],
        catalog: &catalog,
        store: &state.store,
        access: &state.access,
        today: now.date_naive(),
        written: Default::default(),
    };
    let mut expiries = HashMap::new();
    let mut warnings = Vec::new();
    let mut actioned = HashSet::new();
    for &i in &due_rules {
        let r = &all[i];
        let alert_users = users_in_charge(
            state,
            &catalog,
            &scopes,
            &active_users,
            r.alert_role.as_deref(),
            &r.location,
            &today,
        );
        let mail_users = users_in_charge(
            state,
            &catalog,
            &scopes,
            &active_users,
            r.mail_role.as_deref(),
            &r.location,
            &today,
        );
        if alert_users.is_empty() && mail_users.is_empty() {
            continue;
        }
        let item = by_uuid[r.stock_item.as_str()];
        let Some(unit) = item.unit(&r.packaging_uom) else {
            continue;
        };
        let Some(threshold) = r.quantity.times(unit.factor) else {
            continue;
        };
        let stock = stock_watched(state, &catalog, r, &today, &mut expiries)?;
        if stock > threshold {
            continue;
        }
        actioned.insert(i);
        if alert_users.is_empty() {
            continue;
        }
        let unit_name = concept_name(&ctx, Some(&unit.packaging_uom))
            .as_str()
            .unwrap_or_default()
            .to_string();
        let text = format!(
            "Stock alert: {} at {} currently {} {unit_name} at or below threshold {} {unit_name}",
            item_name(&ctx, item),
            location_name(&ctx, &r.location)
                .as_str()
                .unwrap_or_default(),
            display_in_units(stock, unit.factor),
            display_in_units(threshold, unit.factor),
        );
        warnings.push(Warning {
            rule: i,
            users: alert_users,
            text,
        });
    }
    // At most four alerts a user from one evaluation, in the rules' order.
    let mut sent: HashMap<String, usize> = HashMap::new();
    let mut alerts = Vec::new();
    for w in warnings {
        let users: Vec<String> = w
            .users
            .into_iter()
            .filter(|u| {
                let n = sent.entry(u.clone()).or_default();
                *n += 1;
                *n <= MAX_ALERTS_PER_USER
            })
            .collect();
        if !users.is_empty() {
            let expires = datetime_key(now + Duration::days(ALERT_DAYS));
            alerts.push((
                w.rule,
                AlertRecord::new(&w.text, &users, Some(expires), DAEMON_USER, now),
            ));
        }
    }
    for &i in &due_rules {
        let r = &mut all[i];
        r.last_evaluation = Some(now_key.clone());
        r.next_evaluation = Some(datetime_key(now + minutes(r.evaluation_frequency)));
        if actioned.contains(&i) {
            r.last_action_date = Some(now_key.clone());
            r.next_action_date = Some(datetime_key(now + minutes(r.action_frequency)));
        }
    }
    let written = alerts.len();
    state.store.write(|txn| {
        for &i in &due_rules {
            put_in(txn, RULES, &all[i].uuid, &all[i])?;
        }
        for (_, a) in &mut alerts {
            crate::domains::alert::store::put_in(txn, a, None)?;
        }
        Ok(())
    })?;
    Ok(Evaluation {
        evaluated: due_rules.len(),
        alerts: written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_written_as_the_module_writes_them() {
        let q = |s: &str| Qty::parse(s).unwrap();
        assert_eq!(display_in_units(q("1250"), q("1")), "1,250");
        assert_eq!(display_in_units(q("250"), q("100")), "2.5");
        assert_eq!(display_in_units(q("100"), q("3")), "33.33");
        assert_eq!(display_in_units(q("1234567"), q("1")), "1,234,567");
        assert_eq!(display_in_units(Qty::ZERO, q("100")), "0");
        // Half to even at the second place: 0.125 → 0.12, 0.375 → 0.38.
        assert_eq!(display_in_units(q("1"), q("8")), "0.12");
        assert_eq!(display_in_units(q("3"), q("8")), "0.38");
        assert_eq!(display_in_units(q("-5"), q("2")), "-2.5");
    }
}
