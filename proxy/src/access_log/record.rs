//! The access record: what happened to one request, as plain data the writer formats.
//!
//! Built once per request on the data path, so it holds as few allocations as it can: the
//! request's path, authority and id share one buffer ([`RequestText`]), trace and span ids stay
//! binary, and the gRPC service and method are read from the path when the line is written.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ferry_filters::trace_context::{SpanId, TraceId};

/// One finished request. Absent facts are `None` and left out of the line.
#[derive(Debug, Clone)]
pub struct AccessRecord {
    /// When the request was received (wall clock).
    pub start: SystemTime,
    /// Listener name.
    pub listener: Arc<str>,
    /// Matched route.
    pub route: Option<Arc<str>>,
    /// Model name the request named (path, gRPC message or JSON body).
    pub model: Option<String>,
    /// Model version, if named.
    pub model_version: Option<String>,
    /// Cluster chosen.
    pub cluster: Option<Arc<str>>,
    /// Endpoint of the last attempt.
    pub endpoint: Option<SocketAddr>,
    /// The caller's HTTP version.
    pub protocol: http::Version,
    /// Request method.
    pub method: http::Method,
    /// Path (without the query string: it may carry secrets), authority and request id.
    pub request: RequestText,
    /// A gRPC call (`application/grpc*`): the line names the service and method of its path.
    pub grpc: bool,
    /// Response status; `None` when the caller went away before the response headers.
    pub status: Option<u16>,
    /// gRPC status: the response headers' (trailers-only) or the trailers'.
    pub grpc_status: Option<u32>,
    /// `rest->grpc` or `grpc->rest` when the route translates.
    pub translate: Option<&'static str>,
    /// Request body bytes read.
    pub bytes_in: u64,
    /// Response body bytes sent.
    pub bytes_out: u64,
    /// Time inside ferry: request in → response headers out (time to first byte).
    pub duration: Duration,
    /// Request in → last response byte out (or the answer given up).
    pub total: Duration,
    /// Time upstream: last attempt sent → response headers received.
    pub upstream_duration: Option<Duration>,
    /// Ferry's own share of `duration`: before the last attempt left and after its answer
    /// came back (all of `duration` when there was no upstream).
    pub ferry_duration: Duration,
    /// Attempts made (0 = none, 1 = no retry).
    pub attempts: u32,
    /// Ferry's reason code when ferry made the answer itself (`no_route`, `timeout`, …).
    pub failure: Option<&'static str>,
    /// The caller's verified SPIFFE ID (mutual TLS), if any.
    pub peer_identity: Option<Arc<str>>,
    /// The request's trace id, when its route traces; sampled or not, so a log line can be
    /// looked up in the tracing backend when its trace was kept.
    pub trace_id: Option<TraceId>,
    /// This hop's server span id, when the span is recorded.
    pub span_id: Option<SpanId>,
    /// The tightest enforced rate limit's state as ferry answered it (`x-ratelimit-*`), on a
    /// route with rate limits.
    pub ratelimit: Option<RateLimitState>,
    /// The LLM tokens the answer's `usage` reported, on a route with token budgets (ferry
    /// reads `usage` only there).
    pub tokens: Option<Tokens>,
}

/// An OpenAI-style answer's `usage`: `prompt_tokens` and `completion_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tokens {
    /// `input_tokens` in the record (`prompt_tokens`).
    pub input: u64,
    /// `output_tokens` in the record (`completion_tokens`).
    pub output: u64,
}

/// A rate limit's state as the answer's `x-ratelimit-*` headers gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitState {
    /// Requests per window.
    pub limit: u64,
    /// Requests left in the window (0 when refused).
    pub remaining: u64,
    /// Seconds until the window has room again.
    pub reset_s: u64,
}

/// A request's path, authority and `x-request-id`, copied into one allocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestText {
    buf: String,
    path: usize,
    authority: Option<usize>,
    request_id: Option<usize>,
}

// === impl AccessRecord ===

impl AccessRecord {
    /// An error answer: always written, whatever the sample says.
    pub fn is_error(&self) -> bool {
        self.status.is_none_or(|s| s >= 400)
            || self.grpc_status.is_some_and(|c| c != 0)
            || self.failure.is_some()
    }

    /// Request path, without the query string.
    pub fn path(&self) -> &str {
        self.request.path()
    }

    /// `:authority` or `Host`, as the caller sent it.
    pub fn authority(&self) -> Option<&str> {
        self.request.authority()
    }

    /// The request's `x-request-id` (the caller's, or the one ferry made and forwarded).
    pub fn request_id(&self) -> Option<&str> {
        self.request.request_id()
    }

    /// gRPC service and method, read from a gRPC call's `/package.Service/Method` path.
    pub fn grpc_parts(&self) -> Option<(&str, &str)> {
        if !self.grpc {
            return None;
        }
        let (service, method) = self.path().strip_prefix('/')?.split_once('/')?;
        (!service.is_empty() && !method.is_empty() && !method.contains('/'))
            .then_some((service, method))
    }
}

// === impl RequestText ===

impl RequestText {
    /// The three texts in one buffer.
    pub fn new(path: &str, authority: Option<&str>, request_id: Option<&str>) -> Self {
        let len = path.len() + authority.map_or(0, str::len) + request_id.map_or(0, str::len);
        let mut buf = String::with_capacity(len);
        buf.push_str(path);
        for part in [authority, request_id].into_iter().flatten() {
            buf.push_str(part);
        }
        RequestText {
            buf,
            path: path.len(),
            authority: authority.map(str::len),
            request_id: request_id.map(str::len),
        }
    }

    /// The path.
    pub fn path(&self) -> &str {
        self.buf.get(..self.path).unwrap_or_default()
    }

    /// The authority, if the request had one.
    pub fn authority(&self) -> Option<&str> {
        let len = self.authority?;
        self.buf.get(self.path..self.path + len)
    }

    /// The request id, if the request had one.
    pub fn request_id(&self) -> Option<&str> {
        let start = self.path + self.authority.unwrap_or(0);
        self.buf.get(start..start + self.request_id?)
    }
}
