//! A failed send as the [`Failure`] the caller is answered with, and whether it may be retried
//! elsewhere: a connect failure always; a reset before any answer byte when the request is
//! idempotent or HTTP/2 says the upstream never processed it.

use super::Shared;
use crate::cluster::Endpoint;
use crate::failure::Failure;
use crate::upstream::SendError;

// === impl Shared ===

impl Shared {
    pub(super) fn send_failure(
        &self,
        endpoint: &Endpoint,
        e: SendError,
        idempotent: bool,
    ) -> Failure {
        let cluster = self.cluster.name.to_string();
        match e {
            SendError::Connect { addr, source } => {
                self.connect_errors.inc();
                self.record_failure(endpoint);
                Failure::Unavailable {
                    cluster,
                    reason: format!("connect to {addr} failed: {}", error_chain(source.as_ref())),
                    connect: true,
                    reset: false,
                    unanswered: false,
                }
            }
            e @ SendError::Request { .. } => {
                // Our own body limit cut the request stream: the caller's fault, not the
                // upstream's.
                if let Some(too_large) = ferry_filters::body_limit::find(&e) {
                    return Failure::BodyTooLarge {
                        limit: too_large.limit,
                    };
                }
                if let Some(m) = ferry_filters::body_limit::find_malformed(&e) {
                    return Failure::BadRequest(m.to_string());
                }
                self.record_failure(endpoint);
                // No answer came (an answer's head would have ended the send): an idempotent
                // request, or a stream the upstream refused unprocessed, may go elsewhere.
                Failure::Unavailable {
                    cluster,
                    reason: error_chain(&e),
                    connect: false,
                    reset: idempotent || refused_unprocessed(&e),
                    unanswered: true,
                }
            }
            e @ SendError::Uri(_) => Failure::BadGateway(e.to_string()),
        }
    }
}

/// Whether HTTP/2 says the upstream never processed the stream: it refused it
/// (`REFUSED_STREAM`), or a graceful GOAWAY (`NO_ERROR`) excluded it (RFC 9113 §8.7: either
/// way the request can be retried, whatever its method).
fn refused_unprocessed(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            return match h2.reason() {
                Some(h2::Reason::REFUSED_STREAM) => true,
                Some(h2::Reason::NO_ERROR) => h2.is_go_away(),
                _ => false,
            };
        }
        cur = err.source();
    }
    false
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
