//! A caller that goes away before the answer's headers still leaves a line: no status, the
//! `failure` `cancelled`, the time it waited.

use std::time::Duration;

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Echo, HttpClient};
use http::Method;
use serde_json::json;

use crate::support::{LISTENER, by_id, cluster, config, start, wait_lines};

#[tokio::test]
async fn a_caller_gone_before_the_answer_is_logged_as_cancelled() -> anyhow::Result<()> {
    let echo = Echo::start("echo").await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("cancel.json");
    let ferry = start(&config(
        // sample 0: only errors are written, and a cancelled request is one.
        json!([{ "path": path.to_str().unwrap(), "sample": 0 }]),
        json!([{ "name": "slow", "to": "echo" }]),
        json!([cluster("echo", echo.addr(), false)]),
    ))
    .await?;
    let addr = ferry.listener(LISTENER)?;
    // h2c: dropping the call resets its stream, which ferry sees at once.
    let client = HttpClient::h2c();
    let req = request(
        Method::GET,
        addr,
        "/slow",
        &[("x-request-id", "gone"), ("x-test-delay-ms", "5000")],
        body_full(Bytes::new()),
    )?;
    let gave_up = tokio::time::timeout(Duration::from_millis(300), client.call(req)).await;
    assert!(gave_up.is_err(), "the upstream answered within 300 ms");
    let lines = wait_lines(&path, 1).await?;
    let line = by_id(&lines, "gone")?;
    assert_eq!(line["failure"], "cancelled", "{line}");
    assert!(line.get("status").is_none(), "no answer, no status: {line}");
    assert_eq!(
        (line["route"].as_str(), line["cluster"].as_str()),
        (Some("slow"), None)
    );
    let waited = line["duration_ms"].as_f64().unwrap();
    assert!((250.0..5000.0).contains(&waited), "waited {waited} ms");
    Ok(())
}
