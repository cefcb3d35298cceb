//! Raw mirror types (`routes[].mirror`): copies of a share of requests sent to a candidate
//! cluster, whose answers may be compared with the primary's.

use schemars::JsonSchema;
use serde::Deserialize;

use super::scalars::{ByteSizeText, DurationText, NonNegativeText, RatioText, Text};

/// A candidate cluster that gets a copy of a share of the route's requests.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Mirror")]
pub struct MirrorSpec {
    /// The candidate cluster; its answers never reach the caller.
    pub cluster: Text,
    /// Share of requests mirrored, 0 to 1; stable per `x-request-id` (the same id is always
    /// or never mirrored).
    pub fraction: RatioText,
    /// Compare the candidate's answer with the primary's: `none`, `oip` (per output tensor)
    /// or `json` (structural equality). Default `none`.
    pub compare: Option<CompareSpec>,
    /// Numeric tolerance of `compare: oip`: elements agree when |a-b| <= abs + rel*|b|
    /// (b = the primary's). Default `{abs: 1e-4, rel: 1e-3}`.
    pub tolerance: Option<ToleranceSpec>,
    /// Requests and answers larger than this are not mirrored or compared (counted).
    /// Default `16MiB`.
    pub max_body: Option<ByteSizeText>,
    /// How long a mirrored request may take, its answer included; then it is dropped
    /// (counted). Default `10s`.
    pub timeout: Option<DurationText>,
    /// Mirrored requests in flight to this candidate from this route; over it a mirror is
    /// dropped (counted). Default 64.
    pub max_in_flight: Option<u32>,
}

/// How answers are compared.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompareSpec {
    /// Not compared (the answer is read and thrown away).
    None,
    /// Open Inference Protocol answers (REST JSON, REST binary extension, gRPC), per tensor.
    Oip,
    /// JSON answers, structurally.
    Json,
}

/// Numeric tolerance.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MirrorTolerance")]
pub struct ToleranceSpec {
    /// Absolute part, >= 0. Default 1e-4.
    pub abs: Option<NonNegativeText>,
    /// Relative part (of the primary's value), >= 0. Default 1e-3.
    pub rel: Option<NonNegativeText>,
}
