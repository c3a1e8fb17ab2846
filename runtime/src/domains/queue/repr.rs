//! A queue entry's REST representation.

use crate::content::concept::ConceptRes;
use crate::content::location::LocationRes;
use crate::content::metadata::QueueRes;
use crate::domains::patient::repr::PatientRes;
use crate::domains::provider::rest::ProviderRes;
use crate::domains::queue::QueueEntryRecord;
use crate::domains::queue::rest::previous_of;
use crate::domains::visit::rest::VisitRes;
use crate::http::answer::{audit_info, nest};
use crate::http::repr::{Ctx, Props, Rep, Resource, nested_content_to, render, write_json};
use crate::wire::wire_datetime;
use serde_json::{Value, json};

pub struct QueueEntryRes<'a>(pub &'a QueueEntryRecord);

pub(crate) fn concept_of(uuid: &str, rep: &Rep, ctx: &Ctx) -> Value {
    nest(ctx.catalog.concept(uuid).map(ConceptRes), rep, ctx)
}

impl Resource for QueueEntryRes<'_> {
    fn alias(&self) -> &'static str {
        "queue-entry"
    }
    fn version(&self) -> &'static str {
        "2.3"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    /// The patient's name, as the queue module shows an entry.
    fn display(&self, ctx: &Ctx) -> String {
        ctx.store
            .patient(&self.0.patient)
            .ok()
            .flatten()
            .map(|p| PatientRes(&p).display(ctx))
            .map(|d| {
                d.split_once(" - ")
                    .map_or(d.clone(), |(_, name)| name.to_string())
            })
            .unwrap_or_else(|| self.0.uuid.clone())
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voiding.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("queue", Rep::Default),
            ("status", Rep::Default),
            ("patient", Rep::Default),
            ("visit", Rep::Default),
            ("priority", Rep::Default),
            ("priorityComment", Rep::Default),
            ("sortWeight", Rep::Default),
            ("startedAt", Rep::Default),
            ("endedAt", Rep::Default),
            ("locationWaitingFor", Rep::Default),
            ("queueComingFrom", Rep::Default),
            ("providerWaitingFor", Rep::Default),
            ("previousQueueEntry", Rep::Ref),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("queue", Rep::Full),
            ("status", Rep::Full),
            ("patient", Rep::Full),
            ("visit", Rep::Full),
            ("priority", Rep::Full),
            ("priorityComment", Rep::Default),
            ("sortWeight", Rep::Default),
            ("startedAt", Rep::Default),
            ("endedAt", Rep::Default),
            ("locationWaitingFor", Rep::Full),
            ("queueComingFrom", Rep::Full),
            ("providerWaitingFor", Rep::Full),
            // Default, which names its own previous entry by reference only: entries that
            // name each other cannot make a representation without end.
            ("previousQueueEntry", Rep::Default),
            ("voided", Rep::Default),
            ("voidReason", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let e = self.0;
        let queue = |uuid: Option<&str>| {
            let found = uuid.and_then(|u| {
                crate::domains::queue::find_queue(ctx.store, ctx.catalog, u)
                    .ok()
                    .flatten()
            });
            nest(found.as_ref().map(QueueRes), rep, ctx)
        };
        Some(match name {
            "queue" => queue(Some(&e.queue)),
            "status" => concept_of(&e.status, rep, ctx),
            "priority" => concept_of(&e.priority, rep, ctx),
            "patient" => {
                let p = ctx.store.patient(&e.patient).ok().flatten();
                nest(p.as_ref().map(PatientRes), rep, ctx)
            }
            "visit" => {
                let v = e.visit.as_deref().and_then(|v| {
                    crate::domains::visit::store::get(ctx.store, v)
                        .ok()
                        .flatten()
                });
                nest(v.as_ref().map(VisitRes), rep, ctx)
            }
            "priorityComment" => json!(e.priority_comment),
            "sortWeight" => json!(e.sort_weight),
            "startedAt" => wire_datetime(&e.started),
            "endedAt" => e.ended.as_deref().map_or(Value::Null, wire_datetime),
            "locationWaitingFor" => nest(
                e.location_waiting_for
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(LocationRes),
                rep,
                ctx,
            ),
            "providerWaitingFor" => nest(
                e.provider_waiting_for
                    .as_deref()
                    .and_then(|p| ProviderRes::find(ctx, p)),
                rep,
                ctx,
            ),
            "queueComingFrom" => queue(e.queue_coming_from.as_deref()),
            "previousQueueEntry" => {
                let previous = previous_of(ctx.store, e).ok().flatten();
                match previous {
                    Some(p) => render(&QueueEntryRes(&p), rep, ctx).unwrap_or(Value::Null),
                    None => Value::Null,
                }
            }
            "voided" => json!(e.voiding.voided),
            "voidReason" => json!(e.voiding.void_reason),
            "auditInfo" => audit_info(&e.audit, ctx),
            _ => return None,
        })
    }
    /// The content's queues, statuses, priorities and locations are written once a request
    /// (`nested_content_to`, also kept across requests); the rest as `prop` writes it.
    fn write_prop(&self, name: &str, rep: &Rep, ctx: &Ctx, out: &mut Vec<u8>) -> Option<()> {
        let e = self.0;
        let catalog = ctx.catalog;
        let queue = |u: &str| {
            catalog
                .content
                .queues
                .iter()
                .find(|q| q.uuid == u)
                .map(QueueRes)
        };
        let concept = |u: &str| catalog.concept(u).map(ConceptRes);
        // An API-made queue can change without a reload: written as `prop` writes it, never
        // from the content's cache.
        let of_content =
            |u: Option<&str>| u.is_none_or(|u| catalog.content.queues.iter().any(|q| q.uuid == u));
        match name {
            "queue" if of_content(Some(&e.queue)) => {
                nested_content_to("queue", Some(&e.queue), rep, ctx, out, queue)
            }
            "queueComingFrom" if of_content(e.queue_coming_from.as_deref()) => nested_content_to(
                "queue",
                e.queue_coming_from.as_deref(),
                rep,
                ctx,
                out,
                queue,
            ),
            "status" => nested_content_to("concept", Some(&e.status), rep, ctx, out, concept),
            "priority" => nested_content_to("concept", Some(&e.priority), rep, ctx, out, concept),
            "locationWaitingFor" => nested_content_to(
                "location",
                e.location_waiting_for.as_deref(),
                rep,
                ctx,
                out,
                |l| catalog.location(l).map(LocationRes),
            ),
            _ => write_json(out, &self.prop(name, rep, ctx)?),
        }
        Some(())
    }
}
