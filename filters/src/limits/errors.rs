//! The answers limits give.

use std::time::Duration;

use http::{HeaderMap, HeaderValue, StatusCode};

use crate::failure::{Classify, Side};
use crate::translate::code;

/// Over a rate limit.
#[derive(Debug, thiserror::Error)]
#[error("rate limit {limit:?} exceeded: {amount} per {per_secs}s; retry after {retry_after_secs}s")]
pub struct RateLimited {
    /// The limit's name.
    pub limit: String,
    /// Its amount per window.
    pub amount: u64,
    per_secs: String,
    retry_after_secs: u64,
    retry_after: Duration,
}

impl RateLimited {
    /// Refused by `limit` (`amount` per `per`); a request may pass after `retry_after`.
    pub fn new(limit: &str, amount: u64, per: Duration, retry_after: Duration) -> Self {
        RateLimited {
            limit: limit.to_owned(),
            amount,
            per_secs: format!("{}", per.as_secs_f64()),
            retry_after_secs: ceil_secs(retry_after),
            retry_after,
        }
    }

    /// How long until a request may pass.
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }
}

/// Whole seconds, rounded up (a client retrying after `retry-after` must find room).
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

impl Classify for RateLimited {
    fn side(&self) -> Side {
        Side::Client
    }
    fn http_status(&self) -> StatusCode {
        StatusCode::TOO_MANY_REQUESTS
    }
    fn grpc_code(&self) -> u32 {
        code::RESOURCE_EXHAUSTED
    }
    fn reason(&self) -> &'static str {
        "rate_limited"
    }
    fn retryable(&self) -> bool {
        // Not by ferry: retrying at once would only spend the caller's quota again.
        false
    }
    fn extra_headers(&self, headers: &mut HeaderMap) {
        headers.insert("retry-after", HeaderValue::from(self.retry_after_secs));
        headers.insert("x-ratelimit-limit", HeaderValue::from(self.amount));
        headers.insert("x-ratelimit-remaining", HeaderValue::from(0u64));
        headers.insert(
            "x-ratelimit-reset",
            HeaderValue::from(self.retry_after_secs),
        );
    }
}

/// A concurrency limit shed the request.
#[derive(Debug, thiserror::Error)]
pub enum Overloaded {
    /// Every slot busy and the queue full.
    #[error("model {model:?} is at its concurrency limit and its queue is full")]
    QueueFull {
        /// The model (or `""`).
        model: String,
    },
    /// Waited `queue_timeout` without a slot.
    #[error("model {model:?} is at its concurrency limit: no slot within the queue timeout")]
    QueueTimeout {
        /// The model (or `""`).
        model: String,
    },
    /// The caller's deadline is shorter than the wait a slot is expected to take.
    #[error("model {model:?} is at its concurrency limit and the caller's deadline cannot be met")]
    Deadline {
        /// The model (or `""`).
        model: String,
    },
}

impl Classify for Overloaded {
    fn side(&self) -> Side {
        Side::Upstream
    }
    fn http_status(&self) -> StatusCode {
        StatusCode::SERVICE_UNAVAILABLE
    }
    fn grpc_code(&self) -> u32 {
        code::UNAVAILABLE
    }
    fn reason(&self) -> &'static str {
        match self {
            Overloaded::QueueFull { .. } => "queue_full",
            Overloaded::QueueTimeout { .. } => "queue_timeout",
            Overloaded::Deadline { .. } => "deadline",
        }
    }
}

/// A limit's store failed and the limit fails closed.
#[derive(Debug, thiserror::Error)]
#[error("rate limit {limit:?} cannot be checked: its store is unavailable")]
pub struct StoreUnavailable {
    /// The limit's name.
    pub limit: String,
    #[source]
    source: super::window::StoreError,
}

impl StoreUnavailable {
    /// `limit`'s store failed with `source`.
    pub fn new(limit: &str, source: super::window::StoreError) -> Self {
        StoreUnavailable {
            limit: limit.to_owned(),
            source,
        }
    }
}

impl Classify for StoreUnavailable {
    fn side(&self) -> Side {
        Side::Proxy
    }
    fn http_status(&self) -> StatusCode {
        StatusCode::SERVICE_UNAVAILABLE
    }
    fn grpc_code(&self) -> u32 {
        code::UNAVAILABLE
    }
    fn reason(&self) -> &'static str {
        "limit_store_unavailable"
    }
}
