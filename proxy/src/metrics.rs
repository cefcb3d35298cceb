//! Prometheus metrics. Every label value comes from a configured name (listener, route,
//! cluster, configured model) or a small fixed set (status code), never from raw paths, so
//! cardinality is bounded by the config.

use std::fmt::Write;
use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A label value shared with the routing table (no per-request allocation).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Name(pub Arc<str>);

impl EncodeLabelValue for Name {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        encoder.write_str(&self.0)
    }
}

impl From<&Arc<str>> for Name {
    fn from(s: &Arc<str>) -> Self {
        Name(s.clone())
    }
}

/// Labels of a finished request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RequestLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name, or empty when none matched.
    pub route: Name,
    /// Cluster name, or empty.
    pub cluster: Name,
    /// Configured model name of the route, or empty.
    pub model: Name,
    /// HTTP status code.
    pub code: u16,
}

/// Labels per route.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RouteLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
}

/// Labels per cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClusterLabels {
    /// Cluster name.
    pub cluster: Name,
}

/// Labels per listener.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ListenerLabels {
    /// Listener name.
    pub listener: Name,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 100µs .. ~52s in doubling steps: sidecar overheads and model latencies both resolve.
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

/// Every metric ferry exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// The empty label value, shared so recording a request allocates nothing for it.
    pub empty: Arc<str>,
    /// `ferry_requests_total`.
    pub requests: Family<RequestLabels, Counter>,
    /// `ferry_request_duration_seconds`: request in → response headers out, per route.
    pub request_duration: HistogramFamily<RouteLabels>,
    /// `ferry_upstream_duration_seconds`: request sent → response headers, per cluster.
    pub upstream_duration: HistogramFamily<ClusterLabels>,
    /// `ferry_upstream_connect_errors_total`.
    pub connect_errors: Family<ClusterLabels, Counter>,
    /// `ferry_endpoint_ejections_total`.
    pub ejections: Family<ClusterLabels, Counter>,
    /// `ferry_retries_total`.
    pub retries: Family<RouteLabels, Counter>,
    /// `ferry_tensor_metadata_fetch_failures_total`: `validate_tensors` let a request through
    /// unchecked because the model's metadata could not be fetched.
    pub tensor_metadata_fetch_failures: Family<RouteLabels, Counter>,
    /// `ferry_active_connections`.
    pub active_connections: Family<ListenerLabels, Gauge>,
    /// `ferry_active_requests` (includes open streams).
    pub active_requests: Family<ListenerLabels, Gauge>,
    /// `ferry_downstream_idle_closes_total`: connections closed by `idle_timeout`.
    pub idle_closes: Family<ListenerLabels, Counter>,
    /// `ferry_config_reloads_total` (successful).
    pub reloads: Counter,
    /// `ferry_config_reload_failures_total`.
    pub reload_failures: Counter,
}

// === impl Metrics ===

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let m = Self {
            empty: Arc::from(""),
            requests: Family::default(),
            request_duration: Family::new_with_constructor(latency_histogram),
            upstream_duration: Family::new_with_constructor(latency_histogram),
            connect_errors: Family::default(),
            ejections: Family::default(),
            retries: Family::default(),
            tensor_metadata_fetch_failures: Family::default(),
            active_connections: Family::default(),
            active_requests: Family::default(),
            idle_closes: Family::default(),
            reloads: Counter::default(),
            reload_failures: Counter::default(),
            registry: Registry::default(),
        };
        registry.register(
            "ferry_requests",
            "Requests answered, by listener, route, cluster, model and status",
            m.requests.clone(),
        );
        registry.register(
            "ferry_request_duration_seconds",
            "Time from request received to response headers sent",
            m.request_duration.clone(),
        );
        registry.register(
            "ferry_upstream_duration_seconds",
            "Time from request sent upstream to response headers received",
            m.upstream_duration.clone(),
        );
        registry.register(
            "ferry_upstream_connect_errors",
            "Failed connection attempts to upstream endpoints",
            m.connect_errors.clone(),
        );
        registry.register(
            "ferry_endpoint_ejections",
            "Endpoints ejected by outlier detection",
            m.ejections.clone(),
        );
        registry.register(
            "ferry_retries",
            "Retried upstream attempts",
            m.retries.clone(),
        );
        registry.register(
            "ferry_tensor_metadata_fetch_failures",
            "Requests let through unchecked because model metadata could not be fetched",
            m.tensor_metadata_fetch_failures.clone(),
        );
        registry.register(
            "ferry_active_connections",
            "Open downstream connections",
            m.active_connections.clone(),
        );
        registry.register(
            "ferry_active_requests",
            "Requests and streams in flight",
            m.active_requests.clone(),
        );
        registry.register(
            "ferry_downstream_idle_closes",
            "Downstream connections closed after idle_timeout without a request in flight",
            m.idle_closes.clone(),
        );
        registry.register(
            "ferry_config_reloads",
            "Successful configuration reloads",
            m.reloads.clone(),
        );
        registry.register(
            "ferry_config_reload_failures",
            "Rejected configuration reloads (the old config kept serving)",
            m.reload_failures.clone(),
        );
        Self { registry, ..m }
    }

    /// Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
            let _ = writeln!(out, "# metrics encoding failed");
        }
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
