//! Providers: the people encounters are recorded by.
//!
//! Two kinds of provider answer under `provider`:
//! - **an account's own provider**: every user acts as a provider without any setup, under
//!   a uuid derived from the account's (`account_provider_uuid`), identified by the
//!   account's system id. That is what a facility that never manages providers uses;
//! - **a managed provider**, made by an administrator (`POST provider`): linked to a
//!   person (an account's person or a patient's) or only named, with its own identifier;
//!   it can be changed and retired. Managed providers live in a small table read whole (a
//!   facility has tens of them).
//!
//! Once a managed provider exists for an account's person, the account's own provider is
//! no longer listed, and the session's `currentProvider` (the provider the O3 front end
//! records encounters with) is the person's first managed provider that is not retired;
//! if they are all retired the account has no current provider, as in OpenMRS. Changing
//! an account's own provider (its identifier, or retiring it) stores it as a managed
//! provider under the same uuid, so the encounters that already name it keep it.

pub mod fhir;
pub mod rest;
pub mod store;

use crate::store::record::{Audit, Voiding};
use crate::store::{Store, StoreResult, UserRecord};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRecord {
    pub v: u32,
    pub uuid: String,
    /// The person this provider is (an account's person or a patient), if any.
    pub person: Option<String>,
    /// The provider's own name, for a provider that is not a person of the system.
    pub name: Option<String>,
    pub identifier: String,
    pub audit: Audit,
    pub retiring: Voiding,
}

/// The uuid of an account's own provider.
pub fn account_provider_uuid(user: &UserRecord) -> String {
    compiler::csvtable::derive_uuid(&format!("provider/{}", user.uuid))
}

/// A provider as the API shows it, whichever kind it is.
#[derive(Debug, Clone)]
pub struct Provider {
    pub uuid: String,
    pub identifier: String,
    /// The person's name when linked, else the provider's own name.
    pub name: String,
    /// `(uuid, name)` of the person.
    pub person: Option<(String, String)>,
    pub retired: bool,
    /// The account acting as this provider (the account whose person it is).
    pub user: Option<Arc<UserRecord>>,
    /// The stored record, for a managed provider (its audit and retirement).
    pub record: Option<ProviderRecord>,
}

impl Provider {
    pub fn of_account(user: Arc<UserRecord>) -> Provider {
        Provider {
            uuid: account_provider_uuid(&user),
            identifier: user.system_id.clone(),
            name: user.person_name.clone(),
            person: Some((user.person_uuid.clone(), user.person_name.clone())),
            retired: user.retired,
            user: Some(user),
            record: None,
        }
    }

    /// A managed provider, with the account whose person it is (if any).
    pub fn managed(
        record: ProviderRecord,
        user: Option<Arc<UserRecord>>,
        store: &Store,
    ) -> Provider {
        let user = user.filter(|u| record.person.as_deref() == Some(u.person_uuid.as_str()));
        let person = record.person.as_deref().map(|p| {
            let name = match &user {
                Some(u) => u.person_name.clone(),
                None => patient_name(store, p).unwrap_or_default(),
            };
            (p.to_string(), name)
        });
        Provider {
            uuid: record.uuid.clone(),
            identifier: record.identifier.clone(),
            name: person
                .as_ref()
                .map(|(_, n)| n.clone())
                .or_else(|| record.name.clone())
                .unwrap_or_default(),
            person,
            retired: record.retiring.voided,
            user,
            record: Some(record),
        }
    }
}

/// The name of a patient's person, as the patient's representation shows it.
pub fn patient_name(store: &Store, uuid: &str) -> Option<String> {
    let p = store.patient(uuid).ok()??;
    Some(crate::domains::patient::repr::person_display(&p))
}

/// Every provider: the managed ones, then the accounts' own providers for accounts whose
/// person has no managed provider. Retired ones included (callers filter).
pub fn all(store: &Store) -> StoreResult<Vec<Provider>> {
    let users: Vec<Arc<UserRecord>> = store.users()?.into_iter().map(Arc::new).collect();
    let records = store::providers(store)?;
    let mut out: Vec<Provider> = Vec::with_capacity(records.len() + users.len());
    for u in &users {
        let managed_for_person = records
            .iter()
            .any(|r| r.person.as_deref() == Some(u.person_uuid.as_str()));
        let uuid = account_provider_uuid(u);
        if !managed_for_person && !records.iter().any(|r| r.uuid == uuid) {
            out.push(Provider::of_account(u.clone()));
        }
    }
    let managed: Vec<Provider> = records
        .into_iter()
        .map(|r| {
            let user = account_of_person(&users, r.person.as_deref());
            Provider::managed(r, user, store)
        })
        .collect();
    out.splice(0..0, managed);
    Ok(out)
}

/// One provider by uuid, of either kind.
pub fn find(store: &Store, uuid: &str) -> StoreResult<Option<Provider>> {
    if let Some(record) = store::provider(store, uuid)? {
        let users: Vec<Arc<UserRecord>> = store.users()?.into_iter().map(Arc::new).collect();
        let user = account_of_person(&users, record.person.as_deref());
        return Ok(Some(Provider::managed(record, user, store)));
    }
    Ok(store
        .users()?
        .into_iter()
        .find(|u| account_provider_uuid(u) == uuid)
        .map(|u| Provider::of_account(Arc::new(u))))
}

/// The provider an account records encounters as (the session's `currentProvider`).
pub fn current_for(store: &Store, user: &UserRecord) -> StoreResult<Option<Provider>> {
    let records = store::providers(store)?;
    let own = account_provider_uuid(user);
    let mine: Vec<ProviderRecord> = records
        .iter()
        .filter(|r| r.person.as_deref() == Some(user.person_uuid.as_str()))
        .cloned()
        .collect();
    // The account's own provider, made managed and then moved to another person, is that
    // person's now: the account then has none of its own.
    let own_moved = records.iter().any(|r| r.uuid == own);
    if mine.is_empty() && !own_moved {
        return Ok(Some(Provider::of_account(Arc::new(user.clone()))));
    }
    Ok(mine
        .into_iter()
        .find(|r| !r.retiring.voided)
        .map(|r| Provider::managed(r, Some(Arc::new(user.clone())), store)))
}

/// The provider an encounter names, read for its representation: a managed provider by
/// one point read, else the account's own provider of `acting` (the account found when the
/// encounter was written).
pub fn named_in_encounter(
    store: &Store,
    uuid: &str,
    acting: Option<Arc<UserRecord>>,
) -> Option<Provider> {
    if let Some(record) = store::provider(store, uuid).ok()? {
        let linked = record.person.as_deref();
        let acting = match acting {
            Some(u) if linked == Some(u.person_uuid.as_str()) => Some(u),
            // Linked to another person since the encounter was written (rare): find the
            // account of the person it is now.
            _ if linked.is_some() => store
                .users()
                .ok()?
                .into_iter()
                .find(|u| Some(u.person_uuid.as_str()) == linked)
                .map(Arc::new),
            _ => None,
        };
        return Some(Provider::managed(record, acting, store));
    }
    acting
        .filter(|u| account_provider_uuid(u) == uuid)
        .map(Provider::of_account)
}

fn account_of_person(users: &[Arc<UserRecord>], person: Option<&str>) -> Option<Arc<UserRecord>> {
    let person = person?;
    users.iter().find(|u| u.person_uuid == person).cloned()
}
