//! Entities as they are loaded, before linking: each keeps the layer it came from and the
//! places (row, cells) diagnostics point at. The override rule lives here: the same key
//! twice in one layer is a duplicate; in a later layer it is an override.

use crate::diagnostics::Sink;
use crate::source::Loc;
use crate::vfs::Layer;
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug, Clone)]
pub struct Entry<T> {
    pub value: T,
    pub layer: Layer,
    /// The row (or object) that defined the entity.
    pub loc: Loc,
    /// Field name → the cell it was read from.
    pub cells: HashMap<&'static str, Loc>,
}

impl<T> Entry<T> {
    pub fn new(value: T, layer: Layer, loc: Loc) -> Entry<T> {
        Entry {
            value,
            layer,
            loc,
            cells: HashMap::new(),
        }
    }

    pub fn with_cell(mut self, field: &'static str, loc: Loc) -> Self {
        self.cells.insert(field, loc);
        self
    }

    /// Where field `field` was read, else the row.
    pub fn at(&self, field: &str) -> &Loc {
        self.cells.get(field).unwrap_or(&self.loc)
    }
}

/// Entities of one type keyed by uuid (or by another unique key, e.g. a property name).
#[derive(Debug)]
pub struct Registry<T> {
    pub items: BTreeMap<String, Entry<T>>,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry {
            items: BTreeMap::new(),
        }
    }
}

impl<T> Registry<T> {
    /// Adds an entity. Returns false when it was refused as a duplicate.
    pub fn insert(&mut self, key: String, entry: Entry<T>, sink: &mut Sink) -> bool {
        self.insert_with(key, entry, |_, _| {}, sink)
    }

    /// Like `insert`; on an override `merge(old, new)` may carry values over first.
    pub fn insert_with(
        &mut self,
        key: String,
        mut entry: Entry<T>,
        merge: impl FnOnce(&Entry<T>, &mut Entry<T>),
        sink: &mut Sink,
    ) -> bool {
        if let Some(existing) = self.items.get(&key) {
            if existing.layer == entry.layer {
                sink.duplicate_uuid(&entry.loc, &key, &existing.loc);
                return false;
            }
            if existing.layer > entry.layer {
                // Already overridden by a later package: loading order never decides.
                return false;
            }
            merge(existing, &mut entry);
        }
        self.items.insert(key, entry);
        true
    }

    pub fn get(&self, key: &str) -> Option<&Entry<T>> {
        self.items.get(key)
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.items.values().map(|e| &e.value)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Sorted by key (uuid): the order the bundle stores.
    pub fn into_sorted(self) -> Vec<T> {
        self.items.into_values().map(|e| e.value).collect()
    }
}

/// A name → uuid lookup built over a registry, case-insensitive.
#[derive(Debug, Default)]
pub struct NameIndex {
    by_name: HashMap<String, Vec<String>>,
}

impl NameIndex {
    pub fn build<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> NameIndex {
        let mut by_name: HashMap<String, Vec<String>> = HashMap::new();
        for (name, uuid) in pairs {
            by_name
                .entry(name.trim().to_lowercase())
                .or_default()
                .push(uuid.to_string());
        }
        NameIndex { by_name }
    }

    /// Uuids of entities with this name (case-insensitive).
    pub fn find(&self, name: &str) -> &[String] {
        self.by_name
            .get(&name.trim().to_lowercase())
            .map_or(&[], Vec::as_slice)
    }

    /// Resolves a uuid-or-name reference: an exact key in `uuids` first, then a unique name.
    pub fn resolve<T>(&self, registry: &Registry<T>, reference: &str) -> Option<String> {
        if registry.get(reference).is_some() {
            return Some(reference.to_string());
        }
        match self.find(reference) {
            [one] => Some(one.clone()),
            _ => None,
        }
    }
}

/// Names and uuids of one kind of metadata, for `uuid or name` references.
pub struct Lookup {
    uuids: BTreeSet<String>,
    names: NameIndex,
}

impl Lookup {
    pub fn new<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Lookup {
        let pairs: Vec<_> = pairs.collect();
        Lookup {
            uuids: pairs.iter().map(|(_, u)| u.to_string()).collect(),
            names: NameIndex::build(pairs.into_iter()),
        }
    }

    pub fn find(&self, reference: &str) -> Option<String> {
        if self.uuids.contains(reference) {
            return Some(reference.to_string());
        }
        match self.names.find(reference) {
            [one] => Some(one.clone()),
            _ => None,
        }
    }

    pub fn resolve(
        &self,
        reference: &str,
        kind: &str,
        loc: &Loc,
        sink: &mut Sink,
    ) -> Option<String> {
        let found = self.find(reference);
        if found.is_none() {
            sink.unknown_reference(loc, kind, reference);
        }
        found
    }
}
