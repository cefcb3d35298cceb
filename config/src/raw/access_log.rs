//! Raw access-log types: the top-level `access_log` list of sinks and their settings.

use schemars::JsonSchema;
use serde::Deserialize;

use super::scalars::{DurationText, RatioText, Text};

/// One access-log sink (an entry of the top-level `access_log` list): every request on every
/// listener writes one line to it, unless its route says `access_log: false`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AccessLog")]
pub struct AccessLogSpec {
    /// The file lines are appended to, e.g. `/dev/stdout` or `/var/log/ferry/access.log`
    /// (relative paths are resolved against the config file's directory). Its directory must
    /// exist and be writable. A file that is rotated (a new file at the path) is reopened
    /// within a second, and at once on SIGUSR1.
    #[schemars(length(min = 1))]
    pub path: Text,
    /// `json` (one object a line) or `text` (one fixed line format, docs/observability.md).
    /// Default `json`.
    pub format: Option<AccessLogFormatSpec>,
    /// Share of successful answers written, 0 to 1; errors (status >= 400, a gRPC status
    /// other than 0, an answer ferry made itself, a caller gone before the answer) are always
    /// written. Default 1.
    pub sample: Option<RatioText>,
    /// Answers slower than this (request in → last byte out) are always written, whatever
    /// `sample` says; > 0. Default: none.
    pub slower_than: Option<DurationText>,
}

/// An access-log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "AccessLogFormat")]
pub enum AccessLogFormatSpec {
    /// One JSON object a line.
    Json,
    /// One fixed, space-separated line.
    Text,
}
