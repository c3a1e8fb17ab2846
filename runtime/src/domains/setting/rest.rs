//! `systemsetting`: the content's global properties overlaid with values set through the
//! API (which are stored, with the fingerprint of the content value they replaced), over the
//! defaults of OpenMRS's built-in settings that the O3 modules read (`BUILT_IN`).

use crate::catalog::setting_fingerprint;
use crate::catalog::{BUILT_IN, built_in_default};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, ok, param};
use crate::store::SettingRecord;
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

/// A setting as served.
#[derive(Debug, Clone)]
pub struct Setting {
    pub uuid: String,
    pub property: String,
    pub value: String,
    pub description: Option<String>,
}

fn setting_uuid(property: &str) -> String {
    compiler::csvtable::derive_uuid(&format!("globalproperty/{property}"))
}

/// `visits.autoCloseVisitTimeout` → `Visits - Auto Close Visit Timeout`.
pub fn display_name(property: &str) -> String {
    let words = |s: &str| -> String {
        let mut out: Vec<String> = Vec::new();
        for part in s.split(['.', '_']).filter(|p| !p.is_empty()) {
            let mut word = String::new();
            for c in part.chars() {
                if c.is_uppercase() && !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                word.push(c);
            }
            out.push(word);
        }
        out.iter()
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_uppercase().chain(c).collect())
                    .unwrap_or_default()
            })
            .collect::<Vec<String>>()
            .join(" ")
    };
    match property.split_once('.') {
        Some((section, name)) => format!("{} - {}", words(section), words(name)),
        None => format!("General Settings - {}", words(property)),
    }
}

impl Resource for Setting {
    fn alias(&self) -> &'static str {
        "systemsetting"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        format!("{} = {}", display_name(&self.property), self.value)
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("property", Rep::Default),
            ("value", Rep::Default),
            ("description", Rep::Default),
            ("display", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("property", Rep::Default),
            ("value", Rep::Default),
            ("description", Rep::Default),
            ("display", Rep::Default),
            ("datatypeClassname", Rep::Default),
            ("datatypeConfig", Rep::Default),
            ("preferredHandlerClassname", Rep::Default),
            ("handlerConfig", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "property" => json!(self.property),
            "value" => json!(self.value),
            "description" => json!(self.description),
            "datatypeClassname"
            | "datatypeConfig"
            | "preferredHandlerClassname"
            | "handlerConfig" => Value::Null,
            _ => return None,
        })
    }
}

/// Every setting (built-in defaults, content and API-made), sorted by property.
pub fn effective(state: &AppState) -> ApiResult<Vec<Setting>> {
    let catalog = state.catalog.load();
    let mut map: std::collections::BTreeMap<String, Setting> = BUILT_IN
        .iter()
        .map(|(property, value, description)| {
            (
                property.to_string(),
                Setting {
                    uuid: setting_uuid(property),
                    property: property.to_string(),
                    value: value.to_string(),
                    description: Some(description.to_string()),
                },
            )
        })
        .collect();
    map.extend(catalog.content.global_properties.iter().map(|g| {
        (
            g.property.clone(),
            Setting {
                uuid: g.uuid.clone(),
                property: g.property.clone(),
                value: g.value.clone(),
                description: g.description.clone(),
            },
        )
    }));
    for s in state.store.settings()? {
        let entry = map.entry(s.property.clone()).or_insert_with(|| Setting {
            uuid: setting_uuid(&s.property),
            property: s.property.clone(),
            value: String::new(),
            description: None,
        });
        entry.value = s.value;
        if s.description.is_some() {
            entry.description = s.description;
        }
    }
    Ok(map.into_values().collect())
}

fn find(state: &AppState, key: &str) -> ApiResult<Setting> {
    effective(state)?
        .into_iter()
        .find(|s| s.property == key || s.uuid == key)
        .ok_or(ApiError::NotFound)
}

/// `GET systemsetting[?q=prefix]` — privilege: Get Global Properties.
pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Global Properties"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Ref);
    let paging = Paging::from_query(&query)?;
    let prefix = param(&query, "q").unwrap_or("");
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let items = effective(&state)?
        .iter()
        .filter(|s| s.property.starts_with(prefix))
        .map(|s| render(s, &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(paging.page(
        items,
        &caller.request_url(&state, "/systemsetting", &query),
    )))
}

/// `GET systemsetting/{property or uuid}` — privilege: Get Global Properties.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(key): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Global Properties"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let setting = find(&state, &key)?;
    let catalog = state.catalog.load();
    Ok(ok(render(&setting, &rep, &caller.ctx(&state, &catalog))?))
}

/// Settings whose value the runtime relies on are checked like the compiler checks them.
fn check_value(property: &str, value: &str) -> ApiResult<()> {
    const WHOLE_NUMBERS: &[&str] = &[
        "visits.autoCloseVisitTimeout",
        "security.allowedFailedLoginsBeforeLockout",
        "security.unlockAccountWaitingTime",
        "minSearchCharacters",
        "webservices.rest.maxResultsDefault",
        "webservices.rest.maxResultsAbsolute",
    ];
    if WHOLE_NUMBERS.contains(&property) && value.trim().parse::<u32>().is_err() {
        return Err(ApiError::BadRequest(format!(
            "{property} must be a whole number"
        )));
    }
    if property == "patient.identifier.regex"
        && !value.is_empty()
        && fancy_regex::Regex::new(value).is_err()
    {
        return Err(ApiError::BadRequest(format!(
            "{property} is not a valid regular expression"
        )));
    }
    Ok(())
}

/// `POST systemsetting/{property or uuid}` with `{"value": …}` — privilege: Manage Global Properties.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(key): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Global Properties"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let current = find(&state, &key)?;
    const ALLOWED: &[&str] = &[
        "value",
        "description",
        "property",
        "datatypeClassname",
        "datatypeConfig",
        "preferredHandlerClassname",
        "handlerConfig",
    ];
    let unknown: Vec<&str> = body
        .keys()
        .map(String::as_str)
        .filter(|k| !ALLOWED.contains(k))
        .collect();
    if !unknown.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "Some properties are not allowed to be set: {}",
            unknown.join(", ")
        )));
    }
    if let Some(p) = body.get("property")
        && p.as_str() != Some(current.property.as_str())
    {
        return Err(ApiError::BadRequest(
            "Some properties are not allowed to be set: property".into(),
        ));
    }
    let value = match body.get("value") {
        None => current.value.clone(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Null) => String::new(),
        Some(_) => {
            return Err(ApiError::BadRequest(
                "Don't know how to convert the value: send a string".into(),
            ));
        }
    };
    let description = match body.get("description") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) => None,
        Some(_) => return Err(ApiError::BadRequest("description must be a string".into())),
    };
    check_value(&current.property, &value)?;
    let catalog = state.catalog.load_full();
    let record = SettingRecord {
        v: 1,
        property: current.property.clone(),
        value,
        description,
        base_fingerprint: setting_fingerprint(catalog.global_property(&current.property)),
    };
    let st = state.clone();
    blocking(move || st.store.put_setting(&record).map_err(ApiError::from)).await?;
    let updated = find(&state, &current.property)?;
    Ok(ok(render(&updated, &rep, &caller.ctx(&state, &catalog))?))
}

/// `POST systemsetting` with `{"property", "value", "description"}`: a setting the content
/// does not define (an operator's own) — privilege: Manage Global Properties. A property
/// that exists is changed with `POST systemsetting/{property}` instead.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Manage Global Properties"])?;
    crate::http::body::only_known(&body, &["property", "value", "description"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let text = |field: &str| -> ApiResult<Option<String>> {
        match body.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(ApiError::BadRequest(format!("{field} must be a string"))),
        }
    };
    let property = text("property")?.unwrap_or_default().trim().to_string();
    if property.is_empty() {
        return Err(ApiError::invalid_field(
            "property",
            "error.null",
            "Property is required",
        ));
    }
    if property.chars().count() > 255
        || property
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(ApiError::invalid_field(
            "property",
            "error.invalid",
            "A property has at most 255 characters, without spaces or control characters",
        ));
    }
    if find(&state, &property).is_ok() {
        return Err(ApiError::BadRequest(format!(
            "the setting {property} already exists: change it with POST systemsetting/{property}"
        )));
    }
    let value = text("value")?.unwrap_or_default();
    check_value(&property, &value)?;
    let record = SettingRecord {
        v: 1,
        property: property.clone(),
        value,
        description: text("description")?,
        base_fingerprint: setting_fingerprint(None),
    };
    let st = state.clone();
    blocking(move || st.store.put_setting(&record).map_err(ApiError::from)).await?;
    let catalog = state.catalog.load_full();
    let created = find(&state, &property)?;
    Ok(crate::http::json(
        axum::http::StatusCode::CREATED,
        render(&created, &rep, &caller.ctx(&state, &catalog))?,
    ))
}

/// `DELETE systemsetting/{property or uuid}`: removes a setting made through the API —
/// privilege: Purge Global Properties. A setting the content (or OpenMRS) defines can be
/// changed but not deleted: its defined value is the fallback.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(key): Path<String>,
) -> ApiResult<Response> {
    caller.require(&["Purge Global Properties"])?;
    let current = find(&state, &key)?;
    let catalog = state.catalog.load();
    if catalog.global_property(&current.property).is_some()
        || built_in_default(&current.property).is_some()
    {
        return Err(ApiError::BadRequest(format!(
            "the setting {} is defined by the content package (or OpenMRS): it can be changed but not deleted",
            current.property
        )));
    }
    let st = state.clone();
    let property = current.property.clone();
    blocking(move || {
        st.store
            .remove_settings(&[property])
            .map_err(ApiError::from)
    })
    .await?;
    Ok(axum::response::IntoResponse::into_response(
        axum::http::StatusCode::NO_CONTENT,
    ))
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/systemsetting"),
            get(crate::domains::setting::rest::list).post(crate::domains::setting::rest::create),
        )
        .route(
            &paths.rest("/systemsetting/{name}"),
            get(crate::domains::setting::rest::read)
                .post(crate::domains::setting::rest::update)
                .delete(crate::domains::setting::rest::delete),
        )
}

#[cfg(test)]
mod tests {
    #[test]
    fn display_names_are_beautified() {
        assert_eq!(
            super::display_name("security.allowedFailedLoginsBeforeLockout"),
            "Security - Allowed Failed Logins Before Lockout"
        );
        assert_eq!(
            super::display_name("default_locale"),
            "General Settings - Default Locale"
        );
    }
}
