//! One sink's writer: a bounded batch of formatted lines and the thread that appends it to
//! the file.
//!
//! A request formats its line (into a reused per-thread scratch buffer) and appends it to the
//! sink's batch under a lock held for a copy; nothing is allocated per line and nothing is sent
//! to the writer thread, which wakes on a short tick, swaps the batch for its empty spare and
//! appends it with one write. So a request pays no wakeup and no system call, and every byte it
//! allocated is freed on its own thread. A dedicated thread, not a task: file writes block, and
//! a slow disk must never hold an async worker. A batch already at its bound drops the line
//! (counted): the writer is behind.
//!
//! The file is reopened when SIGUSR1 bumps the reopen generation, and when the path names a
//! different file than the one open (checked every second: logrotate's rename-and-create, or
//! a removed file). A write or open failure drops the batch (counted), warns at most every
//! [`WARN_EVERY`] and is retried with the next batch.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::{Duration, Instant};

use ferry_config::AccessLogFormat;
use prometheus_client::metrics::counter::Counter;

use super::AccessRecord;
use crate::metrics::{AccessLogDropLabels, Metrics, Name};

/// Bytes a sink's batch holds before new lines are dropped: about 9,000 JSON lines, which at
/// the tick below is room for 350,000 requests a second.
const MAX_BATCH_BYTES: usize = 4 << 20;
/// How often the writer appends the batch (the most a line waits before it is written).
const TICK: Duration = Duration::from_millis(25);
/// Long enough for a writer to write what is batched now (two ticks).
pub const FLUSH_WAIT: Duration = Duration::from_millis(50);
/// How often the path is checked for a rotated file.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// At most one warning per failing sink in this time.
const WARN_EVERY: Duration = Duration::from_secs(10);

thread_local! {
    /// Where a request formats its line before the batch's lock is taken, so the lock is held
    /// for a copy only.
    static SCRATCH: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(1024));
}

/// A sink as requests see it; dropping it ends the thread after a final write.
#[derive(Debug)]
pub(super) struct Sink {
    shared: Arc<Shared>,
    format: AccessLogFormat,
    queue_full: Counter,
    thread: Thread,
}

/// What requests and the writer thread share.
#[derive(Debug, Default)]
struct Shared {
    batch: Mutex<Batch>,
    closed: AtomicBool,
}

/// Formatted lines waiting for the writer.
#[derive(Debug, Default)]
struct Batch {
    buf: Vec<u8>,
    lines: u64,
}

/// (device, inode) of a file: a different pair at the path means the file was rotated.
type FileId = (u64, u64);

struct Writer {
    path: PathBuf,
    shared: Arc<Shared>,
    reopen: Arc<AtomicU64>,
    generation: u64,
    file: Option<(File, Option<FileId>)>,
    checked: Instant,
    /// The batch being written; swapped with the shared one each tick (both keep their
    /// capacity, so a steady load allocates nothing).
    batch: Batch,
    write_failed: Counter,
    warned: Option<Instant>,
    failures: u64,
}

// === impl Sink ===

impl Sink {
    /// Starts the writer thread of `path`.
    pub(super) fn spawn(
        path: &Path,
        format: AccessLogFormat,
        reopen: Arc<AtomicU64>,
        metrics: &Metrics,
    ) -> std::io::Result<Arc<Sink>> {
        let label = |reason| AccessLogDropLabels {
            path: Name(path.display().to_string().into()),
            reason,
        };
        let drops = &metrics.access_log_dropped;
        let queue_full = drops.get_or_create(&label("queue_full")).clone();
        let write_failed = drops.get_or_create(&label("write_failed")).clone();
        let shared = Arc::new(Shared::default());
        let writer = Writer {
            path: path.to_path_buf(),
            shared: shared.clone(),
            generation: reopen.load(Ordering::Relaxed),
            reopen,
            file: None,
            checked: Instant::now(),
            batch: Batch::default(),
            write_failed,
            warned: None,
            failures: 0,
        };
        let handle = std::thread::Builder::new()
            .name("ferry-access-log".into())
            .spawn(move || writer.run())?;
        Ok(Arc::new(Sink {
            shared,
            format,
            queue_full,
            thread: handle.thread().clone(),
        }))
    }

    /// Adds the record's line to the batch, or drops and counts it when the writer is behind.
    /// Never waits on the file.
    pub(super) fn offer(&self, record: &AccessRecord) {
        SCRATCH.with_borrow_mut(|line| {
            line.clear();
            match self.format {
                AccessLogFormat::Json => super::json_line(line, record),
                AccessLogFormat::Text => super::text_line(line, record),
            }
            let Ok(mut batch) = self.shared.batch.lock() else {
                return;
            };
            if batch.buf.len() + line.len() > MAX_BATCH_BYTES {
                drop(batch);
                self.queue_full.inc();
                return;
            }
            batch.buf.extend_from_slice(line);
            batch.lines += 1;
        });
    }

    /// Wakes the writer before its tick (a reopen request).
    pub(super) fn wake(&self) {
        self.thread.unpark();
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

// === impl Writer ===

impl Writer {
    fn run(mut self) {
        loop {
            std::thread::park_timeout(TICK);
            // Read before the swap: lines added before the close are in this batch.
            let closed = self.shared.closed.load(Ordering::Acquire);
            self.take_batch();
            self.maintain();
            self.flush();
            if closed {
                return;
            }
        }
    }

    /// Swaps the shared batch (full) for this one (written, empty).
    fn take_batch(&mut self) {
        let mut shared = match self.shared.batch.lock() {
            Ok(b) => b,
            Err(poisoned) => poisoned.into_inner(),
        };
        std::mem::swap(&mut *shared, &mut self.batch);
    }

    /// Closes the file when it should be reopened: SIGUSR1, or another file at the path.
    fn maintain(&mut self) {
        let generation = self.reopen.load(Ordering::Relaxed);
        if generation != self.generation {
            self.generation = generation;
            self.file = None;
            return;
        }
        if self.checked.elapsed() < CHECK_EVERY {
            return;
        }
        self.checked = Instant::now();
        if let Some((_, Some(open))) = &self.file
            && id_at(&self.path) != Some(*open)
        {
            tracing::info!(path = %self.path.display(), "access-log file rotated; reopening");
            self.file = None;
        }
    }

    /// Appends the batch, opening the file first if needed.
    fn flush(&mut self) {
        if self.batch.buf.is_empty() {
            return;
        }
        let result = match &mut self.file {
            Some((file, _)) => file.write_all(&self.batch.buf),
            None => open(&self.path).and_then(|(mut file, id)| {
                let written = file.write_all(&self.batch.buf);
                self.file = Some((file, id));
                written
            }),
        };
        match result {
            Ok(()) => {
                if self.failures > 0 {
                    tracing::info!(path = %self.path.display(), "access-log file writable again");
                    self.failures = 0;
                }
            }
            Err(error) => {
                // Reopened with the next batch: the directory may come back, the disk may
                // free up.
                self.file = None;
                self.write_failed.inc_by(self.batch.lines);
                self.failures += self.batch.lines;
                let due = self.warned.is_none_or(|at| at.elapsed() >= WARN_EVERY);
                if due {
                    self.warned = Some(Instant::now());
                    tracing::warn!(
                        path = %self.path.display(),
                        %error,
                        dropped = self.failures,
                        "cannot write the access log; lines dropped, retrying"
                    );
                }
            }
        }
        self.batch.buf.clear();
        self.batch.lines = 0;
    }
}

/// Opens `path` for appending (created when missing), with the identity it was opened as.
fn open(path: &Path) -> std::io::Result<(File, Option<FileId>)> {
    let file = OpenOptions::new().append(true).create(true).open(path)?;
    let id = file.metadata().ok().and_then(|m| file_id(&m));
    Ok((file, id))
}

/// The identity of the file `path` names now; `None` when there is none.
fn id_at(path: &Path) -> Option<FileId> {
    std::fs::metadata(path).ok().and_then(|m| file_id(&m))
}

#[cfg(unix)]
fn file_id(m: &std::fs::Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

/// Off Unix there is no inode: rotation is only noticed through a reopen request.
#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> Option<FileId> {
    None
}
