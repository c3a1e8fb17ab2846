//! The patient identifier sticker (`patientdocuments/patientIdSticker`), as the patient
//! documents module answers it: a PDF label of the facility, her name, identifier, sex,
//! birth date and the identifier's barcode, in the caller's language; its privileges and
//! its refusals.

use crate::common::*;
use axum::http::StatusCode;

const REST: &str = "/openmrs/ws/rest/v1";

/// The response's bytes as Latin-1 text, the encoding of the PDF's strings.
async fn latin1(res: axum::response::Response) -> String {
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    bytes.iter().map(|&b| b as char).collect()
}

/// The barcode the label draws, read back from its rectangles: 1 for each module under a
/// bar, 0 between them, from the first bar to the last.
fn modules_drawn(pdf: &str) -> Vec<u8> {
    let bars: Vec<(f32, f32)> = pdf
        .lines()
        .filter(|l| l.ends_with(" re f"))
        .map(|l| {
            let n: Vec<f32> = l.split(' ').take(4).map(|v| v.parse().unwrap()).collect();
            (n[0], n[2])
        })
        .collect();
    let narrowest = bars.iter().map(|b| b.1).fold(f32::MAX, f32::min);
    // The narrowest bar is one module (every Code 128 symbol has a one-module bar).
    let mut out = Vec::new();
    let mut x = bars[0].0;
    for (start, width) in bars {
        let gap = ((start - x) / narrowest).round() as usize;
        out.extend(std::iter::repeat_n(0, gap));
        out.extend(std::iter::repeat_n(1, (width / narrowest).round() as usize));
        x = start + width;
    }
    out
}

#[tokio::test]
async fn her_sticker_is_a_pdf_with_her_details_and_a_barcode_of_her_identifier() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let p = register_patient(&mut admin, &st, "Élodie", "Mbuyi", "700021").await;
    let identifier = emr_id("700021");
    let at = location_uuid(&st, "Bondeko - Accueil");
    let r = admin
        .post(
            &format!("{REST}/session"),
            &format!(r#"{{"sessionLocation":"{at}","locale":"fr"}}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);

    let res = admin
        .raw(
            "GET",
            &format!("{REST}/patientdocuments/patientIdSticker?patientUuid={p}"),
            &[],
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "application/pdf");
    assert_eq!(
        res.headers()["content-disposition"],
        "inline; filename=\"patientIdSticker.pdf\""
    );
    assert_eq!(res.headers()["cache-control"], "no-store");
    let pdf = latin1(res).await;
    assert!(pdf.starts_with("%PDF-1.4"));
    // The facility is the visit location above the desk she was registered at.
    assert!(pdf.contains("(Centre de sant\u{e9} Bondeko) Tj"), "{pdf}");
    assert!(pdf.contains("(\u{c9}lodie Mbuyi) Tj"));
    // Parentheses are escaped in a PDF string.
    assert!(pdf.contains("Sexe : F \u{b7} N\u{e9}\\(e\\) le 12/04/1990 \\("));
    assert!(pdf.contains(&format!("Num\u{e9}ro patient DSE : {identifier}) Tj")));
    let expected = runtime::domains::document::code128(&identifier).unwrap();
    let first = expected.iter().position(|&m| m == 1).unwrap();
    let last = expected.iter().rposition(|&m| m == 1).unwrap();
    assert_eq!(modules_drawn(&pdf), expected[first..=last]);

    // Downloaded rather than shown, and in English for an English session.
    admin
        .post(&format!("{REST}/session"), r#"{"locale":"en"}"#)
        .await;
    let res = admin
        .raw(
            "GET",
            &format!("{REST}/patientdocuments/patientIdSticker?patientUuid={p}&inline=false"),
            &[],
            None,
        )
        .await;
    assert_eq!(
        res.headers()["content-disposition"],
        "attachment; filename=\"patientIdSticker.pdf\""
    );
    let pdf = latin1(res).await;
    assert!(pdf.contains("Sex: F \u{b7} Born 12/04/1990 \\("));
}

#[tokio::test]
async fn a_sticker_needs_a_known_patient_and_its_privilege() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let p = register_patient(&mut admin, &st, "Rose", "Kalala", "700022").await;
    let url = format!("{REST}/patientdocuments/patientIdSticker");

    let r = admin.get(&url).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("patientUuid"),
        "{:?}",
        r.body
    );
    let r = admin
        .get(&format!(
            "{url}?patientUuid=1b2c3d4e-0000-4000-8000-000000000000"
        ))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // The registration desk prints them; a role without the privilege cannot.
    let mut clerk = registration_clerk(&mut admin, &st, "accueil.etiquette").await;
    let res = clerk
        .raw("GET", &format!("{url}?patientUuid={p}"), &[], None)
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let role = serde_json::json!({"name": "Lecture des dossiers", "description": "Lit les patients",
        "privileges": [{"name": "Get Patients"}]});
    let r = admin.post(&format!("{REST}/role"), &role.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let body = serde_json::json!({"username": "labo.etiquette", "password": "Labo-pass-2026",
        "person": {"names": [{"givenName": "Paul", "familyName": "Mande"}], "gender": "M"},
        "roles": ["Lecture des dossiers"]});
    let r = admin.post(&format!("{REST}/user"), &body.to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let mut reader = Client::new(st.clone());
    reader.login("labo.etiquette", "Labo-pass-2026").await;
    let r = reader.get(&format!("{url}?patientUuid={p}")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    let r = Client::new(st.clone())
        .get(&format!("{url}?patientUuid={p}"))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}
