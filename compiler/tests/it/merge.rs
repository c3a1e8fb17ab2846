//! How base, site, OCL and CSV definitions combine (docs/content.md, "Layers and overrides"), and how
//! references resolve (9.6).

use crate::fixture::materialize;
use compiler::vfs::Selection;
use model::Content;

fn compile(text: &str, selection: Selection) -> (Content, Vec<String>) {
    let project = materialize(text);
    let compiled = compiler::compile(project.root(), &selection, &compiler::NoProgress);
    let problems = compiled
        .diagnostics
        .iter()
        .map(|d| format!("{} {}", d.code, d.message))
        .collect();
    (compiled.content, problems)
}

const A: &str = "3f1c2b7e-9a4d-4c1e-8b2f-6d5e4c3b2a10";
const B: &str = "8a6e3c1d-2b4f-4e5a-9c7d-1e2f3a4b5c6d";
const C: &str = "c0ffee00-1234-4abc-8def-0123456789ab";

#[test]
fn a_site_file_replaces_the_base_file_with_the_same_path() {
    let text = format!(
        "//- openmrs_config/visittypes/visittypes.csv\nUuid,Name\n{A},Outpatient\n{B},Inpatient\n\
         //- sites/north/openmrs_config/visittypes/visittypes.csv\nUuid,Name\n{C},Day hospital\n"
    );
    let (distro, _) = compile(&text, Selection::distro());
    assert_eq!(distro.visit_types.len(), 2);
    let (site, problems) = compile(&text, Selection::site("north"));
    assert!(problems.is_empty(), "{problems:?}");
    let names: Vec<_> = site.visit_types.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["Day hospital"]);
}

#[test]
fn a_site_entity_with_a_base_uuid_overrides_it_without_a_duplicate_error() {
    let text = format!(
        "//- openmrs_config/visittypes/visittypes.csv\nUuid,Name,Description\n{A},Outpatient,base\n{B},Inpatient,base\n\
         //- sites/north/openmrs_config/visittypes/north.csv\nUuid,Name,Description\n{A},Outpatient,north\n\
         //- openmrs_config/globalproperties/gp.xml\n<config><globalProperties><globalProperty><property>visits.autoCloseVisitTimeout</property><value>24</value></globalProperty></globalProperties></config>\n\
         //- sites/north/openmrs_config/globalproperties/north.xml\n<config><globalProperties><globalProperty><property>visits.autoCloseVisitTimeout</property><value>12</value></globalProperty></globalProperties></config>\n"
    );
    let (site, problems) = compile(&text, Selection::site("north"));
    assert!(problems.is_empty(), "{problems:?}");
    let a = site.visit_types.iter().find(|v| v.uuid == A).unwrap();
    assert_eq!(a.description.as_deref(), Some("north"));
    assert_eq!(site.visit_types.len(), 2);
    assert_eq!(
        site.global_property("visits.autoCloseVisitTimeout")
            .unwrap()
            .value,
        "12"
    );
}

fn ocl(concepts: &str, mappings: &str) -> String {
    format!(
        "{{\"type\":\"Collection Version\",\"concepts\":[{concepts}],\"mappings\":[{mappings}]}}\n"
    )
}

fn ocl_concept(id: &str, class: &str, name: &str) -> String {
    format!(
        "{{\"id\":\"{id}\",\"external_id\":\"{id}AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"concept_class\":\"{class}\",\"datatype\":\"N/A\",\
         \"source\":\"CIEL\",\"url\":\"/orgs/CIEL/sources/CIEL/concepts/{id}/\",\
         \"names\":[{{\"name\":\"{name}\",\"locale\":\"en\",\"name_type\":\"FULLY_SPECIFIED\",\"locale_preferred\":true}}]}}"
    )
}

fn ocl_mapping(kind: &str, from: &str, to: &str) -> String {
    format!(
        "{{\"map_type\":\"{kind}\",\"from_concept_url\":\"/orgs/CIEL/sources/CIEL/concepts/{from}/\",\
         \"to_concept_url\":\"/orgs/CIEL/sources/CIEL/concepts/{to}/\",\"to_source_name\":\"CIEL\",\"to_concept_code\":\"{to}\"}}"
    )
}

#[test]
fn a_later_archive_replaces_names_and_class_while_relations_accumulate() {
    let first = ocl(
        &[
            ocl_concept("1000", "Misc", "Result"),
            ocl_concept("1065", "Misc", "Yes"),
        ]
        .join(","),
        &[
            ocl_mapping("SAME-AS", "1000", "1000"),
            ocl_mapping("Q-AND-A", "1000", "1065"),
        ]
        .join(","),
    );
    // The second archive redefines 1000 and answers with a concept of a third archive.
    let second = ocl(
        &ocl_concept("1000", "Question", "Test result"),
        &[
            ocl_mapping("Q-AND-A", "1000", "1066"),
            ocl_mapping("NARROWER-THAN", "1000", "9999"),
        ]
        .join(","),
    );
    let third = ocl(&ocl_concept("1066", "Misc", "No"), "");
    let text = format!(
        "//- openmrs_config/ocl/a_core_v1_autoexpand-1.zip!export.json\n{first}\
         //- openmrs_config/ocl/b_core_v2_autoexpand-1.zip!export.json\n{second}\
         //- openmrs_config/ocl/c_core_v1_autoexpand-1.zip!export.json\n{third}"
    );
    let (content, problems) = compile(&text, Selection::distro());
    assert!(problems.is_empty(), "{problems:?}");
    let c = content
        .concept("1000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
        .unwrap();
    assert_eq!(c.class, "Question");
    assert_eq!(c.names.len(), 1);
    assert_eq!(c.names[0].name, "Test result");
    assert_eq!(
        c.answers,
        [
            "1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "1066AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        ]
    );
    assert_eq!(c.mappings.len(), 2, "{:?}", c.mappings);
    // SAME-AS mappings make SOURCE:CODE references work, in the bundle's index too.
    assert_eq!(
        content
            .concept_by_reference("CIEL:1000")
            .map(|c| c.uuid.as_str()),
        Some(c.uuid.as_str())
    );
    assert_eq!(
        content
            .concept_by_reference("ciel:1000")
            .map(|c| c.uuid.as_str()),
        Some(c.uuid.as_str())
    );
}

/// The reference application's SOAP template exports concepts whose `external_id` is a uuid
/// without dashes; OpenMRS keeps it as written, and the demo's SOAP note form names them so.
#[test]
fn an_ocl_concept_keeps_a_uuid_written_without_dashes() {
    let dashless = "81a60a0dbc0c478caa714d372ac533d5";
    let concept = ocl_concept("1000", "Question", "Subjective findings")
        .replace("1000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", dashless);
    let text = format!(
        "//- openmrs_config/ocl/a_core_v1_autoexpand-1.zip!export.json\n{}",
        ocl(&concept, "")
    );
    let (content, problems) = compile(&text, Selection::distro());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("W0006"), "{problems:?}");
    let c = content
        .concept(dashless)
        .expect("kept under its uuid as written");
    assert_eq!(c.names[0].name, "Subjective findings");
    // Anything else that is not a uuid is still refused.
    let bad = ocl_concept("1001", "Question", "Bad")
        .replace("1001AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "not-a-uuid");
    let text = format!(
        "//- openmrs_config/ocl/a_core_v1_autoexpand-1.zip!export.json\n{}",
        ocl(&bad, "")
    );
    let (_, problems) = compile(&text, Selection::distro());
    assert!(
        problems.iter().any(|p| p.starts_with("E0106")),
        "{problems:?}"
    );
}

#[test]
fn a_csv_row_overrides_an_ocl_concept_and_keeps_answers_it_does_not_cover() {
    let archive = ocl(
        &[
            ocl_concept("1000", "Misc", "Result"),
            ocl_concept("1065", "Misc", "Yes"),
        ]
        .join(","),
        &[
            ocl_mapping("SAME-AS", "1000", "1000"),
            ocl_mapping("Q-AND-A", "1000", "1065"),
        ]
        .join(","),
    );
    let text = format!(
        "//- openmrs_config/ocl/a_core_v1_autoexpand-1.zip!export.json\n{archive}\
         //- openmrs_config/conceptsources/s.csv\nUuid,Name,Description,HL7 Code\n{A},Local,,LCL\n\
         //- openmrs_config/concepts/c.csv\nUuid,Fully specified name:en,Fully specified name:fr,Data class,Data type,Same as mappings\n\
         1000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,Result of test,Résultat,Question,Coded,Local:R1\n"
    );
    let (content, problems) = compile(&text, Selection::distro());
    assert!(problems.is_empty(), "{problems:?}");
    let c = content
        .concept("1000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
        .unwrap();
    assert_eq!(c.datatype, "Coded");
    assert_eq!(c.names.len(), 2);
    assert_eq!(c.answers, ["1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]);
    // The CSV row's mappings replace the archive's (as Initializer clears them).
    assert_eq!(c.mappings.len(), 1);
    assert!(matches!(c.origin, model::ConceptOrigin::Csv(_)));
    // By source name or by HL7 code.
    assert!(content.concept_by_reference("Local:R1").is_some());
    assert!(content.concept_by_reference("LCL:r1").is_some());
    assert!(content.concept_by_reference("CIEL:1000").is_none());
}

#[test]
fn concept_references_resolve_by_uuid_mapping_and_name_in_any_order() {
    let text = format!(
        "//- openmrs_config/conceptsources/s.csv\nUuid,Name,Description\n{A},Local,\n\
         //- openmrs_config/concepts/c.csv\nUuid,Fully specified name:en,Fully specified name:fr,Data class,Data type,Answers,Same as mappings\n\
         2000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,Question,Question posée,Question,Coded,oui ; Local:N;3000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,\n\
         1000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,Yes,Oui,Misc,N/A,,\n\
         1001AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,No,Non,Misc,N/A,,Local:N\n\
         3000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,Maybe,Peut-être,Misc,N/A,,\n"
    );
    let (content, problems) = compile(&text, Selection::distro());
    assert!(problems.is_empty(), "{problems:?}");
    let q = content
        .concept("2000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
        .unwrap();
    assert_eq!(
        q.answers,
        [
            "1000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "1001AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "3000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        ]
    );
    assert_eq!(content.indexes.concept_by_name["oui"].len(), 1);
}

#[test]
fn roles_inherit_privileges_transitively_and_system_developer_holds_all() {
    let text = format!(
        "//- openmrs_config/privileges/p.csv\nUuid,Privilege name,Description\n{C},Take Backups,\n\
         //- openmrs_config/roles/r.csv\nUuid,Role name,Inherited roles,Privileges\n\
         {A},Clerk,,Get Patients\n{B},Nurse,Clerk,Get Encounters;Take Backups\n"
    );
    let (content, problems) = compile(&text, Selection::distro());
    assert!(problems.is_empty(), "{problems:?}");
    let nurse = content.roles.iter().find(|r| r.name == "Nurse").unwrap();
    assert_eq!(
        nurse.all_privileges,
        ["Get Encounters", "Get Patients", "Take Backups"]
    );
    let dev = content
        .roles
        .iter()
        .find(|r| r.name == "System Developer")
        .unwrap();
    assert!(dev.all_privileges.iter().any(|p| p == "Take Backups"));
    assert!(
        dev.all_privileges
            .iter()
            .any(|p| p == "Manage Global Properties")
    );
}

#[test]
fn locations_resolve_parents_by_name_and_tags_by_either_column() {
    let text = format!(
        "//- openmrs_config/locationtags/t.csv\nUuid,Name\n{C},Login Location\n\
         //- openmrs_config/locations/l.csv\nUuid,Name,Parent,Tag|Login Location\n\
         {B},Ward,Hospital,TRUE\n{A},Hospital,,false\n"
    );
    let (content, problems) = compile(&text, Selection::distro());
    assert!(problems.is_empty(), "{problems:?}");
    let ward = content.locations.iter().find(|l| l.name == "Ward").unwrap();
    assert_eq!(ward.parent.as_deref(), Some(A));
    assert_eq!(ward.tags, [C]);
}

#[test]
fn the_site_front_end_config_merges_over_the_base() {
    let png = crate::fixture::tiny_png();
    let project = materialize(&format!(
        "//- openmrs_config/visittypes/v.csv\nUuid,Name\n{A},Outpatient\n\
         //- frontend/config/config.json\n{{\"@openmrs/esm-login-app\":{{\"chooseLocation\":{{\"numberToShow\":8,\"locationsPerRequest\":50}}}},\"@openmrs/esm-styleguide\":{{\"Brand color #1\":\"#005d5d\"}}}}\n\
         //- sites/north/frontend/config.json\n{{\"@openmrs/esm-login-app\":{{\"chooseLocation\":{{\"numberToShow\":12}}}}}}\n\
         //- sites/north/openmrs_config/visittypes/n.csv\nUuid,Name\n"
    ));
    crate::fixture::write(project.root(), "frontend/assets/logo.png", &png);
    let compiled = compiler::compile(
        project.root(),
        &Selection::site("north"),
        &compiler::NoProgress,
    );
    assert!(
        compiled.diagnostics.is_empty(),
        "{:?}",
        compiled.diagnostics
    );
    let config: serde_json::Value =
        serde_json::from_str(&compiled.content.frontend_config).unwrap();
    assert_eq!(
        config["@openmrs/esm-login-app"]["chooseLocation"]["numberToShow"],
        12
    );
    assert_eq!(
        config["@openmrs/esm-login-app"]["chooseLocation"]["locationsPerRequest"],
        50
    );
    assert_eq!(
        config["@openmrs/esm-styleguide"]["Brand color #1"],
        "#005d5d"
    );
    assert_eq!(compiled.content.logo_png, png);
}

#[test]
fn what_modules_create_at_start_up_needs_no_definition() {
    // Roles naming privileges of core and of the modules, locations tagged with the tags
    // modules (or OpenMRS tooling) provide: no warning, no error, and the tags are kept.
    let text = format!(
        "//- openmrs_config/roles/roles.csv\nUuid,Role name,Privileges\n\
         {A},Caissier,View Cashier Bills;Manage Queue Entries;Get Conditions;Get conditions;View Appointments;Manage Identifier Sources;Get Medication Dispense\n\
         //- openmrs_config/locations/locations.csv\nUuid,Name,Tags,Tag|Admission Location\n\
         {B},Pavillon,Login Location;Visit Location;Queue Location;Main Pharmacy,TRUE\n"
    );
    let (content, problems) = compile(&text, Selection::distro());
    assert!(problems.is_empty(), "{problems:?}");
    let location = content.locations.iter().find(|l| l.uuid == B).unwrap();
    assert_eq!(location.tags.len(), 5);
    // Well-known uuids where the module (or the O3 modules' defaults) fix them.
    assert!(
        location
            .tags
            .contains(&"1c783dca-fd54-4ea8-a0fc-2875374e9cb6".to_string())
    );
    assert!(
        location
            .tags
            .contains(&"b8bbf83e-645f-451f-8efe-a0db56f09676".to_string())
    );
    let role = content.roles.iter().find(|r| r.uuid == A).unwrap();
    assert_eq!(role.privileges.len(), 6, "{:?}", role.privileges);
}

#[test]
fn billing_and_appointments_content_is_checked_and_carried() {
    let text = format!(
        "//- openmrs_config/locations/locations.csv\nUuid,Name,Tags\n{A},Accueil,Appointment Location\n\
         //- openmrs_config/paymentmodes/paymentmodes.csv\nUuid,Name\n{B},Espèces\n\
         //- openmrs_config/cashpoints/cashpoints.csv\nUuid,Name,Location\n{C},Caisse,{A}\n\
         //- openmrs_config/appointmentspecialities/s.csv\nUuid,Name\n9f2a8cd0-32c6-4844-8df7-1ac9c4d79943,Médecine générale\n\
         //- openmrs_config/appointmentservicedefinitions/d.csv\nUuid,Name,Start Time,End Time,Speciality,Location\n\
         7ba3aa21-cc56-47ca-bb4d-a60549f666c0,Consultation,8:00,16:30,9f2a8cd0-32c6-4844-8df7-1ac9c4d79943,Accueil\n\
         //- openmrs_config/appointmentservicetypes/t.csv\nUuid,Name,Service Definition\n2b9c3d4e-5f60-4a1b-8c2d-3e4f5a6b7c8d,Suivi,consultation\n"
    );
    let (content, problems) = compile(&text, Selection::distro());
    assert!(problems.is_empty(), "{problems:?}");
    let carried: Vec<&str> = content
        .opaque_files
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        carried,
        [
            "appointmentservicedefinitions/d.csv",
            "appointmentservicetypes/t.csv",
            "appointmentspecialities/s.csv",
            "cashpoints/cashpoints.csv"
        ]
    );
}

#[test]
fn a_tag_column_is_checked_even_when_the_first_row_is_unusable() {
    let text = format!(
        "//- openmrs_config/locations/locations.csv\nUuid,Name,Tag|Nowhere Location\n\
         {A},,TRUE\n{B},Pavillon,TRUE\n"
    );
    let (_, problems) = compile(&text, Selection::distro());
    assert!(
        problems
            .iter()
            .any(|p| p
                .starts_with("E0203 Location tag 'Nowhere Location' of a Tag| column not found")),
        "{problems:?}"
    );
}

#[test]
fn order_types_add_to_cores_with_their_parent_and_concept_classes_resolved() {
    let text = format!(
        "//- openmrs_config/ordertypes/ordertypes.csv\n\
         Uuid,Void/Retire,Name,Description,Java class name,Parent,Concept classes\n\
         {A},,Imagerie,Examens d'imagerie,org.openmrs.TestOrder,Test Order,Procedure;Test\n\
         {B},,Radiographie,,org.openmrs.TestOrder,{A},\n\
         {C},,Pansement,,org.openmrs.Procedure,,\n"
    );
    let (content, problems) = compile(&text, Selection::distro());
    // Core's drug and test order types are always there; a class core does not know is
    // refused at its cell.
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].ends_with("'org.openmrs.Procedure' is not an order class OpenMRS knows"),
        "{problems:?}"
    );
    let names: Vec<_> = content
        .order_types
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let imaging = content.order_types.iter().find(|t| t.uuid == A).unwrap();
    assert_eq!(
        imaging.parent.as_deref(),
        Some("52a447d3-a64a-11e3-9aeb-50e549534c5e")
    );
    assert_eq!(
        imaging.concept_classes,
        [
            "8d490bf4-c2cc-11de-8d13-0010c6dffd0f",
            "8d4907b2-c2cc-11de-8d13-0010c6dffd0f"
        ]
    );
    let xray = content.order_types.iter().find(|t| t.uuid == B).unwrap();
    assert_eq!(xray.parent.as_deref(), Some(A));
    assert_eq!(content.care_settings.len(), 2);
}

#[test]
fn an_order_type_parent_cycle_or_unknown_reference_is_reported() {
    let text = format!(
        "//- openmrs_config/ordertypes/ordertypes.csv\n\
         Uuid,Name,Java class name,Parent,Concept classes\n\
         {A},Un,org.openmrs.Order,Deux,\n\
         {B},Deux,org.openmrs.Order,Un,Nulle part\n"
    );
    let (_, problems) = compile(&text, Selection::distro());
    assert!(
        problems.iter().any(|p| p.contains("its own ancestor")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("Nulle part")),
        "{problems:?}"
    );
}

#[test]
fn the_distributions_translations_lie_under_any_configuration() {
    // An implementer's own config.json, without a single translation override, keeps the
    // distribution's French; where it translates a string itself, its text wins.
    let png = crate::fixture::tiny_png();
    let project = materialize(&format!(
        "//- openmrs_config/visittypes/v.csv\nUuid,Name\n{A},Outpatient\n\
         //- frontend/config/translations.json\n{{\"@openmrs/esm-login-app\":{{\"Translation overrides\":{{\"fr\":{{\"logout\":\"Déconnexion\",\"login\":\"Connexion\"}}}}}}}}\n\
         //- frontend/config/config.json\n{{\"@openmrs/esm-login-app\":{{\"chooseLocation\":{{\"numberToShow\":8}},\"Translation overrides\":{{\"fr\":{{\"login\":\"Se connecter\"}}}}}}}}\n"
    ));
    crate::fixture::write(project.root(), "frontend/assets/logo.png", &png);
    let compiled = compiler::compile(project.root(), &Selection::distro(), &compiler::NoProgress);
    assert!(
        compiled.diagnostics.is_empty(),
        "{:?}",
        compiled.diagnostics
    );
    let config: serde_json::Value =
        serde_json::from_str(&compiled.content.frontend_config).unwrap();
    let login = &config["@openmrs/esm-login-app"];
    assert_eq!(
        login["Translation overrides"]["fr"]["logout"],
        "Déconnexion"
    );
    assert_eq!(
        login["Translation overrides"]["fr"]["login"],
        "Se connecter"
    );
    assert_eq!(login["chooseLocation"]["numberToShow"], 8);
}

#[test]
fn a_retired_metadata_set_takes_its_members_out_without_an_error() {
    let text = format!(
        "//- openmrs_config/patientidentifiertypes/t.csv\nUuid,Name,Description\n{A},Numéro national,\n\
         //- openmrs_config/metadatasets/sets.csv\nUuid,Void/Retire,Name\n{B},true,Ancien ensemble\n\
         //- openmrs_config/metadatasetmembers/m.csv\nUuid,Metadata set uuid,Metadata class,Metadata uuid\n\
         {C},{B},org.openmrs.PatientIdentifierType,{A}\n"
    );
    let (content, problems) = compile(&text, Selection::distro());
    assert!(problems.is_empty(), "{problems:?}");
    assert!(content.metadata_sets.is_empty());
}
