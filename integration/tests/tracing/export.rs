//! How spans leave ferry: over OTLP gRPC and OTLP/HTTP protobuf (with the `/v1/traces` path
//! appended to an endpoint that has none, or as written), counted as exported; and on SIGTERM,
//! spans of requests finished just before, and of one still in flight, are flushed before ferry
//! exits.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::upstream::echo::DELAY_HEADER;
use ferry_integration::{Admin, Echo, Ferry, HttpClient, Phoenix, eventually};
use http::StatusCode;
use serde_json::{Value, json};

use crate::support::{
    PATIENCE, caller, get, in_trace, one, otlp_grpc, sidecar, upstream_traceparent, wait_for_trace,
};

const HOP: &str = "GET models";
const ATTEMPT: &str = "GET model";

pub async fn grpc_and_http_exports_arrive(phoenix: Arc<Phoenix>) -> anyhow::Result<()> {
    let echo = Echo::start("model").await?;
    let exports: [(&str, Value); 3] = [
        ("otlp-grpc", otlp_grpc(&phoenix)),
        (
            "otlp-http-base",
            json!({ "endpoint": phoenix.otlp_http_endpoint(), "protocol": "http" }),
        ),
        (
            "otlp-http-full",
            json!({ "endpoint": phoenix.otlp_http_traces_url(), "protocol": "http" }),
        ),
    ];
    for (what, otlp) in exports {
        let project = Phoenix::unique_project(what);
        let ferry =
            crate::support::start(&sidecar(json!({ "otlp": otlp }), echo.addr()), &project).await?;
        let (trace_id, span) = caller();
        let reply = get(
            &HttpClient::http1(),
            ferry.listener("main")?,
            "/x",
            &[("traceparent", &format!("00-{trace_id}-{span}-01"))],
        )
        .await?;
        assert_eq!(reply.status, StatusCode::OK, "{what}");
        let spans = wait_for_trace(&phoenix, &project, &trace_id, &[HOP, ATTEMPT])
            .await
            .with_context(|| format!("exporting over {what}"))?;
        let trace = in_trace(&spans, &trace_id);
        assert_eq!(
            one(&trace, HOP).parent_id.as_deref(),
            Some(span.as_str()),
            "{what}"
        );
        let admin = Admin::new(ferry.admin());
        let metrics = eventually(Duration::from_secs(10), || async {
            let m = admin.metrics().await?;
            anyhow::ensure!(
                m.sum("ferry_trace_spans_exported_total", &[]) >= 2.0,
                "{what}: exported spans not counted:\n{}",
                m.text
            );
            Ok(m)
        })
        .await?;
        assert_eq!(
            metrics.sum("ferry_trace_spans_dropped_total", &[]),
            0.0,
            "{what}: {}",
            metrics.text
        );
    }
    Ok(())
}

pub async fn sigterm_flushes_spans(phoenix: Arc<Phoenix>) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("sigterm-flush");
    let echo = Echo::start("model").await?;
    let yaml = sidecar(json!({ "otlp": otlp_grpc(&phoenix) }), echo.addr());

    // Requests finished just before SIGTERM, none in flight: drain ends at once, well before
    // the batch's 1 s delay is up, so only the flush on the way out can send their spans.
    let mut ferry = crate::support::start(&yaml, &project).await?;
    let client = HttpClient::http1();
    let mut traces = Vec::new();
    for _ in 0..5 {
        let reply = get(&client, ferry.listener("main")?, "/quick", &[]).await?;
        assert_eq!(reply.status, StatusCode::OK);
        let (trace, _, flags) = upstream_traceparent(&crate::support::echoed(&reply)?)?;
        assert_eq!(flags, "01");
        traces.push(trace);
    }
    ferry.signal("TERM").await?;
    exits_cleanly(&mut ferry).await?;

    // One request still in flight at SIGTERM: its spans exist only once drain lets it finish.
    let mut ferry = crate::support::start(&yaml, &project).await?;
    let addr = ferry.listener("main")?;
    let (slow_trace, slow_span) = caller();
    let traceparent = format!("00-{slow_trace}-{slow_span}-01");
    let before = echo.requests();
    let slow = tokio::spawn(async move {
        get(
            &HttpClient::http1(),
            addr,
            "/slow",
            &[("traceparent", &traceparent), (DELAY_HEADER, "1500")],
        )
        .await
    });
    eventually(Duration::from_secs(10), || async {
        anyhow::ensure!(
            echo.requests() > before,
            "the slow request has not reached the upstream"
        );
        Ok(())
    })
    .await?;
    ferry.signal("TERM").await?;
    let slow = slow.await??;
    assert_eq!(
        slow.status,
        StatusCode::OK,
        "drain lets the in-flight request finish"
    );
    exits_cleanly(&mut ferry).await?;
    traces.push(slow_trace.clone());

    let spans = phoenix
        .wait_for_spans(&project, PATIENCE, |spans| {
            traces.iter().all(|t| {
                let trace = in_trace(spans, t);
                [HOP, ATTEMPT]
                    .iter()
                    .all(|n| trace.iter().any(|s| s.name == *n))
            })
        })
        .await
        .context("spans lost at SIGTERM")?;
    let slow_hop = one(&in_trace(&spans, &slow_trace), HOP);
    assert!(
        slow_hop.duration_micros() >= 1_500_000,
        "the in-flight request's span ends with its answer: {slow_hop:#?}"
    );
    Ok(())
}

/// Waits for a clean exit after SIGTERM.
async fn exits_cleanly(ferry: &mut Ferry) -> anyhow::Result<()> {
    let status = ferry.wait_exit(Duration::from_secs(30)).await?;
    anyhow::ensure!(
        status.success(),
        "ferry exited with {status}:\n{}",
        ferry.logs()
    );
    Ok(())
}
