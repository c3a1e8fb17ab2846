//! Source texts and positions.
//!
//! A `TextFile` is a decoded input file (or zip member) with its display path and a line
//! index. A `Loc` points into one; diagnostics turn it into line, column and snippet only
//! when they are emitted. Positions inside very large texts (OCL exports) are kept as a
//! precomputed `Loc::Point`, so the text itself can be dropped early.

use std::sync::Arc;

/// Largest file (or zip member, once inflated) the compiler reads.
pub const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;
/// Largest inflated size a zip member may have relative to its compressed size.
pub const MAX_COMPRESSION_RATIO: u64 = 200;

#[derive(Debug)]
pub struct TextFile {
    /// Path relative to the project root (`a/b.zip!/export.json` for a zip member).
    pub path: Arc<str>,
    pub text: String,
    line_starts: Vec<u32>,
}

impl TextFile {
    pub fn new(path: Arc<str>, text: String) -> Arc<TextFile> {
        let line_starts = std::iter::once(0)
            .chain(
                text.bytes()
                    .enumerate()
                    .filter(|&(_, b)| b == b'\n')
                    .map(|(i, _)| i as u32 + 1),
            )
            .collect();
        Arc::new(TextFile {
            path,
            text,
            line_starts,
        })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s as usize <= offset) - 1;
        let start = self.line_starts[line] as usize;
        let col = self.text[start..floor_char_boundary(&self.text, offset)]
            .chars()
            .count();
        (line as u32 + 1, col as u32 + 1)
    }

    /// The text of a 1-based line, without its line end.
    pub fn line_text(&self, line: u32) -> &str {
        let i = (line as usize)
            .saturating_sub(1)
            .min(self.line_starts.len() - 1);
        let start = self.line_starts[i] as usize;
        let end = self
            .line_starts
            .get(i + 1)
            .map_or(self.text.len(), |&e| e as usize);
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    pub fn loc(self: &Arc<Self>, offset: usize, len: usize) -> Loc {
        Loc::Text {
            file: self.clone(),
            offset: offset as u32,
            len: len as u32,
        }
    }

    pub fn whole(self: &Arc<Self>) -> Loc {
        Loc::Text {
            file: self.clone(),
            offset: 0,
            len: 0,
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Where a diagnostic points.
#[derive(Debug, Clone, Default)]
pub enum Loc {
    /// Nowhere in particular (a build-level problem).
    #[default]
    None,
    /// A whole file that has no usable text (e.g. an archive).
    File(Arc<str>),
    /// A byte range in a text that is still in memory.
    Text {
        file: Arc<TextFile>,
        offset: u32,
        len: u32,
    },
    /// A precomputed position in a text that was dropped.
    Point { path: Arc<str>, line: u32, col: u32 },
}

/// A `Loc` resolved for display.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Position {
    pub path: String,
    pub line: u32,
    pub column: u32,
    /// Length of the marked range, in characters.
    #[serde(skip)]
    pub len: u32,
    /// The source line, when known (shortened around the column when very long).
    #[serde(skip)]
    pub snippet: Option<String>,
    /// 1-based column of the marked range inside `snippet`.
    #[serde(skip)]
    pub snippet_column: u32,
}

impl Loc {
    pub fn position(&self) -> Option<Position> {
        match self {
            Loc::None => None,
            Loc::File(path) => Some(Position {
                path: path.to_string(),
                line: 0,
                column: 0,
                len: 0,
                snippet: None,
                snippet_column: 0,
            }),
            Loc::Point { path, line, col } => Some(Position {
                path: path.to_string(),
                line: *line,
                column: *col,
                len: 0,
                snippet: None,
                snippet_column: 0,
            }),
            Loc::Text { file, offset, len } => {
                let (line, column) = file.line_col(*offset as usize);
                let text = file.line_text(line);
                let start = *offset as usize;
                let end =
                    floor_char_boundary(&file.text, (start + *len as usize).min(file.text.len()));
                let marked = file.text[floor_char_boundary(&file.text, start)..end]
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .count() as u32;
                let (snippet, snippet_column) = shorten(text, column);
                Some(Position {
                    path: file.path.to_string(),
                    line,
                    column,
                    len: marked,
                    snippet: Some(snippet),
                    snippet_column,
                })
            }
        }
    }

    /// The part of this range where `needle` is written (the whole range if it is not).
    /// Used to point at one item of a `;`-separated list cell.
    pub fn narrow(&self, needle: &str) -> Loc {
        if let Loc::Text { file, offset, len } = self {
            let (start, end) = (*offset as usize, (*offset + *len) as usize);
            if let Some(range) = file.text.get(start..end.min(file.text.len()))
                && let Some(i) = range.find(needle)
            {
                return file.loc(start + i, needle.len());
            }
        }
        self.clone()
    }

    /// Where `needle` is first written from this range's start on, before `until`: an XML
    /// value's location marks its opening tag, and an item of the value is found after it
    /// (this range itself when it is not).
    pub fn find_after(&self, needle: &str, until: &str) -> Loc {
        if let Loc::Text { file, offset, .. } = self {
            let start = *offset as usize;
            if let Some(rest) = file.text.get(start..) {
                let end = rest.find(until).unwrap_or(rest.len());
                if let Some(i) = rest[..end].find(needle) {
                    return file.loc(start + i, needle.len());
                }
            }
        }
        self.clone()
    }

    pub fn path(&self) -> Option<&str> {
        match self {
            Loc::None => None,
            Loc::File(p) | Loc::Point { path: p, .. } => Some(p),
            Loc::Text { file, .. } => Some(&file.path),
        }
    }
}

/// Lines longer than this are cut around the marked column.
const MAX_SNIPPET_CHARS: usize = 240;

fn shorten(line: &str, column: u32) -> (String, u32) {
    if line.chars().count() <= MAX_SNIPPET_CHARS {
        return (line.to_string(), column);
    }
    let start = (column as usize).saturating_sub(MAX_SNIPPET_CHARS / 2);
    let cut: String = line.chars().skip(start).take(MAX_SNIPPET_CHARS).collect();
    (cut, column - start as u32)
}

/// Why bytes could not be turned into text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Utf8Problem {
    pub line: u32,
    pub column: u32,
    pub offset: usize,
}

/// Decodes UTF-8, stripping a byte-order mark. Reports the first invalid byte's position.
pub fn decode_utf8(bytes: Vec<u8>) -> Result<(String, bool), Utf8Problem> {
    let had_bom = bytes.starts_with(&[0xEF, 0xBB, 0xBF]);
    let bytes = if had_bom { bytes[3..].to_vec() } else { bytes };
    String::from_utf8(bytes).map(|s| (s, had_bom)).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let valid = &e.as_bytes()[..offset];
        let line = valid.iter().filter(|&&b| b == b'\n').count() as u32 + 1;
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let column = String::from_utf8_lossy(&valid[line_start..])
            .chars()
            .count() as u32
            + 1;
        Utf8Problem {
            line,
            column,
            offset: offset + usize::from(had_bom) * 3,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        let f = TextFile::new("x".into(), "ab\nçé,x\n".into());
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        // "çé," is 5 bytes; 'x' is the 4th character.
        assert_eq!(f.line_col(8), (2, 4));
        assert_eq!(f.line_text(2), "çé,x");
    }

    #[test]
    fn invalid_utf8_reports_position() {
        let err = decode_utf8(b"a,b\nc,\xff".to_vec()).unwrap_err();
        assert_eq!((err.line, err.column), (2, 3));
        let (text, bom) = decode_utf8(b"\xEF\xBB\xBFUuid".to_vec()).unwrap();
        assert_eq!((text.as_str(), bom), ("Uuid", true));
    }
}
