//! Programme enrolments: a patient enrolled in one of the content's programmes (HIV care,
//! tuberculosis…) from a date, until completed, with the workflow states the patient went
//! through. Validated as OpenMRS's `PatientProgramValidator` does: a programme of the
//! content that is not retired, an enrolment date not in the future, a completion date not
//! before it, no second enrolment of the patient in the same programme over the same
//! period, no enrolment before the patient's birth, an outcome among the programme's
//! outcome answers, and states that belong to the programme's workflows, begin each
//! workflow with one of its initial states, start inside the enrolment and do not overlap
//! within a workflow. A terminal state completes the enrolment.

pub mod rest;
pub mod store;

use crate::clinic::Clinic;
use crate::invalid::Invalid;
use crate::store::record::{Audit, Voiding};
use crate::wire::{CLOCK_SKEW, parse_key};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnrolmentRecord {
    pub v: u32,
    pub uuid: String,
    pub patient: String,
    pub program: String,
    pub location: Option<String>,
    /// Key form (`crate::wire::datetime_key`).
    pub enrolled: String,
    pub completed: Option<String>,
    /// A concept uuid: an answer of the programme's outcomes concept.
    pub outcome: Option<String>,
    pub states: Vec<StateRecord>,
    pub audit: Audit,
    pub voiding: Voiding,
}

/// A workflow state the patient was in, from `start` until `end` (open when `None`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateRecord {
    pub uuid: String,
    pub state: String,
    pub start: String,
    pub end: Option<String>,
    pub audit: Audit,
    pub voided: bool,
}

impl EnrolmentRecord {
    pub fn is_active(&self) -> bool {
        self.completed.is_none() && !self.voiding.voided
    }

    fn overlaps(&self, other: &EnrolmentRecord) -> bool {
        let end = |e: &EnrolmentRecord| e.completed.clone().unwrap_or_else(|| "9999".into());
        self.enrolled <= end(other) && other.enrolled <= end(self)
    }
}

/// The workflow a state of the content belongs to, if the state exists.
pub fn workflow_of(state: &Clinic, state_uuid: &str) -> Option<String> {
    content_state(state, state_uuid).map(|s| s.workflow)
}

/// A state of the content's workflows.
pub fn content_state(state: &Clinic, state_uuid: &str) -> Option<model::ProgramWorkflowState> {
    state
        .catalog
        .content
        .program_workflow_states
        .iter()
        .find(|s| s.uuid == state_uuid)
        .cloned()
}

/// Checks an enrolment about to be saved; `others` are the patient's other enrolments, and
/// `is_new` says it is a new one (a retired programme takes no new enrolments).
pub fn validate(
    state: &Clinic,
    e: &EnrolmentRecord,
    others: &[EnrolmentRecord],
    is_new: bool,
    now: DateTime<Utc>,
) -> Invalid {
    let mut inv = Invalid::default();
    let catalog = state.catalog.clone();
    let content = &catalog.content;
    let program = content.programs.iter().find(|p| p.uuid == e.program);
    match program {
        None => inv.field("program", "error.invalid", "Program does not exist"),
        Some(p) if p.retired && is_new => {
            inv.field("program", "error.retired", "The program is retired")
        }
        Some(_) => {}
    }
    let future = |t: &str| parse_key(t).is_some_and(|t| t > now + CLOCK_SKEW);
    if future(&e.enrolled) {
        inv.field(
            "dateEnrolled",
            "error.date.future",
            "The enrolment date may not be in the future",
        );
    }
    if let Ok(Some(p)) = state.store.patient(&e.patient)
        && let Some(born) = &p.birthdate
        && e.enrolled
            .get(..10)
            .is_some_and(|day| day < born.get(..10).unwrap_or(""))
    {
        inv.field(
            "dateEnrolled",
            "error.invalid",
            "The enrolment date may not be before the patient's birth",
        );
    }
    if let Some(done) = &e.completed {
        if done < &e.enrolled {
            inv.field(
                "dateCompleted",
                "PatientProgram.error.dateCompletedBeforeDateEnrolled",
                "The completion date must be after the enrolment date",
            );
        }
        if future(done) {
            inv.field(
                "dateCompleted",
                "error.date.future",
                "The completion date may not be in the future",
            );
        }
    }
    if !e.voiding.voided
        && others.iter().any(|o| {
            o.uuid != e.uuid && !o.voiding.voided && o.program == e.program && o.overlaps(e)
        })
    {
        inv.global("The patient is already enrolled in this program over that period");
    }
    if let (Some(outcome), Some(p)) = (&e.outcome, program) {
        let allowed = p
            .outcomes_concept
            .as_deref()
            .and_then(|c| catalog.concept(c))
            .is_some_and(|c| c.answers.iter().any(|a| a == outcome));
        if !allowed {
            inv.field(
                "outcome",
                "error.invalid",
                "The outcome must be one of the program's outcome answers",
            );
        }
    }
    let workflows: Vec<&str> = content
        .program_workflows
        .iter()
        .filter(|w| w.program == e.program)
        .map(|w| w.uuid.as_str())
        .collect();
    let live: Vec<(usize, &StateRecord)> = e
        .states
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.voided)
        .collect();
    for (i, s) in &live {
        let field = format!("states[{i}].state");
        match workflow_of(state, &s.state) {
            Some(w) if workflows.contains(&w.as_str()) => {}
            Some(_) => inv.field(
                &field,
                "error.invalid",
                "The state belongs to another program's workflow",
            ),
            None => inv.field(&field, "error.invalid", "State does not exist"),
        }
        if s.start < e.enrolled {
            inv.field(
                &format!("states[{i}].startDate"),
                "error.invalid",
                "A state may not start before the enrolment",
            );
        }
        if s.end.as_ref().is_some_and(|end| end < &s.start) {
            inv.field(
                &format!("states[{i}].endDate"),
                "error.invalid",
                "A state must end after it starts",
            );
        }
    }
    // Each workflow begins with one of its initial states.
    let mut first_of_workflow: Vec<(String, usize, &StateRecord)> = Vec::new();
    for (i, s) in &live {
        if let Some(w) = workflow_of(state, &s.state) {
            match first_of_workflow.iter_mut().find(|(fw, _, _)| fw == &w) {
                Some(entry) if s.start < entry.2.start => *entry = (w, *i, s),
                Some(_) => {}
                None => first_of_workflow.push((w, *i, s)),
            }
        }
    }
    for (_, i, s) in &first_of_workflow {
        if content_state(state, &s.state).is_some_and(|c| !c.initial) {
            inv.field(
                &format!("states[{i}].state"),
                "error.invalid",
                "A workflow must begin with one of its initial states",
            );
        }
    }
    for (i, a) in &live {
        for (j, b) in &live {
            if i < j && workflow_of(state, &a.state) == workflow_of(state, &b.state) {
                let end = |s: &StateRecord| s.end.clone().unwrap_or_else(|| "9999".into());
                if a.start < end(b) && b.start < end(a) {
                    inv.field(
                        &format!("states[{j}].startDate"),
                        "PatientState.error.overlap",
                        "Two states of one workflow may not overlap",
                    );
                }
            }
        }
    }
    inv
}

/// A merge is refused while both patients are enrolled, actively, in the same programme:
/// one patient cannot hold two active enrolments in a programme, and which one goes on is
/// the programme manager's choice (complete one first).
pub fn both_enrolled_in_one_programme(
    store: &crate::store::Store,
    m: &crate::store::record::PatientMerge,
) -> crate::store::StoreResult<Option<String>> {
    let from = store::all_of_patient(store, &m.from)?;
    let into = store::all_of_patient(store, &m.into)?;
    Ok(from
        .iter()
        .filter(|e| e.is_active())
        .find(|e| into.iter().any(|i| i.is_active() && i.program == e.program))
        .map(|e| {
            format!(
                "Both patients are enrolled in the programme {}: complete one of the enrolments before merging",
                e.program
            )
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domains::{test_catalog, test_store};

    fn enrolment(
        uuid: &str,
        program: &str,
        enrolled: &str,
        completed: Option<&str>,
    ) -> EnrolmentRecord {
        EnrolmentRecord {
            v: 1,
            uuid: uuid.into(),
            patient: "patient-1".into(),
            program: program.into(),
            location: None,
            enrolled: enrolled.into(),
            completed: completed.map(str::to_string),
            outcome: None,
            states: Vec::new(),
            audit: Audit::new("tester", Utc::now()),
            voiding: Voiding::default(),
        }
    }

    #[test]
    fn one_enrolment_per_programme_at_a_time_and_dates_in_order() {
        let store = test_store();
        let clinic = Clinic::new(&store, test_catalog());
        let program = clinic
            .catalog
            .content
            .programs
            .iter()
            .find(|p| !p.retired)
            .expect("the content has a programme")
            .uuid
            .clone();
        let now = Utc::now();
        let done = enrolment(
            "a",
            &program,
            "2025-01-01T00:00:00.000Z",
            Some("2025-06-01T00:00:00.000Z"),
        );
        let again = enrolment("b", &program, "2025-03-01T00:00:00.000Z", None);
        let after = enrolment("c", &program, "2025-07-01T00:00:00.000Z", None);
        let inv = validate(&clinic, &again, std::slice::from_ref(&done), true, now);
        assert_eq!(inv.global.len(), 1, "{inv:?}");
        assert!(validate(&clinic, &after, std::slice::from_ref(&done), true, now).is_empty());
        let backwards = enrolment(
            "d",
            &program,
            "2025-07-01T00:00:00.000Z",
            Some("2025-06-01T00:00:00.000Z"),
        );
        let inv = validate(&clinic, &backwards, &[], true, now);
        assert_eq!(
            inv.fields[0].1,
            "PatientProgram.error.dateCompletedBeforeDateEnrolled"
        );
        let unknown = enrolment("e", "no-such-programme", "2025-07-01T00:00:00.000Z", None);
        assert_eq!(
            validate(&clinic, &unknown, &[], true, now).fields[0].0,
            "program"
        );
    }
}
