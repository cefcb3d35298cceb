//! The access record of one request, in two steps: what the request said, copied when it
//! arrives (`capture`), and the record built when the
//! response headers are ready ([`Pending`]), finished by the response body's end (bytes sent,
//! the trailers' gRPC status, total time) and then submitted.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use ferry_filters::failure::Rendered;
use http::{HeaderMap, Response};

use super::capture::Seen;
use super::{Forwarded, Outcome};
use crate::access_log::{AccessLog, AccessRecord, RateLimitState, Tokens};
use crate::body::ProxyBody;
use crate::recent::Recent;
use crate::route::RouteEntry;
use crate::tap::Taps;

/// Where a finished record goes.
#[derive(Debug)]
pub(super) struct Targets {
    pub(super) log: Option<Arc<AccessLog>>,
    pub(super) recent: Option<Arc<Recent>>,
    /// The taps, when one admitted the request as its answer began.
    pub(super) taps: Option<Arc<Taps>>,
}

/// What the record takes from the response headers.
#[derive(Debug)]
pub(super) struct Head {
    status: u16,
    grpc_status: Option<u32>,
    /// The reason ferry answered itself.
    failure: Option<&'static str>,
    ratelimit: Option<RateLimitState>,
}

/// A record waiting for its response body to end.
#[derive(Debug)]
pub(crate) struct Pending {
    record: AccessRecord,
    started: Instant,
    targets: Targets,
}

// === impl Head ===

impl Head {
    /// What `resp`, the answer on `route`, says.
    pub(super) fn of(resp: &Response<ProxyBody>, route: Option<&RouteEntry>) -> Self {
        Head {
            status: resp.status().as_u16(),
            grpc_status: grpc_status(resp.headers()),
            failure: resp.extensions().get::<Rendered>().map(|r| r.0),
            // Only where ferry's limiter set the headers: an upstream's own are not ferry's.
            ratelimit: route
                .filter(|r| !r.config.rate_limit.is_empty())
                .and_then(|_| ratelimit(resp.headers())),
        }
    }

    /// An upstream's answer with `status` whose trailers said `grpc_status`.
    pub(super) fn trailed(status: u16, grpc_status: u32) -> Self {
        Head {
            status,
            grpc_status: Some(grpc_status),
            failure: None,
            ratelimit: None,
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
        head: Option<Head>,
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
            status: head.as_ref().map(|h| h.status),
            grpc_status: head.as_ref().and_then(|h| h.grpc_status),
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
            failure: match &head {
                Some(h) => h.failure,
                None => Some(CANCELLED),
            },
            peer_identity: seen.peer_identity,
            trace_id: outcome.trace(),
            span_id: outcome.span.get().copied(),
            tokens: None,
            ratelimit: head.and_then(|h| h.ratelimit),
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
        // A streamed gRPC answer fails in its trailers: its `/stats` rows learn it now, and
        // `/recent` and the taps get the record the response headers did not call for.
        if let Some(code) = grpc_status(trailers).filter(|&c| crate::stats::is_failure(0, Some(c)))
        {
            if let Some(route) = self.route.get() {
                route.state.stats.late_failure();
                if let Ok(f) = self.forwarded.lock()
                    && let Some(f) = f.as_ref()
                {
                    f.stats.late_failure();
                }
            }
            self.failed_in_trailers(code);
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

pub(super) fn grpc_status(headers: &HeaderMap) -> Option<u32> {
    headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}
