//! The bridge as a tower layer around the route's path to the upstream: the bridged request
//! goes through the inner service (timeouts, retries, balancing); faults are typed
//! [`TranslateError`](crate::translate::TranslateError)s for the stack's error renderer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;

use super::service::{Op, request, response};
use super::{BridgeDirection, BridgeSettings, torchserve};
use crate::translate::{BoxError, TranslateBody, TranslateError};

/// Tower layer applying the bridge around an inner service.
#[derive(Debug, Clone)]
pub struct BridgeLayer {
    settings: Arc<BridgeSettings>,
}

/// The service made by [`BridgeLayer`].
#[derive(Debug, Clone)]
pub struct Bridge<S> {
    inner: S,
    settings: Arc<BridgeSettings>,
}

// === impl BridgeLayer ===

impl BridgeLayer {
    /// A layer with these settings.
    pub fn new(settings: BridgeSettings) -> Self {
        BridgeLayer {
            settings: Arc::new(settings),
        }
    }
}

impl<S> tower::Layer<S> for BridgeLayer {
    type Service = Bridge<S>;

    fn layer(&self, inner: S) -> Bridge<S> {
        Bridge {
            inner,
            settings: self.settings.clone(),
        }
    }
}

// === impl Bridge ===

impl<S, F, E, B, RB> tower::Service<Request<B>> for Bridge<S>
where
    S: tower::Service<Request<TranslateBody>, Response = Response<RB>, Error = E, Future = F>
        + Clone
        + Send
        + 'static,
    F: Future<Output = Result<Response<RB>, E>> + Send + 'static,
    E: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // The ready clone stays here for the call; the next caller polls a fresh one.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let settings = self.settings.clone();
        let op = Op::of(settings.direction, req.method(), req.uri().path());
        // Boxed here, outside the future, so its type does not carry the body's error
        // conversion (which trips rustc's higher-ranked `Send` inference).
        let req = req.map(|b| b.map_err(Into::into).boxed_unsync());
        if let BridgeDirection::OipToTorchserve(target) = settings.direction {
            return Box::pin(async move {
                let (up, pending) = torchserve::request(&settings, target, req).await?;
                let resp = inner.call(up).await.map_err(Into::into)?;
                let resp = resp.map(|b| b.map_err(Into::into).boxed_unsync());
                Ok(torchserve::response(&settings, target, pending, resp).await?)
            });
        }
        Box::pin(async move {
            let op = op.ok_or_else(|| {
                TranslateError::NoEndpoint(format!(
                    "{} {} is not bridged",
                    req.method(),
                    req.uri().path()
                ))
            })?;
            let (up, pending) = request(&settings, op, req).await?;
            let resp = inner.call(up).await.map_err(Into::into)?;
            let resp = resp.map(|b| b.map_err(Into::into).boxed_unsync());
            Ok(response(&settings, pending, resp).await?)
        })
    }
}
