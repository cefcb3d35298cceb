//! The validated configuration ("IR"): what the proxy builds its runtime tables from.
//!
//! Everything here has already been checked: addresses parsed, durations converted, regexes
//! compiled, cluster references resolved by name. The proxy never sees raw file text.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

mod tensors;

pub use tensors::{ModelTensors, TensorMetadataSource, TensorSpec, ValidateTensors};

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
    /// Longest wait for an HTTP/1.1 request head; the clock starts whenever the connection is
    /// ready for its next request, so it also bounds keep-alive idleness. `None` = no limit
    /// (the default; `0s` in the file).
    pub request_headers_timeout: Option<Duration>,
}

/// A route: a match and what to do with matching requests.
#[derive(Debug, Clone)]
pub struct Route {
    /// Unique within its listener; used as a metric label and shown in logs.
    pub name: String,
    /// All present conditions must hold.
    pub matcher: RouteMatch,
    /// What to do with a matching request.
    pub action: Action,
    /// Header edits applied to the request before it goes upstream.
    pub request_headers: HeaderEdits,
    /// Header edits applied to the response before it goes downstream.
    pub response_headers: HeaderEdits,
    /// Replace this path prefix before forwarding (`from` must be a prefix of the matched path;
    /// when it is not, the path is left unchanged).
    pub prefix_rewrite: Option<PrefixRewrite>,
    /// Time from routing until the upstream's response headers arrive (a streaming body may
    /// then run as long as it likes). `None` = no limit. Default 15s; `0s` in the file = none.
    pub timeout: Option<Duration>,
    /// Retry policy; `None` = no retries.
    pub retry: Option<RetryPolicy>,
    /// REST ⇄ gRPC translation; `None` = forward as is.
    pub translate: Option<Translate>,
    /// Input tensor checks before forwarding; `None` = no check.
    pub validate_tensors: Option<ValidateTensors>,
}

/// A route's protocol translation: Open Inference Protocol v2, or generic transcoding from a
/// descriptor set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translate {
    /// Which way.
    pub direction: TranslateDirection,
    /// Bound on a translated body and on its decoded tensors, in bytes. Default 64 MiB.
    pub max_decoded_bytes: u64,
    /// gRPC → REST: the upstream supports the binary tensor extension. Default false.
    pub upstream_binary: bool,
    /// `protocol: descriptor`: generic REST → gRPC transcoding; `None` = OIP v2.
    pub descriptor: Option<DescriptorTranscode>,
}

/// Generic REST → gRPC transcoding from a `FileDescriptorSet`. The file itself is read by the
/// proxy (at startup, `ferry validate` and reload), which reports its faults at `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptorTranscode {
    /// The descriptor set file, resolved against the config file's directory.
    pub descriptor_set: std::path::PathBuf,
    /// Where `descriptor_set` is written, for errors about the file's contents.
    pub at: FieldLocation,
    /// Refuse (`true`) or drop unknown JSON fields and query parameters. Default refuse.
    pub reject_unknown_fields: bool,
    /// How server streams are written out. Default NDJSON.
    pub streaming: StreamingFormat,
    /// Services to expose (full names); empty = all.
    pub services: Vec<String>,
}

/// How server streams are written out to REST callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamingFormat {
    /// Newline-delimited JSON.
    Ndjson,
    /// Server-sent events.
    Sse,
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

/// Which way a route translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranslateDirection {
    /// REST callers, gRPC upstream.
    RestToGrpc,
    /// gRPC callers, REST upstream.
    GrpcToRest,
}

/// Conditions on a request. Absent conditions always match.
#[derive(Debug, Clone, Default)]
pub struct RouteMatch {
    /// The request authority (`:authority` / `Host`), compared without the port when the
    /// pattern has none; case-insensitive.
    pub authority: Option<StringMatch>,
    /// The request path (without query string).
    pub path: Option<PathMatch>,
    /// Allowed methods (upper-case); empty = any.
    pub methods: Vec<String>,
    /// Header conditions, all must hold.
    pub headers: Vec<HeaderMatch>,
    /// Model name / version conditions (from the OIP path, the gRPC first message or the JSON
    /// `model` field).
    pub model: Option<ModelMatch>,
}

/// How to compare a string.
#[derive(Debug, Clone)]
pub enum StringMatch {
    /// Equal.
    Exact(String),
    /// Starts with.
    Prefix(String),
    /// Whole-string regex match (the pattern is anchored at validation time).
    Regex(Arc<regex::Regex>),
}

/// How to match a path.
#[derive(Debug, Clone)]
pub enum PathMatch {
    /// Equal to this path.
    Exact(String),
    /// Starts with this prefix (plain string prefix, as Envoy's `prefix`).
    Prefix(String),
    /// Whole-path anchored regex.
    Regex(Arc<regex::Regex>),
    /// A path template such as `/v2/models/{model}/versions/{version}/infer`, where `{name}`
    /// matches exactly one non-empty segment and a trailing `{name=**}` matches the rest.
    Template(PathTemplate),
}

/// A compiled path template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTemplate {
    /// The template text as written.
    pub source: String,
    /// The template split on `/` (leading empty segment dropped).
    pub segments: Vec<TemplateSegment>,
}

/// One `/`-separated segment of a [`PathTemplate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateSegment {
    /// Must equal this text.
    Literal(String),
    /// Any one non-empty segment, captured under this name.
    Var(String),
    /// The rest of the path (zero or more segments), captured under this name; only last.
    Rest(String),
}

/// A condition on one request header.
#[derive(Debug, Clone)]
pub struct HeaderMatch {
    /// Lower-case header name.
    pub name: String,
    /// `None` = the header must be present (any value).
    pub value: Option<StringMatch>,
    /// Invert the result (e.g. "header absent").
    pub invert: bool,
}

/// Conditions on the model a request addresses.
#[derive(Debug, Clone)]
pub struct ModelMatch {
    /// Model name condition.
    pub name: StringMatch,
    /// Model version condition; `None` = any version (including none).
    pub version: Option<StringMatch>,
}

/// What a route does.
#[derive(Debug, Clone)]
pub enum Action {
    /// Forward to one cluster or split across several by weight. Never empty; weights > 0.
    Forward(Vec<WeightedCluster>),
    /// Answer directly without an upstream.
    DirectResponse(DirectResponse),
}

/// One target of a (possibly weighted) forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedCluster {
    /// Name of a cluster in [`Config::clusters`] (validated to exist).
    pub cluster: String,
    /// Relative weight (> 0). A single target has weight 1 by default.
    pub weight: NonZeroU32,
}

/// A response ferry writes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectResponse {
    /// HTTP status (100..=599).
    pub status: u16,
    /// Body text.
    pub body: String,
    /// Content-Type; default `text/plain; charset=utf-8`.
    pub content_type: String,
}

/// Header edits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderEdits {
    /// Headers to set (lower-case name, value); replaces existing values.
    pub set: Vec<(String, String)>,
    /// Headers to append (lower-case name, value).
    pub add: Vec<(String, String)>,
    /// Lower-case names of headers to remove.
    pub remove: Vec<String>,
}

/// A path prefix rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixRewrite {
    /// Prefix to replace.
    pub from: String,
    /// Replacement.
    pub to: String,
}

/// When and how often to retry.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Total attempts including the first (>= 1). Default 2.
    pub attempts: u32,
    /// Conditions that trigger a retry. Default: connect-failure and unavailable.
    pub on: Vec<RetryOn>,
    /// Retries may add at most this fraction of the route's recent requests (0.0..=1.0),
    /// plus `min_retries_per_second`. Default 0.2.
    pub budget_ratio: f64,
    /// Retries allowed per second regardless of the ratio. Default 10.
    pub min_retries_per_second: u32,
    /// Requests whose body is larger than this are never retried (the body is not buffered
    /// beyond it). Default 64 KiB.
    pub max_body_bytes: u32,
    /// Per-attempt timeout; `None` = only the route timeout applies.
    pub per_try_timeout: Option<Duration>,
}

/// A retry trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryOn {
    /// The TCP connection to the endpoint could not be made (the request was never sent).
    ConnectFailure,
    /// Upstream answered HTTP 503.
    Http503,
    /// Upstream answered any 5xx.
    Http5xx,
    /// gRPC status UNAVAILABLE (14).
    Unavailable,
    /// gRPC status RESOURCE_EXHAUSTED (8) or HTTP 429.
    ResourceExhausted,
}

/// An upstream cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Unique name; metric label.
    pub name: String,
    /// Where the endpoints come from.
    pub endpoints: Endpoints,
    /// How to speak to the upstream.
    pub protocol: UpstreamProtocol,
    /// Load-balancing policy.
    pub lb: LbPolicy,
    /// TCP connect timeout. Default 1s.
    pub connect_timeout: Duration,
    /// Idle pooled connections are closed after this. Default 90s.
    pub idle_timeout: Duration,
    /// Passive outlier detection; `None` = off. Default on (5 failures, 10s).
    pub outlier: Option<OutlierDetection>,
}

/// Where a cluster's endpoints come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoints {
    /// Fixed socket addresses.
    Static(Vec<SocketAddr>),
    /// DNS names re-resolved every `refresh` (e.g. a headless Service); every A/AAAA record is
    /// an endpoint.
    Dns {
        /// `host:port` pairs.
        names: Vec<HostPort>,
        /// Re-resolution interval. Default 5s.
        refresh: Duration,
    },
    /// The request's own authority is the destination (like Envoy's dynamic forward proxy):
    /// used by the default outbound listener, where the app addresses the target by Host.
    OriginalAuthority {
        /// Port used when the authority has none. Default 80.
        default_port: u16,
    },
}

/// A DNS name and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// Host name (or IP literal).
    pub host: String,
    /// Port.
    pub port: u16,
}

/// Upstream protocol choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamProtocol {
    /// HTTP/1.1 only (gRPC cannot reach this cluster; such requests get 502).
    Http1,
    /// HTTP/2 with prior knowledge (h2c), multiplexed.
    H2,
    /// gRPC requests (content-type application/grpc*) ride HTTP/2, everything else HTTP/1.1.
    Auto,
}

/// Load-balancing policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LbPolicy {
    /// Round robin over healthy endpoints.
    RoundRobin,
    /// Power of two choices, least loaded by in-flight requests weighted by EWMA latency
    /// (as linkerd2-proxy's "PeakEwma").
    P2cEwma,
}

/// Passive outlier detection settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlierDetection {
    /// Consecutive connect errors / 5xx that eject an endpoint.
    pub consecutive_failures: u32,
    /// First ejection length; doubles on each re-ejection up to `max_ejection`.
    pub base_ejection: Duration,
    /// Cap on the ejection length. Default 5m.
    pub max_ejection: Duration,
    /// Never eject more than this percentage of a cluster's endpoints (0..=100). Default 50.
    pub max_ejection_percent: u8,
}
