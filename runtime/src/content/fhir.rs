//! FHIR `Location` (search by tag, name, id, ancestry; read) and `ValueSet` (a concept set),
//! read from the content.

use crate::http::AppState;
use crate::http::error::ApiResult;
use crate::http::fhir::{base, fhir, not_found, search_bundle};
use crate::http::{Caller, QueryPairs};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use model::Location;
use serde_json::{Value, json};
use std::sync::Arc;

const TAG_SYSTEM: &str = "http://fhir.openmrs.org/ext/location-tag";

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
        "status": if l.retired { "inactive" } else { "active" },
        "name": l.name,
    });
    if !tags.is_empty() {
        r["meta"] = json!({"tag": tags});
    }
    if let Some(d) = &l.description {
        r["description"] = json!(d);
    }
    let a = &l.address;
    // Only the parts the location has: R4 allows no null.
    let address: serde_json::Map<String, Value> = [
        ("city", &a.city_village),
        ("district", &a.county_district),
        ("state", &a.state_province),
        ("country", &a.country),
        ("postalCode", &a.postal_code),
    ]
    .into_iter()
    .filter_map(|(k, v)| {
        Some((
            k.to_string(),
            json!(v.as_deref().filter(|v| !v.trim().is_empty())?),
        ))
    })
    .collect();
    if !address.is_empty() {
        r["address"] = Value::Object(address);
    }
    if let Some(p) = l.parent.as_deref().and_then(|p| catalog.location(p)) {
        r["partOf"] = json!({"reference": format!("Location/{}", p.uuid), "type": "Location", "display": p.name});
    }
    r
}

/// `GET Location?_tag=&name:contains=&name=&_id=&partof=&partof:below=&address-city=&
/// address-state=&address-country=&address-postalcode=&_count=&_getpagesoffset=` —
/// privilege: Get Locations. `partof` keeps the locations directly under the given one,
/// `partof:below` those under it at any depth (the ward app offers the wards of the
/// patient's facility).
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
    // FHIR: each `_tag` parameter must match (AND); the values of one, comma-separated,
    // are alternatives (OR): `_tag=main store,dispensary` is either.
    let tags: Vec<Vec<String>> = query
        .iter()
        .filter(|(k, _)| k == "_tag")
        .map(|(_, v)| v.split(',').map(|t| t.trim().to_lowercase()).collect())
        .collect();
    let contains = get("name:contains").map(crate::search::fold);
    let name = get("name").map(crate::search::fold);
    let ids: Option<Vec<&str>> = get("_id").map(|v| v.split(',').collect());
    let below = get("partof:below").map(str::trim).filter(|v| !v.is_empty());
    let parent = get("partof")
        .map(|v| v.trim().trim_start_matches("Location/"))
        .filter(|v| !v.is_empty());
    let address: Vec<(&str, Vec<&str>)> = query
        .iter()
        .filter(|(k, _)| {
            matches!(
                k.as_str(),
                "address-city" | "address-state" | "address-country" | "address-postalcode"
            )
        })
        .map(|(k, v)| {
            let alternatives = v.split(',').map(str::trim).filter(|t| !t.is_empty());
            (k.as_str(), alternatives.collect())
        })
        .collect();
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
            tags.iter().all(|alternatives| {
                l.tags
                    .iter()
                    .filter_map(|u| catalog.location_tag(u))
                    .any(|x| {
                        alternatives
                            .iter()
                            .any(|t| x.name.to_lowercase() == *t || x.uuid == *t)
                    })
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
        .filter(|l| parent.is_none_or(|p| l.parent.as_deref() == Some(p)))
        .filter(|l| {
            // As Patient's: a word of the part starts with the value, accents and case
            // aside; each parameter must hold, a comma separates alternatives.
            address.iter().all(|(part, alternatives)| {
                let a = &l.address;
                let value = match *part {
                    "address-city" => &a.city_village,
                    "address-state" => &a.state_province,
                    "address-country" => &a.country,
                    _ => &a.postal_code,
                };
                value.as_deref().is_some_and(|v| {
                    alternatives
                        .iter()
                        .any(|t| crate::search::starts_a_word(v, t))
                })
            })
        })
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
    let display = |c: &model::Concept| {
        crate::http::repr::Resource::display(&crate::content::concept::ConceptRes(c), &ctx)
    };
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
    // Sources without a FHIR code system URL are left out, as from every coding.
    for (source, concepts) in by_source {
        if let Some(system) = catalog.fhir_system(&source) {
            include.push(json!({"system": system, "concept": concepts}));
        }
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
