//! The OTLP transport: one connection to the collector, owned by the export task, carrying
//! `TraceService/Export` over gRPC (HTTP/2) or a `POST` of `application/x-protobuf` (OTLP/HTTP
//! over HTTP/1.1). Any failure drops the connection; the next batch dials again, so a
//! collector that restarts is reached again without anyone noticing but the dropped batch.
//!
//! Hand-written over hyper's connection API rather than tonic or a pooled client: the task
//! sends one batch at a time, so one connection is all it needs, and the body is the buffer
//! [`super::encode::Batch`] wrote (see there for why the crate's exporter is not used).

use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST, TE};
use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;

use crate::tls::connect::Alpn;
use crate::tls::{Originator, UpstreamIo};

/// The gRPC method of the OTLP trace service.
const GRPC_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
/// Bytes of a collector's answer read at most (an `ExportTraceServiceResponse` is tiny).
const ANSWER_LIMIT: usize = 64 * 1024;

/// Why an export call failed (the batch is dropped and counted either way).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The endpoint is not a usable `http(s)://host:port` URL.
    #[error("endpoint {0:?}: {1}")]
    Endpoint(String, String),
    /// Connecting, the TLS handshake or the HTTP exchange failed.
    #[error("{0}")]
    Transport(String),
    /// The collector answered, refusing the batch.
    #[error("collector answered {0}")]
    Refused(String),
}

enum Sender {
    H2(http2::SendRequest<Full<Bytes>>),
    H1(http1::SendRequest<Full<Bytes>>),
}

/// The connection to one collector endpoint.
pub struct OtlpClient {
    grpc: bool,
    host: String,
    port: u16,
    /// `host[:port]` as the collector is addressed (`:authority` / `Host`).
    authority: HeaderValue,
    /// Request path: the gRPC method, or the OTLP/HTTP URL's path.
    path: Uri,
    headers: HeaderMap,
    tls: Option<Originator>,
    sender: Option<Sender>,
}

impl std::fmt::Debug for OtlpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpClient")
            .field("grpc", &self.grpc)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("path", &self.path)
            .field("connected", &self.sender.is_some())
            .finish()
    }
}

impl OtlpClient {
    /// A client of `endpoint` (`http://` or `https://`, verified against the system's CA
    /// certificates), speaking gRPC when `grpc`, else OTLP/HTTP to the URL's path.
    pub fn new(endpoint: &str, grpc: bool, headers: HeaderMap) -> Result<Self, ExportError> {
        let bad = |why: &str| ExportError::Endpoint(endpoint.to_owned(), why.to_owned());
        let uri: Uri = endpoint.parse().map_err(|_| bad("not a URL"))?;
        let tls = match uri.scheme_str() {
            Some("http") => None,
            Some("https") => Some(
                Originator::server(crate::tls::material::system_roots(), None)
                    .map_err(|e| bad(&e.to_string()))?,
            ),
            _ => return Err(bad("the scheme must be http or https")),
        };
        let host = uri.host().ok_or_else(|| bad("no host"))?;
        let port = uri
            .port_u16()
            .unwrap_or(if tls.is_some() { 443 } else { 80 });
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or(host);
        let authority = HeaderValue::try_from(authority).map_err(|_| bad("bad authority"))?;
        let path = if grpc {
            Uri::from_static(GRPC_PATH)
        } else {
            let p = uri.path_and_query().map_or("/", |p| p.as_str());
            p.parse().map_err(|_| bad("bad path"))?
        };
        Ok(OtlpClient {
            grpc,
            // IPv6 literals come bracketed in URLs; the socket API wants them bare.
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            authority,
            path,
            headers,
            tls,
            sender: None,
        })
    }

    /// Whether this client speaks gRPC (the body then carries the gRPC message prefix).
    pub fn is_grpc(&self) -> bool {
        self.grpc
    }

    /// Sends one encoded request (with the gRPC prefix when gRPC) and waits for the
    /// collector's verdict, all within `timeout`.
    pub async fn export(&mut self, body: Bytes, timeout: Duration) -> Result<(), ExportError> {
        let result = tokio::time::timeout(timeout, self.exchange(body))
            .await
            .unwrap_or_else(|_| {
                Err(ExportError::Transport(format!(
                    "no answer within {timeout:?}"
                )))
            });
        if matches!(result, Err(ExportError::Transport(_))) {
            // The connection's state is unknown after a failure: dial afresh next time.
            self.sender = None;
        }
        result
    }

    async fn exchange(&mut self, body: Bytes) -> Result<(), ExportError> {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(self.path.clone())
            .body(Full::new(body))
            .map_err(|e| ExportError::Transport(e.to_string()))?;
        let h = req.headers_mut();
        h.clone_from(&self.headers);
        if self.grpc {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
            h.insert(TE, HeaderValue::from_static("trailers"));
        } else {
            h.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/x-protobuf"),
            );
            h.insert(HOST, self.authority.clone());
        }
        if self.grpc {
            // HTTP/2 wants the absolute form: hyper takes :scheme and :authority from it.
            let scheme = if self.tls.is_some() { "https" } else { "http" };
            *req.uri_mut() = Uri::builder()
                .scheme(scheme)
                .authority(self.authority.as_bytes())
                .path_and_query(GRPC_PATH)
                .build()
                .map_err(|e| ExportError::Transport(e.to_string()))?;
        }
        let answer = match self.sender().await? {
            Sender::H2(s) => s.send_request(req).await,
            Sender::H1(s) => s.send_request(req).await,
        }
        .map_err(|e| ExportError::Transport(e.to_string()))?;
        let (parts, body) = answer.into_parts();
        // Read the answer to its end (a bounded few bytes) so the connection can be reused.
        let collected = Limited::new(body, ANSWER_LIMIT)
            .collect()
            .await
            .map_err(|e| ExportError::Transport(e.to_string()))?;
        if !parts.status.is_success() {
            return Err(ExportError::Refused(format!("HTTP {}", parts.status)));
        }
        if self.grpc {
            // Trailers-only answers carry the status in the headers.
            let status = parts
                .headers
                .get("grpc-status")
                .or_else(|| collected.trailers().and_then(|t| t.get("grpc-status")))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("missing");
            if status != "0" {
                let message = collected
                    .trailers()
                    .and_then(|t| t.get("grpc-message"))
                    .or_else(|| parts.headers.get("grpc-message"))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                return Err(ExportError::Refused(format!(
                    "grpc-status {status} {message}"
                )));
            }
        }
        Ok(())
    }

    /// The open connection, dialled when there is none (or the last one closed).
    async fn sender(&mut self) -> Result<&mut Sender, ExportError> {
        let closed = match &self.sender {
            Some(Sender::H2(s)) => s.is_closed(),
            Some(Sender::H1(s)) => s.is_closed(),
            None => true,
        };
        if closed {
            self.sender = Some(self.dial().await?);
        }
        match &mut self.sender {
            Some(s) => {
                if let Sender::H1(h1) = s {
                    h1.ready()
                        .await
                        .map_err(|e| ExportError::Transport(e.to_string()))?;
                }
                Ok(s)
            }
            None => Err(ExportError::Transport("no connection".into())),
        }
    }

    async fn dial(&self) -> Result<Sender, ExportError> {
        let fail = |e: std::io::Error| {
            ExportError::Transport(format!("connecting to {}:{}: {e}", self.host, self.port))
        };
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(fail)?;
        // Spans are small writes that should leave at once, as the data path's connections.
        let _ = tcp.set_nodelay(true);
        let alpn = if self.grpc { Alpn::H2 } else { Alpn::Http1 };
        let io = match &self.tls {
            None => UpstreamIo::Plain(tcp),
            Some(tls) => UpstreamIo::Tls(Box::new(
                tls.connect(tcp, alpn, Some(&self.host))
                    .await
                    .map_err(fail)?,
            )),
        };
        let transport = |e: hyper::Error| ExportError::Transport(e.to_string());
        if self.grpc {
            let (sender, conn) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake(TokioIo::new(io))
                .await
                .map_err(transport)?;
            tokio::spawn(async move {
                if let Err(error) = conn.await {
                    tracing::debug!(%error, "OTLP collector connection ended");
                }
            });
            Ok(Sender::H2(sender))
        } else {
            let (sender, conn) = http1::handshake(TokioIo::new(io))
                .await
                .map_err(transport)?;
            tokio::spawn(async move {
                if let Err(error) = conn.await {
                    tracing::debug!(%error, "OTLP collector connection ended");
                }
            });
            Ok(Sender::H1(sender))
        }
    }
}
