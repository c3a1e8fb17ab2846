//! `patientidentifiertypes/`, `idgen/` and `autogenerationoptions/`. Formats are compiled
//! here; references between them are resolved in `crate::link`.

use super::{Ctx, Loaded};
use crate::builtin::IDENTIFIER_VALIDATORS;
use crate::csvtable::{Columns, UuidRule};
use crate::diagnostics::{Code, Sink};
use model::*;

pub const TYPE_COLUMNS: Columns = Columns {
    known: &[
        "name",
        "description",
        "required",
        "format",
        "format description",
        "validator",
        "location behavior",
        "uniqueness behavior",
    ],
    prefixes: &[],
    required: &["name"],
};

pub const IDGEN_COLUMNS: Columns = Columns {
    known: &[
        "name",
        "description",
        "identifier type",
        "pool identifier source",
        "pool refill batch size",
        "pool minimum size",
        "pool refill with task",
        "pool sequential allocation",
        "prefix",
        "suffix",
        "first identifier base",
        "base character set",
        "min length",
        "max length",
        "url",
        "user",
        "password",
    ],
    prefixes: &[],
    required: &["name", "identifier type"],
};

pub const AUTOGEN_COLUMNS: Columns = Columns {
    known: &[
        "identifier type",
        "identifier source",
        "location",
        "manual entry enabled",
        "auto generation enabled",
    ],
    prefixes: &[],
    required: &["identifier type", "identifier source"],
};

/// Compiles a regular expression the way the runtime will use it, reporting failures.
pub fn check_regex(pattern: &str, what: &str, loc: &crate::source::Loc, sink: &mut Sink) -> bool {
    match fancy_regex::Regex::new(pattern) {
        Ok(_) => true,
        Err(e) => {
            sink.emit(
                Code::InvalidRegex,
                loc,
                format!("{what} '{pattern}' is not a valid regular expression"),
            )
            .label = Some(e.to_string());
            false
        }
    }
}

pub fn load_type(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let Some(name) = ctx.required("name", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let format = ctx.string("format");
    if let Some(f) = &format {
        check_regex(f, "Format", &ctx.loc("format"), sink);
    }
    let validator = ctx.string("validator");
    if let Some(v) = &validator
        && !IDENTIFIER_VALIDATORS.contains(&v.as_str())
    {
        sink.unknown_reference(&ctx.loc("validator"), "Identifier validator", v)
            .help = Some(format!(
            "known validators: {}",
            IDENTIFIER_VALIDATORS.join(", ")
        ));
    }
    let location_behavior = ctx.get("location behavior").and_then(|v| match v {
        "REQUIRED" => Some(LocationBehavior::Required),
        "NOT_USED" => Some(LocationBehavior::NotUsed),
        other => {
            invalid_enum(
                ctx,
                "location behavior",
                other,
                "REQUIRED or NOT_USED",
                sink,
            );
            None
        }
    });
    let uniqueness_behavior = ctx.get("uniqueness behavior").and_then(|v| match v {
        "UNIQUE" => Some(UniquenessBehavior::Unique),
        "NON_UNIQUE" => Some(UniquenessBehavior::NonUnique),
        "LOCATION" => Some(UniquenessBehavior::Location),
        other => {
            invalid_enum(
                ctx,
                "uniqueness behavior",
                other,
                "UNIQUE, NON_UNIQUE or LOCATION",
                sink,
            );
            None
        }
    });
    let value = PatientIdentifierType {
        uuid: uuid.clone(),
        name,
        description: ctx.string("description"),
        required: ctx.bool("required", false, sink),
        format,
        format_description: ctx.string("format description"),
        validator,
        location_behavior,
        uniqueness_behavior,
        retired: ctx.retired(sink),
        display: ctx.display(sink),
    };
    loaded.identifier_types.insert(uuid, ctx.entry(value), sink);
}

fn invalid_enum(ctx: &Ctx, key: &str, value: &str, expected: &str, sink: &mut Sink) {
    sink.emit(
        Code::InvalidValue,
        &ctx.loc(key),
        format!(
            "Invalid value '{value}' in column '{}'",
            ctx.header_name(key)
        ),
    )
    .help = Some(format!("expected {expected} (upper case)"));
}

pub fn load_source(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let Some(name) = ctx.required("name", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let kind = if let Some(pool) = ctx.string("pool identifier source") {
        IdentifierSourceKind::Pool { pool_source: pool }
    } else if ctx.get("first identifier base").is_some() || ctx.get("base character set").is_some()
    {
        let (Some(first), Some(charset)) = (
            ctx.required("first identifier base", sink),
            ctx.required("base character set", sink),
        ) else {
            return;
        };
        if let Some(bad) = first.chars().find(|c| !charset.contains(*c)) {
            sink.emit(
                Code::InvalidValue,
                &ctx.loc("first identifier base"),
                format!("First identifier base '{first}' uses '{bad}', which is not in the base character set"),
            );
        }
        let min_length = ctx.int("min length", sink);
        let max_length = ctx.int("max length", sink);
        if let (Some(min), Some(max)) = (min_length, max_length)
            && min > max
        {
            sink.emit(
                Code::InvalidValue,
                &ctx.loc("min length"),
                format!("Min length {min} is greater than max length {max}"),
            );
        }
        IdentifierSourceKind::Sequential {
            prefix: ctx.string("prefix"),
            suffix: ctx.string("suffix"),
            first_identifier_base: first,
            base_character_set: charset,
            min_length,
            max_length,
        }
    } else if let Some(url) = ctx.string("url") {
        IdentifierSourceKind::Remote { url }
    } else {
        sink.emit(
            Code::MissingValue,
            &ctx.row_loc(),
            "Identifier source has no kind: fill the pool, sequential or remote columns",
        )
        .help = Some(
            "a sequential source needs 'First identifier base' and 'Base character set'".into(),
        );
        return;
    };
    let value = IdentifierSource {
        uuid: uuid.clone(),
        name,
        description: ctx.string("description"),
        identifier_type: ctx.string("identifier type").unwrap_or_default(),
        kind,
        retired: ctx.retired(sink),
    };
    let entry = ctx.entry_with(
        value,
        &[
            ("identifier_type", "identifier type"),
            ("pool", "pool identifier source"),
        ],
    );
    loaded.identifier_sources.insert(uuid, entry, sink);
}

pub fn load_autogen(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(identifier_type), Some(source)) = (
        ctx.required("identifier type", sink),
        ctx.required("identifier source", sink),
    ) else {
        return;
    };
    let Some(uuid) = ctx.uuid(
        UuidRule::Metadata,
        &format!("{identifier_type}/{source}"),
        sink,
    ) else {
        return;
    };
    let value = AutogenerationOption {
        uuid: uuid.clone(),
        identifier_type,
        source,
        location: ctx.string("location"),
        manual_entry_enabled: ctx.bool("manual entry enabled", false, sink),
        automatic_generation_enabled: ctx.bool("auto generation enabled", false, sink),
    };
    let entry = ctx.entry_with(
        value,
        &[
            ("identifier_type", "identifier type"),
            ("source", "identifier source"),
            ("location", "location"),
        ],
    );
    loaded.autogeneration_options.insert(uuid, entry, sink);
}
