//! The stock reports, as the module's reports app runs them: `report` lists the reports
//! this server produces (under the module's published uuids), `batchjob` runs one with
//! its parameters and keeps the result as a CSV file, `batchjobartifact` downloads it.
//!
//! The module queues a job and a scheduler task writes its file within the minute; here
//! the file is written by the request that asks for it, from the store as it is then (items,
//! batches and movements read one after the other), and the
//! job is kept already `Completed` (or `Failed`, with the reason) together with its file in
//! one commit: the app lists it, polls it and offers its download as it does the module's.
//! Jobs expire as the module's do (`stockmanagement.batchJobExpiryInMinutes`, seven days
//! by default): an expired job is no longer listed nor downloadable, and the next job
//! asked for removes it with its file.
//!
//! Four reports are produced: stock status, stock-outs (items at or under a share of
//! their reorder level), consumption over a period, and expiring batches. Their columns
//! are the module's; their headers are the content's messages
//! (`stockmanagement.report.<column>`) in the caller's language, else the module's English.
//! The reports' names stay the module's English ones on the wire: the pinned app (3.2.1)
//! decides which parameters a report's form requires by comparing the name with them (the
//! front end's build translates them where the app shows them). The module's other reports
//! (receipts, issues, dispensing logs, forecasts…) are not offered: `report` does not list
//! them and a job asking for one is refused.

use crate::domains::stock::operation::{may_for, product};
use crate::domains::stock::rest::{bad, concept_name, location_name, with_ids};
use crate::domains::stock::store::*;
use crate::domains::stock::*;
use crate::http::AppState;
use crate::http::answer::values_answer;
use crate::http::body::only_known;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::store::record::Audit;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub const VIEW_REPORTS: &str = "App: stockmanagement.reports";
pub const MUTATE_REPORTS: &str = "Task: stockmanagement.reports.mutate";

/// How long a job and its file are kept, in minutes, unless the setting says otherwise
/// (the module's default; it never keeps one less than a day).
const DEFAULT_EXPIRY_MINUTES: i64 = 10080;
const EXPIRY_SETTING: &str = "stockmanagement.batchJobExpiryInMinutes";
/// Days in a month for the consumption rate (the module's
/// `stockmanagement.reportingCalculationsNoDaysInMonth`).
const DAYS_IN_MONTH: f64 = 30.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Status,
    StockOut,
    Consumption,
    Expiry,
}

struct ReportDef {
    uuid: &'static str,
    name: &'static str,
    system_name: &'static str,
    parameters: &'static [&'static str],
    kind: Kind,
}

/// The reports produced here, under the module's uuids and system names.
const REPORTS: &[ReportDef] = &[
    ReportDef {
        uuid: "8df8c605-6b37-11ed-93a2-806d973f13a9",
        name: "Stock Status Report",
        system_name: "STOCK_STATUS_REPORT",
        parameters: &[
            "Date",
            "StockItemCategory",
            "Location",
            "ChildLocations",
            "InventoryGroupBy",
        ],
        kind: Kind::Status,
    },
    ReportDef {
        uuid: "8df8c605-6b37-11ed-93a2-816d973f13a9",
        name: "Stock Consumption Report",
        system_name: "STOCK_CONSUMPTION_REPORT",
        parameters: &[
            "StartDate",
            "EndDate",
            "StockItemCategory",
            "Location",
            "ChildLocations",
            "InventoryGroupBy",
        ],
        kind: Kind::Consumption,
    },
    ReportDef {
        uuid: "8df8c605-6b37-11ed-93a2-906d973f13a9",
        name: "Stock-Out Report",
        system_name: "STOCK_OUT_REPORT",
        parameters: &[
            "Date",
            "StockItemCategory",
            "Location",
            "ChildLocations",
            "InventoryGroupBy",
            "MaxReorderLevelRatio",
        ],
        kind: Kind::StockOut,
    },
    ReportDef {
        uuid: "8df8c605-6b37-11ed-93a2-916d973f13a9",
        name: "Stock Expiry Report",
        system_name: "STOCK_EXPIRY_REPORT",
        parameters: &[
            "StartDate",
            "EndDate",
            "StockItemCategory",
            "Location",
            "ChildLocations",
        ],
        kind: Kind::Expiry,
    },
];

fn report_json(ctx: &Ctx, r: &ReportDef) -> Value {
    json!({
        "order": 1,
        // The module's name, in any language: the app decides which parameters a report's
        // form requires by comparing it with the module's English names.
        "name": r.name,
        "uuid": r.uuid,
        "parameters": r.parameters,
        "systemName": r.system_name,
        "links": [{"rel": "self", "uri": format!("{}/stockmanagement/report/{}", ctx.base, r.uuid)}],
    })
}

/// `GET report`: the reports this server produces.
pub async fn list_reports(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_REPORTS])?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let all: Vec<Value> = REPORTS.iter().map(|r| report_json(&ctx, r)).collect();
    let paging = Paging::from_query(&query)?;
    let total = all.len();
    let page: Vec<Value> = all
        .into_iter()
        .skip(paging.start)
        .take(paging.limit)
        .collect();
    values_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/report",
        &paging,
        &page,
        total,
    )
}

/// `GET report/{uuid}`.
pub async fn read_report(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&[VIEW_REPORTS])?;
    let r = REPORTS
        .iter()
        .find(|r| r.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    Ok(axum::Json(report_json(&ctx, r)).into_response())
}

// ---------------------------------------------------------------------------------------
// Jobs

/// A report run: what was asked, by whom, and how it ended. Its file is kept apart
/// (`JobFileRecord`), so that listing jobs reads no file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub v: u32,
    pub uuid: String,
    /// `Report`.
    pub job_type: String,
    /// `Completed` or `Failed` (a job is run when it is asked for).
    pub status: String,
    pub description: String,
    /// The parameters as the app sent them (Java properties text).
    pub parameters: String,
    /// The location the report is about; who may see the job is scoped to it.
    pub location_scope: Option<String>,
    pub start_time: String,
    pub end_time: String,
    /// Key form: when the job and its file are removed.
    pub expiration: String,
    pub exit_message: Option<String>,
    pub output_size: u64,
    /// Users who asked for it.
    pub owners: Vec<String>,
    pub audit: Audit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobFileRecord {
    pub v: u32,
    pub uuid: String,
    pub csv: String,
}

/// The parameters of a job, read from the Java properties text the app sends
/// (`param.report=…`, then `param.<Name>.value`, `.value.desc`, `.description`).
#[derive(Debug, Default)]
struct Parameters {
    report: String,
    values: BTreeMap<String, String>,
    descriptions: BTreeMap<String, String>,
}

/// Java properties text, as `java.util.Properties.load` reads what the app writes: one
/// `key=value` (or `key:value`, or `key value`) per line, `#` and `!` lines ignored,
/// backslash escapes.
fn properties(text: &str) -> Vec<(String, String)> {
    let unescape = |s: &str| {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('f') => out.push('\u{c}'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        out.push(ch);
                    }
                }
                Some(other) => out.push(other),
                None => {}
            }
        }
        out
    };
    let mut pairs = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let mut split = None;
        let mut escaped = false;
        for (i, c) in line.char_indices() {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if matches!(c, '=' | ':' | ' ' | '\t') {
                split = Some(i);
                break;
            }
        }
        let (key, value) = match split {
            Some(i) => {
                let rest = line[i..].trim_start_matches([' ', '\t']);
                let rest = rest
                    .strip_prefix(['=', ':'])
                    .unwrap_or(rest)
                    .trim_start_matches([' ', '\t']);
                (&line[..i], rest)
            }
            None => (line, ""),
        };
        pairs.push((unescape(key), unescape(value)));
    }
    pairs
}

fn invalid(field: &str, message: &str) -> ApiError {
    ApiError::invalid_field(field, "error.invalid", message)
}

fn read_parameters(text: &str) -> ApiResult<(&'static ReportDef, Parameters)> {
    let mut p = Parameters::default();
    let pairs = properties(text);
    if pairs.is_empty() {
        return Err(invalid("parameters", "parameters is required"));
    }
    for (key, value) in &pairs {
        if key == "param.report" {
            p.report = value.trim().to_string();
        }
    }
    if p.report.is_empty() {
        return Err(invalid("parameters", "param.report is required"));
    }
    let def = REPORTS
        .iter()
        .find(|r| r.system_name.eq_ignore_ascii_case(&p.report))
        .ok_or_else(|| {
            invalid(
                "parameters",
                &format!(
                    "Invalid value for report: {} is not produced here",
                    p.report
                ),
            )
        })?;
    for (key, value) in pairs {
        if key == "param.report" {
            continue;
        }
        let Some(rest) = key.strip_prefix("param.") else {
            return Err(invalid("parameters", "Invalid value for parameter name"));
        };
        let (name, field) = rest.split_once('.').unwrap_or((rest, ""));
        let Some(name) = def.parameters.iter().find(|n| n.eq_ignore_ascii_case(name)) else {
            return Err(invalid(
                "parameters",
                &format!("Parameter not supported: {name}"),
            ));
        };
        match field {
            "value" => {
                p.values.insert(name.to_string(), value);
            }
            "value.desc" => {
                p.descriptions.insert(name.to_string(), value);
            }
            "description" => {}
            _ => return Err(invalid("parameters", "Invalid value for parameter name")),
        }
    }
    Ok((def, p))
}

/// A date parameter: a date, or a datetime read as the day whose midnight is nearest (the
/// app sends the browser's local midnight in UTC: `2026-11-28T23:00:00.000Z` is the 29th
/// at Kinshasa).
fn report_day(name: &str, value: &str) -> ApiResult<NaiveDate> {
    let bad_date = || invalid("parameters", &format!("Invalid value for {name}"));
    if let Some(d) = value
        .get(..10)
        .filter(|_| value.len() == 10)
        .and_then(crate::wire::parse_date)
    {
        return Ok(d);
    }
    let t = crate::wire::parse_datetime(value).ok_or_else(bad_date)?;
    Ok((t + Duration::hours(12)).date_naive())
}

/// The first instant after `day`, key form: what `date <=` end of that day compares to.
fn after(day: NaiveDate) -> String {
    crate::wire::datetime_key(
        (day + Duration::days(1))
            .and_hms_opt(0, 0, 0)
            .expect("midnight exists")
            .and_utc(),
    )
}

fn start_of(day: NaiveDate) -> String {
    crate::wire::datetime_key(day.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc())
}

/// What a report is asked, checked.
struct Request {
    def: &'static ReportDef,
    date: Option<NaiveDate>,
    start: Option<NaiveDate>,
    end: Option<NaiveDate>,
    category: Option<String>,
    location: Option<String>,
    child_locations: bool,
    by_location: bool,
    by_batch: bool,
    max_reorder_ratio: Qty,
}

fn request(state: &AppState, text: &str) -> ApiResult<Request> {
    let (def, p) = read_parameters(text)?;
    let value = |name: &str| {
        p.values
            .get(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let day = |name: &str| value(name).map(|v| report_day(name, &v)).transpose();
    let catalog = state.catalog.load();
    let category = value("StockItemCategory");
    if let Some(c) = &category
        && catalog.concept(c).is_none()
    {
        return Err(invalid("parameters", "Invalid value for StockItemCategory"));
    }
    let location = value("Location");
    if let Some(l) = &location
        && catalog.location(l).is_none_or(|x| &x.uuid != l)
    {
        return Err(invalid("parameters", "Invalid value for Location"));
    }
    let child_locations = match value("ChildLocations").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(invalid("parameters", "Invalid value for ChildLocations")),
    };
    let (by_location, by_batch) = match value("InventoryGroupBy").as_deref() {
        None if def.kind == Kind::Expiry => (true, true),
        None | Some("StockItemOnly") => (false, false),
        Some("LocationStockItem") => (true, false),
        Some("LocationStockItemBatchNo") => (true, true),
        Some(_) => return Err(invalid("parameters", "Invalid value for InventoryGroupBy")),
    };
    let max_reorder_ratio = match value("MaxReorderLevelRatio") {
        Some(v) => Qty::parse(&v)
            .filter(|q| *q >= Qty::ZERO)
            .ok_or_else(|| invalid("parameters", "Invalid value for MaxReorderLevelRatio"))?,
        None => Qty::ZERO,
    };
    let r = Request {
        def,
        date: day("Date")?,
        start: day("StartDate")?,
        end: day("EndDate")?,
        category,
        location,
        child_locations,
        by_location,
        by_batch,
        max_reorder_ratio,
    };
    let needs = |name: &str, present: bool| {
        if def.parameters.contains(&name) && !present {
            Err(invalid("parameters", &format!("{name} is required")))
        } else {
            Ok(())
        }
    };
    needs("Date", r.date.is_some())?;
    needs("StartDate", r.start.is_some())?;
    needs("EndDate", r.end.is_some())?;
    needs("Location", r.location.is_some())?;
    if let (Some(s), Some(e)) = (r.start, r.end)
        && s > e
    {
        return Err(invalid(
            "parameters",
            "The start date is after the end date",
        ));
    }
    Ok(r)
}

// ---------------------------------------------------------------------------------------
// Producing the reports

/// The header of a column in the caller's language.
fn header(ctx: &Ctx, code: &str, english: &str) -> String {
    ctx.catalog
        .message(&format!("stockmanagement.report.{code}"), &ctx.locale)
        .unwrap_or(english)
        .to_string()
}

/// A CSV cell as the module writes them: quoted only when it must be.
fn cell(s: &str) -> String {
    if s.contains(['"', ',', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_line(out: &mut String, cells: &[String]) {
    let line: Vec<String> = cells.iter().map(|c| cell(c)).collect();
    out.push_str(&line.join(","));
    out.push('\n');
}

/// The unit a quantity is reported in, as the module chooses it: the item's default unit
/// for stock operations first, then the larger units first; the first of them the
/// quantity fills at least once, else the first. Items without units are reported in
/// base units.
fn preferred_unit(item: &ItemRecord, base_quantity: Qty) -> Option<&PackagingUnit> {
    let mut units: Vec<&PackagingUnit> = item
        .packaging_units
        .iter()
        .filter(|u| !u.voiding.voided)
        .collect();
    units.sort_by(|a, b| {
        let default =
            |u: &PackagingUnit| item.default_stock_operations_uom.as_deref() != Some(&u.uuid);
        (default(a), std::cmp::Reverse(a.factor)).cmp(&(default(b), std::cmp::Reverse(b.factor)))
    });
    units
        .iter()
        .find(|u| Qty(base_quantity.0.abs()) >= u.factor)
        .or(units.first())
        .copied()
}

fn format_day(key: &str) -> String {
    crate::wire::parse_date(key.get(..10).unwrap_or(key))
        .map(|d| d.format("%d-%b-%Y").to_string())
        .unwrap_or_default()
}

struct Names<'a> {
    ctx: &'a Ctx<'a>,
}

impl Names<'_> {
    fn text(v: Value) -> String {
        v.as_str().map(str::to_string).unwrap_or_default()
    }
    /// Generic name, trade name, common name, abbreviation, category.
    fn item_cells(&self, item: &ItemRecord) -> Vec<String> {
        let drug = item.drug.as_deref().and_then(|d| self.ctx.catalog.drug(d));
        let concept = Self::text(concept_name(self.ctx, Some(&item.concept)));
        vec![
            drug.map_or_else(|| concept.clone(), |d| d.name.clone()),
            if drug.is_some() {
                concept
            } else {
                String::new()
            },
            item.common_name.clone().unwrap_or_default(),
            item.acronym.clone().unwrap_or_default(),
            Self::text(concept_name(self.ctx, item.category.as_deref())),
        ]
    }
    fn unit(&self, u: Option<&PackagingUnit>) -> String {
        u.map(|u| Self::text(concept_name(self.ctx, Some(&u.packaging_uom))))
            .unwrap_or_default()
    }
    fn location(&self, uuid: &str) -> String {
        Self::text(location_name(self.ctx, uuid))
    }
}

/// The report's locations: the one asked, with those of its descendants the asker may see
/// reports of (`allowed`) when asked; every location when none is.
fn parties(state: &AppState, r: &Request, allowed: &dyn Fn(&str) -> bool) -> Option<Vec<String>> {
    let root = r.location.as_ref()?;
    if !r.child_locations {
        return Some(vec![root.clone()]);
    }
    let mut all = crate::domains::stock::operation::with_descendants(&state.catalog.load(), root);
    all.retain(|l| l == root || allowed(l));
    Some(all)
}

type GroupKey = (String, String, String);

fn group_key(r: &Request, t: &TransactionRecord) -> GroupKey {
    (
        if r.by_location {
            t.party.clone()
        } else {
            String::new()
        },
        t.stock_item.clone(),
        if r.by_batch {
            t.batch.clone()
        } else {
            String::new()
        },
    )
}

#[derive(Default, Clone, Copy)]
struct Sums {
    opening: Qty,
    received: Qty,
    consumed: Qty,
    closing: Qty,
}

fn add(a: &mut Qty, b: Qty) {
    *a = a.checked_add(b).unwrap_or(*a);
}

/// The report's file, from the store as it is now.
fn produce(
    state: &AppState,
    ctx: &Ctx,
    r: &Request,
    allowed: &dyn Fn(&str) -> bool,
) -> ApiResult<String> {
    let items: HashMap<String, ItemRecord> = items(&state.store)?
        .into_iter()
        .map(|i| (i.uuid.clone(), i))
        .collect();
    let batches: HashMap<String, BatchRecord> = batches(&state.store)?
        .into_iter()
        .map(|b| (b.uuid.clone(), b))
        .collect();
    let parties = parties(state, r, allowed);
    let catalog = state.catalog.load();
    let in_scope = |party: &str, item: &str| {
        parties.as_ref().map_or_else(
            || catalog.location(party).is_some(),
            |p| p.iter().any(|x| x == party),
        ) && items.get(item).is_some_and(|i| {
            r.category
                .as_ref()
                .is_none_or(|c| i.category.as_ref() == Some(c))
        })
    };
    let names = Names { ctx };
    let mut out = String::new();
    let h = |code: &str, english: &str| header(ctx, code, english);
    match r.def.kind {
        Kind::Status | Kind::StockOut | Kind::Consumption => {
            let consumption = r.def.kind == Kind::Consumption;
            let (start, end) = if consumption {
                (r.start.map(start_of), r.end.map(after))
            } else {
                (None, r.date.map(after))
            };
            let mut groups: BTreeMap<GroupKey, Sums> = BTreeMap::new();
            for t in all_transactions(&state.store)? {
                if !in_scope(&t.party, &t.stock_item) || end.as_ref().is_some_and(|e| &t.date >= e)
                {
                    continue;
                }
                let s = groups.entry(group_key(r, &t)).or_default();
                add(&mut s.closing, t.quantity);
                if start.as_ref().is_some_and(|s| &t.date < s) {
                    add(&mut s.opening, t.quantity);
                } else if t.quantity > Qty::ZERO {
                    add(&mut s.received, t.quantity);
                } else {
                    add(&mut s.consumed, -t.quantity);
                }
            }
            let mut head = vec![
                h("genericname", "Generic Name"),
                h("tradename", "Trade Name"),
                h("commonname", "Common Name"),
                h("acronym", "Abbreviation"),
                h("category", "Category"),
            ];
            if r.by_location {
                head.push(h("location", "Location"));
            }
            if r.by_batch {
                head.push(h("batchno", "Batch No"));
                head.push(h("batchexpiry", "Batch Expiry"));
            }
            if consumption {
                head.extend([
                    h("openingquantity", "Opening Quantity"),
                    h("quantityreceived", "Quantity Received"),
                    h("quantityconsumed", "Quantity Consumed"),
                    h("closingquantity", "Closing Quantity"),
                    h("consumptionrate", "Consumption Rate"),
                ]);
            } else {
                head.push(h("quantity", "Quantity"));
            }
            head.extend([
                h("qtyunit", "Unit"),
                h("packsize", "Pack Size"),
                h("reorderlevel", "Reorder Level"),
                h("reorderlevelunit", "Reorder Level Unit"),
                h("reorderlevelpacksize", "Reorder Level Pack Size"),
                h("drugid", "Drug Id"),
                h("conceptid", "Concept Id"),
            ]);
            csv_line(&mut out, &head);
            let days = match (r.start, r.end) {
                (Some(s), Some(e)) => ((e - s).num_days() + 1).max(1) as f64,
                _ => 1.0,
            };
            for ((party, item_uuid, batch_uuid), sums) in groups {
                let Some(item) = items.get(&item_uuid) else {
                    continue;
                };
                let reorder_unit = item.reorder_level_uom.as_deref().and_then(|u| item.unit(u));
                if r.def.kind == Kind::StockOut {
                    // Kept when the stock is at or under the share of the reorder level.
                    let level = item.reorder_level.map_or(Qty::ZERO, |l| {
                        product(l, reorder_unit.map_or(Qty(10_000), |u| u.factor))
                    });
                    let hundred = Qty(100 * 10_000);
                    let threshold = product(level, r.max_reorder_ratio).per(hundred);
                    if sums.closing > threshold {
                        continue;
                    }
                }
                let unit = preferred_unit(
                    item,
                    if consumption {
                        sums.opening
                    } else {
                        sums.closing
                    },
                );
                let factor = unit.map_or(Qty(10_000), |u| u.factor);
                let mut row = names.item_cells(item);
                if r.by_location {
                    row.push(names.location(&party));
                }
                if r.by_batch {
                    let b = batches.get(&batch_uuid);
                    row.push(b.map(|b| b.batch_no.clone()).unwrap_or_default());
                    row.push(
                        b.and_then(|b| b.expiration.as_deref())
                            .map(format_day)
                            .unwrap_or_default(),
                    );
                }
                if consumption {
                    let consumed = sums.consumed.per(factor);
                    let rate = consumed.0 as f64 / 10_000.0 / (days / DAYS_IN_MONTH);
                    row.extend([
                        sums.opening.per(factor).to_string(),
                        sums.received.per(factor).to_string(),
                        consumed.to_string(),
                        sums.closing.per(factor).to_string(),
                        format!("{rate:.2}"),
                    ]);
                } else {
                    row.push(sums.closing.per(factor).to_string());
                }
                row.push(names.unit(unit));
                row.push(unit.map(|u| u.factor.to_string()).unwrap_or_default());
                row.push(
                    item.reorder_level
                        .map(|l| l.to_string())
                        .unwrap_or_default(),
                );
                row.push(names.unit(reorder_unit));
                row.push(
                    reorder_unit
                        .map(|u| u.factor.to_string())
                        .unwrap_or_default(),
                );
                row.push(item.drug.clone().unwrap_or_default());
                row.push(item.concept.clone());
                csv_line(&mut out, &row);
            }
        }
        Kind::Expiry => {
            let (from, to) = (
                r.start.map(|d| d.to_string()).unwrap_or_default(),
                r.end.map(|d| d.to_string()).unwrap_or_default(),
            );
            let expiring = |b: &BatchRecord| {
                b.expiration.as_deref().is_some_and(|e| {
                    let day = e.get(..10).unwrap_or(e);
                    day >= from.as_str() && day <= to.as_str()
                })
            };
            // Today's stock of each expiring batch at each location, soonest first.
            let mut held: BTreeMap<(String, String, String), Qty> = BTreeMap::new();
            for b in balances(&state.store, None)? {
                let Some(batch) = batches.get(&b.batch).filter(|x| expiring(x)) else {
                    continue;
                };
                if !in_scope(&b.party, &b.item) {
                    continue;
                }
                let key = (
                    batch.expiration.clone().unwrap_or_default(),
                    b.batch.clone(),
                    b.party.clone(),
                );
                add(held.entry(key).or_insert(Qty::ZERO), b.quantity);
            }
            csv_line(
                &mut out,
                &[
                    h("genericname", "Generic Name"),
                    h("tradename", "Trade Name"),
                    h("commonname", "Common Name"),
                    h("acronym", "Abbreviation"),
                    h("category", "Category"),
                    h("location", "Location"),
                    h("batchno", "Batch No"),
                    h("datecreated", "Date Created"),
                    h("batchexpiry", "Batch Expiry"),
                    h("quantity", "Quantity"),
                    h("qtyunit", "Unit"),
                    h("packsize", "Pack Size"),
                    h("drugid", "Drug Id"),
                    h("conceptid", "Concept Id"),
                ],
            );
            for ((_, batch_uuid, party), quantity) in held {
                if quantity <= Qty::ZERO {
                    continue;
                }
                let Some(batch) = batches.get(&batch_uuid) else {
                    continue;
                };
                let Some(item) = items.get(&batch.stock_item) else {
                    continue;
                };
                let unit = preferred_unit(item, quantity);
                let factor = unit.map_or(Qty(10_000), |u| u.factor);
                let mut row = names.item_cells(item);
                row.push(names.location(&party));
                row.push(batch.batch_no.clone());
                row.push(
                    crate::wire::parse_key(&batch.audit.date_created)
                        .map(|t| t.format("%d-%b-%Y %H:%M:%S").to_string())
                        .unwrap_or_default(),
                );
                row.push(
                    batch
                        .expiration
                        .as_deref()
                        .map(format_day)
                        .unwrap_or_default(),
                );
                row.push(quantity.per(factor).to_string());
                row.push(names.unit(unit));
                row.push(unit.map(|u| u.factor.to_string()).unwrap_or_default());
                row.push(item.drug.clone().unwrap_or_default());
                row.push(item.concept.clone());
                csv_line(&mut out, &row);
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// The batch job resource

fn job_json(ctx: &Ctx, j: &JobRecord) -> Value {
    let (given, family) = crate::domains::stock::rest::user_names(ctx, Some(&j.audit.creator));
    let owners: Vec<Value> = j
        .owners
        .iter()
        .map(|o| {
            let (g, f) = crate::domains::stock::rest::user_names(ctx, Some(o));
            json!({
                "ownerUserUuid": o,
                "ownerGivenName": g,
                "ownerFamilyName": f,
                "dateCreated": crate::wire::wire_datetime(&j.audit.date_created),
                "uuid": format!("{}-{o}", j.uuid),
                "batchJobUuid": j.uuid,
            })
        })
        .collect();
    json!({
        "uuid": j.uuid,
        "batchJobType": j.job_type,
        "status": j.status,
        "description": j.description,
        "startTime": crate::wire::wire_datetime(&j.start_time),
        "endTime": crate::wire::wire_datetime(&j.end_time),
        "expiration": crate::wire::wire_datetime(&j.expiration),
        "parameters": j.parameters,
        "privilegeScope": VIEW_REPORTS,
        "locationScope": j.location_scope.as_deref().map_or(Value::Null, |l| location_name(ctx, l)),
        "locationScopeUuid": j.location_scope,
        "executionState": null,
        "cancelReason": null,
        "cancelledByUuid": null,
        "cancelledByGivenName": null,
        "cancelledByFamilyName": null,
        "cancelledDate": null,
        "exitMessage": j.exit_message,
        "completedDate": (j.status == "Completed").then(|| crate::wire::wire_datetime(&j.end_time)),
        "dateCreated": crate::wire::wire_datetime(&j.audit.date_created),
        "creatorUuid": j.audit.creator,
        "creatorGivenName": given,
        "creatorFamilyName": family,
        "outputArtifactSize": j.output_size,
        "outputArtifactFileExt": "csv",
        "outputArtifactViewable": j.output_size <= 1 << 20,
        "owners": owners,
        "links": [{"rel": "self", "uri": format!("{}/stockmanagement/batchjob/{}", ctx.base, j.uuid)}],
    })
}

/// Whether the caller may see a job: the reports' privilege at its location, through a
/// user role scope, as the module scopes them (a job without a location only with the
/// privilege).
fn may_see(state: &AppState, caller: &Caller, scopes: &[ScopeRecord], j: &JobRecord) -> bool {
    match &j.location_scope {
        Some(l) => may_for(state, caller, scopes, l, None, VIEW_REPORTS),
        None => caller.grants.has(VIEW_REPORTS),
    }
}

fn live(j: &JobRecord, now: &str) -> bool {
    j.expiration.as_str() > now
}

/// `GET batchjob[?status=a,b][&locationScopeUuid=][&dateCreatedMin=][&dateCreatedMax=]`:
/// the caller's reports' jobs, newest first.
pub async fn list_jobs(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_REPORTS])?;
    let paging = Paging::from_query(&query)?;
    let statuses: Option<Vec<String>> = param(&query, "status")
        .filter(|s| !s.is_empty())
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    let location = param(&query, "locationScopeUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let bound = |name| -> ApiResult<Option<String>> {
        param(&query, name)
            .filter(|s| !s.is_empty())
            .map(|s| {
                crate::wire::parse_datetime(s)
                    .map(crate::wire::datetime_key)
                    .ok_or_else(|| bad(format!("{name} is a date")))
            })
            .transpose()
    };
    let (min, max) = (bound("dateCreatedMin")?, bound("dateCreatedMax")?);
    let st = state.clone();
    let (jobs, scopes) = blocking(move || Ok((jobs(&st.store)?, scopes(&st.store)?))).await?;
    let now = crate::wire::datetime_key(Utc::now());
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let mut shown: Vec<&JobRecord> = jobs
        .iter()
        .filter(|j| live(j, &now) && may_see(&state, &caller, &scopes, j))
        .filter(|j| statuses.as_ref().is_none_or(|s| s.contains(&j.status)))
        .filter(|j| {
            location
                .as_ref()
                .is_none_or(|l| j.location_scope.as_ref() == Some(l))
        })
        .filter(|j| min.as_ref().is_none_or(|m| &j.audit.date_created >= m))
        .filter(|j| max.as_ref().is_none_or(|m| &j.audit.date_created <= m))
        .collect();
    shown.sort_by(|a, b| (&b.audit.date_created, &b.uuid).cmp(&(&a.audit.date_created, &a.uuid)));
    let total = shown.len();
    let page: Vec<Value> = shown
        .into_iter()
        .skip(paging.start)
        .take(paging.limit)
        .map(|j| job_json(&ctx, j))
        .collect();
    values_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/batchjob",
        &paging,
        &page,
        total,
    )
}

fn visible_job(state: &AppState, caller: &Caller, uuid: &str) -> ApiResult<JobRecord> {
    let j = job(&state.store, uuid)?.ok_or(ApiError::NotFound)?;
    let now = crate::wire::datetime_key(Utc::now());
    if !live(&j, &now) || !may_see(state, caller, &scopes(&state.store)?, &j) {
        return Err(ApiError::NotFound);
    }
    Ok(j)
}

/// `GET batchjob/{uuid}`.
pub async fn read_job(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&[VIEW_REPORTS])?;
    let st = state.clone();
    let c = caller.clone();
    let j = blocking(move || visible_job(&st, &c, &uuid)).await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    Ok(axum::Json(job_json(&ctx, &j)).into_response())
}

/// `POST batchjob` (`batchJobType`: `Report`, `description`, `parameters`): the report
/// produced and kept with its job, `201` with the job.
pub async fn create_job(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_REPORTS])?;
    only_known(&body, &["batchJobType", "description", "parameters"])?;
    match body.get("batchJobType").and_then(Value::as_str) {
        None => return Err(invalid("batchJobType", "Batch Job Type is required")),
        Some("Report") => {}
        Some(_) => return Err(invalid("batchJobType", "Invalid value for Batch Job Type")),
    }
    let description = body
        .get("description")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| invalid("description", "description is required"))?
        .to_string();
    if description.chars().count() > 255 {
        return Err(invalid("description", "description exceeds the 255 limit"));
    }
    let parameters = body
        .get("parameters")
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| invalid("parameters", "parameters is required"))?
        .to_string();
    if parameters.chars().count() > 5000 {
        return Err(invalid("parameters", "parameters exceeds the 5000 limit"));
    }
    let asked = request(&state, &parameters)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let c = caller.clone();
    let j = blocking(move || {
        let scopes = scopes(&st.store)?;
        let allowed = |l: &str| may_for(&st, &c, &scopes, l, None, VIEW_REPORTS);
        if let Some(l) = &asked.location
            && !allowed(l)
        {
            return Err(bad(
                "You do not have a user role scope for the reports at this location",
            ));
        }
        let started = Utc::now();
        let catalog = st.catalog.load();
        let ctx = c.ctx(&st, &catalog);
        let (status, exit, csv) = match produce(&st, &ctx, &asked, &allowed) {
            Ok(csv) => ("Completed", None, csv),
            Err(ApiError::Internal(e)) => return Err(ApiError::Internal(e)),
            Err(e) => ("Failed", Some(e.to_string()), String::new()),
        };
        let minutes = st
            .setting(EXPIRY_SETTING)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(DEFAULT_EXPIRY_MINUTES)
            .max(1440);
        let ended = Utc::now();
        let j = JobRecord {
            v: 1,
            uuid: uuid::Uuid::new_v4().to_string(),
            job_type: "Report".into(),
            status: status.into(),
            description,
            parameters,
            location_scope: asked.location.clone(),
            start_time: crate::wire::datetime_key(started),
            end_time: crate::wire::datetime_key(ended),
            expiration: crate::wire::datetime_key(started + Duration::minutes(minutes)),
            exit_message: exit,
            output_size: csv.len() as u64,
            owners: vec![user.clone()],
            audit: Audit::new(&user, started),
        };
        let now = j.start_time.clone();
        let expired: Vec<String> = jobs(&st.store)?
            .into_iter()
            .filter(|x| !live(x, &now))
            .map(|x| x.uuid)
            .collect();
        st.store.write(|txn| {
            for uuid in &expired {
                remove_job_in(txn, uuid)?;
            }
            put_in(txn, JOBS, &j.uuid, &j)?;
            put_in(
                txn,
                JOB_FILES,
                &j.uuid,
                &JobFileRecord {
                    v: 1,
                    uuid: j.uuid.clone(),
                    csv: csv.clone(),
                },
            )
        })?;
        Ok(j)
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    Ok((StatusCode::CREATED, axum::Json(job_json(&ctx, &j))).into_response())
}

/// `DELETE batchjob/{uuid}[?ids=a,b]`: the module cancels jobs still waiting or running;
/// here none is (a job has ended when it is answered), so the jobs are removed with their
/// files, as the module removes them once expired.
pub async fn delete_job(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_REPORTS])?;
    let targets = with_ids(uuid, &query);
    let st = state.clone();
    let c = caller.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        for t in &targets {
            visible_job(&st, &c, t)?;
        }
        st.store.write(|txn| {
            for t in &targets {
                remove_job_in(txn, t)?;
            }
            Ok(())
        })?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET batchjobartifact?id=<job>[&download=1]`: the job's file, as the module's
/// controller sends it (`<description>-<yyyyMMddHHmmss>.csv`).
pub async fn artifact(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_REPORTS])?;
    let id = param(&query, "id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad("id is required"))?
        .to_string();
    let download = param(&query, "download").is_some();
    let st = state.clone();
    let c = caller.clone();
    let (j, file) = blocking(move || {
        let j = visible_job(&st, &c, &id)?;
        let file = job_file(&st.store, &id)?.ok_or(ApiError::NotFound)?;
        Ok((j, file))
    })
    .await?;
    if j.status != "Completed" {
        return Err(ApiError::NotFound);
    }
    let mut name: String = j.description.chars().filter(|c| *c != '"').collect();
    if name.chars().count() > 30 {
        name = name.chars().take(29).collect();
    }
    let stamp = crate::wire::parse_key(&j.audit.date_created)
        .map(|t: DateTime<Utc>| t.format("%Y%m%d%H%M%S").to_string())
        .unwrap_or_default();
    let disposition = format!(
        "attachment; filename=\"{}-{stamp}.csv\"; filename*=UTF-8''{}-{stamp}.csv",
        name.chars()
            .map(|c| if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '_'
            })
            .collect::<String>(),
        percent_encode(&name),
    );
    let content_type = if download {
        "application/octet-stream"
    } else {
        "text/csv; charset=utf-8"
    };
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        file.csv,
    )
        .into_response())
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
