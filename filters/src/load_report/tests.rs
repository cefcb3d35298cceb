use std::collections::HashMap;

use base64::Engine as _;
use http::{HeaderMap, HeaderValue};
use prost::Message as _;

use super::*;

/// `xds.data.orca.v3.OrcaLoadReport` (the fields a balancer reads; field numbers from the
/// proto).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct OrcaLoadReport {
    #[prost(double, tag = "1")]
    cpu_utilization: f64,
    #[prost(double, tag = "2")]
    mem_utilization: f64,
    #[prost(map = "string, double", tag = "4")]
    request_cost: HashMap<String, f64>,
    #[prost(map = "string, double", tag = "5")]
    utilization: HashMap<String, f64>,
    #[prost(double, tag = "6")]
    rps_fractional: f64,
    #[prost(double, tag = "7")]
    eps: f64,
    #[prost(map = "string, double", tag = "8")]
    named_metrics: HashMap<String, f64>,
    #[prost(double, tag = "9")]
    application_utilization: f64,
}

fn headers(name: &'static str, value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(name, HeaderValue::from_str(value).unwrap());
    h
}

fn name(s: &str) -> MetricName {
    s.parse().unwrap()
}

#[test]
fn metric_names_parse_and_unknown_ones_are_refused() {
    assert_eq!(
        name("cpu_utilization"),
        MetricName::Field(Field::CpuUtilization)
    );
    assert_eq!(
        name("named_metrics.kv_cache_usage_perc"),
        MetricName::Named("kv_cache_usage_perc".into())
    );
    assert_eq!(
        name("utilization.gpu"),
        MetricName::Utilization("gpu".into())
    );
    assert_eq!(
        name("request_cost.tokens"),
        MetricName::RequestCost("tokens".into())
    );
    for bad in ["", "cpu", "named_metrics.", "other.x", "named_metrics"] {
        assert!(bad.parse::<MetricName>().is_err(), "{bad:?}");
    }
}

#[test]
fn text_reports_as_vllm_sends_them() {
    let h = headers(
        HEADER,
        "TEXT named_metrics.kv_cache_usage_perc=0.4, named_metrics.num_requests_waiting=3.0",
    );
    assert_eq!(
        metric(&h, &name("named_metrics.kv_cache_usage_perc")),
        Some(0.4)
    );
    assert_eq!(
        metric(&h, &name("named_metrics.num_requests_waiting")),
        Some(3.0)
    );
    assert_eq!(metric(&h, &name("cpu_utilization")), None);
    let h = headers(
        HEADER,
        "TEXT cpu_utilization=0.3,mem_utilization=0.8,rps_fractional=10",
    );
    assert_eq!(metric(&h, &name("cpu_utilization")), Some(0.3));
    assert_eq!(metric(&h, &name("rps_fractional")), Some(10.0));
}

#[test]
fn json_reports() {
    let h = headers(
        HEADER,
        r#"JSON {"cpu_utilization": 0.5, "named_metrics": {"kv_cache_usage_perc": 0.25}, "utilization": {"gpu": 0.9}}"#,
    );
    assert_eq!(metric(&h, &name("cpu_utilization")), Some(0.5));
    assert_eq!(
        metric(&h, &name("named_metrics.kv_cache_usage_perc")),
        Some(0.25)
    );
    assert_eq!(metric(&h, &name("utilization.gpu")), Some(0.9));
    assert_eq!(metric(&h, &name("named_metrics.other")), None);
}

#[test]
fn binary_reports_in_the_bin_header_padded_or_not() {
    let report = OrcaLoadReport {
        cpu_utilization: 0.75,
        named_metrics: [("queue".to_string(), 7.0)].into(),
        ..Default::default()
    };
    let bytes = report.encode_to_vec();
    for b64 in [
        base64::engine::general_purpose::STANDARD.encode(&bytes),
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes),
    ] {
        let h = headers(HEADER_BIN, &b64);
        assert_eq!(metric(&h, &name("cpu_utilization")), Some(0.75));
        assert_eq!(metric(&h, &name("named_metrics.queue")), Some(7.0));
        assert_eq!(metric(&h, &name("named_metrics.none")), None);
    }
}

#[test]
fn malformed_or_hostile_reports_are_no_report() {
    let kv = name("named_metrics.kv");
    for bad in [
        "TEXT named_metrics.kv=abc",
        "TEXT named_metrics.kv=-1",
        "TEXT named_metrics.kv=NaN",
        "TEXT named_metrics.kv=inf",
        "XML <kv>1</kv>",
        "JSON {not json",
        r#"JSON {"named_metrics": {"kv": "0.5"}}"#,
        "named_metrics.kv=0.5",
    ] {
        assert_eq!(metric(&headers(HEADER, bad), &kv), None, "{bad}");
    }
    assert_eq!(metric(&headers(HEADER_BIN, "!!not base64!!"), &kv), None);
    assert_eq!(metric(&headers(HEADER_BIN, "AAAA"), &kv), None);
    let huge = format!("TEXT {}named_metrics.kv=1", "x=1, ".repeat(3000));
    assert_eq!(
        metric(&headers(HEADER, &huge), &kv),
        None,
        "over the size bound"
    );
    assert_eq!(metric(&HeaderMap::new(), &kv), None);
}

#[test]
fn text_reports_written_are_read_back() {
    let text = text_report([("ferry_in_flight", 3.0), ("ferry_queued", 0.5)]);
    assert_eq!(
        text,
        "TEXT named_metrics.ferry_in_flight=3, named_metrics.ferry_queued=0.5"
    );
    let h = headers(HEADER, &text);
    assert_eq!(
        metric(&h, &name("named_metrics.ferry_in_flight")),
        Some(3.0)
    );
    assert_eq!(metric(&h, &name("named_metrics.ferry_queued")), Some(0.5));
}

#[test]
fn the_binary_walk_reads_what_protobuf_decoding_would() {
    let report = OrcaLoadReport {
        cpu_utilization: 0.5,
        mem_utilization: 0.25,
        request_cost: [("kv".to_string(), 9.0)].into(),
        utilization: [("kv".to_string(), 0.125)].into(),
        rps_fractional: 12.5,
        eps: 0.75,
        named_metrics: [("kv".to_string(), 0.5), ("other".to_string(), 2.0)].into(),
        application_utilization: 0.375,
    };
    let mut bytes = report.encode_to_vec();
    // Fields it does not know (the deprecated rps varint 3, a fixed32 field 10) are skipped.
    bytes.extend_from_slice(&[0x18, 0x96, 0x01, 0x55, 1, 2, 3, 4]);
    // A later entry for the same key wins, as in a decoded map.
    bytes.extend_from_slice(&[0x42, 0x0d, 0x0a, 0x02, b'k', b'v', 0x11]);
    bytes.extend_from_slice(&0.875f64.to_le_bytes());
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let h = headers(HEADER_BIN, &b64);
    for (n, want) in [
        ("cpu_utilization", 0.5),
        ("mem_utilization", 0.25),
        ("request_cost.kv", 9.0),
        ("utilization.kv", 0.125),
        ("rps_fractional", 12.5),
        ("eps", 0.75),
        ("named_metrics.kv", 0.875),
        ("named_metrics.other", 2.0),
        ("application_utilization", 0.375),
    ] {
        assert_eq!(metric(&h, &name(n)), Some(want), "{n}");
    }
    // Truncated: no report at all, not a half-read one.
    let cut = base64::engine::general_purpose::STANDARD.encode(&bytes[..bytes.len() - 12]);
    assert_eq!(metric(&headers(HEADER_BIN, &cut), &name("eps")), None);
    // An absent scalar is 0, as proto3 decodes it; an absent key is no value.
    let empty = headers(HEADER_BIN, "");
    assert_eq!(metric(&empty, &name("cpu_utilization")), Some(0.0));
    assert_eq!(metric(&empty, &name("named_metrics.kv")), None);
}
