//! `ampathforms/*.json` and `ampathformstranslations/*.json`.
//!
//! The form uuid is derived from name and version as Initializer does; every concept
//! reference inside the form (`questionOptions.concept`, `answers[].concept`, at any
//! depth) is collected with its position and checked in `crate::link`.

use super::Loaded;
use crate::csvtable::{is_locale, name_uuid_from_bytes};
use crate::diagnostics::{Code, Sink};
use crate::source::{Loc, TextFile};
use crate::store::Entry;
use crate::vfs::{InputFile, decode};
use model::{Form, FormTranslation};
use serde_json::Value;
use std::sync::Arc;

/// Initializer's namespace prefix for form uuids.
const FORM_NAMESPACE: &str = "794c4598-ab82-47ca-8d18-483a8abe6f4f";

pub fn form_uuid(name: &str, version: &str) -> String {
    name_uuid_from_bytes(format!("{FORM_NAMESPACE}_{name}_{version}").as_bytes())
}

/// A form with its references still as written.
#[derive(Debug)]
pub struct LoadedForm {
    pub form: Form,
    /// Encounter type name, as written.
    pub encounter: Option<String>,
    /// (reference, question id, position).
    pub concept_refs: Vec<(String, String, Loc)>,
}

/// Finds the byte offset of the `n`th occurrence of `"needle"` as a JSON string.
pub(super) fn locate_string(file: &Arc<TextFile>, value: &str, nth: usize) -> Loc {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    match file.text.match_indices(&quoted).nth(nth) {
        Some((i, _)) => file.loc(i, quoted.len()),
        None => file.whole(),
    }
}

fn locate_key(file: &Arc<TextFile>, key: &str) -> Loc {
    let quoted = format!("\"{key}\"");
    match file.text.find(&quoted) {
        Some(i) => file.loc(i, quoted.len()),
        None => file.whole(),
    }
}

fn parse_json(file: &Arc<TextFile>, sink: &mut Sink) -> Option<serde_json::Map<String, Value>> {
    match serde_json::from_str::<Value>(&file.text) {
        Ok(Value::Object(map)) => Some(map),
        Ok(_) => {
            sink.emit(
                Code::FormSchema,
                &file.whole(),
                "Expected a JSON object at the top level",
            );
            None
        }
        Err(e) => {
            let offset = offset_of(&file.text, e.line(), e.column());
            sink.emit(
                Code::JsonSyntax,
                &file.loc(offset, 1),
                format!("Invalid JSON: {e}"),
            );
            None
        }
    }
}

pub(super) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let rest = &text[start.min(text.len())..];
    start
        + rest
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(rest.len(), |(i, _)| i)
}

pub fn load_forms(files: &[&InputFile], loaded: &mut Loaded, sink: &mut Sink) {
    for f in files {
        let Some(file) = decode(f, sink) else {
            continue;
        };
        let Some(map) = parse_json(&file, sink) else {
            continue;
        };
        let mut ok = true;
        let mut string_field = |key: &str, required: bool, sink: &mut Sink| match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                if required {
                    ok = false;
                    sink.emit(
                        Code::FormSchema,
                        &file.whole(),
                        format!("Form has no '{key}'"),
                    )
                    .help = Some(format!("a form needs a non-empty string '{key}'"));
                }
                None
            }
            Some(other) => {
                ok = false;
                sink.emit(
                    Code::FormSchema,
                    &locate_key(&file, key),
                    format!("Form '{key}' must be a string, not {}", kind(other)),
                )
                .help = Some(format!(
                    "write \"{key}\": \"{}\"",
                    other.to_string().trim_matches('"')
                ));
                None
            }
        };
        let name = string_field("name", true, sink);
        let version = string_field("version", true, sink);
        let description = string_field("description", false, sink);
        let encounter = string_field("encounter", false, sink);
        let processor = string_field("processor", false, sink);
        let mut bool_field = |key: &str, sink: &mut Sink| match map.get(key) {
            Some(Value::Bool(b)) => Some(*b),
            other => {
                ok = false;
                let loc = if other.is_some() {
                    locate_key(&file, key)
                } else {
                    file.whole()
                };
                sink.emit(
                    Code::FormSchema,
                    &loc,
                    format!("Form '{key}' must be a JSON boolean"),
                )
                .help = Some(format!(
                    "write \"{key}\": true or false (Initializer requires it)"
                ));
                None
            }
        };
        let published = bool_field("published", sink);
        let retired = bool_field("retired", sink);
        if !matches!(map.get("pages"), Some(Value::Array(_))) {
            ok = false;
            sink.emit(Code::FormSchema, &file.whole(), "Form has no 'pages' list")
                .help = Some("a form's questions live in pages[].sections[].questions[]".into());
        }
        let is_encounter_form = processor
            .as_deref()
            .is_none_or(|p| p == "EncounterFormProcessor");
        if is_encounter_form && encounter.is_none() && name.is_some() {
            ok = false;
            sink.emit(
                Code::FormSchema,
                &file.whole(),
                "Encounter form has no 'encounter' (encounter type name)",
            );
        }
        let (Some(name), Some(version), Some(published), Some(retired), true) =
            (name, version, published, retired, ok)
        else {
            continue;
        };
        let uuid = form_uuid(&name, &version);
        if let Some(Value::String(written)) = map.get("uuid")
            && !written.is_empty()
            && *written != uuid
        {
            sink.emit(
                Code::FormUuidMismatch,
                &locate_string(&file, written, 0),
                format!("Form uuid '{written}' is ignored: the form's uuid is '{uuid}'"),
            )
            .help = Some("the uuid is derived from name and version; remove the key or write the derived uuid".into());
        }
        let mut refs = Vec::new();
        let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        collect_concept_refs(
            &Value::Object(map.clone()),
            "",
            &mut |reference, question| {
                let n = seen.entry(reference.to_string()).or_insert(0);
                let loc = locate_string(&file, reference, *n);
                *n += 1;
                refs.push((reference.to_string(), question.to_string(), loc));
            },
        );
        for (reference, _, loc) in &refs {
            if reference.trim() != reference {
                sink.emit(
                    Code::PaddedReference,
                    loc,
                    format!("Concept reference '{reference}' has surrounding spaces"),
                )
                .help = Some(
                    "remove the spaces: the O3 form engine compares references as written".into(),
                );
            }
        }
        let refs = refs
            .into_iter()
            .map(|(r, q, l)| (r.trim().to_string(), q, l))
            .collect();
        let form = Form {
            uuid: uuid.clone(),
            name,
            version,
            description,
            published,
            retired,
            encounter_type: None,
            schema_json: file.text.clone(),
        };
        let entry = Entry::new(
            LoadedForm {
                form,
                encounter,
                concept_refs: refs,
            },
            f.layer,
            file.whole(),
        )
        .with_cell("encounter", locate_key(&file, "encounter"));
        loaded.forms.insert(uuid, entry, sink);
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Visits every object; an object with `questionOptions` is a question.
pub(crate) fn collect_concept_refs(v: &Value, question: &str, found: &mut impl FnMut(&str, &str)) {
    match v {
        Value::Object(map) => {
            let id = map.get("id").and_then(Value::as_str).unwrap_or(question);
            if let Some(Value::Object(opts)) = map.get("questionOptions") {
                if let Some(Value::String(c)) = opts.get("concept") {
                    found(c, id);
                }
                if let Some(Value::Array(answers)) = opts.get("answers") {
                    for a in answers {
                        if let Some(Value::String(c)) = a.get("concept") {
                            found(c, id);
                        }
                    }
                }
            }
            for (k, child) in map {
                if k != "questionOptions" {
                    collect_concept_refs(child, id, found);
                } else if let Value::Object(opts) = child {
                    // Nested structures inside options other than answers (rare) still count.
                    for (ok, oc) in opts {
                        if ok != "answers" && ok != "concept" {
                            collect_concept_refs(oc, id, found);
                        }
                    }
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|i| collect_concept_refs(i, question, found)),
        _ => {}
    }
}

pub fn load_translations(files: &[&InputFile], loaded: &mut Loaded, sink: &mut Sink) {
    for f in files {
        let Some(file) = decode(f, sink) else {
            continue;
        };
        let Some(map) = parse_json(&file, sink) else {
            continue;
        };
        let form = map
            .get("form")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty());
        let language = map
            .get("language")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty());
        let (Some(form), Some(language)) = (form, language) else {
            sink.emit(
                Code::FormSchema,
                &file.whole(),
                "Form translation needs string 'form' and 'language' keys",
            )
            .help = Some("'form' is the name of a form; 'language' a locale such as fr".into());
            continue;
        };
        if !is_locale(language) {
            sink.emit(
                Code::InvalidLocale,
                &locate_string(&file, language, 0),
                format!("Invalid locale '{language}'"),
            );
            continue;
        }
        let mut translations = std::collections::BTreeMap::new();
        match map.get("translations") {
            Some(Value::Object(t)) => {
                for (k, v) in t {
                    match v {
                        Value::String(s) => {
                            translations.insert(k.clone(), s.clone());
                        }
                        other => {
                            sink.emit(
                                Code::FormSchema,
                                &locate_string(&file, k, 0),
                                format!(
                                    "Translation of '{k}' must be a string, not {}",
                                    kind(other)
                                ),
                            );
                        }
                    }
                }
            }
            None | Some(Value::Null) => {}
            Some(other) => {
                sink.emit(
                    Code::FormSchema,
                    &locate_key(&file, "translations"),
                    format!("'translations' must be an object, not {}", kind(other)),
                );
            }
        }
        let value = FormTranslation {
            form: form.to_string(),
            language: language.to_string(),
            form_name_translation: map
                .get("form_name_translation")
                .and_then(Value::as_str)
                .map(str::to_string),
            translations,
        };
        let entry = Entry::new(value, f.layer, file.whole())
            .with_cell("form", locate_string(&file, form, 0));
        loaded.form_translations.push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_uuid_is_initializers() {
        // UUID.nameUUIDFromBytes("794c4598-ab82-47ca-8d18-483a8abe6f4f_Vitals_1.0".getBytes())
        // Value computed with Java 17.
        assert_eq!(
            form_uuid("Vitals", "1.0"),
            "35bd08b0-5a6d-335e-a32f-381ecd179523"
        );
    }

    #[test]
    fn nested_questions_are_walked() {
        let v: Value = serde_json::from_str(
            r#"{"pages":[{"sections":[{"questions":[
            {"id":"g","type":"obsGroup","questionOptions":{"concept":"A"},"questions":[
              {"id":"q","questionOptions":{"concept":"B","answers":[{"concept":"C"}]}}]}]}]}]}"#,
        )
        .unwrap();
        let mut found = Vec::new();
        collect_concept_refs(&v, "", &mut |c, q| {
            found.push((c.to_string(), q.to_string()))
        });
        assert_eq!(
            found,
            vec![
                ("A".into(), "g".into()),
                ("B".into(), "q".into()),
                ("C".into(), "q".into())
            ]
        );
    }
}
