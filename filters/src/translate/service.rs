//! The translation step as two halves (request, then response) and as a tower layer.
//!
//! The proxy calls the halves around its own forwarding (retries and timeouts sit between
//! them); any other tower stack can use [`OipTranslateLayer`].

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode, Version};
use http_body::Body;
use http_body_util::BodyExt;

use super::binary_probe::{self, BinaryProbe, UpstreamBinary};
use super::body::boxed;
use super::collect::collect;
use super::endpoint::{Endpoint, Rpc};
use super::error::{TranslateError, code, http_for_grpc};
use super::grpc_message::grpc_status;
use super::grpc_to_rest::{self, GrpcPlan};
use super::pb::SERVICE_PATH;
use super::rest_to_grpc::{self, InferAnswer, OutputPlan};
use super::section_stream;
use super::{
    BoxError, ChunksBody, Direction, INFERENCE_HEADER_CONTENT_LENGTH, TranslateBody,
    TranslateSettings,
};
use crate::failure::render;

/// Translates requests and responses for one route.
#[derive(Debug, Clone)]
pub struct Translator {
    settings: Arc<TranslateSettings>,
    probe: Arc<BinaryProbe>,
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
            probe: Arc::default(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &TranslateSettings {
        &self.settings
    }

    /// Translates a request. `Err` is the answer to send the caller instead (bad input: the
    /// upstream is not called), rendered for the protocol the direction's caller speaks; for
    /// stacks without an error renderer. [`Translator::try_request`] gives the typed error.
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
        let grpc = self.settings.direction == Direction::GrpcToRest;
        let translated = self.try_request(req);
        async move { translated.await.map_err(|e| render(&e, grpc)) }
    }

    /// Translates a request; `Err` is the caller's fault or the limit, the upstream is not
    /// called. With `upstream_binary: auto` and no probe result cached, raw tensors go as JSON
    /// `data`; [`Translator::try_request_probing`] learns the upstream's support.
    pub fn try_request<B>(
        &self,
        req: Request<B>,
    ) -> impl Future<Output = Result<(Request<TranslateBody>, Pending), TranslateError>> + Send + 'static
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let binary = match self.settings.upstream_binary {
            UpstreamBinary::On => true,
            UpstreamBinary::Off => false,
            UpstreamBinary::Auto => self.probe.cached(Instant::now()).unwrap_or(false),
        };
        self.translate(req, binary)
    }

    /// Like [`Translator::request`], but learning the upstream's binary support first (see
    /// [`Translator::try_request_probing`]).
    pub async fn request_probing<B, F, Fut, RB>(
        &self,
        req: Request<B>,
        probe_upstream: F,
    ) -> Result<(Request<TranslateBody>, Pending), Response<TranslateBody>>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
        F: FnOnce(Request<TranslateBody>) -> Fut,
        Fut: Future<Output = Result<Response<RB>, BoxError>>,
        RB: Body<Data = Bytes> + Send + 'static,
        RB::Error: Into<BoxError>,
    {
        let grpc = self.settings.direction == Direction::GrpcToRest;
        self.try_request_probing(req, probe_upstream)
            .await
            .map_err(|e| render(&e, grpc))
    }

    /// Like [`Translator::try_request`], but on a gRPC → REST route with `upstream_binary: auto`
    /// an infer call first learns whether the REST upstream supports the binary extension:
    /// `probe_upstream` is given `GET /v2` to send the way the route sends requests, at most
    /// once per [`PROBE_TTL`](super::binary_probe::PROBE_TTL) (sooner again after a failure,
    /// which means JSON meanwhile).
    pub async fn try_request_probing<B, F, Fut, RB>(
        &self,
        req: Request<B>,
        probe_upstream: F,
    ) -> Result<(Request<TranslateBody>, Pending), TranslateError>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
        F: FnOnce(Request<TranslateBody>) -> Fut,
        Fut: Future<Output = Result<Response<RB>, BoxError>>,
        RB: Body<Data = Bytes> + Send + 'static,
        RB::Error: Into<BoxError>,
    {
        let wants_probe = self.settings.direction == Direction::GrpcToRest
            && self.settings.upstream_binary == UpstreamBinary::Auto
            && req.uri().path().strip_prefix(SERVICE_PATH) == Some(Rpc::ModelInfer.method_name());
        if !wants_probe {
            return self.try_request(req).await;
        }
        let binary = match self.probe.cached(Instant::now()) {
            Some(b) => b,
            None => {
                let probe = binary_probe::request(req.uri(), req.headers());
                let probed = match probe_upstream(probe).await {
                    Ok(resp) => binary_probe::read(resp).await,
                    Err(e) => Err(e.to_string()),
                };
                let probed = probed
                    .inspect_err(|e| {
                        tracing::warn!(error = %e,
                            "binary extension probe failed; tensors go as JSON for now");
                    })
                    .ok();
                tracing::debug!(?probed, "probed the REST upstream for the binary extension");
                self.probe.store(probed, Instant::now())
            }
        };
        self.translate(req, binary).await
    }

    fn translate<B>(
        &self,
        req: Request<B>,
        upstream_binary: bool,
    ) -> impl Future<Output = Result<(Request<TranslateBody>, Pending), TranslateError>> + Send + 'static
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
                Direction::RestToGrpc => rest_request(req, limit).await,
                Direction::GrpcToRest => grpc_request(req, limit, upstream_binary).await,
            }
        }
    }
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

async fn rest_request(
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
    /// answer in the caller's protocol (for stacks without an error renderer).
    pub fn response<B>(
        self,
        resp: Response<B>,
    ) -> impl Future<Output = Response<TranslateBody>> + Send + 'static
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let grpc = matches!(self.kind, PendingKind::GrpcToRest(_));
        let translated = self.try_response(resp);
        async move { translated.await.unwrap_or_else(|e| render(&e, grpc)) }
    }

    /// Translates the upstream's response for the caller; `Err` when the upstream failed or
    /// its answer cannot be translated.
    pub fn try_response<B>(
        self,
        resp: Response<B>,
    ) -> impl Future<Output = Result<Response<TranslateBody>, TranslateError>> + Send + 'static
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let resp = resp.map(|b| b.map_err(Into::into).boxed_unsync());
        async move {
            match self.kind {
                PendingKind::RestToGrpc { ep, plan } => {
                    rest_response(&ep, &plan, resp, self.limit).await
                }
                PendingKind::GrpcToRest(plan) => grpc_response(&plan, resp, self.limit).await,
            }
        }
    }
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
    render(e, false)
}

/// A gRPC error answer: trailers-only, status and message in the headers.
pub fn grpc_error(e: &TranslateError) -> Response<TranslateBody> {
    render(e, true)
}
