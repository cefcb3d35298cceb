use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use super::*;
use crate::access_log::RequestText;

fn record(id: usize, ttfb_ms: u64, status: u16) -> AccessRecord {
    AccessRecord {
        start: UNIX_EPOCH + Duration::from_secs(1_796_455_800),
        listener: "main".into(),
        route: Some("chat".into()),
        model: None,
        model_version: None,
        cluster: None,
        endpoint: None,
        protocol: http::Version::HTTP_11,
        method: http::Method::GET,
        request: RequestText::new("/v2/models/llama/ready", None, Some(&format!("r-{id}"))),
        grpc: false,
        status: Some(status),
        grpc_status: None,
        translate: None,
        bytes_in: 0,
        bytes_out: 0,
        duration: Duration::from_millis(ttfb_ms),
        total: Duration::from_millis(ttfb_ms),
        upstream_duration: None,
        ferry_duration: Duration::ZERO,
        attempts: 1,
        failure: None,
        peer_identity: None,
        ratelimit: None,
        tokens: None,
        trace_id: None,
        span_id: None,
    }
}

fn ids(v: &Value, list: &str) -> Vec<String> {
    v[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["request_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn keeps_the_fifty_slowest_and_raises_its_threshold() {
    let recent = Recent::default();
    assert!(
        recent.wants(false, Duration::ZERO),
        "empty: everything may enter"
    );
    for i in 1..=60 {
        recent.offer(&record(i, i as u64, 200));
    }
    // 11..=60 ms kept: the fastest of them is the bar.
    assert_eq!(recent.threshold(), Duration::from_millis(11));
    assert!(!recent.wants(false, Duration::from_millis(5)));
    assert!(recent.wants(false, Duration::from_millis(12)));
    assert!(recent.wants(true, Duration::ZERO), "failures always");
    let v: Value = serde_json::from_slice(&recent.json()).unwrap();
    let slowest = ids(&v, "slowest");
    assert_eq!(slowest.len(), KEEP);
    assert_eq!(slowest.first().map(String::as_str), Some("r-60"));
    assert_eq!(slowest.last().map(String::as_str), Some("r-11"));
    assert!(ids(&v, "failed").is_empty(), "200s are not failures");
}

#[test]
fn keeps_the_last_fifty_failures_newest_first() {
    let recent = Recent::default();
    for i in 0..55 {
        recent.offer(&record(i, 1, if i % 2 == 0 { 503 } else { 404 }));
    }
    let mut ferry_made = record(99, 1, 429);
    ferry_made.failure = Some("rate_limited");
    recent.offer(&ferry_made);
    let v: Value = serde_json::from_slice(&recent.json()).unwrap();
    let failed = ids(&v, "failed");
    // 28 × 503 (4xx from the upstream are not failures) and ferry's own 429.
    assert_eq!(failed.len(), 29);
    assert_eq!(failed[0], "r-99");
    assert_eq!(failed[1], "r-54");
    for i in 0..60 {
        recent.offer(&record(100 + i, 1, 500));
    }
    let v: Value = serde_json::from_slice(&recent.json()).unwrap();
    let failed = ids(&v, "failed");
    assert_eq!(failed.len(), KEEP);
    assert_eq!(failed[0], "r-159");
    assert_eq!(v["failed"][0]["status"], 500);
}
