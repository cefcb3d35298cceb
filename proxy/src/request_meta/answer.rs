//! What an answer's response headers say for `/stats` and `/recent`: failed (5xx or a gRPC
//! failure code), made by ferry's limits, or made by ferry at all; and its count in its
//! route's and endpoint's `/stats` rows.

use std::time::Duration;

use http::Response;

use super::Forwarded;
use crate::body::ProxyBody;

/// What the response headers say about an answer, read once for `/stats` and `/recent`.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) failed: bool,
    /// Whether the headers carried the gRPC status (a trailers-only answer).
    pub(super) status_known: bool,
    limited: bool,
    pub(super) rendered: Option<&'static str>,
}

impl Answer {
    /// `grpc`: whether the request was a gRPC call (or may have been: unknown). Only a gRPC
    /// answer's `grpc-status` means anything, and looking a custom header up hashes its name:
    /// other answers skip it.
    pub(super) fn of(resp: &Response<ProxyBody>, code: u16, grpc: bool) -> Self {
        let grpc = grpc
            .then(|| resp.headers().get(&GRPC_STATUS))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let rendered = resp
            .extensions()
            .get::<ferry_filters::failure::Rendered>()
            .map(|r| r.0);
        Answer {
            status_known: grpc.is_some(),
            failed: crate::stats::is_failure(code, grpc),
            // Only ferry's own 429/503 answers can be its limits'.
            limited: matches!(code, 429 | 503) && crate::stats::is_limited(rendered),
            rendered,
        }
    }

    /// Adds the answer to its route's and its endpoint's `/stats` rows. A gRPC status in
    /// the trailers comes later ([`super::Outcome::observe_trailers`]).
    pub(super) fn count(
        &self,
        duration: Duration,
        route: &crate::stats::Cell,
        forwarded: Option<&Forwarded>,
    ) {
        let retries = forwarded.map_or(0, |f| f.attempts.saturating_sub(1));
        route.answer(duration, self.failed, retries, self.limited);
        if let Some(f) = forwarded {
            f.stats.answer(duration, self.failed, retries, self.limited);
        }
    }
}

/// `grpc-status`, parsed once.
static GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");
