//! The content's read-only resources, as the REST and FHIR APIs show them: concepts,
//! locations, forms, the named metadata, reference ranges, the address hierarchy, identifier
//! and attribute types, metadata term mappings and sets. Nothing here writes.

pub mod addresshierarchy;
pub mod concept;
pub mod fhir;
pub mod form;
pub mod location;
pub mod metadata;
pub mod metadata_sets;
pub mod person_types;
pub mod reference_range;

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route(
            &paths.rest("/module"),
            get(crate::content::metadata::modules),
        )
        .route(
            &paths.rest("/addresstemplate"),
            get(crate::content::metadata::address_template),
        )
        .route(
            &paths.rest("/patientidentifiertype"),
            get(crate::content::metadata::identifier_types),
        )
        .route(
            &paths.rest("/patientidentifiertype/{uuid}"),
            get(crate::content::metadata::identifier_type),
        )
        .route(
            &paths.rest("/personattributetype"),
            get(crate::content::metadata::attribute_types),
        )
        .route(
            &paths.rest("/personattributetype/{uuid}"),
            get(crate::content::metadata::attribute_type),
        )
        .route(
            &paths.rest("/relationshiptype"),
            get(crate::content::metadata::relationship_types),
        )
        .route(
            &paths.rest("/visittype"),
            get(crate::content::metadata::visit_types),
        )
        .route(
            &paths.rest("/encountertype"),
            get(crate::content::metadata::encounter_types),
        )
        .route(
            &paths.rest("/encountertype/{uuid}"),
            get(crate::content::metadata::encounter_type),
        )
        .route(
            &paths.rest("/metadatamapping/termmapping"),
            get(crate::content::metadata::term_mappings),
        )
        .route(
            &paths.rest("/metadatamapping/metadataset"),
            get(crate::content::metadata_sets::list),
        )
        .route(
            &paths.rest("/metadatamapping/metadataset/{uuid}"),
            get(crate::content::metadata_sets::read),
        )
        .route(
            &paths.rest("/metadatamapping/metadataset/{uuid}/members"),
            get(crate::content::metadata_sets::members),
        )
        .route(&paths.rest("/form"), get(crate::content::form::search))
        .route(&paths.rest("/form/{uuid}"), get(crate::content::form::read))
        .route(
            &paths.rest("/clobdata/{uuid}"),
            get(crate::content::form::clob),
        )
        .route(
            &paths.rest("/o3/forms/{key}"),
            get(crate::content::form::compiled),
        )
        .route(
            &paths.rest("/concept"),
            get(crate::content::concept::search),
        )
        .route(
            &paths.rest("/conceptreferences"),
            post(crate::content::concept::references),
        )
        .route(
            &paths.rest("/conceptreferencerange"),
            get(crate::content::reference_range::search),
        )
        .route(
            &paths.rest("/concept/{reference}"),
            get(crate::content::concept::read),
        )
        .route(
            &paths.rest("/location"),
            get(crate::content::location::list),
        )
        .route(
            &paths.rest("/location/{uuid}"),
            get(crate::content::location::read),
        )
        .route(
            &paths.fhir("/Location"),
            get(crate::content::fhir::locations),
        )
        .route(
            &paths.fhir("/Location/{id}"),
            get(crate::content::fhir::location),
        )
        .route(
            &paths.fhir("/ValueSet/{id}"),
            get(crate::content::fhir::value_set),
        )
        .route(
            &paths.top("/module/addresshierarchy/ajax/getOrderedAddressHierarchyLevels.form"),
            get(crate::content::addresshierarchy::levels),
        )
        .route(
            &paths.top("/module/addresshierarchy/ajax/getChildAddressHierarchyEntries.form"),
            get(crate::content::addresshierarchy::children),
        )
        .route(
            &paths.top("/module/addresshierarchy/ajax/getPossibleFullAddresses.form"),
            get(crate::content::addresshierarchy::full_addresses),
        )
}
