//! The FHIR R4 calls the O3 front end makes (`/ws/fhir2/R4`): `Location` search (by tag,
//! name, id, with paging) and `Patient` read here; and what the clinical domains' FHIR
//! handlers share: searchset Bundles with their paging links, OperationOutcome answers,
//! concepts as CodeableConcepts, stored datetimes in FHIR's form, the `_count` window and
//! the patient a search names. What is not served answers 404 with an OperationOutcome
//! (`other`, and `app::fhir` for unknown types).

use crate::http::AppState;
use crate::http::error::ApiResult;
use crate::http::{Caller, param};
use crate::store::record::Window;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};

pub fn fhir(status: StatusCode, body: Value) -> Response {
    let mut res = (status, body.to_string()).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/fhir+json;charset=UTF-8"),
    );
    res
}

pub fn not_found(kind: &str, id: &str) -> Response {
    fhir(
        StatusCode::NOT_FOUND,
        json!({"resourceType": "OperationOutcome", "issue": [{"severity": "error", "code": "not-found", "diagnostics": format!("Resource of type {kind} with ID {id} is not known")}]}),
    )
}

/// An OperationOutcome with one issue, as fhir2 answers a refused or finished write.
pub fn outcome(status: StatusCode, severity: &str, code: &str, diagnostics: &str) -> Response {
    fhir(
        status,
        json!({"resourceType": "OperationOutcome", "issue": [{"severity": severity, "code": code, "diagnostics": diagnostics}]}),
    )
}

/// Validation failures as fhir2 answers them: 422 with every message.
pub fn unprocessable(inv: &crate::invalid::Invalid) -> Response {
    let issue = |m: String| json!({"severity": "error", "code": "processing", "diagnostics": m});
    let issues: Vec<Value> = inv
        .fields
        .iter()
        .map(|(field, _, message)| issue(format!("{field}: {message}")))
        .chain(inv.global.iter().cloned().map(issue))
        .collect();
    fhir(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({"resourceType": "OperationOutcome", "issue": issues}),
    )
}

/// The id a FHIR reference names (`{"reference": "Patient/…"}`, also as an absolute URL)
/// when it is of `kind`, or a bare id; `None` for another kind or no reference.
pub fn reference_id(v: Option<&Value>, kind: &str) -> Option<String> {
    let r = v?.get("reference")?.as_str()?.trim();
    let mut parts = r.rsplit('/');
    let id = parts.next().filter(|id| !id.is_empty())?;
    match parts.next() {
        None => Some(id.to_string()),
        Some(k) if k == kind => Some(id.to_string()),
        Some(_) => None,
    }
}

/// The inclusive key-form bounds (`wire::datetime_key`) a FHIR date search parameter sets,
/// every occurrence of it combined (`_lastUpdated=ge2026-11-01&_lastUpdated=lt2026-12`):
/// `None` when the search does not name it, an error naming the value a client got wrong.
/// Each value is a prefix (`eq` by default, `gt`, `ge`, `lt`, `le`) and a FHIR date or
/// dateTime, whose precision (year, month, day, second) is the range `eq` means.
pub type Bounds = (Option<String>, Option<String>);

/// The bounds of a search's `date` and `_lastUpdated` (each `None` when not named); a
/// malformed value is a 400 naming it.
pub fn date_and_updated(
    query: &[(String, String)],
) -> Result<(Option<Bounds>, Option<Bounds>), crate::http::error::ApiError> {
    let bounds =
        |name: &str| instant_bounds(query, name).map_err(crate::http::error::ApiError::BadRequest);
    Ok((bounds("date")?, bounds("_lastUpdated")?))
}

pub fn instant_bounds(query: &[(String, String)], name: &str) -> Result<Option<Bounds>, String> {
    use chrono::{DateTime, Duration, NaiveDate, Utc};
    let mut from: Option<DateTime<Utc>> = None;
    let mut to: Option<DateTime<Utc>> = None;
    let mut named = false;
    for (_, raw) in query.iter().filter(|(k, _)| k == name) {
        named = true;
        let wrong = || {
            format!(
                "{name}: '{raw}' is not a FHIR date or dateTime with an optional prefix (eq, gt, ge, lt, le)"
            )
        };
        let (prefix, value) = ["eq", "gt", "ge", "lt", "le"]
            .iter()
            .find_map(|p| raw.strip_prefix(p).map(|v| (*p, v)))
            .unwrap_or(("eq", raw.as_str()));
        let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
        // [start, end) of the value's precision.
        let first_of = |y: i32, m: u32| NaiveDate::from_ymd_opt(y, m, 1).and_then(midnight);
        let (start, end) = match value.len() {
            4 => {
                let y: i32 = value.parse().map_err(|_| wrong())?;
                (first_of(y, 1), first_of(y + 1, 1))
            }
            7 => {
                let d = NaiveDate::parse_from_str(&format!("{value}-01"), "%Y-%m-%d")
                    .map_err(|_| wrong())?;
                let (y, m) = (chrono::Datelike::year(&d), chrono::Datelike::month(&d));
                (
                    first_of(y, m),
                    if m == 12 {
                        first_of(y + 1, 1)
                    } else {
                        first_of(y, m + 1)
                    },
                )
            }
            10 => {
                let d = NaiveDate::parse_from_str(value, "%Y-%m-%d").map_err(|_| wrong())?;
                (midnight(d), d.succ_opt().and_then(midnight))
            }
            // A dateTime carries its zone in FHIR (`…T10:00:00+01:00`, `…Z`).
            _ => {
                let t = DateTime::parse_from_rfc3339(value)
                    .map_err(|_| wrong())?
                    .with_timezone(&Utc);
                (Some(t), Some(t + Duration::seconds(1)))
            }
        };
        let (start, end) = (start.ok_or_else(wrong)?, end.ok_or_else(wrong)?);
        let (lo, hi) = match prefix {
            "eq" => (Some(start), Some(end)),
            "gt" => (Some(end), None),
            "ge" => (Some(start), None),
            "lt" => (None, Some(start)),
            _ => (None, Some(end)),
        };
        if let Some(lo) = lo {
            from = Some(from.map_or(lo, |f| f.max(lo)));
        }
        if let Some(hi) = hi {
            to = Some(to.map_or(hi, |t| t.min(hi)));
        }
    }
    if !named {
        return Ok(None);
    }
    // `to` is exclusive: the last key before it, to the millisecond keys hold.
    Ok(Some((
        from.map(crate::wire::datetime_key),
        to.map(|t| crate::wire::datetime_key(t - Duration::milliseconds(1))),
    )))
}

/// The concepts a query names under `names`: repeated (`concept=a&concept=b`) or
/// comma-separated, each a uuid or `SOURCE:CODE`, or a FHIR token `system|code`; as uuids
/// (unknown ones pass through and match nothing).
pub fn concepts_param(
    catalog: &crate::catalog::Catalog,
    query: &[(String, String)],
    names: &[&str],
) -> Vec<String> {
    query
        .iter()
        .filter(|(k, _)| names.contains(&k.as_str()))
        .flat_map(|(_, v)| v.split(','))
        .filter(|c| !c.trim().is_empty())
        .map(|c| {
            // `system|code` (FHIR's token), `|code` (no system) or a bare code.
            let (system, code) = match c.split_once('|') {
                Some((system, code)) => (Some(system), code),
                None => (None, c),
            };
            catalog
                .concept_of_coding(system, code)
                .map_or_else(|| c.trim().to_string(), |x| x.uuid.clone())
        })
        .collect()
}

pub const UCUM: &str = "http://unitsofmeasure.org";

/// The UCUM code of a concept's units as content writes them (`°C`, `battements/min`,
/// `mmHg`…), when they have one; units UCUM does not know (a count of tablets, a score)
/// have none and are written as `unit` alone, never claimed as UCUM.
pub fn ucum(units: &str) -> Option<&'static str> {
    let folded = crate::search::fold(units.trim()).replace(' ', "");
    Some(match folded.as_str() {
        "°c" | "degc" | "cel" => "Cel",
        "°f" | "degf" | "[degf]" => "[degF]",
        "battements/min" | "bpm" | "beats/min" | "/min" | "respirations/min" | "resp/min"
        | "mouvements/min" | "cycles/min" => "/min",
        "mmhg" | "mm[hg]" => "mm[Hg]",
        "%" => "%",
        "kg" => "kg",
        "g" => "g",
        "mg" => "mg",
        "cm" => "cm",
        "mm" => "mm",
        "m" => "m",
        "l" => "L",
        "ml" => "mL",
        "kg/m2" | "kg/m²" => "kg/m2",
        "mg/dl" => "mg/dL",
        "g/dl" => "g/dL",
        "g/l" => "g/L",
        "mmol/l" => "mmol/L",
        "µmol/l" | "umol/l" => "umol/L",
        "copies/ml" => "{copies}/mL",
        "cellules/µl" | "cells/µl" | "cellules/mm3" | "cells/mm3" | "/mm3" => "/uL",
        "ui/l" | "iu/l" => "[IU]/L",
        "semaines" | "weeks" | "sem" => "wk",
        "jours" | "days" | "j" => "d",
        "mois" | "months" => "mo",
        "ans" | "years" => "a",
        _ => return None,
    })
}

/// What a FHIR write's blocking section ends with: the record it wrote, or the answer that
/// refuses it (fhir2 refuses with OperationOutcomes, which are answers, not `ApiError`s).
pub enum Written<T> {
    Done(T),
    Refused(Response),
}

/// A stored (key-form) datetime as FHIR writes it, `null` if unreadable.
pub fn iso(key: &str) -> Value {
    crate::wire::fhir_datetime(key).map_or(Value::Null, Value::String)
}

/// A refused FHIR write: 400 with what is wrong.
pub fn invalid(diagnostics: &str) -> Response {
    outcome(StatusCode::BAD_REQUEST, "error", "invalid", diagnostics)
}

pub fn base(state: &AppState, caller: &Caller) -> String {
    format!("{}{}/ws/fhir2/R4", caller.origin, state.config.app_path)
}

/// A create's answer naming where the new resource is read (`Location`), as FHIR asks.
pub fn located(
    mut res: Response,
    state: &AppState,
    caller: &Caller,
    kind: &str,
    id: &str,
) -> Response {
    if let Ok(v) = HeaderValue::from_str(&format!("{}/{kind}/{id}", base(state, caller))) {
        res.headers_mut().insert(header::LOCATION, v);
    }
    res
}

pub fn search_bundle(
    base: &str,
    kind: &str,
    query: &[(String, String)],
    total: usize,
    offset: usize,
    count: usize,
    resources: Vec<Value>,
) -> Value {
    let entries = resources
        .into_iter()
        .map(|r| (r["id"].as_str().unwrap_or("").to_string(), r))
        .collect();
    serde_json::to_value(search_bundle_of(
        base, kind, query, total, offset, count, entries,
    ))
    .unwrap_or(Value::Null)
}

/// A searchset Bundle of typed resources, each given with its id: serialised straight to
/// bytes (`fhir_of`), without building a JSON tree first.
pub fn search_bundle_of<T: Serialize>(
    base: &str,
    kind: &str,
    query: &[(String, String)],
    total: usize,
    offset: usize,
    count: usize,
    resources: Vec<(String, T)>,
) -> Bundle<T> {
    let more = offset.saturating_add(count) < total;
    search_bundle_paged(
        base,
        kind,
        query,
        Some(total),
        more,
        offset,
        count,
        resources,
    )
}

/// `search_bundle_of` where the total may be unknown (FHIR's `Bundle.total` is optional: a
/// search over a large range counts it only when asked, `_total=accurate`), and whether a
/// next page exists is said by `more`.
#[allow(clippy::too_many_arguments)]
pub fn search_bundle_paged<T: Serialize>(
    base: &str,
    kind: &str,
    query: &[(String, String)],
    total: Option<usize>,
    more: bool,
    offset: usize,
    count: usize,
    resources: Vec<(String, T)>,
) -> Bundle<T> {
    let q: String = query
        .iter()
        .filter(|(k, _)| k != "_getpagesoffset")
        .map(|(k, v)| {
            format!(
                "{}={}",
                crate::http::repr::encode(k),
                crate::http::repr::encode(v)
            )
        })
        .collect::<Vec<_>>()
        .join("&");
    let mut link = vec![BundleLink {
        relation: "self",
        url: format!("{base}/{kind}?{q}"),
    }];
    if more {
        link.push(BundleLink {
            relation: "next",
            url: format!(
                "{base}/{kind}?{q}&_getpagesoffset={}",
                offset.saturating_add(count)
            ),
        });
    }
    if offset > 0 {
        link.push(BundleLink {
            relation: "previous",
            url: format!(
                "{base}/{kind}?{q}&_getpagesoffset={}",
                offset.saturating_sub(count)
            ),
        });
    }
    Bundle {
        resource_type: "Bundle",
        id: uuid::Uuid::new_v4().to_string(),
        meta: BundleMeta {
            last_updated: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        },
        kind: "searchset",
        total,
        link,
        entry: resources
            .into_iter()
            .map(|(id, resource)| BundleEntry {
                full_url: format!("{base}/{kind}/{id}"),
                resource,
            })
            .collect(),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle<T> {
    resource_type: &'static str,
    id: String,
    meta: BundleMeta,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<usize>,
    link: Vec<BundleLink>,
    entry: Vec<BundleEntry<T>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BundleMeta {
    last_updated: String,
}

#[derive(Serialize)]
struct BundleLink {
    relation: &'static str,
    url: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BundleEntry<T> {
    full_url: String,
    resource: T,
}

/// A FHIR answer serialised straight from a typed body.
pub fn fhir_of(status: StatusCode, body: &impl Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => {
            let mut res = (status, bytes).into_response();
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/fhir+json;charset=UTF-8"),
            );
            res
        }
        Err(e) => crate::http::error::ApiError::internal(e).into_response(),
    }
}

/// What no FHIR route serves, of a type this server serves (unknown types are refused
/// before routing, `app::fhir`): a search it does not offer, or an operation or sub-path it
/// does not know. Never an empty Bundle, which would read as "no records".
pub async fn other(caller: Caller, Path(rest): Path<String>) -> ApiResult<Response> {
    caller.require(&[])?;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    Ok(match parts.as_slice() {
        [kind] => outcome(
            StatusCode::NOT_FOUND,
            "error",
            "not-supported",
            &format!(
                "{kind} resources are read by id on this server; searching them is not supported"
            ),
        ),
        [kind, id] => not_found(kind, id),
        [kind, id, op, ..] => outcome(
            StatusCode::NOT_FOUND,
            "error",
            "not-supported",
            &format!("{kind}/{id}/{op} is not supported by this server"),
        ),
        [] => not_found("Resource", ""),
    })
}

/// A concept as a CodeableConcept: its uuid as the first coding, then its mappings, each
/// with the name in the caller's locale.
#[derive(Serialize)]
pub struct Codeable<'a> {
    pub coding: Vec<Coding<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<&'a str>,
}

#[derive(Serialize)]
pub struct Coding<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display: Option<&'a str>,
}

pub fn concept_codeable<'a>(
    catalog: &'a crate::catalog::Catalog,
    uuid: &'a str,
    locale: &str,
) -> Codeable<'a> {
    let Some(c) = catalog.concept(uuid) else {
        return Codeable {
            coding: vec![Coding {
                system: None,
                code: Some(uuid),
                display: None,
            }],
            text: None,
        };
    };
    let name = c
        .display_name(locale, &[catalog.default_locale()])
        .map_or("", |n| n.name.as_str());
    let mut coding = vec![Coding {
        system: None,
        code: Some(&c.uuid),
        display: Some(name),
    }];
    // As fhir2: a mapping is a coding only when its source has a FHIR code system URL.
    for m in &c.mappings {
        if let Some(system) = catalog.fhir_system(&m.source) {
            coding.push(Coding {
                system: Some(system),
                code: Some(&m.code),
                display: Some(name),
            });
        }
    }
    Codeable {
        coding,
        text: Some(name),
    }
}

/// `_count` (default 10, at most 100) and `_getpagesoffset`.
pub fn window(query: &[(String, String)]) -> Window {
    let count = param(query, "_count")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(10)
        .clamp(1, 100);
    let offset = param(query, "_getpagesoffset")
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Window {
        start: offset,
        limit: count,
        count_all: true,
    }
}

/// The patient a search names: `subject:Patient`, `subject`, `patient` (bare or `Patient/…`).
pub fn patient_param(query: &[(String, String)]) -> Option<String> {
    ["subject:Patient", "subject", "patient", "patient:Patient"]
        .iter()
        .find_map(|k| param(query, k))
        .map(|p| p.trim_start_matches("Patient/").to_string())
}
