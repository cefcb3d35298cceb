//! ORCA endpoint load reports: what a model server says about its own load on each answer.
//!
//! A server reports in the `endpoint-load-metrics` header, as text
//! (`TEXT named_metrics.kv_cache_usage_perc=0.4, cpu_utilization=0.3`: what vLLM sends) or
//! JSON (`JSON {"named_metrics": {"kv_cache_usage_perc": 0.4}}`), or in
//! `endpoint-load-metrics-bin`: the base64 `xds.data.orca.v3.OrcaLoadReport` message (gRPC
//! servers, usually in trailers). A balancer asks for one metric by name
//! ([`MetricName`]); parsing stops at it, so a report costs a scan of one header value.
//!
//! Reports come from upstreams, so they are untrusted: a malformed one is no report (the
//! balancer falls back to latency alone), never an error for the request; values that are not
//! finite or are negative are ignored.

mod answers;
mod orca_bin;
mod trailers;

use http::HeaderMap;

pub use self::answers::{
    AnswerReports, AnswerReportsLayer, AnswerReportsService, IN_FLIGHT_METRIC, QUEUED_METRIC,
    ResponseFuture,
};
pub use self::trailers::OnTrailers;

/// The text and JSON report header.
pub const HEADER: &str = "endpoint-load-metrics";
/// The binary (base64 protobuf) report header or trailer.
pub const HEADER_BIN: &str = "endpoint-load-metrics-bin";
/// Reports longer than this are not read: a report is a handful of numbers.
const MAX_REPORT: usize = 8 * 1024;

/// A metric a balancer reads: one of the report's scalar fields, or one entry of its maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricName {
    /// `cpu_utilization`, `mem_utilization`, `application_utilization`, `rps_fractional` or
    /// `eps`.
    Field(Field),
    /// `named_metrics.<name>`.
    Named(String),
    /// `utilization.<name>`.
    Utilization(String),
    /// `request_cost.<name>`.
    RequestCost(String),
}

/// The scalar fields of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Fraction of CPU in use (may exceed 1 past the server's soft limit).
    CpuUtilization,
    /// Fraction of memory in use.
    MemUtilization,
    /// The application's own utilization figure.
    ApplicationUtilization,
    /// Requests per second served.
    RpsFractional,
    /// Errors per second.
    Eps,
}

/// Why a metric name is not one a report can carry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown load-report metric {0:?} (expected cpu_utilization, mem_utilization, application_utilization, rps_fractional, eps, or named_metrics.<name>, utilization.<name>, request_cost.<name>)"
)]
pub struct UnknownMetric(pub String);

impl std::str::FromStr for MetricName {
    type Err = UnknownMetric;

    fn from_str(s: &str) -> Result<Self, UnknownMetric> {
        let field = |f| Ok(MetricName::Field(f));
        match s {
            "cpu_utilization" => return field(Field::CpuUtilization),
            "mem_utilization" => return field(Field::MemUtilization),
            "application_utilization" => return field(Field::ApplicationUtilization),
            "rps_fractional" => return field(Field::RpsFractional),
            "eps" => return field(Field::Eps),
            _ => {}
        }
        let (map, key) = s.split_once('.').ok_or_else(|| UnknownMetric(s.into()))?;
        if key.is_empty() {
            return Err(UnknownMetric(s.into()));
        }
        match map {
            "named_metrics" => Ok(MetricName::Named(key.into())),
            "utilization" => Ok(MetricName::Utilization(key.into())),
            "request_cost" => Ok(MetricName::RequestCost(key.into())),
            _ => Err(UnknownMetric(s.into())),
        }
    }
}

impl MetricName {
    /// Whether `key`, as a TEXT report writes it, names this metric. Compared in parts, not
    /// against a formatted name: it runs on every answer of a cluster balancing on reports.
    fn is_text_key(&self, key: &str) -> bool {
        let (map, name) = match self {
            MetricName::Field(f) => return key == f.name(),
            MetricName::Named(k) => ("named_metrics.", k),
            MetricName::Utilization(k) => ("utilization.", k),
            MetricName::RequestCost(k) => ("request_cost.", k),
        };
        key.strip_prefix(map) == Some(name.as_str())
    }
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::CpuUtilization => "cpu_utilization",
            Field::MemUtilization => "mem_utilization",
            Field::ApplicationUtilization => "application_utilization",
            Field::RpsFractional => "rps_fractional",
            Field::Eps => "eps",
        }
    }
}

/// `metric` from the report in `headers` (an answer's headers or trailers), if it carries one.
pub fn metric(headers: &HeaderMap, metric: &MetricName) -> Option<f64> {
    let value = if let Some(v) = headers.get(HEADER) {
        let text = v.to_str().ok().filter(|t| t.len() <= MAX_REPORT)?;
        if let Some(rest) = text.strip_prefix("TEXT ") {
            from_text(rest, metric)
        } else if let Some(rest) = text.strip_prefix("JSON ") {
            from_json(rest, metric)
        } else {
            None
        }
    } else {
        let v = headers.get(HEADER_BIN)?;
        if v.len() > MAX_REPORT {
            return None;
        }
        orca_bin::metric(v.as_bytes(), metric)
    };
    value.filter(|v| v.is_finite() && *v >= 0.0)
}

/// `key=value` pairs separated by commas (spaces around them allowed).
fn from_text(text: &str, metric: &MetricName) -> Option<f64> {
    text.split(',').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        metric
            .is_text_key(k.trim())
            .then(|| v.trim().parse::<f64>().ok())?
    })
}

/// The report in proto3 JSON: field names as in the proto (`cpu_utilization`, `named_metrics`).
fn from_json(text: &str, metric: &MetricName) -> Option<f64> {
    let report: serde_json::Value = serde_json::from_str(text).ok()?;
    let (map, key) = match metric {
        MetricName::Field(f) => return report.get(f.name())?.as_f64(),
        MetricName::Named(k) => ("named_metrics", k),
        MetricName::Utilization(k) => ("utilization", k),
        MetricName::RequestCost(k) => ("request_cost", k),
    };
    report.get(map)?.get(key.as_str())?.as_f64()
}

/// A TEXT report of `metrics` (name, value), as the inbound side writes its own load.
pub fn text_report<'a>(metrics: impl IntoIterator<Item = (&'a str, f64)>) -> String {
    let mut out = String::from("TEXT ");
    for (i, (name, value)) in metrics.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str("named_metrics.");
        out.push_str(name);
        out.push('=');
        out.push_str(&value.to_string());
    }
    out
}

#[cfg(test)]
mod tests;
