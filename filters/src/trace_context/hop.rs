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
use opentelemetry::trace::SpanKind;
use opentelemetry::{InstrumentationScope, KeyValue, StringValue};

use super::kept::{FixedAttributes, KeptHop, Marks, SpanEvent};
use super::{Propagation, SpanId, TraceId, inject};

/// Where kept hops go (the exporter's bounded queue). Called from whatever drops a hop's last
/// reference, on a runtime thread: it must neither block nor wait.
pub trait SpanSink: Send + Sync + std::fmt::Debug {
    /// Takes the spans of one kept hop: borrowed, so an exporter can encode them where they
    /// lie ([`KeptHop::spans`]) or build the SDK's `SpanData` ([`KeptHop::to_span_data`]).
    fn export(&self, hop: &KeptHop<'_>);
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
    pub name: StringValue,
    /// Start.
    pub start: Instant,
    /// End.
    pub end: Instant,
    /// Attributes.
    pub attributes: Vec<KeyValue>,
    /// Attribute-less events with static names (kept inline: no allocation).
    pub marks: Marks,
    /// Events, each at an instant.
    pub events: Vec<SpanEvent>,
    /// Set when the span failed: its description.
    pub error: Option<String>,
}

/// The trace of the request this proxy received, in its request's extensions as
/// `Arc<HopTrace>`.
#[derive(Debug)]
pub struct HopTrace {
    pub(super) trace_id: TraceId,
    pub(super) span_id: SpanId,
    /// The caller's span, when a context arrived.
    pub(super) parent: Option<SpanId>,
    pub(super) sampled: bool,
    pub(super) tracestate: Option<HeaderValue>,
    pub(super) formats: Arc<[Propagation]>,
    /// Wall clock and monotonic clock read together: spans carry wall times, durations come
    /// from the monotonic clock.
    pub(super) anchor: (SystemTime, Instant),
    pub(super) tail: TailRules,
    pub(super) sink: Arc<dyn SpanSink>,
    /// The route's attributes of the SERVER span, shared.
    pub(super) fixed: Option<Arc<FixedAttributes>>,
    pub(super) state: Mutex<HopState>,
}

#[derive(Debug)]
pub(super) struct HopState {
    pub(super) name: StringValue,
    pub(super) attributes: Vec<KeyValue>,
    pub(super) marks: Marks,
    pub(super) events: Vec<SpanEvent>,
    pub(super) children: Vec<SpanRecord>,
    pub(super) end: Option<Instant>,
    /// The span's error (status), when it failed as OpenTelemetry counts failures.
    pub(super) error: Option<String>,
    /// Whether the answer was a 5xx or a gRPC error (the `always_errors` rule).
    pub(super) failed: bool,
}

impl Default for HopState {
    fn default() -> Self {
        HopState {
            name: StringValue::from(""),
            attributes: Vec::new(),
            marks: Marks::default(),
            events: Vec::new(),
            children: Vec::new(),
            end: None,
            error: None,
            failed: false,
        }
    }
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
        name: impl Into<StringValue>,
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
            fixed: None,
            state: Mutex::new(HopState {
                name: name.into(),
                ..HopState::default()
            }),
        }
    }

    /// With the route's shared SERVER span attributes (exported before the others).
    pub fn with_fixed(mut self, fixed: Arc<FixedAttributes>) -> Self {
        self.fixed = Some(fixed);
        self
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
    pub fn set_name(&self, name: impl Into<StringValue>) {
        self.state().name = name.into();
    }

    /// Adds attributes to the SERVER span.
    pub fn add_attributes(&self, kvs: impl IntoIterator<Item = KeyValue>) {
        self.state().attributes.extend(kvs);
    }

    /// Adds attributes to the SERVER span; the first call's vector is kept as is (size it for
    /// the attributes added later, and no request copies or regrows it).
    pub fn add_attribute_vec(&self, kvs: Vec<KeyValue>) {
        let mut s = self.state();
        if s.attributes.is_empty() {
            s.attributes = kvs;
        } else {
            s.attributes.extend(kvs);
        }
    }

    /// Adds an event to the SERVER span (one with a static name and no attributes is kept
    /// inline while there is room).
    pub fn event(&self, name: impl Into<Cow<'static, str>>, at: Instant, kvs: Vec<KeyValue>) {
        let name = name.into();
        let mut s = self.state();
        if let (Cow::Borrowed(n), true) = (&name, kvs.is_empty())
            && s.marks.push(n, at)
        {
            return;
        }
        s.events.push((name, at, kvs));
    }

    /// Records a phase (an INTERNAL span under the hop's span).
    pub fn phase(
        &self,
        name: impl Into<StringValue>,
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
            marks: Marks::default(),
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

    fn keep(&self, s: &HopState, end: Instant) -> bool {
        self.sampled
            || (self.tail.always_errors && s.failed)
            || self
                .tail
                .slower_than
                .is_some_and(|t| end.saturating_duration_since(self.anchor.1) >= t)
    }
}

impl Drop for HopTrace {
    fn drop(&mut self) {
        let now = Instant::now();
        let state = std::mem::take(self.state.get_mut().unwrap_or_else(|p| p.into_inner()));
        let end = state.end.unwrap_or(now);
        if self.keep(&state, end) {
            self.sink.export(&KeptHop {
                hop: self,
                state: &state,
                end,
            });
        }
    }
}

pub(super) fn scope() -> InstrumentationScope {
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

/// `n` random words from the thread's generator. Whole words: `Rng::random::<[u8; N]>` draws
/// each byte separately (a 16-byte trace id was 16 draws, ~250 instructions per request).
fn random_words<const N: usize>() -> [u64; N] {
    IDS.with(|r| {
        let mut rng = r.borrow_mut();
        std::array::from_fn(|_| rand::RngCore::next_u64(&mut *rng))
    })
}

/// A random, non-zero span id.
pub fn new_span_id() -> SpanId {
    loop {
        let [w] = random_words::<1>();
        let id = SpanId(w.to_le_bytes());
        if !id.is_zero() {
            return id;
        }
    }
}

/// A random, non-zero trace id.
pub fn new_trace_id() -> TraceId {
    loop {
        let [a, b] = random_words::<2>();
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&a.to_le_bytes());
        bytes[8..].copy_from_slice(&b.to_le_bytes());
        let id = TraceId(bytes);
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
