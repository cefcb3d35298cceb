//! A route: how requests are matched, and what happens to a matching request (forward or
//! answer directly, header edits, rewrite, timeout, retries).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use super::tensors::ValidateTensors;
use super::translate::Translate;

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
    /// Who may call this route (by peer identity and model); `None` = anyone the listener
    /// admits.
    pub authorization: Option<super::Authorization>,
    /// Rate limits; every entry must admit the request. Empty = none.
    pub rate_limit: Vec<super::RateLimit>,
    /// In-flight cap per route and model; `None` = none.
    pub concurrency: Option<super::Concurrency>,
    /// Whether this route's requests are written to the access-log sinks (`access_log: false`
    /// silences health checks). Default true.
    pub access_log: bool,
    /// Load reports on the route's answers. Default: neither added nor stripped.
    pub load_report: RouteLoadReport,
    /// Faults injected for drills; `None` = none.
    pub fault: Option<super::Fault>,
    /// Mirrors to candidate clusters. Empty = none.
    pub mirror: Vec<super::Mirror>,
}

/// What a route does with load reports on its answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteLoadReport {
    /// Add ferry's own load (`named_metrics.ferry_inflight`, `named_metrics.ferry_queued`).
    pub report: bool,
    /// Remove the upstream's `endpoint-load-metrics*` headers and trailers.
    pub strip: bool,
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
    /// Name of a cluster in [`Config::clusters`](super::Config::clusters) (validated to exist).
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
    /// The connection or stream failed before any answer byte, whatever the method (Envoy's
    /// `reset`): opt-in, since the upstream may have processed the request; for routes whose
    /// calls are safe to repeat, such as inference on a stateless model.
    Reset,
}
