//! The header grammars. Every function returns `None` for anything it does not fully accept.

use super::{Propagation, SpanId, TraceContext, TraceId};

fn lower_hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Decodes exactly `N` bytes of lower-case hex.
fn hex_exact<const N: usize>(s: &[u8]) -> Option<[u8; N]> {
    if s.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        out[i] = (lower_hex(pair[0])? << 4) | lower_hex(pair[1])?;
    }
    Some(out)
}

/// B3 trace ids are 64 or 128 bits; a 64-bit one is the low half.
fn b3_trace(s: &[u8]) -> Option<TraceId> {
    let id = match s.len() {
        32 => TraceId(hex_exact::<16>(s)?),
        16 => {
            let low = hex_exact::<8>(s)?;
            let mut id = [0u8; 16];
            id[8..].copy_from_slice(&low);
            TraceId(id)
        }
        _ => return None,
    };
    (!id.is_zero()).then_some(id)
}

fn span(s: &[u8]) -> Option<SpanId> {
    let id = SpanId(hex_exact::<8>(s)?);
    (!id.is_zero()).then_some(id)
}

/// W3C `traceparent`: `version-traceid-parentid-flags`, version 00 exactly as specified;
/// a later version may append fields after the four (taken as 00), version ff is invalid.
pub fn parse_traceparent(v: &[u8]) -> Option<TraceContext> {
    if v.len() < 55 {
        return None;
    }
    let version = hex_exact::<1>(&v[0..2])?[0];
    if version == 0xff || v[2] != b'-' || v[35] != b'-' || v[52] != b'-' {
        return None;
    }
    match (version, v.len()) {
        (0, 55) => {}
        (0, _) => return None,
        (_, 55) => {}
        (_, _) if v[55] == b'-' => {}
        _ => return None,
    }
    let trace_id = TraceId(hex_exact::<16>(&v[3..35])?);
    let span_id = SpanId(hex_exact::<8>(&v[36..52])?);
    let flags = hex_exact::<1>(&v[53..55])?[0];
    if trace_id.is_zero() || span_id.is_zero() {
        return None;
    }
    Some(TraceContext {
        trace_id,
        span_id,
        sampled: Some(flags & 1 == 1),
        tracestate: None,
        format: Propagation::W3c,
    })
}

/// B3 single: `{traceid}-{spanid}[-{sampled}[-{parentspanid}]]`. A lone sampling flag (`0`,
/// `1`, `d`) carries no ids and so no context to continue.
pub fn parse_b3_single(v: &[u8]) -> Option<TraceContext> {
    let mut parts = v.split(|c| *c == b'-');
    let trace_id = b3_trace(parts.next()?)?;
    let span_id = span(parts.next()?)?;
    let sampled = match parts.next() {
        None => None,
        Some(f) => Some(b3_flag(f)?),
    };
    if let Some(parent) = parts.next() {
        span(parent)?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(TraceContext {
        trace_id,
        span_id,
        sampled,
        tracestate: None,
        format: Propagation::B3,
    })
}

fn b3_flag(f: &[u8]) -> Option<bool> {
    match f {
        b"1" | b"d" | b"true" => Some(true),
        b"0" | b"false" => Some(false),
        _ => None,
    }
}

/// B3 multi: `x-b3-traceid` and `x-b3-spanid` required; `x-b3-sampled` (`1`/`0`, or the old
/// `true`/`false`) and `x-b3-flags: 1` (debug, implies sampled) optional.
pub fn parse_b3_multi(
    trace: Option<&[u8]>,
    span_id: Option<&[u8]>,
    sampled: Option<&[u8]>,
    flags: Option<&[u8]>,
) -> Option<TraceContext> {
    let trace_id = b3_trace(trace?)?;
    let span_id = span(span_id?)?;
    let debug = flags == Some(b"1".as_slice());
    let sampled = match (debug, sampled) {
        (true, _) => Some(true),
        (false, None) => None,
        (false, Some(f)) => Some(b3_flag(f)?),
    };
    Some(TraceContext {
        trace_id,
        span_id,
        sampled,
        tracestate: None,
        format: Propagation::B3Multi,
    })
}
