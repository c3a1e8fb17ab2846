//! What a domain's rules read: the store, the content (the catalog a request started with)
//! and the system settings. A request's state without HTTP, so that the rules of visits,
//! programmes, queues and the rest can be called, and tested, without a server.

use crate::catalog::Catalog;
use crate::store::Store;
use std::sync::Arc;

pub struct Clinic<'a> {
    pub store: &'a Store,
    pub catalog: Arc<Catalog>,
}

impl<'a> Clinic<'a> {
    pub fn new(store: &'a Store, catalog: Arc<Catalog>) -> Clinic<'a> {
        Clinic { store, catalog }
    }

    /// A setting's value: the API-made one, else the content's, else OpenMRS's built-in
    /// default (`crate::catalog::BUILT_IN`).
    pub fn setting(&self, property: &str) -> Option<String> {
        setting(self.store, &self.catalog, property)
    }

    /// What the EMR API module is configured with under `code` (`emr.admissionEncounterType`):
    /// the content's metadata term mapping of that code in the module's source, as the
    /// module reads it, else the setting of that name (how earlier versions configured it).
    pub fn emr_metadata(&self, code: &str) -> Option<String> {
        emr_metadata(self.store, &self.catalog, code)
    }

    /// A concept of the EMR API module's configuration (`Admission Decision`, `Consult Free
    /// Text Comments`…): the concept mapped to that code in the module's source, as the module
    /// finds it, else the concept the setting `emr.<property>` names (how this distribution's
    /// content first gave them).
    pub fn emr_concept(&self, code: &str, property: &str) -> Option<String> {
        let catalog = &self.catalog;
        catalog
            .concept(&format!("{EMRAPI_SOURCE}:{code}"))
            .or_else(|| catalog.concept(self.setting(&format!("emr.{property}"))?.trim()))
            .map(|c| c.uuid.clone())
    }

    /// The location tag (a uuid) marking the locations visits happen at, a facility: the
    /// setting `emr.supportsVisitsLocationTag`, else the tag named `Visit Location`.
    pub fn visit_location_tag(&self) -> Option<String> {
        self.setting("emr.supportsVisitsLocationTag")
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .or_else(|| {
                self.catalog
                    .content
                    .location_tags
                    .iter()
                    .find(|t| t.name == "Visit Location")
                    .map(|t| t.uuid.clone())
            })
    }

    /// A true/false setting; `default` when unset or unreadable.
    pub fn bool_setting(&self, property: &str, default: bool) -> bool {
        as_bool(self.setting(property), default)
    }

    pub fn int_setting(&self, property: &str, default: u64) -> u64 {
        as_int(self.setting(property), default)
    }
}

/// A setting's value as true or false (any case); `default` when unset or neither.
pub fn as_bool(value: Option<String>, default: bool) -> bool {
    match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        Some("true") => true,
        Some("false") => false,
        _ => default,
    }
}

/// A setting's value as a whole number; `default` when unset or not one.
pub fn as_int(value: Option<String>, default: u64) -> u64 {
    value.and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// The EMR API module's source: of its metadata term mappings, and of the concept
/// mappings that name its disposition concepts.
pub const EMRAPI_SOURCE: &str = "org.openmrs.module.emrapi";

/// `Clinic::emr_metadata`, for callers holding the store and the content.
pub fn emr_metadata(store: &Store, catalog: &Catalog, code: &str) -> Option<String> {
    catalog
        .content
        .term_mapping(EMRAPI_SOURCE, code)
        .map(|m| m.metadata_uuid.clone())
        .or_else(|| setting(store, catalog, code))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The concept a Boolean answer is: core stores a Boolean observation as its coded answer,
/// the concept of the setting `concept.true` or `concept.false` (CIEL's Yes and No by
/// default), by uuid or reference.
pub fn boolean_concept<'c>(
    store: &Store,
    catalog: &'c Catalog,
    value: bool,
) -> Option<&'c model::Concept> {
    let property = if value {
        "concept.true"
    } else {
        "concept.false"
    };
    setting(store, catalog, property).and_then(|v| catalog.concept(v.trim()))
}

/// A setting's value: the API-made one, else the content's, else OpenMRS's built-in
/// default. A store that cannot be read leaves the content's value (logged).
pub fn setting(store: &Store, catalog: &Catalog, property: &str) -> Option<String> {
    let from_content = || {
        catalog
            .global_property(property)
            .map(|g| g.value.clone())
            .or_else(|| crate::catalog::built_in_default(property).map(str::to_string))
    };
    match store.setting_shared(property) {
        Ok(Some(s)) => Some(s.value.clone()),
        Ok(None) => from_content(),
        Err(e) => {
            tracing::error!(%e, property, "cannot read a setting; using the content's value");
            from_content()
        }
    }
}
