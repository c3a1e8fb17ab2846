//! The project's own content (openmrs_config/, sites/, frontend/) compiles for the
//! distro and for every site with no error and no warning, and reproducibly.

use compiler::vfs::{Selection, list_sites};
use std::path::{Path, PathBuf};

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn selections() -> Vec<Selection> {
    let sites = list_sites(&project_root());
    assert!(
        sites.len() >= 2,
        "the project ships at least two sites, found {sites:?}"
    );
    std::iter::once(Selection::distro())
        .chain(sites.iter().map(|s| Selection::site(s)))
        .collect()
}

#[test]
fn the_distribution_and_every_site_compile_without_any_diagnostic() {
    for selection in selections() {
        let compiled = compiler::compile(&project_root(), &selection, &compiler::NoProgress);
        let rendered: String = compiled
            .diagnostics
            .iter()
            .map(|d| compiler::diagnostics::render_human(d, false))
            .collect();
        assert!(
            compiled.diagnostics.is_empty(),
            "{selection:?}:\n{rendered}"
        );
        let c = &compiled.content;
        assert!(
            c.concepts.len() > 300 && c.forms.len() >= 3 && c.locations.len() > 10,
            "{selection:?}"
        );
        assert_eq!(c.locales.default, "fr");
        // The base depends on the project's shared package, laid down first; its location
        // tags serve the base's locations.
        let layers: Vec<(&str, &str)> = compiled
            .header
            .layers
            .iter()
            .map(|l| (l.role.as_str(), l.name.as_str()))
            .collect();
        assert_eq!(
            layers[..2],
            [("dependency", "dse-rdc-socle"), ("base", "dse-rdc")]
        );
        assert!(c.location_tags.iter().any(|t| t.name == "Login Location"));
        assert!(c.locations.iter().any(|l| !l.tags.is_empty()));
        // The project's own dictionary codes name one concept each (a code given twice
        // makes `DRC-EMR:<code>` ambiguous wherever it is looked up).
        let mut seen = std::collections::BTreeMap::new();
        for concept in &c.concepts {
            for m in concept
                .mappings
                .iter()
                .filter(|m| m.source == "DRC-EMR" && m.map_type == "SAME-AS")
            {
                if let Some(other) = seen.insert(m.code.clone(), concept.uuid.clone())
                    && other != concept.uuid
                {
                    panic!(
                        "{selection:?}: DRC-EMR:{} names {other} and {}",
                        m.code, concept.uuid
                    );
                }
            }
        }
        // Billing: every service has a concept, a service type and a price in each of the
        // selection's payment modes (a site with its own modes has its own tariffs).
        assert!(!c.cash_points.is_empty() && c.cash_points.iter().all(|p| p.location.is_some()));
        assert!(c.billable_services.len() >= 5, "{selection:?}");
        for s in &c.billable_services {
            assert!(
                s.concept.is_some() && s.service_type.is_some(),
                "{}",
                s.name
            );
            for m in c.payment_modes.iter().filter(|m| !m.retired) {
                assert!(
                    s.prices.iter().any(|p| p.payment_mode == m.uuid),
                    "{selection:?}: {} has no price in {}",
                    s.name,
                    m.name
                );
            }
        }
    }
}

#[test]
fn the_same_content_gives_the_same_bundle_byte_for_byte() {
    for selection in selections() {
        let first = compiler::compile(&project_root(), &selection, &compiler::NoProgress).encode();
        let second = compiler::compile(&project_root(), &selection, &compiler::NoProgress).encode();
        assert!(first == second, "{selection:?}: two builds differ");
        let decoded = model::decode(&first).expect("decodes");
        assert_eq!(
            decoded.content.concepts.len(),
            compiler::compile(&project_root(), &selection, &compiler::NoProgress)
                .content
                .concepts
                .len()
        );
    }
}

#[test]
fn the_bundle_does_not_depend_on_where_the_project_lives() {
    let copy = tempfile::tempdir().unwrap();
    for dir in ["openmrs_config", "sites", "frontend", "content-packages"] {
        copy_tree(&project_root().join(dir), &copy.path().join(dir));
    }
    std::fs::copy(
        project_root().join("content.properties"),
        copy.path().join("content.properties"),
    )
    .unwrap();
    let here = compiler::compile(
        &project_root(),
        &Selection::site("makala"),
        &compiler::NoProgress,
    )
    .encode();
    let there = compiler::compile(
        copy.path(),
        &Selection::site("makala"),
        &compiler::NoProgress,
    )
    .encode();
    assert!(here == there);
}

#[test]
fn site_builds_differ_from_the_distro_as_their_packages_say() {
    let distro =
        compiler::compile(&project_root(), &Selection::distro(), &compiler::NoProgress).content;
    let makala = compiler::compile(
        &project_root(),
        &Selection::site("makala"),
        &compiler::NoProgress,
    )
    .content;
    let goma = compiler::compile(
        &project_root(),
        &Selection::site("goma"),
        &compiler::NoProgress,
    )
    .content;
    // makala overrides a global property, replaces the payment modes file and adds locations.
    assert_eq!(
        distro
            .global_property("visits.autoCloseVisitTimeout")
            .unwrap()
            .value,
        "24"
    );
    assert_eq!(
        makala
            .global_property("visits.autoCloseVisitTimeout")
            .unwrap()
            .value,
        "12"
    );
    assert!(
        makala
            .payment_modes
            .iter()
            .all(|p| p.name != "Assurance maladie")
    );
    assert!(makala.locations.len() > distro.locations.len());
    // goma only adds.
    assert!(goma.locations.len() > distro.locations.len());
    assert_eq!(goma.payment_modes.len(), distro.payment_modes.len());
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
