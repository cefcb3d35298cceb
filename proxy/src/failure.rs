//! Failures the proxy answers itself, and how each is told to the caller.
//!
//! HTTP callers get a status and `{"error": "..."}`; gRPC callers get a trailers-only response
//! (HTTP 200, `grpc-status`, `grpc-message`), which is what gRPC clients expect from a proxy
//! (the table in docs/operations.md).

use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};

use crate::body::{ProxyBody, empty, full};

/// gRPC status codes used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum GrpcCode {
    /// 3
    InvalidArgument = 3,
    /// 4
    DeadlineExceeded = 4,
    /// 8
    ResourceExhausted = 8,
    /// 12
    Unimplemented = 12,
    /// 13
    Internal = 13,
    /// 14
    Unavailable = 14,
}

/// Something the proxy answers on its own.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// No route matched.
    #[error("no route matches {method} {path}")]
    NoRoute {
        /// Request method.
        method: String,
        /// Request path.
        path: String,
    },
    /// No endpoint could be reached.
    #[error("upstream cluster {cluster:?} unavailable: {reason}")]
    Unavailable {
        /// Cluster name.
        cluster: String,
        /// Why.
        reason: String,
    },
    /// The upstream did not answer in time.
    #[error("upstream cluster {cluster:?} did not answer within {timeout_ms} ms")]
    Timeout {
        /// Cluster name.
        cluster: String,
        /// The timeout that expired.
        timeout_ms: u128,
    },
    /// The request body is over the listener's limit.
    #[error("request body exceeds the limit of {limit} bytes")]
    BodyTooLarge {
        /// The limit.
        limit: u64,
    },
    /// The request is malformed.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The request's framing was ambiguous (possible request smuggling); the connection closes.
    #[error("bad request: {0}")]
    AmbiguousFraming(&'static str),
    /// The upstream broke the protocol (e.g. a gRPC call to an HTTP/1.1-only cluster).
    #[error("bad gateway: {0}")]
    BadGateway(String),
}

// === impl Failure ===

impl Failure {
    /// The HTTP status an HTTP caller gets.
    pub fn status(&self) -> StatusCode {
        match self {
            Failure::NoRoute { .. } => StatusCode::NOT_FOUND,
            Failure::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Failure::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            Failure::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Failure::BadRequest(_) | Failure::AmbiguousFraming(_) => StatusCode::BAD_REQUEST,
            Failure::BadGateway(_) => StatusCode::BAD_GATEWAY,
        }
    }

    /// The gRPC status a gRPC caller gets.
    pub fn grpc_code(&self) -> GrpcCode {
        match self {
            Failure::NoRoute { .. } => GrpcCode::Unimplemented,
            Failure::Unavailable { .. } => GrpcCode::Unavailable,
            Failure::Timeout { .. } => GrpcCode::DeadlineExceeded,
            Failure::BodyTooLarge { .. } => GrpcCode::ResourceExhausted,
            Failure::BadRequest(_) | Failure::AmbiguousFraming(_) => GrpcCode::InvalidArgument,
            Failure::BadGateway(_) => GrpcCode::Internal,
        }
    }

    /// The metric/access-log reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Failure::NoRoute { .. } => "no_route",
            Failure::Unavailable { .. } => "unavailable",
            Failure::Timeout { .. } => "timeout",
            Failure::BodyTooLarge { .. } => "body_too_large",
            Failure::BadRequest(_) => "bad_request",
            Failure::AmbiguousFraming(_) => "ambiguous_framing",
            Failure::BadGateway(_) => "bad_gateway",
        }
    }

    /// Renders the answer for an HTTP or a gRPC caller.
    pub fn into_response(self, grpc: bool) -> Response<ProxyBody> {
        let message = self.to_string();
        let close = matches!(self, Failure::AmbiguousFraming(_));
        if grpc {
            return grpc_trailers_only(self.grpc_code(), &message);
        }
        let body = serde_json::json!({ "error": message }).to_string();
        let mut resp = Response::new(full(body));
        *resp.status_mut() = self.status();
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if close {
            // Nothing after an ambiguous request on this connection can be trusted.
            resp.headers_mut()
                .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
        }
        resp
    }
}

/// A gRPC trailers-only response: status in the headers, no body.
pub fn grpc_trailers_only(code: GrpcCode, message: &str) -> Response<ProxyBody> {
    let mut resp = Response::new(empty());
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert("grpc-status", HeaderValue::from(u16::from(code as u8)));
    if let Ok(v) = HeaderValue::from_str(&percent_encode(message)) {
        headers.insert("grpc-message", v);
    }
    resp
}

/// grpc-message is percent-encoded (gRPC over HTTP/2 spec): printable ASCII except `%` stays.
fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for b in message.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_and_http_answers() {
        let f = Failure::Timeout {
            cluster: "c".into(),
            timeout_ms: 5,
        };
        assert_eq!(f.status(), StatusCode::GATEWAY_TIMEOUT);
        let r = f.into_response(true);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["grpc-status"], "4");
        let r = Failure::NoRoute {
            method: "GET".into(),
            path: "/x".into(),
        }
        .into_response(false);
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(r.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(percent_encode("a%b\n"), "a%25b%0A");
    }
}
