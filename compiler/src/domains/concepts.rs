//! `concepts/` CSV files: names per locale and type, descriptions, class and datatype,
//! numeric and complex extras, answers and set members, mappings.
//!
//! Answers, members, classes and mapping sources are references, resolved in
//! `crate::link` against every concept (CSV and OCL) so row order does not matter.

use super::{Ctx, Loaded};
use crate::builtin;
use crate::csvtable::{Columns, UuidRule, is_locale, name_uuid_from_bytes, split_list};
use crate::diagnostics::{Code, Sink};
use model::*;

pub const COLUMNS: Columns = Columns {
    known: &[
        "data class",
        "data type",
        "answers",
        "members",
        "same as mappings",
        "version",
        "absolute high",
        "absolute low",
        "critical high",
        "critical low",
        "normal high",
        "normal low",
        "units",
        "allow decimals",
        "display precision",
        "complex data handler",
    ],
    prefixes: &[
        "fully specified name",
        "short name",
        "synonym",
        "index term",
        "description:",
        "mappings|",
        "attribute|",
    ],
    required: &["data class", "data type"],
};

/// Initializer's namespace for generated concept name uuids.
const CONCEPT_NAME_NAMESPACE: &str = "103e0f29-b7a3-4382-bfdc-449068e9d436";

/// Initializer's (and core's) concept name uuid when none is given.
pub fn concept_name_uuid(
    concept: &str,
    name: &str,
    name_type: ConceptNameType,
    locale: &str,
) -> String {
    let ty = name_type.rest_name().unwrap_or("null");
    name_uuid_from_bytes(
        format!("{CONCEPT_NAME_NAMESPACE}_{concept}_{name}_{ty}_{locale}").as_bytes(),
    )
}

fn name_type_of(base: &str) -> Option<ConceptNameType> {
    let base = base.trim();
    if base.starts_with("fully specified name") {
        Some(ConceptNameType::FullySpecified)
    } else if base.starts_with("short name") {
        Some(ConceptNameType::Short)
    } else if base.starts_with("synonym") {
        Some(ConceptNameType::Synonym)
    } else if base.starts_with("index term") {
        Some(ConceptNameType::IndexTerm)
    } else {
        None
    }
}

pub fn load_row(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let table = ctx.table;
    // Names, with their optional `:Preferred` and `:Uuid` companions.
    struct NameCell {
        name: String,
        name_type: ConceptNameType,
        locale: String,
        uuid: Option<String>,
        preferred: Option<bool>,
        header: String,
    }
    let mut names: Vec<NameCell> = Vec::new();
    for (i, h) in table.headers.iter().enumerate() {
        let mut parts = h.key.split(':');
        let base = parts.next().unwrap_or("");
        let Some(name_type) = name_type_of(base) else {
            continue;
        };
        let original: Vec<&str> = h.name.split(':').map(str::trim).collect();
        let (Some(locale), None) = (original.get(1), original.get(2)) else {
            continue; // companions are read with their name column below
        };
        let Some(value) = table.cell(ctx.row, i) else {
            continue;
        };
        if !is_locale(locale) {
            sink.emit(
                Code::InvalidLocale,
                &table.cell_loc(ctx.row, i),
                format!("Invalid locale '{locale}' in column '{}'", h.name),
            )
            .help = Some("write the locale as `fr`, `en` or `en_GB`".into());
            continue;
        }
        let companion = |suffix: &str| {
            let key = format!("{}:{}", h.key, suffix);
            table.get(ctx.row, &key)
        };
        let preferred = companion("preferred").and_then(|v| {
            crate::csvtable::parse_bool(
                v,
                &format!("{}:Preferred", h.name),
                &table.loc(ctx.row, &format!("{}:preferred", h.key)),
                sink,
            )
        });
        names.push(NameCell {
            name: value.to_string(),
            name_type,
            locale: locale.to_string(),
            uuid: companion("uuid").map(str::to_string),
            preferred,
            header: h.name.clone(),
        });
    }
    let Some(first_fsn) = names
        .iter()
        .find(|n| n.name_type == ConceptNameType::FullySpecified)
        .map(|n| n.name.clone())
    else {
        sink.emit(
            Code::MissingValue,
            &ctx.row_loc(),
            "Concept has no fully specified name",
        )
        .help = Some("fill a `Fully specified name:<locale>` column".into());
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Concept, &first_fsn, sink) else {
        return;
    };

    let datatype_name = ctx.required("data type", sink).unwrap_or_default();
    let datatype = match builtin::datatype(&datatype_name) {
        Some(d) => d.0.to_string(),
        None => {
            if !datatype_name.is_empty() {
                sink.unknown_reference(&ctx.loc("data type"), "Concept datatype", &datatype_name)
                    .help = Some(format!(
                    "datatypes: {}",
                    builtin::DATATYPES
                        .iter()
                        .map(|d| d.0)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            return;
        }
    };
    let class = ctx.required("data class", sink).unwrap_or_default();

    // Locale-preferred: explicit flags first, else the first FSN or synonym per locale.
    let mut concept_names = Vec::new();
    let mut preferred_locales = std::collections::BTreeSet::new();
    for n in names.iter().filter(|n| n.preferred == Some(true)) {
        if !preferred_locales.insert(n.locale.clone()) {
            sink.emit(
                Code::InvalidValue,
                &ctx.row_loc(),
                format!("Two names are marked preferred in locale '{}'", n.locale),
            );
        }
    }
    for n in &names {
        let preferred = match n.preferred {
            Some(p) => p,
            None => {
                n.name_type != ConceptNameType::Short
                    && n.name_type != ConceptNameType::IndexTerm
                    && preferred_locales.insert(n.locale.clone())
            }
        };
        let _ = &n.header;
        concept_names.push(ConceptName {
            uuid: n
                .uuid
                .clone()
                .unwrap_or_else(|| concept_name_uuid(&uuid, &n.name, n.name_type, &n.locale)),
            name: n.name.clone(),
            locale: n.locale.clone(),
            name_type: n.name_type,
            locale_preferred: preferred,
        });
    }

    let mut descriptions = Vec::new();
    for (i, locale) in table.prefixed("description:") {
        if let Some(text) = table.cell(ctx.row, i) {
            descriptions.push(ConceptDescription {
                uuid: crate::csvtable::derive_uuid(&format!("conceptdescription/{uuid}/{locale}")),
                description: text.to_string(),
                locale: locale.to_string(),
            });
        }
    }

    let mut mappings = Vec::new();
    let mut add_mappings = |map_type: &str,
                            fixed_source: Option<&str>,
                            value: &str,
                            loc: &crate::source::Loc,
                            sink: &mut Sink| {
        for item in split_list(value) {
            let (source, code) = match fixed_source {
                Some(s) => (s.to_string(), item.to_string()),
                None => match item.split_once(':') {
                    Some((s, c))
                        if !c.contains(':') && !s.trim().is_empty() && !c.trim().is_empty() =>
                    {
                        (s.trim().to_string(), c.trim().to_string())
                    }
                    _ => {
                        sink.emit(
                            Code::InvalidValue,
                            loc,
                            format!("Mapping '{item}' is not of the form SOURCE:CODE"),
                        )
                        .help = Some("write mappings as `CIEL:5089`, separated by `;`".into());
                        continue;
                    }
                },
            };
            mappings.push(ConceptMapping {
                uuid: crate::csvtable::derive_uuid(&format!(
                    "conceptmap/{uuid}/{map_type}/{source}/{code}"
                )),
                map_type: map_type.to_string(),
                source,
                code,
            });
        }
    };
    if let Some(v) = ctx.get("same as mappings") {
        add_mappings("SAME-AS", None, v, &ctx.loc("same as mappings"), sink);
    }
    for (i, spec) in table.prefixed("mappings|") {
        if let Some(v) = table.cell(ctx.row, i) {
            let mut parts = spec.split('|').map(str::trim);
            let map_type = parts.next().unwrap_or("");
            let source = parts.next();
            add_mappings(map_type, source, v, &table.cell_loc(ctx.row, i), sink);
        }
    }

    // Numeric extras apply only to exactly `Numeric` (as Initializer does).
    let numeric = (datatype_name == "Numeric").then(|| ConceptNumeric {
        hi_absolute: ctx.f64("absolute high", sink),
        hi_critical: ctx.f64("critical high", sink),
        hi_normal: ctx.f64("normal high", sink),
        low_absolute: ctx.f64("absolute low", sink),
        low_critical: ctx.f64("critical low", sink),
        low_normal: ctx.f64("normal low", sink),
        units: ctx.string("units"),
        allow_decimal: ctx.bool("allow decimals", false, sink),
        display_precision: ctx.int("display precision", sink),
    });
    if let Some(n) = &numeric {
        check_ranges(n, ctx, sink);
    }

    let members = ctx.list("members");
    let value = Concept {
        uuid: uuid.clone(),
        class,
        datatype,
        is_set: !members.is_empty(),
        retired: ctx.retired(sink),
        version: ctx.string("version"),
        names: concept_names,
        descriptions,
        mappings,
        answers: ctx.list("answers"),
        set_members: members,
        numeric,
        complex_handler: (datatype_name == "Complex")
            .then(|| ctx.string("complex data handler"))
            .flatten(),
        origin: ConceptOrigin::Csv(ctx.table.file.path.to_string()),
    };
    let mut entry = ctx.entry_with(
        value,
        &[
            ("class", "data class"),
            ("answers", "answers"),
            ("members", "members"),
            ("mappings", "same as mappings"),
        ],
    );
    // Whether the Answers / Members columns exist decides if OCL ones are kept.
    if table.has("answers") {
        entry.cells.insert("has_answers", ctx.loc("answers"));
    }
    if table.has("members") {
        entry.cells.insert("has_members", ctx.loc("members"));
    }
    if let Some((i, _)) = table.prefixed("mappings|").next()
        && ctx.get("same as mappings").is_none()
    {
        entry.cells.insert("mappings", table.cell_loc(ctx.row, i));
    }
    loaded.csv_concepts.insert(uuid, entry, sink);
}

fn check_ranges(n: &ConceptNumeric, ctx: &Ctx, sink: &mut Sink) {
    let ordered = [
        (n.low_absolute, "absolute low"),
        (n.low_critical, "critical low"),
        (n.low_normal, "normal low"),
        (n.hi_normal, "normal high"),
        (n.hi_critical, "critical high"),
        (n.hi_absolute, "absolute high"),
    ];
    let present: Vec<_> = ordered
        .iter()
        .filter_map(|(v, k)| v.map(|v| (v, *k)))
        .collect();
    for pair in present.windows(2) {
        let ((a, ka), (b, kb)) = (pair[0], pair[1]);
        if a > b {
            sink.emit(
                Code::InvalidValue,
                &ctx.loc(kb),
                format!("Numeric range is inverted: {} ({a}) is greater than {} ({b})", ctx.header_name(ka), ctx.header_name(kb)),
            )
            .help = Some("ranges must satisfy absolute low ≤ critical low ≤ normal low ≤ normal high ≤ critical high ≤ absolute high".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concept_name_uuid_is_initializers() {
        // Value computed with Java 17's UUID.nameUUIDFromBytes on Initializer's string.
        let u = concept_name_uuid(
            "5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "Poids (kg)",
            ConceptNameType::FullySpecified,
            "fr",
        );
        assert_eq!(u, "c1adb4a4-6683-33bf-8cfe-ec89375ca07c");
    }
}
