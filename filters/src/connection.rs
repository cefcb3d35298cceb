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
    /// The protocol agreed by ALPN during a TLS handshake; `None` for plaintext.
    pub alpn: Option<Alpn>,
    /// The peer's verified identity (its SPIFFE ID) after a mutual-TLS handshake; `None` for
    /// plaintext or a peer that presented no certificate.
    pub identity: Option<PeerIdentity>,
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
            alpn: None,
            identity: None,
        }
    }

    /// The connection facts of a request, if a listener put them there.
    pub fn of<B>(req: &http::Request<B>) -> Option<&Arc<Connection>> {
        req.extensions().get::<Arc<Connection>>()
    }
}
