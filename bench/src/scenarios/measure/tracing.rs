//! The `tracing` scenario (ferry and Envoy; issue 17): `h1_saturation`'s load (16 keep-alive
//! HTTP/1.1 connections, closed loop, GET /) through one route, each run on its own start of
//! the proxy with `configs/{ferry,envoy}-tracing.yaml`, differing in tracing alone:
//!
//! - ferry: `tracing_none` (no `tracing` block), `tracing_off` (the block with ratio 0),
//!   `tracing_1pct` (ratio 0.01), `tracing_100pct` (ratio 1);
//! - Envoy: `tracing_none` (no tracer) and `tracing_100pct` (its OpenTelemetry tracer at
//!   100 % random sampling).
//!
//! Requests carry no trace context, so every one starts a new trace: the unsampled ones cost
//! the header parse and one injected `traceparent`. Spans go over OTLP/gRPC to
//! [`OtlpSink`], started once per target and repetition; after each traced run the sink is
//! given time to receive the last partial batches, then `spans_received`, `requests_sent`
//! (readiness probe + warm-up + measured run) and `spans_per_request` are recorded: ≈ 2 at
//! 100 % (a SERVER and a CLIENT span per request) shows the spans really left the proxy.
//! Every run after `tracing_none` records `cpu_ratio_vs_none`: its CPU per request ÷
//! `tracing_none`'s in the same repetition.

use std::time::Duration;

use super::{Ctx, Shape};
use crate::configs::Tracing;
use crate::error::Result;
use crate::loadgen::{self, Proto, RequestSpec};
use crate::otlp_sink::{OtlpSink, check_malformed};
use crate::scenarios::Scenario;
use crate::targets::Setup;

/// No span for this long = the exporters' last partial batch (both flush after 1 s) is in.
const SETTLE_QUIET: Duration = Duration::from_millis(1_500);
/// How long to wait for the spans to stop arriving at most.
const SETTLE_PATIENCE: Duration = Duration::from_secs(10);

/// ferry's runs: scenario name and sampling ratio (`None`: no tracing block).
const FERRY_RUNS: [(&str, Option<f64>); 4] = [
    ("tracing_none", None),
    ("tracing_off", Some(0.0)),
    ("tracing_1pct", Some(0.01)),
    ("tracing_100pct", Some(1.0)),
];
/// Envoy's runs.
const ENVOY_RUNS: [(&str, Option<f64>); 2] =
    [("tracing_none", None), ("tracing_100pct", Some(1.0))];

impl Ctx<'_> {
    /// The `tracing` scenario when selected; failures are recorded, not returned.
    pub(in crate::scenarios) async fn tracing_scenario(&mut self) {
        if self.selected(Scenario::Tracing)
            && let Err(e) = self.tracing().await
        {
            self.fail("tracing", e);
        }
    }

    async fn tracing(&mut self) -> Result<()> {
        let sink = OtlpSink::start()?;
        let runs: &[(&str, Option<f64>)] = if self.kind().is_ferry() {
            &FERRY_RUNS
        } else {
            &ENVOY_RUNS
        };
        let mut none = None;
        for &(scenario, ratio) in runs {
            let cpu_per_request = self.tracing_run(scenario, ratio, &sink).await?;
            match none {
                None => none = Some(cpu_per_request),
                Some(base) if base > 0.0 => {
                    let ratio = cpu_per_request / base;
                    self.record(scenario, "cpu_ratio_vs_none", "×", ratio);
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// One run on its own start of the proxy; returns its CPU-seconds per request.
    async fn tracing_run(
        &mut self,
        scenario: &str,
        ratio: Option<f64>,
        sink: &OtlpSink,
    ) -> Result<f64> {
        let workdir = self.plan.workdir.join(format!(
            "{}-rep{}-{scenario}",
            self.kind().name(),
            self.rep + 1
        ));
        let tracing = match ratio {
            None => Tracing::None,
            Some(ratio) => Tracing::Sampled {
                ratio,
                otlp_port: sink.addr.port(),
            },
        };
        let before = sink.counts();
        let running = self
            .target
            .start_with(self.plan.upstream, &workdir, Setup::Tracing(tracing))
            .await?;
        // The readiness probe was one proxied request.
        let mut requests: u64 = 1;
        let plan = self.load_plan(&running, Proto::Http1, 16, 1, RequestSpec::get("/"));
        if !self.plan.sizing.warmup.is_zero() {
            let mut warm = plan.clone();
            warm.duration = self.plan.sizing.warmup;
            if let Ok(stats) = loadgen::closed_loop(&warm).await {
                requests += stats.ok;
            }
        }
        let (stats, cpu) = match self.load(&running, scenario, &plan, Shape::Closed).await {
            Ok(measured) => measured,
            Err(e) => {
                running.stop().await;
                return Err(e);
            }
        };
        requests += stats.ok;
        if ratio.is_some() {
            let received = sink
                .settle(SETTLE_QUIET, SETTLE_PATIENCE)
                .await
                .since(before);
            self.record(scenario, "requests_sent", "req", requests as f64);
            self.record(scenario, "spans_received", "spans", received.spans as f64);
            self.record(scenario, "server_spans", "spans", received.server as f64);
            self.record(scenario, "client_spans", "spans", received.client as f64);
            self.record(scenario, "otlp_exports", "calls", received.exports as f64);
            let per_request = received.spans as f64 / requests as f64;
            self.record(scenario, "spans_per_request", "spans", per_request);
            if let Err(e) = check_malformed(received, self.kind().name()) {
                running.stop().await;
                return Err(e);
            }
        }
        running.stop().await;
        Ok(if stats.ok > 0 {
            cpu / stats.ok as f64
        } else {
            0.0
        })
    }
}
