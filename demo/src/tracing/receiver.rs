//! A minimal OTLP/HTTP trace receiver, so the demo shows a trace without a collector: a hyper
//! server on a loopback port taking `POST /v1/traces` with an `application/x-protobuf`
//! `ExportTraceServiceRequest` (what ferry's `protocol: http` exporter sends) and answering 200
//! with an empty `ExportTraceServiceResponse`. Received spans are flattened with their
//! resource's `service.name` and kept in memory for the scene to wait on.
//!
//! Anything else is refused: another path → 404, another method → 405, another content type →
//! 415, a body over [`MAX_BODY_BYTES`] → 413, bytes that do not decode → 400.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{span, status};
use prost::Message as _;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};

/// Largest export accepted: far more than two sidecars send for one request.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Spans kept at most; later ones are dropped (the demo sends a handful).
const MAX_SPANS: usize = 10_000;
const PROTOBUF: &str = "application/x-protobuf";

/// One received span, with its resource's service name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    /// `service.name` of the resource that sent it.
    pub(crate) service: String,
    /// Lower-case hex ids; `parent_id` is empty for a root.
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) parent_id: String,
    pub(crate) name: String,
    pub(crate) kind: &'static str,
    /// Unix nanoseconds.
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    /// Attributes as `key`, displayed value.
    pub(crate) attributes: Vec<(String, String)>,
    /// The status message when the span failed.
    pub(crate) error: Option<String>,
}

/// The running receiver.
#[derive(Debug)]
pub(crate) struct Receiver {
    addr: SocketAddr,
    spans: watch::Receiver<Vec<Span>>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

// === impl Span ===

impl Span {
    /// How long it took.
    pub(crate) fn duration(&self) -> Duration {
        Duration::from_nanos(self.end_ns.saturating_sub(self.start_ns))
    }

    /// An attribute's displayed value.
    pub(crate) fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

// === impl Receiver ===

impl Receiver {
    /// Binds 127.0.0.1 on a port from the kernel and serves until [`Receiver::stop`].
    pub(crate) async fn start() -> std::io::Result<Receiver> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let (sink, spans) = watch::channel(Vec::new());
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(serve(listener, Arc::new(sink), stopped));
        Ok(Receiver {
            addr,
            spans,
            stop: Some(stop),
            task,
        })
    }

    /// The URL to export to (`tracing.otlp.endpoint` with `protocol: http`).
    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}/v1/traces", self.addr)
    }

    /// The spans received so far once `done` holds for them, or after `patience` whatever
    /// has arrived.
    pub(crate) async fn wait_for(
        &mut self,
        patience: Duration,
        done: impl FnMut(&Vec<Span>) -> bool,
    ) -> Vec<Span> {
        let _ = tokio::time::timeout(patience, self.spans.wait_for(done)).await;
        self.spans.borrow().clone()
    }

    /// Stops accepting and closes open connections.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    listener: TcpListener,
    sink: Arc<watch::Sender<Vec<Span>>>,
    mut stopped: oneshot::Receiver<()>,
) {
    let builder = auto::Builder::new(TokioExecutor::new());
    // Dropped with the loop: aborts the connection tasks, so nothing outlives the receiver.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors or similar: do not spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let sink = sink.clone();
                let conn = builder
                    .serve_connection(
                        TokioIo::new(stream),
                        service_fn(move |req| handle(req, sink.clone())),
                    )
                    .into_owned();
                connections.spawn(async move {
                    if let Err(error) = conn.await {
                        tracing::debug!(%error, "demo OTLP receiver connection ended");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(
    req: Request<Incoming>,
    sink: Arc<watch::Sender<Vec<Span>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() != "/v1/traces" {
        return Ok(status_only(StatusCode::NOT_FOUND));
    }
    if req.method() != Method::POST {
        return Ok(status_only(StatusCode::METHOD_NOT_ALLOWED));
    }
    let protobuf = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(PROTOBUF));
    if !protobuf {
        return Ok(status_only(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
    let body = match Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Ok(status_only(StatusCode::PAYLOAD_TOO_LARGE)),
    };
    let Ok(export) = ExportTraceServiceRequest::decode(body) else {
        return Ok(status_only(StatusCode::BAD_REQUEST));
    };
    let received = flatten(export);
    sink.send_modify(|spans| {
        let room = MAX_SPANS.saturating_sub(spans.len());
        spans.extend(received.into_iter().take(room));
    });
    let mut resp = Response::new(Full::new(Bytes::from(
        ExportTraceServiceResponse::default().encode_to_vec(),
    )));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(PROTOBUF),
    );
    Ok(resp)
}

fn status_only(status: StatusCode) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::new()));
    *resp.status_mut() = status;
    resp
}

/// The spans of an export, each with its resource's `service.name`.
pub(crate) fn flatten(export: ExportTraceServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for rs in export.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .map_or_else(|| "(unnamed)".to_owned(), |kv| display(kv.value.as_ref()));
        for s in rs.scope_spans.into_iter().flat_map(|ss| ss.spans) {
            let error = s
                .status
                .as_ref()
                .filter(|st| st.code == status::StatusCode::Error as i32)
                .map(|st| st.message.clone());
            out.push(Span {
                service: service.clone(),
                trace_id: hex(&s.trace_id),
                span_id: hex(&s.span_id),
                parent_id: hex(&s.parent_span_id),
                name: s.name,
                kind: kind(s.kind),
                start_ns: s.start_time_unix_nano,
                end_ns: s.end_time_unix_nano,
                attributes: s
                    .attributes
                    .iter()
                    .map(|kv| (kv.key.clone(), display(kv.value.as_ref())))
                    .collect(),
                error,
            });
        }
    }
    out
}

fn kind(k: i32) -> &'static str {
    match span::SpanKind::try_from(k) {
        Ok(span::SpanKind::Server) => "SERVER",
        Ok(span::SpanKind::Client) => "CLIENT",
        Ok(span::SpanKind::Internal) => "INTERNAL",
        Ok(span::SpanKind::Producer) => "PRODUCER",
        Ok(span::SpanKind::Consumer) => "CONSUMER",
        Ok(span::SpanKind::Unspecified) | Err(_) => "UNSPECIFIED",
    }
}

fn display(value: Option<&AnyValue>) -> String {
    use any_value::Value;
    match value.and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        Some(Value::BytesValue(b)) => hex(b),
        // An index into a profiles dictionary; traces never carry one.
        Some(Value::StringValueStrindex(i)) => format!("#{i}"),
        Some(Value::ArrayValue(a)) => {
            let items: Vec<String> = a.values.iter().map(|v| display(Some(v))).collect();
            format!("[{}]", items.join(","))
        }
        Some(Value::KvlistValue(l)) => {
            let items: Vec<String> = l
                .values
                .iter()
                .map(|kv| format!("{}={}", kv.key, display(kv.value.as_ref())))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests;
