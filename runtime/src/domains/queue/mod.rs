//! Service-queue entries: a patient waiting in, or being served by, one of the queues
//! (triage, consultation, laboratory, pharmacy…: the content's, and those an administrator
//! adds through the API, `queues.rs`), with a status and a priority from
//! the queue's concept sets, from `started` until `ended`. Moving a patient on (a
//! transition) ends the entry and opens a new one that remembers the queue it came from;
//! undoing the transition voids the new entry and reopens the old one.
//!
//! Validated as the queue module's `QueueEntryValidator` does: a queue, a patient and a
//! start are required; the status and priority must be members of the queue's status and
//! priority concept sets; an entry with a visit is the visit's patient's and lies inside
//! the visit; it ends after it starts; and a patient has at most one entry at a time in a
//! queue (the module's `queue.entry.duplicate.patient`).

pub mod metrics;
pub mod queues;
pub mod repr;
pub mod rest;
pub mod store;

use crate::clinic::Clinic;
use crate::content::metadata::{PRIORITY_SET_SETTING, STATUS_SET_SETTING};
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueEntryRecord {
    pub v: u32,
    pub uuid: String,
    /// A queue of the content or of the API.
    pub queue: String,
    pub patient: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visit: Option<String>,
    /// Concept uuids: members of the queue's status and priority sets.
    pub status: String,
    pub priority: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_comment: Option<String>,
    /// Higher first in a queue's list (the O3 app sends 1 for an emergency).
    pub sort_weight: f64,
    /// Key form (`crate::wire::datetime_key`).
    pub started: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_waiting_for: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_waiting_for: Option<String>,
    /// The queue of the entry this one was transitioned from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_coming_from: Option<String>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// A queue made through the API (the service-queues admin page's "add a queue"), next to
/// the content's: the content's are read-only (they come back with every image), these
/// live in the store. A content queue with the same uuid wins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueDefinition {
    pub v: u32,
    pub queue: StoredQueue,
    pub audit: Audit,
    pub retiring: Voiding,
}

/// A queue's fields as the store keeps them: its own type, so that the bundle's `Queue`
/// may change without making stored queues unreadable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredQueue {
    pub uuid: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A concept uuid, a member of the set `queue.serviceConceptSetName` names.
    pub service: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_concept_set: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_concept_set: Option<String>,
    /// A location uuid of the content.
    pub location: String,
    /// Mirrors the definition's `retiring`.
    #[serde(default)]
    pub retired: bool,
}

impl StoredQueue {
    pub fn model(&self) -> model::Queue {
        model::Queue {
            uuid: self.uuid.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            service: self.service.clone(),
            status_concept_set: self.status_concept_set.clone(),
            priority_concept_set: self.priority_concept_set.clone(),
            location: self.location.clone(),
            retired: self.retired,
        }
    }
}

/// What other domains hang on a queue, which the registry fills: a purge is refused while
/// any of them names it (as the queue module's foreign keys refuse it).
pub struct QueueDependents {
    /// (what the refusal names, whether any record names the queue).
    pub held: &'static [(&'static str, QueueHolds)],
}

/// Whether records of a domain name a queue: (store, queue).
pub type QueueHolds = fn(&crate::store::Store, &str) -> crate::store::StoreResult<bool>;

static NO_QUEUE_DEPENDENTS: QueueDependents = QueueDependents { held: &[] };

/// The queue's dependents registered with the store.
pub fn queue_dependents(store: &crate::store::Store) -> &'static QueueDependents {
    store.registry().extension().unwrap_or(&NO_QUEUE_DEPENDENTS)
}

/// A queue by uuid: the content's, else one made through the API (retired ones too).
pub fn find_queue(
    store: &crate::store::Store,
    catalog: &crate::catalog::Catalog,
    uuid: &str,
) -> crate::store::StoreResult<Option<model::Queue>> {
    if let Some(q) = catalog.content.queues.iter().find(|q| q.uuid == uuid) {
        return Ok(Some(q.clone()));
    }
    Ok(store::api_queue(store, uuid)?.map(|d| d.queue.model()))
}

/// Every queue: the content's, then the API's (retired ones too), by name within each.
pub fn all_queues(
    store: &crate::store::Store,
    catalog: &crate::catalog::Catalog,
) -> crate::store::StoreResult<Vec<model::Queue>> {
    let mut queues = catalog.content.queues.clone();
    queues.extend(
        store::api_queues(store)?
            .into_iter()
            .map(|d| d.queue.model())
            .filter(|q| !catalog.content.queues.iter().any(|c| c.uuid == q.uuid)),
    );
    Ok(queues)
}

impl QueueEntryRecord {
    /// Whether the two entries' periods meet (an open entry lasts until further notice).
    fn overlaps(&self, other: &QueueEntryRecord) -> bool {
        let other_ends_after_start = other.ended.as_deref().is_none_or(|e| e > &*self.started);
        let other_starts_before_end = self.ended.as_deref().is_none_or(|e| &*other.started < e);
        other_ends_after_start && other_starts_before_end
    }
}

/// The members of a queue's status or priority concept set (in the set's order), or of the
/// set the queue module's setting names when the queue has none (`setting`).
pub fn allowed(state: &Clinic, set: Option<&str>, setting: &str) -> Vec<String> {
    crate::content::metadata::queue_set_members(state.store, &state.catalog, set, setting)
}

/// Checks an entry about to be saved (the duplicate rule is `duplicate`).
pub fn validate(state: &Clinic, e: &QueueEntryRecord) -> Invalid {
    let mut inv = Invalid::default();
    let catalog = state.catalog.clone();
    let queue = find_queue(state.store, &catalog, &e.queue).ok().flatten();
    match queue.as_ref() {
        None => inv.field("queue", "error.invalid", "Unable to find queue"),
        Some(q) => {
            if !allowed(state, q.status_concept_set.as_deref(), STATUS_SET_SETTING)
                .contains(&e.status)
            {
                inv.field(
                    "status",
                    "queueEntry.status.invalid",
                    "The property status should be a member of configured queue status conceptSet.",
                );
            }
            if !allowed(
                state,
                q.priority_concept_set.as_deref(),
                PRIORITY_SET_SETTING,
            )
            .contains(&e.priority)
            {
                inv.field(
                    "priority",
                    "queueEntry.priority.invalid",
                    "The property priority should be a member of configured queue priority conceptSet.",
                );
            }
        }
    }
    if let Some(ended) = &e.ended
        && ended <= &e.started
    {
        inv.field(
            "endedAt",
            "queueEntry.endedAt.invalid",
            "Queue entry endedAt should be after the startedAt date",
        );
    }
    if let Some(visit) = &e.visit {
        match crate::domains::visit::store::get(state.store, visit)
            .ok()
            .flatten()
        {
            None => inv.field("visit", "error.invalid", "Visit does not exist"),
            Some(v) => {
                if v.voiding.voided {
                    inv.field("visit", "error.invalid", "The visit is voided");
                }
                if v.patient != e.patient {
                    inv.field(
                        "visit",
                        "queueEntry.visit.patient.mismatch",
                        "This queue entry is associated with a visit for the wrong patient",
                    );
                }
                if e.started < v.start {
                    inv.field(
                        "startedAt",
                        "queueEntry.startedAt.before.visit",
                        "A queue entry cannot start before the associated visit start date",
                    );
                }
                if let Some(stop) = &v.stop {
                    if &e.started > stop {
                        inv.field(
                            "startedAt",
                            "queueEntry.startedAt.after.visit",
                            "A queue entry cannot start after the associated visit stop date",
                        );
                    }
                    if e.ended.as_deref().is_none_or(|end| end > stop.as_str()) {
                        inv.field(
                            "endedAt",
                            "queueEntry.endedAt.after.visit",
                            "A queue entry cannot end after the associated visit stop date",
                        );
                    }
                }
            }
        }
    }
    inv
}

/// Whether another entry of the patient is in the same queue over the same period; the
/// queue module refuses such an entry with this message, which the O3 app recognises.
pub fn duplicate(e: &QueueEntryRecord, others: &[QueueEntryRecord]) -> bool {
    others.iter().any(|o| {
        o.uuid != e.uuid
            && !o.voiding.voided
            && o.queue == e.queue
            && o.patient == e.patient
            && e.overlaps(o)
    })
}

pub const DUPLICATE: &str = "queue.entry.duplicate.patient";

/// A visit's open entries, ended when the visit ends (as the queue module's visit save
/// handler ends them): the pairs (stored, changed) to write with the visit.
pub fn ended_with_visit(
    store: &crate::store::Store,
    visit: &str,
    stop: &str,
    user: &str,
) -> crate::store::StoreResult<Vec<(QueueEntryRecord, QueueEntryRecord)>> {
    let now = chrono::Utc::now();
    Ok(store::open_of_visit(store, visit)?
        .into_iter()
        .map(|old| {
            let mut e = old.clone();
            e.ended = Some(stop.to_string());
            e.audit.changed(user, now);
            (old, e)
        })
        .collect())
}

/// Whether the visit's period still holds its entries (the queue module's visit
/// validator): none starts before it, and, when it ends, none starts at or after its end.
pub fn visit_holds_entries(
    store: &crate::store::Store,
    visit: &crate::domains::visit::VisitRecord,
) -> crate::store::StoreResult<Option<&'static str>> {
    for e in store::read(store, store::Source::Visit(&visit.uuid), false)? {
        if e.started < visit.start {
            return Ok(Some(
                "The visit cannot start after one of its queue entries starts",
            ));
        }
        if let Some(stop) = &visit.stop
            && (&e.started >= stop || e.ended.as_ref().is_some_and(|end| end > stop))
        {
            return Ok(Some(
                "The visit cannot end before one of its queue entries starts or ends",
            ));
        }
    }
    Ok(None)
}

/// A visit's entries, voided with the visit.
pub fn voided_with_visit(
    store: &crate::store::Store,
    visit: &str,
    user: &str,
    reason: &str,
) -> crate::store::StoreResult<Vec<(QueueEntryRecord, QueueEntryRecord)>> {
    let now = chrono::Utc::now();
    Ok(store::read(store, store::Source::Visit(visit), false)?
        .into_iter()
        .map(|old| {
            let mut e = old.clone();
            e.voiding.void(user, now, reason);
            (old, e)
        })
        .collect())
}

/// The pairs as `store::put_in` takes them.
pub fn changes(
    pairs: &[(QueueEntryRecord, QueueEntryRecord)],
) -> Vec<(Option<&QueueEntryRecord>, &QueueEntryRecord)> {
    pairs.iter().map(|(o, n)| (Some(o), n)).collect()
}

/// A visit's entries, ended with it (registered with the visit's dependents).
pub fn end_with_visit(
    store: &crate::store::Store,
    visit: &str,
    stop: &str,
    user: &str,
) -> crate::store::StoreResult<crate::store::record::Effect> {
    let entries = ended_with_visit(store, visit, stop, user)?;
    Ok(Box::new(move |txn| store::put_in(txn, &changes(&entries))))
}

/// A visit's entries, voided with it (registered with the visit's dependents).
pub fn void_with_visit(
    store: &crate::store::Store,
    visit: &str,
    user: &str,
    reason: &str,
) -> crate::store::StoreResult<crate::store::record::Effect> {
    let entries = voided_with_visit(store, visit, user, reason)?;
    Ok(Box::new(move |txn| store::put_in(txn, &changes(&entries))))
}

/// Whether the visit holds queue entries, voided ones included (a purge is refused then).
pub fn any_in_visit(store: &crate::store::Store, visit: &str) -> crate::store::StoreResult<bool> {
    Ok(!store::read(store, store::Source::Visit(visit), true)?.is_empty())
}
