//! Access-log sinks (top-level `access_log:`): where each request's line goes, in which
//! format, and which successful answers are left out.
//!
//! Whether a sink's directory exists and is writable is checked by the proxy when it loads
//! the config (and by `ferry validate`), at [`AccessLog::path_at`]: this crate reads no files.

use std::path::PathBuf;
use std::time::Duration;

use super::FieldLocation;

/// One sink.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessLog {
    /// The file appended to, resolved against the config file's directory; unique among the
    /// sinks.
    pub path: PathBuf,
    /// Where `path` is written in the file, for errors found when it is opened.
    pub path_at: FieldLocation,
    /// The line format.
    pub format: AccessLogFormat,
    /// Share of successful answers written, 0.0..=1.0 and finite; errors always are. Default
    /// 1.0.
    pub sample: f64,
    /// Answers slower than this are always written; > 0. `None` = not by latency.
    pub slower_than: Option<Duration>,
}

/// An access-log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AccessLogFormat {
    /// One JSON object a line (the default).
    #[default]
    Json,
    /// One fixed, space-separated line (docs/observability.md).
    Text,
}
