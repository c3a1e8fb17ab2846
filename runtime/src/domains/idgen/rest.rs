//! `idgen/identifiersource`, `idgen/autogenerationoption` and identifier generation
//! (`POST idgen/identifiersource/{uuid}/identifier`). Each generated identifier comes from
//! a durable counter committed before the answer, so none is ever handed out twice, even
//! across a crash (a crash may skip values, never repeat them).

use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested, render};
use crate::http::{Caller, QueryPairs, blocking, ok, param};
use crate::identifiers;
use axum::extract::{Path, State};
use axum::response::Response;
use model::{AutogenerationOption, IdentifierSource, IdentifierSourceKind};
use serde_json::{Value, json};
use std::sync::Arc;

pub struct SourceRes<'a>(pub &'a IdentifierSource);

impl Resource for SourceRes<'_> {
    fn alias(&self) -> &'static str {
        "identifiersource"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("idgen/identifiersource/{}", self.0.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("identifierType", Rep::Ref),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("identifierType", Rep::Default),
            ("prefix", Rep::Default),
            ("suffix", Rep::Default),
            ("firstIdentifierBase", Rep::Default),
            ("baseCharacterSet", Rep::Default),
            ("minLength", Rep::Default),
            ("maxLength", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let s = self.0;
        let seq = match &s.kind {
            IdentifierSourceKind::Sequential {
                prefix,
                suffix,
                first_identifier_base,
                base_character_set,
                min_length,
                max_length,
            } => Some((
                prefix,
                suffix,
                first_identifier_base,
                base_character_set,
                min_length,
                max_length,
            )),
            _ => None,
        };
        Some(match name {
            "name" => json!(s.name),
            "description" => json!(s.description),
            "retired" => json!(s.retired),
            "identifierType" => nested(
                ctx.catalog
                    .identifier_type(&s.identifier_type)
                    .map(crate::content::person_types::IdentifierTypeRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "prefix" => json!(seq.and_then(|q| q.0.clone())),
            "suffix" => json!(seq.and_then(|q| q.1.clone())),
            "firstIdentifierBase" => json!(seq.map(|q| q.2.clone())),
            "baseCharacterSet" => json!(seq.map(|q| q.3.clone())),
            "minLength" => json!(seq.and_then(|q| *q.4)),
            "maxLength" => json!(seq.and_then(|q| *q.5)),
            _ => return None,
        })
    }
}

pub struct OptionRes<'a>(pub &'a AutogenerationOption);

impl Resource for OptionRes<'_> {
    fn alias(&self) -> &'static str {
        "autogenerationoption"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("idgen/autogenerationoption/{}", self.0.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        ctx.catalog
            .identifier_type(&self.0.identifier_type)
            .map(|t| t.name.clone())
            .unwrap_or_default()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("identifierType", Rep::Ref),
            ("location", Rep::Ref),
            ("source", Rep::Ref),
            ("manualEntryEnabled", Rep::Default),
            ("automaticGenerationEnabled", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("identifierType", Rep::Default),
            ("location", Rep::Default),
            ("source", Rep::Default),
            ("manualEntryEnabled", Rep::Default),
            ("automaticGenerationEnabled", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let o = self.0;
        Some(match name {
            "identifierType" => nested(
                ctx.catalog
                    .identifier_type(&o.identifier_type)
                    .map(crate::content::person_types::IdentifierTypeRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "location" => nested(
                o.location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(crate::content::location::LocationRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "source" => nested(
                ctx.catalog
                    .identifier_source(&o.source)
                    .map(SourceRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "manualEntryEnabled" => json!(o.manual_entry_enabled),
            "automaticGenerationEnabled" => json!(o.automatic_generation_enabled),
            _ => return None,
        })
    }
}

/// `GET idgen/identifiersource` — privilege: Get Identifier Types.
pub async fn sources(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Identifier Types"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Ref);
    let paging = Paging::from_query(&query)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let items = catalog
        .content
        .identifier_sources
        .iter()
        .filter(|s| !s.retired)
        .map(|s| render(&SourceRes(s), &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(paging.page(
        items,
        &caller.request_url(&state, "/idgen/identifiersource", &query),
    )))
}

/// `GET idgen/autogenerationoption` — privilege: Get Identifier Types.
pub async fn options(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Identifier Types"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Ref);
    let paging = Paging::from_query(&query)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let items = catalog
        .content
        .autogeneration_options
        .iter()
        .map(|o| render(&OptionRes(o), &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(paging.page(
        items,
        &caller.request_url(&state, "/idgen/autogenerationoption", &query),
    )))
}

/// `POST idgen/identifiersource/{uuid}/identifier` → `{"identifier": …}` — privilege: Add Patients.
pub async fn generate(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    // Read for its rules alone (a body that is not JSON is 415); generation takes no input.
    _body: crate::http::JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Patients"])?;
    let catalog = state.catalog.load_full();
    let source = catalog
        .identifier_source(&uuid)
        .filter(|s| !s.retired)
        .ok_or(ApiError::NotFound)?
        .clone();
    let id_type = catalog.identifier_type(&source.identifier_type).cloned();
    let st = state.clone();
    let key = source.uuid.clone();
    let n = blocking(move || st.store.next_counter(&key).map_err(ApiError::from)).await?;
    let identifier = identifiers::generate(&source.kind, n, id_type.as_ref())
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    Ok(ok(json!({"identifier": identifier})))
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route(
            &paths.rest("/idgen/identifiersource"),
            get(crate::domains::idgen::rest::sources),
        )
        .route(
            &paths.rest("/idgen/identifiersource/{uuid}/identifier"),
            post(crate::domains::idgen::rest::generate),
        )
        .route(
            &paths.rest("/idgen/autogenerationoption"),
            get(crate::domains::idgen::rest::options),
        )
}
