//! One module per content folder (domain): each turns its files into entities in `Loaded`.
//!
//! `load` dispatches the overlaid files by domain in Initializer's load order; CSV files
//! of a domain load in `_order` then path order. Domains the compiler does not interpret
//! are carried as opaque files with one warning each. References between entities are
//! resolved afterwards, in `crate::link`, so row and file order never matter.

pub mod address;
pub mod concepts;
pub mod dispositions;
pub mod flags;
pub mod forms;
pub mod globalproperties;
pub mod identifiers;
pub mod locations;
pub mod messages;
pub mod metadata;
pub mod ocl;
pub mod orders;
pub mod programs;
pub mod reference_ranges;
pub mod reports;
pub mod roles;
pub mod services;

use crate::csvtable::{self, Columns, Row, Table, UuidRule};
use crate::diagnostics::{Code, Sink};
use crate::source::Loc;
use crate::store::{Entry, Registry};
use crate::vfs::{InputFile, Layer, decode};
use model::*;
use std::collections::BTreeMap;

/// Everything loaded from the package, before references are resolved.
#[derive(Default)]
pub struct Loaded {
    /// Keyed by property name.
    pub global_properties: Registry<GlobalProperty>,
    pub concept_sources: Registry<ConceptSource>,
    pub fhir_concept_sources: Registry<FhirConceptSource>,
    pub term_mappings: Registry<metadata::LoadedTermMapping>,
    pub metadata_sets: Registry<metadata::Retirable<model::MetadataSet>>,
    pub metadata_set_members: Registry<metadata::Retirable<metadata::LoadedSetMember>>,
    pub concept_classes: Registry<ConceptClass>,
    pub ocl: ocl::OclLoaded,
    /// Concepts from CSV files (they override OCL concepts with the same uuid).
    pub csv_concepts: Registry<Concept>,
    pub concept_reference_ranges: Registry<model::ConceptReferenceRange>,
    pub location_tags: Registry<NamedMetadata>,
    pub locations: Registry<Location>,
    /// Location uuid → the tags its `Tag|<name>` columns set.
    pub location_column_tags: BTreeMap<String, Vec<String>>,
    /// Every `Tag|<name>` column: the tag and its header cell.
    pub location_tag_columns: Vec<(String, Loc)>,
    pub privileges: Registry<Privilege>,
    pub roles: Registry<Role>,
    pub identifier_types: Registry<PatientIdentifierType>,
    pub identifier_sources: Registry<IdentifierSource>,
    pub autogeneration_options: Registry<AutogenerationOption>,
    pub visit_types: Registry<NamedMetadata>,
    pub encounter_types: Registry<EncounterType>,
    pub encounter_roles: Registry<NamedMetadata>,
    pub relationship_types: Registry<RelationshipType>,
    pub person_attribute_types: Registry<PersonAttributeType>,
    pub attribute_types: Registry<AttributeType>,
    pub programs: Registry<Program>,
    pub program_workflows: Registry<ProgramWorkflow>,
    pub program_workflow_states: Registry<ProgramWorkflowState>,
    pub drugs: Registry<Drug>,
    pub order_frequencies: Registry<OrderFrequency>,
    pub order_types: Registry<OrderType>,
    pub payment_modes: Registry<PaymentMode>,
    pub queues: Registry<Queue>,
    pub services: services::Services,
    pub forms: Registry<forms::LoadedForm>,
    pub form_translations: Vec<Entry<FormTranslation>>,
    pub address_template: Option<Entry<AddressTemplate>>,
    pub address_hierarchy: Vec<AddressHierarchyEntry>,
    pub messages: BTreeMap<String, BTreeMap<String, String>>,
    pub opaque_files: Vec<OpaqueFile>,
    pub dispositions: Vec<dispositions::LoadedDisposition>,
    pub reports: Vec<reports::LoadedReport>,
    /// `flags/*.json`, parsed but not yet read.
    pub flag_files: Vec<reports::LoadedReport>,
}

/// Domains in Initializer's load order (the OpenMRS Initializer module's documented order), with their file type.
const DOMAINS: &[(&str, &str)] = &[
    ("conceptclasses", "csv"),
    ("conceptsources", "csv"),
    ("fhirconceptsources", "csv"),
    ("visittypes", "csv"),
    ("patientidentifiertypes", "csv"),
    ("relationshiptypes", "csv"),
    ("locationtags", "csv"),
    ("privileges", "csv"),
    ("encountertypes", "csv"),
    ("encounterroles", "csv"),
    ("roles", "csv"),
    ("globalproperties", "xml"),
    ("locations", "csv"),
    ("addresshierarchy", "*"),
    ("ocl", "zip"),
    ("concepts", "csv"),
    ("conceptreferencerange", "csv"),
    ("paymentmodes", "csv"),
    ("programs", "csv"),
    ("programworkflows", "csv"),
    ("programworkflowstates", "csv"),
    ("personattributetypes", "csv"),
    ("attributetypes", "csv"),
    ("idgen", "csv"),
    ("autogenerationoptions", "csv"),
    ("ordertypes", "csv"),
    ("drugs", "csv"),
    ("orderfrequencies", "csv"),
    ("queues", "csv"),
    ("ampathforms", "json"),
    ("ampathformstranslations", "json"),
    ("messageproperties", "properties"),
    ("cashpoints", "csv"),
    ("billableservices", "csv"),
    ("cashieritemprices", "csv"),
    ("appointmentspecialities", "csv"),
    ("appointmentservicedefinitions", "csv"),
    ("appointmentservicetypes", "csv"),
    ("dispositions", "json"),
    ("metadatatermmappings", "csv"),
    ("metadatasets", "csv"),
    ("metadatasetmembers", "csv"),
    ("reports", "json"),
    ("flags", "json"),
];

/// Progress reporting for the long part (OCL archives).
pub trait Progress: Sync {
    fn start(&self, total: u64);
    fn advance(&self);
    fn finish(&self);
}

pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: u64) {}
    fn advance(&self) {}
    fn finish(&self) {}
}

pub fn load(files: &[InputFile], progress: &dyn Progress, sink: &mut Sink) -> Loaded {
    let mut loaded = Loaded::default();
    let mut by_domain: BTreeMap<&str, Vec<&InputFile>> = BTreeMap::new();
    for f in files {
        if !f.rel.contains('/') {
            sink.emit(
                Code::StrayFile,
                &Loc::File(f.display.clone()),
                "File outside any domain folder is carried without being read",
            )
            .help = Some("move it into the folder of its domain".into());
            loaded.opaque_files.push(OpaqueFile {
                path: f.rel.clone(),
                bytes: f.bytes.clone(),
            });
            continue;
        }
        by_domain.entry(f.domain()).or_default().push(f);
    }

    for (domain, files) in &by_domain {
        if DOMAINS.iter().any(|(d, _)| d == domain) {
            continue;
        }
        let first = files.first().map(|f| f.display.clone()).unwrap_or_default();
        sink.emit(
            Code::UnknownDomain,
            &Loc::File(first),
            format!(
                "Domain '{domain}' is not interpreted: its {} file{} are carried into the bundle as they are",
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            ),
        )
        .help = Some("nothing in it is validated; check the folder name if it should be".into());
        for f in files {
            loaded.opaque_files.push(OpaqueFile {
                path: f.rel.clone(),
                bytes: f.bytes.clone(),
            });
        }
    }

    for (domain, ext) in DOMAINS {
        let Some(files) = by_domain.get(domain) else {
            continue;
        };
        let (mut wanted, stray): (Vec<&InputFile>, Vec<&InputFile>) = files
            .iter()
            .partition(|f| *ext == "*" || f.extension() == *ext);
        // Packages in the order they are laid down, then by path within each.
        wanted.sort_by(|a, b| (a.layer, &a.rel).cmp(&(b.layer, &b.rel)));
        for f in stray {
            sink.emit(
                Code::StrayFile,
                &Loc::File(f.display.clone()),
                format!("Not a .{ext} file: '{domain}' ignores it"),
            )
            .help = Some(if *domain == "flags" {
                flags::CSV_HELP.to_string()
            } else {
                format!("the {domain} domain reads only .{ext} files")
            });
        }
        if services::DOMAINS.contains(domain) {
            // Checked here, served later: carried into the bundle as they are.
            loaded
                .opaque_files
                .extend(wanted.iter().map(|f| OpaqueFile {
                    path: f.rel.clone(),
                    bytes: f.bytes.clone(),
                }));
        }
        match *domain {
            "ocl" => loaded.ocl = ocl::load(&wanted, progress, sink),
            "addresshierarchy" => address::load_hierarchy(&wanted, &mut loaded, sink),
            "globalproperties" => globalproperties::load(&wanted, &mut loaded, sink),
            "ampathforms" => forms::load_forms(&wanted, &mut loaded, sink),
            "ampathformstranslations" => forms::load_translations(&wanted, &mut loaded, sink),
            "messageproperties" => messages::load(&wanted, &mut loaded.messages, sink),
            "dispositions" => dispositions::load(&wanted, &mut loaded, sink),
            "reports" => reports::load(&wanted, &mut loaded, sink),
            "flags" => flags::load(&wanted, &mut loaded, sink),
            _ => {
                let columns = columns_of(domain);
                let mut tables: Vec<(Table, Layer)> = wanted
                    .drain(..)
                    .filter_map(|f| {
                        let text = decode(f, sink)?;
                        Table::parse(text, columns, sink).map(|t| (t, f.layer))
                    })
                    .collect();
                // Layer first: a later package's rows override, whatever `_order` and
                // file names say within each package.
                tables.sort_by(|a, b| {
                    (a.1, a.0.order, &a.0.file.path).cmp(&(b.1, b.0.order, &b.0.file.path))
                });
                for (table, layer) in &tables {
                    for row in &table.rows {
                        let ctx = Ctx {
                            table,
                            row,
                            layer: *layer,
                            domain,
                        };
                        load_row(domain, &ctx, &mut loaded, sink);
                    }
                }
            }
        }
    }
    loaded
}

fn columns_of(domain: &str) -> &'static Columns {
    if let Some(columns) = services::columns(domain) {
        return columns;
    }
    match domain {
        "concepts" => &concepts::COLUMNS,
        "conceptreferencerange" => &reference_ranges::COLUMNS,
        "locations" => &locations::COLUMNS,
        "roles" => &roles::ROLE_COLUMNS,
        "privileges" => &roles::PRIVILEGE_COLUMNS,
        "patientidentifiertypes" => &identifiers::TYPE_COLUMNS,
        "idgen" => &identifiers::IDGEN_COLUMNS,
        "autogenerationoptions" => &identifiers::AUTOGEN_COLUMNS,
        "programs" => &programs::PROGRAM_COLUMNS,
        "programworkflows" => &programs::WORKFLOW_COLUMNS,
        "programworkflowstates" => &programs::STATE_COLUMNS,
        "drugs" => &orders::DRUG_COLUMNS,
        "orderfrequencies" => &orders::FREQUENCY_COLUMNS,
        "ordertypes" => &orders::ORDER_TYPE_COLUMNS,
        "paymentmodes" => &orders::PAYMENT_COLUMNS,
        "queues" => &orders::QUEUE_COLUMNS,
        "conceptsources" => &metadata::SOURCE_COLUMNS,
        "fhirconceptsources" => &metadata::FHIR_SOURCE_COLUMNS,
        "metadatatermmappings" => &metadata::TERM_MAPPING_COLUMNS,
        "metadatasets" => &metadata::METADATA_SET_COLUMNS,
        "metadatasetmembers" => &metadata::METADATA_SET_MEMBER_COLUMNS,
        "encountertypes" => &metadata::ENCOUNTER_TYPE_COLUMNS,
        "relationshiptypes" => &metadata::RELATIONSHIP_COLUMNS,
        "personattributetypes" => &metadata::PERSON_ATTRIBUTE_COLUMNS,
        "attributetypes" => &metadata::ATTRIBUTE_TYPE_COLUMNS,
        _ => &metadata::NAMED_COLUMNS,
    }
}

fn load_row(domain: &str, ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    match domain {
        "concepts" => concepts::load_row(ctx, loaded, sink),
        "conceptreferencerange" => reference_ranges::load_row(ctx, loaded, sink),
        "locations" => locations::load_row(ctx, loaded, sink),
        "roles" => roles::load_role(ctx, loaded, sink),
        "privileges" => roles::load_privilege(ctx, loaded, sink),
        "patientidentifiertypes" => identifiers::load_type(ctx, loaded, sink),
        "idgen" => identifiers::load_source(ctx, loaded, sink),
        "autogenerationoptions" => identifiers::load_autogen(ctx, loaded, sink),
        "programs" => programs::load_program(ctx, loaded, sink),
        "programworkflows" => programs::load_workflow(ctx, loaded, sink),
        "programworkflowstates" => programs::load_state(ctx, loaded, sink),
        "drugs" => orders::load_drug(ctx, loaded, sink),
        "orderfrequencies" => orders::load_frequency(ctx, loaded, sink),
        "ordertypes" => orders::load_order_type(ctx, loaded, sink),
        "paymentmodes" => orders::load_payment_mode(ctx, loaded, sink),
        "queues" => orders::load_queue(ctx, loaded, sink),
        d if services::DOMAINS.contains(&d) => services::load_row(d, ctx, loaded, sink),
        _ => metadata::load_row(domain, ctx, loaded, sink),
    }
}

/// One CSV row being read, with the helpers every domain uses.
pub struct Ctx<'a> {
    pub table: &'a Table,
    pub row: &'a Row,
    pub layer: Layer,
    pub domain: &'a str,
}

impl Ctx<'_> {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.table.get(self.row, key)
    }

    pub fn string(&self, key: &str) -> Option<String> {
        self.get(key).map(str::to_string)
    }

    pub fn loc(&self, key: &str) -> Loc {
        self.table.loc(self.row, key)
    }

    pub fn row_loc(&self) -> Loc {
        self.table.row_loc(self.row)
    }

    pub fn bool(&self, key: &str, default: bool, sink: &mut Sink) -> bool {
        match self.get(key) {
            None => default,
            Some(v) => csvtable::parse_bool(v, &self.header_name(key), &self.loc(key), sink)
                .unwrap_or(default),
        }
    }

    pub fn f64(&self, key: &str, sink: &mut Sink) -> Option<f64> {
        self.get(key)
            .and_then(|v| csvtable::parse_f64(v, &self.header_name(key), &self.loc(key), sink))
    }

    pub fn int<T: std::str::FromStr>(&self, key: &str, sink: &mut Sink) -> Option<T> {
        self.get(key)
            .and_then(|v| csvtable::parse_int(v, &self.header_name(key), &self.loc(key), sink))
    }

    pub fn list(&self, key: &str) -> Vec<String> {
        self.get(key)
            .map(|v| {
                csvtable::split_list(v)
                    .into_iter()
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The header as the author wrote it, for messages.
    pub fn header_name(&self, key: &str) -> String {
        self.table
            .col(key)
            .map(|i| self.table.headers[i].name.clone())
            .unwrap_or_else(|| key.to_string())
    }

    pub fn retired(&self, sink: &mut Sink) -> bool {
        self.bool("void/retire", false, sink)
    }

    /// A value that must not be empty; reports `required-value-missing`.
    pub fn required(&self, key: &str, sink: &mut Sink) -> Option<String> {
        if !self.table.has(key) {
            return None; // The missing column was reported once for the file.
        }
        let v = self.string(key);
        if v.is_none() {
            sink.emit(
                Code::MissingValue,
                &self.row_loc(),
                format!("Column '{}' is empty", self.header_name(key)),
            )
            .help = Some("this column needs a value in every row".into());
        }
        v
    }

    pub fn uuid(&self, rule: UuidRule, natural_key: &str, sink: &mut Sink) -> Option<String> {
        let loc = if self.get("uuid").is_some() {
            self.loc("uuid")
        } else {
            self.row_loc()
        };
        csvtable::check_uuid(self.get("uuid"), rule, self.domain, natural_key, &loc, sink)
    }

    /// `Display:<locale>` columns.
    pub fn display(&self, sink: &mut Sink) -> Localized {
        let mut out = Localized::new();
        for (i, locale) in self.table.prefixed("display:") {
            if let Some(v) = self.table.cell(self.row, i) {
                if csvtable::is_locale(locale) {
                    out.insert(locale.to_string(), v.to_string());
                } else {
                    sink.emit(
                        Code::InvalidLocale,
                        &self.table.cell_loc(self.row, i),
                        format!("Invalid locale '{locale}' in a Display column"),
                    );
                }
            }
        }
        out
    }

    /// An entry with its name's cell recorded, where the row has one (checks of names
    /// point at it).
    pub fn entry<T>(&self, value: T) -> Entry<T> {
        let mut e = Entry::new(value, self.layer, self.row_loc());
        if let Some(column) = ["name", "service name"]
            .into_iter()
            .find(|c| self.get(c).is_some())
        {
            e.cells.insert("name", self.loc(column));
        }
        e
    }

    /// An entry with the listed fields' cells recorded for later diagnostics.
    pub fn entry_with<T>(&self, value: T, fields: &[(&'static str, &str)]) -> Entry<T> {
        let mut e = self.entry(value);
        for (field, key) in fields {
            e.cells.insert(field, self.loc(key));
        }
        e
    }
}
