//! `drugs/`, `orderfrequencies/`, `ordertypes/`, `paymentmodes/` and `queues/`.

use super::{Ctx, Loaded};
use crate::csvtable::{Columns, UuidRule, split_list};
use crate::diagnostics::{Code, Sink};
use model::*;

pub const DRUG_COLUMNS: Columns = Columns {
    known: &[
        "name",
        "description",
        "strength",
        "concept drug",
        "concept dosage form",
    ],
    prefixes: &["mappings|", "ingredient "],
    required: &["name", "concept drug"],
};

pub const FREQUENCY_COLUMNS: Columns = Columns {
    known: &["frequency per day", "concept frequency"],
    prefixes: &[],
    required: &["concept frequency"],
};

pub const ORDER_TYPE_COLUMNS: Columns = Columns {
    known: &[
        "name",
        "description",
        "java class name",
        "parent",
        "concept classes",
    ],
    prefixes: &[],
    required: &["name", "java class name"],
};

/// The order classes OpenMRS core knows (an order type's Java class must be one of them,
/// or Initializer fails on a class it cannot load).
pub const ORDER_CLASSES: &[&str] = &[
    "org.openmrs.Order",
    "org.openmrs.DrugOrder",
    "org.openmrs.TestOrder",
    "org.openmrs.ServiceOrder",
    "org.openmrs.ReferralOrder",
];

pub const PAYMENT_COLUMNS: Columns = Columns {
    known: &["name", "attributes"],
    prefixes: &[],
    required: &["name"],
};

pub const QUEUE_COLUMNS: Columns = Columns {
    known: &[
        "name",
        "description",
        "service",
        "status concept set",
        "priority concept set",
        "location",
    ],
    prefixes: &[],
    required: &["name", "service", "location"],
};

pub fn load_drug(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(name), Some(concept)) = (
        ctx.required("name", sink),
        ctx.required("concept drug", sink),
    ) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let mut mappings = Vec::new();
    for (i, spec) in ctx.table.prefixed("mappings|") {
        let Some(v) = ctx.table.cell(ctx.row, i) else {
            continue;
        };
        let mut parts = spec.split('|').map(str::trim);
        let map_type = parts.next().unwrap_or("").to_string();
        let fixed_source = parts.next().map(str::to_string);
        for item in split_list(v) {
            let (source, code) = match &fixed_source {
                Some(s) => (s.clone(), item.to_string()),
                None => match item.split_once(':') {
                    Some((s, c)) => (s.trim().to_string(), c.trim().to_string()),
                    None => {
                        sink.emit(
                            Code::InvalidValue,
                            &ctx.table.cell_loc(ctx.row, i),
                            format!("Mapping '{item}' is not of the form SOURCE:CODE"),
                        );
                        continue;
                    }
                },
            };
            mappings.push(ConceptMapping {
                uuid: crate::csvtable::derive_uuid(&format!(
                    "drug/{uuid}/{map_type}/{source}/{code}"
                )),
                map_type: map_type.clone(),
                source,
                code,
            });
        }
    }
    let value = Drug {
        uuid: uuid.clone(),
        name,
        description: ctx.string("description"),
        strength: ctx.string("strength"),
        concept,
        dosage_form: ctx.string("concept dosage form"),
        mappings,
        retired: ctx.retired(sink),
    };
    let entry = ctx.entry_with(
        value,
        &[
            ("concept", "concept drug"),
            ("dosage_form", "concept dosage form"),
        ],
    );
    loaded.drugs.insert(uuid, entry, sink);
}

pub fn load_frequency(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let Some(concept) = ctx.required("concept frequency", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &concept, sink) else {
        return;
    };
    let value = OrderFrequency {
        uuid: uuid.clone(),
        frequency_per_day: ctx.f64("frequency per day", sink),
        concept,
        retired: ctx.retired(sink),
    };
    let entry = ctx.entry_with(value, &[("concept", "concept frequency")]);
    loaded.order_frequencies.insert(uuid, entry, sink);
}

pub fn load_order_type(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(name), Some(java_class_name)) = (
        ctx.required("name", sink),
        ctx.required("java class name", sink),
    ) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    if !ORDER_CLASSES.contains(&java_class_name.as_str()) {
        sink.emit(
            Code::InvalidValue,
            &ctx.loc("java class name"),
            format!("'{java_class_name}' is not an order class OpenMRS knows"),
        )
        .help = Some(format!("use one of {}", ORDER_CLASSES.join(", ")));
        return;
    }
    let value = OrderType {
        uuid: uuid.clone(),
        name,
        description: ctx.string("description"),
        java_class_name,
        parent: ctx.string("parent"),
        concept_classes: ctx.list("concept classes"),
        retired: ctx.retired(sink),
    };
    let entry = ctx.entry_with(
        value,
        &[("parent", "parent"), ("concept_classes", "concept classes")],
    );
    loaded.order_types.insert(uuid, entry, sink);
}

pub fn load_payment_mode(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let Some(name) = ctx.required("name", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let attributes = ctx
        .list("attributes")
        .iter()
        .map(|item| {
            let mut parts = item.split("::").map(str::trim);
            let mut next = || parts.next().filter(|s| !s.is_empty()).map(str::to_string);
            PaymentModeAttribute {
                name: next().unwrap_or_default(),
                format: next(),
                regex: next(),
                required: next().is_some_and(|r| r.eq_ignore_ascii_case("true")),
            }
        })
        .collect();
    let value = PaymentMode {
        uuid: uuid.clone(),
        name,
        attributes,
        retired: ctx.retired(sink),
    };
    loaded.payment_modes.insert(uuid, ctx.entry(value), sink);
}

pub fn load_queue(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(name), Some(service), Some(location)) = (
        ctx.required("name", sink),
        ctx.required("service", sink),
        ctx.required("location", sink),
    ) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let value = Queue {
        uuid: uuid.clone(),
        name,
        description: ctx.string("description"),
        service,
        status_concept_set: ctx.string("status concept set"),
        priority_concept_set: ctx.string("priority concept set"),
        location,
        retired: ctx.retired(sink),
    };
    let entry = ctx.entry_with(
        value,
        &[
            ("service", "service"),
            ("status_concept_set", "status concept set"),
            ("priority_concept_set", "priority concept set"),
            ("location", "location"),
        ],
    );
    loaded.queues.insert(uuid, entry, sink);
}
