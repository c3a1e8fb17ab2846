//! Entity types of the bundle, one per kind of metadata.
//!
//! Field names follow OpenMRS where one exists. Localised display texts are maps from a
//! locale (`fr`, `en`, `en_GB`) to text; `display_in` picks the best one.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Locale → text.
pub type Localized = BTreeMap<String, String>;

/// Picks the text for `locale`, then its language alone, then each fallback in order, then
/// English, then any.
pub fn display_in<'a>(texts: &'a Localized, locale: &str, fallbacks: &[&str]) -> Option<&'a str> {
    let language = locale.split(['_', '-']).next().unwrap_or(locale);
    std::iter::once(locale)
        .chain(std::iter::once(language))
        .chain(fallbacks.iter().copied())
        .chain(std::iter::once("en"))
        .find_map(|l| texts.get(l))
        .or_else(|| texts.values().next())
        .map(String::as_str)
}

/// The text for `locale` or its language alone, without falling back to other languages:
/// metadata displays fall back to the entity's own name instead.
pub fn display_exact<'a>(texts: &'a Localized, locale: &str) -> Option<&'a str> {
    let language = locale.split(['_', '-']).next().unwrap_or(locale);
    texts
        .get(locale)
        .or_else(|| texts.get(language))
        .map(String::as_str)
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Locales {
    /// From `locale.allowed.list`, in the order written.
    pub allowed: Vec<String>,
    /// From `default_locale`.
    pub default: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlobalProperty {
    pub uuid: String,
    pub property: String,
    pub value: String,
    pub description: Option<String>,
}

/// Visit types, encounter roles, location tags, map types: uuid, name, description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedMetadata {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub retired: bool,
    /// `Display:<locale>` columns.
    pub display: Localized,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConceptSource {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub hl7_code: Option<String>,
    pub unique_id: Option<String>,
    pub retired: bool,
}

/// The code system URL under which FHIR writes a concept source's codes (Initializer's
/// `fhirconceptsources`, fhir2's `fhir_concept_source`). A source without one has its
/// mappings left out of FHIR codings, as fhir2 leaves them.
/// A code naming one piece of metadata (Initializer's `metadatatermmappings`, the
/// metadata mapping module's term mappings): the EMR API module reads its configuration
/// this way (source `org.openmrs.module.emrapi`, code `emr.admissionEncounterType`, an
/// encounter type), and the O3 front end the primary identifier type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetadataTermMapping {
    pub uuid: String,
    pub source: String,
    pub code: String,
    /// The Java class of the metadata (`org.openmrs.EncounterType`).
    pub class_name: String,
    /// The metadata's uuid (checked at build time to exist in that class).
    pub metadata_uuid: String,
}

/// A named set of metadata (the metadata mapping module's `MetadataSet`, Initializer's
/// `metadatasets`): the EMR API names its extra patient identifier types by one, through
/// the term mapping `emr.extraPatientIdentifierTypes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetadataSet {
    pub uuid: String,
    pub name: Option<String>,
    pub description: Option<String>,
    /// Its members, by sort weight then uuid.
    pub members: Vec<MetadataSetMember>,
}

/// One member of a metadata set (Initializer's `metadatasetmembers`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetadataSetMember {
    pub uuid: String,
    /// The Java class of the metadata (`org.openmrs.PatientIdentifierType`).
    pub class_name: String,
    /// The metadata's uuid (checked at build time to exist in that class).
    pub metadata_uuid: String,
    pub sort_weight: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FhirConceptSource {
    pub uuid: String,
    /// The concept source's name (resolved at build time).
    pub source: String,
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConceptClass {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConceptDatatype {
    pub uuid: String,
    pub name: String,
    pub hl7_abbreviation: String,
    pub description: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ConceptNameType {
    FullySpecified,
    Short,
    IndexTerm,
    Synonym,
}

impl ConceptNameType {
    /// The OpenMRS REST spelling (`null` for a synonym).
    pub fn rest_name(self) -> Option<&'static str> {
        match self {
            ConceptNameType::FullySpecified => Some("FULLY_SPECIFIED"),
            ConceptNameType::Short => Some("SHORT"),
            ConceptNameType::IndexTerm => Some("INDEX_TERM"),
            ConceptNameType::Synonym => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConceptName {
    pub uuid: String,
    pub name: String,
    pub locale: String,
    pub name_type: ConceptNameType,
    pub locale_preferred: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConceptDescription {
    pub uuid: String,
    pub description: String,
    pub locale: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConceptMapping {
    pub uuid: String,
    /// Map type name, e.g. `SAME-AS`.
    pub map_type: String,
    /// Concept source name as defined by the package.
    pub source: String,
    pub code: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConceptNumeric {
    pub hi_absolute: Option<f64>,
    pub hi_critical: Option<f64>,
    pub hi_normal: Option<f64>,
    pub low_absolute: Option<f64>,
    pub low_critical: Option<f64>,
    pub low_normal: Option<f64>,
    pub units: Option<String>,
    pub allow_decimal: bool,
    pub display_precision: Option<i32>,
}

/// Where a concept's final definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConceptOrigin {
    /// A concepts CSV, with the file path relative to the project root.
    Csv(String),
    /// An OCL archive, with the archive path relative to the project root.
    Ocl(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Concept {
    pub uuid: String,
    pub class: String,
    pub datatype: String,
    pub is_set: bool,
    pub retired: bool,
    pub version: Option<String>,
    pub names: Vec<ConceptName>,
    pub descriptions: Vec<ConceptDescription>,
    pub mappings: Vec<ConceptMapping>,
    /// Answer concept uuids, in order.
    pub answers: Vec<String>,
    /// Set member concept uuids, in order.
    pub set_members: Vec<String>,
    pub numeric: Option<ConceptNumeric>,
    pub complex_handler: Option<String>,
    pub origin: ConceptOrigin,
}

impl Concept {
    /// The fully specified name in `locale`, falling back as `display_in` does; the
    /// locale-preferred name wins over the FSN within one locale.
    pub fn display_name(&self, locale: &str, fallbacks: &[&str]) -> Option<&ConceptName> {
        let language = locale.split(['_', '-']).next().unwrap_or(locale);
        let best_in = |l: &str| {
            let in_locale = || self.names.iter().filter(move |n| n.locale == l);
            in_locale()
                .find(|n| n.locale_preferred)
                .or_else(|| in_locale().find(|n| n.name_type == ConceptNameType::FullySpecified))
        };
        std::iter::once(locale)
            .chain(std::iter::once(language))
            .chain(fallbacks.iter().copied())
            .chain(std::iter::once("en"))
            .find_map(best_in)
            .or_else(|| self.names.first())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Address {
    pub address1: Option<String>,
    pub address2: Option<String>,
    pub address3: Option<String>,
    pub address4: Option<String>,
    pub address5: Option<String>,
    pub address6: Option<String>,
    pub city_village: Option<String>,
    pub county_district: Option<String>,
    pub state_province: Option<String>,
    pub postal_code: Option<String>,
    pub country: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Location {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub parent: Option<String>,
    /// Tag uuids, sorted.
    pub tags: Vec<String>,
    pub address: Address,
    pub retired: bool,
    pub display: Localized,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Privilege {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    /// True for privileges OpenMRS core provides.
    pub core: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Role {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    /// Names of directly inherited roles.
    pub inherited_roles: Vec<String>,
    /// Names of directly granted privileges.
    pub privileges: Vec<String>,
    /// Every privilege granted directly or through inheritance, sorted.
    pub all_privileges: Vec<String>,
    pub core: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LocationBehavior {
    Required,
    NotUsed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UniquenessBehavior {
    Unique,
    NonUnique,
    Location,
}

impl UniquenessBehavior {
    pub fn as_str(self) -> &'static str {
        match self {
            UniquenessBehavior::Unique => "UNIQUE",
            UniquenessBehavior::NonUnique => "NON_UNIQUE",
            UniquenessBehavior::Location => "LOCATION",
        }
    }
}

impl LocationBehavior {
    pub fn as_str(self) -> &'static str {
        match self {
            LocationBehavior::Required => "REQUIRED",
            LocationBehavior::NotUsed => "NOT_USED",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatientIdentifierType {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
    pub format: Option<String>,
    pub format_description: Option<String>,
    /// Java class name of the check-digit validator.
    pub validator: Option<String>,
    pub location_behavior: Option<LocationBehavior>,
    pub uniqueness_behavior: Option<UniquenessBehavior>,
    pub retired: bool,
    pub display: Localized,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum IdentifierSourceKind {
    Sequential {
        prefix: Option<String>,
        suffix: Option<String>,
        first_identifier_base: String,
        base_character_set: String,
        min_length: Option<u32>,
        max_length: Option<u32>,
    },
    Pool {
        pool_source: String,
    },
    Remote {
        url: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentifierSource {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub identifier_type: String,
    pub kind: IdentifierSourceKind,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutogenerationOption {
    pub uuid: String,
    pub identifier_type: String,
    pub source: String,
    pub location: Option<String>,
    pub manual_entry_enabled: bool,
    pub automatic_generation_enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncounterType {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub view_privilege: Option<String>,
    pub edit_privilege: Option<String>,
    pub retired: bool,
    pub display: Localized,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationshipType {
    pub uuid: String,
    pub description: Option<String>,
    pub a_is_to_b: String,
    pub b_is_to_a: String,
    pub weight: i32,
    pub preferred: bool,
    pub retired: bool,
    pub display: Localized,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonAttributeType {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub format: Option<String>,
    pub foreign_key: Option<String>,
    pub searchable: bool,
    pub edit_privilege: Option<String>,
    pub retired: bool,
    pub display: Localized,
}

/// A type of attribute of the `attributetypes/` domain: for visits, locations, providers
/// and the other entities Initializer knows (`entity`, as its "Entity name" column names
/// it). Values are strings, checked against the custom datatype (`datatype`, its class
/// name) and its configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributeType {
    pub uuid: String,
    /// `Visit`, `Location`, `Provider`, `Concept`, `Program`, … (Initializer's names).
    pub entity: String,
    pub name: String,
    pub description: Option<String>,
    pub min_occurs: u32,
    /// `None`: any number.
    pub max_occurs: Option<u32>,
    pub datatype: String,
    pub datatype_config: Option<String>,
    pub handler: Option<String>,
    pub handler_config: Option<String>,
    pub retired: bool,
    pub display: Localized,
}

/// The custom datatypes of OpenMRS core whose values the runtime checks (class names).
pub mod datatypes {
    pub const FREE_TEXT: &str = "org.openmrs.customdatatype.datatype.FreeTextDatatype";
    pub const LONG_FREE_TEXT: &str = "org.openmrs.customdatatype.datatype.LongFreeTextDatatype";
    pub const BOOLEAN: &str = "org.openmrs.customdatatype.datatype.BooleanDatatype";
    pub const DATE: &str = "org.openmrs.customdatatype.datatype.DateDatatype";
    pub const REGEX: &str = "org.openmrs.customdatatype.datatype.RegexValidatedTextDatatype";
    pub const OPTIONS: &str = "org.openmrs.customdatatype.datatype.SpecifiedTextOptionsDatatype";
    pub const CONCEPT: &str = "org.openmrs.customdatatype.datatype.ConceptDatatype";
    pub const LOCATION: &str = "org.openmrs.customdatatype.datatype.LocationDatatype";
    pub const ALL: &[&str] = &[
        FREE_TEXT,
        LONG_FREE_TEXT,
        BOOLEAN,
        DATE,
        REGEX,
        OPTIONS,
        CONCEPT,
        LOCATION,
    ];
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Program {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub concept: String,
    pub outcomes_concept: Option<String>,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramWorkflow {
    pub uuid: String,
    pub program: String,
    pub concept: String,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramWorkflowState {
    pub uuid: String,
    pub workflow: String,
    pub concept: String,
    pub initial: bool,
    pub terminal: bool,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drug {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub strength: Option<String>,
    pub concept: String,
    pub dosage_form: Option<String>,
    pub mappings: Vec<ConceptMapping>,
    pub retired: bool,
}

/// What kind of thing an order asks for (core's `order_type`): drug orders, test orders,
/// and those a package adds (`ordertypes/`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderType {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    /// `org.openmrs.DrugOrder`, `org.openmrs.TestOrder`, `org.openmrs.Order`…
    pub java_class_name: String,
    /// An order type uuid.
    pub parent: Option<String>,
    /// Concept class uuids whose concepts are ordered with this type.
    pub concept_classes: Vec<String>,
    pub retired: bool,
}

/// Where care is given, for orders (core's `care_setting`: Outpatient and Inpatient).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CareSetting {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    /// `OUTPATIENT` or `INPATIENT`.
    pub care_setting_type: String,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderFrequency {
    pub uuid: String,
    pub frequency_per_day: Option<f64>,
    pub concept: String,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaymentModeAttribute {
    pub name: String,
    pub format: Option<String>,
    pub regex: Option<String>,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaymentMode {
    pub uuid: String,
    pub name: String,
    pub attributes: Vec<PaymentModeAttribute>,
    pub retired: bool,
}

/// Where a facility takes payments (`cashpoints/`): a till at a location.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CashPoint {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    /// Location uuid.
    pub location: Option<String>,
    pub retired: bool,
}

/// One price of a billable service under one payment mode (`cashieritemprices/`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServicePrice {
    pub uuid: String,
    pub name: String,
    /// The amount as an exact decimal, written as the content writes it (`1500`, `2.50`);
    /// the compiler has checked it is a non-negative decimal of at most four places.
    pub price: String,
    /// Payment mode uuid.
    pub payment_mode: String,
}

/// What a bill can charge for (`billableservices/`), with its prices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BillableService {
    pub uuid: String,
    pub name: String,
    pub short_name: Option<String>,
    /// Concept uuids.
    pub concept: Option<String>,
    pub service_type: Option<String>,
    /// `Service Status`: Enabled (the default) or Disabled.
    pub enabled: bool,
    pub prices: Vec<ServicePrice>,
    pub retired: bool,
}

/// What a clinician may decide for a patient (`dispositions/`, the EMR API module's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disposition {
    pub uuid: String,
    pub name: String,
    /// The concept as the content writes it (`CIEL:168619`), as the module answers it.
    pub concept_code: String,
    /// The concept's uuid.
    pub concept: String,
    /// ADMIT, TRANSFER or DISCHARGE.
    pub kind: Option<String>,
    pub keeps_visit_open: bool,
}

/// A kind of appointment (`appointmentspecialities/`: "Santé maternelle", …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppointmentSpeciality {
    pub uuid: String,
    pub name: String,
    pub retired: bool,
}

/// What can be booked (`appointmentservicedefinitions/`): its length, its hours of the day,
/// how many at most a day, where, and its colour in the calendar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppointmentService {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub duration_mins: Option<u32>,
    /// `HH:mm`.
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    pub max_load: Option<u32>,
    /// Speciality uuid.
    pub speciality: Option<String>,
    /// Location uuid.
    pub location: Option<String>,
    pub color: Option<String>,
    pub retired: bool,
}

/// A variant of a service with its own length (`appointmentservicetypes/`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppointmentServiceType {
    pub uuid: String,
    pub name: String,
    /// Service uuid.
    pub service: String,
    pub duration_mins: Option<u32>,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    /// Service concept uuid.
    pub service: String,
    pub status_concept_set: Option<String>,
    pub priority_concept_set: Option<String>,
    pub location: String,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Form {
    pub uuid: String,
    pub name: String,
    pub version: String,
    pub description: Option<String>,
    pub published: bool,
    pub retired: bool,
    /// Encounter type uuid, for encounter forms.
    pub encounter_type: Option<String>,
    /// The form's JSON schema, verbatim.
    pub schema_json: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormTranslation {
    pub form: String,
    pub language: String,
    pub form_name_translation: Option<String>,
    pub translations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AddressTemplate {
    /// Field (e.g. `cityVillage`) → label or message code.
    pub name_mappings: BTreeMap<String, String>,
    pub size_mappings: BTreeMap<String, String>,
    /// Each line: the field names on it.
    pub lines: Vec<Vec<String>>,
    pub element_defaults: BTreeMap<String, String>,
    /// The template's own required fields (`layout.address.format`'s `requiredElements`).
    pub required_elements: Vec<String>,
    /// Hierarchy levels, top first (e.g. `country`, `stateProvince`, `countyDistrict`).
    pub hierarchy_levels: Vec<String>,
    /// The levels `addressConfiguration.xml` marks `requiredInHierarchy`: the address
    /// hierarchy module marks those levels required, and leaves the template's
    /// `requiredElements` alone.
    pub hierarchy_required: Vec<String>,
}

/// One node of the address hierarchy: `path` runs from the top level down.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AddressHierarchyEntry {
    pub path: Vec<String>,
    pub user_generated_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OclArchive {
    pub path: String,
    pub content_name: Option<String>,
    /// OCL's version id as the archive's name writes it (`3`, `2024-03-15`, `1.2.0-beta`).
    pub version: Option<String>,
    pub concept_count: u32,
    pub mapping_count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpaqueFile {
    /// Path relative to `openmrs_config/`.
    pub path: String,
    pub bytes: Vec<u8>,
}
