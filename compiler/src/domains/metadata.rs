//! Simple metadata domains: visit types, encounter roles, location tags, concept classes
//! and sources, encounter types, relationship types, person attribute types.

use super::{Ctx, Loaded};
use crate::csvtable::{Columns, UuidRule};
use crate::diagnostics::{Code, Sink};
use model::*;

pub const NAMED_COLUMNS: Columns = Columns {
    known: &["name", "description"],
    prefixes: &[],
    required: &["name"],
};

pub const SOURCE_COLUMNS: Columns = Columns {
    known: &["name", "description", "hl7 code", "unique id"],
    prefixes: &[],
    required: &["name", "description"],
};

/// Initializer's `fhirconceptsources`: the source by `Concept source` (its name, HL7 code,
/// unique id or uuid) or, in Initializer's earlier form, `Concept source name`.
pub const FHIR_SOURCE_COLUMNS: Columns = Columns {
    known: &["concept source", "concept source name", "url"],
    prefixes: &[],
    required: &["url"],
};

/// Initializer's `metadatatermmappings`: a code in a source naming one piece of metadata by
/// its class and uuid.
pub const TERM_MAPPING_COLUMNS: Columns = Columns {
    known: &[
        "mapping source",
        "mapping code",
        "metadata class name",
        "metadata uuid",
    ],
    prefixes: &[],
    required: &["mapping source", "mapping code", "metadata class name"],
};

/// Initializer's `metadatasets`: a set's name and description.
pub const METADATA_SET_COLUMNS: Columns = Columns {
    known: &["name", "description"],
    prefixes: &[],
    required: &[],
};

/// Initializer's `metadatasetmembers`: a set, and the class and uuid of one member.
pub const METADATA_SET_MEMBER_COLUMNS: Columns = Columns {
    known: &[
        "name",
        "description",
        "metadata set uuid",
        "metadata class",
        "metadata uuid",
        "sort weight",
    ],
    prefixes: &[],
    required: &["metadata set uuid", "metadata class", "metadata uuid"],
};

/// A metadata set or member as a layer states it; a retired row takes a lower layer's out.
pub struct Retirable<T> {
    pub value: T,
    pub retired: bool,
}

/// A member with its set's uuid, as written.
pub struct LoadedSetMember {
    pub set: String,
    pub member: model::MetadataSetMember,
}

/// A term mapping as a layer states it; a retired row takes a lower layer's out.
pub struct LoadedTermMapping {
    pub mapping: MetadataTermMapping,
    pub retired: bool,
}

pub const ENCOUNTER_TYPE_COLUMNS: Columns = Columns {
    known: &["name", "description", "view privilege", "edit privilege"],
    prefixes: &[],
    required: &["name"],
};

pub const RELATIONSHIP_COLUMNS: Columns = Columns {
    known: &[
        "name",
        "description",
        "weight",
        "preferred",
        "a is to b",
        "b is to a",
    ],
    prefixes: &[],
    required: &["a is to b", "b is to a"],
};

pub const PERSON_ATTRIBUTE_COLUMNS: Columns = Columns {
    known: &[
        "name",
        "description",
        "format",
        "foreign uuid",
        "searchable",
        "edit privilege",
    ],
    prefixes: &[],
    required: &["name"],
};

pub const ATTRIBUTE_TYPE_COLUMNS: Columns = Columns {
    known: &[
        "entity name",
        "name",
        "description",
        "min occurs",
        "max occurs",
        "datatype classname",
        "datatype config",
        "preferred handler classname",
        "handler config",
    ],
    prefixes: &[],
    required: &["entity name", "name", "datatype classname"],
};

/// The entities whose attribute types Initializer's `attributetypes/` domain makes.
const ATTRIBUTE_ENTITIES: &[&str] = &["Location", "Visit", "Provider", "Concept", "Program"];

pub fn load_row(domain: &str, ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    match domain {
        "relationshiptypes" => return load_relationship_type(ctx, loaded, sink),
        "conceptsources" => return load_source(ctx, loaded, sink),
        "fhirconceptsources" => return load_fhir_source(ctx, loaded, sink),
        "metadatatermmappings" => return load_term_mapping(ctx, loaded, sink),
        "metadatasets" => return load_metadata_set(ctx, loaded, sink),
        "metadatasetmembers" => return load_metadata_set_member(ctx, loaded, sink),
        _ => {}
    }
    let Some(name) = ctx.required("name", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let description = ctx.string("description");
    let retired = ctx.retired(sink);
    let display = ctx.display(sink);
    match domain {
        "conceptclasses" => {
            let value = ConceptClass {
                uuid: uuid.clone(),
                name,
                description,
                retired,
            };
            loaded.concept_classes.insert(uuid, ctx.entry(value), sink);
        }
        "encountertypes" => {
            let value = EncounterType {
                uuid: uuid.clone(),
                name,
                description,
                view_privilege: ctx.string("view privilege"),
                edit_privilege: ctx.string("edit privilege"),
                retired,
                display,
            };
            let entry = ctx.entry_with(
                value,
                &[
                    ("view_privilege", "view privilege"),
                    ("edit_privilege", "edit privilege"),
                ],
            );
            loaded.encounter_types.insert(uuid, entry, sink);
        }
        "personattributetypes" => {
            let value = PersonAttributeType {
                uuid: uuid.clone(),
                name,
                description,
                format: ctx.string("format"),
                foreign_key: ctx.string("foreign uuid"),
                searchable: ctx.bool("searchable", false, sink),
                edit_privilege: ctx.string("edit privilege"),
                retired,
                display,
            };
            let entry = ctx.entry_with(value, &[("edit_privilege", "edit privilege")]);
            loaded.person_attribute_types.insert(uuid, entry, sink);
        }
        "attributetypes" => {
            if let Some(value) = attribute_type(ctx, uuid.clone(), name, description, sink) {
                let entry = ctx.entry_with(
                    AttributeType {
                        retired,
                        display,
                        ..value
                    },
                    &[("datatype", "datatype classname")],
                );
                loaded.attribute_types.insert(uuid, entry, sink);
            }
        }
        _ => {
            let value = NamedMetadata {
                uuid: uuid.clone(),
                name,
                description,
                retired,
                display,
            };
            let registry = match domain {
                "visittypes" => &mut loaded.visit_types,
                "encounterroles" => &mut loaded.encounter_roles,
                _ => &mut loaded.location_tags,
            };
            registry.insert(uuid, ctx.entry(value), sink);
        }
    }
}

/// An `attributetypes/` row: its entity must be one Initializer knows, its datatype one of
/// core's that the runtime checks, with the configuration that datatype needs.
fn attribute_type(
    ctx: &Ctx,
    uuid: String,
    name: String,
    description: Option<String>,
    sink: &mut Sink,
) -> Option<AttributeType> {
    let entity = ctx.required("entity name", sink)?;
    let Some(entity) = ATTRIBUTE_ENTITIES
        .iter()
        .find(|e| e.eq_ignore_ascii_case(&entity))
    else {
        sink.emit(
            Code::InvalidValue,
            &ctx.loc("entity name"),
            format!("Unknown entity '{entity}' for an attribute type"),
        )
        .help = Some(format!("one of: {}", ATTRIBUTE_ENTITIES.join(", ")));
        return None;
    };
    let datatype = ctx.required("datatype classname", sink)?;
    if !datatypes::ALL.contains(&datatype.as_str()) {
        sink.emit(
            Code::InvalidValue,
            &ctx.loc("datatype classname"),
            format!("Datatype '{datatype}' is not one the runtime can check"),
        )
        .help = Some(format!("one of: {}", datatypes::ALL.join(", ")));
        return None;
    }
    let datatype_config = ctx.string("datatype config");
    match datatype.as_str() {
        datatypes::REGEX => match datatype_config.as_deref() {
            Some(pattern) => {
                let loc = ctx.loc("datatype config");
                if !super::identifiers::check_regex(pattern, "The datatype's pattern", &loc, sink) {
                    return None;
                }
            }
            None => {
                sink.emit(
                    Code::MissingValue,
                    &ctx.row_loc(),
                    "A regex-validated attribute type needs its pattern in 'Datatype config'",
                );
                return None;
            }
        },
        datatypes::OPTIONS if datatype_config.is_none() => {
            sink.emit(
                Code::MissingValue,
                &ctx.row_loc(),
                "A specified-options attribute type needs its options (comma-separated) in 'Datatype config'",
            );
            return None;
        }
        _ => {}
    }
    let min_occurs = ctx.int::<u32>("min occurs", sink).unwrap_or(0);
    let max_occurs = ctx.int::<u32>("max occurs", sink);
    if let Some(max) = max_occurs
        && max < min_occurs.max(1)
    {
        sink.emit(
            Code::InvalidValue,
            &ctx.loc("max occurs"),
            format!("'Max occurs' ({max}) is below 'Min occurs' or zero"),
        );
        return None;
    }
    Some(AttributeType {
        uuid,
        entity: entity.to_string(),
        name,
        description,
        min_occurs,
        max_occurs,
        datatype,
        datatype_config,
        handler: ctx.string("preferred handler classname"),
        handler_config: ctx.string("handler config"),
        retired: false,
        display: Localized::new(),
    })
}

fn load_source(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let Some(name) = ctx.required("name", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let value = ConceptSource {
        uuid: uuid.clone(),
        name,
        description: ctx.string("description"),
        hl7_code: ctx.string("hl7 code"),
        unique_id: ctx.string("unique id"),
        retired: ctx.retired(sink),
    };
    loaded.concept_sources.insert(uuid, ctx.entry(value), sink);
}

fn load_fhir_source(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let column = if ctx.table.has("concept source") {
        "concept source"
    } else if ctx.table.has("concept source name") {
        "concept source name"
    } else {
        sink.emit(
            Code::MissingValue,
            &ctx.row_loc(),
            "Neither 'Concept source' nor 'Concept source name' names the concept source",
        )
        .help = Some("add a 'Concept source' column: the source's name, HL7 code or uuid".into());
        return;
    };
    let Some(source) = ctx.required(column, sink) else {
        return;
    };
    let Some(url) = ctx.required("url", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &source, sink) else {
        return;
    };
    let value = FhirConceptSource {
        uuid: uuid.clone(),
        source,
        url,
    };
    let entry = ctx.entry_with(value, &[("source", column), ("url", "url")]);
    loaded.fhir_concept_sources.insert(uuid, entry, sink);
}

pub fn load_term_mapping(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(source), Some(code), Some(class_name)) = (
        ctx.required("mapping source", sink),
        ctx.required("mapping code", sink),
        ctx.required("metadata class name", sink),
    ) else {
        return;
    };
    let retired = ctx.retired(sink);
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &format!("{source}:{code}"), sink) else {
        return;
    };
    let value = LoadedTermMapping {
        mapping: MetadataTermMapping {
            uuid: uuid.clone(),
            source,
            code,
            class_name,
            metadata_uuid: ctx.string("metadata uuid").unwrap_or_default(),
        },
        retired,
    };
    let entry = ctx.entry_with(
        value,
        &[
            ("code", "mapping code"),
            ("class", "metadata class name"),
            ("metadata", "metadata uuid"),
        ],
    );
    loaded.term_mappings.insert(uuid, entry, sink);
}

fn load_metadata_set(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let name = ctx.string("name");
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, name.as_deref().unwrap_or(""), sink) else {
        return;
    };
    let value = Retirable {
        value: model::MetadataSet {
            uuid: uuid.clone(),
            name,
            description: ctx.string("description"),
            members: Vec::new(),
        },
        retired: ctx.retired(sink),
    };
    loaded.metadata_sets.insert(uuid, ctx.entry(value), sink);
}

fn load_metadata_set_member(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(set), Some(class_name), Some(metadata_uuid)) = (
        ctx.required("metadata set uuid", sink),
        ctx.required("metadata class", sink),
        ctx.required("metadata uuid", sink),
    ) else {
        return;
    };
    let Some(uuid) = ctx.uuid(
        UuidRule::Metadata,
        &format!("{set}/{class_name}/{metadata_uuid}"),
        sink,
    ) else {
        return;
    };
    let value = Retirable {
        value: LoadedSetMember {
            set,
            member: model::MetadataSetMember {
                uuid: uuid.clone(),
                class_name,
                metadata_uuid,
                sort_weight: ctx.f64("sort weight", sink),
            },
        },
        retired: ctx.retired(sink),
    };
    let entry = ctx.entry_with(
        value,
        &[
            ("set", "metadata set uuid"),
            ("class", "metadata class"),
            ("metadata", "metadata uuid"),
        ],
    );
    loaded.metadata_set_members.insert(uuid, entry, sink);
}

fn load_relationship_type(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(a), Some(b)) = (
        ctx.required("a is to b", sink),
        ctx.required("b is to a", sink),
    ) else {
        return;
    };
    let key = format!("{a}/{b}");
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &key, sink) else {
        return;
    };
    let value = RelationshipType {
        uuid: uuid.clone(),
        description: ctx.string("description"),
        a_is_to_b: a,
        b_is_to_a: b,
        weight: ctx.int("weight", sink).unwrap_or(0),
        preferred: ctx.bool("preferred", false, sink),
        retired: ctx.retired(sink),
        display: ctx.display(sink),
    };
    loaded
        .relationship_types
        .insert(uuid, ctx.entry(value), sink);
}
