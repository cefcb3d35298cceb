//! The file format as serde types ("raw"): names as written, values still text.
//!
//! `deny_unknown_fields` everywhere so a typo is an error, not a silently ignored setting.
//! Durations, addresses and patterns stay strings here; validation turns them into IR
//! and reports every bad one at once. The JSON Schema (`ferry schema`) is derived from these.

use schemars::JsonSchema;
use serde::Deserialize;

mod access_log;
mod bridge;
mod cluster;
mod fault;
mod lb;
mod limits;
mod mirror;
mod route;
mod scalars;
mod shorthand;
mod tensors;
mod tls;
mod torchserve;
mod tracing;

pub use access_log::{AccessLogFormatSpec, AccessLogSpec};
pub use bridge::{SignatureSpec, WireList};
pub use cluster::{
    DnsSpec, OriginalAuthoritySpec, OutlierSpec, RawCluster, RawLb, RawProtocol, SlowStartSpec,
};
pub use fault::{FaultAbortSpec, FaultDelaySpec, FaultSpec};
pub use lb::{LbObjectSpec, LbSpec, LoadReportLbSpec};
pub use limits::{
    ConcurrencySpec, KeyPartText, KeyValues, LimitModeSpec, OnFailureSpec, OverrideSpec,
    RateLimitSpec, RedisSpec, ScopeSpec, TokenChargeSpec,
};
pub use mirror::{CompareSpec, MirrorSpec, ToleranceSpec};
pub use route::{
    DirectResponseSpec, HeaderEditsSpec, HeaderMatchSpec, ModelMatchSpec, PathMatchSpec,
    PrefixRewriteSpec, ProbeSpec, RawRoute, RetryOnSpec, RetrySpec, RouteLoadReportSpec,
    RouteMatchSpec, StreamingSpec, TranslateProtocolSpec, TranslateSpec, UnknownFieldsSpec,
    UpstreamBinarySpec, WireSpec,
};
pub use scalars::{ByteSizeText, NonNegativeText};
pub use scalars::{
    DurationText, HashKeyPartText, HeaderNameText, HostPortText, LoadFactorText, PercentNumberText,
    PercentText, RatioText, SocketAddrText, Text, WeightText,
};
pub use shorthand::{HeaderValues, MatchSpec, Methods, Paths, StringMatchSpec, To, WeightedTarget};
pub use tensors::{MetadataSourceSpec, ModelTensorsSpec, TensorSpec, ValidateTensorsSpec};
pub use tls::{
    AuthorizationSpec, AuthzDecisionSpec, AuthzRuleSpec, ClusterTlsModeSpec, ClusterTlsSpec,
    IdentityMatcherSpec, IdentitySpec, ListenerTlsSpec, ModelNameMatcherSpec, TlsModeSpec,
};
pub use torchserve::PayloadSpec;
pub use tracing::{OtlpProtocolSpec, OtlpSpec, PropagationSpec, SamplingSpec, TracingSpec};

/// A ferry route config file.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "ferry route config", extend("required" = ["apiVersion"]))]
pub struct RawConfig {
    /// Format version; must be `ferry/v1`.
    #[serde(rename = "apiVersion")]
    #[schemars(extend("enum" = ["ferry/v1"]))]
    pub api_version: Option<Text>,
    /// The admin endpoint (`/live`, `/ready`, `/config_dump`, `/metrics`).
    pub admin: Option<AdminSpec>,
    /// Process-wide settings; changing them needs a restart.
    pub runtime: Option<RuntimeSpec>,
    /// This workload's certificate, key and trust bundles, for mutual TLS; needed by listeners
    /// with `tls.mode` strict or permissive and clusters with `tls.mode: mesh`.
    pub identity: Option<IdentitySpec>,
    /// The store for `scope: global` rate limits; needed by any such limit.
    pub redis: Option<RedisSpec>,
    /// Distributed tracing: OTLP span export, trace-context propagation and sampling;
    /// omitted = no tracing.
    pub tracing: Option<TracingSpec>,
    /// Access-log sinks: one line per request on every listener, to each sink; omitted = no
    /// access log (and no cost).
    pub access_log: Option<Vec<AccessLogSpec>>,
    /// Data-plane listeners.
    #[serde(default)]
    pub listeners: Vec<RawListener>,
    /// Upstream clusters, referred to by name from routes.
    #[serde(default)]
    pub clusters: Vec<RawCluster>,
}

/// The admin endpoint.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Admin")]
pub struct AdminSpec {
    /// Bind address. Default `127.0.0.1:15000`.
    pub address: Option<SocketAddrText>,
}

/// Process-wide runtime settings.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Runtime")]
pub struct RuntimeSpec {
    /// Tokio worker threads, >= 1. Default 2.
    pub worker_threads: Option<i64>,
    /// How long shutdown waits for in-flight requests. Default `30s`.
    pub drain_timeout: Option<DurationText>,
}

/// A data-plane listener.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Listener")]
pub struct RawListener {
    /// Unique name; used as a metric label.
    pub name: Text,
    /// Bind address `ip:port`.
    pub address: SocketAddrText,
    /// Per-request limits.
    pub limits: Option<ListenerLimitsSpec>,
    /// TLS termination. Default `{mode: disabled}`.
    pub tls: Option<ListenerTlsSpec>,
    /// Who may call this listener (checked before routing, so model-scoped rules here never
    /// match); omitted = anyone.
    pub authorization: Option<AuthorizationSpec>,
    /// Routes, matched first to last.
    #[serde(default)]
    pub routes: Vec<RawRoute>,
}

/// Per-request limits of a listener.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ListenerLimits")]
pub struct ListenerLimitsSpec {
    /// Largest request header block in bytes (over it: 431). Default 65536.
    pub max_request_headers_bytes: Option<u32>,
    /// Largest request body in bytes (over it: 413). Default: unlimited.
    pub max_request_body_bytes: Option<u64>,
    /// How much of a JSON body may be read to find its `model` field. Default 16384.
    pub model_sniff_bytes: Option<u32>,
    /// Close a downstream connection with no request or stream in flight for this long
    /// (HTTP/2: GOAWAY first). Default `5m`; `0s` = never.
    pub idle_timeout: Option<DurationText>,
    /// Longest wait for a request head: HTTP/1.1 counts from when the connection is ready for
    /// the next request (so it also bounds keep-alive idleness); a new connection of either
    /// protocol that has sent no complete request head by then is closed. Default `10s`;
    /// `0s` = no limit.
    pub request_headers_timeout: Option<DurationText>,
    /// Most downstream connections open at once on this listener; one more is accepted and
    /// closed at once. Default 4096; `0` = unlimited.
    pub max_connections: Option<u32>,
    /// Most concurrent HTTP/2 streams a downstream connection may open (SETTINGS
    /// `MAX_CONCURRENT_STREAMS`). Default 1024; `0` = unlimited.
    pub h2_max_concurrent_streams: Option<u32>,
    /// Close a downstream connection whose peer has accepted none of the bytes waiting to be
    /// sent to it for this long (a peer that never reads: slow-read attacks, HTTP/2 PING or
    /// SETTINGS floods). Default `30s`; `0s` = never.
    pub stalled_write_timeout: Option<DurationText>,
}
