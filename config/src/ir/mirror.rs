//! Mirrored traffic on a route (`routes[].mirror`).

use std::time::Duration;

/// A candidate cluster that gets a copy of a share of the route's requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Mirror {
    /// The candidate cluster (known to the config).
    pub cluster: String,
    /// Share of requests mirrored, in 0..=1, stable per request id.
    pub fraction: f64,
    /// How the candidate's answer is compared with the primary's.
    pub compare: Compare,
    /// Numeric tolerance of `Compare::Oip`.
    pub tolerance: Tolerance,
    /// Larger requests and answers are not mirrored or compared, in bytes.
    pub max_body: u64,
    /// How long a mirrored request may take, its answer included.
    pub timeout: Duration,
    /// Mirrored requests in flight to this candidate from this route (>= 1).
    pub max_in_flight: u32,
}

/// How answers are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Not compared.
    None,
    /// Open Inference Protocol answers, per output tensor.
    Oip,
    /// JSON answers, structurally.
    Json,
}

/// Elements agree when |a-b| <= abs + rel*|b|.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Absolute part (>= 0).
    pub abs: f64,
    /// Relative part (>= 0).
    pub rel: f64,
}

// === impl Compare ===

impl Compare {
    /// The name the file uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Compare::None => "none",
            Compare::Oip => "oip",
            Compare::Json => "json",
        }
    }
}
