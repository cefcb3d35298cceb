//! Failures the proxy itself detects on the request path, typed, each saying which side failed
//! and what the caller gets (the table in docs/operations.md). The one renderer at the top of
//! the listener stack ([`ferry_filters::failure::RenderErrorsLayer`]) turns them into answers.

use ferry_filters::failure::{Classifier, Classify, Side};
use ferry_filters::translate::code;
use http::StatusCode;

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
        /// The request never left (connect failure): another attempt may succeed.
        connect: bool,
        /// The exchange failed before any answer, and resending is safe: the upstream refused
        /// the stream unprocessed, or the method is idempotent (GET, HEAD, OPTIONS).
        reset: bool,
        /// The exchange failed before any answer byte, whatever the method: the upstream may
        /// have processed the request, so it is resent only under the opt-in `reset` trigger.
        unanswered: bool,
    },
    /// The upstream did not answer in time.
    #[error("upstream cluster {cluster:?} did not answer within {timeout_ms} ms")]
    Timeout {
        /// Cluster name.
        cluster: String,
        /// The timeout that expired.
        timeout_ms: u128,
        /// Only this attempt's time ran out (the route's `per_try_timeout`), not the route's.
        per_try: bool,
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
    /// The listener was removed by a reload while this connection was open.
    #[error("listener {0:?} was removed by a reload")]
    ListenerGone(String),
}

/// Every classifier the proxy's renderer knows, tried in order at each level of an error's
/// `source()` chain: the proxy's failures, then the filters' errors.
pub static CLASSIFIERS: &[Classifier] = &[classify, ferry_filters::failure::classify_filters];

/// The classifier for the proxy's own failures.
pub fn classify<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Classify> {
    e.downcast_ref::<Failure>().map(|f| f as &dyn Classify)
}

// === impl Failure ===

impl Classify for Failure {
    fn side(&self) -> Side {
        match self {
            Failure::NoRoute { .. }
            | Failure::BodyTooLarge { .. }
            | Failure::BadRequest(_)
            | Failure::AmbiguousFraming(_) => Side::Client,
            Failure::Unavailable { .. } | Failure::Timeout { .. } | Failure::BadGateway(_) => {
                Side::Upstream
            }
            Failure::ListenerGone(_) => Side::Proxy,
        }
    }

    fn http_status(&self) -> StatusCode {
        match self {
            Failure::NoRoute { .. } => StatusCode::NOT_FOUND,
            Failure::Unavailable { .. } | Failure::ListenerGone(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Failure::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            Failure::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Failure::BadRequest(_) | Failure::AmbiguousFraming(_) => StatusCode::BAD_REQUEST,
            Failure::BadGateway(_) => StatusCode::BAD_GATEWAY,
        }
    }

    fn grpc_code(&self) -> u32 {
        match self {
            Failure::NoRoute { .. } => code::UNIMPLEMENTED,
            Failure::Unavailable { .. } | Failure::ListenerGone(_) => code::UNAVAILABLE,
            Failure::Timeout { .. } => code::DEADLINE_EXCEEDED,
            Failure::BodyTooLarge { .. } => code::RESOURCE_EXHAUSTED,
            Failure::BadRequest(_) | Failure::AmbiguousFraming(_) => code::INVALID_ARGUMENT,
            Failure::BadGateway(_) => code::INTERNAL,
        }
    }

    fn reason(&self) -> &'static str {
        match self {
            Failure::NoRoute { .. } => "no_route",
            Failure::Unavailable { .. } => "unavailable",
            Failure::Timeout { .. } => "timeout",
            Failure::BodyTooLarge { .. } => "body_too_large",
            Failure::BadRequest(_) => "bad_request",
            Failure::AmbiguousFraming(_) => "ambiguous_framing",
            Failure::BadGateway(_) => "bad_gateway",
            Failure::ListenerGone(_) => "listener_gone",
        }
    }

    fn retryable(&self) -> bool {
        matches!(
            self,
            Failure::Unavailable { connect: true, .. }
                | Failure::Unavailable { reset: true, .. }
                | Failure::Timeout { per_try: true, .. }
        )
    }

    fn closes_connection(&self) -> bool {
        // Nothing after an ambiguous request on this connection can be trusted.
        matches!(self, Failure::AmbiguousFraming(_))
    }
}

#[cfg(test)]
mod tests {
    use ferry_filters::failure::render;
    use http::header::CONTENT_TYPE;

    use super::*;

    #[test]
    fn grpc_and_http_answers() {
        let f = Failure::Timeout {
            cluster: "c".into(),
            timeout_ms: 5,
            per_try: false,
        };
        assert_eq!(f.http_status(), StatusCode::GATEWAY_TIMEOUT);
        let r = render(&f, true);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["grpc-status"], "4");
        let r = render(
            &Failure::NoRoute {
                method: "GET".into(),
                path: "/x".into(),
            },
            false,
        );
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(r.headers()[CONTENT_TYPE], "application/json");
        let r = render(&Failure::AmbiguousFraming("x"), false);
        assert_eq!(r.headers()[http::header::CONNECTION], "close");
    }
}
