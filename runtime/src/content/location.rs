//! `location`: the content's locations (read-only).

use crate::content::metadata::{NAMED_DEFAULT_PROPS, NAMED_FULL_PROPS, named_prop};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested, nested_list, render};
use crate::http::{Caller, QueryPairs, ok, param};
use axum::extract::{Path, State};
use axum::response::Response;
use model::{Location, NamedMetadata};
use serde_json::{Value, json};
use std::sync::Arc;

pub struct LocationRes<'a>(pub &'a Location);

impl Resource for LocationRes<'_> {
    fn alias(&self) -> &'static str {
        "location"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        let code = format!("ui.i18n.Location.name.{}", self.0.uuid);
        ctx.catalog
            .message(&code, &ctx.locale)
            .map(str::to_string)
            .unwrap_or_else(|| self.0.name.clone())
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
            ("address1", Rep::Default),
            ("address2", Rep::Default),
            ("cityVillage", Rep::Default),
            ("stateProvince", Rep::Default),
            ("country", Rep::Default),
            ("postalCode", Rep::Default),
            ("latitude", Rep::Default),
            ("longitude", Rep::Default),
            ("countyDistrict", Rep::Default),
            ("address3", Rep::Default),
            ("address4", Rep::Default),
            ("address5", Rep::Default),
            ("address6", Rep::Default),
            ("tags", Rep::Ref),
            ("parentLocation", Rep::Ref),
            ("childLocations", Rep::Ref),
            ("retired", Rep::Default),
            ("attributes", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("address1", Rep::Default),
            ("address2", Rep::Default),
            ("cityVillage", Rep::Default),
            ("stateProvince", Rep::Default),
            ("country", Rep::Default),
            ("postalCode", Rep::Default),
            ("latitude", Rep::Default),
            ("longitude", Rep::Default),
            ("countyDistrict", Rep::Default),
            ("address3", Rep::Default),
            ("address4", Rep::Default),
            ("address5", Rep::Default),
            ("address6", Rep::Default),
            ("tags", Rep::Default),
            ("parentLocation", Rep::Default),
            ("childLocations", Rep::Default),
            ("retired", Rep::Default),
            ("attributes", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let l = self.0;
        let a = &l.address;
        Some(match name {
            "name" => json!(l.name),
            "description" => json!(l.description),
            "address1" => json!(a.address1),
            "address2" => json!(a.address2),
            "address3" => json!(a.address3),
            "address4" => json!(a.address4),
            "address5" => json!(a.address5),
            "address6" => json!(a.address6),
            "cityVillage" => json!(a.city_village),
            "countyDistrict" => json!(a.county_district),
            "stateProvince" => json!(a.state_province),
            "country" => json!(a.country),
            "postalCode" => json!(a.postal_code),
            "latitude" | "longitude" => Value::Null,
            "retired" => json!(l.retired),
            "attributes" => json!([]),
            "auditInfo" => crate::content::concept::content_audit_info(),
            "tags" => {
                let tags: Vec<TagRes> = l
                    .tags
                    .iter()
                    .filter_map(|t| ctx.catalog.location_tag(t))
                    .map(TagRes)
                    .collect();
                nested_list(tags.iter().map(|t| t as &dyn Resource), rep, ctx)
            }
            "parentLocation" => nested(
                l.parent
                    .as_deref()
                    .and_then(|p| ctx.catalog.location(p))
                    .map(LocationRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "childLocations" => {
                let children: Vec<LocationRes> = ctx
                    .catalog
                    .content
                    .locations
                    .iter()
                    .filter(|c| c.parent.as_deref() == Some(l.uuid.as_str()))
                    .map(LocationRes)
                    .collect();
                nested_list(children.iter().map(|c| c as &dyn Resource), rep, ctx)
            }
            _ => return None,
        })
    }
}

pub struct TagRes<'a>(pub &'a NamedMetadata);

impl Resource for TagRes<'_> {
    fn alias(&self) -> &'static str {
        "locationtag"
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

/// `GET location/{uuid}` — privilege: Get Locations.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Locations"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let catalog = state.catalog.load();
    let location = catalog
        .content
        .locations
        .iter()
        .find(|l| l.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    Ok(ok(render(
        &LocationRes(location),
        &rep,
        &caller.ctx(&state, &catalog),
    )?))
}

/// `GET location[?q=][&tag=]` — privilege: Get Locations.
pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Locations"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Ref);
    let paging = Paging::from_query(&query)?;
    let catalog = state.catalog.load();
    let q = param(&query, "q").map(crate::search::fold);
    let tag = param(&query, "tag");
    let ctx = caller.ctx(&state, &catalog);
    let items = catalog
        .content
        .locations
        .iter()
        .filter(|l| !l.retired)
        .filter(|l| {
            q.as_ref()
                .is_none_or(|q| crate::search::fold(&l.name).contains(q.as_str()))
        })
        .filter(|l| {
            tag.is_none_or(|t| {
                l.tags
                    .iter()
                    .filter_map(|u| catalog.location_tag(u))
                    .any(|x| x.name.eq_ignore_ascii_case(t) || x.uuid == t)
            })
        })
        .map(|l| render(&LocationRes(l), &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(paging.page(
        items,
        &caller.request_url(&state, "/location", &query),
    )))
}
