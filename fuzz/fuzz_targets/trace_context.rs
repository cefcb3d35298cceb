//! Fuzzes trace-context extraction: any bytes in `traceparent`, `tracestate`, `b3` and the
//! `x-b3-*` headers, tried in any order of formats. Must never panic; whatever is accepted
//! has non-zero ids and, written back out, is read again as the same trace and span.

#![no_main]

use ferry_filters::trace_context::{Propagation, extract, inject};
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 7] = [
    "traceparent",
    "tracestate",
    "b3",
    "x-b3-traceid",
    "x-b3-spanid",
    "x-b3-sampled",
    "x-b3-flags",
];

fuzz_target!(|data: &[u8]| {
    let Some((order, rest)) = data.split_first() else {
        return;
    };
    // The first byte picks the formats' order; the rest is split at 0xff into header values.
    let formats = match order % 4 {
        0 => [Propagation::W3c, Propagation::B3, Propagation::B3Multi],
        1 => [Propagation::B3, Propagation::W3c, Propagation::B3Multi],
        2 => [Propagation::B3Multi, Propagation::B3, Propagation::W3c],
        _ => [Propagation::W3c, Propagation::B3Multi, Propagation::B3],
    };
    let mut headers = HeaderMap::new();
    for (name, value) in NAMES.iter().zip(rest.split(|b| *b == 0xff)) {
        if let Ok(v) = HeaderValue::from_bytes(value) {
            headers.insert(HeaderName::from_static(name), v);
        }
    }
    let Some(ctx) = extract(&headers, &formats) else {
        return;
    };
    assert!(!ctx.trace_id.is_zero() && !ctx.span_id.is_zero());
    let mut out = HeaderMap::new();
    let sampled = ctx.sampled.unwrap_or(false);
    inject(&mut out, &formats, ctx.trace_id, ctx.span_id, sampled, None);
    let again = extract(&out, &formats).expect("what ferry writes, it reads");
    assert_eq!((again.trace_id, again.span_id), (ctx.trace_id, ctx.span_id));
});
