//! A route's per-request series, cached so recording a request hashes no label set, and
//! the histograms' bucket layouts.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use super::Metrics;
use super::labels::*;

/// (cluster, status code) → the counter of that series.
type SeenSeries = (Option<Arc<str>>, u16, Counter);

/// Series kept per route before new (cluster, code) pairs go straight to the family.
const ROUTE_SERIES_CACHED: usize = 32;

/// One route's `ferry_requests_total` series, found by (cluster, status) in a short list.
/// Going through the family hashes five labels with SipHash and clones four `Arc`s per
/// request; a route sees a handful of (cluster, code) pairs, so a linear scan is cheaper.
#[derive(Debug)]
pub struct RouteRequests {
    listener: Arc<str>,
    route: Arc<str>,
    model: Arc<str>,
    family: Family<RequestLabels, Counter>,
    seen: std::sync::Mutex<Vec<SeenSeries>>,
}

// === impl RouteRequests ===

impl RouteRequests {
    /// The series of `route` on `listener` in `metrics`.
    pub fn new(metrics: &Metrics, listener: Arc<str>, route: Arc<str>, model: Arc<str>) -> Self {
        Self {
            listener,
            route,
            model,
            family: metrics.requests.clone(),
            seen: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Counts one answered request.
    pub fn inc(&self, cluster: Option<&Arc<str>>, code: u16, empty: &Arc<str>) {
        let same = |c: &Option<Arc<str>>| match (c, cluster) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            _ => false,
        };
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        if let Some((_, _, counter)) = seen.iter().find(|(c, k, _)| *k == code && same(c)) {
            counter.inc();
            return;
        }
        let counter = self
            .family
            .get_or_create(&RequestLabels {
                listener: Name(self.listener.clone()),
                route: Name(self.route.clone()),
                cluster: Name(cluster.unwrap_or(empty).clone()),
                model: Name(self.model.clone()),
                code,
            })
            .clone();
        counter.inc();
        if seen.len() < ROUTE_SERIES_CACHED {
            seen.push((cluster.cloned(), code, counter));
        }
    }
}

pub(super) type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// A latency histogram whose observations may carry the trace they were recorded in.
pub type ExemplarHistogram = HistogramWithExemplars<TraceExemplar>;

pub(super) fn latency_histogram() -> Histogram {
    // 100µs .. ~52s in doubling steps: sidecar overheads and model latencies both resolve.
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

pub(super) fn latency_exemplar_histogram() -> ExemplarHistogram {
    HistogramWithExemplars::new(exponential_buckets(0.0001, 2.0, 20))
}

pub(super) fn size_histogram() -> Histogram {
    // 64 B .. 1 GiB in steps of 4: a prompt, a tensor, a batch of images.
    Histogram::new(exponential_buckets(64.0, 4.0, 13))
}

pub(super) fn overhead_histogram() -> Histogram {
    // 10µs .. ~1.3s: a sidecar's own time is tens of microseconds when all is well.
    Histogram::new(exponential_buckets(0.00001, 2.0, 18))
}

/// One route's `ferry_proxy_overhead_seconds` series, found by cluster in a short list (as
/// [`RouteRequests`], to keep label hashing off the request path).
#[derive(Debug)]
pub struct RouteOverhead {
    listener: Arc<str>,
    route: Arc<str>,
    model: Arc<str>,
    family: HistogramFamily<OverheadLabels>,
    seen: std::sync::Mutex<Vec<(Arc<str>, Histogram, Histogram)>>,
}

impl RouteOverhead {
    /// The series of `route` on `listener` in `metrics`.
    pub fn new(metrics: &Metrics, listener: Arc<str>, route: Arc<str>, model: Arc<str>) -> Self {
        Self {
            listener,
            route,
            model,
            family: metrics.overhead.clone(),
            seen: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Records one forwarded request's own time each way.
    pub fn observe(&self, cluster: &Arc<str>, request: f64, response: f64) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        if let Some((_, req, resp)) = seen
            .iter()
            .find(|(c, _, _)| Arc::ptr_eq(c, cluster) || c == cluster)
        {
            req.observe(request);
            resp.observe(response);
            return;
        }
        let series = |direction| {
            self.family
                .get_or_create(&OverheadLabels {
                    listener: Name(self.listener.clone()),
                    route: Name(self.route.clone()),
                    cluster: Name(cluster.clone()),
                    model: Name(self.model.clone()),
                    direction,
                })
                .clone()
        };
        let (req, resp) = (series("request"), series("response"));
        req.observe(request);
        resp.observe(response);
        if seen.len() < ROUTE_SERIES_CACHED {
            seen.push((cluster.clone(), req, resp));
        }
    }
}
