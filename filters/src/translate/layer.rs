//! [`Translator`] as a tower layer. The inner service is the route's path to the upstream
//! (timeouts, retries, balancing): the translated request goes through it, and so does the
//! `GET /v2` binary-extension probe of a gRPC → REST route, untranslated. Faults are typed
//! [`TranslateError`](super::TranslateError)s for the stack's error renderer.

use std::time::Instant;

use crate::trace_context::HopTrace;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;

use super::{BoxError, TranslateBody, TranslateSettings, Translator};

type ProbeFuture<RB> = Pin<Box<dyn Future<Output = Result<Response<RB>, BoxError>> + Send>>;

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
        Self::from_translator(Translator::new(settings))
    }

    /// A layer sharing this translator (and its probe cache).
    pub fn from_translator(translator: Translator) -> Self {
        OipTranslateLayer { translator }
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
        let hop = HopTrace::of(&req).cloned();
        if !translator.may_probe() {
            // Most routes never probe: a smaller future without the probe's machinery.
            return Box::pin(async move {
                let started = Instant::now();
                let translated = translator.try_request(req).await;
                phase(
                    hop.as_deref(),
                    "translate.decode",
                    started,
                    &translated,
                    request_body,
                );
                let (req, pending) = translated?;
                let resp = inner.call(req).await.map_err(Into::into)?;
                let started = Instant::now();
                let answer = pending.try_response(resp).await;
                phase(
                    hop.as_deref(),
                    "translate.encode",
                    started,
                    &answer,
                    Response::body,
                );
                Ok(answer?)
            });
        }
        let probe = self.inner.clone();
        Box::pin(async move {
            // Boxed with a named type: rustc cannot prove `Send` for the inner service's future
            // through an inferred closure future (higher-ranked lifetime inference).
            let send_probe = move |r: Request<TranslateBody>| -> ProbeFuture<RB> {
                let mut probe = probe;
                Box::pin(async move {
                    std::future::poll_fn(|cx| probe.poll_ready(cx))
                        .await
                        .map_err(Into::into)?;
                    probe.call(r).await.map_err(Into::into)
                })
            };
            let started = Instant::now();
            let translated = translator.try_request_probing(req, send_probe).await;
            phase(
                hop.as_deref(),
                "translate.decode",
                started,
                &translated,
                request_body,
            );
            let (req, pending) = translated?;
            let resp = inner.call(req).await.map_err(Into::into)?;
            let started = Instant::now();
            let answer = pending.try_response(resp).await;
            phase(
                hop.as_deref(),
                "translate.encode",
                started,
                &answer,
                Response::body,
            );
            Ok(answer?)
        })
    }
}

/// A translation step of a recorded request, as a span under its hop (the body collection it
/// waits for included: that is time the caller's request spends here). `out` is what the
/// step produced: its body's size, when known before it streams, goes on the span as
/// `ferry.translate.bytes` (for an inference call, tensors make up nearly all of it).
pub(crate) fn phase<T, B: Body, E>(
    hop: Option<&HopTrace>,
    name: &'static str,
    started: Instant,
    out: &Result<T, E>,
    body: impl Fn(&T) -> &B,
) {
    if let Some(hop) = hop {
        let attributes = match out {
            Ok(t) => body(t)
                .size_hint()
                .exact()
                .map(|n| {
                    vec![opentelemetry::KeyValue::new(
                        "ferry.translate.bytes",
                        i64::try_from(n).unwrap_or(i64::MAX),
                    )]
                })
                .unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        hop.phase(name, started, Instant::now(), attributes);
    }
}

/// The request of a translated `(request, pending)` pair.
pub(crate) fn request_body<B, P>(t: &(Request<B>, P)) -> &B {
    t.0.body()
}
