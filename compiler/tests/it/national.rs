//! A national package laid out as its implementers publish it: the package a dependency in
//! Maven's layout (`configuration/backend_configuration/`, `configuration/frontend_configuration/`,
//! placeholders resolved from its `pom.xml`), a thin base over it, a site over that, and the
//! national O3 configuration brought as the project's `frontend/config/config.json`, without
//! a French override of its own. Every mechanism the national package relies on is here, and
//! every defect such packages carry: each is reported at its place, the configuration it
//! gives is honoured, and with a baseline of the known defects the image builds.

use crate::fixture::materialize;
use compiler::diagnostics::{Baseline, Diagnostic};
use compiler::vfs::Selection;

const STATUS_SET: &str = "0a1b2c3d-0000-4000-8000-000000000001";
const PRIORITY_SET: &str = "0a1b2c3d-0000-4000-8000-000000000002";
const SERVICE: &str = "0a1b2c3d-0000-4000-8000-000000000003";
const SCREENED: &str = "0a1b2c3d-0000-4000-8000-000000000004";
const CLINICAL_VISIT: &str = "0a1b2c3d-0000-4000-8000-000000000010";
const ADMISSION: &str = "0a1b2c3d-0000-4000-8000-000000000011";
const TRIAGE_QUEUE: &str = "0a1b2c3d-0000-4000-8000-000000000020";
const NATIONAL_ID: &str = "0a1b2c3d-0000-4000-8000-000000000030";
const EXTRA_IDS: &str = "0a1b2c3d-0000-4000-8000-000000000031";
const MISSING: &str = "0a1b2c3d-0000-4000-8000-0000000000ff";

fn package() -> String {
    let backend = "content-packages/national/configuration/backend_configuration";
    let form = format!(
        r#"{{ "name": "Visite clinique", "version": "2.2", "published": true, "retired": false, "encounter": "Visite clinique",
  "pages": [ {{ "label": "P", "sections": [ {{ "label": "S", "questions": [
    {{ "id": "screened", "label": "Dépisté ?", "type": "obs", "questionOptions": {{ "rendering": "radio", "concept": "{SCREENED}",
      "answers": [ {{ "concept": "1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "label": "Oui" }}, {{ "concept": "1066AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "label": "Non" }} ] }} }},
    {{ "id": "missing", "label": "?", "type": "obs", "questionOptions": {{ "rendering": "text", "concept": "{MISSING}" }} }}
  ] }} ] }} ] }}"#
    );
    let config = format!(
        r#"{{
  "@openmrs/esm-patient-chart-app": {{
    "extensionSlots": {{
      "hiv-care-dashboard-slot": {{
        "add": ["encounter-list"],
        "configure": {{
          "encounter-list": {{
            "tabDefinitions": [ {{
              "tabName": "clinicalVisit",
              "encounterType": "{CLINICAL_VISIT}",
              "columns": [ {{ "id": "screened", "concept": "{SCREENED}" }} ],
              "formList": [ {{ "uuid": "8403d0d2-a88e-3f4e-b969-afa4d8c10563" }} ]
            }} ],
            "Translation overrides": {{ "fr": {{ "clinicalVisit": "Visite clinique" }} }}
          }}
        }}
      }}
    }}
  }},
  "@openmrs/esm-login-app": {{ "chooseLocation": {{ "numberToShow": 8 }} }}
}}"#
    );
    format!(
        "//- content.properties\nname=facility\nversion=1.0.0\ncontent.national=1.x\n\
         //- content-packages/national/content.properties\nname=${{project.artifactId}}\nversion=${{project.version}}\n\
         //- content-packages/national/pom.xml\n<project><artifactId>national</artifactId><version>1.2.0</version></project>\n\
         //- {backend}/concepts/concepts.csv\nUuid,Fully specified name:fr,Data class,Data type,Members\n\
         1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,Oui,Misc,N/A,\n\
         1066AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,Non,Misc,N/A,\n\
         0a1b2c3d-0000-4000-8000-000000000005,En attente,Misc,N/A,\n\
         0a1b2c3d-0000-4000-8000-000000000006,Normale,Misc,N/A,\n\
         {STATUS_SET},Statuts des files,ConvSet,N/A,0a1b2c3d-0000-4000-8000-000000000005\n\
         {PRIORITY_SET},Priorités des files,ConvSet,N/A,0a1b2c3d-0000-4000-8000-000000000006\n\
         {SERVICE},Service de triage,Misc,N/A,\n\
         {SCREENED},Dépistage fait,Question,Boolean,\n\
         //- {backend}/ocl/one_concept_v1_autoexpand-1.zip\nnot a zip archive\n\
         //- {backend}/globalproperties/queues.xml\n<config><globalProperties>\
         <globalProperty><property>queue.statusConceptSetName</property><value>Statuts des files</value></globalProperty>\
         <globalProperty><property>queue.priorityConceptSetName</property><value>{PRIORITY_SET}</value></globalProperty>\
         </globalProperties></config>\n\
         //- {backend}/encountertypes/types.csv\nUuid,Name\n{CLINICAL_VISIT},Visite clinique\n{ADMISSION},Admission\n\
         //- {backend}/locations/locations.csv\nUuid,Name,Tags\n0a1b2c3d-0000-4000-8000-000000000040,Triage,Queue Location\n\
         //- {backend}/queues/queues.csv\nUuid,Name,Service,Status concept set,Priority concept set,Location\n\
         {TRIAGE_QUEUE},File de triage,{SERVICE},,,Triage\n\
         //- {backend}/patientidentifiertypes/types.csv\nUuid,Name,Description\n{NATIONAL_ID},Numéro national,\n\
         //- {backend}/metadatasets/sets.csv\nUuid,Name,Description\n{EXTRA_IDS},Identifiants supplémentaires,\n\
         //- {backend}/metadatasetmembers/members.csv\nUuid,Metadata set uuid,Metadata class,Metadata uuid,Sort weight\n\
         0a1b2c3d-0000-4000-8000-000000000032,{EXTRA_IDS},org.openmrs.PatientIdentifierType,{NATIONAL_ID},1\n\
         //- {backend}/metadatatermmappings/emrapi.csv\nUuid,Mapping source,Mapping code,Metadata class name,Metadata Uuid\n\
         0a1b2c3d-0000-4000-8000-000000000050,org.openmrs.module.emrapi,emr.admissionEncounterType,org.openmrs.EncounterType,{ADMISSION}\n\
         0a1b2c3d-0000-4000-8000-000000000051,org.openmrs.module.emrapi,emr.extraPatientIdentifierTypes,org.openmrs.module.metadatamapping.MetadataSet,{EXTRA_IDS}\n\
         //- {backend}/ampathforms/visite.json\n{form}\n\
         //- openmrs_config/visittypes/visittypes.csv\nUuid,Name\n0a1b2c3d-0000-4000-8000-000000000060,Ambulatoire\n\
         //- sites/north/openmrs_config/locations/north.csv\nUuid,Name,Tags\n0a1b2c3d-0000-4000-8000-000000000041,Accueil,Login Location\n\
         //- frontend/config/translations.json\n{{\"@openmrs/esm-login-app\":{{\"Translation overrides\":{{\"fr\":{{\"logout\":\"Se déconnecter\"}}}}}}}}\n\
         //- frontend/config/config.json\n{config}\n"
    )
}

/// (code, file, line) of a finding.
fn at(d: &Diagnostic) -> (String, String, u32) {
    let p = d.position.as_ref();
    (
        d.code.clone(),
        p.map(|p| p.path.clone()).unwrap_or_default(),
        p.map_or(0, |p| p.line),
    )
}

#[test]
fn a_national_package_as_published_is_honoured_and_its_defects_shown_where_they_are() {
    let project = materialize(&package());
    crate::fixture::write(
        project.root(),
        "frontend/assets/logo.png",
        &crate::fixture::tiny_png(),
    );
    let c = compiler::compile(
        project.root(),
        &Selection::site("north"),
        &compiler::NoProgress,
    );
    let found: Vec<(String, String, u32)> = c.diagnostics.iter().map(at).collect();
    let backend = "content-packages/national/configuration/backend_configuration";
    for expected in [
        // The unreadable single-concept archive, and the unknown concept it does not hide.
        (
            "E0004",
            format!("{backend}/ocl/one_concept_v1_autoexpand-1.zip"),
            0,
        ),
        ("E0201", format!("{backend}/ampathforms/visite.json"), 5),
        // A formList uuid of an earlier version of the form.
        ("E0203", "frontend/config/config.json".to_string(), 12),
        // Translation overrides inside an extension's configuration.
        ("E0207", "frontend/config/config.json".to_string(), 14),
    ] {
        let expected = (expected.0.to_string(), expected.1, expected.2);
        assert!(found.contains(&expected), "{expected:?} in {found:#?}");
    }
    let errors: Vec<_> = c.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 4, "{found:#?}");

    // What the package configures is compiled: the queue without sets of its own (the
    // module's settings give them), the EMR API's term mappings and metadata set, the
    // yes/no answers, the encounter list's column (the form records it: no W0021).
    let queue = c
        .content
        .queues
        .iter()
        .find(|q| q.uuid == TRIAGE_QUEUE)
        .unwrap();
    assert_eq!(queue.status_concept_set, None);
    assert!(
        c.content
            .global_property("queue.statusConceptSetName")
            .is_some()
    );
    assert_eq!(
        c.content
            .term_mapping("org.openmrs.module.emrapi", "emr.admissionEncounterType")
            .map(|m| m.metadata_uuid.as_str()),
        Some(ADMISSION)
    );
    let set = &c.content.metadata_sets[0];
    assert_eq!(set.members[0].metadata_uuid, NATIONAL_ID);
    assert!(
        !found.iter().any(|(code, ..)| code == "W0021"),
        "{found:#?}"
    );
    // The distribution's French lies under the package's configuration.
    let config: serde_json::Value = serde_json::from_str(&c.content.frontend_config).unwrap();
    let login = &config["@openmrs/esm-login-app"];
    assert_eq!(
        login["Translation overrides"]["fr"]["logout"],
        "Se déconnecter"
    );
    assert_eq!(login["chooseLocation"]["numberToShow"], 8);

    // With the known defects in a baseline, the image builds; nothing else is left.
    let baseline = Baseline::from_diagnostics(&c.diagnostics);
    let (left, accepted) = baseline.apply(c.diagnostics.clone(), "baselines/national.json");
    assert!(!left.iter().any(Diagnostic::is_error), "{left:#?}");
    assert_eq!(accepted, c.diagnostics.len());
}
