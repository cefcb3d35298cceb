//! The route's `timeout`: from routing until the upstream's response headers, across every
//! attempt (a streaming body may then run as long as it likes). Expiry: 504 /
//! DEADLINE_EXCEEDED.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};

use crate::body::{BoxError, BoxFuture, ProxyBody, StackService};
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
    S: StackService,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ProxyBody>) -> Self::Future {
        let call = tokio::time::timeout(self.timeout, self.inner.call(req));
        let (timeout, cluster) = (self.timeout, self.cluster.clone());
        Box::pin(async move {
            call.await.unwrap_or_else(|_| {
                Err(Failure::Timeout {
                    cluster: cluster.to_string(),
                    timeout_ms: timeout.as_millis(),
                    per_try: false,
                }
                .into())
            })
        })
    }
}
