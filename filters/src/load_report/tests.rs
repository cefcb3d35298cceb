use base64::Engine as _;
use http::{HeaderMap, HeaderValue};
use prost::Message as _;

use super::*;

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
