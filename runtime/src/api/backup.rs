//! `GET ws/rest/v1/backup`: a consistent online snapshot of the store, streamed as JSON
//! lines while the service keeps serving (redb read transactions see one committed state
//! and do not block writers). The last line counts the records, so a backup cut short is
//! refused by `runtime restore`. Privilege: Take Backups.

use super::Caller;
use crate::AppState;
use crate::error::{ApiResult, json_headers};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tokio::sync::mpsc;

pub const BACKUP_PRIVILEGE: &str = "Take Backups";

/// A `Write` that hands 64 KiB chunks to the response body.
struct ChannelWriter {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(64 * 1024),
        ));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away")
        })
    }
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= 64 * 1024 {
            self.send()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

pub async fn backup(State(state): State<Arc<AppState>>, caller: Caller) -> ApiResult<Response> {
    caller.require(&[BACKUP_PRIVILEGE])?;
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let st = state.clone();
    tokio::task::spawn_blocking(move || {
        let mut w = ChannelWriter {
            tx: tx.clone(),
            buf: Vec::with_capacity(64 * 1024),
        };
        match st.store.snapshot(&mut w) {
            Ok(n) => tracing::info!(records = n, "backup streamed"),
            Err(e) => {
                // Ending the stream without its end line marks the backup as incomplete.
                tracing::error!(%e, "backup failed");
                let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let mut headers = json_headers();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"emr-backup-{stamp}.ndjson\""
    )) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok((StatusCode::OK, headers, Body::from_stream(stream)).into_response())
}
