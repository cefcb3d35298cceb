//! One CLIENT span per upstream attempt: a retried request has one per try (the retry counted
//! in `http.request.resend_count`), and an upstream that refuses connections shows as a failed
//! attempt whose `connect` child span failed.

use std::sync::Arc;

use ferry_integration::phoenix::StatusCode as SpanStatus;
use ferry_integration::upstream::echo::STATUS_HEADER;
use ferry_integration::{Echo, HttpClient, Phoenix};
use http::StatusCode;
use serde_json::json;

use crate::support::{
    assert_nested, caller, children, config, describe, get, in_trace, one, otlp_grpc,
    wait_for_trace,
};

pub async fn every_attempt_has_its_span(phoenix: Arc<Phoenix>) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("attempts");
    let echo = Echo::start("model").await?;
    let closed = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        l.local_addr()?
    };
    let ferry = crate::support::start(
        &config(
            json!({ "otlp": otlp_grpc(&phoenix) }),
            json!([{
                "name": "main",
                "address": "127.0.0.1:0",
                "routes": [
                    {
                        "name": "retried",
                        "match": { "path": { "prefix": "/retried" } },
                        "retry": { "attempts": 2, "on": ["http-503"] },
                        "to": "model",
                    },
                    { "name": "down", "match": { "path": { "prefix": "/down" } }, "to": "gone" },
                ],
            }]),
            json!([
                { "name": "model", "endpoints": [echo.addr().to_string()] },
                { "name": "gone", "endpoints": [closed.to_string()] },
            ]),
        ),
        &project,
    )
    .await?;
    let addr = ferry.listener("main")?;
    let client = HttpClient::http1();

    // Both tries answer 503: two attempts, the second a resend.
    let (retried, retried_span) = caller();
    let reply = get(
        &client,
        addr,
        "/retried",
        &[
            ("traceparent", &format!("00-{retried}-{retried_span}-01")),
            (STATUS_HEADER, "503"),
        ],
    )
    .await?;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(echo.requests(), 2, "the 503 was retried once");
    let spans = phoenix
        .wait_for_spans(&project, crate::support::PATIENCE, |spans| {
            let t = in_trace(spans, &retried);
            t.iter().filter(|s| s.name == "GET model").count() == 2
                && t.iter().any(|s| s.name == "GET retried")
        })
        .await?;
    let trace = in_trace(&spans, &retried);
    let hop = one(&trace, "GET retried");
    assert_eq!(hop.status_code, SpanStatus::Error, "{hop:#?}");
    assert_eq!(hop.attr_i64("http.response.status_code"), Some(503));
    let mut tries = children(&trace, hop, "GET model");
    tries.sort_by_key(|s| s.start_unix_micros());
    assert_eq!(tries.len(), 2, "{}", describe(&trace));
    for t in &tries {
        assert_nested(hop, t);
        assert_eq!(t.attr_i64("http.response.status_code"), Some(503), "{t:#?}");
    }
    assert!(
        tries[0].attr("http.request.resend_count").is_none(),
        "{:#?}",
        tries[0]
    );
    assert_eq!(
        tries[1].attr_i64("http.request.resend_count"),
        Some(1),
        "{:#?}",
        tries[1]
    );
    assert!(
        tries[0].end_unix_micros() <= tries[1].start_unix_micros(),
        "the resend starts after the first try ended: {}",
        describe(&tries)
    );

    // Nothing listens: the attempt fails at connect.
    let (down, down_span) = caller();
    let reply = get(
        &client,
        addr,
        "/down",
        &[("traceparent", &format!("00-{down}-{down_span}-01"))],
    )
    .await?;
    assert!(reply.status.is_server_error(), "{}", reply.status);
    let spans = wait_for_trace(&phoenix, &project, &down, &["GET down", "GET gone"]).await?;
    let trace = in_trace(&spans, &down);
    // The SERVER span records the answer the caller got.
    let hop = one(&trace, "GET down");
    assert_eq!(hop.status_code, SpanStatus::Error, "{hop:#?}");
    assert_eq!(
        hop.attr_i64("http.response.status_code"),
        Some(503),
        "{hop:#?}"
    );
    assert_eq!(hop.attr_str("error.type"), Some("unavailable"), "{hop:#?}");
    let attempt = one(&trace, "GET gone");
    assert_nested(hop, attempt);
    assert_eq!(attempt.status_code, SpanStatus::Error, "{attempt:#?}");
    assert_eq!(
        attempt.attr_str("error.type"),
        Some("connect"),
        "{attempt:#?}"
    );
    assert_eq!(
        attempt.attr_i64("server.port"),
        Some(i64::from(closed.port()))
    );
    let connects = children(&trace, attempt, "connect");
    assert_eq!(connects.len(), 1, "{}", describe(&trace));
    assert_nested(attempt, connects[0]);
    assert_eq!(
        connects[0].status_code,
        SpanStatus::Error,
        "{:#?}",
        connects[0]
    );
    Ok(())
}
