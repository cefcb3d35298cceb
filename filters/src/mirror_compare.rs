//! Comparing a mirrored candidate's answer with the primary's, for `routes[].mirror` with
//! `compare`. Used by the proxy's mirror after both answers are in hand; usable alone.
//!
//! Settings: [`CompareSettings`] — the [`CompareMode`], a numeric [`Tolerance`] and a bound on
//! the bytes an answer may have. The answers are [`Answer`]s: status, headers, the whole body
//! (bounded by the caller) and trailers.
//!
//! - [`CompareMode::Oip`]: Open Inference Protocol answers, REST JSON, REST with the binary
//!   tensor extension, or gRPC `ModelInferResponse`, read with the translator's own readers.
//!   Per output tensor (matched by name) the datatypes and shapes must agree and every element
//!   must be within tolerance: `|a - b| <= abs + rel * |b|`, `b` the primary's value (NaN
//!   agrees only with NaN). Classification outputs (floating point, 1-D or 2-D) also report
//!   whether their argmax agrees, per row.
//! - [`CompareMode::Json`]: structural equality of two JSON documents (object key order does
//!   not matter; numbers compare by value).
//!
//! A status that differs (HTTP status, or gRPC `grpc-status`) is a mismatch; two failures
//! with the same status match without reading the bodies. An answer that cannot be read is an
//! error, not a mismatch: the candidate may be right and ferry unable to tell.

mod elements;
mod json;
mod oip;

#[cfg(test)]
mod tests;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};

pub use self::elements::Elements;

/// How answers are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareMode {
    /// Not compared.
    None,
    /// Open Inference Protocol answers, per output tensor.
    Oip,
    /// JSON documents, structurally.
    Json,
}

/// Elements agree when `|a - b| <= abs + rel * |b|` (`b` the primary's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Absolute part (>= 0).
    pub abs: f64,
    /// Relative part (>= 0).
    pub rel: f64,
}

/// What [`compare`] needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareSettings {
    /// How answers are compared.
    pub mode: CompareMode,
    /// Numeric tolerance (OIP).
    pub tolerance: Tolerance,
    /// Bound on the bytes decoded from one answer (tensors included).
    pub max_body: u64,
}

/// One answer, read whole.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers (the content type tells gRPC from REST, the binary extension's
    /// `inference-header-content-length` tells binary from JSON).
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
    /// Trailers (gRPC's status), if any.
    pub trailers: Option<HeaderMap>,
}

/// The first disagreement found.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// The output tensor (OIP), the JSON pointer (JSON), or `(status)` / `(outputs)`.
    pub tensor: String,
    /// The element's flat (row-major) index, when the difference is in an element.
    pub index: Option<usize>,
    /// The primary's value, as text.
    pub primary: String,
    /// The candidate's value, as text.
    pub candidate: String,
}

/// The verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The answers agree.
    Match,
    /// They disagree; the first difference, and how many elements differ in all.
    Mismatch {
        /// The first difference (in output order, then element order).
        first: Difference,
        /// Elements (or fields) that differ, over every tensor.
        count: usize,
    },
    /// An answer could not be read (not OIP, not JSON, over the bound).
    Error(String),
}

/// The result of one comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Match, mismatch or error.
    pub verdict: Verdict,
    /// The largest `|a - b|` over every numeric element compared (OIP), if any was.
    pub max_abs_diff: Option<f64>,
    /// Whether every classification output's argmax agreed, per row (OIP); `None` when the
    /// answers have no classification output.
    pub argmax_agrees: Option<bool>,
}

// === impl Tolerance ===

impl Tolerance {
    /// Whether `candidate` is within tolerance of `primary`.
    pub fn agrees(&self, primary: f64, candidate: f64) -> bool {
        if primary.is_nan() || candidate.is_nan() {
            return primary.is_nan() && candidate.is_nan();
        }
        if primary == candidate {
            // Equal infinities too.
            return true;
        }
        (candidate - primary).abs() <= self.abs + self.rel * primary.abs()
    }
}

// === impl Comparison ===

impl Comparison {
    fn verdict(verdict: Verdict) -> Self {
        Comparison {
            verdict,
            max_abs_diff: None,
            argmax_agrees: None,
        }
    }
}

/// Compares `candidate`'s answer with `primary`'s.
pub fn compare(settings: &CompareSettings, primary: &Answer, candidate: &Answer) -> Comparison {
    if settings.mode == CompareMode::None {
        return Comparison::verdict(Verdict::Match);
    }
    let grpc = is_grpc(&primary.headers) || is_grpc(&candidate.headers);
    if let Some(c) = status_differs(primary, candidate, grpc) {
        return c;
    }
    let ok = primary.status.is_success() && (!grpc || grpc_status(primary) == Some(0));
    if !ok {
        // Both failed alike: the same answer as far as a caller can tell.
        return Comparison::verdict(Verdict::Match);
    }
    match settings.mode {
        CompareMode::None => Comparison::verdict(Verdict::Match),
        CompareMode::Json => Comparison::verdict(json::compare(&primary.body, &candidate.body)),
        CompareMode::Oip => oip::compare(settings, primary, candidate, grpc),
    }
}

fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// `grpc-status` from the trailers, or from the headers of a trailers-only answer.
fn grpc_status(a: &Answer) -> Option<u32> {
    a.trailers
        .as_ref()
        .and_then(|t| t.get("grpc-status"))
        .or_else(|| a.headers.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

fn status_differs(primary: &Answer, candidate: &Answer, grpc: bool) -> Option<Comparison> {
    let differ = |what: &str, p: String, c: String| {
        Comparison::verdict(Verdict::Mismatch {
            first: Difference {
                tensor: what.to_owned(),
                index: None,
                primary: p,
                candidate: c,
            },
            count: 1,
        })
    };
    if primary.status != candidate.status {
        return Some(differ(
            "(status)",
            primary.status.as_u16().to_string(),
            candidate.status.as_u16().to_string(),
        ));
    }
    if grpc {
        let (p, c) = (grpc_status(primary), grpc_status(candidate));
        if p != c {
            let text = |s: Option<u32>| s.map_or_else(|| "none".to_owned(), |s| s.to_string());
            return Some(differ("(grpc-status)", text(p), text(c)));
        }
    }
    None
}
