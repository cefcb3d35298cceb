//! Distributed tracing settings (top-level `tracing:`): where spans are exported over OTLP,
//! which trace-context headers are read and written, and which traces are kept.
//!
//! Environment fallbacks (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`, …) are the
//! proxy's business: the config crate reads no environment, so `None` here means "not in the
//! file", not "off".

use std::time::Duration;

use crate::defaults;

/// The top-level `tracing:`; absent from the file = no tracing.
#[derive(Debug, Clone, PartialEq)]
pub struct Tracing {
    /// Where and how spans are exported.
    pub otlp: Otlp,
    /// The `service.name` resource attribute; `None` = `OTEL_SERVICE_NAME`, else `ferry`.
    pub service_name: Option<String>,
    /// Trace-context formats read from requests and written to upstream requests, in file
    /// order; never empty, no duplicates. Default `[W3c]`.
    pub propagation: Vec<Propagation>,
    /// Which traces are recorded.
    pub sampling: Sampling,
    /// Finished spans held for export at most; more are dropped (and counted). 1..=1_048_576,
    /// default 2048.
    pub queue: usize,
}

/// The OTLP exporter (`tracing.otlp`).
#[derive(Debug, Clone, PartialEq)]
pub struct Otlp {
    /// Absolute `http://` or `https://` URL with a host, used as written (scheme and host
    /// lower-cased); a path only with [`OtlpProtocol::Http`]. `None` = resolved by the proxy
    /// from `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: Option<String>,
    /// OTLP over gRPC (default) or over HTTP with protobuf bodies.
    pub protocol: OtlpProtocol,
    /// Extra request headers (gRPC metadata) on every export, in file order: lower-case,
    /// unique names; values are visible ASCII. May carry API keys: never log the values.
    pub headers: Vec<(String, String)>,
    /// Longest one export call may take; > 0. Default 5s.
    pub timeout: Duration,
}

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OtlpProtocol {
    /// OTLP/gRPC (port 4317 by convention).
    #[default]
    Grpc,
    /// OTLP/HTTP with protobuf bodies (port 4318, path `/v1/traces` by convention).
    Http,
}

/// A trace-context header format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Propagation {
    /// W3C Trace Context: `traceparent` and `tracestate`.
    W3c,
    /// Zipkin B3, the single `b3` header.
    B3,
    /// Zipkin B3, the `x-b3-*` headers.
    B3Multi,
}

/// Which traces are recorded (`tracing.sampling`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    /// Share of new traces (no sampled parent) recorded, 0.0..=1.0 and finite; a request
    /// whose parent made the decision follows it. Default 1.0.
    pub ratio: f64,
    /// Also keep every request that failed (5xx, or a gRPC error), sampled or not. Default
    /// false.
    pub always_errors: bool,
    /// Also keep every request slower than this; > 0. `None` = not by latency.
    pub slower_than: Option<Duration>,
}

// === impl Tracing ===

impl Default for Tracing {
    /// `tracing: {}`: every default.
    fn default() -> Self {
        Tracing {
            otlp: Otlp::default(),
            service_name: None,
            propagation: defaults::TRACING_PROPAGATION.to_vec(),
            sampling: Sampling::default(),
            queue: defaults::TRACING_QUEUE,
        }
    }
}

// === impl Otlp ===

impl Default for Otlp {
    fn default() -> Self {
        Otlp {
            endpoint: None,
            protocol: OtlpProtocol::default(),
            headers: Vec::new(),
            timeout: defaults::OTLP_TIMEOUT,
        }
    }
}

// === impl Sampling ===

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            ratio: defaults::SAMPLING_RATIO,
            always_errors: false,
            slower_than: None,
        }
    }
}
