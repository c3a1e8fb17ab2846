//! `program` (the content's programmes with their workflows and states) and
//! `programenrollment` (create, read, update, void, search by patient) over REST, in
//! OpenMRS's representations.

use crate::content::concept::ConceptRes;
use crate::content::location::LocationRes;
use crate::domains::patient::repr::PatientRes;
use crate::domains::programme::store;
use crate::domains::programme::{EnrolmentRecord, StateRecord};
use crate::http::AppState;
use crate::http::answer::{answer, audit_info, flag, nest, page_answer, rep_of, window};
use crate::http::body::{apply_voided, only_known, opt_datetime, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource, nested_list, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, ok, param};
use crate::store::record::{Audit, Voiding};
use crate::wire::{datetime_key, wire_datetime};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use model::{Program, ProgramWorkflow, ProgramWorkflowState};
use serde_json::{Map, Value, json};
use std::sync::Arc;

fn concept_display(uuid: &str, ctx: &Ctx) -> String {
    ctx.catalog
        .concept(uuid)
        .map(|c| ConceptRes(c).display(ctx))
        .unwrap_or_default()
}

fn concept_ref(uuid: Option<&str>, rep: &Rep, ctx: &Ctx) -> Value {
    nest(
        uuid.and_then(|u| ctx.catalog.concept(u)).map(ConceptRes),
        rep,
        ctx,
    )
}

pub struct ProgramRes<'a>(pub &'a Program);
pub struct WorkflowRes<'a>(pub &'a ProgramWorkflow);
pub struct WorkflowStateRes<'a>(pub &'a ProgramWorkflowState);

impl Resource for ProgramRes<'_> {
    fn alias(&self) -> &'static str {
        "program"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    /// As webservices.rest writes a metadata's display: the content's message
    /// `ui.i18n.Program.name.<uuid>` in the caller's language, else the programme's name
    /// (not its concept's: the O3 programmes app shows this, and the suites read the name).
    fn display(&self, ctx: &Ctx) -> String {
        let code = format!("ui.i18n.Program.name.{}", self.0.uuid);
        ctx.catalog
            .message(&code, &ctx.locale)
            .map_or_else(|| self.0.name.clone(), str::to_string)
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("concept", Rep::Ref),
            ("outcomesConcept", Rep::Ref),
            ("allWorkflows", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("description", Rep::Default),
            ("retired", Rep::Default),
            ("concept", Rep::Default),
            ("outcomesConcept", Rep::Default),
            ("allWorkflows", Rep::Full),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let p = self.0;
        Some(match name {
            "name" => json!(p.name),
            "description" => json!(p.description),
            "retired" => json!(p.retired),
            "concept" => concept_ref(Some(&p.concept), rep, ctx),
            "outcomesConcept" => concept_ref(p.outcomes_concept.as_deref(), rep, ctx),
            "allWorkflows" | "workflows" => {
                let ws: Vec<WorkflowRes> = ctx
                    .catalog
                    .content
                    .program_workflows
                    .iter()
                    .filter(|w| w.program == p.uuid)
                    .map(WorkflowRes)
                    .collect();
                nested_list(ws.iter().map(|w| w as &dyn Resource), rep, ctx)
            }
            "auditInfo" => crate::content::concept::content_audit_info(),
            _ => return None,
        })
    }
}

impl Resource for WorkflowRes<'_> {
    fn alias(&self) -> &'static str {
        "workflow"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("workflow/{}", self.0.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        concept_display(&self.0.concept, ctx)
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("concept", Rep::Ref),
            ("retired", Rep::Default),
            ("states", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "concept" => concept_ref(Some(&self.0.concept), rep, ctx),
            "retired" => json!(self.0.retired),
            "states" => {
                let ss: Vec<WorkflowStateRes> = ctx
                    .catalog
                    .content
                    .program_workflow_states
                    .iter()
                    .filter(|s| s.workflow == self.0.uuid)
                    .map(WorkflowStateRes)
                    .collect();
                nested_list(ss.iter().map(|s| s as &dyn Resource), rep, ctx)
            }
            _ => return None,
        })
    }
}

impl Resource for WorkflowStateRes<'_> {
    fn alias(&self) -> &'static str {
        "state"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("workflow/{}/state/{}", self.0.workflow, self.0.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        concept_display(&self.0.concept, ctx)
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("concept", Rep::Ref),
            ("initial", Rep::Default),
            ("terminal", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "concept" => concept_ref(Some(&self.0.concept), rep, ctx),
            "initial" => json!(self.0.initial),
            "terminal" => json!(self.0.terminal),
            "retired" => json!(self.0.retired),
            _ => return None,
        })
    }
}

pub struct EnrolmentRes<'a>(pub &'a EnrolmentRecord);
struct PatientStateRes<'a>(&'a str, &'a StateRecord);

impl Resource for EnrolmentRes<'_> {
    fn alias(&self) -> &'static str {
        "programenrollment"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    /// The programme's name, as webservices.rest writes an enrolment's display.
    fn display(&self, ctx: &Ctx) -> String {
        ctx.catalog
            .content
            .programs
            .iter()
            .find(|p| p.uuid == self.0.program)
            .map(|p| p.name.clone())
            .unwrap_or_default()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("patient", Rep::Ref),
            ("program", Rep::Ref),
            ("dateEnrolled", Rep::Default),
            ("dateCompleted", Rep::Default),
            ("location", Rep::Ref),
            ("voided", Rep::Default),
            ("outcome", Rep::Ref),
            ("states", Rep::Default),
            ("attributes", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("patient", Rep::Default),
            ("program", Rep::Default),
            ("dateEnrolled", Rep::Default),
            ("dateCompleted", Rep::Default),
            ("location", Rep::Default),
            ("voided", Rep::Default),
            ("outcome", Rep::Default),
            ("states", Rep::Full),
            ("attributes", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let e = self.0;
        Some(match name {
            "patient" => nest(
                ctx.store
                    .patient(&e.patient)
                    .ok()
                    .flatten()
                    .as_ref()
                    .map(PatientRes),
                rep,
                ctx,
            ),
            "program" => nest(
                ctx.catalog
                    .content
                    .programs
                    .iter()
                    .find(|p| p.uuid == e.program)
                    .map(ProgramRes),
                rep,
                ctx,
            ),
            "dateEnrolled" => wire_datetime(&e.enrolled),
            "dateCompleted" => e.completed.as_deref().map_or(Value::Null, wire_datetime),
            "location" => nest(
                e.location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(LocationRes),
                rep,
                ctx,
            ),
            "voided" => json!(e.voiding.voided),
            "outcome" => concept_ref(e.outcome.as_deref(), rep, ctx),
            "states" => {
                let ss: Vec<PatientStateRes> = e
                    .states
                    .iter()
                    .filter(|s| !s.voided)
                    .map(|s| PatientStateRes(&e.uuid, s))
                    .collect();
                nested_list(ss.iter().map(|s| s as &dyn Resource), rep, ctx)
            }
            "attributes" => json!([]),
            "auditInfo" => audit_info(&e.audit, ctx),
            _ => return None,
        })
    }
}

impl Resource for PatientStateRes<'_> {
    fn alias(&self) -> &'static str {
        "state"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("programenrollment/{}/state/{}", self.0, self.1.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        self.content_state(ctx)
            .map(|s| WorkflowStateRes(s).display(ctx))
            .unwrap_or_default()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.1.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("state", Rep::Default),
            ("startDate", Rep::Default),
            ("endDate", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("state", Rep::Default),
            ("startDate", Rep::Default),
            ("endDate", Rep::Default),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let s = self.1;
        Some(match name {
            "state" => nest(self.content_state(ctx).map(WorkflowStateRes), rep, ctx),
            "startDate" => wire_datetime(&s.start),
            "endDate" => s.end.as_deref().map_or(Value::Null, wire_datetime),
            "voided" => json!(s.voided),
            "auditInfo" => audit_info(&s.audit, ctx),
            _ => return None,
        })
    }
}

impl PatientStateRes<'_> {
    fn content_state<'c>(&self, ctx: &'c Ctx) -> Option<&'c ProgramWorkflowState> {
        ctx.catalog
            .content
            .program_workflow_states
            .iter()
            .find(|s| s.uuid == self.1.state)
    }
}

/// `GET program[?q=name]` — privilege: Get Programs.
pub async fn programs(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Programs"])?;
    let catalog = state.catalog.load();
    let q = param(&query, "q").map(str::to_lowercase);
    let items: Vec<ProgramRes> = catalog
        .content
        .programs
        .iter()
        .filter(|p| !p.retired || flag(&query, "includeAll").unwrap_or(false))
        .filter(|p| {
            q.as_ref()
                .is_none_or(|q| p.name.to_lowercase().contains(q.as_str()))
        })
        .map(ProgramRes)
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/program",
        items.iter().map(|p| p as &dyn Resource),
    )
}

/// `GET program/{uuid}` — privilege: Get Programs.
pub async fn program(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Programs"])?;
    let catalog = state.catalog.load();
    let p = catalog
        .content
        .programs
        .iter()
        .find(|p| p.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    Ok(ok(render(
        &ProgramRes(p),
        &rep_of(&query)?,
        &caller.ctx(&state, &catalog),
    )?))
}

const ENROLMENT_FIELDS: &[&str] = &[
    "uuid",
    "patient",
    "program",
    "dateEnrolled",
    "dateCompleted",
    "location",
    "outcome",
    "states",
    "voided",
    "voidReason",
    "attributes",
];
const STATE_FIELDS: &[&str] = &["uuid", "state", "startDate", "endDate", "voided"];

/// Applies the changeable fields of a body; new states close the open state of their
/// workflow at their start, as OpenMRS's `transitionToState` does.
fn apply(
    state: &AppState,
    e: &mut EnrolmentRecord,
    body: &Map<String, Value>,
    user: &str,
) -> ApiResult<()> {
    let now = Utc::now();
    if let Some(program) = opt_ref(body, "program")? {
        e.program = program;
    }
    if body.contains_key("dateEnrolled") {
        e.enrolled = opt_datetime(body, "dateEnrolled")?.ok_or_else(|| {
            ApiError::invalid_field(
                "dateEnrolled",
                "error.null",
                "The enrolment date is required",
            )
        })?;
    }
    if body.contains_key("dateCompleted") {
        e.completed = opt_datetime(body, "dateCompleted")?;
    }
    if body.contains_key("location") {
        // The O3 programmes form sends "" when the session has no location: none.
        e.location = match body.get("location") {
            Some(Value::String(l)) if l.trim().is_empty() => None,
            _ => opt_ref(body, "location")?,
        };
        if let Some(l) = &e.location
            && state.catalog.load().location(l).is_none()
        {
            return Err(ApiError::invalid_field(
                "location",
                "error.invalid",
                "Location does not exist",
            ));
        }
    }
    if body.contains_key("outcome") {
        e.outcome = opt_ref(body, "outcome")?;
    }
    if let Some(states) = body.get("states") {
        let Value::Array(states) = states else {
            return Err(ApiError::BadRequest("states must be a list".into()));
        };
        for (i, s) in states.iter().enumerate() {
            let Value::Object(s) = s else {
                return Err(ApiError::BadRequest(format!(
                    "states[{i}] must be an object"
                )));
            };
            only_known(s, STATE_FIELDS)?;
            let existing =
                opt_str(s, "uuid")?.and_then(|u| e.states.iter().position(|x| x.uuid == u));
            match existing {
                Some(at) => {
                    let x = &mut e.states[at];
                    if s.get("voided") == Some(&Value::Bool(true)) {
                        x.voided = true;
                    }
                    if s.contains_key("endDate") {
                        x.end = opt_datetime(s, "endDate")?;
                    }
                    if let Some(start) = opt_datetime(s, "startDate")? {
                        x.start = start;
                    }
                    x.audit.changed(user, now);
                }
                None => {
                    let target = opt_ref(s, "state")?.ok_or_else(|| {
                        ApiError::invalid_field(
                            &format!("states[{i}].state"),
                            "error.null",
                            "State is required",
                        )
                    })?;
                    let start = opt_datetime(s, "startDate")?.unwrap_or_else(|| datetime_key(now));
                    // A terminal state completes the enrolment, as in OpenMRS.
                    if crate::domains::programme::content_state(&state.clinic(), &target)
                        .is_some_and(|c| c.terminal)
                        && e.completed.is_none()
                    {
                        e.completed = Some(start.clone());
                    }
                    let workflow = crate::domains::programme::workflow_of(&state.clinic(), &target);
                    for open in e.states.iter_mut().filter(|x| {
                        !x.voided
                            && x.end.is_none()
                            && crate::domains::programme::workflow_of(&state.clinic(), &x.state)
                                == workflow
                    }) {
                        open.end = Some(start.clone());
                        open.audit.changed(user, now);
                    }
                    e.states.push(StateRecord {
                        uuid: opt_str(s, "uuid")?.unwrap_or_else(crate::store::record::new_uuid),
                        state: target,
                        start,
                        end: opt_datetime(s, "endDate")?,
                        audit: Audit::new(user, now),
                        voided: false,
                    });
                }
            }
        }
    }
    Ok(())
}

fn check(state: &AppState, e: &EnrolmentRecord, is_new: bool) -> ApiResult<()> {
    let others = store::all_of_patient(&state.store, &e.patient)?;
    let inv = crate::domains::programme::validate(&state.clinic(), e, &others, is_new, Utc::now());
    if inv.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid(inv))
    }
}

/// `POST programenrollment` — privilege: Add Patient Programs.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Add Patient Programs"])?;
    only_known(&body, ENROLMENT_FIELDS)?;
    let user = caller.user_uuid();
    let now = Utc::now();
    let patient = opt_ref(&body, "patient")?
        .ok_or_else(|| ApiError::invalid_field("patient", "error.null", "Patient is required"))?;
    match state.store.patient(&patient)? {
        Some(p) if !p.voided => {}
        _ => {
            return Err(ApiError::invalid_field(
                "patient",
                "error.invalid",
                "Patient does not exist",
            ));
        }
    }
    if opt_ref(&body, "program")?.is_none() {
        return Err(ApiError::invalid_field(
            "program",
            "error.null",
            "Program is required",
        ));
    }
    if opt_str(&body, "dateEnrolled")?.is_none() {
        return Err(ApiError::invalid_field(
            "dateEnrolled",
            "error.null",
            "The enrolment date is required",
        ));
    }
    let mut e = EnrolmentRecord {
        v: 1,
        uuid: opt_str(&body, "uuid")?.unwrap_or_else(crate::store::record::new_uuid),
        patient,
        program: String::new(),
        location: None,
        enrolled: datetime_key(now),
        completed: None,
        outcome: None,
        states: Vec::new(),
        audit: Audit::new(&user, now),
        voiding: Voiding::default(),
    };
    apply(&state, &mut e, &body, &user)?;
    let rep = rep_of(&query)?;
    let st = state.clone();
    let e = blocking(move || {
        let _one_writer = st.store.write_lock();
        if store::get(&st.store, &e.uuid)?.is_some() {
            return Err(ApiError::BadRequest(format!(
                "A program enrollment with uuid {} already exists",
                e.uuid
            )));
        }
        check(&st, &e, true)?;
        store::put(&st.store, None, &e)?;
        Ok(e)
    })
    .await?;
    answer(
        &state,
        &caller,
        &EnrolmentRes(&e),
        &rep,
        StatusCode::CREATED,
    )
}

/// `POST programenrollment/{uuid}` — privilege: Edit Patient Programs.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&["Edit Patient Programs"])?;
    only_known(&body, ENROLMENT_FIELDS)?;
    if body.contains_key("patient") {
        return Err(ApiError::BadRequest(
            "The patient of an enrolment cannot be changed".into(),
        ));
    }
    let user = caller.user_uuid();
    let rep = rep_of(&query)?;
    let st = state.clone();
    let e = blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let mut e = old.clone();
        apply(&st, &mut e, &body, &user)?;
        let voided_now = apply_voided(&body, &mut e.voiding, &user, Utc::now())?;
        e.audit.changed(&user, Utc::now());
        if !voided_now {
            check(&st, &e, false)?;
        }
        store::put(&st.store, Some(&old), &e)?;
        Ok(e)
    })
    .await?;
    answer(&state, &caller, &EnrolmentRes(&e), &rep, StatusCode::OK)
}

/// `GET programenrollment/{uuid}` — privilege: Get Patient Programs.
pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Programs"])?;
    let e = store::get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &EnrolmentRes(&e),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

/// `DELETE programenrollment/{uuid}[?reason=]` voids it — privilege: Delete Patient Programs.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Delete Patient Programs"])?;
    crate::http::answer::void_answer(
        state,
        &caller,
        uuid,
        &query,
        store::get,
        |e| &mut e.voiding,
        |store, old, e| store::put(store, Some(old), e),
    )
    .await
}

/// `GET programenrollment?patient=…[&includeAll=true]` (newest enrolment first) —
/// privilege: Get Patient Programs. A search needs the patient, as in OpenMRS.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patient Programs"])?;
    let patient = param(&query, "patient").ok_or_else(|| {
        ApiError::BadRequest("The search needs patient: programenrollment?patient=…".into())
    })?;
    let paging = Paging::from_query(&query)?;
    let (enrolments, page) = store::of_patient(
        &state.store,
        patient,
        false,
        flag(&query, "includeAll").unwrap_or(false),
        window(&paging),
    )?;
    page_answer(
        &state,
        &caller,
        &query,
        "/programenrollment",
        &paging,
        &page,
        enrolments.iter().map(EnrolmentRes),
    )
}

/// This domain's routes, with their full paths (merged into the application's one flat
/// router by the domains' registry).
pub fn routes(paths: &crate::http::Paths) -> axum::Router<std::sync::Arc<crate::http::AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/program"),
            get(crate::domains::programme::rest::programs),
        )
        .route(
            &paths.rest("/program/{uuid}"),
            get(crate::domains::programme::rest::program),
        )
        .route(
            &paths.rest("/programenrollment"),
            get(crate::domains::programme::rest::search)
                .post(crate::domains::programme::rest::create),
        )
        .route(
            &paths.rest("/programenrollment/{uuid}"),
            get(crate::domains::programme::rest::read)
                .post(crate::domains::programme::rest::update)
                .delete(crate::domains::programme::rest::delete),
        )
}
