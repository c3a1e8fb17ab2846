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
    pub fn search(&self, q: &str, include_dead: bool, min_chars: usize) -> Vec<&PatientRecord> {
        let q = q.trim();
        if q.chars().count() < min_chars.max(1) {
            return Vec::new();
        }
        let mut hits: Vec<u32> = self
            .by_identifier
            .get(&q.to_lowercase())
            .cloned()
            .unwrap_or_default();
        let folded = fold(q);
        let mut postings: Vec<TermPostings> = folded
            .split_whitespace()
            .map(|t| self.postings(t))
            .collect();
        // The rarest word drives; each of its slots is tested in the other words' bitmaps.
        postings.sort_by_key(|p| p.total);
        if let Some((driver, others)) = postings.split_first() {
            let others: Vec<SlotSet> = others
                .iter()
                .map(|t| SlotSet::of(t, self.slots.len()))
                .collect();
            for slot in driver.slots() {
                if others.iter().all(|set| set.contains(slot)) {
                    hits.push(slot);
                }
            }
        }
        hits.sort_unstable();
        hits.dedup();
        hits.into_iter()
            .map(|s| &*self.slots[s as usize])
            .filter(|p| !p.voided && (include_dead || !p.dead))
            .collect()
    }

    /// The posting lists of every token that starts with `term`.
    fn postings(&self, term: &str) -> TermPostings<'_> {
        let mut lists = Vec::new();
        let mut total = 0;
        for (token, slots) in self
            .by_token
            .range::<str, _>((std::ops::Bound::Included(term), std::ops::Bound::Unbounded))
        {
            if !token.starts_with(term) {
                break;
            }
            total += slots.len();
            lists.push(slots.as_slice());
        }
        TermPostings { lists, total }
    }
}

/// The slot lists that match one query word.
struct TermPostings<'a> {
    lists: Vec<&'a [u32]>,
    total: usize,
}

impl TermPostings<'_> {
    /// Every slot, possibly more than once (callers sort and deduplicate).
    fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.lists.iter().flat_map(|l| l.iter().copied())
    }
}

/// A set of slots as a bitmap: filled in one pass over a word's lists, then each lookup
/// is one bit test, where binary searches would chase cache misses.
struct SlotSet(Vec<u64>);

impl SlotSet {
    fn of(term: &TermPostings, slot_count: usize) -> SlotSet {
        let mut bits = vec![0u64; slot_count.div_ceil(64)];
        for slot in term.slots() {
            bits[slot as usize / 64] |= 1 << (slot % 64);
        }
        SlotSet(bits)
    }

    fn contains(&self, slot: u32) -> bool {
        self.0
            .get(slot as usize / 64)
            .is_some_and(|w| w & (1 << (slot % 64)) != 0)
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

    fn uuids(v: Vec<&PatientRecord>) -> Vec<String> {
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

    /// What `search` means, written as a scan over every patient.
    fn naive(patients: &[PatientRecord], q: &str, include_dead: bool) -> Vec<String> {
        let terms: Vec<String> = fold(q).split_whitespace().map(str::to_string).collect();
        patients
            .iter()
            .filter(|p| !p.voided && (include_dead || !p.dead))
            .filter(|p| {
                let toks: Vec<String> = p
                    .names
                    .iter()
                    .flat_map(|n| [&n.given_name, &n.family_name])
                    .flatten()
                    .flat_map(|s| tokens(s))
                    .collect();
                let by_name = !terms.is_empty()
                    && terms
                        .iter()
                        .all(|t| toks.iter().any(|x| x.starts_with(t.as_str())));
                let by_id = p
                    .identifiers
                    .iter()
                    .any(|i| i.identifier.to_lowercase() == q.trim().to_lowercase());
                by_name || by_id
            })
            .map(|p| p.uuid.clone())
            .collect()
    }

    const GIVEN: &[&str] = &["Marie", "Mariam", "Jean-Marc", "Hélène", "Marc", "Ma"];
    const FAMILY: &[&str] = &["Mbuyi", "Mbala", "Kabila", "Ma'an", "Mukendi"];

    proptest::proptest! {
        #[test]
        fn indexed_search_matches_a_scan(
            people in proptest::collection::vec((0..6usize, 0..5usize, proptest::bool::ANY), 1..60),
            renames in proptest::collection::vec((0..60usize, 0..6usize), 0..20),
            q in "(ma|m|mar|marc|hel|mb|mbuyi|jean|an|k)( (ma|mb|marie|ka|m))?",
        ) {
            let mut list: Vec<PatientRecord> = people
                .iter()
                .enumerate()
                .map(|(i, &(g, f, dead))| patient(&format!("p{i:03}"), GIVEN[g], FAMILY[f], &format!("{i}X"), dead))
                .collect();
            let mut idx = SearchIndex::build(list.clone());
            for &(who, g) in &renames {
                let who = who % list.len();
                let family = list[who].names[0].family_name.clone().unwrap();
                let renamed = patient(&list[who].uuid, GIVEN[g], &family, &format!("{who}X"), list[who].dead);
                idx.upsert(renamed.clone());
                list[who] = renamed;
            }
            for include_dead in [false, true] {
                proptest::prop_assert_eq!(uuids(idx.search(&q, include_dead, 1)), naive(&list, &q, include_dead));
            }
        }
    }
}
