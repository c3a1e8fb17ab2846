//! The reportingrest module's REST surface over the content's reports, as the O3 reports
//! app and external jobs (the DHIS2 OpenFn job) call it: `reportingrest/reportDefinition`,
//! `reportDesign`, `reportRequest` (run, list by status, delete), `reportdata/{uuid}`
//! (evaluated at once), `saveReport`, `downloadReport`, `downloadMultipleReports`,
//! `reportDefinitionsWithScheduledRequests`, and this distribution's
//! `reportRequest/{uuid}/dhis2` (send a run's figures to DHIS2).
//!
//! Privileges are the reporting module's: View Reports to read definitions, runs and
//! files; Run Reports to run one (a request or `reportdata`) and to send figures; Manage
//! Reports to delete a run; Manage Scheduled Report Tasks to schedule one.

use crate::domains::report::eval::{Cell, DataSetData, ReportData};
use crate::domains::report::{self as report, ReportRequestRecord, store};
use crate::http::answer::user_ref;
use crate::http::body::only_known;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging};
use crate::http::{AppState, Caller, JsonBody, QueryPairs, blocking, param};
use crate::store::record::Audit;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use model::reports::{DesignFormat, ReportDefinition, ReportParameter};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

const VIEW: &str = "View Reports";
const RUN: &str = "Run Reports";
const MANAGE: &str = "Manage Reports";
const SCHEDULE: &str = "Manage Scheduled Report Tasks";

fn base(ctx: &Ctx) -> String {
    format!("{}/reportingrest", ctx.base)
}

fn text_in(texts: &model::Localized, ctx: &Ctx) -> String {
    let fallbacks: Vec<&str> = ctx.fallbacks.iter().map(String::as_str).collect();
    model::display_in(texts, &ctx.locale, &fallbacks)
        .unwrap_or_default()
        .to_string()
}

fn parameter_label(p: ReportParameter, ctx: &Ctx) -> &'static str {
    let fr = ctx.locale.starts_with("fr");
    match (p, fr) {
        (ReportParameter::StartDate, true) => "Date de début du rapport",
        (ReportParameter::StartDate, false) => "Reporting start date",
        (ReportParameter::EndDate, true) => "Date de fin du rapport",
        (ReportParameter::EndDate, false) => "Reporting end date",
        (ReportParameter::Location, true) => "Lieu",
        (ReportParameter::Location, false) => "Location",
    }
}

fn parameter_json(p: ReportParameter, ctx: &Ctx) -> Value {
    let kind = match p {
        ReportParameter::Location => "org.openmrs.Location",
        _ => "java.util.Date",
    };
    json!({
        "name": p.name(),
        "label": parameter_label(p, ctx),
        "type": kind,
        "collectionType": null,
        "required": true,
        "defaultValue": null,
    })
}

fn definition_json(d: &ReportDefinition, ctx: &Ctx, rep: &str) -> Value {
    let name = text_in(&d.name, ctx);
    let self_link = format!("{}/reportDefinition/{}", base(ctx), d.uuid);
    if rep == "ref" {
        return json!({"uuid": d.uuid, "display": name,
            "links": [{"rel": "self", "uri": self_link, "resourceAlias": "reportDefinition"}]});
    }
    let description = text_in(&d.description, ctx);
    let mut links =
        vec![json!({"rel": "self", "uri": self_link, "resourceAlias": "reportDefinition"})];
    if rep == "default" {
        links.push(json!({"rel": "full", "uri": format!("{self_link}?v=full"), "resourceAlias": "reportDefinition"}));
    }
    json!({
        "uuid": d.uuid,
        "name": name,
        "display": name,
        "description": description,
        "descriptionDisplay": description,
        "parameters": d.parameters.iter().map(|p| parameter_json(*p, ctx)).collect::<Vec<_>>(),
        "links": links,
        "resourceVersion": "1.8",
    })
}

fn renderer_of(format: DesignFormat) -> &'static str {
    match format {
        DesignFormat::Csv => "org.openmrs.module.reporting.report.renderer.CsvReportRenderer",
        DesignFormat::Excel => "org.openmrs.module.reporting.report.renderer.ExcelTemplateRenderer",
    }
}

fn design_json(d: &ReportDefinition, design: &model::reports::ReportDesign, ctx: &Ctx) -> Value {
    json!({
        "uuid": design.uuid,
        "name": design.name,
        "display": design.name,
        "rendererType": renderer_of(design.format),
        "reportDefinition": definition_json(d, ctx, "ref"),
        "links": [{"rel": "self", "uri": format!("{}/reportDesign/{}", base(ctx), design.uuid), "resourceAlias": "reportDesign"}],
        "resourceVersion": "1.8",
    })
}

fn rendering_mode(d: &ReportDefinition, design: Option<&str>) -> Value {
    match design.and_then(|u| d.designs.iter().find(|x| x.uuid == u)) {
        Some(x) => json!({
            "renderer": renderer_of(x.format),
            "argument": x.uuid,
            "label": x.name,
            "sortWeight": 0,
        }),
        None => Value::Null,
    }
}

fn request_json(
    r: &ReportRequestRecord,
    d: Option<&ReportDefinition>,
    ctx: &Ctx,
    rep: &str,
) -> Value {
    let self_link = format!("{}/reportRequest/{}", base(ctx), r.uuid);
    let display = d.map(|d| text_in(&d.name, ctx)).unwrap_or_default();
    let at = |k: &Option<String>| {
        k.as_deref()
            .map(crate::wire::wire_datetime)
            .unwrap_or(Value::Null)
    };
    let mut out = json!({
        "uuid": r.uuid,
        "display": display,
        "parameterizable": match d {
            Some(d) => definition_json(d, ctx, "default"),
            None => json!({"uuid": r.report}),
        },
        "parameterMappings": mappings_json(&r.parameters, ctx),
        "renderingMode": d.map(|d| rendering_mode(d, r.design.as_deref())).unwrap_or(Value::Null),
        "priority": r.priority,
        "schedule": r.schedule,
        "requestDate": crate::wire::wire_datetime(&r.requested),
        "status": r.status,
        "evaluateStartDatetime": at(&r.evaluate_start),
        "evaluateCompleteDatetime": at(&r.evaluate_complete),
        "renderCompleteDatetime": at(&r.evaluate_complete),
        "description": r.error,
        "requestedBy": requester(&r.requested_by, ctx),
        "dhis2": r.dhis2.as_ref().map(|s| json!({
            "status": s.status, "message": s.message, "period": s.period,
            "orgUnit": s.org_unit, "date": crate::wire::wire_datetime(&s.at),
            "by": user_ref(&s.by, ctx),
        })),
        "links": [{"rel": "self", "uri": self_link, "resourceAlias": "reportRequest"}],
        "resourceVersion": "1.8",
    });
    if rep == "ref" {
        out = json!({"uuid": r.uuid, "display": display, "links": out["links"].clone()});
    }
    out
}

/// The requester as the reports app reads it: a user reference with the person's name.
fn requester(uuid: &str, ctx: &Ctx) -> Value {
    let mut v = user_ref(uuid, ctx);
    if let Ok(Some(u)) = ctx.store.user_shared(uuid) {
        v["person"] = json!({"uuid": u.person_uuid, "display": u.person_name});
    } else {
        v["person"] = json!({"uuid": null, "display": ""});
    }
    v
}

/// A run's parameter values as the module's converted values: dates as days, a location
/// as a reference with its name.
fn mappings_json(parameters: &BTreeMap<String, String>, ctx: &Ctx) -> Value {
    let mut out = Map::new();
    for (k, v) in parameters {
        let value = if k == "location" {
            let display = ctx.catalog.location(v).map(|l| l.name.clone());
            json!({"uuid": v, "display": display})
        } else {
            json!(v)
        };
        out.insert(k.clone(), value);
    }
    Value::Object(out)
}

fn rep_name(query: &[(String, String)]) -> &'static str {
    match param(query, "v") {
        Some("ref") => "ref",
        Some("full") => "full",
        Some(v) if v.starts_with("custom:") => "full",
        _ => "default",
    }
}

fn find_report<'c>(
    catalog: &'c crate::catalog::Catalog,
    uuid: &str,
) -> Option<&'c ReportDefinition> {
    catalog.content.reports.iter().find(|d| d.uuid == uuid)
}

/// `GET reportingrest/reportDefinition[?q=]`.
pub async fn definitions(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let q = param(&query, "q").map(str::to_lowercase);
    let rep = rep_name(&query);
    let mut list: Vec<&ReportDefinition> = catalog
        .content
        .reports
        .iter()
        .filter(|d| {
            q.as_deref()
                .is_none_or(|q| text_in(&d.name, &ctx).to_lowercase().contains(q))
        })
        .collect();
    list.sort_by_key(|d| text_in(&d.name, &ctx));
    let results: Vec<Value> = list.iter().map(|d| definition_json(d, &ctx, rep)).collect();
    values(
        &state,
        &caller,
        &query,
        "/reportingrest/reportDefinition",
        results,
    )
}

fn values(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
    all: Vec<Value>,
) -> ApiResult<Response> {
    let paging = Paging::from_query(query)?;
    let total = all.len();
    let page: Vec<Value> = all
        .into_iter()
        .skip(paging.start)
        .take(paging.limit)
        .collect();
    crate::http::answer::values_answer(state, caller, query, path, &paging, &page, total)
}

/// `GET reportingrest/reportDefinition/{uuid}`.
pub async fn definition(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let d = find_report(&catalog, &uuid).ok_or(ApiError::NotFound)?;
    Ok(crate::http::ok(definition_json(d, &ctx, rep_name(&query))))
}

/// `GET reportingrest/reportDesign?reportDefinitionUuid=` (the designs of one report).
pub async fn designs(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let Some(uuid) = param(&query, "reportDefinitionUuid").filter(|u| !u.is_empty()) else {
        return Err(ApiError::BadRequest(
            "reportDefinitionUuid parameter is required".into(),
        ));
    };
    let d = find_report(&catalog, uuid).ok_or_else(|| {
        ApiError::BadRequest(format!("ReportDefinition not found with uuid: {uuid}"))
    })?;
    let results: Vec<Value> = d.designs.iter().map(|x| design_json(d, x, &ctx)).collect();
    values(
        &state,
        &caller,
        &query,
        "/reportingrest/reportDesign",
        results,
    )
}

/// `GET reportingrest/reportDesign/{uuid}`.
pub async fn design(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let found = catalog
        .content
        .reports
        .iter()
        .find_map(|d| d.designs.iter().find(|x| x.uuid == uuid).map(|x| (d, x)));
    let (d, x) = found.ok_or(ApiError::NotFound)?;
    Ok(crate::http::ok(design_json(d, x, &ctx)))
}

/// `GET reportingrest/reportRequest[?status=A,B][&reportDefinition=][&sortBy=name]`:
/// newest first, paged (`startIndex` is a page number from 1, as the module reads it).
pub async fn requests(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    const STATUSES: &[&str] = &[
        "REQUESTED",
        "SCHEDULED",
        "PROCESSING",
        "FAILED",
        "COMPLETED",
        "SCHEDULE_COMPLETED",
        "SAVED",
    ];
    let statuses: Option<Vec<String>> = match param(&query, "status")
        .filter(|s| !s.trim().is_empty())
    {
        None => None,
        Some(s) => {
            let list: Vec<String> = s.split(',').map(|x| x.trim().to_uppercase()).collect();
            if let Some(bad) = list.iter().find(|x| !STATUSES.contains(&x.as_str())) {
                return Err(ApiError::BadRequest(format!(
                    "No enum constant org.openmrs.module.reporting.report.ReportRequest.Status.{bad}"
                )));
            }
            Some(list)
        }
    };
    let of_report = param(&query, "reportDefinition").map(str::to_string);
    let st = state.clone();
    let all = blocking(move || Ok(store::all(&st.store)?)).await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let mut chosen: Vec<ReportRequestRecord> = all
        .into_iter()
        .filter(|r| statuses.as_ref().is_none_or(|s| s.contains(&r.status)))
        .filter(|r| of_report.as_deref().is_none_or(|u| r.report == u))
        .collect();
    if param(&query, "sortBy") == Some("name") {
        chosen.sort_by_key(|r| find_report(&catalog, &r.report).map(|d| text_in(&d.name, &ctx)));
    }
    let rep = rep_name(&query);
    // The module reads `startIndex` as a page number (from 1) of `limit` items.
    let limit = param(&query, "limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(50)
        .clamp(1, 100);
    let page = param(&query, "startIndex")
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let total = chosen.len();
    let results: Vec<Value> = chosen
        .iter()
        .skip((page - 1) * limit)
        .take(limit)
        .map(|r| request_json(r, find_report(&catalog, &r.report), &ctx, rep))
        .collect();
    let mut body = json!({"results": results});
    if page * limit < total {
        body["links"] = json!([{"rel": "next", "uri": format!("{}/reportRequest?startIndex={}&limit={limit}", base(&ctx), page + 1)}]);
    }
    if crate::http::answer::flag(&query, "totalCount") == Some(true) {
        body["totalCount"] = json!(total);
    }
    Ok(crate::http::ok(body))
}

/// `GET reportingrest/reportRequest/{uuid}`.
pub async fn request(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let st = state.clone();
    let r = blocking(move || Ok(store::get(&st.store, &uuid)?))
        .await?
        .ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    Ok(crate::http::ok(request_json(
        &r,
        find_report(&catalog, &r.report),
        &ctx,
        rep_name(&query),
    )))
}

/// The day a date parameter names. The reports app sends the browser's local midnight
/// (`2025-12-31T23:00:00.000Z` for 1 January in Kinshasa, `…T00:00:00.000+01:00` from its
/// data page): the day whose midnight is nearest is the one picked, whatever the zone
/// (within twelve hours of UTC); a date alone is that date.
pub fn day_named(text: &str) -> Option<chrono::NaiveDate> {
    let t = text.trim();
    if t.len() <= 10 {
        return crate::wire::parse_date(t);
    }
    crate::wire::parse_datetime(t).map(|at| (at + chrono::Duration::hours(12)).date_naive())
}

/// The parameters of a request body (`{"startDate": "2026-01-01", …}`), as texts.
fn parameter_texts(v: Option<&Value>) -> ApiResult<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => continue,
                    Value::Object(o) => match o.get("uuid").and_then(Value::as_str) {
                        Some(u) => u.to_string(),
                        None => {
                            return Err(ApiError::BadRequest(format!(
                                "Parameter {k} is not a value"
                            )));
                        }
                    },
                    other => other.to_string(),
                };
                let text = if k == "startDate" || k == "endDate" {
                    day_named(&text).map(|d| d.to_string()).ok_or_else(|| {
                        ApiError::BadRequest(format!("Invalid date for parameter {k}: {text}"))
                    })?
                } else {
                    text
                };
                out.insert(k.clone(), text);
            }
        }
        Some(_) => {
            return Err(ApiError::BadRequest(
                "parameterMappings must be an object".into(),
            ));
        }
    }
    Ok(out)
}

/// `POST reportingrest/reportRequest`: `{reportDefinition: {parameterizable: {uuid},
/// parameterMappings}, renderingMode: {argument: <design uuid>}, schedule?, uuid?}`. The
/// run starts in the background; the answer is the request as queued.
pub async fn create_request(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[RUN])?;
    only_known(
        &body,
        &[
            "uuid",
            "reportDefinition",
            "renderingMode",
            "schedule",
            "priority",
            "status",
            "baseCohort",
        ],
    )?;
    let body = Value::Object(body);
    let catalog = state.catalog.load_full();
    let def = &body["reportDefinition"];
    let uuid = def["parameterizable"]["uuid"]
        .as_str()
        .or_else(|| def["uuid"].as_str())
        .ok_or_else(|| {
            ApiError::BadRequest("reportDefinition.parameterizable.uuid is required".into())
        })?;
    let report = find_report(&catalog, uuid)
        .ok_or_else(|| ApiError::BadRequest(format!("Report definition not found: {uuid}")))?
        .clone();
    let parameters = parameter_texts(def.get("parameterMappings"))?;
    let schedule = body["schedule"]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    if let Some(s) = &schedule {
        caller.require(&[SCHEDULE])?;
        if !report::is_monthly(s) {
            return Err(ApiError::BadRequest(format!(
                "Only a monthly schedule is supported (a cron expression such as '{}'), not '{s}'",
                report::MONTHLY
            )));
        }
    }
    for p in &report.parameters {
        // A schedule fills in the period each month.
        let filled = schedule.is_some()
            && matches!(p, ReportParameter::StartDate | ReportParameter::EndDate);
        if !filled && !parameters.contains_key(p.name()) {
            return Err(ApiError::BadRequest(format!(
                "Parameter {} is required",
                p.name()
            )));
        }
    }
    if schedule.is_none() {
        report::period_of(&report, &parameters, &catalog).map_err(ApiError::BadRequest)?;
    } else if let Some(l) = parameters.get("location")
        && catalog.location(l).is_none()
    {
        return Err(ApiError::BadRequest(format!(
            "Unknown location for parameter location: {l}"
        )));
    }
    let design = match body["renderingMode"]["argument"].as_str() {
        Some(a) if report.designs.iter().any(|x| x.uuid == a) => Some(a.to_string()),
        Some(a) => {
            return Err(ApiError::BadRequest(format!(
                "Report design not found for this report: {a}"
            )));
        }
        None => report.designs.first().map(|x| x.uuid.clone()),
    };
    let given_uuid = body["uuid"].as_str().map(str::to_string);
    if let Some(u) = &given_uuid
        && uuid::Uuid::parse_str(u).is_err()
    {
        return Err(ApiError::BadRequest(format!("Invalid uuid: {u}")));
    }
    let user = caller.user_uuid();
    let now = chrono::Utc::now();
    let st = state.clone();
    let r = blocking(move || {
        // The same uuid again replaces that request (the module saves over it).
        let old = match &given_uuid {
            Some(u) => store::get(&st.store, u)?,
            None => None,
        };
        if old.as_ref().is_some_and(|o| o.status == report::PROCESSING) {
            return Err(ApiError::BadRequest(
                "This report is being run; wait for it to finish".into(),
            ));
        }
        let r = ReportRequestRecord {
            v: 1,
            uuid: given_uuid.unwrap_or_else(crate::store::record::new_uuid),
            report: report.uuid.clone(),
            parameters,
            design,
            status: if schedule.is_some() {
                report::SCHEDULED
            } else {
                report::REQUESTED
            }
            .into(),
            priority: "NORMAL".into(),
            requested_by: user.clone(),
            requested: old
                .as_ref()
                .map_or_else(|| crate::wire::datetime_key(now), |o| o.requested.clone()),
            evaluate_start: None,
            evaluate_complete: None,
            schedule,
            scheduled_by: None,
            error: None,
            dhis2: None,
            audit: old.map_or_else(
                || Audit::new(&user, now),
                |o| {
                    let mut a = o.audit;
                    a.changed(&user, now);
                    a
                },
            ),
        };
        store::put(&st.store, &r)?;
        Ok(r)
    })
    .await?;
    if r.status == report::REQUESTED {
        spawn_run(state.clone(), r.uuid.clone());
    }
    let ctx = caller.ctx(&state, &catalog);
    Ok(crate::http::json(
        StatusCode::CREATED,
        request_json(&r, find_report(&catalog, &r.report), &ctx, "default"),
    ))
}

/// Runs a request in the background: its evaluation on the runtime's low-priority thread
/// (`crate::background`, one report at a time), its writes on a blocking thread.
pub fn spawn_run(state: Arc<AppState>, uuid: String) {
    tokio::task::spawn_blocking(move || {
        let catalog = state.catalog.load_full();
        let evaluate = |report: &model::reports::ReportDefinition,
                        period: &report::eval::Period,
                        locale: &str| {
            let (st, cat) = (state.clone(), catalog.clone());
            let (report, period, locale) = (report.clone(), period.clone(), locale.to_string());
            crate::background::run(move || {
                report::eval::evaluate(&st.store, &cat, &report, &period, &locale)
                    .map_err(|e| e.to_string())
            })
            .unwrap_or_else(|_| Err("the report's evaluation stopped on an error".into()))
        };
        let r = crate::store::audit::acting_sync(None, || {
            report::run_evaluating(&state.store, &catalog, &uuid, chrono::Utc::now, evaluate)
        });
        if let Err(e) = r {
            tracing::error!(request = %uuid, %e, "a report run could not be recorded");
        }
    });
}

/// `DELETE reportingrest/reportRequest/{uuid}`: purges the run and its result (a
/// scheduled request: its schedule).
pub async fn delete_request(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&[MANAGE])?;
    let st = state.clone();
    blocking(move || {
        let r = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        store::purge(&st.store, &r)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn data_set_json(d: &DataSetData, report: &ReportDefinition, i: usize) -> Value {
    let rows: Vec<Value> = d
        .rows
        .iter()
        .map(|row| {
            let mut m = Map::new();
            for (c, cell) in d.columns.iter().zip(row) {
                let v = match cell {
                    Cell::Cohort(members) => json!({"size": members.len(), "memberIds": members}),
                    Cell::Text(t) => json!(t),
                    Cell::Int(n) => json!(n),
                    Cell::Empty => Value::Null,
                };
                m.insert(c.name.clone(), v);
            }
            Value::Object(m)
        })
        .collect();
    json!({
        "uuid": format!("{}#{}", report.uuid, i),
        "metadata": {"columns": d.columns.iter().map(|c| json!({"name": c.name, "label": c.label, "datatype": c.datatype})).collect::<Vec<_>>()},
        "rows": rows,
        "definition": {"name": d.name, "uuid": format!("{}#{}", report.uuid, i)},
    })
}

fn report_data_json(
    report: &ReportDefinition,
    data: &ReportData,
    parameters: &BTreeMap<String, String>,
    ctx: &Ctx,
) -> Value {
    json!({
        "uuid": report.uuid,
        "dataSets": data.data_sets.iter().enumerate().map(|(i, d)| data_set_json(d, report, i)).collect::<Vec<_>>(),
        "context": {"parameterValues": parameters},
        "definition": definition_json(report, ctx, "full"),
    })
}

/// `GET reportingrest/reportdata/{uuid}?startDate=&endDate=[&location=]`: the report
/// evaluated now, in the reportingrest module's shape (what DHIS2 jobs read).
pub async fn report_data(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[RUN])?;
    let catalog = state.catalog.load_full();
    let report = find_report(&catalog, &uuid)
        .ok_or(ApiError::NotFound)?
        .clone();
    let mut parameters = BTreeMap::new();
    for p in &report.parameters {
        match param(&query, p.name()).filter(|v| !v.trim().is_empty()) {
            Some(v) if *p == ReportParameter::Location => {
                parameters.insert(p.name().to_string(), v.to_string());
            }
            Some(v) => {
                let day = day_named(v).ok_or_else(|| {
                    ApiError::BadRequest(format!("Invalid date for parameter {}: {v}", p.name()))
                })?;
                parameters.insert(p.name().to_string(), day.to_string());
            }
            None => {
                return Err(ApiError::BadRequest(format!(
                    "Missing parameter: {}",
                    p.name()
                )));
            }
        }
    }
    let period = report::period_of(&report, &parameters, &catalog).map_err(ApiError::BadRequest)?;
    let locale = caller.locale(&catalog);
    let st = state.clone();
    let cat = catalog.clone();
    let rep = report.clone();
    // On the background thread: a month's report must not take the cores from the chart.
    let data = crate::background::run_async(move || {
        report::eval::evaluate(&st.store, &cat, &rep, &period, &locale)
    })
    .await
    .map_err(|_| ApiError::internal("the report's evaluation stopped on an error"))??;
    let ctx = caller.ctx(&state, &catalog);
    Ok(crate::http::ok(report_data_json(
        &report,
        &data,
        &parameters,
        &ctx,
    )))
}

async fn finished(
    state: &Arc<AppState>,
    uuid: String,
) -> ApiResult<(ReportRequestRecord, ReportData)> {
    let st = state.clone();
    let missing = uuid.clone();
    let (r, data) = blocking(move || {
        let r = store::get(&st.store, &uuid)?;
        let data = match &r {
            Some(_) => store::result(&st.store, &uuid)?,
            None => None,
        };
        Ok((r, data))
    })
    .await?;
    let r = r.ok_or_else(|| {
        ApiError::BadRequest(format!("Report request not found for UUID: {missing}"))
    })?;
    match data {
        Some(d) => Ok((r, d)),
        None => Err(ApiError::BadRequest(format!(
            "The report request {missing} has no result (status {})",
            r.status
        ))),
    }
}

/// A run's file as the module names it: the report's name and the time, spaces as `_`.
fn report_file(
    r: &ReportRequestRecord,
    data: &ReportData,
    catalog: &crate::catalog::Catalog,
    locale: &str,
) -> Value {
    use base64::Engine;
    let report = find_report(catalog, &r.report);
    let name = report
        .map(|d| {
            model::display_in(&d.name, locale, &[catalog.default_locale()])
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_else(|| r.report.clone());
    let format = report
        .and_then(|d| {
            d.designs
                .iter()
                .find(|x| Some(&x.uuid) == r.design.as_ref())
        })
        .map_or(DesignFormat::Csv, |x| x.format);
    let (bytes, extension, content_type) = match format {
        DesignFormat::Csv => (report::render::csv(data), "csv", "text/csv"),
        DesignFormat::Excel => (
            report::render::xlsx(data),
            "xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ),
    };
    let when = r.evaluate_complete.as_deref().unwrap_or(&r.requested);
    let stamp: String = when
        .chars()
        .filter(|c| c.is_ascii_digit())
        .take(14)
        .collect();
    json!({
        "filename": format!("{}_{}.{extension}", name.replace(' ', "_"), stamp),
        "contentType": content_type,
        "fileContent": base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// A query parameter the call cannot do without, as Spring names its absence.
fn required(query: &[(String, String)], name: &str) -> ApiResult<String> {
    param(query, name)
        .map(str::to_string)
        .ok_or_else(|| ApiError::BadRequest(format!("Required parameter '{name}' is not present")))
}

/// `GET reportingrest/downloadReport?reportRequestUuid=`: `{filename, contentType,
/// fileContent}` (the file in base64), in the request's design.
pub async fn download(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let uuid = required(&query, "reportRequestUuid")?;
    let (r, data) = finished(&state, uuid).await?;
    let catalog = state.catalog.load();
    Ok(crate::http::ok(report_file(
        &r,
        &data,
        &catalog,
        &caller.locale(&catalog),
    )))
}

/// `GET reportingrest/downloadMultipleReports?reportRequestUuids=a,b`.
pub async fn download_many(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let list = required(&query, "reportRequestUuids")?;
    let mut files = Vec::new();
    for uuid in list.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        let (r, data) = finished(&state, uuid.to_string()).await?;
        let catalog = state.catalog.load();
        files.push(report_file(&r, &data, &catalog, &caller.locale(&catalog)));
    }
    Ok(crate::http::ok(Value::Array(files)))
}

/// `POST reportingrest/saveReport?reportRequestUuid=`: a completed run is kept as SAVED.
pub async fn save(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[RUN])?;
    let uuid = required(&query, "reportRequestUuid")?;
    let user = caller.user_uuid();
    let st = state.clone();
    let saved = blocking(move || {
        let mut r = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if r.status != report::COMPLETED {
            return Ok(false);
        }
        r.status = "SAVED".into();
        r.audit.changed(&user, chrono::Utc::now());
        store::put(&st.store, &r)?;
        Ok(true)
    })
    .await?;
    let (status, text) = if saved {
        (StatusCode::OK, "Report saved successfully")
    } else {
        (
            StatusCode::BAD_REQUEST,
            "Cannot save report because status is different than completed",
        )
    };
    Ok((
        status,
        [(axum::http::header::CONTENT_TYPE, "text/plain;charset=UTF-8")],
        text,
    )
        .into_response())
}

/// `GET reportingrest/reportDefinitionsWithScheduledRequests[?sortBy=name]`: each report
/// with its scheduled requests.
pub async fn with_schedules(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let st = state.clone();
    let all = blocking(move || Ok(store::all(&st.store)?)).await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let mut reports: Vec<&ReportDefinition> = catalog.content.reports.iter().collect();
    if param(&query, "sortBy") == Some("name") {
        reports.sort_by_key(|d| text_in(&d.name, &ctx));
    }
    let results: Vec<Value> = reports
        .iter()
        .map(|d| {
            let scheduled: Vec<Value> = all
                .iter()
                .filter(|r| r.report == d.uuid && (r.status == report::SCHEDULED || r.status == "SCHEDULE_COMPLETED"))
                .map(|r| request_json(r, Some(d), &ctx, "default"))
                .collect();
            json!({"reportDefinition": definition_json(d, &ctx, "default"), "scheduledRequests": scheduled})
        })
        .collect();
    Ok(crate::http::ok(json!({"results": results})))
}

/// `GET reportingrest/reportRequest/{uuid}/dhis2`: the `dataValueSets` payload of a run,
/// as it would be sent (for checking, or for a job that posts it itself).
pub async fn dhis2_payload(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&[VIEW])?;
    let (r, data) = finished(&state, uuid).await?;
    let catalog = state.catalog.load();
    let org_unit = state
        .config
        .dhis2
        .as_ref()
        .map(|d| d.org_unit.clone())
        .ok_or_else(|| {
            ApiError::BadRequest("DHIS2 is not configured (EMR_DHIS2_URL and its settings)".into())
        })?;
    Ok(crate::http::ok(payload_of(&r, &data, &catalog, &org_unit)?))
}

fn payload_of(
    r: &ReportRequestRecord,
    data: &ReportData,
    catalog: &crate::catalog::Catalog,
    org_unit: &str,
) -> ApiResult<Value> {
    let report = find_report(catalog, &r.report).ok_or_else(|| {
        ApiError::BadRequest("The report definition is no longer in the content".into())
    })?;
    let period = report::period_of(report, &r.parameters, catalog).map_err(ApiError::BadRequest)?;
    let completed = r.evaluate_complete.as_deref().unwrap_or(&r.requested);
    report::dhis2::payload(
        report,
        data,
        &period,
        org_unit,
        completed.get(..10).unwrap_or(completed),
    )
    .map_err(ApiError::BadRequest)
}

/// `POST reportingrest/reportRequest/{uuid}/dhis2`: sends a completed run's figures to the
/// configured DHIS2. The request records the sending, sent or not; a refusal or an
/// unreachable DHIS2 answers 502 with DHIS2's reason, and nothing is marked sent.
pub async fn dhis2_send(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&[RUN])?;
    let cfg = state.config.dhis2.clone().ok_or_else(|| {
        ApiError::BadRequest("DHIS2 is not configured (EMR_DHIS2_URL and its settings)".into())
    })?;
    let (r, data) = finished(&state, uuid).await?;
    let catalog = state.catalog.load_full();
    let payload = payload_of(&r, &data, &catalog, &cfg.org_unit)?;
    let period = payload["period"].as_str().unwrap_or_default().to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    let sent = blocking(move || {
        let outcome = report::dhis2::send(&cfg, &payload);
        let sending = report::dhis2::Sending {
            at: crate::wire::datetime_key(chrono::Utc::now()),
            by: user.clone(),
            status: if outcome.is_ok() { "SENT" } else { "FAILED" }.into(),
            message: match &outcome {
                Ok(m) | Err(m) => m.clone(),
            },
            period,
            org_unit: cfg.org_unit.clone(),
        };
        // Read again: the run may have been deleted while DHIS2 answered.
        if let Some(mut fresh) = store::get(&st.store, &r.uuid)? {
            fresh.dhis2 = Some(sending.clone());
            fresh.audit.changed(&user, chrono::Utc::now());
            store::put(&st.store, &fresh)?;
        }
        Ok((outcome, sending))
    })
    .await?;
    match sent.0 {
        Ok(_) => Ok(crate::http::ok(json!({
            "status": sent.1.status, "message": sent.1.message, "period": sent.1.period, "orgUnit": sent.1.org_unit,
        }))),
        Err(why) => Err(ApiError::Upstream(why)),
    }
}

pub fn routes(paths: &crate::http::Paths) -> axum::Router<Arc<AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route(
            &paths.rest("/reportingrest/reportDefinition"),
            get(definitions),
        )
        .route(
            &paths.rest("/reportingrest/reportDefinition/{uuid}"),
            get(definition),
        )
        .route(&paths.rest("/reportingrest/reportDesign"), get(designs))
        .route(
            &paths.rest("/reportingrest/reportDesign/{uuid}"),
            get(design),
        )
        .route(
            &paths.rest("/reportingrest/reportRequest"),
            get(requests).post(create_request),
        )
        .route(
            &paths.rest("/reportingrest/reportRequest/{uuid}"),
            get(request).delete(delete_request),
        )
        .route(
            &paths.rest("/reportingrest/reportRequest/{uuid}/dhis2"),
            get(dhis2_payload).post(dhis2_send),
        )
        .route(
            &paths.rest("/reportingrest/reportdata/{uuid}"),
            get(report_data),
        )
        .route(&paths.rest("/reportingrest/downloadReport"), get(download))
        .route(
            &paths.rest("/reportingrest/downloadMultipleReports"),
            get(download_many),
        )
        .route(&paths.rest("/reportingrest/saveReport"), post(save))
        .route(
            &paths.rest("/reportingrest/reportDefinitionsWithScheduledRequests"),
            get(with_schedules),
        )
}
