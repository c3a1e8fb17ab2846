//! A one-page PDF of text lines and filled rectangles: what a label printer needs, and
//! nothing more. The fonts are two of the fourteen every PDF reader carries (Helvetica and
//! Helvetica-Bold, in WinAnsi encoding, which covers French), so nothing is embedded and
//! the file stays a few kilobytes. The output depends only on what was drawn: no creation
//! date, no random identifier, so the same label is the same bytes.

use std::fmt::Write as _;
use std::io::Write as _;

/// Millimetres to PDF points.
pub fn mm(v: f32) -> f32 {
    v * 72.0 / 25.4
}

/// A page being drawn, its origin at the bottom left, in points.
pub struct Page {
    width: f32,
    height: f32,
    /// The content stream: operators, and strings in WinAnsi bytes.
    ops: Vec<u8>,
}

#[derive(Clone, Copy)]
pub enum Font {
    Regular,
    Bold,
}

impl Page {
    pub fn new(width: f32, height: f32) -> Page {
        Page {
            width,
            height,
            ops: Vec::new(),
        }
    }

    /// `text` with its baseline's left end at (`x`, `y`), cut to what fits in `max_width`
    /// (an ellipsis marks the cut).
    pub fn text(&mut self, x: f32, y: f32, font: Font, size: f32, max_width: f32, text: &str) {
        let encoded = fit(&win_ansi(text), font, size, max_width);
        let name = match font {
            Font::Regular => "F1",
            Font::Bold => "F2",
        };
        let _ = write!(
            self.ops,
            "BT /{name} {} Tf {} {} Td (",
            num(size),
            num(x),
            num(y)
        );
        self.ops.extend_from_slice(&escape(&encoded));
        self.ops.extend_from_slice(b") Tj ET\n");
    }

    /// A black rectangle.
    pub fn bar(&mut self, x: f32, y: f32, width: f32, height: f32) {
        let _ = writeln!(
            self.ops,
            "{} {} {} {} re f",
            num(x),
            num(y),
            num(width),
            num(height)
        );
    }

    /// The finished file; `title` goes in its document information.
    pub fn finish(self, title: &str) -> Vec<u8> {
        let content = self.ops;
        let objects: Vec<Vec<u8>> = vec![
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {} {}] \
                 /Resources << /Font << /F1 5 0 R /F2 6 0 R >> >> /Contents 4 0 R >>",
                num(self.width),
                num(self.height)
            )
            .into_bytes(),
            [
                format!("<< /Length {} >>\nstream\n", content.len()).into_bytes(),
                content,
                b"\nendstream".to_vec(),
            ]
            .concat(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
                .to_vec(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"
                .to_vec(),
            [
                b"<< /Title (".to_vec(),
                escape(&win_ansi(title)),
                b") /Producer (OpenMRS distribution runtime) >>".to_vec(),
            ]
            .concat(),
        ];
        let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
        let mut offsets = Vec::with_capacity(objects.len());
        for (i, body) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
            out.extend_from_slice(body);
            out.extend_from_slice(b"\nendobj\n");
        }
        let xref = out.len();
        let mut table = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
        for o in offsets {
            let _ = writeln!(table, "{o:010} 00000 n ");
        }
        let _ = write!(
            table,
            "trailer\n<< /Size {} /Root 1 0 R /Info 7 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        );
        out.extend_from_slice(table.as_bytes());
        out
    }
}

/// A number as the content stream writes it: two decimals at most, no trailing zeros.
fn num(v: f32) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// `text` in the WinAnsi encoding of the standard fonts; a character it lacks becomes `?`.
pub fn win_ansi(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match c {
            ' '..='~' => c as u8,
            '\u{a0}'..='\u{ff}' => c as u32 as u8,
            '€' => 0x80,
            '‚' => 0x82,
            'ƒ' => 0x83,
            '„' => 0x84,
            '…' => 0x85,
            '†' => 0x86,
            '‡' => 0x87,
            'ˆ' => 0x88,
            '‰' => 0x89,
            'Š' => 0x8a,
            '‹' => 0x8b,
            'Œ' => 0x8c,
            'Ž' => 0x8e,
            '‘' => 0x91,
            '’' => 0x92,
            '“' => 0x93,
            '”' => 0x94,
            '•' => 0x95,
            '–' => 0x96,
            '—' => 0x97,
            '˜' => 0x98,
            '™' => 0x99,
            'š' => 0x9a,
            '›' => 0x9b,
            'œ' => 0x9c,
            'ž' => 0x9e,
            'Ÿ' => 0x9f,
            _ => b'?',
        })
        .collect()
}

/// The bytes of a PDF string literal: its delimiters and the escape character escaped.
fn escape(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if matches!(b, b'(' | b')' | b'\\') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

/// `text` cut (with an ellipsis) to fit `max_width` points at `size`.
fn fit(text: &[u8], font: Font, size: f32, max_width: f32) -> Vec<u8> {
    let width = |t: &[u8]| t.iter().map(|&b| advance(font, b)).sum::<f32>() * size / 1000.0;
    if width(text) <= max_width {
        return text.to_vec();
    }
    let mut cut = text.to_vec();
    while !cut.is_empty() && width(&cut) + advance(font, 0x85) * size / 1000.0 > max_width {
        cut.pop();
    }
    cut.push(0x85);
    cut
}

/// A glyph's advance in thousandths of the font size. Helvetica's published metrics for
/// the characters a label mostly holds (digits, capitals, lower case, space and the usual
/// punctuation); any other character is taken as wide as Helvetica's widest glyph (`@`,
/// 1015), so a line is never measured shorter than it prints.
fn advance(font: Font, b: u8) -> f32 {
    let bold = matches!(font, Font::Bold);
    match b {
        b' ' => 278.0,
        b'0'..=b'9' => 556.0,
        b'.' | b',' | b':' | b';' => {
            if bold {
                333.0
            } else {
                278.0
            }
        }
        b'-' | b'(' | b')' | b'/' => 333.0,
        b'i' | b'j' | b'l' => {
            if bold {
                278.0
            } else {
                222.0
            }
        }
        b'f' | b't' | b'I' => 333.0,
        b'r' => {
            if bold {
                389.0
            } else {
                333.0
            }
        }
        b'm' | b'M' => 889.0,
        b'w' => 778.0,
        b'W' => 1000.0,
        b'a'..=b'z' => {
            if bold {
                611.0
            } else {
                556.0
            }
        }
        b'A'..=b'Z' => 778.0,
        _ => 1015.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_a_well_formed_file_whose_table_points_at_its_objects() {
        let mut page = Page::new(100.0, 50.0);
        page.text(5.0, 30.0, Font::Bold, 10.0, 200.0, "Mbuyi (Élodie) \\ test");
        page.bar(5.0, 5.0, 1.5, 20.0);
        let pdf = page.finish("Étiquette");
        assert!(pdf.starts_with(b"%PDF-1.4\n"));
        assert!(pdf.ends_with(b"%%EOF\n"));
        // Latin-1, the encoding of its strings: one character a byte, so positions agree.
        let text: String = pdf.iter().map(|&b| b as char).collect();
        // Every offset of the cross-reference table lands on its object's header.
        let xref_at: usize = text
            .rsplit("startxref\n")
            .next()
            .and_then(|t| t.lines().next())
            .and_then(|n| n.parse().ok())
            .expect("a startxref offset");
        assert!(pdf[xref_at..].starts_with(b"xref\n0 8\n"));
        let table = text[text.find("xref\n0 8").unwrap()..].to_string();
        for (i, line) in table.lines().skip(3).take(7).enumerate() {
            let offset: usize = line[..10].parse().unwrap();
            let header = format!("{} 0 obj\n", i + 1);
            assert!(
                pdf[offset..].starts_with(header.as_bytes()),
                "object {}",
                i + 1
            );
        }
        // The stream's declared length is its length.
        let find = |needle: &[u8]| pdf.windows(needle.len()).position(|w| w == needle).unwrap();
        let start = find(b"stream\n") + 7;
        let end = find(b"\nendstream");
        assert!(text.contains(&format!("/Length {}", end - start)));
        // Parentheses and backslashes are escaped; É is WinAnsi's 0xC9.
        assert!(text.contains("\\(\u{c9}lod"));
        assert!(text.contains("test) Tj"));
        assert!(text.contains("\\\\ test"));
        assert!(text.contains("5 5 1.5 20 re f"));
    }

    #[test]
    fn the_same_drawing_is_the_same_bytes() {
        let draw = || {
            let mut p = Page::new(mm(89.0), mm(36.0));
            p.text(3.0, 3.0, Font::Regular, 8.0, 50.0, "Kinshasa");
            p.finish("x")
        };
        assert_eq!(draw(), draw());
    }

    #[test]
    fn a_line_too_long_is_cut_with_an_ellipsis_and_unknown_characters_are_marked() {
        let long = "Mwamba Kalonji Tshisekedi Ilunga Mukendi Kabasele";
        let cut = fit(&win_ansi(long), Font::Bold, 10.0, 60.0);
        assert!(cut.len() < long.len());
        assert_eq!(cut.last(), Some(&0x85));
        assert_eq!(win_ansi("Ω çà Šž•"), b"? \xe7\xe0 \x8a\x9e\x95");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(0.126), "0.13");
        assert_eq!(num(-0.001), "0");
    }
}
