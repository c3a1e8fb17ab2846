//! The content's O3 forms: `form` (the forms with their `JSON schema` resource, which marks a
//! form the O3 form engine renders), `clobdata/{uuid}` (the schema itself, as OpenMRS keeps
//! it in a clob) and `o3/forms/{uuid or name}` (the O3 forms module's compiled form: the
//! schema with its encounter type as an object, the translations for the caller's
//! language, and every concept it refers to resolved to its uuid and display).

use crate::content::concept::ConceptRes;
use crate::content::metadata::EncounterTypeRes;
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource, nested, render};
use crate::http::{Caller, QueryPairs, ok, param};
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use model::Form;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The one resource of a form: its JSON schema, stored as a clob.
const SCHEMA_RESOURCE: &str = "JSON schema";

/// The uuid of a form's schema clob (stable: derived from the form's uuid).
pub fn schema_clob_uuid(form: &Form) -> String {
    compiler::csvtable::derive_uuid(&format!("form/{}/clob", form.uuid))
}

fn schema_resource_uuid(form: &Form) -> String {
    compiler::csvtable::derive_uuid(&format!("form/{}/resource/{SCHEMA_RESOURCE}", form.uuid))
}

/// The content's translation of a form into the caller's language (translations name
/// their form by its name).
fn translation<'c>(form: &Form, ctx: &'c Ctx) -> Option<&'c model::FormTranslation> {
    let language = ctx.locale.split(['-', '_']).next().unwrap_or("");
    ctx.catalog.content.form_translations.iter().find(|t| {
        (t.form.eq_ignore_ascii_case(&form.name) || t.form == form.uuid) && t.language == language
    })
}

/// The form's name in the caller's language.
fn translated_name(form: &Form, ctx: &Ctx) -> Option<String> {
    translation(form, ctx).and_then(|t| t.form_name_translation.clone())
}

pub struct FormRes<'a>(pub &'a Form);
struct FormResourceRes<'a>(&'a Form);

impl Resource for FormRes<'_> {
    fn alias(&self) -> &'static str {
        "form"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        translated_name(self.0, ctx).unwrap_or_else(|| self.0.name.clone())
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
            ("encounterType", Rep::Ref),
            ("version", Rep::Default),
            ("build", Rep::Default),
            ("published", Rep::Default),
            ("formFields", Rep::Default),
            ("retired", Rep::Default),
            ("resources", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("encounterType", Rep::Default),
            ("version", Rep::Default),
            ("build", Rep::Default),
            ("published", Rep::Default),
            ("formFields", Rep::Default),
            ("retired", Rep::Default),
            ("resources", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let f = self.0;
        Some(match name {
            "name" => json!(f.name),
            "description" => json!(f.description),
            "encounterType" => nested(
                f.encounter_type
                    .as_deref()
                    .and_then(|u| {
                        ctx.catalog
                            .content
                            .encounter_types
                            .iter()
                            .find(|t| t.uuid == u)
                    })
                    .map(EncounterTypeRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "version" => json!(f.version),
            "build" => Value::Null,
            "published" => json!(f.published),
            // O3 forms keep their questions in the schema, not in form fields.
            "formFields" => json!([]),
            "retired" => json!(f.retired),
            "resources" => Value::Array(vec![nested(Some(&FormResourceRes(f)), rep, ctx)]),
            "auditInfo" => crate::content::concept::content_audit_info(),
            _ => return None,
        })
    }
}

impl Resource for FormResourceRes<'_> {
    fn alias(&self) -> &'static str {
        "resource"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        schema_resource_uuid(self.0)
    }
    fn path(&self) -> String {
        format!("form/{}/resource/{}", self.0.uuid, self.uuid())
    }
    fn display(&self, _: &Ctx) -> String {
        SCHEMA_RESOURCE.into()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("dataType", Rep::Default),
            ("valueReference", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "name" => json!(SCHEMA_RESOURCE),
            "dataType" => json!("AmpathJsonSchema"),
            "valueReference" => json!(schema_clob_uuid(self.0)),
            _ => return None,
        })
    }
}

fn find<'c>(catalog: &'c crate::catalog::Catalog, key: &str) -> Option<&'c Form> {
    let forms = &catalog.content.forms;
    forms
        .iter()
        .find(|f| f.uuid == key)
        .or_else(|| forms.iter().find(|f| f.name.eq_ignore_ascii_case(key)))
}

/// `GET form[?q=name]` (published or not, retired ones with `includeAll=true`) — privilege:
/// Get Forms.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Forms"])?;
    let catalog = state.catalog.load();
    let q = param(&query, "q").map(str::to_lowercase);
    let all = crate::http::answer::flag(&query, "includeAll").unwrap_or(false);
    let items: Vec<FormRes> = catalog
        .content
        .forms
        .iter()
        .filter(|f| all || !f.retired)
        .filter(|f| {
            q.as_ref()
                .is_none_or(|q| f.name.to_lowercase().contains(q.as_str()))
        })
        .map(FormRes)
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/form",
        items.iter().map(|f| f as &dyn Resource),
    )
}

/// `GET form/{uuid}` — privilege: Get Forms.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Forms"])?;
    let catalog = state.catalog.load();
    let form = catalog
        .content
        .forms
        .iter()
        .find(|f| f.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    Ok(ok(render(
        &FormRes(form),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `GET clobdata/{uuid}`: a form's JSON schema as the content wrote it — privilege: Get
/// Forms.
pub async fn clob(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Get Forms"])?;
    let catalog = state.catalog.load();
    let form = catalog
        .content
        .forms
        .iter()
        .find(|f| schema_clob_uuid(f) == uuid)
        .ok_or(ApiError::NotFound)?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json;charset=UTF-8")],
        form.schema_json.clone(),
    )
        .into_response())
}

/// Every concept reference a schema makes (`questionOptions.concept`, answers' `concept`,
/// and any `concept` deeper down), in order of first appearance.
fn concept_references(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                if k == "concept"
                    && let Value::String(s) = child
                    && !s.trim().is_empty()
                    && !out.contains(s)
                {
                    out.push(s.clone());
                }
                concept_references(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| concept_references(i, out)),
        _ => {}
    }
}

/// `GET o3/forms/{uuid or name}[?includeConceptReferences=false]` — privilege: Get Forms.
pub async fn compiled(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(key): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Forms"])?;
    let catalog = state.catalog.load();
    let form = find(&catalog, &key).ok_or(ApiError::NotFound)?;
    let ctx = caller.ctx(&state, &catalog);
    let mut schema: Map<String, Value> = serde_json::from_str(&form.schema_json)
        .map_err(|e| ApiError::internal(format!("the schema of {} is not JSON: {e}", form.name)))?;
    schema.insert("uuid".into(), json!(form.uuid));
    schema.insert(
        "encounterType".into(),
        match form
            .encounter_type
            .as_deref()
            .and_then(|u| catalog.content.encounter_types.iter().find(|t| t.uuid == u))
        {
            Some(t) => json!({"uuid": t.uuid, "display": EncounterTypeRes(t).display(&ctx)}),
            None => Value::Null,
        },
    );
    let translations: BTreeMap<String, String> = translation(form, &ctx)
        .map(|t| t.translations.clone())
        .unwrap_or_default();
    schema.insert("translations".into(), json!(translations));
    if crate::http::answer::flag(&query, "includeConceptReferences").unwrap_or(true) {
        let mut references = Vec::new();
        concept_references(&Value::Object(schema.clone()), &mut references);
        let rep = Rep::parse(param(&query, "v"))?.unwrap_or_else(|| {
            Rep::Custom(vec![
                ("uuid".into(), Rep::Default),
                ("display".into(), Rep::Default),
            ])
        });
        let mut resolved = Map::new();
        for reference in references {
            if let Some(c) = catalog.concept(&reference) {
                resolved.insert(reference, render(&ConceptRes(c), &rep, &ctx)?);
            }
        }
        schema.insert("conceptReferences".into(), Value::Object(resolved));
    }
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json;charset=UTF-8"),
            (header::CACHE_CONTROL, "no-cache, private"),
        ],
        Value::Object(schema).to_string(),
    )
        .into_response())
}
