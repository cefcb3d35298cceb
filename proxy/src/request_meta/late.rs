//! A gRPC answer whose status comes in its trailers. Without an access-log sink no record is
//! built at the response headers of an answer that looks fine there, so the request's glance
//! (reference counts, no copy) waits in the outcome until the trailers: a failure there builds
//! the record for `/recent` and the taps, as a 5xx would have at its headers.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::access::{Head, Pending as PendingLine};
use super::capture::Capture;
use super::{Outcome, Recorder};

/// What a record built at the trailers needs from the response headers' moment.
#[derive(Debug)]
pub(super) struct Late {
    pub(super) capture: Capture,
    pub(super) recorder: Arc<Recorder>,
    /// The HTTP status of the response headers.
    pub(super) status: u16,
    /// Time to the response headers.
    pub(super) ttfb: Duration,
}

// === impl Outcome ===

impl Outcome {
    /// Keeps `late` until the answer's trailers (dropped unused when they say OK).
    pub(super) fn wait_for_trailers(&self, late: Late) {
        if let Ok(mut slot) = self.late.lock() {
            *slot = Some(late);
        }
    }

    /// The trailers said `grpc_status`, a failure: builds the record the headers did not call
    /// for, to be finished with the body's sizes like any other.
    pub(super) fn failed_in_trailers(&self, grpc_status: u32) {
        let Some(late) = self.late.lock().ok().and_then(|mut slot| slot.take()) else {
            return;
        };
        let Some(targets) =
            late.recorder
                .targets(self, Some(late.status), true, late.ttfb, &late.capture)
        else {
            return;
        };
        let forwarded = self.forwarded.lock().ok().and_then(|f| f.clone());
        let line = PendingLine::new(
            targets,
            late.recorder.listener.clone(),
            late.capture.seen(),
            self,
            forwarded.as_ref(),
            Some(Head::trailed(late.status, grpc_status)),
            late.ttfb,
        );
        if let Ok(mut slot) = self.access.lock() {
            *slot = Some(Box::new(line));
            self.has_access.store(true, Ordering::Release);
        }
    }
}
