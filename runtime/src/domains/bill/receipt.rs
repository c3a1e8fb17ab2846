//! A bill's receipt as a PDF, the document the O3 billing app downloads and prints: the
//! facility, the receipt number and date, the patient, each line item (quantity, service,
//! unit price, amount), the total, what was paid in which mode and what remains due. The
//! page is a till roll's width (288 points, as the module's receipt), as long as its lines.
//!
//! The PDF is written here, not by a library: one page of text in the standard Helvetica
//! font (every PDF reader has it) with the Windows-1252 encoding, which covers French.

use crate::catalog::Catalog;
use crate::domains::bill::{BillRecord, Money};
use crate::store::PatientRecord;
use std::fmt::Write;

const WIDTH: f32 = 288.0;
const MARGIN: f32 = 14.0;
const LINE: f32 = 13.0;

/// One line of the receipt: its text at a size, left or right aligned, and an optional
/// right-hand column (amounts).
struct Line {
    left: String,
    right: Option<String>,
    size: f32,
}

fn line(left: impl Into<String>, right: Option<String>) -> Line {
    Line {
        left: left.into(),
        right,
        size: 9.0,
    }
}

fn money(m: Money) -> String {
    // Two places at least, as a cash desk writes amounts.
    let text = m.to_string();
    match text.split_once('.') {
        None => format!("{text}.00"),
        Some((_, f)) if f.len() == 1 => format!("{text}0"),
        _ => text,
    }
}

pub fn pdf(catalog: &Catalog, bill: &BillRecord, patient: Option<&PatientRecord>) -> Vec<u8> {
    let content = &catalog.content;
    let cash_point = content
        .cash_points
        .iter()
        .find(|c| c.uuid == bill.cash_point);
    let facility = cash_point
        .and_then(|c| c.location.as_deref())
        .and_then(|l| catalog.location(l))
        .map(|l| l.name.clone())
        .unwrap_or_default();
    let mut lines = vec![
        Line {
            left: facility,
            right: None,
            size: 11.0,
        },
        line(cash_point.map(|c| c.name.clone()).unwrap_or_default(), None),
        Line {
            left: format!("Reçu n° {}", bill.number),
            right: None,
            size: 12.0,
        },
        line(
            format!(
                "Date : {}",
                crate::wire::parse_key(&bill.audit.date_created)
                    .map(|t| t.format("%d/%m/%Y %H:%M").to_string())
                    .unwrap_or_default()
            ),
            None,
        ),
    ];
    if let Some(p) = patient {
        let id = p
            .identifiers
            .iter()
            .find(|i| i.preferred)
            .or(p.identifiers.first())
            .map(|i| i.identifier.clone())
            .unwrap_or_default();
        lines.push(line(
            format!(
                "Patient : {}",
                crate::domains::patient::repr::person_display(p)
            ),
            None,
        ));
        lines.push(line(format!("Identifiant : {id}"), None));
    }
    lines.push(line("", None));
    lines.push(line("Qté  Service", Some("Montant".into())));
    for item in bill.live_items() {
        let name = content
            .billable_services
            .iter()
            .find(|s| s.uuid == item.service)
            .map(|s| s.name.as_str())
            .unwrap_or_default();
        lines.push(line(
            format!("{:>3}  {name}", item.quantity),
            item.total().map(money),
        ));
        if item.quantity > 1 {
            lines.push(line(
                format!("       à {} l'unité", money(item.price)),
                None,
            ));
        }
    }
    lines.push(line("", None));
    let total = bill.total().unwrap_or_default();
    lines.push(Line {
        left: "Total".into(),
        right: Some(money(total)),
        size: 10.0,
    });
    for p in bill.live_payments() {
        let mode = content
            .payment_modes
            .iter()
            .find(|m| m.uuid == p.mode)
            .map(|m| m.name.as_str())
            .unwrap_or_default();
        lines.push(line(format!("Payé ({mode})"), Some(money(p.tendered))));
    }
    lines.push(line("Reste à payer", Some(money(bill.due()))));
    let change = bill.tendered().0 - total.0;
    if change > 0 {
        lines.push(line("Monnaie rendue", Some(money(Money(change)))));
    }
    lines.push(line("", None));
    lines.push(line(format!("Statut : {}", status_fr(&bill.status)), None));
    render(&lines)
}

fn status_fr(status: &str) -> &str {
    match status {
        crate::domains::bill::PENDING => "en attente",
        crate::domains::bill::POSTED => "à payer",
        crate::domains::bill::PAID => "payé",
        other => other,
    }
}

/// A string in a PDF literal, in Windows-1252 (characters outside it become `?`).
fn pdf_string(text: &str, out: &mut Vec<u8>) {
    out.push(b'(');
    for c in text.chars() {
        let byte = match c {
            '(' | ')' | '\\' => {
                out.push(b'\\');
                c as u8
            }
            '€' => 0x80,
            '’' => 0x92,
            '–' => 0x96,
            c if (c as u32) < 0x80 => c as u8,
            c if (0xA0..=0xFF).contains(&(c as u32)) => c as u32 as u8,
            _ => b'?',
        };
        out.push(byte);
    }
    out.push(b')');
}

/// Helvetica's width of the text at `size`, roughly (an average glyph of 0.5 em), for
/// right alignment.
fn width(text: &str, size: f32) -> f32 {
    text.chars().count() as f32 * size * 0.5
}

fn render(lines: &[Line]) -> Vec<u8> {
    let height = MARGIN * 2.0 + LINE * lines.len() as f32 + 4.0;
    let mut stream = Vec::new();
    let mut y = height - MARGIN - LINE;
    for l in lines {
        for (text, x) in [
            (Some(&l.left), MARGIN),
            (
                l.right.as_ref(),
                WIDTH - MARGIN - l.right.as_deref().map_or(0.0, |r| width(r, l.size)),
            ),
        ] {
            let Some(text) = text.filter(|t| !t.is_empty()) else {
                continue;
            };
            let _ = write!(
                VecWriter(&mut stream),
                "BT /F1 {} Tf {x:.1} {y:.1} Td ",
                l.size
            );
            pdf_string(text, &mut stream);
            stream.extend_from_slice(b" Tj ET\n");
        }
        y -= LINE;
    }
    let objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {WIDTH:.0} {height:.0}] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
        {
            let mut s = format!("<< /Length {} >>\nstream\n", stream.len()).into_bytes();
            s.extend_from_slice(&stream);
            s.extend_from_slice(b"endstream");
            s
        },
    ];
    let mut out = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(o);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// `fmt::Write` into a byte vector.
struct VecWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pdf_is_well_formed_with_its_cross_reference_table_pointing_at_each_object() {
        let pdf = render(&[
            line("Reçu n° 000001-8", None),
            line("  1  Consultation (générale)", Some("5000.00".into())),
        ]);
        assert!(pdf.starts_with(b"%PDF-1.4\n"));
        assert!(pdf.ends_with(b"%%EOF\n"));
        let find = |needle: &[u8]| pdf.windows(needle.len()).position(|w| w == needle);
        let after = find(b"startxref\n").unwrap() + 10;
        let tail = std::str::from_utf8(&pdf[after..]).unwrap();
        let xref: usize = tail.lines().next().unwrap().parse().unwrap();
        let table = std::str::from_utf8(&pdf[xref..]).unwrap();
        assert!(table.starts_with("xref\n0 6\n"));
        for (i, entry) in table.lines().skip(3).take(5).enumerate() {
            let offset: usize = entry[..10].parse().unwrap();
            assert!(
                pdf[offset..].starts_with(format!("{} 0 obj", i + 1).as_bytes()),
                "object {}",
                i + 1
            );
        }
        // Accents in Windows-1252, parentheses escaped.
        assert!(find(b"Re\xE7u").is_some());
        assert!(find(b"\\(g\xE9n\xE9rale\\)").is_some());
        // The stream's declared length is its length.
        let start = find(b"stream\n").unwrap() + 7;
        let end = find(b"endstream").unwrap();
        let declared = format!("/Length {}", end - start);
        assert!(find(declared.as_bytes()).is_some());
    }

    #[test]
    fn amounts_show_two_places_at_least() {
        assert_eq!(money(Money::parse("5000").unwrap()), "5000.00");
        assert_eq!(money(Money::parse("1500.5").unwrap()), "1500.50");
        assert_eq!(money(Money::parse("0.125").unwrap()), "0.125");
    }
}
