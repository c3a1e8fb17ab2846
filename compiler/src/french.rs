//! Names a French build would show in English. A package may name its metadata in
//! English and translate the names through `Display:fr` columns; where it does neither, a
//! French-speaking facility reads English on its screens (payment modes and billable
//! services are shown as written: the billing module has no translation for them). Telling
//! English from French is a guess: a name is taken as English when it has a word that is
//! common in health metadata in English and is not a French word.

use crate::diagnostics::{Code, Sink};
use crate::source::Loc;
use model::Localized;

/// Words of English health metadata that French does not use (a word both languages
/// use, such as "consultation" or "admission", is left out).
const ENGLISH_ONLY: &[&str] = &[
    "adult",
    "and",
    "antenatal",
    "assignment",
    "bed",
    "bill",
    "billing",
    "birth",
    "birthplace",
    "blood",
    "cancel",
    "cancellation",
    "card",
    "care",
    "cash",
    "check",
    "checkin",
    "child",
    "children",
    "clinical",
    "clinician",
    "counseling",
    "counselling",
    "delivery",
    "discharge",
    "dispensing",
    "doctor",
    "drug",
    "drugs",
    "email",
    "emergency",
    "encounter",
    "enrolment",
    "enrollment",
    "family",
    "father",
    "fee",
    "fees",
    "female",
    "follow",
    "for",
    "free",
    "fund",
    "general",
    "health",
    "home",
    "hospitalization",
    "immunization",
    "inpatient",
    "insurance",
    "labor",
    "labour",
    "level",
    "male",
    "marital",
    "medication",
    "money",
    "mother",
    "name",
    "number",
    "nurse",
    "occupation",
    "of",
    "order",
    "orders",
    "outpatient",
    "payment",
    "pharmacy",
    "phone",
    "postnatal",
    "pregnancy",
    "pregnant",
    "program",
    "referral",
    "registration",
    "request",
    "result",
    "results",
    "screening",
    "signs",
    "testing",
    "the",
    "transfer",
    "treatment",
    "unknown",
    "visit",
    "vitals",
    "waiting",
    "waiver",
    "ward",
    "with",
    "woman",
    "women",
];

/// The English-only word that makes `name` read as English, if any.
pub fn english_word(name: &str) -> Option<&'static str> {
    name.split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .find_map(|w| {
            let w = w.to_ascii_lowercase();
            ENGLISH_ONLY.iter().find(|e| **e == w).copied()
        })
}

/// Whether a locale is French (`fr`, `fr_CD`…).
pub fn is_french(locale: &str) -> bool {
    locale == "fr" || locale.starts_with("fr_") || locale.starts_with("fr-")
}

/// One name a French build may show: its kind ("encounter type"), the name, its
/// translations where the kind has them (`None`: shown as written), and its row.
pub struct ShownName {
    pub kind: &'static str,
    pub name: String,
    pub display: Option<Localized>,
    pub loc: Loc,
}

/// Warns, in a build whose default locale is French, of each name that reads as English
/// and has no French display.
pub fn check_names(default_locale: &str, names: &[ShownName], sink: &mut Sink) {
    if !is_french(default_locale) {
        return;
    }
    for shown in names {
        let translated = shown
            .display
            .as_ref()
            .is_some_and(|d| d.keys().any(|l| is_french(l)));
        if translated {
            continue;
        }
        let Some(word) = english_word(&shown.name) else {
            continue;
        };
        let d = sink.emit(
            Code::EnglishName,
            &shown.loc,
            format!(
                "{} '{}' reads as English in a French build",
                capitalised(shown.kind),
                shown.name
            ),
        );
        d.notes.push(format!("'{word}' is an English word"));
        d.help = Some(if shown.display.is_some() {
            "add a Display:fr column with the French name, or name it in French".into()
        } else {
            "name it in French: the front end shows this name as written".into()
        });
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_names_are_told_from_french_ones() {
        assert_eq!(english_word("Visit Note"), Some("visit"));
        assert_eq!(english_word("Mother's name"), Some("mother"));
        assert_eq!(english_word("Cash"), Some("cash"));
        for french in [
            "Consultation",
            "Signes vitaux",
            "Admission",
            "Nom de la mère",
            "Espèces",
            "Monnaie mobile",
            "Prise en charge par un programme",
            "Note d'hospitalisation",
            "Attribution de lit",
            "Goutte épaisse",
            "Téléphone de la personne à contacter",
            "Planification familiale",
            "Planning familial",
            "Signe vital",
        ] {
            assert_eq!(english_word(french), None, "{french}");
        }
        assert!(is_french("fr") && is_french("fr_CD") && !is_french("en"));
    }
}
