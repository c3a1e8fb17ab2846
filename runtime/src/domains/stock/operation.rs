//! Stock operations over REST (`stockoperation`, `stockoperationaction`) and what they
//! move: `stockiteminventory` (balances by location, item and batch), `stockitemtransaction`
//! (an item's movements) and `stockbatch`.
//!
//! An action's checks and its movements are one write transaction: the balances it checks
//! are read in the transaction that writes the movements, so the rule "no batch below zero
//! at a location" holds however many requests, or runtimes, act at once.

use crate::domains::stock::rest::{
    bad, concept_name, item_name, location_name, opt_qty, party_name, text, type_name, user_names,
};
use crate::domains::stock::store::*;
use crate::domains::stock::*;
use crate::http::AppState;
use crate::http::answer::{answer, flag, rep_of, values_answer};
use crate::http::body::{client_uuid, only_known, opt_bool, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::store::StoreResult;
use crate::store::kv::WriteTransaction;
use crate::store::record::{Audit, new_uuid};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// Who may act

/// Whether the caller may act with `privilege` on operations of `ty` at `location`: she
/// holds the privilege, and one of her scopes, enabled and in force today, names one of
/// her roles, the location (or an ancestor, with descendants) and the type.
pub(crate) fn may(
    state: &AppState,
    caller: &Caller,
    scopes: &[ScopeRecord],
    location: &str,
    ty: &OperationType,
    privilege: &str,
) -> bool {
    may_for(state, caller, scopes, location, Some(ty), privilege)
}

/// `may`, for any operation type when `ty` is `None` (what an item's rules at a location
/// need, as the module checks them).
pub(crate) fn may_for(
    state: &AppState,
    caller: &Caller,
    scopes: &[ScopeRecord],
    location: &str,
    ty: Option<&OperationType>,
    privilege: &str,
) -> bool {
    let Some(user) = caller.user.as_ref() else {
        return false;
    };
    if !caller.grants.has(privilege) {
        return false;
    }
    let today = crate::wire::today().to_string();
    let lineage = lineage(&state.catalog.load(), location);
    scopes.iter().any(|s| {
        s.user == user.uuid
            && in_force(s, &today)
            && user.roles.iter().any(|r| r.eq_ignore_ascii_case(&s.role))
            && ty.is_none_or(|ty| s.operation_types.iter().any(|t| t == ty.uuid))
            && covers(s, location, &lineage)
    })
}

/// A location and its ancestors, nearest first (a cycle in the content stops the walk).
pub(crate) fn lineage(catalog: &crate::catalog::Catalog, location: &str) -> Vec<String> {
    let mut lineage = vec![location.to_string()];
    let mut at = catalog.location(location).and_then(|l| l.parent.clone());
    while let Some(parent) = at {
        if lineage.contains(&parent) {
            break;
        }
        at = catalog.location(&parent).and_then(|l| l.parent.clone());
        lineage.push(parent);
    }
    lineage
}

/// A location and its descendants, breadth first (the content's locations form a tree; a
/// cycle stops at their number).
pub(crate) fn with_descendants(catalog: &crate::catalog::Catalog, root: &str) -> Vec<String> {
    let mut all = vec![root.to_string()];
    let mut i = 0;
    while i < all.len() && all.len() <= catalog.content.locations.len() {
        let parent = all[i].clone();
        for l in &catalog.content.locations {
            if l.parent.as_deref() == Some(parent.as_str()) && !all.contains(&l.uuid) {
                all.push(l.uuid.clone());
            }
        }
        i += 1;
    }
    all
}

/// Whether a scope is in force on `today` (`yyyy-mm-dd`): enabled, not voided, and
/// permanent or within its dates.
pub(crate) fn in_force(s: &ScopeRecord, today: &str) -> bool {
    !s.voiding.voided
        && s.enabled
        && (s.permanent
            || (s.active_from.as_deref().is_some_and(|f| f <= today)
                && s.active_to.as_deref().is_some_and(|t| t >= today)))
}

/// Whether a scope covers `location`, given its `lineage`: it names the location, or an
/// ancestor with its descendants.
pub(crate) fn covers(s: &ScopeRecord, location: &str, lineage: &[String]) -> bool {
    s.locations
        .iter()
        .any(|l| l.location == location || (l.enable_descendants && lineage.contains(&l.location)))
}

fn nopermission() -> ApiError {
    bad("You do not have permission to perform this operation at this location")
}

// ---------------------------------------------------------------------------------------
// Representation

pub struct OperationRes<'a> {
    pub op: &'a OperationRecord,
    pub items: &'a [ItemRecord],
    pub batches: &'a [BatchRecord],
    pub sources: &'a [SourceRecord],
    /// The caller's `permission` object (computed once, with her scopes).
    pub permission: Value,
}

/// The full representation; the default one is all but its last two properties (the
/// caller's permissions and the lines).
const OP_FULL_PROPS: Props = &[
    ("uuid", Rep::Default),
    ("cancelReason", Rep::Default),
    ("cancelledBy", Rep::Default),
    ("cancelledByGivenName", Rep::Default),
    ("cancelledByFamilyName", Rep::Default),
    ("cancelledDate", Rep::Default),
    ("completedBy", Rep::Default),
    ("completedByGivenName", Rep::Default),
    ("completedByFamilyName", Rep::Default),
    ("completedDate", Rep::Default),
    ("destinationUuid", Rep::Default),
    ("destinationName", Rep::Default),
    ("externalReference", Rep::Default),
    ("atLocationUuid", Rep::Default),
    ("atLocationName", Rep::Default),
    ("operationDate", Rep::Default),
    ("locked", Rep::Default),
    ("operationNumber", Rep::Default),
    ("operationOrder", Rep::Default),
    ("approvalRequired", Rep::Default),
    ("reasonUuid", Rep::Default),
    ("reasonName", Rep::Default),
    ("remarks", Rep::Default),
    ("sourceUuid", Rep::Default),
    ("sourceName", Rep::Default),
    ("status", Rep::Default),
    ("returnReason", Rep::Default),
    ("rejectionReason", Rep::Default),
    ("operationTypeUuid", Rep::Default),
    ("operationType", Rep::Default),
    ("operationTypeName", Rep::Default),
    ("responsiblePersonUuid", Rep::Default),
    ("responsiblePersonGivenName", Rep::Default),
    ("responsiblePersonFamilyName", Rep::Default),
    ("responsiblePersonOther", Rep::Default),
    ("creator", Rep::Default),
    ("dateCreated", Rep::Default),
    ("creatorGivenName", Rep::Default),
    ("creatorFamilyName", Rep::Default),
    ("requisitionStockOperationUuid", Rep::Default),
    ("submittedByGivenName", Rep::Default),
    ("submittedByFamilyName", Rep::Default),
    ("submittedDate", Rep::Default),
    ("returnedByGivenName", Rep::Default),
    ("returnedByFamilyName", Rep::Default),
    ("returnedDate", Rep::Default),
    ("rejectedByGivenName", Rep::Default),
    ("rejectedByFamilyName", Rep::Default),
    ("rejectedDate", Rep::Default),
    ("dispatchedByGivenName", Rep::Default),
    ("dispatchedByFamilyName", Rep::Default),
    ("dispatchedDate", Rep::Default),
    ("permission", Rep::Default),
    ("stockOperationItems", Rep::Default),
];

fn step_date(s: &Option<Step>) -> Value {
    s.as_ref()
        .map_or(Value::Null, |s| crate::wire::wire_datetime(&s.date))
}

fn step_by(s: &Option<Step>) -> Option<&str> {
    s.as_ref().map(|s| s.by.as_str())
}

impl OperationRes<'_> {
    fn line_json(&self, line: &OperationItem, ctx: &Ctx) -> Value {
        let item = self.items.iter().find(|i| i.uuid == line.stock_item);
        let batch = line
            .batch
            .as_deref()
            .and_then(|b| self.batches.iter().find(|x| x.uuid == b));
        let unit = |u: Option<&str>| item.and_then(|i| u.and_then(|u| i.unit(u)));
        let (uom, received, requested) = (
            unit(line.packaging_uom.as_deref()),
            unit(line.quantity_received_uom.as_deref()),
            unit(line.quantity_requested_uom.as_deref()),
        );
        json!({
            "uuid": line.uuid,
            "stockItemUuid": line.stock_item,
            "stockItemName": item.map(|i| item_name(ctx, i)),
            "commonName": item.and_then(|i| i.common_name.clone()),
            "acronym": item.and_then(|i| i.acronym.clone()),
            "hasExpiration": item.map(|i| i.has_expiration),
            "stockBatchUuid": line.batch,
            "batchNo": batch.map(|b| b.batch_no.clone()),
            "expiration": batch.and_then(|b| b.expiration.as_deref()).map_or(Value::Null, crate::wire::format_date),
            "quantity": line.quantity.map(Qty::json),
            "purchasePrice": line.purchase_price.map(Qty::json),
            "stockItemPackagingUOMUuid": line.packaging_uom,
            "stockItemPackagingUOMName": uom.map(|u| concept_name(ctx, Some(&u.packaging_uom))),
            "stockItemPackagingUOMFactor": uom.map(|u| u.factor.json()),
            "quantityReceived": line.quantity_received.map(Qty::json),
            "quantityReceivedPackagingUOMUuid": line.quantity_received_uom,
            "quantityReceivedPackagingUOMName": received.map(|u| concept_name(ctx, Some(&u.packaging_uom))),
            "quantityReceivedPackagingUOMFactor": received.map(|u| u.factor.json()),
            "quantityRequested": line.quantity_requested.map(Qty::json),
            "quantityRequestedPackagingUOMUuid": line.quantity_requested_uom,
            "quantityRequestedPackagingUOMName": requested.map(|u| concept_name(ctx, Some(&u.packaging_uom))),
            "quantityRequestedPackagingUOMFactor": requested.map(|u| u.factor.json()),
            "stockOperationUuid": self.op.uuid,
            "packagingUnits": item.map(|i| i.packaging_units.iter().filter(|u| !u.voiding.voided)
                .map(|u| crate::domains::stock::rest::unit_json(i, u, ctx)).collect::<Vec<_>>()),
        })
    }
}

impl Resource for OperationRes<'_> {
    fn alias(&self) -> &'static str {
        "stockoperation"
    }
    fn path(&self) -> String {
        format!("stockmanagement/stockoperation/{}", self.uuid())
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.op.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.op.number.clone()
    }
    fn default_props(&self) -> Props {
        &OP_FULL_PROPS[..OP_FULL_PROPS.len() - 2]
    }
    fn full_props(&self) -> Props {
        OP_FULL_PROPS
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let o = self.op;
        let ty = operation_type(&o.operation_type);
        let s = &o.steps;
        let names = |u: Option<&str>| user_names(ctx, u);
        Some(match name {
            "cancelReason" => json!(o.cancel_reason),
            "cancelledBy" => json!(step_by(&s.cancelled)),
            "cancelledByGivenName" => names(step_by(&s.cancelled)).0,
            "cancelledByFamilyName" => names(step_by(&s.cancelled)).1,
            "cancelledDate" => step_date(&s.cancelled),
            "completedBy" => json!(step_by(&s.completed)),
            "completedByGivenName" => names(step_by(&s.completed)).0,
            "completedByFamilyName" => names(step_by(&s.completed)).1,
            "completedDate" => step_date(&s.completed),
            "destinationUuid" => json!(o.destination),
            "destinationName" => party_name(ctx, self.sources, o.destination.as_deref()),
            "externalReference" => json!(o.external_reference),
            "atLocationUuid" => json!(o.at_location),
            "atLocationName" => location_name(ctx, &o.at_location),
            "operationDate" => crate::wire::wire_datetime(&o.operation_date),
            "locked" => json!(!o.updateable()),
            "operationNumber" => json!(o.number),
            "operationOrder" => json!(1),
            "approvalRequired" => json!(o.approval_required),
            "reasonUuid" => json!(o.reason),
            "reasonName" => concept_name(ctx, o.reason.as_deref()),
            "remarks" => json!(o.remarks),
            "sourceUuid" => json!(o.source),
            "sourceName" => party_name(ctx, self.sources, o.source.as_deref()),
            "status" => json!(o.status),
            "returnReason" => json!(o.return_reason),
            "rejectionReason" => json!(o.rejection_reason),
            "operationTypeUuid" => json!(o.operation_type),
            "operationType" => json!(ty.map(|t| t.code)),
            "operationTypeName" => json!(ty.map(|t| type_name(ctx, t))),
            "responsiblePersonUuid" => json!(o.responsible_person),
            "responsiblePersonGivenName" => names(o.responsible_person.as_deref()).0,
            "responsiblePersonFamilyName" => names(o.responsible_person.as_deref()).1,
            "responsiblePersonOther" => json!(o.responsible_person_other),
            "creator" => json!(o.audit.creator),
            "dateCreated" => crate::wire::wire_datetime(&o.audit.date_created),
            "creatorGivenName" => names(Some(&o.audit.creator)).0,
            "creatorFamilyName" => names(Some(&o.audit.creator)).1,
            "requisitionStockOperationUuid" => json!(o.requisition),
            "submittedByGivenName" => names(step_by(&s.submitted)).0,
            "submittedByFamilyName" => names(step_by(&s.submitted)).1,
            "submittedDate" => step_date(&s.submitted),
            "returnedByGivenName" => names(step_by(&s.returned)).0,
            "returnedByFamilyName" => names(step_by(&s.returned)).1,
            "returnedDate" => step_date(&s.returned),
            "rejectedByGivenName" => names(step_by(&s.rejected)).0,
            "rejectedByFamilyName" => names(step_by(&s.rejected)).1,
            "rejectedDate" => step_date(&s.rejected),
            "dispatchedByGivenName" => names(step_by(&s.dispatched)).0,
            "dispatchedByFamilyName" => names(step_by(&s.dispatched)).1,
            "dispatchedDate" => step_date(&s.dispatched),
            "permission" => self.permission.clone(),
            "stockOperationItems" => {
                Value::Array(o.items.iter().map(|l| self.line_json(l, ctx)).collect())
            }
            _ => return None,
        })
    }
}

/// The caller's `permission` object on an operation (the module's).
fn permission(
    state: &AppState,
    caller: &Caller,
    scopes: &[ScopeRecord],
    o: &OperationRecord,
) -> Value {
    let Some(ty) = operation_type(&o.operation_type) else {
        return json!({"canView": true});
    };
    let at = |p| may(state, caller, scopes, &o.at_location, ty, p);
    let destination = o
        .destination
        .as_deref()
        .filter(|d| state.catalog.load().location(d).is_some());
    let can_edit = o.updateable() && at(MUTATE_OPERATIONS);
    let can_approve = o.status == SUBMITTED && at(APPROVE_OPERATIONS);
    let can_receive = ty.dispatched
        && o.status == DISPATCHED
        && destination.is_some_and(|d| may(state, caller, scopes, d, ty, RECEIVE_ITEMS));
    let issue = operation_type("stockissue").expect("the module's types include issues");
    let can_issue = ty.movement == Movement::Request
        && o.status == COMPLETED
        && destination.is_some_and(|d| may(state, caller, scopes, d, issue, MUTATE_OPERATIONS));
    json!({
        "canView": true,
        "canEdit": can_edit,
        "canApprove": can_approve,
        "canReceiveItems": can_receive,
        "canDisplayReceivedItems": ty.dispatched && (o.status == DISPATCHED || o.steps.dispatched.is_some()),
        "isRequisitionAndCanIssueStock": can_issue,
        "canUpdateBatchInformation": false,
    })
}

/// What a representation of operations needs besides them.
struct Lookups {
    items: Vec<ItemRecord>,
    batches: Vec<BatchRecord>,
    sources: Vec<SourceRecord>,
    scopes: Vec<ScopeRecord>,
}

fn lookups(state: &AppState) -> ApiResult<Lookups> {
    Ok(Lookups {
        items: items(&state.store)?,
        batches: batches(&state.store)?,
        sources: sources(&state.store)?,
        scopes: scopes(&state.store)?,
    })
}

fn operation_answer(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    o: &OperationRecord,
    l: &Lookups,
    status: StatusCode,
) -> ApiResult<Response> {
    let res = OperationRes {
        op: o,
        items: &l.items,
        batches: &l.batches,
        sources: &l.sources,
        permission: permission(state, caller, &l.scopes, o),
    };
    answer(state, caller, &res, &rep_of(query)?, status)
}

// ---------------------------------------------------------------------------------------
// Reading operations

/// `GET stockoperation[?operationTypeUuid=][&status=A,B][&locationUuid=][&stockItemUuid=]
/// [&operationDateMin=][&operationDateMax=][&q=<number>]`, newest first.
pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_OPERATIONS])?;
    let paging = Paging::from_query(&query)?;
    let types: Option<Vec<String>> = param(&query, "operationTypeUuid")
        .filter(|s| !s.is_empty())
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    let statuses: Option<Vec<String>> =
        param(&query, "status").filter(|s| !s.is_empty()).map(|s| {
            s.split(',')
                .map(|x| x.trim().to_ascii_uppercase())
                .collect()
        });
    if let Some(bad_status) = statuses
        .iter()
        .flatten()
        .find(|s| !STATUSES.contains(&s.as_str()))
    {
        return Err(bad(format!("Unknown stock operation status: {bad_status}")));
    }
    let location = param(&query, "locationUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let item = param(&query, "stockItemUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let q = param(&query, "q")
        .map(str::to_lowercase)
        .filter(|s| !s.is_empty());
    let day = |name| -> ApiResult<Option<String>> {
        param(&query, name)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.get(..10)
                    .and_then(crate::wire::parse_date)
                    .map(|d| d.to_string())
                    .ok_or_else(|| bad(format!("{name} is a date")))
            })
            .transpose()
    };
    let (from, to) = (day("operationDateMin")?, day("operationDateMax")?);
    let st = state.clone();
    let (all, l) = blocking(move || Ok((operations(&st.store)?, lookups(&st)?))).await?;
    let found: Vec<&OperationRecord> = all
        .iter()
        .filter(|o| types.as_ref().is_none_or(|t| t.contains(&o.operation_type)))
        .filter(|o| statuses.as_ref().is_none_or(|s| s.contains(&o.status)))
        .filter(|o| {
            location.as_ref().is_none_or(|l| {
                &o.at_location == l
                    || o.source.as_ref() == Some(l)
                    || o.destination.as_ref() == Some(l)
            })
        })
        .filter(|o| {
            item.as_ref()
                .is_none_or(|i| o.items.iter().any(|x| &x.stock_item == i))
        })
        .filter(|o| {
            q.as_ref()
                .is_none_or(|q| o.number.to_lowercase().contains(q))
        })
        .filter(|o| {
            from.as_ref()
                .is_none_or(|f| o.operation_date.as_str() >= f.as_str())
        })
        .filter(|o| {
            to.as_ref()
                .is_none_or(|t| &o.operation_date[..10.min(o.operation_date.len())] <= t.as_str())
        })
        .collect();
    let items: Vec<OperationRes> = found
        .into_iter()
        .map(|op| OperationRes {
            op,
            items: &l.items,
            batches: &l.batches,
            sources: &l.sources,
            permission: permission(&state, &caller, &l.scopes, op),
        })
        .collect();
    crate::http::answer::list_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/stockoperation",
        &paging,
        items,
    )
}

pub async fn read(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_OPERATIONS])?;
    let st = state.clone();
    let (o, l) = blocking(move || {
        Ok((
            operation(&st.store, &uuid)?.ok_or(ApiError::NotFound)?,
            lookups(&st)?,
        ))
    })
    .await?;
    operation_answer(&state, &caller, &query, &o, &l, StatusCode::OK)
}

// ---------------------------------------------------------------------------------------
// Writing operations

const OP_FIELDS: &[&str] = &[
    "uuid",
    "operationTypeUuid",
    "atLocationUuid",
    "sourceUuid",
    "destinationUuid",
    "operationDate",
    "externalReference",
    "remarks",
    "reasonUuid",
    "responsiblePersonUuid",
    "responsiblePersonOther",
    "approvalRequired",
    "requisitionStockOperationUuid",
    "stockOperationItems",
];

const LINE_FIELDS: &[&str] = &[
    "uuid",
    "stockItemUuid",
    "stockBatchUuid",
    "batchNo",
    "expiration",
    "quantity",
    "stockItemPackagingUOMUuid",
    "purchasePrice",
    "quantityRequested",
    "quantityRequestedPackagingUOMUuid",
    "hasExpiration",
];

/// A party of an operation: a location of the content for `Location`, a stock source for
/// `Other`.
fn party(
    state: &AppState,
    sources: &[SourceRecord],
    body: &Map<String, Value>,
    field: &str,
    kind: Option<PartyKind>,
    tags: &[&str],
) -> ApiResult<Option<String>> {
    let given = opt_ref(body, field)?;
    let catalog = state.catalog.load();
    if let (Some(PartyKind::Location), Some(p), false) = (kind, &given, tags.is_empty()) {
        let tagged = catalog.location(p).is_some_and(|l| {
            l.tags.iter().any(|t| {
                catalog
                    .location_tag(t)
                    .is_some_and(|t| tags.contains(&t.name.as_str()))
            })
        });
        if catalog.location(p).is_some() && !tagged {
            return Err(ApiError::invalid_field(
                field,
                "error.invalid",
                &format!(
                    "This operation's {field} is a location tagged {}",
                    tags.join(" or ")
                ),
            ));
        }
    }
    match (kind, given) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(ApiError::invalid_field(
            field,
            "error.invalid",
            &format!("This operation type has no {field}"),
        )),
        (Some(_), None) => Err(ApiError::invalid_field(
            field,
            "error.null",
            &format!("This operation type needs its {field}"),
        )),
        (Some(PartyKind::Location), Some(p)) => state
            .catalog
            .load()
            .location(&p)
            .map(|l| Some(l.uuid.clone()))
            .ok_or_else(|| {
                ApiError::invalid_field(
                    field,
                    "error.invalid",
                    &format!("No location of the content is '{p}'"),
                )
            }),
        (Some(PartyKind::Other), Some(p)) => sources
            .iter()
            .find(|s| s.uuid == p && !s.retiring.voided)
            .map(|s| Some(s.uuid.clone()))
            .ok_or_else(|| {
                ApiError::invalid_field(
                    field,
                    "error.invalid",
                    &format!("No stock source is '{p}'"),
                )
            }),
    }
}

/// Reads an operation's header and lines from a body, checking each against the type's
/// rules; batches a receipt names for the first time are returned to be made with it.
fn apply_operation(
    state: &AppState,
    o: &mut OperationRecord,
    ty: &OperationType,
    body: &Map<String, Value>,
    l: &Lookups,
    user: &str,
) -> ApiResult<Vec<BatchRecord>> {
    let catalog = state.catalog.load();
    // The tags the type's location scopes give each side (the module's validator).
    let side = |source: bool| -> Vec<&str> {
        ty.location_scopes
            .iter()
            .filter(|(_, s, d)| if source { *s } else { *d })
            .map(|(tag, _, _)| *tag)
            .collect()
    };
    if body.contains_key("sourceUuid") || o.source.is_none() {
        o.source = party(
            state,
            &l.sources,
            body,
            "sourceUuid",
            ty.source,
            &side(true),
        )?;
    }
    if body.contains_key("destinationUuid") || o.destination.is_none() {
        o.destination = party(
            state,
            &l.sources,
            body,
            "destinationUuid",
            ty.destination,
            &side(false),
        )?;
    }
    // Where the operation happens, and where its permissions are checked: its source when
    // that is a location, else its destination (the module sets it so, whatever is sent).
    o.at_location = match (ty.source, ty.destination) {
        (Some(PartyKind::Location), _) => o.source.clone(),
        (_, Some(PartyKind::Location)) => o.destination.clone(),
        _ => None,
    }
    .unwrap_or_default();
    if o.source.is_some() && o.source == o.destination {
        return Err(ApiError::invalid_field(
            "destinationUuid",
            "error.invalid",
            "The source and the destination are different",
        ));
    }
    if let Some(d) = opt_str(body, "operationDate")? {
        let t = crate::wire::parse_datetime(&d)
            .or_else(|| {
                crate::wire::parse_date(&d)
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .map(|t| t.and_utc())
            })
            .ok_or_else(|| {
                ApiError::invalid_field("operationDate", "error.date", "operationDate is a date")
            })?;
        if t > Utc::now() + chrono::Duration::minutes(5) {
            return Err(ApiError::invalid_field(
                "operationDate",
                "error.date",
                "operationDate is not in the future",
            ));
        }
        o.operation_date = crate::wire::datetime_key(t);
    }
    if body.contains_key("remarks") {
        o.remarks = text(body, "remarks", 1024)?;
    }
    if body.contains_key("externalReference") {
        o.external_reference = text(body, "externalReference", 255)?;
    }
    if body.contains_key("responsiblePersonOther") {
        o.responsible_person_other = text(body, "responsiblePersonOther", 150)?;
    }
    if body.contains_key("responsiblePersonUuid") {
        o.responsible_person = match opt_ref(body, "responsiblePersonUuid")? {
            None => None,
            Some(u) => Some(
                state
                    .store
                    .user_shared(&u)?
                    .map(|u| u.uuid.clone())
                    .ok_or_else(|| {
                        ApiError::invalid_field(
                            "responsiblePersonUuid",
                            "error.invalid",
                            &format!("No user is '{u}'"),
                        )
                    })?,
            ),
        };
    }
    if let Some(a) = opt_bool(body, "approvalRequired", "")? {
        o.approval_required = a;
    }
    if body.contains_key("reasonUuid") {
        o.reason = match opt_ref(body, "reasonUuid")? {
            None => None,
            Some(r) => Some(catalog.concept(&r).map(|c| c.uuid.clone()).ok_or_else(|| {
                ApiError::invalid_field(
                    "reasonUuid",
                    "error.invalid",
                    &format!("No concept of the content is '{r}'"),
                )
            })?),
        };
    }
    if ty.requires_reason && o.reason.is_none() {
        return Err(ApiError::invalid_field(
            "reasonUuid",
            "error.null",
            &format!("A {} gives its reason", ty.name.to_lowercase()),
        ));
    }
    let mut new_batches: Vec<BatchRecord> = Vec::new();
    if let Some(lines) = body.get("stockOperationItems") {
        let lines = lines
            .as_array()
            .ok_or_else(|| bad("stockOperationItems is a list"))?;
        let mut out = Vec::with_capacity(lines.len());
        for (n, line) in lines.iter().enumerate() {
            let at = |field: &str| format!("stockOperationItems[{n}].{field}");
            let b = line
                .as_object()
                .ok_or_else(|| bad(format!("stockOperationItems[{n}] is an object")))?;
            only_known(b, LINE_FIELDS)?;
            let existing =
                opt_str(b, "uuid")?.and_then(|u| o.items.iter().find(|x| x.uuid == u).cloned());
            let item_uuid = opt_ref(b, "stockItemUuid")?
                .or_else(|| existing.as_ref().map(|e| e.stock_item.clone()))
                .ok_or_else(|| {
                    ApiError::invalid_field(
                        &at("stockItemUuid"),
                        "error.null",
                        "Each line names its stock item",
                    )
                })?;
            let item = l
                .items
                .iter()
                .find(|i| i.uuid == item_uuid && !i.voiding.voided)
                .ok_or_else(|| {
                    ApiError::invalid_field(
                        &at("stockItemUuid"),
                        "error.invalid",
                        &format!("No stock item in use is '{item_uuid}'"),
                    )
                })?;
            let mut line = existing.unwrap_or_else(|| OperationItem {
                uuid: new_uuid(),
                stock_item: item.uuid.clone(),
                batch: None,
                quantity: None,
                packaging_uom: None,
                purchase_price: None,
                quantity_received: None,
                quantity_received_uom: None,
                quantity_requested: None,
                quantity_requested_uom: None,
            });
            let quantity = opt_qty(b, "quantity").map_err(|_| {
                ApiError::invalid_field(
                    &at("quantity"),
                    "error.invalid",
                    "A quantity is a decimal number",
                )
            })?;
            match quantity {
                None if !ty.quantity_optional() => {
                    return Err(ApiError::invalid_field(
                        &at("quantity"),
                        "error.null",
                        "Each line has its quantity",
                    ));
                }
                Some(q) if q < Qty::ZERO && !ty.negative_allowed() => {
                    return Err(ApiError::invalid_field(
                        &at("quantity"),
                        "error.invalid",
                        "A quantity is not negative here",
                    ));
                }
                Some(q) if q == Qty::ZERO && ty.movement != Movement::Count => {
                    return Err(ApiError::invalid_field(
                        &at("quantity"),
                        "error.invalid",
                        "A quantity is not zero",
                    ));
                }
                _ => {}
            }
            line.quantity = quantity;
            if quantity.is_some() {
                let unit = opt_ref(b, "stockItemPackagingUOMUuid")?.ok_or_else(|| {
                    ApiError::invalid_field(
                        &at("stockItemPackagingUOMUuid"),
                        "error.null",
                        "A quantity is in a packaging unit of the item",
                    )
                })?;
                let u = item.unit(&unit).ok_or_else(|| {
                    ApiError::invalid_field(
                        &at("stockItemPackagingUOMUuid"),
                        "error.invalid",
                        &format!("'{unit}' is not a packaging unit of this stock item"),
                    )
                })?;
                if quantity.and_then(|q| q.times(u.factor)).is_none() {
                    return Err(ApiError::invalid_field(
                        &at("quantity"),
                        "error.invalid",
                        "The quantity in base units is not exact",
                    ));
                }
                line.packaging_uom = Some(u.uuid.clone());
            }
            if ty.captures_price {
                line.purchase_price = opt_qty(b, "purchasePrice")?;
                if line.purchase_price.is_some_and(|p| p < Qty::ZERO) {
                    return Err(ApiError::invalid_field(
                        &at("purchasePrice"),
                        "error.invalid",
                        "A price is not negative",
                    ));
                }
            }
            if ty.movement == Movement::Across && ty.code == "stockissue" {
                line.quantity_requested = opt_qty(b, "quantityRequested")?;
                line.quantity_requested_uom = opt_ref(b, "quantityRequestedPackagingUOMUuid")?
                    .filter(|u| item.unit(u).is_some());
            }
            if ty.needs_batch() {
                let batch = opt_ref(b, "stockBatchUuid")?.ok_or_else(|| {
                    ApiError::invalid_field(
                        &at("stockBatchUuid"),
                        "error.null",
                        "Each line names the batch it moves",
                    )
                })?;
                let found = l
                    .batches
                    .iter()
                    .find(|x| x.uuid == batch && x.stock_item == item.uuid)
                    .ok_or_else(|| {
                        ApiError::invalid_field(
                            &at("stockBatchUuid"),
                            "error.invalid",
                            &format!("No batch of this stock item is '{batch}'"),
                        )
                    })?;
                if !ty.expired_batches
                    && found
                        .expiration
                        .as_deref()
                        .is_some_and(|e| e < crate::wire::today().to_string().as_str())
                {
                    return Err(ApiError::invalid_field(
                        &at("stockBatchUuid"),
                        "error.invalid",
                        &format!(
                            "Batch {} expired on {}",
                            found.batch_no,
                            found.expiration.as_deref().unwrap_or_default()
                        ),
                    ));
                }
                line.batch = Some(found.uuid.clone());
            } else if ty.new_batches {
                let batch_no = text(b, "batchNo", 50)?.ok_or_else(|| {
                    ApiError::invalid_field(
                        &at("batchNo"),
                        "error.null",
                        "Each line gives its batch number",
                    )
                })?;
                let expiration = match opt_str(b, "expiration")? {
                    Some(e) if !e.trim().is_empty() => Some(
                        e.get(..10)
                            .and_then(crate::wire::parse_date)
                            .ok_or_else(|| {
                                ApiError::invalid_field(
                                    &at("expiration"),
                                    "error.date",
                                    "expiration is a date",
                                )
                            })?
                            .to_string(),
                    ),
                    _ => None,
                };
                let expiration = if item.has_expiration {
                    Some(expiration.ok_or_else(|| {
                        ApiError::invalid_field(
                            &at("expiration"),
                            "error.null",
                            "This stock item expires: each batch has its expiry date",
                        )
                    })?)
                } else {
                    None
                };
                let same = |x: &BatchRecord| {
                    x.stock_item == item.uuid
                        && x.batch_no.eq_ignore_ascii_case(&batch_no)
                        && x.expiration == expiration
                };
                if let Some(x) = l.batches.iter().chain(new_batches.iter()).find(|x| same(x)) {
                    line.batch = Some(x.uuid.clone());
                } else {
                    if l.batches.iter().chain(new_batches.iter()).any(|x| {
                        x.stock_item == item.uuid && x.batch_no.eq_ignore_ascii_case(&batch_no)
                    }) {
                        return Err(ApiError::invalid_field(
                            &at("expiration"),
                            "error.invalid",
                            &format!(
                                "Batch {batch_no} of this item is known with another expiry date"
                            ),
                        ));
                    }
                    let batch = BatchRecord {
                        v: 1,
                        uuid: new_uuid(),
                        stock_item: item.uuid.clone(),
                        batch_no,
                        expiration,
                        audit: Audit::new(user, Utc::now()),
                    };
                    line.batch = Some(batch.uuid.clone());
                    new_batches.push(batch);
                }
            }
            out.push(line);
        }
        o.items = out;
    }
    if o.items.is_empty() {
        return Err(ApiError::invalid_field(
            "stockOperationItems",
            "error.null",
            "An operation has at least one line",
        ));
    }
    Ok(new_batches)
}

/// `POST stockoperation`: a new operation (`NEW`), by someone whose scope allows the type
/// at the location.
pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_OPERATIONS])?;
    only_known(&body, OP_FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let c = caller.clone();
    let (o, l) = blocking(move || {
        let ty_uuid = opt_ref(&body, "operationTypeUuid")?.ok_or_else(|| {
            ApiError::invalid_field(
                "operationTypeUuid",
                "error.null",
                "An operation has its type",
            )
        })?;
        let ty = TYPES.iter().find(|t| t.uuid == ty_uuid).ok_or_else(|| {
            ApiError::invalid_field(
                "operationTypeUuid",
                "error.invalid",
                &format!("No stock operation type is '{ty_uuid}'"),
            )
        })?;
        let _one_writer = st.store.write_lock();
        let l = lookups(&st)?;
        let now = Utc::now();
        let mut o = OperationRecord {
            v: 1,
            uuid: client_uuid(&body)?,
            number: String::new(),
            operation_type: ty.uuid.to_string(),
            status: NEW.into(),
            at_location: String::new(),
            source: None,
            destination: None,
            operation_date: crate::wire::datetime_key(now),
            external_reference: None,
            remarks: None,
            reason: None,
            responsible_person: None,
            responsible_person_other: None,
            approval_required: false,
            requisition: None,
            items: Vec::new(),
            reserved: Vec::new(),
            steps: Steps::default(),
            return_reason: None,
            rejection_reason: None,
            cancel_reason: None,
            audit: Audit::new(&user, now),
        };
        if operation(&st.store, &o.uuid)?.is_some() {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "An operation has this uuid already",
            ));
        }
        let batches = apply_operation(&st, &mut o, ty, &body, &l, &user)?;
        if !may(&st, &c, &l.scopes, &o.at_location, ty, MUTATE_OPERATIONS) {
            return Err(nopermission());
        }
        if let Some(r) = opt_ref(&body, "requisitionStockOperationUuid")? {
            let parent = operation(&st.store, &r)?.filter(|p| {
                operation_type(&p.operation_type).is_some_and(|t| t.movement == Movement::Request)
            });
            if ty.code != "stockissue" || parent.is_none() {
                return Err(ApiError::invalid_field(
                    "requisitionStockOperationUuid",
                    "error.invalid",
                    &format!("No requisition this operation can answer is '{r}'"),
                ));
            }
            o.requisition = Some(r);
        }
        st.store.write(|txn| {
            for b in &batches {
                put_in(txn, BATCHES, &b.uuid, b)?;
            }
            put_operation_in(txn, None, &mut o, ty.acronym)
        })?;
        Ok((o, lookups(&st)?))
    })
    .await?;
    operation_answer(&state, &caller, &query, &o, &l, StatusCode::CREATED)
}

/// `POST stockoperation/{uuid}`: its header and lines while `NEW` or `RETURNED`.
pub async fn update(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_OPERATIONS])?;
    only_known(&body, OP_FIELDS)?;
    if body.contains_key("operationTypeUuid") || body.contains_key("requisitionStockOperationUuid")
    {
        let old = operation(&state.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let same = opt_ref(&body, "operationTypeUuid")?.is_none_or(|t| t == old.operation_type);
        if !same {
            return Err(bad("The type of an operation cannot be changed"));
        }
    }
    let user = caller.user_uuid();
    let st = state.clone();
    let c = caller.clone();
    let (o, l) = blocking(move || {
        let _one_writer = st.store.write_lock();
        let l = lookups(&st)?;
        let old = operation(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let ty =
            operation_type(&old.operation_type).ok_or_else(|| bad("Unknown operation type"))?;
        if !old.updateable() {
            return Err(bad(
                "The stock operation cannot be changed in its current status",
            ));
        }
        if !may(&st, &c, &l.scopes, &old.at_location, ty, MUTATE_OPERATIONS) {
            return Err(nopermission());
        }
        let mut o = old.clone();
        let batches = apply_operation(&st, &mut o, ty, &body, &l, &user)?;
        if !may(&st, &c, &l.scopes, &o.at_location, ty, MUTATE_OPERATIONS) {
            return Err(nopermission());
        }
        o.audit.changed(&user, Utc::now());
        st.store.write(|txn| {
            for b in &batches {
                put_in(txn, BATCHES, &b.uuid, b)?;
            }
            put_operation_in(txn, Some(&old), &mut o, ty.acronym)
        })?;
        Ok((o, lookups(&st)?))
    })
    .await?;
    operation_answer(&state, &caller, &query, &o, &l, StatusCode::OK)
}

// ---------------------------------------------------------------------------------------
// The workflow

/// A line's quantity in base units, signed as it applies at the source when pending.
fn at_source(ty: &OperationType, item: &ItemRecord, line: &OperationItem) -> Option<Qty> {
    let q = line.quantity?;
    let factor = line
        .packaging_uom
        .as_deref()
        .and_then(|u| item.unit(u))?
        .factor;
    let base = q.times(factor)?;
    Some(match ty.movement {
        Movement::SignedAtSource => base,
        _ => -base,
    })
}

/// Who acts, and when: what every movement an action writes records.
struct Stamp<'a> {
    user: &'a str,
    now: chrono::DateTime<Utc>,
}

fn transaction(
    o: &OperationRecord,
    party: &str,
    item: &str,
    batch: &str,
    quantity: Qty,
    line: Option<&OperationItem>,
    stamp: &Stamp,
) -> TransactionRecord {
    let (user, now) = (stamp.user, stamp.now);
    TransactionRecord {
        v: 1,
        uuid: new_uuid(),
        party: party.to_string(),
        stock_item: item.to_string(),
        batch: batch.to_string(),
        quantity,
        operation: Some(o.uuid.clone()),
        operation_item: line.map(|l| l.uuid.clone()),
        packaging_uom: line.and_then(|l| l.packaging_uom.clone()),
        patient: None,
        order: None,
        encounter: None,
        date: crate::wire::datetime_key(now),
        audit: Audit::new(user, now),
    }
}

/// Takes (or, for an adjustment, gives) at the source what the operation moves when it is
/// submitted or dispatched, refusing to leave any batch there below zero. Checked against
/// the balances of `txn`, the transaction that writes the movements.
fn reserve(
    txn: &WriteTransaction,
    o: &mut OperationRecord,
    ty: &OperationType,
    l: &Lookups,
    ctx_names: &dyn Fn(&ItemRecord) -> String,
    stamp: &Stamp,
) -> StoreResult<Result<Vec<TransactionRecord>, ApiError>> {
    let Some(source) = o.source.clone() else {
        return Ok(Ok(Vec::new()));
    };
    let reserving = matches!(
        ty.movement,
        Movement::SignedAtSource | Movement::OutOfSource | Movement::Across | Movement::Count
    );
    if !reserving {
        return Ok(Ok(Vec::new()));
    }
    // Per item and batch: what the lines move, and the first line (named in movements).
    let mut groups: BTreeMap<(String, String), (Qty, usize)> = BTreeMap::new();
    for (n, line) in o.items.iter().enumerate() {
        let Some(item) = l.items.iter().find(|i| i.uuid == line.stock_item) else {
            return Ok(Err(bad(format!("Unknown stock item {}", line.stock_item))));
        };
        let batch = line.batch.clone().unwrap_or_default();
        let q = match ty.movement {
            Movement::Count => line.quantity.and_then(|q| {
                let f = line
                    .packaging_uom
                    .as_deref()
                    .and_then(|u| item.unit(u))?
                    .factor;
                q.times(f)
            }),
            _ => at_source(ty, item, line),
        };
        let Some(q) = q else {
            return Ok(Err(bad("A line's quantity in base units is not exact")));
        };
        let entry = groups
            .entry((item.uuid.clone(), batch))
            .or_insert((Qty::ZERO, n));
        let Some(sum) = entry.0.checked_add(q) else {
            return Ok(Err(bad("A quantity is too large")));
        };
        entry.0 = sum;
    }
    let mut moves = Vec::new();
    let mut short = Vec::new();
    for ((item_uuid, batch), (q, first)) in groups {
        let balance = balance_in(txn, &source, &item_uuid, &batch)?;
        let delta = match ty.movement {
            // A count: the counted quantity replaces the recorded one.
            Movement::Count => Qty(q.0 - balance.0),
            _ => q,
        };
        if balance
            .checked_add(delta)
            .is_none_or(|after| after < Qty::ZERO)
        {
            let item = l.items.iter().find(|i| i.uuid == item_uuid);
            let batch_no = l
                .batches
                .iter()
                .find(|b| b.uuid == batch)
                .map_or(String::new(), |b| b.batch_no.clone());
            short.push(format!(
                "{} batch {batch_no}: {balance} in stock, {} asked",
                item.map(ctx_names).unwrap_or_default(),
                -delta
            ));
            continue;
        }
        if delta == Qty::ZERO {
            continue;
        }
        let line = &o.items[first];
        moves.push(transaction(
            o,
            &source,
            &item_uuid,
            &batch,
            delta,
            Some(line),
            stamp,
        ));
        o.reserved.push(Reserved {
            item: line.uuid.clone(),
            stock_item: item_uuid,
            batch,
            quantity: delta,
        });
    }
    if !short.is_empty() {
        return Ok(Err(bad(format!(
            "Not enough stock at the source: the balance would fall below zero ({})",
            short.join("; ")
        ))));
    }
    Ok(Ok(moves))
}

/// Puts back at the source what the operation had reserved (a return, rejection or
/// cancellation): new transactions of the opposite sign.
fn release(o: &mut OperationRecord, stamp: &Stamp) -> Vec<TransactionRecord> {
    let Some(source) = o.source.clone() else {
        return Vec::new();
    };
    let reserved = std::mem::take(&mut o.reserved);
    reserved
        .iter()
        .map(|r| {
            let line = o.items.iter().find(|l| l.uuid == r.item).cloned();
            transaction(
                o,
                &source,
                &r.stock_item,
                &r.batch,
                -r.quantity,
                line.as_ref(),
                stamp,
            )
        })
        .collect()
}

/// What completing the operation adds: at the destination for receipts and what was
/// issued, at the source for opening stock.
fn complete(
    o: &mut OperationRecord,
    ty: &OperationType,
    l: &Lookups,
    stamp: &Stamp,
) -> ApiResult<Vec<TransactionRecord>> {
    let party = match ty.movement {
        Movement::IntoDestination | Movement::Across => o.destination.clone(),
        Movement::IntoSource => o.source.clone(),
        _ => None,
    };
    o.reserved.clear();
    let Some(party) = party else {
        return Ok(Vec::new());
    };
    let mut moves = Vec::new();
    for line in &o.items {
        let item = l
            .items
            .iter()
            .find(|i| i.uuid == line.stock_item)
            .ok_or_else(|| bad(format!("Unknown stock item {}", line.stock_item)))?;
        let (q, unit) = match (line.quantity_received, &line.quantity_received_uom) {
            (Some(q), Some(u)) => (Some(q), Some(u.as_str())),
            _ => (line.quantity, line.packaging_uom.as_deref()),
        };
        let base = q
            .zip(unit.and_then(|u| item.unit(u)))
            .and_then(|(q, u)| q.times(u.factor))
            .ok_or_else(|| bad("A line's quantity in base units is not exact"))?;
        let batch = line.batch.clone().unwrap_or_default();
        moves.push(transaction(
            o,
            &party,
            &item.uuid,
            &batch,
            base,
            Some(line),
            stamp,
        ));
    }
    Ok(moves)
}

const ACTION_FIELDS: &[&str] = &["name", "uuid", "reason", "lineItems"];

/// `POST stockoperationaction {name, uuid, reason}`: a step of the workflow.
pub async fn act(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[])?;
    only_known(&body, ACTION_FIELDS)?;
    let name = opt_str(&body, "name")?.unwrap_or_default();
    let action = Action::parse(&name).ok_or_else(|| {
        ApiError::invalid_field(
            "name",
            "error.invalid",
            &format!("Unknown stock operation action: '{name}'"),
        )
    })?;
    let uuid = opt_ref(&body, "uuid")?.ok_or_else(|| {
        ApiError::invalid_field("uuid", "error.null", "An action names its operation")
    })?;
    let reason = text(&body, "reason", 500)?;
    if matches!(action, Action::Return | Action::Reject | Action::Cancel) && reason.is_none() {
        return Err(ApiError::invalid_field(
            "reason",
            "error.null",
            "A return, rejection or cancellation gives its reason",
        ));
    }
    if body
        .get("lineItems")
        .is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty()))
    {
        return Err(bad("Receivers may not change the quantities received"));
    }
    let user = caller.user_uuid();
    let st = state.clone();
    let c = caller.clone();
    let response_body = body.clone();
    blocking(move || {
        let catalog = st.catalog.load();
        let ctx = c.ctx(&st, &catalog);
        let names = |i: &ItemRecord| item_name(&ctx, i);
        let _one_writer = st.store.write_lock();
        let l = lookups(&st)?;
        let old = operation(&st.store, &uuid)?
            .ok_or_else(|| bad(format!("Stock operation {uuid} not found")))?;
        let ty =
            operation_type(&old.operation_type).ok_or_else(|| bad("Unknown operation type"))?;
        let (privilege, target) = permitted(ty, &old.status, action).map_err(bad)?;
        let location = match target {
            Target::AtLocation => Some(old.at_location.clone()),
            Target::Destination => old.destination.clone(),
        };
        if !location.is_some_and(|loc| may(&st, &c, &l.scopes, &loc, ty, privilege)) {
            return Err(nopermission());
        }
        let now = Utc::now();
        let stamp = Stamp { user: &user, now };
        let step = Some(Step {
            by: user.clone(),
            date: crate::wire::datetime_key(now),
        });
        // The closure answers the refusal instead of failing the transaction: nothing is
        // written before every check has passed.
        let refused: Option<ApiError> = st.store.write(|txn| {
            let mut o = old.clone();
            let mut moves = Vec::new();
            let pending = action == Action::Submit
                || (old.updateable() && matches!(action, Action::Complete | Action::Dispatch));
            if pending {
                match reserve(txn, &mut o, ty, &l, &names, &stamp)? {
                    Ok(m) => moves.extend(m),
                    Err(refusal) => return Ok(Some(refusal)),
                }
            }
            match action {
                Action::Submit => {
                    o.status = SUBMITTED.into();
                    o.steps.submitted = step.clone();
                }
                Action::Dispatch => {
                    for line in &mut o.items {
                        line.quantity_received = line.quantity;
                        line.quantity_received_uom = line.packaging_uom.clone();
                    }
                    o.status = DISPATCHED.into();
                    o.steps.dispatched = step.clone();
                }
                Action::Complete | Action::Approve => {
                    match complete(&mut o, ty, &l, &stamp) {
                        Ok(m) => moves.extend(m),
                        Err(refusal) => return Ok(Some(refusal)),
                    }
                    o.status = COMPLETED.into();
                    o.steps.completed = step.clone();
                }
                Action::Return => {
                    moves.extend(release(&mut o, &stamp));
                    o.status = RETURNED.into();
                    o.steps.returned = step.clone();
                    o.return_reason = reason.clone();
                }
                Action::Reject => {
                    moves.extend(release(&mut o, &stamp));
                    o.status = REJECTED.into();
                    o.steps.rejected = step.clone();
                    o.rejection_reason = reason.clone();
                }
                Action::Cancel => {
                    moves.extend(release(&mut o, &stamp));
                    o.status = CANCELLED.into();
                    o.steps.cancelled = step.clone();
                    o.cancel_reason = reason.clone();
                }
            }
            o.audit.changed(&user, now);
            add_transactions_in(txn, &moves)?;
            put_operation_in(txn, Some(&old), &mut o, ty.acronym)?;
            Ok(None)
        })?;
        if let Some(refusal) = refused {
            return Err(refusal);
        }
        Ok(())
    })
    .await?;
    Ok(crate::http::json(
        StatusCode::CREATED,
        Value::Object(response_body),
    ))
}

// ---------------------------------------------------------------------------------------
// Inventory, transactions, batches

/// The unit an item's stock is shown in: its dispensing packaging unit, else a unit of one
/// base unit (the dispensing app sends it back as the unit of what it dispenses).
pub(crate) fn display_unit(item: &ItemRecord) -> Option<&PackagingUnit> {
    item.dispensing_unit_packaging_uom
        .as_deref()
        .and_then(|u| item.unit(u))
        .or_else(|| {
            item.packaging_units
                .iter()
                .find(|u| !u.voiding.voided && u.factor == Qty::parse("1").unwrap_or_default())
        })
}

/// An inventory group's key (party, item, batch; empty where the grouping leaves it out)
/// and its quantity.
type Group = ((String, String, String), Qty);

/// An inventory page gathered while the balances are visited in key order: adjacent
/// balances of one group are summed, and only the groups inside the page's window are
/// kept (the others are counted for the total).
struct InventoryPage {
    start: usize,
    limit: usize,
    include_empty: bool,
    current: Option<Group>,
    total: usize,
    shown: Vec<Group>,
}

impl InventoryPage {
    fn new(start: usize, limit: usize, include_empty: bool) -> InventoryPage {
        InventoryPage {
            start,
            limit,
            include_empty,
            current: None,
            total: 0,
            shown: Vec::new(),
        }
    }

    fn add(&mut self, party: &str, item: &str, batch: &str, q: Qty) {
        if let Some(((p, i, b), sum)) = &mut self.current
            && p == party
            && i == item
            && b == batch
        {
            *sum = sum.checked_add(q).unwrap_or(*sum);
            return;
        }
        // A group the page does not show lends its strings to the next one.
        let ((mut p, mut i, mut b), _) = self
            .close()
            .unwrap_or_else(|| ((String::new(), String::new(), String::new()), Qty::ZERO));
        for (to, from) in [(&mut p, party), (&mut i, item), (&mut b, batch)] {
            to.clear();
            to.push_str(from);
        }
        self.current = Some(((p, i, b), q));
    }

    /// Ends the current group: kept when inside the window, else answered for reuse.
    fn close(&mut self) -> Option<Group> {
        let group = self.current.take()?;
        if !self.include_empty && group.1 == Qty::ZERO {
            return Some(group);
        }
        self.total += 1;
        if self.total > self.start && self.shown.len() < self.limit {
            self.shown.push(group);
            return None;
        }
        Some(group)
    }

    /// The page's groups and how many there are in all.
    fn finish(mut self) -> (Vec<Group>, usize) {
        self.close();
        (self.shown, self.total)
    }
}

/// One row of an inventory answer, written straight to the answer (a page holds 50 of
/// them; building each as a JSON map first cost more than reading the stock).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct InventoryRow<'a> {
    party_uuid: Option<&'a str>,
    party_name: Value,
    location_uuid: Option<&'a str>,
    stock_item_uuid: &'a str,
    drug_uuid: Option<&'a str>,
    drug_name: Option<&'a str>,
    drug_strength: Option<&'a str>,
    concept_uuid: Option<&'a str>,
    concept_name: Value,
    common_name: Option<&'a str>,
    acronym: Option<&'a str>,
    stock_batch_uuid: Option<&'a str>,
    batch_number: Option<&'a str>,
    expiration: Value,
    quantity: Value,
    #[serde(rename = "quantityUoM")]
    quantity_uom: Value,
    #[serde(rename = "quantityUoMUuid")]
    quantity_uom_uuid: Option<&'a str>,
    quantity_factor: Value,
}

/// `GET stockiteminventory[?stockItemUuid=][&drugUuid=][&locationUuid=|&partyUuid=]
/// [&stockBatchUuid=][&groupBy=LocationStockItemBatchNo|LocationStockItem|StockItemOnly]
/// [&excludeExpired=][&includeEmpty=]`: balances in base units, from the derived balances
/// only.
pub async fn inventory(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_ITEMS])?;
    let paging = Paging::from_query(&query)?;
    let group = param(&query, "groupBy")
        .unwrap_or("LocationStockItemBatchNo")
        .to_string();
    let (by_location, by_batch) = match group.as_str() {
        "LocationStockItemBatchNo" => (true, true),
        "LocationStockItem" => (true, false),
        "StockItemOnly" => (false, false),
        other => return Err(bad(format!("Unknown groupBy: {other}"))),
    };
    // The dispensing app names its location `dispenseLocationUuid`.
    let party_param = param(&query, "partyUuid")
        .or_else(|| param(&query, "locationUuid"))
        .or_else(|| param(&query, "dispenseLocationUuid"))
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let item_param = param(&query, "stockItemUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let drug_param = param(&query, "drugUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let batch_param = param(&query, "stockBatchUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let exclude_expired = flag(&query, "excludeExpired").unwrap_or(false);
    let include_empty = flag(&query, "includeEmpty").unwrap_or(false)
        || param(&query, "emptyBatch") == Some("1")
        || flag(&query, "emptyBatch").unwrap_or(false);
    let st = state.clone();
    let p = party_param.clone();
    // One catalog for the location filter and the rows.
    let catalog = state.catalog.load_full();
    let ctx = caller.ctx(&state, &catalog);
    // Only what the answer needs is read: the balances of the party (of a drug's items
    // alone when asked by drug, one key range each), in key order, which is the answer's
    // order; then the batches of the rows only to leave the expired out, and the page's
    // items and batches by uuid.
    let cat = catalog.clone();
    let window = (paging.start, paging.limit);
    let (shown, total, page_items, page_batches, sources_read) = blocking(move || {
        let narrowed: Option<Vec<String>> = match (&drug_param, &item_param) {
            (Some(d), Some(i)) => Some(
                items_of_drug(&st.store, d)?
                    .into_iter()
                    .filter(|x| x == i)
                    .collect(),
            ),
            (Some(d), None) => Some(items_of_drug(&st.store, d)?),
            (None, Some(i)) => Some(vec![i.clone()]),
            (None, None) => None,
        };
        let today = crate::wire::today().to_string();
        let filter = BalanceFilter {
            party: p.as_deref(),
            items: narrowed.as_deref(),
            batch: batch_param.as_deref(),
            unexpired_on: exclude_expired.then_some(today.as_str()),
        };
        let mut page = InventoryPage::new(window.0, window.1, include_empty);
        if by_location {
            // Rows come in key order, so a location's rows of one item are adjacent.
            visit_balances(&st.store, &filter, |party, item, batch, q| {
                if p.is_none() && cat.location(party).is_none() {
                    return;
                }
                page.add(party, item, if by_batch { batch } else { "" }, q);
            })?;
        } else {
            let mut by_item: BTreeMap<String, Qty> = BTreeMap::new();
            visit_balances(&st.store, &filter, |party, item, _, q| {
                if p.is_none() && cat.location(party).is_none() {
                    return;
                }
                match by_item.get_mut(item) {
                    Some(g) => *g = g.checked_add(q).unwrap_or(*g),
                    None => {
                        by_item.insert(item.to_string(), q);
                    }
                }
            })?;
            for (item, q) in &by_item {
                page.add("", item, "", *q);
            }
        }
        let (shown, total) = page.finish();
        let item_uuids: Vec<&str> = shown.iter().map(|((_, i, _), _)| i.as_str()).collect();
        let batch_uuids: Vec<&str> = shown.iter().map(|((_, _, b), _)| b.as_str()).collect();
        let (its, bs) = items_and_batches(&st.store, &item_uuids, &batch_uuids)?;
        Ok((shown, total, its, bs, sources(&st.store)?))
    })
    .await?;
    let page: Vec<InventoryRow> = shown
        .iter()
        .map(|((party, item_uuid, batch_uuid), q)| {
            let item = page_items.get(item_uuid);
            let batch = page_batches.get(batch_uuid);
            let drug = item
                .and_then(|i| i.drug.as_deref())
                .and_then(|d| catalog.drug(d));
            let unit = item.and_then(display_unit);
            let party = (!party.is_empty()).then_some(party.as_str());
            InventoryRow {
                party_uuid: party,
                party_name: party_name(&ctx, &sources_read, party),
                location_uuid: party.filter(|p| catalog.location(p).is_some()),
                stock_item_uuid: item_uuid,
                drug_uuid: drug.map(|d| d.uuid.as_str()),
                drug_name: drug.map(|d| d.name.as_str()),
                drug_strength: drug.and_then(|d| d.strength.as_deref()),
                concept_uuid: item.map(|i| i.concept.as_str()),
                concept_name: concept_name(&ctx, item.map(|i| i.concept.as_str())),
                common_name: item.and_then(|i| i.common_name.as_deref()),
                acronym: item.and_then(|i| i.acronym.as_deref()),
                stock_batch_uuid: batch.map(|b| b.uuid.as_str()),
                batch_number: batch.map(|b| b.batch_no.as_str()),
                expiration: batch
                    .and_then(|b| b.expiration.as_deref())
                    .map_or(Value::Null, crate::wire::format_date),
                quantity: unit.map_or(*q, |u| q.per(u.factor)).json(),
                quantity_uom: unit
                    .map_or(Value::Null, |u| concept_name(&ctx, Some(&u.packaging_uom))),
                quantity_uom_uuid: unit.map(|u| u.uuid.as_str()),
                quantity_factor: unit.map_or(json!(1), |u| u.factor.json()),
            }
        })
        .collect();
    values_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/stockiteminventory",
        &paging,
        &page,
        total,
    )
}

/// `GET stockitemtransaction[?stockItemUuid=][&partyUuid=|&locationUuid=]
/// [&stockOperationUuid=][&dateMin=][&dateMax=]`: movements newest first.
pub async fn transactions(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_ITEMS])?;
    let paging = Paging::from_query(&query)?;
    let item = param(&query, "stockItemUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let party = param(&query, "partyUuid")
        .or_else(|| param(&query, "locationUuid"))
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let operation_uuid = param(&query, "stockOperationUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let day = |name| -> ApiResult<Option<String>> {
        param(&query, name)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.get(..10)
                    .and_then(crate::wire::parse_date)
                    .map(|d| d.to_string())
                    .ok_or_else(|| bad(format!("{name} is a date")))
            })
            .transpose()
    };
    let (from, to) = (day("dateMin")?, day("dateMax")?);
    let st = state.clone();
    let window = (paging.start, paging.limit);
    let (page, total, l, ops) = blocking(move || {
        let all_items = || -> ApiResult<Vec<String>> {
            Ok(items(&st.store)?.into_iter().map(|i| i.uuid).collect())
        };
        let wanted: Vec<String> = match (&item, &operation_uuid) {
            (Some(i), _) => vec![i.clone()],
            (None, Some(o)) => operation(&st.store, o)?
                .map(|o| {
                    o.items
                        .iter()
                        .map(|x| x.stock_item.clone())
                        .collect::<std::collections::BTreeSet<_>>()
                        .into_iter()
                        .collect()
                })
                .unwrap_or_default(),
            (None, None) => all_items()?,
        };
        let filtered =
            party.is_some() || operation_uuid.is_some() || from.is_some() || to.is_some();
        let keep = |t: &TransactionRecord| {
            party.as_ref().is_none_or(|p| &t.party == p)
                && operation_uuid
                    .as_ref()
                    .is_none_or(|o| t.operation.as_ref() == Some(o))
                && from.as_ref().is_none_or(|f| t.date.as_str() >= f.as_str())
                && to
                    .as_ref()
                    .is_none_or(|d| &t.date[..10.min(t.date.len())] <= d.as_str())
        };
        let keep: Option<&dyn Fn(&TransactionRecord) -> bool> =
            if filtered { Some(&keep) } else { None };
        let (page, total) = if wanted.len() == 1 {
            transactions_of_item(&st.store, &wanted[0], keep, window.0, window.1)?
        } else {
            // Several items: every match, merged newest first, then the page.
            let mut all = Vec::new();
            for w in &wanted {
                all.extend(transactions_of_item(&st.store, w, keep, 0, usize::MAX)?.0);
            }
            all.sort_by(|a, b| (&b.date, &b.uuid).cmp(&(&a.date, &a.uuid)));
            let total = all.len();
            (
                all.into_iter().skip(window.0).take(window.1).collect(),
                total,
            )
        };
        // What the page's rows name, read by uuid: its items and batches.
        let mut l = Lookups {
            items: Vec::new(),
            batches: Vec::new(),
            sources: sources(&st.store)?,
            scopes: Vec::new(),
        };
        for t in &page {
            if !l.items.iter().any(|i| i.uuid == t.stock_item)
                && let Some(i) = crate::domains::stock::store::item(&st.store, &t.stock_item)?
            {
                l.items.push(i);
            }
            if !l.batches.iter().any(|b| b.uuid == t.batch)
                && let Some(b) = batch(&st.store, &t.batch)?
            {
                l.batches.push(b);
            }
        }
        let mut ops: BTreeMap<String, OperationRecord> = BTreeMap::new();
        for t in &page {
            if let Some(o) = &t.operation
                && !ops.contains_key(o)
                && let Some(op) = operation(&st.store, o)?
            {
                ops.insert(o.clone(), op);
            }
        }
        Ok((page, total, l, ops))
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let results: Vec<Value> = page
        .iter()
        .map(|t| {
            let item = l.items.iter().find(|i| i.uuid == t.stock_item);
            let unit = item.and_then(|i| t.packaging_uom.as_deref().and_then(|u| i.unit(u)));
            let batch = l.batches.iter().find(|b| b.uuid == t.batch);
            let op = t.operation.as_ref().and_then(|o| ops.get(o));
            json!({
                "uuid": t.uuid,
                "dateCreated": crate::wire::wire_datetime(&t.date),
                "partyUuid": t.party,
                "partyName": party_name(&ctx, &l.sources, Some(&t.party)),
                "stockItemUuid": t.stock_item,
                "stockBatchUuid": (!t.batch.is_empty()).then_some(&t.batch),
                "stockBatchNo": batch.map(|b| &b.batch_no),
                "expiration": batch.and_then(|b| b.expiration.as_deref()).map_or(Value::Null, crate::wire::format_date),
                "quantity": t.quantity.json(),
                "stockItemPackagingUOMUuid": t.packaging_uom,
                "packagingUomName": unit.map(|u| concept_name(&ctx, Some(&u.packaging_uom))),
                "packagingUomFactor": unit.map(|u| u.factor.json()),
                "stockOperationUuid": t.operation,
                "stockOperationNumber": op.map(|o| &o.number),
                "stockOperationStatus": op.map(|o| &o.status),
                "stockOperationTypeName": op.and_then(|o| operation_type(&o.operation_type)).map(|t| type_name(&ctx, t)),
                "operationSourcePartyName": party_name(&ctx, &l.sources, op.and_then(|o| o.source.as_deref())),
                "operationDestinationPartyName": party_name(&ctx, &l.sources, op.and_then(|o| o.destination.as_deref())),
                "isPatientTransaction": t.patient.is_some(),
                "patientUuid": t.patient,
            })
        })
        .collect();
    values_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/stockitemtransaction",
        &paging,
        &results,
        total,
    )
}

/// `GET stockbatch[?stockItemUuid=][&locationUuid=][&excludeEmptyStock=][&excludeExpired=]`.
pub async fn list_batches(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_ITEMS])?;
    let paging = Paging::from_query(&query)?;
    let item = param(&query, "stockItemUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let location = param(&query, "locationUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let exclude_empty = flag(&query, "excludeEmptyStock").unwrap_or(false);
    let exclude_expired = flag(&query, "excludeExpired").unwrap_or(false);
    let st = state.clone();
    let loc = location.clone();
    let (all, stock) = blocking(move || {
        let stock = match &loc {
            Some(l) => Some(balances(&st.store, Some(l))?),
            None => None,
        };
        Ok((batches(&st.store)?, stock))
    })
    .await?;
    let today = crate::wire::today().to_string();
    let results: Vec<Value> = all
        .iter()
        .filter(|b| item.as_ref().is_none_or(|i| &b.stock_item == i))
        .filter(|b| !exclude_expired || b.expiration.as_deref().is_none_or(|e| e >= today.as_str()))
        .filter(|b| match &stock {
            None => true,
            Some(rows) => rows
                .iter()
                .any(|r| r.batch == b.uuid && (!exclude_empty || r.quantity > Qty::ZERO)),
        })
        .map(|b| {
            json!({
                "uuid": b.uuid,
                "batchNo": b.batch_no,
                "expiration": b.expiration.as_deref().map_or(Value::Null, crate::wire::format_date),
                "stockItemUuid": b.stock_item,
                "voided": false,
            })
        })
        .collect();
    let total = results.len();
    let page: Vec<Value> = results
        .into_iter()
        .skip(paging.start)
        .take(paging.limit)
        .collect();
    values_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/stockbatch",
        &paging,
        &page,
        total,
    )
}

/// `DELETE stockoperationitem/{uuid}`: a line taken off an operation still being edited (the
/// module refuses to take its last line).
pub async fn delete_line(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_OPERATIONS])?;
    let user = caller.user_uuid();
    let st = state.clone();
    let c = caller.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let old = operations(&st.store)?
            .into_iter()
            .find(|o| o.items.iter().any(|l| l.uuid == uuid))
            .ok_or(ApiError::NotFound)?;
        let ty =
            operation_type(&old.operation_type).ok_or_else(|| bad("Unknown operation type"))?;
        if !old.updateable() {
            return Err(bad(
                "The stock operation cannot be changed in its current status",
            ));
        }
        if !may(
            &st,
            &c,
            &scopes(&st.store)?,
            &old.at_location,
            ty,
            MUTATE_OPERATIONS,
        ) {
            return Err(nopermission());
        }
        if old.items.len() < 2 {
            return Err(bad("The last line of an operation cannot be deleted"));
        }
        let mut o = old.clone();
        o.items.retain(|l| l.uuid != uuid);
        o.audit.changed(&user, Utc::now());
        st.store
            .write(|txn| put_operation_in(txn, Some(&old), &mut o, ty.acronym))?;
        Ok(())
    })
    .await?;
    Ok(axum::response::IntoResponse::into_response(
        StatusCode::NO_CONTENT,
    ))
}

/// `GET stockoperationlink?q=<operation>`: the requisition an issue answers, and the issues
/// answering a requisition.
pub async fn links(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_OPERATIONS])?;
    let paging = Paging::from_query(&query)?;
    let q = param(&query, "q").unwrap_or_default().to_string();
    let st = state.clone();
    let all = blocking(move || Ok(operations(&st.store)?)).await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let type_of =
        |o: &OperationRecord| operation_type(&o.operation_type).map(|t| type_name(&ctx, t));
    let results: Vec<Value> = all
        .iter()
        .filter_map(|child| {
            let parent = all.iter().find(|p| Some(&p.uuid) == child.requisition.as_ref())?;
            (parent.uuid == q || child.uuid == q).then(|| {
                json!({
                    "uuid": format!("{}-{}", parent.uuid, child.uuid),
                    "parentUuid": parent.uuid, "parentOperationNumber": parent.number,
                    "parentOperationTypeName": type_of(parent), "parentStatus": parent.status, "parentVoided": false,
                    "childUuid": child.uuid, "childOperationNumber": child.number,
                    "childOperationTypeName": type_of(child), "childStatus": child.status, "childVoided": false,
                })
            })
        })
        .collect();
    let total = results.len();
    let page: Vec<Value> = results
        .into_iter()
        .skip(paging.start)
        .take(paging.limit)
        .collect();
    values_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/stockoperationlink",
        &paging,
        &page,
        total,
    )
}

/// `a × b`, rounded to the four places a quantity keeps (half away from zero).
pub(crate) fn product(a: Qty, b: Qty) -> Qty {
    let p = i128::from(a.0) * i128::from(b.0);
    let rounded = (p + p.signum() * 5_000) / 10_000;
    Qty(i64::try_from(rounded).unwrap_or(if p < 0 { i64::MIN } else { i64::MAX }))
}

/// What one line of an operation costs: the price the line was received at (a receipt's
/// `purchasePrice`, per the line's unit), else the item's purchase price converted from its
/// purchase unit to the line's; `null`s where neither is known.
fn line_cost(ctx: &Ctx, item: Option<&ItemRecord>, line: &OperationItem) -> Value {
    let unit = item
        .zip(line.packaging_uom.as_deref())
        .and_then(|(i, u)| i.unit(u));
    let unit_name = unit.map_or(Value::Null, |u| concept_name(ctx, Some(&u.packaging_uom)));
    let item_price = item.and_then(|i| {
        let price = i.purchase_price?;
        let per = i.unit(i.purchase_price_uom.as_deref()?)?;
        // The price of one base unit, times the line's unit's base units.
        Some(product(price, unit?.factor).per(per.factor))
    });
    let unit_cost = line.purchase_price.or(item_price);
    let total = unit_cost.zip(line.quantity).map(|(c, q)| product(c, q));
    json!({
        "uuid": line.uuid,
        "stockItemUuid": line.stock_item,
        "stockItemPackagingUOMUuid": line.packaging_uom,
        "stockItemPackagingUOMName": unit_name,
        "stockBatchUuid": line.batch,
        "batchNo": null,
        "quantity": line.quantity.map(Qty::json),
        "unitCost": unit_cost.map(Qty::json),
        "unitCostUOMUuid": unit_cost.and(line.packaging_uom.as_ref()),
        "unitCostUOMName": if unit_cost.is_some() { unit_name } else { Value::Null },
        "totalCost": total.map(Qty::json),
    })
}

/// `GET stockoperationitemcost?stockOperationUuid=<operation>`: each line's unit and total
/// cost (the print of an operation); without an operation, nothing.
pub async fn item_costs(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_OPERATIONS])?;
    let paging = Paging::from_query(&query)?;
    let wanted = param(&query, "stockOperationUuid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let st = state.clone();
    let (op, items, batches) = blocking(move || {
        let op = match &wanted {
            Some(u) => operation(&st.store, u)?,
            None => None,
        };
        Ok((op, items(&st.store)?, batches(&st.store)?))
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let results: Vec<Value> = op
        .iter()
        .flat_map(|o| o.items.iter())
        .map(|line| {
            let item = items.iter().find(|i| i.uuid == line.stock_item);
            let mut v = line_cost(&ctx, item, line);
            v["batchNo"] = json!(
                line.batch
                    .as_ref()
                    .and_then(|b| batches.iter().find(|x| &x.uuid == b))
                    .map(|b| &b.batch_no)
            );
            v
        })
        .collect();
    let total = results.len();
    let page: Vec<Value> = results
        .into_iter()
        .skip(paging.start)
        .take(paging.limit)
        .collect();
    values_answer(
        &state,
        &caller,
        &query,
        "/stockmanagement/stockoperationitemcost",
        &paging,
        &page,
        total,
    )
}
