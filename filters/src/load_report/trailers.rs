//! A body that hands its trailers to a function on their way through: gRPC servers send their
//! load report in trailers, after the whole stream, so reading (or stripping) it cannot wait
//! for the answer's head. The body streams on unchanged otherwise: nothing is buffered.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

pin_project_lite::pin_project! {
    /// `inner` with `on_trailers` called once on its trailers, if it has any.
    pub struct OnTrailers<B, F> {
        #[pin]
        inner: B,
        on_trailers: Option<F>,
    }
}

// === impl OnTrailers ===

impl<B, F> OnTrailers<B, F> {
    /// Wraps `inner`.
    pub fn new(inner: B, on_trailers: F) -> Self {
        Self {
            inner,
            on_trailers: Some(on_trailers),
        }
    }
}

impl<B, F> Body for OnTrailers<B, F>
where
    B: Body,
    F: FnOnce(&mut HeaderMap),
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let mut frame = ready!(this.inner.poll_frame(cx));
        if let Some(trailers) = frame
            .as_mut()
            .and_then(|f| f.as_mut().ok())
            .and_then(Frame::trailers_mut)
            && let Some(f) = this.on_trailers.take()
        {
            f(trailers);
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
