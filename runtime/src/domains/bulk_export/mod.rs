//! FHIR bulk data exports (`$export`, the Bulk Data Access specification): each export a
//! client asked for, with what it covers (the system, or the patients and what they hold;
//! the types; changes since when), its state, and the NDJSON files it produced. The records
//! and files live in the store, so that any runtime sharing it answers the client's polls
//! and serves the files, whichever runtime ran the export. Making the files is the
//! application's (`app/export.rs`): it reads each type through that type's own FHIR search,
//! as the requesting user.

pub mod store;

use serde::{Deserialize, Serialize};

/// An export, from its kick-off to its deletion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportRecord {
    pub v: u32,
    pub uuid: String,
    /// The kick-off's URL as the client sent it (the manifest's `request`).
    pub request: String,
    /// `system` (`$export`), `patient` (`Patient/$export`) or `group` (`Group/{id}/$export`).
    pub level: String,
    /// The patient list whose members are exported (`group`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The resource types asked for, in the order they are written.
    pub types: Vec<String>,
    /// Only resources changed after this instant (`_since`), key form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// When it was asked for (key form), and by whom (a user uuid): it runs as that user,
    /// and only that user (or a System Developer) may poll it and read its files.
    pub requested: String,
    pub requested_by: String,
    pub state: ExportState,
    /// What is done so far, for the `X-Progress` header.
    #[serde(default)]
    pub progress: String,
    /// When the runner last recorded progress (key form): an export whose runner stopped
    /// (its runtime was stopped) is reported failed rather than in progress for ever.
    pub updated: String,
    #[serde(default)]
    pub files: Vec<ExportFile>,
    /// Types the user may not read, or whose reading failed: the manifest's `error`.
    #[serde(default)]
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportState {
    InProgress,
    Complete,
    Failed(String),
}

/// One NDJSON file: a type's resources, at most `FILE_LIMIT` bytes each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportFile {
    pub kind: String,
    pub part: u32,
    pub count: u64,
}

impl ExportFile {
    /// The file's name in its URL and its key in the files table (after the export's uuid).
    pub fn name(&self) -> String {
        format!("{}-{}.ndjson", self.kind, self.part)
    }
}

/// A file holds at most this many bytes (a single resource larger than it goes alone), so
/// that no answer is held whole in memory beyond it. Just under 8 MiB: redb stores a large
/// value in a run of pages of a power-of-two size, and a file a little over 8 MiB took
/// 16 MiB of disk (an export of a tenth of a facility's records took 3.6 GB for 1.8 GB of
/// files).
pub const FILE_LIMIT: usize = (8 << 20) - (64 << 10);
