//! The in-memory patient index: every patient by uuid, name tokens for word-prefix search
//! (case- and accent-insensitive: `helene` finds Hélène) and identifiers for exact match.
//! Rebuilt from the store at start, updated on every write before it is acknowledged.

use crate::store::PatientRecord;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use unicode_normalization::UnicodeNormalization;

/// Lower case without accents (NFD, combining marks removed).
pub fn fold(s: &str) -> String {
    s.nfd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Searchable words of a name: the folded word, and its parts split on `-` and `'`.
fn tokens(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in fold(name).split_whitespace() {
        out.push(word.to_string());
        for part in word
            .split(['-', '\'', '’'])
            .filter(|p| !p.is_empty() && *p != word)
        {
            out.push(part.to_string());
        }
    }
    out
}

#[derive(Default)]
pub struct SearchIndex {
    slots: Vec<Arc<PatientRecord>>,
    by_uuid: HashMap<String, u32>,
    by_token: BTreeMap<String, Vec<u32>>,
    /// Each slot's tokens, to check the other words of a query.
    slot_tokens: Vec<Vec<String>>,
    by_identifier: HashMap<String, Vec<u32>>,
}

impl SearchIndex {
    pub fn build(patients: Vec<PatientRecord>) -> SearchIndex {
        let mut index = SearchIndex::default();
        for p in patients {
            index.upsert(p);
        }
        index
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn get(&self, uuid: &str) -> Option<Arc<PatientRecord>> {
        self.by_uuid
            .get(uuid)
            .map(|&i| self.slots[i as usize].clone())
    }

    /// Adds a patient, or replaces the one with the same uuid.
    pub fn upsert(&mut self, p: PatientRecord) {
        if let Some(&slot) = self.by_uuid.get(&p.uuid) {
            self.unlink(slot);
            self.link(slot, &p);
            self.slots[slot as usize] = Arc::new(p);
            return;
        }
        let slot = self.slots.len() as u32;
        self.by_uuid.insert(p.uuid.clone(), slot);
        self.slot_tokens.push(Vec::new());
        self.link(slot, &p);
        self.slots.push(Arc::new(p));
    }

    fn link(&mut self, slot: u32, p: &PatientRecord) {
        let mut toks: Vec<String> = p
            .names
            .iter()
            .flat_map(|n| {
                [
                    &n.given_name,
                    &n.middle_name,
                    &n.family_name,
                    &n.family_name2,
                ]
            })
            .flatten()
            .flat_map(|s| tokens(s))
            .collect();
        toks.sort();
        toks.dedup();
        for t in &toks {
            self.by_token.entry(t.clone()).or_default().push(slot);
        }
        self.slot_tokens[slot as usize] = toks;
        for id in &p.identifiers {
            self.by_identifier
                .entry(id.identifier.to_lowercase())
                .or_default()
                .push(slot);
        }
    }

    fn unlink(&mut self, slot: u32) {
        for t in std::mem::take(&mut self.slot_tokens[slot as usize]) {
            if let Some(list) = self.by_token.get_mut(&t) {
                list.retain(|&s| s != slot);
            }
        }
        for id in &self.slots[slot as usize].identifiers {
            if let Some(list) = self.by_identifier.get_mut(&id.identifier.to_lowercase()) {
                list.retain(|&s| s != slot);
            }
        }
    }

    /// Patients matching `q`: every word of it starts a word of a name, or `q` equals an
    /// identifier. Voided patients never match; dead ones only with `include_dead`.
    /// Results come in creation order.
    pub fn search(&self, q: &str, include_dead: bool, min_chars: usize) -> Vec<Arc<PatientRecord>> {
        let q = q.trim();
        if q.chars().count() < min_chars.max(1) {
            return Vec::new();
        }
        let mut hits: Vec<u32> = self
            .by_identifier
            .get(&q.to_lowercase())
            .cloned()
            .unwrap_or_default();
        let terms: Vec<String> = fold(q).split_whitespace().map(str::to_string).collect();
        if let Some((first, rest)) = terms.split_first() {
            for (token, slots) in self.by_token.range(first.clone()..) {
                if !token.starts_with(first.as_str()) {
                    break;
                }
                for &slot in slots {
                    let toks = &self.slot_tokens[slot as usize];
                    if rest
                        .iter()
                        .all(|t| toks.iter().any(|x| x.starts_with(t.as_str())))
                    {
                        hits.push(slot);
                    }
                }
            }
        }
        hits.sort_unstable();
        hits.dedup();
        hits.into_iter()
            .map(|s| &self.slots[s as usize])
            .filter(|p| !p.voided && (include_dead || !p.dead))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{IdentifierRecord, NameRecord};

    fn patient(uuid: &str, given: &str, family: &str, id: &str, dead: bool) -> PatientRecord {
        PatientRecord {
            v: 1,
            uuid: uuid.into(),
            gender: "F".into(),
            birthdate: None,
            birthdate_estimated: false,
            dead,
            death_date: None,
            cause_of_death: None,
            names: vec![NameRecord {
                uuid: format!("{uuid}-n"),
                given_name: Some(given.into()),
                middle_name: None,
                family_name: Some(family.into()),
                family_name2: None,
                prefix: None,
                degree: None,
                preferred: true,
            }],
            identifiers: vec![IdentifierRecord {
                uuid: format!("{uuid}-i"),
                identifier: id.into(),
                identifier_type: "t".into(),
                location: None,
                preferred: true,
            }],
            addresses: vec![],
            attributes: vec![],
            voided: false,
            date_created: String::new(),
            creator: String::new(),
        }
    }

    fn uuids(v: Vec<Arc<PatientRecord>>) -> Vec<String> {
        v.into_iter().map(|p| p.uuid.clone()).collect()
    }

    #[test]
    fn word_prefixes_ignore_case_and_accents() {
        let idx = SearchIndex::build(vec![
            patient("a", "Hélène", "Mbuyi", "100A", false),
            patient("b", "Jean-Pierre", "Kabila", "200B", false),
            patient("c", "Helena", "Tshisekedi", "300C", true),
        ]);
        assert_eq!(uuids(idx.search("helene", false, 2)), ["a"]);
        assert_eq!(uuids(idx.search("HEL", false, 2)), ["a"]);
        assert_eq!(uuids(idx.search("hel", true, 2)), ["a", "c"]);
        assert_eq!(uuids(idx.search("pierre kab", false, 2)), ["b"]);
        assert_eq!(
            uuids(idx.search("mbuyi jean", false, 2)),
            Vec::<String>::new()
        );
        assert_eq!(uuids(idx.search("200b", false, 2)), ["b"]);
        assert_eq!(uuids(idx.search("200", false, 2)), Vec::<String>::new());
        assert_eq!(uuids(idx.search("h", false, 2)), Vec::<String>::new());
    }

    #[test]
    fn upsert_replaces_tokens() {
        let mut idx = SearchIndex::build(vec![patient("a", "Marie", "Lukusa", "1", false)]);
        idx.upsert(patient("a", "Anne", "Lukusa", "1", false));
        assert!(idx.search("marie", false, 2).is_empty());
        assert_eq!(uuids(idx.search("anne", false, 2)), ["a"]);
        assert_eq!(idx.len(), 1);
    }
}
