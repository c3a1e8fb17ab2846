//! `document`: what the patient documents module prints for a patient, made from her
//! record when asked and never stored. Today the identifier sticker
//! (`GET patientdocuments/patientIdSticker`): a one-page PDF label with the facility, her
//! name, her preferred identifier under its type, sex and date of birth with her age, and
//! the identifier as a Code 128 barcode a reader at any desk can scan back into the search
//! box. The labels are in the caller's language (French, else English).

pub mod pdf;
pub mod rest;

use crate::store::PatientRecord;
use pdf::{Font, Page, mm};

/// What the sticker shows, resolved from the record and the content.
pub struct Sticker {
    /// The facility (the session's location, or the visit location above it).
    pub facility: Option<String>,
    pub name: String,
    /// The identifier type's name and the identifier.
    pub identifier: Option<(String, String)>,
    pub gender: String,
    /// `yyyy-mm-dd`, whether estimated, and the age in whole years today.
    pub birthdate: Option<(String, bool, i32)>,
    pub french: bool,
}

impl Sticker {
    pub fn from_record(
        p: &PatientRecord,
        identifier_type_name: impl Fn(&str) -> String,
        facility: Option<String>,
        today: chrono::NaiveDate,
        french: bool,
    ) -> Sticker {
        let name = crate::domains::patient::repr::preferred_name(p)
            .map(crate::domains::patient::repr::full_name)
            .unwrap_or_default();
        let identifier = crate::domains::patient::repr::preferred_identifier(p).map(|i| {
            (
                identifier_type_name(&i.identifier_type),
                i.identifier.clone(),
            )
        });
        let birthdate = p.birthdate.as_ref().and_then(|b| {
            crate::wire::age_on(b, today).map(|age| (b.clone(), p.birthdate_estimated, age))
        });
        Sticker {
            facility,
            name,
            identifier,
            gender: p.gender.clone(),
            birthdate,
            french,
        }
    }

    /// The label, 89 × 36 mm (the common roll label of registration desks' printers).
    pub fn pdf(&self) -> Vec<u8> {
        let (width, height) = (mm(89.0), mm(36.0));
        let margin = mm(3.0);
        let inner = width - 2.0 * margin;
        let mut page = Page::new(width, height);
        let mut y = height - margin - 8.0;
        if let Some(facility) = &self.facility {
            page.text(margin, y, Font::Regular, 7.0, inner, facility);
            y -= 11.0;
        }
        page.text(margin, y, Font::Bold, 11.0, inner, &self.name);
        y -= 10.0;
        page.text(margin, y, Font::Regular, 8.0, inner, &self.details());
        if let Some((type_name, id)) = &self.identifier {
            y -= 10.0;
            page.text(
                margin,
                y,
                Font::Regular,
                8.0,
                inner,
                &format!("{type_name} : {id}"),
            );
            let bar_height = (y - 4.0 - margin).max(12.0);
            if let Some(modules) = code128(id) {
                // As wide as the label allows, at most a point a module (readers want the
                // narrowest bar wider than a printer's dot).
                let module = (inner / modules.len() as f32).min(1.0);
                let mut x = margin;
                let mut run_start: Option<f32> = None;
                for (i, &m) in modules.iter().enumerate() {
                    match (m, run_start) {
                        (1, None) => run_start = Some(x),
                        (0, Some(start)) => {
                            page.bar(start, margin, x - start, bar_height);
                            run_start = None;
                        }
                        _ => {}
                    }
                    x += module;
                    if i + 1 == modules.len()
                        && let Some(start) = run_start.take()
                    {
                        page.bar(start, margin, x - start, bar_height);
                    }
                }
            }
        }
        let title = if self.french {
            "Étiquette d'identification"
        } else {
            "Patient identifier sticker"
        };
        page.finish(title)
    }

    /// `Sexe : F · Né(e) le 12/03/1990 (34 ans)`, or its English.
    fn details(&self) -> String {
        let sex = match (self.gender.as_str(), self.french) {
            (g @ ("M" | "F"), _) => g,
            (_, true) => "inconnu",
            (_, false) => "unknown",
        };
        let mut s = if self.french {
            format!("Sexe : {sex}")
        } else {
            format!("Sex: {sex}")
        };
        if let Some((date, estimated, age)) = &self.birthdate {
            let shown = date.split('-').rev().collect::<Vec<_>>().join("/");
            let about = if *estimated { "~" } else { "" };
            s.push_str(&if self.french {
                format!(" · Né(e) le {about}{shown} ({age} ans)")
            } else {
                format!(" · Born {about}{shown} ({age} years)")
            });
        }
        s
    }
}

/// An identifier's Code 128 bars, one entry a module (1 black), quiet zones included;
/// none for characters Code 128's set B cannot carry.
pub fn code128(data: &str) -> Option<Vec<u8>> {
    if data.is_empty() || !data.chars().all(|c| (' '..='~').contains(&c)) {
        return None;
    }
    // `Ɓ` asks the encoder for character set B (printable ASCII).
    let bars = barcoders::sym::code128::Code128::new(format!("Ɓ{data}"))
        .ok()?
        .encode();
    let quiet = [0u8; 10];
    Some([&quiet[..], &bars, &quiet[..]].concat())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::IdentifierRecord;

    /// The file's bytes as Latin-1 text, the encoding its strings are in.
    fn latin1(bytes: &[u8]) -> String {
        bytes.iter().map(|&b| b as char).collect()
    }

    fn patient() -> PatientRecord {
        let mut p = PatientRecord::for_test("p", "Élodie", "Mbuyi");
        p.birthdate = Some("1990-03-12".into());
        p.identifiers.push(IdentifierRecord {
            uuid: "i".into(),
            identifier: "100008E".into(),
            identifier_type: "t".into(),
            location: None,
            preferred: true,
        });
        p
    }

    #[test]
    fn the_sticker_carries_her_name_identifier_details_and_bars() {
        let today = chrono::NaiveDate::from_ymd_opt(2026, 3, 11).unwrap();
        let s = Sticker::from_record(
            &patient(),
            |_| "Numéro de dossier".into(),
            Some("Bondeko".into()),
            today,
            true,
        );
        assert_eq!(s.details(), "Sexe : F · Né(e) le 12/03/1990 (35 ans)");
        let pdf = s.pdf();
        let text = latin1(&pdf);
        assert!(text.contains("(Bondeko) Tj"));
        assert!(text.contains("(\u{c9}lodie Mbuyi) Tj"));
        assert!(text.contains("(Num\u{e9}ro de dossier : 100008E) Tj"));
        // Code 128: a start, 7 data characters, a check and a stop, 11 modules each but the
        // 13-module stop; its bars are drawn as rectangles.
        let modules = code128("100008E").unwrap();
        assert_eq!(modules.len(), 10 + 11 * 9 + 13 + 10);
        let bars = text.matches(" re f").count();
        assert_eq!(bars, modules.windows(2).filter(|w| w == &[0, 1]).count());
    }

    #[test]
    fn an_identifier_outside_code_128_gets_no_bars_but_its_text() {
        assert!(code128("ÉCOLE").is_none());
        assert!(code128("").is_none());
        let mut p = patient();
        p.identifiers[0].identifier = "Kin-ÉÉ".into();
        let s = Sticker::from_record(&p, |_| "ID".into(), None, crate::wire::today(), false);
        let text = latin1(&s.pdf());
        assert!(!text.contains(" re f"));
        assert!(text.contains("(ID : Kin-\u{c9}\u{c9}) Tj"));
    }
}
