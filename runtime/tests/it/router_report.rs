//! Reports over `reportingrest`: the content's definitions with their parameters and
//! designs; each cell of the DRC HIV stages 3 and 4 report proved on seeded patients (the
//! boundaries of the period, of the age brackets, death, referral, unknown sex); runs in
//! the background, listed, downloaded as CSV and as a workbook, saved and deleted; the
//! line lists; the errors and privileges; and the figures sent to a DHIS2 stood in for by a
//! local HTTP server that checks the `dataValueSets` payload as DHIS2 documents it.

use crate::common::*;
use axum::http::StatusCode;
use base64::Engine;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const REST: &str = "/openmrs/ws/rest/v1";
const HIV_STAGES: &str = "27b977d2-02bf-4ef9-b512-9b9c495962b8";
const HIV_STAGES_CSV: &str = "beac741c-813c-43a0-80e1-27c9de5bcf01";
const HIV_STAGES_EXCEL: &str = "5f0a3c1e-8d2b-4b6e-9a51-3c7d2e4f6a10";
const ACTIVITY: &str = "6c1d7e52-3b8f-4f0e-9d4a-2b7c5e8f1a93";
const MISSED: &str = "b4e7d1a2-9c3f-4e58-a6b0-7d2c1f8e5a39";
const VIRAL_LOAD_DUE: &str = "e1f3a5c7-4b2d-4e6f-8a9b-0c1d2e3f4a5b";
const NAME: &str = "Rapport sur les stades 3 et 4 du VIH en RDC";
const STAGE: &str = "5356AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const REFERRED: &str = "1648AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const YES: &str = "1065AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const NO: &str = "1066AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const OUTPATIENT: &str = "f19c6fdb-bd43-41e7-bb4c-cc892e489c25";
const HIV_PROGRAMME: &str = "55b7349b-d2b5-40d5-a813-7bc1044ca6b0";
const CPN: &str = "fa826f46-5383-45d4-b118-972476624277";
const CONSULTATION: &str = "91edcf31-cf56-43c3-a7d8-b8097fbd0035";
const ADMISSION: &str = "40700a43-b4ad-480a-a482-2435092bf5f2";

fn stage(ciel: u32) -> String {
    format!("{ciel}AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
}

/// A patient of a given sex and birth date.
async fn person(
    c: &mut Client,
    st: &runtime::http::AppState,
    gender: &str,
    birthdate: &str,
    id: &str,
) -> String {
    let mut body: Value =
        serde_json::from_str(&patient_body(st, "Test", &format!("Patient{id}"), id)).unwrap();
    body["person"]["gender"] = json!(gender);
    body["person"]["birthdate"] = json!(birthdate);
    let r = c.post(&format!("{REST}/patient"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body["uuid"].as_str().unwrap().to_string()
}

async fn visit(c: &mut Client, st: &runtime::http::AppState, patient: &str, day: &str) {
    let body = json!({"patient": patient, "visitType": OUTPATIENT,
        "startDatetime": format!("{day}T08:00:00.000+0000"), "stopDatetime": format!("{day}T12:00:00.000+0000"),
        "location": location_uuid(st, "Bondeko - Consultation")});
    let r = c.post(&format!("{REST}/visit"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

async fn coded(c: &mut Client, patient: &str, concept: &str, day: &str, value: &str) {
    let body = json!({"person": patient, "concept": concept,
        "obsDatetime": format!("{day}T09:00:00.000+0000"), "value": value});
    let r = c.post(&format!("{REST}/obs"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

async fn numeric(c: &mut Client, patient: &str, concept: &str, day: &str, value: f64) {
    let body = json!({"person": patient, "concept": concept,
        "obsDatetime": format!("{day}T09:00:00.000+0000"), "value": value});
    let r = c.post(&format!("{REST}/obs"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

/// A patient seen in January 2026 with a stage and a referral answer.
async fn seen(
    c: &mut Client,
    st: &runtime::http::AppState,
    gender: &str,
    birthdate: &str,
    id: &str,
    stage_value: u32,
    referred: Option<&str>,
) -> String {
    let p = person(c, st, gender, birthdate, id).await;
    visit(c, st, &p, "2026-01-10").await;
    coded(c, &p, STAGE, "2026-01-10", &stage(stage_value)).await;
    if let Some(r) = referred {
        coded(c, &p, REFERRED, "2026-01-10", r).await;
    }
    p
}

fn cell(body: &Value, column: &str) -> u64 {
    let name = format!("{NAME}.{column}");
    body["dataSets"][0]["rows"][0][&name]["size"]
        .as_u64()
        .unwrap_or_else(|| panic!("no cell {name} in {body}"))
}

/// The January 2026 population of the HIV stages report, with what each patient proves.
async fn seed_hiv_stages(c: &mut Client, st: &runtime::http::AppState) -> Vec<String> {
    let mut counted = Vec::new();
    // A man of 35 in stage 3 (adult), not referred: Mâles, Tout, 25 à 49 ans.
    counted.push(seen(c, st, "M", "1990-05-01", "810001", 1206, Some(NO)).await);
    // A girl of 10 months in stage 3 (child): Femmes, Tout, moins de 1 an.
    counted.push(seen(c, st, "F", "2025-03-01", "810002", 1222, Some(NO)).await);
    // A girl born five years to the day before the end date: 5 à 9 ans, not 1 à 4.
    counted.push(seen(c, st, "F", "2021-01-31", "810003", 1207, Some(NO)).await);
    // A man whose last stage in the period is 1, after a 3: not counted.
    let d = seen(c, st, "M", "1980-01-01", "810004", 1206, Some(NO)).await;
    coded(c, &d, STAGE, "2026-01-20", &stage(1204)).await;
    // A woman staged 3 in December only: no stage in the period, not counted.
    let e = person(c, st, "F", "1985-01-01", "810005").await;
    visit(c, st, &e, "2026-01-12").await;
    coded(c, &e, STAGE, "2025-12-20", &stage(1206)).await;
    coded(c, &e, REFERRED, "2026-01-12", NO).await;
    // A man in stage 4, referred out: not counted.
    seen(c, st, "M", "1975-06-01", "810006", 1207, Some(YES)).await;
    // A woman in stage 3 who died on 15 January: not counted.
    let g = seen(c, st, "F", "1970-02-02", "810007", 1206, Some(NO)).await;
    let r = c
        .post(
            &format!("{REST}/person/{g}"),
            &json!({"dead": true, "deathDate": "2026-01-15T10:00:00.000+0000", "causeOfDeathNonCoded": "Tuberculose"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // A woman in stage 3 whose visit is in February: not counted.
    let i = person(c, st, "F", "1992-03-03", "810008").await;
    visit(c, st, &i, "2026-02-02").await;
    coded(c, &i, STAGE, "2026-01-25", &stage(1206)).await;
    coded(c, &i, REFERRED, "2026-01-25", NO).await;
    // A man in stage 3 with no referral answer: not counted (the module's "not in" needs
    // an observation).
    seen(c, st, "M", "1988-08-08", "810009", 1206, None).await;
    // A person of unknown sex, 20 years old, in stage 3: in the age bracket only.
    counted.push(seen(c, st, "U", "2005-06-15", "810010", 1206, Some(NO)).await);
    // A man seen on the last day of the period (its end is inclusive): 50 ans et plus.
    let k = person(c, st, "M", "1960-01-01", "810011").await;
    visit(c, st, &k, "2026-01-31").await;
    coded(c, &k, STAGE, "2026-01-31", &stage(1207)).await;
    coded(c, &k, REFERRED, "2026-01-31", NO).await;
    counted.push(k);
    counted
}

#[tokio::test]
async fn each_cell_of_the_hiv_stages_report_is_proved_on_known_patients() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let counted = seed_hiv_stages(&mut c, &st).await;
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportdata/{HIV_STAGES}?startDate=2026-01-01&endDate=2026-01-31"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["uuid"], HIV_STAGES);
    let expected = [
        ("Mâles", 2),
        ("Femmes", 2),
        ("Tout", 4),
        ("Moins de 1 an", 1),
        ("1 à 4 ans", 0),
        ("5 à 9 ans", 1),
        ("10 à 14 ans", 0),
        ("15 à 19 ans", 0),
        ("20 à 24 ans", 1),
        ("25 à 49 ans", 1),
        ("50 ans et plus", 1),
    ];
    for (column, n) in expected {
        assert_eq!(cell(&r.body, column), n, "{column}");
    }
    // The columns as the module names them, in its order, each a cohort.
    let columns: Vec<&str> = r.body["dataSets"][0]["metadata"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns.len(), 11);
    assert_eq!(columns[0], format!("{NAME}.Mâles"));
    assert_eq!(
        r.body["dataSets"][0]["metadata"]["columns"][0]["datatype"],
        "org.openmrs.Cohort"
    );
    // The cohort names its members.
    let all: Vec<&str> = r.body["dataSets"][0]["rows"][0][format!("{NAME}.Tout")]["memberIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    for p in &counted[..3] {
        assert!(all.contains(&p.as_str()));
    }
    // The reports app's data page sends local midnights with their offset: the same days.
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportdata/{HIV_STAGES}?startDate=2026-01-01T00:00:00.000%2B01:00&endDate=2026-01-31T00:00:00.000%2B01:00"
        ))
        .await;
    assert_eq!(cell(&r.body, "Tout"), 4);
    // A period that ends before the last stage change counts the man of 1980 again.
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportdata/{HIV_STAGES}?startDate=2026-01-01&endDate=2026-01-19"
        ))
        .await;
    assert_eq!(
        cell(&r.body, "Mâles"),
        2,
        "the man of 1980, not the one seen on the 31st"
    );
}

#[tokio::test]
async fn definitions_and_designs_are_the_contents() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c
        .get(&format!("{REST}/reportingrest/reportDefinition?v=full"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let list = r.body["results"].as_array().unwrap();
    assert_eq!(list.len(), 4);
    let hiv = list.iter().find(|d| d["uuid"] == HIV_STAGES).unwrap();
    assert_eq!(hiv["name"], NAME);
    assert_eq!(hiv["parameters"][0]["name"], "startDate");
    assert_eq!(hiv["parameters"][0]["type"], "java.util.Date");
    assert_eq!(hiv["parameters"][1]["name"], "endDate");
    let activity = c
        .get(&format!("{REST}/reportingrest/reportDefinition/{ACTIVITY}"))
        .await;
    assert_eq!(
        activity.body["parameters"][2]["type"],
        "org.openmrs.Location"
    );
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportDesign?reportDefinitionUuid={HIV_STAGES}"
        ))
        .await;
    let designs = r.body["results"].as_array().unwrap();
    assert_eq!(designs.len(), 2);
    assert_eq!(designs[0]["uuid"], HIV_STAGES_CSV);
    assert_eq!(
        designs[0]["rendererType"],
        "org.openmrs.module.reporting.report.renderer.CsvReportRenderer"
    );
    // Errors: no report named, an unknown report, an unknown design.
    let r = c.get(&format!("{REST}/reportingrest/reportDesign")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportDefinition/{}",
            "0".repeat(8)
        ))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportDesign/{}",
            "0".repeat(8)
        ))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // In English when the session is.
    let r = c
        .post(
            &format!("{REST}/session"),
            &json!({"locale": "en"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportDefinition/{HIV_STAGES}"
        ))
        .await;
    assert_eq!(r.body["name"], "DRC HIV stages 3 and 4 report");
}

#[tokio::test]
async fn bad_requests_are_refused_with_the_modules_errors() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let data = |q: &str| format!("{REST}/reportingrest/reportdata/{q}");
    let r = c
        .get(&data(&format!(
            "{}?startDate=2026-01-01&endDate=2026-01-31",
            "f".repeat(36)
        )))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = c
        .get(&data(&format!("{HIV_STAGES}?startDate=2026-01-01")))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Missing parameter: endDate")
    );
    let r = c
        .get(&data(&format!(
            "{HIV_STAGES}?startDate=2026-13-01&endDate=2026-01-31"
        )))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("startDate")
    );
    let r = c
        .get(&data(&format!(
            "{HIV_STAGES}?startDate=2026-02-01&endDate=2026-01-31"
        )))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .get(&data(&format!(
            "{ACTIVITY}?startDate=2026-01-01&endDate=2026-01-31"
        )))
        .await;
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Missing parameter: location")
    );
    let r = c
        .get(&data(&format!(
            "{ACTIVITY}?startDate=2026-01-01&endDate=2026-01-31&location=nowhere"
        )))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .get(&format!("{REST}/reportingrest/reportRequest?status=DONE"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let request = |params: Value, design: &str| {
        json!({"reportDefinition": {"parameterizable": {"uuid": HIV_STAGES}, "parameterMappings": params},
            "renderingMode": {"argument": design}})
    };
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest"),
            &request(json!({"startDate": "2026-01-01"}), HIV_STAGES_CSV).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Parameter endDate is required")
    );
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest"),
            &request(
                json!({"startDate": "2026-01-01", "endDate": "2026-01-31"}),
                ACTIVITY,
            )
            .to_string(),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "a design of another report"
    );
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest"),
            &json!({"reportDefinition": {"parameterizable": {"uuid": HIV_STAGES}, "parameterMappings": {"startDate": "2026-01-01", "endDate": "2026-01-31"}}, "schedule": "0 0 * * * ?"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "an hourly schedule");
    for path in [
        "downloadReport?reportRequestUuid=nope",
        "downloadMultipleReports?reportRequestUuids=nope",
    ] {
        let r = c.get(&format!("{REST}/reportingrest/{path}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}");
    }
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportRequest/{HIV_STAGES}/dhis2"
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn reports_need_the_reporting_privileges() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let mut clerk = registration_clerk(&mut admin, &st, "accueil2").await;
    let r = clerk
        .get(&format!("{REST}/reportingrest/reportDefinition"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = clerk
        .get(&format!(
            "{REST}/reportingrest/reportdata/{HIV_STAGES}?startDate=2026-01-01&endDate=2026-01-31"
        ))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let mut anonymous = Client::new(st.clone());
    let r = anonymous
        .get(&format!("{REST}/reportingrest/reportRequest"))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // A data manager runs them.
    let body = json!({"username": "donnees", "password": "Data-pass-2026",
        "person": {"names": [{"givenName": "Paul", "familyName": "Mbala"}], "gender": "M"},
        "roles": ["Organizational: Data Manager"]});
    let r = admin.post(&format!("{REST}/user"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut manager = Client::new(st.clone());
    manager.login("donnees", "Data-pass-2026").await;
    let r = manager
        .get(&format!(
            "{REST}/reportingrest/reportdata/{HIV_STAGES}?startDate=2026-01-01&endDate=2026-01-31"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
}

/// Waits for a run to finish (it runs on a thread of its own), answering it.
async fn finished(c: &mut Client, uuid: &str) -> Value {
    for _ in 0..2000 {
        let r = c
            .get(&format!("{REST}/reportingrest/reportRequest/{uuid}"))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        if r.body["status"] == "COMPLETED" || r.body["status"] == "FAILED" {
            return r.body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the run {uuid} did not finish");
}

async fn run(c: &mut Client, design: &str, start: &str, end: &str) -> String {
    let body = json!({"reportDefinition": {"parameterizable": {"uuid": HIV_STAGES},
        "parameterMappings": {"startDate": start, "endDate": end}},
        "renderingMode": {"argument": design}});
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest"),
            &body.to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["parameterizable"]["uuid"], HIV_STAGES);
    r.body["uuid"].as_str().unwrap().to_string()
}

fn file_of(v: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(v["fileContent"].as_str().unwrap())
        .unwrap()
}

#[tokio::test]
async fn a_run_is_listed_downloaded_saved_and_deleted() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    seed_hiv_stages(&mut c, &st).await;
    // Dates as the reports app sends them: the browser's local midnight (Kinshasa).
    let csv_run = run(
        &mut c,
        HIV_STAGES_CSV,
        "2025-12-31T23:00:00.000Z",
        "2026-01-30T23:00:00.000Z",
    )
    .await;
    let done = finished(&mut c, &csv_run).await;
    assert_eq!(done["status"], "COMPLETED", "{done}");
    assert_eq!(done["renderingMode"]["label"], "CSV");
    assert_eq!(done["parameterMappings"]["startDate"], "2026-01-01");
    assert_eq!(done["parameterMappings"]["endDate"], "2026-01-31");
    assert!(
        done["requestedBy"]["person"]["display"].is_string(),
        "{done}"
    );
    assert!(done["evaluateCompleteDatetime"].is_string());
    let xlsx_run = run(&mut c, HIV_STAGES_EXCEL, "2026-01-01", "2026-01-31").await;
    assert_eq!(finished(&mut c, &xlsx_run).await["status"], "COMPLETED");

    let r = c
        .get(&format!("{REST}/reportingrest/reportRequest?status=COMPLETED,SAVED&startIndex=1&limit=1&totalCount=true"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["totalCount"], 2);
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["results"][0]["uuid"], xlsx_run, "newest first");
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportRequest?status=COMPLETED&startIndex=2&limit=1"
        ))
        .await;
    assert_eq!(r.body["results"][0]["uuid"], csv_run, "the second page");
    let r = c
        .get(&format!("{REST}/reportingrest/reportRequest?status=FAILED"))
        .await;
    assert!(r.body["results"].as_array().unwrap().is_empty());

    let r = c
        .get(&format!(
            "{REST}/reportingrest/downloadReport?reportRequestUuid={csv_run}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["contentType"], "text/csv");
    assert!(r.body["filename"].as_str().unwrap().ends_with(".csv"));
    let text = String::from_utf8(file_of(&r.body)).unwrap();
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with(&format!("{NAME}.Mâles,{NAME}.Femmes,{NAME}.Tout"))
    );
    assert_eq!(lines.next().unwrap(), "2,2,4,1,0,1,0,0,1,1,1");

    let r = c
        .get(&format!(
            "{REST}/reportingrest/downloadReport?reportRequestUuid={xlsx_run}"
        ))
        .await;
    assert_eq!(
        r.body["contentType"],
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    );
    let bytes = file_of(&r.body);
    assert_eq!(&bytes[..2], b"PK", "a zip");
    let text = String::from_utf8_lossy(&bytes).to_string();
    assert!(text.contains("xl/worksheets/sheet1.xml"));

    let r = c
        .get(&format!(
            "{REST}/reportingrest/downloadMultipleReports?reportRequestUuids={csv_run},{xlsx_run}"
        ))
        .await;
    assert_eq!(r.body.as_array().unwrap().len(), 2);

    let r = c
        .send(
            "POST",
            &format!("{REST}/reportingrest/saveReport?reportRequestUuid={csv_run}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = c
        .get(&format!("{REST}/reportingrest/reportRequest/{csv_run}"))
        .await;
    assert_eq!(r.body["status"], "SAVED");
    let r = c
        .send(
            "POST",
            &format!("{REST}/reportingrest/saveReport?reportRequestUuid={csv_run}"),
            &[],
            None,
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "saved already: not completed"
    );

    let r = c
        .send(
            "DELETE",
            &format!("{REST}/reportingrest/reportRequest/{csv_run}"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .get(&format!("{REST}/reportingrest/reportRequest/{csv_run}"))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = c
        .get(&format!(
            "{REST}/reportingrest/downloadReport?reportRequestUuid={csv_run}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // A run and its result are in the backup, and come back with a restore.
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2).await;
    let r = c2
        .get(&format!(
            "{REST}/reportingrest/downloadReport?reportRequestUuid={xlsx_run}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(file_of(&r.body), bytes);
}

#[tokio::test]
async fn a_monthly_schedule_is_kept_and_makes_the_months_run() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let body = json!({"reportDefinition": {"parameterizable": {"uuid": HIV_STAGES},
        "parameterMappings": {}}, "renderingMode": {"argument": HIV_STAGES_CSV},
        "schedule": "0 0 1 1 * ?"});
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest"),
            &body.to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["status"], "SCHEDULED");
    let scheduled = r.body["uuid"].as_str().unwrap().to_string();
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportDefinitionsWithScheduledRequests?sortBy=name"
        ))
        .await;
    let hiv = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["reportDefinition"]["uuid"] == HIV_STAGES)
        .unwrap()
        .clone();
    assert_eq!(hiv["scheduledRequests"][0]["uuid"], scheduled);
    // On the 1st of March, the schedule asks for February, once.
    let march = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
    let now = chrono::Utc::now();
    let due = runtime::domains::report::due(&st.store, march, now).unwrap();
    assert_eq!(due.len(), 1);
    let again = runtime::domains::report::due(&st.store, march, now).unwrap();
    assert_eq!(again, due, "the same request, not a second one");
    let made = c
        .get(&format!("{REST}/reportingrest/reportRequest/{}", due[0]))
        .await;
    assert_eq!(made.body["parameterMappings"]["startDate"], "2026-02-01");
    assert_eq!(made.body["parameterMappings"]["endDate"], "2026-02-28");
    assert_eq!(made.body["status"], "REQUESTED");
    let catalog = st.catalog.load_full();
    runtime::domains::report::run(&st.store, &catalog, &due[0], chrono::Utc::now).unwrap();
    let made = c
        .get(&format!("{REST}/reportingrest/reportRequest/{}", due[0]))
        .await;
    assert_eq!(made.body["status"], "COMPLETED");
    assert!(
        runtime::domains::report::due(&st.store, march, now)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn line_lists_name_missed_appointments_and_viral_loads_due() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    // Missed: an appointment of January marked missed; another kept.
    let missed = person(&mut c, &st, "F", "1990-01-01", "820001").await;
    let kept = person(&mut c, &st, "M", "1991-01-01", "820002").await;
    for (p, status) in [(&missed, "Missed"), (&kept, "Completed")] {
        let body = json!({"appointmentKind": "Scheduled", "status": "", "serviceUuid": CPN,
            "startDateTime": "2026-01-14T09:00:00+00:00", "endDateTime": "2026-01-14T09:20:00+00:00",
            "locationUuid": location_uuid(&st, "Bondeko - Consultation"), "providers": [], "patientUuid": p,
            "dateAppointmentScheduled": "2026-01-02T09:00:00+00:00"});
        let r = c
            .post(&format!("{REST}/appointment"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        let uuid = r.body["uuid"].as_str().unwrap().to_string();
        if status == "Completed" {
            for s in ["CheckedIn", "Completed"] {
                let r = c
                    .post(
                        &format!("{REST}/appointments/{uuid}/status-change"),
                        &json!({"toStatus": s}).to_string(),
                    )
                    .await;
                assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
            }
        } else {
            let r = c
                .post(
                    &format!("{REST}/appointments/{uuid}/status-change"),
                    &json!({"toStatus": status}).to_string(),
                )
                .await;
            assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        }
    }
    let r = c
        .get(&format!(
            "{REST}/reportingrest/reportdata/{MISSED}?startDate=2026-01-01&endDate=2026-01-31"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let rows = r.body["dataSets"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["Nom"], "Test Patient820001");
    assert_eq!(rows[0]["Date du rendez-vous"], "2026-01-14");
    assert_eq!(rows[0]["Service"], "Consultation prénatale");
    assert_eq!(rows[0]["Téléphone"], "+243810000000");
    assert_eq!(rows[0]["Âge"], 36);

    // Viral load due: two enrolled in HIV care, one with a result three months before.
    let due = person(&mut c, &st, "F", "1980-01-01", "820003").await;
    let tested = person(&mut c, &st, "M", "1982-01-01", "820004").await;
    for p in [&due, &tested] {
        let r = c
            .post(
                &format!("{REST}/programenrollment"),
                &json!({"patient": p, "program": HIV_PROGRAMME, "dateEnrolled": "2025-06-01T00:00:00.000+0000"}).to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let viral_load = st
        .catalog
        .load()
        .concept("DRC-EMR:3032")
        .unwrap()
        .uuid
        .clone();
    numeric(&mut c, &tested, &viral_load, "2025-11-02", 40.0).await;
    numeric(&mut c, &due, &viral_load, "2024-10-02", 1200.0).await;
    let r = c
        .get(&format!("{REST}/reportingrest/reportdata/{VIRAL_LOAD_DUE}?startDate=2026-01-01&endDate=2026-01-31"))
        .await;
    let rows = r.body["dataSets"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["Nom"], "Test Patient820003");
    assert_eq!(rows[0]["Date d'inscription"], "2025-06-01");
    assert_eq!(rows[0]["Dernière charge virale"], "1200");
    assert_eq!(rows[0]["Date de la dernière charge virale"], "2024-10-02");
}

#[tokio::test]
async fn the_activity_report_counts_new_and_returning_patients_at_its_location() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let here = location_uuid(&st, "Bondeko - Consultation");
    let new = person(&mut c, &st, "F", "2000-01-01", "830001").await;
    visit(&mut c, &st, &new, "2026-01-05").await;
    let returning = person(&mut c, &st, "M", "2024-06-01", "830002").await;
    visit(&mut c, &st, &returning, "2025-11-05").await;
    visit(&mut c, &st, &returning, "2026-01-06").await;
    let r = c
        .get(&format!("{REST}/reportingrest/reportdata/{ACTIVITY}?startDate=2026-01-01&endDate=2026-01-31&location={here}"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let row = &r.body["dataSets"][0]["rows"][0];
    let n = |k: &str| {
        row[k]["size"]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {row}"))
    };
    assert_eq!(n("Nouveaux patients.Femmes"), 1);
    assert_eq!(n("Nouveaux patients.Hommes"), 0);
    assert_eq!(n("Anciens patients.Hommes"), 1);
    assert_eq!(n("Anciens patients.1 à 4 ans"), 1);
    // Born on 1 January 2000: 26 at the end of January 2026.
    assert_eq!(n("Nouveaux patients.25 à 49 ans"), 1);
    assert_eq!(n("Nouveaux patients.15 à 24 ans"), 0);
    assert_eq!(n("Décès.Total"), 0);
    assert_eq!(n("Patients vus en consultation.Total"), 0);

    // Deaths of the month among those seen here in the twelve months before its end.
    let died = person(&mut c, &st, "F", "1960-01-01", "830003").await;
    visit(&mut c, &st, &died, "2025-02-01").await;
    let seen_long_ago = person(&mut c, &st, "M", "1961-01-01", "830004").await;
    visit(&mut c, &st, &seen_long_ago, "2025-01-31").await;
    let died_before = person(&mut c, &st, "M", "1962-01-01", "830005").await;
    visit(&mut c, &st, &died_before, "2025-10-01").await;
    for (p, day) in [
        (&died, "2026-01-20"),
        (&seen_long_ago, "2026-01-18"),
        (&died_before, "2025-12-31"),
    ] {
        let r = c
            .post(
                &format!("{REST}/person/{p}"),
                &json!({"dead": true, "deathDate": format!("{day}T10:00:00.000+0000"),
                    "causeOfDeathNonCoded": "Paludisme grave"})
                .to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    }
    // Consultations and admissions of the month here, each counted in its own row.
    for (p, kind, day) in [
        (&new, CONSULTATION, "2026-01-05"),
        (&returning, ADMISSION, "2026-01-06"),
        (&returning, CONSULTATION, "2025-12-20"),
    ] {
        let body = json!({"patient": p, "encounterType": kind,
            "encounterDatetime": format!("{day}T09:30:00.000+0000"), "location": here});
        let r = c
            .post(&format!("{REST}/encounter"), &body.to_string())
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let r = c
        .get(&format!("{REST}/reportingrest/reportdata/{ACTIVITY}?startDate=2026-01-01&endDate=2026-01-31&location={here}"))
        .await;
    let row = &r.body["dataSets"][0]["rows"][0];
    let n = |k: &str| {
        row[k]["size"]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {row}"))
    };
    // Seen on 1 February 2025, the first day of the twelve months; died on 20 January.
    assert_eq!(n("Décès.Femmes"), 1);
    assert_eq!(n("Décès.Total"), 1);
    assert_eq!(n("Décès.Hommes"), 0);
    assert_eq!(n("Patients vus en consultation.Femmes"), 1);
    assert_eq!(n("Patients vus en consultation.Hommes"), 0);
    assert_eq!(n("Patients hospitalisés.Hommes"), 1);
    assert_eq!(n("Patients hospitalisés.Total"), 1);
    // The dead are still patients of the month's other rows when they came.
    assert_eq!(n("Nouveaux patients.Total"), 1);
    // Elsewhere, nobody.
    let other = location_uuid(&st, "Bondeko - Accueil");
    let r = c
        .get(&format!("{REST}/reportingrest/reportdata/{ACTIVITY}?startDate=2026-01-01&endDate=2026-01-31&location={other}"))
        .await;
    assert_eq!(
        r.body["dataSets"][0]["rows"][0]["Nouveaux patients.Total"]["size"], 0,
        "{}",
        r.body["dataSets"][0]["rows"][0]
    );
}

/// A stand-in for DHIS2 on 127.0.0.1: checks what arrives against DHIS2's documented
/// `dataValueSets` format and answers an import summary, or a conflict when told to.
struct FakeDhis2 {
    url: String,
    received: Arc<Mutex<Vec<(String, String, Value)>>>,
    refuse: Arc<Mutex<bool>>,
}

/// The test authority and the stand-in's certificate for 127.0.0.1, signed by it
/// (`tests/fixtures/tls`, valid until 2126; made with openssl for these tests only).
const TEST_CA: &[u8] = include_bytes!("../fixtures/tls/ca.pem");
const TEST_CERTIFICATE: &[u8] = include_bytes!("../fixtures/tls/server.pem");
const TEST_KEY: &[u8] = include_bytes!("../fixtures/tls/server.key");

/// Serves `app` over HTTPS with the test certificate; answers the base URL.
async fn serve_tls(app: axum::Router) -> String {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(TEST_CERTIFICATE)
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_slice(TEST_KEY).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                // A client that does not trust the certificate ends the handshake.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(
                        hyper_util::rt::TokioIo::new(tls),
                        hyper_util::service::TowerToHyperService::new(app),
                    )
                    .await;
            });
        }
    });
    url
}

/// A stand-in for DHIS2's `dataValueSets` import, over HTTPS as the national instance is
/// reached.
async fn fake_dhis2() -> FakeDhis2 {
    use axum::extract::{RawQuery, State};
    use axum::http::HeaderMap;
    type Shared = (Arc<Mutex<Vec<(String, String, Value)>>>, Arc<Mutex<bool>>);
    async fn import(
        State((received, refuse)): State<Shared>,
        RawQuery(query): RawQuery,
        headers: HeaderMap,
        body: String,
    ) -> (StatusCode, String) {
        let auth = headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        received
            .lock()
            .unwrap()
            .push((auth, query.unwrap_or_default(), v.clone()));
        if *refuse.lock().unwrap() {
            return (StatusCode::CONFLICT, json!({"httpStatus": "Conflict", "httpStatusCode": 409, "status": "ERROR",
                "response": {"status": "ERROR", "importCount": {"imported": 0, "updated": 0, "ignored": 11, "deleted": 0},
                "conflicts": [{"object": "VIHstades34", "value": "Period: `202601` is after latest open future period"}]}}).to_string());
        }
        let n = v["dataValues"].as_array().map_or(0, Vec::len);
        (
            StatusCode::OK,
            json!({"httpStatus": "OK", "httpStatusCode": 200, "status": "OK",
            "response": {"responseType": "ImportSummary", "status": "SUCCESS",
            "importCount": {"imported": n, "updated": 0, "ignored": 0, "deleted": 0}}})
            .to_string(),
        )
    }
    let received = Arc::new(Mutex::new(Vec::new()));
    let refuse = Arc::new(Mutex::new(false));
    let app = axum::Router::new()
        .route("/api/dataValueSets", axum::routing::post(import))
        .with_state((received.clone(), refuse.clone()));
    let url = serve_tls(app).await;
    FakeDhis2 {
        url,
        received,
        refuse,
    }
}

fn is_dhis2_uid(s: &str) -> bool {
    s.len() == 11
        && s.chars().all(|c| c.is_ascii_alphanumeric())
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_months_figures_reach_dhis2_as_data_value_sets() {
    let dhis2 = fake_dhis2().await;
    let mut config = runtime::http::Config::for_tests(PASSWORD);
    config.dhis2 = Some(runtime::http::state::Dhis2 {
        url: dhis2.url.clone(),
        username: "snis".into(),
        password: "Snis-secret-1".into(),
        org_unit: "DiszpKrYNg8".into(),
        ca_pem: Some(TEST_CA.to_vec()),
    });
    let st = runtime::app::start::start(
        config,
        runtime::embedded::EMBEDDED_BUNDLE.to_vec(),
        test_store(),
    )
    .unwrap()
    .0;
    let mut c = Client::admin(st.clone()).await;
    seed_hiv_stages(&mut c, &st).await;
    let uuid = run(&mut c, HIV_STAGES_CSV, "2026-01-01", "2026-01-31").await;
    finished(&mut c, &uuid).await;

    let preview = c
        .get(&format!("{REST}/reportingrest/reportRequest/{uuid}/dhis2"))
        .await;
    assert_eq!(preview.status, StatusCode::OK, "{:?}", preview.body);
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest/{uuid}/dhis2"),
            "{}",
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["status"], "SENT");
    assert_eq!(r.body["message"], "imported 11, updated 0, ignored 0");

    let (auth, query, payload) = dhis2.received.lock().unwrap()[0].clone();
    let expected_auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("snis:Snis-secret-1")
    );
    assert_eq!(auth, expected_auth);
    assert!(
        query.contains("importStrategy=CREATE_AND_UPDATE"),
        "{query}"
    );
    assert_eq!(payload, preview.body, "what was previewed is what was sent");
    // DHIS2's format: a data set, a period of the month, the org unit, and data values.
    assert!(is_dhis2_uid(payload["dataSet"].as_str().unwrap()));
    assert_eq!(payload["period"], "202601");
    assert_eq!(payload["orgUnit"], "DiszpKrYNg8");
    assert!(
        chrono::NaiveDate::parse_from_str(payload["completeDate"].as_str().unwrap(), "%Y-%m-%d")
            .is_ok()
    );
    let values = payload["dataValues"].as_array().unwrap();
    assert_eq!(values.len(), 11);
    for v in values {
        assert!(is_dhis2_uid(v["dataElement"].as_str().unwrap()), "{v}");
        if let Some(coc) = v.get("categoryOptionCombo") {
            assert!(is_dhis2_uid(coc.as_str().unwrap()), "{v}");
        }
        assert!(
            v["value"].as_str().unwrap().parse::<u64>().is_ok(),
            "values are texts of numbers: {v}"
        );
    }
    let males = values
        .iter()
        .find(|v| v["dataElement"] == "VIHst34Masc")
        .unwrap();
    assert_eq!(males["value"], "2");
    let r = c
        .get(&format!("{REST}/reportingrest/reportRequest/{uuid}"))
        .await;
    assert_eq!(r.body["dhis2"]["status"], "SENT");

    // Sent again, the same values replace themselves (the import strategy), not add up.
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest/{uuid}/dhis2"),
            "{}",
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let received = dhis2.received.lock().unwrap().clone();
    assert_eq!(received[1].2, received[0].2);

    // Refused: 502 with DHIS2's reason, and the run says it failed.
    *dhis2.refuse.lock().unwrap() = true;
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest/{uuid}/dhis2"),
            "{}",
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_GATEWAY);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("latest open future period"),
        "{:?}",
        r.body
    );
    let r = c
        .get(&format!("{REST}/reportingrest/reportRequest/{uuid}"))
        .await;
    assert_eq!(r.body["dhis2"]["status"], "FAILED");

    // A run of part of a month cannot go.
    let part = run(&mut c, HIV_STAGES_CSV, "2026-01-01", "2026-01-15").await;
    finished(&mut c, &part).await;
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest/{part}/dhis2"),
            "{}",
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_dhis2_marks_nothing_sent() {
    // A port nothing listens on: bound, then released.
    let url = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    nothing_is_sent_to(url, None, "could not be reached").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dhis2_whose_certificate_is_not_trusted_is_sent_nothing() {
    // The stand-in's certificate chains to the test authority, which the public
    // authorities the runtime trusts by default are not.
    let dhis2 = fake_dhis2().await;
    nothing_is_sent_to(dhis2.url.clone(), None, "certificate").await;
    assert!(dhis2.received.lock().unwrap().is_empty());
    // Another authority given instead is not enough either.
    let other = include_bytes!("../fixtures/tls/server.pem").to_vec();
    nothing_is_sent_to(dhis2.url.clone(), Some(other), "certificate").await;
    assert!(dhis2.received.lock().unwrap().is_empty());
}

/// A month's run sent to `url` answers 502 with `why` in its message, and is marked FAILED.
async fn nothing_is_sent_to(url: String, ca_pem: Option<Vec<u8>>, why: &str) {
    let mut config = runtime::http::Config::for_tests(PASSWORD);
    config.dhis2 = Some(runtime::http::state::Dhis2 {
        url,
        username: "snis".into(),
        password: "Snis-secret-1".into(),
        org_unit: "DiszpKrYNg8".into(),
        ca_pem,
    });
    let st = runtime::app::start::start(
        config,
        runtime::embedded::EMBEDDED_BUNDLE.to_vec(),
        test_store(),
    )
    .unwrap()
    .0;
    let mut c = Client::admin(st.clone()).await;
    let uuid = run(&mut c, HIV_STAGES_CSV, "2026-01-01", "2026-01-31").await;
    finished(&mut c, &uuid).await;
    let r = c
        .post(
            &format!("{REST}/reportingrest/reportRequest/{uuid}/dhis2"),
            "{}",
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_GATEWAY);
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("could not be reached"), "{message}");
    assert!(message.contains(why), "{message}");
    let r = c
        .get(&format!("{REST}/reportingrest/reportRequest/{uuid}"))
        .await;
    assert_eq!(r.body["dhis2"]["status"], "FAILED");
}
