//! A run's result as files: CSV (the reporting module's CSV renderer: a header of column
//! labels, then the rows, a cohort as its size) and an Excel workbook (Office Open XML,
//! one sheet per data set, written here: a zip of a few XML parts).

use crate::domains::report::eval::{Cell, ReportData};
use std::io::Write;

/// Each data set as CSV, one after another with an empty line between them.
pub fn csv(data: &ReportData) -> Vec<u8> {
    let mut out = String::new();
    for (i, d) in data.data_sets.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let header: Vec<String> = d.columns.iter().map(|c| csv_field(&c.label)).collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for row in &d.rows {
            let cells: Vec<String> = row.iter().map(|c| csv_field(&c.as_text())).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    out.into_bytes()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // Control characters other than tab and newlines are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// A sheet name Excel accepts: at most 31 characters, none of `[]:*?/\`, unique.
fn sheet_name(name: &str, taken: &[String]) -> String {
    let clean: String = name
        .chars()
        .map(|c| if "[]:*?/\\".contains(c) { ' ' } else { c })
        .take(28)
        .collect();
    let clean = if clean.trim().is_empty() {
        "Feuille".to_string()
    } else {
        clean
    };
    let mut candidate = clean.clone();
    let mut n = 2;
    while taken.iter().any(|t| t.eq_ignore_ascii_case(&candidate)) {
        candidate = format!("{clean} {n}");
        n += 1;
    }
    candidate
}

/// "A", …, "Z", "AA", …: a column's letters.
fn column_letters(mut i: usize) -> String {
    let mut s = Vec::new();
    loop {
        s.push(b'A' + (i % 26) as u8);
        if i < 26 {
            break;
        }
        i = i / 26 - 1;
    }
    s.reverse();
    String::from_utf8(s).expect("ASCII letters")
}

fn cell_xml(r: usize, c: usize, cell: &Cell) -> String {
    let at = format!("{}{}", column_letters(c), r + 1);
    match cell {
        Cell::Cohort(m) => format!("<c r=\"{at}\"><v>{}</v></c>", m.len()),
        Cell::Int(n) => format!("<c r=\"{at}\"><v>{n}</v></c>"),
        Cell::Empty => String::new(),
        Cell::Text(t) => format!(
            "<c r=\"{at}\" t=\"inlineStr\"><is><t xml:space=\"preserve\">{}</t></is></c>",
            xml_escape(t)
        ),
    }
}

/// The workbook: one sheet per data set, its first row the column labels.
pub fn xlsx(data: &ReportData) -> Vec<u8> {
    let mut names: Vec<String> = Vec::new();
    for d in &data.data_sets {
        let n = sheet_name(&d.name, &names);
        names.push(n);
    }
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    // A fixed time: the same result gives the same file.
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default());
    let mut part = |path: &str, body: String| {
        zip.start_file(path, options)
            .expect("an in-memory zip entry");
        zip.write_all(body.as_bytes()).expect("writing to memory");
    };
    let sheets_ct: String = (1..=names.len())
        .map(|i| format!("<Override PartName=\"/xl/worksheets/sheet{i}.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml\"/>"))
        .collect();
    part(
        "[Content_Types].xml",
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\"><Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/><Default Extension=\"xml\" ContentType=\"application/xml\"/><Override PartName=\"/xl/workbook.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml\"/>{sheets_ct}</Types>"
        ),
    );
    part(
        "_rels/.rels",
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"xl/workbook.xml\"/></Relationships>".into(),
    );
    let sheets: String = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "<sheet name=\"{}\" sheetId=\"{}\" r:id=\"rId{}\"/>",
                xml_escape(n),
                i + 1,
                i + 1
            )
        })
        .collect();
    part(
        "xl/workbook.xml",
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\"><sheets>{sheets}</sheets></workbook>"
        ),
    );
    let rels: String = (1..=names.len())
        .map(|i| format!("<Relationship Id=\"rId{i}\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" Target=\"worksheets/sheet{i}.xml\"/>"))
        .collect();
    part(
        "xl/_rels/workbook.xml.rels",
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">{rels}</Relationships>"
        ),
    );
    for (i, d) in data.data_sets.iter().enumerate() {
        let mut rows = String::new();
        let header: String = d
            .columns
            .iter()
            .enumerate()
            .map(|(c, col)| cell_xml(0, c, &Cell::Text(col.label.clone())))
            .collect();
        rows.push_str(&format!("<row r=\"1\">{header}</row>"));
        for (r, row) in d.rows.iter().enumerate() {
            let cells: String = row
                .iter()
                .enumerate()
                .map(|(c, cell)| cell_xml(r + 1, c, cell))
                .collect();
            rows.push_str(&format!("<row r=\"{}\">{cells}</row>", r + 2));
        }
        part(
            &format!("xl/worksheets/sheet{}.xml", i + 1),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\"><sheetData>{rows}</sheetData></worksheet>"
            ),
        );
    }
    zip.finish().expect("an in-memory zip").into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domains::report::eval::{ColumnMeta, DataSetData};

    fn sample() -> ReportData {
        ReportData {
            data_sets: vec![DataSetData {
                name: "Stades 3/4".into(),
                columns: vec![
                    ColumnMeta {
                        name: "a.Mâles".into(),
                        label: "a.Mâles".into(),
                        datatype: "org.openmrs.Cohort".into(),
                    },
                    ColumnMeta {
                        name: "b".into(),
                        label: "Nom, prénom".into(),
                        datatype: "java.lang.String".into(),
                    },
                ],
                rows: vec![vec![
                    Cell::Cohort(vec!["p1".into(), "p2".into()]),
                    Cell::Text("Kabila \"Jo\" <x>".into()),
                ]],
            }],
        }
    }

    #[test]
    fn csv_quotes_what_needs_it_and_counts_cohorts() {
        let text = String::from_utf8(csv(&sample())).unwrap();
        assert_eq!(
            text,
            "a.Mâles,\"Nom, prénom\"\n2,\"Kabila \"\"Jo\"\" <x>\"\n"
        );
    }

    #[test]
    fn the_workbook_is_a_zip_with_one_sheet_per_data_set() {
        let bytes = xlsx(&sample());
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes.clone())).unwrap();
        let mut sheet = String::new();
        std::io::Read::read_to_string(
            &mut zip.by_name("xl/worksheets/sheet1.xml").unwrap(),
            &mut sheet,
        )
        .unwrap();
        assert!(sheet.contains("<c r=\"A2\"><v>2</v></c>"), "{sheet}");
        assert!(sheet.contains("Kabila &quot;Jo&quot; &lt;x&gt;"), "{sheet}");
        let mut wb = String::new();
        std::io::Read::read_to_string(&mut zip.by_name("xl/workbook.xml").unwrap(), &mut wb)
            .unwrap();
        assert!(wb.contains("name=\"Stades 3 4\""), "{wb}");
        // The same result, the same bytes.
        assert_eq!(bytes, xlsx(&sample()));
    }

    #[test]
    fn columns_are_lettered_as_excel_does() {
        assert_eq!(column_letters(0), "A");
        assert_eq!(column_letters(25), "Z");
        assert_eq!(column_letters(26), "AA");
        assert_eq!(column_letters(27), "AB");
    }
}
