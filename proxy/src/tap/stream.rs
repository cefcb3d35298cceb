//! The body of a `/tap` answer: the tap's queued records formatted as lines, several to a
//! frame when they have piled up, plus a `{"dropped":N}` line (`# dropped N` in text) at
//! most once a second when the queue has lost records since the last one. Dropping the body
//! (the client went away, or the admin server closed) detaches the tap.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::sync::mpsc;
use tokio::time::{Interval, MissedTickBehavior};

use super::{Tap, TapFormat, Taps};
use crate::access_log::{AccessRecord, json_line, text_line};
use crate::body::BoxError;

/// How often the stream may report lost records.
const REPORT_EVERY: Duration = Duration::from_secs(1);

/// A frame is sent once it holds this much, even when more records wait.
const FRAME_BYTES: usize = 64 * 1024;

/// The streaming body of one tap.
#[derive(Debug)]
pub struct TapBody {
    taps: Arc<Taps>,
    pub(super) tap: Arc<Tap>,
    records: mpsc::Receiver<AccessRecord>,
    format: TapFormat,
    report: Interval,
    /// `dropped` as last reported.
    reported: u64,
}

// === impl TapBody ===

impl TapBody {
    pub(super) fn new(
        taps: Arc<Taps>,
        tap: Arc<Tap>,
        records: mpsc::Receiver<AccessRecord>,
        format: TapFormat,
    ) -> Self {
        let mut report = tokio::time::interval(REPORT_EVERY);
        report.set_missed_tick_behavior(MissedTickBehavior::Delay);
        TapBody {
            taps,
            tap,
            records,
            format,
            report,
            reported: 0,
        }
    }

    fn write(&self, out: &mut Vec<u8>, record: &AccessRecord) {
        match self.format {
            TapFormat::Json => json_line(out, record),
            TapFormat::Text => text_line(out, record),
        }
    }

    /// The lost-records line, when the count grew since the last one.
    fn write_dropped(&mut self, out: &mut Vec<u8>) {
        let dropped = self.tap.dropped();
        if dropped == self.reported {
            return;
        }
        self.reported = dropped;
        let line = match self.format {
            TapFormat::Json => format!("{{\"dropped\":{dropped}}}\n"),
            TapFormat::Text => format!("# dropped {dropped}\n"),
        };
        out.extend_from_slice(line.as_bytes());
    }
}

impl Body for TapBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let mut out = Vec::new();
        let mut ended = false;
        while out.len() < FRAME_BYTES {
            match this.records.poll_recv(cx) {
                Poll::Ready(Some(record)) => this.write(&mut out, &record),
                Poll::Ready(None) => {
                    ended = true;
                    break;
                }
                Poll::Pending => break,
            }
        }
        // Poll the timer until it is pending, so it wakes this body at the next tick.
        let mut ticked = false;
        while this.report.poll_tick(cx).is_ready() {
            ticked = true;
        }
        if ticked {
            this.write_dropped(&mut out);
        }
        if !out.is_empty() {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
        }
        if ended {
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

impl Drop for TapBody {
    fn drop(&mut self) {
        self.taps.detach(&self.tap);
    }
}
