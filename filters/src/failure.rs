//! One error vocabulary for every layer, and the one renderer that turns an error into the
//! caller's answer.
//!
//! Layers fail with their own typed errors (`TranslateError`, `TranscodeError`,
//! [`BodyTooLarge`], [`PermissionDenied`], the proxy's failures) boxed as [`BoxError`]. Each implements [`Classify`]:
//! which side failed (client, proxy, upstream), the HTTP status and gRPC code the caller gets,
//! a short metric/log reason and whether a retry may help. [`RenderErrorsLayer`], at the top of
//! a stack, walks the error's `source()` chain to the first classified error and renders it
//! for the caller's protocol: HTTP status + `{"error": "..."}`, or a gRPC trailers-only answer
//! (HTTP 200, `grpc-status`, percent-encoded `grpc-message`). An error nobody classified is a
//! proxy bug: 500 / INTERNAL.

use std::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;

use crate::authorization::PermissionDenied;
use crate::body_limit::{BodyTooLarge, MalformedBody};
use crate::fault::FaultAborted;
use crate::limits::{Overloaded, RateLimited, StoreUnavailable};
use crate::transcode::TranscodeError;
use crate::translate::{BoxError, TranslateBody, TranslateError, code};

/// Which side of the hop a failure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The caller sent something wrong (4xx).
    Client,
    /// ferry itself could not do its job (500).
    Proxy,
    /// The upstream could not be reached or answered wrongly (502/503/504).
    Upstream,
}

/// An answer ferry made itself, tagged with the error's [`Classify::reason`] as a response
/// extension: the access log's `failure` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rendered(pub &'static str);

/// What every typed error on the data path says about itself.
pub trait Classify: Error + Send + Sync + 'static {
    /// Who failed.
    fn side(&self) -> Side;
    /// The status an HTTP caller gets.
    fn http_status(&self) -> StatusCode;
    /// The gRPC status code a gRPC caller gets.
    fn grpc_code(&self) -> u32;
    /// A short, fixed label for metrics and logs.
    fn reason(&self) -> &'static str;
    /// Whether another attempt (elsewhere, or later) may succeed.
    fn retryable(&self) -> bool {
        false
    }
    /// The JSON body an HTTP caller gets; `None` means `{"error": "<Display>"}`.
    fn json_body(&self) -> Option<String> {
        None
    }
    /// Whether the connection must close after this answer (nothing after it can be trusted).
    fn closes_connection(&self) -> bool {
        false
    }
    /// Headers the answer carries besides the error itself (e.g. `retry-after`), on HTTP and
    /// gRPC answers alike.
    fn extra_headers(&self, _headers: &mut HeaderMap) {}
}

/// Finds the [`Classify`] view of one error (not its sources), if its type is known.
pub type Classifier = for<'a> fn(&'a (dyn Error + 'static)) -> Option<&'a dyn Classify>;

/// The classifier for the filters crate's own error types.
pub fn classify_filters<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a dyn Classify> {
    if let Some(e) = e.downcast_ref::<TranslateError>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<TranscodeError>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<BodyTooLarge>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<MalformedBody>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<PermissionDenied>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<RateLimited>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<Overloaded>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<StoreUnavailable>() {
        return Some(e);
    }
    if let Some(e) = e.downcast_ref::<FaultAborted>() {
        return Some(e);
    }
    None
}

/// The first classified error in `e`'s `source()` chain, trying each classifier in turn.
pub fn find<'a>(
    e: &'a (dyn Error + 'static),
    classifiers: &[Classifier],
) -> Option<&'a dyn Classify> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(found) = classifiers.iter().find_map(|c| c(err)) {
            return Some(found);
        }
        current = err.source();
    }
    None
}

/// Whether a request is a gRPC call (its answer then is a gRPC status, whatever went wrong).
pub fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/grpc"))
}

/// The answer for a classified error: JSON for HTTP callers, trailers-only for gRPC callers.
pub fn render(e: &dyn Classify, grpc: bool) -> Response<TranslateBody> {
    let message = e.to_string();
    if grpc {
        let mut resp = grpc_status_answer(e.grpc_code(), &message);
        e.extra_headers(resp.headers_mut());
        resp.extensions_mut().insert(Rendered(e.reason()));
        return resp;
    }
    let body = e
        .json_body()
        .unwrap_or_else(|| serde_json::json!({ "error": message }).to_string());
    let mut resp = json_answer(e.http_status(), body.into_bytes());
    if e.closes_connection() {
        resp.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    e.extra_headers(resp.headers_mut());
    resp.extensions_mut().insert(Rendered(e.reason()));
    resp
}

/// The answer for any error: the first classified one in its chain, else 500 / INTERNAL.
pub fn render_error(
    e: &(dyn Error + 'static),
    classifiers: &[Classifier],
    grpc: bool,
) -> Response<TranslateBody> {
    match find(e, classifiers) {
        Some(found) => render(found, grpc),
        None => {
            tracing::warn!(error = %e, "unclassified error on the data path");
            render(&Unclassified(e.to_string()), grpc)
        }
    }
}

/// A whole JSON answer with its length.
pub fn json_answer(status: StatusCode, json: Vec<u8>) -> Response<TranslateBody> {
    let len = json.len();
    let mut resp = Response::new(full(Bytes::from(json)));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    resp
}

/// A gRPC trailers-only answer: HTTP 200, the status and message in the headers, no body.
pub fn grpc_status_answer(code: u32, message: &str) -> Response<TranslateBody> {
    let mut resp = Response::new(full(Bytes::new()));
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert("grpc-status", HeaderValue::from(code));
    if let Ok(v) = HeaderValue::from_str(&crate::translate::percent_encode(message)) {
        headers.insert("grpc-message", v);
    }
    resp
}

fn full(bytes: Bytes) -> TranslateBody {
    http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// An error no classifier knows: a proxy bug, answered 500 / INTERNAL.
#[derive(Debug, thiserror::Error)]
#[error("internal error: {0}")]
struct Unclassified(String);

impl Classify for Unclassified {
    fn side(&self) -> Side {
        Side::Proxy
    }
    fn http_status(&self) -> StatusCode {
        StatusCode::INTERNAL_SERVER_ERROR
    }
    fn grpc_code(&self) -> u32 {
        code::INTERNAL
    }
    fn reason(&self) -> &'static str {
        "internal"
    }
}

impl Classify for BodyTooLarge {
    fn side(&self) -> Side {
        Side::Client
    }
    fn http_status(&self) -> StatusCode {
        StatusCode::PAYLOAD_TOO_LARGE
    }
    fn grpc_code(&self) -> u32 {
        code::RESOURCE_EXHAUSTED
    }
    fn reason(&self) -> &'static str {
        "body_too_large"
    }
}

impl Classify for MalformedBody {
    fn side(&self) -> Side {
        Side::Client
    }
    fn http_status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
    fn grpc_code(&self) -> u32 {
        code::INVALID_ARGUMENT
    }
    fn reason(&self) -> &'static str {
        "malformed_body"
    }
    fn closes_connection(&self) -> bool {
        true
    }
}

// The answer says only "permission denied": which identity and which rule stay in the log.
impl Classify for PermissionDenied {
    fn side(&self) -> Side {
        Side::Client
    }
    fn http_status(&self) -> StatusCode {
        StatusCode::FORBIDDEN
    }
    fn grpc_code(&self) -> u32 {
        code::PERMISSION_DENIED
    }
    fn reason(&self) -> &'static str {
        "permission_denied"
    }
}

/// Tower layer rendering the inner service's errors as answers; its service never fails.
#[derive(Debug, Clone)]
pub struct RenderErrorsLayer {
    classifiers: &'static [Classifier],
}

/// The service made by [`RenderErrorsLayer`].
#[derive(Debug, Clone)]
pub struct RenderErrors<S> {
    inner: S,
    classifiers: &'static [Classifier],
}

// === impl RenderErrorsLayer ===

impl RenderErrorsLayer {
    /// A renderer knowing the filters' own errors.
    pub fn new() -> Self {
        Self::with_classifiers(&[classify_filters])
    }

    /// A renderer knowing the errors these classifiers recognise (tried in order at each
    /// level of the `source()` chain).
    pub fn with_classifiers(classifiers: &'static [Classifier]) -> Self {
        RenderErrorsLayer { classifiers }
    }
}

impl Default for RenderErrorsLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> tower::Layer<S> for RenderErrorsLayer {
    type Service = RenderErrors<S>;

    fn layer(&self, inner: S) -> RenderErrors<S> {
        RenderErrors {
            inner,
            classifiers: self.classifiers,
        }
    }
}

// === impl RenderErrors ===

// The inner service answers with the boxed body already, so passing an answer through costs
// no second box.
impl<S, B> tower::Service<Request<B>> for RenderErrors<S>
where
    S: tower::Service<Request<B>, Response = Response<TranslateBody>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = RenderFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        RenderFuture {
            grpc: is_grpc(req.headers()),
            classifiers: self.classifiers,
            inner: self.inner.call(req),
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`RenderErrors`]: the inner answer, or the rendered error. Written out
    /// rather than boxed: it runs for every request.
    #[derive(Debug)]
    pub struct RenderFuture<F> {
        #[pin]
        inner: F,
        grpc: bool,
        classifiers: &'static [Classifier],
    }
}

impl<F, E> Future for RenderFuture<F>
where
    F: Future<Output = Result<Response<TranslateBody>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<TranslateBody>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        Poll::Ready(Ok(match std::task::ready!(this.inner.poll(cx)) {
            Ok(resp) => resp,
            Err(e) => {
                let e: BoxError = e.into();
                render_error(e.as_ref(), this.classifiers, *this.grpc)
            }
        }))
    }
}

mod translators;

#[cfg(test)]
mod tests;
