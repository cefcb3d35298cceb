//! Mirrored traffic (`routes[].mirror`): a share of a route's requests, chosen by a hash of
//! their `x-request-id` (the same id is always or never mirrored), is copied to a candidate
//! cluster whose answer never reaches the caller, and may be compared with the primary's.
//!
//! Place in the stack: around the route's weighted split, after translation (the candidate
//! gets what the primary upstream gets), outside the route's timeout and retries (a mirror is
//! sent once, on the candidate's own balancer, pool and TLS).
//!
//! Never hurting the caller: the request body is teed as it streams ([`tee`]), with no copy
//! of the bytes and nothing kept beyond `max_body`; the mirror runs in a task of its own,
//! bounded by its `timeout` and `max_in_flight`; a candidate that is slow, failing or dead
//! only drops its mirrors. The primary's answer streams to the caller unchanged; a bounded
//! copy is kept only for mirrored requests that compare ([`answer_copy`]).
//!
//! The mirrored request carries `x-ferry-mirror: <route>` and its authority with `-shadow`
//! appended to the host (`models:8000` → `models-shadow:8000`, as Envoy does).
//! Counted in `ferry_mirror_total{listener, route, cluster, outcome}`; comparisons in
//! `ferry_mirror_compare_total`, `ferry_mirror_argmax_total`, `ferry_mirror_max_abs_diff`.

mod answer_copy;
mod dispatch;
mod down;
mod read;
mod tee;

use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::future::Either;
use http::header::HOST;
use http::uri::Authority;
use http::{HeaderName, HeaderValue, Request, Response};
use tokio::sync::Semaphore;

use crate::body::{BoxError, ProxyBody};
use crate::headers::{X_REQUEST_ID, is_upgrade};

pub use self::dispatch::{MirrorTarget, TargetParts};

/// The header that marks a mirrored request; its value is the route's name.
pub static X_FERRY_MIRROR: HeaderName = HeaderName::from_static("x-ferry-mirror");

/// Tower layer mirroring a route's requests to its candidates.
#[derive(Debug, Clone)]
pub struct MirrorLayer {
    targets: Arc<[Arc<MirrorTarget>]>,
}

/// The service made by [`MirrorLayer`].
#[derive(Debug, Clone)]
pub struct Mirror<S> {
    inner: S,
    targets: Arc<[Arc<MirrorTarget>]>,
}

// === impl MirrorLayer ===

impl MirrorLayer {
    /// Mirrors to `targets`; `None` when there are none (the route has no layer).
    pub fn new(targets: Vec<MirrorTarget>) -> Option<Self> {
        (!targets.is_empty()).then(|| MirrorLayer {
            targets: targets.into_iter().map(Arc::new).collect(),
        })
    }
}

impl<S> tower::Layer<S> for MirrorLayer {
    type Service = Mirror<S>;

    fn layer(&self, inner: S) -> Mirror<S> {
        Mirror {
            inner,
            targets: self.targets.clone(),
        }
    }
}

// === impl Mirror ===

impl<S> tower::Service<Request<ProxyBody>> for Mirror<S>
where
    S: tower::Service<Request<ProxyBody>, Response = Response<ProxyBody>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = Either<S::Future, Copying<S::Future>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ProxyBody>) -> Self::Future {
        let id = req
            .headers()
            .get(&X_REQUEST_ID)
            .map(|v| xxhash_rust::xxh3::xxh3_64(v.as_bytes()));
        let chosen = self.targets.iter().filter(|t| t.chooses(id)).count();
        if chosen == 0 || is_upgrade(req.headers()) {
            return Either::Left(self.inner.call(req));
        }
        let length = content_length(&req);
        let (parts, body) = req.into_parts();
        let mut sinks = Vec::with_capacity(chosen);
        let mut answers = Vec::new();
        for t in self.targets.iter().filter(|t| t.chooses(id)) {
            if let Some(started) = t.start(&parts, length) {
                sinks.push(started.sink);
                if let Some(rx) = started.answer {
                    answers.push((t.clone(), rx));
                }
            }
        }
        let req = Request::from_parts(parts, ProxyBody::new(tee::TeeBody::new(body, sinks)));
        let primary = self.inner.call(req);
        if answers.is_empty() {
            return Either::Left(primary);
        }
        Either::Right(Copying {
            primary,
            answers: Some(answers),
        })
    }
}

pin_project_lite::pin_project! {
    /// The primary's answer on its way, to be copied for the mirrors that compare.
    pub struct Copying<F> {
        #[pin]
        primary: F,
        answers: Option<Vec<(Arc<MirrorTarget>, tokio::sync::oneshot::Sender<ferry_filters::mirror_compare::Answer>)>>,
    }
}

impl<F> std::future::Future for Copying<F>
where
    F: std::future::Future<Output = Result<Response<ProxyBody>, BoxError>>,
{
    type Output = Result<Response<ProxyBody>, BoxError>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let resp = std::task::ready!(this.primary.poll(cx))?;
        Poll::Ready(Ok(match this.answers.take() {
            Some(answers) => dispatch::copy_answer(resp, answers),
            None => resp,
        }))
    }
}

/// The request's `Content-Length`, if it has one.
fn content_length<B>(req: &Request<B>) -> Option<u64> {
    req.headers()
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A copy of the request head for the candidate: no extensions (the primary's access record
/// and trace stay the primary's), marked with [`X_FERRY_MIRROR`] and a `-shadow` authority.
fn mirror_head(parts: &http::request::Parts, route: &HeaderValue) -> Request<()> {
    let mut req = Request::new(());
    *req.method_mut() = parts.method.clone();
    *req.version_mut() = parts.version;
    *req.headers_mut() = parts.headers.clone();
    let mut uri = parts.uri.clone().into_parts();
    if let Some(a) = uri.authority.as_ref().and_then(shadow) {
        uri.authority = Some(a);
    }
    *req.uri_mut() = http::Uri::from_parts(uri).unwrap_or_else(|_| parts.uri.clone());
    let host = req.headers().get(HOST).and_then(|h| h.to_str().ok());
    if let Some(a) = host
        .and_then(|h| Authority::try_from(h).ok())
        .and_then(|a| shadow(&a))
        .and_then(|a| HeaderValue::try_from(a.as_str()).ok())
    {
        req.headers_mut().insert(HOST, a);
    }
    req.headers_mut()
        .insert(X_FERRY_MIRROR.clone(), route.clone());
    req
}

/// `host[:port]` → `host-shadow[:port]` (IPv4 literals too, as Envoy); `None` for an IPv6
/// literal, which has no such form.
fn shadow(a: &Authority) -> Option<Authority> {
    let host = a.host();
    if host.starts_with('[') {
        return None;
    }
    let text = match a.port_u16() {
        Some(p) => format!("{host}-shadow:{p}"),
        None => format!("{host}-shadow"),
    };
    Authority::try_from(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadow_appends_to_the_host_before_the_port() {
        let s = |t: &str| shadow(&Authority::try_from(t).unwrap()).map(|a| a.to_string());
        assert_eq!(s("models:8000").as_deref(), Some("models-shadow:8000"));
        assert_eq!(s("models.svc").as_deref(), Some("models.svc-shadow"));
        assert_eq!(s("127.0.0.1:80").as_deref(), Some("127.0.0.1-shadow:80"));
        assert_eq!(s("[::1]:80"), None);
    }
}
