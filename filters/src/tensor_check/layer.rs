//! [`TensorValidator`] as a tower layer; metadata requests go through the inner service (the
//! route's own path: translation, timeouts, retries, balancing). A refusal is a typed
//! [`TranslateError`](crate::translate::TranslateError) for the stack's error renderer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;

use super::{TensorValidationSettings, TensorValidator};
use crate::translate::{BoxError, TranslateBody};

type FetchFuture<RB> = Pin<Box<dyn Future<Output = Result<Response<RB>, BoxError>> + Send>>;

/// Called when a metadata fetch failed and a request went through unchecked (for a metric).
pub type OnFetchFailure = Arc<dyn Fn() + Send + Sync>;

/// Tower layer checking input tensors before the inner service sees the request.
#[derive(Clone)]
pub struct TensorValidationLayer {
    validator: TensorValidator,
    on_fetch_failure: Option<OnFetchFailure>,
}

/// The service made by [`TensorValidationLayer`].
#[derive(Clone)]
pub struct TensorValidation<S> {
    inner: S,
    validator: TensorValidator,
    on_fetch_failure: Option<OnFetchFailure>,
}

impl std::fmt::Debug for TensorValidationLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorValidationLayer")
            .field("validator", &self.validator)
            .finish_non_exhaustive()
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for TensorValidation<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorValidation")
            .field("inner", &self.inner)
            .field("validator", &self.validator)
            .finish_non_exhaustive()
    }
}

// === impl TensorValidationLayer ===

impl TensorValidationLayer {
    /// A layer with these settings.
    pub fn new(settings: TensorValidationSettings) -> Self {
        Self::from_validator(TensorValidator::new(settings))
    }

    /// A layer sharing this validator (and its metadata cache).
    pub fn from_validator(validator: TensorValidator) -> Self {
        TensorValidationLayer {
            validator,
            on_fetch_failure: None,
        }
    }

    /// Calls `f` each time a metadata fetch fails and a request passes unchecked.
    pub fn on_fetch_failure(mut self, f: OnFetchFailure) -> Self {
        self.on_fetch_failure = Some(f);
        self
    }
}

impl<S> tower::Layer<S> for TensorValidationLayer {
    type Service = TensorValidation<S>;

    fn layer(&self, inner: S) -> TensorValidation<S> {
        TensorValidation {
            inner,
            validator: self.validator.clone(),
            on_fetch_failure: self.on_fetch_failure.clone(),
        }
    }
}

// === impl TensorValidation ===

impl<S, F, E, B, RB> tower::Service<Request<B>> for TensorValidation<S>
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
        // The ready clone stays here for the call; metadata fetches use fresh clones.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let probe = self.inner.clone();
        let validator = self.validator.clone();
        let on_fetch_failure = self.on_fetch_failure.clone();
        let req = req.map(|b| b.map_err(Into::into).boxed_unsync());
        Box::pin(async move {
            // Boxed with a named type: rustc cannot prove `Send` for the inner service's future
            // through an inferred closure future (higher-ranked lifetime inference).
            let fetch = move |r: Request<TranslateBody>| -> FetchFuture<RB> {
                let mut probe = probe;
                Box::pin(async move {
                    std::future::poll_fn(|cx| probe.poll_ready(cx))
                        .await
                        .map_err(Into::into)?;
                    probe.call(r).await.map_err(Into::into)
                })
            };
            let checked = validator.check(req, fetch).await?;
            if checked.fetch_failed
                && let Some(f) = &on_fetch_failure
            {
                f();
            }
            let resp = inner.call(checked.request).await.map_err(Into::into)?;
            Ok(resp.map(|b| b.map_err(Into::into).boxed_unsync()))
        })
    }
}
