//! Response bodies that keep their request counted: in `ferry_active_requests` and as
//! activity on the connection (for its idle timer) until their last byte or cancellation.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

use crate::body::{BoxError, ProxyBody};

/// Keeps `gauge` incremented while the response body is alive (open streams count as active
/// requests until their last byte or their cancellation).
/// `active` marks the connection busy for its idle timer until the body is done.
pub fn track(
    body: ProxyBody,
    gauge: prometheus_client::metrics::gauge::Gauge,
    active: super::ActiveGuard,
) -> ProxyBody {
    gauge.inc();
    Tracked {
        inner: body,
        gauge,
        _active: active,
    }
    .boxed_unsync()
}

struct Tracked {
    inner: ProxyBody,
    gauge: prometheus_client::metrics::gauge::Gauge,
    _active: super::ActiveGuard,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
