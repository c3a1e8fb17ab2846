//! `globalproperties/*.xml`: `<config><globalProperties><globalProperty>` with `property`,
//! `value` (kept verbatim) and `description`. The same property in a later file of the
//! same layer wins, with a warning; a site's value overrides the base's.

use super::Loaded;
use crate::csvtable::derive_uuid;
use crate::diagnostics::{Code, Sink};
use crate::store::Entry;
use crate::vfs::{InputFile, decode};
use crate::xml;
use model::GlobalProperty;

pub fn load(files: &[&InputFile], loaded: &mut Loaded, sink: &mut Sink) {
    for f in files {
        let Some(file) = decode(f, sink) else {
            continue;
        };
        let root = match xml::parse(&file.text) {
            Ok(r) => r,
            Err(e) => {
                sink.emit(
                    Code::XmlSyntax,
                    &file.loc(e.offset, 1),
                    format!("Invalid XML: {}", e.message),
                );
                continue;
            }
        };
        if root.name != "config" {
            sink.emit(
                Code::XmlSyntax,
                &file.loc(root.offset, root.name.len() + 1),
                format!("Root element is <{}>, expected <config>", root.name),
            )
            .help = Some(
                "wrap the properties in <config><globalProperties>…</globalProperties></config>"
                    .into(),
            );
            continue;
        }
        for list in root.children_named("globalProperties") {
            for gp in &list.children {
                let loc = file.loc(gp.offset, gp.name.len() + 1);
                if gp.name != "globalProperty" {
                    sink.emit(
                        Code::XmlSyntax,
                        &loc,
                        format!("Unexpected element <{}> in <globalProperties>", gp.name),
                    )
                    .help = Some("only <globalProperty> elements may appear here".into());
                    continue;
                }
                if let Some(other) = gp.children.iter().find(|c| {
                    !matches!(
                        c.name.as_str(),
                        "property"
                            | "value"
                            | "description"
                            | "datatypeClassname"
                            | "datatypeConfig"
                    )
                }) {
                    sink.emit(
                        Code::XmlSyntax,
                        &file.loc(other.offset, other.name.len() + 1),
                        format!("Unexpected element <{}> in <globalProperty>", other.name),
                    )
                    .help =
                        Some("a global property has <property>, <value> and <description>".into());
                    continue;
                }
                let Some(property) = gp.child_text("property") else {
                    sink.emit(
                        Code::MissingValue,
                        &loc,
                        "Global property has no <property> name",
                    );
                    continue;
                };
                let value = gp
                    .child("value")
                    .map(|v| v.text.clone())
                    .unwrap_or_default();
                let value_loc = gp
                    .child("value")
                    .map_or(loc.clone(), |v| file.loc(v.offset, v.name.len() + 2));
                let entry = Entry::new(
                    GlobalProperty {
                        uuid: derive_uuid(&format!("globalproperty/{property}")),
                        property: property.clone(),
                        value,
                        description: gp.child_text("description"),
                    },
                    f.layer,
                    loc,
                )
                .with_cell("value", value_loc);
                if let Some(existing) = loaded.global_properties.items.get(&property)
                    && existing.layer == f.layer
                {
                    let first = existing
                        .loc
                        .position()
                        .map(|p| format!("first set at {}:{}", p.path, p.line))
                        .unwrap_or_default();
                    sink.emit(
                        Code::DuplicateProperty,
                        &entry.loc,
                        format!("Global property '{property}' is set twice; this value wins"),
                    )
                    .notes
                    .push(first);
                }
                loaded.global_properties.items.insert(property, entry);
            }
        }
    }
}
