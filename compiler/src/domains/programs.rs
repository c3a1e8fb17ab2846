//! `programs/`, `programworkflows/`, `programworkflowstates/`. Concept and parent
//! references are resolved in `crate::link`.

use super::{Ctx, Loaded};
use crate::csvtable::{Columns, UuidRule};
use crate::diagnostics::Sink;
use model::*;

pub const PROGRAM_COLUMNS: Columns = Columns {
    known: &["name", "description", "program concept", "outcomes concept"],
    prefixes: &[],
    required: &["program concept"],
};

pub const WORKFLOW_COLUMNS: Columns = Columns {
    known: &["program", "workflow concept"],
    prefixes: &[],
    required: &["program", "workflow concept"],
};

pub const STATE_COLUMNS: Columns = Columns {
    known: &["workflow", "state concept", "initial", "terminal"],
    prefixes: &[],
    required: &["workflow", "state concept", "initial", "terminal"],
};

pub fn load_program(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let Some(concept) = ctx.required("program concept", sink) else {
        return;
    };
    let name = ctx.string("name");
    let Some(uuid) = ctx.uuid(
        UuidRule::Metadata,
        name.as_deref().unwrap_or(&concept),
        sink,
    ) else {
        return;
    };
    let value = Program {
        uuid: uuid.clone(),
        // Empty until `link` takes the concept's name when no name is given.
        name: name.unwrap_or_default(),
        description: ctx.string("description"),
        concept,
        outcomes_concept: ctx.string("outcomes concept"),
        retired: ctx.retired(sink),
    };
    let entry = ctx.entry_with(
        value,
        &[
            ("concept", "program concept"),
            ("outcomes_concept", "outcomes concept"),
        ],
    );
    loaded.programs.insert(uuid, entry, sink);
}

pub fn load_workflow(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(program), Some(concept)) = (
        ctx.required("program", sink),
        ctx.required("workflow concept", sink),
    ) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &format!("{program}/{concept}"), sink) else {
        return;
    };
    let value = ProgramWorkflow {
        uuid: uuid.clone(),
        program,
        concept,
        retired: ctx.retired(sink),
    };
    let entry = ctx.entry_with(
        value,
        &[("program", "program"), ("concept", "workflow concept")],
    );
    loaded.program_workflows.insert(uuid, entry, sink);
}

pub fn load_state(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let (Some(workflow), Some(concept)) = (
        ctx.required("workflow", sink),
        ctx.required("state concept", sink),
    ) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &format!("{workflow}/{concept}"), sink) else {
        return;
    };
    let value = ProgramWorkflowState {
        uuid: uuid.clone(),
        workflow,
        concept,
        initial: ctx.bool("initial", false, sink),
        terminal: ctx.bool("terminal", false, sink),
        retired: ctx.retired(sink),
    };
    let entry = ctx.entry_with(
        value,
        &[("workflow", "workflow"), ("concept", "state concept")],
    );
    loaded.program_workflow_states.insert(uuid, entry, sink);
}
