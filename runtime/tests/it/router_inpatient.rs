//! Inpatient care through the EMR API module's searches, as the O3 ward app reads them: an
//! admission requested by the content's form, seen by the ward, fulfilled by an Admission
//! encounter, a transfer requested, cancelled, requested again and accepted at the other
//! ward, a discharge; the content's dispositions in `emrapi/configuration`.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const OBSERVATION_WARD: &str = "c0a020aa-4723-4dc4-b19f-2cd20cacd064";
const DISPOSITION_SET: &str = "169405AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const DISPOSITION: &str = "169402AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const ADMISSION_LOCATION: &str = "169403AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const COMMENT: &str = "161011AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
/// What the ward app asks of the admissions (with its trailing comma).
const ADMISSION_REP: &str = "custom:(visit,patient:(uuid,person:(uuid,display)),encounterAssigningToCurrentInpatientLocation:(encounterDatetime),currentInpatientRequest:(dispositionLocation,dispositionType,disposition:(uuid,display),dispositionEncounter:(uuid,display),dispositionObsGroup:(uuid,display),visit:(uuid),patient:(uuid)),firstAdmissionOrTransferEncounter:(encounterDatetime),currentInpatientLocation,)";
const REQUEST_REP: &str = "custom:(dispositionLocation,dispositionType,disposition,dispositionEncounter:full,patient:(uuid),dispositionObsGroup,visit)";

struct Ward {
    config: Value,
}

impl Ward {
    async fn new(c: &mut Client) -> Ward {
        let r = c
            .get(&format!("{REST}/emrapi/configuration?v=custom:admissionEncounterType:ref,transferWithinHospitalEncounterType:ref,exitFromInpatientEncounterType:ref,transferRequestEncounterType:ref,cancelADTRequestEncounterType:ref,clinicianEncounterRole:ref,consultFreeTextCommentsConcept:ref,admissionDecisionConcept:ref,denyAdmissionConcept:ref,dispositionDescriptor,dispositions,supportsTransferLocationTag:(uuid,display,name,links)"))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        Ward { config: r.body }
    }

    fn uuid(&self, key: &str) -> String {
        self.config[key]["uuid"]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: {}", self.config))
            .to_string()
    }

    /// An encounter as the ward app posts it: no datetime (the server's now), the type as
    /// the configuration's whole reference.
    async fn encounter(
        &self,
        c: &mut Client,
        kind: &str,
        patient: &str,
        visit: &str,
        location: &str,
        obs: Value,
    ) -> Value {
        let r = c
            .post(
                &format!("{REST}/encounter"),
                &json!({"patient": patient, "encounterType": self.config[kind], "location": location,
                    "visit": visit, "obs": obs})
                .to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{kind}: {:?}", r.body);
        r.body
    }

    /// A transfer request as the ward writes it: the disposition by its code.
    async fn request_transfer(
        &self,
        c: &mut Client,
        patient: &str,
        visit: &str,
        from: &str,
        to: &str,
    ) {
        let transfer_code = self.config["dispositions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["type"] == "TRANSFER")
            .unwrap()["conceptCode"]
            .clone();
        let d = &self.config["dispositionDescriptor"];
        self.encounter(
            c,
            "transferRequestEncounterType",
            patient,
            visit,
            from,
            json!([{"concept": d["dispositionSetConcept"]["uuid"], "groupMembers": [
                {"concept": d["internalTransferLocationConcept"]["uuid"], "value": to},
                {"concept": d["dispositionConcept"]["uuid"], "value": transfer_code},
                {"concept": {"uuid": self.uuid("consultFreeTextCommentsConcept"), "display": ""}, "value": "Accouchement imminent"}]}]),
        )
        .await;
    }
}

fn location_of(st: &runtime::http::AppState, name: &str) -> String {
    location_uuid(st, name)
}

async fn requests(c: &mut Client, ward: &str) -> Vec<Value> {
    let r = c
        .get(&format!(
            "{REST}/emrapi/inpatient/request?dispositionType=ADMIT%2CTRANSFER&dispositionLocation={ward}&v={REQUEST_REP}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    r.body["results"].as_array().unwrap().clone()
}

async fn admitted(c: &mut Client, ward: &str) -> Vec<Value> {
    let r = c
        .get(&format!(
            "{REST}/emrapi/inpatient/admission?currentInpatientLocation={ward}&v={ADMISSION_REP}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    r.body["results"].as_array().unwrap().clone()
}

#[tokio::test]
async fn the_configuration_carries_the_content_dispositions() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ward = Ward::new(&mut c).await;
    let mut kinds: Vec<(&str, &str)> = ward.config["dispositions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["type"].as_str().unwrap(),
                d["conceptCode"].as_str().unwrap(),
            )
        })
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("ADMIT", "CIEL:168619"),
            ("DISCHARGE", "CIEL:169401"),
            ("TRANSFER", "CIEL:167731")
        ]
    );
    let d = &ward.config["dispositionDescriptor"];
    assert_eq!(d["dispositionSetConcept"]["uuid"], DISPOSITION_SET);
    assert_eq!(d["dispositionConcept"]["uuid"], DISPOSITION);
    assert_eq!(d["admissionLocationConcept"]["uuid"], ADMISSION_LOCATION);
    assert!(d["internalTransferLocationConcept"]["uuid"].is_string());
    assert_eq!(
        ward.config["consultFreeTextCommentsConcept"]["uuid"],
        COMMENT
    );
    assert_eq!(
        ward.config["supportsTransferLocationTag"]["name"],
        "Transfer Location"
    );
    for key in [
        "admissionEncounterType",
        "transferWithinHospitalEncounterType",
        "exitFromInpatientEncounterType",
        "transferRequestEncounterType",
        "cancelADTRequestEncounterType",
        "admissionDecisionConcept",
        "denyAdmissionConcept",
    ] {
        assert!(ward.config[key]["uuid"].is_string(), "{key}");
    }
    let beds = c.get(&format!("{REST}/beds?patientUuid=x")).await;
    assert_eq!(beds.body, json!({"results": []}));
    // The module finds these concepts by their mapping in its source, not by a setting: the
    // reference application's content maps them and sets nothing, and the ward app posts its
    // notes with the concept it reads here. A setting naming another concept changes nothing.
    set_setting(&mut c, "emr.consultFreeTextCommentsConcept", DISPOSITION).await;
    let config = c
        .get(&format!(
            "{REST}/emrapi/configuration?v=custom:(consultFreeTextCommentsConcept:ref)"
        ))
        .await;
    assert_eq!(
        config.body["consultFreeTextCommentsConcept"]["uuid"], COMMENT,
        "{:?}",
        config.body
    );
    // Without a setting, the transfer tag is the one the module names, "Transfer Location"
    // (the ward app's transfer form reads its name, and fails on null).
    set_setting(&mut c, "emr.supportsTransferLocationTag", "").await;
    let config = c
        .get(&format!(
            "{REST}/emrapi/configuration?v=custom:(supportsTransferLocationTag:(name))"
        ))
        .await;
    assert_eq!(
        config.body["supportsTransferLocationTag"]["name"], "Transfer Location",
        "{:?}",
        config.body
    );
}

#[tokio::test]
async fn a_patient_is_requested_admitted_transferred_and_discharged() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let ward = Ward::new(&mut c).await;
    let maternity = location_of(&st, "Bondeko - Maternité");
    let p = register_patient(&mut c, &st, "Odile", "Mukendi", "800001").await;
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": p, "visitType": OUTPATIENT, "location": location_of(&st, "Centre de santé Bondeko")}).to_string(),
        )
        .await;
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let consultation = location_of(&st, "Bondeko - Consultation");

    // The clinician's form: a disposition group (admit, to the observation ward).
    assert!(requests(&mut c, OBSERVATION_WARD).await.is_empty());
    ward.encounter(
        &mut c,
        "transferRequestEncounterType",
        &p,
        &visit,
        &consultation,
        json!([{"concept": DISPOSITION_SET, "groupMembers": [
            {"concept": DISPOSITION, "value": "168619AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
            {"concept": ADMISSION_LOCATION, "value": OBSERVATION_WARD}]},
            {"concept": COMMENT, "value": "Paludisme grave, surveillance"}]),
    )
    .await;
    let pending = requests(&mut c, OBSERVATION_WARD).await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["dispositionType"], "ADMIT");
    assert_eq!(pending[0]["dispositionLocation"]["uuid"], OBSERVATION_WARD);
    assert_eq!(pending[0]["visit"]["uuid"], visit.as_str());
    assert_eq!(pending[0]["patient"]["uuid"], p.as_str());
    assert!(pending[0]["dispositionEncounter"]["encounterProviders"].is_array());
    assert!(
        requests(&mut c, &maternity).await.is_empty(),
        "another ward's"
    );
    assert!(admitted(&mut c, OBSERVATION_WARD).await.is_empty());

    // The nurse admits her: the request is fulfilled, she is on the ward.
    let admission = ward
        .encounter(
            &mut c,
            "admissionEncounterType",
            &p,
            &visit,
            OBSERVATION_WARD,
            json!([]),
        )
        .await;
    assert!(requests(&mut c, OBSERVATION_WARD).await.is_empty());
    let on_ward = admitted(&mut c, OBSERVATION_WARD).await;
    assert_eq!(on_ward.len(), 1);
    assert_eq!(on_ward[0]["patient"]["uuid"], p.as_str());
    assert_eq!(
        on_ward[0]["currentInpatientLocation"]["uuid"],
        OBSERVATION_WARD
    );
    assert_eq!(
        on_ward[0]["firstAdmissionOrTransferEncounter"]["encounterDatetime"],
        admission["encounterDatetime"]
    );
    assert_eq!(on_ward[0]["currentInpatientRequest"], Value::Null);

    // A transfer to the maternity, asked and then cancelled by the ward.
    ward.request_transfer(&mut c, &p, &visit, OBSERVATION_WARD, &maternity)
        .await;
    let on_ward = admitted(&mut c, OBSERVATION_WARD).await;
    assert_eq!(
        on_ward[0]["currentInpatientRequest"]["dispositionType"],
        "TRANSFER"
    );
    assert_eq!(
        on_ward[0]["currentInpatientRequest"]["dispositionLocation"]["uuid"],
        maternity.as_str()
    );
    assert_eq!(requests(&mut c, &maternity).await.len(), 1);
    ward.encounter(
        &mut c,
        "cancelADTRequestEncounterType",
        &p,
        &visit,
        OBSERVATION_WARD,
        json!([{"concept": ward.uuid("consultFreeTextCommentsConcept"), "value": "Pas de place"},
            {"concept": ward.uuid("admissionDecisionConcept"), "value": {"uuid": ward.uuid("denyAdmissionConcept")}}]),
    )
    .await;
    assert!(requests(&mut c, &maternity).await.is_empty(), "cancelled");
    assert_eq!(
        admitted(&mut c, OBSERVATION_WARD).await[0]["currentInpatientRequest"],
        Value::Null
    );

    // Asked again and accepted at the maternity.
    ward.request_transfer(&mut c, &p, &visit, OBSERVATION_WARD, &maternity)
        .await;
    assert_eq!(requests(&mut c, &maternity).await.len(), 1);
    let transfer = ward
        .encounter(
            &mut c,
            "transferWithinHospitalEncounterType",
            &p,
            &visit,
            &maternity,
            json!([]),
        )
        .await;
    assert!(
        admitted(&mut c, OBSERVATION_WARD).await.is_empty(),
        "she left the ward"
    );
    let there = admitted(&mut c, &maternity).await;
    assert_eq!(there.len(), 1);
    assert_eq!(
        there[0]["encounterAssigningToCurrentInpatientLocation"]["encounterDatetime"],
        transfer["encounterDatetime"]
    );
    assert_eq!(
        there[0]["firstAdmissionOrTransferEncounter"]["encounterDatetime"],
        admission["encounterDatetime"]
    );
    assert!(requests(&mut c, &maternity).await.is_empty());

    // Discharged: off the ward, her visit still open; listed only when asked.
    ward.encounter(
        &mut c,
        "exitFromInpatientEncounterType",
        &p,
        &visit,
        &maternity,
        json!([]),
    )
    .await;
    assert!(admitted(&mut c, &maternity).await.is_empty());
    let all = c
        .get(&format!(
            "{REST}/emrapi/inpatient/admission?patients={p}&includeDischarged=true"
        ))
        .await;
    assert_eq!(all.body["results"][0]["discharged"], true);
    assert_eq!(
        all.body["results"][0]["currentInpatientLocation"],
        Value::Null
    );
    let v = c.get(&format!("{REST}/visit/{visit}")).await;
    assert_eq!(v.body["stopDatetime"], Value::Null);
}

#[tokio::test]
async fn a_request_ends_with_its_visit_and_the_searches_need_their_privileges() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Rachel", "Ilunga", "800002").await;
    let r = c
        .post(
            &format!("{REST}/visit"),
            &json!({"patient": p, "visitType": OUTPATIENT, "location": location_of(&st, "Centre de santé Bondeko")}).to_string(),
        )
        .await;
    let visit = r.body["uuid"].as_str().unwrap().to_string();
    let ward = Ward::new(&mut c).await;
    ward.encounter(
        &mut c,
        "transferRequestEncounterType",
        &p,
        &visit,
        OBSERVATION_WARD,
        json!([{"concept": DISPOSITION_SET, "groupMembers": [
            {"concept": DISPOSITION, "value": "CIEL:168619"},
            {"concept": ADMISSION_LOCATION, "value": OBSERVATION_WARD}]}]),
    )
    .await;
    let by_patient = c
        .get(&format!("{REST}/emrapi/inpatient/request?patients={p},{p}"))
        .await;
    assert_eq!(by_patient.body["results"].as_array().unwrap().len(), 1);
    let mut clerk = registration_clerk(&mut c, &st, "accueil2").await;
    for path in ["emrapi/inpatient/request", "emrapi/inpatient/admission"] {
        let r = clerk.get(&format!("{REST}/{path}")).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}");
    }
    // Ending the visit ends the request.
    assert_eq!(requests(&mut c, OBSERVATION_WARD).await.len(), 1);
    let r = c
        .post(
            &format!("{REST}/visit/{visit}"),
            &json!({"stopDatetime": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3f+0000").to_string()}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert!(requests(&mut c, OBSERVATION_WARD).await.is_empty());
}

#[tokio::test]
async fn the_transfer_picker_offers_the_wards_below_the_visit_location() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let names = |body: &Value| -> Vec<String> {
        body["entry"]
            .as_array()
            .map(|e| {
                e.iter()
                    .map(|e| e["resource"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let facility = location_of(&st, "Centre de santé Bondeko");
    let r = c
        .get(&format!("/openmrs/ws/fhir2/R4/Location?name%3Acontains=&_tag=Transfer%20Location&partof%3Abelow={facility}&_count=15&_getpagesoffset=0"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        names(&r.body),
        ["Bondeko - Maternité", "Bondeko - Salle d'observation"]
    );
    let zone = location_of(&st, "Zone de santé de Ngaliema");
    let r = c
        .get(&format!("/openmrs/ws/fhir2/R4/Location?_tag=Transfer%20Location&partof:below={zone}&name:contains=mater"))
        .await;
    assert_eq!(names(&r.body), ["Bondeko - Maternité"], "at any depth");
    let r = c
        .get(&format!(
            "/openmrs/ws/fhir2/R4/Location?_tag=Transfer%20Location&partof:below={OBSERVATION_WARD}"
        ))
        .await;
    assert_eq!(
        r.body["total"], 0,
        "nothing is below a ward, nor the ward itself"
    );
}

/// A package that configures the EMR API through metadata term mappings, as the reference
/// application's content does, and not through settings: the mappings are served
/// (`metadatamapping/termmapping`), read as the EMR API's configuration, and inpatient care
/// works with them; without either, inpatient care says what is missing.
#[tokio::test]
async fn the_emr_api_is_configured_by_metadata_term_mappings() {
    let types = "Uuid,Void/Retire,Name,Description\n\
        7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0401,,Admission,\n\
        7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0402,,Transfert,\n\
        7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0403,,Sortie,\n";
    let mappings = "Uuid,Void/Retire,Mapping source,Mapping code,Metadata class name,Metadata Uuid\n\
        ,,org.openmrs.module.emrapi,emr.admissionEncounterType,org.openmrs.EncounterType,7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0401\n\
        ,,org.openmrs.module.emrapi,emr.transferWithinHospitalEncounterType,org.openmrs.EncounterType,7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0402\n\
        ,,org.openmrs.module.emrapi,emr.exitFromInpatientEncounterType,org.openmrs.EncounterType,7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0403\n";
    let bundle = bundle_of(&[
        ("openmrs_config/encountertypes/types.csv", types),
        ("openmrs_config/metadatatermmappings/emrapi.csv", mappings),
    ]);
    let st = state_with(bundle, crate::common::test_store());
    let mut c = Client::admin(st).await;
    let r = c
        .get(&format!(
            "{REST}/metadatamapping/termmapping?code=emr.admissionEncounterType&v=custom:(metadataUuid,metadataClass)"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        r.body["results"],
        json!([{"metadataUuid": "7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0401", "metadataClass": "org.openmrs.EncounterType"}])
    );
    let r = c
        .get(&format!(
            "{REST}/metadatamapping/termmapping?source=org.openmrs.module.emrapi"
        ))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 3);
    let r = c
        .get(&format!("{REST}/emrapi/configuration?v=custom:(admissionEncounterType:(uuid),exitFromInpatientEncounterType:(uuid))"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        r.body["admissionEncounterType"]["uuid"],
        "7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0401"
    );
    assert_eq!(
        r.body["exitFromInpatientEncounterType"]["uuid"],
        "7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0403"
    );
    let r = c.get(&format!("{REST}/emrapi/inpatient/admission")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["results"], json!([]));

    // Without mappings or settings, the module's configuration is missing, and said so.
    let bare = bundle_of(&[("openmrs_config/encountertypes/types.csv", types)]);
    let mut c = Client::admin(state_with(bare, crate::common::test_store())).await;
    let r = c.get(&format!("{REST}/emrapi/inpatient/admission")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(
        r.body.to_string().contains("emr.admissionEncounterType"),
        "{:?}",
        r.body
    );
}

#[tokio::test]
async fn the_emr_api_takes_its_extra_identifier_types_from_a_metadata_set() {
    // As the national package configures it: a term mapping names a metadata set, whose
    // members are identifier types.
    let types = "Uuid,Void/Retire,Name,Description\n\
        7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0501,,Numéro national,\n\
        7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0502,,Numéro de la carte CMU,\n\
        7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0503,,Ancien numéro,\n";
    let sets = "Uuid,Void/Retire,Name,Description\n\
        7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0510,,Identifiants supplémentaires,\n";
    let members = "Uuid,Void/Retire,Metadata set uuid,Metadata class,Metadata uuid,Sort weight\n\
        ,,7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0510,org.openmrs.PatientIdentifierType,7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0502,2\n\
        ,,7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0510,org.openmrs.PatientIdentifierType,7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0501,1\n";
    let mappings = "Uuid,Void/Retire,Mapping source,Mapping code,Metadata class name,Metadata Uuid\n\
        ,,org.openmrs.module.emrapi,emr.extraPatientIdentifierTypes,org.openmrs.module.metadatamapping.MetadataSet,7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0510\n";
    let bundle = bundle_of(&[
        ("openmrs_config/patientidentifiertypes/types.csv", types),
        ("openmrs_config/metadatasets/sets.csv", sets),
        ("openmrs_config/metadatasetmembers/members.csv", members),
        ("openmrs_config/metadatatermmappings/emrapi.csv", mappings),
    ]);
    let mut c = Client::admin(state_with(bundle, crate::common::test_store())).await;
    let r = c
        .get(&format!(
            "{REST}/emrapi/configuration?v=custom:(extraPatientIdentifierTypes:(uuid,display))"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let extra: Vec<(&str, &str)> = r.body["extraPatientIdentifierTypes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["uuid"].as_str().unwrap(), t["display"].as_str().unwrap()))
        .collect();
    assert_eq!(
        extra,
        [
            ("7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0501", "Numéro national"),
            (
                "7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0502",
                "Numéro de la carte CMU"
            )
        ]
    );
    // The metadata mapping module's resources.
    let r = c
        .get(&format!("{REST}/metadatamapping/metadataset?v=default"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["results"][0]["name"], "Identifiants supplémentaires");
    let set = "7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0510";
    let r = c
        .get(&format!(
            "{REST}/metadatamapping/metadataset/{set}/members?v=custom:(metadataUuid,sortWeight)"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let members: Vec<(&str, f64)> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["metadataUuid"].as_str().unwrap(),
                m["sortWeight"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        members,
        [
            ("7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0501", 1.0),
            ("7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0502", 2.0)
        ]
    );
    assert_eq!(
        c.get(&format!("{REST}/metadatamapping/metadataset/{set}"))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        c.get(&format!(
            "{REST}/metadatamapping/metadataset/7a0e6c1e-3a51-4f0e-9d2b-1c5e8f0a0599/members"
        ))
        .await
        .status,
        StatusCode::NOT_FOUND
    );
}
