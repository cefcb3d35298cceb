//! Body types and the body trick the proxy needs: reading a bounded prefix without losing it
//! (to find the model, or to keep a small body for retries). The size limit is
//! [`crate::request_body`]'s, on `http_body_util::Limited`.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures_util::FutureExt;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};

/// The error type every boxed body carries.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The one body type inside the proxy, both directions.
pub type ProxyBody = UnsyncBoxBody<Bytes, BoxError>;

/// The future of every service in the proxy's stacks. Layers require it of their inner
/// service: awaiting a named, boxed future inside an `async` block keeps rustc from having to
/// prove `Send` for an associated future type over a `dyn Error` body, which it cannot
/// (higher-ranked lifetime inference); and an already-boxed inner future is not boxed again.
pub type BoxFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<http::Response<ProxyBody>, BoxError>> + Send>,
>;

/// What every layer in the proxy's stacks requires of its inner service (a trait alias: the
/// one bound, written once).
pub trait StackService:
    tower::Service<
        http::Request<ProxyBody>,
        Response = http::Response<ProxyBody>,
        Error = BoxError,
        Future = BoxFuture,
    >
{
}

impl<S> StackService for S where
    S: tower::Service<
            http::Request<ProxyBody>,
            Response = http::Response<ProxyBody>,
            Error = BoxError,
            Future = BoxFuture,
        >
{
}

/// A body with these bytes.
pub fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// An empty body.
pub fn empty() -> ProxyBody {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

// Defined in filters so the translation and tensor-check filters recognise it when the limit
// cuts a body they are buffering.
pub use ferry_filters::body_limit::BodyTooLarge;

/// The first bytes of a body, read and kept, plus the unread rest.
pub struct Peeked {
    /// Data read so far, in order.
    pub chunks: VecDeque<Bytes>,
    /// Total length of `chunks`.
    pub len: usize,
    /// Trailers, if the body ended with them while peeking.
    pub trailers: Option<HeaderMap>,
    /// The unread rest; `None` when the whole body was read.
    pub rest: Option<ProxyBody>,
}

// === impl Peeked ===

impl Peeked {
    /// Reads from `body` until `enough` says the prefix suffices, `max` bytes are buffered, or
    /// the body ends. A read error is returned as is; nothing read is lost on success.
    pub async fn read(
        mut body: ProxyBody,
        max: usize,
        mut enough: impl FnMut(&[Bytes], usize) -> bool,
    ) -> Result<Self, BoxError> {
        let mut peeked = Peeked {
            chunks: VecDeque::new(),
            len: 0,
            trailers: None,
            rest: None,
        };
        loop {
            if peeked.len >= max || enough(peeked.chunks.make_contiguous(), peeked.len) {
                peeked.rest = Some(body);
                return Ok(peeked);
            }
            if body.is_end_stream() {
                return Ok(peeked);
            }
            match body.frame().await {
                None => return Ok(peeked),
                Some(frame) => peeked.push(frame?),
            }
        }
    }

    /// Reads the whole body if it is at most `max` bytes and arrives without waiting on the
    /// client beyond what is already in flight; otherwise keeps what was read and the rest.
    ///
    /// Used for retries: a body is replayable only if we hold all of it. We wait for the first
    /// frame (every request sends it), then take only frames that are already buffered, so a
    /// streaming client that waits for the server is never blocked by us.
    pub async fn read_small(mut body: ProxyBody, max: usize) -> Result<Self, BoxError> {
        let mut peeked = Peeked {
            chunks: VecDeque::new(),
            len: 0,
            trailers: None,
            rest: None,
        };
        if body.is_end_stream() {
            return Ok(peeked);
        }
        if body.size_hint().lower() > max as u64 {
            peeked.rest = Some(body);
            return Ok(peeked);
        }
        let exact = body.size_hint().exact();
        let mut first = true;
        loop {
            if peeked.len > max {
                peeked.rest = Some(body);
                return Ok(peeked);
            }
            let frame = if first || exact.is_some() {
                first = false;
                body.frame().await
            } else {
                match body.frame().now_or_never() {
                    Some(frame) => frame,
                    None => {
                        peeked.rest = Some(body);
                        return Ok(peeked);
                    }
                }
            };
            match frame {
                None => return Ok(peeked),
                Some(frame) => peeked.push(frame?),
            }
            if body.is_end_stream() {
                return Ok(peeked);
            }
        }
    }

    fn push(&mut self, frame: Frame<Bytes>) {
        match frame.into_data() {
            Ok(data) => {
                self.len += data.len();
                if !data.is_empty() {
                    self.chunks.push_back(data);
                }
            }
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    self.trailers = Some(trailers);
                }
            }
        }
    }

    /// Whether the whole body was read.
    pub fn is_complete(&self) -> bool {
        self.rest.is_none()
    }

    /// Copies up to `n` leading bytes into one contiguous buffer.
    pub fn head(&self, n: usize) -> Bytes {
        if let Some(first) = self.chunks.front()
            && (first.len() >= n || self.chunks.len() == 1)
        {
            return first.slice(..first.len().min(n));
        }
        let mut out = BytesMut::with_capacity(n.min(self.len));
        for c in &self.chunks {
            let take = (n - out.len()).min(c.len());
            out.extend_from_slice(&c[..take]);
            if out.len() == n {
                break;
            }
        }
        out.freeze()
    }

    /// A body that yields the read prefix and then the rest. For a complete body, calling this
    /// again yields the same bytes (chunks are reference-counted, not copied).
    pub fn replay(&mut self) -> ProxyBody {
        let body = Replay {
            chunks: self.chunks.clone(),
            trailers: self.trailers.clone(),
            rest: self.rest.take(),
        };
        body.boxed_unsync()
    }
}

struct Replay {
    chunks: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
    rest: Option<ProxyBody>,
}

impl Body for Replay {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if let Some(rest) = self.rest.as_mut() {
            return Pin::new(rest).poll_frame(cx);
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
            && self.trailers.is_none()
            && self.rest.as_ref().is_none_or(|r| r.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        let buffered: u64 = self.chunks.iter().map(|c| c.remaining() as u64).sum();
        let mut hint = self
            .rest
            .as_ref()
            .map(|r| r.size_hint())
            .unwrap_or_else(|| SizeHint::with_exact(0));
        let lower = hint.lower().saturating_add(buffered);
        let upper = hint.upper().map(|u| u.saturating_add(buffered));
        // Raise the upper bound first: http-body asserts lower <= upper on every set.
        if let Some(u) = upper {
            hint.set_upper(u);
        }
        hint.set_lower(lower);
        hint
    }
}

#[cfg(test)]
mod tests;
