//! [`Translator`] as a tower layer, for stacks other than the proxy's own forwarding path.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;

use super::service::Translator;
use super::{BoxError, TranslateBody, TranslateSettings};

/// Tower layer applying [`Translator`] around an inner service.
#[derive(Debug, Clone)]
pub struct OipTranslateLayer {
    translator: Translator,
}

/// The service made by [`OipTranslateLayer`].
#[derive(Debug, Clone)]
pub struct OipTranslate<S> {
    inner: S,
    translator: Translator,
}

// === impl OipTranslateLayer ===

impl OipTranslateLayer {
    /// A layer with these settings.
    pub fn new(settings: TranslateSettings) -> Self {
        OipTranslateLayer {
            translator: Translator::new(settings),
        }
    }
}

impl<S> tower::Layer<S> for OipTranslateLayer {
    type Service = OipTranslate<S>;

    fn layer(&self, inner: S) -> OipTranslate<S> {
        OipTranslate {
            inner,
            translator: self.translator.clone(),
        }
    }
}

// === impl OipTranslate ===

impl<S, F, E, B, RB> tower::Service<Request<B>> for OipTranslate<S>
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
        let translator = self.translator.clone();
        Box::pin(async move {
            let (req, pending) = match translator.request(req).await {
                Ok(ok) => ok,
                Err(answer) => return Ok(answer),
            };
            let resp = inner.call(req).await.map_err(Into::into)?;
            Ok(pending.response(resp).await)
        })
    }
}
