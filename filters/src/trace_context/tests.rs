//! Valid headers of each format, every malformation the spec names, round trips, and a
//! property test: no input makes a parser panic, and whatever it accepts re-encodes to itself.

use http::{HeaderMap, HeaderValue};
use proptest::prelude::*;

use super::*;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn w3c_traceparent_is_read_and_malformed_ones_are_absent() {
    let ctx = parse_traceparent(TP.as_bytes()).unwrap();
    assert_eq!(ctx.trace_id.to_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(ctx.span_id.to_hex(), "00f067aa0ba902b7");
    assert_eq!(ctx.sampled, Some(true));
    let bad = [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
    ];
    for b in bad {
        assert!(parse_traceparent(b.as_bytes()).is_none(), "accepted {b:?}");
    }
    // A later version may add fields.
    let future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-whatever";
    assert_eq!(
        parse_traceparent(future.as_bytes()).unwrap().sampled,
        Some(false)
    );
}

#[test]
fn b3_single_and_multi_are_read() {
    let one =
        parse_b3_single(b"80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90")
            .unwrap();
    assert_eq!(one.sampled, Some(true));
    let short = parse_b3_single(b"64fe8b2a57d3eff7-e457b5a2e4d86bd1").unwrap();
    assert_eq!(short.trace_id.to_hex(), "000000000000000064fe8b2a57d3eff7");
    assert_eq!(short.sampled, None);
    for bad in [
        &b"0"[..],
        b"1",
        b"d",
        b"64fe8b2a57d3eff7-e457b5a2e4d86bd1-x",
        b"zz-e457b5a2e4d86bd1",
    ] {
        assert!(
            parse_b3_single(bad).is_none(),
            "accepted {:?}",
            String::from_utf8_lossy(bad)
        );
    }
    let multi = parse_b3_multi(
        Some(b"463ac35c9f6413ad48485a3953bb6124"),
        Some(b"a2fb4a1d1a96d312"),
        Some(b"0"),
        Some(b"1"),
    )
    .unwrap();
    assert_eq!(multi.sampled, Some(true), "debug implies sampled");
    assert!(parse_b3_multi(None, Some(b"a2fb4a1d1a96d312"), None, None).is_none());
}

#[test]
fn extraction_takes_the_first_configured_format_that_is_valid() {
    let mut h = HeaderMap::new();
    h.insert("traceparent", HeaderValue::from_static("garbage"));
    h.insert(
        "b3",
        HeaderValue::from_static("64fe8b2a57d3eff7-e457b5a2e4d86bd1-1"),
    );
    let ctx = extract(&h, &[Propagation::W3c, Propagation::B3]).unwrap();
    assert_eq!(ctx.format, Propagation::B3);
    assert!(extract(&h, &[Propagation::W3c]).is_none());
}

#[test]
fn injection_writes_every_format_and_carries_tracestate() {
    let mut h = HeaderMap::new();
    let ctx = parse_traceparent(TP.as_bytes()).unwrap();
    let state = HeaderValue::from_static("congo=t61rcWkgMzE");
    let span = SpanId([1, 2, 3, 4, 5, 6, 7, 8]);
    inject(
        &mut h,
        &[Propagation::W3c, Propagation::B3, Propagation::B3Multi],
        ctx.trace_id,
        span,
        true,
        Some(&state),
    );
    assert_eq!(
        h["traceparent"],
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01"
    );
    assert_eq!(h["tracestate"], "congo=t61rcWkgMzE");
    assert_eq!(
        h["b3"],
        "4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-1"
    );
    assert_eq!(h["x-b3-spanid"], "0102030405060708");
    let back = extract(&h, &[Propagation::B3Multi]).unwrap();
    assert_eq!((back.trace_id, back.span_id), (ctx.trace_id, span));
}

proptest! {
    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
        let _ = parse_traceparent(&bytes);
        let _ = parse_b3_single(&bytes);
        let _ = parse_b3_multi(Some(&bytes), Some(&bytes), Some(&bytes), Some(&bytes));
    }

    #[test]
    fn accepted_traceparents_round_trip(t in any::<[u8; 16]>(), s in any::<[u8; 8]>(), sampled in any::<bool>()) {
        prop_assume!(t != [0; 16] && s != [0; 8]);
        let mut h = HeaderMap::new();
        inject(&mut h, &[Propagation::W3c], TraceId(t), SpanId(s), sampled, None);
        let back = extract(&h, &[Propagation::W3c]).unwrap();
        prop_assert_eq!(back.trace_id, TraceId(t));
        prop_assert_eq!(back.span_id, SpanId(s));
        prop_assert_eq!(back.sampled, Some(sampled));
    }
}

#[test]
fn ip_text_matches_display() {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    for ip in [
        IpAddr::V4(Ipv4Addr::new(0, 0, 0, 0)),
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
        IpAddr::V4(Ipv4Addr::new(10, 99, 100, 255)),
        IpAddr::V4(Ipv4Addr::new(9, 10, 109, 110)),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ] {
        assert_eq!(super::ip_text(ip), ip.to_string());
    }
    assert_eq!(super::join_name("GET", "default"), "GET default");
}

#[test]
fn values_carved_from_one_buffer_stay_independent() {
    // Far more values than one buffer holds: each must keep its own bytes after the buffer
    // moves on (and is replaced), so a value held by a long request never changes.
    let values: Vec<_> = (0..500u16)
        .map(|i| {
            let mut headers = http::HeaderMap::new();
            let mut trace = [0u8; 16];
            trace[14..].copy_from_slice(&i.to_be_bytes());
            trace[0] = 1;
            super::inject(
                &mut headers,
                &[super::Propagation::W3c],
                super::TraceId(trace),
                super::SpanId([2; 8]),
                i % 2 == 0,
                None,
            );
            (i, headers)
        })
        .collect();
    for (i, headers) in values {
        let want = format!(
            "00-01{}{:04x}-0202020202020202-0{}",
            "0".repeat(26),
            i,
            u8::from(i % 2 == 0)
        );
        assert_eq!(
            headers.get("traceparent").and_then(|v| v.to_str().ok()),
            Some(want.as_str())
        );
    }
}
