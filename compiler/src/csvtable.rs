//! Spanned CSV tables following the project's rules (docs/content.md, "Rules the compiler enforces"): headers
//! trimmed and case-insensitive, `_order:` / `_version:` metadata headers, short rows read
//! as empty cells, non-empty extra cells reported, unknown columns warned once per file.
//! Also the cell-level value parsers (booleans, lists, uuids, numbers, locales).

use crate::diagnostics::{Code, Sink};
use crate::source::{Loc, TextFile};
use std::sync::Arc;

/// What a domain reads from its CSV files.
pub struct Columns {
    /// Exact column names (compared lower-cased).
    pub known: &'static [&'static str],
    /// Column name prefixes, lower-cased (`fully specified name:`, `mappings|`).
    pub prefixes: &'static [&'static str],
    pub required: &'static [&'static str],
}

/// Prefixes every CSV domain accepts.
const COMMON_PREFIXES: &[&str] = &["display:"];
const COMMON_COLUMNS: &[&str] = &["uuid", "void/retire"];

#[derive(Debug)]
pub struct HeaderCell {
    /// As written, trimmed.
    pub name: String,
    /// Lower-cased `name`.
    pub key: String,
    pub offset: usize,
}

#[derive(Debug)]
pub struct Cell {
    /// Trimmed value.
    pub value: String,
    pub offset: usize,
    pub len: usize,
}

#[derive(Debug)]
pub struct Row {
    pub offset: usize,
    pub cells: Vec<Cell>,
}

#[derive(Debug)]
pub struct Table {
    pub file: Arc<TextFile>,
    pub headers: Vec<HeaderCell>,
    pub rows: Vec<Row>,
    /// The `_order:N` value; files without one sort last.
    pub order: i64,
    pub header_offset: usize,
}

impl Table {
    /// Parses a CSV text. Returns `None` (with diagnostics) when the file is unusable.
    pub fn parse(file: Arc<TextFile>, columns: &Columns, sink: &mut Sink) -> Option<Table> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(file.text.as_bytes());
        let mut record = csv::StringRecord::new();
        let mut records: Vec<(usize, Vec<Cell>)> = Vec::new();
        loop {
            match reader.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {
                    // After a CRLF the reader's position can point at the '\n'.
                    let mut start = record.position().map_or(0, |p| p.byte() as usize);
                    while matches!(file.text.as_bytes().get(start), Some(b'\r' | b'\n')) {
                        start += 1;
                    }
                    let spans = field_spans(&file.text, start, record.len());
                    let cells = record
                        .iter()
                        .zip(spans)
                        .map(|(raw, (offset, _))| {
                            let leading = raw.len() - raw.trim_start().len();
                            let value = raw.trim().to_string();
                            let len = value.len();
                            Cell {
                                value,
                                offset: offset + leading,
                                len,
                            }
                        })
                        .collect();
                    records.push((start, cells));
                }
                Err(e) => {
                    let offset = e.position().map_or(0, |p| p.byte() as usize);
                    sink.emit(
                        Code::CsvSyntax,
                        &file.loc(offset, 1),
                        format!("Malformed CSV: {e}"),
                    );
                    return None;
                }
            }
        }
        let mut records = records.into_iter();
        let Some((header_offset, header_cells)) = records.next() else {
            // An empty file defines nothing; that is fine.
            return Some(Table {
                file,
                headers: Vec::new(),
                rows: Vec::new(),
                order: i64::MAX,
                header_offset: 0,
            });
        };

        let mut order = i64::MAX;
        let mut headers = Vec::new();
        let mut unknown = Vec::new();
        for cell in header_cells {
            let key = cell.value.to_lowercase();
            if let Some(v) = key.strip_prefix("_order:") {
                match v.trim().parse::<i64>() {
                    Ok(n) => order = n,
                    Err(_) => {
                        sink.emit(
                            Code::InvalidOrder,
                            &file.loc(cell.offset, cell.len),
                            format!("Order header '{}' does not hold an integer", cell.value),
                        )
                        .help = Some("write `_order:<integer>`; this file now loads last".into());
                    }
                }
            } else if key.starts_with("_version:") {
                // Describes the file, not a column.
            } else if !key.is_empty() {
                if headers.iter().any(|h: &HeaderCell| h.key == key) {
                    sink.emit(
                        Code::CsvSyntax,
                        &file.loc(cell.offset, cell.len),
                        format!("Column '{}' appears twice in the header", cell.value),
                    );
                }
                let known = COMMON_COLUMNS.contains(&key.as_str())
                    || columns.known.contains(&key.as_str())
                    || COMMON_PREFIXES
                        .iter()
                        .chain(columns.prefixes)
                        .any(|p| key.starts_with(p));
                if !known {
                    unknown.push((cell.value.clone(), cell.offset, cell.len));
                }
            }
            // Empty and metadata header cells stay as placeholders so indices line up.
            headers.push(HeaderCell {
                name: cell.value,
                key: if key.starts_with('_') {
                    String::new()
                } else {
                    key
                },
                offset: cell.offset,
            });
        }
        if let Some((first, offset, len)) = unknown.first() {
            let names: Vec<_> = unknown.iter().map(|(n, _, _)| format!("'{n}'")).collect();
            sink.emit(
                Code::UnknownColumn,
                &file.loc(*offset, *len),
                format!(
                    "Unknown column{} {} ignored",
                    if names.len() > 1 { "s" } else { "" },
                    names.join(", ")
                ),
            )
            .help = Some(format!(
                "the compiler does not read '{first}' in this domain; check the spelling"
            ));
        }
        for required in columns.required {
            if !headers.iter().any(|h| h.key == *required) {
                let name = headers_case(required);
                sink.missing_column(&file.loc(header_offset, 0), &name);
            }
        }

        let mut rows = Vec::new();
        let mut warned_empty_header = false;
        for (offset, cells) in records {
            if cells.iter().all(|c| c.value.is_empty()) {
                continue;
            }
            for (i, cell) in cells.iter().enumerate() {
                if cell.value.is_empty() {
                    continue;
                }
                match headers.get(i) {
                    None => {
                        sink.emit(
                            Code::MisalignedRow,
                            &file.loc(cell.offset, cell.len),
                            "Row has more cells than the header",
                        )
                        .help = Some(
                            "a non-empty cell beyond the last column usually means a missing or extra comma earlier in the row"
                                .into(),
                        );
                        break;
                    }
                    Some(h) if h.name.is_empty() && !warned_empty_header => {
                        warned_empty_header = true;
                        sink.emit(
                            Code::IgnoredCells,
                            &file.loc(cell.offset, cell.len),
                            "Values under an empty header cell are ignored",
                        )
                        .help = Some("give the column a name, or remove the values".into());
                    }
                    _ => {}
                }
            }
            rows.push(Row { offset, cells });
        }
        Some(Table {
            file,
            headers,
            rows,
            order,
            header_offset,
        })
    }

    pub fn col(&self, key: &str) -> Option<usize> {
        self.headers.iter().position(|h| h.key == key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.col(key).is_some()
    }

    /// Columns whose key starts with `prefix`, with the rest of the (trimmed) header.
    pub fn prefixed<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (usize, &'a str)> + 'a {
        self.headers
            .iter()
            .enumerate()
            .filter(move |(_, h)| h.key.starts_with(prefix))
            .map(move |(i, h)| (i, h.name[prefix.len()..].trim()))
    }

    /// The trimmed cell under column `i`, `None` when empty or missing.
    pub fn cell<'r>(&self, row: &'r Row, i: usize) -> Option<&'r str> {
        row.cells
            .get(i)
            .map(|c| c.value.as_str())
            .filter(|v| !v.is_empty())
    }

    pub fn get<'r>(&self, row: &'r Row, key: &str) -> Option<&'r str> {
        self.col(key).and_then(|i| self.cell(row, i))
    }

    pub fn cell_loc(&self, row: &Row, i: usize) -> Loc {
        match row.cells.get(i) {
            Some(c) if !c.value.is_empty() => self.file.loc(c.offset, c.len),
            _ => self.file.loc(row.offset, 0),
        }
    }

    pub fn loc(&self, row: &Row, key: &str) -> Loc {
        match self.col(key) {
            Some(i) => self.cell_loc(row, i),
            None => self.file.loc(row.offset, 0),
        }
    }

    pub fn row_loc(&self, row: &Row) -> Loc {
        self.file.loc(row.offset, 0)
    }

    /// The header cell of column `i`.
    pub fn header_cell_loc(&self, i: usize) -> Loc {
        let h = &self.headers[i];
        self.file.loc(h.offset, h.name.len())
    }

    pub fn header_loc(&self) -> Loc {
        self.file.loc(self.header_offset, 0)
    }
}

/// Title-cases a lower-case column key for messages (`role name` → `Role name`).
fn headers_case(key: &str) -> String {
    let mut c = key.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Byte ranges of the first `count` fields of the record starting at `start`.
fn field_spans(text: &str, start: usize, count: usize) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut spans = Vec::with_capacity(count);
    let mut i = start;
    while spans.len() < count {
        let field_start = i;
        let mut j = i;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        if j < b.len() && b[j] == b'"' {
            j += 1;
            while j < b.len() {
                if b[j] == b'"' {
                    if b.get(j + 1) == Some(&b'"') {
                        j += 2;
                        continue;
                    }
                    j += 1;
                    break;
                }
                j += 1;
            }
        }
        while j < b.len() && !matches!(b[j], b',' | b'\n' | b'\r') {
            j += 1;
        }
        spans.push((field_start, j));
        if j < b.len() && b[j] == b',' {
            i = j + 1;
        } else {
            i = j;
        }
    }
    spans
}

/// Booleans by the project rule: true/false/yes/no/1/0 in any case; `1`/`0` warn.
pub fn parse_bool(value: &str, column: &str, loc: &Loc, sink: &mut Sink) -> Option<bool> {
    let v = value.trim().to_ascii_lowercase();
    match v.as_str() {
        "true" | "yes" => Some(true),
        "false" | "no" => Some(false),
        "1" | "0" => {
            sink.emit(
                Code::NumericBoolean,
                loc,
                format!("'{value}' used as a boolean in column '{column}'"),
            )
            .help = Some(format!(
                "write {}: Initializer reads `1` as false in some columns",
                if v == "1" { "`true`" } else { "`false`" }
            ));
            Some(v == "1")
        }
        _ => {
            sink.emit(
                Code::InvalidBoolean,
                loc,
                format!("Invalid boolean '{value}' in column '{column}'"),
            )
            .help = Some("use true, false, yes or no".into());
            None
        }
    }
}

/// A `;`-separated list: items trimmed, empty items dropped.
pub fn split_list(value: &str) -> Vec<&str> {
    value
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

pub fn parse_f64(value: &str, column: &str, loc: &Loc, sink: &mut Sink) -> Option<f64> {
    match value.trim().parse::<f64>() {
        Ok(n) if n.is_finite() => Some(n),
        _ => {
            sink.emit(
                Code::InvalidNumber,
                loc,
                format!("Invalid number '{value}' in column '{column}'"),
            );
            None
        }
    }
}

pub fn parse_int<T: std::str::FromStr>(
    value: &str,
    column: &str,
    loc: &Loc,
    sink: &mut Sink,
) -> Option<T> {
    match value.trim().parse::<T>() {
        Ok(n) => Some(n),
        Err(_) => {
            sink.emit(
                Code::InvalidNumber,
                loc,
                format!("Invalid integer '{value}' in column '{column}'"),
            );
            None
        }
    }
}

/// The two accepted identifier shapes (docs/content.md, "Uuids").
pub fn is_standard_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 36 {
        return false;
    }
    let dashed = b.iter().enumerate().all(|(i, c)| match i {
        8 | 13 | 18 | 23 => *c == b'-',
        _ => c.is_ascii_hexdigit(),
    });
    dashed || b.iter().all(u8::is_ascii_alphanumeric)
}

/// Whether uuid rules are those of concepts (strict) or of other metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UuidRule {
    Concept,
    Metadata,
}

/// Checks a uuid cell; an empty one gets a derived id (with a warning).
pub fn check_uuid(
    value: Option<&str>,
    rule: UuidRule,
    domain: &str,
    natural_key: &str,
    loc: &Loc,
    sink: &mut Sink,
) -> Option<String> {
    let Some(v) = value else {
        let derived = derive_uuid(&format!("{domain}/{natural_key}"));
        sink.emit(
            Code::DerivedUuid,
            loc,
            format!("Empty uuid: using '{derived}' derived from '{natural_key}'"),
        )
        .help = Some("write a uuid so that the entity keeps it if its name changes".into());
        return Some(derived);
    };
    if is_standard_uuid(v) {
        return Some(v.to_string());
    }
    if rule == UuidRule::Metadata && v.len() == 36 {
        sink.emit(
            Code::NonStandardUuid,
            loc,
            format!("Identifier '{v}' is not a valid UUID"),
        )
        .help = Some(
            "use the dashed hexadecimal form; OpenMRS accepts this one because it is 36 characters long"
                .into(),
        );
        return Some(v.to_string());
    }
    sink.emit(Code::InvalidUuid, loc, format!("Invalid UUID '{v}'"))
        .help = Some(
        "a uuid is 8-4-4-4-12 hexadecimal digits, or 36 letters and digits (CIEL style)".into(),
    );
    None
}

/// Java's `UUID.nameUUIDFromBytes`: an MD5 (version 3) uuid without namespace.
pub fn name_uuid_from_bytes(bytes: &[u8]) -> String {
    use md5::{Digest, Md5};
    let digest: [u8; 16] = Md5::digest(bytes).into();
    uuid::Builder::from_md5_bytes(digest)
        .into_uuid()
        .hyphenated()
        .to_string()
}

/// Deterministic uuid for a row without one.
pub fn derive_uuid(key: &str) -> String {
    name_uuid_from_bytes(format!("emr-compiler:{key}").as_bytes())
}

/// `xx`, `xxx`, `xx_YY` (Java `Locale.toString()` shapes).
pub fn is_locale(s: &str) -> bool {
    let mut parts = s.split('_');
    let lang = parts.next().unwrap_or("");
    let lang_ok = (2..=3).contains(&lang.len()) && lang.bytes().all(|b| b.is_ascii_lowercase());
    let region_ok = match parts.next() {
        None => true,
        Some(r) => {
            (r.len() == 2 && r.bytes().all(|b| b.is_ascii_uppercase()))
                || (r.len() == 3 && r.bytes().all(|b| b.is_ascii_digit()))
        }
    };
    lang_ok && region_ok && parts.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLS: Columns = Columns {
        known: &["name"],
        prefixes: &[],
        required: &["name"],
    };

    fn parse(text: &str) -> (Option<Table>, Vec<crate::diagnostics::Diagnostic>) {
        let mut sink = Sink::default();
        let t = Table::parse(TextFile::new("t.csv".into(), text.into()), &COLS, &mut sink);
        (t, sink.into_sorted())
    }

    #[test]
    fn headers_are_trimmed_and_case_insensitive() {
        let (t, d) =
            parse(" UUID , NAME ,_order:5\r\n3f1c2b7e-9a4d-4c1e-8b2f-6d5e4c3b2a10, Ward A \r\n");
        let t = t.unwrap();
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(t.order, 5);
        assert_eq!(t.get(&t.rows[0], "name"), Some("Ward A"));
        let row = &t.rows[0];
        let p = t.loc(row, "name").position().unwrap();
        assert_eq!((p.line, p.column), (2, 39));
    }

    #[test]
    fn quoted_cells_keep_commas_and_positions() {
        let (t, _) = parse("Name,Uuid\n\"A, B\",x\n");
        let t = t.unwrap();
        assert_eq!(t.get(&t.rows[0], "name"), Some("A, B"));
        let p = t.loc(&t.rows[0], "uuid").position().unwrap();
        assert_eq!((p.line, p.column), (2, 8));
    }

    #[test]
    fn short_rows_read_empty_and_extra_cells_are_errors() {
        let (t, d) = parse("Uuid,Name\nabc\nx,y,,\nx,y,z\n");
        assert_eq!(t.unwrap().rows.len(), 3);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, "E0103");
        assert_eq!(d[0].position.as_ref().unwrap().line, 4);
    }

    #[test]
    fn missing_required_and_unknown_columns() {
        let (_, d) = parse("Uuid,Notes,,\n");
        let codes: Vec<_> = d.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(codes, ["E0102", "W0002"]);
        assert_eq!(d[0].message, "Column 'Name' is required but missing");
    }

    #[test]
    fn booleans_follow_the_project_rule() {
        let mut sink = Sink::default();
        let loc = Loc::None;
        assert_eq!(parse_bool("YES", "c", &loc, &mut sink), Some(true));
        assert_eq!(parse_bool("False", "c", &loc, &mut sink), Some(false));
        assert_eq!(parse_bool("1", "c", &loc, &mut sink), Some(true));
        assert_eq!(parse_bool("y", "c", &loc, &mut sink), None);
        let codes: Vec<_> = sink.into_sorted().into_iter().map(|d| d.code).collect();
        assert_eq!(codes, ["E0104", "W0004"]);
    }

    #[test]
    fn uuid_shapes() {
        assert!(is_standard_uuid("3f1c2b7e-9a4d-4c1e-8b2f-6d5e4c3b2a10"));
        assert!(is_standard_uuid("5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
        assert!(!is_standard_uuid("d4e5f6a7-g8h9-4c1d-9e2f-0a1b2c3d4e5f"));
        // Java: UUID.nameUUIDFromBytes("abc".getBytes())
        let u = name_uuid_from_bytes(b"abc");
        assert_eq!(u, "90015098-3cd2-3fb0-9696-3f7d28e17f72");
    }

    #[test]
    fn locales() {
        assert!(is_locale("fr") && is_locale("en_GB") && is_locale("eng"));
        assert!(!is_locale("EN") && !is_locale("en-GB") && !is_locale(" en"));
    }
}
