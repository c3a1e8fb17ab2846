//! Visits: a patient's stay at a location, of a visit type from the content, open until it
//! is ended (`stopDatetime`). Validated as OpenMRS's `VisitValidator` does: a patient, a
//! visit type that is not retired, a start not in the future, a stop after the start, no
//! overlap with the patient's other visits unless `visits.allowOverlappingVisits` is true,
//! and no encounter of the visit left outside it. Visits open longer than
//! `visits.autoCloseVisitTimeout` hours are ended by a background job.

pub mod attribute;
pub mod rest;
pub mod store;

pub use attribute::VisitAttribute;

use crate::clinic::Clinic;
use crate::invalid::Invalid;
use crate::store::record::{Audit, Cascade, DAEMON_USER, Effect, Holds, Voiding};
use crate::store::{Store, StoreResult};
use crate::wire::{CLOCK_SKEW, datetime_key, parse_key, to_the_second};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisitRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    pub visit_type: String,
    pub location: Option<String>,
    pub indication: Option<String>,
    /// Key form (`crate::wire::datetime_key`).
    pub start: String,
    pub stop: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
    /// Voided ones included (OpenMRS keeps them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<VisitAttribute>,
}

impl VisitRecord {
    pub fn is_active(&self) -> bool {
        self.stop.is_none() && !self.voiding.voided
    }

    /// Whether `t` (key form) falls inside the visit, to the second (`to_the_second`).
    pub fn contains(&self, t: &str) -> bool {
        let t = to_the_second(t);
        t >= to_the_second(&self.start)
            && self.stop.as_deref().is_none_or(|s| t <= to_the_second(s))
    }

    fn overlaps(&self, other: &VisitRecord) -> bool {
        let end = |v: &VisitRecord| v.stop.clone().unwrap_or_else(|| "9999".into());
        self.start <= end(other) && other.start <= end(self)
    }
}

/// Checks a visit about to be saved against the rules of the module documentation.
/// `encounter_times` are the key-form datetimes of the visit's encounters.
pub fn validate(
    state: &Clinic,
    v: &VisitRecord,
    encounter_times: &[String],
    now: DateTime<Utc>,
) -> StoreResult<Invalid> {
    let mut inv = Invalid::default();
    let catalog = state.catalog.clone();
    match catalog
        .content
        .visit_types
        .iter()
        .find(|t| t.uuid == v.visit_type)
    {
        None => inv.field(
            "visitType",
            "error.null",
            "Visit type is required and must exist",
        ),
        Some(t) if t.retired => inv.field("visitType", "error.retired", "Visit type is retired"),
        Some(_) => {}
    }
    if let Some(l) = &v.location
        && catalog.location(l).is_none()
    {
        inv.field("location", "error.invalid", "Location does not exist");
    }
    let start = parse_key(&v.start);
    if start.is_some_and(|s| s > now + CLOCK_SKEW) {
        inv.field(
            "startDatetime",
            "Visit.startCannotBeInTheFuture",
            "The start date and time cannot be in the future",
        );
    }
    if let Some(stop) = &v.stop {
        if to_the_second(stop) < to_the_second(&v.start) {
            inv.field(
                "stopDatetime",
                "Visit.error.endDateBeforeStartDate",
                "The stop date and time must be after the start",
            );
        }
        if parse_key(stop).is_some_and(|s| s > now + CLOCK_SKEW) {
            inv.field(
                "stopDatetime",
                "Visit.stopCannotBeInTheFuture",
                "The stop date and time cannot be in the future",
            );
        }
    }
    if let Some(t) = encounter_times.iter().find(|t| !v.contains(t)) {
        inv.field(
            if to_the_second(t) < to_the_second(&v.start) {
                "startDatetime"
            } else {
                "stopDatetime"
            },
            "Visit.encountersCannotBeBeforeStartDate",
            "An encounter of this visit would fall outside it",
        );
    }
    if !v.voiding.voided && !state.bool_setting("visits.allowOverlappingVisits", true) {
        let others = store::visits_of(state.store, &v.patient)?;
        if let Some(o) = others
            .iter()
            .find(|o| o.uuid != v.uuid && !o.voiding.voided && o.overlaps(v))
        {
            inv.global(format!(
                "This visit overlaps with another visit of the patient (started {})",
                o.start
            ));
        }
    }
    attribute::check_occurrences(v, &catalog, &mut inv);
    Ok(inv)
}

/// Ends every open visit that started more than `visits.autoCloseVisitTimeout` hours
/// before `now`; returns how many were ended. A timeout of 0, absent or unreadable turns
/// the job off.
pub fn close_stale_visits(state: &Clinic, now: DateTime<Utc>) -> StoreResult<usize> {
    let hours: f64 = state
        .setting("visits.autoCloseVisitTimeout")
        .and_then(|v| v.trim().parse().ok())
        .filter(|h: &f64| h.is_finite() && *h > 0.0)
        .unwrap_or(0.0);
    if hours == 0.0 {
        return Ok(0);
    }
    let cutoff = now - chrono::Duration::milliseconds((hours * 3_600_000.0) as i64);
    let mut closed = 0;
    for stale in store::open_visits(state.store)? {
        if parse_key(&stale.start).is_none_or(|s| s > cutoff) {
            break; // oldest first: the rest are younger
        }
        // Read again under the clinical write lock: a request may have changed the visit
        // or its queue entries since the listing.
        let _one_writer = state.store.write_lock();
        let Some(old) = store::get(state.store, &stale.uuid)?.filter(|v| v.is_active()) else {
            continue;
        };
        let mut v = old.clone();
        // Now is after every encounter of the visit: encounters cannot be in the future.
        let stop = datetime_key(now);
        v.stop = Some(stop.clone());
        v.audit.changed(DAEMON_USER, now);
        let effects = ending_effects(state.store, &old.uuid, &stop, DAEMON_USER)?;
        state.store.write(|txn| {
            store::put_in(txn, Some(&old), &v)?;
            effects.into_iter().try_for_each(|effect| effect(txn))
        })?;
        closed += 1;
    }
    Ok(closed)
}

/// The times of the records a visit holds: (store, visit).
pub type HeldTimes = fn(&Store, &str) -> StoreResult<Vec<String>>;

/// Why a visit may not take a shape, if so: (store, the visit as it would be saved).
pub type Refusal = fn(&Store, &VisitRecord) -> StoreResult<Option<&'static str>>;

/// What the domains that hang on visits (encounters, queue entries, beds) do when one
/// changes, registered in the domains' registry: a visit names none of them.
pub struct VisitDependents {
    /// The times of the records a visit holds, which its start and stop must cover.
    pub times: &'static [HeldTimes],
    /// Why the visit may not take this shape (a queue entry outside it), if so.
    pub refusals: &'static [Refusal],
    /// What ending a visit writes with it: (store, visit, stop, user).
    pub on_end: &'static [Cascade],
    /// What voiding a visit writes with it: (store, visit, user, reason).
    pub on_void: &'static [Cascade],
    /// What a visit may hold that forbids purging it: (what the refusal names, whether it
    /// holds any).
    pub held: &'static [(&'static str, Holds)],
}

static NO_DEPENDENTS: VisitDependents = VisitDependents {
    times: &[],
    refusals: &[],
    on_end: &[],
    on_void: &[],
    held: &[],
};

/// The visit's dependents registered with the store.
pub fn dependents(store: &Store) -> &'static VisitDependents {
    store.registry().extension().unwrap_or(&NO_DEPENDENTS)
}

/// The times of every record the visit holds (its encounters').
pub fn times_held(store: &Store, visit: &str) -> StoreResult<Vec<String>> {
    let mut times = Vec::new();
    for of in dependents(store).times {
        times.extend(of(store, visit)?);
    }
    Ok(times)
}

/// Why the visit may not take this shape, if so.
pub fn refusal(store: &Store, visit: &VisitRecord) -> StoreResult<Option<&'static str>> {
    for refuse in dependents(store).refusals {
        if let Some(why) = refuse(store, visit)? {
            return Ok(Some(why));
        }
    }
    Ok(None)
}

/// What ending the visit at `stop` writes with it.
pub fn ending_effects(
    store: &Store,
    visit: &str,
    stop: &str,
    user: &str,
) -> StoreResult<Vec<Effect>> {
    dependents(store)
        .on_end
        .iter()
        .map(|f| f(store, visit, stop, user))
        .collect()
}

/// What voiding the visit writes with it.
pub fn voiding_effects(
    store: &Store,
    visit: &str,
    user: &str,
    reason: &str,
) -> StoreResult<Vec<Effect>> {
    dependents(store)
        .on_void
        .iter()
        .map(|f| f(store, visit, user, reason))
        .collect()
}

/// The first kind of record the visit holds that forbids purging it.
pub fn held_against_purge(store: &Store, visit: &str) -> StoreResult<Option<&'static str>> {
    for (kind, any) in dependents(store).held {
        if any(store, visit)? {
            return Ok(Some(kind));
        }
    }
    Ok(None)
}

/// A merge is refused while both patients are in an active visit: the EMR API module
/// would fold the two visits into one, which leaves a clinician's encounters in a visit
/// she did not open; here the data manager ends one of them first.
pub fn both_in_an_active_visit(
    store: &Store,
    m: &crate::store::record::PatientMerge,
) -> StoreResult<Option<String>> {
    let active = |p: &str| -> StoreResult<bool> {
        Ok(store::visits_of(store, p)?
            .iter()
            .any(VisitRecord::is_active))
    };
    Ok((active(&m.from)? && active(&m.into)?)
        .then(|| "Both patients have an active visit: end one of them before merging".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domains::{test_catalog, test_store};

    fn visit(uuid: &str, start: &str, stop: Option<&str>, clinic: &Clinic) -> VisitRecord {
        let visit_type = clinic.catalog.content.visit_types[0].uuid.clone();
        VisitRecord {
            v: 1,
            uuid: uuid.into(),
            patient: "patient-1".into(),
            visit_type,
            location: None,
            indication: None,
            start: start.into(),
            stop: stop.map(str::to_string),
            audit: Audit::new("tester", Utc::now()),
            voiding: Voiding::default(),
            attributes: Vec::new(),
        }
    }

    fn allow_overlaps(store: &Store, allowed: bool) {
        store
            .put_setting(&crate::store::SettingRecord {
                v: 1,
                property: "visits.allowOverlappingVisits".into(),
                value: allowed.to_string(),
                description: None,
                base_fingerprint: String::new(),
            })
            .unwrap();
    }

    #[test]
    fn overlapping_visits_are_refused_only_when_the_setting_forbids_them() {
        let store = test_store();
        let clinic = Clinic::new(&store, test_catalog());
        let first = visit(
            "a",
            "2026-01-10T08:00:00.000Z",
            Some("2026-01-10T12:00:00.000Z"),
            &clinic,
        );
        store::put(&store, None, &first).unwrap();
        let second = visit("b", "2026-01-10T11:00:00.000Z", None, &clinic);
        let later = visit("c", "2026-01-10T13:00:00.000Z", None, &clinic);
        let now = Utc::now();
        allow_overlaps(&store, true);
        assert!(validate(&clinic, &second, &[], now).unwrap().is_empty());
        allow_overlaps(&store, false);
        let inv = validate(&clinic, &second, &[], now).unwrap();
        assert_eq!(inv.global.len(), 1, "{inv:?}");
        assert!(inv.global[0].contains("overlaps"));
        assert!(validate(&clinic, &later, &[], now).unwrap().is_empty());
        // A voided visit overlaps nothing.
        let mut voided = second.clone();
        voided.voiding.void("tester", now, "error");
        assert!(validate(&clinic, &voided, &[], now).unwrap().is_empty());
    }

    #[test]
    fn a_visit_covers_its_encounters_and_ends_after_it_starts() {
        let store = test_store();
        let clinic = Clinic::new(&store, test_catalog());
        let now = Utc::now();
        let backwards = visit(
            "a",
            "2026-01-10T08:00:00.000Z",
            Some("2026-01-10T07:00:00.000Z"),
            &clinic,
        );
        let inv = validate(&clinic, &backwards, &[], now).unwrap();
        assert_eq!(inv.fields[0].1, "Visit.error.endDateBeforeStartDate");
        let short = visit(
            "b",
            "2026-01-10T08:00:00.000Z",
            Some("2026-01-10T09:00:00.000Z"),
            &clinic,
        );
        let inv = validate(&clinic, &short, &["2026-01-10T09:30:00.000Z".into()], now).unwrap();
        assert_eq!(inv.fields[0].0, "stopDatetime");
        let inv = validate(&clinic, &short, &["2026-01-10T07:30:00.000Z".into()], now).unwrap();
        assert_eq!(inv.fields[0].0, "startDatetime");
        let future = visit(
            "c",
            &datetime_key(now + chrono::Duration::hours(1)),
            None,
            &clinic,
        );
        let inv = validate(&clinic, &future, &[], now).unwrap();
        assert_eq!(inv.fields[0].1, "Visit.startCannotBeInTheFuture");
    }
}
