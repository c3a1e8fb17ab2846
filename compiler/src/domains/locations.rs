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

/// Tag references as written: `Tags` items in the location, `Tag|<name>` columns set to
/// true in `Loaded::location_column_tags`, each column's header once in
/// `Loaded::location_tag_columns`. Resolved to uuids by `link`, which reports a column
/// naming an unknown tag once, at its header.
pub fn load_row(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    // The file's Tag| columns, once, whatever its first row holds.
    if std::ptr::eq(ctx.row, &ctx.table.rows[0]) {
        for (i, tag) in ctx.table.prefixed("tag|") {
            loaded
                .location_tag_columns
                .push((tag.to_string(), ctx.table.header_cell_loc(i)));
        }
    }
    let Some(name) = ctx.required("name", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let tags = ctx.list("tags");
    let mut column_tags = Vec::new();
    for (i, tag) in ctx.table.prefixed("tag|") {
        if let Some(v) = ctx.table.cell(ctx.row, i) {
            let loc = ctx.table.cell_loc(ctx.row, i);
            let header = &ctx.table.headers[i].name;
            if parse_bool(v, header, &loc, sink) == Some(true) && !tags.iter().any(|t| t == tag) {
                column_tags.push(tag.to_string());
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
    let entry = ctx.entry_with(value, &[("parent", "parent"), ("tags", "tags")]);
    if loaded.locations.insert(uuid.clone(), entry, sink) {
        loaded.location_column_tags.insert(uuid, column_tags);
    }
}
