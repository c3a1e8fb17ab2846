//! A visit's attributes (payment details at check-in, an insurance policy number, …), of
//! the content's visit attribute types (`attributetypes/`, entity `Visit`), as OpenMRS
//! keeps them: inside the visit, each with its own uuid, voided rather than removed.
//!
//! Values are checked against the type's datatype (free text, a pattern, one of listed
//! options, a boolean, a date, a concept or a location of the content) and stored as
//! OpenMRS serialises them (a uuid for a concept or location, `true`/`false`, a date
//! `yyyy-MM-dd`). A visit may not hold more active values of a type than its `maxOccurs`,
//! nor fewer than its `minOccurs`: a second value of a type that allows one is refused, as
//! the REST module's `addAttribute` and the visit's validation refuse it; the value is
//! changed instead.

use crate::catalog::Catalog;
use crate::content::concept::ConceptRes;
use crate::content::location::LocationRes;
use crate::domains::visit::VisitRecord;
use crate::http::answer::{audit_info, nest};
use crate::http::body::ref_uuid;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use chrono::{DateTime, Utc};
use model::{AttributeType, datatypes};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisitAttribute {
    pub uuid: String,
    pub attribute_type: String,
    /// As OpenMRS serialises the datatype's value (see the module's documentation).
    pub value: String,
    pub audit: Audit,
    #[serde(default)]
    pub voiding: Voiding,
}

/// The content's visit attribute types.
pub fn types(catalog: &Catalog) -> impl Iterator<Item = &AttributeType> {
    catalog
        .content
        .attribute_types
        .iter()
        .filter(|t| t.entity == "Visit")
}

/// A visit attribute type named by uuid or name.
pub fn find_type<'c>(catalog: &'c Catalog, reference: &str) -> Option<&'c AttributeType> {
    types(catalog).find(|t| t.uuid == reference || t.name == reference)
}

fn invalid(message: String) -> ApiError {
    ApiError::invalid_field("value", "error.invalid", &message)
}

/// The stored form of `value` for an attribute of type `t`, or why it is refused.
pub fn stored_value(t: &AttributeType, value: &Value, catalog: &Catalog) -> ApiResult<String> {
    let text = match value {
        Value::String(s) => s.trim().to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Object(_) => ref_uuid(value).unwrap_or_default(),
        _ => String::new(),
    };
    if text.is_empty() {
        return Err(invalid(format!("{}: a value is required", t.name)));
    }
    let config = t.datatype_config.as_deref().unwrap_or_default();
    match t.datatype.as_str() {
        datatypes::BOOLEAN => match text.to_ascii_lowercase().as_str() {
            b @ ("true" | "false") => Ok(b.to_string()),
            _ => Err(invalid(format!(
                "{}: '{text}' is not true or false",
                t.name
            ))),
        },
        datatypes::DATE => chrono::NaiveDate::parse_from_str(&text, "%Y-%m-%d")
            .ok()
            .or_else(|| crate::wire::parse_datetime(&text).map(|t| t.date_naive()))
            .map(|d| d.format("%Y-%m-%d").to_string())
            .ok_or_else(|| invalid(format!("{}: '{text}' is not a date", t.name))),
        datatypes::CONCEPT => catalog
            .concept(&text)
            .map(|c| c.uuid.clone())
            .ok_or_else(|| invalid(format!("{}: concept {text} does not exist", t.name))),
        datatypes::LOCATION => catalog
            .location(&text)
            .map(|l| l.uuid.clone())
            .ok_or_else(|| invalid(format!("{}: location {text} does not exist", t.name))),
        datatypes::OPTIONS => {
            if config.split(',').any(|o| o.trim() == text) {
                Ok(text)
            } else {
                Err(invalid(format!(
                    "{}: '{text}' is not one of {config}",
                    t.name
                )))
            }
        }
        datatypes::REGEX => {
            let matches = fancy_regex::Regex::new(&format!("^(?:{config})$"))
                .ok()
                .and_then(|r| r.is_match(&text).ok())
                .unwrap_or(false);
            if matches {
                Ok(text)
            } else {
                Err(invalid(format!(
                    "{}: '{text}' does not match {config}",
                    t.name
                )))
            }
        }
        _ => Ok(text),
    }
}

/// Adds an attribute to the visit: `body` is `{attributeType, value[, uuid]}` (a value
/// beyond the type's `maxOccurs` is refused when the visit is checked, as OpenMRS refuses
/// it; a value is changed through its own uuid). Answers the new attribute's uuid.
pub fn set(
    v: &mut VisitRecord,
    catalog: &Catalog,
    body: &Value,
    user: &str,
    now: DateTime<Utc>,
) -> ApiResult<String> {
    let type_ref = body
        .get("attributeType")
        .and_then(ref_uuid)
        .ok_or_else(|| {
            ApiError::invalid_field("attributeType", "error.null", "attributeType is required")
        })?;
    let t = find_type(catalog, &type_ref).ok_or_else(|| {
        ApiError::invalid_field(
            "attributeType",
            "error.invalid",
            &format!("Visit attribute type {type_ref} does not exist"),
        )
    })?;
    if t.retired {
        return Err(ApiError::invalid_field(
            "attributeType",
            "error.retired",
            &format!("Visit attribute type {} is retired", t.name),
        ));
    }
    let value = stored_value(t, body.get("value").unwrap_or(&Value::Null), catalog)?;
    let uuid = match body.get("uuid").and_then(Value::as_str) {
        Some(u) if uuid::Uuid::parse_str(u).is_err() => {
            return Err(ApiError::BadRequest(format!("'{u}' is not a uuid")));
        }
        Some(u) if v.attributes.iter().any(|a| a.uuid == u) => {
            return Err(ApiError::BadRequest(format!(
                "The visit already has an attribute with uuid {u}"
            )));
        }
        Some(u) => u.to_string(),
        None => crate::store::record::new_uuid(),
    };
    v.attributes.push(VisitAttribute {
        uuid: uuid.clone(),
        attribute_type: t.uuid.clone(),
        value,
        audit: Audit::new(user, now),
        voiding: Voiding::default(),
    });
    Ok(uuid)
}

/// Gives the visit this value of the type, voiding the values it had of it (OpenMRS's
/// `Visit.setAttribute`, which the queue module's numbering uses).
pub fn replace(
    v: &mut VisitRecord,
    catalog: &Catalog,
    attribute_type: &str,
    value: &str,
    user: &str,
    now: DateTime<Utc>,
) -> ApiResult<String> {
    for a in v
        .attributes
        .iter_mut()
        .filter(|a| a.attribute_type == attribute_type && !a.voiding.voided)
    {
        a.voiding.void(user, now, "replaced by a new value");
    }
    let body = json!({"attributeType": attribute_type, "value": value});
    set(v, catalog, &body, user, now)
}

/// Changes an attribute's value (`POST visit/{v}/attribute/{a}`).
pub fn change(
    v: &mut VisitRecord,
    catalog: &Catalog,
    attribute: &str,
    value: &Value,
    user: &str,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let a = v
        .attributes
        .iter_mut()
        .find(|a| a.uuid == attribute)
        .ok_or(ApiError::NotFound)?;
    let t = find_type(catalog, &a.attribute_type).ok_or(ApiError::NotFound)?;
    a.value = stored_value(t, value, catalog)?;
    a.audit.changed(user, now);
    Ok(())
}

/// Each visit attribute type's `minOccurs` and `maxOccurs` against the visit's active values.
pub fn check_occurrences(v: &VisitRecord, catalog: &Catalog, inv: &mut Invalid) {
    for t in types(catalog).filter(|t| !t.retired) {
        let n = v
            .attributes
            .iter()
            .filter(|a| a.attribute_type == t.uuid && !a.voiding.voided)
            .count() as u32;
        if n < t.min_occurs {
            inv.field(
                "attributes",
                "error.required",
                &format!("{} is required (at least {})", t.name, t.min_occurs),
            );
        }
        if let Some(max) = t.max_occurs
            && n > max
        {
            inv.field(
                "attributes",
                "error.invalid",
                &format!("{} allows at most {max} values", t.name),
            );
        }
    }
}

pub struct VisitAttributeTypeRes<'a>(pub &'a AttributeType);

impl Resource for VisitAttributeTypeRes<'_> {
    fn alias(&self) -> &'static str {
        "visitattributetype"
    }
    fn version(&self) -> &'static str {
        "1.9"
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
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("minOccurs", Rep::Default),
            ("maxOccurs", Rep::Default),
            ("datatypeClassname", Rep::Default),
            ("datatypeConfig", Rep::Default),
            ("preferredHandlerClassname", Rep::Default),
            ("handlerConfig", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _rep: &Rep, _ctx: &Ctx) -> Option<Value> {
        let t = self.0;
        Some(match name {
            "name" => json!(t.name),
            "description" => json!(t.description),
            "minOccurs" => json!(t.min_occurs),
            "maxOccurs" => json!(t.max_occurs),
            "datatypeClassname" => json!(t.datatype),
            "datatypeConfig" => json!(t.datatype_config),
            "preferredHandlerClassname" => json!(t.handler),
            "handlerConfig" => json!(t.handler_config),
            "retired" => json!(t.retired),
            _ => return None,
        })
    }
}

/// An attribute of the visit `visit`.
pub struct VisitAttributeRes<'a> {
    pub visit: &'a str,
    pub attribute: &'a VisitAttribute,
}

impl VisitAttributeRes<'_> {
    fn attribute_type<'c>(&self, ctx: &Ctx<'c>) -> Option<&'c AttributeType> {
        find_type(ctx.catalog, &self.attribute.attribute_type)
    }
}

impl Resource for VisitAttributeRes<'_> {
    fn alias(&self) -> &'static str {
        "attribute"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.attribute.uuid.clone()
    }
    fn path(&self) -> String {
        format!("visit/{}/attribute/{}", self.visit, self.attribute.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        let a = self.attribute;
        let value = match self.attribute_type(ctx).map(|t| t.datatype.as_str()) {
            Some(datatypes::CONCEPT) => ctx
                .catalog
                .concept(&a.value)
                .map(|c| ConceptRes(c).display(ctx))
                .unwrap_or_else(|| a.value.clone()),
            Some(datatypes::LOCATION) => ctx
                .catalog
                .location(&a.value)
                .map(|l| LocationRes(l).display(ctx))
                .unwrap_or_else(|| a.value.clone()),
            _ => a.value.clone(),
        };
        match self.attribute_type(ctx) {
            Some(t) => format!("{}: {value}", VisitAttributeTypeRes(t).display(ctx)),
            None => value,
        }
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.attribute.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("attributeType", Rep::Ref),
            ("value", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("attributeType", Rep::Ref),
            ("value", Rep::Default),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let a = self.attribute;
        Some(match name {
            "attributeType" => nest(
                self.attribute_type(ctx).map(VisitAttributeTypeRes),
                rep,
                ctx,
            ),
            // As OpenMRS hydrates it: a concept or location as a reference, a boolean as one.
            "value" => match self.attribute_type(ctx).map(|t| t.datatype.as_str()) {
                Some(datatypes::CONCEPT) => nest(
                    ctx.catalog.concept(&a.value).map(ConceptRes),
                    &Rep::Ref,
                    ctx,
                ),
                Some(datatypes::LOCATION) => nest(
                    ctx.catalog.location(&a.value).map(LocationRes),
                    &Rep::Ref,
                    ctx,
                ),
                Some(datatypes::BOOLEAN) => json!(a.value == "true"),
                _ => json!(a.value),
            },
            "voided" => json!(a.voiding.voided),
            "auditInfo" => audit_info(&a.audit, ctx),
            _ => return None,
        })
    }
}
