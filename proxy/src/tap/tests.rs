use std::time::{Duration, UNIX_EPOCH};

use http_body_util::BodyExt;

use super::*;
use crate::access_log::RequestText;

fn record(route: &str, status: u16, authority: &str) -> AccessRecord {
    AccessRecord {
        start: UNIX_EPOCH + Duration::from_secs(1_796_455_800),
        listener: "inbound".into(),
        route: Some(route.into()),
        model: Some("resnet".into()),
        model_version: None,
        cluster: None,
        endpoint: None,
        protocol: http::Version::HTTP_11,
        method: http::Method::GET,
        request: RequestText::new("/x", Some(authority), Some("r-1")),
        grpc: false,
        status: Some(status),
        grpc_status: None,
        translate: None,
        bytes_in: 0,
        bytes_out: 0,
        duration: Duration::from_millis(1),
        total: Duration::from_millis(1),
        upstream_duration: None,
        ferry_duration: Duration::from_millis(1),
        attempts: 0,
        failure: None,
        peer_identity: None,
        trace_id: None,
        span_id: None,
        ratelimit: None,
        tokens: None,
    }
}

fn facts(status: Option<u16>) -> Facts<'static> {
    Facts {
        route: Some("infer"),
        model: Some("resnet"),
        status,
        authority: Some("Models.Local:80"),
    }
}

fn filter(query: &str) -> TapFilter {
    TapQuery::parse(Some(query)).unwrap().filter
}

#[test]
fn filters_match_exact_values_status_classes_ranges_and_lists() {
    let f = facts(Some(503));
    assert!(TapFilter::default().admits(&f), "no filter: everything");
    assert!(filter("route=infer").admits(&f));
    assert!(!filter("route=inf").admits(&f), "exact, not a prefix");
    assert!(
        filter("route=other&route=infer").admits(&f),
        "repeated: any"
    );
    assert!(filter("model=resnet&route=infer").admits(&f));
    assert!(
        !filter("model=resnet&route=other").admits(&f),
        "all of them"
    );
    assert!(
        filter("authority=models.local%3A80").admits(&f),
        "case-blind"
    );
    for yes in ["5xx", "503", "500-504", "404,5XX", "200&status=503"] {
        assert!(filter(&format!("status={yes}")).admits(&f), "{yes}");
    }
    for no in ["4xx", "500", "504-599", "2xx,404"] {
        assert!(!filter(&format!("status={no}")).admits(&f), "{no}");
    }
    assert!(
        !filter("status=5xx").admits(&facts(None)),
        "a request without an answer has no status to match"
    );
    assert!(filter("route=infer").admits(&facts(None)));
    assert!(!filter("route=infer").admits(&Facts::default()));
}

#[test]
fn bad_queries_name_the_parameter() {
    let err = |q: &str| TapQuery::parse(Some(q)).unwrap_err();
    assert_eq!(err("route=a&rout=b"), TapQueryError::Unknown("rout".into()));
    assert_eq!(err("route=a&rout=b").parameter(), "rout");
    assert_eq!(err("model="), TapQueryError::Empty("model".into()));
    assert_eq!(err("status=6xx"), TapQueryError::Status("6xx".into()));
    assert_eq!(err("status=5xx,99").parameter(), "status");
    assert_eq!(err("status=504-500").parameter(), "status");
    assert_eq!(err("status=5000").parameter(), "status");
    assert_eq!(err("format=yaml").parameter(), "format");
    assert_eq!(err("route=%zz").parameter(), "route");
    assert_eq!(
        err("route=a&rout=b").to_string(),
        "unknown filter parameter \"rout\" (known: route, model, status, authority, format)"
    );
    let q = TapQuery::parse(Some("format=text&route=a+b%2Fc")).unwrap();
    assert_eq!(q.format, TapFormat::Text);
    assert_eq!(q.filter, filter("route=a%20b/c"));
    assert_eq!(TapQuery::parse(None).unwrap(), TapQuery::default());
}

#[tokio::test]
async fn a_tap_streams_the_records_its_filter_admits_and_detaches_when_dropped() {
    let taps = Arc::new(Taps::default());
    assert!(!taps.listening());
    let mut body = taps
        .attach(TapQuery::parse(Some("status=5xx")).unwrap())
        .unwrap();
    assert!(taps.listening());
    assert!(taps.interested(&facts(Some(502))));
    assert!(!taps.interested(&facts(Some(200))));
    taps.offer(&record("a", 200, "h"));
    taps.offer(&record("b", 503, "h"));
    let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
    let line: serde_json::Value = serde_json::from_slice(&frame).unwrap();
    assert_eq!(
        (line["route"].as_str(), line["status"].as_u64()),
        (Some("b"), Some(503))
    );
    drop(body);
    assert!(!taps.listening(), "a dropped body detaches its tap");
    assert_eq!(taps.count(), 0);
}

#[tokio::test]
async fn at_most_max_taps_attach_and_a_full_queue_counts_what_it_loses() {
    let taps = Arc::new(Taps::new(2));
    let text = TapQuery::parse(Some("format=text")).unwrap();
    let mut slow = taps.attach(text).unwrap();
    let _other = taps.attach(TapQuery::default()).unwrap();
    assert!(taps.attach(TapQuery::default()).is_err(), "over the limit");
    for _ in 0..QUEUE + 5 {
        taps.offer(&record("a", 200, "h"));
    }
    assert_eq!(slow.tap.dropped(), 5, "the queue holds QUEUE records");
    let mut lines = 0;
    let mut dropped = None;
    while dropped.is_none() {
        let frame = slow.frame().await.unwrap().unwrap().into_data().unwrap();
        for line in std::str::from_utf8(&frame).unwrap().lines() {
            match line.strip_prefix("# dropped ") {
                Some(n) => dropped = Some(n.to_owned()),
                None => {
                    assert!(
                        line.contains(" inbound a \"GET /x HTTP/1.1\" 200 "),
                        "{line}"
                    );
                    lines += 1;
                }
            }
        }
    }
    assert_eq!((lines, dropped.as_deref()), (QUEUE, Some("5")));
    drop(slow);
    assert!(taps.attach(TapQuery::default()).is_ok(), "a slot came free");
}

#[tokio::test]
async fn the_admin_answer_is_a_stream_a_400_naming_the_parameter_or_a_503() {
    let taps = Arc::new(Taps::new(1));
    let bad = answer(&taps, Some("route=a&bogus=1"));
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let body = bad.into_body().collect().await.unwrap().to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["parameter"], "bogus");
    let ok = answer(&taps, Some("route=a"));
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(ok.headers()[CONTENT_TYPE], "application/x-ndjson");
    let full = answer(&taps, None);
    assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = full.into_body().collect().await.unwrap().to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["limit"], 1);
    drop(ok);
    assert_eq!(taps.count(), 0);
}
