//! Cross-reference resolution: turns `Loaded` (references as written) into the bundle's
//! `Content` (references as uuids), adding the built-in metadata and reporting every
//! reference that resolves nowhere, every cycle, and every malformed known setting.

use crate::builtin;
use crate::csvtable::{derive_uuid, is_locale};
use crate::diagnostics::{Code, Sink};
use crate::domains::{Loaded, address, ocl::normalise_source};
use crate::resolve::ConceptIndex;
use crate::source::Loc;
use crate::store::{Entry, Lookup, Registry};
use model::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};

fn sorted<T>(mut items: Vec<T>, key: impl Fn(&T) -> &String) -> Vec<T> {
    items.sort_by(|a, b| key(a).cmp(key(b)));
    items
}

pub fn link(loaded: Loaded, sink: &mut Sink) -> Content {
    let mut content = Content::default();
    let Loaded {
        global_properties,
        concept_sources,
        fhir_concept_sources,
        term_mappings,
        metadata_sets,
        metadata_set_members,
        concept_classes,
        ocl,
        csv_concepts,
        concept_reference_ranges,
        location_tags,
        locations,
        location_column_tags,
        location_tag_columns,
        privileges,
        roles,
        identifier_types,
        identifier_sources,
        autogeneration_options,
        visit_types,
        encounter_types,
        encounter_roles,
        relationship_types,
        person_attribute_types,
        attribute_types,
        programs,
        program_workflows,
        program_workflow_states,
        drugs,
        order_frequencies,
        order_types,
        payment_modes,
        queues,
        services,
        forms,
        form_translations,
        address_template,
        address_hierarchy,
        messages,
        opaque_files,
        dispositions,
        reports,
        flag_files,
    } = loaded;

    // Privileges: the package's, then core's that the package does not redefine.
    let mut all_privileges: Vec<Privilege> = privileges.into_sorted();
    for p in &mut all_privileges {
        p.core = builtin::core_privilege(&p.name).is_some();
    }
    let defined: BTreeSet<String> = all_privileges
        .iter()
        .map(|p| p.name.to_lowercase())
        .collect();
    for name in builtin::all_privileges() {
        if !defined.contains(&name.to_lowercase()) {
            all_privileges.push(Privilege {
                uuid: derive_uuid(&format!("privilege/{name}")),
                name: name.to_string(),
                description: None,
                core: true,
            });
        }
    }
    let privilege_lookup = Lookup::new(
        all_privileges
            .iter()
            .map(|p| (p.name.as_str(), p.uuid.as_str())),
    );
    let privilege_name: HashMap<String, String> = all_privileges
        .iter()
        .map(|p| (p.uuid.clone(), p.name.clone()))
        .collect();
    let check_privilege = |name: &str, loc: &Loc, sink: &mut Sink| -> String {
        match privilege_lookup.find(name) {
            Some(uuid) => privilege_name[&uuid].clone(),
            None => {
                sink.emit(Code::UnknownPrivilege, loc, format!("Privilege '{name}' is defined neither by the package nor by OpenMRS core and its common modules"))
                    .help = Some("if a module provides it, this is fine; otherwise define it in privileges/ or check the spelling".into());
                name.to_string()
            }
        }
    };

    content.roles = link_roles(roles, &check_privilege, &all_privileges, sink);
    content.privileges = sorted(all_privileges, |p| &p.uuid);

    // Concept sources: the package's, plus those OCL mappings name (created as the importer does).
    let mut sources: BTreeMap<String, ConceptSource> = concept_sources
        .into_sorted()
        .into_iter()
        .map(|s| (s.uuid.clone(), s))
        .collect();
    let mut source_by_norm: HashMap<String, String> = sources
        .values()
        .map(|s| (normalise_source(&s.name), s.name.clone()))
        .collect();
    for s in sources.values() {
        if let Some(h) = &s.hl7_code {
            source_by_norm
                .entry(normalise_source(h))
                .or_insert_with(|| s.name.clone());
        }
    }

    // Concepts: OCL first, then CSV rows override what they cover.
    let mut concepts: BTreeMap<String, Entry<Concept>> = ocl.concepts;
    for entry in concepts.values_mut() {
        for m in &mut entry.value.mappings {
            let norm = normalise_source(&m.source);
            match source_by_norm.get(&norm) {
                Some(canonical) => m.source = canonical.clone(),
                None => {
                    let uuid = uuid::Uuid::new_v5(
                        &uuid::uuid!("672c6cb2-4f47-4cb0-9fca-b5f6116cd33a"),
                        format!("source/{}", m.source).as_bytes(),
                    )
                    .to_string();
                    source_by_norm.insert(norm, m.source.clone());
                    sources.insert(
                        uuid.clone(),
                        ConceptSource {
                            uuid,
                            name: m.source.clone(),
                            description: Some("Created from an OCL export".into()),
                            hl7_code: None,
                            unique_id: None,
                            retired: false,
                        },
                    );
                }
            }
        }
    }
    let mut csv_uuids = Vec::new();
    for (uuid, mut entry) in csv_concepts.items {
        if let Some(previous) = concepts.get(&uuid) {
            if !entry.cells.contains_key("has_answers") {
                entry.value.answers = previous.value.answers.clone();
            }
            if !entry.cells.contains_key("has_members") {
                entry.value.set_members = previous.value.set_members.clone();
                entry.value.is_set |= previous.value.is_set;
            }
        }
        csv_uuids.push(uuid.clone());
        concepts.insert(uuid, entry);
    }

    // Concept classes: package, core seed, and OCL-created.
    let mut classes: BTreeMap<String, ConceptClass> = concept_classes
        .into_sorted()
        .into_iter()
        .map(|c| (c.uuid.clone(), c))
        .collect();
    let mut class_names: HashMap<String, String> = classes
        .values()
        .map(|c| (c.name.to_lowercase(), c.name.clone()))
        .collect();
    for (name, uuid) in builtin::CONCEPT_CLASSES {
        if !class_names.contains_key(&name.to_lowercase()) && !classes.contains_key(*uuid) {
            class_names.insert(name.to_lowercase(), name.to_string());
            classes.insert(
                uuid.to_string(),
                ConceptClass {
                    uuid: uuid.to_string(),
                    name: name.to_string(),
                    description: None,
                    retired: false,
                },
            );
        }
    }
    for entry in concepts.values_mut() {
        let class_loc = entry.at("class").clone();
        let c = &mut entry.value;
        match class_names.get(&c.class.to_lowercase()) {
            Some(canonical) => c.class = canonical.clone(),
            None if matches!(c.origin, ConceptOrigin::Ocl(_)) => {
                let uuid = uuid::Uuid::new_v5(
                    &uuid::uuid!("672c6cb2-4f47-4cb0-9fca-b5f6116cd33a"),
                    format!("conceptClass/{}", c.class).as_bytes(),
                )
                .to_string();
                class_names.insert(c.class.to_lowercase(), c.class.clone());
                classes.insert(
                    uuid.clone(),
                    ConceptClass {
                        uuid,
                        name: c.class.clone(),
                        description: None,
                        retired: false,
                    },
                );
            }
            None => {
                sink.unknown_reference(&class_loc, "Concept class", &c.class)
                    .help = Some("define it in conceptclasses/, or use a core class such as Diagnosis, Finding, Question, Test, Misc, ConvSet".into());
            }
        }
    }
    let source_by_name: HashMap<String, String> = sources
        .values()
        .map(|s| (s.name.to_lowercase(), s.name.clone()))
        .collect();
    let map_types: BTreeSet<String> = builtin::MAP_TYPES
        .iter()
        .map(|m| m.to_uppercase())
        .collect();
    for uuid in &csv_uuids {
        let entry = concepts.get_mut(uuid).expect("inserted above");
        let loc = entry.at("mappings").clone();
        entry.value.mappings.retain_mut(|m| {
            let ok_type = map_types.contains(&m.map_type.to_uppercase());
            if !ok_type {
                sink.unknown_reference(&loc, "Concept map type", &m.map_type);
            }
            // Mappings written by a CSV row name their source by name only (as Initializer does).
            match source_by_name.get(&m.source.to_lowercase()) {
                Some(canonical) => m.source = canonical.clone(),
                None => {
                    sink.unknown_reference(&loc, "Concept source", &m.source)
                        .help = Some(
                        "define the source in conceptsources/ (sources are matched by name)".into(),
                    );
                    return false;
                }
            }
            ok_type
        });
    }

    let index = ConceptIndex::build(concepts.values().map(|e| &e.value), &sources);
    for uuid in &csv_uuids {
        let entry = concepts.get_mut(uuid).expect("inserted above");
        let answers_loc = entry.at("answers").clone();
        let members_loc = entry.at("members").clone();
        let c = &mut entry.value;
        if c.answers.iter().any(|a| !index.contains(a))
            || c.set_members.iter().any(|a| !index.contains(a))
        {
            c.answers = dedup(index.resolve_all(&c.answers, &answers_loc, sink));
            c.set_members = dedup(index.resolve_all(&c.set_members, &members_loc, sink));
        }
    }
    content.concept_sources = sources.into_values().collect();
    content.fhir_concept_sources =
        link_fhir_concept_sources(fhir_concept_sources, &content.concept_sources, sink);
    content.concept_classes = classes.into_values().collect();
    content.concept_datatypes = builtin::DATATYPES
        .iter()
        .map(|(name, uuid, hl7)| ConceptDatatype {
            uuid: uuid.to_string(),
            name: name.to_string(),
            hl7_abbreviation: hl7.to_string(),
            description: String::new(),
        })
        .collect();
    content
        .concept_datatypes
        .sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content.concept_map_types = sorted(
        builtin::MAP_TYPES
            .iter()
            .map(|m| NamedMetadata {
                uuid: builtin::map_type_uuid(m),
                name: m.to_string(),
                description: None,
                retired: false,
                display: Localized::new(),
            })
            .collect(),
        |m| &m.uuid,
    );
    let concept_name_of = |concepts: &BTreeMap<String, Entry<Concept>>, uuid: &str| -> String {
        concepts
            .get(uuid)
            .and_then(|c| c.value.display_name("en", &[]))
            .map(|n| n.name.clone())
            .unwrap_or_default()
    };

    // Location tags and locations.
    let mut tags = location_tags;
    for (name, known_uuid) in builtin::MODULE_LOCATION_TAGS {
        let taken = |uuid: &str| tags.items.contains_key(uuid);
        if !tags.values().any(|t| t.name.eq_ignore_ascii_case(name)) {
            // Modules that create a tag under a random uuid get a derived, stable one.
            let uuid = if known_uuid.is_empty() || taken(known_uuid) {
                derive_uuid(&format!("locationtag/{name}"))
            } else {
                known_uuid.to_string()
            };
            tags.items.insert(
                uuid.clone(),
                Entry::new(
                    NamedMetadata {
                        uuid,
                        name: name.to_string(),
                        description: Some("Provided by a module".into()),
                        retired: false,
                        display: Localized::new(),
                    },
                    crate::vfs::Layer::Base,
                    Loc::None,
                ),
            );
        }
    }
    let tag_lookup = Lookup::new(tags.values().map(|t| (t.name.as_str(), t.uuid.as_str())));
    let location_lookup = Lookup::new(
        locations
            .values()
            .map(|l| (l.name.as_str(), l.uuid.as_str())),
    );
    // A `Tag|<name>` column naming an unknown tag: once, at its header.
    let mut reported = BTreeSet::new();
    for (tag, header) in &location_tag_columns {
        let key = (header.path().unwrap_or("").to_string(), tag.to_lowercase());
        if tag_lookup.find(tag).is_none() && reported.insert(key) {
            let d = sink.emit(
                Code::UnknownReference,
                header,
                format!(
                    "Location tag '{tag}' of a Tag| column not found: Initializer would fail every row of this file"
                ),
            );
            d.label = Some("no location tag with this name or uuid".into());
            d.help = Some(
                "define the tag in locationtags/ (here or in a package this one depends on), or correct the column's name".into(),
            );
        }
    }
    content.locations = link_locations(
        locations,
        &location_column_tags,
        &tag_lookup,
        &location_lookup,
        sink,
    );
    content.location_tags = tags.into_sorted();

    // Identifiers.
    let type_lookup = Lookup::new(
        identifier_types
            .values()
            .map(|t| (t.name.as_str(), t.uuid.as_str())),
    );
    content.patient_identifier_types = identifier_types.into_sorted();
    let source_uuids: BTreeSet<String> = identifier_sources.items.keys().cloned().collect();
    let mut id_sources = Vec::new();
    for (_, mut e) in identifier_sources.items {
        if let Some(t) = type_lookup.resolve(
            &e.value.identifier_type,
            "Patient identifier type",
            e.at("identifier_type"),
            sink,
        ) {
            e.value.identifier_type = t;
        }
        if let IdentifierSourceKind::Pool { pool_source } = &e.value.kind
            && !source_uuids.contains(pool_source)
        {
            sink.unknown_reference(e.at("pool"), "Identifier source", pool_source);
        }
        id_sources.push(e.value);
    }
    content.identifier_sources = id_sources;
    for (_, mut e) in autogeneration_options.items {
        if let Some(t) = type_lookup.resolve(
            &e.value.identifier_type,
            "Patient identifier type",
            e.at("identifier_type"),
            sink,
        ) {
            e.value.identifier_type = t;
        }
        if !source_uuids.contains(&e.value.source) {
            sink.unknown_reference(e.at("source"), "Identifier source", &e.value.source)
                .help = Some("autogeneration options name their source by uuid".into());
        }
        if let Some(l) = &e.value.location {
            e.value.location = location_lookup.resolve(l, "Location", e.at("location"), sink);
        }
        content.autogeneration_options.push(e.value);
    }

    // Names a French build shows, checked once the default locale is known.
    let mut shown_names = Vec::new();
    let mut shown = |kind, name: &str, display: Option<&model::Localized>, loc: &Loc| {
        shown_names.push(crate::french::ShownName {
            kind,
            name: name.to_string(),
            display: display.cloned(),
            loc: loc.clone(),
        })
    };
    for e in visit_types.items.values().filter(|e| !e.value.retired) {
        shown(
            "visit type",
            &e.value.name,
            Some(&e.value.display),
            e.at("name"),
        );
    }
    for e in encounter_types.items.values().filter(|e| !e.value.retired) {
        shown(
            "encounter type",
            &e.value.name,
            Some(&e.value.display),
            e.at("name"),
        );
    }
    for e in person_attribute_types
        .items
        .values()
        .filter(|e| !e.value.retired)
    {
        let display = Some(&e.value.display);
        shown(
            "person attribute type",
            &e.value.name,
            display,
            e.at("name"),
        );
    }
    for e in attribute_types.items.values().filter(|e| !e.value.retired) {
        let display = Some(&e.value.display);
        shown("attribute type", &e.value.name, display, e.at("name"));
    }
    for e in payment_modes.items.values().filter(|e| !e.value.retired) {
        shown("payment mode", &e.value.name, None, e.at("name"));
    }
    for e in services.billable_services.items.values() {
        if !e.value.retired {
            shown("billable service", &e.value.name, None, e.at("name"));
        }
    }

    // Encounter and person metadata.
    content.visit_types = visit_types.into_sorted();
    content.encounter_roles = encounter_roles.into_sorted();
    content.relationship_types = relationship_types.into_sorted();
    for e in encounter_types.items.values() {
        for (field, p) in [
            ("view_privilege", &e.value.view_privilege),
            ("edit_privilege", &e.value.edit_privilege),
        ] {
            if let Some(p) = p {
                check_privilege(p, e.at(field), sink);
            }
        }
    }
    let encounter_type_lookup = Lookup::new(
        encounter_types
            .values()
            .map(|t| (t.name.as_str(), t.uuid.as_str())),
    );
    content.encounter_types = encounter_types.into_sorted();
    for e in person_attribute_types.items.values() {
        if let Some(p) = &e.value.edit_privilege {
            check_privilege(p, e.at("edit_privilege"), sink);
        }
    }
    content.person_attribute_types = person_attribute_types.into_sorted();
    content.attribute_types = attribute_types.into_sorted();

    // Programs, workflows, states.
    let mut program_list = Vec::new();
    let mut program_by_concept: HashMap<String, String> = HashMap::new();
    for (_, mut e) in programs.items {
        if let Some(c) = index.resolve(&e.value.concept, e.at("concept"), sink) {
            program_by_concept.insert(c.clone(), e.value.uuid.clone());
            if e.value.name.is_empty() {
                e.value.name = concept_name_of(&concepts, &c);
            }
            e.value.concept = c;
        }
        if let Some(o) = &e.value.outcomes_concept {
            e.value.outcomes_concept = index.resolve(o, e.at("outcomes_concept"), sink);
        }
        program_list.push(e.value);
    }
    let program_lookup = Lookup::new(
        program_list
            .iter()
            .map(|p| (p.name.as_str(), p.uuid.as_str())),
    );
    content.programs = program_list;
    let mut workflow_by_concept: HashMap<String, String> = HashMap::new();
    let workflow_uuids: BTreeSet<String> = program_workflows.items.keys().cloned().collect();
    for (_, mut e) in program_workflows.items {
        let program = program_lookup.find(&e.value.program).or_else(|| {
            match index.lookup(&e.value.program) {
                crate::resolve::Resolution::Found(c) => program_by_concept.get(&c).cloned(),
                _ => None,
            }
        });
        match program {
            Some(p) => e.value.program = p,
            None => {
                sink.unknown_reference(e.at("program"), "Program", &e.value.program);
            }
        }
        if let Some(c) = index.resolve(&e.value.concept, e.at("concept"), sink) {
            workflow_by_concept.insert(c.clone(), e.value.uuid.clone());
            e.value.concept = c;
        }
        content.program_workflows.push(e.value);
    }
    for (_, mut e) in program_workflow_states.items {
        let workflow = if workflow_uuids.contains(&e.value.workflow) {
            Some(e.value.workflow.clone())
        } else {
            match index.lookup(&e.value.workflow) {
                crate::resolve::Resolution::Found(c) => workflow_by_concept.get(&c).cloned(),
                _ => None,
            }
        };
        match workflow {
            Some(w) => e.value.workflow = w,
            None => {
                sink.unknown_reference(e.at("workflow"), "Program workflow", &e.value.workflow)
                    .help = Some("name the workflow by uuid or by its workflow concept".into());
            }
        }
        if let Some(c) = index.resolve(&e.value.concept, e.at("concept"), sink) {
            e.value.concept = c;
        }
        content.program_workflow_states.push(e.value);
    }
    for w in content.program_workflows.iter() {
        let states: Vec<_> = content
            .program_workflow_states
            .iter()
            .filter(|s| s.workflow == w.uuid && !s.retired)
            .collect();
        if !states.is_empty() && !states.iter().any(|s| s.initial) {
            sink.emit(
                Code::InvalidValue,
                &Loc::None,
                format!("Workflow '{}' has no initial state", w.uuid),
            )
            .help = Some("mark at least one state of the workflow `Initial` = true".into());
        }
    }

    // Drugs, frequencies, payment modes, queues.
    let known_sources: BTreeSet<String> = content
        .concept_sources
        .iter()
        .flat_map(|s| {
            [
                Some(s.name.to_lowercase()),
                s.hl7_code.as_ref().map(|h| h.to_lowercase()),
                s.unique_id.as_ref().map(|u| u.to_lowercase()),
                Some(s.uuid.to_lowercase()),
            ]
        })
        .flatten()
        .collect();
    for (_, mut e) in drugs.items {
        if let Some(c) = index.resolve(&e.value.concept, e.at("concept"), sink) {
            e.value.concept = c;
        }
        if let Some(d) = &e.value.dosage_form {
            e.value.dosage_form = index.resolve(d, e.at("dosage_form"), sink);
        }
        for m in &e.value.mappings {
            if !known_sources.contains(&m.source.to_lowercase()) {
                sink.unknown_reference(&e.loc, "Concept source", &m.source);
            }
        }
        content.drugs.push(e.value);
    }
    for (_, mut e) in order_frequencies.items {
        if let Some(c) = index.resolve(&e.value.concept, e.at("concept"), sink) {
            e.value.concept = c;
        }
        content.order_frequencies.push(e.value);
    }
    link_order_types(order_types, &mut content, sink);
    content.payment_modes = payment_modes.into_sorted();
    let payment_mode_uuids: BTreeSet<String> = content
        .payment_modes
        .iter()
        .map(|p| p.uuid.clone())
        .collect();
    crate::domains::services::check(
        &services,
        &location_lookup,
        &index,
        &payment_mode_uuids,
        sink,
    );
    (
        content.appointment_specialities,
        content.appointment_services,
        content.appointment_service_types,
    ) = crate::domains::services::appointment_content(&services, &location_lookup);
    (content.cash_points, content.billable_services) =
        crate::domains::services::billing_content(&services, &location_lookup, &index);
    // By uuid: a later file (a site's) redefines a disposition of an earlier one.
    let mut dispositions_by_uuid = BTreeMap::new();
    for d in dispositions {
        if let Some(concept) = index.resolve(&d.value.concept_code, &d.code_loc, sink) {
            dispositions_by_uuid.insert(
                d.value.uuid.clone(),
                model::Disposition { concept, ..d.value },
            );
        }
    }
    content.dispositions = dispositions_by_uuid.into_values().collect();
    for (_, mut e) in queues.items {
        if let Some(c) = index.resolve(&e.value.service, e.at("service"), sink) {
            e.value.service = c;
        }
        for (field, value) in [
            ("status_concept_set", &mut e.value.status_concept_set),
            ("priority_concept_set", &mut e.value.priority_concept_set),
        ] {
            if let Some(v) = value.clone() {
                *value = index.resolve(&v, e.cells.get(field).unwrap_or(&e.loc), sink);
            }
        }
        if let Some(l) =
            location_lookup.resolve(&e.value.location, "Location", e.at("location"), sink)
        {
            e.value.location = l;
        }
        content.queues.push(e.value);
    }

    // Forms and their translations.
    let mut form_names: HashMap<String, String> = HashMap::new();
    for (_, e) in forms.items {
        let encounter_loc = e.at("encounter").clone();
        let mut form = e.value.form;
        if let Some(name) = &e.value.encounter {
            form.encounter_type = encounter_type_lookup.find(name);
            if form.encounter_type.is_none() {
                sink.unknown_reference(&encounter_loc, "Encounter type", name)
                    .help = Some(
                    "forms name their encounter type by name; define it in encountertypes/".into(),
                );
            }
        }
        for (reference, question, loc) in &e.value.concept_refs {
            if index.resolve(reference, loc, sink).is_none()
                && let Some(d) = sink_last(sink)
            {
                d.notes
                    .push(format!("question `{question}` of form `{}`", form.name));
            }
        }
        form_names.insert(form.name.to_lowercase(), form.uuid.clone());
        content.forms.push(form);
    }
    for e in form_translations {
        if !form_names.contains_key(&e.value.form.to_lowercase()) {
            sink.unknown_reference(e.at("form"), "Form", &e.value.form)
                .help = Some("a translation names its form by the form's name".into());
        }
        content.form_translations.push(e.value);
    }
    content
        .form_translations
        .sort_by(|a, b| (&a.form, &a.language).cmp(&(&b.form, &b.language)));

    // Global properties with known shapes.
    let mut gps: Vec<(GlobalProperty, Loc)> = global_properties
        .items
        .into_values()
        .map(|e| {
            let l = e.at("value").clone();
            (e.value, l)
        })
        .collect();
    gps.sort_by(|a, b| a.0.property.cmp(&b.0.property));
    content.locales = check_global_properties(&gps, &index, sink);
    check_visit_assignment(&gps, &content, sink);
    crate::french::check_names(&content.locales.default, &shown_names, sink);
    content.address_template = match address_template {
        Some(t) => Some(t.value),
        None => gps
            .iter()
            .find(|(gp, _)| gp.property == "layout.address.format" && !gp.value.trim().is_empty())
            .and_then(|(gp, loc)| address::parse_template_property(&gp.value, loc, sink)),
    };
    content.global_properties = gps.into_iter().map(|(gp, _)| gp).collect();
    (content.reports, content.patient_flags) =
        link_reports(reports, flag_files, &content, &index, sink);
    content.address_hierarchy = address_hierarchy;
    content.messages = messages;
    content.opaque_files = sorted(opaque_files, |f| &f.path);

    content.concept_reference_ranges =
        link_reference_ranges(concept_reference_ranges, &concepts, &index, sink);

    // Concepts last: indexes point into the final sorted list.
    content.concepts = concepts.into_values().map(|e| e.value).collect();
    content.indexes = build_indexes(&content.concepts, &content.concept_sources);
    content.ocl_archives = ocl.archives;
    content
        .identifier_sources
        .sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content
        .autogeneration_options
        .sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content.programs.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content
        .program_workflows
        .sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content
        .program_workflow_states
        .sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content.drugs.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content
        .order_frequencies
        .sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content.queues.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content
        .appointment_specialities
        .sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content
        .appointment_services
        .sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content
        .appointment_service_types
        .sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content.forms.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content.metadata_sets = link_metadata_sets(metadata_sets, metadata_set_members, &content, sink);
    content.metadata_term_mappings = link_term_mappings(term_mappings, &content, sink);
    content
}

/// Whether metadata of a class exists: `None` for a class this distribution does not serve.
fn metadata_exists(c: &Content, class: &str, uuid: &str) -> Option<bool> {
    fn has<T>(items: &[T], uuid: &str, of: impl Fn(&T) -> &String) -> bool {
        items.iter().any(|i| of(i) == uuid)
    }
    Some(match class.trim() {
        "org.openmrs.EncounterType" => has(&c.encounter_types, uuid, |t| &t.uuid),
        "org.openmrs.VisitType" => has(&c.visit_types, uuid, |t| &t.uuid),
        "org.openmrs.EncounterRole" => has(&c.encounter_roles, uuid, |t| &t.uuid),
        "org.openmrs.PatientIdentifierType" => has(&c.patient_identifier_types, uuid, |t| &t.uuid),
        "org.openmrs.PersonAttributeType" => has(&c.person_attribute_types, uuid, |t| &t.uuid),
        "org.openmrs.RelationshipType" => has(&c.relationship_types, uuid, |t| &t.uuid),
        "org.openmrs.Location" => has(&c.locations, uuid, |t| &t.uuid),
        "org.openmrs.LocationTag" => has(&c.location_tags, uuid, |t| &t.uuid),
        "org.openmrs.Concept" => c.concept(uuid).is_some(),
        "org.openmrs.ConceptSource" => has(&c.concept_sources, uuid, |t| &t.uuid),
        "org.openmrs.Form" => has(&c.forms, uuid, |t| &t.uuid),
        "org.openmrs.OrderType" => has(&c.order_types, uuid, |t| &t.uuid),
        "org.openmrs.CareSetting" => has(&c.care_settings, uuid, |t| &t.uuid),
        "org.openmrs.Program" => has(&c.programs, uuid, |t| &t.uuid),
        "org.openmrs.Role" => has(&c.roles, uuid, |t| &t.uuid),
        "org.openmrs.Privilege" => has(&c.privileges, uuid, |t| &t.uuid),
        "org.openmrs.module.metadatamapping.MetadataSet" => {
            has(&c.metadata_sets, uuid, |t| &t.uuid)
        }
        _ => return None,
    })
}

/// The help of a class this distribution does not serve.
const SERVED_CLASSES: &str = "a class such as org.openmrs.EncounterType, org.openmrs.Location, org.openmrs.PatientIdentifierType or org.openmrs.module.metadatamapping.MetadataSet";

/// Initializer's `metadatasets` and `metadatasetmembers`: each member in a set of the
/// content, naming metadata of a class this distribution serves (not a set) that exists.
fn link_metadata_sets(
    sets: Registry<crate::domains::metadata::Retirable<model::MetadataSet>>,
    members: Registry<
        crate::domains::metadata::Retirable<crate::domains::metadata::LoadedSetMember>,
    >,
    content: &Content,
    sink: &mut Sink,
) -> Vec<model::MetadataSet> {
    let retired: BTreeSet<String> = sets
        .items
        .values()
        .filter(|e| e.value.retired)
        .map(|e| e.value.value.uuid.clone())
        .collect();
    let mut out: BTreeMap<String, model::MetadataSet> = sets
        .items
        .into_values()
        .filter(|e| !e.value.retired)
        .map(|e| (e.value.value.uuid.clone(), e.value.value))
        .collect();
    for (_, entry) in members.items {
        // A retired set takes its members out with it.
        if entry.value.retired || retired.contains(&entry.value.value.set) {
            continue;
        }
        let m = &entry.value.value;
        let class = m.member.class_name.trim();
        if class == "org.openmrs.module.metadatamapping.MetadataSet" {
            sink.emit(
                Code::InvalidValue,
                entry.at("class"),
                "A metadata set cannot be a member of a metadata set",
            );
            continue;
        }
        match metadata_exists(content, class, &m.member.metadata_uuid) {
            None => {
                sink.emit(
                    Code::InvalidValue,
                    entry.at("class"),
                    format!("'{class}' is not a metadata class this distribution serves"),
                )
                .help = Some(SERVED_CLASSES.into());
                continue;
            }
            Some(false) => {
                let short = class.rsplit('.').next().unwrap_or(class);
                sink.unknown_reference(entry.at("metadata"), short, &m.member.metadata_uuid);
                continue;
            }
            Some(true) => {}
        }
        match out.get_mut(&m.set) {
            Some(set) => set.members.push(model::MetadataSetMember {
                class_name: class.to_string(),
                ..m.member.clone()
            }),
            None => {
                sink.unknown_reference(entry.at("set"), "MetadataSet", &m.set);
            }
        }
    }
    let mut out: Vec<model::MetadataSet> = out.into_values().collect();
    for set in &mut out {
        set.members.sort_by(|a, b| {
            a.sort_weight
                .unwrap_or(f64::MAX)
                .total_cmp(&b.sort_weight.unwrap_or(f64::MAX))
                .then_with(|| a.uuid.cmp(&b.uuid))
        });
    }
    out
}

/// Initializer's `metadatatermmappings`: each names metadata of a class this distribution
/// serves, by a uuid that exists in that class; one mapping per source and code.
fn link_term_mappings(
    rows: Registry<crate::domains::metadata::LoadedTermMapping>,
    content: &Content,
    sink: &mut Sink,
) -> Vec<MetadataTermMapping> {
    let exists = |class: &str, uuid: &str| metadata_exists(content, class, uuid);
    let mut out: Vec<MetadataTermMapping> = Vec::new();
    for (_, entry) in rows.items {
        if entry.value.retired {
            continue;
        }
        let m = &entry.value.mapping;
        if m.metadata_uuid.is_empty() {
            sink.emit(
                Code::MissingValue,
                entry.at("metadata"),
                format!("The mapping {}:{} names no metadata", m.source, m.code),
            )
            .help = Some("give the metadata's uuid in 'Metadata Uuid'".into());
            continue;
        }
        match exists(&m.class_name, &m.metadata_uuid) {
            None => {
                sink.emit(
                    Code::InvalidValue,
                    entry.at("class"),
                    format!(
                        "'{}' is not a metadata class this distribution serves",
                        m.class_name
                    ),
                )
                .help = Some(SERVED_CLASSES.into());
                continue;
            }
            Some(false) => {
                let class = m.class_name.rsplit('.').next().unwrap_or(&m.class_name);
                sink.unknown_reference(entry.at("metadata"), class, &m.metadata_uuid);
                continue;
            }
            Some(true) => {}
        }
        if out.iter().any(|o| o.source == m.source && o.code == m.code) {
            sink.emit(
                Code::InvalidValue,
                entry.at("code"),
                format!("{}:{} is mapped twice", m.source, m.code),
            )
            .help = Some("one mapping per source and code: retire the other row".into());
            continue;
        }
        out.push(MetadataTermMapping {
            class_name: m.class_name.trim().to_string(),
            ..m.clone()
        });
    }
    out.sort_by(|a, b| (&a.source, &a.code).cmp(&(&b.source, &b.code)));
    out
}

/// Order types: the package's, then core's it does not redefine (by uuid or name); each
/// parent an order type, each concept class a class of the content, and no parent cycle.
fn link_order_types(order_types: Registry<OrderType>, content: &mut Content, sink: &mut Sink) {
    let mut entries: Vec<Entry<OrderType>> = order_types.items.into_values().collect();
    for (name, uuid, class, description) in builtin::ORDER_TYPES {
        let redefined = entries
            .iter()
            .any(|e| e.value.uuid == *uuid || e.value.name.eq_ignore_ascii_case(name));
        if !redefined {
            content.order_types.push(OrderType {
                uuid: uuid.to_string(),
                name: name.to_string(),
                description: Some(description.to_string()),
                java_class_name: class.to_string(),
                parent: None,
                concept_classes: vec![],
                retired: false,
            });
        }
    }
    let lookup = Lookup::new(
        entries
            .iter()
            .map(|e| (e.value.name.as_str(), e.value.uuid.as_str()))
            .chain(
                content
                    .order_types
                    .iter()
                    .map(|t| (t.name.as_str(), t.uuid.as_str())),
            ),
    );
    let classes = Lookup::new(
        content
            .concept_classes
            .iter()
            .map(|c| (c.name.as_str(), c.uuid.as_str())),
    );
    let mut parents: BTreeMap<String, String> = BTreeMap::new();
    for e in &mut entries {
        if let Some(p) = e.value.parent.clone() {
            e.value.parent = lookup.resolve(&p, "Order type", e.at("parent"), sink);
            if let Some(p) = &e.value.parent {
                parents.insert(e.value.uuid.clone(), p.clone());
            }
        }
        let written = std::mem::take(&mut e.value.concept_classes);
        for c in written {
            if let Some(uuid) = classes.resolve(&c, "Concept class", e.at("concept_classes"), sink)
            {
                e.value.concept_classes.push(uuid);
            }
        }
    }
    for e in &mut entries {
        // Walking up from each type must end: a type that meets itself is in a cycle.
        let mut seen = BTreeSet::from([e.value.uuid.clone()]);
        let mut at = e.value.parent.clone();
        while let Some(p) = at {
            if !seen.insert(p.clone()) {
                sink.emit(
                    Code::Cycle,
                    e.at("parent"),
                    format!("Order type '{}' is its own ancestor", e.value.name),
                );
                e.value.parent = None;
                break;
            }
            at = parents.get(&p).cloned();
        }
    }
    content
        .order_types
        .extend(entries.into_iter().map(|e| e.value));
    content.order_types.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    content.care_settings = builtin::CARE_SETTINGS
        .iter()
        .map(|(name, uuid, kind, description)| CareSetting {
            uuid: uuid.to_string(),
            name: name.to_string(),
            description: Some(description.to_string()),
            care_setting_type: kind.to_string(),
            retired: false,
        })
        .collect();
    content.care_settings.sort_by(|a, b| a.uuid.cmp(&b.uuid));
}

/// The diagnostic just emitted, to add a note to it.
/// Resolves each range's concept, which must be numeric, and orders the ranges by concept
/// then uuid for the runtime's lookups.
fn link_reference_ranges(
    ranges: Registry<model::ConceptReferenceRange>,
    concepts: &BTreeMap<String, crate::store::Entry<Concept>>,
    index: &ConceptIndex,
    sink: &mut Sink,
) -> Vec<model::ConceptReferenceRange> {
    let mut out = Vec::new();
    for (_, mut e) in ranges.items {
        let loc = e.at("concept").clone();
        let Some(uuid) = index.resolve(&e.value.concept, &loc, sink) else {
            continue;
        };
        if concepts
            .get(&uuid)
            .is_none_or(|c| c.value.numeric.is_none())
        {
            sink.emit(
                Code::WrongReferenceKind,
                &loc,
                format!(
                    "Concept '{}' is not numeric: a reference range applies only to a numeric concept",
                    e.value.concept
                ),
            )
            .help = Some("name a concept of datatype Numeric".into());
            continue;
        }
        e.value.concept = uuid;
        out.push(e.value);
    }
    out.sort_by(|a, b| (&a.concept, &a.uuid).cmp(&(&b.concept, &b.uuid)));
    out
}

fn sink_last(sink: &mut Sink) -> Option<&mut crate::diagnostics::Diagnostic> {
    sink.last_mut()
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    v.retain(|x| seen.insert(x.clone()));
    v
}

fn link_roles(
    roles: Registry<Role>,
    check_privilege: &dyn Fn(&str, &Loc, &mut Sink) -> String,
    privileges: &[Privilege],
    sink: &mut Sink,
) -> Vec<Role> {
    let mut list: Vec<Entry<Role>> = roles.items.into_values().collect();
    for (name, uuid, description) in builtin::CORE_ROLES {
        if !list
            .iter()
            .any(|r| r.value.name.eq_ignore_ascii_case(name) || r.value.uuid == *uuid)
        {
            list.push(Entry::new(
                Role {
                    uuid: uuid.to_string(),
                    name: name.to_string(),
                    description: Some(description.to_string()),
                    inherited_roles: Vec::new(),
                    privileges: Vec::new(),
                    all_privileges: Vec::new(),
                    core: true,
                },
                crate::vfs::Layer::Base,
                Loc::None,
            ));
        } else if let Some(r) = list
            .iter_mut()
            .find(|r| r.value.name.eq_ignore_ascii_case(name))
        {
            r.value.core = true;
        }
    }
    let lookup = Lookup::new(
        list.iter()
            .map(|r| (r.value.name.as_str(), r.value.uuid.as_str())),
    );
    let name_of: HashMap<String, String> = list
        .iter()
        .map(|r| (r.value.uuid.clone(), r.value.name.clone()))
        .collect();
    for r in &mut list {
        let inherited = std::mem::take(&mut r.value.inherited_roles);
        r.value.inherited_roles = inherited
            .iter()
            .filter_map(|i| {
                lookup
                    .resolve(i, "Role", &r.at("inherited_roles").narrow(i), sink)
                    .map(|u| name_of[&u].clone())
            })
            .collect();
        let privs = std::mem::take(&mut r.value.privileges);
        // A role holds a set: the same privilege written twice (or in two spellings of
        // case) is granted once.
        let mut seen = BTreeSet::new();
        r.value.privileges = privs
            .iter()
            .map(|p| check_privilege(p, &r.at("privileges").narrow(p), sink))
            .filter(|p| seen.insert(p.to_lowercase()))
            .collect();
    }
    // Transitive privileges, with cycle detection over inheritance.
    let by_name: HashMap<String, usize> = list
        .iter()
        .enumerate()
        .map(|(i, r)| (r.value.name.clone(), i))
        .collect();
    let mut reported_cycle = BTreeSet::new();
    let mut totals = Vec::with_capacity(list.len());
    for start in 0..list.len() {
        let mut acc = BTreeSet::new();
        let mut stack = vec![(start, vec![start])];
        let mut visited = BTreeSet::new();
        while let Some((i, path)) = stack.pop() {
            if !visited.insert(i) {
                continue;
            }
            acc.extend(list[i].value.privileges.iter().cloned());
            for parent in &list[i].value.inherited_roles {
                let Some(&j) = by_name.get(parent) else {
                    continue;
                };
                if j == start {
                    let names: Vec<_> = path
                        .iter()
                        .chain([&start])
                        .map(|&k| list[k].value.name.clone())
                        .collect();
                    let mut key = names.clone();
                    key.sort();
                    if reported_cycle.insert(key) {
                        sink.emit(
                            Code::Cycle,
                            list[start].at("inherited_roles"),
                            format!("Role inheritance forms a cycle: {}", names.join(" → ")),
                        )
                        .help = Some(
                            "a role cannot inherit from itself, directly or through others".into(),
                        );
                    }
                    continue;
                }
                let mut p = path.clone();
                p.push(j);
                stack.push((j, p));
            }
        }
        if list[start].value.name == builtin::SUPER_USER_ROLE {
            acc.extend(privileges.iter().map(|p| p.name.clone()));
        }
        totals.push(acc.into_iter().collect::<Vec<_>>());
    }
    for (r, total) in list.iter_mut().zip(totals) {
        r.value.all_privileges = total;
    }
    sorted(list.into_iter().map(|e| e.value).collect(), |r| &r.uuid)
}

fn link_locations(
    locations: Registry<Location>,
    column_tags: &BTreeMap<String, Vec<String>>,
    tags: &Lookup,
    lookup: &Lookup,
    sink: &mut Sink,
) -> Vec<Location> {
    let mut list: Vec<Entry<Location>> = locations.items.into_values().collect();
    for e in &mut list {
        let written = std::mem::take(&mut e.value.tags);
        let mut resolved: Vec<String> = written
            .iter()
            .filter_map(|t| tags.resolve(t, "Location tag", &e.at("tags").narrow(t), sink))
            .chain(
                column_tags
                    .get(&e.value.uuid)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| tags.find(t)),
            )
            .collect();
        resolved.sort();
        resolved.dedup();
        e.value.tags = resolved;
        if let Some(parent) = e.value.parent.clone() {
            match lookup.find(&parent) {
                Some(p) => e.value.parent = Some(p),
                None => {
                    sink.invalid_parent(e.at("parent"), &parent, &e.value.name);
                    e.value.parent = None;
                }
            }
        }
    }
    // Parent cycles.
    let parent_of: HashMap<String, String> = list
        .iter()
        .filter_map(|e| Some((e.value.uuid.clone(), e.value.parent.clone()?)))
        .collect();
    let mut in_cycle = BTreeSet::new();
    for e in &list {
        let mut seen = vec![e.value.uuid.clone()];
        let mut cur = e.value.uuid.clone();
        while let Some(p) = parent_of.get(&cur) {
            if *p == e.value.uuid {
                if !in_cycle.contains(&e.value.uuid) {
                    let names: Vec<_> = seen
                        .iter()
                        .map(|u| {
                            list.iter()
                                .find(|l| &l.value.uuid == u)
                                .map_or(u.clone(), |l| l.value.name.clone())
                        })
                        .collect();
                    in_cycle.extend(seen.iter().cloned());
                    sink.emit(
                        Code::Cycle,
                        e.at("parent"),
                        format!(
                            "Location parents form a cycle: {} → {}",
                            names.join(" → "),
                            names[0]
                        ),
                    )
                    .help = Some("a location cannot be its own ancestor".into());
                }
                break;
            }
            if seen.contains(p) {
                break;
            }
            seen.push(p.clone());
            cur = p.clone();
        }
    }
    sorted(list.into_iter().map(|e| e.value).collect(), |l| &l.uuid)
}

fn check_global_properties(
    gps: &[(GlobalProperty, Loc)],
    index: &ConceptIndex,
    sink: &mut Sink,
) -> Locales {
    let get = |name: &str| gps.iter().find(|(g, _)| g.property == name);
    let mut locales = Locales {
        allowed: vec!["en".into()],
        default: "en".into(),
    };
    if let Some((gp, loc)) = get("locale.allowed.list") {
        let items: Vec<String> = gp
            .value
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        for l in &items {
            if !is_locale(l) {
                sink.emit(
                    Code::InvalidGlobalProperty,
                    loc,
                    format!("'locale.allowed.list' holds '{l}', which is not a locale code"),
                )
                .help = Some("write locales as `en`, `fr` or `en_GB`, separated by commas".into());
            }
        }
        if items.is_empty() {
            sink.emit(
                Code::InvalidGlobalProperty,
                loc,
                "'locale.allowed.list' is empty",
            );
        } else {
            locales.allowed = items;
        }
    }
    if let Some((gp, loc)) = get("default_locale") {
        let d = gp.value.trim().to_string();
        if !locales.allowed.contains(&d) {
            sink.emit(
                Code::InvalidGlobalProperty,
                loc,
                format!(
                    "'default_locale' is '{d}', which is not in 'locale.allowed.list' ({})",
                    locales.allowed.join(", ")
                ),
            )
            .help =
                Some("add it to locale.allowed.list, or choose one of the allowed locales".into());
        }
        locales.default = d;
    } else {
        locales.default = locales.allowed[0].clone();
    }
    if let Some((gp, loc)) = get("patient.identifier.regex")
        && !gp.value.trim().is_empty()
    {
        crate::domains::identifiers::check_regex(
            gp.value.trim(),
            "'patient.identifier.regex'",
            loc,
            sink,
        );
    }
    for name in [
        "visits.autoCloseVisitTimeout",
        "security.allowedFailedLoginsBeforeLockout",
        "security.unlockAccountWaitingTime",
        "minSearchCharacters",
        "webservices.rest.maxResultsDefault",
        "webservices.rest.maxResultsAbsolute",
    ] {
        if let Some((gp, loc)) = get(name)
            && gp.value.trim().parse::<u32>().is_err()
        {
            sink.emit(
                Code::InvalidGlobalProperty,
                loc,
                format!("'{name}' must be a whole number, not '{}'", gp.value.trim()),
            );
        }
    }
    // The concept sets order entry offers (routes, units, specimen sources): each must be
    // a concept of the content, or OpenMRS offers an empty list.
    for name in [
        "order.drugRoutesConceptUuid",
        "order.drugDosingUnitsConceptUuid",
        "order.drugDispensingUnitsConceptUuid",
        "order.durationUnitsConceptUuid",
        "order.testSpecimenSourcesConceptUuid",
    ] {
        if let Some((gp, loc)) = get(name)
            && !gp.value.trim().is_empty()
        {
            index.resolve(gp.value.trim(), loc, sink);
        }
    }
    if let Some((gp, loc)) = get("queue.service.concepts") {
        for reference in gp.value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            index.resolve(reference, loc, sink);
        }
    }
    locales
}

/// Core's ExistingOrNewVisitAssignmentHandler gives an encounter saved without a visit a
/// new one of the visit type `visits.encounterTypeToVisitTypeMapping` maps its encounter
/// type to (`encounterType:visitType, …`). Each side must name the content's metadata;
/// once the mapping is set, an encounter type it leaves out is refused a visit.
fn check_visit_assignment(gps: &[(GlobalProperty, Loc)], content: &Content, sink: &mut Sink) {
    let get = |name: &str| gps.iter().find(|(g, _)| g.property == name);
    const HANDLERS: [&str; 3] = [
        "org.openmrs.api.handler.ExistingVisitAssignmentHandler",
        "org.openmrs.api.handler.ExistingOrNewVisitAssignmentHandler",
        "org.openmrs.api.handler.NoVisitAssignmentHandler",
    ];
    let handler = get("visits.assignmentHandler").map(|(g, l)| (g.value.trim(), l));
    if let Some((name, loc)) = handler
        && !name.is_empty()
        && !HANDLERS.contains(&name)
    {
        sink.emit(
            Code::InvalidGlobalProperty,
            loc,
            format!("'visits.assignmentHandler' names '{name}', which is not one of core's visit assignment handlers"),
        )
        .help = Some(format!("use one of {}, or leave it empty for none", HANDLERS.join(", ")));
    }
    let Some((gp, loc)) = get("visits.encounterTypeToVisitTypeMapping") else {
        return;
    };
    if gp.value.trim().is_empty() {
        return;
    }
    // Core reads each side by uuid (or database id, which content cannot know): a name
    // would match nothing in OpenMRS, so it is refused here too.
    let by_name = |what: &str, r: &str| {
        format!(
            "'visits.encounterTypeToVisitTypeMapping' names the {what} '{r}' by its name, which core does not read"
        )
    };
    let mut mapped = Vec::new();
    for item in gp.value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // Each finding points at its own pair of the value.
        let loc = &loc.find_after(item, "</value>");
        let Some((from, to)) = item.split_once(':').map(|(a, b)| (a.trim(), b.trim())) else {
            sink.emit(
                Code::InvalidGlobalProperty,
                loc,
                format!("'visits.encounterTypeToVisitTypeMapping' holds '{item}', which is not `encounter type:visit type`"),
            )
            .help = Some("separate the encounter type from its visit type by a colon, the pairs by commas".into());
            continue;
        };
        if let Some(t) = content.encounter_types.iter().find(|t| t.uuid == from) {
            mapped.push(t.uuid.clone());
        } else if let Some(t) = content
            .encounter_types
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(from))
        {
            sink.emit(
                Code::InvalidGlobalProperty,
                loc,
                by_name("encounter type", from),
            )
            .help = Some(format!("write its uuid, {}", t.uuid));
        } else {
            sink.unknown_reference(loc, "EncounterType", from)
                .notes
                .push("in 'visits.encounterTypeToVisitTypeMapping'".into());
        }
        let live = || content.visit_types.iter().filter(|t| !t.retired);
        if live().any(|t| t.uuid == to) {
            continue;
        }
        if let Some(t) = live().find(|t| t.name.eq_ignore_ascii_case(to)) {
            sink.emit(Code::InvalidGlobalProperty, loc, by_name("visit type", to))
                .help = Some(format!("write its uuid, {}", t.uuid));
        } else {
            sink.unknown_reference(loc, "VisitType", to)
                .notes
                .push("in 'visits.encounterTypeToVisitTypeMapping' (a retired visit type is not given to new visits)".into());
        }
    }
    if handler.map(|(name, _)| name) != Some(HANDLERS[1]) {
        return;
    }
    for t in content.encounter_types.iter().filter(|t| !t.retired) {
        if !mapped.contains(&t.uuid) {
            sink.emit(
                Code::UnmappedEncounterType,
                loc,
                format!(
                    "Encounter type '{}' is not in 'visits.encounterTypeToVisitTypeMapping'",
                    t.name
                ),
            )
            .help = Some(format!(
                "add `{}:<visit type>`, or an encounter of this type saved without a visit is refused (400) where no visit of the patient holds it",
                t.uuid
            ));
        }
    }
}

fn build_indexes(concepts: &[Concept], sources: &[ConceptSource]) -> Indexes {
    let hl7: HashMap<String, String> = sources
        .iter()
        .filter_map(|s| Some((s.name.to_uppercase(), s.hl7_code.clone()?)))
        .collect();
    let mut indexes = Indexes::default();
    // Live concepts first, so a retired one never shadows a live one for the same code.
    let mut order: Vec<usize> = (0..concepts.len()).collect();
    order.sort_by_key(|&i| concepts[i].retired);
    for i in order {
        let c = &concepts[i];
        for m in &c.mappings {
            for key in std::iter::once(mapping_key(&m.source, &m.code)).chain(
                hl7.get(&m.source.to_uppercase())
                    .map(|h| mapping_key(h, &m.code)),
            ) {
                indexes.concept_by_mapping.entry(key).or_insert(i as u32);
            }
        }
    }
    for (i, c) in concepts.iter().enumerate() {
        for n in c
            .names
            .iter()
            .filter(|n| n.name_type == ConceptNameType::FullySpecified)
        {
            let list = indexes
                .concept_by_name
                .entry(n.name.to_lowercase())
                .or_default();
            if !list.contains(&(i as u32)) {
                list.push(i as u32);
            }
        }
    }
    indexes
}

/// Report definitions, read against everything they may name.
/// Reports and patient flags: both are read over the same names (flags' criteria are
/// reports' criteria).
fn link_reports(
    reports: Vec<crate::domains::reports::LoadedReport>,
    flag_files: Vec<crate::domains::reports::LoadedReport>,
    content: &Content,
    concepts: &ConceptIndex,
    sink: &mut Sink,
) -> (
    Vec<model::reports::ReportDefinition>,
    model::reports::PatientFlags,
) {
    fn named<'a>(items: impl Iterator<Item = (&'a str, &'a str)>) -> Lookup {
        Lookup::new(items)
    }
    let mut states: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for s in &content.program_workflow_states {
        if let Some(w) = content
            .program_workflows
            .iter()
            .find(|w| w.uuid == s.workflow)
        {
            states
                .entry(w.program.clone())
                .or_default()
                .push((s.uuid.clone(), s.concept.clone()));
        }
    }
    let names = crate::domains::reports::Names {
        concepts,
        default_locale: content.locales.default.clone(),
        visit_types: named(
            content
                .visit_types
                .iter()
                .map(|t| (t.name.as_str(), t.uuid.as_str())),
        ),
        encounter_types: named(
            content
                .encounter_types
                .iter()
                .map(|t| (t.name.as_str(), t.uuid.as_str())),
        ),
        programmes: named(
            content
                .programs
                .iter()
                .map(|p| (p.name.as_str(), p.uuid.as_str())),
        ),
        states,
        appointment_services: named(
            content
                .appointment_services
                .iter()
                .map(|s| (s.name.as_str(), s.uuid.as_str())),
        ),
        identifier_types: named(
            content
                .patient_identifier_types
                .iter()
                .map(|t| (t.name.as_str(), t.uuid.as_str())),
        ),
        person_attribute_types: named(
            content
                .person_attribute_types
                .iter()
                .map(|t| (t.name.as_str(), t.uuid.as_str())),
        ),
    };
    let roles = crate::domains::flags::Roles {
        lookup: named(
            content
                .roles
                .iter()
                .map(|r| (r.name.as_str(), r.uuid.as_str())),
        ),
        names: content
            .roles
            .iter()
            .map(|r| (r.uuid.clone(), r.name.clone()))
            .collect(),
    };
    (
        crate::domains::reports::compile(reports, &names, sink),
        crate::domains::flags::compile(flag_files, &names, &roles, sink),
    )
}

/// Initializer's `fhirconceptsources`: each names a concept source (by name, HL7 code,
/// unique id or uuid, case aside) and the absolute URL FHIR writes its codes under; one
/// URL per source and one source per URL, so that a coding read back names one source.
fn link_fhir_concept_sources(
    rows: Registry<FhirConceptSource>,
    sources: &[ConceptSource],
    sink: &mut Sink,
) -> Vec<FhirConceptSource> {
    let find = |reference: &str| {
        let r = reference.trim().to_lowercase();
        sources.iter().find(|s| {
            [
                Some(&s.name),
                s.hl7_code.as_ref(),
                s.unique_id.as_ref(),
                Some(&s.uuid),
            ]
            .into_iter()
            .flatten()
            .any(|k| k.to_lowercase() == r)
        })
    };
    let mut out: Vec<FhirConceptSource> = Vec::new();
    let mut url_of_source: BTreeMap<String, String> = BTreeMap::new();
    let mut source_of_url: BTreeMap<String, String> = BTreeMap::new();
    for (_, entry) in rows.items {
        let Some(source) = find(&entry.value.source) else {
            sink.unknown_reference(entry.at("source"), "concept source", &entry.value.source)
                .help = Some("define it in conceptsources/ (or check the spelling)".into());
            continue;
        };
        let url = entry.value.url.trim().to_string();
        let absolute = url.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty()
                && scheme
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        }) && !url.contains(char::is_whitespace);
        if !absolute {
            sink.emit(
                Code::InvalidValue,
                entry.at("url"),
                format!("'{url}' is not an absolute URI"),
            )
            .help = Some("FHIR code systems are absolute URIs, e.g. http://loinc.org".into());
            continue;
        }
        if let Some(url) = url_of_source.get(&source.name) {
            sink.emit(
                Code::InvalidValue,
                entry.at("source"),
                format!(
                    "Concept source '{}' has a FHIR code system already: {url}",
                    source.name
                ),
            )
            .help = Some("one URL per concept source".into());
            continue;
        }
        if let Some(other) = source_of_url.get(&url) {
            sink.emit(
                Code::InvalidValue,
                entry.at("url"),
                format!("'{url}' is the FHIR code system of concept source '{other}' already"),
            )
            .help = Some(
                "one concept source per URL, so that a coding read back names one source".into(),
            );
            continue;
        }
        url_of_source.insert(source.name.clone(), url.clone());
        source_of_url.insert(url.clone(), source.name.clone());
        out.push(FhirConceptSource {
            uuid: entry.value.uuid.clone(),
            source: source.name.clone(),
            url,
        });
    }
    out
}
