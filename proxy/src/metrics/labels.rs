//! The label sets of ferry's metrics: every value a configured name or a small fixed set.

use std::fmt::Write;
use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

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

/// Labels of a refused TLS handshake.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct HandshakeFailureLabels {
    /// Listener name.
    pub listener: Name,
    /// Why (a fixed set: see `tls::Reason`).
    pub reason: &'static str,
}

/// Labels of a rate-limit decision.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct DecisionLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
    /// Limit name.
    pub limit: Name,
    /// allowed | limited | shadow_limited.
    pub decision: &'static str,
}

/// Labels per route and model (model names come from requests but only those a route with a
/// concurrency limit saw, each one a slot the limit keeps).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ModelLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
    /// Model name (`""` for requests naming none).
    pub model: String,
}

/// Labels of ferry's own time on a request, apart from the upstream's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct OverheadLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
    /// Cluster of the last attempt.
    pub cluster: Name,
    /// The route's configured model (empty when it matches none).
    pub model: Name,
    /// `request` (received → last attempt sent) or `response` (upstream's response headers
    /// in → response headers out).
    pub direction: &'static str,
}

/// The exemplar of a latency observation: the trace it was recorded in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct TraceExemplar {
    /// The trace id, written as 32 hex digits.
    pub trace_id: TraceHex,
}

/// A trace id as an exemplar label: kept as its 16 bytes and written as hex only when
/// `/metrics` is scraped (rendering it per sampled request was an allocation each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceHex(pub [u8; 16]);

impl EncodeLabelValue for TraceHex {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut hex = [0u8; 32];
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        for (i, b) in self.0.iter().enumerate() {
            hex[2 * i] = DIGITS[usize::from(b >> 4)];
            hex[2 * i + 1] = DIGITS[usize::from(b & 0xf)];
        }
        encoder.write_str(std::str::from_utf8(&hex).map_err(|_| std::fmt::Error)?)
    }
}

/// Labels of a retry: the route's, and why the attempt before it failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RetryLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
    /// `connect_failure` (no connection), `reset` (the connection or stream failed before any
    /// answer, for an idempotent or refused request), `per_try_timeout`, or `answer` (a
    /// status the policy retries: 503, 5xx, gRPC UNAVAILABLE or RESOURCE_EXHAUSTED).
    pub reason: &'static str,
}

/// Labels of injected faults.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct FaultLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
    /// `delay` or `abort`.
    pub kind: &'static str,
}

/// Labels of dropped access-log lines.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct AccessLogDropLabels {
    /// The sink's path as configured.
    pub path: Name,
    /// `queue_full` (the sink's batch was full: its writer is behind or stuck) or `write_failed`
    /// (the file could not be written).
    pub reason: &'static str,
}

/// Labels of dropped spans.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct DropLabels {
    /// `queue_full` (the export queue was full), `export_failed` (the backend refused or
    /// did not answer in time) or `shutdown`.
    pub reason: &'static str,
}

/// Labels of a certificate's expiry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CertLabels {
    /// The certificate file.
    pub cert: String,
}
