//! Where a finished request goes: its metrics and `/stats` counts, then (only when some
//! target wants it) its access record for the log, `/recent` and the taps.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Response;

use super::access::{Head, Pending as PendingLine, Targets};
use super::answer::Answer;
use super::capture::Capture;
use super::late::Late;
use super::{Outcome, Recorder};
use crate::body::ProxyBody;
use crate::metrics::{Name, RequestLabels, RouteLabels, TraceExemplar, TraceHex};
use crate::tap::Facts;

// === impl Recorder ===

impl Recorder {
    pub(super) fn record(
        self: &Arc<Self>,
        resp: &Response<ProxyBody>,
        start: Instant,
        outcome: &Outcome,
        seen: Option<Capture>,
    ) {
        let duration = start.elapsed();
        let code = resp.status().as_u16();
        let answer = Answer::of(resp, code, seen.as_ref().is_none_or(Capture::grpc));
        let forwarded = outcome.forwarded.lock().ok().and_then(|f| f.clone());
        let cluster = forwarded.as_ref().map(|f| f.cluster.clone());
        let (unrouted, metrics) = (&self.unrouted, &self.metrics);
        match outcome.route.get() {
            Some(route) => {
                route.requests.inc(cluster.as_ref(), code, &metrics.empty);
                answer.count(duration, &route.state.stats, forwarded.as_ref());
                let exemplar = outcome
                    .traced()
                    .filter(|(_, sampled)| *sampled)
                    .map(|(id, _)| TraceExemplar {
                        trace_id: TraceHex(id.0),
                    });
                route
                    .duration
                    .observe(duration.as_secs_f64(), exemplar, None);
                if let Some(f) = &forwarded {
                    let request = f.sent.saturating_duration_since(start);
                    let response = Instant::now().saturating_duration_since(f.answered);
                    route.overhead.observe(
                        &f.cluster,
                        request.as_secs_f64(),
                        response.as_secs_f64(),
                    );
                }
            }
            None => {
                let empty = &metrics.empty;
                if code == 404 && cluster.is_none() {
                    unrouted.inc();
                } else {
                    metrics
                        .requests
                        .get_or_create(&RequestLabels {
                            listener: Name(self.listener.clone()),
                            route: Name(empty.clone()),
                            cluster: Name(cluster.clone().unwrap_or_else(|| empty.clone())),
                            model: Name(empty.clone()),
                            code,
                        })
                        .inc();
                }
                metrics
                    .request_duration
                    .get_or_create(&RouteLabels {
                        listener: Name(self.listener.clone()),
                        route: Name(empty.clone()),
                    })
                    .observe(duration.as_secs_f64(), None, None);
            }
        }
        let Some(seen) = seen else {
            return;
        };
        let failed = answer.failed || answer.rendered.is_some();
        let Some(targets) = self.targets(outcome, Some(code), failed, duration, &seen) else {
            if seen.grpc() && !answer.status_known {
                outcome.wait_for_trailers(Late {
                    capture: seen,
                    recorder: self.clone(),
                    status: code,
                    ttfb: duration,
                });
            }
            return;
        };
        let line = PendingLine::new(
            targets,
            self.listener.clone(),
            seen.seen(),
            outcome,
            forwarded.as_ref(),
            Some(Head::of(resp, outcome.route.get().map(|r| &**r))),
            duration,
        );
        if let Ok(mut slot) = outcome.access.lock() {
            *slot = Some(Box::new(line));
            outcome
                .has_access
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }

    /// Where this request's record goes: the access log and `/recent` unless its route is
    /// silenced, and the taps when one admits it (a silenced route is still tapped).
    /// `None`: nowhere, so no record is built.
    pub(super) fn targets(
        &self,
        outcome: &Outcome,
        status: Option<u16>,
        failed: bool,
        ttfb: Duration,
        seen: &Capture,
    ) -> Option<Targets> {
        let route = outcome.route.get();
        let logged = route.is_none_or(|r| r.config.access_log);
        // One relaxed load when no tap is attached.
        let tapped = self.taps.listening()
            && self.taps.interested(&Facts {
                route: route.map(|r| &*r.name),
                model: outcome.model.get().map(|m| m.name.as_str()),
                status,
                authority: seen.authority(),
            });
        let targets = Targets {
            log: self.access_log.clone().filter(|_| logged),
            recent: (logged && self.recent.wants(failed, ttfb)).then(|| self.recent.clone()),
            taps: tapped.then(|| self.taps.clone()),
        };
        let any = targets.log.is_some() || targets.recent.is_some() || targets.taps.is_some();
        any.then_some(targets)
    }
}
