//! The outermost layer: every request carries an `x-request-id` upstream (the caller's, or a
//! new UUID v4) and every answer carries the same id back, including answers ferry rendered
//! itself, so a caller's report can be matched to ferry's logs and the model server's.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::{HeaderValue, Request, Response};

use crate::body::{BoxError, ProxyBody};
use crate::headers::{X_REQUEST_ID, new_request_id};

/// Tower layer adding request ids.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestIdLayer;

/// The service made by [`RequestIdLayer`].
#[derive(Debug, Clone)]
pub struct RequestId<S> {
    inner: S,
}

impl<S> tower::Layer<S> for RequestIdLayer {
    type Service = RequestId<S>;

    fn layer(&self, inner: S) -> RequestId<S> {
        RequestId { inner }
    }
}

// === impl RequestId ===

impl<S> tower::Service<Request<ProxyBody>> for RequestId<S>
where
    S: tower::Service<Request<ProxyBody>, Response = Response<ProxyBody>, Error = BoxError>,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ProxyBody>) -> Self::Future {
        let id = match req.headers().get(&X_REQUEST_ID) {
            Some(id) => id.clone(),
            None => {
                let id = new_request_id();
                req.headers_mut().insert(X_REQUEST_ID.clone(), id.clone());
                id
            }
        };
        ResponseFuture {
            inner: self.inner.call(req),
            id: Some(id),
        }
    }
}

pin_project_lite::pin_project! {
    /// The inner answer with the id added. Written out rather than boxed: it runs for every
    /// request.
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        id: Option<HeaderValue>,
    }
}

impl<F> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<ProxyBody>, BoxError>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let mut resp = ready!(this.inner.poll(cx))?;
        if let Some(id) = this.id.take() {
            resp.headers_mut().insert(X_REQUEST_ID.clone(), id);
        }
        Poll::Ready(Ok(resp))
    }
}
