//! What happened to one request, for the opt-in access log sink and `ferry demo`.
//!
//! Records are offered with `try_send`: a slow consumer loses records, never slows requests.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// One finished request (response headers sent).
#[derive(Debug, Clone)]
pub struct AccessRecord {
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
    /// Request method.
    pub method: http::Method,
    /// Request path.
    pub path: String,
    /// Response status.
    pub status: u16,
    /// Time inside ferry: request in → response headers out.
    pub duration: Duration,
    /// Time upstream: last attempt sent → response headers received.
    pub upstream_duration: Option<Duration>,
    /// Attempts made (1 = no retry).
    pub attempts: u32,
    /// The caller's verified SPIFFE ID (mutual TLS), if any.
    pub peer_identity: Option<Arc<str>>,
    /// The request's trace id (32 hex digits), when its route traces; sampled or not, so a
    /// log line can be looked up in the tracing backend when its trace was kept.
    pub trace_id: Option<String>,
}
