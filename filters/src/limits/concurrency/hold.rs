//! The slot a request holds: released when its answer's body ends or is dropped, folding the
//! hold time into the slot's average (and the adaptive limit's gradient).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::OwnedSemaphorePermit;

use super::Slot;
use crate::translate::{BoxError, TranslateBody};

/// A held slot: released when dropped, folding the hold time into the slot's average.
pub(super) struct Held {
    pub(super) slot: Arc<Slot>,
    pub(super) since: tokio::time::Instant,
    pub(super) _permit: OwnedSemaphorePermit,
}

impl Drop for Held {
    fn drop(&mut self) {
        let sample = u64::try_from(self.since.elapsed().as_micros()).unwrap_or(u64::MAX);
        if let Some(gradient) = &self.slot.adaptive
            && let Ok(mut g) = gradient.lock()
        {
            g.sample(sample as f64, self.slot.max, &self.slot.semaphore);
        }
        let old = self.slot.held_us.load(Ordering::Relaxed);
        // EWMA with weight 1/8: recent holds matter, one slow stream does not dominate.
        let new = if old == 0 {
            sample
        } else {
            old - old / 8 + sample / 8
        };
        self.slot.held_us.store(new.max(1), Ordering::Relaxed);
    }
}

pin_project_lite::pin_project! {
    /// The answer's body, holding the slot until it ends (or is dropped).
    pub(super) struct HoldSlot {
        #[pin]
        pub(super) inner: TranslateBody,
        pub(super) held: Option<Held>,
    }
}

impl Body for HoldSlot {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        let frame = std::task::ready!(this.inner.poll_frame(cx));
        if frame.is_none() {
            this.held.take();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
