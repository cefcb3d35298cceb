//! A kept hop as its sink sees it: borrowed views of its spans ([`SpanView`]), which an
//! exporter encodes where they lie, or the SDK's `SpanData` built from them for sinks that
//! want it. Nothing is copied for a sink that encodes: the hop's record is dropped right
//! after its sink returns.

use std::borrow::Cow;
use std::time::{Instant, SystemTime};

use opentelemetry::KeyValue;
use opentelemetry::trace::{self as otel, SpanContext, SpanKind, Status, TraceFlags, TraceState};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

use super::hop::{HopState, HopTrace, scope};
use super::{SpanId, TraceId};

/// An event: its name, when, its attributes.
pub type SpanEvent = (Cow<'static, str>, Instant, Vec<KeyValue>);

/// Events without attributes and with static names (`response.headers`, the first byte),
/// kept inline in a span's record: most recorded spans have one or two, and a vector of
/// events was an allocation per span.
#[derive(Debug, Clone, Copy, Default)]
pub struct Marks([Option<(&'static str, Instant)>; 2]);

impl Marks {
    /// Adds one; `false` when full (the caller keeps it as an ordinary event).
    pub fn push(&mut self, name: &'static str, at: Instant) -> bool {
        match self.0.iter_mut().find(|m| m.is_none()) {
            Some(slot) => {
                *slot = Some((name, at));
                true
            }
            None => false,
        }
    }

    /// The marks in the order added.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, Instant)> + '_ {
        self.0.iter().flatten().copied()
    }

    /// A span's marks and events as one list of `(name, at, attributes)`, marks first.
    pub fn with<'a>(
        &'a self,
        events: &'a [SpanEvent],
    ) -> impl Iterator<Item = (&'a str, Instant, &'a [KeyValue])> + 'a {
        self.iter()
            .map(|(n, at)| (n, at, &[][..]))
            .chain(events.iter().map(|(n, at, kvs)| (&**n, *at, &kvs[..])))
    }
}

/// Attributes every SERVER span of a route carries (its listener, route and cluster names),
/// shared by its hops rather than copied into each, with room for one encoding of them
/// ([`FixedAttributes::encoded`]): an exporter encodes them once, not per span.
#[derive(Debug, Default)]
pub struct FixedAttributes {
    kvs: Box<[KeyValue]>,
    encoded: std::sync::OnceLock<Box<[u8]>>,
}

impl FixedAttributes {
    /// The attributes `kvs`.
    pub fn new(kvs: Vec<KeyValue>) -> Self {
        FixedAttributes {
            kvs: kvs.into_boxed_slice(),
            encoded: std::sync::OnceLock::new(),
        }
    }

    /// The attributes.
    pub fn kvs(&self) -> &[KeyValue] {
        &self.kvs
    }

    /// Their encoding by `encode`, made on the first call and kept: one encoding per
    /// process (ferry's exporter writes them as OTLP `Span.attributes`).
    pub fn encoded(&self, encode: impl FnOnce(&[KeyValue]) -> Vec<u8>) -> &[u8] {
        self.encoded
            .get_or_init(|| encode(&self.kvs).into_boxed_slice())
    }
}

/// One span of a kept hop, borrowed from its record.
#[derive(Debug, Clone)]
pub struct SpanView<'a> {
    /// The trace.
    pub trace_id: TraceId,
    /// The span.
    pub span_id: SpanId,
    /// Its parent (none for a root SERVER span).
    pub parent: Option<SpanId>,
    /// Whether the parent is the caller's span (another process).
    pub parent_is_remote: bool,
    /// The sampled flag propagated.
    pub sampled: bool,
    /// W3C `tracestate`, when the caller sent one.
    pub tracestate: Option<&'a str>,
    /// SERVER, CLIENT or INTERNAL.
    pub kind: SpanKind,
    /// Span name.
    pub name: &'a str,
    /// Start, monotonic ([`SpanView::wall`] and [`SpanView::unix_nanos`] convert it).
    pub start: Instant,
    /// End, monotonic.
    pub end: Instant,
    /// The route's attributes (SERVER span only), before `attributes`.
    pub fixed: Option<&'a FixedAttributes>,
    /// Attributes.
    pub attributes: &'a [KeyValue],
    /// Attribute-less events kept inline, at monotonic instants (before `events`).
    pub marks: Marks,
    /// Events, at monotonic instants ([`SpanView::wall`] converts them).
    pub events: &'a [SpanEvent],
    /// The error description, when the span failed.
    pub error: Option<&'a str>,
    anchor: (SystemTime, Instant),
    /// `anchor.0` as nanoseconds since the Unix epoch, read once per hop: exporters want
    /// nanoseconds, and going through `SystemTime` for each timestamp cost two conversions.
    anchor_nanos: u64,
}

impl SpanView<'_> {
    /// The wall-clock time of a monotonic instant of this hop.
    pub fn wall(&self, at: Instant) -> SystemTime {
        wall(self.anchor, at)
    }

    /// Nanoseconds since the Unix epoch of a monotonic instant of this hop (0 before it).
    pub fn unix_nanos(&self, at: Instant) -> u64 {
        let nanos = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        match at.checked_duration_since(self.anchor.1) {
            Some(d) => self.anchor_nanos.saturating_add(nanos(d)),
            None => self
                .anchor_nanos
                .saturating_sub(nanos(self.anchor.1.duration_since(at))),
        }
    }
}

/// A finished hop the sampler kept: its SERVER span and the spans under it.
#[derive(Debug)]
pub struct KeptHop<'a> {
    pub(super) hop: &'a HopTrace,
    pub(super) state: &'a HopState,
    pub(super) end: Instant,
}

impl<'a> KeptHop<'a> {
    /// How many spans: the SERVER span and its children.
    pub fn len(&self) -> usize {
        1 + self.state.children.len()
    }

    /// Never empty (the SERVER span is always there); for clippy's `len` convention.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The spans, the SERVER span first.
    pub fn spans(&self) -> impl Iterator<Item = SpanView<'a>> + 'a {
        let (hop, s, end) = (self.hop, self.state, self.end);
        let tracestate = hop.tracestate.as_ref().and_then(|v| v.to_str().ok());
        let anchor_nanos = hop
            .anchor
            .0
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let view = move |span_id, parent, kind, name: &'a str| SpanView {
            trace_id: hop.trace_id,
            span_id,
            parent,
            parent_is_remote: false,
            sampled: hop.sampled,
            tracestate,
            kind,
            name,
            start: hop.anchor.1,
            end,
            fixed: None,
            attributes: &[],
            marks: Marks::default(),
            events: &[],
            error: None,
            anchor: hop.anchor,
            anchor_nanos,
        };
        let server = SpanView {
            parent_is_remote: hop.parent.is_some(),
            fixed: hop.fixed.as_deref(),
            attributes: &s.attributes,
            marks: s.marks,
            events: &s.events,
            error: s.error.as_deref(),
            ..view(hop.span_id, hop.parent, SpanKind::Server, s.name.as_str())
        };
        std::iter::once(server).chain(s.children.iter().map(move |c| SpanView {
            start: c.start,
            end: c.end,
            attributes: &c.attributes,
            marks: c.marks,
            events: &c.events,
            error: c.error.as_deref(),
            ..view(c.span_id, Some(c.parent), c.kind.clone(), c.name.as_str())
        }))
    }

    /// The spans as the OpenTelemetry SDK's `SpanData` (for sinks built on the SDK).
    pub fn to_span_data(&self) -> Vec<SpanData> {
        self.spans().map(span_data).collect()
    }
}

fn span_data(v: SpanView<'_>) -> SpanData {
    let flags = if v.sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let state = v
        .tracestate
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    // Non-exhaustive with public fields: built from its default.
    let mut events = SpanEvents::default();
    events.events = v
        .marks
        .with(v.events)
        .map(|(name, at, kvs)| otel::Event::new(name.to_owned(), v.wall(at), kvs.to_vec(), 0))
        .collect();
    SpanData {
        span_context: SpanContext::new(
            otel::TraceId::from_bytes(v.trace_id.0),
            otel::SpanId::from_bytes(v.span_id.0),
            flags,
            false,
            state,
        ),
        parent_span_id: v
            .parent
            .map_or(otel::SpanId::INVALID, |p| otel::SpanId::from_bytes(p.0)),
        parent_span_is_remote: v.parent_is_remote,
        span_kind: v.kind.clone(),
        name: Cow::Owned(v.name.to_owned()),
        start_time: v.wall(v.start),
        end_time: v.wall(v.end),
        attributes: v
            .fixed
            .map(FixedAttributes::kvs)
            .unwrap_or_default()
            .iter()
            .chain(v.attributes)
            .cloned()
            .collect(),
        dropped_attributes_count: 0,
        events,
        links: SpanLinks::default(),
        status: match v.error {
            Some(e) => Status::error(e.to_owned()),
            None => Status::Unset,
        },
        instrumentation_scope: scope(),
    }
}

pub(super) fn wall((wall, mono): (SystemTime, Instant), at: Instant) -> SystemTime {
    match at.checked_duration_since(mono) {
        Some(d) => wall + d,
        None => wall - mono.saturating_duration_since(at),
    }
}
