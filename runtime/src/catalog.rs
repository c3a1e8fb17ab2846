//! The served content: the decoded bundle plus lookup maps built once at start (or at a
//! reload). Immutable; swapped as a whole by `initializer/reload`.

use model::*;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub struct Catalog {
    pub header: Header,
    pub content: Content,
    location_by_uuid: HashMap<String, usize>,
    location_by_name: HashMap<String, usize>,
    identifier_type_by_uuid: HashMap<String, usize>,
    identifier_type_by_name: HashMap<String, usize>,
    role_by_name: HashMap<String, usize>,
    person_attribute_type_by_uuid: HashMap<String, usize>,
    tag_by_uuid: HashMap<String, usize>,
    /// Privilege names known to the content (lower case → canonical).
    privilege_names: HashMap<String, String>,
    /// Each role's privileges, inherited ones included, in lower case: computed once so
    /// that authorising a request does not rebuild them.
    role_privileges: HashMap<String, Arc<HashSet<String>>>,
    /// Serialized answers to reads of this catalog's content (see `RenderCache`).
    pub rendered: RenderCache,
    /// The dispensing app's `dispenseBehavior.restrictTotalQuantityDispensed`: whether a
    /// prescription's dispenses are capped at its quantity and refills.
    pub dispense_total_restricted: bool,
}

/// Serialized JSON answers for reads whose result depends only on the catalog and the
/// key (the request and the caller's locale and origin). It lives in the catalog so that
/// a reload, which swaps the catalog, starts with an empty cache. Bounded: it is emptied
/// when full rather than tracking recency, which suits a working set far smaller than
/// the bound.
#[derive(Default)]
pub struct RenderCache {
    entries: std::sync::RwLock<HashMap<String, axum::body::Bytes>>,
}

impl RenderCache {
    const MAX_ENTRIES: usize = 20_000;

    pub fn get(&self, key: &str) -> Option<axum::body::Bytes> {
        self.entries.read().ok()?.get(key).cloned()
    }

    pub fn insert(&self, key: String, value: axum::body::Bytes) {
        if let Ok(mut entries) = self.entries.write() {
            if entries.len() >= Self::MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(key, value);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.read().map(|e| e.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A `true` at `path` in the compiled front-end configuration (absent or unreadable: false,
/// the modules' default).
fn front_end_flag(config: &str, path: &[&str]) -> bool {
    let Ok(config) = serde_json::from_str::<serde_json::Value>(config) else {
        return false;
    };
    path.iter()
        .try_fold(&config, |v, key| v.get(key))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

fn index<T>(items: &[T], key: impl Fn(&T) -> String) -> HashMap<String, usize> {
    items.iter().enumerate().map(|(i, x)| (key(x), i)).collect()
}

impl Catalog {
    pub fn new(bundle: Bundle) -> Catalog {
        let c = &bundle.content;
        Catalog {
            location_by_uuid: index(&c.locations, |l| l.uuid.clone()),
            location_by_name: index(&c.locations, |l| l.name.to_lowercase()),
            identifier_type_by_uuid: index(&c.patient_identifier_types, |t| t.uuid.clone()),
            identifier_type_by_name: index(&c.patient_identifier_types, |t| t.name.to_lowercase()),
            role_by_name: index(&c.roles, |r| r.name.clone()),
            person_attribute_type_by_uuid: index(&c.person_attribute_types, |t| t.uuid.clone()),
            tag_by_uuid: index(&c.location_tags, |t| t.uuid.clone()),
            rendered: RenderCache::default(),
            dispense_total_restricted: front_end_flag(
                &c.frontend_config,
                &[
                    "@openmrs/esm-dispensing-app",
                    "dispenseBehavior",
                    "restrictTotalQuantityDispensed",
                ],
            ),
            role_privileges: c
                .roles
                .iter()
                .map(|r| {
                    let set = r.all_privileges.iter().map(|p| p.to_lowercase()).collect();
                    (r.name.clone(), Arc::new(set))
                })
                .collect(),
            privilege_names: c
                .privileges
                .iter()
                .map(|p| (p.name.to_lowercase(), p.name.clone()))
                .collect(),
            header: bundle.header,
            content: bundle.content,
        }
    }

    /// Decodes bundle bytes, refusing an unknown format.
    pub fn from_bytes(bytes: &[u8]) -> Result<Catalog, DecodeError> {
        model::decode(bytes).map(Catalog::new)
    }

    pub fn concept(&self, reference: &str) -> Option<&Concept> {
        self.content.concept_by_reference(reference)
    }

    /// The code system URL FHIR writes a concept source's codes under (by the source's
    /// name), when the content's `fhirconceptsources` give it one.
    pub fn fhir_system(&self, source: &str) -> Option<&str> {
        self.content
            .fhir_concept_sources
            .iter()
            .find(|f| f.source == source)
            .map(|f| f.url.as_str())
    }

    /// The concept source a FHIR coding's `system` names: the source whose URL it is (a
    /// trailing slash aside).
    pub fn source_of_fhir_system(&self, system: &str) -> Option<&str> {
        let system = system.trim().trim_end_matches('/');
        self.content
            .fhir_concept_sources
            .iter()
            .find(|f| f.url.trim_end_matches('/') == system)
            .map(|f| f.source.as_str())
    }

    /// The concept a FHIR coding names: without a system, by its uuid (as this server
    /// writes its own coding); with one, by the mapping in the source that system names.
    pub fn concept_of_coding(&self, system: Option<&str>, code: &str) -> Option<&Concept> {
        match system.map(str::trim).filter(|s| !s.is_empty()) {
            None => self.concept(code.trim()),
            Some(system) => {
                let source = self.source_of_fhir_system(system)?;
                self.concept(&format!("{source}:{}", code.trim()))
            }
        }
    }

    pub fn global_property(&self, name: &str) -> Option<&GlobalProperty> {
        self.content.global_property(name)
    }

    pub fn location(&self, uuid_or_name: &str) -> Option<&Location> {
        self.location_by_uuid
            .get(uuid_or_name)
            .or_else(|| self.location_by_name.get(&uuid_or_name.to_lowercase()))
            .map(|&i| &self.content.locations[i])
    }

    /// `start` or its closest ancestor carrying the tag `tag` (a uuid); none when no
    /// location up the tree has it. Bounded by the number of locations, so a cycle in the
    /// content cannot loop.
    pub fn location_or_ancestor_tagged(&self, start: &str, tag: &str) -> Option<&Location> {
        let mut current = self.location(start)?;
        for _ in 0..=self.content.locations.len() {
            if current.tags.iter().any(|t| t == tag) {
                return Some(current);
            }
            current = self.location(current.parent.as_deref()?)?;
        }
        None
    }

    /// Whether `location` is `root` or lies under it (core's `Location.isInHierarchy`).
    pub fn location_within(&self, location: &str, root: &str) -> bool {
        let mut current = Some(location);
        for _ in 0..=self.content.locations.len() {
            match current {
                Some(l) if l == root => return true,
                Some(l) => current = self.location(l).and_then(|x| x.parent.as_deref()),
                None => return false,
            }
        }
        false
    }

    pub fn location_tag(&self, uuid: &str) -> Option<&NamedMetadata> {
        self.tag_by_uuid
            .get(uuid)
            .map(|&i| &self.content.location_tags[i])
    }

    pub fn identifier_type(&self, uuid_or_name: &str) -> Option<&PatientIdentifierType> {
        self.identifier_type_by_uuid
            .get(uuid_or_name)
            .or_else(|| {
                self.identifier_type_by_name
                    .get(&uuid_or_name.to_lowercase())
            })
            .map(|&i| &self.content.patient_identifier_types[i])
    }

    pub fn person_attribute_type(&self, uuid: &str) -> Option<&PersonAttributeType> {
        self.person_attribute_type_by_uuid
            .get(uuid)
            .map(|&i| &self.content.person_attribute_types[i])
    }

    pub fn role(&self, name: &str) -> Option<&Role> {
        self.role_by_name.get(name).map(|&i| &self.content.roles[i])
    }

    /// A role's privileges, inherited ones included, in lower case.
    pub fn role_privileges(&self, name: &str) -> Option<&Arc<HashSet<String>>> {
        self.role_privileges.get(name)
    }

    pub fn identifier_source(&self, uuid: &str) -> Option<&IdentifierSource> {
        find_by_uuid(&self.content.identifier_sources, uuid, |s| &s.uuid)
    }

    pub fn drug(&self, uuid: &str) -> Option<&Drug> {
        find_by_uuid(&self.content.drugs, uuid, |d| &d.uuid)
    }

    pub fn order_frequency(&self, uuid: &str) -> Option<&OrderFrequency> {
        find_by_uuid(&self.content.order_frequencies, uuid, |f| &f.uuid)
    }

    /// An order type by uuid or name (any case).
    pub fn order_type(&self, uuid_or_name: &str) -> Option<&OrderType> {
        find_by_uuid(&self.content.order_types, uuid_or_name, |t| &t.uuid).or_else(|| {
            self.content
                .order_types
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(uuid_or_name))
        })
    }

    /// A care setting by uuid or name (any case).
    pub fn care_setting(&self, uuid_or_name: &str) -> Option<&CareSetting> {
        find_by_uuid(&self.content.care_settings, uuid_or_name, |c| &c.uuid).or_else(|| {
            self.content
                .care_settings
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(uuid_or_name))
        })
    }

    pub fn has_privilege_named(&self, name: &str) -> bool {
        self.privilege_names.contains_key(&name.to_lowercase())
    }

    /// A message in `locale`, then its language, then English.
    pub fn message(&self, code: &str, locale: &str) -> Option<&str> {
        let language = locale.split(['_', '-']).next().unwrap_or(locale);
        [locale, language, "en"]
            .iter()
            .find_map(|l| self.content.messages.get(*l).and_then(|m| m.get(code)))
            .map(String::as_str)
    }

    pub fn allowed_locales(&self) -> &[String] {
        &self.content.locales.allowed
    }

    pub fn default_locale(&self) -> &str {
        &self.content.locales.default
    }

    /// An integer global property, or `default`.
    pub fn int_setting(&self, name: &str, default: u64) -> u64 {
        self.global_property(name)
            .and_then(|g| g.value.trim().parse().ok())
            .unwrap_or(default)
    }
}

/// Fingerprint of a global property as the bundle defines it (empty when it does not),
/// stored with an API-made value so a changed definition can be detected.
pub fn setting_fingerprint(gp: Option<&GlobalProperty>) -> String {
    use sha2::{Digest, Sha256};
    match gp {
        None => String::new(),
        Some(gp) => {
            let mut h = Sha256::new();
            h.update(gp.property.as_bytes());
            h.update([0]);
            h.update(gp.value.as_bytes());
            h.update([0]);
            h.update(gp.description.as_deref().unwrap_or("").as_bytes());
            model::hex(&h.finalize())
        }
    }
}

/// Settings OpenMRS core and its modules define with a default at start-up, which the O3
/// modules read (`visits.enabled` hides the visit screens when missing): (property, default,
/// description). The content may set any of them; its value then wins.
pub const BUILT_IN: &[(&str, &str, &str)] = &[
    // The FHIR module's own defaults (its config.xml): the reference application's
    // Immunizations encounter type and the module's administering role.
    (
        "fhir2.immunizationsEncounterTypeUuid",
        "29c02aff-9a93-46c9-bf6f-48b552fcb1fa",
        "The encounter type immunizations are recorded in",
    ),
    (
        "fhir2.administeringEncounterRoleUuid",
        "546cce2d-6d58-4097-ba92-206c1a2a0462",
        "The encounter role of the provider who gives a vaccine",
    ),
    (
        "visits.enabled",
        "true",
        "Whether visits are recorded (true or false)",
    ),
    (
        "visits.allowOverlappingVisits",
        "true",
        "Whether a patient may have visits whose times overlap (true or false)",
    ),
    (
        "visits.assignmentHandler",
        "org.openmrs.api.handler.ExistingVisitAssignmentHandler",
        "How an encounter saved without a visit finds one: the patient's visit holding its time",
    ),
    (
        "drugOrder.requireOutpatientQuantity",
        "true",
        "Whether an outpatient drug order needs a quantity and its units (true or false)",
    ),
    (
        "emr.loginThrottle.perAddressAndUsername",
        "5",
        "Failed logins allowed for one user name from one client address within the window, before its logins from there wait (below the account lockout, so one address cannot lock an account)",
    ),
    (
        "emr.loginThrottle.perAddress",
        "30",
        "Failed logins allowed from one client address within the window, whatever the user names (stops password spraying)",
    ),
    (
        "emr.loginThrottle.perUsername",
        "20",
        "Failed logins allowed for one user name within the window, whatever the addresses",
    ),
    (
        "emr.loginThrottle.windowMinutes",
        "5",
        "The login throttle's window, in minutes",
    ),
    (
        "concept.true",
        "1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "The concept that means yes or true",
    ),
    (
        "concept.false",
        "1066AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "The concept that means no or false",
    ),
];

/// A built-in setting's default, when the content does not define it.
pub fn built_in_default(property: &str) -> Option<&'static str> {
    BUILT_IN
        .iter()
        .find(|(p, _, _)| *p == property)
        .map(|(_, value, _)| *value)
}
