//! One sink's writer: a bounded queue and the thread that drains it into the file.
//!
//! The thread wakes on a short tick rather than on every record, so a request pays for a
//! queue push and nothing else (no wakeup, no syscall); it then formats the whole batch into
//! one reused buffer and appends it with one write. A dedicated thread, not a task: file
//! writes block, and a slow disk must never hold an async worker.
//!
//! The file is reopened when SIGUSR1 bumps the reopen generation, and when the path names a
//! different file than the one open (checked every second: logrotate's rename-and-create, or
//! a removed file). A write or open failure drops the batch (counted), warns at most every
//! [`WARN_EVERY`] and is retried with the next batch.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::Thread;
use std::time::{Duration, Instant};

use ferry_config::AccessLogFormat;
use prometheus_client::metrics::counter::Counter;

use super::AccessRecord;
use crate::metrics::{AccessLogDropLabels, Metrics, Name};

/// Records a sink holds before it drops new ones: at the tick below, room for 300 000
/// requests a second.
const QUEUE: usize = 8192;
/// How often the writer drains its queue (the most a line waits before it is written).
const TICK: Duration = Duration::from_millis(25);
/// Long enough for a writer to write what is queued now (two ticks).
pub const FLUSH_WAIT: Duration = Duration::from_millis(50);
/// How often the path is checked for a rotated file.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// At most one warning per failing sink in this time.
const WARN_EVERY: Duration = Duration::from_secs(10);
/// A batch larger than this is written before the queue is drained further.
const FLUSH_BYTES: usize = 256 * 1024;

/// The sending side of a sink: dropping the last one ends the thread after a final flush.
#[derive(Debug)]
pub(super) struct Sink {
    tx: SyncSender<Arc<AccessRecord>>,
    queue_full: Counter,
    thread: Thread,
}

/// (device, inode) of a file: a different pair at the path means the file was rotated.
type FileId = (u64, u64);

struct Writer {
    path: PathBuf,
    format: AccessLogFormat,
    rx: Receiver<Arc<AccessRecord>>,
    reopen: Arc<AtomicU64>,
    generation: u64,
    file: Option<(File, Option<FileId>)>,
    checked: Instant,
    buf: Vec<u8>,
    lines: u64,
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
        let (tx, rx) = sync_channel(QUEUE);
        let label = |reason| AccessLogDropLabels {
            path: Name(path.display().to_string().into()),
            reason,
        };
        let drops = &metrics.access_log_dropped;
        let queue_full = drops.get_or_create(&label("queue_full")).clone();
        let write_failed = drops.get_or_create(&label("write_failed")).clone();
        let writer = Writer {
            path: path.to_path_buf(),
            format,
            rx,
            generation: reopen.load(Ordering::Relaxed),
            reopen,
            file: None,
            checked: Instant::now(),
            buf: Vec::with_capacity(64 * 1024),
            lines: 0,
            write_failed,
            warned: None,
            failures: 0,
        };
        let handle = std::thread::Builder::new()
            .name("ferry-access-log".into())
            .spawn(move || writer.run())?;
        Ok(Arc::new(Sink {
            tx,
            queue_full,
            thread: handle.thread().clone(),
        }))
    }

    /// Queues a record, or drops and counts it when the writer is behind. Never waits.
    pub(super) fn offer(&self, record: Arc<AccessRecord>) {
        if self.tx.try_send(record).is_err() {
            self.queue_full.inc();
        }
    }

    /// Wakes the writer before its tick (a reopen request).
    pub(super) fn wake(&self) {
        self.thread.unpark();
    }
}

// === impl Writer ===

impl Writer {
    fn run(mut self) {
        loop {
            std::thread::park_timeout(TICK);
            let open = self.drain();
            self.maintain();
            self.flush();
            if !open {
                return;
            }
        }
    }

    /// Formats every queued record; `false` once every sender is gone.
    fn drain(&mut self) -> bool {
        loop {
            match self.rx.try_recv() {
                Ok(r) => {
                    match self.format {
                        AccessLogFormat::Json => super::json_line(&mut self.buf, &r),
                        AccessLogFormat::Text => super::text_line(&mut self.buf, &r),
                    }
                    self.lines += 1;
                    if self.buf.len() >= FLUSH_BYTES {
                        self.flush();
                    }
                }
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
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
        if self.buf.is_empty() {
            return;
        }
        let result = match &mut self.file {
            Some((file, _)) => file.write_all(&self.buf),
            None => open(&self.path).and_then(|(mut file, id)| {
                let written = file.write_all(&self.buf);
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
                self.write_failed.inc_by(self.lines);
                self.failures += self.lines;
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
        self.buf.clear();
        self.lines = 0;
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
