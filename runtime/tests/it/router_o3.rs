//! The endpoints the O3 screens call (o3-frontend.md section 4): FHIR locations and
//! patients, users, modules, registration metadata, and the empty-but-valid lists.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::json;

#[tokio::test]
async fn fhir_location_search_by_tag_name_and_id_with_paging() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c
        .get("/openmrs/ws/fhir2/R4/Location?_count=1&_tag=Login+Location&_summary=data")
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/fhir+json")
    );
    assert_eq!(r.body["resourceType"], "Bundle");
    assert_eq!(r.body["type"], "searchset");
    assert_eq!(
        r.body["total"], 7,
        "the demo facility has five login rooms and two wards"
    );
    assert_eq!(r.body["entry"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["link"][1]["relation"], "next");

    let r = c.get("/openmrs/ws/fhir2/R4/Location?_summary=data&_count=50&_tag=Login+Location&name%3Acontains=labo").await;
    let names: Vec<&str> = r.body["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["resource"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Bondeko - Laboratoire"]);
    assert_eq!(
        r.body["entry"][0]["resource"]["meta"]["tag"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["code"] == "Login Location")
            .count(),
        1
    );
    assert_eq!(
        r.body["entry"][0]["resource"]["partOf"]["display"],
        "Centre de santé Bondeko"
    );

    let id = location_uuid(&st, "Bondeko - Accueil");
    let r = c
        .get(&format!(
            "/openmrs/ws/fhir2/R4/Location?_id={id}&_summary=data"
        ))
        .await;
    assert_eq!(r.body["total"], 1);
    assert_eq!(r.body["entry"][0]["resource"]["id"], id.as_str());
    let r = c
        .get("/openmrs/ws/fhir2/R4/Location?_tag=queue%20location")
        .await;
    assert_eq!(r.body["total"], 5);
    let r = c.get("/openmrs/ws/fhir2/R4/Location?_tag=nothing").await;
    assert_eq!(
        (r.body["total"].clone(), r.body["entry"].clone()),
        (json!(0), json!([]))
    );
}

#[tokio::test]
async fn fhir_patient_reads_a_registered_patient() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let created = c
        .post(
            "/openmrs/ws/rest/v1/patient",
            &patient_body(&st, "Hélène", "Mbuyi", "600001"),
        )
        .await;
    let uuid = created.body["uuid"].as_str().unwrap();
    let r = c
        .get(&format!(
            "/openmrs/ws/fhir2/R4/Patient/{uuid}?_summary=data"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["resourceType"], "Patient");
    assert_eq!(r.body["gender"], "female");
    assert_eq!(r.body["birthDate"], "1990-04-12");
    assert_eq!(r.body["name"][0]["family"], "Mbuyi");
    assert_eq!(r.body["name"][0]["given"], json!(["Hélène"]));
    assert_eq!(r.body["identifier"][0]["value"], emr_id("600001").as_str());
    assert_eq!(
        r.body["identifier"][0]["type"]["text"],
        "Numéro patient DSE"
    );
    assert_eq!(r.body["telecom"][0]["value"], "+243810000000");
    assert_eq!(r.body["address"][0]["city"], "Ngaliema");
    // A patient registered without an address has no `address` element at all: an empty
    // list broke the O3 vitals widget (it reads `address[0].city` when the list exists).
    let mut body: serde_json::Value =
        serde_json::from_str(&patient_body(&st, "Rose", "Mbala", "600002")).unwrap();
    body["person"].as_object_mut().unwrap().remove("addresses");
    let created = c
        .post("/openmrs/ws/rest/v1/patient", &body.to_string())
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let uuid = created.body["uuid"].as_str().unwrap();
    let r = c.get(&format!("/openmrs/ws/fhir2/R4/Patient/{uuid}")).await;
    assert!(r.body.get("address").is_none(), "{:?}", r.body);
    assert!(r.body["name"].is_array());
    let r = c
        .get("/openmrs/ws/fhir2/R4/Patient/00000000-0000-4000-8000-000000000000")
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["resourceType"], "OperationOutcome");
    let r = c
        .get(&format!(
            "/openmrs/ws/fhir2/R4/Observation?subject:Patient={uuid}&code=x"
        ))
        .await;
    assert_eq!(
        (r.status, r.body["total"].clone()),
        (StatusCode::OK, json!(0))
    );
}

#[tokio::test]
async fn users_read_and_keep_their_properties() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let session = c.get("/openmrs/ws/rest/v1/session").await.body;
    let uuid = session["user"]["uuid"].as_str().unwrap().to_string();
    let location = location_uuid(&st, "Bondeko - Triage");
    let r = c.post(&format!("/openmrs/ws/rest/v1/user/{uuid}"), &format!(r#"{{"userProperties":{{"defaultLocation":"{location}","patientsVisited":"a,b","defaultLocale":"en"}}}}"#)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c
        .get(&format!(
            "/openmrs/ws/rest/v1/user/{uuid}?v=custom:(userProperties)"
        ))
        .await;
    assert_eq!(r.body["userProperties"]["patientsVisited"], "a,b");
    // The default locale now applies, and the default location is chosen at the next login.
    assert_eq!(
        c.get("/openmrs/ws/rest/v1/session").await.body["locale"],
        "en"
    );
    let mut again = Client::new(st.clone());
    let r = again.login("admin", PASSWORD).await;
    assert_eq!(r.body["sessionLocation"]["uuid"], location.as_str());
    let r = c
        .post(
            &format!("/openmrs/ws/rest/v1/user/{uuid}"),
            r#"{"userProperties":{"defaultLocale":"de"}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .post(
            &format!("/openmrs/ws/rest/v1/user/{uuid}"),
            r#"{"secretAnswer":"root"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn registration_metadata_is_served_from_the_content() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get("/openmrs/ws/rest/v1/patientidentifiertype?v=custom:(display,uuid,name,format,formatDescription,required,uniquenessBehavior)").await;
    let types = r.body["results"].as_array().unwrap();
    let emr = types
        .iter()
        .find(|t| t["name"] == "Numéro patient DSE")
        .unwrap();
    assert_eq!(emr["required"], true);
    assert_eq!(emr["uniquenessBehavior"], "UNIQUE");
    let r = c.get("/openmrs/ws/rest/v1/metadatamapping/termmapping?v=custom:(metadataUuid)&code=emr.primaryIdentifierType").await;
    assert_eq!(r.body["results"][0]["metadataUuid"], emr["uuid"]);
    let r = c
        .get("/openmrs/ws/rest/v1/personattributetype/14d4f066-15f5-102d-96e4-000c29c2a5d7")
        .await;
    assert_eq!(r.body["display"], "Numéro de téléphone");
    assert_eq!(r.body["format"], "java.lang.String");
    let r = c
        .get("/openmrs/ws/rest/v1/relationshiptype?v=default")
        .await;
    assert!(
        r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["aIsToB"] == "Parent")
    );
    let r = c.get("/openmrs/ws/rest/v1/addresstemplate").await;
    assert_eq!(r.body["lines"][2][0]["displayText"], "Province");
    // `requiredInHierarchy` marks hierarchy levels required, as the address hierarchy
    // module does, not the template's fields: the template the module installs from
    // addressConfiguration.xml has no required elements, so registration asks for none.
    assert_eq!(r.body["requiredElements"], json!([]));
    let levels = c
        .get("/openmrs/module/addresshierarchy/ajax/getOrderedAddressHierarchyLevels.form")
        .await;
    let required: Vec<(&str, bool)> = levels
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["addressField"].as_str().unwrap(),
                l["required"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        required,
        vec![
            ("country", true),
            ("stateProvince", true),
            ("countyDistrict", false),
            ("cityVillage", false),
            ("address1", false)
        ]
    );
    assert_eq!(
        r.body["elementDefaults"]["country"],
        "République démocratique du Congo"
    );
    c.post("/openmrs/ws/rest/v1/session", r#"{"locale":"en"}"#)
        .await;
    let r = c.get("/openmrs/ws/rest/v1/addresstemplate").await;
    assert_eq!(r.body["lines"][1][1]["displayText"], "Health zone");
    let r = c
        .get("/openmrs/ws/rest/v1/module?v=custom:(uuid,version)")
        .await;
    assert!(
        r.body["results"]
            .as_array()
            .unwrap()
            .contains(&json!({"uuid": "fhir2", "version": "2.2.0"}))
    );
}

#[tokio::test]
async fn home_and_chart_lists_are_valid() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get("/openmrs/ws/rest/v1/queue?v=custom:(uuid,display,name,description,service:(uuid,display),allowedPriorities:(uuid,display),allowedStatuses:(uuid,display),location:(uuid,display))").await;
    let queues = r.body["results"].as_array().unwrap();
    assert_eq!(queues.len(), 4);
    let triage = queues
        .iter()
        .find(|q| q["name"] == "Bondeko - File de triage")
        .unwrap();
    assert_eq!(triage["service"]["display"], "Service de triage");
    assert_eq!(triage["allowedStatuses"].as_array().unwrap().len(), 3);
    assert_eq!(triage["location"]["display"], "Bondeko - Triage");
    for path in [
        "/openmrs/ws/rest/v1/queue-entry?v=custom:(uuid)&totalCount=true&isEnded=false",
        "/openmrs/ws/rest/v1/visit?includeInactive=false&v=custom:(uuid)",
        "/openmrs/ws/rest/v1/obs?patient=x&concept=y&v=full",
        "/openmrs/ws/rest/v1/relationship?person=x&v=custom:(uuid)",
        "/openmrs/ws/rest/v1/cohortm/cohortmember?patient=x&v=custom:(uuid)",
    ] {
        let r = c.get(path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert_eq!(r.body["results"], json!([]), "{path}");
    }
    let created = c
        .post(
            "/openmrs/ws/rest/v1/patient",
            &patient_body(&st, "Paul", "Banza", "600002"),
        )
        .await;
    let uuid = created.body["uuid"].as_str().unwrap();
    let r = c.get(&format!("/openmrs/ws/rest/v1/person/{uuid}?v=custom:(causeOfDeath:(display),causeOfDeathNonCoded)")).await;
    assert_eq!(
        r.body,
        json!({"causeOfDeath": null, "causeOfDeathNonCoded": null, "resourceVersion": "1.11"})
    );
    let mut anon = Client::new(st);
    assert_eq!(
        anon.get("/openmrs/ws/rest/v1/visit").await.status,
        StatusCode::UNAUTHORIZED
    );
}

/// An encounter type is read by uuid or by name, as webservices.rest finds one; an unknown
/// one is 404.
#[tokio::test]
async fn an_encounter_type_is_read_by_uuid_or_name() {
    let st = state();
    let (uuid, name) = {
        let catalog = st.catalog.load();
        let t = &catalog.content.encounter_types[0];
        (t.uuid.clone(), t.name.clone())
    };
    let mut c = Client::admin(st).await;
    let r = c
        .get(&format!("/openmrs/ws/rest/v1/encountertype/{uuid}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["uuid"], uuid.as_str());
    assert_eq!(r.body["name"], name.as_str());
    let by_name = c
        .get(&format!(
            "/openmrs/ws/rest/v1/encountertype/{}?v=ref",
            name.replace(' ', "%20")
        ))
        .await;
    assert_eq!(by_name.body["uuid"], uuid.as_str());
    let r = c
        .get("/openmrs/ws/rest/v1/encountertype/no-such-type")
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}
