//! The address template: from `addresshierarchy/addressConfiguration.xml` (with its
//! header-less entries file and i18n properties), or from the `layout.address.format`
//! global property (an `AddressTemplate` XML document).

use super::{Loaded, messages};
use crate::diagnostics::{Code, Sink};
use crate::source::Loc;
use crate::store::Entry;
use crate::vfs::{InputFile, decode};
use crate::xml;
use model::{AddressHierarchyEntry, AddressTemplate};
use std::collections::BTreeSet;

/// `STATE_PROVINCE` → `stateProvince` (the REST and template field names).
pub fn field_name(field: &str) -> Option<String> {
    let f = field.trim().to_uppercase();
    Some(match f.as_str() {
        "COUNTRY" => "country".into(),
        "STATE_PROVINCE" => "stateProvince".into(),
        "COUNTY_DISTRICT" => "countyDistrict".into(),
        "CITY_VILLAGE" => "cityVillage".into(),
        "POSTAL_CODE" => "postalCode".into(),
        "LATITUDE" => "latitude".into(),
        "LONGITUDE" => "longitude".into(),
        _ => {
            let n: u32 = f.strip_prefix("ADDRESS_")?.parse().ok()?;
            if !(1..=15).contains(&n) {
                return None;
            }
            format!("address{n}")
        }
    })
}

pub const TEMPLATE_FIELDS: &[&str] = &[
    "address1",
    "address2",
    "address3",
    "address4",
    "address5",
    "address6",
    "address7",
    "address8",
    "address9",
    "address10",
    "address11",
    "address12",
    "address13",
    "address14",
    "address15",
    "cityVillage",
    "countyDistrict",
    "stateProvince",
    "postalCode",
    "country",
    "latitude",
    "longitude",
    "startDate",
    "endDate",
];

pub fn load_hierarchy(files: &[&InputFile], loaded: &mut Loaded, sink: &mut Sink) {
    let props: Vec<&InputFile> = files
        .iter()
        .copied()
        .filter(|f| f.extension() == "properties")
        .collect();
    messages::load(&props, &mut loaded.messages, sink);
    let Some(config) = files
        .iter()
        .find(|f| f.rel == "addresshierarchy/addressConfiguration.xml")
    else {
        for f in files.iter().filter(|f| f.extension() == "xml") {
            sink.emit(
                Code::StrayFile,
                &Loc::File(f.display.clone()),
                "Address hierarchy file is not addressConfiguration.xml and is not read",
            );
        }
        return;
    };
    let Some(file) = decode(config, sink) else {
        return;
    };
    let root = match xml::parse(&file.text) {
        Ok(r) if r.name == "addressConfiguration" => r,
        Ok(r) => {
            sink.emit(
                Code::XmlSyntax,
                &file.loc(r.offset, 1),
                format!(
                    "Root element is <{}>, expected <addressConfiguration>",
                    r.name
                ),
            );
            return;
        }
        Err(e) => {
            sink.emit(
                Code::XmlSyntax,
                &file.loc(e.offset, 1),
                format!("Invalid XML: {}", e.message),
            );
            return;
        }
    };
    let mut template = AddressTemplate::default();
    if let Some(components) = root.child("addressComponents") {
        for c in components.children_named("addressComponent") {
            let loc = file.loc(c.offset, 1);
            let Some(raw) = c.child_text("field") else {
                sink.emit(Code::MissingValue, &loc, "Address component has no <field>");
                continue;
            };
            let Some(field) = field_name(&raw) else {
                sink.emit(Code::InvalidValue, &loc, format!("Unknown address field '{raw}'"))
                    .help = Some("fields are COUNTRY, STATE_PROVINCE, COUNTY_DISTRICT, CITY_VILLAGE, POSTAL_CODE, ADDRESS_1 … ADDRESS_15".into());
                continue;
            };
            if let Some(label) = c.child_text("nameMapping") {
                template.name_mappings.insert(field.clone(), label);
            }
            if let Some(size) = c.child_text("sizeMapping") {
                template.size_mappings.insert(field.clone(), size);
            }
            if let Some(default) = c.child_text("elementDefault") {
                template.element_defaults.insert(field.clone(), default);
            }
            if c.child_text("requiredInHierarchy")
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
            {
                template.hierarchy_required.push(field.clone());
            }
            template.hierarchy_levels.push(field);
        }
    }
    if let Some(lines) = root.child("lineByLineFormat") {
        template.lines = lines
            .children_named("string")
            .map(|s| split_fields(&s.text))
            .collect();
    }
    check_template_fields(&template, &file.whole(), sink);

    if let Some(h) = root.child("addressHierarchyFile") {
        let name = h.child_text("filename").unwrap_or_default();
        let entry_delimiter = h.child_text("entryDelimiter").unwrap_or_else(|| "|".into());
        let id_delimiter = h
            .child_text("identifierDelimiter")
            .unwrap_or_else(|| "^".into());
        let rel = format!("addresshierarchy/{name}");
        match files.iter().find(|f| f.rel == rel) {
            None => {
                sink.emit(
                    Code::UnknownReference,
                    &file.loc(h.offset, 1),
                    format!("Address hierarchy file '{name}' not found"),
                )
                .help = Some("put the entries file next to addressConfiguration.xml".into());
            }
            Some(f) => {
                if let Some(entries) = decode(f, sink) {
                    let mut seen = BTreeSet::new();
                    for (i, line) in entries.text.lines().enumerate() {
                        if line.trim().is_empty() {
                            continue;
                        }
                        let mut path = Vec::new();
                        let levels: Vec<&str> = line.split(entry_delimiter.as_str()).collect();
                        if levels.len() > template.hierarchy_levels.len()
                            && !template.hierarchy_levels.is_empty()
                        {
                            sink.emit(
                                Code::InvalidValue,
                                &Loc::Point {
                                    path: entries.path.clone(),
                                    line: i as u32 + 1,
                                    col: 1,
                                },
                                format!(
                                    "Entry has {} levels but the configuration defines {}",
                                    levels.len(),
                                    template.hierarchy_levels.len()
                                ),
                            );
                            continue;
                        }
                        for level in levels {
                            let (name, id) = match level.split_once(id_delimiter.as_str()) {
                                Some((n, id)) => {
                                    (n.trim().to_string(), Some(id.trim().to_string()))
                                }
                                None => (level.trim().to_string(), None),
                            };
                            if name.is_empty() {
                                break;
                            }
                            path.push(name);
                            if seen.insert(path.clone()) {
                                loaded.address_hierarchy.push(AddressHierarchyEntry {
                                    path: path.clone(),
                                    user_generated_id: id,
                                });
                            }
                        }
                    }
                    loaded.address_hierarchy.sort();
                }
            }
        }
    }
    loaded.address_template = Some(Entry::new(template, config.layer, file.whole()));
}

fn split_fields(line: &str) -> Vec<String> {
    line.split([' ', ',', '\t', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn check_template_fields(t: &AddressTemplate, loc: &Loc, sink: &mut Sink) {
    let used = t
        .lines
        .iter()
        .flatten()
        .chain(t.name_mappings.keys())
        .chain(t.size_mappings.keys())
        .chain(&t.required_elements);
    let mut reported = BTreeSet::new();
    for f in used {
        if !TEMPLATE_FIELDS.contains(&f.as_str()) && reported.insert(f.clone()) {
            sink.emit(
                Code::InvalidValue,
                loc,
                format!("Unknown address field '{f}' in the address template"),
            )
            .help = Some(format!("fields: {}", TEMPLATE_FIELDS.join(", ")));
        }
    }
}

/// Parses the `layout.address.format` value (an `AddressTemplate` XML document).
pub fn parse_template_property(value: &str, loc: &Loc, sink: &mut Sink) -> Option<AddressTemplate> {
    let root = match xml::parse(value.trim()) {
        Ok(r) => r,
        Err(e) => {
            sink.emit(
                Code::InvalidGlobalProperty,
                loc,
                format!("'layout.address.format' is not valid XML: {}", e.message),
            );
            return None;
        }
    };
    if !root.name.ends_with("AddressTemplate") {
        sink.emit(
            Code::InvalidGlobalProperty,
            loc,
            format!(
                "'layout.address.format' has the root <{}>, expected an AddressTemplate",
                root.name
            ),
        );
        return None;
    }
    // Text where the template holds only elements is left over from the code that wrote
    // it (a Java string concatenation pasted in, `\\n" + "`): OpenMRS fails to read such a
    // template, and the registration form loses its address fields.
    let sections = std::iter::once(&root).chain(root.children.iter().filter(|c| {
        [
            "nameMappings",
            "sizeMappings",
            "lineByLineFormat",
            "requiredElements",
            "elementDefaults",
            "elementRegex",
            "elementRegexFormats",
        ]
        .contains(&c.name.as_str())
    }));
    for section in sections {
        let stray = section.text.trim();
        if !stray.is_empty() {
            sink.emit(
                Code::InvalidGlobalProperty,
                loc,
                format!(
                    "'layout.address.format' has stray text in <{}>: `{stray}`",
                    section.name
                ),
            )
            .help = Some(
                "this looks like a fragment of the code that built the template: keep only its elements, e.g. <requiredElements><string>cityVillage</string></requiredElements>".into(),
            );
        }
    }
    let properties = |name: &str| -> Vec<(String, String)> {
        root.child(name)
            .map(|m| {
                m.children_named("property")
                    .filter_map(|p| {
                        Some((p.attr("name")?.to_string(), p.attr("value")?.to_string()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let strings = |name: &str| -> Vec<String> {
        root.child(name)
            .map(|m| {
                m.children_named("string")
                    .map(|s| s.text.trim().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let template = AddressTemplate {
        name_mappings: properties("nameMappings").into_iter().collect(),
        size_mappings: properties("sizeMappings").into_iter().collect(),
        lines: strings("lineByLineFormat")
            .iter()
            .map(|l| split_fields(l))
            .collect(),
        element_defaults: properties("elementDefaults").into_iter().collect(),
        required_elements: strings("requiredElements"),
        hierarchy_levels: Vec::new(),
        hierarchy_required: Vec::new(),
    };
    check_template_fields(&template, loc, sink);
    Some(template)
}
