//! Prometheus metrics. Every label value comes from a configured name (listener, route,
//! cluster, configured model) or a small fixed set (status code), never from raw paths, so
//! cardinality is bounded by the config.

use std::fmt::Write;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

mod labels;
mod mirror;
mod route;

pub use self::labels::*;
pub use self::mirror::*;
pub use self::route::*;

/// Every metric ferry exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// The empty label value, shared so recording a request allocates nothing for it.
    pub empty: Arc<str>,
    /// `ferry_requests_total`.
    pub requests: Family<RequestLabels, Counter>,
    /// `ferry_request_duration_seconds`: request in → response headers out (time to first
    /// byte as the caller sees it), per route; a sampled request's trace id is its exemplar.
    pub request_duration: Family<RouteLabels, ExemplarHistogram, fn() -> ExemplarHistogram>,
    /// `ferry_proxy_overhead_seconds`: ferry's own time, each way, apart from the upstream's.
    pub overhead: HistogramFamily<OverheadLabels>,
    /// `ferry_request_size_bytes`: request body bytes read, per route.
    pub request_size: HistogramFamily<RouteLabels>,
    /// `ferry_response_size_bytes`: response body bytes sent, per route.
    pub response_size: HistogramFamily<RouteLabels>,
    /// `ferry_upstream_duration_seconds`: request sent → response headers, per cluster.
    pub upstream_duration: HistogramFamily<ClusterLabels>,
    /// `ferry_upstream_connect_errors_total`.
    pub connect_errors: Family<ClusterLabels, Counter>,
    /// `ferry_endpoint_ejections_total`.
    pub ejections: Family<ClusterLabels, Counter>,
    /// `ferry_retries_total`.
    pub retries: Family<RetryLabels, Counter>,
    /// `ferry_faults_injected_total`: delays and aborts injected by routes' `fault`.
    pub faults_injected: Family<FaultLabels, Counter>,
    /// `ferry_mirror_*`: routes' mirrors and their comparisons.
    pub mirror: MirrorMetrics,
    /// `ferry_tensor_metadata_fetch_failures_total`: `validate_tensors` let a request through
    /// unchecked because the model's metadata could not be fetched.
    pub tensor_metadata_fetch_failures: Family<RouteLabels, Counter>,
    /// `ferry_active_connections`.
    pub active_connections: Family<ListenerLabels, Gauge>,
    /// `ferry_active_requests` (includes open streams).
    pub active_requests: Family<ListenerLabels, Gauge>,
    /// `ferry_runtime_alive_tasks`: tokio tasks alive, read at each scrape (a task leak shows
    /// here before it shows in memory).
    pub alive_tasks: Gauge,
    /// `ferry_downstream_idle_closes_total`: connections closed by `idle_timeout`.
    pub idle_closes: Family<ListenerLabels, Counter>,
    /// `ferry_downstream_header_timeout_closes_total`: connections closed by
    /// `request_headers_timeout`.
    pub header_timeout_closes: Family<ListenerLabels, Counter>,
    /// `ferry_downstream_stalled_closes_total`: connections closed by `stalled_write_timeout`.
    pub stalled_closes: Family<ListenerLabels, Counter>,
    /// `ferry_listener_connections_refused_total`: connections closed on accept because the
    /// listener already had `max_connections` open.
    pub connections_refused: Family<ListenerLabels, Counter>,
    /// `ferry_config_reloads_total` (successful).
    pub reloads: Counter,
    /// `ferry_config_reload_failures_total`.
    pub reload_failures: Counter,
    /// `ferry_authz_denied_total`: requests refused by authorization (route empty when the
    /// listener's policy refused a request no route matched).
    pub authz_denied: Family<RouteLabels, Counter>,
    /// `ferry_tls_handshakes_total`: TLS connections accepted.
    pub tls_handshakes: Family<ListenerLabels, Counter>,
    /// `ferry_tls_handshake_failures_total`: connections refused at the handshake.
    pub tls_handshake_failures: Family<HandshakeFailureLabels, Counter>,
    /// `ferry_tls_plaintext_connections_total`: plaintext connections a permissive listener
    /// accepted (what is left to migrate).
    pub tls_plaintext: Family<ListenerLabels, Counter>,
    /// `ferry_tls_reload_failures_total`: rotations refused (the old identity kept serving).
    pub tls_reload_failures: Counter,
    /// `ferry_tls_cert_expiry_seconds`: notAfter of the loaded certificate, Unix seconds.
    pub tls_cert_expiry: Family<CertLabels, Gauge>,
    /// `ferry_ratelimit_decisions_total`.
    pub ratelimit_decisions: Family<DecisionLabels, Counter>,
    /// `ferry_ratelimit_backend_errors_total`: failed calls to the shared limit store.
    pub ratelimit_backend_errors: Counter,
    /// `ferry_concurrency_in_flight` (set when scraped).
    pub concurrency_in_flight: Family<ModelLabels, Gauge>,
    /// `ferry_concurrency_queue_depth` (set when scraped).
    pub concurrency_queue_depth: Family<ModelLabels, Gauge>,
    /// `ferry_concurrency_queue_seconds`: time requests waited for a slot.
    pub concurrency_queue_seconds: HistogramFamily<RouteLabels>,
    /// `ferry_trace_spans_exported_total`: spans the tracing backend accepted.
    pub trace_spans_exported: Counter,
    /// `ferry_trace_spans_dropped_total`: spans given up, by reason.
    pub trace_spans_dropped: Family<DropLabels, Counter>,
    /// `ferry_access_log_dropped_total`: access-log lines given up, by sink and reason.
    pub access_log_dropped: Family<AccessLogDropLabels, Counter>,
    /// The admin `/recent` ring: kept with the metrics because every listener's request
    /// recorder reaches it through them, across reloads.
    pub recent: Arc<crate::recent::Recent>,
}

// === impl Metrics ===

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let m = Self {
            empty: Arc::from(""),
            requests: Family::default(),
            request_duration: Family::new_with_constructor(latency_exemplar_histogram),
            overhead: Family::new_with_constructor(overhead_histogram),
            request_size: Family::new_with_constructor(size_histogram),
            response_size: Family::new_with_constructor(size_histogram),
            upstream_duration: Family::new_with_constructor(latency_histogram),
            connect_errors: Family::default(),
            ejections: Family::default(),
            retries: Family::default(),
            faults_injected: Family::default(),
            mirror: MirrorMetrics::new(),
            tensor_metadata_fetch_failures: Family::default(),
            active_connections: Family::default(),
            active_requests: Family::default(),
            alive_tasks: Gauge::default(),
            idle_closes: Family::default(),
            header_timeout_closes: Family::default(),
            stalled_closes: Family::default(),
            connections_refused: Family::default(),
            reloads: Counter::default(),
            reload_failures: Counter::default(),
            authz_denied: Family::default(),
            tls_handshakes: Family::default(),
            tls_handshake_failures: Family::default(),
            tls_plaintext: Family::default(),
            tls_reload_failures: Counter::default(),
            tls_cert_expiry: Family::default(),
            ratelimit_decisions: Family::default(),
            ratelimit_backend_errors: Counter::default(),
            concurrency_in_flight: Family::default(),
            concurrency_queue_depth: Family::default(),
            concurrency_queue_seconds: Family::new_with_constructor(latency_histogram),
            trace_spans_exported: Counter::default(),
            trace_spans_dropped: Family::default(),
            access_log_dropped: Family::default(),
            recent: Arc::default(),
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
            "ferry_request_size_bytes",
            "Request body bytes read, by listener and route",
            m.request_size.clone(),
        );
        registry.register(
            "ferry_response_size_bytes",
            "Response body bytes sent, by listener and route (streams when they end)",
            m.response_size.clone(),
        );
        registry.register(
            "ferry_proxy_overhead_seconds",
            "ferry's own time on a forwarded request, apart from the upstream's: request = received to last attempt sent, response = upstream response headers to response headers sent",
            m.overhead.clone(),
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
            "ferry_faults_injected",
            "Faults injected by routes' fault settings, by kind (delay, abort)",
            m.faults_injected.clone(),
        );
        m.mirror.register(&mut registry);
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
            "ferry_runtime_alive_tasks",
            "Tokio tasks alive (connections, streams, background work)",
            m.alive_tasks.clone(),
        );
        registry.register(
            "ferry_downstream_idle_closes",
            "Downstream connections closed after idle_timeout without a request in flight",
            m.idle_closes.clone(),
        );
        registry.register(
            "ferry_downstream_header_timeout_closes",
            "Downstream connections closed after request_headers_timeout without a complete request head",
            m.header_timeout_closes.clone(),
        );
        registry.register(
            "ferry_downstream_stalled_closes",
            "Downstream connections closed after their peer read nothing for stalled_write_timeout",
            m.stalled_closes.clone(),
        );
        registry.register(
            "ferry_listener_connections_refused",
            "Downstream connections closed on accept because the listener had max_connections open",
            m.connections_refused.clone(),
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
        registry.register(
            "ferry_authz_denied",
            "Requests refused by authorization, by listener and route",
            m.authz_denied.clone(),
        );
        registry.register(
            "ferry_tls_handshakes",
            "TLS handshakes completed on listeners",
            m.tls_handshakes.clone(),
        );
        registry.register(
            "ferry_tls_handshake_failures",
            "Connections refused at the TLS handshake, by listener and reason",
            m.tls_handshake_failures.clone(),
        );
        registry.register(
            "ferry_tls_plaintext_connections",
            "Plaintext connections accepted by permissive listeners",
            m.tls_plaintext.clone(),
        );
        registry.register(
            "ferry_tls_reload_failures",
            "Identity or CA file changes refused (the old files kept serving)",
            m.tls_reload_failures.clone(),
        );
        registry.register(
            "ferry_tls_cert_expiry_seconds",
            "notAfter of the loaded workload certificate, as Unix seconds",
            m.tls_cert_expiry.clone(),
        );
        registry.register(
            "ferry_ratelimit_decisions",
            "Rate-limit decisions, by listener, route, limit and decision",
            m.ratelimit_decisions.clone(),
        );
        registry.register(
            "ferry_ratelimit_backend_errors",
            "Failed or timed-out calls to the shared rate-limit store (redis)",
            m.ratelimit_backend_errors.clone(),
        );
        registry.register(
            "ferry_concurrency_in_flight",
            "Requests holding a concurrency slot, by route and model",
            m.concurrency_in_flight.clone(),
        );
        registry.register(
            "ferry_concurrency_queue_depth",
            "Requests waiting for a concurrency slot, by route and model",
            m.concurrency_queue_depth.clone(),
        );
        registry.register(
            "ferry_concurrency_queue_seconds",
            "Time requests waited for a concurrency slot",
            m.concurrency_queue_seconds.clone(),
        );
        registry.register(
            "ferry_trace_spans_exported",
            "Spans the tracing backend accepted",
            m.trace_spans_exported.clone(),
        );
        registry.register(
            "ferry_trace_spans_dropped",
            "Spans given up: export queue full, export failed, or shut down",
            m.trace_spans_dropped.clone(),
        );
        registry.register(
            "ferry_access_log_dropped",
            "Access-log lines given up: the sink's batch was full, or its file failed",
            m.access_log_dropped.clone(),
        );
        Self { registry, ..m }
    }

    /// The exposition: OpenMetrics with exemplars when `openmetrics` (the scraper asked
    /// for it), else the Prometheus text format, which has no exemplars.
    pub fn encode(&self, openmetrics: bool) -> String {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let n = i64::try_from(rt.metrics().num_alive_tasks()).unwrap_or(i64::MAX);
            self.alive_tasks.set(n);
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
            let _ = writeln!(out, "# metrics encoding failed");
        }
        if openmetrics {
            return out;
        }
        // The encoder writes OpenMetrics; the 0.0.4 text format is the same minus exemplars
        // (` # {labels} value` at the end of a bucket line), which its parsers reject.
        let mut plain = String::with_capacity(out.len());
        for line in out.lines() {
            let line = match line.find(" # {") {
                Some(i) if !line.starts_with('#') => &line[..i],
                _ => line,
            };
            plain.push_str(line);
            plain.push('\n');
        }
        plain
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
