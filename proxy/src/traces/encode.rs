//! OTLP protobuf, written straight from the spans a hop kept into one reused buffer.
//!
//! Hand-written on purpose (opentelemetry-otlp's exporter was the first choice): the crate
//! converts every `SpanData` into `opentelemetry-proto` messages, cloning each attribute key
//! and value into owned strings, then prost encodes them and drops them again. Measured with
//! callgrind (bench/results/2026-12-05c-tracing), that pipeline was ~48k of the ~76k
//! instructions a 100 %-sampled request added, more than the whole ≤ 1.25× budget. Here each
//! span is encoded once, straight from the hop's record when the hop ends (no `SpanData` is
//! built), with no allocation but the buffer's growth;
//! the message layout follows `opentelemetry/proto/trace/v1/trace.proto` and
//! `common/v1/common.proto` field by field (numbers in the constants below). The unit tests
//! decode the output with `opentelemetry-proto`'s prost messages, so the two cannot drift.

use bytes::Bytes;

use ferry_filters::trace_context::SpanView;
use opentelemetry::trace::SpanKind;
use opentelemetry::{Array, KeyValue, Value};
use opentelemetry_sdk::Resource;

// Wire types.
const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

/// The spans of one export call, encoded as they arrive: the `spans` field (2) of one
/// `ScopeSpans`, whose resource and scope are written once per exporter.
///
/// The buffer starts with [`Batch::prefix`] spare bytes, where the request's enclosing
/// messages are written once the spans' length is known: the request body is then the
/// buffer itself, handed over without a copy.
#[derive(Debug)]
pub struct Batch {
    /// `Resource` and `InstrumentationScope`, encoded once.
    resource: Vec<u8>,
    scope: Vec<u8>,
    /// The spare prefix, then encoded `Span` fields (tag, length, message) back to back.
    buf: Vec<u8>,
    count: usize,
}

/// What a new batch's buffer holds before it first grows (a few dozen spans).
const FIRST_CAPACITY: usize = 32 * 1024;

/// The most a new batch reserves up front (a batch of unusually large spans grows past it).
const MAX_CAPACITY: usize = 1024 * 1024;

/// The largest varint a length takes (lengths are below 2^32).
const MAX_LEN: usize = 5;

impl Batch {
    /// An empty batch for spans of `resource`, from ferry's instrumentation scope.
    pub fn new(resource: &Resource) -> Self {
        let mut res = Vec::new();
        for (k, v) in resource.iter() {
            message(&mut res, 1, 1, |b| key_value(b, k.as_str(), v));
        }
        let mut scope = Vec::new();
        string(&mut scope, 1, "ferry");
        string(&mut scope, 2, env!("CARGO_PKG_VERSION"));
        let mut batch = Batch {
            resource: res,
            scope,
            buf: Vec::new(),
            count: 0,
        };
        batch.buf.resize(batch.prefix(), 0);
        batch
    }

    /// An empty batch for the same resource and scope, sized for as many bytes as this one
    /// holds (batches fill alike; growing from a small buffer copied each batch ~3 times).
    pub fn empty_like(&self) -> Self {
        let want = (self.buf.len() + self.buf.len() / 8).clamp(FIRST_CAPACITY, MAX_CAPACITY);
        let mut batch = Batch {
            resource: self.resource.clone(),
            scope: self.scope.clone(),
            buf: Vec::with_capacity(self.prefix() + want),
            count: 0,
        };
        batch.buf.resize(batch.prefix(), 0);
        batch
    }

    /// Room for the gRPC prefix and every enclosing tag and length at their largest.
    fn prefix(&self) -> usize {
        5 + 5 * (1 + MAX_LEN) + self.resource.len() + self.scope.len()
    }

    /// Spans held.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no span is held.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Encodes one span.
    pub fn push(&mut self, span: &SpanView<'_>) {
        message(&mut self.buf, 2, 2, |b| encode_span(b, span));
        self.count += 1;
    }

    /// The `ExportTraceServiceRequest` of the spans held; with `grpc`, behind the gRPC
    /// message prefix (uncompressed flag, big-endian length).
    pub fn into_request(mut self, grpc: bool) -> Bytes {
        let prefix = self.prefix();
        let spans = self.buf.len() - prefix;
        // ScopeSpans = scope (1) + spans (2); ResourceSpans = resource (1) + scope_spans (2);
        // the request = resource_spans (1).
        let scope_spans = field_len(1, self.scope.len()) + spans;
        let resource_spans = field_len(1, self.resource.len()) + field_len(2, scope_spans);
        let request = field_len(1, resource_spans);
        let mut head = Vec::with_capacity(prefix);
        if grpc {
            head.push(0);
            head.extend_from_slice(&(request as u32).to_be_bytes());
        }
        tag(&mut head, 1, LEN);
        varint(&mut head, resource_spans as u64);
        bytes(&mut head, 1, &self.resource);
        tag(&mut head, 2, LEN);
        varint(&mut head, scope_spans as u64);
        bytes(&mut head, 1, &self.scope);
        let start = prefix - head.len();
        self.buf[start..prefix].copy_from_slice(&head);
        Bytes::from(self.buf).slice(start..)
    }
}

fn encode_span(b: &mut Vec<u8>, s: &SpanView<'_>) {
    bytes(b, 1, &s.trace_id.0);
    bytes(b, 2, &s.span_id.0);
    if let Some(state) = s.tracestate.filter(|t| !t.is_empty()) {
        string(b, 3, state);
    }
    if let Some(parent) = s.parent {
        bytes(b, 4, &parent.0);
    }
    string(b, 5, s.name);
    uint(b, 6, kind(&s.kind));
    fixed64(b, 7, s.unix_nanos(s.start));
    fixed64(b, 8, s.unix_nanos(s.end));
    if let Some(fixed) = s.fixed {
        // The route's attributes: encoded on its first span, then copied as bytes.
        b.extend_from_slice(fixed.encoded(|kvs| {
            let mut v = Vec::new();
            attributes(&mut v, 9, kvs);
            v
        }));
    }
    attributes(b, 9, s.attributes);
    for (name, at, kvs) in s.marks.with(s.events) {
        message(b, 11, 2, |b| {
            fixed64(b, 1, s.unix_nanos(at));
            string(b, 2, name);
            attributes(b, 3, kvs);
        });
    }
    if let Some(error) = s.error {
        // Status { message = 2, code = 3 (ERROR = 2) }.
        message(b, 15, 1, |b| {
            string(b, 2, error);
            uint(b, 3, 2);
        });
    }
    fixed32(b, 16, flags(s.parent_is_remote, s.sampled));
}

/// `Span.flags`: the W3C trace flags in bits 0–7 (sampled = 1), then "whether the parent is
/// remote is known" (0x100) and "the parent is remote" (0x200), as the OTLP spec defines them.
fn flags(remote: bool, sampled: bool) -> u32 {
    u32::from(sampled) | 0x100 | if remote { 0x200 } else { 0 }
}

fn kind(k: &SpanKind) -> u64 {
    match k {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

fn attributes(b: &mut Vec<u8>, field: u32, kvs: &[KeyValue]) {
    for kv in kvs {
        let key = kv.key.as_str();
        match &kv.value {
            // Strings and integers (nearly every attribute) have lengths known up front:
            // written straight through, without the in-place length fix-up.
            Value::String(v) => {
                let v = v.as_str().as_bytes();
                let any = 1 + varint_len(v.len() as u64) + v.len();
                scalar(b, field, key, any, |b| bytes(b, 1, v));
            }
            Value::I64(v) => {
                let any = 1 + varint_len(*v as u64);
                scalar(b, field, key, any, |b| {
                    tag(b, 3, VARINT);
                    varint(b, *v as u64);
                });
            }
            other => message(b, field, 1, |b| key_value(b, key, other)),
        }
    }
}

/// A `KeyValue` whose `AnyValue` body takes `any` bytes, written by `value`.
#[inline]
fn scalar(b: &mut Vec<u8>, field: u32, key: &str, any: usize, value: impl FnOnce(&mut Vec<u8>)) {
    let kv = 1 + varint_len(key.len() as u64) + key.len() + 1 + varint_len(any as u64) + any;
    b.reserve(kv + 2 * MAX_LEN);
    tag(b, field, LEN);
    varint(b, kv as u64);
    bytes(b, 1, key.as_bytes());
    tag(b, 2, LEN);
    varint(b, any as u64);
    value(b);
}

/// `KeyValue { key = 1, value = 2 }`.
fn key_value(b: &mut Vec<u8>, key: &str, value: &Value) {
    string(b, 1, key);
    message(b, 2, 1, |b| any_value(b, value));
}

/// `AnyValue`: a oneof, so its one field is written even when it holds the default.
fn any_value(b: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Bool(v) => {
            tag(b, 2, VARINT);
            varint(b, u64::from(*v));
        }
        Value::I64(v) => {
            tag(b, 3, VARINT);
            varint(b, *v as u64);
        }
        Value::F64(v) => {
            tag(b, 4, I64);
            b.extend_from_slice(&v.to_le_bytes());
        }
        Value::String(v) => bytes(b, 1, v.as_str().as_bytes()),
        Value::Array(a) => message(b, 5, 1, |b| array(b, a)),
        // `Value` is non-exhaustive: a kind added later is sent as its text.
        other => bytes(b, 1, other.as_str().as_bytes()),
    }
}

/// `ArrayValue { repeated AnyValue values = 1 }`.
fn array(b: &mut Vec<u8>, a: &Array) {
    match a {
        Array::Bool(vs) => vs
            .iter()
            .for_each(|v| message(b, 1, 1, |b| any_value(b, &Value::Bool(*v)))),
        Array::I64(vs) => vs
            .iter()
            .for_each(|v| message(b, 1, 1, |b| any_value(b, &Value::I64(*v)))),
        Array::F64(vs) => vs
            .iter()
            .for_each(|v| message(b, 1, 1, |b| any_value(b, &Value::F64(*v)))),
        Array::String(vs) => vs
            .iter()
            .for_each(|v| message(b, 1, 1, |b| bytes(b, 1, v.as_str().as_bytes()))),
        other => bytes(b, 1, other.to_string().as_bytes()),
    }
}

// === protobuf primitives ===

#[inline]
fn varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

#[inline]
fn varint_len(v: u64) -> usize {
    // 1 byte per 7 bits, at least one.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

#[inline]
fn tag(b: &mut Vec<u8>, field: u32, wire: u8) {
    varint(b, u64::from(field << 3 | u32::from(wire)));
}

/// Bytes a length-delimited field of `len` bytes takes, tag included.
#[inline]
fn field_len(field: u32, len: usize) -> usize {
    varint_len(u64::from(field << 3 | u32::from(LEN))) + varint_len(len as u64) + len
}

#[inline]
fn bytes(b: &mut Vec<u8>, field: u32, v: &[u8]) {
    tag(b, field, LEN);
    varint(b, v.len() as u64);
    b.extend_from_slice(v);
}

#[inline]
fn string(b: &mut Vec<u8>, field: u32, v: &str) {
    bytes(b, field, v.as_bytes());
}

/// A varint field, left out at its default (0) as proto3 does.
#[inline]
fn uint(b: &mut Vec<u8>, field: u32, v: u64) {
    if v != 0 {
        tag(b, field, VARINT);
        varint(b, v);
    }
}

#[inline]
fn fixed64(b: &mut Vec<u8>, field: u32, v: u64) {
    tag(b, field, I64);
    b.extend_from_slice(&v.to_le_bytes());
}

#[inline]
fn fixed32(b: &mut Vec<u8>, field: u32, v: u32) {
    tag(b, field, I32);
    b.extend_from_slice(&v.to_le_bytes());
}

/// A nested message written in place: `guess` bytes are kept for its length, which is
/// known only once `f` has written the message, and the message is moved when the length
/// needs another size (a guess that fits the common case makes that rare).
fn message(b: &mut Vec<u8>, field: u32, guess: usize, f: impl FnOnce(&mut Vec<u8>)) {
    tag(b, field, LEN);
    let at = b.len();
    b.extend_from_slice(&[0; MAX_LEN][..guess]);
    f(b);
    let len = b.len() - at - guess;
    let need = varint_len(len as u64);
    if need != guess {
        if need > guess {
            b.resize(b.len() + need - guess, 0);
        }
        b.copy_within(at + guess..at + guess + len, at + need);
        b.truncate(at + need + len);
    }
    let mut v = len as u64;
    for (i, byte) in b[at..at + need].iter_mut().enumerate() {
        *byte = (v as u8 & 0x7f) | if i + 1 < need { 0x80 } else { 0 };
        v >>= 7;
    }
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
