//! `dispositions/*.json`: the EMR API module's dispositions (what a clinician may decide
//! for a patient: admit, transfer within the facility, discharge), a JSON list of
//! `{uuid, name, conceptCode, type, keepsVisitOpen, actions, additionalObs}`.
//!
//! Each entry needs a uuid and a name; its `conceptCode` (a concept's uuid, `SOURCE:CODE`
//! or name) is resolved in `crate::link`, and `type` is ADMIT, TRANSFER, DISCHARGE or
//! absent. The O3 ward app reads them through `emrapi/configuration`, and the runtime's
//! inpatient requests recognise a disposition by its concept and type.

use super::Loaded;
use crate::diagnostics::{Code, Sink};
use crate::source::Loc;
use crate::vfs::{InputFile, decode};
use serde_json::Value;

pub const TYPES: &[&str] = &["ADMIT", "TRANSFER", "DISCHARGE"];

/// A disposition with its concept still as written, and where that is.
#[derive(Debug)]
pub struct LoadedDisposition {
    pub value: model::Disposition,
    pub code_loc: Loc,
}

pub fn load(files: &[&InputFile], loaded: &mut Loaded, sink: &mut Sink) {
    for f in files {
        let Some(file) = decode(f, sink) else {
            continue;
        };
        let list = match serde_json::from_str::<Value>(&file.text) {
            Ok(Value::Array(list)) => list,
            Ok(_) => {
                sink.emit(
                    Code::InvalidValue,
                    &file.whole(),
                    "Expected a JSON list of dispositions",
                );
                continue;
            }
            Err(e) => {
                let offset = super::forms::offset_of(&file.text, e.line(), e.column());
                sink.emit(
                    Code::JsonSyntax,
                    &file.loc(offset, 1),
                    format!("Invalid JSON: {e}"),
                );
                continue;
            }
        };
        for (i, item) in list.iter().enumerate() {
            let text = |key: &str| {
                item.get(key)
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            let (Some(uuid), Some(name), Some(code)) =
                (text("uuid"), text("name"), text("conceptCode"))
            else {
                // At its uuid when it has one, else at the file.
                let at = text("uuid")
                    .map(|u| super::forms::locate_string(&file, &u, 0))
                    .unwrap_or_else(|| file.whole());
                sink.emit(
                    Code::InvalidValue,
                    &at,
                    format!(
                        "Disposition {} needs a uuid, a name and a conceptCode",
                        i + 1
                    ),
                );
                continue;
            };
            let written = text("type");
            let kind = written.as_deref().map(str::to_uppercase);
            if let (Some(k), Some(w)) = (&kind, &written)
                && !TYPES.contains(&k.as_str())
            {
                sink.emit(
                    Code::InvalidValue,
                    &super::forms::locate_string(&file, w, 0),
                    format!(
                        "Disposition '{name}' has the type '{k}', not ADMIT, TRANSFER or DISCHARGE"
                    ),
                );
                continue;
            }
            loaded.dispositions.push(LoadedDisposition {
                code_loc: super::forms::locate_string(&file, &code, 0),
                value: model::Disposition {
                    uuid,
                    name,
                    concept: code.clone(),
                    concept_code: code,
                    kind,
                    keeps_visit_open: item
                        .get("keepsVisitOpen")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                },
            });
        }
    }
}
