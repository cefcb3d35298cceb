//! The route's `timeout`: from routing until the upstream's response headers, across every
//! attempt (a streaming body may then run as long as it likes). Expiry: 504 /
//! DEADLINE_EXCEEDED.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http::{Request, Response};

use crate::body::{BoxError, ProxyBody};
use crate::failure::Failure;

/// Tower layer bounding the inner service's answer time.
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    timeout: Duration,
    cluster: Arc<str>,
}

/// The service made by [`TimeoutLayer`].
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
    cluster: Arc<str>,
}

impl TimeoutLayer {
    /// Answers within `timeout`; errors name `cluster`.
    pub fn new(timeout: Duration, cluster: Arc<str>) -> Self {
        TimeoutLayer { timeout, cluster }
    }
}

impl<S> tower::Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            timeout: self.timeout,
            cluster: self.cluster.clone(),
        }
    }
}

// === impl Timeout ===

impl<S> tower::Service<Request<ProxyBody>> for Timeout<S>
where
    S: tower::Service<Request<ProxyBody>, Response = Response<ProxyBody>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<ProxyBody>) -> Self::Future {
        ResponseFuture {
            inner: tokio::time::timeout(self.timeout, self.inner.call(req)),
            timeout: self.timeout,
            cluster: self.cluster.clone(),
        }
    }
}

pin_project_lite::pin_project! {
    /// The inner answer or the route's 504. Written out rather than boxed: it runs for every
    /// request of a route with a timeout (the default).
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: tokio::time::Timeout<F>,
        timeout: Duration,
        cluster: Arc<str>,
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<ProxyBody>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<ProxyBody>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        Poll::Ready(match ready!(this.inner.poll(cx)) {
            Ok(answer) => answer.map_err(Into::into),
            Err(_) => Err(Failure::Timeout {
                cluster: this.cluster.to_string(),
                timeout_ms: this.timeout.as_millis(),
                per_try: false,
            }
            .into()),
        })
    }
}
