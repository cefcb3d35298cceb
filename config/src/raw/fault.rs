//! Raw fault-injection types (`routes[].fault`), for drills: delays and aborts by percentage.

use schemars::JsonSchema;
use serde::Deserialize;

use super::scalars::{DurationText, HeaderNameText, PercentNumberText};

/// Faults injected into a route's requests; off unless written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Fault")]
pub struct FaultSpec {
    /// Hold a share of requests before forwarding them.
    pub delay: Option<FaultDelaySpec>,
    /// Answer a share of requests with an error instead of forwarding them.
    pub abort: Option<FaultAbortSpec>,
    /// Only requests carrying this header (any value) are candidates; omitted = every request.
    pub header: Option<HeaderNameText>,
}

/// A fixed delay for a share of requests.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "FaultDelay")]
pub struct FaultDelaySpec {
    /// How long, e.g. `200ms` (> 0).
    pub fixed: DurationText,
    /// Share of requests delayed, 0 to 100.
    pub percent: PercentNumberText,
}

/// An error answer for a share of requests.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "FaultAbort")]
pub struct FaultAbortSpec {
    /// HTTP status HTTP callers get, 400 to 599. Default 503.
    pub status: Option<u16>,
    /// gRPC status code gRPC callers get (trailers-only), 1 to 16. Default: the code for
    /// `status` (502/503 → 14 UNAVAILABLE, 504 → 4, 429 → 8, 401 → 16, 403 → 7, 404 → 12,
    /// other 5xx → 13, other 4xx → 2).
    pub grpc_status: Option<u32>,
    /// Share of requests aborted, 0 to 100.
    pub percent: PercentNumberText,
}
