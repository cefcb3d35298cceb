//! Pooled upstream connections: keep-alive pools for HTTP/1.1 and multiplexed HTTP/2 (h2c)
//! connections, one pool per endpoint, owned by the cluster.

use std::net::SocketAddr;

use ferry_config::{Cluster as ClusterConfig, UpstreamProtocol};
use http::uri::{Authority, Scheme};
use http::{Request, Response, Uri, Version};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::body::ProxyBody;

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
        source: hyper_util::client::legacy::Error,
    },
    /// The request failed after it may have reached the upstream.
    #[error("request to {addr} failed: {source}")]
    Request {
        /// Endpoint.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    /// The URI could not be rebuilt for the endpoint.
    #[error("invalid upstream URI: {0}")]
    Uri(#[from] http::Error),
}

/// A cluster's connection pools.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    protocol: UpstreamProtocol,
    http1: Client<HttpConnector, ProxyBody>,
    h2: Client<HttpConnector, ProxyBody>,
}

// === impl UpstreamClient ===

impl UpstreamClient {
    /// Pools for one cluster.
    pub fn new(config: &ClusterConfig) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(config.connect_timeout));
        connector.enforce_http(true);
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
            .http2_adaptive_window(true);
        Self {
            protocol: config.protocol,
            http1: http1.build(connector.clone()),
            h2: h2.build(connector),
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

    /// Sends `req` to `addr`. The request's URI is rewritten to address the endpoint; the
    /// `Host` header (HTTP/1.1) carries the original authority.
    pub async fn send(
        &self,
        mut req: Request<ProxyBody>,
        addr: SocketAddr,
        authority: Authority,
        wire: Wire,
    ) -> Result<Response<Incoming>, SendError> {
        // Reuse the request's own path-and-query (no copy) under the endpoint's authority.
        let mut uri = std::mem::take(req.uri_mut()).into_parts();
        uri.scheme = Some(Scheme::HTTP);
        uri.authority = Some(authority);
        if uri.path_and_query.is_none() {
            uri.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
        }
        *req.uri_mut() = Uri::from_parts(uri).map_err(http::Error::from)?;
        let client = match wire {
            Wire::Http1 => {
                *req.version_mut() = Version::HTTP_11;
                &self.http1
            }
            Wire::H2 => {
                *req.version_mut() = Version::HTTP_2;
                // HTTP/2 carries the authority in :authority; a Host header would duplicate it.
                req.headers_mut().remove(http::header::HOST);
                &self.h2
            }
        };
        client.request(req).await.map_err(|source| {
            if source.is_connect() {
                SendError::Connect { addr, source }
            } else {
                SendError::Request { addr, source }
            }
        })
    }
}
