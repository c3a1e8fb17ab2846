//! Content packages the base depends on (`content.properties`, `content-packages/`):
//! resolution order, layering across dependency, base and site, versions, placeholders
//! and cycles (docs/content.md, "Content packages the base depends on").

use crate::fixture::materialize;
use compiler::vfs::Selection;

const A: &str = "3f1c2b7e-9a4d-4c1e-8b2f-6d5e4c3b2a10";
const B: &str = "8a6e3c1d-2b4f-4e5a-9c7d-1e2f3a4b5c6d";
const C: &str = "c0ffee00-1234-4abc-8def-0123456789ab";

fn problems(c: &compiler::Compiled) -> Vec<String> {
    c.diagnostics
        .iter()
        .map(|d| format!("{} {}", d.code, d.message))
        .collect()
}

/// A published package (`refapp`, Maven placeholders, front-end configuration) that needs
/// this project's own `core` package; the base needs `refapp`; a site on top.
fn three_layers() -> String {
    format!(
        "//- content.properties\nname=facility\nversion=2.0.0\ncontent.refapp=>=1.1.2-SNAPSHOT\n\
         //- content-packages/refapp/content.properties\nname=${{project.artifactId}}\nversion=${{project.version}}\ncontent.core=1.x\nomod.fhir2=>=2.0.0\n\
         //- content-packages/refapp/pom.xml\n<project><parent><artifactId>content-parent</artifactId><version>1.1.2-SNAPSHOT</version></parent><artifactId>refapp-content</artifactId></project>\n\
         //- content-packages/refapp/configuration/backend_configuration/locationtags/tags.csv\nUuid,Name\n{C},Triage Location\n\
         //- content-packages/refapp/configuration/backend_configuration/visittypes/visittypes.csv\nUuid,Name,Description\n{A},Outpatient,refapp\n\
         //- content-packages/refapp/configuration/frontend_configuration/refapp.json\n{{\"@openmrs/esm-login-app\":{{\"chooseLocation\":{{\"enabled\":true,\"numberToShow\":3}}}}}}\n\
         //- content-packages/core/content.properties\nname=core\nversion=1.3.0\n\
         //- content-packages/core/openmrs_config/visittypes/visittypes.csv\nUuid,Name,Description\n{A},Outpatient,core\n{B},Inpatient,core\n\
         //- content-packages/core/openmrs_config/encountertypes/core.csv\nUuid,Name,Description\n{B},Consultation,core\n\
         //- openmrs_config/visittypes/visittypes.csv\nUuid,Name,Description\n{A},Outpatient,base\n\
         //- openmrs_config/locations/locations.csv\nUuid,Name,Tags\n{B},Triage,Triage Location\n\
         //- frontend/config/config.json\n{{\"@openmrs/esm-login-app\":{{\"chooseLocation\":{{\"numberToShow\":8}}}}}}\n\
         //- sites/north/openmrs_config/encountertypes/north.csv\nUuid,Name,Description\n{B},Consultation,north\n"
    )
}

#[test]
fn dependencies_are_laid_down_first_and_later_layers_win() {
    let project = materialize(&three_layers());
    let c = compiler::compile(
        project.root(),
        &Selection::site("north"),
        &compiler::NoProgress,
    );
    // The only problem is the missing logo, which this project does not carry.
    let found: Vec<String> = problems(&c)
        .into_iter()
        .filter(|p| !p.starts_with("E0208"))
        .collect();
    assert!(found.is_empty(), "{found:?}");
    let layers: Vec<(String, String, Option<String>)> = c
        .header
        .layers
        .iter()
        .map(|l| (l.role.clone(), l.name.clone(), l.version.clone()))
        .collect();
    assert_eq!(
        layers,
        [
            ("dependency".into(), "core".into(), Some("1.3.0".into())),
            (
                "dependency".into(),
                "refapp".into(),
                Some("1.1.2-SNAPSHOT".into())
            ),
            ("base".into(), "facility".into(), Some("2.0.0".into())),
            ("site".into(), "north".into(), None),
        ]
    );
    // The base's visittypes.csv replaces the same path in `core`: Inpatient is gone, and
    // the Outpatient of `refapp` (another file, same uuid) is overridden by the base.
    let visit_types: Vec<_> = c
        .content
        .visit_types
        .iter()
        .map(|v| (v.name.as_str(), v.description.as_deref()))
        .collect();
    assert_eq!(visit_types, [("Outpatient", Some("base"))]);
    // A uuid of `core` overridden by the site, three layers up.
    let consultation = &c.content.encounter_types[0];
    assert_eq!(consultation.description.as_deref(), Some("north"));
    // A tag the dependency defines serves the base's locations.
    let triage = c.content.locations.iter().find(|l| l.uuid == B).unwrap();
    assert_eq!(triage.tags, [C]);
    // Front-end configuration: the dependency's file first, the project's over it.
    let fe: serde_json::Value = serde_json::from_str(&c.content.frontend_config).unwrap();
    let choose = &fe["@openmrs/esm-login-app"]["chooseLocation"];
    assert_eq!(choose["enabled"], true);
    assert_eq!(choose["numberToShow"], 8);
}

#[test]
fn the_content_hash_follows_the_dependencies() {
    let text = three_layers();
    let first = materialize(&text);
    let a = compiler::compile(first.root(), &Selection::distro(), &compiler::NoProgress);
    let again = compiler::compile(first.root(), &Selection::distro(), &compiler::NoProgress);
    assert_eq!(a.encode(), again.encode());
    let changed = materialize(&text.replace("Consultation,core", "Consultation,changed"));
    let b = compiler::compile(changed.root(), &Selection::distro(), &compiler::NoProgress);
    assert_ne!(a.header.content_hash, b.header.content_hash);
}

#[test]
fn a_cycle_is_reported_where_it_closes() {
    let text = "//- content.properties\ncontent.a=*\n\
                //- content-packages/a/content.properties\nversion=1.0\ncontent.b=>=1\n\
                //- content-packages/a/openmrs_config/visittypes/a.csv\nUuid,Name\n\
                //- content-packages/b/content.properties\nversion=1.0\ncontent.a=>=1\n\
                //- content-packages/b/openmrs_config/visittypes/b.csv\nUuid,Name\n\
                //- openmrs_config/visittypes/v.csv\nUuid,Name\n";
    let project = materialize(text);
    let c = compiler::compile(project.root(), &Selection::distro(), &compiler::NoProgress);
    let found = problems(&c);
    assert!(
        found.contains(&"E0205 Content package dependency cycle: a → b → a".to_string()),
        "{found:?}"
    );
    let d = c.diagnostics.iter().find(|d| d.code == "E0205").unwrap();
    let p = d.position.as_ref().unwrap();
    assert_eq!(
        (p.path.as_str(), p.line),
        ("content-packages/b/content.properties", 2)
    );
}

#[test]
fn every_range_asked_of_a_shared_dependency_is_checked() {
    // base → a, base → b, b → a with a range a's version is outside.
    let text = "//- content.properties\ncontent.a=^1.0.0\ncontent.b=^1.0.0\n\
                //- content-packages/a/content.properties\nversion=1.4.0\n\
                //- content-packages/a/openmrs_config/visittypes/a.csv\nUuid,Name\n\
                //- content-packages/b/content.properties\nversion=1.0.0\ncontent.a=[1.5,2.0)\n\
                //- content-packages/b/openmrs_config/visittypes/b.csv\nUuid,Name\n\
                //- openmrs_config/visittypes/v.csv\nUuid,Name\n";
    let project = materialize(text);
    let c = compiler::compile(project.root(), &Selection::distro(), &compiler::NoProgress);
    assert_eq!(
        problems(&c),
        ["E0006 Content package 'a' is version 1.4.0, outside the range '[1.5,2.0)' required here"]
    );
}

#[test]
fn placeholders_without_a_pom_and_packages_without_configuration_are_errors() {
    let text = "//- content.properties\ncontent.a=*\ncontent.b=*\n\
                //- content-packages/a/content.properties\nversion=${project.version}\n\
                //- content-packages/a/openmrs_config/visittypes/a.csv\nUuid,Name\n\
                //- content-packages/b/content.properties\nversion=1.0\n\
                //- content-packages/b/README.md\nnothing here\n\
                //- openmrs_config/visittypes/v.csv\nUuid,Name\n";
    let project = materialize(text);
    let c = compiler::compile(project.root(), &Selection::distro(), &compiler::NoProgress);
    assert_eq!(
        problems(&c),
        [
            "E0006 Placeholder '${project.version}' in 'version' cannot be resolved",
            "E0006 Content package 'b' holds no configuration",
        ]
    );
}

#[test]
fn the_layer_decides_an_override_not_names_or_file_order() {
    // `zeta` is laid down first (the base names it first and `alpha` needs it), though
    // its name sorts last; the base's file has an `_order` and the dependencies' do not.
    let text = format!(
        "//- content.properties\ncontent.zeta=*\ncontent.alpha=*\n\
         //- content-packages/zeta/content.properties\nversion=1.0\n\
         //- content-packages/zeta/openmrs_config/visittypes/z.csv\nUuid,Name,Description\n{A},Outpatient,zeta\n{B},Inpatient,zeta\n\
         //- content-packages/zeta/openmrs_config/ocl/z_dict_v1_autoexpand-1.zip!export.json\n{}\n\
         //- content-packages/alpha/content.properties\nversion=1.0\ncontent.zeta=*\n\
         //- content-packages/alpha/openmrs_config/visittypes/a.csv\nUuid,Name,Description\n{A},Outpatient,alpha\n\
         //- content-packages/alpha/openmrs_config/ocl/a_dict_v1_autoexpand-1.zip!export.json\n{}\n\
         //- openmrs_config/visittypes/base.csv\nUuid,Name,Description,_order:1\n{B},Inpatient,base\n",
        ocl_concept("Fièvre (zeta)"),
        ocl_concept("Fièvre (alpha)"),
    );
    let project = materialize(&text);
    let c = compiler::compile(project.root(), &Selection::distro(), &compiler::NoProgress);
    assert!(problems(&c).is_empty(), "{:?}", problems(&c));
    let layers: Vec<&str> = c.header.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(layers, ["zeta", "alpha", "openmrs_config"]);
    let described: Vec<_> = c
        .content
        .visit_types
        .iter()
        .map(|v| (v.name.as_str(), v.description.as_deref()))
        .collect();
    assert_eq!(
        described,
        [("Outpatient", Some("alpha")), ("Inpatient", Some("base"))]
    );
    // The later package's archive wins for the same concept.
    let concept = &c.content.concepts[0];
    assert_eq!(concept.names[0].name, "Fièvre (alpha)");
}

fn ocl_concept(name: &str) -> String {
    format!(
        "{{\"type\":\"Collection Version\",\"concepts\":[{{\"id\":\"1\",\"external_id\":\"140238AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"concept_class\":\"Diagnosis\",\"datatype\":\"N/A\",\"url\":\"/orgs/X/sources/X/concepts/1/\",\"names\":[{{\"name\":\"{name}\",\"locale\":\"fr\",\"name_type\":\"FULLY_SPECIFIED\"}}]}}],\"mappings\":[]}}"
    )
}

#[test]
fn a_package_name_that_is_a_path_is_refused_as_a_name() {
    for bad in ["..", "../x", "a/b", ".hidden"] {
        let text = format!(
            "//- content.properties\ncontent.{bad}=*\n//- openmrs_config/visittypes/v.csv\nUuid,Name\n"
        );
        let project = materialize(&text);
        let c = compiler::compile(project.root(), &Selection::distro(), &compiler::NoProgress);
        assert_eq!(
            problems(&c),
            [format!("E0006 '{bad}' is not a content package name")],
            "{bad}"
        );
    }
}

#[test]
fn a_version_problem_is_reported_once() {
    let text = "//- content.properties\ncontent.a=>=1.0\n\
                //- content-packages/a/content.properties\nversion=next-one\n\
                //- content-packages/a/openmrs_config/visittypes/a.csv\nUuid,Name\n\
                //- openmrs_config/visittypes/v.csv\nUuid,Name\n";
    let project = materialize(text);
    let c = compiler::compile(project.root(), &Selection::distro(), &compiler::NoProgress);
    assert_eq!(
        problems(&c),
        ["E0006 Version 'next-one' of content package 'a' is not a version"]
    );
}

#[test]
fn a_programme_keeps_the_workflows_and_states_its_dependency_defines() {
    // The programme, its workflow and states come from a dependency; the base names the
    // programme again (its own description), as a national package over the reference
    // application's does: the enrolment still offers the dependency's states.
    const P: &str = "5d1c0b7e-3a4d-4c1e-8b2f-6d5e4c3b2a11";
    const W: &str = "6e2d1c8f-4b5e-4d2f-9c3a-7e6f5d4c3b22";
    let project = materialize(&format!(
        "//- content.properties\nname=facility\nversion=1.0.0\ncontent.refapp=1.x\n\
         //- content-packages/refapp/content.properties\nname=refapp\nversion=1.2.0\n\
         //- content-packages/refapp/openmrs_config/concepts/c.csv\nUuid,Fully specified name:en,Data class,Data type\n\
         {A},HIV program,Misc,N/A\n{B},HIV treatment status,Misc,N/A\n{C},On ART,Misc,N/A\n\
         //- content-packages/refapp/openmrs_config/programs/p.csv\nUuid,Name,Description,Program concept\n{P},HIV,refapp,{A}\n\
         //- content-packages/refapp/openmrs_config/programworkflows/w.csv\nUuid,Program,Workflow concept\n{W},{P},{B}\n\
         //- content-packages/refapp/openmrs_config/programworkflowstates/s.csv\nUuid,Workflow,State concept,Initial,Terminal\n\
         7f3e2d9a-5c6f-4e3a-8d4b-8f7a6e5d4c33,{W},{C},true,false\n\
         //- openmrs_config/programs/p.csv\nUuid,Name,Description,Program concept\n{P},HIV,national,{A}\n"
    ));
    let c = compiler::compile(project.root(), &Selection::distro(), &compiler::NoProgress);
    let found: Vec<String> = problems(&c)
        .into_iter()
        .filter(|p| !p.starts_with("E0208"))
        .collect();
    assert!(found.is_empty(), "{found:?}");
    let programme = c.content.programs.iter().find(|p| p.uuid == P).unwrap();
    assert_eq!(programme.description.as_deref(), Some("national"));
    let workflows: Vec<&str> = c
        .content
        .program_workflows
        .iter()
        .filter(|w| w.program == P)
        .map(|w| w.uuid.as_str())
        .collect();
    assert_eq!(workflows, [W]);
    let states: Vec<&str> = c
        .content
        .program_workflow_states
        .iter()
        .filter(|s| s.workflow == W)
        .map(|s| s.concept.as_str())
        .collect();
    assert_eq!(states, [C]);
}
