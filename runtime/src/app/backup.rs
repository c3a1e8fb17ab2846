//! `GET ws/rest/v1/backup`: a consistent online snapshot of the store, as JSON lines, taken
//! while the service keeps serving (a redb read transaction sees one committed state and
//! does not block writers).
//!
//! The snapshot is first written to a temporary file beside the store (unlinked at once,
//! so nothing is left behind), and only then streamed: the read transaction ends when the
//! snapshot is written, not when the client has downloaded it. A slow or stalled client
//! therefore cannot pin old pages and make the store file grow while writes go on. At most
//! `CONCURRENT_BACKUPS` run at once (each holds a temporary file); more are answered 503
//! with `Retry-After`. The last line counts the records and carries a checksum, so a backup
//! cut short or altered is refused by `runtime restore`. Privilege: Take Backups.

use crate::http::AppState;
use crate::http::Caller;
use crate::http::error::{ApiError, ApiResult, json_headers};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::io::{Read, Seek, Write};
use std::sync::Arc;

pub const BACKUP_PRIVILEGE: &str = "Take Backups";

/// Backups running at once (snapshot or download).
pub const CONCURRENT_BACKUPS: usize = 2;

pub async fn backup(
    State(state): State<Arc<AppState>>,
    method: axum::http::Method,
    caller: Caller,
) -> ApiResult<Response> {
    caller.require(&[BACKUP_PRIVILEGE])?;
    // axum answers HEAD with the GET handler; a HEAD must not take a backup.
    if method == axum::http::Method::HEAD {
        let mut headers = json_headers();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        return Ok((StatusCode::OK, headers).into_response());
    }
    let permit = state
        .backups
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::Busy {
            message: "Backups are already being taken: try again later",
            code: "emr.backup.busy",
            retry_after_secs: 60,
        })?;
    let st = state.clone();
    let (file, records, size) = crate::http::blocking(move || {
        let mut file = scratch_file(&st.store.scratch_dir())?;
        let records = {
            let mut out = std::io::BufWriter::with_capacity(256 * 1024, &mut file);
            let n = st.store.snapshot(&mut out).map_err(|e| match e {
                crate::store::RestoreError::Store(e) => ApiError::from(e),
                other => ApiError::internal(other),
            })?;
            out.flush().map_err(disk_error)?;
            n
        };
        let size = file.stream_position().map_err(ApiError::internal)?;
        file.rewind().map_err(ApiError::internal)?;
        Ok((file, records, size))
    })
    .await?;
    tracing::info!(records, bytes = size, "backup snapshot taken; streaming it");
    let stream = futures_util::stream::unfold(Some((file, permit)), |held| async move {
        let (mut file, permit) = held?;
        let chunk = tokio::task::spawn_blocking(move || {
            let mut buf = vec![0u8; 256 * 1024];
            let n = file.read(&mut buf)?;
            buf.truncate(n);
            Ok::<_, std::io::Error>((file, buf))
        })
        .await;
        match chunk {
            Ok(Ok((_, buf))) if buf.is_empty() => None,
            Ok(Ok((file, buf))) => Some((Ok(Bytes::from(buf)), Some((file, permit)))),
            Ok(Err(e)) => Some((Err(e), None)),
            Err(e) => Some((Err(std::io::Error::other(e)), None)),
        }
    });
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let mut headers = json_headers();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"emr-backup-{stamp}.ndjson\""
    )) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok((StatusCode::OK, headers, Body::from_stream(stream)).into_response())
}

/// A new file in `dir`, removed from the directory at once: it lives as long as the
/// download holds it, and a crash leaves nothing behind.
fn scratch_file(dir: &std::path::Path) -> ApiResult<std::fs::File> {
    let path = dir.join(format!(".backup-{}.partial", uuid::Uuid::new_v4()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(disk_error)?;
    let _ = std::fs::remove_file(&path);
    Ok(file)
}

/// A failure to write the temporary snapshot: a full volume is the store's 507.
fn disk_error(e: std::io::Error) -> ApiError {
    ApiError::from(crate::store::StoreError::Unwritable(
        crate::store::WriteFailure::from_io(&e),
    ))
}
