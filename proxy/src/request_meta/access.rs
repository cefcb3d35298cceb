//! The access record of one request, in two steps: what the request said, copied when it
//! arrives ([`Seen`], only when the listener has an access log), and the record built when the
//! response headers are ready ([`Pending`]), finished by the response body's end (bytes sent,
//! the trailers' gRPC status, total time) and then submitted.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use ferry_filters::failure::Rendered;
use http::{HeaderMap, Request, Response};

use super::{Forwarded, Outcome};
use crate::access_log::{AccessLog, AccessRecord, RateLimitState, RequestText, Tokens};
use crate::body::ProxyBody;
use crate::headers::X_REQUEST_ID;
use crate::recent::Recent;
use crate::tap::Taps;

/// What the record needs from the request, copied before the request moves on (one
/// allocation: the texts share a buffer).
#[derive(Debug)]
pub(super) struct Seen {
    protocol: http::Version,
    method: http::Method,
    request: RequestText,
    grpc: bool,
    peer_identity: Option<Arc<str>>,
}

/// What the record of a request would need, held as handles (reference counts on the
/// request's own buffers, no copy) until the answer shows whether a record is wanted: with no
/// access-log sink only `/recent` may want it.
#[derive(Debug)]
pub(super) struct Glance {
    protocol: http::Version,
    method: http::Method,
    uri: http::Uri,
    host: Option<http::HeaderValue>,
    request_id: Option<http::HeaderValue>,
    grpc: bool,
    peer_identity: Option<Arc<str>>,
}

/// The request as seen: copied (a sink will write a record) or glanced at.
#[derive(Debug)]
pub(super) enum Capture {
    Seen(Seen),
    Glance(Glance),
}

/// Where a finished record goes.
#[derive(Debug)]
pub(super) struct Targets {
    pub(super) log: Option<Arc<AccessLog>>,
    pub(super) recent: Option<Arc<Recent>>,
    /// The taps, when one admitted the request as its answer began.
    pub(super) taps: Option<Arc<Taps>>,
}

/// A record waiting for its response body to end.
#[derive(Debug)]
pub(crate) struct Pending {
    record: AccessRecord,
    started: Instant,
    targets: Targets,
}

// === impl Seen ===

impl Seen {
    pub(super) fn of<B>(req: &Request<B>) -> Self {
        let headers = req.headers();
        let authority = match req.uri().authority() {
            Some(a) => Some(a.as_str()),
            None => headers
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok()),
        };
        let request_id = headers.get(&X_REQUEST_ID).and_then(|v| v.to_str().ok());
        Seen {
            protocol: req.version(),
            method: req.method().clone(),
            request: RequestText::new(req.uri().path(), authority, request_id),
            grpc: ferry_filters::failure::is_grpc(headers),
            peer_identity: ferry_filters::connection::Connection::of(req)
                .and_then(|c| c.identity.as_ref())
                .map(|i| i.0.clone()),
        }
    }
}

// === impl Glance ===

impl Glance {
    fn of<B>(req: &Request<B>) -> Self {
        let headers = req.headers();
        Glance {
            protocol: req.version(),
            method: req.method().clone(),
            uri: req.uri().clone(),
            host: headers.get(http::header::HOST).cloned(),
            request_id: headers.get(&X_REQUEST_ID).cloned(),
            grpc: ferry_filters::failure::is_grpc(headers),
            peer_identity: ferry_filters::connection::Connection::of(req)
                .and_then(|c| c.identity.as_ref())
                .map(|i| i.0.clone()),
        }
    }
}

// === impl Capture ===

impl Capture {
    /// Copies the request's texts when a sink will want them, else glances.
    pub(super) fn of<B>(req: &Request<B>, sink: bool) -> Self {
        if sink {
            Capture::Seen(Seen::of(req))
        } else {
            Capture::Glance(Glance::of(req))
        }
    }

    /// The request's `:authority` or `Host`, without copying it.
    pub(super) fn authority(&self) -> Option<&str> {
        match self {
            Capture::Seen(s) => s.request.authority(),
            Capture::Glance(g) => match g.uri.authority() {
                Some(a) => Some(a.as_str()),
                None => g.host.as_ref().and_then(|h| h.to_str().ok()),
            },
        }
    }

    /// The texts, copied now if they were only glanced at.
    pub(super) fn seen(self) -> Seen {
        match self {
            Capture::Seen(s) => s,
            Capture::Glance(g) => {
                let authority = match g.uri.authority() {
                    Some(a) => Some(a.as_str()),
                    None => g.host.as_ref().and_then(|h| h.to_str().ok()),
                };
                let request_id = g.request_id.as_ref().and_then(|v| v.to_str().ok());
                Seen {
                    protocol: g.protocol,
                    method: g.method,
                    request: RequestText::new(g.uri.path(), authority, request_id),
                    grpc: g.grpc,
                    peer_identity: g.peer_identity,
                }
            }
        }
    }
}

// === impl Pending ===

impl Pending {
    /// The record of a request whose response headers are ready now (`ttfb` after start).
    pub(super) fn new(
        targets: Targets,
        listener: Arc<str>,
        seen: Seen,
        outcome: &Outcome,
        forwarded: Option<&Forwarded>,
        resp: Option<&Response<ProxyBody>>,
        ttfb: Duration,
    ) -> Self {
        let route = outcome.route.get();
        let (model, model_version) = match outcome.model.get() {
            Some(m) => (Some(m.name.clone()), m.version.clone()),
            None => (None, None),
        };
        // `ttfb` was measured just now: no second clock read for "now".
        let now = outcome.started + ttfb;
        // Ferry's share: before the last attempt left, and after its answer came back.
        let ferry_duration = match forwarded {
            Some(f) => {
                f.sent.saturating_duration_since(outcome.started)
                    + now.saturating_duration_since(f.answered)
            }
            None => ttfb,
        };
        let wall = SystemTime::now();
        let record = AccessRecord {
            start: wall.checked_sub(ttfb).unwrap_or(wall),
            listener,
            route: route.map(|r| r.name.clone()),
            model,
            model_version,
            cluster: forwarded.map(|f| f.cluster.clone()),
            endpoint: forwarded.map(|f| f.endpoint),
            protocol: seen.protocol,
            method: seen.method,
            request: seen.request,
            grpc: seen.grpc,
            status: resp.map(|r| r.status().as_u16()),
            grpc_status: resp.and_then(|r| grpc_status(r.headers())),
            translate: route
                .and_then(|r| r.config.translate.as_ref())
                .map(|t| t.direction.label()),
            bytes_in: 0,
            bytes_out: 0,
            duration: ttfb,
            total: ttfb,
            upstream_duration: forwarded.map(|f| f.upstream_duration),
            ferry_duration,
            attempts: forwarded.map_or(0, |f| f.attempts),
            failure: match resp {
                Some(r) => r.extensions().get::<Rendered>().map(|r| r.0),
                None => Some(CANCELLED),
            },
            peer_identity: seen.peer_identity,
            trace_id: outcome.trace(),
            span_id: outcome.span.get().copied(),
            // Only where ferry's limiter set the headers: an upstream's own are not ferry's.
            tokens: None,
            ratelimit: route
                .filter(|r| !r.config.rate_limit.is_empty())
                .and_then(|_| ratelimit(resp?.headers())),
        };
        Pending {
            record,
            started: outcome.started,
            targets,
        }
    }

    /// The trailers' gRPC status (a streamed gRPC answer's real outcome).
    pub(crate) fn trailers(&mut self, trailers: &HeaderMap) {
        if let Some(code) = grpc_status(trailers) {
            self.record.grpc_status = Some(code);
        }
    }

    /// Completes the record with what the bodies carried and submits it.
    pub(crate) fn finish(mut self, bytes_in: u64, bytes_out: u64, tokens: Option<Tokens>) {
        self.record.tokens = tokens;
        self.record.bytes_in = bytes_in;
        self.record.bytes_out = bytes_out;
        self.record.total = self.started.elapsed();
        if let Some(log) = &self.targets.log {
            log.submit(&self.record);
        }
        if let Some(recent) = &self.targets.recent {
            recent.offer(&self.record);
        }
        if let Some(taps) = &self.targets.taps {
            taps.offer(&self.record);
        }
    }
}

/// The `failure` of a request whose caller went away before the response headers.
const CANCELLED: &str = "cancelled";

/// Writes the line of a request dropped before its response headers (the caller went away).
pub(super) fn cancelled(targets: Targets, listener: &Arc<str>, seen: Seen, outcome: &Outcome) {
    let forwarded = outcome.forwarded.lock().ok().and_then(|f| f.clone());
    let ttfb = outcome.started.elapsed();
    let line = Pending::new(
        targets,
        listener.clone(),
        seen,
        outcome,
        forwarded.as_ref(),
        None,
        ttfb,
    );
    let request = outcome.request_bytes.load(Ordering::Relaxed);
    line.finish(request, 0, None);
}

impl Drop for super::Pending {
    /// Dropped unanswered: the caller went away (or the connection closed) before the response
    /// headers; its access-log line says so, `/recent` keeps it as failed and taps that admit
    /// it show it.
    fn drop(&mut self) {
        if let Some(capture) = self.seen.take()
            && let Some(targets) = self.recorder.targets(
                &self.outcome,
                None,
                true,
                self.outcome.started.elapsed(),
                &capture,
            )
        {
            cancelled(
                targets,
                &self.recorder.listener,
                capture.seen(),
                &self.outcome,
            );
        }
    }
}

// === impl Outcome ===

impl Outcome {
    /// Notes the answer's trailers (their `grpc-status`) for the access record.
    pub fn observe_trailers(&self, trailers: &http::HeaderMap) {
        // A streamed gRPC answer fails in its trailers: its `/stats` rows learn it now.
        if grpc_status(trailers).is_some_and(|c| crate::stats::is_failure(0, Some(c)))
            && let Some(route) = self.route.get()
        {
            route.state.stats.late_failure();
            if let Ok(f) = self.forwarded.lock()
                && let Some(f) = f.as_ref()
            {
                f.stats.late_failure();
            }
        }
        if !self.has_access.load(Ordering::Acquire) {
            return;
        }
        if let Ok(mut slot) = self.access.lock()
            && let Some(line) = slot.as_mut()
        {
            line.trailers(trailers);
        }
    }

    pub(super) fn take_access(&self) -> Option<Box<Pending>> {
        if !self.has_access.load(Ordering::Acquire) {
            return None;
        }
        self.access.lock().ok().and_then(|mut slot| slot.take())
    }
}

impl Drop for Outcome {
    /// A stack served without the connection's body wrapper (tests, `ferry demo`'s in-memory
    /// transport) still writes its record, with the request bytes counted so far.
    fn drop(&mut self) {
        // `&mut self`: nobody else can hold the lock.
        let slot = match self.access.get_mut() {
            Ok(slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(line) = slot {
            let request = self
                .request_bytes
                .load(std::sync::atomic::Ordering::Relaxed);
            line.finish(request, 0, None);
        }
    }
}

fn ratelimit(headers: &HeaderMap) -> Option<RateLimitState> {
    let number = |name: &str| -> Option<u64> { headers.get(name)?.to_str().ok()?.parse().ok() };
    Some(RateLimitState {
        limit: number("x-ratelimit-limit")?,
        remaining: number("x-ratelimit-remaining")?,
        reset_s: number("x-ratelimit-reset")?,
    })
}

fn grpc_status(headers: &HeaderMap) -> Option<u32> {
    headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}
