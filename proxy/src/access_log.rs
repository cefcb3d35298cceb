//! The access log: what happened to each request, one line per request on every listener, to
//! each sink of the top-level `access_log` (and to `ferry demo`'s channel).
//!
//! Place: [`crate::request_meta`] builds the record when the response headers are ready and
//! the connection's response body finishes it (bytes sent, gRPC status from the trailers, total
//! time), so the line is complete; the record then goes to each sink whose `sample` and
//! `slower_than` admit it. Nothing is recorded when the config has no sink.
//!
//! Writing never blocks a request: each sink is a bounded batch of formatted lines that its own
//! writer thread appends to the file every 25 ms ([`writer`]). A full batch drops the line
//! (`ferry_access_log_dropped_total{reason="queue_full"}`); a failing file drops what it could
//! not write (`reason="write_failed"`), warns at most every ten seconds and is retried.
//! Writer threads are kept across reloads by path and format.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use ferry_config::AccessLogFormat;
use tokio::sync::mpsc;

use crate::metrics::Metrics;

mod check;
mod format;
mod record;
mod writer;

#[cfg(test)]
mod tests;

pub use check::check;
pub use format::{json_line, text_line};
pub use record::{AccessRecord, RateLimitState, RequestText, Tokens};
pub use writer::FLUSH_WAIT;
use writer::Sink;

/// The access-log sinks of one config (and `ferry demo`'s channel); consulted once per
/// finished request.
#[derive(Debug)]
pub struct AccessLog {
    demo: Option<mpsc::Sender<AccessRecord>>,
    sinks: Vec<SinkRef>,
}

/// A sink as one config uses it: the shared writer and this config's admission rules.
#[derive(Debug)]
struct SinkRef {
    writer: Arc<Sink>,
    sample: f64,
    slower_than: Option<Duration>,
}

/// The writer threads of the process, kept across reloads by path and format, and the
/// reopen signal they watch.
#[derive(Debug, Default)]
pub struct AccessLogs {
    writers: Mutex<HashMap<(PathBuf, AccessLogFormat), Weak<Sink>>>,
    reopen: Arc<AtomicU64>,
    demo: Option<mpsc::Sender<AccessRecord>>,
}

/// A writer thread could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the access-log writer for {path}: {source}")]
pub struct AccessLogError {
    /// The sink's path.
    pub path: PathBuf,
    /// Cause.
    #[source]
    pub source: std::io::Error,
}

// === impl AccessLog ===

impl AccessLog {
    /// Only `ferry demo`'s channel.
    pub fn channel(demo: mpsc::Sender<AccessRecord>) -> Self {
        AccessLog {
            demo: Some(demo),
            sinks: Vec::new(),
        }
    }

    /// Offers a finished request to every sink that admits it. Never waits.
    pub fn submit(&self, record: &AccessRecord) {
        if let Some(demo) = &self.demo {
            let _ = demo.try_send(record.clone());
        }
        let error = record.is_error();
        for sink in self.sinks.iter().filter(|s| s.admits(record, error)) {
            sink.writer.offer(record);
        }
    }
}

// === impl SinkRef ===

impl SinkRef {
    /// `sample` applies to successful answers only; errors and slow answers are always kept.
    fn admits(&self, r: &AccessRecord, error: bool) -> bool {
        if error || self.sample >= 1.0 || self.slower_than.is_some_and(|t| r.total > t) {
            return true;
        }
        self.sample > 0.0 && rand::random::<f64>() < self.sample
    }
}

// === impl AccessLogs ===

impl AccessLogs {
    /// No writer yet; every config's records also go to `demo` when given (`ferry demo`).
    pub fn new(demo: Option<mpsc::Sender<AccessRecord>>) -> Self {
        AccessLogs {
            demo,
            ..AccessLogs::default()
        }
    }

    /// The sinks of a config (`None` when it has none and there is no demo channel), reusing
    /// the writer of a path already being written in the same format.
    pub fn for_config(
        &self,
        sinks: &[ferry_config::AccessLog],
        metrics: &Metrics,
    ) -> Result<Option<Arc<AccessLog>>, AccessLogError> {
        if sinks.is_empty() && self.demo.is_none() {
            return Ok(None);
        }
        let mut writers = match self.writers.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        writers.retain(|_, w| w.strong_count() > 0);
        let mut out = Vec::with_capacity(sinks.len());
        for s in sinks {
            let key = (s.path.clone(), s.format);
            let writer = match writers.get(&key).and_then(Weak::upgrade) {
                Some(w) => w,
                None => {
                    let w = Sink::spawn(&s.path, s.format, self.reopen.clone(), metrics).map_err(
                        |source| AccessLogError {
                            path: s.path.clone(),
                            source,
                        },
                    )?;
                    writers.insert(key, Arc::downgrade(&w));
                    w
                }
            };
            out.push(SinkRef {
                writer,
                sample: s.sample,
                slower_than: s.slower_than,
            });
        }
        Ok(Some(Arc::new(AccessLog {
            demo: self.demo.clone(),
            sinks: out,
        })))
    }

    /// Every sink reopens its file (SIGUSR1, after an external rotation).
    pub fn reopen(&self) {
        self.reopen.fetch_add(1, Ordering::Relaxed);
        if let Ok(writers) = self.writers.lock() {
            writers
                .values()
                .filter_map(Weak::upgrade)
                .for_each(|w| w.wake());
        }
    }

    /// Whether any writer thread is running.
    pub fn any(&self) -> bool {
        self.writers
            .lock()
            .is_ok_and(|w| w.values().any(|w| w.strong_count() > 0))
    }

    /// Reopens every sink on each SIGUSR1 (logrotate's `postrotate` convention), until the
    /// process ends.
    #[cfg(unix)]
    pub fn reopen_on_sigusr1(self: &Arc<Self>) {
        use tokio::signal::unix::{SignalKind, signal};
        let logs = Arc::downgrade(self);
        match signal(SignalKind::user_defined1()) {
            Ok(mut usr1) => {
                tokio::spawn(async move {
                    while usr1.recv().await.is_some() {
                        let Some(logs) = logs.upgrade() else { return };
                        tracing::info!("SIGUSR1: reopening access-log files");
                        logs.reopen();
                    }
                });
            }
            Err(error) => tracing::warn!(%error, "cannot listen for SIGUSR1"),
        }
    }

    /// No SIGUSR1 off Unix: files are still reopened when their inode changes.
    #[cfg(not(unix))]
    pub fn reopen_on_sigusr1(self: &Arc<Self>) {}
}
