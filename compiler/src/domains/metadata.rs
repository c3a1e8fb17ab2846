//! Simple metadata domains: visit types, encounter roles, location tags, concept classes
//! and sources, encounter types, relationship types, person attribute types.

use super::{Ctx, Loaded};
use crate::csvtable::{Columns, UuidRule};
use crate::diagnostics::Sink;
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

pub fn load_row(domain: &str, ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    match domain {
        "relationshiptypes" => return load_relationship_type(ctx, loaded, sink),
        "conceptsources" => return load_source(ctx, loaded, sink),
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
