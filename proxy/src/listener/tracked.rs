//! The bodies of one request as the connection sees them: the response body keeps its request
//! counted (in `ferry_active_requests`, and as activity for the connection's idle timer) until
//! its last byte or cancellation, and both bodies count their bytes into the request's
//! [`Outcome`], observed per route once the answer is done.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use ferry_filters::body_limit::MalformedBody;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::body::{BoxError, ProxyBody};
use crate::request_meta::Outcome;

/// Keeps `gauge` incremented while the response body is alive (open streams count as active
/// requests until their last byte or their cancellation).
/// `active` marks the connection busy for its idle timer until the body is done; the bytes
/// sent are observed with the request's when it is.
pub fn track(
    body: ProxyBody,
    gauge: prometheus_client::metrics::gauge::Gauge,
    active: super::ActiveGuard,
    outcome: Arc<Outcome>,
) -> ProxyBody {
    gauge.inc();
    Tracked {
        inner: Some(body),
        gauge,
        _active: active,
        outcome,
        bytes: 0,
    }
    .boxed_unsync()
}

/// The caller's request body, its bytes counted into `outcome`. Whatever goes wrong reading it
/// is the caller's doing: typed [`MalformedBody`] so an attempt that fails on it answers 400
/// and does not count against the upstream.
pub(super) fn request_body(body: Incoming, outcome: Arc<Outcome>) -> ProxyBody {
    Counted {
        inner: body,
        outcome,
    }
    .boxed_unsync()
}

struct Tracked {
    /// `None` only while dropping (see `Drop`).
    inner: Option<ProxyBody>,
    gauge: prometheus_client::metrics::gauge::Gauge,
    _active: super::ActiveGuard,
    outcome: Arc<Outcome>,
    bytes: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.gauge.dec();
        // The inner body first: layers that finish their part of the record when their body
        // is dropped (token usage, read at the answer's end) do so before the record is
        // submitted. hyper may stop polling at `is_end_stream` and never poll the end.
        drop(self.inner.take());
        self.outcome.observe_sizes(self.bytes);
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = ready!(Pin::new(inner).poll_frame(cx));
        if let Some(Ok(f)) = &frame {
            if let Some(data) = f.data_ref() {
                self.bytes += data.len() as u64;
            } else if let Some(trailers) = f.trailers_ref() {
                self.outcome.observe_trailers(trailers);
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

struct Counted {
    inner: Incoming,
    outcome: Arc<Outcome>,
}

impl Body for Counted {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
            Some(Ok(f)) => {
                if let Some(data) = f.data_ref() {
                    self.outcome.add_request_bytes(data.len() as u64);
                }
                Poll::Ready(Some(Ok(f)))
            }
            Some(Err(e)) => Poll::Ready(Some(Err(Box::new(MalformedBody {
                source: Box::new(e),
            })))),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
