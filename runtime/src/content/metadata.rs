//! Read-only metadata and the lists the O3 screens ask for: identifier and attribute
//! types, relationship, visit and encounter types, the content's queues, the address
//! template, the primary identifier type mapping (metadata term mappings) and the back-end
//! module list. Relationships, queue entries and patient lists are records of their own
//! domains.

use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested, render};
use crate::http::{Caller, QueryPairs, ok, param, render_list};
use axum::extract::{Path, State};
use axum::response::Response;
use model::{NamedMetadata, Queue, RelationshipType};
use serde_json::{Value, json};
use std::sync::Arc;

/// The default representation of plain named metadata (location tags, concept classes,
/// visit types…).
pub const NAMED_DEFAULT_PROPS: Props = &[
    ("uuid", Rep::Default),
    ("display", Rep::Default),
    ("name", Rep::Default),
    ("description", Rep::Default),
    ("retired", Rep::Default),
];

/// The full representation of plain named metadata.
pub const NAMED_FULL_PROPS: Props = &[
    ("uuid", Rep::Default),
    ("display", Rep::Default),
    ("name", Rep::Default),
    ("description", Rep::Default),
    ("retired", Rep::Default),
    ("auditInfo", Rep::Default),
];

/// The properties of `NAMED_FULL_PROPS` beyond uuid and display.
pub fn named_prop(
    prop: &str,
    name: &str,
    description: &Option<String>,
    retired: bool,
) -> Option<Value> {
    Some(match prop {
        "name" => json!(name),
        "description" => json!(description),
        "retired" => json!(retired),
        "auditInfo" => crate::content::concept::content_audit_info(),
        _ => return None,
    })
}

/// Visit types, encounter roles and other name/description metadata.
pub struct NamedRes<'a>(pub &'static str, pub &'a NamedMetadata);

impl Resource for NamedRes<'_> {
    fn alias(&self) -> &'static str {
        self.0
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        model::display_exact(&self.1.display, &ctx.locale)
            .map(str::to_string)
            .unwrap_or_else(|| self.1.name.clone())
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.1.retired))
    }
    fn default_props(&self) -> Props {
        NAMED_DEFAULT_PROPS
    }
    fn full_props(&self) -> Props {
        NAMED_FULL_PROPS
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        named_prop(name, &self.1.name, &self.1.description, self.1.retired)
    }
}

pub struct EncounterTypeRes<'a>(pub &'a model::EncounterType);

impl Resource for EncounterTypeRes<'_> {
    fn alias(&self) -> &'static str {
        "encountertype"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        model::display_exact(&self.0.display, &ctx.locale)
            .map(str::to_string)
            .unwrap_or_else(|| self.0.name.clone())
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        NAMED_DEFAULT_PROPS
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("viewPrivilege", Rep::Default),
            ("editPrivilege", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let p = |x: &Option<String>| {
            x.as_ref()
                .map(|p| json!({"display": p, "name": p}))
                .unwrap_or(Value::Null)
        };
        Some(match name {
            "name" => json!(self.0.name),
            "description" => json!(self.0.description),
            "retired" => json!(self.0.retired),
            "viewPrivilege" => p(&self.0.view_privilege),
            "editPrivilege" => p(&self.0.edit_privilege),
            _ => return None,
        })
    }
}

pub struct RelationshipTypeRes<'a>(pub &'a RelationshipType);

impl Resource for RelationshipTypeRes<'_> {
    fn alias(&self) -> &'static str {
        "relationshiptype"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        format!("{}/{}", self.0.a_is_to_b, self.0.b_is_to_a)
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("description", Rep::Default),
            ("aIsToB", Rep::Default),
            ("bIsToA", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("description", Rep::Default),
            ("aIsToB", Rep::Default),
            ("bIsToA", Rep::Default),
            ("weight", Rep::Default),
            ("preferred", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "description" => json!(self.0.description),
            "aIsToB" => json!(self.0.a_is_to_b),
            "bIsToA" => json!(self.0.b_is_to_a),
            "weight" => json!(self.0.weight),
            "preferred" => json!(self.0.preferred),
            "retired" => json!(self.0.retired),
            _ => return None,
        })
    }
}

pub struct QueueRes<'a>(pub &'a Queue);

impl Resource for QueueRes<'_> {
    fn alias(&self) -> &'static str {
        "queue"
    }
    fn version(&self) -> &'static str {
        "2.3"
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
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("location", Rep::Ref),
            ("service", Rep::Ref),
            ("allowedPriorities", Rep::Ref),
            ("allowedStatuses", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let concept = |u: &str| {
            ctx.catalog
                .content
                .concept(u)
                .map(crate::content::concept::ConceptRes)
        };
        let members = |set: &Option<String>, setting: &str| -> Value {
            let list: Vec<crate::content::concept::ConceptRes> =
                queue_set_members(ctx.store, ctx.catalog, set.as_deref(), setting)
                    .iter()
                    .filter_map(|m| ctx.catalog.content.concept(m))
                    .map(crate::content::concept::ConceptRes)
                    .collect();
            crate::http::repr::nested_list(list.iter().map(|r| r as &dyn Resource), rep, ctx)
        };
        Some(match name {
            "name" => json!(self.0.name),
            "description" => json!(self.0.description),
            "location" => nested(
                ctx.catalog
                    .location(&self.0.location)
                    .map(crate::content::location::LocationRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "service" => nested(
                concept(&self.0.service)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "allowedPriorities" => members(&self.0.priority_concept_set, PRIORITY_SET_SETTING),
            "allowedStatuses" => members(&self.0.status_concept_set, STATUS_SET_SETTING),
            "retired" => json!(self.0.retired),
            _ => return None,
        })
    }
}

type Q = QueryPairs;

pub async fn identifier_types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&["Get Identifier Types"])?;
    let catalog = state.catalog.load();
    let items: Vec<crate::content::person_types::IdentifierTypeRes> = catalog
        .content
        .patient_identifier_types
        .iter()
        .filter(|t| !t.retired)
        .map(crate::content::person_types::IdentifierTypeRes)
        .collect();
    render_list(
        &state,
        &caller,
        &query,
        "/patientidentifiertype",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn identifier_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&["Get Identifier Types"])?;
    let catalog = state.catalog.load();
    let t = catalog
        .content
        .patient_identifier_types
        .iter()
        .find(|t| t.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    Ok(ok(render(
        &crate::content::person_types::IdentifierTypeRes(t),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

pub async fn attribute_types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&["Get Person Attribute Types"])?;
    let catalog = state.catalog.load();
    let items: Vec<crate::content::person_types::AttributeTypeRes> = catalog
        .content
        .person_attribute_types
        .iter()
        .filter(|t| !t.retired)
        .map(crate::content::person_types::AttributeTypeRes)
        .collect();
    render_list(
        &state,
        &caller,
        &query,
        "/personattributetype",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn attribute_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&["Get Person Attribute Types"])?;
    let catalog = state.catalog.load();
    let t = catalog
        .person_attribute_type(&uuid)
        .ok_or(ApiError::NotFound)?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    Ok(ok(render(
        &crate::content::person_types::AttributeTypeRes(t),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

pub async fn relationship_types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&["Get Relationship Types"])?;
    let catalog = state.catalog.load();
    let items: Vec<RelationshipTypeRes> = catalog
        .content
        .relationship_types
        .iter()
        .filter(|t| !t.retired)
        .map(RelationshipTypeRes)
        .collect();
    render_list(
        &state,
        &caller,
        &query,
        "/relationshiptype",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn visit_types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&["Get Visit Types"])?;
    let catalog = state.catalog.load();
    let items: Vec<NamedRes> = catalog
        .content
        .visit_types
        .iter()
        .filter(|t| !t.retired)
        .map(|t| NamedRes("visittype", t))
        .collect();
    render_list(
        &state,
        &caller,
        &query,
        "/visittype",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn encounter_types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&["Get Encounter Types"])?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    // `q` matches the name or the displayed name, from their start, in any case.
    let q = param(&query, "q").map(str::to_lowercase);
    let items: Vec<EncounterTypeRes> = catalog
        .content
        .encounter_types
        .iter()
        .filter(|t| !t.retired)
        .map(EncounterTypeRes)
        .filter(|t| {
            q.as_ref().is_none_or(|q| {
                t.0.name.to_lowercase().starts_with(q.as_str())
                    || t.display(&ctx).to_lowercase().starts_with(q.as_str())
            })
        })
        .collect();
    render_list(
        &state,
        &caller,
        &query,
        "/encountertype",
        items.iter().map(|r| r as &dyn Resource),
    )
}

/// `GET encountertype/{uuid or name}`, as webservices.rest finds one (by uuid, then by its
/// name) — privilege: Get Encounter Types. Retired ones are read too.
pub async fn encounter_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&["Get Encounter Types"])?;
    let catalog = state.catalog.load();
    let types = &catalog.content.encounter_types;
    let t = types
        .iter()
        .find(|t| t.uuid == id)
        .or_else(|| types.iter().find(|t| t.name == id))
        .ok_or(ApiError::NotFound)?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    Ok(ok(render(
        &EncounterTypeRes(t),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

/// The queue module's settings naming the status and priority sets of queues that name
/// none of their own.
pub const STATUS_SET_SETTING: &str = "queue.statusConceptSetName";
pub const PRIORITY_SET_SETTING: &str = "queue.priorityConceptSetName";

/// The members of a queue's status or priority set (in the set's order), as the queue module
/// finds them: the queue's own set when it has members, else the set its setting names (a
/// concept's name, uuid or `SOURCE:CODE`). Packages often leave the queues' own sets empty
/// and configure the settings only.
pub fn queue_set_members(
    store: &crate::store::Store,
    catalog: &crate::catalog::Catalog,
    own: Option<&str>,
    setting: &str,
) -> Vec<String> {
    let members_of = |c: &model::Concept| c.set_members.clone();
    if let Some(members) = own
        .and_then(|s| catalog.concept(s))
        .map(members_of)
        .filter(|m| !m.is_empty())
    {
        return members;
    }
    let Some(named) = crate::clinic::setting(store, catalog, setting) else {
        return Vec::new();
    };
    let named = named.trim();
    catalog
        .concept(named)
        .or_else(|| {
            catalog
                .content
                .indexes
                .concept_by_name
                .get(&named.to_lowercase())
                .and_then(|found| found.first())
                .and_then(|&i| catalog.content.concepts.get(i as usize))
        })
        .map(members_of)
        .unwrap_or_default()
}

/// `metadatamapping/termmapping[?code=…][&source=…]`: the content's metadata term mappings
/// (`metadatatermmappings/`), narrowed by code and source; the primary identifier type the
/// O3 banner asks for (`emr.primaryIdentifierType`) comes from the setting of that name when
/// no mapping gives it.
pub async fn term_mappings(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&["Get Identifier Types"])?;
    let code = param(&query, "code");
    let source = param(&query, "source");
    let catalog = state.catalog.load();
    let json_of = |uuid: &str, source: &str, code: &str, class: &str, metadata: &str| {
        json!({
            "uuid": uuid,
            "display": format!("{source}: {code}"),
            "code": code,
            "name": code,
            "metadataSource": {"display": source},
            "metadataClass": class,
            "metadataUuid": metadata,
            "retired": false,
            "resourceVersion": "1.0",
        })
    };
    let mut results: Vec<Value> = catalog
        .content
        .metadata_term_mappings
        .iter()
        .filter(|m| code.is_none_or(|c| m.code == c) && source.is_none_or(|s| m.source == s))
        .map(|m| json_of(&m.uuid, &m.source, &m.code, &m.class_name, &m.metadata_uuid))
        .collect();
    let primary = "emr.primaryIdentifierType";
    if results.is_empty()
        && code == Some(primary)
        && source.is_none_or(|s| s == crate::clinic::EMRAPI_SOURCE)
        && let Some(uuid) = state.setting(primary).filter(|u| !u.is_empty())
    {
        let mapping_uuid = compiler::csvtable::derive_uuid(&format!("termmapping/{primary}"));
        results.push(json_of(
            &mapping_uuid,
            crate::clinic::EMRAPI_SOURCE,
            primary,
            "org.openmrs.PatientIdentifierType",
            &uuid,
        ));
    }
    // Custom representations here list plain properties (`metadataUuid`).
    if let Some(Rep::Custom(props)) = Rep::parse(param(&query, "v"))? {
        results = results
            .into_iter()
            .map(|r| {
                let mut o = serde_json::Map::new();
                for (p, _) in &props {
                    o.insert(p.clone(), r.get(p).cloned().unwrap_or(Value::Null));
                }
                Value::Object(o)
            })
            .collect();
    }
    Ok(ok(json!({"results": results})))
}

/// The back-end modules the front-end apps check for: the ones this server stands in for.
use model::{PLATFORM_VERSION, PROVIDED_MODULES as MODULES};

/// `module` — any logged-in caller.
pub async fn modules(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): Q,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let paging = Paging::from_query(&query)?;
    let custom = Rep::parse(param(&query, "v"))?;
    let base = format!("{}{}/ws/rest/v1", caller.origin, state.config.app_path);
    let items: Vec<Value> = MODULES
        .iter()
        .map(|(id, name, version)| {
            let full = json!({
                "uuid": id, "display": name, "name": name, "description": name, "packageName": format!("org.openmrs.module.{id}"),
                "author": "DSE RDC", "version": version, "started": true, "startupErrorMessage": null, "requireOpenmrsVersion": PLATFORM_VERSION,
                "links": [{"rel": "self", "uri": format!("{base}/module/{id}"), "resourceAlias": "module"}], "resourceVersion": "1.8",
            });
            match &custom {
                Some(Rep::Custom(props)) => {
                    let mut o = serde_json::Map::new();
                    for (p, _) in props {
                        o.insert(p.clone(), full.get(p).cloned().unwrap_or(Value::Null));
                    }
                    Value::Object(o)
                }
                Some(Rep::Ref) | None => json!({"uuid": id, "display": name, "links": full["links"]}),
                _ => full,
            }
        })
        .collect();
    Ok(ok(paging.page(
        items,
        &caller.request_url(&state, "/module", &query),
    )))
}

/// `addresstemplate`: the content's address template, labels in the caller's locale.
pub async fn address_template(
    State(state): State<Arc<AppState>>,
    caller: Caller,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let catalog = state.catalog.load();
    let Some(t) = &catalog.content.address_template else {
        return Ok(ok(json!({})));
    };
    let locale = caller.locale(&catalog);
    let label = |field: &str| -> String {
        let code = t
            .name_mappings
            .get(field)
            .cloned()
            .unwrap_or_else(|| format!("Location.{field}"));
        catalog
            .message(&code, &locale)
            .map(str::to_string)
            .unwrap_or(code)
    };
    let lines: Vec<Vec<Value>> = t
        .lines
        .iter()
        .map(|line| {
            line.iter()
                .map(|field| {
                    json!({
                        "isToken": "IS_ADDR_TOKEN",
                        "displayText": label(field),
                        "codeName": field,
                        "displaySize": t.size_mappings.get(field).cloned().unwrap_or_else(|| "20".into()),
                    })
                })
                .collect()
        })
        .collect();
    let name_mappings: serde_json::Map<String, Value> = t
        .name_mappings
        .keys()
        .map(|k| (k.clone(), json!(label(k))))
        .collect();
    Ok(ok(json!({
        "displayName": "Address template",
        "codeName": "default",
        "country": t.element_defaults.get("country"),
        "lines": lines,
        "lineByLineFormat": t.lines.iter().map(|l| l.join(" ")).collect::<Vec<_>>(),
        "nameMappings": name_mappings,
        "sizeMappings": t.size_mappings,
        "elementDefaults": t.element_defaults,
        "elementRegex": {},
        "elementRegexFormats": {},
        "requiredElements": t.required_elements,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domains::{test_catalog, test_store};
    use crate::store::SettingRecord;

    fn set_setting(store: &crate::store::Store, property: &str, value: &str) {
        store
            .put_setting(&SettingRecord {
                v: 1,
                property: property.into(),
                value: value.into(),
                description: None,
                base_fingerprint: String::new(),
            })
            .unwrap();
    }

    /// A queue that names no status set of its own takes the set the queue module's
    /// setting names, by name or by uuid, as the module falls back to it.
    #[test]
    fn a_queue_without_its_own_sets_takes_the_ones_the_settings_name() {
        let store = test_store();
        let catalog = test_catalog();
        let set = catalog
            .content
            .queues
            .iter()
            .find_map(|q| q.status_concept_set.clone())
            .expect("a queue of the content names its status set");
        let members = catalog.concept(&set).unwrap().set_members.clone();
        assert!(!members.is_empty());
        let own = queue_set_members(&store, &catalog, Some(&set), STATUS_SET_SETTING);
        assert_eq!(own, members);
        // No set of its own: the content's setting names the same set, by SOURCE:CODE.
        assert_eq!(
            queue_set_members(&store, &catalog, None, STATUS_SET_SETTING),
            members
        );
        // The setting emptied: nothing is allowed (every entry is refused).
        set_setting(&store, STATUS_SET_SETTING, "");
        assert!(queue_set_members(&store, &catalog, None, STATUS_SET_SETTING).is_empty());
        let position = catalog
            .content
            .concepts
            .iter()
            .position(|c| c.uuid == set)
            .unwrap() as u32;
        let name = catalog
            .content
            .indexes
            .concept_by_name
            .iter()
            .find(|(_, found)| found.contains(&position))
            .map(|(name, _)| name.clone())
            .expect("the set has a name");
        set_setting(&store, STATUS_SET_SETTING, &name.to_uppercase());
        assert_eq!(
            queue_set_members(&store, &catalog, None, STATUS_SET_SETTING),
            members
        );
        set_setting(&store, STATUS_SET_SETTING, &set);
        assert_eq!(
            queue_set_members(&store, &catalog, None, STATUS_SET_SETTING),
            members
        );
    }
}
