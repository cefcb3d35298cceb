//! One candidate of a route ([`MirrorTarget`]): choosing requests, starting a mirror, and the
//! task that sends it, reads the candidate's answer (bounded), compares it with the primary's
//! copy and records the outcome.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferry_filters::mirror_compare::{
    Answer, CompareMode, CompareSettings, Comparison, Verdict, compare,
};
use http::{HeaderValue, Request, Response};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::Semaphore;
use super::answer_copy::CopyBody;
use super::read;
use super::tee::{self, Fed, MirrorBody, Sink, TeeState};
use crate::body::ProxyBody;
use crate::cluster::Cluster;
use crate::forward::{Balance, BalanceLayer, EndpointClient};
use crate::metrics::{
    MirrorArgmaxLabels, MirrorCompareLabels, MirrorLabels, MirrorOutcomeLabels, MismatchSample,
    MismatchSamples, Name,
};

/// Answers larger than this are compared on the blocking pool, not on a runtime worker.
const INLINE_COMPARE_BYTES: usize = 256 * 1024;

/// One candidate of a route: its settings, its client, its slots and its metric series.
#[derive(Debug)]
pub struct MirrorTarget {
    /// The candidate's normal upstream path: balancer (no per-try timeout) and endpoint client.
    client: Balance<EndpointClient>,
    /// Requests whose id hashes at or below this are mirrored.
    threshold: u64,
    compare: CompareSettings,
    timeout: Duration,
    slots: Arc<Semaphore>,
    route: HeaderValue,
    labels: MirrorLabels,
    outcomes: Outcomes,
    results: Results,
    max_abs_diff: Histogram,
    samples: MismatchSamples,
    /// The second of the last warn line (mismatches are logged at most once a second).
    last_warn: AtomicU64,
    /// Held back after the candidate could not be reached (see `down`).
    down: super::down::Down,
}

#[derive(Debug)]
struct Outcomes {
    answered: Counter,
    error_status: Counter,
    failed: Counter,
    timeout: Counter,
    overflow: Counter,
    too_large: Counter,
    cancelled: Counter,
    unavailable: Counter,
}

#[derive(Debug)]
struct Results {
    matched: Counter,
    mismatch: Counter,
    error: Counter,
    skipped: Counter,
    agree: Counter,
    disagree: Counter,
}

/// A mirror under way, as the request path sees it.
pub(super) struct Started {
    pub(super) sink: Sink,
    /// Where the primary's answer copy goes (compare only).
    pub(super) answer: Option<oneshot::Sender<Answer>>,
}

/// What [`MirrorTarget::new`] is built from.
#[derive(Debug)]
pub struct TargetParts {
    /// The candidate cluster.
    pub cluster: Arc<Cluster>,
    /// Share mirrored, 0..=1.
    pub fraction: f64,
    /// How answers are compared (`max_body` bounds the copies too).
    pub compare: CompareSettings,
    /// Bound on one mirror, answer included.
    pub timeout: Duration,
    /// Mirrors in flight.
    pub max_in_flight: u32,
    /// Listener and route names.
    pub listener: Arc<str>,
    /// Route name.
    pub route: Arc<str>,
}

// === impl MirrorTarget ===

impl MirrorTarget {
    /// A candidate, its metric series registered once.
    pub fn new(p: TargetParts, metrics: &crate::metrics::Metrics) -> Self {
        let mm = &metrics.mirror;
        let labels = MirrorLabels {
            listener: Name(p.listener.clone()),
            route: Name(p.route.clone()),
            cluster: Name(p.cluster.name.clone()),
        };
        let outcome = |outcome| {
            mm.total
                .get_or_create(&MirrorOutcomeLabels {
                    listener: labels.listener.clone(),
                    route: labels.route.clone(),
                    cluster: labels.cluster.clone(),
                    outcome,
                })
                .clone()
        };
        let result = |result| {
            mm.compare
                .get_or_create(&MirrorCompareLabels {
                    listener: labels.listener.clone(),
                    route: labels.route.clone(),
                    cluster: labels.cluster.clone(),
                    result,
                })
                .clone()
        };
        let argmax = |result| {
            mm.argmax
                .get_or_create(&MirrorArgmaxLabels {
                    listener: labels.listener.clone(),
                    route: labels.route.clone(),
                    cluster: labels.cluster.clone(),
                    result,
                })
                .clone()
        };
        let fraction = p.fraction.clamp(0.0, 1.0);
        MirrorTarget {
            client: tower::Layer::layer(
                &BalanceLayer::new(p.cluster.clone(), None, metrics),
                EndpointClient::new(p.cluster.clone()),
            ),
            threshold: if fraction >= 1.0 {
                u64::MAX
            } else {
                (fraction * u64::MAX as f64) as u64
            },
            compare: p.compare,
            timeout: p.timeout,
            slots: Arc::new(Semaphore::new(p.max_in_flight as usize)),
            route: HeaderValue::try_from(&*p.route).unwrap_or(HeaderValue::from_static("route")),
            outcomes: Outcomes {
                answered: outcome("answered"),
                error_status: outcome("error_status"),
                failed: outcome("failed"),
                timeout: outcome("timeout"),
                overflow: outcome("overflow"),
                too_large: outcome("too_large"),
                cancelled: outcome("cancelled"),
                unavailable: outcome("unavailable"),
            },
            results: Results {
                matched: result("match"),
                mismatch: result("mismatch"),
                error: result("error"),
                skipped: result("skipped"),
                agree: argmax("agree"),
                disagree: argmax("disagree"),
            },
            max_abs_diff: mm.max_abs_diff.get_or_create(&labels).clone(),
            labels,
            samples: mm.samples.clone(),
            last_warn: AtomicU64::new(0),
            down: super::down::Down::new(),
        }
    }

    /// Whether a request whose id hashes to `id` is mirrored (no id: a fraction of 1 only).
    pub(super) fn chooses(&self, id: Option<u64>) -> bool {
        match id {
            Some(h) => self.threshold == u64::MAX || h < self.threshold,
            None => self.threshold == u64::MAX,
        }
    }

    /// Starts a mirror of the request with head `parts` and `length`, unless it is too large,
    /// the candidate could not be reached a moment ago, or it has no slot (all counted).
    pub(super) fn start(
        self: &Arc<Self>,
        parts: &http::request::Parts,
        length: Option<u64>,
    ) -> Option<Started> {
        if length.is_some_and(|n| n > self.compare.max_body) {
            self.outcomes.too_large.inc();
            return None;
        }
        if self.down.holds() {
            self.outcomes.unavailable.inc();
            return None;
        }
        let Ok(permit) = self.slots.clone().try_acquire_owned() else {
            self.outcomes.overflow.inc();
            return None;
        };
        let (sink, body, state) = tee::channel(self.compare.max_body, length);
        let req = super::mirror_head(parts, &self.route).map(|()| body);
        let (answer, rx) = match self.compare.mode {
            CompareMode::None => (None, None),
            _ => {
                let (tx, rx) = oneshot::channel();
                (Some(tx), Some(rx))
            }
        };
        let request_id = parts
            .headers
            .get(&crate::headers::X_REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        tokio::spawn(self.clone().run(req, state, rx, permit, request_id));
        Some(Started { sink, answer })
    }

    /// The mirror's task: send, read, compare, record.
    async fn run(
        self: Arc<Self>,
        req: Request<MirrorBody>,
        state: Arc<TeeState>,
        primary: Option<oneshot::Receiver<Answer>>,
        _permit: OwnedSemaphorePermit,
        request_id: String,
    ) {
        let o = &self.outcomes;
        let mut client = self.client.clone();
        let req = req.map(ProxyBody::new);
        let max = usize::try_from(self.compare.max_body).unwrap_or(usize::MAX);
        let sent = tokio::time::timeout(self.timeout, read::send(&mut client, req, max)).await;
        let (parts, whole) = match sent {
            Err(_) => {
                o.timeout.inc();
                return;
            }
            Ok(Err(e)) => {
                tracing::debug!(cluster = ?self.labels.cluster.0, error = %e, "mirror failed");
                match state.get() {
                    Fed::TooLarge => {
                        o.too_large.inc();
                    }
                    Fed::Cancelled => {
                        o.cancelled.inc();
                    }
                    Fed::Streaming => {
                        o.failed.inc();
                        self.down.failed();
                    }
                };
                return;
            }
            Ok(Ok(answered)) => answered,
        };
        self.down.reached();
        if parts.status.is_server_error() {
            o.error_status.inc();
        } else {
            o.answered.inc();
        }
        let Some(primary) = primary else { return };
        let primary = tokio::time::timeout(self.timeout, primary).await;
        let (Some(whole), Ok(Ok(primary))) = (whole, primary) else {
            self.results.skipped.inc();
            return;
        };
        let candidate = Answer {
            status: parts.status,
            headers: parts.headers,
            body: whole.0,
            trailers: whole.1,
        };
        let settings = self.compare;
        let size = primary.body.len() + candidate.body.len();
        let result = if size > INLINE_COMPARE_BYTES {
            match tokio::task::spawn_blocking(move || compare(&settings, &primary, &candidate))
                .await
            {
                Ok(r) => r,
                Err(_) => {
                    self.results.error.inc();
                    return;
                }
            }
        } else {
            compare(&settings, &primary, &candidate)
        };
        self.record(result, request_id);
    }

    fn record(&self, c: Comparison, request_id: String) {
        let r = &self.results;
        if let Some(d) = c.max_abs_diff {
            self.max_abs_diff.observe(d);
        }
        match c.argmax_agrees {
            Some(true) => r.agree.inc(),
            Some(false) => r.disagree.inc(),
            None => 0,
        };
        match c.verdict {
            Verdict::Match => {
                r.matched.inc();
            }
            Verdict::Error(e) => {
                r.error.inc();
                tracing::debug!(cluster = ?self.labels.cluster.0, error = %e, "mirror answers not compared");
            }
            Verdict::Mismatch { first, count } => {
                r.mismatch.inc();
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                if self.last_warn.swap(now.as_secs(), Ordering::Relaxed) != now.as_secs() {
                    tracing::warn!(
                        route = %self.labels.route.0, cluster = %self.labels.cluster.0,
                        request_id = %request_id, tensor = %first.tensor, index = ?first.index,
                        primary = %first.primary, candidate = %first.candidate, differing = count,
                        "mirror answer differs from the primary's"
                    );
                }
                self.samples.keep(MismatchSample {
                    at: now.as_secs_f64(),
                    listener: self.labels.listener.0.to_string(),
                    route: self.labels.route.0.to_string(),
                    cluster: self.labels.cluster.0.to_string(),
                    request_id,
                    tensor: first.tensor,
                    index: first.index,
                    primary: first.primary,
                    candidate: first.candidate,
                    count,
                });
            }
        }
    }
}

/// The primary's answer, its body copied for each comparing mirror in `answers`.
pub(super) fn copy_answer(
    resp: Response<ProxyBody>,
    answers: Vec<(Arc<MirrorTarget>, oneshot::Sender<Answer>)>,
) -> Response<ProxyBody> {
    let (parts, mut body) = resp.into_parts();
    for (t, tx) in answers {
        body = ProxyBody::new(CopyBody::new(
            body,
            parts.status,
            parts.headers.clone(),
            t.compare.max_body,
            tx,
        ));
    }
    Response::from_parts(parts, body)
}
