//! The metadata mapping module's metadata sets (`metadatamapping/metadataset` and its
//! `members`), from the content's `metadatasets/` and `metadatasetmembers/`: read-only, as
//! the term mappings are. The EMR API names its extra patient identifier types by one
//! (`emr.extraPatientIdentifierTypes`, a term mapping to a set).

use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource};
use crate::http::{AppState, Caller, QueryPairs, render_list};
use axum::extract::{Path, State};
use axum::response::Response;
use model::{MetadataSet, MetadataSetMember};
use serde_json::{Value, json};
use std::sync::Arc;

/// The privilege the module's resources ask for reads.
const READ: &str = "Get Identifier Types";

pub struct MetadataSetRes<'a>(pub &'a MetadataSet);

impl Resource for MetadataSetRes<'_> {
    fn alias(&self) -> &'static str {
        "metadataset"
    }
    fn version(&self) -> &'static str {
        "1.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("metadatamapping/metadataset/{}", self.0.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone().unwrap_or_default()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", false))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "name" => json!(self.0.name),
            "description" => json!(self.0.description),
            "retired" => json!(false),
            _ => return None,
        })
    }
}

pub struct MemberRes<'a>(pub &'a MetadataSet, pub &'a MetadataSetMember);

impl Resource for MemberRes<'_> {
    fn alias(&self) -> &'static str {
        "members"
    }
    fn version(&self) -> &'static str {
        "1.0"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!(
            "metadatamapping/metadataset/{}/members/{}",
            self.0.uuid, self.1.uuid
        )
    }
    fn display(&self, _: &Ctx) -> String {
        format!("{} {}", self.1.class_name, self.1.metadata_uuid)
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", false))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("metadataClass", Rep::Default),
            ("metadataUuid", Rep::Default),
            ("sortWeight", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "metadataClass" => json!(self.1.class_name),
            "metadataUuid" => json!(self.1.metadata_uuid),
            "sortWeight" => json!(self.1.sort_weight),
            "retired" => json!(false),
            _ => return None,
        })
    }
}

/// `GET metadatamapping/metadataset`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[READ])?;
    let catalog = state.catalog.load();
    let items: Vec<MetadataSetRes> = catalog
        .content
        .metadata_sets
        .iter()
        .map(MetadataSetRes)
        .collect();
    render_list(
        &state,
        &caller,
        &query,
        "/metadatamapping/metadataset",
        items.iter().map(|r| r as &dyn Resource),
    )
}

fn set_of<'a>(catalog: &'a crate::catalog::Catalog, uuid: &str) -> ApiResult<&'a MetadataSet> {
    catalog
        .content
        .metadata_sets
        .iter()
        .find(|s| s.uuid == uuid)
        .ok_or(ApiError::NotFound)
}

/// `GET metadatamapping/metadataset/{uuid}`.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[READ])?;
    let catalog = state.catalog.load();
    let set = set_of(&catalog, &uuid)?;
    crate::http::answer::answer(
        &state,
        &caller,
        &MetadataSetRes(set),
        &crate::http::answer::rep_of(&query)?,
        axum::http::StatusCode::OK,
    )
}

/// `GET metadatamapping/metadataset/{uuid}/members`: in sort weight order.
pub async fn members(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[READ])?;
    let catalog = state.catalog.load();
    let set = set_of(&catalog, &uuid)?;
    let items: Vec<MemberRes> = set.members.iter().map(|m| MemberRes(set, m)).collect();
    render_list(
        &state,
        &caller,
        &query,
        &format!("/metadatamapping/metadataset/{uuid}/members"),
        items.iter().map(|r| r as &dyn Resource),
    )
}
