//! An OTLP/gRPC trace sink for the `tracing` scenario: both proxies export their spans here.
//!
//! It accepts `TraceService/Export` over h2c (what ferry's tonic exporter and Envoy's gRPC
//! client speak), decodes every request with the OpenTelemetry protobuf types (so a proxy that
//! sent something that is not OTLP fails the scenario instead of being counted), counts the
//! spans, SERVER and CLIENT apart, and drops them; the answer is an empty
//! `ExportTraceServiceResponse` with `grpc-status: 0`, so no exporter retries or backs off.
//! Any other request (`GET /spans`) answers the counts as JSON, for scripts.
//!
//! The driver runs it on a thread of its own ([`OtlpSink::start`]) inside the bench process, on
//! core 0 beside the load generator and upstream; `ferry-bench otlp-sink` runs it alone (for
//! `scripts/callgrind-per-request.sh`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_util::stream;
use http::{HeaderMap, HeaderValue, Request, Response, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::{BenchError, IoContext, Result};

/// Path of the OTLP trace export rpc.
pub const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// How often [`OtlpSink::settle`] looks at the counts.
const SETTLE_POLL: Duration = Duration::from_millis(50);

type Body = BoxBody<Bytes, Infallible>;

/// What the sink has received so far (live counters).
#[derive(Debug, Default)]
pub struct SpanCounts {
    exports: AtomicU64,
    spans: AtomicU64,
    server: AtomicU64,
    client: AtomicU64,
    malformed: AtomicU64,
}

/// A snapshot of [`SpanCounts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counted {
    /// Export calls answered OK.
    pub exports: u64,
    /// Spans in them.
    pub spans: u64,
    /// Of which `SPAN_KIND_SERVER`.
    pub server: u64,
    /// Of which `SPAN_KIND_CLIENT`.
    pub client: u64,
    /// Export calls that were not a well-formed, uncompressed OTLP request.
    pub malformed: u64,
}

/// The sink running on its own thread; stopped (and joined) when dropped.
#[derive(Debug)]
pub struct OtlpSink {
    /// Where it listens (h2c).
    pub addr: SocketAddr,
    counts: Arc<SpanCounts>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

// === impl SpanCounts ===

impl SpanCounts {
    /// The counts now.
    pub fn snapshot(&self) -> Counted {
        Counted {
            exports: self.exports.load(Ordering::Relaxed),
            spans: self.spans.load(Ordering::Relaxed),
            server: self.server.load(Ordering::Relaxed),
            client: self.client.load(Ordering::Relaxed),
            malformed: self.malformed.load(Ordering::Relaxed),
        }
    }

    fn count(&self, request: &ExportTraceServiceRequest) {
        let (mut spans, mut server, mut client) = (0, 0, 0);
        let all = request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans);
        for span in all {
            spans += 1;
            match SpanKind::try_from(span.kind) {
                Ok(SpanKind::Server) => server += 1,
                Ok(SpanKind::Client) => client += 1,
                _ => {}
            }
        }
        self.spans.fetch_add(spans, Ordering::Relaxed);
        self.server.fetch_add(server, Ordering::Relaxed);
        self.client.fetch_add(client, Ordering::Relaxed);
        self.exports.fetch_add(1, Ordering::Relaxed);
    }
}

// === impl Counted ===

impl Counted {
    /// What arrived between `earlier` and `self`.
    pub fn since(self, earlier: Counted) -> Counted {
        Counted {
            exports: self.exports.saturating_sub(earlier.exports),
            spans: self.spans.saturating_sub(earlier.spans),
            server: self.server.saturating_sub(earlier.server),
            client: self.client.saturating_sub(earlier.client),
            malformed: self.malformed.saturating_sub(earlier.malformed),
        }
    }
}

// === impl OtlpSink ===

impl OtlpSink {
    /// Binds a free loopback port and serves it from a new thread with a one-thread runtime
    /// (the thread inherits the bench process's pinning to core 0).
    pub fn start() -> Result<Self> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")
            .ctx(|| "binding the OTLP sink on 127.0.0.1:0".into())?;
        std_listener
            .set_nonblocking(true)
            .ctx(|| "making the OTLP sink's socket non-blocking".into())?;
        let addr = std_listener
            .local_addr()
            .ctx(|| "the OTLP sink's address".into())?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ctx(|| "starting the OTLP sink's runtime".into())?;
        let counts = Arc::new(SpanCounts::default());
        let (stop, stopped) = oneshot::channel();
        let served = counts.clone();
        let thread = std::thread::Builder::new()
            .name("otlp-sink".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(std_listener) else {
                        return;
                    };
                    tokio::select! {
                        () = serve(listener, served) => {}
                        _ = stopped => {}
                    }
                });
            })
            .ctx(|| "starting the OTLP sink's thread".into())?;
        Ok(Self {
            addr,
            counts,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The counts now.
    pub fn counts(&self) -> Counted {
        self.counts.snapshot()
    }

    /// Waits until no span has arrived for `quiet` (the exporters' batch delay has passed with
    /// nothing left to send), at most `patience`; returns the counts then.
    pub async fn settle(&self, quiet: Duration, patience: Duration) -> Counted {
        let started = Instant::now();
        let mut last = self.counts();
        let mut since = Instant::now();
        while started.elapsed() < patience && since.elapsed() < quiet {
            tokio::time::sleep(SETTLE_POLL).await;
            let now = self.counts();
            if now != last {
                last = now;
                since = Instant::now();
            }
        }
        last
    }
}

impl Drop for OtlpSink {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves connections from `listener`, counting into `counts`, until the task is dropped.
pub async fn serve(listener: TcpListener, counts: Arc<SpanCounts>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let counts = counts.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let counts = counts.clone();
                async move { Ok::<_, Infallible>(handle(req, &counts).await) }
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(req: Request<Incoming>, counts: &SpanCounts) -> Response<Body> {
    if req.uri().path() != EXPORT_PATH {
        let json = serde_json::to_string(&counts.snapshot()).unwrap_or_default();
        return Response::new(Full::new(Bytes::from(json)).boxed());
    }
    let decoded = match req.into_body().collect().await {
        Ok(body) => decode(body.to_bytes()),
        Err(e) => Err(format!("reading the export: {e}")),
    };
    match decoded {
        Ok(request) => {
            counts.count(&request);
            grpc_answer(Bytes::from_static(&[0, 0, 0, 0, 0]), "0", None)
        }
        Err(reason) => {
            counts.malformed.fetch_add(1, Ordering::Relaxed);
            // INVALID_ARGUMENT: the exporter logs it and drops the batch.
            grpc_answer(Bytes::new(), "3", Some(reason))
        }
    }
}

/// The one length-prefixed message of a unary export, decoded.
fn decode(mut framed: Bytes) -> std::result::Result<ExportTraceServiceRequest, String> {
    if framed.len() < 5 {
        return Err("short gRPC frame".into());
    }
    if framed.get_u8() != 0 {
        return Err("compressed export (the bench exporters send none)".into());
    }
    let len = framed.get_u32() as usize;
    if framed.len() != len {
        return Err(format!("frame says {len} bytes, body has {}", framed.len()));
    }
    ExportTraceServiceRequest::decode(framed).map_err(|e| format!("decoding: {e}"))
}

fn grpc_answer(message: Bytes, status: &'static str, reason: Option<String>) -> Response<Body> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static(status));
    if let Some(v) = reason.and_then(|r| HeaderValue::try_from(r).ok()) {
        trailers.insert("grpc-message", v);
    }
    let frames = stream::iter([
        Ok::<_, Infallible>(Frame::data(message)),
        Ok(Frame::trailers(trailers)),
    ]);
    let mut resp = Response::new(StreamBody::new(frames).boxed());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    resp
}

/// Fails when the sink received exports it could not read.
pub fn check_malformed(counted: Counted, target: &str) -> Result<()> {
    if counted.malformed == 0 {
        return Ok(());
    }
    Err(BenchError::Process(format!(
        "{target} sent {} OTLP exports the sink could not decode",
        counted.malformed
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    fn span(kind: SpanKind) -> Span {
        Span {
            kind: kind as i32,
            ..Span::default()
        }
    }

    fn framed(request: &ExportTraceServiceRequest) -> Bytes {
        let body = request.encode_to_vec();
        let mut out = vec![0];
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        Bytes::from(out)
    }

    #[test]
    fn counts_spans_by_kind_and_refuses_what_is_not_otlp() {
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![
                        span(SpanKind::Server),
                        span(SpanKind::Client),
                        span(SpanKind::Internal),
                    ],
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        };
        let counts = SpanCounts::default();
        counts.count(&decode(framed(&request)).unwrap());
        let c = counts.snapshot();
        assert_eq!((c.exports, c.spans, c.server, c.client), (1, 3, 1, 1));
        assert!(decode(Bytes::from_static(&[1, 0, 0, 0, 0])).is_err());
        assert!(decode(Bytes::from_static(&[0, 0, 0, 0, 9, 1])).is_err());
        assert!(decode(Bytes::from_static(&[0, 0, 0, 0, 2, 0xff, 0xff])).is_err());
        assert_eq!(c.since(c), Counted::default());
    }
}
