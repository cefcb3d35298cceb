//! Fault injection on a route (`routes[].fault`), for drills.

use std::time::Duration;

/// Faults a route injects; at least one of `delay` and `abort`.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// A fixed delay for a share of requests.
    pub delay: Option<FaultDelay>,
    /// An error answer for a share of requests.
    pub abort: Option<FaultAbort>,
    /// Only requests carrying this header (lower-case name) are candidates; `None` = all.
    pub header: Option<String>,
}

/// A fixed delay.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultDelay {
    /// How long (> 0).
    pub fixed: Duration,
    /// Share of candidate requests delayed, in 0..=1.
    pub ratio: f64,
}

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultAbort {
    /// HTTP status, 400..=599.
    pub status: u16,
    /// gRPC status code, 1..=16.
    pub grpc_status: u32,
    /// Share of candidate requests aborted, in 0..=1.
    pub ratio: f64,
}
