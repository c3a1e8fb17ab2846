//! Appointments as the O3 appointments app books and follows them: the content's services,
//! a booking with its conflicts checked first, the day's list, the patient's appointments,
//! check-in and completion, the calendar's counts, the module's rules and privileges, and
//! backup and restore.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const REST: &str = "/openmrs/ws/rest/v1";
const CPN: &str = "fa826f46-5383-45d4-b118-972476624277";
const VACCINATION: &str = "4bc0e662-9b18-4d73-ab1b-3435c6742d28";
const CONSULTATION_ROOM: &str = "9fd33057-db14-4446-828a-90e96c109b6b";

async fn patient(c: &mut Client, st: &runtime::http::AppState, id: &str) -> String {
    register_patient(c, st, "Solange", "Mujinga", id).await
}

/// Tomorrow at `hh:mm` UTC, as the form writes it (`dayjs().format()`, with an offset).
fn tomorrow(hh_mm: &str) -> String {
    let day = (chrono::Utc::now() + chrono::Duration::days(1)).format("%Y-%m-%d");
    format!("{day}T{hh_mm}:00+00:00")
}

fn booking(patient: &str, start: &str, end: &str) -> Value {
    json!({"appointmentKind": "Scheduled", "status": "", "serviceUuid": CPN,
        "startDateTime": start, "endDateTime": end, "locationUuid": CONSULTATION_ROOM,
        "providers": [], "patientUuid": patient, "comments": "Deuxième CPN",
        "dateAppointmentScheduled": chrono::Utc::now().to_rfc3339()})
}

#[tokio::test]
async fn the_contents_services_are_served_as_the_module_writes_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let r = c
        .get(&format!("{REST}/appointmentService/all/default"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let list = r.body.as_array().unwrap();
    assert_eq!(list.len(), 4);
    let cpn = list.iter().find(|s| s["uuid"] == CPN).unwrap();
    assert_eq!(cpn["name"], "Consultation prénatale");
    assert_eq!(cpn["startTime"], "07:30:00");
    assert_eq!(cpn["durationMins"], 20);
    assert_eq!(cpn["speciality"]["name"], "Santé maternelle et infantile");
    assert_eq!(cpn["location"]["name"], "Bondeko - Consultation");
    assert!(cpn.get("serviceTypes").is_none());
    let r = c.get(&format!("{REST}/appointmentService/all/full")).await;
    let full = r
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["uuid"] == CPN)
        .unwrap()
        .clone();
    assert_eq!(full["serviceTypes"].as_array().unwrap().len(), 2);
    let r = c
        .get(&format!("{REST}/appointmentService?uuid={VACCINATION}"))
        .await;
    assert_eq!(r.body["name"], "Vaccination");
    let r = c
        .post(
            &format!("{REST}/appointmentService"),
            &json!({"name": "Autre"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn an_appointment_is_booked_listed_checked_in_and_completed() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "700011").await;
    let provider = c
        .get(&format!("{REST}/session?v=custom:(currentProvider)"))
        .await
        .body["currentProvider"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let mut body = booking(&p, &tomorrow("09:00"), &tomorrow("09:20"));
    body["providers"] = json!([{"uuid": provider}]);
    // The form checks conflicts first: none.
    let r = c
        .post(&format!("{REST}/appointments/conflicts"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    // Saved: 200, Scheduled, numbered, times as epoch milliseconds.
    let r = c
        .post(&format!("{REST}/appointment"), &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    assert_eq!(r.body["status"], "Scheduled");
    assert_eq!(r.body["appointmentNumber"], "RDV-000001");
    assert_eq!(r.body["patient"]["name"], "Solange Mujinga");
    assert_eq!(r.body["service"]["name"], "Consultation prénatale");
    assert_eq!(r.body["location"]["name"], "Bondeko - Consultation");
    assert_eq!(r.body["providers"][0]["response"], "ACCEPTED");
    let start = chrono::DateTime::parse_from_rfc3339(&tomorrow("09:00")).unwrap();
    assert_eq!(r.body["startDateTime"], start.timestamp_millis());

    // The same patient again at an overlapping time, and outside the service's hours.
    let r = c
        .post(
            &format!("{REST}/appointments/conflicts"),
            &booking(&p, &tomorrow("09:10"), &tomorrow("09:30")).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["PATIENT_DOUBLE_BOOKING"][0]["uuid"], uuid.as_str());
    assert!(r.body.get("SERVICE_UNAVAILABLE").is_none());
    let r = c
        .post(
            &format!("{REST}/appointments/conflicts"),
            &booking(&p, &tomorrow("17:00"), &tomorrow("17:20")).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body["SERVICE_UNAVAILABLE"].is_array(), "{:?}", r.body);

    // The day's list, asked as the home page and the tile ask.
    let day = (chrono::Utc::now() + chrono::Duration::days(1)).format("%Y-%m-%d");
    for url in [
        format!("{REST}/appointments?forDate={day}T00%3A00%3A00.000%2B0000"),
        format!("{REST}/appointment/all?forDate={day}T00:00:00.000Z"),
    ] {
        let r = c.get(&url).await;
        assert_eq!(r.status, StatusCode::OK, "{url}: {:?}", r.body);
        assert_eq!(r.body.as_array().unwrap().len(), 1, "{url}");
    }
    let today = chrono::Utc::now().format("%Y-%m-%d");
    let r = c
        .get(&format!(
            "{REST}/appointments?forDate={today}T00:00:00.000Z"
        ))
        .await;
    assert_eq!(r.body, json!([]));

    // The chart's appointments of the patient.
    let r = c
        .post(
            &format!("{REST}/appointments/search"),
            &json!({"patientUuid": p, "startDate": chrono::Utc::now().to_rfc3339()}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body[0]["uuid"], uuid.as_str());

    // The calendar's counts.
    let r = c
        .get(&format!("{REST}/appointment/appointmentSummary?startDate={today}T00:00:00.000Z&endDate={day}T23:59:59.999Z"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let cpn = r
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["appointmentService"]["uuid"] == CPN)
        .unwrap();
    assert_eq!(
        cpn["appointmentCountMap"][day.to_string()]["allAppointmentsCount"],
        1
    );

    // Checked in, then completed; never back to checked in.
    for to in ["CheckedIn", "Completed"] {
        let r = c
            .post(&format!("{REST}/appointments/{uuid}/status-change"), &json!({"toStatus": to, "onDate": chrono::Utc::now().to_rfc3339(), "timeZone": "Africa/Kinshasa"}).to_string())
            .await;
        assert_eq!(r.status, StatusCode::OK, "{to}: {:?}", r.body);
        assert_eq!(r.body["status"], to);
    }
    let r = c
        .post(
            &format!("{REST}/appointments/{uuid}/status-change"),
            &json!({"toStatus": "Cancelled"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["error"]["message"],
        "[Appointment status can not be changed from Completed to Cancelled]"
    );
    let r = c.get(&format!("{REST}/appointment?uuid={uuid}")).await;
    assert_eq!(r.body["status"], "Completed");

    // Edited through the same save, with its uuid: moved to the afternoon.
    let mut edit = booking(&p, &tomorrow("14:00"), &tomorrow("14:20"));
    edit["uuid"] = json!(uuid);
    edit["status"] = json!("Completed");
    let r = c
        .post(&format!("{REST}/appointment"), &edit.to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["uuid"], uuid.as_str());
    assert_eq!(r.body["appointmentNumber"], "RDV-000001");
    let r = c
        .post(
            &format!("{REST}/appointments/search"),
            &json!({"patientUuid": p, "startDate": chrono::Utc::now().to_rfc3339()}).to_string(),
        )
        .await;
    assert_eq!(r.body.as_array().unwrap().len(), 1);
    // A patient with appointments is not purged.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{p}?purge=true"),
            &[],
            None,
        )
        .await;
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("appointments"),
        "{:?}",
        r.body
    );
}

#[tokio::test]
async fn bookings_are_checked_as_the_module_checks_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "700012").await;
    let message = |r: &Response| {
        r.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let mut no_patient = booking(&p, &tomorrow("09:00"), &tomorrow("09:20"));
    no_patient.as_object_mut().unwrap().remove("patientUuid");
    let r = c
        .post(&format!("{REST}/appointment"), &no_patient.to_string())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        message(&r).contains("Appointment cannot be created without Patient"),
        "{}",
        message(&r)
    );
    let mut no_service = booking(&p, &tomorrow("09:00"), &tomorrow("09:20"));
    no_service["serviceUuid"] = json!("");
    let r = c
        .post(&format!("{REST}/appointment"), &no_service.to_string())
        .await;
    assert!(
        message(&r).contains("Appointment cannot be created without Service"),
        "{}",
        message(&r)
    );
    let mut kind = booking(&p, &tomorrow("09:00"), &tomorrow("09:20"));
    kind["appointmentKind"] = json!("Sometime");
    assert_eq!(
        c.post(&format!("{REST}/appointment"), &kind.to_string())
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    let backwards = booking(&p, &tomorrow("10:00"), &tomorrow("09:00"));
    let r = c
        .post(&format!("{REST}/appointment"), &backwards.to_string())
        .await;
    assert!(
        message(&r).contains("ends before it starts"),
        "{}",
        message(&r)
    );
    let mut provider = booking(&p, &tomorrow("09:00"), &tomorrow("09:20"));
    provider["providers"] = json!([{"uuid": "00000000-0000-4000-8000-000000000000"}]);
    let r = c
        .post(&format!("{REST}/appointment"), &provider.to_string())
        .await;
    assert_eq!(message(&r), "[Bad Request. No such provider.]");
    // Nothing refused was kept.
    let r = c
        .post(
            &format!("{REST}/appointments/search"),
            &json!({"patientUuid": p, "startDate": "2000-01-01"}).to_string(),
        )
        .await;
    assert_eq!(r.body, json!([]));
}

#[tokio::test]
async fn appointments_need_their_privileges() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let p = patient(&mut admin, &st, "700013").await;
    // A receptionist books and checks in, but may not put an appointment back to Scheduled.
    let mut clerk = registration_clerk(&mut admin, &st, "accueil.rdv").await;
    let r = clerk
        .post(
            &format!("{REST}/appointment"),
            &booking(&p, &tomorrow("08:00"), &tomorrow("08:20")).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    let r = clerk
        .post(
            &format!("{REST}/appointments/{uuid}/status-change"),
            &json!({"toStatus": "CheckedIn"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = clerk
        .post(
            &format!("{REST}/appointments/{uuid}/status-change"),
            &json!({"toStatus": "Scheduled"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = admin
        .post(
            &format!("{REST}/appointments/{uuid}/status-change"),
            &json!({"toStatus": "Scheduled"}).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let anonymous = Client::new(st.clone())
        .get(&format!("{REST}/appointment/all"))
        .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_backup_restores_appointments_and_their_numbers() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "700014").await;
    let r = c
        .post(
            &format!("{REST}/appointment"),
            &booking(&p, &tomorrow("10:00"), &tomorrow("10:20")).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;
    let search = json!({"patientUuid": p, "startDate": "2000-01-01"}).to_string();
    let (a, b) = (
        c.post(&format!("{REST}/appointments/search"), &search)
            .await,
        c2.post(&format!("{REST}/appointments/search"), &search)
            .await,
    );
    assert_eq!(a.body, b.body);
    // The next number follows the restored ones.
    let r = c2
        .post(
            &format!("{REST}/appointment"),
            &booking(&p, &tomorrow("11:00"), &tomorrow("11:20")).to_string(),
        )
        .await;
    assert_eq!(r.body["appointmentNumber"], "RDV-000002");
}
