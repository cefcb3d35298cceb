//! Plain hyper clients for the demo: one HTTP/1.1 connection for REST and one h2c connection
//! for gRPC, each driven by a spawned task that ends when the client is dropped.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::grpc_frame;

/// Why a demo request could not be completed (as opposed to getting an error status).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// TCP connect failed.
    #[error("connecting to {addr} failed: {source}")]
    Connect {
        /// Target.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP exchange failed.
    #[error("HTTP exchange failed: {0}")]
    Http(#[from] hyper::Error),
    /// The request could not be built.
    #[error("invalid request: {0}")]
    Request(#[from] http::Error),
    /// A gRPC response body was not one well-formed message.
    #[error("bad gRPC response: {0}")]
    Frame(#[from] grpc_frame::FrameError),
    /// A gRPC response message did not decode.
    #[error("bad gRPC response message: {0}")]
    Decode(#[from] prost::DecodeError),
}

/// A REST response, read whole.
#[derive(Debug, Clone)]
pub struct RestReply {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers.
    pub headers: http::HeaderMap,
    /// Body.
    pub body: Bytes,
    /// From sending the request until the body was read.
    pub latency: Duration,
}

/// A gRPC response: status from trailers (or headers, for trailers-only), plus the message.
#[derive(Debug, Clone)]
pub struct GrpcReply<M> {
    /// HTTP status (200 for any gRPC answer).
    pub http_status: StatusCode,
    /// `grpc-status`; `None` when the peer sent none (not a gRPC answer).
    pub grpc_status: Option<i32>,
    /// Decoded `grpc-message`, empty when absent.
    pub grpc_message: String,
    /// The response message when the status is OK.
    pub message: Option<M>,
    /// From sending the request until trailers arrived.
    pub latency: Duration,
}

/// A REST client over one HTTP/1.1 connection.
#[derive(Debug)]
pub struct RestClient {
    sender: http1::SendRequest<Full<Bytes>>,
    authority: String,
}

/// A gRPC client over one h2c connection.
#[derive(Debug, Clone)]
pub struct GrpcClient {
    sender: http2::SendRequest<Full<Bytes>>,
    authority: String,
}

async fn connect(addr: SocketAddr) -> Result<TokioIo<TcpStream>, ClientError> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|source| ClientError::Connect { addr, source })?;
    // Small request/response pairs: don't let Nagle hold them back.
    stream
        .set_nodelay(true)
        .map_err(|source| ClientError::Connect { addr, source })?;
    Ok(TokioIo::new(stream))
}

// === impl RestClient ===

impl RestClient {
    /// Opens the connection.
    pub async fn connect(addr: SocketAddr) -> Result<Self, ClientError> {
        let (sender, conn) = http1::handshake(connect(addr).await?).await?;
        tokio::spawn(async move {
            if let Err(error) = conn.await {
                tracing::debug!(%error, "demo REST client connection ended");
            }
        });
        Ok(RestClient {
            sender,
            authority: addr.to_string(),
        })
    }

    /// Sends one request; a JSON body gets `content-type: application/json`.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        json_body: Option<Bytes>,
    ) -> Result<RestReply, ClientError> {
        self.send_full(method, path, &[], json_body).await
    }

    /// Sends one bodiless request with extra headers.
    pub async fn send_with(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<RestReply, ClientError> {
        self.send_full(method, path, headers, None).await
    }

    /// Sends one request with extra headers; a JSON body gets `content-type: application/json`.
    pub async fn send_full(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        json_body: Option<Bytes>,
    ) -> Result<RestReply, ClientError> {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, &self.authority);
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        if json_body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        let request = builder.body(Full::new(json_body.unwrap_or_default()))?;
        let started = Instant::now();
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await?.to_bytes();
        Ok(RestReply {
            status,
            headers,
            body,
            latency: started.elapsed(),
        })
    }
}

// === impl GrpcClient ===

impl GrpcClient {
    /// Opens the h2c connection (HTTP/2 with prior knowledge).
    pub async fn connect(addr: SocketAddr) -> Result<Self, ClientError> {
        let (sender, conn) = http2::handshake(TokioExecutor::new(), connect(addr).await?).await?;
        tokio::spawn(async move {
            if let Err(error) = conn.await {
                tracing::debug!(%error, "demo gRPC client connection ended");
            }
        });
        Ok(GrpcClient {
            sender,
            authority: addr.to_string(),
        })
    }

    /// Calls a unary rpc of `inference.GRPCInferenceService`.
    pub async fn call<Req, Resp>(
        &mut self,
        rpc: &str,
        request: &Req,
    ) -> Result<GrpcReply<Resp>, ClientError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        let reply = self.call_raw(rpc, grpc_frame::encode(request)).await?;
        let message = match reply.message {
            Some(body) if reply.grpc_status == Some(0) => {
                Some(Resp::decode(grpc_frame::decode_unary(body)?)?)
            }
            _ => None,
        };
        Ok(GrpcReply {
            http_status: reply.http_status,
            grpc_status: reply.grpc_status,
            grpc_message: reply.grpc_message,
            message,
            latency: reply.latency,
        })
    }

    /// Sends an already framed body (or a deliberately malformed one) and returns the
    /// response body undecoded.
    pub async fn call_raw(
        &mut self,
        rpc: &str,
        body: Bytes,
    ) -> Result<GrpcReply<Bytes>, ClientError> {
        let uri = format!(
            "http://{}{}{rpc}",
            self.authority,
            crate::inference::SERVICE_PATH
        );
        let request = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(header::CONTENT_TYPE, grpc_frame::CONTENT_TYPE)
            .header(header::TE, "trailers")
            .body(Full::new(body))?;
        let started = Instant::now();
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let (parts, body) = response.into_parts();
        let collected = body.collect().await?;
        let latency = started.elapsed();
        // Trailers-only responses put the status in the headers.
        let status_headers = match collected.trailers() {
            Some(trailers) if trailers.contains_key("grpc-status") => trailers.clone(),
            _ => parts.headers,
        };
        let (grpc_status, grpc_message) = status_of(&status_headers);
        Ok(GrpcReply {
            http_status: parts.status,
            grpc_status,
            grpc_message,
            message: Some(collected.to_bytes()),
            latency,
        })
    }
}

fn status_of(headers: &HeaderMap) -> (Option<i32>, String) {
    let status = headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(grpc_frame::decode_message)
        .unwrap_or_default();
    (status, message)
}
