//! One unary gRPC call to what lies below the bridge (the OIP translator, or the route's
//! upstream), and the unary gRPC answer the caller gets. The caller's headers and extensions
//! (trace context, route facts) go with every call; the ones that describe the old body or
//! gRPC message do not.
//!
//! Failures: the inner service's own errors (connect, timeout) pass up unchanged; a non-OK
//! `grpc-status` becomes [`TranslateError::Upstream`] with its code and message kept; an
//! answer that is not a gRPC message is the upstream's fault (502 / INTERNAL).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Extensions, HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use prost::Message;

use crate::translate::grpc_frame::{encode_with_raw, unframe};
use crate::translate::{
    BoxError, ChunksBody, TranslateBody, TranslateError, boxed, code, collect, grpc_status,
    http_for_grpc,
};

/// The future of one call of the inner service.
pub(crate) type UnaryFuture =
    Pin<Box<dyn Future<Output = Result<Response<TranslateBody>, BoxError>> + Send>>;

/// A boxed call of the inner service.
pub(crate) type SendFn = Box<dyn FnMut(Request<TranslateBody>) -> UnaryFuture + Send>;

/// The inner service, with what every call carries from the caller's request.
pub(crate) struct Upstream {
    pub(crate) send: SendFn,
    pub(crate) uri: Uri,
    pub(crate) headers: HeaderMap,
    pub(crate) extensions: Extensions,
    pub(crate) limit: u64,
}

// === impl Upstream ===

impl Upstream {
    /// Calls `path` with `msg` (plus `raw` entries of its repeated bytes field `raw_field`)
    /// and returns the answer's message, unframed.
    pub(crate) async fn unary<M: Message>(
        &mut self,
        path: &str,
        msg: &M,
        raw_field: u32,
        raw: &[Bytes],
    ) -> Result<Bytes, BoxError> {
        let body = ChunksBody::new(encode_with_raw(msg, raw_field, raw), None);
        let mut req = Request::new(boxed(body));
        *req.method_mut() = Method::POST;
        *req.version_mut() = Version::HTTP_2;
        let mut uri = self.uri.clone().into_parts();
        uri.path_and_query = Some(
            path.parse()
                .map_err(|_| TranslateError::BadRequest(format!("bad rpc path {path:?}")))?,
        );
        *req.uri_mut() =
            Uri::from_parts(uri).map_err(|e| TranslateError::BadRequest(e.to_string()))?;
        *req.headers_mut() = self.headers.clone();
        let h = req.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        h.insert("te", HeaderValue::from_static("trailers"));
        *req.extensions_mut() = self.extensions.clone();
        let resp = (self.send)(req).await?;
        let (parts, body) = resp.into_parts();
        if parts.status != StatusCode::OK {
            return Err(TranslateError::BadUpstream(format!(
                "gRPC upstream answered HTTP {}",
                parts.status
            ))
            .into());
        }
        // Trailers-only answers carry the status in the headers.
        if let Some(status) = grpc_status(&parts.headers).filter(|(c, _)| *c != code::OK) {
            return Err(status_error(status).into());
        }
        let (bytes, trailers) = collect(body, self.limit).await.map_err(|e| match e {
            TranslateError::BadRequest(m) => TranslateError::BadUpstream(m),
            other => other,
        })?;
        let status = trailers
            .as_ref()
            .and_then(grpc_status)
            .or_else(|| grpc_status(&parts.headers))
            .ok_or_else(|| TranslateError::BadUpstream("gRPC answer without grpc-status".into()))?;
        if status.0 != code::OK {
            return Err(status_error(status).into());
        }
        Ok(unframe(&bytes).map_err(TranslateError::BadUpstream)?)
    }
}

fn status_error((code, message): (u32, String)) -> TranslateError {
    TranslateError::Upstream {
        code,
        http: http_for_grpc(code),
        message,
    }
}

/// The caller's headers minus those describing its body or gRPC message.
pub(crate) fn call_headers(from: &HeaderMap) -> HeaderMap {
    let mut to = HeaderMap::with_capacity(from.len());
    for (name, value) in from {
        let n = name.as_str();
        let skip = matches!(
            n,
            "content-length"
                | "content-type"
                | "content-encoding"
                | "transfer-encoding"
                | "te"
                | "connection"
                | "inference-header-content-length"
        ) || (n.starts_with("grpc-") && n != "grpc-timeout");
        if !skip {
            to.append(name.clone(), value.clone());
        }
    }
    to
}

/// A unary gRPC answer: `msg` (plus raw entries of `raw_field`), status OK in trailers.
pub(crate) fn answer<M: Message>(
    msg: &M,
    raw_field: u32,
    raw: &[Bytes],
) -> Response<TranslateBody> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let chunks: VecDeque<Bytes> = encode_with_raw(msg, raw_field, raw);
    let mut resp = Response::new(boxed(ChunksBody::new(chunks, Some(trailers))));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    resp
}
