//! `conceptreferencerange/`: ranges of numeric concepts that apply to the patients their
//! criteria select (OpenMRS 2.7, Initializer's columns). The criteria are parsed here
//! (`model::ranges`), so a criterion the runtime cannot evaluate fails the build at its
//! place in the cell; the concept is resolved, and checked to be numeric, in
//! `crate::link`.

use super::{Ctx, Loaded};
use crate::csvtable::{Columns, UuidRule};
use crate::diagnostics::{Code, Sink};
use crate::source::Loc;
use crate::store::Entry;
use model::ranges::{self, Limits};

pub const COLUMNS: Columns = Columns {
    known: &[
        "concept numeric uuid",
        "absolute low",
        "critical low",
        "normal low",
        "normal high",
        "critical high",
        "absolute high",
        "criteria",
        // A name for the row's reader, which OpenMRS does not keep.
        "label",
    ],
    prefixes: &[],
    required: &["concept numeric uuid", "criteria"],
};

pub fn load_row(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(concept), Some(text)) = (
        ctx.required("concept numeric uuid", sink),
        ctx.required("criteria", sink),
    ) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &format!("{concept}/{text}"), sink) else {
        return;
    };
    let criteria = match ranges::parse(&text) {
        Ok(c) => c,
        Err(e) => {
            sink.emit(
                Code::InvalidCriteria,
                &within_cell(ctx, "criteria", &text, e.offset, e.len),
                format!("Criteria '{text}': {}", e.message),
            )
            .help = Some(e.help);
            return;
        }
    };
    let limits = Limits {
        low_absolute: ctx.f64("absolute low", sink),
        low_critical: ctx.f64("critical low", sink),
        low_normal: ctx.f64("normal low", sink),
        hi_normal: ctx.f64("normal high", sink),
        hi_critical: ctx.f64("critical high", sink),
        hi_absolute: ctx.f64("absolute high", sink),
    };
    let ordered = [
        limits.low_absolute,
        limits.low_critical,
        limits.low_normal,
        limits.hi_normal,
        limits.hi_critical,
        limits.hi_absolute,
    ];
    let given: Vec<f64> = ordered.into_iter().flatten().collect();
    if given.windows(2).any(|w| w[0] > w[1]) {
        sink.emit(
            Code::InvalidValue,
            &ctx.row_loc(),
            "The range's limits are out of order",
        )
        .help = Some("each limit must be at most the next: absolute low ≤ critical low ≤ normal low ≤ normal high ≤ critical high ≤ absolute high".into());
        return;
    }
    let value = model::ConceptReferenceRange {
        uuid: uuid.clone(),
        concept,
        limits,
        criteria,
        criteria_text: text,
    };
    let entry: Entry<_> = ctx.entry_with(value, &[("concept", "concept numeric uuid")]);
    loaded.concept_reference_ranges.insert(uuid, entry, sink);
}

/// The place of `len` characters at `offset` in a cell's value: exact where the cell is
/// written as its value (unquoted, or quoted without doubled quotes), else the cell.
fn within_cell(ctx: &Ctx, key: &str, value: &str, offset: usize, len: usize) -> Loc {
    let cell = ctx.loc(key);
    let Loc::Text {
        file,
        offset: start,
        len: cell_len,
    } = &cell
    else {
        return cell;
    };
    let (start, cell_len) = (*start as usize, *cell_len as usize);
    let Some(raw) = file.text.get(start..start + cell_len) else {
        return cell;
    };
    let lead = if raw == value {
        0
    } else if raw.len() == value.len() + 2
        && raw.starts_with('"')
        && &raw[1..raw.len() - 1] == value
    {
        1
    } else {
        match raw.find(value) {
            Some(i) => i,
            None => return cell,
        }
    };
    file.loc(start + lead + offset, len.max(1))
}
