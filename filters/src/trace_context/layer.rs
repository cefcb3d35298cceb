//! The trace-context layer: reads the caller's context, decides sampling, and for a request it
//! records, opens the hop ([`HopTrace`]) the inner layers add to and ends it with the answer.
//!
//! An unsampled request that no tail rule can keep costs the header parse and, when no
//! context arrived, the new context written upstream (so the model server follows this hop's
//! decision instead of sampling on its own); it allocates nothing else and its future is the
//! inner one. A caller's context on an unsampled request is passed on untouched.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use http::{Extensions, HeaderMap, Request, Response};
use http_body_util::BodyExt;
use opentelemetry::KeyValue;

use super::body::{StreamKind, TracedBody};
use super::hop::{
    HopStart, HopTrace, SpanSink, TailRules, new_span_id, new_trace_id, ratio_sampled,
};
use super::{FixedAttributes, Propagation, SpanNames, TraceId, extract, inject};
use crate::connection::Connection;
use crate::failure::{self, Classifier};
use crate::model_name::{self, ModelRef};
use crate::translate::{BoxError, TranslateBody};

/// Told each request's trace id and sampling decision before the request goes on; returns
/// when the request was received, if the caller knows better than this layer (the SERVER
/// span starts there).
pub type OnTrace = Arc<dyn Fn(&Extensions, TraceId, bool) -> Option<Instant> + Send + Sync>;

/// The layer's settings.
#[derive(Clone)]
pub struct TraceSettings {
    /// Formats read (the first valid one wins) and written (all of them).
    pub propagation: Arc<[Propagation]>,
    /// Head sampling ratio for requests without a caller's decision.
    pub ratio: f64,
    /// When an unsampled hop is kept anyway.
    pub tail: TailRules,
    /// Where kept hops go.
    pub sink: Arc<dyn SpanSink>,
    /// Attributes every SERVER span of this stack carries (route, listener, cluster names).
    pub attributes: Arc<FixedAttributes>,
    /// The SERVER span's names (`"{METHOD} {route}"`), made once; without them a span is
    /// named by its method alone.
    pub names: Option<SpanNames>,
    /// Called with every request's trace id (sampled or not).
    pub on_trace: Option<OnTrace>,
    /// How the stack's errors become answers (the renderer's classifiers), so a hop that
    /// ends in an error records the status the caller gets, not just "failed".
    pub classifiers: &'static [Classifier],
    /// Whether each upstream attempt writes its own context (its CLIENT span as the
    /// upstream's parent, as ferry's endpoint client does): then a recorded hop does not
    /// write the context the attempt would overwrite at once.
    pub attempts_inject: bool,
}

impl std::fmt::Debug for TraceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceSettings")
            .field("propagation", &self.propagation)
            .field("ratio", &self.ratio)
            .field("tail", &self.tail)
            .field("attributes", &self.attributes)
            .finish_non_exhaustive()
    }
}

/// Layer for [`TraceService`].
#[derive(Debug, Clone)]
pub struct TraceLayer {
    settings: Arc<TraceSettings>,
}

impl TraceLayer {
    /// A layer with `settings`.
    pub fn new(settings: TraceSettings) -> Self {
        TraceLayer {
            settings: Arc::new(settings),
        }
    }
}

impl<S> tower::Layer<S> for TraceLayer {
    type Service = TraceService<S>;

    fn layer(&self, inner: S) -> TraceService<S> {
        TraceService {
            inner,
            settings: self.settings.clone(),
        }
    }
}

/// Records a request's hop (see the module docs).
#[derive(Debug, Clone)]
pub struct TraceService<S> {
    inner: S,
    settings: Arc<TraceSettings>,
}

impl<S> tower::Service<Request<TranslateBody>> for TraceService<S>
where
    S: tower::Service<Request<TranslateBody>, Response = Response<TranslateBody>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<TranslateBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: Request<TranslateBody>) -> Self::Future {
        let s = &*self.settings;
        let incoming = extract(req.headers(), &s.propagation);
        let trace_id = incoming.as_ref().map_or_else(new_trace_id, |c| c.trace_id);
        let sampled = incoming
            .as_ref()
            .and_then(|c| c.sampled)
            .unwrap_or_else(|| ratio_sampled(trace_id, s.ratio));
        let received = s
            .on_trace
            .as_ref()
            .and_then(|f| f(req.extensions(), trace_id, sampled));
        if !sampled && !s.tail.any() {
            if incoming.is_none() {
                inject(
                    req.headers_mut(),
                    &s.propagation,
                    trace_id,
                    new_span_id(),
                    false,
                    None,
                );
            }
            return ResponseFuture {
                inner: self.inner.call(req),
                hop: None,
                grpc: false,
                classifiers: s.classifiers,
            };
        }
        let (parent, tracestate) = match incoming {
            Some(c) => (Some(c.span_id), c.tracestate),
            None => (None, None),
        };
        let hop = Arc::new(
            HopTrace::new(
                HopStart {
                    trace_id,
                    parent,
                    sampled,
                    tracestate,
                    start: received.unwrap_or_else(Instant::now),
                },
                Cow::Borrowed("ferry"),
                s.propagation.clone(),
                s.tail,
                s.sink.clone(),
            )
            .with_fixed(s.attributes.clone()),
        );
        let grpc = crate::failure::is_grpc(req.headers());
        describe(&hop, &req, s, grpc);
        if !s.attempts_inject {
            hop.inject(req.headers_mut(), hop.span_id());
        }
        req.extensions_mut().insert(hop.clone());
        ResponseFuture {
            inner: self.inner.call(req),
            hop: Some(hop),
            grpc,
            classifiers: s.classifiers,
        }
    }
}

/// The SERVER span's name and request attributes (OpenTelemetry HTTP and RPC conventions,
/// plus ferry's own).
fn describe<B>(hop: &HopTrace, req: &Request<B>, s: &TraceSettings, grpc: bool) {
    let path = req.uri().path();
    // The route's own attributes are shared by the hop (`FixedAttributes`), not copied.
    let mut kvs = Vec::with_capacity(10);
    kvs.push(KeyValue::new(
        "http.request.method",
        super::method_value(req.method()),
    ));
    kvs.push(KeyValue::new("url.path", path.to_owned()));
    if let Some(host) = authority(req) {
        kvs.push(KeyValue::new("server.address", host));
    }
    if let Some(c) = Connection::of(req) {
        // The connection's text of the address, shared rather than rendered per request.
        kvs.push(KeyValue::new(
            "network.peer.address",
            opentelemetry::StringValue::from(c.client.ip_shared()),
        ));
        if let Some(id) = &c.identity {
            kvs.push(KeyValue::new(
                "ferry.peer.identity",
                opentelemetry::StringValue::from(id.0.clone()),
            ));
        }
    }
    // `grpc` was read from the content type once, by the caller.
    let rpc = grpc.then(|| rpc_method(path)).flatten();
    let name: opentelemetry::StringValue = match rpc {
        Some((service, m)) => {
            kvs.push(KeyValue::new("rpc.system", "grpc"));
            kvs.push(KeyValue::new("rpc.service", service.to_owned()));
            kvs.push(KeyValue::new("rpc.method", m.to_owned()));
            let mut name = String::with_capacity(service.len() + 1 + m.len());
            name.push_str(service);
            name.push('/');
            name.push_str(m);
            name.into()
        }
        None => match &s.names {
            Some(names) => names.get(req.method()),
            None => super::method_value(req.method()),
        },
    };
    let model = req
        .extensions()
        .get::<ModelRef>()
        .cloned()
        .or_else(|| model_name::from_oip_path(path));
    let operation = gen_ai_operation(path);
    if let Some(op) = operation {
        kvs.push(KeyValue::new("gen_ai.operation.name", op));
    }
    // The model is known when ferry read it (model routing, model-keyed limits or slots).
    if let Some(m) = model {
        if operation.is_some() {
            kvs.push(KeyValue::new("gen_ai.request.model", m.name.clone()));
        }
        kvs.push(KeyValue::new("model.name", m.name));
        if let Some(v) = m.version {
            kvs.push(KeyValue::new("model.version", v));
        }
    }
    hop.set_name(name);
    hop.add_attribute_vec(kvs);
}

fn authority<B>(req: &Request<B>) -> Option<String> {
    req.uri().host().map(str::to_owned).or_else(|| {
        let host = req.headers().get(http::header::HOST)?.to_str().ok()?;
        Some(host.rsplit_once(':').map_or(host, |(h, _)| h).to_owned())
    })
}

/// `(service, method)` of a gRPC call's path.
fn rpc_method(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix('/')?.split_once('/')
}

/// The OpenTelemetry GenAI operation of an OpenAI-style path.
fn gen_ai_operation(path: &str) -> Option<&'static str> {
    match path {
        "/v1/chat/completions" => Some("chat"),
        "/v1/completions" => Some("text_completion"),
        "/v1/embeddings" => Some("embeddings"),
        _ => None,
    }
}

pin_project_lite::pin_project! {
    /// The inner answer; for a recorded hop, its body wrapped so the span ends with it.
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        hop: Option<Arc<HopTrace>>,
        grpc: bool,
        classifiers: &'static [Classifier],
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<TranslateBody>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<TranslateBody>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx)).map_err(Into::into);
        let Some(hop) = this.hop.take() else {
            return Poll::Ready(result);
        };
        let now = Instant::now();
        match result {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let grpc_status = grpc_status(resp.headers());
                // Into the vector `describe` sized for them: no allocation here.
                hop.add_attributes(
                    std::iter::once(KeyValue::new(
                        "http.response.status_code",
                        i64::from(status),
                    ))
                    .chain(
                        grpc_status
                            .map(|code| KeyValue::new("rpc.grpc.status_code", i64::from(code))),
                    ),
                );
                hop.event("response.headers", now, Vec::new());
                if status >= 500 {
                    hop.fail(Some(format!("HTTP {status}")));
                } else if let Some(code) = grpc_status.filter(|c| *c != 0) {
                    hop.fail(grpc_server_error(code));
                }
                let kind = StreamKind::of(resp.headers());
                Poll::Ready(Ok(
                    resp.map(|body| TracedBody::new(body, hop, kind).boxed_unsync())
                ))
            }
            Err(e) => {
                // The answer the renderer outside will give: the span records that status,
                // and fails only where OpenTelemetry's rules say a server failed.
                let found = failure::find(&*e, this.classifiers);
                let (status, code, reason) = found.map_or((500, 13, "internal"), |c| {
                    (c.http_status().as_u16(), c.grpc_code(), c.reason())
                });
                let mut kvs = vec![KeyValue::new("error.type", reason)];
                if *this.grpc {
                    kvs.push(KeyValue::new("http.response.status_code", 200_i64));
                    kvs.push(KeyValue::new("rpc.grpc.status_code", i64::from(code)));
                } else {
                    kvs.push(KeyValue::new(
                        "http.response.status_code",
                        i64::from(status),
                    ));
                }
                hop.add_attributes(kvs);
                let server_failed = if *this.grpc {
                    grpc_server_error(code).is_some()
                } else {
                    status >= 500
                };
                if server_failed {
                    hop.fail(Some(e.to_string()));
                } else if *this.grpc && code != 0 {
                    // A client-side gRPC error: kept by `always_errors`, span not failed.
                    hop.fail(None);
                }
                hop.end(now);
                Poll::Ready(Err(e))
            }
        }
    }
}

/// `grpc-status` of a trailers-only answer or of trailers.
pub fn grpc_status(headers: &HeaderMap) -> Option<u32> {
    // A static name: a `&str` key is parsed and validated on every lookup.
    static GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");
    headers
        .get(&GRPC_STATUS)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// The span status of a gRPC code on a server span (OpenTelemetry's RPC conventions: only
/// codes that mean the server failed), as `fail`'s argument.
pub(super) fn grpc_server_error(code: u32) -> Option<String> {
    matches!(code, 2 | 4 | 12 | 13 | 14 | 15).then(|| format!("gRPC status {code}"))
}
