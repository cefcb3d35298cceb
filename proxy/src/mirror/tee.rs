//! The request body teed as it streams: the primary's body passes through unchanged while each
//! frame (a reference-counted `Bytes`, not a copy) is handed to the mirrors' bodies. A mirror
//! whose copy would pass `max_body` is cut off; the primary never waits for a mirror.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::body::{BoxError, ProxyBody};

/// What became of a mirror's copy of the request body.
#[derive(Debug, Default)]
pub(super) struct TeeState(AtomicU8);

/// The copy's fate, as [`TeeState`] holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fed {
    /// Still streaming, or ended whole.
    Streaming,
    /// Cut off: the body passed `max_body`.
    TooLarge,
    /// Cut off: the primary's body failed or was dropped before its end.
    Cancelled,
}

type Item = Result<Frame<Bytes>, ()>;

/// One mirror's end of the tee.
pub(super) struct Sink {
    tx: Option<UnboundedSender<Item>>,
    sent: u64,
    max: u64,
    state: Arc<TeeState>,
}

/// The body a mirrored request is sent with: the frames the tee hands over, in order; an error
/// if the copy was cut off, so the candidate never gets a truncated body as if whole.
pub(super) struct MirrorBody {
    rx: UnboundedReceiver<Item>,
    remaining: Option<u64>,
}

pin_project_lite::pin_project! {
    /// The primary's request body, teed.
    pub(super) struct TeeBody {
        #[pin]
        inner: ProxyBody,
        sinks: Vec<Sink>,
    }

    impl PinnedDrop for TeeBody {
        fn drop(this: Pin<&mut Self>) {
            // Dropped before its end (the upstream answered without reading it all, or the
            // caller went away): the mirrors' copies are incomplete.
            for s in this.project().sinks.iter_mut() {
                s.cut(Fed::Cancelled);
            }
        }
    }
}

// === impl TeeState ===

impl TeeState {
    pub(super) fn get(&self) -> Fed {
        match self.0.load(Ordering::Acquire) {
            1 => Fed::TooLarge,
            2 => Fed::Cancelled,
            _ => Fed::Streaming,
        }
    }

    fn set(&self, fed: Fed) {
        let v = match fed {
            Fed::Streaming => 0,
            Fed::TooLarge => 1,
            Fed::Cancelled => 2,
        };
        self.0.store(v, Ordering::Release);
    }
}

/// A sink bounded by `max` bytes and the body that reads from it; `length` is the request's
/// `Content-Length`, if any.
pub(super) fn channel(max: u64, length: Option<u64>) -> (Sink, MirrorBody, Arc<TeeState>) {
    let (tx, rx) = unbounded_channel();
    let state = Arc::new(TeeState::default());
    (
        Sink {
            tx: Some(tx),
            sent: 0,
            max,
            state: state.clone(),
        },
        MirrorBody {
            rx,
            remaining: length,
        },
        state,
    )
}

// === impl Sink ===

impl Sink {
    fn feed(&mut self, frame: &Frame<Bytes>) {
        let Some(tx) = &self.tx else { return };
        let copy = if let Some(data) = frame.data_ref() {
            self.sent = self.sent.saturating_add(data.len() as u64);
            if self.sent > self.max {
                self.cut(Fed::TooLarge);
                return;
            }
            Frame::data(data.clone())
        } else if let Some(trailers) = frame.trailers_ref() {
            Frame::trailers(trailers.clone())
        } else {
            return;
        };
        // The candidate's side may be gone (it failed, or timed out): nothing to do.
        if tx.send(Ok(copy)).is_err() {
            self.tx = None;
        }
    }

    /// The whole body was fed: the copy ends cleanly.
    fn end(&mut self) {
        self.tx = None;
    }

    fn cut(&mut self, why: Fed) {
        if let Some(tx) = self.tx.take() {
            self.state.set(why);
            let _ = tx.send(Err(()));
        }
    }
}

// === impl TeeBody ===

impl TeeBody {
    pub(super) fn new(inner: ProxyBody, mut sinks: Vec<Sink>) -> Self {
        if inner.is_end_stream() {
            // An empty body may never be polled: its copies are complete already.
            sinks.iter_mut().for_each(Sink::end);
        }
        TeeBody { inner, sinks }
    }
}

impl Body for TeeBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        match &frame {
            Some(Ok(f)) => {
                this.sinks.iter_mut().for_each(|s| s.feed(f));
                if this.inner.is_end_stream() {
                    this.sinks.iter_mut().for_each(Sink::end);
                }
            }
            Some(Err(_)) => this.sinks.iter_mut().for_each(|s| s.cut(Fed::Cancelled)),
            None => this.sinks.iter_mut().for_each(Sink::end),
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

// === impl MirrorBody ===

/// The copy was cut off (over `max_body`, or the primary's body did not end).
#[derive(Debug, thiserror::Error)]
#[error("the mirrored request's body was cut off")]
pub(super) struct CutOff;

impl Body for MirrorBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match ready!(self.rx.poll_recv(cx)) {
            Some(Ok(frame)) => {
                if let (Some(n), Some(d)) = (self.remaining.as_mut(), frame.data_ref()) {
                    *n = n.saturating_sub(d.len() as u64);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(())) => Poll::Ready(Some(Err(CutOff.into()))),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        // A body with a known length is whole once that many bytes went out.
        self.remaining == Some(0)
    }

    fn size_hint(&self) -> SizeHint {
        // The caller's Content-Length, so an HTTP/1.1 candidate gets it rather than chunks.
        match self.remaining {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, StreamBody};

    use super::*;

    fn chunks(parts: &[&'static [u8]]) -> ProxyBody {
        let frames: Vec<Result<Frame<Bytes>, BoxError>> = parts
            .iter()
            .map(|p| Ok(Frame::data(Bytes::from_static(p))))
            .collect();
        ProxyBody::new(StreamBody::new(futures_util::stream::iter(frames)))
    }

    async fn read_mirror(body: MirrorBody) -> Result<Bytes, BoxError> {
        Ok(body.collect().await?.to_bytes())
    }

    #[tokio::test]
    async fn the_copy_is_the_whole_body_and_the_primary_is_unchanged() {
        let (sink, mirror, state) = channel(100, None);
        let tee = TeeBody::new(chunks(&[b"ab", b"cd", b"e"]), vec![sink]);
        let primary = tee.collect().await.unwrap().to_bytes();
        assert_eq!(&primary[..], b"abcde");
        assert_eq!(&read_mirror(mirror).await.unwrap()[..], b"abcde");
        assert_eq!(state.get(), Fed::Streaming);
    }

    #[tokio::test]
    async fn a_copy_over_max_body_is_cut_off_and_the_primary_goes_on() {
        let (sink, mirror, state) = channel(10, None);
        let tee = TeeBody::new(chunks(&[b"12345678", b"12345678"]), vec![sink]);
        let primary = tee.collect().await.unwrap().to_bytes();
        assert_eq!(primary.len(), 16);
        assert!(read_mirror(mirror).await.is_err());
        assert_eq!(state.get(), Fed::TooLarge);
    }

    #[tokio::test]
    async fn a_primary_body_dropped_early_cancels_the_copy() {
        let (sink, mirror, state) = channel(100, None);
        let mut tee = TeeBody::new(chunks(&[b"ab", b"cd"]), vec![sink]);
        let first = tee.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "ab");
        drop(tee);
        assert!(read_mirror(mirror).await.is_err());
        assert_eq!(state.get(), Fed::Cancelled);
    }

    #[tokio::test]
    async fn an_empty_body_ends_its_copy_without_being_polled() {
        let (sink, mirror, state) = channel(100, Some(0));
        let tee = TeeBody::new(crate::body::empty(), vec![sink]);
        drop(tee);
        assert!(read_mirror(mirror).await.unwrap().is_empty());
        assert_eq!(state.get(), Fed::Streaming);
    }
}
