//! One client connection of the load generator, HTTP/1.1 or h2c, and one request on it.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

use crate::error::{BenchError, IoContext, Result};

/// Wire protocol between the load generator and its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Proto {
    /// HTTP/1.1 with keep-alive, one request in flight per connection.
    Http1,
    /// HTTP/2 over cleartext with prior knowledge, many streams per connection.
    H2c,
}

/// What each request of a run looks like.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// Method.
    pub method: Method,
    /// Path and query.
    pub path: String,
    /// Body (shared, never copied per request).
    pub body: Bytes,
    /// Send as gRPC (content-type, `te: trailers`) and require `grpc-status: 0`.
    pub grpc: bool,
    /// Extra request headers.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl RequestSpec {
    /// A bodiless GET.
    pub fn get(path: &str) -> Self {
        Self {
            method: Method::GET,
            path: path.to_owned(),
            body: Bytes::new(),
            grpc: false,
            headers: Vec::new(),
        }
    }
}

/// A connected client. HTTP/2 connections may be shared to run streams side by side.
#[derive(Debug)]
pub enum Conn {
    /// HTTP/1.1.
    Http1(http1::SendRequest<Full<Bytes>>),
    /// h2c.
    H2(http2::SendRequest<Full<Bytes>>),
}

// === impl Conn ===

impl Conn {
    /// Connects to `addr` speaking `proto`; the connection task runs on the current runtime.
    pub async fn connect(addr: SocketAddr, proto: Proto) -> Result<Self> {
        let tcp = TcpStream::connect(addr)
            .await
            .ctx(|| format!("connecting to {addr}"))?;
        let _ = tcp.set_nodelay(true);
        let io = TokioIo::new(tcp);
        match proto {
            Proto::Http1 => {
                let (sender, conn) = http1::handshake(io).await.map_err(|e| {
                    BenchError::Http(format!("HTTP/1.1 handshake with {addr}: {e}"))
                })?;
                tokio::spawn(conn);
                Ok(Self::Http1(sender))
            }
            Proto::H2c => {
                // The settings a grpcio client sends (read off the wire, grpcio 1.76): the
                // load generator stands for model clients, so a proxy's listener sees the
                // frame sizes it would see in production.
                let frame = crate::upstream::GRPC_CORE_FRAME_AND_WINDOW;
                let (sender, conn) = http2::Builder::new(TokioExecutor::new())
                    .max_frame_size(frame)
                    .initial_stream_window_size(frame)
                    .initial_connection_window_size(frame)
                    .handshake(io)
                    .await
                    .map_err(|e| BenchError::Http(format!("h2c handshake with {addr}: {e}")))?;
                tokio::spawn(conn);
                Ok(Self::H2(sender))
            }
        }
    }

    /// Another handle on the same h2 connection; `None` for HTTP/1.1.
    pub fn share(&self) -> Option<Self> {
        match self {
            Self::H2(s) => Some(Self::H2(s.clone())),
            Self::Http1(_) => None,
        }
    }

    /// Sends one request and reads the whole response; returns the response body length.
    pub async fn send(&mut self, authority: &str, spec: &RequestSpec) -> Result<usize> {
        let body = self.send_streaming(authority, spec).await?;
        let collected = body
            .collect()
            .await
            .map_err(|e| BenchError::Http(format!("reading response body: {e}")))?;
        if spec.grpc {
            let ok = collected
                .trailers()
                .and_then(|t| t.get("grpc-status"))
                .is_some_and(|v| v == "0");
            if !ok {
                return Err(BenchError::Http("gRPC call without grpc-status 0".into()));
            }
        }
        Ok(collected.to_bytes().len())
    }

    /// Sends one request and returns the response body unread, after checking the status.
    pub async fn send_streaming(
        &mut self,
        authority: &str,
        spec: &RequestSpec,
    ) -> Result<hyper::body::Incoming> {
        let mut builder = Request::builder().method(spec.method.clone());
        builder = match self {
            Self::Http1(_) => builder
                .uri(spec.path.as_str())
                .header(header::HOST, authority),
            // h2 needs :scheme and :authority, so give an absolute URI.
            Self::H2(_) => builder.uri(format!("http://{authority}{}", spec.path)),
        };
        if spec.grpc {
            builder = builder
                .header(header::CONTENT_TYPE, "application/grpc")
                .header(header::TE, "trailers");
        }
        for (name, value) in &spec.headers {
            builder = builder.header(name, value);
        }
        let req = builder
            .body(Full::new(spec.body.clone()))
            .map_err(|e| BenchError::Http(format!("building request: {e}")))?;
        let resp = match self {
            Self::Http1(s) => {
                s.ready()
                    .await
                    .map_err(|e| BenchError::Http(format!("HTTP/1.1 connection: {e}")))?;
                s.send_request(req).await
            }
            Self::H2(s) => {
                s.ready()
                    .await
                    .map_err(|e| BenchError::Http(format!("h2 connection: {e}")))?;
                s.send_request(req).await
            }
        }
        .map_err(|e| BenchError::Http(format!("request: {e}")))?;
        if resp.status() != StatusCode::OK {
            return Err(BenchError::Http(format!("status {}", resp.status())));
        }
        Ok(resp.into_body())
    }
}
