//! The content's patient identifier types and person attribute types as REST resources.

use crate::http::repr::{Ctx, Props, Rep, Resource};
use model::{PatientIdentifierType, PersonAttributeType};
use serde_json::{Value, json};

pub struct IdentifierTypeRes<'a>(pub &'a PatientIdentifierType);
pub struct AttributeTypeRes<'a>(pub &'a PersonAttributeType);

impl Resource for IdentifierTypeRes<'_> {
    fn alias(&self) -> &'static str {
        "patientidentifiertype"
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
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("format", Rep::Default),
            ("formatDescription", Rep::Default),
            ("required", Rep::Default),
            ("validator", Rep::Default),
            ("locationBehavior", Rep::Default),
            ("uniquenessBehavior", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let t = self.0;
        Some(match name {
            "name" => json!(t.name),
            "description" => json!(t.description),
            "format" => json!(t.format),
            "formatDescription" => json!(t.format_description),
            "required" => json!(t.required),
            "validator" => json!(t.validator),
            "locationBehavior" => json!(t.location_behavior.map(|b| b.as_str())),
            "uniquenessBehavior" => json!(t.uniqueness_behavior.map(|b| b.as_str())),
            "retired" => json!(t.retired),
            _ => return None,
        })
    }
}

impl Resource for AttributeTypeRes<'_> {
    fn alias(&self) -> &'static str {
        "personattributetype"
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
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("format", Rep::Default),
            ("foreignKey", Rep::Default),
            ("sortWeight", Rep::Default),
            ("searchable", Rep::Default),
            ("editPrivilege", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let t = self.0;
        Some(match name {
            "name" => json!(t.name),
            "description" => json!(t.description),
            "format" => json!(t.format),
            "foreignKey" => json!(t.foreign_key),
            "sortWeight" => Value::Null,
            "searchable" => json!(t.searchable),
            "editPrivilege" => t
                .edit_privilege
                .as_ref()
                .map(|p| json!({"display": p, "name": p}))
                .unwrap_or(Value::Null),
            "retired" => json!(t.retired),
            _ => return None,
        })
    }
}
