//! `locations/`: name, parent (name or uuid), tags (`Tags` list and `Tag|<name>` columns),
//! address. Parents and tags are resolved in `crate::link`.

use super::{Ctx, Loaded};
use crate::csvtable::{Columns, UuidRule, parse_bool};
use crate::diagnostics::Sink;
use model::{Address, Location};

pub const COLUMNS: Columns = Columns {
    known: &[
        "name",
        "description",
        "parent",
        "tags",
        "address 1",
        "address 2",
        "address 3",
        "address 4",
        "address 5",
        "address 6",
        "city/village",
        "county/district",
        "state/province",
        "postal code",
        "country",
    ],
    prefixes: &["tag|", "attribute|"],
    required: &["name"],
};

/// Tag references as written: `Tags` items, then `Tag|<name>` columns set to true.
/// Resolved to uuids by `link`.
pub fn load_row(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let Some(name) = ctx.required("name", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let mut tags = ctx.list("tags");
    for (i, tag) in ctx.table.prefixed("tag|") {
        if let Some(v) = ctx.table.cell(ctx.row, i) {
            let loc = ctx.table.cell_loc(ctx.row, i);
            let header = &ctx.table.headers[i].name;
            if parse_bool(v, header, &loc, sink) == Some(true) && !tags.iter().any(|t| t == tag) {
                tags.push(tag.to_string());
            }
        }
    }
    let address = Address {
        address1: ctx.string("address 1"),
        address2: ctx.string("address 2"),
        address3: ctx.string("address 3"),
        address4: ctx.string("address 4"),
        address5: ctx.string("address 5"),
        address6: ctx.string("address 6"),
        city_village: ctx.string("city/village"),
        county_district: ctx.string("county/district"),
        state_province: ctx.string("state/province"),
        postal_code: ctx.string("postal code"),
        country: ctx.string("country"),
    };
    let value = Location {
        uuid: uuid.clone(),
        name,
        description: ctx.string("description"),
        parent: ctx.string("parent"),
        tags,
        address,
        retired: ctx.retired(sink),
        display: ctx.display(sink),
    };
    let mut entry = ctx.entry_with(value, &[("parent", "parent"), ("tags", "tags")]);
    // A `Tag|X` reference is best reported at its header when there is no Tags cell.
    if ctx.get("tags").is_none()
        && let Some((i, _)) = ctx.table.prefixed("tag|").next()
    {
        entry.cells.insert("tags", ctx.table.cell_loc(ctx.row, i));
    }
    loaded.locations.insert(uuid, entry, sink);
}
