//! A bounded copy of the primary's answer, for mirrors that compare: the body streams to the
//! caller unchanged while its frames (reference-counted, not copied) are kept up to
//! `max_body`; at its end the copy goes to the mirror's task. Over the bound, or unfinished,
//! no copy is sent and the comparison is skipped.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use ferry_filters::mirror_compare::Answer;
use http::{HeaderMap, StatusCode};
use http_body::{Body, Frame, SizeHint};
use tokio::sync::oneshot;

use crate::body::{BoxError, ProxyBody};

/// What is kept of the answer so far.
struct Kept {
    status: StatusCode,
    headers: HeaderMap,
    chunks: Vec<Bytes>,
    len: u64,
    max: u64,
    trailers: Option<HeaderMap>,
    tx: oneshot::Sender<Answer>,
}

pin_project_lite::pin_project! {
    /// The primary's answer body, copied while it streams.
    pub(super) struct CopyBody {
        #[pin]
        inner: ProxyBody,
        kept: Option<Kept>,
    }
}

// === impl CopyBody ===

impl CopyBody {
    /// Copies `inner`, the body of an answer with `status` and `headers`, up to `max` bytes.
    pub(super) fn new(
        inner: ProxyBody,
        status: StatusCode,
        headers: HeaderMap,
        max: u64,
        tx: oneshot::Sender<Answer>,
    ) -> Self {
        let mut body = CopyBody {
            kept: Some(Kept {
                status,
                headers,
                chunks: Vec::new(),
                len: 0,
                max,
                trailers: None,
                tx,
            }),
            inner,
        };
        if body.inner.is_end_stream() {
            send(&mut body.kept);
        }
        body
    }
}

/// Hands the whole copy over.
fn send(kept: &mut Option<Kept>) {
    let Some(k) = kept.take() else { return };
    let body = super::read::concat(k.chunks, usize::try_from(k.len).unwrap_or(0));
    let _ = k.tx.send(Answer {
        status: k.status,
        headers: k.headers,
        body,
        trailers: k.trailers,
    });
}

impl Body for CopyBody {
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
                if this.kept.as_ref().is_some_and(|k| k.tx.is_closed()) {
                    // The mirror is gone (it failed or timed out): nothing left to compare.
                    *this.kept = None;
                }
                if let Some(k) = this.kept.as_mut() {
                    if let Some(data) = f.data_ref() {
                        k.len = k.len.saturating_add(data.len() as u64);
                        k.chunks.push(data.clone());
                    } else if let Some(t) = f.trailers_ref() {
                        k.trailers = Some(t.clone());
                    }
                    if k.len > k.max {
                        // Over the bound: let go of the copy (the sender drops with it).
                        *this.kept = None;
                    }
                }
                if this.inner.is_end_stream() {
                    send(this.kept);
                }
            }
            Some(Err(_)) => *this.kept = None,
            None => send(this.kept),
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
