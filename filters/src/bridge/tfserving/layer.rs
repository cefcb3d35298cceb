//! The TF Serving bridge as a tower layer: the caller's unary gRPC message is collected under
//! the limit and answered by `caller` or `upstream`, whose calls go through the inner service
//! (timeouts, retries, balancing, or the OIP translator).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;

use super::unary::{SendFn, UnaryFuture, Upstream, call_headers};
use super::{TfServingDirection, TfServingSettings, caller, pb, upstream};
use crate::translate::grpc_frame::unframe;
use crate::translate::{BoxError, TranslateBody, TranslateError, collect};

/// Tower layer applying the TF Serving bridge around an inner service.
#[derive(Debug, Clone)]
pub struct TfServingLayer {
    settings: Arc<TfServingSettings>,
}

/// The service made by [`TfServingLayer`].
#[derive(Debug, Clone)]
pub struct TfServing<S> {
    inner: S,
    settings: Arc<TfServingSettings>,
}

// === impl TfServingLayer ===

impl TfServingLayer {
    /// A layer with these settings.
    pub fn new(settings: TfServingSettings) -> Self {
        TfServingLayer {
            settings: Arc::new(settings),
        }
    }
}

impl<S> tower::Layer<S> for TfServingLayer {
    type Service = TfServing<S>;

    fn layer(&self, inner: S) -> TfServing<S> {
        TfServing {
            inner,
            settings: self.settings.clone(),
        }
    }
}

// === impl TfServing ===

impl<S, F, E, B, RB> tower::Service<Request<B>> for TfServing<S>
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
        let inner = self.inner.clone();
        let settings = self.settings.clone();
        // A metadata call makes two upstream calls: each waits for readiness on its own clone.
        let send: SendFn = Box::new(move |r: Request<TranslateBody>| -> UnaryFuture {
            let mut svc = inner.clone();
            Box::pin(async move {
                std::future::poll_fn(|cx| svc.poll_ready(cx))
                    .await
                    .map_err(|e| -> BoxError { e.into() })?;
                let resp = svc.call(r).await.map_err(|e| -> BoxError { e.into() })?;
                let body = |b: RB| -> TranslateBody {
                    b.map_err(|e| -> BoxError { e.into() }).boxed_unsync()
                };
                Ok(resp.map(body))
            })
        });
        // Boxed here, outside the future, so its type does not carry the body's error
        // conversion (which trips rustc's higher-ranked `Send` inference).
        let req = req.map(|b| b.map_err(Into::into).boxed_unsync());
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let path = parts.uri.path();
            let prefix = match settings.direction {
                TfServingDirection::CallerToOip => pb::SERVICE_PATH,
                TfServingDirection::OipToUpstream => crate::translate::pb::SERVICE_PATH,
            };
            let rpc = path
                .strip_prefix(prefix)
                .ok_or_else(|| TranslateError::NoEndpoint(format!("{path} is not bridged")))?
                .to_owned();
            let limit = settings.max_decoded_bytes.0;
            let (bytes, _) = collect(body, limit).await?;
            let message = unframe(&bytes).map_err(TranslateError::BadRequest)?;
            let mut up = Upstream {
                send,
                uri: parts.uri.clone(),
                headers: call_headers(&parts.headers),
                extensions: parts.extensions,
                limit,
            };
            match settings.direction {
                TfServingDirection::CallerToOip => {
                    caller::call(&settings, &mut up, &rpc, message).await
                }
                TfServingDirection::OipToUpstream => {
                    upstream::call(&settings, &mut up, &rpc, message).await
                }
            }
        })
    }
}
