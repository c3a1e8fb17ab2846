//! Who may do what: the roles and privileges made through the API (their records) and
//! `Access`, the in-memory view the authorisation of every request reads (each API role's
//! direct privileges and inherited roles), next to the content's roles in the catalog.
//! The `role` domain stores and serves these records; authorisation needs only this.

use crate::catalog::Catalog;
use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleRecord {
    pub v: u32,
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    /// Privilege names, as given.
    pub privileges: Vec<String>,
    /// Names of directly inherited roles (the content's or the API's).
    pub inherited_roles: Vec<String>,
    pub audit: Audit,
    /// A retired role grants nothing.
    pub retiring: Voiding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivilegeRecord {
    pub v: u32,
    pub uuid: String,
    pub name: String,
    pub description: Option<String>,
    pub audit: Audit,
}

/// The API's roles and privileges as authorisation reads them.
#[derive(Debug, Default)]
pub struct Access {
    pub roles: Vec<RoleRecord>,
    pub privileges: Vec<PrivilegeRecord>,
    /// Lower-case name → index in `roles` (retired ones excluded).
    by_name: HashMap<String, usize>,
}

impl Access {
    pub fn new(roles: Vec<RoleRecord>, privileges: Vec<PrivilegeRecord>) -> Access {
        let by_name = roles
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.retiring.voided)
            .map(|(i, r)| (r.name.to_lowercase(), i))
            .collect();
        Access {
            roles,
            privileges,
            by_name,
        }
    }

    /// An active API role by name (any case).
    pub fn role(&self, name: &str) -> Option<&RoleRecord> {
        self.by_name
            .get(&name.to_lowercase())
            .map(|&i| &self.roles[i])
    }

    pub fn privilege(&self, name: &str) -> Option<&PrivilegeRecord> {
        self.privileges
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }
}

/// The name of the first item whose uuid is `key` or whose name is `key` in any case.
fn named<'a, T: 'a>(
    items: impl IntoIterator<Item = &'a T>,
    uuid: impl Fn(&T) -> &str,
    name: impl Fn(&T) -> &str,
    key: &str,
) -> Option<String> {
    items
        .into_iter()
        .find(|i| uuid(i) == key || name(i).eq_ignore_ascii_case(key))
        .map(|i| name(i).to_string())
}

/// A role given by uuid or name (any case), as its name: the content's, else an active
/// API role.
pub fn role_named(catalog: &Catalog, access: &Access, key: &str) -> Option<String> {
    named(&catalog.content.roles, |r| &r.uuid, |r| &r.name, key).or_else(|| {
        named(
            access.roles.iter().filter(|r| !r.retiring.voided),
            |r| &r.uuid,
            |r| &r.name,
            key,
        )
    })
}

/// A privilege given by uuid or name (any case), as its name: the content's, else the API's.
pub fn privilege_named(catalog: &Catalog, access: &Access, key: &str) -> Option<String> {
    named(&catalog.content.privileges, |p| &p.uuid, |p| &p.name, key)
        .or_else(|| named(&access.privileges, |p| &p.uuid, |p| &p.name, key))
}

/// Whether a role of this name exists, in the content or the API.
pub fn role_exists(name: &str, catalog: &Catalog, access: &Access) -> bool {
    catalog.role(name).is_some() || access.role(name).is_some()
}

/// Whether a privilege of this name exists, in the content (with core's and the
/// modules') or the API.
pub fn privilege_exists(name: &str, catalog: &Catalog, access: &Access) -> bool {
    catalog.has_privilege_named(name) || access.privilege(name).is_some()
}

/// Every privilege a set of roles grants, through inheritance across the content's and the
/// API's roles, in lower case. The content's role wins when both define a name.
pub fn privileges_of(roles: &[String], catalog: &Catalog, access: &Access) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut stack: Vec<String> = roles.to_vec();
    let mut seen = HashSet::new();
    while let Some(name) = stack.pop() {
        if !seen.insert(name.to_lowercase()) {
            continue;
        }
        if let Some(role) = catalog.role(&name) {
            out.extend(role.all_privileges.iter().map(|p| p.to_lowercase()));
            stack.extend(role.inherited_roles.iter().cloned());
        } else if let Some(role) = access.role(&name) {
            out.extend(role.privileges.iter().map(|p| p.to_lowercase()));
            stack.extend(role.inherited_roles.iter().cloned());
        }
    }
    out
}
