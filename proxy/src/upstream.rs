//! Pooled upstream connections: keep-alive pools for HTTP/1.1 and multiplexed HTTP/2 (h2c)
//! connections, one pool per endpoint, owned by the cluster.

use crate::forward::trace::attempt_phase;
use std::net::SocketAddr;

use ferry_config::{Cluster as ClusterConfig, UpstreamProtocol};
use http::uri::{Authority, Scheme};
use http::{Request, Response, Uri, Version};
use hyper::body::Incoming;
use std::sync::Arc;

use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

mod connector;
mod h1;
mod h2;

pub use self::h1::H1Pool;
pub use self::h2::H2Slot;

/// In an answer's extensions when its attempt opened the connection: how long the dial (TCP
/// and any TLS handshake) took, which the balancer leaves out of the endpoint's latency.
#[derive(Debug, Clone, Copy)]
pub struct Dialed(pub std::time::Duration);
use crate::body::{BoxError, ProxyBody};
use crate::h2_settings::{H2_CONN_WINDOW, H2_MAX_FRAME, H2_STREAM_WINDOW};
use crate::tls::UpstreamIo;
use crate::tls::connect::{Alpn, Originator};

/// One endpoint's connections: its HTTP/1.1 keep-alive pool and its HTTP/2 connection.
#[derive(Debug)]
pub struct Conns {
    /// Socket address.
    pub addr: SocketAddr,
    /// The address as a URI authority, made once rather than per request.
    pub authority: Authority,
    /// HTTP/1.1 keep-alive connections.
    pub h1: H1Pool,
    /// The HTTP/2 connection.
    pub h2: H2Slot,
}

impl Conns {
    /// No connections yet to `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        // A SocketAddr always prints as a valid authority; the fallback is unreachable.
        let authority = Authority::try_from(addr.to_string().as_str())
            .unwrap_or_else(|_| Authority::from_static("invalid"));
        Conns {
            addr,
            authority,
            h1: H1Pool::default(),
            h2: H2Slot::default(),
        }
    }
}

/// How a cluster reaches its endpoints.
#[derive(Debug, Clone, Default)]
pub enum Transport {
    /// TCP connections (the only transport outside tests).
    #[default]
    Network,
    /// An in-memory service standing in for every endpoint (the proxy's own tests run the
    /// whole stack this way, without sockets).
    Memory(MemoryUpstream),
}

/// An in-memory upstream: given the endpoint chosen and the request, the response.
pub type MemoryUpstream = tower::util::BoxCloneSyncService<
    (SocketAddr, Request<ProxyBody>),
    Response<ProxyBody>,
    SendError,
>;

/// Which wire protocol one request rides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2 prior knowledge.
    H2,
}

/// Why a request could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The connection could not be made: the request never left, so it is safe to retry.
    #[error("connect to {addr} failed: {source}")]
    Connect {
        /// Endpoint.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: BoxError,
    },
    /// The request failed after it may have reached the upstream.
    #[error("request to {addr} failed: {source}")]
    Request {
        /// Endpoint.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: BoxError,
    },
    /// The URI could not be rebuilt for the endpoint.
    #[error("invalid upstream URI: {0}")]
    Uri(#[from] http::Error),
}

impl SendError {
    /// The connection to `addr` failed before the request left.
    pub fn connect(addr: SocketAddr, source: impl Into<BoxError>) -> Self {
        Self::Connect {
            addr,
            source: source.into(),
        }
    }

    /// The request to `addr` failed after it may have reached the upstream.
    pub fn request(addr: SocketAddr, source: impl Into<BoxError>) -> Self {
        Self::Request {
            addr,
            source: source.into(),
        }
    }
}

/// A cluster's connection pools.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    protocol: UpstreamProtocol,
    dial: Dial,
    idle_timeout: std::time::Duration,
    /// `None` when endpoints are long-lived (not per-request destinations): requests then
    /// ride the endpoint's own connections. Original-authority clusters, whose endpoints are
    /// made per request, use hyper-util's pooled clients instead.
    pooled: Option<Pooled>,
}

/// hyper-util's pooled clients, keyed by destination, for clusters whose endpoint is the
/// request's own authority.
#[derive(Debug, Clone)]
struct Pooled {
    http1: Client<connector::Connector, ProxyBody>,
    h2: Client<connector::Connector, ProxyBody>,
}

/// How a new connection to an endpoint is made: TCP within a timeout, then TLS if the cluster
/// originates it.
#[derive(Debug, Clone)]
pub struct Dial {
    /// TCP connect timeout; also bounds the TLS handshake.
    pub timeout: std::time::Duration,
    /// The cluster's TLS origination.
    pub tls: Option<Arc<Originator>>,
}

impl Dial {
    /// Plaintext within `timeout`.
    pub fn plain(timeout: std::time::Duration) -> Self {
        Dial { timeout, tls: None }
    }

    /// Connects to `addr` (`host`: the name addressed, for SNI), running the TLS handshake
    /// when the cluster has one. A failed handshake is a connect error: no request was sent.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        alpn: Alpn,
        host: Option<&str>,
    ) -> Result<UpstreamIo, SendError> {
        let start = std::time::Instant::now();
        let tcp = connect_tcp(addr, self.timeout).await;
        let connected = std::time::Instant::now();
        attempt_phase(
            "connect",
            start,
            connected,
            tcp.as_ref().err().map(ToString::to_string),
        );
        let tcp = tcp?;
        let Some(tls) = &self.tls else {
            return Ok(UpstreamIo::Plain(tcp));
        };
        let handshake = tokio::time::timeout(self.timeout, tls.connect(tcp, alpn, host));
        let result = match handshake.await {
            Ok(Ok(stream)) => Ok(UpstreamIo::Tls(Box::new(stream))),
            Ok(Err(e)) => Err(SendError::connect(addr, e)),
            Err(_) => Err(SendError::connect(
                addr,
                std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake timed out"),
            )),
        };
        attempt_phase(
            "tls.handshake",
            connected,
            std::time::Instant::now(),
            result.as_ref().err().map(ToString::to_string),
        );
        result
    }
}

// === impl UpstreamClient ===

impl UpstreamClient {
    /// Pools for one cluster, originating TLS with `tls` when given.
    pub fn new(config: &ClusterConfig, tls: Option<Arc<Originator>>) -> Self {
        let direct = !matches!(
            config.endpoints,
            ferry_config::Endpoints::OriginalAuthority { .. }
        );
        let dial = Dial {
            timeout: config.connect_timeout,
            tls,
        };
        Self {
            protocol: config.protocol,
            pooled: (!direct).then(|| Pooled::new(config, &dial)),
            dial,
            idle_timeout: config.idle_timeout,
        }
    }

    /// The wire protocol for a request: `auto` sends gRPC over HTTP/2 and the rest over
    /// HTTP/1.1, so an HTTP/2 caller can reach an HTTP/1.1-only model server.
    pub fn wire_for(&self, grpc: bool, upgrade: bool) -> Wire {
        match self.protocol {
            UpstreamProtocol::Http1 => Wire::Http1,
            UpstreamProtocol::H2 if !upgrade => Wire::H2,
            UpstreamProtocol::H2 => Wire::Http1,
            UpstreamProtocol::Auto if grpc => Wire::H2,
            UpstreamProtocol::Auto => Wire::Http1,
        }
    }

    /// Sends `req` to `endpoint`. HTTP/1.1 keeps the original `Host` header; HTTP/2 keeps the
    /// original authority in `:authority`.
    pub async fn send(
        &self,
        mut req: Request<ProxyBody>,
        endpoint: &Conns,
        wire: Wire,
    ) -> Result<Response<Incoming>, SendError> {
        let addr = endpoint.addr;
        let direct = self.pooled.is_none();
        if direct && wire == Wire::Http1 {
            *req.version_mut() = Version::HTTP_11;
            // A connection of our own writes the URI as given: origin-form, except CONNECT.
            if req.method() != http::Method::CONNECT && req.uri().scheme().is_some() {
                let path = req
                    .uri()
                    .path_and_query()
                    .cloned()
                    .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
                *req.uri_mut() = Uri::from(path);
            }
            return endpoint
                .h1
                .send(req, addr, &self.dial, self.idle_timeout)
                .await;
        }
        let authority = if direct && wire == Wire::H2 {
            original_authority(&req).unwrap_or_else(|| endpoint.authority.clone())
        } else {
            endpoint.authority.clone()
        };
        // Reuse the request's own path-and-query (no copy) under the chosen authority.
        let mut uri = std::mem::take(req.uri_mut()).into_parts();
        uri.scheme = Some(Scheme::HTTP);
        uri.authority = Some(authority);
        if uri.path_and_query.is_none() {
            uri.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
        }
        *req.uri_mut() = Uri::from_parts(uri).map_err(http::Error::from)?;
        match wire {
            Wire::Http1 => *req.version_mut() = Version::HTTP_11,
            Wire::H2 => {
                *req.version_mut() = Version::HTTP_2;
                // HTTP/2 carries the authority in :authority; a Host header would duplicate it.
                req.headers_mut().remove(http::header::HOST);
            }
        }
        let Some(pooled) = &self.pooled else {
            // A long-lived endpoint's HTTP/1.1 requests returned above; this is HTTP/2.
            return endpoint.h2.send(req, addr, &self.dial).await;
        };
        let client = match wire {
            Wire::Http1 => &pooled.http1,
            Wire::H2 => &pooled.h2,
        };
        client.request(req).await.map_err(|source| {
            if source.is_connect() {
                SendError::connect(addr, source)
            } else {
                SendError::request(addr, source)
            }
        })
    }
}

// === impl Pooled ===

impl Pooled {
    fn new(config: &ClusterConfig, dial: &Dial) -> Self {
        let connector = |alpn| connector::Connector::new(dial.clone(), alpn);
        let mut http1 = Client::builder(TokioExecutor::new());
        http1
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(config.idle_timeout)
            // Keep the original Host header: the upstream routes on it, not on our endpoint.
            .set_host(false);
        let mut h2 = Client::builder(TokioExecutor::new());
        h2.pool_timer(TokioTimer::new())
            .pool_idle_timeout(config.idle_timeout)
            .timer(TokioTimer::new())
            .http2_only(true)
            .http2_keep_alive_interval(Some(std::time::Duration::from_secs(30)))
            .http2_initial_stream_window_size(H2_STREAM_WINDOW)
            .http2_initial_connection_window_size(H2_CONN_WINDOW)
            .http2_max_frame_size(H2_MAX_FRAME);
        Self {
            http1: http1.build(connector(Alpn::Http1)),
            h2: h2.build(connector(Alpn::H2)),
        }
    }
}

/// The authority the caller addressed: the URI's (HTTP/2 callers) or the `Host` header's.
fn original_authority(req: &Request<ProxyBody>) -> Option<Authority> {
    if let Some(a) = req.uri().authority() {
        return Some(a.clone());
    }
    let host = req.headers().get(http::header::HOST)?;
    Authority::from_maybe_shared(bytes::Bytes::copy_from_slice(host.as_bytes())).ok()
}

/// A TCP connection to an upstream endpoint within `connect_timeout`, Nagle off (requests and
/// answers are written whole; waiting for ACKs only adds latency).
async fn connect_tcp(
    addr: SocketAddr,
    connect_timeout: std::time::Duration,
) -> Result<tokio::net::TcpStream, SendError> {
    let connect_err = |e: std::io::Error| SendError::connect(addr, e);
    let stream = tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(addr))
        .await
        .map_err(|_| {
            connect_err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "connect timed out",
            ))
        })?
        .map_err(connect_err)?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}
