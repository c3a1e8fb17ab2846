//! The stock management module's reference resources, in its flat wire shapes:
//! `stockoperationtype`, `stockitem` with `stockitempackaginguom`, `stocksource`, `party`
//! and `userrolescope`. Operations and what they move are in `operation`.

use crate::domains::stock::store::*;
use crate::domains::stock::*;
use crate::http::AppState;
use crate::http::answer::{answer, flag, list_answer, rep_of};
use crate::http::body::{client_uuid, only_known, opt_bool, opt_ref, opt_str};
use crate::http::error::{ApiError, ApiResult};
use crate::http::repr::{Ctx, Paging, Props, Rep, Resource};
use crate::http::{Caller, JsonBody, QueryPairs, blocking, param};
use crate::store::record::{Audit, Voiding};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub(crate) const NAME_MAX: usize = 255;

/// The records a `DELETE …/{uuid}[?ids=a,b]` names: the path's, then the listed ones
/// (the module deletes several at once this way).
pub(crate) fn with_ids(uuid: String, query: &[(String, String)]) -> Vec<String> {
    let mut targets = vec![uuid];
    if let Some(ids) = param(query, "ids") {
        targets.extend(
            ids.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
        );
    }
    targets
}

pub(crate) fn bad(message: impl Into<String>) -> ApiError {
    ApiError::BadRequest(message.into())
}

/// A concept's name in the caller's locale.
pub(crate) fn concept_name(ctx: &Ctx, uuid: Option<&str>) -> Value {
    uuid.and_then(|u| ctx.catalog.concept(u))
        .map(|c| json!(crate::content::concept::ConceptRes(c).display(ctx)))
        .unwrap_or(Value::Null)
}

/// A user's given and family names (the module shows who did what by name).
pub(crate) fn user_names(ctx: &Ctx, uuid: Option<&str>) -> (Value, Value) {
    let Some(u) = uuid.and_then(|u| ctx.store.user_shared(u).ok().flatten()) else {
        return (Value::Null, Value::Null);
    };
    let name = u.person_name.trim();
    match name.split_once(' ') {
        Some((given, family)) => (json!(given), json!(family.trim())),
        None => (json!(name), Value::Null),
    }
}

pub(crate) fn location_name(ctx: &Ctx, uuid: &str) -> Value {
    ctx.catalog
        .location(uuid)
        .map(|l| json!(l.name))
        .unwrap_or(Value::Null)
}

/// The name of a party: a location's or a stock source's.
pub(crate) fn party_name(ctx: &Ctx, sources: &[SourceRecord], uuid: Option<&str>) -> Value {
    let Some(uuid) = uuid else {
        return Value::Null;
    };
    match sources.iter().find(|s| s.uuid == uuid) {
        Some(s) => json!(s.name),
        None => location_name(ctx, uuid),
    }
}

/// A decimal field: a number or numeric string, exact to four places.
pub(crate) fn opt_qty(body: &Map<String, Value>, field: &str) -> ApiResult<Option<Qty>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(v) => Qty::of_json(v).map(Some).ok_or_else(|| {
            ApiError::invalid_field(
                field,
                "error.invalid",
                &format!("{field} is a decimal number with at most four places"),
            )
        }),
    }
}

/// A text field, trimmed, at most `max` characters; blank is absent.
pub(crate) fn text(
    body: &Map<String, Value>,
    field: &str,
    max: usize,
) -> ApiResult<Option<String>> {
    match opt_str(body, field)?.map(|s| s.trim().to_string()) {
        Some(s) if s.chars().count() > max => Err(ApiError::invalid_field(
            field,
            "error.exceededMaxLengthOfField",
            &format!("{field} is longer than {max} characters"),
        )),
        Some(s) if s.is_empty() => Ok(None),
        other => Ok(other),
    }
}

fn paged<R: Resource>(
    state: &AppState,
    caller: &Caller,
    query: &[(String, String)],
    path: &str,
    items: Vec<R>,
) -> ApiResult<Response> {
    let paging = Paging::from_query(query)?;
    list_answer(state, caller, query, path, &paging, items)
}

// ---------------------------------------------------------------------------------------
// Operation types

pub struct TypeRes(pub &'static OperationType);

/// An operation type's name in the caller's language: the content's message
/// `ui.i18n.StockOperationType.name.<uuid>` (the module's metadata convention), else the
/// module's English name.
pub(crate) fn type_name(ctx: &Ctx, t: &OperationType) -> String {
    ctx.catalog
        .message(
            &format!("ui.i18n.StockOperationType.name.{}", t.uuid),
            &ctx.locale,
        )
        .unwrap_or(t.name)
        .to_string()
}

const TYPE_PROPS: Props = &[
    ("uuid", Rep::Default),
    ("name", Rep::Default),
    ("description", Rep::Default),
    ("operationType", Rep::Default),
    ("hasSource", Rep::Default),
    ("sourceType", Rep::Default),
    ("hasDestination", Rep::Default),
    ("destinationType", Rep::Default),
    ("availableWhenReserved", Rep::Default),
    ("allowExpiredBatchNumbers", Rep::Default),
    ("stockOperationTypeLocationScopes", Rep::Default),
];

impl Resource for TypeRes {
    fn alias(&self) -> &'static str {
        "stockoperationtype"
    }
    fn path(&self) -> String {
        format!("stockmanagement/stockoperationtype/{}", self.uuid())
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.0.uuid.to_string()
    }
    fn display(&self, ctx: &Ctx) -> String {
        type_name(ctx, self.0)
    }
    fn default_props(&self) -> Props {
        TYPE_PROPS
    }
    fn full_props(&self) -> Props {
        TYPE_PROPS
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let t = self.0;
        Some(match name {
            "name" => json!(type_name(ctx, t)),
            "description" => json!(t.description),
            "operationType" => json!(t.code),
            "hasSource" => json!(t.source.is_some()),
            "sourceType" => json!(t.source.map(PartyKind::name)),
            "hasDestination" => json!(t.destination.is_some()),
            "destinationType" => json!(t.destination.map(PartyKind::name)),
            "availableWhenReserved" => json!(matches!(
                t.movement,
                Movement::SignedAtSource | Movement::OutOfSource | Movement::Across | Movement::Count
            )),
            "allowExpiredBatchNumbers" => json!(t.expired_batches),
            "stockOperationTypeLocationScopes" => Value::Array(
                t.location_scopes
                    .iter()
                    .map(|(tag, source, destination)| {
                        json!({"locationTag": tag, "isSource": source, "isDestination": destination})
                    })
                    .collect(),
            ),
            _ => return None,
        })
    }
}

/// `GET stockoperationtype` — the module's nine types.
pub async fn list_types(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let items = TYPES.iter().map(TypeRes).collect();
    paged(
        &state,
        &caller,
        &query,
        "/stockmanagement/stockoperationtype",
        items,
    )
}

pub async fn read_type(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let t = TYPES
        .iter()
        .find(|t| t.uuid == uuid)
        .ok_or(ApiError::NotFound)?;
    answer(
        &state,
        &caller,
        &TypeRes(t),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

// ---------------------------------------------------------------------------------------
// Stock items and their packaging units

pub struct ItemRes<'a> {
    pub item: &'a ItemRecord,
    pub sources: &'a [SourceRecord],
    /// The suppliers' codes (every item's; the item's own are shown).
    pub references: &'a [ReferenceRecord],
    pub can_edit: bool,
}

/// An item's display name: its drug's, else its concept's, else its common name.
pub(crate) fn item_name(ctx: &Ctx, item: &ItemRecord) -> String {
    if let Some(d) = item.drug.as_deref().and_then(|d| ctx.catalog.drug(d)) {
        return d.name.clone();
    }
    if let Some(n) = item.common_name.clone() {
        return n;
    }
    concept_name(ctx, Some(&item.concept))
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The full representation; the default one is all but its last three properties.
const ITEM_FULL_PROPS: Props = &[
    ("uuid", Rep::Default),
    ("drugUuid", Rep::Default),
    ("drugName", Rep::Default),
    ("conceptUuid", Rep::Default),
    ("conceptName", Rep::Default),
    ("hasExpiration", Rep::Default),
    ("preferredVendorUuid", Rep::Default),
    ("preferredVendorName", Rep::Default),
    ("purchasePrice", Rep::Default),
    ("purchasePriceUoMUuid", Rep::Default),
    ("purchasePriceUoMName", Rep::Default),
    ("purchasePriceUoMFactor", Rep::Default),
    ("dispensingUnitName", Rep::Default),
    ("dispensingUnitUuid", Rep::Default),
    ("dispensingUnitPackagingUoMUuid", Rep::Default),
    ("dispensingUnitPackagingUoMName", Rep::Default),
    ("dispensingUnitPackagingUoMFactor", Rep::Default),
    ("defaultStockOperationsUoMUuid", Rep::Default),
    ("defaultStockOperationsUoMName", Rep::Default),
    ("defaultStockOperationsUoMFactor", Rep::Default),
    ("categoryUuid", Rep::Default),
    ("categoryName", Rep::Default),
    ("commonName", Rep::Default),
    ("acronym", Rep::Default),
    ("reorderLevel", Rep::Default),
    ("reorderLevelUoMUuid", Rep::Default),
    ("reorderLevelUoMName", Rep::Default),
    ("reorderLevelUoMFactor", Rep::Default),
    ("dateCreated", Rep::Default),
    ("creatorGivenName", Rep::Default),
    ("creatorFamilyName", Rep::Default),
    ("voided", Rep::Default),
    ("expiryNotice", Rep::Default),
    ("permission", Rep::Default),
    ("packagingUnits", Rep::Default),
    ("references", Rep::Default),
];

impl ItemRes<'_> {
    fn unit_prop(&self, unit: Option<&str>, part: &str, ctx: &Ctx) -> Value {
        let Some(u) = unit.and_then(|u| self.item.unit(u)) else {
            return Value::Null;
        };
        match part {
            "uuid" => json!(u.uuid),
            "name" => concept_name(ctx, Some(&u.packaging_uom)),
            _ => u.factor.json(),
        }
    }
}

impl Resource for ItemRes<'_> {
    fn alias(&self) -> &'static str {
        "stockitem"
    }
    fn path(&self) -> String {
        format!("stockmanagement/stockitem/{}", self.uuid())
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.item.uuid.clone()
    }
    fn display(&self, ctx: &Ctx) -> String {
        item_name(ctx, self.item)
    }
    fn default_props(&self) -> Props {
        &ITEM_FULL_PROPS[..ITEM_FULL_PROPS.len() - 3]
    }
    fn full_props(&self) -> Props {
        ITEM_FULL_PROPS
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let i = self.item;
        let (given, family) = user_names(ctx, Some(&i.audit.creator));
        Some(match name {
            "drugUuid" => json!(i.drug),
            "drugName" => json!(
                i.drug
                    .as_deref()
                    .and_then(|d| ctx.catalog.drug(d))
                    .map(|d| &d.name)
            ),
            "conceptUuid" => json!(i.concept),
            "conceptName" => concept_name(ctx, Some(&i.concept)),
            "hasExpiration" => json!(i.has_expiration),
            "preferredVendorUuid" => json!(i.preferred_vendor),
            "preferredVendorName" => party_name(ctx, self.sources, i.preferred_vendor.as_deref()),
            "purchasePrice" => i.purchase_price.map_or(Value::Null, Qty::json),
            "purchasePriceUoMUuid" => self.unit_prop(i.purchase_price_uom.as_deref(), "uuid", ctx),
            "purchasePriceUoMName" => self.unit_prop(i.purchase_price_uom.as_deref(), "name", ctx),
            "purchasePriceUoMFactor" => {
                self.unit_prop(i.purchase_price_uom.as_deref(), "factor", ctx)
            }
            "dispensingUnitName" => concept_name(ctx, i.dispensing_unit.as_deref()),
            "dispensingUnitUuid" => json!(i.dispensing_unit),
            "dispensingUnitPackagingUoMUuid" => {
                self.unit_prop(i.dispensing_unit_packaging_uom.as_deref(), "uuid", ctx)
            }
            "dispensingUnitPackagingUoMName" => {
                self.unit_prop(i.dispensing_unit_packaging_uom.as_deref(), "name", ctx)
            }
            "dispensingUnitPackagingUoMFactor" => {
                self.unit_prop(i.dispensing_unit_packaging_uom.as_deref(), "factor", ctx)
            }
            "defaultStockOperationsUoMUuid" => {
                self.unit_prop(i.default_stock_operations_uom.as_deref(), "uuid", ctx)
            }
            "defaultStockOperationsUoMName" => {
                self.unit_prop(i.default_stock_operations_uom.as_deref(), "name", ctx)
            }
            "defaultStockOperationsUoMFactor" => {
                self.unit_prop(i.default_stock_operations_uom.as_deref(), "factor", ctx)
            }
            "categoryUuid" => json!(i.category),
            "categoryName" => concept_name(ctx, i.category.as_deref()),
            "commonName" => json!(i.common_name),
            "acronym" => json!(i.acronym),
            "reorderLevel" => i.reorder_level.map_or(Value::Null, Qty::json),
            "reorderLevelUoMUuid" => self.unit_prop(i.reorder_level_uom.as_deref(), "uuid", ctx),
            "reorderLevelUoMName" => self.unit_prop(i.reorder_level_uom.as_deref(), "name", ctx),
            "reorderLevelUoMFactor" => {
                self.unit_prop(i.reorder_level_uom.as_deref(), "factor", ctx)
            }
            "dateCreated" => crate::wire::wire_datetime(&i.audit.date_created),
            "creatorGivenName" => given,
            "creatorFamilyName" => family,
            "voided" => json!(i.voiding.voided),
            "expiryNotice" => json!(i.expiry_notice),
            "permission" => json!({"canView": true, "canEdit": self.can_edit}),
            "packagingUnits" => Value::Array(
                i.packaging_units
                    .iter()
                    .filter(|u| !u.voiding.voided)
                    .map(|u| unit_json(i, u, ctx))
                    .collect(),
            ),
            "references" => Value::Array(
                self.references
                    .iter()
                    .filter(|r| r.stock_item == i.uuid && !r.voiding.voided)
                    .map(|r| crate::domains::stock::rules::reference_json(ctx, r, self.sources))
                    .collect(),
            ),
            _ => return None,
        })
    }
}

pub(crate) fn unit_json(item: &ItemRecord, u: &PackagingUnit, ctx: &Ctx) -> Value {
    json!({
        "uuid": u.uuid,
        "packagingUomUuid": u.packaging_uom,
        "packagingUomName": concept_name(ctx, Some(&u.packaging_uom)),
        "factor": u.factor.json(),
        "isDefaultStockOperationsUoM": item.default_stock_operations_uom.as_deref() == Some(u.uuid.as_str()),
        "isDispensingUnit": item.dispensing_unit_packaging_uom.as_deref() == Some(u.uuid.as_str()),
        "stockItemUuid": item.uuid,
    })
}

const ITEM_FIELDS: &[&str] = &[
    "uuid",
    "drugUuid",
    "conceptUuid",
    "hasExpiration",
    "preferredVendorUuid",
    "purchasePrice",
    "purchasePriceUoMUuid",
    "dispensingUnitUuid",
    "dispensingUnitPackagingUoMUuid",
    "defaultStockOperationsUoMUuid",
    "categoryUuid",
    "commonName",
    "acronym",
    "reorderLevel",
    "reorderLevelUoMUuid",
    "expiryNotice",
];

/// `GET stockitem[?q=][&isDrug=][&drugUuid=][&conceptUuid=][&categoryUuid=][&includeAll=]`.
pub async fn list_items(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_ITEMS])?;
    let include_all = flag(&query, "includeAll").unwrap_or(false);
    let is_drug = flag(&query, "isDrug");
    let drug = param(&query, "drugUuid").filter(|s| !s.is_empty());
    let concept = param(&query, "conceptUuid").filter(|s| !s.is_empty());
    let category = param(&query, "categoryUuid").filter(|s| !s.is_empty());
    let q = param(&query, "q")
        .map(crate::search::fold)
        .filter(|q| !q.is_empty());
    let st = state.clone();
    let (items, sources, references) = blocking(move || {
        Ok((
            store_items(&st)?,
            crate::domains::stock::store::sources(&st.store)?,
            crate::domains::stock::store::references(&st.store)?,
        ))
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let matches = |i: &ItemRecord| {
        (include_all || !i.voiding.voided)
            && is_drug.is_none_or(|d| i.is_drug == d)
            && drug.is_none_or(|d| i.drug.as_deref() == Some(d))
            && concept.is_none_or(|c| i.concept == c)
            && category.is_none_or(|c| i.category.as_deref() == Some(c))
            && q.as_deref().is_none_or(|q| {
                [
                    Some(item_name(&ctx, i)),
                    i.common_name.clone(),
                    i.acronym.clone(),
                    concept_name(&ctx, Some(&i.concept))
                        .as_str()
                        .map(str::to_string),
                ]
                .iter()
                .flatten()
                .any(|n| crate::search::fold(n).contains(q))
            })
    };
    let can_edit = caller.grants.has(MUTATE_ITEMS);
    let found: Vec<ItemRes> = items
        .iter()
        .filter(|i| matches(i))
        .map(|item| ItemRes {
            item,
            sources: &sources,
            references: &references,
            can_edit,
        })
        .collect();
    paged(&state, &caller, &query, "/stockmanagement/stockitem", found)
}

fn store_items(state: &AppState) -> ApiResult<Vec<ItemRecord>> {
    Ok(crate::domains::stock::store::items(&state.store)?)
}

/// `GET stockitem/{uuid}` (voided ones too, as the module reads them).
pub async fn read_item(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_ITEMS])?;
    let st = state.clone();
    let (item, sources, references) = blocking(move || {
        Ok((
            item(&st.store, &uuid)?.ok_or(ApiError::NotFound)?,
            crate::domains::stock::store::sources(&st.store)?,
            crate::domains::stock::store::references(&st.store)?,
        ))
    })
    .await?;
    let res = ItemRes {
        item: &item,
        sources: &sources,
        references: &references,
        can_edit: caller.grants.has(MUTATE_ITEMS),
    };
    answer(&state, &caller, &res, &rep_of(&query)?, StatusCode::OK)
}

fn concept_field(
    state: &AppState,
    body: &Map<String, Value>,
    field: &str,
) -> ApiResult<Option<Option<String>>> {
    if !body.contains_key(field) {
        return Ok(None);
    }
    match opt_ref(body, field)? {
        None => Ok(Some(None)),
        Some(c) => match state.catalog.load().concept(&c) {
            Some(concept) => Ok(Some(Some(concept.uuid.clone()))),
            None => Err(ApiError::invalid_field(
                field,
                "error.invalid",
                &format!("No concept of the content is '{c}'"),
            )),
        },
    }
}

/// A reference to one of the item's packaging units in use.
fn unit_field(
    item: &ItemRecord,
    body: &Map<String, Value>,
    field: &str,
) -> ApiResult<Option<Option<String>>> {
    if !body.contains_key(field) {
        return Ok(None);
    }
    match opt_ref(body, field)? {
        None => Ok(Some(None)),
        Some(u) if item.unit(&u).is_some() => Ok(Some(Some(u))),
        Some(u) => Err(ApiError::invalid_field(
            field,
            "error.invalid",
            &format!("'{u}' is not a packaging unit of this stock item"),
        )),
    }
}

pub(crate) fn apply_item(
    state: &AppState,
    item: &mut ItemRecord,
    body: &Map<String, Value>,
    sources: &[SourceRecord],
) -> ApiResult<()> {
    if body.contains_key("commonName") {
        item.common_name = text(body, "commonName", NAME_MAX)?;
    }
    if body.contains_key("acronym") {
        item.acronym = text(body, "acronym", NAME_MAX)?;
    }
    if let Some(b) = opt_bool(body, "hasExpiration", "")? {
        item.has_expiration = b;
    }
    if body.contains_key("expiryNotice") {
        item.expiry_notice =
            match body.get("expiryNotice") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(
                    || {
                        ApiError::invalid_field(
                            "expiryNotice",
                            "error.invalid",
                            "expiryNotice is a whole number of days",
                        )
                    },
                )?),
            };
    }
    if body.contains_key("preferredVendorUuid") {
        item.preferred_vendor = match opt_ref(body, "preferredVendorUuid")? {
            None => None,
            Some(v) if sources.iter().any(|s| s.uuid == v) => Some(v),
            Some(v) => {
                return Err(ApiError::invalid_field(
                    "preferredVendorUuid",
                    "error.invalid",
                    &format!("No stock source is '{v}'"),
                ));
            }
        };
    }
    if let Some(c) = concept_field(state, body, "dispensingUnitUuid")? {
        item.dispensing_unit = c;
    }
    if let Some(c) = concept_field(state, body, "categoryUuid")? {
        item.category = c;
    }
    if body.contains_key("purchasePrice") {
        item.purchase_price = opt_qty(body, "purchasePrice")?;
        if item.purchase_price.is_some_and(|p| p < Qty::ZERO) {
            return Err(ApiError::invalid_field(
                "purchasePrice",
                "error.invalid",
                "A purchase price is not negative",
            ));
        }
    }
    if body.contains_key("reorderLevel") {
        item.reorder_level = opt_qty(body, "reorderLevel")?;
        if item.reorder_level.is_some_and(|p| p < Qty::ZERO) {
            return Err(ApiError::invalid_field(
                "reorderLevel",
                "error.invalid",
                "A reorder level is not negative",
            ));
        }
    }
    if let Some(u) = unit_field(item, body, "purchasePriceUoMUuid")? {
        item.purchase_price_uom = u;
    }
    if let Some(u) = unit_field(item, body, "dispensingUnitPackagingUoMUuid")? {
        item.dispensing_unit_packaging_uom = u;
    }
    if let Some(u) = unit_field(item, body, "defaultStockOperationsUoMUuid")? {
        item.default_stock_operations_uom = u;
    }
    if let Some(u) = unit_field(item, body, "reorderLevelUoMUuid")? {
        item.reorder_level_uom = u;
    }
    Ok(())
}

fn put_item(state: &AppState, item: &ItemRecord) -> ApiResult<()> {
    Ok(state
        .store
        .write(|txn| crate::domains::stock::store::put_item_in(txn, item))?)
}

/// `POST stockitem`: an item for a drug of the content (`drugUuid`) or for a concept
/// (`conceptUuid`); one item per drug, one per concept among non-drug items.
pub async fn create_item(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    only_known(&body, ITEM_FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let (item, sources, references) = blocking(move || {
        let catalog = st.catalog.load();
        let drug = opt_ref(&body, "drugUuid")?;
        let concept = opt_ref(&body, "conceptUuid")?;
        let _one_writer = st.store.write_lock();
        let existing = store_items(&st)?;
        let (drug, concept) = match (drug, concept) {
            (Some(d), _) => {
                let drug = catalog.drug(&d).ok_or_else(|| {
                    ApiError::invalid_field(
                        "drugUuid",
                        "error.invalid",
                        &format!("No drug of the content is '{d}'"),
                    )
                })?;
                if existing
                    .iter()
                    .any(|i| i.drug.as_deref() == Some(&drug.uuid))
                {
                    return Err(ApiError::invalid_field(
                        "drugUuid",
                        "error.duplicate",
                        "A stock item for this drug exists already",
                    ));
                }
                let concept = catalog
                    .concept(&drug.concept)
                    .map_or(drug.concept.clone(), |c| c.uuid.clone());
                (Some(drug.uuid.clone()), concept)
            }
            (None, Some(c)) => {
                let concept = catalog.concept(&c).ok_or_else(|| {
                    ApiError::invalid_field(
                        "conceptUuid",
                        "error.invalid",
                        &format!("No concept of the content is '{c}'"),
                    )
                })?;
                if existing
                    .iter()
                    .any(|i| !i.is_drug && i.concept == concept.uuid)
                {
                    return Err(ApiError::invalid_field(
                        "conceptUuid",
                        "error.duplicate",
                        "A stock item for this concept exists already",
                    ));
                }
                (None, concept.uuid.clone())
            }
            (None, None) => {
                return Err(ApiError::invalid_field(
                    "drugUuid",
                    "error.null",
                    "A stock item is a drug (drugUuid) or a concept (conceptUuid)",
                ));
            }
        };
        let uuid = client_uuid(&body)?;
        if existing.iter().any(|i| i.uuid == uuid) {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "A stock item has this uuid already",
            ));
        }
        let sources = crate::domains::stock::store::sources(&st.store)?;
        let mut item = ItemRecord::new(uuid, drug, concept, &user, Utc::now());
        apply_item(&st, &mut item, &body, &sources)?;
        put_item(&st, &item)?;
        Ok((
            item,
            sources,
            crate::domains::stock::store::references(&st.store)?,
        ))
    })
    .await?;
    let res = ItemRes {
        item: &item,
        sources: &sources,
        references: &references,
        can_edit: true,
    };
    answer(&state, &caller, &res, &rep_of(&query)?, StatusCode::CREATED)
}

/// `POST stockitem/{uuid}`: what the module lets change (not the drug or concept).
pub async fn update_item(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    only_known(&body, ITEM_FIELDS)?;
    for fixed in ["drugUuid", "conceptUuid"] {
        if body.contains_key(fixed) {
            return Err(bad(format!("{fixed} of a stock item cannot be changed")));
        }
    }
    let user = caller.user_uuid();
    let st = state.clone();
    let (item, sources, references) = blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut item = item(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        let sources = crate::domains::stock::store::sources(&st.store)?;
        let before = item.clone();
        apply_item(&st, &mut item, &body, &sources)?;
        if item != before {
            item.audit.changed(&user, Utc::now());
            put_item(&st, &item)?;
        }
        Ok((
            item,
            sources,
            crate::domains::stock::store::references(&st.store)?,
        ))
    })
    .await?;
    let res = ItemRes {
        item: &item,
        sources: &sources,
        references: &references,
        can_edit: true,
    };
    answer(&state, &caller, &res, &rep_of(&query)?, StatusCode::OK)
}

/// `DELETE stockitem/{uuid}` voids the item (its history stays); the module refuses
/// deletion, and a purge is refused here too.
pub async fn delete_item(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    if flag(&query, "purge").unwrap_or(false) {
        return Err(bad(
            "A stock item cannot be purged: its transactions refer to it",
        ));
    }
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut item = item(&st.store, &uuid)?.ok_or(ApiError::NotFound)?;
        if !item.voiding.voided {
            item.voiding.void(&user, Utc::now(), &reason);
            put_item(&st, &item)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET stockitempackaginguom?stockItemUuid=`.
pub async fn list_units(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_ITEMS])?;
    let wanted = param(&query, "stockItemUuid").map(str::to_string);
    let st = state.clone();
    let items = blocking(move || store_items(&st)).await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let results: Vec<Value> = items
        .iter()
        .filter(|i| wanted.as_ref().is_none_or(|w| &i.uuid == w))
        .flat_map(|i| {
            i.packaging_units
                .iter()
                .filter(|u| !u.voiding.voided)
                .map(|u| unit_json(i, u, &ctx))
                .collect::<Vec<_>>()
        })
        .collect();
    Ok(crate::http::ok(json!({ "results": results })))
}

const UNIT_FIELDS: &[&str] = &["uuid", "stockItemUuid", "packagingUomUuid", "factor"];

/// Applies a packaging unit's body: its unit (a concept, one per item) and its factor (> 0).
fn apply_unit(
    state: &AppState,
    item: &ItemRecord,
    unit: &mut PackagingUnit,
    body: &Map<String, Value>,
) -> ApiResult<()> {
    if let Some(Some(c)) = concept_field(state, body, "packagingUomUuid")? {
        unit.packaging_uom = c;
    }
    if let Some(f) = opt_qty(body, "factor")? {
        unit.factor = f;
    }
    if unit.packaging_uom.is_empty() {
        return Err(ApiError::invalid_field(
            "packagingUomUuid",
            "error.null",
            "A packaging unit names its unit",
        ));
    }
    if unit.factor <= Qty::ZERO {
        return Err(ApiError::invalid_field(
            "factor",
            "error.invalid",
            "A packaging unit's factor is above zero",
        ));
    }
    if item
        .packaging_units
        .iter()
        .any(|u| u.uuid != unit.uuid && !u.voiding.voided && u.packaging_uom == unit.packaging_uom)
    {
        return Err(ApiError::invalid_field(
            "packagingUomUuid",
            "error.duplicate",
            "The stock item has this packaging unit already",
        ));
    }
    Ok(())
}

/// `POST stockitempackaginguom` (with `stockItemUuid`) and `POST stockitempackaginguom/{uuid}`.
async fn save_unit(
    state: Arc<AppState>,
    caller: Caller,
    uuid: Option<String>,
    body: Map<String, Value>,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    only_known(&body, UNIT_FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let created = uuid.is_none();
    let (item, unit) = blocking(move || {
        let _one_writer = st.store.write_lock();
        let items = store_items(&st)?;
        let now = Utc::now();
        let mut item = match &uuid {
            Some(u) => items
                .into_iter()
                .find(|i| {
                    i.packaging_units
                        .iter()
                        .any(|p| &p.uuid == u && !p.voiding.voided)
                })
                .ok_or(ApiError::NotFound)?,
            None => {
                let i = opt_ref(&body, "stockItemUuid")?.ok_or_else(|| {
                    ApiError::invalid_field(
                        "stockItemUuid",
                        "error.null",
                        "A packaging unit belongs to a stock item",
                    )
                })?;
                items.into_iter().find(|x| x.uuid == i).ok_or_else(|| {
                    ApiError::invalid_field(
                        "stockItemUuid",
                        "error.invalid",
                        &format!("No stock item is '{i}'"),
                    )
                })?
            }
        };
        let mut unit = match &uuid {
            Some(u) => item
                .packaging_units
                .iter()
                .find(|p| &p.uuid == u)
                .cloned()
                .ok_or(ApiError::NotFound)?,
            None => PackagingUnit {
                uuid: client_uuid(&body)?,
                packaging_uom: String::new(),
                factor: Qty::ZERO,
                audit: Audit::new(&user, now),
                voiding: Voiding::default(),
            },
        };
        if uuid.is_none() && item.packaging_units.iter().any(|p| p.uuid == unit.uuid) {
            return Err(ApiError::invalid_field(
                "uuid",
                "error.duplicate",
                "A packaging unit has this uuid already",
            ));
        }
        apply_unit(&st, &item, &mut unit, &body)?;
        if uuid.is_some() {
            unit.audit.changed(&user, now);
        }
        match item
            .packaging_units
            .iter_mut()
            .find(|p| p.uuid == unit.uuid)
        {
            Some(p) => *p = unit.clone(),
            None => item.packaging_units.push(unit.clone()),
        }
        item.audit.changed(&user, now);
        put_item(&st, &item)?;
        Ok((item, unit))
    })
    .await?;
    let catalog = state.catalog.load();
    let ctx = caller.ctx(&state, &catalog);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(crate::http::json(status, unit_json(&item, &unit, &ctx)))
}

pub async fn create_unit(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_unit(state, caller, None, body).await
}

pub async fn update_unit(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_unit(state, caller, Some(uuid), body).await
}

/// `DELETE stockitempackaginguom/{uuid}` voids the unit, unless the item's settings use it.
pub async fn delete_unit(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_ITEMS])?;
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut item = store_items(&st)?
            .into_iter()
            .find(|i| {
                i.packaging_units
                    .iter()
                    .any(|p| p.uuid == uuid && !p.voiding.voided)
            })
            .ok_or(ApiError::NotFound)?;
        let used = [
            &item.purchase_price_uom,
            &item.dispensing_unit_packaging_uom,
            &item.default_stock_operations_uom,
            &item.reorder_level_uom,
        ]
        .iter()
        .any(|u| u.as_deref() == Some(uuid.as_str()));
        if used {
            return Err(bad(
                "This packaging unit is one of the stock item's settings",
            ));
        }
        let now = Utc::now();
        if let Some(p) = item.packaging_units.iter_mut().find(|p| p.uuid == uuid) {
            p.voiding.void(&user, now, &reason);
        }
        item.audit.changed(&user, now);
        put_item(&st, &item)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---------------------------------------------------------------------------------------
// Stock sources

pub struct SourceRes<'a>(pub &'a SourceRecord);

const SOURCE_PROPS: Props = &[
    ("uuid", Rep::Default),
    ("name", Rep::Default),
    ("acronym", Rep::Default),
    ("sourceType", Rep::Default),
    ("retired", Rep::Default),
];

impl Resource for SourceRes<'_> {
    fn alias(&self) -> &'static str {
        "stocksource"
    }
    fn path(&self) -> String {
        format!("stockmanagement/stocksource/{}", self.uuid())
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.name.clone()
    }
    fn default_props(&self) -> Props {
        SOURCE_PROPS
    }
    fn full_props(&self) -> Props {
        SOURCE_PROPS
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let s = self.0;
        Some(match name {
            "name" => json!(s.name),
            "acronym" => json!(s.acronym),
            "sourceType" => match s.source_type.as_deref() {
                Some(t) => json!({"uuid": t, "display": concept_name(ctx, Some(t))}),
                None => Value::Null,
            },
            "retired" => json!(s.retiring.voided),
            _ => return None,
        })
    }
}

/// `GET stocksource[?q=][&sourceTypeUuid=][&includeAll=]`.
pub async fn list_sources(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let include_all = flag(&query, "includeAll").unwrap_or(false);
    let q = param(&query, "q").map(crate::search::fold);
    let source_type = param(&query, "sourceTypeUuid").map(str::to_string);
    let st = state.clone();
    let all = blocking(move || Ok(crate::domains::stock::store::sources(&st.store)?)).await?;
    let found: Vec<SourceRes> = all
        .iter()
        .filter(|s| include_all || !s.retiring.voided)
        .filter(|s| {
            source_type
                .as_ref()
                .is_none_or(|t| s.source_type.as_ref() == Some(t))
        })
        .filter(|s| {
            q.as_deref().is_none_or(|q| {
                crate::search::fold(&s.name).contains(q)
                    || s.acronym
                        .as_deref()
                        .is_some_and(|a| crate::search::fold(a).contains(q))
            })
        })
        .map(SourceRes)
        .collect();
    paged(
        &state,
        &caller,
        &query,
        "/stockmanagement/stocksource",
        found,
    )
}

pub async fn read_source(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let st = state.clone();
    let s = blocking(move || {
        crate::domains::stock::store::sources(&st.store)?
            .into_iter()
            .find(|s| s.uuid == uuid)
            .ok_or(ApiError::NotFound)
    })
    .await?;
    answer(
        &state,
        &caller,
        &SourceRes(&s),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

const SOURCE_FIELDS: &[&str] = &["uuid", "name", "acronym", "sourceType"];

async fn save_source(
    state: Arc<AppState>,
    caller: Caller,
    uuid: Option<String>,
    query: Vec<(String, String)>,
    body: Map<String, Value>,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_SOURCES])?;
    only_known(&body, SOURCE_FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let created = uuid.is_none();
    let source = blocking(move || {
        let _one_writer = st.store.write_lock();
        let all = crate::domains::stock::store::sources(&st.store)?;
        let now = Utc::now();
        let mut s = match &uuid {
            Some(u) => all
                .iter()
                .find(|s| &s.uuid == u)
                .cloned()
                .ok_or(ApiError::NotFound)?,
            None => {
                let uuid = client_uuid(&body)?;
                if all.iter().any(|s| s.uuid == uuid) || st.catalog.load().location(&uuid).is_some()
                {
                    return Err(ApiError::invalid_field(
                        "uuid",
                        "error.duplicate",
                        "A party has this uuid already",
                    ));
                }
                SourceRecord {
                    v: 1,
                    uuid,
                    name: String::new(),
                    acronym: None,
                    source_type: None,
                    audit: Audit::new(&user, now),
                    retiring: Voiding::default(),
                }
            }
        };
        let before = s.clone();
        if let Some(n) = text(&body, "name", NAME_MAX)? {
            s.name = n;
        }
        if body.contains_key("acronym") {
            s.acronym = text(&body, "acronym", NAME_MAX)?;
        }
        if let Some(t) = concept_field(&st, &body, "sourceType")? {
            s.source_type = t;
        }
        if s.name.is_empty() {
            return Err(ApiError::invalid_field(
                "name",
                "error.null",
                "A stock source has a name",
            ));
        }
        if all
            .iter()
            .any(|o| o.uuid != s.uuid && !o.retiring.voided && o.name.eq_ignore_ascii_case(&s.name))
        {
            return Err(ApiError::invalid_field(
                "name",
                "error.duplicate",
                "A stock source has this name already",
            ));
        }
        if s != before || created {
            if !created {
                s.audit.changed(&user, now);
            }
            st.store.write(|txn| put_in(txn, SOURCES, &s.uuid, &s))?;
        }
        Ok(s)
    })
    .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    answer(
        &state,
        &caller,
        &SourceRes(&source),
        &rep_of(&query)?,
        status,
    )
}

pub async fn create_source(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_source(state, caller, None, query, body).await
}

pub async fn update_source(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_source(state, caller, Some(uuid), query, body).await
}

/// `DELETE stocksource/{uuid}` retires the source; purging one is refused (operations name it).
pub async fn delete_source(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_SOURCES])?;
    if flag(&query, "purge").unwrap_or(false) {
        return Err(bad(
            "A stock source cannot be purged: operations may name it",
        ));
    }
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut s = crate::domains::stock::store::sources(&st.store)?
            .into_iter()
            .find(|s| s.uuid == uuid)
            .ok_or(ApiError::NotFound)?;
        if !s.retiring.voided {
            s.retiring.void(&user, Utc::now(), &reason);
            st.store.write(|txn| put_in(txn, SOURCES, &s.uuid, &s))?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---------------------------------------------------------------------------------------
// Parties

/// `GET party`: every location of the content and every stock source in use, as the parties
/// operations move stock between.
pub async fn list_parties(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(_query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[])?;
    let st = state.clone();
    let sources = blocking(move || Ok(crate::domains::stock::store::sources(&st.store)?)).await?;
    let catalog = state.catalog.load();
    let mut results: Vec<Value> = catalog
        .content
        .locations
        .iter()
        .filter(|l| !l.retired)
        .map(|l| {
            let tags: Vec<&str> = l
                .tags
                .iter()
                .filter_map(|t| catalog.location_tag(t).map(|t| t.name.as_str()))
                .collect();
            json!({"uuid": l.uuid, "name": l.name, "acronym": null, "locationUuid": l.uuid,
                   "stockSourceUuid": null, "tags": tags})
        })
        .collect();
    results.extend(sources.iter().filter(|s| !s.retiring.voided).map(|s| {
        json!({"uuid": s.uuid, "name": s.name, "acronym": s.acronym, "locationUuid": null,
               "stockSourceUuid": s.uuid, "tags": []})
    }));
    Ok(crate::http::ok(json!({ "results": results })))
}

// ---------------------------------------------------------------------------------------
// User role scopes

pub struct ScopeRes<'a>(pub &'a ScopeRecord);

const SCOPE_PROPS: Props = &[
    ("uuid", Rep::Default),
    ("userUuid", Rep::Default),
    ("userName", Rep::Default),
    ("userGivenName", Rep::Default),
    ("userFamilyName", Rep::Default),
    ("role", Rep::Default),
    ("permanent", Rep::Default),
    ("activeFrom", Rep::Default),
    ("activeTo", Rep::Default),
    ("enabled", Rep::Default),
    ("locations", Rep::Default),
    ("operationTypes", Rep::Default),
];

impl Resource for ScopeRes<'_> {
    fn alias(&self) -> &'static str {
        "userrolescope"
    }
    fn path(&self) -> String {
        format!("stockmanagement/userrolescope/{}", self.uuid())
    }
    fn version(&self) -> &'static str {
        "1.9"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        self.0.role.clone()
    }
    fn default_props(&self) -> Props {
        SCOPE_PROPS
    }
    fn full_props(&self) -> Props {
        SCOPE_PROPS
    }
    fn prop(&self, name: &str, _: &Rep, ctx: &Ctx) -> Option<Value> {
        let s = self.0;
        Some(match name {
            "userUuid" => json!(s.user),
            "userName" => json!(
                ctx.store
                    .user_shared(&s.user)
                    .ok()
                    .flatten()
                    .map(|u| u.username.clone())
            ),
            "userGivenName" => user_names(ctx, Some(&s.user)).0,
            "userFamilyName" => user_names(ctx, Some(&s.user)).1,
            "role" => json!(s.role),
            "permanent" => json!(s.permanent),
            "activeFrom" => s
                .active_from
                .as_deref()
                .map_or(Value::Null, crate::wire::format_date),
            "activeTo" => s
                .active_to
                .as_deref()
                .map_or(Value::Null, crate::wire::format_date),
            "enabled" => json!(s.enabled),
            "locations" => Value::Array(
                s.locations
                    .iter()
                    .map(|l| {
                        json!({"uuid": l.uuid, "locationUuid": l.location,
                               "locationName": location_name(ctx, &l.location),
                               "enableDescendants": l.enable_descendants})
                    })
                    .collect(),
            ),
            "operationTypes" => Value::Array(
                s.operation_types
                    .iter()
                    .filter_map(|t| operation_type(t))
                    .map(|t| json!({"uuid": t.uuid, "operationTypeUuid": t.uuid, "operationTypeName": type_name(ctx, t)}))
                    .collect(),
            ),
            _ => return None,
        })
    }
}

/// `GET userrolescope[?q=]`.
pub async fn list_scopes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_SCOPES])?;
    let include_all = flag(&query, "includeAll").unwrap_or(false);
    let st = state.clone();
    let all = blocking(move || Ok(scopes(&st.store)?)).await?;
    let found: Vec<ScopeRes> = all
        .iter()
        .filter(|s| include_all || !s.voiding.voided)
        .map(ScopeRes)
        .collect();
    paged(
        &state,
        &caller,
        &query,
        "/stockmanagement/userrolescope",
        found,
    )
}

pub async fn read_scope(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[VIEW_SCOPES])?;
    let st = state.clone();
    let s = blocking(move || {
        scopes(&st.store)?
            .into_iter()
            .find(|s| s.uuid == uuid && !s.voiding.voided)
            .ok_or(ApiError::NotFound)
    })
    .await?;
    answer(
        &state,
        &caller,
        &ScopeRes(&s),
        &rep_of(&query)?,
        StatusCode::OK,
    )
}

const SCOPE_FIELDS: &[&str] = &[
    "uuid",
    "userUuid",
    "role",
    "permanent",
    "activeFrom",
    "activeTo",
    "enabled",
    "locations",
    "operationTypes",
];

fn scope_date(body: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match opt_str(body, field)? {
        None => Ok(None),
        Some(s) if s.trim().is_empty() => Ok(None),
        Some(s) => {
            let day = s
                .get(..10)
                .and_then(crate::wire::parse_date)
                .ok_or_else(|| {
                    ApiError::invalid_field(field, "error.date", &format!("{field} is a date"))
                })?;
            Ok(Some(day.to_string()))
        }
    }
}

fn apply_scope(state: &AppState, s: &mut ScopeRecord, body: &Map<String, Value>) -> ApiResult<()> {
    if let Some(u) = opt_ref(body, "userUuid")? {
        let user = state.store.user_shared(&u)?.ok_or_else(|| {
            ApiError::invalid_field("userUuid", "error.invalid", &format!("No user is '{u}'"))
        })?;
        s.user = user.uuid.clone();
    }
    if let Some(r) = opt_str(body, "role")? {
        s.role = r.trim().to_string();
    }
    if let Some(p) = opt_bool(body, "permanent", "")? {
        s.permanent = p;
    }
    if let Some(e) = opt_bool(body, "enabled", "")? {
        s.enabled = e;
    }
    if body.contains_key("activeFrom") {
        s.active_from = scope_date(body, "activeFrom")?;
    }
    if body.contains_key("activeTo") {
        s.active_to = scope_date(body, "activeTo")?;
    }
    let catalog = state.catalog.load();
    if let Some(v) = body.get("locations") {
        let list = v.as_array().ok_or_else(|| bad("locations is a list"))?;
        let mut locations = Vec::new();
        for l in list {
            let o = l
                .as_object()
                .ok_or_else(|| bad("each of locations is an object"))?;
            let uuid = opt_ref(o, "locationUuid")?
                .ok_or_else(|| bad("each of locations names its locationUuid"))?;
            let location = catalog.location(&uuid).ok_or_else(|| {
                ApiError::invalid_field(
                    "locations",
                    "error.invalid",
                    &format!("No location of the content is '{uuid}'"),
                )
            })?;
            locations.push(ScopeLocation {
                uuid: opt_str(o, "uuid")?.unwrap_or_else(crate::store::record::new_uuid),
                location: location.uuid.clone(),
                enable_descendants: opt_bool(o, "enableDescendants", "locations.")?
                    .unwrap_or(false),
            });
        }
        s.locations = locations;
    }
    if let Some(v) = body.get("operationTypes") {
        let list = v
            .as_array()
            .ok_or_else(|| bad("operationTypes is a list"))?;
        let mut types = Vec::new();
        for t in list {
            let uuid = match t {
                Value::Object(o) => opt_ref(o, "operationTypeUuid")?,
                other => crate::http::body::ref_uuid(other),
            }
            .ok_or_else(|| bad("each of operationTypes names its operationTypeUuid"))?;
            let ty = TYPES.iter().find(|x| x.uuid == uuid).ok_or_else(|| {
                ApiError::invalid_field(
                    "operationTypes",
                    "error.invalid",
                    &format!("No stock operation type is '{uuid}'"),
                )
            })?;
            types.push(ty.uuid.to_string());
        }
        s.operation_types = types;
    }
    if s.user.is_empty() {
        return Err(ApiError::invalid_field(
            "userUuid",
            "error.null",
            "A user role scope names its user",
        ));
    }
    if catalog.role(&s.role).is_none() && state.access.load().role(&s.role).is_none() {
        return Err(ApiError::invalid_field(
            "role",
            "error.invalid",
            &format!("No role is '{}'", s.role),
        ));
    }
    if !s.permanent && (s.active_from.is_none() || s.active_to.is_none()) {
        return Err(ApiError::invalid_field(
            "activeFrom",
            "error.null",
            "A scope that is not permanent has the dates it is active",
        ));
    }
    if let (Some(from), Some(to)) = (&s.active_from, &s.active_to)
        && from > to
    {
        return Err(ApiError::invalid_field(
            "activeTo",
            "error.invalid",
            "activeTo is not before activeFrom",
        ));
    }
    if s.permanent {
        s.active_from = None;
        s.active_to = None;
    }
    Ok(())
}

async fn save_scope(
    state: Arc<AppState>,
    caller: Caller,
    uuid: Option<String>,
    query: Vec<(String, String)>,
    body: Map<String, Value>,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_SCOPES])?;
    only_known(&body, SCOPE_FIELDS)?;
    let user = caller.user_uuid();
    let st = state.clone();
    let created = uuid.is_none();
    let scope = blocking(move || {
        let _one_writer = st.store.write_lock();
        let all = scopes(&st.store)?;
        let now = Utc::now();
        let mut s = match &uuid {
            Some(u) => all
                .iter()
                .find(|s| &s.uuid == u && !s.voiding.voided)
                .cloned()
                .ok_or(ApiError::NotFound)?,
            None => {
                let uuid = client_uuid(&body)?;
                if all.iter().any(|s| s.uuid == uuid) {
                    return Err(ApiError::invalid_field(
                        "uuid",
                        "error.duplicate",
                        "A scope has this uuid already",
                    ));
                }
                ScopeRecord {
                    v: 1,
                    uuid,
                    user: String::new(),
                    role: String::new(),
                    permanent: true,
                    active_from: None,
                    active_to: None,
                    enabled: true,
                    locations: Vec::new(),
                    operation_types: Vec::new(),
                    audit: Audit::new(&user, now),
                    voiding: Voiding::default(),
                }
            }
        };
        apply_scope(&st, &mut s, &body)?;
        if !created {
            s.audit.changed(&user, now);
        }
        st.store.write(|txn| put_in(txn, SCOPES, &s.uuid, &s))?;
        Ok(s)
    })
    .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    answer(&state, &caller, &ScopeRes(&scope), &rep_of(&query)?, status)
}

pub async fn create_scope(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_scope(state, caller, None, query, body).await
}

pub async fn update_scope(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    save_scope(state, caller, Some(uuid), query, body).await
}

/// `DELETE userrolescope/{uuid}` voids the scope: the user loses what it allowed.
pub async fn delete_scope(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(uuid): Path<String>,
    QueryPairs(query): QueryPairs,
) -> ApiResult<Response> {
    caller.require(&[MUTATE_SCOPES])?;
    let reason = param(&query, "reason")
        .unwrap_or("web service call")
        .to_string();
    let user = caller.user_uuid();
    let st = state.clone();
    blocking(move || {
        let _one_writer = st.store.write_lock();
        let mut s = scopes(&st.store)?
            .into_iter()
            .find(|s| s.uuid == uuid && !s.voiding.voided)
            .ok_or(ApiError::NotFound)?;
        s.voiding.void(&user, Utc::now(), &reason);
        st.store.write(|txn| put_in(txn, SCOPES, &s.uuid, &s))?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// This domain's routes.
pub fn routes(paths: &crate::http::Paths) -> axum::Router<Arc<AppState>> {
    use crate::domains::stock::operation as op;
    use crate::domains::stock::report;
    use axum::routing::{get, post};
    let p = |s: &str| paths.rest(&format!("/stockmanagement/{s}"));
    axum::Router::new()
        .route(
            &paths.fhir("/InventoryItem"),
            get(crate::domains::stock::fhir::search),
        )
        .route(
            &paths.fhir("/InventoryItem/{id}"),
            get(crate::domains::stock::fhir::read),
        )
        .route(&p("stockoperationtype"), get(list_types))
        .route(&p("stockoperationtype/{uuid}"), get(read_type))
        .route(&p("stockitem"), get(list_items).post(create_item))
        .route(
            &p("stockitem/{uuid}"),
            get(read_item).post(update_item).delete(delete_item),
        )
        .route(
            &p("stockitempackaginguom"),
            get(list_units).post(create_unit),
        )
        .route(
            &p("stockitempackaginguom/{uuid}"),
            post(update_unit).delete(delete_unit),
        )
        .route(&p("stocksource"), get(list_sources).post(create_source))
        .route(
            &p("stocksource/{uuid}"),
            get(read_source).post(update_source).delete(delete_source),
        )
        .route(&p("party"), get(list_parties))
        .route(&p("userrolescope"), get(list_scopes).post(create_scope))
        .route(
            &p("userrolescope/{uuid}"),
            get(read_scope).post(update_scope).delete(delete_scope),
        )
        .route(&p("stockoperation"), get(op::list).post(op::create))
        .route(&p("stockoperation/{uuid}"), get(op::read).post(op::update))
        .route(&p("stockoperationaction"), post(op::act))
        .route(
            &p("stockoperationitem/{uuid}"),
            axum::routing::delete(op::delete_line),
        )
        .route(&p("stockoperationlink"), get(op::links))
        .route(&p("stockoperationitemcost"), get(op::item_costs))
        .route(
            &p("stockitemimport"),
            post(crate::domains::stock::import::import_items)
                .layer(axum::extract::DefaultBodyLimit::max(3 << 20)),
        )
        .route(&p("stockiteminventory"), get(op::inventory))
        .route(&p("stockitemtransaction"), get(op::transactions))
        .route(&p("stockbatch"), get(op::list_batches))
        .route(&p("report"), get(report::list_reports))
        .route(&p("report/{uuid}"), get(report::read_report))
        .route(
            &p("batchjob"),
            get(report::list_jobs).post(report::create_job),
        )
        .route(
            &p("batchjob/{uuid}"),
            get(report::read_job).delete(report::delete_job),
        )
        .route(&p("batchjobartifact"), get(report::artifact))
        .route(
            &p("stockrule"),
            get(crate::domains::stock::rules::list_rules)
                .post(crate::domains::stock::rules::create_rule),
        )
        .route(
            &p("stockrule/{uuid}"),
            get(crate::domains::stock::rules::read_rule)
                .post(crate::domains::stock::rules::update_rule)
                .delete(crate::domains::stock::rules::delete_rule),
        )
        .route(
            &p("stockitemreference"),
            get(crate::domains::stock::rules::list_references)
                .post(crate::domains::stock::rules::create_reference),
        )
        .route(
            &p("stockitemreference/{uuid}"),
            post(crate::domains::stock::rules::update_reference)
                .delete(crate::domains::stock::rules::delete_reference),
        )
        .route(
            &p("dispenserequest"),
            post(crate::domains::stock::dispense::create),
        )
}
