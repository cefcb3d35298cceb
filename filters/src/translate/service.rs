//! The translation step as two halves, request then response: [`Translator`] and the
//! [`Pending`] it leaves for the answer. The proxy calls the halves around its own forwarding
//! (retries and timeouts sit between them); any other tower stack can use
//! [`OipTranslateLayer`](super::OipTranslateLayer).
//!
//! Each direction's HTTP-level work (method, path, version, headers, bodies collected under
//! the limit) has its own module, named for the caller it serves: `rest_caller` (REST → gRPC)
//! and `grpc_caller` (gRPC → REST). The message mapping under them is in `rest_to_grpc` and
//! `grpc_to_rest`.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body::Body;
use http_body_util::BodyExt;

use self::grpc_caller::{grpc_request, grpc_response};
use self::rest_caller::{rest_request, rest_response};
use super::binary_probe::{self, BinaryProbe, UpstreamBinary};
use super::endpoint::{Endpoint, Rpc};
use super::error::TranslateError;
use super::grpc_to_rest::GrpcPlan;
use super::pb::SERVICE_PATH;
use super::rest_to_grpc::OutputPlan;
use super::{BoxError, Direction, TranslateBody, TranslateSettings};
use crate::failure::render;

mod grpc_caller;
mod rest_caller;

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

    /// Whether [`Translator::try_request_probing`] may ever probe on this route (gRPC → REST
    /// with `upstream_binary: auto`); otherwise it is [`Translator::try_request`].
    pub fn may_probe(&self) -> bool {
        self.settings.direction == Direction::GrpcToRest
            && self.settings.upstream_binary == UpstreamBinary::Auto
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
        let wants_probe = self.may_probe()
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

/// A REST error answer: the mapped status with `{"error": "<message>"}`.
pub fn rest_error(e: &TranslateError) -> Response<TranslateBody> {
    render(e, false)
}

/// A gRPC error answer: trailers-only, status and message in the headers.
pub fn grpc_error(e: &TranslateError) -> Response<TranslateBody> {
    render(e, true)
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
