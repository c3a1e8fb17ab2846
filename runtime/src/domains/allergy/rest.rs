//! `patient/{uuid}/allergy` over REST (webservices.rest's PatientAllergyResource): list,
//! read, create, update, void. Privileges: Get Allergies, Add Allergies, Edit Allergies,
//! Remove Allergies.

use crate::catalog::Catalog;
use crate::content::concept::ConceptRes;
use crate::domains::allergy::{AllergenType, AllergyConcepts, AllergyRecord, Reaction, store};
use crate::domains::patient::repr::PatientRes;
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, nest, page_answer, rep_of, window};
use crate::http::body::{only_known, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource};
use crate::http::{Caller, JsonBody, QueryPairs, blocking};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Page, Voiding};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct AllergyRes<'a>(pub &'a AllergyRecord);

fn concept_res<'c>(ctx: &Ctx<'c>, uuid: Option<&str>) -> Option<ConceptRes<'c>> {
    uuid.and_then(|u| ctx.catalog.concept(u)).map(ConceptRes)
}

impl Resource for AllergyRes<'_> {
    fn alias(&self) -> &'static str {
        "allergy"
    }
    fn version(&self) -> &'static str {
        "2.0"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("patient/{}/allergy/{}", self.0.patient, self.0.uuid)
    }
    /// The allergen's name in the caller's language, or its free text.
    fn display(&self, ctx: &Ctx) -> String {
        match &self.0.non_coded_allergen {
            Some(text) => text.clone(),
            None => concept_res(ctx, self.0.coded_allergen.as_deref())
                .map(|c| c.display(ctx))
                .unwrap_or_default(),
        }
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("allergen", Rep::Ref),
            ("severity", Rep::Ref),
            ("comment", Rep::Default),
            ("reactions", Rep::Ref),
            ("patient", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("allergen", Rep::Default),
            ("severity", Rep::Default),
            ("comment", Rep::Default),
            ("reactions", Rep::Default),
            ("patient", Rep::Default),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let a = self.0;
        // Inside `allergen:(codedAllergen:(…))` and `reactions:(reaction:(…))`, the inner
        // property chooses the concept's representation.
        let inner = |prop: &str| match rep {
            Rep::Custom(props) => props
                .iter()
                .find(|(p, _)| p == prop)
                .map(|(_, r)| r.clone())
                .unwrap_or(Rep::Ref),
            other => other.clone(),
        };
        Some(match name {
            "allergen" => json!({
                "allergenType": a.allergen_type.name(),
                "codedAllergen": nest(concept_res(ctx, a.coded_allergen.as_deref()), &inner("codedAllergen"), ctx),
                "nonCodedAllergen": a.non_coded_allergen,
            }),
            "severity" => nest(concept_res(ctx, a.severity.as_deref()), rep, ctx),
            "comment" => json!(a.comment),
            "reactions" => Value::Array(
                a.reactions
                    .iter()
                    .map(|r| {
                        json!({
                            "reaction": nest(concept_res(ctx, Some(&r.reaction)), &inner("reaction"), ctx),
                            "reactionNonCoded": r.non_coded,
                        })
                    })
                    .collect(),
            ),
            "patient" => nest(
                ctx.store
                    .patient(&a.patient)
                    .ok()
                    .flatten()
                    .as_ref()
                    .map(PatientRes),
                rep,
                ctx,
            ),
            "voided" => json!(a.voiding.voided),
            "auditInfo" => audit_info(&a.audit, ctx),
            _ => return None,
        })
    }
}

const FIELDS: &[&str] = &["uuid", "allergen", "severity", "comment", "reactions"];

/// The longest comment and free text OpenMRS's columns hold.
const MAX_COMMENT: usize = 1024;
const MAX_TEXT: usize = 255;

/// What is wrong with a free text: too long, or control characters (line breaks are
/// allowed where the form offers several lines, in the comment).
fn text_problem(text: &str, max: usize, lines: bool) -> Option<String> {
    let allowed = |c: char| lines && matches!(c, '\n' | '\r' | '\t');
    if text.chars().count() > max {
        Some(format!("At most {max} characters"))
    } else if text.chars().any(|c| c.is_control() && !allowed(c)) {
        Some("Control characters are not allowed".into())
    } else {
        None
    }
}

/// A concept reference that must name a concept of the content, as its uuid; a retired one
/// only if the allergy already had it (`kept`), so that an allergy recorded before the
/// concept was retired can still be edited.
fn check_concept(
    catalog: &Catalog,
    reference: &str,
    kept: &[&str],
    field: &str,
    inv: &mut Invalid,
) -> Option<String> {
    match catalog.concept(reference) {
        Some(c) if c.retired && !kept.contains(&c.uuid.as_str()) => {
            inv.field(field, "error.retired", "The concept is retired");
            None
        }
        Some(c) => Some(c.uuid.clone()),
        None => {
            inv.field(field, "error.invalid", "Concept does not exist");
            None
        }
    }
}

/// Applies the fields a body carries, normalised as core's `Allergen` setters do.
fn apply(
    a: &mut AllergyRecord,
    body: &Map<String, Value>,
    catalog: &Catalog,
    concepts: &AllergyConcepts,
    inv: &mut Invalid,
) -> ApiResult<()> {
    // The concepts the allergy has now: they stay acceptable if retired since.
    let before = a.clone();
    let mut kept: Vec<&str> = before
        .reactions
        .iter()
        .map(|r| r.reaction.as_str())
        .collect();
    kept.extend(before.coded_allergen.as_deref());
    kept.extend(before.severity.as_deref());
    if let Some(allergen) = body.get("allergen") {
        let Value::Object(o) = allergen else {
            return Err(ApiError::BadRequest(
                "allergen must be an object with allergenType and codedAllergen or nonCodedAllergen".into(),
            ));
        };
        match opt_str(o, "allergenType")? {
            Some(t) => match AllergenType::parse(&t) {
                Some(t) => a.allergen_type = t,
                None => inv.field(
                    "allergen.allergenType",
                    "error.invalid",
                    "The allergen type is DRUG, FOOD, ENVIRONMENT or OTHER",
                ),
            },
            None => inv.field(
                "allergen.allergenType",
                "allergyapi.allergenType.required",
                "The allergen type is required",
            ),
        }
        a.coded_allergen = opt_ref(o, "codedAllergen")?
            .and_then(|c| check_concept(catalog, &c, &kept, "allergen.codedAllergen", inv));
        a.non_coded_allergen = opt_str(o, "nonCodedAllergen")?
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        if let Some(problem) = a
            .non_coded_allergen
            .as_deref()
            .and_then(|t| text_problem(t, MAX_TEXT, false))
        {
            inv.field("allergen.nonCodedAllergen", "error.invalid", &problem);
        }
        match (&a.coded_allergen, &a.non_coded_allergen) {
            // A coded allergen other than "other" has no text.
            (Some(c), Some(_)) if *c != concepts.other => a.non_coded_allergen = None,
            (None, Some(_)) => a.coded_allergen = Some(concepts.other.clone()),
            (Some(c), None) if *c == concepts.other => inv.field(
                "allergen.nonCodedAllergen",
                "allergyapi.allergen.nonCodedAllergen.required",
                "Name the allergen when it is \"other\"",
            ),
            (None, None) if !inv.fields.iter().any(|f| f.0 == "allergen.codedAllergen") => inv
                .field(
                    "allergen",
                    "allergyapi.allergen.codedOrNonCodedAllergen.required",
                    "The allergen is required: a concept or a text",
                ),
            _ => {}
        }
    }
    if body.contains_key("severity") {
        a.severity = opt_ref(body, "severity")?
            .and_then(|c| check_concept(catalog, &c, &kept, "severity", inv));
    }
    if body.contains_key("comment") {
        a.comment = opt_str(body, "comment")?.filter(|c| !c.trim().is_empty());
        if let Some(problem) = a
            .comment
            .as_deref()
            .and_then(|t| text_problem(t, MAX_COMMENT, true))
        {
            inv.field("comment", "error.invalid", &problem);
        }
    }
    match body.get("reactions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            a.reactions.clear();
            for (i, item) in items.iter().enumerate() {
                let field = format!("reactions[{i}]");
                let Value::Object(r) = item else {
                    return Err(ApiError::BadRequest(format!(
                        "{field} must be an object with a reaction"
                    )));
                };
                let Some(reaction) = opt_ref(r, "reaction")? else {
                    inv.field(&field, "error.null", "A reaction needs its concept");
                    continue;
                };
                let Some(reaction) = check_concept(catalog, &reaction, &kept, &field, inv) else {
                    continue;
                };
                let text = opt_str(r, "reactionNonCoded")?
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty());
                let non_coded = if reaction == concepts.other {
                    if text.is_none() {
                        inv.field(
                            &field,
                            "error.null",
                            "Name the reaction when it is \"other\"",
                        );
                    }
                    text
                } else {
                    None
                };
                if let Some(problem) = non_coded
                    .as_deref()
                    .and_then(|t| text_problem(t, MAX_TEXT, false))
                {
                    inv.field(&field, "error.invalid", &problem);
                }
                if !a
                    .reactions
                    .iter()
                    .any(|x| x.reaction == reaction && x.non_coded == non_coded)
                {
                    a.reactions.push(Reaction {
                        reaction,
                        non_coded,
                    });
                }
            }
        }
        Some(_) => return Err(ApiError::BadRequest("reactions must be a list".into())),
    }
    Ok(())
}

/// Refuses a second active allergy to the same allergen (core's duplicate check).
fn check_duplicate(
    state: &AppState,
    a: &AllergyRecord,
    concepts: &AllergyConcepts,
    ctx_display: impl Fn(&AllergyRecord) -> String,
) -> ApiResult<()> {
    let existing = store::of_patient(&state.store, &a.patient, false)?;
    if existing
        .iter()
        .any(|o| o.uuid != a.uuid && o.same_allergen(a, &concepts.other))
    {
        return Err(ApiError::invalid_field(
            "allergen",
            "allergyapi.message.duplicateAllergen",
            &format!("The patient already has an allergy to {}", ctx_display(a)),
        ));
    }
    Ok(())
}

fn live_patient(state: &AppState, uuid: &str) -> ApiResult<()> {
    match state.store.patient(uuid)? {
        Some(p) if !p.voided => Ok(()),
        _ => Err(ApiError::NotFound),
    }
}

/// `POST patient/{uuid}/allergy` — privilege: Add Allergies.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(patient): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Allergies"])?;
    only_known(&body, FIELDS)?;
    if body.get("allergen").is_none_or(Value::is_null) {
        return Err(ApiError::invalid_field(
            "allergen",
            "allergyapi.allergen.required",
            "The allergen is required",
        ));
    }
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let cl = caller.clone();
    let a = blocking(move || {
        let _one_writer = st.store.write_lock();
        live_patient(&st, &patient)?;
        let catalog = st.catalog.load();
        let concepts = AllergyConcepts::of(&st.clinic());
        let mut a = AllergyRecord {
            v: 1,
            uuid: crate::http::body::client_uuid(&body)?,
            patient,
            allergen_type: AllergenType::Other,
            coded_allergen: None,
            non_coded_allergen: None,
            severity: None,
            comment: None,
            reactions: Vec::new(),
            audit: Audit::new(&user, Utc::now()),
            voiding: Voiding::default(),
        };
        let mut inv = Invalid::default();
        apply(&mut a, &body, &catalog, &concepts, &mut inv)?;
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        if store::get(&st.store, &a.uuid)?.is_some() {
            return Err(ApiError::BadRequest(format!(
                "An allergy with uuid {} already exists",
                a.uuid
            )));
        }
        let ctx = cl.ctx(&st, &catalog);
        check_duplicate(&st, &a, &concepts, |a| AllergyRes(a).display(&ctx))?;
        store::put(&st.store, &a)?;
        Ok(a)
    })
    .await?;
    answer(&state, &caller, &AllergyRes(&a), &rep, StatusCode::CREATED)
}

/// The allergy `uuid` of `patient`, or 404.
fn of_patient(state: &AppState, patient: &str, uuid: &str) -> ApiResult<AllergyRecord> {
    match store::get(&state.store, uuid)? {
        Some(a) if a.patient == patient => Ok(a),
        _ => Err(ApiError::NotFound),
    }
}

/// `POST patient/{uuid}/allergy/{allergy}` — privilege: Edit Allergies.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((patient, uuid)): Path<(String, String)>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Allergies"])?;
    only_known(&body, FIELDS)?;
    let rep = rep_of(&query)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let cl = caller.clone();
    let a = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut a = of_patient(&st, &patient, &uuid)?;
        if a.voiding.voided {
            return Err(ApiError::BadRequest(
                "A deleted allergy cannot be changed".into(),
            ));
        }
        let catalog = st.catalog.load();
        let concepts = AllergyConcepts::of(&st.clinic());
        let mut inv = Invalid::default();
        apply(&mut a, &body, &catalog, &concepts, &mut inv)?;
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        let ctx = cl.ctx(&st, &catalog);
        check_duplicate(&st, &a, &concepts, |a| AllergyRes(a).display(&ctx))?;
        a.audit.changed(&user, Utc::now());
        store::put(&st.store, &a)?;
        Ok(a)
    })
    .await?;
    answer(&state, &caller, &AllergyRes(&a), &rep, StatusCode::OK)
}

/// `GET patient/{uuid}/allergy/{allergy}` — privilege: Get Allergies.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((patient, uuid)): Path<(String, String)>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Allergies"])?;
    let a = of_patient(&state, &patient, &uuid)?;
    answer(
        &state,
        &caller,
        &AllergyRes(&a),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE patient/{uuid}/allergy/{allergy}[?reason=]` voids it — privilege: Remove
/// Allergies.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((patient, uuid)): Path<(String, String)>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Remove Allergies"])?;
    of_patient(&state, &patient, &uuid)?;
    crate::http::answer::void_answer(
        state,
        &caller,
        uuid,
        &query,
        store::get,
        |a| &mut a.voiding,
        |store, _, a| store::put(store, a),
    )
    .await
}

/// `GET patient/{uuid}/allergy[?includeAll=true]`, newest first — privilege: Get Allergies.
pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(patient): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Allergies"])?;
    live_patient(&state, &patient)?;
    let paging = Paging::from_query(&query)?;
    let all = store::of_patient(
        &state.store,
        &patient,
        flag(&query, "includeAll").unwrap_or(false),
    )?;
    let w = window(&paging);
    let page = Page::cut(all.iter().map(|a| a.uuid.clone()).collect(), w);
    page_answer(
        &state,
        &caller,
        &query,
        &format!("/patient/{patient}/allergy"),
        &paging,
        &page,
        all.iter().skip(w.start).take(w.limit).map(AllergyRes),
    )
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/patient/{uuid}/allergy"),
            get(crate::domains::allergy::rest::list).post(crate::domains::allergy::rest::create),
        )
        .route(
            &paths.rest("/patient/{uuid}/allergy/{allergy}"),
            get(crate::domains::allergy::rest::read)
                .post(crate::domains::allergy::rest::update)
                .delete(crate::domains::allergy::rest::delete),
        )
        .route(
            &paths.fhir("/AllergyIntolerance"),
            get(crate::domains::allergy::fhir::search),
        )
        .route(
            &paths.fhir("/AllergyIntolerance/{id}"),
            get(crate::domains::allergy::fhir::read),
        )
}
