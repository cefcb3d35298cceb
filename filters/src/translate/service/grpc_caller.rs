//! gRPC callers, REST upstream: the HTTP-level halves of a route's translation around the
//! message mapping in `translate::grpc_to_rest`. The unframed request becomes the REST
//! endpoint's call over HTTP/1.1, with the Content-Type KServe picks its parser by; the REST
//! answer becomes a gRPC message with its status in trailers.
//!
//! Failures: an unknown rpc or a malformed frame is the caller's fault; an unreadable answer
//! the upstream's, and a REST error status maps by
//! [`grpc_for_http`](crate::translate::grpc_for_http).

use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Request, Response, Version};

use super::{Pending, PendingKind, copy_headers};
use crate::translate::body::boxed;
use crate::translate::collect::collect;
use crate::translate::endpoint::Rpc;
use crate::translate::error::TranslateError;
use crate::translate::grpc_frame;
use crate::translate::grpc_to_rest::{self, GrpcPlan};
use crate::translate::pb::SERVICE_PATH;
use crate::translate::{ChunksBody, INFERENCE_HEADER_CONTENT_LENGTH, TranslateBody};

pub(super) async fn grpc_request(
    req: Request<TranslateBody>,
    limit: u64,
    upstream_binary: bool,
) -> Result<(Request<TranslateBody>, Pending), TranslateError> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let rpc = path
        .strip_prefix(SERVICE_PATH)
        .and_then(Rpc::from_method_name)
        .ok_or_else(|| TranslateError::NoEndpoint(path.to_owned()))?;
    let (bytes, _) = collect(body, limit).await?;
    let message = grpc_frame::unframe(&bytes).map_err(TranslateError::BadRequest)?;
    let (call, plan) = grpc_to_rest::request(rpc, message, upstream_binary)?;
    let body = ChunksBody::new(call.body, None);
    let len = body.len();
    let mut out = Request::new(boxed(body));
    *out.method_mut() = call.ep.rest_method();
    *out.version_mut() = Version::HTTP_11;
    let mut uri = parts.uri.into_parts();
    uri.path_and_query = Some(
        call.ep
            .rest_path()
            .parse()
            .map_err(|_| TranslateError::BadRequest("untranslatable model name".into()))?,
    );
    *out.uri_mut() = http::Uri::from_parts(uri)
        .map_err(|_| TranslateError::BadRequest("untranslatable URI".into()))?;
    let headers = out.headers_mut();
    copy_headers(&parts.headers, headers);
    if call.ep.rpc == Rpc::ModelInfer {
        // KServe picks its parser by Content-Type: without one it expects binary sections
        // (protocol pitfall 1), with application/json it reads the whole body as JSON.
        let content_type = if call.header_len.is_some() {
            "application/octet-stream"
        } else {
            "application/json"
        };
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    }
    if let Some(n) = call.header_len {
        headers.insert(INFERENCE_HEADER_CONTENT_LENGTH, HeaderValue::from(n));
    }
    *out.extensions_mut() = parts.extensions;
    Ok((
        out,
        Pending {
            kind: PendingKind::GrpcToRest(plan),
            limit,
        },
    ))
}

pub(super) async fn grpc_response(
    plan: &GrpcPlan,
    resp: Response<TranslateBody>,
    limit: u64,
) -> Result<Response<TranslateBody>, TranslateError> {
    let (parts, body) = resp.into_parts();
    let (bytes, _) = collect(body, limit)
        .await
        .map_err(|e| TranslateError::BadUpstream(e.to_string()))?;
    let header_len = parts
        .headers
        .get(&INFERENCE_HEADER_CONTENT_LENGTH)
        .map(|v| v.to_str().unwrap_or("invalid"));
    let chunks = grpc_to_rest::response(plan, parts.status, header_len, bytes, limit)?;
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let mut out = Response::new(boxed(ChunksBody::new(chunks, Some(trailers))));
    let headers = out.headers_mut();
    copy_headers(&parts.headers, headers);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    Ok(out)
}
