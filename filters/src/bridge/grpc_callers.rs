//! OIP gRPC callers of a bridge that reads OIP REST: a request with a gRPC Content-Type goes
//! through the OIP translator (gRPC → REST; raw tensors as binary-extension sections, which
//! the bridge reads, so FP16 and non-UTF-8 BYTES cross as they are) and then the bridge, so a
//! route serves `from: oip-v2-grpc`, or both wires (`from: [oip-v2-rest, oip-v2-grpc]`, told
//! apart by the caller's Content-Type), with the bridge's one mapping. The translator turns
//! the bridge's REST answer back into the gRPC message; the bridge's errors reach the stack's
//! error renderer, which answers a gRPC caller with a gRPC status.
//!
//! Failures: a REST request on a gRPC-only route is 404 (not a bridged endpoint).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;
use tower::{Layer, Service};

use crate::translate::{
    BoxError, Direction, MaxDecodedBytes, OipTranslateLayer, TranslateBody, TranslateError,
    TranslateSettings, UpstreamBinary,
};

/// Tower layer putting the OIP translator in front of a bridge for gRPC callers.
#[derive(Debug, Clone)]
pub struct GrpcCallersLayer {
    translate: OipTranslateLayer,
    rest_too: bool,
}

/// The service made by [`GrpcCallersLayer`].
#[derive(Debug, Clone)]
pub struct GrpcCallers<S> {
    inner: S,
    translate: OipTranslateLayer,
    rest_too: bool,
}

// === impl GrpcCallersLayer ===

impl GrpcCallersLayer {
    /// gRPC callers translated under `max_decoded_bytes`; REST callers pass to the bridge
    /// as they are when `rest_too`, else are refused.
    pub fn new(max_decoded_bytes: MaxDecodedBytes, rest_too: bool) -> Self {
        GrpcCallersLayer {
            translate: OipTranslateLayer::new(TranslateSettings {
                direction: Direction::GrpcToRest,
                max_decoded_bytes,
                // The bridge reads the binary extension itself: no probe needed.
                upstream_binary: UpstreamBinary::On,
            }),
            rest_too,
        }
    }
}

impl<S> Layer<S> for GrpcCallersLayer {
    type Service = GrpcCallers<S>;

    fn layer(&self, inner: S) -> GrpcCallers<S> {
        GrpcCallers {
            inner,
            translate: self.translate.clone(),
            rest_too: self.rest_too,
        }
    }
}

// === impl GrpcCallers ===

impl<S, F, B> Service<Request<B>> for GrpcCallers<S>
where
    S: Service<
            Request<TranslateBody>,
            Response = Response<TranslateBody>,
            Error = BoxError,
            Future = F,
        > + Clone
        + Send
        + 'static,
    F: Future<Output = Result<Response<TranslateBody>, BoxError>> + Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // The ready service goes to this call; the next caller polls a fresh clone.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let grpc = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("application/grpc"));
        if grpc {
            let mut translated = self.translate.layer(inner);
            return Box::pin(translated.call(req));
        }
        if !self.rest_too {
            let path = req.uri().path().to_owned();
            return Box::pin(async move {
                Err(TranslateError::NoEndpoint(format!(
                    "{path}: this route bridges gRPC callers only"
                ))
                .into())
            });
        }
        let mut inner = inner;
        let req = req.map(|b| b.map_err(Into::into).boxed_unsync());
        Box::pin(inner.call(req))
    }
}

#[cfg(test)]
mod tests;
