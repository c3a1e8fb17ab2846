//! The HTTP server loop, in place of `axum::serve`, for the limits a facility's server needs
//! against clients that connect and then say nothing or trickle bytes:
//!
//! - at most `max_connections` connections are served at once; past it, new connections
//!   wait in the kernel's listen queue until one ends, so the process never runs out of
//!   file descriptors and the connections it has keep being served;
//! - a connection whose request headers do not arrive within `header_timeout` is closed,
//!   and so is a kept-alive connection whose next request does not start within it (hyper
//!   starts the header timer when it waits for a request head, idle or not): a silent client
//!   holds its place for that long at most; a request body that stalls is cut by the body
//!   reader (`http::JsonBody`, 408 after `body_timeout`);
//! - a client that stops reading its answer (the socket's send buffer stays full) is cut
//!   off after `body_timeout` without progress (`StallGuard`), so it cannot hold its place;
//! - on shutdown, nothing new is accepted, idle connections are closed and requests in
//!   flight are finished, for `SHUTDOWN_GRACE` at most.
//!
//! Each connection is HTTP/1.1 (the gateway and browsers speak it to this server) with the
//! peer's address as `ConnectInfo`, which the login throttle reads.

use axum::Router;
use axum::extract::connect_info::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// 1 to `MAX_CONNECTIONS`.
    pub max_connections: usize,
    pub header_timeout: Duration,
}

/// The most connections `EMR_MAX_CONNECTIONS` may allow.
pub const MAX_CONNECTIONS: usize = 65_535;

/// How long a shutdown waits for requests in flight.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

impl Limits {
    /// How long a request body may take to arrive once its headers have: twice the header
    /// timeout (a form's body is larger than its headers; rural links are slow).
    pub fn body_timeout(&self) -> Duration {
        self.header_timeout * 2
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 512,
            header_timeout: Duration::from_secs(30),
        }
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then waits for the connections
/// in flight to end.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let places = Arc::new(Semaphore::new(limits.max_connections));
    let (stop, stopped) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        // A place first: at the cap, connections are left in the listen queue.
        let place = tokio::select! {
            place = places.clone().acquire_owned() => match place {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was accepted: the
                    // next one may work; a pause keeps a persistent error from spinning.
                    tracing::warn!("cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let service =
            TowerToHyperService::new(app.clone().layer(axum::Extension(ConnectInfo(peer))));
        let mut stopped = stopped.clone();
        tokio::spawn(async move {
            let _place = place;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .keep_alive(true);
            // No upgrades: no route switches protocols, and an upgraded socket would leave
            // its place while it lives on.
            let stream = StallGuard::new(stream, limits.body_timeout());
            let connection = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let mut stopping = false;
            loop {
                tokio::select! {
                    done = connection.as_mut() => {
                        if let Err(e) = done {
                            tracing::debug!(%peer, "connection ended: {e}");
                        }
                        break;
                    }
                    changed = stopped.changed(), if !stopping => {
                        // Shutdown (or the server gone): finish the request in flight, then close.
                        stopping = true;
                        let _ = changed;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every place back: every connection has ended (a client that stalls a request in
    // flight is not waited for past the grace period).
    let all = limits.max_connections.min(MAX_CONNECTIONS) as u32;
    if tokio::time::timeout(SHUTDOWN_GRACE, places.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("stopping with requests still in flight after {SHUTDOWN_GRACE:?}");
    }
}

/// A connection's socket whose writes fail once they have made no progress for `limit`:
/// the peer has stopped reading (its window and our send buffer are full). Reads pass
/// through; a write that completes, even in part, starts the wait afresh.
struct StallGuard<S> {
    inner: S,
    limit: Duration,
    /// Armed when a write first finds the socket full; dropped on progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> StallGuard<S> {
    fn new(inner: S, limit: Duration) -> StallGuard<S> {
        StallGuard {
            inner,
            limit,
            stalled: None,
        }
    }

    /// What a write that found the socket full answers: still pending, or the timeout.
    fn waited<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading its answer",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<T>(
        &mut self,
        done: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match done {
            Poll::Pending => self.waited(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let done = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.progressed(done, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let done = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.progressed(done, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let done = Pin::new(&mut self.inner).poll_flush(cx);
        self.progressed(done, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let done = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.progressed(done, cx)
    }
}
