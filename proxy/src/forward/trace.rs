//! An attempt's CLIENT span, for requests whose hop is recorded: its id goes upstream as the
//! model server's parent; it starts when the attempt is sent and ends with the upstream's
//! body; connect and TLS handshake are its child spans, recorded by the dialer through a
//! task-local (the dial runs inside the attempt's future).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::Bytes;
use ferry_filters::trace_context::{HopTrace, Marks, SpanId, SpanRecord, grpc_status, new_span_id};
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use opentelemetry::trace::SpanKind;
use opentelemetry::{KeyValue, StringValue};

use super::client::DispatchFuture;
use crate::body::{BoxError, ProxyBody};
use crate::cluster::{Cluster, Endpoint};

tokio::task_local! {
    static ATTEMPT: (Arc<HopTrace>, SpanId);
}

/// An attempt being recorded.
#[derive(Debug)]
pub struct AttemptSpan {
    hop: Arc<HopTrace>,
    span: SpanId,
    start: Instant,
    name: StringValue,
    attributes: Vec<KeyValue>,
}

impl AttemptSpan {
    /// Opens the attempt's span when `req`'s hop is recorded, and writes its context into
    /// `req`'s headers (replacing the hop's own).
    pub fn open<B>(
        req: &mut Request<B>,
        endpoint: &Endpoint,
        cluster: &Cluster,
        attempt: u32,
    ) -> Option<AttemptSpan> {
        let hop = HopTrace::of(req)?.clone();
        // The access record's span_id: this hop's recorded server span.
        if let Some(outcome) = crate::request_meta::Outcome::of(req) {
            outcome.set_span(hop.span_id());
        }
        let span = new_span_id();
        hop.inject(req.headers_mut(), span);
        let ip = endpoint.ip_text.clone();
        // Sized for every attribute the span may get (no regrowth per request).
        let mut attributes = Vec::with_capacity(14);
        attributes.extend([
            KeyValue::new(
                "http.request.method",
                ferry_filters::trace_context::method_value(req.method()),
            ),
            KeyValue::new("server.address", ip.clone()),
            KeyValue::new("server.port", i64::from(endpoint.addr.port())),
            KeyValue::new("network.peer.address", ip),
            KeyValue::new("ferry.cluster", StringValue::from(cluster.name.clone())),
        ]);
        if attempt > 1 {
            attributes.push(KeyValue::new(
                "http.request.resend_count",
                i64::from(attempt - 1),
            ));
        }
        let grpc = req
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        let name = match req
            .uri()
            .path()
            .strip_prefix('/')
            .and_then(|p| p.split_once('/'))
        {
            Some((service, m)) if grpc => {
                attributes.push(KeyValue::new("rpc.system", "grpc"));
                attributes.push(KeyValue::new("rpc.service", service.to_owned()));
                attributes.push(KeyValue::new("rpc.method", m.to_owned()));
                StringValue::from(format!("{service}/{m}"))
            }
            _ => cluster.span_names().get(req.method()),
        };
        Some(AttemptSpan {
            hop,
            span,
            start: Instant::now(),
            name,
            attributes,
        })
    }

    /// `send` with the dialer able to record connect and handshake under this span.
    pub fn scope(&self, send: DispatchFuture) -> DispatchFuture {
        Box::pin(ATTEMPT.scope((self.hop.clone(), self.span), send))
    }

    /// Ends the span now (the attempt failed or timed out).
    pub fn fail(mut self, error: String) {
        self.attributes
            .push(KeyValue::new("error.type", error_type(&error)));
        self.record(Instant::now(), Some(error), Marks::default());
    }

    /// The answer, its body wrapped so the span ends with it.
    pub fn answered(mut self, resp: Response<ProxyBody>) -> Response<ProxyBody> {
        let status = resp.status().as_u16();
        self.attributes.push(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        let error = (status >= 400).then(|| format!("HTTP {status}"));
        if let Some(code) = grpc_status(resp.headers()) {
            self.attributes
                .push(KeyValue::new("rpc.grpc.status_code", i64::from(code)));
        }
        let headers_at = Instant::now();
        resp.map(|inner| {
            ClientBody {
                inner,
                open: Some(Open {
                    span: self,
                    headers_at,
                    error,
                }),
            }
            .boxed_unsync()
        })
    }

    fn record(self, end: Instant, error: Option<String>, marks: Marks) {
        self.hop.add_span(SpanRecord {
            span_id: self.span,
            parent: self.hop.span_id(),
            kind: SpanKind::Client,
            name: self.name,
            start: self.start,
            end,
            attributes: self.attributes,
            marks,
            events: Vec::new(),
            error,
        });
    }
}

fn error_type(error: &str) -> String {
    // A short, low-cardinality kind; the full message is the status description.
    if error.contains("timed out") || error.contains("timeout") {
        "timeout".into()
    } else if error.contains("connect") {
        "connect".into()
    } else {
        "send".into()
    }
}

/// Records a phase of the current attempt (connect, TLS handshake) under its span; nothing
/// when the attempt is not recorded.
pub fn attempt_phase(name: &'static str, start: Instant, end: Instant, error: Option<String>) {
    let _ = ATTEMPT.try_with(|(hop, parent)| {
        hop.add_span(SpanRecord {
            span_id: new_span_id(),
            parent: *parent,
            kind: SpanKind::Internal,
            name: StringValue::from(name),
            start,
            end,
            attributes: Vec::new(),
            marks: Marks::default(),
            events: Vec::new(),
            error,
        });
    });
}

#[derive(Debug)]
struct Open {
    span: AttemptSpan,
    headers_at: Instant,
    error: Option<String>,
}

impl Open {
    fn close(self, how: Option<String>) {
        let mut span = self.span;
        let error = self.error.or_else(|| how.clone());
        if let Some(how) = how {
            span.attributes
                .push(KeyValue::new("ferry.response.end", how));
        }
        let mut marks = Marks::default();
        marks.push("response.headers", self.headers_at);
        span.record(Instant::now(), error, marks);
    }
}

pin_project_lite::pin_project! {
    /// The upstream's body; the attempt's span ends with it.
    struct ClientBody {
        #[pin]
        inner: ProxyBody,
        open: Option<Open>,
    }

    impl PinnedDrop for ClientBody {
        fn drop(this: Pin<&mut Self>) {
            if let Some(open) = this.project().open.take() {
                open.close(Some("cancelled".into()));
            }
        }
    }
}

impl Body for ClientBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        match &frame {
            Some(Ok(f)) => {
                // hyper may stop polling once the body says it ended: close here then.
                if f.is_data() && this.inner.is_end_stream() {
                    if let Some(open) = this.open.take() {
                        open.close(None);
                    }
                } else if let (Some(trailers), Some(open)) = (f.trailers_ref(), this.open.as_mut())
                    && let Some(code) = grpc_status(trailers)
                {
                    open.span
                        .attributes
                        .push(KeyValue::new("rpc.grpc.status_code", i64::from(code)));
                    if code != 0 {
                        open.error = Some(format!("gRPC status {code}"));
                    }
                }
            }
            Some(Err(e)) => {
                let how = format!("error: {e}");
                if let Some(open) = this.open.take() {
                    open.close(Some(how));
                }
            }
            None => {
                if let Some(open) = this.open.take() {
                    open.close(None);
                }
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
