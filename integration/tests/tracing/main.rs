//! ferry's distributed tracing end to end: real `ferry` processes (sidecar pairs, a REST → gRPC
//! translating sidecar in front of a grpcio model server) export their spans over OTLP to a
//! real Arize Phoenix, and every assertion reads what Phoenix stored back through its own query
//! API. Everything runs on 127.0.0.1 with ports from the kernel; Phoenix and the grpcio peer are
//! installed (pinned) on first use, and a failed install fails the test: nothing is skipped.
//!
//! One Phoenix serves the whole binary (it takes 10-25 s and ~450 MB to start), so the
//! scenarios run inside one test: all at once, each a task of its own with its own Phoenix
//! project and its own ferry processes, every failure reported with its scenario's name. The
//! dead-backend scenario runs last and alone: it kills Phoenix and measures ferry's memory
//! under load.
//!
//! Scenarios, by module: `hops` (two sidecars: one trace, parents, attributes, timing),
//! `translate` (REST → gRPC: the gRPC server joins the trace; translation phases),
//! `propagation` (W3C, B3 single, B3 multi, both, malformed), `export` (OTLP gRPC and
//! OTLP/HTTP; spans flushed on SIGTERM), `sampling` (ratio 0, always_errors, slower_than, a
//! caller's decision), `attempts` (retries, a refused connect), `streams` (SSE and gRPC
//! streams, gRPC status codes) and `backend_dead` (a killed backend costs dropped spans, never
//! requests or memory).
//!
//! The access log's `trace_id` and `span_id` are checked in `tests/access_log/` (two sidecars
//! whose lines join on them).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails the test by panicking"
)]

mod attempts;
mod backend_dead;
mod export;
mod hops;
mod oip_server;
mod propagation;
mod sampling;
mod streams;
mod support;
mod translate;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use ferry_integration::Phoenix;

type Scenario = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// Runs every scenario at once, each as its own task, and returns every failure (an error or a
/// panic) named by its scenario.
async fn run_all(scenarios: Vec<(&'static str, Scenario)>) -> Vec<String> {
    let started = Instant::now();
    let tasks: Vec<_> = scenarios
        .into_iter()
        .map(|(name, scenario)| {
            let task = tokio::spawn(async move {
                let result = scenario.await;
                (result, started.elapsed())
            });
            (name, task)
        })
        .collect();
    let mut failures = Vec::new();
    for (name, task) in tasks {
        let (outcome, at) = match task.await {
            Ok((Ok(()), at)) => (None, at),
            Ok((Err(e), at)) => (Some(format!("{e:#}")), at),
            Err(e) => {
                let why = match e.try_into_panic() {
                    Ok(panic) => panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_else(|| "panicked".to_owned()),
                    Err(e) => e.to_string(),
                };
                (Some(why), started.elapsed())
            }
        };
        match outcome {
            None => eprintln!("scenario {name}: ok (done after {at:.1?})"),
            Some(why) => {
                eprintln!("scenario {name}: FAILED (after {at:.1?}): {why}");
                failures.push(format!("{name}: {why}"));
            }
        }
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ferry_spans_arrive_in_phoenix() {
    let phoenix = Arc::new(Phoenix::start().await.expect("Phoenix starts"));
    let p = || phoenix.clone();
    let mut failures = run_all(vec![
        ("two sidecars", Box::pin(hops::two_sidecars_one_trace(p()))),
        (
            "rest to grpc",
            Box::pin(translate::grpc_server_joins_the_trace(p())),
        ),
        (
            "propagation",
            Box::pin(propagation::every_format_joins_its_trace(p())),
        ),
        (
            "malformed context",
            Box::pin(propagation::malformed_context_starts_a_new_trace(p())),
        ),
        (
            "otlp protocols",
            Box::pin(export::grpc_and_http_exports_arrive(p())),
        ),
        (
            "sigterm flush",
            Box::pin(export::sigterm_flushes_spans(p())),
        ),
        (
            "ratio zero",
            Box::pin(sampling::ratio_zero_records_nothing(p())),
        ),
        (
            "tail rules",
            Box::pin(sampling::errors_slow_requests_and_sampled_callers_are_kept(
                p(),
            )),
        ),
        (
            "attempts",
            Box::pin(attempts::every_attempt_has_its_span(p())),
        ),
        (
            "streams",
            Box::pin(streams::streamed_answers_are_counted(p())),
        ),
    ])
    .await;
    // Alone, so its load and memory figures are ferry's own; it kills Phoenix.
    match Arc::try_unwrap(phoenix) {
        Ok(phoenix) => failures.extend(
            run_all(vec![(
                "backend dead",
                Box::pin(backend_dead::dead_backend_costs_only_spans(phoenix)),
            )])
            .await,
        ),
        Err(_) => failures.push("backend dead: a scenario still holds Phoenix".to_owned()),
    }
    assert!(
        failures.is_empty(),
        "{} scenario(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
