//! `stockitemimport`: stock items made or changed from a CSV file, as the module's import
//! reads it (the items page's "Import" button uploads `file`, with `hasHeader`).
//!
//! The columns are the module's, by position: drug, concept, expires (`1`/`yes`,
//! `0`/`no`), expiry notice in days, category, dispensing unit, dispensing packaging unit
//! and its pack size, common name, abbreviation, preferred vendor (a stock source's name or
//! acronym; one is made when none matches), reorder level and its packaging unit, purchase
//! price and its packaging unit, and the vendor's code for the item. Where the module
//! takes numeric ids, this server takes what identifies the same things here: a drug's
//! uuid, a concept's uuid or mapping (`CIEL:1513`). A row naming an item that exists
//! changes it; otherwise it makes one. Rows are checked one by one and each error is
//! named with its row (`Row 3: Expires is invalid`); the rows without errors are written
//! together in one commit, as the module writes the valid rows of a file.

use crate::domains::stock::rest::apply_item;
use crate::domains::stock::store::*;
use crate::domains::stock::*;
use crate::http::error::{ApiError, ApiResult};
use crate::http::{AppState, Caller, QueryPairs, blocking, param};
use crate::store::record::{Audit, Voiding, new_uuid};
use axum::extract::{Multipart, State};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The module's limit (`stockmanagement.stockItemsMaxUploadFileSize`, 2 MB).
const MAX_BYTES: usize = 2 << 20;

/// One row, read and checked.
#[derive(Default, Debug)]
struct Row {
    drug: Option<String>,
    concept: Option<String>,
    expires: Option<bool>,
    expiry_notice: Option<u32>,
    category: Option<String>,
    dispensing_unit: Option<String>,
    dispensing_packaging: Option<String>,
    pack_size: Option<Qty>,
    common_name: Option<String>,
    acronym: Option<String>,
    vendor: Option<String>,
    reorder_level: Option<Qty>,
    reorder_packaging: Option<String>,
    purchase_price: Option<Qty>,
    purchase_packaging: Option<String>,
    vendor_code: Option<String>,
}

fn read_row(state: &AppState, cells: &[String]) -> Result<Row, Vec<String>> {
    let catalog = state.catalog.load();
    let cell = |i: usize| {
        cells
            .get(i)
            .map(|c| c.trim())
            .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("null"))
    };
    let mut errors = Vec::new();
    if cells.len() < 3 {
        return Err(vec!["At least three fields required".into()]);
    }
    let concept = |i: usize, what: &str, errors: &mut Vec<String>| {
        cell(i).and_then(|c| match catalog.concept(c) {
            Some(x) => Some(x.uuid.clone()),
            None => {
                errors.push(format!("{what}: concept {c} not found"));
                None
            }
        })
    };
    let mut row = Row {
        category: concept(4, "Category", &mut errors),
        dispensing_unit: concept(5, "Dispensing unit", &mut errors),
        dispensing_packaging: concept(6, "Dispensing packaging unit", &mut errors),
        reorder_packaging: concept(12, "Reorder level packaging unit", &mut errors),
        purchase_packaging: concept(14, "Purchase price packaging unit", &mut errors),
        common_name: cell(8).map(str::to_string),
        acronym: cell(9).map(str::to_string),
        vendor: cell(10).map(str::to_string),
        vendor_code: cell(15).map(str::to_string),
        ..Row::default()
    };
    match (cell(0), cell(1)) {
        (Some(d), _) => match catalog.drug(d) {
            Some(drug) => row.drug = Some(drug.uuid.clone()),
            None => errors.push(format!("Drug {d} not found")),
        },
        (None, Some(c)) => match catalog.concept(c) {
            Some(x) => row.concept = Some(x.uuid.clone()),
            None => errors.push(format!("Concept {c} not found")),
        },
        (None, None) => errors.push("Drug or Concept ID required".into()),
    }
    row.expires = match cell(2).map(str::to_ascii_lowercase).as_deref() {
        None => None,
        Some("1" | "yes" | "true") => Some(true),
        Some("0" | "no" | "false") => Some(false),
        Some(_) => {
            errors.push("Expires is invalid".into());
            None
        }
    };
    if let Some(n) = cell(3) {
        match n.parse::<u32>() {
            Ok(n) if n > 0 => row.expiry_notice = Some(n),
            Ok(_) => errors.push("Expiry notice must be greater than zero".into()),
            Err(_) => errors.push("Expiry notice must be numeric".into()),
        }
    }
    let decimal = |i: usize, what: &str, positive: bool, errors: &mut Vec<String>| {
        cell(i).and_then(|v| match Qty::parse(v) {
            Some(q) if q > Qty::ZERO || (!positive && q == Qty::ZERO) => Some(q),
            Some(_) => {
                errors.push(format!(
                    "{what} must be greater than zero{}",
                    if positive { "" } else { " or zero" }
                ));
                None
            }
            None => {
                errors.push(format!("{what} must be numeric"));
                None
            }
        })
    };
    row.pack_size = decimal(
        7,
        "Pack size for dispensing packaging unit",
        true,
        &mut errors,
    );
    row.reorder_level = decimal(11, "Reorder level", false, &mut errors);
    row.purchase_price = decimal(13, "Purchase price", false, &mut errors);
    if cell(7).is_some() && cell(6).is_none() {
        errors.push("Dispensing packaging unit is required if the pack size is specified".into());
    }
    if cell(11).is_some() != cell(12).is_some() {
        errors
            .push("Reorder level and its packaging unit are both required if any specified".into());
    }
    if cell(13).is_some() != cell(14).is_some() {
        errors.push(
            "Purchase price and its packaging unit are both required if any specified".into(),
        );
    }
    if row.vendor.as_ref().is_some_and(|v| v.chars().count() > 255) {
        errors.push("Preferred vendor exceeds 255 characters".into());
    }
    if errors.is_empty() {
        Ok(row)
    } else {
        Err(errors)
    }
}

/// What a refusal says, for a row's error: its fields' messages, else its message.
fn error_text(e: &ApiError) -> String {
    let body = e.body();
    let fields: Vec<String> = body["error"]["fieldErrors"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(_, errors)| errors.as_array().into_iter().flatten())
        .filter_map(|x| x["message"].as_str().map(str::to_string))
        .collect();
    if fields.is_empty() {
        body["error"]["message"]
            .as_str()
            .unwrap_or("refused")
            .to_string()
    } else {
        fields.join(", ")
    }
}

fn normalized(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The item's packaging unit in `concept`, if it has one.
fn unit_in<'a>(item: &'a ItemRecord, concept: &str) -> Option<&'a PackagingUnit> {
    item.packaging_units
        .iter()
        .find(|u| !u.voiding.voided && u.packaging_uom == concept)
}

/// The upload's parts. The pinned stock app (3.2.1) sends its form data under a
/// `Content-Type: application/json` header it sets itself, which hides the boundary: a body
/// that starts as multipart does is read as multipart, its boundary taken from its first
/// line.
async fn multipart_of(request: axum::extract::Request) -> ApiResult<Multipart> {
    use axum::extract::FromRequest;
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let request = if declared.starts_with("multipart/form-data") {
        request
    } else {
        let (mut parts, body) = request.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_BYTES + 64 * 1024)
            .await
            .map_err(|_| ApiError::BadRequest("Maximum file size 2 mb exceeded".into()))?;
        let boundary = bytes
            .split(|b| *b == b'\r' || *b == b'\n')
            .next()
            .and_then(|line| line.strip_prefix(b"--"))
            .and_then(|b| std::str::from_utf8(b).ok())
            .filter(|b| !b.is_empty() && b.len() <= 70)
            .ok_or_else(|| {
                ApiError::BadRequest("A stock item import is a multipart upload".into())
            })?
            .to_string();
        parts.headers.insert(
            axum::http::header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}")
                .parse()
                .map_err(|_| ApiError::BadRequest("The upload's boundary is not valid".into()))?,
        );
        axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))
    };
    Multipart::from_request(request, &()).await.map_err(|e| {
        ApiError::BadRequest(format!("The upload could not be read: {}", e.body_text()))
    })
}

/// `POST stockitemimport` (multipart: `file`, a CSV; `hasHeader`): the module's
/// `ImportResult` (`createdCount`, `updatedCount`, `notChangedCount`, `success`, `errors`).
pub async fn import_items(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    request: axum::extract::Request,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    let mut parts = multipart_of(request).await?;
    let unreadable = |e: axum::extract::multipart::MultipartError| {
        ApiError::BadRequest(format!("The upload could not be read: {}", e.body_text()))
    };
    let mut file: Option<Vec<u8>> = None;
    let mut has_header = param(&query, "hasHeader").is_some_and(|v| v == "true" || v == "1");
    while let Some(mut part) = parts.next_field().await.map_err(unreadable)? {
        let name = part.name().unwrap_or_default().to_string();
        let mut bytes = Vec::new();
        while let Some(chunk) = part.chunk().await.map_err(unreadable)? {
            if bytes.len() + chunk.len() > MAX_BYTES {
                return Err(ApiError::BadRequest(
                    "Maximum file size 2 mb exceeded".into(),
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        match name.as_str() {
            "file" => file = Some(bytes),
            "hasHeader" => {
                let v = String::from_utf8_lossy(&bytes);
                has_header = v.trim() == "true" || v.trim() == "1";
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "Unknown part {other} in a stock item import"
                )));
            }
        }
    }
    let file = file.ok_or_else(|| ApiError::BadRequest("No file was uploaded".into()))?;
    let text = String::from_utf8(file)
        .map_err(|_| ApiError::BadRequest("The file is not UTF-8 text".into()))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(has_header)
        .flexible(true)
        .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
    // Each row with its number in the file (the header not counted), blank lines included,
    // so that an error names the row the user sees.
    let mut rows: Vec<(u64, Result<Row, Vec<String>>)> = Vec::new();
    for record in reader.records() {
        let record =
            record.map_err(|e| ApiError::BadRequest(format!("The file is not CSV: {e}")))?;
        let cells: Vec<String> = record.iter().map(str::to_string).collect();
        if cells.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        let line = record.position().map_or(0, |p| p.line());
        rows.push((line - u64::from(has_header), read_row(&state, &cells)));
    }
    let user = caller.user_uuid();
    let st = state.clone();
    let result = blocking(move || {
        let _one_writer = st.store.write_lock();
        let now = Utc::now();
        let mut items = items(&st.store)?;
        let mut sources = sources(&st.store)?;
        let mut references = references(&st.store)?;
        let (mut created, mut updated, mut unchanged) = (0, 0, 0);
        let mut errors = Vec::new();
        let mut changed_items: Vec<String> = Vec::new();
        let mut new_sources: Vec<String> = Vec::new();
        let mut changed_references: Vec<String> = Vec::new();
        for (number, row) in rows {
            let row = match row {
                Ok(r) => r,
                Err(e) => {
                    errors.push(format!("Row {number}: {}", e.join(", ")));
                    continue;
                }
            };
            let existing = items.iter().position(|i| {
                !i.voiding.voided
                    && match (&row.drug, &row.concept) {
                        (Some(d), _) => i.drug.as_ref() == Some(d),
                        (None, Some(c)) => !i.is_drug && &i.concept == c,
                        _ => false,
                    }
            });
            let mut item = match existing {
                Some(i) => items[i].clone(),
                None => {
                    let mut missing = Vec::new();
                    if row.expires.is_none() {
                        missing.push("Expires required");
                    }
                    if row.dispensing_unit.is_none() {
                        missing.push("Dispensing unit required");
                    }
                    if row.dispensing_packaging.is_none() {
                        missing.push("Dispensing packaging unit required");
                    }
                    if row.pack_size.is_none() {
                        missing.push("Pack size for dispensing packaging unit required");
                    }
                    if !missing.is_empty() {
                        errors.push(format!("Row {number}: {}", missing.join(", ")));
                        continue;
                    }
                    let catalog = st.catalog.load();
                    let concept = match &row.drug {
                        Some(d) => catalog
                            .drug(d)
                            .map(|x| {
                                catalog
                                    .concept(&x.concept)
                                    .map_or(x.concept.clone(), |c| c.uuid.clone())
                            })
                            .unwrap_or_default(),
                        None => row.concept.clone().unwrap_or_default(),
                    };
                    ItemRecord::new(new_uuid(), row.drug.clone(), concept, &user, now)
                }
            };
            let before = item.clone();
            // The dispensing packaging unit, made or resized first: the other fields
            // name the item's units.
            if let (Some(concept), Some(size)) = (&row.dispensing_packaging, row.pack_size) {
                match item
                    .packaging_units
                    .iter_mut()
                    .find(|u| !u.voiding.voided && &u.packaging_uom == concept)
                {
                    Some(u) if u.factor != size => {
                        u.factor = size;
                        u.audit.changed(&user, now);
                    }
                    Some(_) => {}
                    None => item.packaging_units.push(PackagingUnit {
                        uuid: new_uuid(),
                        packaging_uom: concept.clone(),
                        factor: size,
                        audit: Audit::new(&user, now),
                        voiding: Voiding::default(),
                    }),
                }
            }
            let mut body = Map::new();
            let mut row_errors = Vec::new();
            let mut unit =
                |concept: &Option<String>, field: &str, body: &mut Map<String, Value>| {
                    if let Some(c) = concept {
                        match unit_in(&item, c) {
                            Some(u) => {
                                body.insert(field.into(), json!(u.uuid));
                            }
                            None => row_errors
                                .push(format!("Packaging unit with concept {c} not found")),
                        }
                    }
                };
            unit(
                &row.dispensing_packaging,
                "dispensingUnitPackagingUoMUuid",
                &mut body,
            );
            unit(&row.reorder_packaging, "reorderLevelUoMUuid", &mut body);
            unit(&row.purchase_packaging, "purchasePriceUoMUuid", &mut body);
            if let Some(b) = row.expires {
                body.insert("hasExpiration".into(), json!(b));
            }
            if let Some(n) = row.expiry_notice {
                body.insert("expiryNotice".into(), json!(n));
            }
            if let Some(c) = &row.category {
                body.insert("categoryUuid".into(), json!(c));
            }
            if let Some(c) = &row.dispensing_unit {
                body.insert("dispensingUnitUuid".into(), json!(c));
            }
            if let Some(v) = &row.common_name {
                body.insert("commonName".into(), json!(v));
            }
            if let Some(v) = &row.acronym {
                body.insert("acronym".into(), json!(v));
            }
            if let Some(q) = row.reorder_level {
                body.insert("reorderLevel".into(), json!(q.to_string()));
            }
            if let Some(q) = row.purchase_price {
                body.insert("purchasePrice".into(), json!(q.to_string()));
            }
            let mut vendor = None;
            // A vendor made for this row, kept only if the row is.
            let mut made_source = None;
            if let Some(v) = &row.vendor {
                let key = normalized(v);
                let found = sources.iter().find(|s| {
                    !s.retiring.voided
                        && (normalized(&s.name) == key
                            || s.acronym.as_deref().is_some_and(|a| normalized(a) == key))
                });
                let source = match found {
                    Some(s) => s.uuid.clone(),
                    None => {
                        let uuid = new_uuid();
                        made_source = Some(uuid.clone());
                        sources.push(SourceRecord {
                            v: 1,
                            uuid: uuid.clone(),
                            name: v.clone(),
                            acronym: Some(v.clone()),
                            source_type: None,
                            audit: Audit::new(&user, now),
                            retiring: Voiding::default(),
                        });
                        uuid
                    }
                };
                body.insert("preferredVendorUuid".into(), json!(source));
                vendor = Some(source);
            }
            let refused = if !row_errors.is_empty() {
                Some(row_errors.join(", "))
            } else {
                apply_item(&st, &mut item, &body, &sources)
                    .err()
                    .map(|e| error_text(&e))
            };
            if let Some(refusal) = refused {
                errors.push(format!("Row {number}: {refusal}"));
                if let Some(u) = &made_source {
                    sources.retain(|x| &x.uuid != u);
                }
                continue;
            }
            new_sources.extend(made_source);
            let references_before = changed_references.len();
            if let (Some(code), Some(source)) = (&row.vendor_code, &vendor) {
                match references.iter_mut().find(|r| {
                    !r.voiding.voided && r.stock_item == item.uuid && &r.stock_source == source
                }) {
                    Some(r) if &r.reference_code == code => {}
                    Some(r) => {
                        r.reference_code = code.clone();
                        r.audit.changed(&user, now);
                        changed_references.push(r.uuid.clone());
                    }
                    None => {
                        let r = ReferenceRecord {
                            v: 1,
                            uuid: new_uuid(),
                            stock_item: item.uuid.clone(),
                            stock_source: source.clone(),
                            reference_code: code.clone(),
                            audit: Audit::new(&user, now),
                            voiding: Voiding::default(),
                        };
                        changed_references.push(r.uuid.clone());
                        references.push(r);
                    }
                }
            }
            match existing {
                None => {
                    created += 1;
                    changed_items.push(item.uuid.clone());
                    items.push(item);
                }
                Some(i) if item != before || changed_references.len() > references_before => {
                    item.audit.changed(&user, now);
                    updated += 1;
                    changed_items.push(item.uuid.clone());
                    items[i] = item;
                }
                Some(_) => unchanged += 1,
            }
        }
        st.store.write(|txn| {
            for i in items.iter().filter(|i| changed_items.contains(&i.uuid)) {
                crate::domains::stock::store::put_item_in(txn, i)?;
            }
            for s in sources.iter().filter(|s| new_sources.contains(&s.uuid)) {
                put_in(txn, SOURCES, &s.uuid, s)?;
            }
            for r in references
                .iter()
                .filter(|r| changed_references.contains(&r.uuid))
            {
                put_in(txn, REFERENCES, &r.uuid, r)?;
            }
            Ok(())
        })?;
        Ok(json!({
            "createdCount": created,
            "updatedCount": updated,
            "notChangedCount": unchanged,
            "success": errors.is_empty(),
            "errors": errors,
            "exception": null,
            "uploadSessionId": null,
            "hasErrorFile": false,
        }))
    })
    .await?;
    Ok(axum::Json(result).into_response())
}
