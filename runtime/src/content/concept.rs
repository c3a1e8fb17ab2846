//! `concept` (by uuid or `SOURCE:CODE`, and `?q=` name search) with its sub-resources:
//! names, descriptions, mappings; and the datatype and class objects it nests.

use crate::content::metadata::{NAMED_DEFAULT_PROPS, NAMED_FULL_PROPS, named_prop};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested, nested_list, render};
use crate::http::{Caller, QueryPairs, ok, ok_bytes, param};
use crate::search::fold;
use axum::extract::{Path, State};
use axum::response::Response;
use model::{
    Concept, ConceptClass, ConceptDatatype, ConceptDescription, ConceptMapping, ConceptName,
};
use serde_json::{Value, json};
use std::sync::Arc;

pub struct ConceptRes<'a>(pub &'a Concept);

fn name_in<'a>(c: &'a Concept, ctx: &Ctx) -> Option<&'a ConceptName> {
    c.display_name(&ctx.locale, &ctx.fallbacks())
}

impl Resource for ConceptRes<'_> {
    fn alias(&self) -> &'static str {
        "concept"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        let code = format!("ui.i18n.Concept.name.{}", self.0.uuid);
        if let Some(m) = ctx.catalog.message(&code, &ctx.locale) {
            return m.to_string();
        }
        name_in(self.0, ctx)
            .map(|n| n.name.clone())
            .unwrap_or_default()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("datatype", Rep::Ref),
            ("conceptClass", Rep::Ref),
            ("set", Rep::Default),
            ("version", Rep::Default),
            ("retired", Rep::Default),
            ("names", Rep::Ref),
            ("descriptions", Rep::Ref),
            ("mappings", Rep::Ref),
            ("answers", Rep::Ref),
            ("setMembers", Rep::Ref),
            ("attributes", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        if self.0.numeric.is_some() {
            &[
                ("uuid", Rep::Default),
                ("display", Rep::Default),
                ("name", Rep::Default),
                ("datatype", Rep::Default),
                ("conceptClass", Rep::Default),
                ("set", Rep::Default),
                ("version", Rep::Default),
                ("retired", Rep::Default),
                ("names", Rep::Default),
                ("descriptions", Rep::Default),
                ("mappings", Rep::Default),
                ("answers", Rep::Default),
                ("setMembers", Rep::Default),
                ("auditInfo", Rep::Default),
                ("hiNormal", Rep::Default),
                ("hiAbsolute", Rep::Default),
                ("hiCritical", Rep::Default),
                ("lowNormal", Rep::Default),
                ("lowAbsolute", Rep::Default),
                ("lowCritical", Rep::Default),
                ("units", Rep::Default),
                ("allowDecimal", Rep::Default),
                ("displayPrecision", Rep::Default),
                ("attributes", Rep::Default),
            ]
        } else {
            &[
                ("uuid", Rep::Default),
                ("display", Rep::Default),
                ("name", Rep::Default),
                ("datatype", Rep::Default),
                ("conceptClass", Rep::Default),
                ("set", Rep::Default),
                ("version", Rep::Default),
                ("retired", Rep::Default),
                ("names", Rep::Default),
                ("descriptions", Rep::Default),
                ("mappings", Rep::Default),
                ("answers", Rep::Default),
                ("setMembers", Rep::Default),
                ("auditInfo", Rep::Default),
                ("attributes", Rep::Default),
            ]
        }
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let c = self.0;
        let numeric = c.numeric.as_ref();
        let uuid = c.uuid.as_str();
        Some(match name {
            "name" => nested(
                name_in(c, ctx)
                    .map(|n| NameRes(uuid, n))
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "datatype" => nested(
                ctx.catalog
                    .content
                    .concept_datatypes
                    .iter()
                    .find(|d| d.name == c.datatype)
                    .map(DatatypeRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "conceptClass" => nested(
                ctx.catalog
                    .content
                    .concept_classes
                    .iter()
                    .find(|k| k.name == c.class)
                    .map(ClassRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "set" => Value::Bool(c.is_set),
            "version" => json!(c.version),
            "retired" => Value::Bool(c.retired),
            "names" => {
                let names: Vec<NameRes> = c.names.iter().map(|n| NameRes(uuid, n)).collect();
                nested_list(names.iter().map(|n| n as &dyn Resource), rep, ctx)
            }
            "descriptions" => {
                let ds: Vec<DescriptionRes> = c
                    .descriptions
                    .iter()
                    .map(|d| DescriptionRes(uuid, d))
                    .collect();
                nested_list(ds.iter().map(|d| d as &dyn Resource), rep, ctx)
            }
            // `conceptMappings` is the bean property the form engine names.
            "mappings" | "conceptMappings" => {
                let ms: Vec<MappingRes> = c.mappings.iter().map(|m| MappingRes(uuid, m)).collect();
                nested_list(ms.iter().map(|m| m as &dyn Resource), rep, ctx)
            }
            "answers" | "setMembers" => {
                let list = if name == "answers" {
                    &c.answers
                } else {
                    &c.set_members
                };
                let concepts: Vec<ConceptRes> = list
                    .iter()
                    .filter_map(|u| ctx.catalog.content.concept(u))
                    .map(ConceptRes)
                    .collect();
                nested_list(concepts.iter().map(|x| x as &dyn Resource), rep, ctx)
            }
            "attributes" => json!([]),
            "auditInfo" => content_audit_info(),
            "hiNormal" => json!(numeric.and_then(|n| n.hi_normal)),
            "hiAbsolute" => json!(numeric.and_then(|n| n.hi_absolute)),
            "hiCritical" => json!(numeric.and_then(|n| n.hi_critical)),
            "lowNormal" => json!(numeric.and_then(|n| n.low_normal)),
            "lowAbsolute" => json!(numeric.and_then(|n| n.low_absolute)),
            "lowCritical" => json!(numeric.and_then(|n| n.low_critical)),
            "units" => json!(numeric.and_then(|n| n.units.clone())),
            "allowDecimal" => json!(numeric.map(|n| n.allow_decimal)),
            "displayPrecision" => json!(numeric.and_then(|n| n.display_precision)),
            "conceptId" => Value::Null,
            _ => return None,
        })
    }
}

/// Content comes from the bundle: created by the system at build time.
pub fn content_audit_info() -> Value {
    json!({"creator": null, "dateCreated": null, "changedBy": null, "dateChanged": null})
}

pub struct NameRes<'a>(pub &'a str, pub &'a ConceptName);

impl Resource for NameRes<'_> {
    fn alias(&self) -> &'static str {
        "name"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("concept/{}/name/{}", self.0, self.1.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        self.1.name.clone()
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("name", Rep::Default),
            ("locale", Rep::Default),
            ("localePreferred", Rep::Default),
            ("conceptNameType", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("name", Rep::Default),
            ("locale", Rep::Default),
            ("localePreferred", Rep::Default),
            ("conceptNameType", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "name" => json!(self.1.name),
            "locale" => json!(self.1.locale),
            "localePreferred" => json!(self.1.locale_preferred),
            "conceptNameType" => json!(self.1.name_type.rest_name()),
            "auditInfo" => content_audit_info(),
            _ => return None,
        })
    }
}

pub struct DescriptionRes<'a>(pub &'a str, pub &'a ConceptDescription);

impl Resource for DescriptionRes<'_> {
    fn alias(&self) -> &'static str {
        "description"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("concept/{}/description/{}", self.0, self.1.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        self.1.description.clone()
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("description", Rep::Default),
            ("locale", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("description", Rep::Default),
            ("locale", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "description" => json!(self.1.description),
            "locale" => json!(self.1.locale),
            "auditInfo" => content_audit_info(),
            _ => return None,
        })
    }
}

pub struct MappingRes<'a>(pub &'a str, pub &'a ConceptMapping);

impl Resource for MappingRes<'_> {
    fn alias(&self) -> &'static str {
        "mapping"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("concept/{}/mapping/{}", self.0, self.1.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        format!("{}: {}", self.1.source, self.1.code)
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("conceptReferenceTerm", Rep::Ref),
            ("conceptMapType", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("conceptReferenceTerm", Rep::Default),
            ("conceptMapType", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let m = self.1;
        Some(match name {
            "conceptReferenceTerm" => {
                let source = ctx
                    .catalog
                    .content
                    .concept_sources
                    .iter()
                    .find(|s| s.name == m.source);
                json!({
                    "uuid": compiler::csvtable::derive_uuid(&format!("term/{}/{}", m.source, m.code)),
                    "display": format!("{}: {}", m.source, m.code),
                    "code": m.code,
                    "conceptSource": source.map(|s| json!({"uuid": s.uuid, "display": s.name, "name": s.name, "hl7Code": s.hl7_code})),
                })
            }
            "conceptMapType" => {
                let t = ctx
                    .catalog
                    .content
                    .concept_map_types
                    .iter()
                    .find(|t| t.name.eq_ignore_ascii_case(&m.map_type));
                json!({"uuid": t.map(|t| t.uuid.clone()), "display": m.map_type, "name": m.map_type})
            }
            "auditInfo" => content_audit_info(),
            _ => return None,
        })
    }
}

pub struct DatatypeRes<'a>(pub &'a ConceptDatatype);

impl Resource for DatatypeRes<'_> {
    fn alias(&self) -> &'static str {
        "conceptdatatype"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("hl7Abbreviation", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("hl7Abbreviation", Rep::Default),
            ("retired", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "name" => json!(self.0.name),
            "description" => json!(self.0.description),
            "hl7Abbreviation" => json!(self.0.hl7_abbreviation),
            "retired" => json!(false),
            "auditInfo" => content_audit_info(),
            _ => return None,
        })
    }
}

pub struct ClassRes<'a>(pub &'a ConceptClass);

impl Resource for ClassRes<'_> {
    fn alias(&self) -> &'static str {
        "conceptclass"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        NAMED_DEFAULT_PROPS
    }
    fn full_props(&self) -> Props {
        NAMED_FULL_PROPS
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        named_prop(name, &self.0.name, &self.0.description, self.0.retired)
    }
}

/// `GET concept/{uuid | SOURCE:CODE}` — privilege: Get Concepts.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(reference): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let catalog = state.catalog.load();
    let concept = catalog.concept(&reference).ok_or(ApiError::NotFound)?;
    let ctx = caller.ctx(&state, &catalog);
    // A concept's representation depends only on the catalog and on what the key holds.
    let key = format!(
        "concept\0{reference}\0{query:?}\0{}\0{}\0{:?}",
        ctx.base, ctx.locale, ctx.fallbacks
    );
    if let Some(body) = catalog.rendered.get(&key) {
        return Ok(ok_bytes(body));
    }
    let body = axum::body::Bytes::from(render(&ConceptRes(concept), &rep, &ctx)?.to_string());
    catalog.rendered.insert(key, body.clone());
    Ok(ok_bytes(body))
}

/// `GET concept?q=` (word prefixes of any name, accent-insensitive), `?code=&source=`,
/// `?name=` (exact fully specified name), `?references=a,SOURCE:CODE` (uuids or mappings)
/// — privilege: Get Concepts.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Ref);
    let paging = Paging::from_query(&query)?;
    let catalog = state.catalog.load();
    let content = &catalog.content;
    // `name=…&searchType=fuzzy` (the notes' diagnosis search) matches like `q`.
    let fuzzy = param(&query, "searchType").is_some_and(|t| t.eq_ignore_ascii_case("fuzzy"));
    let found: Vec<&Concept> = if let Some(references) = param(&query, "references") {
        // The form engine's lookup: uuids or SOURCE:CODE mappings, comma-separated; each
        // concept once, in the order asked.
        let mut out: Vec<&Concept> = Vec::new();
        for c in references
            .split(',')
            .map(str::trim)
            .filter_map(|r| catalog.concept(r))
        {
            if !out.iter().any(|o| o.uuid == c.uuid) {
                out.push(c);
            }
        }
        out
    } else if let (Some(code), Some(source)) = (param(&query, "code"), param(&query, "source")) {
        catalog
            .concept(&format!("{source}:{code}"))
            .into_iter()
            .collect()
    } else if let Some(name) = param(&query, "name").filter(|_| !fuzzy) {
        content
            .indexes
            .concept_by_name
            .get(&name.to_lowercase())
            .into_iter()
            .flatten()
            .map(|&i| &content.concepts[i as usize])
            .collect()
    } else if let Some(q) = param(&query, "q").or(param(&query, "name")) {
        let terms: Vec<String> = fold(q).split_whitespace().map(str::to_string).collect();
        if terms.is_empty() {
            Vec::new()
        } else {
            content
                .concepts
                .iter()
                .filter(|c| !c.retired)
                .filter(|c| {
                    c.names.iter().any(|n| {
                        let words: Vec<String> = fold(&n.name)
                            .split(|ch: char| !ch.is_alphanumeric())
                            .filter(|w| !w.is_empty())
                            .map(str::to_string)
                            .collect();
                        terms
                            .iter()
                            .all(|t| words.iter().any(|w| w.starts_with(t.as_str())))
                    })
                })
                .collect()
        }
    } else {
        return Err(ApiError::BadRequest(
            "The search with the given parameters is not valid: use q, name, references, or code and source"
                .into(),
        ));
    };
    // `class=` (a concept class's uuid or name) narrows any search.
    let class = param(&query, "class").map(|k| {
        content
            .concept_classes
            .iter()
            .find(|c| c.uuid == k || c.name.eq_ignore_ascii_case(k))
            .map(|c| (c.uuid.clone(), c.name.clone()))
            .unwrap_or_else(|| (k.to_string(), k.to_string()))
    });
    let found: Vec<&Concept> = match &class {
        Some((uuid, name)) => found
            .into_iter()
            .filter(|c| &c.class == uuid || c.class.eq_ignore_ascii_case(name))
            .collect(),
        None => found,
    };
    let ctx = caller.ctx(&state, &catalog);
    let items = found
        .into_iter()
        .map(|c| render(&ConceptRes(c), &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(paging.page(
        items,
        &caller.request_url(&state, "/concept", &query),
    )))
}

/// `POST conceptreferences` with `{"references": ["uuid", "SOURCE:CODE", …]}`: each
/// reference that names a concept, mapped to the concept in the request's representation
/// (the form engine's batch lookup; REST module 2.4's `ConceptReferenceController`) —
/// privilege: Get Concepts.
pub async fn references(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    crate::http::JsonBody(body): crate::http::JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let Some(serde_json::Value::Array(references)) = body.get("references") else {
        return Err(ApiError::BadRequest(
            "The body must be {\"references\": [uuids or SOURCE:CODE]}".into(),
        ));
    };
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let mut out = serde_json::Map::new();
    for reference in references {
        let Some(reference) = reference.as_str() else {
            return Err(ApiError::BadRequest("references must be strings".into()));
        };
        if let Some(c) = catalog.concept(reference.trim()) {
            out.insert(reference.to_string(), render(&ConceptRes(c), &rep, &ctx)?);
        }
    }
    Ok(ok(serde_json::Value::Object(out)))
}
