//! Raw tracing types: the top-level `tracing` block (OTLP export, propagation, sampling).
//!
//! Every field is optional: `tracing: {}` turns tracing on with every default, and the proxy
//! fills in an absent endpoint or service name from the standard `OTEL_*` variables.

use schemars::JsonSchema;
use serde::Deserialize;

use super::scalars::{DurationText, RatioText, Text};
use super::shorthand::HeaderValues;

/// Distributed tracing (top-level `tracing`); omitted = no tracing.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Tracing")]
pub struct TracingSpec {
    /// Where spans are exported, over OTLP. Default: every `otlp` default.
    pub otlp: Option<OtlpSpec>,
    /// The `service.name` resource attribute. Default: `OTEL_SERVICE_NAME`, else `ferry`.
    pub service_name: Option<Text>,
    /// Trace-context headers read from requests and written upstream: any of `w3c`
    /// (`traceparent`), `b3` (single `b3` header), `b3multi` (`x-b3-*`); not empty, no
    /// duplicates. Default `[w3c]`.
    #[schemars(length(min = 1), extend("uniqueItems" = true))]
    pub propagation: Option<Vec<PropagationSpec>>,
    /// Which traces are recorded.
    pub sampling: Option<SamplingSpec>,
    /// Finished spans held for export at most (more are dropped and counted), 1 to 1048576.
    /// Default 2048.
    #[schemars(extend("minimum" = 1, "maximum" = 1_048_576))]
    pub queue: Option<i64>,
}

/// The OTLP exporter.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Otlp")]
pub struct OtlpSpec {
    /// `http://` or `https://` URL of the collector, e.g. `http://127.0.0.1:4317`; a path only
    /// with `protocol: http`. Default: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`.
    #[schemars(extend("pattern" = "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@]+(/[^?#]*)?$"))]
    pub endpoint: Option<Text>,
    /// `grpc` (OTLP/gRPC) or `http` (OTLP/HTTP, protobuf). Default `grpc`.
    pub protocol: Option<OtlpProtocolSpec>,
    /// Headers (gRPC metadata) sent with every export, e.g. an API key. Shown as
    /// `<redacted>` in `/config_dump`.
    pub headers: Option<HeaderValues>,
    /// Longest one export may take, > 0. Default `5s`.
    pub timeout: Option<DurationText>,
}

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "OtlpProtocol")]
pub enum OtlpProtocolSpec {
    /// OTLP/gRPC.
    Grpc,
    /// OTLP/HTTP with protobuf bodies.
    Http,
}

/// A trace-context header format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Propagation")]
pub enum PropagationSpec {
    /// W3C Trace Context (`traceparent`, `tracestate`).
    W3c,
    /// Zipkin B3, single `b3` header.
    B3,
    /// Zipkin B3, multiple `x-b3-*` headers.
    #[serde(rename = "b3multi")]
    B3Multi,
}

/// Which traces are recorded.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Sampling")]
pub struct SamplingSpec {
    /// Share of new traces recorded, 0 to 1; a request with a sampled or unsampled parent
    /// follows its parent. Default 1.
    pub ratio: Option<RatioText>,
    /// Also record every request that ends in an error. Default `false`.
    pub always_errors: Option<bool>,
    /// Also record every request slower than this, > 0. Default: none.
    pub slower_than: Option<DurationText>,
}
