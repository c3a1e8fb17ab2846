//! Queue rooms (`queue-room`): the rooms a queue is served in (consultation room
//! 1, room 2…), which a facility's administrator makes on the O3 service-queues admin page.
//! No content folder defines rooms, so they are the store's: one small table keyed by uuid,
//! read whole (a facility has a handful), carried by backups.
//!
//! The queue module's rules: a room has a name and a queue in service; here its name is
//! also unique among the queue's rooms in service. Deleting retires it (with who, when and
//! why); `?purge=true` removes it. Privileges: Get Queue Rooms to read, Manage Queue Rooms
//! to create, change and retire, Purge Queue Rooms to purge.

pub mod rest;
pub mod store;

/// Whether a room (in service or retired) names the queue: a queue's purge is refused then.
pub fn rooms_name_queue(
    store: &crate::store::Store,
    queue: &str,
) -> crate::store::StoreResult<bool> {
    Ok(store::all(store)?.iter().any(|r| r.queue == queue))
}

use crate::store::record::{Audit, Voiding};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueRoomRecord {
    pub v: u32,
    pub uuid: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A queue (the content's or the API's).
    pub queue: String,
    pub audit: Audit,
    pub retiring: Voiding,
}
