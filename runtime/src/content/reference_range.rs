//! `conceptreferencerange`: the ranges that apply to a patient for numeric concepts, read by
//! the chart's vitals to flag abnormal values (REST module 2.7's resource), and the range an
//! observation is judged by when it is saved.
//!
//! The content's ranges (`conceptreferencerange/`, compiled with their criteria) are
//! OpenMRS 2.7's: those whose criteria select the patient, today, apply, the strictest of
//! each limit when several do; a patient none selects, and a concept without ranges of its
//! own, get the concept's limits. A range's uuid is the content's when one range applies,
//! the concept's otherwise.

use crate::content::concept::ConceptRes;
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, render};
use crate::http::{Caller, QueryPairs, ok, param};
use crate::store::PatientRecord;
use axum::extract::State;
use axum::response::Response;
use chrono::{Datelike, NaiveDate};
use model::ranges::PatientFacts;
use model::{Concept, Content, Limits};
use serde_json::{Value, json};
use std::sync::Arc;

/// The range a concept has for a patient (or for nobody in particular, without one).
pub struct AppliedRange<'a> {
    pub uuid: &'a str,
    pub concept: &'a Concept,
    pub limits: Limits,
}

/// The patient's facts the criteria read: ages in whole units to today, or to the death
/// date (OpenMRS's `Person.getAge()` and its kin), and sex.
pub fn patient_facts(p: &PatientRecord, today: NaiveDate) -> PatientFacts {
    let death = p
        .death_date
        .as_deref()
        .and_then(|d| crate::wire::parse_date(d.get(..10).unwrap_or(d)));
    let until = death.filter(|d| *d < today).unwrap_or(today);
    let birth = p.birthdate.as_deref().and_then(crate::wire::parse_date);
    let gender = (!p.gender.is_empty()).then(|| p.gender.clone());
    let Some(birth) = birth.filter(|b| *b <= until) else {
        return PatientFacts {
            gender,
            ..PatientFacts::default()
        };
    };
    let mut months =
        (until.year() - birth.year()) as i64 * 12 + until.month() as i64 - birth.month() as i64;
    if until.day() < birth.day() {
        months -= 1;
    }
    let days = (until - birth).num_days();
    PatientFacts {
        age_in_years: Some(months / 12),
        age_in_months: Some(months),
        age_in_weeks: Some(days / 7),
        age_in_days: Some(days),
        gender,
    }
}

/// The range of `concept` for `patient`; `None` for a concept that is not numeric or has
/// no limit at all.
pub fn applied_range<'a>(
    content: &'a Content,
    concept: &'a Concept,
    patient: Option<&PatientFacts>,
) -> Option<AppliedRange<'a>> {
    let own = concept.numeric.as_ref()?;
    let matching: Vec<_> = match patient {
        Some(p) => content
            .reference_ranges(&concept.uuid)
            .iter()
            .filter(|r| r.criteria.matches(p))
            .collect(),
        None => Vec::new(),
    };
    let applied = match matching.as_slice() {
        [] => AppliedRange {
            uuid: &concept.uuid,
            concept,
            limits: own.limits(),
        },
        [one] => AppliedRange {
            uuid: &one.uuid,
            concept,
            limits: one.limits,
        },
        several => AppliedRange {
            uuid: &concept.uuid,
            concept,
            limits: Limits::strictest(several.iter().map(|r| &r.limits)),
        },
    };
    (!applied.limits.is_empty()).then_some(applied)
}

/// How a new observation's numeric value reads against its concept's range for the
/// patient (OpenMRS 2.7 records it when it saves the observation), as `Obs.Interpretation`
/// names it. The patient's record is read only for a concept the content gives ranges by
/// patient.
pub fn interpretation_on_save(
    state: &AppState,
    content: &Content,
    concept: &Concept,
    person: &str,
    value: f64,
) -> ApiResult<Option<&'static str>> {
    let facts = if content.reference_ranges(&concept.uuid).is_empty() {
        None
    } else {
        state
            .store
            .patient(person)?
            .map(|p| patient_facts(&p, crate::wire::today()))
    };
    Ok(
        applied_range(content, concept, facts.as_ref())
            .and_then(|r| r.limits.interpretation(value)),
    )
}

pub struct ReferenceRangeRes<'a>(pub AppliedRange<'a>);

impl Resource for ReferenceRangeRes<'_> {
    fn alias(&self) -> &'static str {
        "conceptreferencerange"
    }
    fn version(&self) -> &'static str {
        "2.7"
    }
    fn uuid(&self) -> String {
        self.0.uuid.to_string()
    }
    fn display(&self, ctx: &Ctx) -> String {
        let l = &self.0.limits;
        let bound = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        format!(
            "{}: {} - {} {}",
            ConceptRes(self.0.concept).display(ctx),
            bound(l.low_normal),
            bound(l.hi_normal),
            self.0
                .concept
                .numeric
                .as_ref()
                .and_then(|n| n.units.clone())
                .unwrap_or_default()
        )
        .trim_end()
        .to_string()
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("concept", Rep::Default),
            ("hiNormal", Rep::Default),
            ("hiAbsolute", Rep::Default),
            ("hiCritical", Rep::Default),
            ("lowNormal", Rep::Default),
            ("lowAbsolute", Rep::Default),
            ("lowCritical", Rep::Default),
            ("units", Rep::Default),
            ("allowDecimal", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let n = self.0.concept.numeric.as_ref()?;
        let l = &self.0.limits;
        Some(match name {
            // A plain uuid, as the REST module writes it.
            "concept" => json!(self.0.concept.uuid),
            "hiNormal" => json!(l.hi_normal),
            "hiAbsolute" => json!(l.hi_absolute),
            "hiCritical" => json!(l.hi_critical),
            "lowNormal" => json!(l.low_normal),
            "lowAbsolute" => json!(l.low_absolute),
            "lowCritical" => json!(l.low_critical),
            "units" => json!(n.units),
            "allowDecimal" => json!(n.allow_decimal),
            _ => return None,
        })
    }
}

/// `GET conceptreferencerange?patient=&concept=a,b` — privilege: Get Concepts.
/// Concepts are uuids or `SOURCE:CODE` references; those without a numeric range are left
/// out, as OpenMRS leaves them out.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Concepts"])?;
    let rep = Rep::parse(param(&query, "v"))?.unwrap_or(Rep::Default);
    let paging = Paging::from_query(&query)?;
    let (Some(patient), Some(concepts)) = (param(&query, "patient"), param(&query, "concept"))
    else {
        return Err(ApiError::BadRequest(
            "The search needs both patient and concept (uuids or SOURCE:CODE, comma-separated)"
                .into(),
        ));
    };
    let Some(patient) = state.store.patient(patient)?.filter(|p| !p.voided) else {
        return Err(ApiError::NotFound);
    };
    let facts = patient_facts(&patient, crate::wire::today());
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let items = concepts
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .filter_map(|c| catalog.concept(c))
        .filter_map(|c| applied_range(&catalog.content, c, Some(&facts)))
        .map(|r| render(&ReferenceRangeRes(r), &rep, &ctx))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ok(paging.page(
        items,
        &caller.request_url(&state, "/conceptreferencerange", &query),
    )))
}
