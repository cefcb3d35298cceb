//! Trace context on the wire: W3C `traceparent`/`tracestate` and B3 (single `b3` header and
//! multi `x-b3-*`), extracted from a request and injected into the one sent upstream. The
//! tracing layer (spans, export) builds on this; the parsing is its own module so it can be
//! tested and fuzzed alone.
//!
//! [`TraceLayer`] is the per-hop layer built on it: sampling, the hop's spans
//! ([`HopTrace`], which other layers add their phases to), and the answer's end.
//!
//! Extraction tries the configured formats in order and takes the first valid one. Anything
//! malformed (wrong length, non-hex or upper-case hex where W3C forbids it, version `ff`,
//! all-zero ids, a B3 sampling flag that is not `0`, `1` or `d`) is treated as absent: the hop
//! then starts a new trace, and the request itself never fails because of a header.

mod body;
mod hop;
mod kept;
mod layer;
mod names;
mod parse;

#[cfg(test)]
mod layer_tests;
#[cfg(test)]
mod tests;

use http::{HeaderMap, HeaderName, HeaderValue};

pub use self::body::{StreamKind, TracedBody};
pub use self::hop::{
    HopStart, HopTrace, SpanRecord, SpanSink, TailRules, new_span_id, new_trace_id, ratio_sampled,
};
pub use self::kept::{FixedAttributes, KeptHop, Marks, SpanEvent, SpanView};
pub use self::layer::{OnTrace, TraceLayer, TraceService, TraceSettings, grpc_status};
pub use self::names::{SpanNames, join_name, method_value};
pub use self::parse::{parse_b3_multi, parse_b3_single, parse_traceparent};

/// A propagation format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// W3C Trace Context: `traceparent` (and `tracestate`, carried as is).
    W3c,
    /// B3 single header: `b3: {trace}-{span}-{sampled}[-{parent}]`.
    B3,
    /// B3 multiple headers: `x-b3-traceid`, `x-b3-spanid`, `x-b3-sampled`, `x-b3-flags`.
    B3Multi,
}

/// A 128-bit trace id (B3's 64-bit ids are widened with leading zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A 64-bit span id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

/// The caller's span, as a propagation header named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace.
    pub trace_id: TraceId,
    /// The caller's span: this hop's parent.
    pub span_id: SpanId,
    /// The caller's sampling decision (`None`: it left the decision to us, B3 without a flag).
    pub sampled: Option<bool>,
    /// W3C `tracestate`, carried unchanged.
    pub tracestate: Option<HeaderValue>,
    /// Which format it came in.
    pub format: Propagation,
}

static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");
static B3: HeaderName = HeaderName::from_static("b3");
static B3_TRACE: HeaderName = HeaderName::from_static("x-b3-traceid");
static B3_SPAN: HeaderName = HeaderName::from_static("x-b3-spanid");
static B3_PARENT: HeaderName = HeaderName::from_static("x-b3-parentspanid");
static B3_SAMPLED: HeaderName = HeaderName::from_static("x-b3-sampled");
static B3_FLAGS: HeaderName = HeaderName::from_static("x-b3-flags");

impl TraceId {
    /// Whether every byte is zero (invalid in both formats).
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }

    /// Lower-case hex, 32 characters.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

impl SpanId {
    /// Whether every byte is zero (invalid in both formats).
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 8]
    }

    /// Lower-case hex, 16 characters.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

fn hex(bytes: &[u8]) -> String {
    // The table encoder, not `write!("{b:02x}")` per byte: a sampled request renders its
    // trace id for the latency exemplar, and the formatter cost ~4k instructions there.
    let mut out = vec![0u8; bytes.len() * 2];
    hex_into(bytes, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// The first valid context among `formats`, in order.
pub fn extract(headers: &HeaderMap, formats: &[Propagation]) -> Option<TraceContext> {
    formats.iter().find_map(|f| match f {
        Propagation::W3c => {
            let mut ctx = parse_traceparent(headers.get(&TRACEPARENT)?.as_bytes())?;
            ctx.tracestate = headers.get(&TRACESTATE).cloned();
            Some(ctx)
        }
        Propagation::B3 => parse_b3_single(headers.get(&B3)?.as_bytes()),
        Propagation::B3Multi => parse_b3_multi(
            headers.get(&B3_TRACE).map(HeaderValue::as_bytes),
            headers.get(&B3_SPAN).map(HeaderValue::as_bytes),
            headers.get(&B3_SAMPLED).map(HeaderValue::as_bytes),
            headers.get(&B3_FLAGS).map(HeaderValue::as_bytes),
        ),
    })
}

/// Writes `span` of `trace` (this hop's span, the upstream's parent) in every one of
/// `formats`, replacing whatever the caller sent in those headers. Values are formatted on the
/// stack at fixed offsets (no copying loop: this runs for every request, sampled or not), so
/// each header costs only its own value's allocation.
pub fn inject(
    headers: &mut HeaderMap,
    formats: &[Propagation],
    trace: TraceId,
    span: SpanId,
    sampled: bool,
    tracestate: Option<&HeaderValue>,
) {
    let flag = if sampled { b'1' } else { b'0' };
    // Hex and dashes are always a valid header value.
    let set = |headers: &mut HeaderMap, name: &HeaderName, value: &[u8]| {
        if let Some(v) = carved_value(value) {
            headers.insert(name.clone(), v);
        }
    };
    for f in formats {
        match f {
            Propagation::W3c => {
                // `00-{trace}-{span}-0{flag}`.
                let mut v = [b'-'; 55];
                v[..2].copy_from_slice(b"00");
                hex_into(&trace.0, &mut v[3..35]);
                hex_into(&span.0, &mut v[36..52]);
                v[53] = b'0';
                v[54] = flag;
                set(headers, &TRACEPARENT, &v);
                // A `tracestate` without a valid `traceparent` is not looked at (W3C: it
                // belongs to a parent that is not there) and is left as it came: removing it
                // cost every new trace a hash lookup for a header rarely sent.
                if let Some(ts) = tracestate {
                    headers.insert(TRACESTATE.clone(), ts.clone());
                }
            }
            Propagation::B3 => {
                // `{trace}-{span}-{flag}`.
                let mut v = [b'-'; 51];
                hex_into(&trace.0, &mut v[..32]);
                hex_into(&span.0, &mut v[33..49]);
                v[50] = flag;
                set(headers, &B3, &v);
            }
            Propagation::B3Multi => {
                let mut t = [0u8; 32];
                let mut s = [0u8; 16];
                hex_into(&trace.0, &mut t);
                hex_into(&span.0, &mut s);
                set(headers, &B3_TRACE, &t);
                set(headers, &B3_SPAN, &s);
                headers.insert(
                    B3_SAMPLED.clone(),
                    HeaderValue::from_static(if sampled { "1" } else { "0" }),
                );
                headers.remove(&B3_PARENT);
                headers.remove(&B3_FLAGS);
            }
        }
    }
}

/// An address as span attributes write it. IPv4 by hand: `Ipv4Addr`'s `Display` goes through
/// the formatter and cost ~1.4k instructions, paid twice by every recorded request.
pub fn ip_text(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let mut s = String::with_capacity(15);
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    s.push('.');
                }
                if octet >= 100 {
                    s.push(char::from(b'0' + octet / 100));
                }
                if octet >= 10 {
                    s.push(char::from(b'0' + octet / 10 % 10));
                }
                s.push(char::from(b'0' + octet % 10));
            }
            s
        }
        std::net::IpAddr::V6(v6) => v6.to_string(),
    }
}

thread_local! {
    /// Propagated header values are carved out of one buffer per thread: an unsampled request
    /// writes a context too (so the model server follows this hop's decision rather than
    /// sampling on its own), and a `HeaderValue` of its own would be an allocation per request.
    static VALUES: std::cell::RefCell<bytes::BytesMut> =
        std::cell::RefCell::new(bytes::BytesMut::new());
}

/// Each buffer holds this many bytes of values (~70 `traceparent`s); a value still in use
/// keeps its buffer alive, and nothing more.
const VALUE_BUFFER: usize = 4096;

fn carved_value(value: &[u8]) -> Option<HeaderValue> {
    VALUES.with(|buf| {
        let mut buf = buf.borrow_mut();
        if buf.capacity() < value.len() {
            *buf = bytes::BytesMut::with_capacity(VALUE_BUFFER.max(value.len()));
        }
        buf.extend_from_slice(value);
        HeaderValue::from_maybe_shared(buf.split().freeze()).ok()
    })
}

/// Lower-case hex of every byte value: one lookup a byte.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [DIGITS[i >> 4], DIGITS[i & 0xf]];
        i += 1;
    }
    t
};

fn hex_into(bytes: &[u8], out: &mut [u8]) {
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(*b)]);
    }
}
