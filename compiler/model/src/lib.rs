//! The sealed bundle: the data model shared by the compiler (which writes it) and the
//! runtime (which embeds and reads it).
//!
//! This crate does no IO and knows nothing about CSV, JSON, XML, zip, HTTP or redb.
//! It owns the only `encode` / `decode` functions for bundle bytes (see `codec`), so the
//! format version lives in exactly one place. See `docs/bundle-format.md`.

mod codec;
mod entities;
pub mod ranges;
pub mod reports;

pub use codec::{
    DecodeError, FORMAT_VERSION, MAGIC, decode, decode_header, encode, encode_to, hex,
};
pub use entities::*;
pub use ranges::{ConceptReferenceRange, Limits};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The OpenMRS platform version whose behaviour the runtime reproduces.
pub const PLATFORM_VERSION: &str = "2.7.0";

/// The OpenMRS modules the runtime stands in for (module id, name, version whose
/// behaviour it reproduces). The runtime lists them at `module`; the compiler checks a
/// content package's `omod.<id>` requirements against them.
pub const PROVIDED_MODULES: &[(&str, &str, &str)] = &[
    ("webservices.rest", "Rest Web Services", "2.44.0"),
    ("fhir2", "FHIR2", "2.2.0"),
    ("idgen", "ID Generation", "4.14.0"),
    // 3.x: the inpatient admission and request searches are the 3.x module's; and the O3
    // app shell keeps one version range per back-end module for its feature flags (the
    // dispensing app's `>=3.3.0` replaces the chart's `>=2.0.0`), so an older version here
    // would leave the `emrapi-module` flag off for every app.
    ("emrapi", "EMR API", "3.3.0"),
    ("metadatamapping", "Metadata Mapping", "1.6.0"),
    ("addresshierarchy", "Address Hierarchy", "2.19.0"),
    ("queue", "Queue", "2.4.0"),
    ("initializer", "Initializer", "2.9.0"),
    // The ward app turns its beds on when this is listed within `>=6.0.0 <8.0.0`.
    ("bedmanagement", "Bed Management", "7.2.0"),
    // Listed together, they switch on the order basket's stock indicator (its
    // `InventoryItem` search, answered from this server's own stock).
    ("stockmanagement", "Stock Management", "2.0.0"),
    ("fhirproxy", "FHIR Proxy", "1.0.0"),
];

/// Which content a bundle was compiled from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BuildType {
    /// The base package alone.
    Distro,
    /// The base package with one site's overrides.
    Site,
}

impl BuildType {
    pub fn as_str(self) -> &'static str {
        match self {
            BuildType::Distro => "distro",
            BuildType::Site => "site",
        }
    }
}

/// What a reader checks before trusting the rest of the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub format_version: u16,
    /// Version of the compiler that wrote the bundle.
    pub compiler_version: String,
    pub build_type: BuildType,
    /// The site's name for a site build.
    pub site: Option<String>,
    /// Hex SHA-256 over the selected input files (relative path and bytes, sorted) and the
    /// build selection: identical content gives an identical hash.
    pub content_hash: String,
    /// Hex SHA-256 of the encoded body, checked on decode.
    pub body_sha256: String,
    /// The content packages laid down, first to last: dependencies in dependency order,
    /// then the base package, then the site.
    pub layers: Vec<PackageLayer>,
}

/// One content package of a build, as the header records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageLayer {
    /// `dependency`, `base` or `site`.
    pub role: String,
    pub name: String,
    /// As its `content.properties` declares it, when it does.
    pub version: Option<String>,
}

/// Everything the runtime serves. Every collection is sorted (by uuid, or by key) so the
/// encoding is deterministic.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Content {
    pub global_properties: Vec<GlobalProperty>,
    pub locales: Locales,
    pub concept_sources: Vec<ConceptSource>,
    pub fhir_concept_sources: Vec<FhirConceptSource>,
    pub concept_classes: Vec<ConceptClass>,
    pub concept_datatypes: Vec<ConceptDatatype>,
    pub concept_map_types: Vec<NamedMetadata>,
    pub concepts: Vec<Concept>,
    /// Ranges of numeric concepts by patient (`conceptreferencerange/`), sorted by
    /// concept then uuid.
    pub concept_reference_ranges: Vec<ConceptReferenceRange>,
    pub location_tags: Vec<NamedMetadata>,
    pub locations: Vec<Location>,
    pub privileges: Vec<Privilege>,
    pub roles: Vec<Role>,
    pub patient_identifier_types: Vec<PatientIdentifierType>,
    pub identifier_sources: Vec<IdentifierSource>,
    pub autogeneration_options: Vec<AutogenerationOption>,
    pub visit_types: Vec<NamedMetadata>,
    pub encounter_types: Vec<EncounterType>,
    pub encounter_roles: Vec<NamedMetadata>,
    pub relationship_types: Vec<RelationshipType>,
    pub person_attribute_types: Vec<PersonAttributeType>,
    pub attribute_types: Vec<AttributeType>,
    pub programs: Vec<Program>,
    pub program_workflows: Vec<ProgramWorkflow>,
    pub program_workflow_states: Vec<ProgramWorkflowState>,
    pub drugs: Vec<Drug>,
    pub order_frequencies: Vec<OrderFrequency>,
    pub order_types: Vec<OrderType>,
    pub care_settings: Vec<CareSetting>,
    pub payment_modes: Vec<PaymentMode>,
    pub cash_points: Vec<CashPoint>,
    pub billable_services: Vec<BillableService>,
    pub dispositions: Vec<Disposition>,
    /// Metadata term mappings, sorted by source and code.
    pub metadata_term_mappings: Vec<MetadataTermMapping>,
    /// Metadata sets with their members, by uuid.
    pub metadata_sets: Vec<MetadataSet>,
    /// Report definitions (`reports/`), by uuid.
    pub reports: Vec<reports::ReportDefinition>,
    /// Patient flags with their priorities and tags (`flags/`).
    pub patient_flags: reports::PatientFlags,
    pub queues: Vec<Queue>,
    pub appointment_specialities: Vec<AppointmentSpeciality>,
    pub appointment_services: Vec<AppointmentService>,
    pub appointment_service_types: Vec<AppointmentServiceType>,
    pub forms: Vec<Form>,
    pub form_translations: Vec<FormTranslation>,
    pub address_template: Option<AddressTemplate>,
    pub address_hierarchy: Vec<AddressHierarchyEntry>,
    /// locale → (code → text).
    pub messages: BTreeMap<String, BTreeMap<String, String>>,
    pub ocl_archives: Vec<OclArchive>,
    /// Files of domains the compiler does not interpret, carried verbatim.
    pub opaque_files: Vec<OpaqueFile>,
    /// The merged and validated front-end configuration, as JSON text.
    pub frontend_config: String,
    pub logo_png: Vec<u8>,
    pub indexes: Indexes,
}

/// Lookup tables precomputed at build time so the runtime answers without scanning.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Indexes {
    /// `SOURCE:CODE` in upper case (source name or HL7 code) → index into `concepts`.
    pub concept_by_mapping: BTreeMap<String, u32>,
    /// Lower-cased fully specified name (any locale) → indexes into `concepts`.
    pub concept_by_name: BTreeMap<String, Vec<u32>>,
}

/// A compiled bundle: header plus content.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    pub header: Header,
    pub content: Content,
}

impl Content {
    /// Binary search by uuid in a collection sorted by uuid.
    pub fn concept(&self, uuid: &str) -> Option<&Concept> {
        find_by_uuid(&self.concepts, uuid, |c| &c.uuid)
    }

    /// The content's ranges of a numeric concept by patient (none for most concepts).
    pub fn reference_ranges(&self, concept: &str) -> &[ConceptReferenceRange] {
        let r = &self.concept_reference_ranges;
        let start = r.partition_point(|x| x.concept.as_str() < concept);
        let end = start + r[start..].partition_point(|x| x.concept == concept);
        &r[start..end]
    }

    /// Resolves `uuid`, or `SOURCE:CODE`, to a concept.
    pub fn concept_by_reference(&self, reference: &str) -> Option<&Concept> {
        if let Some(c) = self.concept(reference) {
            return Some(c);
        }
        let (source, code) = reference.split_once(':')?;
        let key = mapping_key(source, code);
        self.indexes
            .concept_by_mapping
            .get(&key)
            .and_then(|&i| self.concepts.get(i as usize))
    }

    /// The metadata uuid a term mapping names (`source`, `code`), if the content maps it.
    pub fn term_mapping(&self, source: &str, code: &str) -> Option<&MetadataTermMapping> {
        self.metadata_term_mappings
            .binary_search_by(|m| (m.source.as_str(), m.code.as_str()).cmp(&(source, code)))
            .ok()
            .map(|i| &self.metadata_term_mappings[i])
    }

    pub fn global_property(&self, name: &str) -> Option<&GlobalProperty> {
        self.global_properties
            .binary_search_by(|gp| gp.property.as_str().cmp(name))
            .ok()
            .map(|i| &self.global_properties[i])
    }

    /// Counts per entity type, for `compiler inspect` and the runtime's start-up line.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("global_properties", self.global_properties.len()),
            ("concept_sources", self.concept_sources.len()),
            ("fhir_concept_sources", self.fhir_concept_sources.len()),
            ("metadata_term_mappings", self.metadata_term_mappings.len()),
            ("metadata_sets", self.metadata_sets.len()),
            ("concept_classes", self.concept_classes.len()),
            ("concept_datatypes", self.concept_datatypes.len()),
            ("concept_map_types", self.concept_map_types.len()),
            ("concepts", self.concepts.len()),
            (
                "concept_reference_ranges",
                self.concept_reference_ranges.len(),
            ),
            ("location_tags", self.location_tags.len()),
            ("locations", self.locations.len()),
            ("privileges", self.privileges.len()),
            ("roles", self.roles.len()),
            (
                "patient_identifier_types",
                self.patient_identifier_types.len(),
            ),
            ("identifier_sources", self.identifier_sources.len()),
            ("autogeneration_options", self.autogeneration_options.len()),
            ("visit_types", self.visit_types.len()),
            ("encounter_types", self.encounter_types.len()),
            ("encounter_roles", self.encounter_roles.len()),
            ("relationship_types", self.relationship_types.len()),
            ("person_attribute_types", self.person_attribute_types.len()),
            ("attribute_types", self.attribute_types.len()),
            ("programs", self.programs.len()),
            ("program_workflows", self.program_workflows.len()),
            (
                "program_workflow_states",
                self.program_workflow_states.len(),
            ),
            ("drugs", self.drugs.len()),
            ("order_frequencies", self.order_frequencies.len()),
            ("order_types", self.order_types.len()),
            ("care_settings", self.care_settings.len()),
            ("payment_modes", self.payment_modes.len()),
            ("cash_points", self.cash_points.len()),
            ("billable_services", self.billable_services.len()),
            ("dispositions", self.dispositions.len()),
            ("reports", self.reports.len()),
            ("patient_flags", self.patient_flags.flags.len()),
            ("queues", self.queues.len()),
            ("forms", self.forms.len()),
            ("form_translations", self.form_translations.len()),
            ("address_hierarchy_entries", self.address_hierarchy.len()),
            (
                "messages",
                self.messages.values().map(BTreeMap::len).sum::<usize>(),
            ),
            ("ocl_archives", self.ocl_archives.len()),
            ("opaque_files", self.opaque_files.len()),
        ]
    }
}

/// The key under which `Indexes::concept_by_mapping` stores a mapping.
pub fn mapping_key(source: &str, code: &str) -> String {
    format!(
        "{}:{}",
        source.trim().to_uppercase(),
        code.trim().to_uppercase()
    )
}

/// Binary search in a slice sorted by the key `key` returns.
pub fn find_by_uuid<'a, T>(
    items: &'a [T],
    uuid: &str,
    key: impl Fn(&T) -> &String,
) -> Option<&'a T> {
    items
        .binary_search_by(|item| key(item).as_str().cmp(uuid))
        .ok()
        .map(|i| &items[i])
}
