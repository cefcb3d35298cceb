//! REST callers, gRPC upstream: the HTTP-level halves of a route's translation around the
//! message mapping in `translate::rest_to_grpc`. The request becomes a `POST` of the rpc over
//! HTTP/2 (an infer request with declared binary sections streams through `section_stream`,
//! anything else is collected under the limit first); the gRPC answer, once its status is OK,
//! becomes JSON, or JSON and binary sections when the caller asked for them.
//!
//! Failures: an unknown endpoint (404) or an untranslatable path (400) is the caller's fault;
//! a non-200 answer or one without `grpc-status` is the upstream's (502), and a gRPC status
//! other than OK maps by [`http_for_grpc`].

use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode, Version};
use http_body_util::BodyExt;

use super::{Pending, PendingKind, copy_headers};
use crate::translate::body::boxed;
use crate::translate::collect::collect;
use crate::translate::endpoint::{Endpoint, Rpc};
use crate::translate::error::{TranslateError, code, http_for_grpc};
use crate::translate::grpc_frame;
use crate::translate::grpc_message::grpc_status;
use crate::translate::pb::SERVICE_PATH;
use crate::translate::rest_to_grpc::{self, InferAnswer, OutputPlan};
use crate::translate::section_stream;
use crate::translate::{BoxError, ChunksBody, INFERENCE_HEADER_CONTENT_LENGTH, TranslateBody};

pub(super) async fn rest_request(
    req: Request<TranslateBody>,
    limit: u64,
) -> Result<(Request<TranslateBody>, Pending), TranslateError> {
    let (parts, body) = req.into_parts();
    let ep = Endpoint::from_rest(&parts.method, parts.uri.path()).ok_or_else(|| {
        TranslateError::NoEndpoint(format!("{} {}", parts.method, parts.uri.path()))
    })?;
    // Binary sections stream behind the message head when their lengths are declared.
    let declared = (ep.rpc == Rpc::ModelInfer)
        .then(|| section_stream::declared(&parts.headers, limit))
        .flatten();
    let (body, plan) = match declared {
        Some(declared) => section_stream::infer_request(&ep, declared, body, limit).await?,
        None => {
            let (bytes, _) = collect(body, limit).await?;
            let header_len = parts
                .headers
                .get(&INFERENCE_HEADER_CONTENT_LENGTH)
                .map(|v| v.to_str().unwrap_or("invalid"));
            let (chunks, plan) = rest_to_grpc::request(&ep, bytes, header_len, limit)?;
            (boxed(ChunksBody::new(chunks, None)), plan)
        }
    };
    let mut out = Request::new(body);
    *out.method_mut() = Method::POST;
    *out.version_mut() = Version::HTTP_2;
    let path = format!("{SERVICE_PATH}{}", ep.rpc.method_name());
    let mut uri = parts.uri.into_parts();
    uri.path_and_query = Some(
        path.parse()
            .map_err(|_| TranslateError::BadRequest("untranslatable path".into()))?,
    );
    *out.uri_mut() = http::Uri::from_parts(uri)
        .map_err(|_| TranslateError::BadRequest("untranslatable URI".into()))?;
    let headers = out.headers_mut();
    copy_headers(&parts.headers, headers);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(http::header::TE, HeaderValue::from_static("trailers"));
    *out.extensions_mut() = parts.extensions;
    Ok((
        out,
        Pending {
            kind: PendingKind::RestToGrpc { ep, plan },
            limit,
        },
    ))
}

pub(super) async fn rest_response(
    ep: &Endpoint,
    plan: &OutputPlan,
    resp: Response<TranslateBody>,
    limit: u64,
) -> Result<Response<TranslateBody>, TranslateError> {
    let (parts, body) = resp.into_parts();
    if parts.status != StatusCode::OK {
        return Err(TranslateError::Upstream {
            code: code::UNAVAILABLE,
            http: StatusCode::BAD_GATEWAY,
            message: format!("gRPC upstream answered HTTP {}", parts.status),
        });
    }
    // Trailers-only answers carry the status in the headers.
    if let Some((code, message)) = grpc_status(&parts.headers).filter(|(c, _)| *c != code::OK) {
        return Err(TranslateError::Upstream {
            code,
            http: http_for_grpc(code),
            message,
        });
    }
    let (bytes, trailers) = collect(body, limit)
        .await
        .map_err(|e| TranslateError::BadUpstream(e.to_string()))?;
    let status = trailers
        .as_ref()
        .and_then(grpc_status)
        .or_else(|| grpc_status(&parts.headers))
        .ok_or_else(|| TranslateError::BadUpstream("gRPC answer without grpc-status".into()))?;
    if status.0 != code::OK {
        return Err(TranslateError::Upstream {
            code: status.0,
            http: http_for_grpc(status.0),
            message: status.1,
        });
    }
    let message = grpc_frame::unframe(&bytes).map_err(TranslateError::BadUpstream)?;
    let answer = match rest_to_grpc::response(ep, message, plan)? {
        InferAnswer::Whole(answer) => answer,
        InferAnswer::Streaming(body) => {
            // Long all-JSON answers go out as they are encoded, with no Content-Length
            // (answer_stream says why).
            let mut out = Response::new(body.map_err(BoxError::from).boxed_unsync());
            let headers = out.headers_mut();
            copy_headers(&parts.headers, headers);
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            return Ok(out);
        }
    };
    let mut out = Response::new(boxed(ChunksBody::default()));
    *out.status_mut() = answer.status;
    copy_headers(&parts.headers, out.headers_mut());
    *out.body_mut() = answer.into_body(out.headers_mut());
    Ok(out)
}
