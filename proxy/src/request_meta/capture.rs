//! What an access record needs from the request, taken as it arrives: copied ([`Seen`]) when a
//! sink will write a record, else held as handles ([`Glance`]) until the answer shows whether
//! `/recent` or a tap wants one.

use std::sync::Arc;

use http::Request;

use crate::access_log::RequestText;
use crate::headers::X_REQUEST_ID;

/// What the record needs from the request, copied before the request moves on (one
/// allocation: the texts share a buffer).
#[derive(Debug)]
pub(super) struct Seen {
    pub(super) protocol: http::Version,
    pub(super) method: http::Method,
    pub(super) request: RequestText,
    pub(super) grpc: bool,
    pub(super) peer_identity: Option<Arc<str>>,
}

/// What the record of a request would need, held as handles (reference counts on the
/// request's own buffers, no copy) until the answer shows whether a record is wanted: with no
/// access-log sink only `/recent` may want it.
#[derive(Debug)]
pub(super) struct Glance {
    protocol: http::Version,
    method: http::Method,
    uri: http::Uri,
    host: Option<http::HeaderValue>,
    request_id: Option<http::HeaderValue>,
    grpc: bool,
    peer_identity: Option<Arc<str>>,
}

/// The request as seen: copied (a sink will write a record) or glanced at.
#[derive(Debug)]
pub(super) enum Capture {
    Seen(Seen),
    Glance(Glance),
}

// === impl Seen ===

impl Seen {
    pub(super) fn of<B>(req: &Request<B>) -> Self {
        let headers = req.headers();
        let authority = match req.uri().authority() {
            Some(a) => Some(a.as_str()),
            None => headers
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok()),
        };
        let request_id = headers.get(&X_REQUEST_ID).and_then(|v| v.to_str().ok());
        Seen {
            protocol: req.version(),
            method: req.method().clone(),
            request: RequestText::new(req.uri().path(), authority, request_id),
            grpc: ferry_filters::failure::is_grpc(headers),
            peer_identity: ferry_filters::connection::Connection::of(req)
                .and_then(|c| c.identity.as_ref())
                .map(|i| i.0.clone()),
        }
    }
}

// === impl Glance ===

impl Glance {
    fn of<B>(req: &Request<B>) -> Self {
        let headers = req.headers();
        Glance {
            protocol: req.version(),
            method: req.method().clone(),
            uri: req.uri().clone(),
            host: headers.get(http::header::HOST).cloned(),
            request_id: headers.get(&X_REQUEST_ID).cloned(),
            grpc: ferry_filters::failure::is_grpc(headers),
            peer_identity: ferry_filters::connection::Connection::of(req)
                .and_then(|c| c.identity.as_ref())
                .map(|i| i.0.clone()),
        }
    }
}

// === impl Capture ===

impl Capture {
    /// Copies the request's texts when a sink will want them, else glances.
    pub(super) fn of<B>(req: &Request<B>, sink: bool) -> Self {
        if sink {
            Capture::Seen(Seen::of(req))
        } else {
            Capture::Glance(Glance::of(req))
        }
    }

    /// The request's `:authority` or `Host`, without copying it.
    pub(super) fn authority(&self) -> Option<&str> {
        match self {
            Capture::Seen(s) => s.request.authority(),
            Capture::Glance(g) => match g.uri.authority() {
                Some(a) => Some(a.as_str()),
                None => g.host.as_ref().and_then(|h| h.to_str().ok()),
            },
        }
    }

    /// Whether the request was a gRPC call.
    pub(super) fn grpc(&self) -> bool {
        match self {
            Capture::Seen(s) => s.grpc,
            Capture::Glance(g) => g.grpc,
        }
    }

    /// The texts, copied now if they were only glanced at.
    pub(super) fn seen(self) -> Seen {
        match self {
            Capture::Seen(s) => s,
            Capture::Glance(g) => {
                let authority = match g.uri.authority() {
                    Some(a) => Some(a.as_str()),
                    None => g.host.as_ref().and_then(|h| h.to_str().ok()),
                };
                let request_id = g.request_id.as_ref().and_then(|v| v.to_str().ok());
                Seen {
                    protocol: g.protocol,
                    method: g.method,
                    request: RequestText::new(g.uri.path(), authority, request_id),
                    grpc: g.grpc,
                    peer_identity: g.peer_identity,
                }
            }
        }
    }
}
