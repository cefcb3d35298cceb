//! The request metadata layer's future: the inner answer, recorded once it is ready.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::Response;

use super::Pending;
use crate::body::{BoxError, ProxyBody};

pin_project_lite::pin_project! {
    /// The inner answer, recorded when it is ready. Written out rather than boxed: it runs for
    /// every request.
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        done: Option<Pending>,
    }
}

impl<F> ResponseFuture<F> {
    pub(super) fn new(inner: F, done: Pending) -> Self {
        ResponseFuture {
            inner,
            done: Some(done),
        }
    }
}

impl<F> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<ProxyBody>, BoxError>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let resp = ready!(this.inner.poll(cx))?;
        if let Some(mut p) = this.done.take() {
            let seen = p.seen.take();
            p.recorder.record(&resp, p.start, &p.outcome, seen);
        }
        Poll::Ready(Ok(resp))
    }
}
