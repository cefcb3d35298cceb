//! Facts about the downstream connection a request arrived on, as the listener puts them in
//! the request's extensions (one `Arc<Connection>` per connection, shared by its requests).
//! Filters read them here instead of taking listener or socket types: authorization reads the
//! verified peer identity, forwarding headers the client address, logs the listener name.

use std::net::SocketAddr;
use std::sync::Arc;

/// The downstream connection of a request.
#[derive(Debug, Clone)]
pub struct Connection {
    /// Name of the listener that accepted it.
    pub listener: Arc<str>,
    /// The client's address.
    pub peer: SocketAddr,
    /// The client's address as forwarding headers write it, computed once per connection.
    pub client: ClientAddr,
    /// The protocol agreed by ALPN during a TLS handshake; `None` for plaintext.
    pub alpn: Option<Alpn>,
    /// The peer's verified identity (its SPIFFE ID) after a mutual-TLS handshake; `None` for
    /// plaintext or a peer that presented no certificate.
    pub identity: Option<PeerIdentity>,
    /// SHA-256 (lowercase hex) of the peer's DER leaf certificate, for the `Hash=` element of
    /// `x-forwarded-client-cert`; `None` without a verified certificate.
    pub peer_cert_sha256: Option<Arc<str>>,
}

/// The client's address as forwarding headers spell it (`x-forwarded-for`, RFC 7239
/// `forwarded`), computed once per connection rather than per request.
#[derive(Debug, Clone)]
pub struct ClientAddr {
    ip: Arc<str>,
    /// `ip` as a header value: requests without an `x-forwarded-for` take a reference-counted
    /// clone instead of a copy.
    ip_header: Option<http::HeaderValue>,
    forwarded_for: String,
}

impl ClientAddr {
    /// Precomputes the strings for `client`.
    pub fn new(client: SocketAddr) -> Self {
        let forwarded_for = match client {
            SocketAddr::V4(a) => format!("for={}", a.ip()),
            SocketAddr::V6(a) => format!("for=\"[{}]\"", a.ip()),
        };
        let ip = client.ip().to_string();
        Self {
            ip_header: http::HeaderValue::from_maybe_shared(bytes::Bytes::from(ip.clone())).ok(),
            ip: Arc::from(ip),
            forwarded_for,
        }
    }

    /// The IP address as text (`x-forwarded-for`).
    pub fn ip(&self) -> &str {
        &self.ip
    }

    /// The IP address as a header value (`x-forwarded-for`).
    pub fn ip_header(&self) -> Option<&http::HeaderValue> {
        self.ip_header.as_ref()
    }

    /// The IP address as a shared string (span attributes take it without a copy).
    pub fn ip_shared(&self) -> Arc<str> {
        self.ip.clone()
    }

    /// The `for=` parameter of a `forwarded` element.
    pub fn forwarded_for(&self) -> &str {
        &self.forwarded_for
    }
}

/// A protocol named by ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// `h2`.
    H2,
    /// `http/1.1`.
    Http1,
}

/// A verified peer identity: the SPIFFE ID (`spiffe://<trust-domain>/...`) in the URI SAN of
/// the certificate the peer proved it holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PeerIdentity(pub Arc<str>);

// === impl Connection ===

impl Connection {
    /// A plaintext connection accepted by `listener` from `peer`.
    pub fn plaintext(listener: Arc<str>, peer: SocketAddr) -> Self {
        Connection {
            listener,
            peer,
            client: ClientAddr::new(peer),
            alpn: None,
            identity: None,
            peer_cert_sha256: None,
        }
    }

    /// The connection facts of a request, if a listener put them there.
    pub fn of<B>(req: &http::Request<B>) -> Option<&Arc<Connection>> {
        req.extensions().get::<Arc<Connection>>()
    }
}
