//! The compact form an observation is stored in (`CompactObs`): its uuids and datetimes in
//! the store's compact forms (`store::compact`), its status as a number, its fields by
//! position. A facility keeps millions of observations and the chart reads them from the
//! disk when the store outgrows memory, so every byte of an observation is paid many times
//! over.

use crate::domains::encounter::{ObsRecord, ObsValue};
use crate::store::compact::{Time, Uid};
use crate::store::record::{Audit, Voiding};

fn uid(s: &Option<String>) -> Option<Uid> {
    s.as_deref().map(Uid::from_text)
}

fn time(s: &Option<String>) -> Option<Time> {
    s.as_deref().map(Time::from_text)
}

/// An observation's status: OpenMRS's three as numbers, anything else as written.
#[derive(Debug, Clone, PartialEq, bincode::Encode, bincode::Decode)]
pub enum Status {
    Final,
    Preliminary,
    Amended,
    Other(String),
}

/// A value, its concepts and datetimes compact. New variants go last.
#[derive(Debug, Clone, PartialEq, bincode::Encode, bincode::Decode)]
pub enum Value {
    Numeric(f64),
    Coded(Uid),
    Text(String),
    Boolean(bool),
    Datetime(Time),
    Date(String),
    Time(String),
    Group,
}

/// `ObsRecord` field by field in its compact form: positional, so a change of fields takes
/// a new format tag in `store`, with this one still decoded.
#[derive(Debug, Clone, PartialEq, bincode::Encode, bincode::Decode)]
pub struct CompactObs {
    v: u32,
    uuid: Uid,
    person: Uid,
    concept: Uid,
    encounter: Option<Uid>,
    obs_group: Option<Uid>,
    datetime: Time,
    location: Option<Uid>,
    value: Value,
    comment: Option<String>,
    form_field_namespace: Option<String>,
    form_field_path: Option<String>,
    status: Status,
    interpretation: Option<String>,
    order: Option<Uid>,
    previous_version: Option<Uid>,
    creator: Uid,
    date_created: Time,
    changed_by: Option<Uid>,
    date_changed: Option<Time>,
    voided: bool,
    voided_by: Option<Uid>,
    date_voided: Option<Time>,
    void_reason: Option<String>,
}

impl From<&ObsRecord> for CompactObs {
    fn from(o: &ObsRecord) -> CompactObs {
        CompactObs {
            v: o.v,
            uuid: Uid::from_text(&o.uuid),
            person: Uid::from_text(&o.person),
            concept: Uid::from_text(&o.concept),
            encounter: uid(&o.encounter),
            obs_group: uid(&o.obs_group),
            datetime: Time::from_text(&o.datetime),
            location: uid(&o.location),
            value: match &o.value {
                ObsValue::Numeric(n) => Value::Numeric(*n),
                ObsValue::Coded(c) => Value::Coded(Uid::from_text(c)),
                ObsValue::Text(t) => Value::Text(t.clone()),
                ObsValue::Boolean(b) => Value::Boolean(*b),
                ObsValue::Datetime(t) => Value::Datetime(Time::from_text(t)),
                ObsValue::Date(d) => Value::Date(d.clone()),
                ObsValue::Time(t) => Value::Time(t.clone()),
                ObsValue::Group => Value::Group,
            },
            comment: o.comment.clone(),
            form_field_namespace: o.form_field_namespace.clone(),
            form_field_path: o.form_field_path.clone(),
            status: match o.status.as_str() {
                "FINAL" => Status::Final,
                "PRELIMINARY" => Status::Preliminary,
                "AMENDED" => Status::Amended,
                other => Status::Other(other.to_string()),
            },
            interpretation: o.interpretation.clone(),
            order: uid(&o.order),
            previous_version: uid(&o.previous_version),
            creator: Uid::from_text(&o.audit.creator),
            date_created: Time::from_text(&o.audit.date_created),
            changed_by: uid(&o.audit.changed_by),
            date_changed: time(&o.audit.date_changed),
            voided: o.voiding.voided,
            voided_by: uid(&o.voiding.voided_by),
            date_voided: time(&o.voiding.date_voided),
            void_reason: o.voiding.void_reason.clone(),
        }
    }
}

impl From<CompactObs> for ObsRecord {
    fn from(c: CompactObs) -> ObsRecord {
        let text = |u: Option<Uid>| u.map(|u| u.to_text());
        let when = |t: Option<Time>| t.map(|t| t.to_text());
        ObsRecord {
            v: c.v,
            uuid: c.uuid.to_text(),
            person: c.person.to_text(),
            concept: c.concept.to_text(),
            encounter: text(c.encounter),
            obs_group: text(c.obs_group),
            datetime: c.datetime.to_text(),
            location: text(c.location),
            value: match c.value {
                Value::Numeric(n) => ObsValue::Numeric(n),
                Value::Coded(u) => ObsValue::Coded(u.to_text()),
                Value::Text(t) => ObsValue::Text(t),
                Value::Boolean(b) => ObsValue::Boolean(b),
                Value::Datetime(t) => ObsValue::Datetime(t.to_text()),
                Value::Date(d) => ObsValue::Date(d),
                Value::Time(t) => ObsValue::Time(t),
                Value::Group => ObsValue::Group,
            },
            comment: c.comment,
            form_field_namespace: c.form_field_namespace,
            form_field_path: c.form_field_path,
            status: match c.status {
                Status::Final => "FINAL".into(),
                Status::Preliminary => "PRELIMINARY".into(),
                Status::Amended => "AMENDED".into(),
                Status::Other(s) => s,
            },
            interpretation: c.interpretation,
            order: text(c.order),
            previous_version: text(c.previous_version),
            audit: Audit {
                creator: c.creator.to_text(),
                date_created: c.date_created.to_text(),
                changed_by: text(c.changed_by),
                date_changed: when(c.date_changed),
            },
            voiding: Voiding {
                voided: c.voided,
                voided_by: text(c.voided_by),
                date_voided: when(c.date_voided),
                void_reason: c.void_reason,
            },
        }
    }
}
