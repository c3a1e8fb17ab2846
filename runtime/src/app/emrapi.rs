//! `emrapi/configuration`: the EMR API module's configuration, which O3's visit form (the
//! default visit type), visit notes (their encounter type and clinician role) and location
//! pickers (the tags that mark visit and login locations) read.
//!
//! The EMR API module maps each of these to metadata through metadata-mapping terms
//! (`org.openmrs.module.emrapi: emr.atFacilityVisitType`…), which the content gives in
//! `metadatatermmappings/`, or settings of the same names (`emr.atFacilityVisitType` holding
//! a visit type's uuid, and so on). A property whose mapping and setting are unset, or name
//! nothing of the right kind, is `null` (`[]` for the extra identifier types, the members of
//! a metadata set); so is every property the distribution does not use. Dispositions are the content's
//! `dispositions/`, and the disposition descriptor's concepts and the other concepts those
//! mapped in the module's concept source (`org.openmrs.module.emrapi: Disposition`, `…:
//! Consult Free Text Comments`…), as the module finds them (for the other concepts, the
//! setting `emr.<property>` when no concept is mapped).
//!
//! `emrapi/locationThatSupportsVisits?location=` walks up from a location (a login room)
//! to the first one carrying the visits tag: where the O3 visit form opens visits.

use crate::content::concept::ConceptRes;
use crate::content::location::{LocationRes, TagRes};
use crate::content::metadata::{EncounterTypeRes, NamedRes};
use crate::content::person_types::{AttributeTypeRes, IdentifierTypeRes};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource, nested, render};
use crate::http::{Caller, QueryPairs, ok, param};
use axum::extract::State;
use axum::response::Response;
use serde_json::Value;
use std::sync::Arc;

/// What kind of metadata a property's setting names.
#[derive(Clone, Copy)]
enum Kind {
    VisitType,
    EncounterType,
    EncounterRole,
    LocationTag,
    Concept,
    PersonAttributeType,
    IdentifierType,
    /// Identifier types: the members of the metadata set a term mapping (or the setting)
    /// names, or a setting's comma-separated uuids.
    IdentifierTypes,
    /// From the content's `dispositions/` and the concepts mapped in the EMR API module's
    /// source, not from a setting.
    Dispositions,
    /// Not used by the distribution: always null.
    Unused,
}

/// Declares the properties with their kinds, and the default representation (every
/// property as a reference) from the same list.
macro_rules! properties {
    ($(($name:literal, $kind:ident)),* $(,)?) => {
        /// The properties EMR API 2.x's configuration resource has, with their kinds.
        const PROPERTIES: &[(&str, Kind)] = &[$(($name, Kind::$kind)),*];
        const DEFAULT_PROPS: Props = &[$(($name, Rep::Ref)),*];
    };
}

properties!(
    ("admissionDecisionConcept", Concept),
    ("admissionEncounterType", EncounterType),
    ("admissionForm", Unused),
    ("atFacilityVisitType", VisitType),
    ("bedAssignmentEncounterType", EncounterType),
    ("cancelADTRequestEncounterType", EncounterType),
    ("checkInClerkEncounterRole", EncounterRole),
    ("checkInEncounterType", EncounterType),
    ("clinicianEncounterRole", EncounterRole),
    ("conceptSourcesForDiagnosisSearch", Unused),
    ("consultEncounterType", EncounterType),
    ("consultFreeTextCommentsConcept", Concept),
    ("denyAdmissionConcept", Concept),
    ("diagnosisMetadata", Unused),
    ("diagnosisSets", Unused),
    ("dischargeForm", Unused),
    ("dispositionDescriptor", Dispositions),
    ("dispositions", Dispositions),
    ("emrApiConceptSource", Unused),
    ("exitFromInpatientEncounterType", EncounterType),
    ("extraPatientIdentifierTypes", IdentifierTypes),
    ("fullPrivilegeLevel", Unused),
    ("highPrivilegeLevel", Unused),
    ("identifierTypesToSearch", Unused),
    ("inpatientNoteEncounterType", EncounterType),
    ("lastViewedPatientSizeLimit", Unused),
    ("metadataSourceName", Unused),
    ("motherChildRelationshipType", Unused),
    ("narrowerThanConceptMapType", Unused),
    ("nonDiagnosisConceptSets", Unused),
    ("orderingProviderEncounterRole", EncounterRole),
    ("patientDiedConcept", Concept),
    ("personImageDirectory", Unused),
    ("primaryIdentifierType", IdentifierType),
    ("sameAsConceptMapType", Unused),
    ("suppressedDiagnosisConcepts", Unused),
    ("supportsAdmissionLocationTag", LocationTag),
    ("supportsLoginLocationTag", LocationTag),
    ("supportsTransferLocationTag", LocationTag),
    ("supportsVisitsLocationTag", LocationTag),
    ("telephoneAttributeType", PersonAttributeType),
    ("testPatientPersonAttributeType", PersonAttributeType),
    ("transferForm", Unused),
    ("transferRequestEncounterType", EncounterType),
    ("transferWithinHospitalEncounterType", EncounterType),
    ("unknownCauseOfDeathConcept", Concept),
    ("unknownLocation", Unused),
    ("unknownPatientPersonAttributeType", PersonAttributeType),
    ("unknownProvider", Unused),
    (
        "visitAssignmentHandlerAdjustEncounterTimeOfDayIfNecessary",
        Unused
    ),
    ("visitExpireHours", Unused),
    ("visitNoteEncounterType", EncounterType),
);

/// The code each concept of the configuration is mapped to in the module's source, by which
/// the module finds it (`EmrApiProperties`).
const CONCEPT_CODES: &[(&str, &str)] = &[
    ("admissionDecisionConcept", "Admission Decision"),
    (
        "consultFreeTextCommentsConcept",
        "Consult Free Text Comments",
    ),
    ("denyAdmissionConcept", "Deny Admission"),
    ("patientDiedConcept", "Patient Died"),
    ("unknownCauseOfDeathConcept", "Unknown Cause of Death"),
];

/// The location tags of the configuration, each as the module names it: a tag of that name
/// is the property's when no setting or term mapping names one.
const TAG_NAMES: &[(&str, &str)] = &[
    ("supportsAdmissionLocationTag", "Admission Location"),
    ("supportsLoginLocationTag", "Login Location"),
    ("supportsTransferLocationTag", "Transfer Location"),
    ("supportsVisitsLocationTag", "Visit Location"),
];

/// The configuration, resolved against the content and the settings of this request.
struct ConfigurationRes<'s> {
    state: &'s AppState,
}

impl Resource for ConfigurationRes<'_> {
    fn alias(&self) -> &'static str {
        "configuration"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        String::new()
    }
    fn display(&self, _: &Ctx) -> String {
        String::new()
    }
    fn path(&self) -> String {
        "emrapi/configuration".into()
    }
    fn default_props(&self) -> Props {
        DEFAULT_PROPS
    }
    fn full_props(&self) -> Props {
        DEFAULT_PROPS
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let kind = PROPERTIES.iter().find(|(p, _)| *p == name)?.1;
        if let Kind::Dispositions = kind {
            return Some(dispositions(name, ctx));
        }
        if let Kind::Concept = kind {
            let code = CONCEPT_CODES.iter().find(|(p, _)| *p == name)?.1;
            let concept = self.state.clinic().emr_concept(code, name);
            return Some(
                concept
                    .and_then(|uuid| ctx.catalog.concept(&uuid))
                    .map_or(Value::Null, |c| nested(Some(&ConceptRes(c)), rep, ctx)),
            );
        }
        let configured = self
            .state
            .emr_metadata(&format!("emr.{name}"))
            .or_else(|| match kind {
                // The module names these tags, and finds them by name.
                Kind::LocationTag => {
                    let tag = TAG_NAMES.iter().find(|(p, _)| *p == name)?.1;
                    let content = &ctx.catalog.content;
                    let found = content.location_tags.iter().find(|t| t.name == tag);
                    found.map(|t| t.uuid.clone())
                }
                _ => None,
            });
        let Some(uuid) = configured else {
            return Some(match kind {
                Kind::IdentifierTypes => Value::Array(Vec::new()),
                _ => Value::Null,
            });
        };
        let uuid = uuid.trim();
        let content = &ctx.catalog.content;
        let value = match kind {
            Kind::VisitType => content
                .visit_types
                .iter()
                .find(|t| t.uuid == uuid)
                .map(|t| nested(Some(&NamedRes("visittype", t)), rep, ctx)),
            Kind::EncounterRole => content
                .encounter_roles
                .iter()
                .find(|t| t.uuid == uuid)
                .map(|t| nested(Some(&NamedRes("encounterrole", t)), rep, ctx)),
            Kind::EncounterType => content
                .encounter_types
                .iter()
                .find(|t| t.uuid == uuid)
                .map(|t| nested(Some(&EncounterTypeRes(t)), rep, ctx)),
            Kind::LocationTag => ctx
                .catalog
                .location_tag(uuid)
                .map(|t| nested(Some(&TagRes(t)), rep, ctx)),
            Kind::Concept => ctx
                .catalog
                .concept(uuid)
                .map(|c| nested(Some(&ConceptRes(c)), rep, ctx)),
            Kind::PersonAttributeType => ctx
                .catalog
                .person_attribute_type(uuid)
                .map(|t| nested(Some(&AttributeTypeRes(t)), rep, ctx)),
            Kind::IdentifierType => ctx
                .catalog
                .identifier_type(uuid)
                .map(|t| nested(Some(&IdentifierTypeRes(t)), rep, ctx)),
            Kind::IdentifierTypes => {
                let uuids: Vec<&str> = match content.metadata_sets.iter().find(|s| s.uuid == uuid) {
                    Some(set) => set
                        .members
                        .iter()
                        .filter(|m| m.class_name == "org.openmrs.PatientIdentifierType")
                        .map(|m| m.metadata_uuid.as_str())
                        .collect(),
                    None => uuid.split(',').map(str::trim).collect(),
                };
                let types: Vec<IdentifierTypeRes> = uuids
                    .iter()
                    .filter_map(|u| ctx.catalog.identifier_type(u))
                    .map(IdentifierTypeRes)
                    .collect();
                Some(crate::http::repr::nested_list(
                    types.iter().map(|t| t as &dyn Resource),
                    rep,
                    ctx,
                ))
            }
            Kind::Unused | Kind::Dispositions => None,
        };
        Some(value.unwrap_or(Value::Null))
    }
}

/// `dispositions` (the content's, as the module's bean converter writes them) or
/// `dispositionDescriptor` (the concepts mapped `org.openmrs.module.emrapi:Disposition
/// Concept Set`, `…:Disposition`, `…:Admission Location`, `…:Internal Transfer Location`,
/// `…:Date of Death`, each as a reference, null when unmapped).
fn dispositions(name: &str, ctx: &Ctx) -> Value {
    if name == "dispositions" {
        return Value::Array(
            ctx.catalog
                .content
                .dispositions
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "uuid": d.uuid,
                        "name": d.name,
                        "conceptCode": d.concept_code,
                        "type": d.kind,
                        "careSettingTypes": null,
                        "encounterTypes": null,
                        "excludedEncounterTypes": null,
                        "keepsVisitOpen": d.keeps_visit_open,
                        "actions": [],
                        "additionalObs": [],
                    })
                })
                .collect(),
        );
    }
    let concept = |code: &str| {
        ctx.catalog
            .concept(&format!(
                "{}:{code}",
                crate::domains::inpatient::EMRAPI_SOURCE
            ))
            .map_or(Value::Null, |c| {
                nested(Some(&ConceptRes(c)), &Rep::Ref, ctx)
            })
    };
    serde_json::json!({
        "dispositionSetConcept": concept("Disposition Concept Set"),
        "dispositionConcept": concept("Disposition"),
        "admissionLocationConcept": concept("Admission Location"),
        "internalTransferLocationConcept": concept("Internal Transfer Location"),
        "dateOfDeathConcept": concept("Date of Death"),
    })
}

/// `GET emrapi/configuration` — any logged-in caller (the module asks for no privilege).
pub async fn configuration(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let mut body = render(&ConfigurationRes { state: &state }, &rep, &ctx)?;
    // A configuration is not a resource with an identity.
    if let Value::Object(o) = &mut body {
        o.remove("uuid");
        o.remove("display");
    }
    Ok(ok(body))
}

/// `GET emrapi/locationThatSupportsVisits?location=…` — privilege: Get Locations. The tag is
/// the setting `emr.supportsVisitsLocationTag`, else the tag named `Visit Location`.
pub async fn location_that_supports_visits(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Locations"])?;
    let start = param(&query, "location")
        .ok_or_else(|| ApiError::BadRequest("The location parameter is required".into()))?;
    let catalog = state.catalog.load();
    let tag = state
        .clinic()
        .visit_location_tag()
        .ok_or(ApiError::NotFound)?;
    catalog.location(start).ok_or(ApiError::NotFound)?;
    if let Some(found) = catalog.location_or_ancestor_tagged(start, &tag) {
        let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
        return Ok(ok(render(
            &LocationRes(found),
            &rep,
            &caller.ctx(&state, &catalog),
        )?));
    }
    Err(ApiError::BadRequest(format!(
        "No location supporting visits above {start}"
    )))
}

/// `GET emrapi/patient/{uuid}/visitWithDiagnosesAndNotes[?limit=][&startIndex=]`, and its
/// newer name `emrapi/patient/{uuid}/visit[?v=custom:(visit,diagnoses,visitNotes)]`: a
/// patient's visits, newest first, each with the diagnoses of its encounters (by rank) and
/// its visit notes (the text observations of its encounters of the
/// `emr.visitNoteEncounterType`). With a custom representation only the named parts are
/// given. Privileges: Get Visits, Get Encounters, Get Observations.
pub async fn visits_with_diagnoses_and_notes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    axum::extract::Path(patient): axum::extract::Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    use crate::domains::diagnosis::rest::DiagnosisRes;
    use crate::domains::diagnosis::store as diagnoses;
    use crate::domains::encounter::repr::ObsRes;
    use crate::domains::encounter::{ObsValue, store as encounters};
    use crate::domains::visit::rest::VisitRes;
    use crate::domains::visit::store as visits;
    caller.require(&["Get Visits", "Get Encounters", "Get Observations"])?;
    let parts: Vec<String> = match Rep::parse(param(&query, "v"))? {
        Some(Rep::Custom(props)) => props.into_iter().map(|(name, _)| name).collect(),
        _ => vec!["visit".into(), "diagnoses".into(), "visitNotes".into()],
    };
    let wants = move |p: &str| parts.iter().any(|x| x == p);
    let paging = crate::http::repr::Paging::from_query(&query)?;
    let note_type = state.emr_metadata("emr.visitNoteEncounterType");
    let st = state.clone();
    crate::http::blocking(move || {
        if !st.store.patient_exists(&patient)? {
            return Err(ApiError::BadRequest(format!(
                "No patient with uuid {patient}"
            )));
        }
        let (records, page) = visits::list(
            &st.store,
            &visits::VisitQuery {
                patient: Some(patient.clone()),
                include_inactive: true,
                ..visits::VisitQuery::default()
            },
            crate::http::answer::window(&paging),
        )?;
        let catalog = st.catalog.load();
        let ctx = caller.ctx(&st, &catalog);
        let visit_rep = Rep::parse(Some(
            "custom:(uuid,display,startDatetime,stopDatetime,patient:ref,visitType:ref,attributes)",
        ))?
        .unwrap_or(Rep::Default);
        let note_rep = Rep::parse(Some("custom:(uuid,display,value,obsDatetime,concept:ref)"))?
            .unwrap_or(Rep::Default);
        let mut results = Vec::new();
        for v in &records {
            let mut item = serde_json::Map::new();
            let of_visit = if wants("diagnoses") || wants("visitNotes") {
                encounters::of_visit(&st.store, &v.uuid)?
            } else {
                Vec::new()
            };
            if wants("visit") {
                item.insert("visit".into(), render(&VisitRes(v), &visit_rep, &ctx)?);
            }
            if wants("diagnoses") {
                let mut found = Vec::new();
                for e in of_visit.iter().filter(|e| !e.voiding.voided) {
                    found.extend(
                        diagnoses::of_encounter(&st.store, &e.uuid)?
                            .into_iter()
                            .filter(|d| !d.voiding.voided),
                    );
                }
                found.sort_by_key(|d| d.rank);
                let rendered = found
                    .iter()
                    .map(|d| render(&DiagnosisRes(d), &Rep::Default, &ctx))
                    .collect::<ApiResult<Vec<_>>>()?;
                item.insert("diagnoses".into(), Value::Array(rendered));
            }
            if wants("visitNotes") {
                let mut notes = Vec::new();
                for e in of_visit.iter().filter(|e| {
                    !e.voiding.voided && note_type.as_deref() == Some(e.encounter_type.as_str())
                }) {
                    for o in encounters::obs_of_encounter(&st.store, &e.uuid, false)? {
                        if matches!(o.value, ObsValue::Text(_)) {
                            notes.push(render(&ObsRes(&o), &note_rep, &ctx)?);
                        }
                    }
                }
                item.insert("visitNotes".into(), Value::Array(notes));
            }
            results.push(Value::Object(item));
        }
        let request = caller.request_url(&st, &format!("/emrapi/patient/{patient}/visit"), &query);
        Ok(ok(paging.answer(results, page.more, page.total, &request)))
    })
    .await
}
