//! One hop's trace as it is recorded: the SERVER span of the request this proxy received, and
//! the spans under it (each upstream attempt, the phases the layers own). Layers reach it
//! through the request's extensions ([`HopTrace::of`]) and add what they timed.
//!
//! Nothing here talks to a backend. When the last reference goes (the request, every attempt
//! and the answer's body are done), the hop decides whether it is kept (head-sampled, failed
//! with `always_errors`, or slower than `slower_than`) and hands the spans to its
//! [`SpanSink`], which must not block. Recording is plain appends under an uncontended mutex:
//! the SDK's tracer and span objects are not used on the request path, since a hop only
//! becomes `SpanData` once it is known to be kept.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use http::{HeaderMap, HeaderValue, Request};
use opentelemetry::trace::{self as otel, SpanContext, SpanKind, Status, TraceFlags, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

use super::{Propagation, SpanId, TraceId, inject};

/// Where kept hops go (the exporter's bounded queue). Called from whatever drops a hop's last
/// reference, on a runtime thread: it must neither block nor wait.
pub trait SpanSink: Send + Sync + std::fmt::Debug {
    /// Takes the spans of one kept hop.
    fn export(&self, spans: Vec<SpanData>);
}

/// When a hop that was not head-sampled is still kept.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TailRules {
    /// Keep a hop that answered 5xx or a gRPC error.
    pub always_errors: bool,
    /// Keep a hop that took at least this long.
    pub slower_than: Option<Duration>,
}

impl TailRules {
    /// Whether any rule can keep an unsampled hop (so every hop must be recorded).
    pub fn any(&self) -> bool {
        self.always_errors || self.slower_than.is_some()
    }
}

/// A finished child span of a hop: an upstream attempt (CLIENT) or a phase (INTERNAL).
#[derive(Debug, Clone)]
pub struct SpanRecord {
    /// Its id (a CLIENT span's id is the upstream's parent).
    pub span_id: SpanId,
    /// Its parent: the hop's span or another record.
    pub parent: SpanId,
    /// CLIENT for an attempt, INTERNAL for a phase.
    pub kind: SpanKind,
    /// Span name.
    pub name: Cow<'static, str>,
    /// Start.
    pub start: Instant,
    /// End.
    pub end: Instant,
    /// Attributes.
    pub attributes: Vec<KeyValue>,
    /// Events, each at an instant.
    pub events: Vec<(Cow<'static, str>, Instant, Vec<KeyValue>)>,
    /// Set when the span failed: its description.
    pub error: Option<String>,
}

/// The trace of the request this proxy received, in its request's extensions as
/// `Arc<HopTrace>`.
#[derive(Debug)]
pub struct HopTrace {
    trace_id: TraceId,
    span_id: SpanId,
    /// The caller's span, when a context arrived.
    parent: Option<SpanId>,
    sampled: bool,
    tracestate: Option<HeaderValue>,
    formats: Arc<[Propagation]>,
    /// Wall clock and monotonic clock read together: spans carry wall times, durations come
    /// from the monotonic clock.
    anchor: (SystemTime, Instant),
    tail: TailRules,
    sink: Arc<dyn SpanSink>,
    state: Mutex<HopState>,
}

#[derive(Debug, Default)]
struct HopState {
    name: Cow<'static, str>,
    attributes: Vec<KeyValue>,
    events: Vec<(Cow<'static, str>, Instant, Vec<KeyValue>)>,
    children: Vec<SpanRecord>,
    end: Option<Instant>,
    /// The span's error (status), when it failed as OpenTelemetry counts failures.
    error: Option<String>,
    /// Whether the answer was a 5xx or a gRPC error (the `always_errors` rule).
    failed: bool,
}

/// What a hop starts from.
#[derive(Debug, Clone)]
pub struct HopStart {
    /// The trace (the caller's, or a new one).
    pub trace_id: TraceId,
    /// The caller's span.
    pub parent: Option<SpanId>,
    /// The sampling decision this hop propagates.
    pub sampled: bool,
    /// The caller's `tracestate`, carried on.
    pub tracestate: Option<HeaderValue>,
    /// When the request was received.
    pub start: Instant,
}

// === impl HopTrace ===

impl HopTrace {
    /// A hop recording into `sink`; its SERVER span starts at `start.start`.
    pub fn new(
        start: HopStart,
        name: Cow<'static, str>,
        formats: Arc<[Propagation]>,
        tail: TailRules,
        sink: Arc<dyn SpanSink>,
    ) -> Self {
        let now = Instant::now();
        let wall = SystemTime::now()
            .checked_sub(now.saturating_duration_since(start.start))
            .unwrap_or_else(SystemTime::now);
        HopTrace {
            trace_id: start.trace_id,
            span_id: new_span_id(),
            parent: start.parent,
            sampled: start.sampled,
            tracestate: start.tracestate,
            formats,
            anchor: (wall, start.start),
            tail,
            sink,
            state: Mutex::new(HopState {
                name,
                ..HopState::default()
            }),
        }
    }

    /// The hop of `req`, when its request is being traced.
    pub fn of<B>(req: &Request<B>) -> Option<&Arc<HopTrace>> {
        req.extensions().get::<Arc<HopTrace>>()
    }

    /// The trace id.
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// This hop's SERVER span id.
    pub fn span_id(&self) -> SpanId {
        self.span_id
    }

    /// The sampling decision propagated upstream.
    pub fn sampled(&self) -> bool {
        self.sampled
    }

    /// Writes the context upstream sees, with `span` (an attempt's CLIENT span, or the hop's
    /// own) as the upstream's parent, in every configured format.
    pub fn inject(&self, headers: &mut HeaderMap, span: SpanId) {
        inject(
            headers,
            &self.formats,
            self.trace_id,
            span,
            self.sampled,
            self.tracestate.as_ref(),
        );
    }

    fn state(&self) -> MutexGuard<'_, HopState> {
        // A panic while recording must not stop the request: the state is appends only, so
        // a poisoned one is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Renames the SERVER span.
    pub fn set_name(&self, name: impl Into<Cow<'static, str>>) {
        self.state().name = name.into();
    }

    /// Adds attributes to the SERVER span.
    pub fn add_attributes(&self, kvs: impl IntoIterator<Item = KeyValue>) {
        self.state().attributes.extend(kvs);
    }

    /// Adds an event to the SERVER span.
    pub fn event(&self, name: impl Into<Cow<'static, str>>, at: Instant, kvs: Vec<KeyValue>) {
        self.state().events.push((name.into(), at, kvs));
    }

    /// Records a phase (an INTERNAL span under the hop's span).
    pub fn phase(
        &self,
        name: impl Into<Cow<'static, str>>,
        start: Instant,
        end: Instant,
        attributes: Vec<KeyValue>,
    ) {
        self.add_span(SpanRecord {
            span_id: new_span_id(),
            parent: self.span_id,
            kind: SpanKind::Internal,
            name: name.into(),
            start,
            end,
            attributes,
            events: Vec::new(),
            error: None,
        });
    }

    /// Records a finished child span.
    pub fn add_span(&self, span: SpanRecord) {
        self.state().children.push(span);
    }

    /// Marks the answer as failed: `error` sets the span's status (OpenTelemetry's rules:
    /// a server span fails on 5xx, not 4xx); `failed` feeds the `always_errors` rule.
    pub fn fail(&self, error: Option<String>) {
        let mut s = self.state();
        s.failed = true;
        if error.is_some() {
            s.error = error;
        }
    }

    /// Ends the SERVER span (the first call wins: the body's end, else the last drop).
    pub fn end(&self, at: Instant) {
        let mut s = self.state();
        if s.end.is_none() {
            s.end = Some(at);
        }
    }

    fn wall(&self, at: Instant) -> SystemTime {
        let (wall, mono) = self.anchor;
        match at.checked_duration_since(mono) {
            Some(d) => wall + d,
            None => wall - mono.saturating_duration_since(at),
        }
    }

    fn context(&self, span: SpanId) -> SpanContext {
        let flags = if self.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        let state = self
            .tracestate
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        SpanContext::new(
            otel::TraceId::from_bytes(self.trace_id.0),
            otel::SpanId::from_bytes(span.0),
            flags,
            false,
            state,
        )
    }

    fn keep(&self, s: &HopState, end: Instant) -> bool {
        self.sampled
            || (self.tail.always_errors && s.failed)
            || self
                .tail
                .slower_than
                .is_some_and(|t| end.saturating_duration_since(self.anchor.1) >= t)
    }

    fn spans(&self, s: HopState, end: Instant) -> Vec<SpanData> {
        let scope = scope();
        let mut out = Vec::with_capacity(1 + s.children.len());
        let events = |evs: Vec<(Cow<'static, str>, Instant, Vec<KeyValue>)>| {
            // Non-exhaustive with public fields: built from its default.
            let mut out = SpanEvents::default();
            out.events = evs
                .into_iter()
                .map(|(name, at, attributes)| otel::Event::new(name, self.wall(at), attributes, 0))
                .collect();
            out
        };
        let status = |error: Option<String>| match error {
            Some(description) => Status::error(description),
            None => Status::Unset,
        };
        out.push(SpanData {
            span_context: self.context(self.span_id),
            parent_span_id: self
                .parent
                .map_or(otel::SpanId::INVALID, |p| otel::SpanId::from_bytes(p.0)),
            parent_span_is_remote: self.parent.is_some(),
            span_kind: SpanKind::Server,
            name: s.name,
            start_time: self.anchor.0,
            end_time: self.wall(end),
            attributes: s.attributes,
            dropped_attributes_count: 0,
            events: events(s.events),
            links: SpanLinks::default(),
            status: status(s.error),
            instrumentation_scope: scope.clone(),
        });
        for c in s.children {
            out.push(SpanData {
                span_context: self.context(c.span_id),
                parent_span_id: otel::SpanId::from_bytes(c.parent.0),
                parent_span_is_remote: false,
                span_kind: c.kind,
                name: c.name,
                start_time: self.wall(c.start),
                end_time: self.wall(c.end),
                attributes: c.attributes,
                dropped_attributes_count: 0,
                events: events(c.events),
                links: SpanLinks::default(),
                status: status(c.error),
                instrumentation_scope: scope.clone(),
            });
        }
        out
    }
}

impl Drop for HopTrace {
    fn drop(&mut self) {
        let now = Instant::now();
        let state = std::mem::take(self.state.get_mut().unwrap_or_else(|p| p.into_inner()));
        let end = state.end.unwrap_or(now);
        if self.keep(&state, end) {
            let spans = self.spans(state, end);
            self.sink.export(spans);
        }
    }
}

fn scope() -> InstrumentationScope {
    static SCOPE: std::sync::OnceLock<InstrumentationScope> = std::sync::OnceLock::new();
    SCOPE
        .get_or_init(|| {
            InstrumentationScope::builder("ferry")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build()
        })
        .clone()
}

thread_local! {
    /// Ids need to be unpredictable enough not to collide, not secret: a small fast generator
    /// per thread, seeded from the OS-seeded one (as the OpenTelemetry SDK's id generator).
    /// `rand::random` (ChaCha12) cost an unsampled request ~200 instructions in refills.
    static IDS: std::cell::RefCell<rand::rngs::SmallRng> =
        std::cell::RefCell::new(rand::SeedableRng::from_rng(&mut rand::rng()));
}

fn random<const N: usize>() -> [u8; N] {
    IDS.with(|r| rand::Rng::random(&mut *r.borrow_mut()))
}

/// A random, non-zero span id.
pub fn new_span_id() -> SpanId {
    loop {
        let id = SpanId(random());
        if !id.is_zero() {
            return id;
        }
    }
}

/// A random, non-zero trace id.
pub fn new_trace_id() -> TraceId {
    loop {
        let id = TraceId(random());
        if !id.is_zero() {
            return id;
        }
    }
}

/// The ratio sampler's decision for a new trace, made from the trace id as OpenTelemetry's
/// `TraceIdRatioBased` does (so every hop deciding on the same id agrees).
pub fn ratio_sampled(trace: TraceId, ratio: f64) -> bool {
    if ratio >= 1.0 {
        return true;
    }
    if ratio <= 0.0 || ratio.is_nan() {
        return false;
    }
    let mut low = [0u8; 8];
    low.copy_from_slice(&trace.0[8..]);
    // 63 bits, as the SDK: the product of a ratio below 1 and 2^63 fits a u64.
    let bound = (ratio * (1u64 << 63) as f64) as u64;
    (u64::from_be_bytes(low) >> 1) < bound
}
