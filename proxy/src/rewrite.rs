//! The route's edits, first in its stack: the route's request header edits and prefix
//! rewrite, hop-by-hop headers removed, the client added to `x-forwarded-for` and
//! `forwarded`, `Host` kept; on the way back, hop-by-hop headers removed and the route's
//! response header edits. A `101 Switching Protocols` hands both connections to a byte pump.

mod tunnel;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use ferry_config::{HeaderEdits, PrefixRewrite};
use ferry_filters::connection::Connection;
use http::header::{HOST, HeaderName, HeaderValue};
use http::{HeaderMap, Request, Response, StatusCode};

use crate::body::{BoxError, ProxyBody};
use crate::headers;
use crate::tls::IdentityStore;

/// Envoy's header naming the verified client certificate (`By=…;Hash=…;URI=…`).
static XFCC: HeaderName = HeaderName::from_static("x-forwarded-client-cert");

/// A route's edits.
#[derive(Debug, Default)]
pub struct Edits {
    /// Request header edits.
    pub request: HeaderEdits,
    /// Response header edits.
    pub response: HeaderEdits,
    /// Path prefix rewrite.
    pub prefix: Option<PrefixRewrite>,
    /// Our identity, for `x-forwarded-client-cert` on mutual-TLS connections; `None` when the
    /// config has no `identity`.
    pub identity: Option<Arc<IdentityStore>>,
}

/// Tower layer applying a route's edits.
#[derive(Debug, Clone)]
pub struct RewriteLayer {
    edits: Arc<Edits>,
}

/// The service made by [`RewriteLayer`].
#[derive(Debug, Clone)]
pub struct Rewrite<S> {
    inner: S,
    edits: Arc<Edits>,
}

impl RewriteLayer {
    /// A layer applying `edits`.
    pub fn new(edits: Edits) -> Self {
        RewriteLayer {
            edits: Arc::new(edits),
        }
    }
}

impl<S> tower::Layer<S> for RewriteLayer {
    type Service = Rewrite<S>;

    fn layer(&self, inner: S) -> Rewrite<S> {
        Rewrite {
            inner,
            edits: self.edits.clone(),
        }
    }
}

// === impl Rewrite ===

impl<S> tower::Service<Request<ProxyBody>> for Rewrite<S>
where
    S: tower::Service<Request<ProxyBody>, Response = Response<ProxyBody>, Error = BoxError>,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ProxyBody>) -> Self::Future {
        let upgrade = headers::is_upgrade(req.headers());
        let on_upgrade = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>();
        edit_request(&mut req, &self.edits, upgrade);
        ResponseFuture {
            inner: self.inner.call(req),
            edits: self.edits.clone(),
            on_upgrade,
        }
    }
}

pin_project_lite::pin_project! {
    /// The upstream's answer with the route's response edits. Written out rather than boxed:
    /// it runs for every request.
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        edits: Arc<Edits>,
        on_upgrade: Option<hyper::upgrade::OnUpgrade>,
    }
}

impl<F> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<ProxyBody>, BoxError>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let mut resp = ready!(this.inner.poll(cx))?;
        let switching = resp.status() == StatusCode::SWITCHING_PROTOCOLS;
        headers::strip_hop_by_hop(resp.headers_mut(), switching);
        edit_headers(resp.headers_mut(), &this.edits.response);
        if switching {
            tunnel::spawn(this.on_upgrade.take(), &mut resp);
        }
        Poll::Ready(Ok(resp))
    }
}

fn edit_request(req: &mut Request<ProxyBody>, edits: &Edits, upgrade: bool) {
    // The authority as the caller sent it, kept across the edits: reference-counted clones of
    // the URI's authority and the Host value, not a copy of the text.
    let uri_authority = req.uri().authority().cloned();
    let host = req.headers().get(HOST).cloned();
    let authority = uri_authority
        .as_ref()
        .map(|a| a.as_str())
        .or_else(|| host.as_ref().and_then(|h| h.to_str().ok()));
    // Only ferry writes this header: whatever a client sent is dropped on every listener, TLS
    // or not, before anything else could read it.
    req.headers_mut().remove(&XFCC);
    edit_headers(req.headers_mut(), &edits.request);
    if let Some(rewrite) = &edits.prefix {
        rewrite_prefix(req, &rewrite.from, &rewrite.to);
    }
    headers::strip_hop_by_hop(req.headers_mut(), upgrade);
    if let Some(conn) = Connection::of(req).cloned() {
        let proto = if conn.peer_cert_sha256.is_some() {
            "https"
        } else {
            "http"
        };
        headers::append_forwarded(req.headers_mut(), &conn.client, proto, authority);
        if let Some(value) = client_cert_header(&conn, edits.identity.as_deref()) {
            req.headers_mut().insert(XFCC.clone(), value);
        }
    }
    if !req.headers().contains_key(HOST)
        && let Some(a) = authority.and_then(|a| HeaderValue::from_str(a).ok())
    {
        req.headers_mut().insert(HOST, a);
    }
}

/// `x-forwarded-client-cert` for a verified peer, in Envoy's format: `By=` our SPIFFE ID,
/// `Hash=` the hex SHA-256 of the peer's DER certificate, `URI=` its SPIFFE ID.
fn client_cert_header(conn: &Connection, identity: Option<&IdentityStore>) -> Option<HeaderValue> {
    let peer = conn.identity.as_ref()?;
    let hash = conn.peer_cert_sha256.as_deref()?;
    let own = identity.and_then(IdentityStore::current);
    let value = match own {
        Some(own) => format!("By={};Hash={hash};URI={}", own.id, peer.0),
        None => format!("Hash={hash};URI={}", peer.0),
    };
    // SPIFFE IDs and hex are visible ASCII; a value that is not is simply not sent.
    HeaderValue::from_str(&value).ok()
}

/// Applies header edits: removals, then sets, then additions.
pub fn edit_headers(headers: &mut HeaderMap, edits: &HeaderEdits) {
    for name in &edits.remove {
        headers.remove(name.as_str());
    }
    for (name, value) in &edits.set {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(n, v);
        }
    }
    for (name, value) in &edits.add {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(n, v);
        }
    }
}

fn rewrite_prefix<B>(req: &mut Request<B>, from: &str, to: &str) {
    let Some(pq) = req.uri().path_and_query() else {
        return;
    };
    let Some(rest) = pq.path().strip_prefix(from) else {
        return;
    };
    let mut new = String::with_capacity(pq.as_str().len() + to.len());
    new.push_str(to);
    new.push_str(rest);
    if let Some(q) = pq.query() {
        new.push('?');
        new.push_str(q);
    }
    let mut uri = std::mem::take(req.uri_mut()).into_parts();
    uri.path_and_query = new.parse().ok().or(uri.path_and_query);
    *req.uri_mut() = http::Uri::from_parts(uri).unwrap_or_default();
}
