//! The one error type of the bench library: every failure names what was being done.

use std::io;

/// Why a benchmark step failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// An OS-level operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An HTTP exchange failed or returned something unexpected.
    #[error("{0}")]
    Http(String),
    /// A proxy or peer could not be installed, started or reached.
    #[error("{0}")]
    Process(String),
    /// A scenario produced no usable measurement.
    #[error("scenario {scenario} against {target}: {reason}")]
    Scenario {
        /// Scenario name.
        scenario: String,
        /// Target name.
        target: String,
        /// What went wrong.
        reason: String,
    },
    /// Writing results or charts failed.
    #[error("report: {0}")]
    Report(String),
}

/// Result alias for the bench library.
pub type Result<T> = std::result::Result<T, BenchError>;

/// Attaches a description of the step to an `io::Result`.
pub trait IoContext<T> {
    /// Wraps the error with `context`.
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| BenchError::Io {
            context: context(),
            source,
        })
    }
}
