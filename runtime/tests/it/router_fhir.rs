//! FHIR as a FHIR client uses it: `Patient` found by each search parameter, the
//! CapabilityStatement, and nothing that pretends: unknown types and unsupported parameters
//! are said so, and every error is an OperationOutcome.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::Value;

const FHIR: &str = "/openmrs/ws/fhir2/R4";

fn is_outcome(v: &Value) -> bool {
    v["resourceType"] == "OperationOutcome" && v["issue"][0]["diagnostics"].is_string()
}

/// Anywhere in `v`, a `null`, an empty list or an empty string: what R4 forbids.
fn empties(v: &Value, at: &str, found: &mut Vec<String>) {
    match v {
        Value::Null => found.push(at.to_string()),
        Value::String(s) if s.is_empty() => found.push(at.to_string()),
        Value::Array(a) if a.is_empty() => found.push(at.to_string()),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| empties(x, &format!("{at}[{i}]"), found)),
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| empties(x, &format!("{at}.{k}"), found)),
        _ => {}
    }
}

#[tokio::test]
async fn a_patient_is_found_by_every_search_parameter_and_only_by_hers() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let amani = register_patient(&mut c, &st, "Amani", "Tshisekedi", "200101").await;
    let other = register_patient(&mut c, &st, "Amandine", "Kasongo", "200102").await;
    let id = emr_id("200101");
    let type_uuid = identifier_type_uuid(&st, "Numéro patient DSE");
    let born = c.get(&format!("{FHIR}/Patient/{amani}")).await.body["birthDate"]
        .as_str()
        .unwrap()
        .to_string();
    let year = &born[..4];
    for (query, expected) in [
        (format!("identifier={id}"), vec![amani.clone()]),
        (format!("identifier={type_uuid}|{id}"), vec![amani.clone()]),
        ("identifier=9999999".to_string(), vec![]),
        (format!("_id={amani}"), vec![amani.clone()]),
        ("name=amani".to_string(), vec![amani.clone()]),
        ("name=ama".to_string(), vec![amani.clone(), other.clone()]),
        ("given=amandine".to_string(), vec![other.clone()]),
        ("family=tshisekedi".to_string(), vec![amani.clone()]),
        ("family=amani".to_string(), vec![]),
        // Both were registered born the same day.
        (
            format!("name=ama&birthdate={born}"),
            vec![amani.clone(), other.clone()],
        ),
        (format!("name=ama&birthdate=ne{born}"), vec![]),
        (format!("name=amani&birthdate={year}"), vec![amani.clone()]),
        (format!("name=amani&birthdate=gt{year}-12-31"), vec![]),
        ("name=amani&deceased=false".to_string(), vec![amani.clone()]),
        ("name=amani&deceased=true".to_string(), vec![]),
    ] {
        let r = c.get(&format!("{FHIR}/Patient?{query}")).await;
        assert_eq!(r.status, StatusCode::OK, "{query}: {:?}", r.body);
        let mut found = fhir_ids(&r.body);
        found.sort();
        let mut want = expected.clone();
        want.sort();
        assert_eq!(found, want, "{query}");
        assert_eq!(r.body["total"], expected.len(), "{query}");
    }
    // Gender filters what a name found.
    let gender = c.get(&format!("{FHIR}/Patient/{amani}")).await.body["gender"]
        .as_str()
        .unwrap()
        .to_string();
    let r = c
        .get(&format!("{FHIR}/Patient?name=amani&gender={gender}"))
        .await;
    assert_eq!(fhir_ids(&r.body), vec![amani.clone()]);
    let opposite = if gender == "male" { "female" } else { "male" };
    let r = c
        .get(&format!("{FHIR}/Patient?name=amani&gender={opposite}"))
        .await;
    assert_eq!(r.body["total"], 0);
    // Paging: the pages' entries add up to the total, and a count alone has no entries.
    let first = c.get(&format!("{FHIR}/Patient?name=ama&_count=1")).await;
    assert_eq!(first.body["total"], 2);
    assert_eq!(fhir_ids(&first.body).len(), 1);
    let next = first.body["link"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["relation"] == "next")
        .unwrap()["url"]
        .as_str()
        .unwrap()
        .to_string();
    let path = &next[next.find("/openmrs").unwrap()..];
    let second = c.get(path).await;
    let mut both = fhir_ids(&first.body);
    both.extend(fhir_ids(&second.body));
    both.sort();
    let mut want = vec![amani.clone(), other.clone()];
    want.sort();
    assert_eq!(both, want);
    let count = c
        .get(&format!("{FHIR}/Patient?name=ama&_summary=count"))
        .await;
    assert_eq!(count.body["total"], 2);
    assert!(count.body["entry"].as_array().is_none_or(|e| e.is_empty()));
    // Malformed values are refused, and a search by nothing indexed is refused.
    for bad in [
        "name=ama&birthdate=not-a-date",
        "name=ama&gender=woman",
        "gender=female",
    ] {
        let r = c.get(&format!("{FHIR}/Patient?{bad}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(is_outcome(&r.body), "{bad}: {:?}", r.body);
    }
    // What the server writes has no null, no empty list, no empty string.
    let r = c.get(&format!("{FHIR}/Patient/{amani}")).await;
    let mut found = Vec::new();
    empties(&r.body, "Patient", &mut found);
    assert!(found.is_empty(), "{found:?}");
}

#[tokio::test]
async fn what_is_not_served_is_said_so_never_an_empty_bundle() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    for path in [
        "NoSuchType",
        "Task?status=requested",
        "Specimen?patient=x",
        "NoSuchType/123",
        "ValueSet?url=x",
    ] {
        let r = c.get(&format!("{FHIR}/{path}")).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {:?}", r.body);
        assert!(is_outcome(&r.body), "{path}: {:?}", r.body);
        assert_eq!(
            r.headers["content-type"], "application/fhir+json;charset=UTF-8",
            "{path}"
        );
    }
    // Errors of the shared layers are OperationOutcomes too.
    let r = c.post(&format!("{FHIR}/Location"), "{}").await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(is_outcome(&r.body), "{:?}", r.body);
    let r = c.post(&format!("{FHIR}/Patient"), "{}").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(is_outcome(&r.body), "{:?}", r.body);
    let r = c
        .get(&format!(
            "{FHIR}/Observation?code=5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(is_outcome(&r.body), "{:?}", r.body);
    let mut anonymous = Client::new(st.clone());
    let r = anonymous.get(&format!("{FHIR}/Patient?name=x")).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(is_outcome(&r.body), "{:?}", r.body);
}

#[tokio::test]
async fn unsupported_search_parameters_are_ignored_openly_or_refused_when_strict() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let amani = register_patient(&mut c, &st, "Amani", "Tshisekedi", "200201").await;
    // Lenient (the default): ignored, and left out of the self link.
    let r = c
        .get(&format!("{FHIR}/Patient?name=amani&hair-colour=brown"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(fhir_ids(&r.body), vec![amani.clone()]);
    let links = r.body["link"].to_string();
    assert!(
        links.contains("name=amani") && !links.contains("hair-colour"),
        "{links}"
    );
    // Strict: refused, naming it.
    let r = c
        .send(
            "GET",
            &format!("{FHIR}/Patient?name=amani&hair-colour=brown"),
            &[("prefer", "handling=strict")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(is_outcome(&r.body));
    assert!(
        r.body["issue"][0]["diagnostics"]
            .as_str()
            .unwrap()
            .contains("hair-colour")
    );
    // A parameter the type supports passes strict handling.
    let r = c
        .send(
            "GET",
            &format!("{FHIR}/Patient?name=amani&_count=5"),
            &[("prefer", "handling=strict")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn the_capability_statement_lists_what_is_served() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get(&format!("{FHIR}/metadata")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["resourceType"], "CapabilityStatement");
    assert_eq!(r.body["fhirVersion"], "4.0.1");
    let resources = r.body["rest"][0]["resource"].as_array().unwrap();
    let patient = resources.iter().find(|x| x["type"] == "Patient").unwrap();
    let params: Vec<&str> = patient["searchParam"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for p in [
        "identifier",
        "name",
        "family",
        "given",
        "birthdate",
        "gender",
        "_id",
    ] {
        assert!(params.contains(&p), "{p}");
    }
    // Each type it lists answers; a type it does not list is refused.
    for x in resources {
        let kind = x["type"].as_str().unwrap();
        let r = c.get(&format!("{FHIR}/{kind}/no-such-id")).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{kind}");
        assert!(is_outcome(&r.body), "{kind}");
    }
    assert!(!resources.iter().any(|x| x["type"] == "Specimen"));
}

#[tokio::test]
async fn the_practitioners_the_server_names_are_served() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let me = c.user_uuid().await;
    // A condition's recorder names its creator as a Practitioner: it resolves.
    let p = register_patient(&mut c, &st, "Neema", "Ilunga", "200301").await;
    let body = serde_json::json!({
        "resourceType": "Condition",
        "subject": {"reference": format!("Patient/{p}")},
        "code": {"coding": [{"code": "5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]},
        "clinicalStatus": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/condition-clinical", "code": "active"}]},
        "onsetDateTime": "2026-01-10"
    });
    let r = c
        .post(&format!("{FHIR}/Condition"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let recorder = r.body["recorder"]["reference"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(recorder, format!("Practitioner/{me}"));
    let r = c.get(&format!("{FHIR}/{recorder}")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["resourceType"], "Practitioner");
    assert_eq!(r.body["active"], true);
    // Providers are searched by name and identifier, and read by their own uuid.
    let made = c
        .post(
            "/openmrs/ws/rest/v1/provider",
            &serde_json::json!({"name": "Sœur Bernadette Kalala", "identifier": "PRV-77"})
                .to_string(),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{:?}", made.body);
    let uuid = made.body["uuid"].as_str().unwrap().to_string();
    for query in [
        "name=bernadette",
        "name=kal",
        "identifier=PRV-77",
        &format!("_id={uuid}"),
    ] {
        let r = c.get(&format!("{FHIR}/Practitioner?{query}")).await;
        assert_eq!(fhir_ids(&r.body), vec![uuid.clone()], "{query}");
    }
    let r = c.get(&format!("{FHIR}/Practitioner?name=nobody")).await;
    assert_eq!(r.body["total"], 0);
    let r = c.get(&format!("{FHIR}/Practitioner/{uuid}")).await;
    assert_eq!(r.body["name"][0]["text"], "Sœur Bernadette Kalala");
    assert_eq!(r.body["identifier"][0]["value"], "PRV-77");
    let mut found = Vec::new();
    empties(&r.body, "Practitioner", &mut found);
    assert!(found.is_empty(), "{found:?}");
}

/// Every coding `system` anywhere in `v` (Codings and Quantities).
fn systems(v: &Value, found: &mut Vec<String>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| systems(x, found)),
        Value::Object(m) => {
            if let Some(Value::String(s)) = m.get("system") {
                found.push(s.clone());
            }
            m.values().for_each(|x| systems(x, found));
        }
        _ => {}
    }
}

#[tokio::test]
async fn codings_name_their_systems_by_url_and_find_what_they_coded() {
    const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
    const VITALS_TYPE: &str = "023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42";
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Bahati", "Mwamba", "200201").await;
    let start = (chrono::Utc::now() - chrono::Duration::minutes(60))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string();
    let visit = c
        .post(
            "/openmrs/ws/rest/v1/visit",
            &serde_json::json!({"patient": p, "visitType": OUTPATIENT, "location": location_uuid(&st, "Centre de santé Bondeko"), "startDatetime": start}).to_string(),
        )
        .await;
    assert_eq!(visit.status, StatusCode::CREATED, "{:?}", visit.body);
    let visit = visit.body["uuid"].as_str().unwrap().to_string();
    let concept = |r: &str| st.catalog.load().concept(r).unwrap().uuid.clone();
    let r = c
        .post("/openmrs/ws/rest/v1/encounter", &serde_json::json!({"patient": p, "encounterType": VITALS_TYPE, "visit": visit,
            "obs": [{"concept": concept("CIEL:5088"), "value": 38.4}, {"concept": concept("CIEL:5087"), "value": 92}]}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let encounter = r.body["uuid"].as_str().unwrap().to_string();

    let bundle = c
        .get(&format!("{FHIR}/Observation?subject:Patient={p}"))
        .await
        .body;
    let temperature = bundle["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["resource"])
        .find(|o| o["valueQuantity"]["value"] == 38.4)
        .expect("the temperature")
        .clone();
    // Systems are absolute URIs: the content's fhirconceptsources, never a bare name.
    let mut found = Vec::new();
    systems(&bundle, &mut found);
    assert!(!found.is_empty());
    for s in &found {
        assert!(s.starts_with("http://") || s.starts_with("https://"), "{s}");
    }
    let codings = temperature["code"]["coding"].as_array().unwrap();
    assert!(
        codings
            .iter()
            .any(|c| c["system"] == "http://loinc.org" && c["code"] == "8310-5"),
        "{codings:?}"
    );
    assert!(
        codings
            .iter()
            .any(|c| c["system"] == "https://cielterminology.org" && c["code"] == "5088")
    );
    assert_eq!(
        temperature["category"][0]["coding"][0]["code"],
        "vital-signs"
    );
    // °C is UCUM's Cel, beats a minute its /min; no null anywhere.
    assert_eq!(temperature["valueQuantity"]["unit"], "°C");
    assert_eq!(
        temperature["valueQuantity"]["system"],
        "http://unitsofmeasure.org"
    );
    assert_eq!(temperature["valueQuantity"]["code"], "Cel");
    let mut nulls = Vec::new();
    empties(&bundle, "Bundle", &mut nulls);
    assert!(nulls.is_empty(), "{nulls:?}");

    // Each coding the server wrote finds the Observation again; a bare source name does not.
    for coding in codings {
        let token = match coding.get("system") {
            Some(s) => format!(
                "{}|{}",
                s.as_str().unwrap(),
                coding["code"].as_str().unwrap()
            ),
            None => coding["code"].as_str().unwrap().to_string(),
        };
        let token: String = form_urlencoded::byte_serialize(token.as_bytes()).collect();
        let r = c
            .get(&format!(
                "{FHIR}/Observation?subject:Patient={p}&code={token}"
            ))
            .await;
        assert_eq!(
            fhir_ids(&r.body),
            vec![temperature["id"].as_str().unwrap().to_string()],
            "{token}"
        );
    }
    let r = c
        .get(&format!(
            "{FHIR}/Observation?subject:Patient={p}&code=CIEL%7C5088"
        ))
        .await;
    assert_eq!(
        r.body["total"], 0,
        "a system that is no URL of this server names nothing"
    );

    // The encounter's partOf resolves: the visit, as fhir2 serves visits.
    let e = c.get(&format!("{FHIR}/Encounter/{encounter}")).await.body;
    assert_eq!(e["partOf"]["reference"], format!("Encounter/{visit}"));
    assert_eq!(e["meta"]["tag"][0]["code"], "encounter");
    let v = c.get(&format!("{FHIR}/Encounter/{visit}")).await;
    assert_eq!(v.status, StatusCode::OK, "{:?}", v.body);
    assert_eq!(v.body["meta"]["tag"][0]["code"], "visit");
    assert_eq!(v.body["status"], "in-progress");
    assert_eq!(v.body["type"][0]["coding"][0]["code"], OUTPATIENT);
    assert_eq!(v.body["subject"]["reference"], format!("Patient/{p}"));
}

#[tokio::test]
async fn the_capability_statement_names_each_search_parameter_once() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get(&format!("{FHIR}/metadata")).await;
    for x in r.body["rest"][0]["resource"].as_array().unwrap() {
        let names: Vec<&str> = x["searchParam"]
            .as_array()
            .map(|l| l.iter().map(|p| p["name"].as_str().unwrap()).collect())
            .unwrap_or_default();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{}: {names:?}", x["type"]);
        assert!(names.iter().all(|n| !n.contains(':')), "{names:?}");
    }
}

#[tokio::test]
async fn locations_have_no_empty_address_parts() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c.get(&format!("{FHIR}/Location?_count=100")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(!fhir_ids(&r.body).is_empty());
    let mut nulls = Vec::new();
    empties(&r.body, "Bundle", &mut nulls);
    assert!(nulls.is_empty(), "{nulls:?}");
}

#[tokio::test]
async fn an_integration_records_an_observation_as_fhir2_takes_it() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Neema", "Kabeya", "200301").await;
    let when = (chrono::Utc::now() - chrono::Duration::minutes(5))
        .format("%Y-%m-%dT%H:%M:%S+00:00")
        .to_string();
    let temperature = |value: Value, code: Value| {
        serde_json::json!({"resourceType": "Observation", "status": "final",
            "subject": {"reference": format!("Patient/{p}")}, "code": {"coding": [code]},
            "effectiveDateTime": when, "valueQuantity": {"value": value, "unit": "Cel"}})
        .to_string()
    };
    let loinc = serde_json::json!({"system": "http://loinc.org", "code": "8310-5"});
    let r = c
        .post(
            &format!("{FHIR}/Observation"),
            &temperature(serde_json::json!(38.9), loinc.clone()),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    assert!(
        r.headers["location"]
            .to_str()
            .unwrap()
            .ends_with(&format!("/Observation/{id}"))
    );
    assert_eq!(r.body["valueQuantity"]["code"], "Cel");
    // Read back by FHIR and by REST: the same record, of the temperature concept.
    let back = c.get(&format!("{FHIR}/Observation/{id}")).await;
    assert_eq!(back.body["valueQuantity"]["value"], 38.9);
    assert_eq!(back.body["subject"]["reference"], format!("Patient/{p}"));
    let rest = c.get(&format!("/openmrs/ws/rest/v1/obs/{id}?v=full")).await;
    assert_eq!(
        rest.body["concept"]["uuid"],
        "5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    );
    assert!(
        rest.body["auditInfo"]["creator"].is_object(),
        "who and when: {:?}",
        rest.body["auditInfo"]
    );

    // A code nobody knows, no subject, two values: 400; a value beyond the concept's
    // absolute range (43 °C): 422. Each an OperationOutcome, and nothing is stored.
    let unknown = serde_json::json!({"system": "http://loinc.org", "code": "0000-0"});
    let r = c
        .post(
            &format!("{FHIR}/Observation"),
            &temperature(serde_json::json!(37), unknown),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(is_outcome(&r.body));
    let r = c
        .post(&format!("{FHIR}/Observation"), r#"{"resourceType": "Observation", "code": {"coding": [{"system": "http://loinc.org", "code": "8310-5"}]}, "valueQuantity": {"value": 37}}"#)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(is_outcome(&r.body));
    let r = c
        .post(
            &format!("{FHIR}/Observation"),
            &temperature(serde_json::json!(55), loinc.clone()),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", r.body);
    assert!(is_outcome(&r.body));
    let all = c.get(&format!("{FHIR}/Observation?subject={p}")).await;
    assert_eq!(fhir_ids(&all.body), vec![id]);
}

#[tokio::test]
async fn a_warehouse_reads_the_observations_changed_since_its_last_visit() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let post = |p: &str, value: f64| {
        serde_json::json!({"resourceType": "Observation", "status": "final",
            "subject": {"reference": format!("Patient/{p}")},
            "code": {"coding": [{"system": "http://loinc.org", "code": "29463-7"}]},
            "valueQuantity": {"value": value}})
        .to_string()
    };
    let a = register_patient(&mut c, &st, "Furaha", "Lukusa", "200401").await;
    let b = register_patient(&mut c, &st, "Imani", "Mbuyi", "200402").await;
    let mut made = Vec::new();
    for (p, v) in [(&a, 61.0), (&b, 70.5), (&a, 61.4)] {
        let r = c.post(&format!("{FHIR}/Observation"), &post(p, v)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        made.push(r.body["id"].as_str().unwrap().to_string());
    }
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();

    // Every patient's, oldest change first, page by page; the pages add up. The total is
    // counted when asked only.
    let r = c
        .get(&format!(
            "{FHIR}/Observation?_lastUpdated=gt{yesterday}&_count=2&_total=accurate"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["total"], 3);
    let r = c
        .get(&format!(
            "{FHIR}/Observation?_lastUpdated=gt{yesterday}&_count=2"
        ))
        .await;
    assert!(r.body.get("total").is_none(), "{:?}", r.body);
    assert_eq!(fhir_ids(&r.body), made[..2].to_vec());
    assert!(r.body["entry"][0]["resource"]["meta"]["lastUpdated"].is_string());
    let next = r.body["link"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["relation"] == "next")
        .unwrap()["url"]
        .as_str()
        .unwrap()
        .to_string();
    let next = &next[next.find("/openmrs/").unwrap()..];
    assert_eq!(fhir_ids(&c.get(next).await.body), made[2..].to_vec());
    // Narrowed by code, by patient; a period after today holds nothing.
    let r = c.get(&format!("{FHIR}/Observation?_lastUpdated=ge{yesterday}&_lastUpdated=lt{tomorrow}&code=http://loinc.org%7C29463-7&subject={a}")).await;
    assert_eq!(
        fhir_ids(&r.body),
        vec![made[2].clone(), made[0].clone()],
        "a patient's: newest first"
    );
    let r = c
        .get(&format!("{FHIR}/Observation?_lastUpdated=gt{tomorrow}"))
        .await;
    assert!(fhir_ids(&r.body).is_empty());
    let links = r.body["link"].as_array().unwrap();
    assert!(!links.iter().any(|l| l["relation"] == "next"));
    // When they were made, not changed: nothing before 1900.
    let r = c
        .get(&format!("{FHIR}/Observation?subject={a}&date=lt1900"))
        .await;
    assert_eq!(r.body["total"], 0, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{FHIR}/Observation?subject={a}&date=ge{yesterday}"
        ))
        .await;
    assert_eq!(r.body["total"], 2);

    // A malformed date, or neither a patient nor _lastUpdated: refused, never every record.
    for query in [
        "subject=x&date=not-a-date",
        "_lastUpdated=2026-13",
        "code=http://loinc.org%7C29463-7",
    ] {
        let r = c.get(&format!("{FHIR}/Observation?{query}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{query}");
        assert!(is_outcome(&r.body), "{query}");
    }
}

#[tokio::test]
async fn a_patient_is_also_a_person_linked_to_her_patient() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Esther", "Nyota", "200501").await;
    let r = c.get(&format!("{FHIR}/Person/{p}")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["resourceType"], "Person");
    assert_eq!(r.body["name"][0]["family"], "Nyota");
    assert_eq!(
        r.body["link"][0]["target"]["reference"],
        format!("Patient/{p}")
    );
    assert!(r.body.get("identifier").is_none() && r.body.get("deceasedBoolean").is_none());
    let r = c.get(&format!("{FHIR}/Person?name=nyota")).await;
    assert_eq!(fhir_ids(&r.body), vec![p.clone()]);
    assert_eq!(r.body["entry"][0]["resource"]["resourceType"], "Person");
    // Patient's own parameters that FHIR's Person has not are refused when strict.
    let r = c
        .send(
            "GET",
            &format!("{FHIR}/Person?name=nyota&deceased=false"),
            &[("prefer", "handling=strict")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    // A change of her person is her resources' last update.
    let before = c.get(&format!("{FHIR}/Patient/{p}")).await.body["meta"]["lastUpdated"].clone();
    let r = c
        .post(
            &format!("/openmrs/ws/rest/v1/person/{p}"),
            r#"{"gender": "F", "birthdate": "1991-02-03"}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let after = c.get(&format!("{FHIR}/Person/{p}")).await.body;
    assert_eq!(after["birthDate"], "1991-02-03");
    assert!(
        after["meta"]["lastUpdated"].as_str().unwrap() > before.as_str().unwrap(),
        "{before} {after}"
    );
    let r = c.get(&format!("{FHIR}/Person/no-such-person")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(is_outcome(&r.body));
}

/// Polls an export until its manifest (or anything but "in progress") comes back.
async fn polled(c: &mut Client, poll: &str) -> crate::common::Response {
    for _ in 0..2_000 {
        let r = c.send("GET", poll, &[], None).await;
        if r.status != StatusCode::ACCEPTED {
            return r;
        }
        assert!(r.headers.get("x-progress").is_some());
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("the export did not finish");
}

/// An NDJSON file of an export, one resource per line.
async fn ndjson(c: &mut Client, url: &str) -> Vec<Value> {
    let path = &url[url.find("/openmrs/").unwrap()..];
    let res = c.raw("GET", path, &[], None).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "application/fhir+ndjson"
    );
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 24)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A national warehouse takes everything in bulk, as the Bulk Data Access specification
/// has it: the kick-off answers 202 with where to poll, the poll answers 202 until the
/// manifest, whose NDJSON files hold each resource as the API serves it; `_type` and
/// `_since` narrow it; the export is the asking user's; deleting it removes its files.
#[tokio::test]
async fn a_warehouse_takes_everything_in_bulk() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let a = register_patient(&mut c, &st, "Neema", "Kalala", "200501").await;
    let b = register_patient(&mut c, &st, "Baraka", "Ilunga", "200502").await;
    for value in [60.5, 61.0] {
        let body = serde_json::json!({"resourceType": "Observation", "status": "final",
            "subject": {"reference": format!("Patient/{a}")},
            "code": {"coding": [{"system": "http://loinc.org", "code": "29463-7"}]},
            "valueQuantity": {"value": value}});
        let r = c
            .post(&format!("{FHIR}/Observation"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let asynchronous = [
        ("prefer", "respond-async"),
        ("accept", "application/fhir+json"),
    ];

    // Refused, each with an OperationOutcome: without Prefer: respond-async, an unknown
    // or misplaced type, a malformed instant, a parameter not served.
    for (path, headers) in [
        (format!("{FHIR}/$export"), &[][..]),
        (format!("{FHIR}/$export?_type=Group"), &asynchronous[..]),
        (
            format!("{FHIR}/Patient/$export?_type=Location"),
            &asynchronous[..],
        ),
        (
            format!("{FHIR}/$export?_since=yesterday"),
            &asynchronous[..],
        ),
        (
            format!("{FHIR}/$export?_typeFilter=Observation%3Fcode%3Dx"),
            &asynchronous[..],
        ),
        (
            format!("{FHIR}/$export?_outputFormat=text/csv"),
            &asynchronous[..],
        ),
    ] {
        let r = c.send("GET", &path, headers, None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}: {:?}", r.body);
        assert!(is_outcome(&r.body), "{path}");
    }

    let r = c
        .send(
            "GET",
            &format!(
                "{FHIR}/$export?_type=Observation,Patient&_outputFormat=application/fhir%2Bndjson"
            ),
            &asynchronous,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    let poll = r.headers["content-location"].to_str().unwrap().to_string();
    assert!(poll.starts_with("http://emr.test/openmrs/ws/fhir2/R4/$export-poll-status?_jobId="));
    let poll = poll["http://emr.test".len()..].to_string();
    let r = polled(&mut c, &poll).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let manifest = r.body;
    assert!(
        manifest["request"]
            .as_str()
            .unwrap()
            .ends_with("_type=Observation,Patient&_outputFormat=application/fhir%2Bndjson")
    );
    assert_eq!(manifest["requiresAccessToken"], true);
    assert_eq!(manifest["error"], serde_json::json!([]));
    let output = manifest["output"].as_array().unwrap();
    let types: Vec<&str> = output.iter().map(|o| o["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        vec!["Patient", "Observation"],
        "in the server's order"
    );
    let patients = ndjson(&mut c, output[0]["url"].as_str().unwrap()).await;
    let mut ids: Vec<&str> = patients.iter().map(|p| p["id"].as_str().unwrap()).collect();
    ids.sort();
    let mut expected = vec![a.as_str(), b.as_str()];
    expected.sort();
    assert_eq!(ids, expected);
    assert_eq!(output[0]["count"], 2);
    // As the API serves it.
    let read = c.get(&format!("{FHIR}/Patient/{a}")).await.body;
    assert!(patients.contains(&read));
    let observations = ndjson(&mut c, output[1]["url"].as_str().unwrap()).await;
    assert_eq!(observations.len(), 2);
    assert!(
        observations
            .iter()
            .all(|o| o["subject"]["reference"] == format!("Patient/{a}").as_str())
    );

    // Only what changed since an instant: nothing has changed since now.
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let r = c
        .send(
            "GET",
            &format!("{FHIR}/Patient/$export?_since={}", now.replace('+', "%2B")),
            &asynchronous,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    let later = r.headers["content-location"].to_str().unwrap();
    let later = later[later.find("/openmrs/").unwrap()..].to_string();
    let r = polled(&mut c, &later).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["output"], serde_json::json!([]));

    // Another user neither polls it nor reads its files.
    let mut clerk = registration_clerk(&mut c, &st, "accueil-export").await;
    assert_eq!(clerk.get(&poll).await.status, StatusCode::NOT_FOUND);
    let file = output[0]["url"].as_str().unwrap();
    let file = &file[file.find("/openmrs/").unwrap()..];
    assert_eq!(clerk.get(file).await.status, StatusCode::NOT_FOUND);

    // Deleted: gone, its files with it.
    let r = c.send("DELETE", &poll, &[], None).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert_eq!(c.get(&poll).await.status, StatusCode::NOT_FOUND);
    assert_eq!(c.get(file).await.status, StatusCode::NOT_FOUND);

    // The CapabilityStatement says the server exports.
    let r = c.get(&format!("{FHIR}/metadata")).await;
    let operations: Vec<&str> = r.body["rest"][0]["operation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(operations, vec!["export"]);
    let patient = r.body["rest"][0]["resource"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["type"] == "Patient")
        .unwrap();
    let operations: Vec<&str> = patient["operation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(operations, vec!["export", "everything"]);
}

/// `Patient/{id}/$everything`: the patient and what her compartment holds, each as the API
/// serves it, narrowed by `_type` and `_since`; an unknown patient is a 404.
#[tokio::test]
async fn everything_of_a_patient_comes_in_one_bundle() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let a = register_patient(&mut c, &st, "Zawadi", "Mukendi", "200601").await;
    let other = register_patient(&mut c, &st, "Pendo", "Kabeya", "200602").await;
    for (p, value) in [(&a, 55.0), (&a, 55.5), (&other, 70.0)] {
        let body = serde_json::json!({"resourceType": "Observation", "status": "final",
            "subject": {"reference": format!("Patient/{p}")},
            "code": {"coding": [{"system": "http://loinc.org", "code": "29463-7"}]},
            "valueQuantity": {"value": value}});
        let r = c
            .post(&format!("{FHIR}/Observation"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let r = c.get(&format!("{FHIR}/Patient/{a}/$everything")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["type"], "searchset");
    let entries = r.body["entry"].as_array().unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["resource"]["resourceType"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[0], "Patient", "{kinds:?}");
    assert_eq!(
        entries[0]["resource"],
        c.get(&format!("{FHIR}/Patient/{a}")).await.body
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "Observation").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(r.body["total"], entries.len());
    // Nothing of the other patient.
    assert!(!r.body.to_string().contains(&other));
    let mut found = Vec::new();
    empties(&r.body, "Bundle", &mut found);
    assert!(found.is_empty(), "{found:?}");

    let r = c
        .get(&format!("{FHIR}/Patient/{a}/$everything?_type=Observation"))
        .await;
    assert_eq!(r.body["total"], 2);
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1)).format("%Y-%m-%d");
    let r = c
        .get(&format!("{FHIR}/Patient/{a}/$everything?_since={tomorrow}"))
        .await;
    assert_eq!(r.body["total"], 0);
    assert!(r.body.get("entry").is_none());

    for (query, status) in [
        (
            format!("{FHIR}/Patient/nobody/$everything"),
            StatusCode::NOT_FOUND,
        ),
        (
            format!("{FHIR}/Patient/{a}/$everything?_type=Location"),
            StatusCode::BAD_REQUEST,
        ),
        (
            format!("{FHIR}/Patient/{a}/$everything?start=2020-01-01"),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let r = c.get(&query).await;
        assert_eq!(r.status, status, "{query}: {:?}", r.body);
        assert!(is_outcome(&r.body), "{query}");
    }
}

/// A patient list is a FHIR `Group` (its current members, `quantity`), found by name, and
/// exported alone: `Group/{id}/$export` holds its members' records and no one else's.
#[tokio::test]
async fn a_patient_list_is_a_group_exported_on_its_own() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let a = register_patient(&mut c, &st, "Asha", "Mwamba", "200701").await;
    let b = register_patient(&mut c, &st, "Tumaini", "Kapinga", "200702").await;
    let r = c
        .post(
            "/openmrs/ws/rest/v1/cohortm/cohort",
            &serde_json::json!({"name": "Suivi nutritionnel"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let list = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .post(
            "/openmrs/ws/rest/v1/cohortm/cohortmember",
            &serde_json::json!({"cohort": list, "patient": a, "startDate": "2026-11-02"})
                .to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);

    let r = c.get(&format!("{FHIR}/Group/{list}")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["type"], "person");
    assert_eq!(r.body["actual"], true);
    assert_eq!(r.body["quantity"], 1);
    assert_eq!(
        r.body["member"][0]["entity"]["reference"],
        format!("Patient/{a}")
    );
    let mut found = Vec::new();
    empties(&r.body, "Group", &mut found);
    assert!(found.is_empty(), "{found:?}");
    let r = c.get(&format!("{FHIR}/Group?name=nutrition")).await;
    assert_eq!(fhir_ids(&r.body), vec![list.clone()]);
    assert_eq!(
        c.get(&format!("{FHIR}/Group/nothing")).await.status,
        StatusCode::NOT_FOUND
    );

    let asynchronous = [("prefer", "respond-async")];
    let r = c
        .send(
            "GET",
            &format!("{FHIR}/Group/{list}/$export?_type=Patient"),
            &asynchronous,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    let poll = r.headers["content-location"].to_str().unwrap();
    let poll = poll[poll.find("/openmrs/").unwrap()..].to_string();
    let manifest = polled(&mut c, &poll).await.body;
    let exported = ndjson(&mut c, manifest["output"][0]["url"].as_str().unwrap()).await;
    let ids: Vec<&str> = exported.iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![a.as_str()], "not {b}");
    let r = c
        .send(
            "GET",
            &format!("{FHIR}/Group/nothing/$export"),
            &asynchronous,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(is_outcome(&r.body));
}

#[tokio::test]
async fn a_client_registry_registers_and_corrects_a_patient_through_fhir() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let id_type = identifier_type_uuid(&st, "Numéro patient DSE");
    let desk = location_uuid(&st, "Bondeko - Accueil");
    let card = emr_id("200401");
    let patient = serde_json::json!({
        "resourceType": "Patient",
        "id": "ignored-on-create",
        "identifier": [{"use": "official", "type": {"coding": [{"code": id_type}]}, "value": card,
            "extension": [{"url": "http://fhir.openmrs.org/ext/patient/identifier#location",
                "valueReference": {"reference": format!("Location/{desk}")}}]}],
        "name": [{"use": "usual", "family": "Lukusa", "given": ["Espérance", "Divine"]}],
        "gender": "female",
        "birthDate": "1988",
        "telecom": [{"system": "phone", "value": "+243810000001"}],
        "address": [{"use": "home", "city": "Ngaliema", "state": "Kinshasa",
            "extension": [{"url": "http://fhir.openmrs.org/ext/address", "extension": [
                {"url": "http://fhir.openmrs.org/ext/address#address1", "valueString": "Avenue 12"}]}]}],
    });
    let r = send_json(&mut c, "POST", &format!("{FHIR}/Patient"), &patient).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let uuid = r.body["id"].as_str().unwrap().to_string();
    assert_ne!(uuid, "ignored-on-create");
    assert!(
        r.headers["location"]
            .to_str()
            .unwrap()
            .ends_with(&format!("/Patient/{uuid}"))
    );
    // The registration desk's REST view: the same person, who and when recorded.
    let rest = c
        .get(&format!("/openmrs/ws/rest/v1/patient/{uuid}?v=full"))
        .await;
    let person = &rest.body["person"];
    assert_eq!(person["preferredName"]["givenName"], "Espérance");
    assert_eq!(person["preferredName"]["middleName"], "Divine");
    assert_eq!(person["birthdateEstimated"], true);
    assert_eq!(person["preferredAddress"]["address1"], "Avenue 12");
    assert_eq!(rest.body["identifiers"][0]["identifier"], card);
    assert_eq!(rest.body["identifiers"][0]["location"]["uuid"], desk);
    assert!(rest.body["auditInfo"]["creator"].is_object());
    // Found by her card at once, and read back as she was sent.
    let found = c.get(&format!("{FHIR}/Patient?identifier={card}")).await;
    assert_eq!(fhir_ids(&found.body), vec![uuid.clone()]);
    let mut read = c.get(&format!("{FHIR}/Patient/{uuid}")).await.body;
    assert_eq!(read["birthDate"], "1988");
    assert_eq!(read["telecom"][0]["value"], "+243810000001");
    assert_eq!(
        read["identifier"][0]["extension"][0]["valueReference"]["reference"],
        format!("Location/{desk}")
    );

    // The same card twice, a name without a family, a malformed date: refused, nothing
    // stored (422 for a rule of registration, 400 for what is not a Patient).
    let mut twin = patient.clone();
    twin["name"][0]["given"] = serde_json::json!(["Autre"]);
    let r = send_json(&mut c, "POST", &format!("{FHIR}/Patient"), &twin).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", r.body);
    assert!(is_outcome(&r.body));
    let mut nameless = patient.clone();
    nameless["identifier"][0]["value"] = serde_json::json!(emr_id("200402"));
    nameless["name"] = serde_json::json!([{"given": ["Seule"]}]);
    let r = send_json(&mut c, "POST", &format!("{FHIR}/Patient"), &nameless).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", r.body);
    for (element, value) in [
        ("birthDate", serde_json::json!("1988-02-30")),
        ("photo", serde_json::json!([{"url": "x"}])),
        ("gender", serde_json::json!("F")),
    ] {
        let mut bad = patient.clone();
        bad["identifier"][0]["value"] = serde_json::json!(emr_id("200403"));
        bad[element] = value;
        let r = send_json(&mut c, "POST", &format!("{FHIR}/Patient"), &bad).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{element}: {:?}", r.body);
        assert!(is_outcome(&r.body));
    }
    let named = c.get(&format!("{FHIR}/Patient?family=lukusa")).await;
    assert_eq!(fhir_ids(&named.body), vec![uuid.clone()]);

    // A correction: the resource read back, changed, put back. Names and identifiers keep
    // their uuids; the attribute FHIR does not carry stays.
    let name_uuid = read["name"][0]["id"].clone();
    read["name"][0]["family"] = serde_json::json!("Lukusa-Mwamba");
    read["birthDate"] = serde_json::json!("1988-03-14");
    read["telecom"][0]["value"] = serde_json::json!("+243810000002");
    let r = send_json(&mut c, "PUT", &format!("{FHIR}/Patient/{uuid}"), &read).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["name"][0]["id"], name_uuid);
    assert_eq!(r.body["name"][0]["family"], "Lukusa-Mwamba");
    assert_eq!(r.body["birthDate"], "1988-03-14");
    let rest = c
        .get(&format!("/openmrs/ws/rest/v1/patient/{uuid}?v=full"))
        .await;
    assert_eq!(rest.body["person"]["birthdateEstimated"], false);
    assert!(rest.body["auditInfo"]["changedBy"].is_object());
    assert_eq!(
        rest.body["person"]["attributes"].as_array().unwrap().len(),
        1
    );
    let renamed = c.get(&format!("{FHIR}/Patient?family=mwamba")).await;
    assert_eq!(renamed.body["total"], 0, "FHIR's family is a word's start");
    let renamed = c.get(&format!("{FHIR}/Patient?family=lukusa-mw")).await;
    assert_eq!(fhir_ids(&renamed.body), vec![uuid.clone()]);
    // An id that is not the path's, an unknown patient; the registration desk's role may.
    let r = send_json(
        &mut c,
        "PUT",
        &format!("{FHIR}/Patient/{}", "0".repeat(36)),
        &read,
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let mut stranger = read.clone();
    stranger["id"] = serde_json::json!("0".repeat(36));
    let r = send_json(
        &mut c,
        "PUT",
        &format!("{FHIR}/Patient/{}", "0".repeat(36)),
        &stranger,
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(is_outcome(&r.body));
    let mut reader = registration_clerk(&mut c, &st, "fhir-clerk").await;
    let r = send_json(&mut reader, "PUT", &format!("{FHIR}/Patient/{uuid}"), &read).await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "the registration role edits patients"
    );
    let listed = c.get(&format!("{FHIR}/metadata")).await;
    let patient_type = listed.body["rest"][0]["resource"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "Patient")
        .unwrap()
        .clone();
    let interactions: Vec<&str> = patient_type["interaction"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["code"].as_str().unwrap())
        .collect();
    assert!(interactions.contains(&"create") && interactions.contains(&"update"));
}

#[tokio::test]
async fn an_integration_records_an_encounter_in_a_visit() {
    const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
    const VITALS_TYPE: &str = "023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42";
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Furaha", "Mwamba", "200501").await;
    let site = location_uuid(&st, "Centre de santé Bondeko");
    let started = (chrono::Utc::now() - chrono::Duration::hours(1))
        .format("%Y-%m-%dT%H:%M:%S.000+0000")
        .to_string();
    let visit = c
        .post(
            "/openmrs/ws/rest/v1/visit",
            &serde_json::json!({"patient": p, "visitType": OUTPATIENT, "location": site, "startDatetime": started}).to_string(),
        )
        .await;
    assert_eq!(visit.status, StatusCode::CREATED, "{:?}", visit.body);
    let visit = visit.body["uuid"].as_str().unwrap().to_string();
    let provider = c
        .post(
            "/openmrs/ws/rest/v1/provider",
            &serde_json::json!({"name": "Infirmier Jean Banza", "identifier": "PRV-88"})
                .to_string(),
        )
        .await;
    let provider = provider.body["uuid"].as_str().unwrap().to_string();
    let when = (chrono::Utc::now() - chrono::Duration::minutes(20))
        .format("%Y-%m-%dT%H:%M:%S+00:00")
        .to_string();
    let encounter = serde_json::json!({
        "resourceType": "Encounter",
        "status": "finished",
        "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "AMB"},
        "type": [{"coding": [{"system": "http://fhir.openmrs.org/code-system/encounter-type", "code": VITALS_TYPE}]}],
        "subject": {"reference": format!("Patient/{p}")},
        "period": {"start": when},
        "location": [{"location": {"reference": format!("Location/{site}")}}],
        "participant": [{"individual": {"reference": format!("Practitioner/{provider}")}}],
    });
    let r = send_json(&mut c, "POST", &format!("{FHIR}/Encounter"), &encounter).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    assert!(
        r.headers["location"]
            .to_str()
            .unwrap()
            .ends_with(&format!("/Encounter/{id}"))
    );
    // Placed in her open visit that holds its time, as REST places one; read back by both.
    assert_eq!(r.body["partOf"]["reference"], format!("Encounter/{visit}"));
    assert_eq!(
        r.body["participant"][0]["individual"]["reference"],
        format!("Practitioner/{provider}")
    );
    let rest = c
        .get(&format!("/openmrs/ws/rest/v1/encounter/{id}?v=full"))
        .await;
    assert_eq!(rest.body["encounterType"]["uuid"], VITALS_TYPE);
    assert_eq!(rest.body["location"]["uuid"], site);
    assert!(rest.body["auditInfo"]["creator"].is_object());
    let listed = c.get(&format!("{FHIR}/Encounter?subject={p}")).await;
    assert_eq!(fhir_ids(&listed.body), vec![id.clone()]);

    // A rule broken (a time before her visit began) is 422; a malformed resource, a visit,
    // an unknown element are 400; nothing more is stored.
    let mut early = encounter.clone();
    early["period"]["start"] = serde_json::json!("2020-01-01T08:00:00+00:00");
    early["partOf"] = serde_json::json!({"reference": format!("Encounter/{visit}")});
    let r = send_json(&mut c, "POST", &format!("{FHIR}/Encounter"), &early).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", r.body);
    assert!(is_outcome(&r.body));
    let mut stranger = encounter.clone();
    stranger["subject"] = serde_json::json!({"reference": format!("Patient/{}", "0".repeat(36))});
    let r = send_json(&mut c, "POST", &format!("{FHIR}/Encounter"), &stranger).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", r.body);
    for (element, value) in [
        ("type", serde_json::json!([{"text": "vitals"}])),
        ("meta", serde_json::json!({"tag": [{"code": "visit"}]})),
        ("reasonCode", serde_json::json!([{"text": "fever"}])),
        ("subject", serde_json::json!({"reference": "Group/x"})),
    ] {
        let mut bad = encounter.clone();
        bad[element] = value;
        let r = send_json(&mut c, "POST", &format!("{FHIR}/Encounter"), &bad).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{element}: {:?}", r.body);
        assert!(is_outcome(&r.body));
    }
    let listed = c.get(&format!("{FHIR}/Encounter?subject={p}")).await;
    assert_eq!(listed.body["total"], 1);
    // A Practitioner named by its account, as a record's `recorder` names it.
    let me = c.user_uuid().await;
    let mut by_account = encounter.clone();
    by_account["participant"] =
        serde_json::json!([{"individual": {"reference": format!("Practitioner/{me}")}}]);
    let r = send_json(&mut c, "POST", &format!("{FHIR}/Encounter"), &by_account).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let practitioner = r.body["participant"][0]["individual"]["reference"]
        .as_str()
        .unwrap()
        .to_string();
    let read = c.get(&format!("{FHIR}/{practitioner}")).await;
    assert_eq!(read.status, StatusCode::OK, "{:?}", read.body);
}

#[tokio::test]
async fn a_warehouse_reads_the_patients_changed_since_its_last_visit() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let a = register_patient(&mut c, &st, "Bahati", "Kapinga", "200601").await;
    let b = register_patient(&mut c, &st, "Baraka", "Kapinga", "200602").await;
    let today = chrono::Utc::now().date_naive();
    let day = |d: chrono::NaiveDate| d.format("%Y-%m-%d").to_string();
    let ids = |r: &crate::common::Response| {
        let mut v = fhir_ids(&r.body);
        v.sort();
        v
    };
    let mut both = vec![a.clone(), b.clone()];
    both.sort();
    let since = c
        .get(&format!("{FHIR}/Patient?_lastUpdated=ge{}", day(today)))
        .await;
    assert_eq!(since.status, StatusCode::OK, "{:?}", since.body);
    assert_eq!(ids(&since), both);
    // The total is counted only when asked; the next link says that more follow.
    assert!(since.body.get("total").is_none(), "{:?}", since.body);
    let first = c
        .get(&format!(
            "{FHIR}/Patient?_lastUpdated=ge{}&_count=1",
            day(today)
        ))
        .await;
    assert_eq!(fhir_ids(&first.body).len(), 1);
    assert!(
        first.body["link"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["relation"] == "next")
    );
    let counted = c
        .get(&format!(
            "{FHIR}/Patient?_lastUpdated=ge{}&_total=accurate",
            day(today)
        ))
        .await;
    assert_eq!(counted.body["total"], 2);
    for none in [
        format!("_lastUpdated=lt{}", day(today)),
        format!("_lastUpdated=gt{}", day(today)),
        format!("name=bahati&_lastUpdated=lt{}", day(today)),
    ] {
        let r = c.get(&format!("{FHIR}/Patient?{none}")).await;
        assert_eq!(fhir_ids(&r.body), Vec::<String>::new(), "{none}");
    }
    let r = c
        .get(&format!(
            "{FHIR}/Patient?name=bahati&_lastUpdated={}",
            day(today)
        ))
        .await;
    assert_eq!(fhir_ids(&r.body), vec![a.clone()]);
    let r = c
        .get(&format!(
            "{FHIR}/Patient?_lastUpdated=ge{}&given=baraka",
            day(today)
        ))
        .await;
    assert_eq!(fhir_ids(&r.body), vec![b.clone()]);
    // A change moves her entry (she is listed once, at her new time); a voided patient
    // leaves the list.
    let r = c
        .post(
            &format!("/openmrs/ws/rest/v1/patient/{a}"),
            r#"{"person": {"gender": "M"}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{FHIR}/Patient?_lastUpdated=ge{}&_total=accurate",
            day(today)
        ))
        .await;
    assert_eq!(r.body["total"], 2);
    assert_eq!(ids(&r), both);
    let r = c
        .get(&format!(
            "{FHIR}/Patient?_lastUpdated=ge{}&gender=male",
            day(today)
        ))
        .await;
    assert_eq!(fhir_ids(&r.body), vec![a.clone()]);
    let r = c
        .send(
            "DELETE",
            &format!("/openmrs/ws/rest/v1/patient/{b}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{FHIR}/Patient?_lastUpdated=ge{}&_summary=count",
            day(today)
        ))
        .await;
    assert_eq!(r.body["total"], 1);
    let r = c
        .get(&format!("{FHIR}/Patient?_lastUpdated=ge{}", day(today)))
        .await;
    assert_eq!(fhir_ids(&r.body), vec![a.clone()]);
    let r = c
        .get(&format!("{FHIR}/Patient?_lastUpdated=ge2026-13"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(is_outcome(&r.body));
}

#[tokio::test]
async fn a_patient_comes_with_what_names_her_when_asked() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = register_patient(&mut c, &st, "Safari", "Kazadi", "200701").await;
    crate::router_clinical::visit_with_vitals(&mut c, &st, &p).await;
    let alone = register_patient(&mut c, &st, "Sifa", "Kazadi", "200702").await;
    let r = c
        .get(&format!(
            "{FHIR}/Patient?family=kazadi&_revinclude=Encounter:patient&_revinclude=Observation:patient"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["total"], 2, "the total counts the patients found");
    let entries = r.body["entry"].as_array().unwrap();
    let of = |mode: &str, kind: &str| -> Vec<Value> {
        entries
            .iter()
            .filter(|e| e["search"]["mode"] == mode && e["resource"]["resourceType"] == kind)
            .map(|e| e["resource"].clone())
            .collect()
    };
    let mut found: Vec<String> = of("match", "Patient")
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    found.sort();
    let mut want = vec![p.clone(), alone.clone()];
    want.sort();
    assert_eq!(found, want);
    let encounters = of("include", "Encounter");
    assert_eq!(encounters.len(), 1);
    assert_eq!(
        encounters[0]["subject"]["reference"],
        format!("Patient/{p}")
    );
    let observations = of("include", "Observation");
    assert_eq!(observations.len(), 1);
    assert_eq!(
        observations[0]["subject"]["reference"],
        format!("Patient/{p}")
    );
    // One fhir2 does not offer is refused rather than answered without it.
    let r = c
        .get(&format!(
            "{FHIR}/Patient?family=kazadi&_revinclude=Condition:patient"
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(is_outcome(&r.body));
    let meta = c.get(&format!("{FHIR}/metadata")).await;
    let patient = meta.body["rest"][0]["resource"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "Patient")
        .unwrap()
        .clone();
    assert!(
        patient["searchRevInclude"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("Encounter:patient"))
    );
}

#[tokio::test]
async fn locations_are_found_by_their_address_and_their_parent() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let desk = location_uuid(&st, "Bondeko - Accueil");
    let centre = location_uuid(&st, "Centre de santé Bondeko");
    let names = |r: &crate::common::Response| -> Vec<String> {
        r.body["entry"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| e["resource"]["id"].as_str().unwrap().to_string())
            .collect()
    };
    for (query, holds) in [
        ("address-city=binza", true),
        ("address-city=BINZA%20M%C3%A9t", true),
        ("address-city=meteo", true),
        ("address-city=binza&address-state=kinshasa", true),
        ("address-city=nowhere,binza", true),
        ("address-city=binza&address-state=katanga", false),
        ("address-country=republique&address-postalcode=1", false),
        ("address-city=inza", false),
    ] {
        let r = c.get(&format!("{FHIR}/Location?{query}&_count=500")).await;
        assert_eq!(r.status, StatusCode::OK, "{query}: {:?}", r.body);
        assert_eq!(names(&r).contains(&desk), holds, "{query}");
    }
    // `partof`: the locations directly under one; `partof:below`: at any depth.
    let direct = c
        .get(&format!("{FHIR}/Location?partof={centre}&_count=500"))
        .await;
    assert!(names(&direct).contains(&desk));
    for entry in direct.body["entry"].as_array().unwrap() {
        assert_eq!(
            entry["resource"]["partOf"]["reference"],
            format!("Location/{centre}")
        );
    }
    let country = location_uuid(&st, "République démocratique du Congo");
    let r = c
        .get(&format!("{FHIR}/Location?partof={country}&_count=500"))
        .await;
    assert!(!names(&r).contains(&desk), "not directly under the country");
    let r = c
        .get(&format!(
            "{FHIR}/Location?partof:below={country}&_count=500"
        ))
        .await;
    assert!(names(&r).contains(&desk));
}

#[tokio::test]
async fn an_estimated_birth_date_read_and_put_back_keeps_its_day() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let mut body: Value =
        serde_json::from_str(&patient_body(&st, "Nadine", "Banza", "200801")).unwrap();
    body["person"]["birthdate"] = serde_json::json!("1990-07-15");
    body["person"]["birthdateEstimated"] = serde_json::json!(true);
    let r = c
        .post("/openmrs/ws/rest/v1/patient", &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    let mut read = c.get(&format!("{FHIR}/Patient/{uuid}")).await.body;
    assert_eq!(read["birthDate"], "1990");
    read["telecom"][0]["value"] = serde_json::json!("+243810000009");
    let r = send_json(&mut c, "PUT", &format!("{FHIR}/Patient/{uuid}"), &read).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let rest = c
        .get(&format!("/openmrs/ws/rest/v1/patient/{uuid}?v=full"))
        .await;
    assert!(
        rest.body["person"]["birthdate"]
            .as_str()
            .unwrap()
            .starts_with("1990-07-15"),
        "{:?}",
        rest.body["person"]["birthdate"]
    );
    // Another year put back is another birth date.
    read["birthDate"] = serde_json::json!("1991");
    let r = send_json(&mut c, "PUT", &format!("{FHIR}/Patient/{uuid}"), &read).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let rest = c
        .get(&format!("/openmrs/ws/rest/v1/patient/{uuid}?v=full"))
        .await;
    assert!(
        rest.body["person"]["birthdate"]
            .as_str()
            .unwrap()
            .starts_with("1991-01-01")
    );
}
