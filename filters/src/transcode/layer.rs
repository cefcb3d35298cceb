//! [`Transcoder`] as a tower layer, usable in any stack (like tower-http's layers). Faults
//! are typed [`TranscodeError`](super::TranscodeError)s for the stack's error renderer.

use std::time::Instant;

use crate::trace_context::HopTrace;
use crate::translate::{phase, request_body};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;

use super::service::Transcoder;
use crate::translate::{BoxError, TranslateBody};

/// Tower layer transcoding matching REST calls to gRPC; other requests pass through.
#[derive(Debug, Clone)]
pub struct TranscodeLayer {
    transcoder: Transcoder,
}

/// The service made by [`TranscodeLayer`].
#[derive(Debug, Clone)]
pub struct Transcode<S> {
    inner: S,
    transcoder: Transcoder,
}

// === impl TranscodeLayer ===

impl TranscodeLayer {
    /// A layer serving this table.
    pub fn new(transcoder: Transcoder) -> Self {
        TranscodeLayer { transcoder }
    }
}

impl<S> tower::Layer<S> for TranscodeLayer {
    type Service = Transcode<S>;

    fn layer(&self, inner: S) -> Transcode<S> {
        Transcode {
            inner,
            transcoder: self.transcoder.clone(),
        }
    }
}

// === impl Transcode ===

impl<S, F, E, B, RB> tower::Service<Request<B>> for Transcode<S>
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
        let hop = HopTrace::of(&req).cloned();
        let started = Instant::now();
        match self.transcoder.request(req) {
            Err(req) => {
                let req = req.map(|b| b.map_err(Into::into).boxed_unsync());
                Box::pin(async move {
                    let resp = inner.call(req).await.map_err(Into::into)?;
                    Ok(resp.map(|b| b.map_err(Into::into).boxed_unsync()))
                })
            }
            Ok(translate) => Box::pin(async move {
                let translated = translate.await;
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
                let answer = pending.response(resp).await;
                phase(
                    hop.as_deref(),
                    "translate.encode",
                    started,
                    &answer,
                    Response::body,
                );
                Ok(answer?)
            }),
        }
    }
}
