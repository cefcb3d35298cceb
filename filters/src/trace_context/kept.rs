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
    /// Start, wall clock.
    pub start: SystemTime,
    /// End, wall clock.
    pub end: SystemTime,
    /// Attributes.
    pub attributes: &'a [KeyValue],
    /// Events, at monotonic instants ([`SpanView::wall`] converts them).
    pub events: &'a [SpanEvent],
    /// The error description, when the span failed.
    pub error: Option<&'a str>,
    anchor: (SystemTime, Instant),
}

impl SpanView<'_> {
    /// The wall-clock time of a monotonic instant of this hop.
    pub fn wall(&self, at: Instant) -> SystemTime {
        wall(self.anchor, at)
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
        let view = move |span_id, parent, kind, name: &'a str| SpanView {
            trace_id: hop.trace_id,
            span_id,
            parent,
            parent_is_remote: false,
            sampled: hop.sampled,
            tracestate,
            kind,
            name,
            start: hop.anchor.0,
            end: hop.wall(end),
            attributes: &[],
            events: &[],
            error: None,
            anchor: hop.anchor,
        };
        let server = SpanView {
            parent_is_remote: hop.parent.is_some(),
            attributes: &s.attributes,
            events: &s.events,
            error: s.error.as_deref(),
            ..view(hop.span_id, hop.parent, SpanKind::Server, &s.name)
        };
        std::iter::once(server).chain(s.children.iter().map(move |c| SpanView {
            start: hop.wall(c.start),
            end: hop.wall(c.end),
            attributes: &c.attributes,
            events: &c.events,
            error: c.error.as_deref(),
            ..view(c.span_id, Some(c.parent), c.kind.clone(), &c.name)
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
        .events
        .iter()
        .map(|(name, at, kvs)| otel::Event::new(name.clone(), v.wall(*at), kvs.clone(), 0))
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
        span_kind: v.kind,
        name: Cow::Owned(v.name.to_owned()),
        start_time: v.start,
        end_time: v.end,
        attributes: v.attributes.to_vec(),
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
