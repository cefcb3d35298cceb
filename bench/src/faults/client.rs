//! The faults bench's client connections: HTTP/1.1 or HTTP/2, plaintext or mutual TLS, and one
//! request on them judged as the issue counts failures: anything but a 200 (and, for gRPC,
//! `grpc-status: 0`) or any transport error is a failure, with a short reason for the report.
//!
//! Unlike the saturation scenarios' client (`loadgen::Conn`), a failure here is data, not the
//! end of the run: the caller reconnects and goes on, and needs to know whether the connection
//! is still usable.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::ClientConfig;
use rustls::client::Resumption;
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::mtls::Certs;

/// The protocol a run speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Proto {
    /// HTTP/1.1 keep-alive `GET /`.
    Http1,
    /// HTTP/2 (prior knowledge, or ALPN `h2` over TLS) `GET /`.
    H2,
    /// gRPC-style unary echo over HTTP/2.
    Grpc,
}

/// How to reach the target.
#[derive(Clone)]
pub struct Dialer {
    addr: SocketAddr,
    proto: Proto,
    tls: Option<TlsConnector>,
}

/// An open connection.
#[derive(Debug)]
pub enum Sender {
    /// HTTP/1.1: one request at a time.
    Http1(http1::SendRequest<Full<Bytes>>),
    /// HTTP/2: shared by several workers.
    H2(http2::SendRequest<Full<Bytes>>),
}

/// A failed request: why, and whether its connection is still usable.
#[derive(Debug, Clone)]
pub struct Failed {
    /// Short reason, grouped in the report (`status 503`, `grpc-status 14`, `connect: …`).
    pub reason: String,
    /// The connection broke (reconnect before the next request).
    pub broken: bool,
}

// === impl Proto ===

impl Proto {
    /// Name in results.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Http1 => "h1",
            Proto::H2 => "h2",
            Proto::Grpc => "grpc",
        }
    }
}

// === impl Dialer ===

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer")
            .field("addr", &self.addr)
            .field("proto", &self.proto)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Dialer {
    /// Plaintext (h2c for HTTP/2).
    pub fn plain(addr: SocketAddr, proto: Proto) -> Self {
        Self {
            addr,
            proto,
            tls: None,
        }
    }

    /// Mutual TLS with the bench's outbound workload certificate, trusting `certs.ca`. Full
    /// handshakes only (no resumption), so every new connection sees the listener's current
    /// certificate.
    pub fn mtls(addr: SocketAddr, proto: Proto, certs: &Certs) -> crate::Result<Self> {
        let mut config: ClientConfig = crate::mtls::client_config(certs)?;
        config.resumption = Resumption::disabled();
        config.alpn_protocols = vec![match proto {
            Proto::Http1 => b"http/1.1".to_vec(),
            Proto::H2 | Proto::Grpc => b"h2".to_vec(),
        }];
        Ok(Self {
            addr,
            proto,
            tls: Some(TlsConnector::from(Arc::new(config))),
        })
    }

    /// Opens a connection; the returned bytes are the server's leaf certificate (TLS only), so
    /// a run can tell which certificate each new connection saw.
    pub async fn connect(&self) -> Result<(Sender, Option<Vec<u8>>), Failed> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .map_err(|e| broken(format!("connect: {}", e.kind())))?;
        let _ = tcp.set_nodelay(true);
        let Some(tls) = &self.tls else {
            return Ok((self.handshake(tcp).await?, None));
        };
        let name = ServerName::try_from("inbound.bench").map_err(|e| broken(e.to_string()))?;
        let stream = tls
            .connect(name, tcp)
            .await
            .map_err(|e| broken(format!("TLS handshake: {}", e.kind())))?;
        let leaf = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.as_ref().to_vec());
        Ok((self.handshake(stream).await?, leaf))
    }

    async fn handshake<I>(&self, io: I) -> Result<Sender, Failed>
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let io = TokioIo::new(io);
        match self.proto {
            Proto::Http1 => {
                let (sender, conn) = http1::handshake(io)
                    .await
                    .map_err(|e| broken(format!("h1 handshake: {e}")))?;
                tokio::spawn(conn);
                Ok(Sender::Http1(sender))
            }
            Proto::H2 | Proto::Grpc => {
                let (sender, conn) = http2::Builder::new(TokioExecutor::new())
                    .handshake(io)
                    .await
                    .map_err(|e| broken(format!("h2 handshake: {e}")))?;
                tokio::spawn(conn);
                Ok(Sender::H2(sender))
            }
        }
    }

    /// One request of this run's kind; `Ok` only for a whole 200 answer.
    pub async fn send(&self, sender: &mut Sender) -> Result<(), Failed> {
        let grpc = self.proto == Proto::Grpc;
        let authority = self.addr.to_string();
        let mut builder = Request::builder();
        builder = if grpc {
            builder
                .method(Method::POST)
                .uri(format!("http://{authority}{}", crate::upstream::GRPC_PATH))
                .header(header::CONTENT_TYPE, "application/grpc")
                .header(header::TE, "trailers")
        } else {
            match sender {
                Sender::Http1(_) => builder.uri("/").header(header::HOST, authority),
                Sender::H2(_) => builder.uri(format!("http://{authority}/")),
            }
        };
        let body = if grpc {
            // A small protobuf message (field 1 = "hello") in one length-prefixed frame.
            Bytes::from_static(b"\x00\x00\x00\x00\x07\x0a\x05hello")
        } else {
            Bytes::new()
        };
        let req = builder
            .body(Full::new(body))
            .map_err(|e| broken(format!("building the request: {e}")))?;
        let resp = match sender {
            Sender::Http1(s) => {
                s.ready()
                    .await
                    .map_err(|e| broken(format!("h1 not ready: {e}")))?;
                s.send_request(req).await
            }
            Sender::H2(s) => {
                s.ready()
                    .await
                    .map_err(|e| broken(format!("h2 not ready: {e}")))?;
                s.send_request(req).await
            }
        }
        .map_err(|e| self.transport(sender, &e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let collected = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| self.transport(sender, &e))?;
        if status != http::StatusCode::OK {
            return Err(Failed {
                reason: format!("status {}", status.as_u16()),
                broken: false,
            });
        }
        if grpc {
            // A trailers-only answer (how proxies answer a call they fail themselves) carries
            // the status in its headers.
            let code = collected
                .trailers()
                .and_then(|t| t.get("grpc-status"))
                .or_else(|| headers.get("grpc-status"))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none")
                .to_owned();
            if code != "0" {
                return Err(Failed {
                    reason: format!("grpc-status {code}"),
                    broken: false,
                });
            }
        }
        Ok(())
    }

    /// A transport error: an HTTP/1.1 connection is done after one; an HTTP/2 connection only
    /// when hyper says it closed (a reset stream leaves it usable).
    fn transport(&self, sender: &Sender, e: &hyper::Error) -> Failed {
        let broken = match sender {
            Sender::Http1(_) => true,
            Sender::H2(s) => s.is_closed(),
        };
        let mut reason = e.to_string();
        if let Some(source) = std::error::Error::source(e) {
            reason = format!("{reason}: {source}");
        }
        Failed { reason, broken }
    }
}

fn broken(reason: String) -> Failed {
    Failed {
        reason,
        broken: true,
    }
}
