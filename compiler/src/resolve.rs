//! Concept references: by uuid, then `SOURCE:CODE` (source name or HL7 code, any map
//! type), then fully specified name in any locale, case-insensitively
//! (docs/content.md, "Rules the compiler enforces").

use crate::diagnostics::{Code, Sink};
use crate::source::Loc;
use model::{Concept, ConceptNameType, ConceptSource, mapping_key};
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Default)]
pub struct ConceptIndex {
    retired: HashMap<String, bool>,
    by_mapping: HashMap<String, Vec<String>>,
    by_name: HashMap<String, Vec<String>>,
}

pub enum Resolution {
    Found(String),
    NotFound,
    Ambiguous(Vec<String>),
}

impl ConceptIndex {
    pub fn build<'a>(
        concepts: impl Iterator<Item = &'a Concept>,
        sources: &BTreeMap<String, ConceptSource>,
    ) -> ConceptIndex {
        // Source name (upper) → HL7 code, to index mappings under both.
        let hl7: HashMap<String, String> = sources
            .values()
            .filter_map(|s| Some((s.name.to_uppercase(), s.hl7_code.clone()?)))
            .collect();
        let mut index = ConceptIndex::default();
        for c in concepts {
            index.retired.insert(c.uuid.clone(), c.retired);
            for m in &c.mappings {
                let keys = std::iter::once(mapping_key(&m.source, &m.code)).chain(
                    hl7.get(&m.source.to_uppercase())
                        .map(|h| mapping_key(h, &m.code)),
                );
                for key in keys {
                    let list = index.by_mapping.entry(key).or_default();
                    if !list.contains(&c.uuid) {
                        list.push(c.uuid.clone());
                    }
                }
            }
            for n in c
                .names
                .iter()
                .filter(|n| n.name_type == ConceptNameType::FullySpecified)
            {
                let list = index.by_name.entry(n.name.to_lowercase()).or_default();
                if !list.contains(&c.uuid) {
                    list.push(c.uuid.clone());
                }
            }
        }
        index
    }

    pub fn contains(&self, uuid: &str) -> bool {
        self.retired.contains_key(uuid)
    }

    pub fn lookup(&self, reference: &str) -> Resolution {
        if self.contains(reference) {
            return Resolution::Found(reference.to_string());
        }
        if let Some((source, code)) = reference.split_once(':')
            && !code.contains(':')
            && let Some(hits) = self.by_mapping.get(&mapping_key(source, code))
        {
            // Retired concepts count only when nothing else matches (core sorts them last).
            let live: Vec<_> = hits.iter().filter(|u| !self.retired[*u]).cloned().collect();
            match live.as_slice() {
                [one] => return Resolution::Found(one.clone()),
                [] => return Resolution::Found(hits[0].clone()),
                _ => return Resolution::Ambiguous(live),
            }
        }
        match self
            .by_name
            .get(&reference.to_lowercase())
            .map(Vec::as_slice)
        {
            Some([one]) => Resolution::Found(one.clone()),
            Some(many) if many.len() > 1 => Resolution::Ambiguous(many.to_vec()),
            _ => Resolution::NotFound,
        }
    }

    /// Resolves and reports: unknown → `unknown_concept`; several → ambiguous.
    pub fn resolve(&self, reference: &str, loc: &Loc, sink: &mut Sink) -> Option<String> {
        match self.lookup(reference) {
            Resolution::Found(u) => Some(u),
            Resolution::NotFound => {
                sink.unknown_concept(loc, reference);
                None
            }
            Resolution::Ambiguous(uuids) => {
                sink.emit(
                    Code::AmbiguousConcept,
                    loc,
                    format!("Concept reference '{reference}' matches several concepts"),
                )
                .notes
                .push(format!("candidates: {}", uuids.join(", ")));
                None
            }
        }
    }

    /// Resolves each item of a list, keeping order and dropping failures.
    pub fn resolve_all(&self, refs: &[String], loc: &Loc, sink: &mut Sink) -> Vec<String> {
        refs.iter()
            .filter_map(|r| self.resolve(r, &loc.narrow(r), sink))
            .collect()
    }
}
