//! Reports, as the reporting and reportingrest modules run them: the content's report
//! definitions (`reports/`, compiled into the bundle), run for a period on request, in the
//! background, one at a time, their results kept until deleted; schedules that run a
//! report each month for the month before; and the figures of a report sent to DHIS2.
//!
//! A run is a request (`ReportRequestRecord`) that goes REQUESTED → PROCESSING →
//! COMPLETED (or FAILED, with the error), as the reporting module's request statuses; its
//! result is stored beside it (`store::CONTENTS`). A scheduled request (status SCHEDULED,
//! with its schedule) is never run itself: each month it makes a request for the month
//! before, as the module's scheduled requests make a new request each time they fire.
//! Evaluation (`eval`) reads one snapshot of the store through its indexes.

pub mod dhis2;
pub mod eval;
pub mod render;
pub mod rest;
pub mod store;

use crate::catalog::Catalog;
use crate::store::record::Audit;
use crate::store::{Store, StoreResult};
use chrono::{DateTime, NaiveDate, Utc};
use model::reports::ReportDefinition;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const REQUESTED: &str = "REQUESTED";
pub const PROCESSING: &str = "PROCESSING";
pub const COMPLETED: &str = "COMPLETED";
pub const FAILED: &str = "FAILED";
pub const SCHEDULED: &str = "SCHEDULED";

/// The schedule a data manager may give: the reporting module takes a Quartz cron
/// expression; this distribution runs the monthly one (`MONTHLY`, or a cron firing once a
/// month) on the first of the month for the month before.
pub const MONTHLY: &str = "0 0 1 1 * ?";

/// One report run asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportRequestRecord {
    pub v: u32,
    pub uuid: String,
    /// The report definition's uuid.
    pub report: String,
    /// As given: `startDate`, `endDate` (`yyyy-mm-dd`), `location` (a uuid).
    pub parameters: BTreeMap<String, String>,
    /// The design (rendering) asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<String>,
    pub status: String,
    pub priority: String,
    pub requested_by: String,
    /// Key form.
    pub requested: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluate_start: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluate_complete: Option<String>,
    /// A scheduled request's cron expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// For a request a schedule made: the scheduled request, and the month it reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The last sending of its figures to DHIS2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dhis2: Option<dhis2::Sending>,
    pub audit: Audit,
}

/// Whether a cron expression fires once a month (Quartz: seconds, minutes, hours, a day of
/// the month, every month, any day of the week).
pub fn is_monthly(cron: &str) -> bool {
    let parts: Vec<&str> = cron.split_whitespace().collect();
    matches!(parts.as_slice(), [s, m, h, dom, "*", dow]
        if [s, m, h].iter().all(|p| p.parse::<u32>().is_ok())
            && (dom.parse::<u32>().is_ok() || *dom == "L")
            && (*dow == "?" || *dow == "*"))
}

/// A run's period from its parameters, checked against the report's.
pub fn period_of(
    report: &model::reports::ReportDefinition,
    parameters: &BTreeMap<String, String>,
    catalog: &Catalog,
) -> Result<eval::Period, String> {
    use model::reports::ReportParameter as P;
    let date = |name: &str| -> Result<Option<NaiveDate>, String> {
        match parameters
            .get(name)
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
        {
            None => Ok(None),
            Some(s) => crate::wire::parse_date(s)
                .map(Some)
                .ok_or_else(|| format!("Invalid date for parameter {name}: {s}")),
        }
    };
    let mut start = date("startDate")?;
    let mut end = date("endDate")?;
    let mut location = None;
    for p in &report.parameters {
        let given = parameters
            .get(p.name())
            .is_some_and(|v| !v.trim().is_empty());
        if !given {
            return Err(format!("Missing parameter: {}", p.name()));
        }
        if *p == P::Location {
            let l = parameters[p.name()].trim();
            match catalog.location(l) {
                Some(loc) => location = Some(loc.uuid.clone()),
                None => return Err(format!("Unknown location for parameter location: {l}")),
            }
        }
    }
    // A report without a period still has one: everything up to today.
    if !report.parameters.contains(&P::StartDate) {
        start = Some(NaiveDate::MIN);
    }
    if !report.parameters.contains(&P::EndDate) {
        end = Some(crate::wire::today());
    }
    let (Some(start), Some(end)) = (start, end) else {
        return Err("Missing parameter: startDate".into());
    };
    if end < start {
        return Err(format!(
            "The end date {end} is before the start date {start}"
        ));
    }
    Ok(eval::Period {
        start,
        end,
        location,
    })
}

/// Only one report is evaluated at a time, on a blocking thread: a facility's server keeps
/// its other core for the clinic.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs a request now (on the caller's thread): PROCESSING, then COMPLETED with its result,
/// or FAILED with why. A request deleted meanwhile is left deleted.
pub fn run(
    store: &Store,
    catalog: &Catalog,
    uuid: &str,
    now: impl Fn() -> DateTime<Utc>,
) -> StoreResult<()> {
    run_evaluating(store, catalog, uuid, now, |report, period, locale| {
        eval::evaluate(store, catalog, report, period, locale).map_err(|e| e.to_string())
    })
}

/// `run`, the evaluation itself done by `evaluate` (the runtime's low-priority thread),
/// the request's writes on the caller's: a write must not wait for a thread that yields
/// the cores to everyone else while it holds the store's writer.
pub fn run_evaluating(
    store: &Store,
    catalog: &Catalog,
    uuid: &str,
    now: impl Fn() -> DateTime<Utc>,
    evaluate: impl FnOnce(&ReportDefinition, &eval::Period, &str) -> Result<eval::ReportData, String>,
) -> StoreResult<()> {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut r) = store::get(store, uuid)? else {
        return Ok(());
    };
    if r.status != REQUESTED && r.status != PROCESSING {
        return Ok(());
    }
    let locale = catalog.default_locale().to_string();
    r.status = PROCESSING.into();
    r.evaluate_start = Some(crate::wire::datetime_key(now()));
    store::put(store, &r)?;
    let Some(report) = catalog.content.reports.iter().find(|d| d.uuid == r.report) else {
        return fail(
            store,
            r,
            "The report definition is no longer in the content".into(),
            now,
        );
    };
    let period = match period_of(report, &r.parameters, catalog) {
        Ok(p) => p,
        Err(e) => return fail(store, r, e, now),
    };
    match evaluate(report, &period, &locale) {
        Ok(data) => {
            // Deleted while it ran: nothing to keep.
            if store::get(store, uuid)?.is_none() {
                return Ok(());
            }
            r.status = COMPLETED.into();
            r.evaluate_complete = Some(crate::wire::datetime_key(now()));
            store::put_with_result(store, &r, &data)
        }
        Err(e) => fail(store, r, e, now),
    }
}

fn fail(
    store: &Store,
    mut r: ReportRequestRecord,
    why: String,
    now: impl Fn() -> DateTime<Utc>,
) -> StoreResult<()> {
    tracing::warn!(request = %r.uuid, report = %r.report, %why, "a report run failed");
    r.status = FAILED.into();
    r.error = Some(why);
    r.evaluate_complete = Some(crate::wire::datetime_key(now()));
    store::put(store, &r)
}

/// What is due now: requests never run (asked before a restart, or made by a schedule),
/// and each monthly schedule's request for the month before if it has none yet. Answers
/// the uuids of the requests to run, oldest first.
pub fn due(store: &Store, today: NaiveDate, now: DateTime<Utc>) -> StoreResult<Vec<String>> {
    let all = store::all(store)?;
    let (start, end) = eval::previous_month(today);
    let mut made = Vec::new();
    for s in all.iter().filter(|r| r.status == SCHEDULED) {
        let already = all.iter().any(|r| {
            r.scheduled_by.as_deref() == Some(s.uuid.as_str())
                && r.parameters.get("startDate").map(String::as_str)
                    == Some(start.to_string().as_str())
        });
        if already {
            continue;
        }
        let mut parameters = s.parameters.clone();
        parameters.insert("startDate".into(), start.to_string());
        parameters.insert("endDate".into(), end.to_string());
        let r = ReportRequestRecord {
            v: 1,
            uuid: crate::store::record::new_uuid(),
            report: s.report.clone(),
            parameters,
            design: s.design.clone(),
            status: REQUESTED.into(),
            priority: s.priority.clone(),
            requested_by: s.requested_by.clone(),
            requested: crate::wire::datetime_key(now),
            evaluate_start: None,
            evaluate_complete: None,
            schedule: None,
            scheduled_by: Some(s.uuid.clone()),
            error: None,
            dhis2: None,
            audit: Audit::new(crate::store::record::DAEMON_USER, now),
        };
        store::put(store, &r)?;
        made.push(r);
    }
    // A run still PROCESSING an hour after it began was cut short (the runtime stopped);
    // a younger one is being run, here or by another runtime.
    let stale = crate::wire::datetime_key(now - chrono::Duration::hours(1));
    let mut out: Vec<String> = all
        .iter()
        .rev()
        .filter(|r| {
            r.status == REQUESTED
                || (r.status == PROCESSING
                    && r.evaluate_start
                        .as_deref()
                        .is_none_or(|s| s < stale.as_str()))
        })
        .map(|r| r.uuid.clone())
        .collect();
    out.extend(made.into_iter().map(|r| r.uuid));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monthly_crons_are_recognised() {
        assert!(is_monthly(MONTHLY));
        assert!(is_monthly("0 30 6 1 * ?"));
        // The reports app's "last day of the month".
        assert!(is_monthly("0 0 8 L * ?"));
        // Its "once": a year is given.
        assert!(!is_monthly("0 0 8 1 2 ? 2027"));
        assert!(!is_monthly("0 0 * * * ?"));
        assert!(!is_monthly("0 0 1 ? * MON"));
        assert!(!is_monthly("tous les mois"));
    }
}
