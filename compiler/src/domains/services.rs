//! Billing and appointments content, as the billing and appointments modules' Initializer
//! loaders read it: `cashpoints/`, `billableservices/`, `cashieritemprices/`,
//! `appointmentspecialities/`, `appointmentservicedefinitions/`, `appointmentservicetypes/`.
//!
//! Every row is read and its references checked, so a cash point whose location or a
//! billable service whose concept does not exist fails the build at its cell rather than
//! loading as a silent null on a real server. Both become typed entities of the bundle:
//! the appointments folders (`appointment_content`) for the runtime's appointment services,
//! the billing folders (`billing_content`: cash points, and billable services with their
//! prices) for its bills. Prices are exact decimals, kept as written.

use super::{Ctx, Loaded};
use crate::csvtable::{Columns, UuidRule};
use crate::diagnostics::{Code, Sink};
use crate::resolve::ConceptIndex;
use crate::source::Loc;
use crate::store::{Entry, Lookup, Registry};

/// The folders this module reads (and carries).
pub const DOMAINS: &[&str] = &[
    "cashpoints",
    "billableservices",
    "cashieritemprices",
    "appointmentspecialities",
    "appointmentservicedefinitions",
    "appointmentservicetypes",
];

pub fn columns(domain: &str) -> Option<&'static Columns> {
    Some(match domain {
        "cashpoints" => &Columns {
            known: &["name", "description", "location"],
            prefixes: &[],
            required: &["name", "location"],
        },
        "billableservices" => &Columns {
            known: &[
                "service name",
                "short name",
                "concept",
                "service type",
                "service status",
            ],
            prefixes: &[],
            required: &["service name", "concept", "service type"],
        },
        "cashieritemprices" => &Columns {
            known: &[
                "name",
                "price",
                "payment mode",
                "stock item",
                "billable service",
            ],
            prefixes: &[],
            required: &["name", "price", "payment mode"],
        },
        "appointmentspecialities" => &Columns {
            known: &["name"],
            prefixes: &[],
            required: &["name"],
        },
        "appointmentservicedefinitions" => &Columns {
            known: &[
                "name",
                "description",
                "duration",
                "start time",
                "end time",
                "max load",
                "speciality",
                "location",
                "label colour",
            ],
            prefixes: &[],
            required: &["name"],
        },
        "appointmentservicetypes" => &Columns {
            known: &["name", "service definition", "duration"],
            prefixes: &[],
            required: &["name", "service definition"],
        },
        _ => return None,
    })
}

/// What a reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Location,
    Concept,
    /// A concept too (the billing module's service type).
    ServiceType,
    /// By uuid only, as the billing module looks them up.
    PaymentMode,
    BillableService,
    Speciality,
    ServiceDefinition,
}

#[derive(Debug, Clone)]
pub struct Reference {
    pub target: Target,
    pub value: String,
    pub loc: Loc,
}

/// One row: its name (for lookups by name), what it refers to, and the values an entity is
/// built from (appointment services and types).
#[derive(Debug, Clone)]
pub struct ServiceRow {
    pub name: String,
    pub references: Vec<Reference>,
    pub retired: bool,
    pub description: Option<String>,
    pub duration: Option<u32>,
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    pub max_load: Option<u32>,
    pub color: Option<String>,
    /// Billable services.
    pub short_name: Option<String>,
    pub enabled: bool,
    /// Item prices, as written (checked by `is_price`).
    pub price: Option<String>,
}

#[derive(Debug, Default)]
pub struct Services {
    pub cash_points: Registry<ServiceRow>,
    pub billable_services: Registry<ServiceRow>,
    pub prices: Registry<ServiceRow>,
    pub specialities: Registry<ServiceRow>,
    pub definitions: Registry<ServiceRow>,
    pub types: Registry<ServiceRow>,
}

pub fn load_row(domain: &str, ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let name_column = if domain == "billableservices" {
        "service name"
    } else {
        "name"
    };
    let Some(name) = ctx.required(name_column, sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let mut references = Vec::new();
    let mut refer = |target, column: &str| {
        if let Some(value) = ctx.string(column) {
            references.push(Reference {
                target,
                value,
                loc: ctx.loc(column),
            });
        }
    };
    match domain {
        "cashpoints" => refer(Target::Location, "location"),
        "billableservices" => {
            refer(Target::Concept, "concept");
            refer(Target::ServiceType, "service type");
            if let Some(status) = ctx.get("service status")
                && !["enabled", "disabled"].contains(&status.to_lowercase().as_str())
            {
                sink.emit(
                    Code::InvalidValue,
                    &ctx.loc("service status"),
                    format!("Service status '{status}' is neither Enabled nor Disabled"),
                );
            }
        }
        "cashieritemprices" => {
            refer(Target::PaymentMode, "payment mode");
            refer(Target::BillableService, "billable service");
            if let Some(price) = ctx.get("price")
                && !is_price(price)
            {
                sink.emit(
                    Code::InvalidValue,
                    &ctx.loc("price"),
                    format!("Price '{price}' is not an amount"),
                )
                .help = Some(
                    "write a non-negative decimal with a point and at most four places (1500, 2.50)".into(),
                );
            }
            let item = ctx.get("stock item").is_some();
            let service = ctx.get("billable service").is_some();
            if item == service {
                sink.emit(
                    Code::InvalidValue,
                    &ctx.row_loc(),
                    format!(
                        "Price '{name}' must be for exactly one of a stock item or a billable service"
                    ),
                )
                .help = Some(
                    "fill either 'Stock Item' or 'Billable Service' (the billing module refuses both or neither)".into(),
                );
            }
        }
        "appointmentservicedefinitions" => {
            refer(Target::Speciality, "speciality");
            refer(Target::Location, "location");
            for column in ["start time", "end time"] {
                if let Some(t) = ctx.get(column)
                    && !is_time(t)
                {
                    sink.emit(
                        Code::InvalidValue,
                        &ctx.loc(column),
                        format!("'{t}' is not a time of day (HH:mm)"),
                    );
                }
            }
        }
        "appointmentservicetypes" => {
            refer(Target::ServiceDefinition, "service definition");
        }
        _ => {}
    }
    let retired = ctx.retired(sink);
    let appointments = domain.starts_with("appointmentservice");
    let time = |column: &str| ctx.string(column).filter(|t| is_time(t));
    let row = ctx.entry(ServiceRow {
        name,
        references,
        retired,
        description: ctx.string("description"),
        duration: if appointments {
            ctx.int::<u32>("duration", sink)
        } else {
            None
        },
        start_time: time("start time").map(|t| normalise_time(&t)),
        end_time: time("end time").map(|t| normalise_time(&t)),
        max_load: if domain == "appointmentservicedefinitions" {
            ctx.int::<u32>("max load", sink)
        } else {
            None
        },
        color: ctx.string("label colour"),
        short_name: ctx.string("short name"),
        enabled: !ctx
            .get("service status")
            .is_some_and(|s| s.eq_ignore_ascii_case("disabled")),
        price: ctx.string("price").filter(|p| is_price(p)),
    });
    let registry = match domain {
        "cashpoints" => &mut loaded.services.cash_points,
        "billableservices" => &mut loaded.services.billable_services,
        "cashieritemprices" => &mut loaded.services.prices,
        "appointmentspecialities" => &mut loaded.services.specialities,
        "appointmentservicedefinitions" => &mut loaded.services.definitions,
        _ => &mut loaded.services.types,
    };
    registry.insert(uuid, row, sink);
}

/// `HH:mm` with two digits for the hour.
fn normalise_time(t: &str) -> String {
    match t.split_once(':') {
        Some((h, m)) if h.len() == 1 => format!("0{h}:{m}"),
        _ => t.to_string(),
    }
}

/// The appointments content as bundle entities, references resolved to uuids (`check` has
/// reported those that do not resolve; they are left empty here).
pub fn appointment_content(
    services: &Services,
    locations: &Lookup,
) -> (
    Vec<model::AppointmentSpeciality>,
    Vec<model::AppointmentService>,
    Vec<model::AppointmentServiceType>,
) {
    let by_name = |r: &Registry<ServiceRow>| {
        Lookup::new(
            r.items
                .iter()
                .map(|(u, e)| (e.value.name.as_str(), u.as_str())),
        )
    };
    let (specialities, definitions) = (
        by_name(&services.specialities),
        by_name(&services.definitions),
    );
    let target = |row: &ServiceRow, t: Target, lookup: &Lookup| {
        row.references
            .iter()
            .find(|r| r.target == t)
            .and_then(|r| lookup.find(&r.value))
    };
    let speciality_list = services
        .specialities
        .items
        .iter()
        .map(|(uuid, e)| model::AppointmentSpeciality {
            uuid: uuid.clone(),
            name: e.value.name.clone(),
            retired: e.value.retired,
        })
        .collect();
    let service_list = services
        .definitions
        .items
        .iter()
        .map(|(uuid, e)| {
            let row = &e.value;
            model::AppointmentService {
                uuid: uuid.clone(),
                name: row.name.clone(),
                description: row.description.clone(),
                duration_mins: row.duration,
                start_time: row.start_time.clone(),
                end_time: row.end_time.clone(),
                max_load: row.max_load,
                speciality: target(row, Target::Speciality, &specialities),
                location: target(row, Target::Location, locations),
                color: row.color.clone(),
                retired: row.retired,
            }
        })
        .collect();
    let type_list = services
        .types
        .items
        .iter()
        .filter_map(|(uuid, e)| {
            let row = &e.value;
            Some(model::AppointmentServiceType {
                uuid: uuid.clone(),
                name: row.name.clone(),
                service: target(row, Target::ServiceDefinition, &definitions)?,
                duration_mins: row.duration,
                retired: row.retired,
            })
        })
        .collect();
    (speciality_list, service_list, type_list)
}

/// The billing content as bundle entities: the cash points, and the billable services each
/// with the item prices that name it (in uuid order). References that do not resolve were
/// reported by `check` and are left empty here.
pub fn billing_content(
    services: &Services,
    locations: &Lookup,
    concepts: &ConceptIndex,
) -> (Vec<model::CashPoint>, Vec<model::BillableService>) {
    fn reference(row: &ServiceRow, t: Target) -> Option<&str> {
        row.references
            .iter()
            .find(|r| r.target == t)
            .map(|r| r.value.as_str())
    }
    let cash_points = services
        .cash_points
        .items
        .iter()
        .map(|(uuid, e)| model::CashPoint {
            uuid: uuid.clone(),
            name: e.value.name.clone(),
            description: e.value.description.clone(),
            location: reference(&e.value, Target::Location).and_then(|l| locations.find(l)),
            retired: e.value.retired,
        })
        .collect();
    let concept_of = |row: &ServiceRow, t: Target| match concepts.lookup(reference(row, t)?) {
        crate::resolve::Resolution::Found(uuid) => Some(uuid),
        _ => None,
    };
    let billable = services
        .billable_services
        .items
        .iter()
        .map(|(uuid, e)| {
            let row = &e.value;
            let prices = services
                .prices
                .items
                .iter()
                .filter(|(_, p)| {
                    !p.value.retired && reference(&p.value, Target::BillableService) == Some(uuid)
                })
                .filter_map(|(price_uuid, p)| {
                    Some(model::ServicePrice {
                        uuid: price_uuid.clone(),
                        name: p.value.name.clone(),
                        price: p.value.price.clone()?,
                        payment_mode: reference(&p.value, Target::PaymentMode)?.to_string(),
                    })
                })
                .collect();
            model::BillableService {
                uuid: uuid.clone(),
                name: row.name.clone(),
                short_name: row.short_name.clone(),
                concept: concept_of(row, Target::Concept),
                service_type: concept_of(row, Target::ServiceType),
                enabled: row.enabled,
                prices,
                retired: row.retired,
            }
        })
        .collect();
    (cash_points, billable)
}

/// A non-negative decimal with at most four places and fourteen whole digits, as bills
/// keep amounts (ten-thousandths in a 64-bit integer).
pub fn is_price(p: &str) -> bool {
    let (whole, fraction) = p.split_once('.').unwrap_or((p, ""));
    !whole.is_empty()
        && whole.len() <= 14
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.len() <= 4
        && fraction.bytes().all(|b| b.is_ascii_digit())
        && !(p.contains('.') && fraction.is_empty())
}

/// `H:mm` or `HH:mm`, as the appointments loader parses times.
fn is_time(t: &str) -> bool {
    let Some((h, m)) = t.split_once(':') else {
        return false;
    };
    m.len() == 2 && matches!((h.parse::<u8>(), m.parse::<u8>()), (Ok(h), Ok(m)) if h < 24 && m < 60)
}

/// Checks every reference once the metadata they name is linked.
pub fn check(
    services: &Services,
    locations: &Lookup,
    concepts: &ConceptIndex,
    payment_modes: &std::collections::BTreeSet<String>,
    sink: &mut Sink,
) {
    let by_name = |r: &Registry<ServiceRow>| {
        Lookup::new(
            r.items
                .iter()
                .map(|(u, e)| (e.value.name.as_str(), u.as_str())),
        )
    };
    let specialities = by_name(&services.specialities);
    let definitions = by_name(&services.definitions);
    let all: [&Registry<ServiceRow>; 6] = [
        &services.cash_points,
        &services.billable_services,
        &services.prices,
        &services.specialities,
        &services.definitions,
        &services.types,
    ];
    for registry in all {
        for Entry { value, .. } in registry.items.values() {
            for r in &value.references {
                match r.target {
                    Target::Location => {
                        locations.resolve(&r.value, "Location", &r.loc, sink);
                    }
                    Target::Concept | Target::ServiceType => {
                        concepts.resolve(&r.value, &r.loc, sink);
                    }
                    Target::PaymentMode => {
                        if !payment_modes.contains(&r.value) {
                            sink.unknown_reference(&r.loc, "Payment mode", &r.value)
                                .help =
                                Some("the billing module finds payment modes by uuid only".into());
                        }
                    }
                    Target::BillableService => {
                        if services.billable_services.get(&r.value).is_none() {
                            sink.unknown_reference(&r.loc, "Billable service", &r.value)
                                .help = Some(
                                "the billing module finds billable services by uuid only".into(),
                            );
                        }
                    }
                    Target::Speciality => {
                        specialities.resolve(&r.value, "Appointment speciality", &r.loc, sink);
                    }
                    Target::ServiceDefinition => {
                        definitions.resolve(&r.value, "Appointment service", &r.loc, sink);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn prices_are_plain_non_negative_decimals() {
        for good in ["0", "1500", "2.5", "2.50", "0.0001", "99999999999999"] {
            assert!(super::is_price(good), "{good}");
        }
        for bad in [
            "",
            "-1",
            "1.",
            ".5",
            "1e3",
            "1,5",
            "0.00001",
            "1 500",
            "1000000000000000",
        ] {
            assert!(!super::is_price(bad), "{bad}");
        }
    }
}
