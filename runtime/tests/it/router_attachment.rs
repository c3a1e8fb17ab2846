//! Attachments, uploaded as the O3 attachments app uploads them (multipart: caption,
//! patient, file; a camera's picture as a data URI), listed, read back byte for byte,
//! refused when too large, of a type not allowed or not what their name says, voided,
//! and carried by backups with their bytes.

use crate::common::*;
use axum::http::StatusCode;
use serde_json::json;

const REST: &str = "/openmrs/ws/rest/v1";
const BOUNDARY: &str = "----dse-rdc-test-boundary";
/// The smallest valid PNG (1×1, transparent).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\xff\xff?\0\x05\xfe\x02\xfe\xa7\x35\x81\x84\0\0\0\0IEND\xaeB`\x82";
const PDF: &[u8] = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n";

async fn patient(c: &mut Client, st: &runtime::http::AppState, id: &str) -> String {
    register_patient(c, st, "Agnès", "Kalala", id).await
}

/// A multipart body in the O3 app's order: fileCaption, patient, file (and extra parts).
fn multipart(parts: &[(&str, &str)], file: Option<(&str, &str, &[u8])>) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in parts {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    if let Some((filename, mime, bytes)) = file {
        body.extend_from_slice(
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: {mime}\r\n\r\n").as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

async fn upload(c: &mut Client, body: Vec<u8>) -> Response {
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    c.send_bytes(
        "POST",
        &format!("{REST}/attachment"),
        &[("content-type", &content_type)],
        body,
    )
    .await
}

#[tokio::test]
async fn an_image_and_a_pdf_are_uploaded_listed_read_back_and_voided() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "600011").await;
    let r = upload(
        &mut c,
        multipart(
            &[("fileCaption", "Plaie au pied, J3"), ("patient", &p)],
            Some(("pied.png", "image/png", PNG)),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["comment"], "Plaie au pied, J3");
    let image = r.body["uuid"].as_str().unwrap().to_string();
    let r = upload(
        &mut c,
        multipart(
            &[("fileCaption", ""), ("patient", &p)],
            Some(("Compte rendu échographie.pdf", "application/pdf", PDF)),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let pdf = r.body["uuid"].as_str().unwrap().to_string();

    // The app's list: no representation asked, every field it reads present.
    let r = c
        .get(&format!(
            "{REST}/attachment?patient={p}&includeEncounterless=true"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let results = r.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["uuid"], pdf.as_str(), "newest first");
    assert_eq!(results[0]["filename"], "Compte rendu échographie.pdf");
    assert_eq!(results[0]["bytesContentFamily"], "PDF");
    assert_eq!(results[1]["bytesMimeType"], "image/png");
    assert_eq!(results[1]["bytesContentFamily"], "IMAGE");
    assert!(results[1]["dateTime"].as_str().unwrap().ends_with("+0000"));

    // The bytes, as they were sent, with the module's headers.
    let res = c
        .raw(
            "GET",
            &format!("{REST}/attachment/{image}/bytes"),
            &[],
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "image/png");
    assert_eq!(res.headers()["content-family"], "IMAGE");
    assert_eq!(res.headers()["file-ext"], "png");
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&bytes[..], PNG);
    let res = c
        .raw("GET", &format!("{REST}/attachment/{pdf}/bytes"), &[], None)
        .await;
    assert_eq!(
        res.headers()["file-name"],
        "Compte rendu %C3%A9chographie.pdf"
    );

    // Deleted from the chart: voided, gone from the list, kept.
    let r = c
        .send("DELETE", &format!("{REST}/attachment/{image}"), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = c
        .get(&format!(
            "{REST}/attachment?patient={p}&includeEncounterless=true"
        ))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);
    let r = c
        .get(&format!("{REST}/attachment?patient={p}&includeVoided=true"))
        .await;
    assert_eq!(r.body["results"].as_array().unwrap().len(), 2);
    let r = c.get(&format!("{REST}/attachment/{image}?v=full")).await;
    assert_eq!(r.body["voided"], true);

    // A patient with attachments is not purged.
    let r = c
        .send(
            "DELETE",
            &format!("{REST}/patient/{p}?purge=true"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("attachments"),
        "{:?}",
        r.body
    );
}

#[tokio::test]
async fn a_camera_picture_comes_as_a_data_uri() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "600012").await;
    use base64::Engine;
    let uri = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(PNG)
    );
    let r = upload(
        &mut c,
        multipart(
            &[
                ("fileCaption", "Photo"),
                ("patient", &p),
                ("base64Content", &uri),
            ],
            Some((
                "Image taken from camera.png",
                "application/octet-stream",
                b"",
            )),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap();
    let res = c
        .raw("GET", &format!("{REST}/attachment/{uuid}/bytes"), &[], None)
        .await;
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&bytes[..], PNG);
}

#[tokio::test]
async fn uploads_are_checked_as_the_attachments_module_checks_them() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "600013").await;
    let message = |r: &Response| {
        r.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // The content's settings: 5 MB, images and PDFs.
    let r = upload(
        &mut c,
        multipart(
            &[("patient", &p)],
            Some(("notes.txt", "text/plain", b"bonjour")),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(message(&r), "[The extension txt is not valid]");
    // A name that lies about its content.
    let r = upload(
        &mut c,
        multipart(&[("patient", &p)], Some(("photo.png", "image/png", PDF))),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(message(&r), "[The file has invalid content]");
    let r = upload(
        &mut c,
        multipart(
            &[("patient", &p)],
            Some((
                "page.pdf",
                "application/pdf",
                b"<html><script>alert(1)</script>",
            )),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        message(&r),
        "[The file content type application/octet-stream is not allowed]"
    );
    // No patient; an unknown one.
    let r = upload(&mut c, multipart(&[], Some(("pied.png", "image/png", PNG)))).await;
    assert_eq!(
        message(&r),
        "[A patient parameter must be provided when uploading an attachment.]"
    );
    let r = upload(
        &mut c,
        multipart(
            &[("patient", "00000000-0000-4000-8000-000000000000")],
            Some(("pied.png", "image/png", PNG)),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // Too large for the setting (lowered to 100 bytes here); the body is not read further.
    let r = c
        .post(
            &format!("{REST}/systemsetting/attachments.maxUploadFileSize"),
            &json!({"value": "0.0001"}).to_string(),
        )
        .await;
    assert!(r.status.is_success(), "{:?}", r.body);
    let big: Vec<u8> = PDF
        .iter()
        .copied()
        .chain(std::iter::repeat_n(b' ', 4096))
        .collect();
    let r = upload(
        &mut c,
        multipart(
            &[("patient", &p)],
            Some(("gros.pdf", "application/pdf", &big)),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(message(&r), "[The file exceeds the maximum size]");
    // A search names its patient.
    assert_eq!(
        c.get(&format!("{REST}/attachment")).await.status,
        StatusCode::BAD_REQUEST
    );
    // Nothing refused was kept.
    let r = c
        .get(&format!("{REST}/attachment?patient={p}&includeVoided=true"))
        .await;
    assert_eq!(r.body["results"], json!([]));
}

#[tokio::test]
async fn attachments_need_their_privileges() {
    let st = state();
    let mut admin = Client::admin(st.clone()).await;
    let p = patient(&mut admin, &st, "600014").await;
    let mut clerk = registration_clerk(&mut admin, &st, "accueil.pj").await;
    let r = upload(
        &mut clerk,
        multipart(&[("patient", &p)], Some(("pied.png", "image/png", PNG))),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    assert_eq!(
        clerk
            .get(&format!("{REST}/attachment?patient={p}"))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    let r = upload(
        &mut admin,
        multipart(&[("patient", &p)], Some(("pied.png", "image/png", PNG))),
    )
    .await;
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    let res = clerk
        .raw("GET", &format!("{REST}/attachment/{uuid}/bytes"), &[], None)
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let anonymous = Client::new(st.clone())
        .raw("GET", &format!("{REST}/attachment/{uuid}/bytes"), &[], None)
        .await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_backup_restores_attachments_with_their_bytes() {
    let st = state();
    let mut c = Client::admin(st.clone()).await;
    let p = patient(&mut c, &st, "600015").await;
    let r = upload(
        &mut c,
        multipart(
            &[("fileCaption", "Radio"), ("patient", &p)],
            Some(("radio.png", "image/png", PNG)),
        ),
    )
    .await;
    let uuid = r.body["uuid"].as_str().unwrap().to_string();
    let mut snapshot = Vec::new();
    st.store.snapshot(&mut snapshot).unwrap();
    let restored = crate::common::test_store();
    restored.restore(std::io::Cursor::new(&snapshot)).unwrap();
    let st2 = state_with(runtime::embedded::EMBEDDED_BUNDLE.to_vec(), restored);
    let mut c2 = Client::admin(st2.clone()).await;
    let list = format!("{REST}/attachment?patient={p}");
    assert_eq!(c.get(&list).await.body, c2.get(&list).await.body);
    let res = c2
        .raw("GET", &format!("{REST}/attachment/{uuid}/bytes"), &[], None)
        .await;
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&bytes[..], PNG);
}
