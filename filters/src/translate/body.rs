//! The translated body: a few ready chunks (JSON header, then tensor sections as slices of the
//! upstream's buffer) and, for gRPC, trailers carrying the status; [`boxed`] as the
//! [`TranslateBody`] the translator hands on.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

use super::TranslateBody;

/// A body made of chunks already in memory, optionally ending with trailers.
#[derive(Debug, Default)]
pub struct ChunksBody {
    chunks: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
    remaining: u64,
}

// === impl ChunksBody ===

impl ChunksBody {
    /// A body of these chunks, then `trailers` if any.
    pub fn new(chunks: VecDeque<Bytes>, trailers: Option<HeaderMap>) -> Self {
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        ChunksBody {
            chunks,
            trailers,
            remaining,
        }
    }

    /// Total bytes of data.
    pub fn len(&self) -> u64 {
        self.remaining
    }

    /// Whether there is no data.
    pub fn is_empty(&self) -> bool {
        self.remaining == 0
    }
}

impl Body for ChunksBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        while let Some(chunk) = this.chunks.pop_front() {
            if !chunk.is_empty() {
                this.remaining -= chunk.len() as u64;
                return Poll::Ready(Some(Ok(Frame::data(chunk))));
            }
        }
        Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

pub(crate) fn boxed(body: ChunksBody) -> TranslateBody {
    body.map_err(|never| match never {}).boxed_unsync()
}
