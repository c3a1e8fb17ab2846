//! The in-memory patient search index: name tokens for word-prefix search (case- and
//! accent-insensitive: `helene` finds Hélène) and identifiers for exact match. It holds no
//! patient records, only what finding them needs (a uuid, tokens, identifiers and whether
//! the patient is living, dead or voided per slot): the records stay in redb and only a
//! page's are read. It is loaded in the background after start (`app/start.rs`,
//! `spawn_index_load`), so start-up does not grow with the number of patients, from the
//! store's per-patient search projections (`projection`), not the records; and updated on
//! every patient write before the write is answered.

use crate::store::projection::{Searchable, decode_searchable};
use crate::store::{PatientRecord, Store, StoreResult};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use unicode_normalization::UnicodeNormalization;

/// Lower case without accents (NFD, combining marks removed).
/// Whether `text` begins, or has a word that begins, with `term`, accents and case aside
/// (FHIR's string search on a name or an address).
pub fn starts_a_word(text: &str, term: &str) -> bool {
    let (text, term) = (fold(text), fold(term));
    text.starts_with(&term) || text.split_whitespace().any(|w| w.starts_with(&term))
}

pub fn fold(s: &str) -> String {
    s.nfd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Searchable words of a name: the folded word, with `field` (which part of the name it is
/// a whole word of), and its parts split on `-` and `'`, which are no field's whole word.
fn tokens(name: &str, field: u8) -> Vec<(String, u8)> {
    let mut out = Vec::new();
    for word in fold(name).split_whitespace() {
        out.push((word.to_string(), field));
        for part in word
            .split(['-', '\'', '’'])
            .filter(|p| !p.is_empty() && *p != word)
        {
            out.push((part.to_string(), 0));
        }
    }
    out
}

/// The parts of a name a FHIR name parameter searches, as bits of a token's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameField {
    /// `name`: any part.
    Any,
    /// `given`: the given or middle name.
    Given,
    /// `family`: either family name.
    Family,
}

const GIVEN_WORD: u8 = 1;
const MIDDLE_WORD: u8 = 2;
const FAMILY_WORD: u8 = 4;
const FAMILY2_WORD: u8 = 8;

impl NameField {
    fn bits(self) -> u8 {
        match self {
            NameField::Any => GIVEN_WORD | MIDDLE_WORD | FAMILY_WORD | FAMILY2_WORD,
            NameField::Given => GIVEN_WORD | MIDDLE_WORD,
            NameField::Family => FAMILY_WORD | FAMILY2_WORD,
        }
    }
}

/// A token is dense, and keeps a bitmap of its slots next to its list, when at least one
/// slot in this many holds it: the bitmap then costs at most twice the list's memory, and
/// spares each search that needs it from building one.
const DENSE_RATIO: usize = 64;

pub struct SearchIndex {
    /// Each slot's patient uuid, in creation order.
    slots: Vec<Box<str>>,
    by_uuid: HashMap<Box<str>, u32>,
    by_token: BTreeMap<Box<str>, Postings>,
    dense_ratio: usize,
    /// Each slot's tokens and lower-cased identifiers, to unlink them when it changes.
    slot_tokens: Vec<Box<[Box<str>]>>,
    /// Beside each slot's token, the parts of a name it is a whole word of (bits), for
    /// FHIR's `given` and `family`, which search one part.
    slot_token_fields: Vec<Box<[u8]>>,
    slot_identifiers: Vec<Box<[Box<str>]>>,
    /// Each slot's visibility, so candidates are filtered without reading their records.
    slot_visibility: Vec<Visibility>,
    by_identifier: HashMap<Box<str>, Vec<u32>>,
    /// Why loading the index from the store failed, if it did: searches then answer an
    /// error rather than an empty list.
    failure: Option<String>,
}

impl Default for SearchIndex {
    fn default() -> Self {
        SearchIndex::with_dense_ratio(DENSE_RATIO)
    }
}

impl SearchIndex {
    /// Reads every patient's search projection from the store.
    pub fn load(store: &Store) -> StoreResult<SearchIndex> {
        let mut index = SearchIndex::default();
        store.scan_patient_search(|bytes| {
            index.upsert_searchable(&decode_searchable(bytes)?);
            Ok(())
        })?;
        Ok(index)
    }

    /// An empty index with another density threshold (tests use it to reach both paths).
    fn with_dense_ratio(dense_ratio: usize) -> SearchIndex {
        SearchIndex {
            slots: Vec::new(),
            by_uuid: HashMap::new(),
            by_token: BTreeMap::new(),
            dense_ratio,
            slot_tokens: Vec::new(),
            slot_token_fields: Vec::new(),
            slot_identifiers: Vec::new(),
            slot_visibility: Vec::new(),
            by_identifier: HashMap::new(),
            failure: None,
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Why the index could not be loaded, if it could not.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Records why loading failed.
    pub fn fail(&mut self, why: String) {
        self.failure = Some(why);
    }

    /// Forgets a purged patient: no search finds it again. Its slot stays, empty of
    /// tokens, so other slots keep their numbers.
    pub fn remove(&mut self, uuid: &str) {
        if let Some(slot) = self.by_uuid.remove(uuid) {
            self.unlink(slot);
            self.slot_visibility[slot as usize] = Visibility::Voided;
        }
    }

    /// Adds a patient, or replaces the one with the same uuid.
    pub fn upsert(&mut self, p: &PatientRecord) {
        self.upsert_searchable(&Searchable::from(p));
    }

    fn upsert_searchable(&mut self, p: &Searchable) {
        if let Some(&slot) = self.by_uuid.get(&*p.uuid) {
            self.unlink(slot);
            self.link(slot, p);
            self.slot_visibility[slot as usize] = Visibility::of(p);
            return;
        }
        let slot = self.slots.len() as u32;
        let uuid: Box<str> = p.uuid.as_ref().into();
        self.by_uuid.insert(uuid.clone(), slot);
        self.slots.push(uuid);
        self.slot_tokens.push(Box::default());
        self.slot_token_fields.push(Box::default());
        self.slot_identifiers.push(Box::default());
        self.slot_visibility.push(Visibility::of(p));
        // As the index grows, tokens that were dense may no longer be: look at every token
        // each time the size doubles.
        if self.slots.len().is_power_of_two() {
            let (count, ratio) = (self.slots.len(), self.dense_ratio);
            for postings in self.by_token.values_mut() {
                postings.rebalance(count, ratio);
            }
        }
        self.link(slot, p);
    }

    fn link(&mut self, slot: u32, p: &Searchable) {
        let mut toks: Vec<(String, u8)> = p
            .names
            .iter()
            .flat_map(|n| {
                [
                    (&n.given_name, GIVEN_WORD),
                    (&n.middle_name, MIDDLE_WORD),
                    (&n.family_name, FAMILY_WORD),
                    (&n.family_name2, FAMILY2_WORD),
                ]
            })
            .filter_map(|(text, field)| text.as_ref().map(|t| (t, field)))
            .flat_map(|(text, field)| tokens(text, field))
            .collect();
        toks.sort();
        // One entry per token, with every part of a name it is a whole word of.
        toks.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 |= later.1;
            }
            same
        });
        let (count, ratio) = (self.slots.len(), self.dense_ratio);
        let fields: Box<[u8]> = toks.iter().map(|(_, f)| *f).collect();
        let toks: Box<[Box<str>]> = toks.into_iter().map(|(t, _)| t.into_boxed_str()).collect();
        for t in &toks {
            let postings = match self.by_token.get_mut(t) {
                Some(postings) => postings,
                None => self.by_token.entry(t.clone()).or_default(),
            };
            postings.add(slot);
            postings.rebalance(count, ratio);
        }
        self.slot_tokens[slot as usize] = toks;
        self.slot_token_fields[slot as usize] = fields;
        let ids: Box<[Box<str>]> = p
            .identifiers
            .iter()
            .map(|i| i.identifier.to_lowercase().into_boxed_str())
            .collect();
        for id in &ids {
            self.by_identifier.entry(id.clone()).or_default().push(slot);
        }
        self.slot_identifiers[slot as usize] = ids;
    }

    fn unlink(&mut self, slot: u32) {
        let (count, ratio) = (self.slots.len(), self.dense_ratio);
        self.slot_token_fields[slot as usize] = Box::default();
        for t in std::mem::take(&mut self.slot_tokens[slot as usize]) {
            if let Some(postings) = self.by_token.get_mut(&t) {
                postings.remove(slot);
                postings.rebalance(count, ratio);
                if postings.slots.is_empty() {
                    self.by_token.remove(&t);
                }
            }
        }
        for id in std::mem::take(&mut self.slot_identifiers[slot as usize]) {
            if let Some(list) = self.by_identifier.get_mut(&id) {
                list.retain(|&s| s != slot);
                if list.is_empty() {
                    self.by_identifier.remove(&id);
                }
            }
        }
    }

    /// The uuids of the patients matching `q`: every word of it starts a word of a name,
    /// or `q` equals an identifier. Voided patients never match; dead ones only with
    /// `include_dead`. Results come in creation order.
    pub fn search(&self, q: &str, include_dead: bool, min_chars: usize) -> Vec<&str> {
        let q = q.trim();
        if q.chars().count() < min_chars.max(1) {
            return Vec::new();
        }
        let mut hits: Vec<u32> = self
            .by_identifier
            .get(q.to_lowercase().as_str())
            .cloned()
            .unwrap_or_default();
        hits.append(&mut self.slots_with_words(&fold(q)));
        hits.sort_unstable();
        hits.dedup();
        self.visible(hits, include_dead)
    }

    /// FHIR's name search: the patients, dead or living but not voided, in creation order
    /// with whether each is dead, for whom each term starts a word of the part of a name
    /// its field names (accents and case aside; each term may be met by another of her
    /// names). `None` when a term is more than one word, which only the records can tell
    /// (the index keeps words, not whole names).
    pub fn by_name_fields(&self, terms: &[(NameField, &str)]) -> Option<Vec<(&str, bool)>> {
        let folded: Vec<(u8, String)> = terms
            .iter()
            .map(|(field, term)| (field.bits(), fold(term.trim())))
            .collect();
        if folded
            .iter()
            .any(|(_, t)| t.is_empty() || t.split_whitespace().nth(1).is_some())
        {
            return None;
        }
        let words = folded
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let mut slots = self.slots_with_words(&words);
        slots.sort_unstable();
        slots.dedup();
        let found = slots.into_iter().filter(|&slot| {
            let (tokens, fields) = (
                &self.slot_tokens[slot as usize],
                &self.slot_token_fields[slot as usize],
            );
            folded.iter().all(|(wanted, term)| {
                tokens
                    .iter()
                    .zip(fields.iter())
                    .any(|(token, field)| field & wanted != 0 && token.starts_with(term.as_str()))
            })
        });
        Some(
            found
                .filter_map(|s| match self.slot_visibility[s as usize] {
                    Visibility::Living => Some((&*self.slots[s as usize], false)),
                    Visibility::Dead => Some((&*self.slots[s as usize], true)),
                    Visibility::Voided => None,
                })
                .collect(),
        )
    }

    /// The slots where each word of `folded` starts a token (unsorted, possibly repeated).
    fn slots_with_words(&self, folded: &str) -> Vec<u32> {
        let mut postings: Vec<TermPostings> = folded
            .split_whitespace()
            .map(|t| self.postings(t))
            .collect();
        // The rarest word drives; each of its slots is tested in the other words' bitmaps.
        postings.sort_by_key(|p| p.total);
        if let Some((driver, others)) = postings.split_first() {
            let others: Vec<TermFilter> = others
                .iter()
                .map(|t| TermFilter::of(t, self.slots.len()))
                .collect();
            // One word at a time: a tight loop per bitmap; the first usually leaves few.
            let mut candidates = Vec::with_capacity(driver.total);
            for postings in &driver.lists {
                candidates.extend_from_slice(&postings.slots);
            }
            for filter in &others {
                candidates.retain(|&slot| filter.contains(slot));
            }
            return candidates;
        }
        Vec::new()
    }

    /// The uuids of the patients, dead or living but not voided, holding an identifier
    /// equal to `q` (ignoring case), in creation order.
    pub fn by_identifier(&self, q: &str) -> Vec<&str> {
        let mut hits = self
            .by_identifier
            .get(q.trim().to_lowercase().as_str())
            .cloned()
            .unwrap_or_default();
        hits.sort_unstable();
        hits.dedup();
        self.visible(hits, true)
    }

    fn visible(&self, slots: Vec<u32>, include_dead: bool) -> Vec<&str> {
        slots
            .into_iter()
            .filter(|&s| match self.slot_visibility[s as usize] {
                Visibility::Living => true,
                Visibility::Dead => include_dead,
                Visibility::Voided => false,
            })
            .map(|s| &*self.slots[s as usize])
            .collect()
    }

    /// The posting lists of every token that starts with `term`.
    fn postings(&self, term: &str) -> TermPostings<'_> {
        let mut lists = Vec::new();
        let mut total = 0;
        for (token, postings) in self
            .by_token
            .range::<str, _>((std::ops::Bound::Included(term), std::ops::Bound::Unbounded))
        {
            if !token.starts_with(term) {
                break;
            }
            total += postings.slots.len();
            lists.push(postings);
        }
        TermPostings { lists, total }
    }
}

#[derive(Clone, Copy)]
enum Visibility {
    Living,
    /// Found only when the search includes the dead.
    Dead,
    /// Never found.
    Voided,
}

impl Visibility {
    fn of(p: &Searchable) -> Visibility {
        match (p.voided, p.dead) {
            (true, _) => Visibility::Voided,
            (false, true) => Visibility::Dead,
            (false, false) => Visibility::Living,
        }
    }
}

/// The slots of one token: a list, and for a dense token also a bitmap.
#[derive(Default)]
struct Postings {
    slots: Vec<u32>,
    dense: Option<Vec<u64>>,
}

impl Postings {
    fn add(&mut self, slot: u32) {
        self.slots.push(slot);
        if let Some(bits) = &mut self.dense {
            set_bit(bits, slot);
        }
    }

    fn remove(&mut self, slot: u32) {
        self.slots.retain(|&s| s != slot);
        if let Some(bits) = &mut self.dense
            && let Some(word) = bits.get_mut(slot as usize / 64)
        {
            *word &= !(1 << (slot % 64));
        }
    }

    /// Builds the bitmap when the token becomes dense among `slot_count` slots; drops it
    /// when it falls to half that density (so a token at the edge does not flip-flop).
    fn rebalance(&mut self, slot_count: usize, ratio: usize) {
        let weight = self.slots.len().saturating_mul(ratio);
        match &self.dense {
            None if weight >= slot_count && !self.slots.is_empty() => {
                let mut bits = vec![0u64; slot_count.div_ceil(64)];
                for &slot in &self.slots {
                    set_bit(&mut bits, slot);
                }
                self.dense = Some(bits);
            }
            Some(_) if weight.saturating_mul(2) < slot_count => self.dense = None,
            _ => {}
        }
    }
}

fn set_bit(bits: &mut Vec<u64>, slot: u32) {
    let word = slot as usize / 64;
    if word >= bits.len() {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (slot % 64);
}

fn has_bit(bits: &[u64], slot: u32) -> bool {
    bits.get(slot as usize / 64)
        .is_some_and(|w| w & (1 << (slot % 64)) != 0)
}

/// The tokens that match one query word; together they may hold a slot more than once
/// (callers sort and deduplicate).
struct TermPostings<'a> {
    lists: Vec<&'a Postings>,
    total: usize,
}

/// The slots holding a token that matches one query word, as one bitmap: a dense token's
/// own when it is the only match, else the dense tokens' bitmaps or-ed together and the
/// other tokens' lists set into it. One bit test per candidate, where binary searches
/// would chase cache misses.
struct TermFilter<'a>(Cow<'a, [u64]>);

impl<'a> TermFilter<'a> {
    fn of(term: &TermPostings<'a>, slot_count: usize) -> TermFilter<'a> {
        if let [only] = term.lists.as_slice()
            && let Some(bits) = &only.dense
        {
            return TermFilter(Cow::Borrowed(bits));
        }
        let mut bits = vec![0u64; slot_count.div_ceil(64)];
        for postings in &term.lists {
            match &postings.dense {
                Some(dense) => {
                    for (word, more) in bits.iter_mut().zip(dense) {
                        *word |= more;
                    }
                }
                None => {
                    for &slot in &postings.slots {
                        set_bit(&mut bits, slot);
                    }
                }
            }
        }
        TermFilter(Cow::Owned(bits))
    }

    fn contains(&self, slot: u32) -> bool {
        has_bit(&self.0, slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::IdentifierRecord;

    fn patient(uuid: &str, given: &str, family: &str, id: &str, dead: bool) -> PatientRecord {
        let mut p = PatientRecord::for_test(uuid, given, family);
        p.dead = dead;
        p.identifiers.push(IdentifierRecord {
            uuid: format!("{uuid}-i"),
            identifier: id.into(),
            identifier_type: "t".into(),
            location: None,
            preferred: true,
        });
        p
    }

    fn uuids(v: Vec<&str>) -> Vec<String> {
        v.into_iter().map(str::to_string).collect()
    }

    fn build(patients: Vec<PatientRecord>) -> SearchIndex {
        let mut index = SearchIndex::default();
        for p in &patients {
            index.upsert(p);
        }
        index
    }

    #[test]
    fn word_prefixes_ignore_case_and_accents() {
        let idx = build(vec![
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
        let mut idx = build(vec![patient("a", "Marie", "Lukusa", "1", false)]);
        idx.upsert(&patient("a", "Anne", "Lukusa", "1", false));
        assert!(idx.search("marie", false, 2).is_empty());
        assert_eq!(uuids(idx.search("anne", false, 2)), ["a"]);
        assert_eq!(idx.len(), 1);
    }

    #[test]
    fn loads_from_stored_records_and_forgets_removed_identifiers() {
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        // A quote and a backslash make the stored JSON escape, so the loader cannot borrow.
        let odd = patient("b", "Jean \"Jeannot\"", "Ka\\bila", "200B", true);
        for p in [patient("a", "Hélène", "Mbuyi", "100A", false), odd.clone()] {
            store.insert_patient(&p, &[]).unwrap();
        }
        let mut idx = SearchIndex::load(&store).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(uuids(idx.search("helene mb", false, 2)), ["a"]);
        assert_eq!(uuids(idx.search("jean \"jeannot\"", true, 2)), ["b"]);
        assert_eq!(uuids(idx.search("ka\\b", true, 2)), ["b"]);
        assert!(idx.search("jean", false, 2).is_empty());
        // The dead are found by identifier, the voided and removed are not.
        assert_eq!(uuids(idx.by_identifier(" 200b ")), ["b"]);
        let mut changed = odd;
        changed.identifiers[0].identifier = "201B".into();
        idx.upsert(&changed);
        assert!(idx.by_identifier("200B").is_empty());
        assert_eq!(uuids(idx.by_identifier("201B")), ["b"]);
        idx.remove("b");
        assert!(idx.by_identifier("201B").is_empty());
        assert!(idx.search("jean", true, 2).is_empty());
        assert_eq!(idx.failure(), None);
    }

    #[test]
    fn loads_what_every_patient_write_projected_and_rebuilds_a_missing_projection() {
        let store = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        let (a, b) = (
            patient("a", "Hélène", "Mbuyi", "100A", false),
            patient("b", "Jean", "Kabila", "200B", false),
        );
        store.import_patients(&[(a.clone(), vec![])]).unwrap();
        store.insert_patient(&b, &[]).unwrap();
        let mut renamed = a.clone();
        renamed.names[0].family_name = Some("Tshala".into());
        store.replace_patient(&renamed, &[], &[]).unwrap();
        let mut voided = b.clone();
        voided.voided = true;
        store.update_patient(&voided).unwrap();
        let idx = SearchIndex::load(&store).unwrap();
        assert_eq!(uuids(idx.search("helene tsh", false, 2)), ["a"]);
        assert!(idx.search("mbuyi", false, 2).is_empty());
        assert!(idx.search("jean", true, 2).is_empty(), "voided");
        store.purge_patient("a").unwrap();
        assert!(
            SearchIndex::load(&store)
                .unwrap()
                .search("helene", false, 2)
                .is_empty()
        );

        // A restored backup carries records, not projections: the first load rebuilds
        // them from the records.
        let mut backup = Vec::new();
        store.insert_patient(&a, &[]).unwrap();
        store.snapshot(&mut backup).unwrap();
        let restored = Store::in_memory(&crate::domains::REGISTRY).unwrap();
        restored.restore(std::io::Cursor::new(backup)).unwrap();
        let idx = SearchIndex::load(&restored).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(uuids(idx.search("helene mb", false, 2)), ["a"]);
        assert_eq!(uuids(idx.by_identifier("200b")), Vec::<String>::new());
        assert_eq!(SearchIndex::load(&restored).unwrap().len(), 2);
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
                    .flat_map(|s| tokens(s, 0))
                    .map(|(t, _)| t)
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
            voids in proptest::collection::vec(0..60usize, 0..5),
            q in "(ma|m|mar|marc|hel|mb|mbuyi|jean|an|k)( (ma|mb|marie|ka|m))?",
            // Never dense, sometimes, always: both ways of testing a word are exercised.
            dense_ratio in proptest::sample::select(vec![0usize, 2, 8, 1 << 20]),
        ) {
            let mut list: Vec<PatientRecord> = people
                .iter()
                .enumerate()
                .map(|(i, &(g, f, dead))| patient(&format!("p{i:03}"), GIVEN[g], FAMILY[f], &format!("{i}X"), dead))
                .collect();
            let mut idx = SearchIndex::with_dense_ratio(dense_ratio);
            for p in &list {
                idx.upsert(p);
            }
            for &(who, g) in &renames {
                let who = who % list.len();
                let family = list[who].names[0].family_name.clone().unwrap();
                let renamed = patient(&list[who].uuid, GIVEN[g], &family, &format!("{who}X"), list[who].dead);
                idx.upsert(&renamed);
                list[who] = renamed;
            }
            for &who in &voids {
                let who = who % list.len();
                list[who].voided = true;
                idx.upsert(&list[who]);
            }
            for include_dead in [false, true] {
                proptest::prop_assert_eq!(uuids(idx.search(&q, include_dead, 1)), naive(&list, &q, include_dead));
            }
            // FHIR's name parameters: each term a word-start of the part its field names.
            let mut words = q.split_whitespace();
            let fields = [NameField::Family, NameField::Given, NameField::Any];
            let terms: Vec<(NameField, &str)> = words
                .next()
                .map(|w| (fields[q.len() % 3], w))
                .into_iter()
                .chain(words.map(|w| (fields[(q.len() + 1) % 3], w)))
                .collect();
            let by_fields: Vec<String> = idx
                .by_name_fields(&terms)
                .unwrap()
                .into_iter()
                .map(|(uuid, dead)| {
                    assert_eq!(dead, list.iter().any(|p| p.uuid == uuid && p.dead));
                    uuid.to_string()
                })
                .collect();
            proptest::prop_assert_eq!(by_fields, naive_by_fields(&list, &terms));
        }
    }

    /// What `by_name_fields` means, as FHIR's string search over every patient's names.
    fn naive_by_fields(patients: &[PatientRecord], terms: &[(NameField, &str)]) -> Vec<String> {
        patients
            .iter()
            .filter(|p| !p.voided)
            .filter(|p| {
                terms.iter().all(|(field, term)| {
                    p.names.iter().any(|n| {
                        let parts = match field {
                            NameField::Given => vec![&n.given_name, &n.middle_name],
                            NameField::Family => vec![&n.family_name, &n.family_name2],
                            NameField::Any => vec![
                                &n.given_name,
                                &n.middle_name,
                                &n.family_name,
                                &n.family_name2,
                            ],
                        };
                        parts
                            .into_iter()
                            .flatten()
                            .any(|part| starts_a_word(part, term))
                    })
                })
            })
            .map(|p| p.uuid.clone())
            .collect()
    }

    #[test]
    fn a_term_of_several_words_is_left_to_the_records() {
        let idx = build(vec![patient("a", "Marie Claire", "Mbuyi", "1", false)]);
        assert!(
            idx.by_name_fields(&[(NameField::Given, "marie claire")])
                .is_none()
        );
        // A part after a hyphen is a word for the REST search, not for FHIR's.
        let idx = build(vec![patient("b", "Jean-Marc", "Kabila", "2", true)]);
        assert_eq!(idx.search("marc", true, 1), ["b"]);
        assert_eq!(
            idx.by_name_fields(&[(NameField::Given, "marc")]),
            Some(vec![])
        );
        assert_eq!(
            idx.by_name_fields(&[(NameField::Given, "jean"), (NameField::Family, "kab")]),
            Some(vec![("b", true)])
        );
        assert_eq!(
            idx.by_name_fields(&[(NameField::Family, "jean")]),
            Some(vec![])
        );
    }
}
