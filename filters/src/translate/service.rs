//! The translation step as two halves (request, then response) and as a tower layer.
//!
//! The proxy calls the halves around its own forwarding (retries and timeouts sit between
//! them); any other tower stack can use [`OipTranslateLayer`].

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode, Version};
use http_body::Body;
use http_body_util::BodyExt;

use super::endpoint::{Endpoint, Rpc};
use super::error::{TranslateError, code, http_for_grpc};
use super::grpc_message::{percent_decode, percent_encode};
use super::grpc_to_rest::{self, GrpcPlan};
use super::pb::SERVICE_PATH;
use super::rest_to_grpc::{self, OutputPlan};
use super::{BoxError, ChunksBody, Direction, TranslateBody, TranslateSettings};

/// The binary extension's header: length of the JSON part of the body.
pub const INFERENCE_HEADER_CONTENT_LENGTH: HeaderName =
    HeaderName::from_static("inference-header-content-length");

/// Translates requests and responses for one route.
#[derive(Debug, Clone)]
pub struct Translator {
    settings: Arc<TranslateSettings>,
}

/// What the response half needs from the request half.
#[derive(Debug)]
pub struct Pending {
    kind: PendingKind,
    limit: u64,
}

#[derive(Debug)]
enum PendingKind {
    RestToGrpc { ep: Endpoint, plan: OutputPlan },
    GrpcToRest(GrpcPlan),
}

// === impl Translator ===

impl Translator {
    /// A translator with these settings.
    pub fn new(settings: TranslateSettings) -> Self {
        Translator {
            settings: Arc::new(settings),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &TranslateSettings {
        &self.settings
    }

    /// Translates a request. `Err` is the answer to send the caller instead (bad input: the
    /// upstream is not called).
    pub fn request<B>(
        &self,
        req: Request<B>,
    ) -> impl Future<Output = Result<(Request<TranslateBody>, Pending), Response<TranslateBody>>>
    + Send
    + 'static
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        // Boxed here, outside the future, so the future's type does not carry the body's
        // error conversion (which trips rustc's higher-ranked `Send` inference).
        let req = req.map(|b| b.map_err(Into::into).boxed_unsync());
        let settings = self.settings.clone();
        async move {
            let limit = settings.max_decoded_bytes.0;
            match settings.direction {
                Direction::RestToGrpc => rest_request(req, limit).await.map_err(|e| rest_error(&e)),
                Direction::GrpcToRest => grpc_request(req, limit, settings.upstream_binary)
                    .await
                    .map_err(|e| grpc_error(&e)),
            }
        }
    }
}

pub(crate) async fn collect(
    body: TranslateBody,
    limit: u64,
) -> Result<(Bytes, Option<HeaderMap>), TranslateError> {
    // A hand-rolled loop rather than `Limited`: its `Into<BoxError>` bound on an already boxed
    // error defeats `Send` inference for the callers' futures.
    let mut body = body;
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut len = 0u64;
    let mut trailers = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| match crate::body_limit::find(e.as_ref()) {
            // The listener's limit cut the body: too much, not malformed.
            Some(too_large) => TranslateError::TooLarge {
                what: "request body",
                limit: too_large.limit,
            },
            None => TranslateError::BadRequest(format!("reading the body: {e}")),
        })?;
        match frame.into_data() {
            Ok(data) => {
                len = len.saturating_add(data.len() as u64);
                if len > limit {
                    return Err(TranslateError::TooLarge {
                        what: "body",
                        limit,
                    });
                }
                chunks.push(data);
            }
            Err(frame) => {
                if let Ok(t) = frame.into_trailers() {
                    trailers = Some(t);
                }
            }
        }
    }
    // One chunk (the usual case for small bodies) is kept as is; several are joined once.
    let bytes = match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.pop().unwrap_or_default(),
        _ => {
            let mut all = BytesMut::with_capacity(usize::try_from(len).unwrap_or(0));
            chunks.iter().for_each(|c| all.extend_from_slice(c));
            all.freeze()
        }
    };
    Ok((bytes, trailers))
}

/// Headers that describe the old body or protocol and must not cross the translation.
fn copy_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        let n = name.as_str();
        let skip = matches!(
            n,
            "content-length"
                | "content-type"
                | "content-encoding"
                | "accept-encoding"
                | "transfer-encoding"
                | "te"
                | "trailer"
                | "connection"
                | "keep-alive"
                | "inference-header-content-length"
        ) || n.starts_with("grpc-");
        if !skip {
            to.append(name.clone(), value.clone());
        }
    }
}

fn boxed(body: ChunksBody) -> TranslateBody {
    body.map_err(|never| match never {}).boxed_unsync()
}

async fn rest_request(
    req: Request<TranslateBody>,
    limit: u64,
) -> Result<(Request<TranslateBody>, Pending), TranslateError> {
    let (parts, body) = req.into_parts();
    let ep = Endpoint::from_rest(&parts.method, parts.uri.path()).ok_or_else(|| {
        TranslateError::NoEndpoint(format!("{} {}", parts.method, parts.uri.path()))
    })?;
    let (bytes, _) = collect(body, limit).await?;
    let header_len = parts
        .headers
        .get(&INFERENCE_HEADER_CONTENT_LENGTH)
        .map(|v| v.to_str().unwrap_or("invalid"));
    let (chunks, plan) = rest_to_grpc::request(&ep, bytes, header_len, limit)?;
    let body = ChunksBody::new(chunks, None);
    let mut out = Request::new(boxed(body));
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

async fn grpc_request(
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
    let message = super::grpc_frame::unframe(&bytes).map_err(TranslateError::BadRequest)?;
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

// === impl Pending ===

impl Pending {
    /// Translates the upstream's response for the caller. Never fails: faults become an error
    /// answer in the caller's protocol.
    pub fn response<B>(
        self,
        resp: Response<B>,
    ) -> impl Future<Output = Response<TranslateBody>> + Send + 'static
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let resp = resp.map(|b| b.map_err(Into::into).boxed_unsync());
        async move {
            match self.kind {
                PendingKind::RestToGrpc { ep, plan } => rest_response(&ep, &plan, resp, self.limit)
                    .await
                    .unwrap_or_else(|e| rest_error(&e)),
                PendingKind::GrpcToRest(plan) => grpc_response(&plan, resp, self.limit)
                    .await
                    .unwrap_or_else(|e| grpc_error(&e)),
            }
        }
    }
}

fn grpc_status(headers: &HeaderMap) -> Option<(u32, String)> {
    let code = headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let message = headers
        .get("grpc-message")
        .map(|m| percent_decode(m.as_bytes()))
        .unwrap_or_default();
    Some((code, message))
}

async fn rest_response(
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
    let message = super::grpc_frame::unframe(&bytes).map_err(TranslateError::BadUpstream)?;
    let answer = rest_to_grpc::response(ep, message, plan)?;
    let mut chunks = VecDeque::with_capacity(1 + answer.sections.len());
    let json_len = answer.json.len();
    let binary = !answer.sections.is_empty();
    chunks.push_back(Bytes::from(answer.json));
    chunks.extend(answer.sections);
    let body = ChunksBody::new(chunks, None);
    let len = body.len();
    let mut out = Response::new(boxed(body));
    *out.status_mut() = answer.status;
    let headers = out.headers_mut();
    copy_headers(&parts.headers, headers);
    if binary {
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        headers.insert(INFERENCE_HEADER_CONTENT_LENGTH, HeaderValue::from(json_len));
    } else {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    Ok(out)
}

async fn grpc_response(
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

/// A REST error answer: the mapped status with `{"error": "<message>"}`.
pub fn rest_error(e: &TranslateError) -> Response<TranslateBody> {
    let body = serde_json::json!({ "error": e.to_string() }).to_string();
    let len = body.len();
    let mut resp = Response::new(boxed(ChunksBody::new(
        VecDeque::from([Bytes::from(body)]),
        None,
    )));
    *resp.status_mut() = e.http_status();
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp.headers_mut()
        .insert(CONTENT_LENGTH, HeaderValue::from(len));
    resp
}

/// A gRPC error answer: trailers-only, status and message in the headers.
pub fn grpc_error(e: &TranslateError) -> Response<TranslateBody> {
    let mut resp = Response::new(boxed(ChunksBody::default()));
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert("grpc-status", HeaderValue::from(e.grpc_code()));
    if let Ok(v) = HeaderValue::from_str(&percent_encode(&e.to_string())) {
        headers.insert("grpc-message", v);
    }
    resp
}
