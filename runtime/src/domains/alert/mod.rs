//! Alerts, as OpenMRS core keeps them (`org.openmrs.notification.Alert`): a short text
//! addressed to users, kept until it expires. What writes them here is the stock rules'
//! evaluation (`stock::evaluation`); an administrator may also write them through the API.
//!
//! Rules (core's `AlertService` and webservices.rest's `alert` resource):
//! - An alert has a text of at most 512 characters and at least one recipient, each an
//!   account of this system; it may expire (`dateToExpire`) and may be satisfied by any
//!   one recipient reading it (`satisfiedByAny`).
//! - Writing or purging one needs Manage Alerts. Reading every alert needs Get Alerts;
//!   without it a user reads the alerts addressed to her, as core's user-scoped reads allow
//!   (an alert addressed to someone else is then not found).
//! - An expired alert is left out of a listing unless `includeExpired=true`.
//! - Alerts are purged, never voided: `DELETE` without `purge=true` is refused.

pub mod rest;
pub mod store;

use crate::store::record::Audit;
use serde::{Deserialize, Serialize};

pub const GET_ALERTS: &str = "Get Alerts";
pub const MANAGE_ALERTS: &str = "Manage Alerts";

/// Core's `Alert.TEXT_MAX_LENGTH`.
pub const TEXT_MAX_LENGTH: usize = 512;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertRecord {
    pub v: u32,
    pub uuid: String,
    /// Core's integer id, numbered in order of writing.
    pub alert_id: u64,
    pub text: String,
    #[serde(default)]
    pub satisfied_by_any: bool,
    #[serde(default)]
    pub alert_read: bool,
    /// Key form (`datetime_key`); none: never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_to_expire: Option<String>,
    pub recipients: Vec<AlertRecipient>,
    pub audit: Audit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertRecipient {
    pub uuid: String,
    /// A user's uuid.
    pub user: String,
    #[serde(default)]
    pub alert_read: bool,
}

impl AlertRecord {
    /// A new alert for `users` (the id is given when it is written).
    pub fn new(
        text: &str,
        users: &[String],
        date_to_expire: Option<String>,
        author: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> AlertRecord {
        AlertRecord {
            v: 1,
            uuid: crate::store::record::new_uuid(),
            alert_id: 0,
            text: truncated(text),
            satisfied_by_any: false,
            alert_read: false,
            date_to_expire,
            recipients: users.iter().map(|u| recipient(u)).collect(),
            audit: Audit::new(author, now),
        }
    }

    /// Whether it has expired by `now_key` (a `datetime_key`).
    pub fn expired(&self, now_key: &str) -> bool {
        self.date_to_expire.as_deref().is_some_and(|e| e <= now_key)
    }

    pub fn addressed_to(&self, user: &str) -> bool {
        self.recipients.iter().any(|r| r.user == user)
    }
}

/// A new recipient entry for a user.
pub fn recipient(user: &str) -> AlertRecipient {
    AlertRecipient {
        uuid: crate::store::record::new_uuid(),
        user: user.to_string(),
        alert_read: false,
    }
}

/// The text cut to `TEXT_MAX_LENGTH` characters, as core cuts what it writes itself.
pub fn truncated(text: &str) -> String {
    text.chars().take(TEXT_MAX_LENGTH).collect()
}
