//! `roles/` and `privileges/`. Role inheritance and privilege names are resolved (and
//! cycles found) in `crate::link`.

use super::{Ctx, Loaded};
use crate::csvtable::{Columns, UuidRule};
use crate::diagnostics::Sink;
use model::{Privilege, Role};

pub const ROLE_COLUMNS: Columns = Columns {
    known: &["role name", "description", "inherited roles", "privileges"],
    prefixes: &[],
    required: &["role name"],
};

pub const PRIVILEGE_COLUMNS: Columns = Columns {
    known: &["privilege name", "description"],
    prefixes: &[],
    required: &["privilege name"],
};

pub fn load_role(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let Some(name) = ctx.required("role name", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let value = Role {
        uuid: uuid.clone(),
        name,
        description: ctx.string("description"),
        inherited_roles: ctx.list("inherited roles"),
        privileges: ctx.list("privileges"),
        all_privileges: Vec::new(),
        core: false,
    };
    let entry = ctx.entry_with(
        value,
        &[
            ("inherited_roles", "inherited roles"),
            ("privileges", "privileges"),
        ],
    );
    loaded.roles.insert(uuid, entry, sink);
}

pub fn load_privilege(ctx: &Ctx, loaded: &mut Loaded, sink: &mut Sink) {
    let Some(name) = ctx.required("privilege name", sink) else {
        return;
    };
    let Some(uuid) = ctx.uuid(UuidRule::Metadata, &name, sink) else {
        return;
    };
    let value = Privilege {
        uuid: uuid.clone(),
        name,
        description: ctx.string("description"),
        core: false,
    };
    loaded.privileges.insert(uuid, ctx.entry(value), sink);
}
