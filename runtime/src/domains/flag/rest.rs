//! The patient flags module's REST resources under `patientflags/`, as its
//! `PatientFlag*Resource` classes answer them: `patientflag` (a patient's flags,
//! `?patient=`; read one; `DELETE` dismisses one by voiding it, `POST {"voided": false}`
//! restores it), and the content's definitions, read-only: `flag` (`?patient=` the flags
//! she meets, `?q=`, `?enabled=`, `?tags=`), `priority` and `tag`.

use crate::domains::flag::{
    MANAGE_FLAGS, MANAGE_PATIENT_FLAGS, PatientFlagRecord, TEST_FLAGS, VIEW_PATIENT_FLAGS,
    active_flags, regenerate, store,
};
use crate::domains::patient::repr::PatientRes;
use crate::http::AppState;
use crate::http::answer::{audit_info, flag, nest, rep_of};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Props, Rep, Resource, render};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use model::reports::{FlagDefinition, FlagPriority, FlagTag};
use serde_json::{Value, json};
use std::sync::Arc;

fn text_in(texts: &model::Localized, ctx: &Ctx) -> String {
    let fallbacks: Vec<&str> = ctx.fallbacks.iter().map(String::as_str).collect();
    model::display_in(texts, &ctx.locale, &fallbacks)
        .unwrap_or_default()
        .to_string()
}

fn definition<'a>(catalog: &'a crate::catalog::Catalog, uuid: &str) -> Option<&'a FlagDefinition> {
    catalog
        .content
        .patient_flags
        .flags
        .iter()
        .find(|f| f.uuid == uuid)
}

fn priority_of<'a>(ctx: &Ctx<'a>, uuid: &str) -> Option<&'a FlagPriority> {
    ctx.catalog
        .content
        .patient_flags
        .priorities
        .iter()
        .find(|p| p.uuid == uuid)
}

fn tag_of<'a>(ctx: &Ctx<'a>, uuid: &str) -> Option<&'a FlagTag> {
    ctx.catalog
        .content
        .patient_flags
        .tags
        .iter()
        .find(|t| t.uuid == uuid)
}

fn tags_json(uuids: &[String], rep: &Rep, ctx: &Ctx) -> Value {
    Value::Array(
        uuids
            .iter()
            .filter_map(|u| tag_of(ctx, u))
            .map(|t| render(&TagRes(t), rep, ctx).unwrap_or(Value::Null))
            .collect(),
    )
}

/// A patient's flag: its message is the flag's, in the reader's language.
pub struct PatientFlagRes<'a>(pub &'a PatientFlagRecord);

impl Resource for PatientFlagRes<'_> {
    fn alias(&self) -> &'static str {
        "patientflag"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("patientflags/patientflag/{}", self.0.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        definition(ctx.catalog, &self.0.flag)
            .map(|f| text_in(&f.message, ctx))
            .unwrap_or_default()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("message", Rep::Default),
            ("patient", Rep::Ref),
            ("flag", Rep::Ref),
            ("tags", Rep::Ref),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("message", Rep::Default),
            ("patient", Rep::Ref),
            ("flag", Rep::Ref),
            ("tags", Rep::Ref),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let r = self.0;
        let def = definition(ctx.catalog, &r.flag);
        Some(match name {
            "message" => json!(self.display(ctx)),
            "patient" => nest(
                ctx.store
                    .patient(&r.patient)
                    .ok()
                    .flatten()
                    .as_ref()
                    .map(PatientRes),
                rep,
                ctx,
            ),
            "flag" => nest(def.map(FlagRes), rep, ctx),
            "tags" => tags_json(def.map_or(&[][..], |d| &d.tags), rep, ctx),
            "voided" => json!(r.voiding.voided),
            "auditInfo" => {
                let mut info = audit_info(&r.audit, ctx);
                if r.voiding.voided {
                    info["voidedBy"] = r
                        .voiding
                        .voided_by
                        .as_deref()
                        .map_or(Value::Null, |u| crate::http::answer::user_ref(u, ctx));
                    info["dateVoided"] = r
                        .voiding
                        .date_voided
                        .as_deref()
                        .map_or(Value::Null, crate::wire::wire_datetime);
                    info["voidReason"] = json!(r.voiding.void_reason);
                }
                info
            }
            _ => return None,
        })
    }
}

pub struct FlagRes<'a>(pub &'a FlagDefinition);

impl Resource for FlagRes<'_> {
    fn alias(&self) -> &'static str {
        "flag"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("patientflags/flag/{}", self.0.uuid)
    }
    fn display(&self, _ctx: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("criteria", Rep::Default),
            ("evaluator", Rep::Default),
            ("message", Rep::Default),
            ("priority", Rep::Ref),
            ("enabled", Rep::Default),
            ("tags", Rep::Ref),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("criteria", Rep::Default),
            ("evaluator", Rep::Default),
            ("message", Rep::Default),
            ("priority", Rep::Default),
            ("enabled", Rep::Default),
            ("tags", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let f = self.0;
        Some(match name {
            "name" => json!(f.name),
            // The criteria as the content wrote them, where the module shows its flags' SQL.
            "criteria" => json!(f.criteria_text),
            "evaluator" => json!(EVALUATOR),
            "message" => json!(text_in(&f.message, ctx)),
            "priority" => nest(
                f.priority
                    .as_deref()
                    .and_then(|p| priority_of(ctx, p))
                    .map(PriorityRes),
                rep,
                ctx,
            ),
            "enabled" => json!(f.enabled),
            "tags" => tags_json(&f.tags, rep, ctx),
            "retired" => json!(f.retired),
            _ => return None,
        })
    }
}

/// The evaluator a flag of this distribution names: its criteria are the reports'.
pub const EVALUATOR: &str = "criteria";

pub struct PriorityRes<'a>(pub &'a FlagPriority);

impl Resource for PriorityRes<'_> {
    fn alias(&self) -> &'static str {
        "priority"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("patientflags/priority/{}", self.0.uuid)
    }
    fn display(&self, _ctx: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("style", Rep::Default),
            ("rank", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _rep: &Rep, _ctx: &Ctx) -> Option<Value> {
        let p = self.0;
        Some(match name {
            "name" => json!(p.name),
            "style" => json!(p.style),
            "rank" => json!(p.rank),
            "retired" => json!(p.retired),
            _ => return None,
        })
    }
}

pub struct TagRes<'a>(pub &'a FlagTag);

impl Resource for TagRes<'_> {
    fn alias(&self) -> &'static str {
        "tag"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn path(&self) -> String {
        format!("patientflags/tag/{}", self.0.uuid)
    }
    fn display(&self, _ctx: &Ctx) -> String {
        self.0.name.clone()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("retired", self.0.retired))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("name", Rep::Default),
            ("roles", Rep::Default),
            ("displayPoints", Rep::Default),
            ("retired", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let t = self.0;
        Some(match name {
            "name" => json!(t.name),
            "roles" => {
                let access = ctx.access.load();
                Value::Array(
                    t.roles
                        .iter()
                        .map(|name| crate::domains::role::rest::role_ref(name, ctx, &access))
                        .collect(),
                )
            }
            "displayPoints" => json!(t.display_points),
            "retired" => json!(t.retired),
            _ => return None,
        })
    }
}

/// Reading definitions needs Manage Flags or Test Flags (the module's `FlagService`).
fn require_definitions(caller: &Caller) -> ApiResult<()> {
    if caller.require(&[MANAGE_FLAGS]).is_ok() {
        return Ok(());
    }
    caller.require(&[TEST_FLAGS])
}

/// Whether the caller sees a flag on a patient: unless every one of its tags names roles
/// and she holds none of them (the module's filter by the user's roles, which its own
/// pages apply): a flag about an HIV programme is not shown to the reception desk.
fn shown_to(caller: &Caller, flag: &FlagDefinition, catalog: &crate::catalog::Catalog) -> bool {
    if caller.grants.super_user {
        return true;
    }
    let tags = &catalog.content.patient_flags.tags;
    let restricting: Vec<&FlagTag> = flag
        .tags
        .iter()
        .filter_map(|u| tags.iter().find(|t| &t.uuid == u))
        .collect();
    restricting.is_empty()
        || restricting
            .iter()
            .any(|t| t.roles.is_empty() || t.roles.iter().any(|r| caller.grants.roles.contains(r)))
}

fn is_patient(state: &AppState, uuid: &str) -> ApiResult<bool> {
    Ok(state.store.patient(uuid)?.is_some_and(|p| !p.voided))
}

/// `GET patientflags/patientflag?patient=`: her flags, regenerated first (`flag` module
/// documentation). Without `patient`, or for a patient that is not there, none.
pub async fn search_patient_flags(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&["Get Patients"])?;
    let patient = param(&query, "patient").unwrap_or_default().to_string();
    let st = state.clone();
    let records = blocking(move || {
        if patient.is_empty() || !is_patient(&st, &patient)? {
            return Ok(Vec::new());
        }
        let catalog = st.catalog.load();
        Ok(regenerate(
            &st.store,
            &catalog,
            &patient,
            chrono::Utc::now(),
        )?)
    })
    .await?;
    let catalog = state.catalog.load();
    let items: Vec<PatientFlagRes> = records
        .iter()
        .filter(|r| definition(&catalog, &r.flag).is_some_and(|f| shown_to(&caller, f, &catalog)))
        .map(PatientFlagRes)
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/patientflags/patientflag",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn read_patient_flag(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_PATIENT_FLAGS])?;
    let r = store::get(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
    let catalog = state.catalog.load();
    let shown = definition(&catalog, &r.flag).is_some_and(|f| shown_to(&caller, f, &catalog));
    if !shown {
        return Err(ApiError::NotFound);
    }
    let ctx = caller.ctx(&state, &catalog);
    Ok(crate::http::ok(render(
        &PatientFlagRes(&r),
        &rep_of(&query)?,
        &ctx,
    )?))
}

/// `DELETE patientflags/patientflag/{uuid}`: the user dismisses the flag (it is voided,
/// and stays dismissed while it holds). Deleting a dismissed one changes nothing; purging
/// is refused, as in the module.
pub async fn delete_patient_flag(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MANAGE_PATIENT_FLAGS])?;
    if flag(&query, "purge").unwrap_or(false) {
        return Err(ApiError::BadRequest(
            "PatientFlag cannot be purged".to_string(),
        ));
    }
    let reason = param(&query, "reason")
        .unwrap_or("REST web service")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut r = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if !r.voiding.voided {
            r.voiding.void(&user, chrono::Utc::now(), &reason);
            r.audit.changed(&user, chrono::Utc::now());
            store::put(&st.store, &r)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST patientflags/patientflag/{uuid}`: `{"voided": false}` restores a dismissed flag
/// (webservices.rest's undelete). Its patient, flag and message are the evaluation's and
/// cannot be set.
pub async fn update_patient_flag(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MANAGE_PATIENT_FLAGS])?;
    for key in body.keys() {
        if key != "voided" {
            return Err(ApiError::BadRequest(format!(
                "Some properties are not allowed to be set: {key} (a patient flag is made by evaluating its flag; only 'voided' may be changed)"
            )));
        }
    }
    let voided = match body.get("voided") {
        Some(Value::Bool(b)) => Some(*b),
        None => None,
        Some(v) => {
            return Err(ApiError::BadRequest(format!(
                "'voided' is true or false, not {v}"
            )));
        }
    };
    let user = caller.user_uuid();
    let st = state.clone();
    let r = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut r = store::get(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let now = chrono::Utc::now();
        match voided {
            Some(false) if r.voiding.voided => {
                r.voiding.unvoid();
                r.audit.changed(&user, now);
                store::put(&st.store, &r)?;
            }
            Some(true) if !r.voiding.voided => {
                r.voiding.void(&user, now, "REST web service");
                r.audit.changed(&user, now);
                store::put(&st.store, &r)?;
            }
            _ => {}
        }
        Ok(r)
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    Ok(crate::http::ok(render(
        &PatientFlagRes(&r),
        &rep_of(&query)?,
        &ctx,
    )?))
}

/// `GET patientflags/flag`: every flag; `?patient=` the flags she meets now (evaluated,
/// not the stored records), or filtered by `q` (in the name), `evaluator`, `enabled` and
/// `tags` (names, comma-separated: any of them).
pub async fn search_flags(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    require_definitions(&caller)?;
    let catalog = state.catalog.load();
    let all = &catalog.content.patient_flags;
    let chosen: Vec<&FlagDefinition> = if let Some(patient) = param(&query, "patient") {
        let patient = patient.to_string();
        let st = state.clone();
        let met: Vec<String> = blocking(move || {
            if !is_patient(&st, &patient)? {
                return Ok(Vec::new());
            }
            let catalog = st.catalog.load();
            let flags: Vec<&FlagDefinition> = active_flags(&catalog).collect();
            let criteria: Vec<_> = flags.iter().map(|f| &f.criterion).collect();
            let txn = st.store.begin_read()?;
            let met = crate::domains::report::eval::met_by(
                &txn,
                &catalog,
                crate::domains::report::eval::YesNo::of(&st.store, &catalog),
                &criteria,
                &patient,
                chrono::Utc::now().date_naive(),
            )?;
            Ok(flags
                .iter()
                .zip(met)
                .filter(|(_, m)| *m)
                .map(|(f, _)| f.uuid.clone())
                .collect())
        })
        .await?;
        all.flags
            .iter()
            .filter(|f| met.contains(&f.uuid) && shown_to(&caller, f, &catalog))
            .collect()
    } else {
        let q = param(&query, "q").map(str::to_lowercase);
        let evaluator = param(&query, "evaluator");
        let enabled = flag(&query, "enabled");
        let tags: Option<Vec<&str>> = param(&query, "tags")
            .filter(|t| !t.is_empty())
            .map(|t| t.split(',').map(str::trim).collect());
        all.flags
            .iter()
            .filter(|f| q.as_ref().is_none_or(|q| f.name.to_lowercase().contains(q)))
            .filter(|_| evaluator.is_none_or(|e| e == EVALUATOR))
            .filter(|f| enabled.is_none_or(|e| f.enabled == e))
            .filter(|f| {
                tags.as_ref().is_none_or(|wanted| {
                    f.tags.iter().any(|u| {
                        all.tags
                            .iter()
                            .any(|t| &t.uuid == u && wanted.contains(&t.name.as_str()))
                    })
                })
            })
            .collect()
    };
    let items: Vec<FlagRes> = chosen.into_iter().map(FlagRes).collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/patientflags/flag",
        items.iter().map(|r| r as &dyn Resource),
    )
}

/// One definition by uuid (`render_found` renders it, or finds none: 404).
fn one_definition(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    render_found: impl FnOnce(&Ctx, &Rep) -> Option<ApiResult<Value>>,
) -> ApiResult<Response> {
    require_definitions(caller)?;
    let rep = rep_of(query)?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(state, &catalog);
    Ok(crate::http::ok(
        render_found(&ctx, &rep).ok_or(ApiError::NotFound)??,
    ))
}

pub async fn read_flag(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    one_definition(&state, &caller, &query, |ctx, rep| {
        definition(ctx.catalog, &uuid).map(|f| render(&FlagRes(f), rep, ctx))
    })
}

pub async fn search_priorities(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    require_definitions(&caller)?;
    let catalog = state.catalog.load();
    let items: Vec<PriorityRes> = catalog
        .content
        .patient_flags
        .priorities
        .iter()
        .map(PriorityRes)
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/patientflags/priority",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn read_priority(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    one_definition(&state, &caller, &query, |ctx, rep| {
        priority_of(ctx, &uuid).map(|p| render(&PriorityRes(p), rep, ctx))
    })
}

pub async fn search_tags(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    require_definitions(&caller)?;
    let catalog = state.catalog.load();
    let items: Vec<TagRes> = catalog
        .content
        .patient_flags
        .tags
        .iter()
        .map(TagRes)
        .collect();
    crate::http::render_list(
        &state,
        &caller,
        &query,
        "/patientflags/tag",
        items.iter().map(|r| r as &dyn Resource),
    )
}

pub async fn read_tag(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    one_definition(&state, &caller, &query, |ctx, rep| {
        tag_of(ctx, &uuid).map(|t| render(&TagRes(t), rep, ctx))
    })
}

/// Definitions come from the content: writing them through the API is refused.
async fn read_only_definitions(caller: Caller) -> ApiResult<Response> {
    caller.require(&[MANAGE_FLAGS])?;
    Err(ApiError::BadRequest(
        "Flags, their priorities and their tags come from the content (flags/): change them there and build again"
            .to_string(),
    ))
}

pub fn routes(paths: &crate::http::Paths) -> axum::Router<Arc<AppState>> {
    use axum::routing::get;
    axum::Router::new()
        .route(
            &paths.rest("/patientflags/patientflag"),
            get(search_patient_flags),
        )
        .route(
            &paths.rest("/patientflags/patientflag/{uuid}"),
            get(read_patient_flag)
                .post(update_patient_flag)
                .delete(delete_patient_flag),
        )
        .route(
            &paths.rest("/patientflags/flag"),
            get(search_flags).post(read_only_definitions),
        )
        .route(
            &paths.rest("/patientflags/flag/{uuid}"),
            get(read_flag)
                .post(read_only_definitions)
                .delete(read_only_definitions),
        )
        .route(
            &paths.rest("/patientflags/priority"),
            get(search_priorities).post(read_only_definitions),
        )
        .route(
            &paths.rest("/patientflags/priority/{uuid}"),
            get(read_priority)
                .post(read_only_definitions)
                .delete(read_only_definitions),
        )
        .route(
            &paths.rest("/patientflags/tag"),
            get(search_tags).post(read_only_definitions),
        )
        .route(
            &paths.rest("/patientflags/tag/{uuid}"),
            get(read_tag)
                .post(read_only_definitions)
                .delete(read_only_definitions),
        )
}
