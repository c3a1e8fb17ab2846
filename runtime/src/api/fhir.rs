//! The FHIR R4 calls the O3 front end makes (`/ws/fhir2/R4`): `Location` search (by tag,
//! name, id, with paging) and `Patient` read here; and what the clinical domains' FHIR
//! handlers share: searchset Bundles with their paging links, OperationOutcome answers,
//! concepts as CodeableConcepts, stored datetimes in FHIR's form, the `_count` window and
//! the patient a search names. Other searches answer an empty searchset Bundle and other
//! reads 404, so unimplemented widgets render empty rather than fail.

use super::{Caller, QueryPairs, param};
use crate::AppState;
use crate::domains::Window;
use crate::error::ApiResult;
use crate::store::PatientRecord;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use model::Location;
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;

const TAG_SYSTEM: &str = "http://fhir.openmrs.org/ext/location-tag";

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
pub fn unprocessable(inv: &crate::error::Invalid) -> Response {
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

/// The concept source a FHIR coding's `system` names: CIEL's URL, OpenMRS's
/// `urn:openmrs:concept-source:…` (both as `ValueSet` writes them), else the system's last
/// part (`CIEL`, as codings of this server name their sources).
pub fn source_of_system(system: &str) -> &str {
    let system = system.trim().trim_end_matches('/');
    if system.ends_with("cielterminology.org") {
        return "CIEL";
    }
    if let Some(source) = system.strip_prefix("urn:openmrs:concept-source:") {
        return source;
    }
    system.rsplit(['/', ':']).next().unwrap_or(system)
}

/// What a FHIR write's blocking section ends with: the record it wrote, or the answer that
/// refuses it (fhir2 refuses with OperationOutcomes, which are answers, not `ApiError`s).
pub enum Written<T> {
    Done(T),
    Refused(Response),
}

/// A stored (key-form) datetime as FHIR writes it, `null` if unreadable.
pub fn iso(key: &str) -> Value {
    crate::domains::fhir_datetime(key).map_or(Value::Null, Value::String)
}

/// A refused FHIR write: 400 with what is wrong.
pub fn invalid(diagnostics: &str) -> Response {
    outcome(StatusCode::BAD_REQUEST, "error", "invalid", diagnostics)
}

pub fn base(state: &AppState, caller: &Caller) -> String {
    format!("{}{}/ws/fhir2/R4", caller.origin, state.config.app_path)
}

fn location_json(l: &Location, catalog: &crate::catalog::Catalog) -> Value {
    let tags: Vec<Value> = l
        .tags
        .iter()
        .filter_map(|t| catalog.location_tag(t))
        .map(|t| json!({"system": TAG_SYSTEM, "code": t.name, "display": t.description.clone().unwrap_or_else(|| t.name.clone())}))
        .collect();
    let mut r = json!({
        "resourceType": "Location",
        "id": l.uuid,
        "meta": {"tag": tags},
        "status": if l.retired { "inactive" } else { "active" },
        "name": l.name,
    });
    if let Some(d) = &l.description {
        r["description"] = json!(d);
    }
    let a = &l.address;
    if a.city_village.is_some() || a.state_province.is_some() || a.country.is_some() {
        r["address"] = json!({"city": a.city_village, "district": a.county_district, "state": a.state_province, "country": a.country, "postalCode": a.postal_code});
    }
    if let Some(p) = l.parent.as_deref().and_then(|p| catalog.location(p)) {
        r["partOf"] = json!({"reference": format!("Location/{}", p.uuid), "type": "Location", "display": p.name});
    }
    r
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
    let q: String = query
        .iter()
        .filter(|(k, _)| k != "_getpagesoffset")
        .map(|(k, v)| format!("{}={}", crate::repr::encode(k), crate::repr::encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let mut link = vec![BundleLink {
        relation: "self",
        url: format!("{base}/{kind}?{q}"),
    }];
    if offset.saturating_add(count) < total {
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
    total: usize,
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
        Err(e) => crate::error::ApiError::internal(e).into_response(),
    }
}

/// `GET Location?_tag=&name:contains=&name=&_id=&partof:below=&_count=&_getpagesoffset=` —
/// privilege: Get Locations. `partof:below` keeps the locations under the given one, at
/// any depth (the ward app offers the wards of the patient's facility).
pub async fn locations(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Locations"])?;
    let get = |k: &str| {
        query
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let catalog = state.catalog.load();
    let tags: Vec<String> = query
        .iter()
        .filter(|(k, _)| k == "_tag")
        .flat_map(|(_, v)| v.split(',').map(|t| t.trim().to_lowercase()))
        .collect();
    let contains = get("name:contains").map(crate::search::fold);
    let name = get("name").map(crate::search::fold);
    let ids: Option<Vec<&str>> = get("_id").map(|v| v.split(',').collect());
    let below = get("partof:below").map(str::trim).filter(|v| !v.is_empty());
    // Bounded by the number of locations, so a cycle cannot loop.
    let is_below = |l: &Location, ancestor: &str| {
        let mut current = l.parent.as_deref();
        for _ in 0..=catalog.content.locations.len() {
            match current.and_then(|p| catalog.location(p)) {
                Some(p) if p.uuid == ancestor => return true,
                Some(p) => current = p.parent.as_deref(),
                None => return false,
            }
        }
        false
    };
    let count = get("_count")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(50)
        .clamp(0, 500);
    let offset = get("_getpagesoffset")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(0);
    let matches: Vec<&Location> = catalog
        .content
        .locations
        .iter()
        .filter(|l| !l.retired)
        .filter(|l| {
            ids.as_ref()
                .is_none_or(|ids| ids.contains(&l.uuid.as_str()))
        })
        .filter(|l| {
            tags.iter().all(|t| {
                l.tags
                    .iter()
                    .filter_map(|u| catalog.location_tag(u))
                    .any(|x| x.name.to_lowercase() == *t || x.uuid == *t)
            })
        })
        .filter(|l| {
            contains
                .as_ref()
                .is_none_or(|c| crate::search::fold(&l.name).contains(c.as_str()))
        })
        .filter(|l| {
            name.as_ref()
                .is_none_or(|n| crate::search::fold(&l.name).starts_with(n.as_str()))
        })
        .filter(|l| below.is_none_or(|b| is_below(l, b)))
        .collect();
    let mut sorted = matches;
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let total = sorted.len();
    let page: Vec<Value> = sorted
        .into_iter()
        .skip(offset)
        .take(count)
        .map(|l| location_json(l, &catalog))
        .collect();
    Ok(fhir(
        StatusCode::OK,
        search_bundle(
            &base(&state, &caller),
            "Location",
            &query,
            total,
            offset,
            count,
            page,
        ),
    ))
}

pub async fn location(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Locations"])?;
    let catalog = state.catalog.load();
    Ok(
        match catalog.content.locations.iter().find(|l| l.uuid == id) {
            Some(l) => fhir(StatusCode::OK, location_json(l, &catalog)),
            None => not_found("Location", &id),
        },
    )
}

fn gender(g: &str) -> &'static str {
    match g {
        "M" => "male",
        "F" => "female",
        "O" => "other",
        _ => "unknown",
    }
}

pub fn patient_json(p: &PatientRecord, catalog: &crate::catalog::Catalog) -> Value {
    // Preferred first, as Person orders them in OpenMRS: the O3 forms take the first.
    let mut ordered_names: Vec<&crate::store::NameRecord> = p.names.iter().collect();
    ordered_names.sort_by_key(|n| !n.preferred);
    let names: Vec<Value> = ordered_names
        .into_iter()
        .map(|n| {
            let given: Vec<&String> = [&n.given_name, &n.middle_name].into_iter().flatten().collect();
            let text = [&n.given_name, &n.middle_name, &n.family_name].into_iter().flatten().cloned().collect::<Vec<_>>().join(" ");
            json!({"id": n.uuid, "use": if n.preferred { "usual" } else { "official" }, "text": text, "family": n.family_name, "given": given})
        })
        .collect();
    let identifiers: Vec<Value> = p
        .identifiers
        .iter()
        .map(|i| {
            let t = catalog.identifier_type(&i.identifier_type);
            json!({
                "id": i.uuid,
                "use": if i.preferred { "official" } else { "usual" },
                "type": {"coding": [{"code": i.identifier_type}], "text": t.map(|t| t.name.clone())},
                "value": i.identifier,
            })
        })
        .collect();
    let telecom: Vec<Value> = p
        .attributes
        .iter()
        .filter(|a| a.attribute_type == "14d4f066-15f5-102d-96e4-000c29c2a5d7")
        .map(|a| json!({"id": a.uuid, "system": "phone", "value": a.value}))
        .collect();
    // Preferred first, then the newest, as fhir2 lists them (`use` home, then old); fields
    // FHIR has no element for (the quartier in `address1`…) in OpenMRS's address extension,
    // which the O3 registration form reads back when editing.
    let mut ordered: Vec<(usize, &crate::store::AddressRecord)> =
        p.addresses.iter().enumerate().collect();
    ordered.sort_by_key(|(i, a)| (!a.preferred, std::cmp::Reverse(*i)));
    let addresses: Vec<Value> = ordered
        .into_iter()
        .map(|(_, a)| {
            let f = |k: &str| a.fields.get(k).cloned();
            let extension: Vec<Value> = a
                .fields
                .iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "cityVillage" | "countyDistrict" | "stateProvince" | "postalCode" | "country")
                })
                .map(|(k, v)| json!({"url": format!("http://fhir.openmrs.org/ext/address#{k}"), "valueString": v}))
                .collect();
            let mut r = json!({"id": a.uuid, "use": if a.preferred { "home" } else { "old" }, "city": f("cityVillage"), "district": f("countyDistrict"), "state": f("stateProvince"), "postalCode": f("postalCode"), "country": f("country")});
            if !extension.is_empty() {
                r["extension"] = json!([{"url": "http://fhir.openmrs.org/ext/address", "extension": extension}]);
            }
            r
        })
        .collect();
    let mut r = json!({
        "resourceType": "Patient",
        "id": p.uuid,
        "meta": {"lastUpdated": p.date_created},
        "identifier": identifiers,
        "active": !p.voided,
        "name": names,
        "telecom": telecom,
        "gender": gender(&p.gender),
        "address": addresses,
    });
    // FHIR leaves out an element with no value rather than writing an empty list (as
    // fhir2 does); the O3 vitals header reads `address[0].city` whenever `address` exists.
    if let Value::Object(m) = &mut r {
        m.retain(|_, v| !matches!(v, Value::Array(items) if items.is_empty()));
    }
    if let Some(b) = &p.birthdate {
        r["birthDate"] = json!(birth_date(
            b,
            p.birthdate_estimated,
            super::patient::today()
        ));
    }
    match (&p.death_date, p.dead) {
        (Some(d), _) if d.contains('T') => r["deceasedDateTime"] = iso(d),
        (Some(d), _) => r["deceasedDateTime"] = json!(d),
        (None, dead) => r["deceasedBoolean"] = json!(dead),
    }
    r
}

/// A birth date as fhir2 writes it: an estimated one only to the year (past five years of
/// age) or the month, which is how the O3 registration form knows it was estimated.
fn birth_date(b: &str, estimated: bool, today: chrono::NaiveDate) -> String {
    if !estimated {
        return b.to_string();
    }
    let years = chrono::NaiveDate::parse_from_str(b, "%Y-%m-%d")
        .ok()
        .and_then(|d| today.years_since(d))
        .unwrap_or(0);
    let cut = if years > 5 { 4 } else { 7 };
    b.get(..cut).unwrap_or(b).to_string()
}

/// `GET Patient/{uuid}` — privilege: Get Patients.
pub async fn patient(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    let found = state.store.patient(&id)?;
    let catalog = state.catalog.load();
    Ok(match found {
        Some(p) if !p.voided => fhir(StatusCode::OK, patient_json(&p, &catalog)),
        _ => not_found("Patient", &id),
    })
}

/// `GET ValueSet/{uuid}` — privilege: Get Concepts. As OpenMRS's FHIR module builds it, from
/// a concept set: one `compose.include` without a `system` whose `concept`s are the members
/// (`code` their uuid, `display` their name in the caller's locale); members that are sets
/// are listed as `valueSet` references; one more include per mapping source with a URL-like
/// name (CIEL's members by their CIEL codes). A concept that is not a set is not a ValueSet.
/// The dispensing app reads its reasons (pause, close, substitution) from such sets.
pub async fn value_set(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let catalog = state.catalog.load();
    let Some(set) = catalog.concept(&id).filter(|c| c.is_set && c.uuid == id) else {
        return Ok(not_found("ValueSet", &id));
    };
    let ctx = caller.ctx(&state, &catalog);
    let display =
        |c: &model::Concept| crate::repr::Resource::display(&super::concept::ConceptRes(c), &ctx);
    let mut local = Vec::new();
    let mut nested_sets = Vec::new();
    let mut by_source: std::collections::BTreeMap<String, Vec<Value>> = Default::default();
    for m in &set.set_members {
        let Some(member) = catalog.concept(m) else {
            continue;
        };
        if member.is_set {
            nested_sets.push(json!(format!("ValueSet/{}", member.uuid)));
            continue;
        }
        local.push(json!({"code": member.uuid, "display": display(member)}));
        for mapping in member.mappings.iter().filter(|m| m.map_type == "SAME-AS") {
            by_source
                .entry(mapping.source.clone())
                .or_default()
                .push(json!({"code": mapping.code, "display": display(member)}));
        }
    }
    let mut local_include = json!({"concept": local});
    if !nested_sets.is_empty() {
        local_include["valueSet"] = Value::Array(nested_sets);
    }
    let mut include = vec![local_include];
    for (source, concepts) in by_source {
        let system = match source.as_str() {
            "CIEL" => "https://cielterminology.org".to_string(),
            other => format!("urn:openmrs:concept-source:{other}"),
        };
        include.push(json!({"system": system, "concept": concepts}));
    }
    let description = set.descriptions.first().map(|d| d.description.clone());
    Ok(fhir(
        StatusCode::OK,
        json!({
            "resourceType": "ValueSet",
            "id": set.uuid,
            "title": display(set),
            "status": "active",
            "description": description,
            "compose": {"include": include},
        }),
    ))
}

/// Any other FHIR read (`Type/id`) is unknown; any other search is empty.
pub async fn other(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(rest): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    Ok(match parts.as_slice() {
        [kind] => fhir(
            StatusCode::OK,
            search_bundle(&base(&state, &caller), kind, &query, 0, 0, 0, Vec::new()),
        ),
        [kind, id, ..] => not_found(kind, id),
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
    for m in &c.mappings {
        coding.push(Coding {
            system: Some(&m.source),
            code: Some(&m.code),
            display: Some(name),
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_estimated_birth_date_is_written_to_the_year_or_the_month() {
        let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 26).unwrap();
        assert_eq!(birth_date("1992-11-26", false, today), "1992-11-26");
        assert_eq!(birth_date("1992-11-26", true, today), "1992");
        assert_eq!(birth_date("2024-05-01", true, today), "2024-05");
    }
}
