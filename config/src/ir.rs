//! The validated configuration ("IR"): what the proxy builds its runtime tables from.
//!
//! Everything here has already been checked: addresses parsed, durations converted, regexes
//! compiled, cluster references resolved by name. The proxy never sees raw file text.
//!
//! The top level (config, admin, runtime, listeners) is here; routes, their translation
//! settings, clusters and tensor checks each have their own module.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

mod access_log;
mod cluster;
mod fault;
mod limits;
mod mirror;
mod route;
mod tensors;
mod tls;
mod torchserve;
mod tracing;
mod translate;

pub use access_log::{AccessLog, AccessLogFormat};
pub use cluster::{
    Cluster, Endpoints, HashKeyPart, HashLb, HostPort, LbPolicy, LoadMetric, LoadReportLb,
    OutlierDetection, SlowStart, UpstreamProtocol,
};
pub use fault::{Fault, FaultAbort, FaultDelay};
pub use limits::{
    Concurrency, KeyPart, LimitAmount, LimitMode, OnFailure, Override, RateLimit, Redis, Scope,
    TokenBudget, TokenCharge,
};
pub use mirror::{Compare, Mirror, Tolerance};
pub use route::{
    Action, DirectResponse, HeaderEdits, HeaderMatch, ModelMatch, PathMatch, PathTemplate,
    PrefixRewrite, RetryOn, RetryPolicy, Route, RouteLoadReport, RouteMatch, StringMatch,
    TemplateSegment, WeightedCluster,
};
pub use tensors::{ModelTensors, TensorMetadataSource, TensorSpec, ValidateTensors};
pub use tls::{
    Authorization, AuthzDecision, AuthzRule, ClusterTls, Identity, IdentityMatcher, ListenerTls,
    ModelNameMatcher, TlsMode,
};
pub use torchserve::{OipCallers, TorchserveApi, TorchserveBridge, TorchservePayload};
pub use tracing::{Otlp, OtlpProtocol, Propagation, Sampling, Tracing};
pub use translate::{
    DescriptorTranscode, Signature, StreamingFormat, Translate, TranslateDirection, UpstreamBinary,
};

/// A complete, validated ferry configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The admin listener.
    pub admin: Admin,
    /// Process-wide runtime settings.
    pub runtime: Runtime,
    /// Data-plane listeners, in file order. Names and addresses are unique.
    pub listeners: Vec<Listener>,
    /// Upstream clusters, in file order. Names are unique; every route reference resolves.
    pub clusters: Vec<Cluster>,
    /// This workload's certificate for mutual TLS; `None` = no identity (no TLS listener in
    /// strict/permissive mode and no mesh cluster may then exist).
    pub identity: Option<Identity>,
    /// The store for `scope: global` limits; `None` = no global limits may exist.
    pub redis: Option<Redis>,
    /// Span export, propagation and sampling; `None` = no tracing.
    pub tracing: Option<Tracing>,
    /// Access-log sinks, in file order; empty = no access log.
    pub access_log: Vec<AccessLog>,
    /// Hex digest (SHA-256 or similar stable hash) of the canonical config, shown in
    /// `/config_dump` and logs so operators can tell which config is live.
    pub version: String,
    /// The effective configuration rendered as JSON (defaults filled in) for `/config_dump`.
    pub effective_json: Arc<serde_json::Value>,
}

/// The admin endpoint's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admin {
    /// Where `/live`, `/ready`, `/config_dump` and `/metrics` are served. Default 127.0.0.1:15000.
    pub address: SocketAddr,
}

/// Process-wide runtime settings. Changing these needs a restart (a reload logs a warning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// Tokio worker threads. Default 2: a sidecar must stay small.
    pub worker_threads: usize,
    /// How long SIGTERM waits for in-flight requests and streams. Default 30s.
    pub drain_timeout: Duration,
}

/// One data-plane listener (e.g. `inbound` or `outbound`).
#[derive(Debug, Clone)]
pub struct Listener {
    /// Unique name; used as a metric label.
    pub name: String,
    /// Bind address.
    pub address: SocketAddr,
    /// Routes, matched first-to-last; the first route whose match succeeds wins.
    pub routes: Vec<Route>,
    /// Request limits applied before routing.
    pub limits: ListenerLimits,
    /// TLS termination. Default disabled.
    pub tls: ListenerTls,
    /// Authorization of every request on this listener (before routing, so model-scoped rules
    /// see the model only when routing already knows it); `None` = none.
    pub authorization: Option<Authorization>,
}

/// Limits applied by a listener to each request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerLimits {
    /// Largest request header block accepted (HTTP/1.1 head, HTTP/2 header list); over it: 431.
    /// Default 64 KiB.
    pub max_request_headers_bytes: u32,
    /// Largest request body accepted; over it: 413 (or RESOURCE_EXHAUSTED). `None` = unlimited
    /// (bodies stream). Default `None`.
    pub max_request_body_bytes: Option<u64>,
    /// How much of a JSON body may be read to find the OpenAI-style `"model"` field before
    /// giving up (the body is then forwarded unchanged). Default 16 KiB.
    pub model_sniff_bytes: u32,
    /// A downstream connection with no request in flight for this long is closed (HTTP/2:
    /// GOAWAY first). Open streams count as in flight. `None` = never. Default 5m; `0s` in
    /// the file = never.
    pub idle_timeout: Option<Duration>,
    /// Longest wait for a request head. HTTP/1.1: the clock starts whenever the connection is
    /// ready for its next request, so it also bounds keep-alive idleness. Either protocol: a
    /// connection with no complete request head this long after accept is closed. `None` = no
    /// limit (`0s` in the file). Default 10s.
    pub request_headers_timeout: Option<Duration>,
    /// Most downstream connections open at once; one more is accepted and closed at once.
    /// `None` = unlimited (`0` in the file). Default 4096.
    pub max_connections: Option<NonZeroU32>,
    /// HTTP/2 `MAX_CONCURRENT_STREAMS` advertised to downstream clients. `None` = unlimited
    /// (`0` in the file). Default 1024.
    pub h2_max_concurrent_streams: Option<NonZeroU32>,
    /// A connection whose peer accepts none of the pending bytes for this long is closed.
    /// `None` = never (`0s` in the file). Default 30s.
    pub stalled_write_timeout: Option<Duration>,
}

/// A field's place in a config file, so problems found later (e.g. in a file it names) are
/// reported at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldLocation {
    /// The config source name.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// Dotted field path.
    pub path: String,
}

impl FieldLocation {
    /// A config error at this field.
    pub fn error(&self, message: impl Into<String>) -> crate::ConfigError {
        crate::ConfigError {
            file: self.file.clone(),
            line: self.line,
            col: self.col,
            path: self.path.clone(),
            message: message.into(),
        }
    }
}
