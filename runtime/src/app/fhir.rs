//! FHIR across its resource types: what this server supports, said once (`SUPPORTED`) and
//! used three ways: `GET metadata` (the CapabilityStatement a FHIR client reads first),
//! the search parameters a search accepts (`search_parameters`: an unknown one is ignored
//! and left out of the self link, or refused with `Prefer: handling=strict`), and the
//! answer to a type this server does not serve (404, never an empty Bundle that would read
//! as "no records"). `outcomes` makes every error under `/ws/fhir2` an OperationOutcome.

use crate::http::AppState;
use crate::http::fhir::{fhir, outcome};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// A resource type this server serves: its interactions and its search parameters.
pub struct Supported {
    pub kind: &'static str,
    pub search: &'static [&'static str],
    pub create: bool,
    pub update: bool,
    pub patch: bool,
    pub delete: bool,
    /// `search` is false for types read by id only.
    pub searchable: bool,
    /// Whether the CapabilityStatement names it (an R4 statement cannot name an R5 type).
    pub listed: bool,
}

const fn read_search(kind: &'static str, search: &'static [&'static str]) -> Supported {
    Supported {
        kind,
        search,
        create: false,
        update: false,
        patch: false,
        delete: false,
        searchable: true,
        listed: true,
    }
}

/// The patient a clinical search names, in every form fhir2 accepts.
const SUBJECT: [&str; 4] = ["patient", "patient:Patient", "subject", "subject:Patient"];

/// Accepted by every search: paging, and what the answer holds.
pub const COMMON: &[&str] = &[
    "_count",
    "_getpagesoffset",
    "_summary",
    "_sort",
    "_format",
    "_pretty",
];

pub const SUPPORTED: &[Supported] = &[
    Supported {
        create: true,
        update: true,
        ..read_search("Patient", crate::domains::patient::fhir::SEARCH_PARAMS)
    },
    read_search(
        "Person",
        crate::domains::patient::fhir::PERSON_SEARCH_PARAMS,
    ),
    read_search(
        "Location",
        &[
            "_id",
            "name",
            "name:contains",
            "_tag",
            "partof",
            "partof:below",
            "address-city",
            "address-state",
            "address-country",
            "address-postalcode",
        ],
    ),
    Supported {
        create: true,
        ..read_search(
            "Observation",
            &[
                SUBJECT[0],
                SUBJECT[1],
                SUBJECT[2],
                SUBJECT[3],
                "code",
                "category",
                "encounter.type",
                "date",
                "_lastUpdated",
                "_total",
                "value-quantity",
                "value-concept",
                "value-string",
                "value-date",
                "has-member",
            ],
        )
    },
    Supported {
        create: true,
        ..read_search(
            "Encounter",
            &[
                SUBJECT[0],
                SUBJECT[1],
                SUBJECT[2],
                SUBJECT[3],
                "type",
                "_query",
                "date",
                "status",
                "patientSearchTerm",
                "location",
                "participant",
                "_lastUpdated",
                "_total",
            ],
        )
    },
    Supported {
        create: true,
        update: true,
        ..read_search(
            "Condition",
            &[
                SUBJECT[0],
                SUBJECT[1],
                SUBJECT[2],
                SUBJECT[3],
                "category",
                "clinical-status",
            ],
        )
    },
    read_search(
        "AllergyIntolerance",
        &[SUBJECT[0], SUBJECT[1], SUBJECT[2], SUBJECT[3]],
    ),
    Supported {
        create: true,
        update: true,
        ..read_search(
            "Immunization",
            &[SUBJECT[0], SUBJECT[1], SUBJECT[2], SUBJECT[3]],
        )
    },
    Supported {
        patch: true,
        ..read_search(
            "MedicationRequest",
            &[
                SUBJECT[0],
                SUBJECT[1],
                SUBJECT[2],
                SUBJECT[3],
                "encounter",
                "status",
                "fulfillerStatus",
                "_revinclude",
                "_include",
            ],
        )
    },
    Supported {
        create: true,
        update: true,
        delete: true,
        ..read_search(
            "MedicationDispense",
            &[
                SUBJECT[0],
                SUBJECT[1],
                SUBJECT[2],
                SUBJECT[3],
                "prescription",
                "context",
                "encounter",
            ],
        )
    },
    read_search("Medication", &["code"]),
    // An R5 type, answered under this base as OpenMRS's fhirproxy module passes it to an
    // inventory server beside fhir2: served, not named by fhir2's R4 CapabilityStatement.
    Supported {
        listed: false,
        ..read_search("InventoryItem", &["code"])
    },
    read_search(
        "DiagnosticReport",
        crate::domains::encounter::diagnostic_report::SEARCH_PARAMS,
    ),
    read_search("RelatedPerson", &["_id", SUBJECT[0], SUBJECT[1]]),
    read_search(
        "ServiceRequest",
        &[
            SUBJECT[0],
            SUBJECT[1],
            SUBJECT[2],
            SUBJECT[3],
            "encounter",
            "code",
            "status",
        ],
    ),
    read_search(
        "Practitioner",
        crate::domains::provider::fhir::SEARCH_PARAMS,
    ),
    read_search("Group", crate::domains::cohort::fhir::SEARCH_PARAMS),
    Supported {
        searchable: false,
        ..read_search("ValueSet", &[])
    },
];

pub fn supported(kind: &str) -> Option<&'static Supported> {
    SUPPORTED.iter().find(|s| s.kind == kind)
}

/// `GET metadata`: the CapabilityStatement, exactly what `SUPPORTED` says of the types it
/// lists.
pub async fn metadata(State(state): State<Arc<AppState>>) -> Response {
    let resources: Vec<Value> = SUPPORTED
        .iter()
        .filter(|s| s.listed)
        .map(|s| {
            let mut interactions = vec![json!({"code": "read"})];
            for (on, code) in [
                (s.searchable, "search-type"),
                (s.create, "create"),
                (s.update, "update"),
                (s.patch, "patch"),
                (s.delete, "delete"),
            ] {
                if on {
                    interactions.push(json!({ "code": code }));
                }
            }
            let mut r = json!({"type": s.kind, "interaction": interactions});
            match s.kind {
                "Patient" => {
                    r["operation"] = crate::app::export::patient_operations();
                    r["searchRevInclude"] = json!(crate::app::export::PATIENT_REVINCLUDES);
                }
                "MedicationRequest" => {
                    r["searchInclude"] = json!(["MedicationRequest:encounter"]);
                    r["searchRevInclude"] = json!(["MedicationDispense:prescription"]);
                }
                "Observation" => {
                    r["operation"] = json!([{"name": "lastn",
                        "definition": "http://hl7.org/fhir/OperationDefinition/Observation-lastn"}])
                }
                "Group" => r["operation"] = crate::app::export::group_operations(),
                _ => {}
            }
            if s.searchable {
                // Parameters by name, once each (R4's cpb-12): a modifier (`:contains`,
                // `:Patient`, `:below`) is not a name, and `_format` and `_pretty` are
                // general parameters, not search ones.
                let mut names: Vec<&str> = Vec::new();
                for p in s.search.iter().chain(COMMON) {
                    let name = p.split(':').next().unwrap_or(p);
                    // `_include` and `_revinclude` are declared as `searchInclude` and
                    // `searchRevInclude`, not as parameters.
                    let general =
                        matches!(name, "_format" | "_pretty" | "_include" | "_revinclude");
                    if !names.contains(&name) && !general {
                        names.push(name);
                    }
                }
                r["searchParam"] = Value::Array(
                    names
                        .into_iter()
                        .map(|p| json!({"name": p, "type": param_type(p)}))
                        .collect(),
                );
            }
            r
        })
        .collect();
    let catalog = state.catalog.load();
    fhir(
        StatusCode::OK,
        json!({
            "resourceType": "CapabilityStatement",
            "status": "active",
            "date": "2026-11-28",
            "kind": "instance",
            "software": {"name": "DSE RDC runtime", "version": env!("CARGO_PKG_VERSION")},
            "implementation": {
                "description": format!("DSE RDC, content {}", catalog.header.content_hash),
                "url": format!("{}/ws/fhir2/R4", state.config.app_path),
            },
            "fhirVersion": "4.0.1",
            "format": ["application/fhir+json", "json"],
            "rest": [{"mode": "server", "resource": resources, "operation": crate::app::export::system_operations()}],
        }),
    )
}

/// The FHIR type of a search parameter, as the CapabilityStatement declares it.
fn param_type(p: &str) -> &'static str {
    match p {
        "_count" | "_getpagesoffset" => "number",
        "birthdate" | "deathdate" | "date" | "_lastUpdated" => "date",
        "patient" | "patient:Patient" | "subject" | "subject:Patient" | "encounter"
        | "prescription" | "context" | "location" | "partof" | "partof:below" => "reference",
        "name" | "given" | "family" | "name:contains" | "address-city" | "address-state"
        | "address-country" | "address-postalcode" | "patientSearchTerm" | "_query" => "string",
        _ => "token",
    }
}

/// The type a FHIR path names (`/…/ws/fhir2/R4/<Type>[/…]`) and whether it names one
/// resource.
fn path_type<'a>(path: &'a str, prefix: &str) -> Option<(&'a str, bool)> {
    let rest = path.strip_prefix(prefix)?.trim_start_matches('/');
    let mut parts = rest.split('/').filter(|p| !p.is_empty());
    let kind = parts.next()?;
    Some((kind, parts.next().is_some()))
}

/// Whether the request asks to be refused rather than have unknown parameters ignored.
fn strict(req: &Request) -> bool {
    req.headers()
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split([',', ';']).any(|p| p.trim() == "handling=strict"))
}

/// Before a FHIR search: an unknown type is refused with 404, an unknown search parameter
/// is dropped (so the handler and the self link never see it) or, in strict handling,
/// refused with 400. After any FHIR call: an error that is not already an OperationOutcome
/// becomes one (OpenMRS's REST error body is what the shared extractors and `ApiError`
/// write).
pub async fn outcomes(
    State(state): State<Arc<AppState>>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(rest) = req
        .uri()
        .path()
        .strip_prefix(state.config.app_path.as_str())
        .and_then(|r| r.strip_prefix("/ws/fhir2/R4"))
    else {
        return next.run(req).await;
    };
    let path = req.uri().path().to_string();
    let Some((kind, one)) = path_type(rest, "") else {
        return next.run(req).await;
    };
    // System-level operations (`$export` and its poll and files) are not types.
    if kind != "metadata" && !kind.starts_with('$') && supported(kind).is_none() {
        return outcome(
            StatusCode::NOT_FOUND,
            "error",
            "not-supported",
            &format!(
                "This server does not serve {kind} resources (GET metadata lists those it does)"
            ),
        );
    }
    if !one
        && req.method() == axum::http::Method::GET
        && let Some(s) = supported(kind)
        && let Some(query) = req.uri().query().map(str::to_string)
    {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        // Exact names only: a modifier this server does not read (`family:exact`) is a
        // parameter it does not support.
        let known = |k: &str| s.search.contains(&k) || COMMON.contains(&k);
        let unknown: Vec<&str> = pairs
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !known(k))
            .collect();
        if !unknown.is_empty() {
            if strict(&req) {
                return outcome(
                    StatusCode::BAD_REQUEST,
                    "error",
                    "not-supported",
                    &format!(
                        "{kind} searches do not support {}: supported are {}",
                        unknown.join(", "),
                        s.search.join(", ")
                    ),
                );
            }
            let kept: String = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(pairs.iter().filter(|(k, _)| known(k)))
                .finish();
            let uri = if kept.is_empty() {
                path.clone()
            } else {
                format!("{path}?{kept}")
            };
            if let Ok(uri) = uri.parse() {
                *req.uri_mut() = uri;
            }
        }
    }
    let res = next.run(req).await;
    let is_fhir = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/fhir+json"));
    if res.status().as_u16() < 400 || is_fhir {
        return res;
    }
    let status = res.status();
    let (parts, body) = res.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let message = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
    let code = match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => "security",
        StatusCode::NOT_FOUND => "not-found",
        StatusCode::METHOD_NOT_ALLOWED => "not-supported",
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::INSUFFICIENT_STORAGE => "transient",
        s if s.is_server_error() => "exception",
        _ => "invalid",
    };
    let mut rewritten = outcome(status, "error", code, &message);
    // Keep what the original answer said of itself beside its body (WWW-Authenticate,
    // Retry-After, Set-Cookie).
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rewritten.headers_mut().insert(name.clone(), value.clone());
        }
    }
    rewritten.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_its_type_and_whether_it_names_one_resource() {
        let p = "/openmrs/ws/fhir2/R4";
        assert_eq!(
            path_type("/openmrs/ws/fhir2/R4/Patient", p),
            Some(("Patient", false))
        );
        assert_eq!(
            path_type("/openmrs/ws/fhir2/R4/Patient/x", p),
            Some(("Patient", true))
        );
        assert_eq!(path_type("/openmrs/ws/rest/v1/patient", p), None);
    }

    #[test]
    fn every_served_type_is_listed_once() {
        let mut kinds: Vec<&str> = SUPPORTED.iter().map(|s| s.kind).collect();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), SUPPORTED.len());
    }
}
