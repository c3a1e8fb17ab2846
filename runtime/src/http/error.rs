//! The one error type of the API, rendered as OpenMRS error bodies (docs/api.md, "Errors").
//!
//! 401 is used only for "not logged in"; missing privileges are 403. Server errors keep
//! their cause in the log and send a generic message.

pub use crate::invalid::Invalid;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("not authenticated")]
    Unauthenticated { privileges: Vec<String> },
    #[error("missing privilege")]
    Forbidden { privileges: Vec<String> },
    #[error("not found")]
    NotFound,
    #[error("unknown resource {0}")]
    UnknownResource(String),
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("invalid submission")]
    Invalid(Invalid),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("unsupported media type")]
    UnsupportedMediaType,
    #[error("payload too large")]
    PayloadTooLarge,
    /// The request body did not arrive in time (`serve::Limits::body_timeout`).
    #[error("request timeout")]
    RequestTimeout,
    /// The content is being reloaded and has errors; the body carries the diagnostics.
    #[error("content has errors")]
    ContentErrors(Value),
    /// A bounded resource is taken (password verifications, backups): 503 with
    /// `Retry-After`; `message` says what, `code` names it.
    #[error("busy: {message}")]
    Busy {
        message: &'static str,
        code: &'static str,
        retry_after_secs: u64,
    },
    /// Too many failed logins from this address (`throttle`): 429 with `Retry-After`.
    #[error("too many failed logins")]
    TooManyLogins { retry_after_secs: u64 },
    /// The store cannot write (a full disk, an I/O error): 507 or 503, nothing was saved.
    #[error("the store cannot write")]
    StoreUnavailable { disk_full: bool },
    /// A system this one calls (DHIS2) refused or could not be reached: 502, with why.
    #[error("upstream: {0}")]
    Upstream(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> ApiError {
        match e {
            crate::store::StoreError::Unwritable(f) => ApiError::StoreUnavailable {
                disk_full: f.disk_full,
            },
            crate::store::StoreError::Unavailable(_) => {
                ApiError::StoreUnavailable { disk_full: false }
            }
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl ApiError {
    pub fn internal(e: impl std::fmt::Display) -> ApiError {
        ApiError::Internal(e.to_string())
    }

    /// A validation failure on one field.
    pub fn invalid_field(field: &str, code: &str, message: &str) -> ApiError {
        let mut inv = Invalid::default();
        inv.field(field, code, message);
        ApiError::Invalid(inv)
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthenticated { .. } => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ApiError::NotFound | ApiError::UnknownResource(_) => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) | ApiError::Invalid(_) | ApiError::ContentErrors(_) => {
                StatusCode::BAD_REQUEST
            }
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::TooManyLogins { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::StoreUnavailable { disk_full: true } => StatusCode::INSUFFICIENT_STORAGE,
            ApiError::StoreUnavailable { disk_full: false } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Upstream(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn body(&self) -> Value {
        let envelope = |message: String, code: &str| json!({"error": {"message": message, "code": code, "detail": "", "rawMessage": null, "translatedMessage": null}});
        match self {
            ApiError::Unauthenticated { privileges } => envelope(
                format!(
                    "User is not logged in [Privileges required: {}]",
                    privileges.join(",")
                ),
                "org.openmrs.api.APIAuthenticationException",
            ),
            ApiError::Forbidden { privileges } => envelope(
                format!(
                    "User is logged in but doesn't have the relevant privilege [Privileges required: {}]",
                    privileges.join(",")
                ),
                "org.openmrs.api.APIAuthenticationException",
            ),
            ApiError::NotFound => envelope(
                "Object with given uuid doesn't exist [null]".into(),
                "org.openmrs.module.webservices.rest.web.response.ObjectNotFoundException",
            ),
            ApiError::UnknownResource(name) => envelope(
                format!(
                    "Resource does not exist. Please check documentation for implemented resources and their paths [Unknown resource: v1/{name}]"
                ),
                "org.openmrs.module.webservices.rest.web.response.UnknownResourceException",
            ),
            ApiError::BadRequest(m) => envelope(
                format!("[{m}]"),
                "org.openmrs.module.webservices.rest.web.response.IllegalRequestException",
            ),
            ApiError::Invalid(inv) => {
                let mut fields = Map::new();
                for (field, code, message) in &inv.fields {
                    let list = fields
                        .entry(field.clone())
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(items) = list {
                        items.push(json!({"code": code, "message": message}));
                    }
                }
                let global: Vec<Value> = inv
                    .global
                    .iter()
                    .map(|m| json!({"code": m, "message": m}))
                    .collect();
                json!({"error": {
                    "message": "Invalid Submission",
                    "code": "webservices.rest.error.invalid.submission",
                    "globalErrors": global,
                    "fieldErrors": fields,
                }})
            }
            ApiError::MethodNotAllowed => envelope(
                "[Request method not supported]".into(),
                "org.springframework.web.HttpRequestMethodNotSupportedException",
            ),
            ApiError::UnsupportedMediaType => envelope(
                "[Content type not supported: send application/json]".into(),
                "org.openmrs.module.webservices.rest.web.response.ConversionException",
            ),
            ApiError::PayloadTooLarge => envelope(
                "[Request body is too large]".into(),
                "org.openmrs.module.webservices.rest.web.response.IllegalRequestException",
            ),
            ApiError::RequestTimeout => envelope(
                "[The request body did not arrive in time]".into(),
                "emr.request.timeout",
            ),
            ApiError::ContentErrors(diagnostics) => json!({"error": {
                "message": "[The content has errors; the previous content is still served]",
                "code": "emr.content.invalid",
                "detail": "",
                "diagnostics": diagnostics,
            }}),
            ApiError::Busy { message, code, .. } => envelope(format!("[{message}]"), code),
            ApiError::TooManyLogins { retry_after_secs } => envelope(
                format!(
                    "[Too many failed logins from this address: try again in {retry_after_secs} seconds]"
                ),
                "emr.login.throttled",
            ),
            ApiError::StoreUnavailable { disk_full } => envelope(
                if *disk_full {
                    "[The server's data volume is full: nothing was saved. Free space on it; the service writes again by itself]".into()
                } else {
                    "[The server cannot write to its store (an I/O error): nothing was saved. See the server log; the service retries by itself]".into()
                },
                "emr.store.unwritable",
            ),
            ApiError::Upstream(m) => envelope(format!("[{m}]"), "emr.upstream.refused"),
            ApiError::Internal(_) => envelope(
                "[An internal error occurred; see the server log]".into(),
                "org.openmrs.api.APIException",
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(cause) = &self {
            tracing::error!(%cause, "internal error");
        }
        let status = self.status();
        let mut headers = json_headers();
        match &self {
            ApiError::StoreUnavailable { .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("30"));
            }
            ApiError::TooManyLogins { retry_after_secs }
            | ApiError::Busy {
                retry_after_secs, ..
            } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            _ => {}
        }
        (status, headers, self.body().to_string()).into_response()
    }
}

pub fn json_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json;charset=UTF-8"),
    );
    h
}

pub type ApiResult<T> = Result<T, ApiError>;
