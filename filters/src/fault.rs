//! Fault injection for drills: a share of requests is held for a fixed delay, a share is
//! answered with an error instead of being forwarded, optionally only requests that carry a
//! named header (so a drill touches only the callers that opt in).
//!
//! Place in the stack: after authorization (a refused caller is refused, drill or not) and
//! before the limits, so an injected delay holds no concurrency slot and an aborted request
//! spends no rate. The delay comes first, then the abort, as Envoy's fault filter: one request
//! may be delayed and then aborted. An abort is a typed [`FaultAborted`], answered by the
//! stack's error renderer like any failure: `{"error": ...}` with the configured status for
//! HTTP callers, the configured `grpc-status` as a trailers-only answer for gRPC callers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderName, Request, StatusCode};
use rand::Rng;

use crate::failure::{Classify, Side};
use crate::translate::BoxError;

/// What a route injects.
#[derive(Debug, Clone)]
pub struct FaultSettings {
    /// Hold a share of requests.
    pub delay: Option<FaultDelay>,
    /// Answer a share of requests with an error.
    pub abort: Option<FaultAbort>,
    /// Only requests carrying this header are candidates; `None` = every request.
    pub header: Option<HeaderName>,
}

/// A fixed delay for a share of requests.
#[derive(Debug, Clone, Copy)]
pub struct FaultDelay {
    /// How long.
    pub fixed: Duration,
    /// Share of candidate requests, 0..=1.
    pub ratio: f64,
}

/// An error answer for a share of requests.
#[derive(Debug, Clone, Copy)]
pub struct FaultAbort {
    /// What HTTP callers get.
    pub status: StatusCode,
    /// What gRPC callers get.
    pub grpc_code: u32,
    /// Share of candidate requests, 0..=1.
    pub ratio: f64,
}

/// Which fault was injected (the metric's `kind` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// A delay.
    Delay,
    /// An abort.
    Abort,
}

/// Called for each injected fault (the proxy's counter).
pub type OnFault = Arc<dyn Fn(FaultKind) + Send + Sync>;

/// The answer to an aborted request.
#[derive(Debug, Clone, thiserror::Error)]
#[error("fault injected: request aborted with status {status}")]
pub struct FaultAborted {
    /// HTTP status.
    pub status: StatusCode,
    /// gRPC status code.
    pub grpc_code: u32,
}

/// Tower layer injecting faults.
#[derive(Clone)]
pub struct FaultLayer {
    settings: Arc<FaultSettings>,
    on_fault: Option<OnFault>,
}

/// The service made by [`FaultLayer`].
#[derive(Clone)]
pub struct Fault<S> {
    inner: S,
    layer: FaultLayer,
}

type Boxed<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

impl std::fmt::Debug for FaultLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultLayer")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for Fault<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fault")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

// === impl FaultLayer ===

impl FaultLayer {
    /// A layer injecting these faults.
    pub fn new(settings: FaultSettings) -> Self {
        FaultLayer {
            settings: Arc::new(settings),
            on_fault: None,
        }
    }

    /// Calls `f` for each injected fault.
    pub fn on_fault(mut self, f: OnFault) -> Self {
        self.on_fault = Some(f);
        self
    }

    /// The faults for one request: (delay, abort).
    fn roll<B>(&self, req: &Request<B>) -> (Option<Duration>, Option<FaultAborted>) {
        let s = &self.settings;
        if s.header
            .as_ref()
            .is_some_and(|h| !req.headers().contains_key(h))
        {
            return (None, None);
        }
        let mut rng = rand::rng();
        let delay = s
            .delay
            .filter(|d| rng.random::<f64>() < d.ratio)
            .map(|d| d.fixed);
        let abort = s
            .abort
            .filter(|a| rng.random::<f64>() < a.ratio)
            .map(|a| FaultAborted {
                status: a.status,
                grpc_code: a.grpc_code,
            });
        if let Some(f) = &self.on_fault {
            if delay.is_some() {
                f(FaultKind::Delay);
            }
            if abort.is_some() {
                f(FaultKind::Abort);
            }
        }
        (delay, abort)
    }
}

impl<S> tower::Layer<S> for FaultLayer {
    type Service = Fault<S>;

    fn layer(&self, inner: S) -> Fault<S> {
        Fault {
            inner,
            layer: self.clone(),
        }
    }
}

// === impl Fault ===

impl<S, B, R> tower::Service<Request<B>> for Fault<S>
where
    S: tower::Service<Request<B>, Response = R> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    B: Send + 'static,
    R: Send + 'static,
{
    type Response = R;
    type Error = BoxError;
    type Future = Boxed<R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let (delay, abort) = self.layer.roll(&req);
        match (delay, abort) {
            (None, None) => {
                let answer = self.inner.call(req);
                Box::pin(async move { answer.await.map_err(Into::into) })
            }
            (None, Some(aborted)) => Box::pin(std::future::ready(Err(aborted.into()))),
            (Some(delay), abort) => {
                // The clone serves this request after the wait; `self.inner` stays ready.
                let mut inner = self.inner.clone();
                std::mem::swap(&mut inner, &mut self.inner);
                Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    if let Some(aborted) = abort {
                        return Err(aborted.into());
                    }
                    inner.call(req).await.map_err(Into::into)
                })
            }
        }
    }
}

// === impl FaultAborted ===

impl Classify for FaultAborted {
    fn side(&self) -> Side {
        // A drill stands in for a failing upstream (5xx) or a refused caller (4xx).
        if self.status.is_server_error() {
            Side::Upstream
        } else {
            Side::Client
        }
    }
    fn http_status(&self) -> StatusCode {
        self.status
    }
    fn grpc_code(&self) -> u32 {
        self.grpc_code
    }
    fn reason(&self) -> &'static str {
        "fault_abort"
    }
}

#[cfg(test)]
mod tests;
