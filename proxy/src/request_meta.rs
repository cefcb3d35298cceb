//! Request metadata: what the metrics and the access log learn about each request. This layer
//! sits just inside the request id and outside the error renderer, so it records the answer
//! the caller actually got (a gRPC failure is HTTP 200 with a `grpc-status`).
//!
//! Inner layers write what they learn into the request's [`Outcome`] extension (routing: the
//! route and the model; the balancer: cluster, endpoint, attempts), and this layer reads it
//! once the response headers are ready.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ferry_filters::model_name::ModelRef;
use ferry_filters::trace_context::{SpanId, TraceId};
use http::{Request, Response};

use crate::access_log::AccessLog;
use crate::body::{BoxError, ProxyBody};
use crate::metrics::{Metrics, Name, RequestLabels};
use crate::route::RouteEntry;
use crate::tap::Taps;

mod access;
mod answer;
mod capture;
mod future;
mod late;
mod recorder;

use access::Pending as PendingLine;
use capture::Capture;
pub use future::ResponseFuture;

/// What inner layers learned about one request.
#[derive(Debug)]
pub struct Outcome {
    started: Instant,
    route: OnceLock<Arc<RouteEntry>>,
    model: OnceLock<ModelRef>,
    forwarded: Mutex<Option<Forwarded>>,
    /// A mutex, not a `OnceLock`: set once per request on every traced route, and
    /// `OnceLock::set` goes through `Once`'s slow path (~80 instructions) each time.
    trace: Mutex<Option<(TraceId, bool)>>,
    /// The tokens the answer's `usage` reported (routes with token budgets).
    tokens: Mutex<Option<crate::access_log::Tokens>>,
    /// This hop's recorded server span (set when an attempt opens its client span).
    span: OnceLock<SpanId>,
    /// Request body bytes read so far (the connection's body wrapper counts them).
    request_bytes: std::sync::atomic::AtomicU64,
    /// The access record waiting for the response body to end; only with an access log.
    access: Mutex<Option<Box<PendingLine>>>,
    /// Whether `access` was filled: without an access log, finishing a request reads this
    /// flag and takes no lock.
    has_access: std::sync::atomic::AtomicBool,
    /// The route's `/stats` in-flight mark, removed when the answer ends (this drops).
    in_flight: OnceLock<crate::stats::InFlight>,
    /// A gRPC answer with no record yet, until its trailers' status is known.
    late: Mutex<Option<late::Late>>,
}

/// Where a request went.
#[derive(Debug, Clone)]
pub struct Forwarded {
    /// Cluster.
    pub cluster: Arc<str>,
    /// Endpoint of the last attempt.
    pub endpoint: SocketAddr,
    /// Last attempt: sent → response headers.
    pub upstream_duration: Duration,
    /// Attempts made.
    pub attempts: u32,
    /// When the last attempt was sent.
    pub sent: Instant,
    /// When its response headers arrived (when it ended, for a failed attempt).
    pub answered: Instant,
    /// The endpoint's `/stats` row.
    pub stats: Arc<crate::stats::Cell>,
}

/// Tower layer recording metrics and access records for one listener.
#[derive(Debug, Clone)]
pub struct RequestMetaLayer {
    shared: Arc<Recorder>,
}

/// The service made by [`RequestMetaLayer`].
#[derive(Debug, Clone)]
pub struct RequestMeta<S> {
    inner: S,
    shared: Arc<Recorder>,
}

#[derive(Debug)]
struct Recorder {
    listener: Arc<str>,
    /// `ferry_requests_total` of unrouted 404s, the common unrouted answer, registered once.
    unrouted: prometheus_client::metrics::counter::Counter,
    metrics: Arc<Metrics>,
    access_log: Option<Arc<AccessLog>>,
    recent: Arc<crate::recent::Recent>,
    /// The process's live taps: records are also built for those a tap admits.
    taps: Arc<Taps>,
}

// === impl Outcome ===

impl Default for Outcome {
    fn default() -> Self {
        Outcome::new(Instant::now())
    }
}

impl Outcome {
    /// The slot of a request received at `started`.
    pub fn new(started: Instant) -> Self {
        Outcome {
            started,
            route: OnceLock::new(),
            model: OnceLock::new(),
            forwarded: Mutex::new(None),
            trace: Mutex::new(None),
            span: OnceLock::new(),
            tokens: Mutex::new(None),
            request_bytes: std::sync::atomic::AtomicU64::new(0),
            access: Mutex::new(None),
            has_access: std::sync::atomic::AtomicBool::new(false),
            in_flight: OnceLock::new(),
            late: Mutex::new(None),
        }
    }

    /// Counts `n` more request body bytes.
    pub fn add_request_bytes(&self, n: u64) {
        self.request_bytes
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Observes the request's body sizes into its route's histograms (when it had a route)
    /// and writes its access record: called once the answer's body is done, when both are
    /// known.
    pub fn observe_sizes(&self, response_bytes: u64) {
        let request = self
            .request_bytes
            .load(std::sync::atomic::Ordering::Relaxed);
        if let Some(route) = self.route.get() {
            route.request_size.observe(request as f64);
            route.response_size.observe(response_bytes as f64);
        }
        if let Some(line) = self.take_access() {
            let tokens = self.tokens.lock().ok().and_then(|t| *t);
            line.finish(request, response_bytes, tokens);
        }
    }

    /// Records the answer's token usage (read by a route's token budgets).
    pub fn set_usage(&self, usage: ferry_filters::limits::Usage) {
        if let Ok(mut t) = self.tokens.lock() {
            *t = Some(crate::access_log::Tokens {
                input: usage.prompt,
                output: usage.completion,
            });
        }
    }

    /// Records this hop's server span id.
    pub fn set_span(&self, id: SpanId) {
        let _ = self.span.set(id);
    }

    /// When the request was received.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Records the request's trace id and whether it is sampled.
    pub fn set_trace(&self, id: TraceId, sampled: bool) {
        if let Ok(mut t) = self.trace.lock()
            && t.is_none()
        {
            *t = Some((id, sampled));
        }
    }

    /// The request's trace id, when the route traces.
    pub fn trace(&self) -> Option<TraceId> {
        self.traced().map(|(id, _)| id)
    }

    /// The request's trace id and sampling decision, when the route traces.
    fn traced(&self) -> Option<(TraceId, bool)> {
        self.trace.lock().ok().and_then(|t| *t)
    }

    /// The outcome slot of a request, if the metadata layer put one there.
    pub fn of<B>(req: &Request<B>) -> Option<&Arc<Outcome>> {
        req.extensions().get::<Arc<Outcome>>()
    }

    /// Records the matched route.
    pub fn set_route(&self, route: Arc<RouteEntry>) {
        let stats = route.state.stats.clone();
        if self.route.set(route).is_ok() {
            let _ = self.in_flight.set(stats.start());
        }
    }

    /// Records the model the request names.
    pub fn set_model(&self, model: ModelRef) {
        let _ = self.model.set(model);
    }

    /// Records an attempt's destination and time (the last attempt wins).
    pub fn set_forwarded(&self, forwarded: Forwarded) {
        if let Ok(mut slot) = self.forwarded.lock() {
            *slot = Some(forwarded);
        }
    }

    /// The endpoint of the last attempt, if one was made.
    pub fn endpoint(&self) -> Option<SocketAddr> {
        self.forwarded
            .lock()
            .ok()
            .and_then(|f| f.as_ref().map(|f| f.endpoint))
    }
}

// === impl RequestMetaLayer ===

impl RequestMetaLayer {
    /// Records into `metrics` (a handle sharing the process registry) under `listener`, and
    /// access records to `access_log`, `/recent` and any tap attached to `taps`.
    pub fn new(
        listener: Arc<str>,
        metrics: &Arc<Metrics>,
        access_log: Option<Arc<AccessLog>>,
        taps: Arc<Taps>,
    ) -> Self {
        let empty = metrics.empty.clone();
        let unrouted = metrics
            .requests
            .get_or_create(&RequestLabels {
                listener: Name(listener.clone()),
                route: Name(empty.clone()),
                cluster: Name(empty.clone()),
                model: Name(empty),
                code: 404,
            })
            .clone();
        RequestMetaLayer {
            shared: Arc::new(Recorder {
                listener,
                unrouted,
                metrics: metrics.clone(),
                recent: metrics.recent.clone(),
                access_log,
                taps,
            }),
        }
    }
}

impl<S> tower::Layer<S> for RequestMetaLayer {
    type Service = RequestMeta<S>;

    fn layer(&self, inner: S) -> RequestMeta<S> {
        RequestMeta {
            inner,
            shared: self.shared.clone(),
        }
    }
}

// === impl RequestMeta ===

impl<S> tower::Service<Request<ProxyBody>> for RequestMeta<S>
where
    S: tower::Service<Request<ProxyBody>, Response = Response<ProxyBody>, Error = BoxError>,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ProxyBody>) -> Self::Future {
        // The connection service made the request's outcome (it counts the bodies); a stack
        // served another way gets one here.
        let outcome = match Outcome::of(&req) {
            Some(o) => o.clone(),
            None => {
                let o = Arc::new(Outcome::new(Instant::now()));
                req.extensions_mut().insert(o.clone());
                o
            }
        };
        let start = outcome.started();
        // A sink copies the request's texts; without one `/recent` only glances (reference
        // counts) and copies for the few answers it keeps.
        let seen = Some(Capture::of(&req, self.shared.access_log.is_some()));
        ResponseFuture::new(
            self.inner.call(req),
            Pending {
                recorder: self.shared.clone(),
                start,
                outcome,
                seen,
            },
        )
    }
}

/// What is recorded once the answer is ready.
#[derive(Debug)]
struct Pending {
    recorder: Arc<Recorder>,
    start: Instant,
    outcome: Arc<Outcome>,
    seen: Option<Capture>,
}
