//! The outermost layer of every request: the request's log span and its one log line, the
//! gateway's request id echoed on the answer, and the `WWW-Authenticate` challenge on 401
//! answers unless the client sent `Disable-WWW-Authenticate: true`, and `Connection: close`
//! on an answer given before the request's body was read (the connection cannot be kept).
//!
//! One hand-written layer rather than tower-http's trace and request-id layers and an axum
//! middleware: together those cost about a quarter of a small read's throughput. When the
//! request log is off (`EMR_LOG=warn`) no span is built and nothing is timed.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;
use tower::{Layer, Service};
use tracing::Instrument;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Wraps every route (see `app::app`).
#[derive(Clone)]
pub struct EdgeLayer {
    challenge: HeaderValue,
}

impl EdgeLayer {
    /// `app_path` names the realm of the Basic challenge.
    pub fn new(app_path: &str) -> EdgeLayer {
        let realm = format!("Basic realm=\"OpenMRS at {app_path}\"");
        EdgeLayer {
            challenge: HeaderValue::from_str(&realm)
                .unwrap_or_else(|_| HeaderValue::from_static("Basic realm=\"OpenMRS\"")),
        }
    }
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Edge<S> {
        Edge {
            inner,
            challenge: self.challenge.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Edge<S> {
    inner: S,
    challenge: HeaderValue,
}

type EdgeFuture = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<S> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = EdgeFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> EdgeFuture {
        // The clone that was polled ready is the one called (tower's contract).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        if req.extensions().get::<crate::http::ActingAs>().is_some() {
            // A read the runtime makes of itself (a bulk export's, hundreds of thousands of
            // them): no log line each; the export's own requests are logged.
            return Box::pin(inner.call(req));
        }
        let (req, body_read) = track_body(req);
        let headers = req.headers();
        let request_id = headers.get(REQUEST_ID).cloned();
        let challenge = (!challenge_disabled(headers)).then(|| self.challenge.clone());
        // Fields are evaluated only when the span is enabled.
        let span = tracing::info_span!(
            "request",
            id = %log_id(request_id.as_ref()),
            method = %req.method(),
            path = %req.uri().path()
        );
        // Timed only when the line will be written.
        let began = (!span.is_disabled()).then(Instant::now);
        let answer = inner.call(req);
        Box::pin(
            async move {
                let mut res = answer.await?;
                finish(&mut res, request_id, challenge);
                if body_read.is_some_and(|read| !read.load(Ordering::Acquire)) {
                    // The answer came before the request's body was read (a GET with a
                    // body, a write refused first): the connection cannot carry another
                    // request, so the client is told rather than finding it dropped.
                    res.headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                if let Some(began) = began {
                    tracing::info!(
                        status = res.status().as_u16(),
                        latency_ms = began.elapsed().as_secs_f64() * 1e3,
                        "answered"
                    );
                }
                Ok(res)
            }
            .instrument(span),
        )
    }
}

/// A request with a body gets it wrapped, to learn whether the handler read it to its end;
/// one without (most reads) is left as it is.
fn track_body(req: Request) -> (Request, Option<Arc<AtomicBool>>) {
    use axum::body::HttpBody;
    if req.body().is_end_stream() {
        return (req, None);
    }
    let read = Arc::new(AtomicBool::new(false));
    let req = req.map(|inner| {
        axum::body::Body::new(TrackedBody {
            inner,
            read: read.clone(),
        })
    });
    (req, Some(read))
}

/// A request body that records when it has been read to its end.
struct TrackedBody {
    inner: axum::body::Body,
    read: Arc<AtomicBool>,
}

impl axum::body::HttpBody for TrackedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.read.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Repeated slashes in the path count as one, as OpenMRS's servlet container treats them
/// (the O3 chart asks for `/openmrs//ws/rest/v1/visit`), and an API path's trailing slash
/// is dropped, as its servlet mapping drops it (the vitals ask for
/// `conceptreferencerange/?patient=…`); under `spa/` a trailing slash means something.
/// Returns whether the path changed.
pub fn normalise_path(req: &mut Request) -> bool {
    let uri = req.uri();
    let trailing = uri.path().ends_with('/') && uri.path().contains("/ws/");
    if !uri.path().contains("//") && !trailing {
        return false;
    }
    let mut path = String::with_capacity(uri.path().len());
    for c in uri.path().chars() {
        if !(c == '/' && path.ends_with('/')) {
            path.push(c);
        }
    }
    if trailing {
        path.pop();
    }

    if let Some(q) = uri.query() {
        path.push('?');
        path.push_str(q);
    }
    let mut parts = uri.clone().into_parts();
    if let Ok(pq) = path.parse() {
        parts.path_and_query = Some(pq);
        if let Ok(fixed) = axum::http::Uri::from_parts(parts) {
            *req.uri_mut() = fixed;
            return true;
        }
    }
    false
}

fn challenge_disabled(headers: &HeaderMap) -> bool {
    headers
        .get("disable-www-authenticate")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn finish(res: &mut Response, request_id: Option<HeaderValue>, challenge: Option<HeaderValue>) {
    if let Some(id) = request_id {
        res.headers_mut().insert(REQUEST_ID, id);
    }
    if res.status() == StatusCode::UNAUTHORIZED
        && let Some(challenge) = challenge
    {
        res.headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
}

/// The gateway's request id, else one numbered by this process (direct access).
fn log_id(request_id: Option<&HeaderValue>) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    match request_id.and_then(|v| v.to_str().ok()) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!("local-{}", NEXT.fetch_add(1, Ordering::Relaxed)),
    }
}
