//! What the ward screens read and do: a ward's layout (`admissionLocation`), a patient's
//! bed (`beds`), and assigning a patient to a bed or taking her out.

use crate::content::location::LocationRes;
use crate::domains::bed::rest::{Lookups, TagMapRes, bad};
use crate::domains::bed::store::*;
use crate::domains::bed::types::BedTypeRes;
use crate::domains::bed::*;
use crate::domains::patient::repr::PatientRes;
use crate::http::AppState;
use crate::http::answer::{answer, list_answer, nest, rep_of};
use crate::http::body::{only_known, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested_list};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::store::PatientRecord;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use model::Location;
use serde_json::{Value, json};
use std::sync::Arc;

/// A bed in a ward's layout, with the patients in it.
pub(crate) struct BedLayoutRes<'a> {
    bed: &'a BedRecord,
    lookups: &'a Lookups,
    patients: Vec<PatientRecord>,
}

impl<'a> BedLayoutRes<'a> {
    /// The bed with the records of the patients in it.
    fn of(state: &AppState, bed: &'a BedRecord, lookups: &'a Lookups) -> ApiResult<Self> {
        let mut patients = Vec::new();
        for o in &bed.occupants {
            if let Some(p) = state.store.patient(&o.patient)? {
                patients.push(p);
            }
        }
        Ok(BedLayoutRes {
            bed,
            lookups,
            patients,
        })
    }
}

impl Resource for BedLayoutRes<'_> {
    fn alias(&self) -> &'static str {
        "bedLayout"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.bed.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.bed.bed_number.clone()
    }
    fn path(&self) -> String {
        format!("bed/{}", self.bed.uuid)
    }
    fn default_props(&self) -> Props {
        &[
            ("rowNumber", Rep::Default),
            ("columnNumber", Rep::Default),
            ("bedNumber", Rep::Default),
            ("bedId", Rep::Default),
            ("bedUuid", Rep::Default),
            ("status", Rep::Default),
            ("bedType", Rep::Default),
            ("location", Rep::Default),
            ("patients", Rep::Default),
            ("bedTagMaps", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("rowNumber", Rep::Default),
            ("columnNumber", Rep::Default),
            ("bedNumber", Rep::Default),
            ("bedId", Rep::Default),
            ("bedUuid", Rep::Default),
            ("status", Rep::Default),
            ("bedType", Rep::Default),
            ("location", Rep::Default),
            ("patients", Rep::Full),
            ("bedTagMaps", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let b = self.bed;
        Some(match name {
            "rowNumber" => json!(b.row),
            "columnNumber" => json!(b.column),
            "bedNumber" => json!(b.bed_number),
            "bedId" => json!(b.id),
            "bedUuid" => json!(b.uuid),
            "status" => json!(b.status),
            "bedType" => nest(self.lookups.bed_type(&b.bed_type).map(BedTypeRes), rep, ctx),
            // The module gives the location's name here.
            "location" => json!(ctx.catalog.location(&b.location).map(|l| l.name.clone())),
            "patients" => {
                let res: Vec<PatientRes> = self.patients.iter().map(PatientRes).collect();
                nested_list(res.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "bedTagMaps" => {
                let maps: Vec<TagMapRes> = b
                    .tags
                    .iter()
                    .filter(|m| !m.voiding.voided)
                    .filter(|m| self.lookups.tag(&m.tag).is_some_and(|t| !t.voiding.voided))
                    .map(|map| TagMapRes {
                        map,
                        tag: self.lookups.tag(&map.tag),
                    })
                    .collect();
                nested_list(maps.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            _ => return None,
        })
    }
}

pub(crate) struct AdmissionLocationRes<'a> {
    ward: &'a Location,
    layouts: Vec<BedLayoutRes<'a>>,
}

impl Resource for AdmissionLocationRes<'_> {
    fn alias(&self) -> &'static str {
        "admissionLocation"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.ward.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        LocationRes(self.ward).display(ctx)
    }
    fn default_props(&self) -> Props {
        &[
            ("ward", Rep::Default),
            ("totalBeds", Rep::Default),
            ("occupiedBeds", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("ward", Rep::Full),
            ("totalBeds", Rep::Default),
            ("occupiedBeds", Rep::Default),
            ("bedLayouts", Rep::Full),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "ward" => nest(Some(LocationRes(self.ward)), rep, ctx),
            "totalBeds" => json!(self.layouts.len()),
            "occupiedBeds" => json!(
                self.layouts
                    .iter()
                    .filter(|l| l.bed.status == OCCUPIED)
                    .count()
            ),
            "bedLayouts" => nested_list(self.layouts.iter().map(|r| r as &dyn Resource), rep, ctx),
            _ => return None,
        })
    }
}

/// The beds of a ward (of `all`, the beds in use): its own and those of the locations right under it, in layout order.
pub(crate) fn ward_beds<'b>(
    ward: &Location,
    all: &'b [BedRecord],
    catalog: &crate::catalog::Catalog,
) -> Vec<&'b BedRecord> {
    let mut beds: Vec<&BedRecord> = all
        .iter()
        .filter(|b| {
            b.location == ward.uuid
                || catalog
                    .location(&b.location)
                    .and_then(|l| l.parent.as_deref())
                    == Some(ward.uuid.as_str())
        })
        .collect();
    beds.sort_by_key(|b| (b.row, b.column, b.id));
    beds
}

pub(crate) fn layouts<'a>(
    state: &AppState,
    ward: &Location,
    all: &'a [BedRecord],
    lookups: &'a Lookups,
) -> ApiResult<Vec<BedLayoutRes<'a>>> {
    let catalog = state.catalog.load();
    ward_beds(ward, all, &catalog)
        .into_iter()
        .map(|bed| BedLayoutRes::of(state, bed, lookups))
        .collect()
}

pub(crate) fn is_admission_location(catalog: &crate::catalog::Catalog, l: &Location) -> bool {
    let tag = catalog
        .content
        .location_tags
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(ADMISSION_LOCATION_TAG));
    tag.is_some_and(|t| l.tags.contains(&t.uuid))
}

/// `GET admissionLocation`: the wards (locations tagged "Admission Location" in service,
/// not under another ward) with their bed counts, and in the full representation their
/// beds — privilege: Get Admission Locations or Get Beds.
pub async fn admission_locations(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    require_ward_reader(&caller)?;
    let catalog = state.catalog.load();
    let all = beds_in_use(&state.store)?;
    let lookups = Lookups::read(&state.store)?;
    let wards: Vec<&Location> = catalog
        .content
        .locations
        .iter()
        .filter(|l| !l.retired && is_admission_location(&catalog, l))
        .filter(|l| {
            l.parent
                .as_deref()
                .and_then(|p| catalog.location(p))
                .is_none_or(|p| !is_admission_location(&catalog, p))
        })
        .collect();
    let mut items = Vec::new();
    for ward in wards {
        items.push(AdmissionLocationRes {
            ward,
            layouts: layouts(&state, ward, &all, &lookups)?,
        });
    }
    let paging = Paging::from_query(&query)?;
    list_answer(
        &state,
        &caller,
        &query,
        "/admissionLocation",
        &paging,
        items,
    )
}

pub(crate) fn require_ward_reader(caller: &Caller) -> ApiResult<()> {
    caller
        .require(&["Get Admission Locations"])
        .or_else(|_| caller.require(&["Get Beds"]))
}

/// `GET admissionLocation/{uuid}`: one location with its beds (tagged or not, as the module
/// answers) — privilege: Get Admission Locations or Get Beds.
pub async fn admission_location(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    require_ward_reader(&caller)?;
    let catalog = state.catalog.load();
    let ward = catalog.location(&uuid).ok_or(ApiError::NotFound)?;
    let all = beds_in_use(&state.store)?;
    let lookups = Lookups::read(&state.store)?;
    let res = AdmissionLocationRes {
        ward,
        layouts: layouts(&state, ward, &all, &lookups)?,
    };
    answer(&state, &caller, &res, &rep_of(&query)?, StatusCode::OK)
}

// ---------------------------------------------------------------------------------------
// Patients in beds

/// A patient's bed: where it is and who is in it (`beds`).
pub(crate) struct BedDetailsRes<'a> {
    layout: BedLayoutRes<'a>,
}

impl Resource for BedDetailsRes<'_> {
    fn alias(&self) -> &'static str {
        "beds"
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.layout.bed.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.layout.bed.bed_number.clone()
    }
    fn path(&self) -> String {
        format!("beds/{}", self.layout.bed.id)
    }
    fn default_props(&self) -> Props {
        &[
            ("bedId", Rep::Default),
            ("bedNumber", Rep::Default),
            ("bedType", Rep::Default),
            ("physicalLocation", Rep::Default),
            ("patients", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        match name {
            "physicalLocation" => Some(nest(
                ctx.catalog
                    .location(&self.layout.bed.location)
                    .map(LocationRes),
                rep,
                ctx,
            )),
            other => self.layout.prop(other, rep, ctx),
        }
    }
}

/// `GET beds?patientUuid=…`: the bed the patient is in (none: an empty list) — privileges:
/// Get Beds, Get Admission Locations.
pub async fn patient_bed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Beds", "Get Admission Locations"])?;
    let patient = param(&query, "patientUuid").unwrap_or_default().to_string();
    let all = beds_in_use(&state.store)?;
    let lookups = Lookups::read(&state.store)?;
    let items = patient_details(&state, &all, &lookups, &patient)?;
    let paging = Paging::from_query(&query)?;
    list_answer(&state, &caller, &query, "/beds", &paging, items)
}

/// The bed the patient is in, if any, with everyone in it.
pub(crate) fn patient_details<'a>(
    state: &AppState,
    all: &'a [BedRecord],
    lookups: &'a Lookups,
    patient: &str,
) -> ApiResult<Vec<BedDetailsRes<'a>>> {
    let mut items = Vec::new();
    if let Some(bed) = all
        .iter()
        .find(|b| b.occupants.iter().any(|o| o.patient == patient))
    {
        items.push(BedDetailsRes {
            layout: BedLayoutRes::of(state, bed, lookups)?,
        });
    }
    Ok(items)
}

/// `POST beds/{bed id or uuid}` `{patientUuid, encounterUuid}`: puts the patient in the
/// bed, out of the one she was in; others in the bed stay — privileges: Assign Beds, Edit
/// Admission Locations.
pub async fn assign(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Assign Beds", "Edit Admission Locations"])?;
    only_known(&body, &["patientUuid", "encounterUuid"])?;
    let patient = opt_str(&body, "patientUuid")?.ok_or_else(|| {
        ApiError::invalid_field("patientUuid", "error.null", "patientUuid is required")
    })?;
    let encounter = opt_str(&body, "encounterUuid")?;
    let patient_of_answer = patient.clone();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        match st.store.patient(&patient)? {
            Some(p) if !p.voided => {}
            _ => return Err(bad(format!("Patient {patient} does not exist"))),
        }
        let visit = match &encounter {
            Some(e) => {
                let found = crate::domains::encounter::store::encounter(&st.store, e)?
                    .filter(|x| !x.voiding.voided && x.patient == patient)
                    .ok_or_else(|| bad(format!("Encounter {e} is not one of the patient's")))?;
                found.visit
            }
            None => None,
        };
        let all = beds_in_use(&st.store)?;
        let target = all
            .iter()
            .find(|b| id.parse::<u64>().ok() == Some(b.id) || b.uuid == id)
            .ok_or(ApiError::NotFound)?
            .uuid
            .clone();
        let now = Utc::now();
        let mut moves = vacate(&st.store, &all, |o| o.patient == patient, &user, now)?;
        let mut bed = moves
            .beds
            .iter()
            .find(|b| b.uuid == target)
            .cloned()
            .or_else(|| all.iter().find(|b| b.uuid == target).cloned())
            .expect("the target bed was found above");
        let stay = AssignmentRecord {
            v: 1,
            uuid: crate::store::record::new_uuid(),
            bed: bed.uuid.clone(),
            patient: patient.clone(),
            encounter: encounter.clone(),
            visit: visit.clone(),
            started: crate::wire::datetime_key(now),
            ended: None,
            audit: Audit::new(&user, now),
        };
        bed.occupants.push(Occupant {
            assignment: stay.uuid.clone(),
            patient: patient.clone(),
            encounter,
            visit,
        });
        bed.status = OCCUPIED.into();
        bed.audit.changed(&user, now);
        moves.beds.retain(|b| b.uuid != bed.uuid);
        moves.beds.push(bed);
        moves.stays.push(stay);
        st.store.write(|txn| moves.write_in(txn))?;
        Ok(())
    })
    .await?;
    // The patient's bed, as the module answers an assignment.
    let all = beds_in_use(&state.store)?;
    let lookups = Lookups::read(&state.store)?;
    let details = patient_details(&state, &all, &lookups, &patient_of_answer)?
        .into_iter()
        .next()
        .ok_or(ApiError::NotFound)?;
    answer(&state, &caller, &details, &rep_of(&query)?, StatusCode::OK)
}

/// `DELETE beds/{any}?patientUuid=…`: takes the patient out of her bed (the id is not
/// read, as by the module; a patient in no bed is no error) — privileges: Assign Beds,
/// Edit Admission Locations.
pub async fn unassign(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Assign Beds", "Edit Admission Locations"])?;
    let patient = param(&query, "patientUuid")
        .ok_or_else(|| bad("patientUuid is required"))?
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let all = beds_in_use(&st.store)?;
        let moves = vacate(&st.store, &all, |o| o.patient == patient, &user, Utc::now())?;
        if !moves.is_empty() {
            st.store.write(|txn| moves.write_in(txn))?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
