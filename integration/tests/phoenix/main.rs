//! Proves the Phoenix harness (`ferry_integration::phoenix`) before ferry's tracing tests rely
//! on it: the real OpenTelemetry Python SDK and OTLP exporters (`peers/otlp_send.py`, pinned in
//! `peers/install-phoenix.sh`) send spans over OTLP gRPC and OTLP/HTTP protobuf to a real
//! Phoenix, and everything is asserted through Phoenix's own query API. A missing or failed
//! install fails the test; nothing is skipped.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails the test by panicking"
)]

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use ferry_integration::Phoenix;
use ferry_integration::phoenix::{self, Span, StatusCode};
use ferry_integration::workspace;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::process::Command;

/// From export to queryable: Phoenix inserts in batches, well under a second when idle.
const PATIENCE: Duration = Duration::from_secs(20);
/// The sender exits in ~2 s; its exporters retry a dead endpoint for longer than that.
const SENDER_PATIENCE: Duration = Duration::from_secs(60);

/// One span as `otlp_send.py` reports it sent.
#[derive(Debug, Deserialize)]
struct Sent {
    name: String,
    transport: String,
    trace_id: String,
    span_id: String,
    parent_id: Option<String>,
}

/// Runs `otlp_send.py` with `spans` (see its docstring) as a process whose resource puts them
/// in `project`, as a test would run ferry.
async fn send(phoenix: &Phoenix, project: &str, spans: Value) -> anyhow::Result<Vec<Sent>> {
    let python = phoenix::python().await?;
    let script = workspace::crate_dir().join("peers").join("otlp_send.py");
    let plan = json!({
        "grpc": phoenix.otlp_grpc_endpoint(),
        "http": phoenix.otlp_http_endpoint(),
        "spans": spans,
    });
    let mut cmd = Command::new(&python);
    // Only this test's resource and endpoints: nothing inherited may redirect the exporters.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            cmd.env_remove(&name);
        }
    }
    let mut child = cmd
        .arg(&script)
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            Phoenix::resource_attributes(project),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("spawning {}", python.display()))?;
    let mut stdin = child.stdin.take().context("sender stdin")?;
    stdin.write_all(plan.to_string().as_bytes()).await?;
    drop(stdin);
    let out = tokio::time::timeout(SENDER_PATIENCE, child.wait_with_output())
        .await
        .context("otlp_send.py did not finish")??;
    if !out.status.success() {
        bail!(
            "otlp_send.py failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "otlp_send.py printed no JSON: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name:?} in {spans:#?}"))
}

fn names(spans: &[Span]) -> Vec<&str> {
    let mut names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names
}

/// Phoenix is started once for everything here: it takes 10-25 s and ~450 MB.
#[tokio::test]
async fn otlp_grpc_and_http_spans_come_back_through_the_query_api() {
    let mut phoenix = Phoenix::start().await.unwrap();
    let project = Phoenix::unique_project("phoenix selftest");
    let other = Phoenix::unique_project("phoenix-selftest-other");
    assert_ne!(project, other);
    assert!(project.starts_with("phoenix-selftest-"), "{project}");

    let (sent, sent_other) = tokio::join!(
        send(
            &phoenix,
            &project,
            json!([
                {
                    "transport": "grpc",
                    "name": "ferry.request",
                    "attributes": {
                        "http.request.method": "GET",
                        "http.response.status_code": 200,
                        "url.path": "/v1/models",
                    },
                    "children": [{
                        "name": "ferry.upstream",
                        "attributes": { "server.address": "127.0.0.1", "server.port": 8080 },
                        "events": [{ "name": "retry", "attributes": { "retry.attempt": 2 } }],
                        "status": "ERROR",
                        "status_message": "upstream reset",
                    }],
                },
                {
                    "transport": "http",
                    "name": "ferry.over_http",
                    "attributes": { "otlp.transport": "http/protobuf" },
                    "status": "OK",
                },
            ]),
        ),
        send(
            &phoenix,
            &other,
            json!([
                { "transport": "grpc", "name": "other.grpc" },
                { "transport": "http", "name": "other.http" },
            ]),
        ),
    );
    let sent = sent.unwrap();
    let sent_other = sent_other.unwrap();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent_other.len(), 2, "{sent_other:?}");

    let spans = phoenix
        .wait_for_span_count(&project, 3, PATIENCE)
        .await
        .unwrap();
    assert_eq!(
        names(&spans),
        ["ferry.over_http", "ferry.request", "ferry.upstream"],
        "{spans:#?}"
    );
    // Exactly what the SDK reported sending, ids and links included.
    for s in &sent {
        let got = named(&spans, &s.name);
        assert_eq!(
            (&got.trace_id, &got.span_id, &got.parent_id),
            (&s.trace_id, &s.span_id, &s.parent_id),
            "{} sent over {}",
            s.name,
            s.transport
        );
    }

    let parent = named(&spans, "ferry.request");
    let child = named(&spans, "ferry.upstream");
    let over_http = named(&spans, "ferry.over_http");
    assert!(parent.is_root());
    assert_eq!(child.parent_id.as_ref(), Some(&parent.span_id));
    assert_eq!(child.trace_id, parent.trace_id);
    assert!(over_http.is_root());
    assert_ne!(over_http.trace_id, parent.trace_id);

    assert_eq!(parent.attr_str("http.request.method"), Some("GET"));
    assert_eq!(parent.attr_i64("http.response.status_code"), Some(200));
    assert_eq!(parent.attr_str("url.path"), Some("/v1/models"));
    assert_eq!(parent.status_code, StatusCode::Unset);
    assert_eq!(child.attr_str("server.address"), Some("127.0.0.1"));
    assert_eq!(child.attr_i64("server.port"), Some(8080));
    assert_eq!(child.status_code, StatusCode::Error);
    assert_eq!(child.status_message, "upstream reset");
    let retry = child.event("retry").expect("retry event");
    assert_eq!(retry.attr("retry.attempt"), Some(&json!(2)));
    assert_eq!(over_http.attr_str("otlp.transport"), Some("http/protobuf"));
    assert_eq!(over_http.status_code, StatusCode::Ok);

    // Times: the child runs inside its parent, and its event inside the child.
    assert!(parent.duration_micros() >= child.duration_micros());
    assert!(parent.start_unix_micros() <= child.start_unix_micros());
    assert!(child.end_unix_micros() <= parent.end_unix_micros());
    let at = retry.unix_micros().expect("event time");
    assert!((child.start_unix_micros()..=child.end_unix_micros()).contains(&at));
    // Oldest start first.
    assert!(
        spans
            .windows(2)
            .all(|w| w[0].start_unix_micros() <= w[1].start_unix_micros())
    );

    // Pages of one span follow next_cursor (base64 with `=`) to the same answer.
    assert_eq!(phoenix.spans_paged(&project, 1).await.unwrap(), spans);

    // Both transports honoured the other sender's resource: its spans are there, and only there.
    let theirs = phoenix
        .wait_for_spans(&other, PATIENCE, |s| s.len() >= 2)
        .await
        .unwrap();
    assert_eq!(names(&theirs), ["other.grpc", "other.http"]);
    let ours = phoenix.spans(&project).await.unwrap();
    assert_eq!(ours, spans, "a span of the other project leaked in");

    let missing = Phoenix::unique_project("never-sent");
    let err = phoenix.spans(&missing).await.unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");

    // A killed Phoenix is a dead backend: queries fail and the OTLP ports refuse connections.
    phoenix.kill().await;
    assert!(phoenix.healthz().await.is_err());
    assert!(phoenix.spans(&project).await.is_err());
    assert!(
        tokio::net::TcpStream::connect(phoenix.grpc_addr())
            .await
            .is_err()
    );
}
