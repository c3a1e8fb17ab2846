//! Placing an order as OpenMRS core does (`OrderServiceImpl.saveOrder`, `OrderValidator`,
//! `DrugOrderValidator`, `TestOrderValidator`): the checks, the order type when none is
//! named, the previous order stopped by a revision or a discontinuation, the refusal of a
//! second active order for the same drug, and the prescription's end from its duration.
//! A failed rule is a 400 naming the field, with core's message key as its code.

use crate::catalog::Catalog;
use crate::domains::order::{Action, DosingType, OrderClass, OrderRecord, Urgency};
use crate::http::error::{ApiError, ApiResult};
use crate::invalid::Invalid;
use crate::wire::{CLOCK_SKEW, datetime_key, parse_key};
use chrono::{DateTime, Duration, Months, Utc};
use std::collections::{HashMap, HashSet};

/// The concept sets order entry offers, from the `order.*ConceptUuid` settings (as the
/// operator or the content set them), and `drugOrder.requireOutpatientQuantity`.
#[derive(Debug, Default)]
pub struct OrderEntry {
    pub routes: Vec<String>,
    pub dosing_units: Vec<String>,
    /// The dispensing set's own members; the dosing units count as dispensing units too.
    pub dispensing_units: Vec<String>,
    pub duration_units: Vec<String>,
    pub specimen_sources: Vec<String>,
    /// Duration unit concept uuid → its SNOMED CT code (a SAME-AS mapping to a source
    /// whose HL7 code is `SCT`).
    pub snomed: HashMap<String, String>,
    pub require_outpatient_quantity: bool,
}

/// SNOMED CT's codes for the duration units core knows (`org.openmrs.Duration`).
pub const SNOMED_SECONDS: &str = "257997001";
pub const SNOMED_MINUTES: &str = "258701004";
pub const SNOMED_HOURS: &str = "258702006";
pub const SNOMED_DAYS: &str = "258703001";
pub const SNOMED_WEEKS: &str = "258705008";
pub const SNOMED_MONTHS: &str = "258706009";
pub const SNOMED_YEARS: &str = "258707000";
pub const SNOMED_RECURRING: &str = "252109000";

const SNOMED_DURATIONS: &[&str] = &[
    SNOMED_SECONDS,
    SNOMED_MINUTES,
    SNOMED_HOURS,
    SNOMED_DAYS,
    SNOMED_WEEKS,
    SNOMED_MONTHS,
    SNOMED_YEARS,
    SNOMED_RECURRING,
];

impl OrderEntry {
    pub fn of(state: &crate::http::AppState) -> OrderEntry {
        let catalog = state.catalog.load();
        let members = |setting: &str| -> Vec<String> {
            state
                .setting(setting)
                .and_then(|v| catalog.concept(v.trim()).map(|c| c.set_members.clone()))
                .unwrap_or_default()
        };
        let duration_units = members("order.durationUnitsConceptUuid");
        let sct_sources: HashSet<String> = catalog
            .content
            .concept_sources
            .iter()
            .filter(|s| {
                s.hl7_code
                    .as_deref()
                    .is_some_and(|h| h.eq_ignore_ascii_case("SCT"))
            })
            .map(|s| s.name.to_lowercase())
            .collect();
        let snomed = duration_units
            .iter()
            .filter_map(|u| {
                let c = catalog.concept(u)?;
                let code = c.mappings.iter().find(|m| {
                    m.map_type.eq_ignore_ascii_case("SAME-AS")
                        && sct_sources.contains(&m.source.to_lowercase())
                        && SNOMED_DURATIONS.contains(&m.code.as_str())
                })?;
                Some((u.clone(), code.code.clone()))
            })
            .collect();
        OrderEntry {
            routes: members("order.drugRoutesConceptUuid"),
            dosing_units: members("order.drugDosingUnitsConceptUuid"),
            dispensing_units: members("order.drugDispensingUnitsConceptUuid"),
            duration_units,
            specimen_sources: members("order.testSpecimenSourcesConceptUuid"),
            snomed,
            require_outpatient_quantity: state
                .setting("drugOrder.requireOutpatientQuantity")
                .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false")),
        }
    }

    /// Dispensing units as core counts them: the dispensing set and the dosing units.
    pub fn all_dispensing_units(&self) -> Vec<String> {
        let mut all = self.dispensing_units.clone();
        for u in &self.dosing_units {
            if !all.contains(u) {
                all.push(u.clone());
            }
        }
        all
    }
}

/// What placing an order needs besides the order.
pub struct Placing<'a> {
    pub catalog: &'a Catalog,
    pub entry: &'a OrderEntry,
    pub now: DateTime<Utc>,
    /// The patient's orders as they stand: the stored ones, with what earlier orders of the
    /// same request (an order basket) placed and stopped (for the previous order and the
    /// duplicate check).
    pub known: &'a [OrderRecord],
}

/// The order type of an order that names none: the type listing its concept's class,
/// else core's type for its class (`ensureOrderTypeIsSet`).
pub fn infer_order_type(catalog: &Catalog, class: OrderClass, concept: &str) -> Option<String> {
    let concept_class = catalog.concept(concept).map(|c| c.class.as_str());
    let class_uuid = concept_class.and_then(|name| {
        catalog
            .content
            .concept_classes
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.uuid.as_str())
    });
    if let Some(cu) = class_uuid
        && let Some(t) = catalog.content.order_types.iter().find(|t| {
            !t.retired
                && t.concept_classes.iter().any(|c| c == cu)
                && class.fits(&t.java_class_name)
        })
    {
        return Some(t.uuid.clone());
    }
    catalog
        .content
        .order_types
        .iter()
        .find(|t| !t.retired && t.java_class_name == class.java_class())
        .map(|t| t.uuid.clone())
}

/// The end of a prescription of `duration` units from `start` (core's
/// `SimpleDosingInstructions.getAutoExpireDate`: the duration added, less a second), or
/// `None` when the unit has no SNOMED CT duration or the count cannot be turned into time.
pub fn auto_expire(
    start: DateTime<Utc>,
    duration: u32,
    snomed: &str,
    frequency_per_day: Option<f64>,
) -> Option<DateTime<Utc>> {
    let n = i64::from(duration);
    let after = |d: Option<Duration>| d.and_then(|d| start.checked_add_signed(d));
    let end = match snomed {
        SNOMED_SECONDS => after(Duration::try_seconds(n))?,
        SNOMED_MINUTES => after(Duration::try_minutes(n))?,
        SNOMED_HOURS => after(Duration::try_hours(n))?,
        SNOMED_DAYS => after(Duration::try_days(n))?,
        SNOMED_WEEKS => after(Duration::try_weeks(n))?,
        SNOMED_MONTHS => start.checked_add_months(Months::new(duration))?,
        SNOMED_YEARS => start.checked_add_months(Months::new(duration.checked_mul(12)?))?,
        // So many doses at the frequency's rate: a day divided among them, in seconds.
        SNOMED_RECURRING => {
            let per_day = frequency_per_day.filter(|f| *f > 0.0 && f.is_finite())?;
            let seconds = (f64::from(duration) * 86_400.0 / per_day).round();
            after(Duration::try_seconds(seconds as i64).filter(|_| seconds < 1e15))?
        }
        _ => return None,
    };
    end.checked_sub_signed(Duration::seconds(1))
}

/// The latest date an order may end on: index keys sort as text, so a year of five digits
/// would sort before every real date.
pub const LAST_DAY: &str = "9999-12-31T23:59:59.999Z";

/// Core's `saveOrderInternal`: an end at midnight means the end of that day.
fn end_of_day_if_midnight(key: String) -> String {
    match parse_key(&key) {
        Some(t) if t.time() == chrono::NaiveTime::MIN => {
            datetime_key(t + Duration::seconds(86_399))
        }
        _ => key,
    }
}

fn seconds(key: &str) -> &str {
    // Key form: the first 19 characters are the date and the time to the second.
    key.get(..19).unwrap_or(key)
}

/// Checks a new order and places it: its order type when none is named, the previous
/// order it stops, its end. Answers the order to store and the previous order's new
/// version when it stops one.
pub fn place(
    p: &Placing,
    mut o: OrderRecord,
    encounter: &crate::domains::order::Placement,
) -> ApiResult<(OrderRecord, Option<(OrderRecord, OrderRecord)>)> {
    let mut inv = Invalid::default();
    let now_key = datetime_key(p.now);
    // Without a date sent, now; never before the encounter, whose time the client's clock
    // may have set a little ahead of the server's.
    if o.date_activated.is_empty() {
        o.date_activated = now_key.clone().max(encounter.datetime.clone());
    }
    if encounter.voided {
        inv.field("encounter", "error.invalid", "The encounter is voided");
    }
    if encounter.patient != o.patient {
        inv.field(
            "encounter",
            "Order.error.encounterPatientMismatch",
            "The encounter is another patient's",
        );
    }
    let concept = p.catalog.concept(&o.concept);
    match concept {
        None => inv.field("concept", "error.invalid", "Concept does not exist"),
        Some(c) if c.retired && o.action != Action::Discontinue => {
            inv.field("concept", "error.retired", "The concept is retired")
        }
        Some(_) => {}
    }
    if !p
        .catalog
        .content
        .care_settings
        .iter()
        .any(|c| c.uuid == o.care_setting)
    {
        inv.field(
            "careSetting",
            "Order.care.cannot.determine",
            "Care setting does not exist",
        );
    }
    if parse_key(&o.date_activated).is_some_and(|t| t > p.now + CLOCK_SKEW) {
        inv.field(
            "dateActivated",
            "Order.error.dateActivatedInFuture",
            "The order's activation date cannot be in the future",
        );
    }
    if seconds(&o.date_activated) < seconds(&encounter.datetime) {
        inv.field(
            "dateActivated",
            "Order.error.encounterDatetimeAfterDateActivated",
            "The encounter's date cannot be after the order's activation date",
        );
    }
    match (o.urgency, &o.scheduled_date) {
        (Urgency::OnScheduledDate, None) => inv.field(
            "scheduledDate",
            "Order.error.scheduledDateNullForOnScheduledDateUrgency",
            "A scheduled date is required when the urgency is ON_SCHEDULED_DATE",
        ),
        (u, Some(_)) if u != Urgency::OnScheduledDate => inv.field(
            "urgency",
            "Order.error.urgencyNotOnScheduledDate",
            "The urgency must be ON_SCHEDULED_DATE when a scheduled date is given",
        ),
        _ => {}
    }
    for (field, date) in [
        ("dateStopped", &o.date_stopped),
        ("autoExpireDate", &o.auto_expire_date),
    ] {
        if date
            .as_deref()
            .is_some_and(|d| d < o.date_activated.as_str())
        {
            inv.field(
                field,
                "Order.error.dateActivatedAfterDiscontinuedDate",
                "The order cannot end before it is activated",
            );
        }
    }
    // The order type: named, else inferred; its class must hold this order's.
    if o.order_type.is_empty() {
        match infer_order_type(p.catalog, o.class, &o.concept) {
            Some(t) => o.order_type = t,
            None => inv.field(
                "orderType",
                "Order.type.cannot.determine",
                "No order type fits this order",
            ),
        }
    }
    if !o.order_type.is_empty() {
        match p
            .catalog
            .content
            .order_types
            .iter()
            .find(|t| t.uuid == o.order_type)
        {
            None => inv.field("orderType", "error.invalid", "Order type does not exist"),
            Some(t) if !o.class.fits(&t.java_class_name) => inv.field(
                "orderType",
                "Order.type.class.does.not.match",
                &format!(
                    "The order type '{}' holds {} orders, not {}",
                    t.name,
                    t.java_class_name,
                    o.class.java_class()
                ),
            ),
            Some(t) if t.retired && o.action != Action::Discontinue => {
                inv.field("orderType", "error.retired", "The order type is retired")
            }
            Some(_) => {}
        }
    }
    if o.action != Action::Discontinue {
        if let Some(d) = &o.drug {
            check_drug(p, &o, d, &mut inv);
        }
        if let Some(t) = &o.test {
            check_test(p, t, &mut inv);
        }
    }
    if !inv.is_empty() {
        return Err(ApiError::Invalid(inv));
    }

    // The end: a discontinuation ends at once; a prescription with a duration and no
    // refills ends when its duration is over (computed first: the duplicate rule below
    // compares schedules).
    if o.action == Action::Discontinue {
        o.auto_expire_date = Some(o.date_activated.clone());
    } else if o.auto_expire_date.is_none()
        && let Some(d) = &o.drug
        && d.num_refills.unwrap_or(0) == 0
        && let (Some(n), Some(units)) = (d.duration, &d.duration_units)
        && let Some(code) = p.entry.snomed.get(units)
        && let Some(start) = parse_key(o.effective_start())
    {
        let per_day = d
            .frequency
            .as_deref()
            .and_then(|f| p.catalog.order_frequency(f))
            .and_then(|f| f.frequency_per_day);
        let end = auto_expire(start, n, code, per_day).map(datetime_key);
        match end {
            Some(e) if e.as_str() <= LAST_DAY => o.auto_expire_date = Some(e),
            // Units of time without an end date (a recurring count with no frequency).
            None if code == SNOMED_RECURRING => {}
            _ => {
                return Err(ApiError::invalid_field(
                    "duration",
                    "error.invalid",
                    "The duration runs past the year 9999",
                ));
            }
        }
    }
    if o.action != Action::Discontinue {
        o.auto_expire_date = o.auto_expire_date.take().map(end_of_day_if_midnight);
    }

    // The previous order: required to revise or discontinue; the same orderable, type and
    // care setting; still active, and stopped a second before this one starts.
    let mut previous = match &o.previous_order {
        Some(u) => Some(
            p.known
                .iter()
                .find(|x| &x.uuid == u)
                .cloned()
                .ok_or_else(|| {
                    ApiError::invalid_field(
                        "previousOrder",
                        "error.invalid",
                        "The previous order does not exist (or is another patient's)",
                    )
                })?,
        ),
        None => None,
    };
    if previous.is_none() && o.action == Action::Discontinue {
        // Core finds the one active order of the same orderable, kind and care setting.
        let mut active = p.known.iter().filter(|x| {
            x.is_active(&now_key)
                && x.same_orderable(&o)
                && x.class == o.class
                && x.care_setting == o.care_setting
        });
        match (active.next(), active.next()) {
            (Some(one), None) => {
                o.previous_order = Some(one.uuid.clone());
                previous = Some(one.clone());
            }
            (Some(_), Some(_)) => {
                return Err(ApiError::BadRequest(
                    "Order.discontinuing.ambiguous.orders: more than one active order could be the one to discontinue; name it in previousOrder".into(),
                ));
            }
            _ => {}
        }
    }
    if previous.is_none() && matches!(o.action, Action::Revise | Action::Discontinue) {
        return Err(ApiError::invalid_field(
            "previousOrder",
            "Order.previous.required",
            "A revision or a discontinuation names the order it changes (previousOrder)",
        ));
    }
    let mut stopped = None;
    if let Some(prev) = &previous {
        let mut inv = Invalid::default();
        if !prev.same_orderable(&o) {
            inv.field(
                "previousOrder",
                "Order.orderable.doesnot.match",
                "The previous order is for something else",
            );
        }
        if prev.order_type != o.order_type {
            inv.field(
                "previousOrder",
                "Order.type.doesnot.match",
                "The previous order is of another order type",
            );
        }
        if prev.care_setting != o.care_setting {
            inv.field(
                "previousOrder",
                "Order.care.setting.doesnot.match",
                "The previous order is in another care setting",
            );
        }
        if prev.class != o.class {
            inv.field(
                "previousOrder",
                "Order.class.doesnot.match",
                "The previous order is of another kind",
            );
        }
        if !inv.is_empty() {
            return Err(ApiError::Invalid(inv));
        }
        if matches!(o.action, Action::Revise | Action::Discontinue) {
            if prev.action == Action::Discontinue {
                return Err(ApiError::BadRequest(
                    "A discontinuation order cannot be stopped".into(),
                ));
            }
            if prev.voiding.voided || prev.is_stopped_or_expired(&o.date_activated) {
                return Err(ApiError::BadRequest(
                    "Cannot stop an order that is already stopped, expired or voided".into(),
                ));
            }
            // A second before this order starts, never in the future (core refuses a
            // stop in the future) nor before the previous order started.
            let at =
                (parse_key(&o.date_activated).unwrap_or(p.now) - Duration::seconds(1)).min(p.now);
            let mut s = prev.clone();
            s.date_stopped = Some(datetime_key(
                at.max(parse_key(&prev.date_activated).unwrap_or(at)),
            ));
            stopped = Some((prev.clone(), s));
        }
    }

    // One active order at a time for the same drug in a care setting.
    if o.class == OrderClass::Drug && o.action != Action::Discontinue {
        let start = o.effective_start().to_string();
        let clash = p.known.iter().find(|x| {
            x.class == OrderClass::Drug
                && !x.voiding.voided
                && x.action != Action::Discontinue
                && x.care_setting == o.care_setting
                && x.same_orderable(&o)
                && Some(&x.uuid) != o.previous_order.as_ref()
                && !x.is_stopped_or_expired(&start)
                // Scheduled to start after this one ends: no overlap.
                && o.auto_expire_date.as_deref().is_none_or(|end| x.effective_start() <= end)
        });
        if clash.is_some() {
            return Err(ApiError::BadRequest(
                "Cannot have more than one active order for the same orderable and care setting at same time (Order.cannot.have.more.than.one)".into(),
            ));
        }
    }
    Ok((o, stopped))
}

fn check_drug(
    p: &Placing,
    o: &OrderRecord,
    d: &crate::domains::order::DrugDetails,
    inv: &mut Invalid,
) {
    let e = p.entry;
    match d.drug.as_deref().map(|u| (u, p.catalog.drug(u))) {
        Some((_, None)) => inv.field("drug", "error.invalid", "Drug does not exist"),
        Some((_, Some(drug))) => {
            if drug.retired && o.action == Action::New {
                inv.field("drug", "error.retired", "The drug is retired");
            }
            if drug.concept != o.concept {
                inv.field(
                    "concept",
                    "DrugOrder.error.conceptMismatch",
                    "The order's concept is not its drug's concept",
                );
            }
        }
        None if d.drug_non_coded.is_none() => inv.field(
            "drug",
            "DrugOrder.error.drugIsNull",
            "A drug order names its drug",
        ),
        None => {}
    }
    match d.dosing_type {
        DosingType::Simple => {
            for (field, present, code) in [
                (
                    "dose",
                    d.dose.is_some(),
                    "DrugOrder.error.doseIsNullForDosingTypeSimple",
                ),
                (
                    "doseUnits",
                    d.dose_units.is_some(),
                    "DrugOrder.error.doseUnitsIsNullForDosingTypeSimple",
                ),
                (
                    "route",
                    d.route.is_some(),
                    "DrugOrder.error.routeIsNullForDosingTypeSimple",
                ),
                (
                    "frequency",
                    d.frequency.is_some(),
                    "DrugOrder.error.frequencyIsNullForDosingTypeSimple",
                ),
            ] {
                if !present {
                    inv.field(
                        field,
                        code,
                        &format!("{field} is required with simple dosing instructions"),
                    );
                }
            }
        }
        DosingType::FreeText => {
            if d.dosing_instructions
                .as_deref()
                .is_none_or(|t| t.trim().is_empty())
            {
                inv.field(
                    "dosingInstructions",
                    "error.null",
                    "Free-text dosing needs its instructions",
                );
            }
        }
    }
    if d.dose.is_some_and(|v| !(v > 0.0 && v.is_finite())) {
        inv.field(
            "dose",
            "error.invalid",
            "The dose must be a positive number",
        );
    }
    if d.quantity.is_some_and(|v| !(v >= 0.0 && v.is_finite())) {
        inv.field(
            "quantity",
            "error.invalid",
            "The quantity must be a positive number",
        );
    }
    for (value, units, field, code) in [
        (
            d.dose.is_some(),
            d.dose_units.is_some(),
            "doseUnits",
            "DrugOrder.error.doseUnitsRequiredWithDose",
        ),
        (
            d.quantity.is_some(),
            d.quantity_units.is_some(),
            "quantityUnits",
            "DrugOrder.error.quantityUnitsRequiredWithQuantity",
        ),
        (
            d.duration.is_some(),
            d.duration_units.is_some(),
            "durationUnits",
            "DrugOrder.error.durationUnitsRequiredWithDuration",
        ),
    ] {
        if value && !units {
            inv.field(field, code, &format!("{field} is required with its value"));
        }
    }
    let among = |field: &str, value: &Option<String>, allowed: &[String], code: &str| {
        value
            .as_deref()
            .is_some_and(|v| !allowed.iter().any(|a| a == v))
            .then(|| {
                let name = value
                    .as_deref()
                    .and_then(|v| p.catalog.concept(v))
                    .map_or(value.clone().unwrap_or_default(), |c| c.uuid.clone());
                (
                    field.to_string(),
                    code.to_string(),
                    format!("{name} is not among the allowed concepts for {field}"),
                )
            })
    };
    let dispensing = e.all_dispensing_units();
    for problem in [
        among(
            "doseUnits",
            &d.dose_units,
            &e.dosing_units,
            "DrugOrder.error.notAmongAllowedConcepts",
        ),
        among(
            "quantityUnits",
            &d.quantity_units,
            &dispensing,
            "DrugOrder.error.notAmongAllowedConcepts",
        ),
        among(
            "durationUnits",
            &d.duration_units,
            &e.duration_units,
            "DrugOrder.error.notAmongAllowedConcepts",
        ),
        among(
            "route",
            &d.route,
            &e.routes,
            "DrugOrder.error.routeNotAmongAllowedConcepts",
        ),
    ]
    .into_iter()
    .flatten()
    {
        inv.field(&problem.0, &problem.1, &problem.2);
    }
    if let Some(u) = &d.duration_units
        && e.duration_units.contains(u)
        && !e.snomed.contains_key(u)
    {
        inv.field(
            "durationUnits",
            "DrugOrder.error.durationUnitsNotMappedToSnomedCtDurationCode",
            "The duration unit has no SNOMED CT duration code",
        );
    }
    if let Some(f) = &d.frequency
        && p.catalog.order_frequency(f).is_none()
    {
        inv.field(
            "frequency",
            "error.invalid",
            "Order frequency does not exist",
        );
    }
    let outpatient = p
        .catalog
        .content
        .care_settings
        .iter()
        .any(|c| c.uuid == o.care_setting && c.care_setting_type == "OUTPATIENT");
    if outpatient && e.require_outpatient_quantity {
        if d.quantity.is_none() {
            inv.field(
                "quantity",
                "DrugOrder.error.quantityIsNullForOutPatient",
                "The quantity to dispense is required for an outpatient",
            );
        }
        if d.quantity_units.is_none() {
            inv.field(
                "quantityUnits",
                "DrugOrder.error.quantityUnitsIsNullForOutPatient",
                "The quantity's unit is required for an outpatient",
            );
        }
        if d.num_refills.is_none() {
            inv.field(
                "numRefills",
                "DrugOrder.error.numRefillsIsNullForOutPatient",
                "The number of refills is required for an outpatient",
            );
        }
    }
}

fn check_test(p: &Placing, t: &crate::domains::order::TestDetails, inv: &mut Invalid) {
    if let Some(s) = &t.specimen_source
        && !p.entry.specimen_sources.contains(s)
    {
        inv.field(
            "specimenSource",
            "TestOrder.error.specimenSourceNotAmongAllowedConcepts",
            "The specimen source is not among the allowed concepts",
        );
    }
    if let Some(f) = &t.frequency
        && p.catalog.order_frequency(f).is_none()
    {
        inv.field(
            "frequency",
            "error.invalid",
            "Order frequency does not exist",
        );
    }
    if let Some(l) = &t.laterality
        && !matches!(l.as_str(), "LEFT" | "RIGHT" | "BILATERAL")
    {
        inv.field(
            "laterality",
            "error.invalid",
            "Laterality is LEFT, RIGHT or BILATERAL",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prescriptions_end_a_second_before_their_duration_is_over() {
        let start = parse_key("2026-11-26T10:00:00.000Z").unwrap();
        let end = |n, code| auto_expire(start, n, code, Some(2.0)).map(datetime_key);
        assert_eq!(
            end(5, SNOMED_DAYS).as_deref(),
            Some("2026-12-01T09:59:59.000Z")
        );
        assert_eq!(
            end(2, SNOMED_WEEKS).as_deref(),
            Some("2026-12-10T09:59:59.000Z")
        );
        assert_eq!(
            end(3, SNOMED_MONTHS).as_deref(),
            Some("2027-02-26T09:59:59.000Z")
        );
        assert_eq!(
            end(1, SNOMED_YEARS).as_deref(),
            Some("2027-11-26T09:59:59.000Z")
        );
        assert_eq!(
            end(12, SNOMED_HOURS).as_deref(),
            Some("2026-11-26T21:59:59.000Z")
        );
        // Ten doses at two a day: five days.
        assert_eq!(
            end(10, SNOMED_RECURRING).as_deref(),
            Some("2026-12-01T09:59:59.000Z")
        );
        assert_eq!(auto_expire(start, 10, SNOMED_RECURRING, None), None);
        assert_eq!(end(5, "123456"), None);
    }
}
