//! `messageproperties/**/*.properties` (and the i18n files of `addresshierarchy/`): Java
//! properties files read as UTF-8; the locale is the file name's suffix
//! (`labels_fr.properties` → `fr`, no suffix → `en`). Later files override earlier ones.

use crate::csvtable::is_locale;
use crate::diagnostics::{Code, Sink};
use crate::vfs::{InputFile, decode};
use java_properties::{LineContent, PropertiesIter};
use std::collections::BTreeMap;

/// Locale from a file name: the `_xx` or `_xx_YY` suffix of the stem.
pub fn locale_of(file_name: &str) -> Option<String> {
    let stem = file_name.strip_suffix(".properties")?;
    let parts: Vec<&str> = stem.split('_').collect();
    for take in [2usize, 1] {
        if parts.len() > take {
            let candidate = parts[parts.len() - take..].join("_");
            if is_locale(&candidate) {
                return Some(candidate);
            }
        }
    }
    Some("en".to_string())
}

pub fn load(
    files: &[&InputFile],
    messages: &mut BTreeMap<String, BTreeMap<String, String>>,
    sink: &mut Sink,
) {
    // `_order` inside a file sorts it; files without one keep path order, after ordered ones.
    let mut parsed = Vec::new();
    for f in files {
        let Some(file) = decode(f, sink) else {
            continue;
        };
        let name = f.rel.rsplit('/').next().unwrap_or(&f.rel);
        let locale = locale_of(name).unwrap_or_else(|| "en".into());
        let mut entries = Vec::new();
        let mut order = i64::MAX;
        for line in PropertiesIter::new_with_encoding(file.text.as_bytes(), encoding_rs::UTF_8) {
            match line {
                Ok(line) => {
                    if let LineContent::KVPair(k, v) = line.consume_content() {
                        if k == "_order" {
                            order = v.trim().parse().unwrap_or(i64::MAX);
                        } else {
                            entries.push((k, v));
                        }
                    }
                }
                Err(e) => {
                    let line_no = e.line_number().unwrap_or(1);
                    sink.emit(
                        Code::InvalidValue,
                        &crate::source::Loc::Point {
                            path: file.path.clone(),
                            line: line_no as u32,
                            col: 1,
                        },
                        format!("Malformed properties line: {e}"),
                    );
                    break;
                }
            }
        }
        parsed.push((order, f.rel.clone(), locale, entries));
    }
    parsed.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    for (_, _, locale, entries) in parsed {
        let map = messages.entry(locale).or_default();
        for (k, v) in entries {
            map.insert(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locales_from_file_names() {
        assert_eq!(locale_of("labels_fr.properties").as_deref(), Some("fr"));
        assert_eq!(
            locale_of("metadata_km_KH.properties").as_deref(),
            Some("km_KH")
        );
        assert_eq!(locale_of("labels.properties").as_deref(), Some("en"));
        assert_eq!(
            locale_of("address_labels_en.properties").as_deref(),
            Some("en")
        );
    }
}
