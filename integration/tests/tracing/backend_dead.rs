//! A tracing backend that dies must cost spans, never requests or memory: ferry exports to
//! Phoenix, Phoenix is killed, and then every one of 50,000 sampled requests (keep-alive
//! clients in parallel) still succeeds, ferry's resident memory stays flat once warmed up, and
//! `ferry_trace_spans_dropped_total` counts what could not be sent.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Echo, HttpClient, Phoenix};
use http::Method;
use serde_json::json;

use crate::support::{get, in_trace, otlp_grpc, sidecar, upstream_traceparent};

/// Requests measured, after the warm-up.
const REQUESTS: usize = 50_000;
/// Requests before the first memory reading: the span queue fills and the export loop has
/// failed many times, so pools and queues are at their working size.
const WARM_UP: usize = 5_000;
/// Keep-alive clients sending at once.
const CLIENTS: usize = 16;
/// Resident memory ferry may gain from warmed up to done.
const RSS_GROWTH: u64 = 8 * 1024 * 1024;
/// The whole load's bound (a debug build on 2 shared cores does ~1,500-3,000 requests/s).
const LOAD_PATIENCE: Duration = Duration::from_secs(120);

/// Sends `total` GETs through `addr` from [`CLIENTS`] keep-alive clients; returns how many did
/// not answer 200 (with the first such answer).
async fn load(addr: SocketAddr, total: usize) -> anyhow::Result<(usize, Option<String>)> {
    let mut tasks = Vec::new();
    for i in 0..CLIENTS {
        let n = total / CLIENTS + usize::from(i < total % CLIENTS);
        tasks.push(tokio::spawn(async move {
            let client = HttpClient::http1();
            let mut failed = 0usize;
            let mut first = None;
            for _ in 0..n {
                let req = request(Method::GET, addr, "/load", &[], body_full(""))?;
                match client.call(req).await {
                    Ok(r) if r.status.is_success() => {}
                    Ok(r) => {
                        failed += 1;
                        first.get_or_insert_with(|| format!("{} {}", r.status, r.text()));
                    }
                    Err(e) => {
                        failed += 1;
                        first.get_or_insert_with(|| format!("{e:#}"));
                    }
                }
            }
            anyhow::Ok((failed, first))
        }));
    }
    let mut failed = 0;
    let mut first = None;
    for t in tasks {
        let (f, e) = t.await??;
        failed += f;
        first = first.or(e);
    }
    Ok((failed, first))
}

pub async fn dead_backend_costs_only_spans(mut phoenix: Phoenix) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("backend-dead");
    let echo = Echo::start("model").await?;
    let tracing = json!({ "otlp": otlp_grpc(&phoenix), "sampling": { "ratio": 1 } });
    let ferry = crate::support::start(&sidecar(tracing, echo.addr()), &project).await?;
    let addr = ferry.listener("main")?;
    let admin = Admin::new(ferry.admin());

    // Alive first: a span reaches Phoenix, so the exporter was connected when it died.
    let reply = get(&HttpClient::http1(), addr, "/before", &[]).await?;
    let (trace, _, _) = upstream_traceparent(&crate::support::echoed(&reply)?)?;
    phoenix
        .wait_for_spans(&project, crate::support::PATIENCE, |s| {
            !in_trace(s, &trace).is_empty()
        })
        .await?;
    phoenix.kill().await;
    anyhow::ensure!(
        phoenix.healthz().await.is_err(),
        "Phoenix survived its kill"
    );

    let started = Instant::now();
    let (failed, first) = tokio::time::timeout(LOAD_PATIENCE, load(addr, WARM_UP))
        .await
        .context("warm-up did not finish")??;
    assert_eq!(failed, 0, "warm-up requests failed; first: {first:?}");
    let warm = ferry.rss_bytes().await?;
    let warm_at = Instant::now();
    let (failed, first) = tokio::time::timeout(LOAD_PATIENCE, load(addr, REQUESTS))
        .await
        .with_context(|| format!("{REQUESTS} requests did not finish"))??;
    let took = warm_at.elapsed();
    let done = ferry.rss_bytes().await?;
    let peak = ferry.peak_rss_bytes().await?;
    eprintln!(
        "backend dead: {REQUESTS} requests in {took:.1?} ({:.0}/s) after {WARM_UP} in {:.1?}; \
         RSS {:.1} MiB -> {:.1} MiB (peak {:.1} MiB)",
        REQUESTS as f64 / took.as_secs_f64(),
        warm_at.saturating_duration_since(started),
        warm as f64 / 1048576.0,
        done as f64 / 1048576.0,
        peak as f64 / 1048576.0,
    );
    assert_eq!(
        failed, 0,
        "requests failed with the backend dead; first: {first:?}"
    );
    assert!(
        done.saturating_sub(warm) < RSS_GROWTH,
        "ferry grew {} bytes over {REQUESTS} requests with the backend dead (from {warm} to {done})",
        done.saturating_sub(warm)
    );

    let metrics = admin.metrics().await?;
    let dropped = metrics.sum("ferry_trace_spans_dropped_total", &[]);
    let reasons: Vec<String> = metrics
        .matching("ferry_trace_spans_dropped_total", &[])
        .map(|s| format!("{:?}={}", s.labels, s.value))
        .collect();
    eprintln!("backend dead: spans dropped {reasons:?}");
    // Two spans per request at least (SERVER and CLIENT): nearly all of them were dropped.
    assert!(
        dropped >= REQUESTS as f64,
        "dropped spans not counted ({dropped}):\n{}",
        metrics.text
    );
    assert!(
        metrics.sum("ferry_trace_spans_exported_total", &[]) >= 2.0,
        "the spans sent before the kill were counted as exported:\n{}",
        metrics.text
    );
    Ok(())
}
