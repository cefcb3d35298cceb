//! Clients the tests drive ferry with: an HTTP client over hyper-util's pooled keep-alive
//! client (HTTP/1.1 or h2c prior knowledge), a raw TCP helper for malformed requests, and a
//! tonic channel for gRPC.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::upstream::{BoxError, RespBody};

/// An HTTP client for one protocol.
#[derive(Clone, Debug)]
pub struct HttpClient {
    inner: Client<HttpConnector, RespBody>,
}

/// A whole response: status, headers and collected body.
#[derive(Clone, Debug)]
pub struct Reply {
    /// Status code.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    /// Collected body.
    pub body: Bytes,
}

/// A request body: empty, whole, or streamed from frames.
pub fn body_full(bytes: impl Into<Bytes>) -> RespBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A streamed request body from a stream of chunks.
pub fn body_stream<S>(chunks: S) -> RespBody
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    StreamBody::new(chunks.map(|c| Ok::<_, BoxError>(Frame::data(c)))).boxed_unsync()
}

// === impl HttpClient ===

impl HttpClient {
    /// HTTP/1.1 with keep-alive pooling.
    pub fn http1() -> HttpClient {
        Self::build(false)
    }

    /// HTTP/2 over cleartext with prior knowledge (h2c), multiplexed on one connection.
    pub fn h2c() -> HttpClient {
        Self::build(true)
    }

    fn build(h2: bool) -> HttpClient {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(5)));
        let inner = Client::builder(TokioExecutor::new())
            .http2_only(h2)
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        HttpClient { inner }
    }

    /// Sends a request and returns the response with a streaming body.
    pub async fn send(&self, req: Request<RespBody>) -> anyhow::Result<Response<Incoming>> {
        let what = format!("{} {}", req.method(), req.uri());
        self.inner
            .request(req)
            .await
            .with_context(|| format!("sending {what}"))
    }

    /// Sends a request and collects the whole response.
    pub async fn call(&self, req: Request<RespBody>) -> anyhow::Result<Reply> {
        let resp = self.send(req).await?;
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .context("reading response body")?
            .to_bytes();
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// `GET http://addr{path}`, returning as soon as the response headers arrive (the body
    /// streams).
    pub async fn get_stream(
        &self,
        addr: SocketAddr,
        path: &str,
    ) -> anyhow::Result<Response<Incoming>> {
        self.send(request(
            Method::GET,
            addr,
            path,
            &[],
            body_full(Bytes::new()),
        )?)
        .await
    }

    /// `GET http://addr{path}`.
    pub async fn get(&self, addr: SocketAddr, path: &str) -> anyhow::Result<Reply> {
        self.call(request(
            Method::GET,
            addr,
            path,
            &[],
            body_full(Bytes::new()),
        )?)
        .await
    }
}

/// Builds a request to `http://addr{path}` with extra headers.
pub fn request(
    method: Method,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: RespBody,
) -> anyhow::Result<Request<RespBody>> {
    let mut b = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    Ok(b.body(body)?)
}

// === impl Reply ===

impl Reply {
    /// The body parsed as JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> anyhow::Result<T> {
        serde_json::from_slice(&self.body).with_context(|| {
            format!(
                "status {}: body is not the expected JSON: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// A header as text, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as (lossy) text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Writes `raw` bytes on a fresh TCP connection and reads the answer until the peer closes or
/// `patience` passes. Returns (what was read, whether the peer closed the connection).
pub async fn raw_exchange(
    addr: SocketAddr,
    raw: &[u8],
    patience: Duration,
) -> anyhow::Result<(String, bool)> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(raw).await?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + patience;
    let closed = loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) => break true,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            // A reset after the answer is a close too.
            Ok(Err(_)) => break true,
            Err(_) => break false,
        }
    };
    Ok((String::from_utf8_lossy(&out).into_owned(), closed))
}

/// A tonic channel to `addr` (h2c), connected eagerly.
pub async fn grpc_channel(addr: SocketAddr) -> anyhow::Result<tonic::transport::Channel> {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .with_context(|| format!("connecting gRPC to {addr}"))
}
