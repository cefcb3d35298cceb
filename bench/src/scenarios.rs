//! The scenarios and the A B A B … schedule: for each repetition, every target is started in
//! turn, measured on every selected scenario, and stopped, so slow drifts of a shared machine
//! spread over all targets instead of landing on one.

mod measure;

pub use measure::grpc_unary;

use std::fmt::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::Result;
use crate::report::Sample;
use crate::targets::{Kind, Target};

/// One scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// HTTP/1.1 keep-alive small requests, closed loop.
    H1Saturation,
    /// h2c small requests, closed loop.
    H2Saturation,
    /// Open loop at 1,000 req/s.
    Latency1k,
    /// Open loop at 5,000 req/s.
    Latency5k,
    /// gRPC-style unary calls, 100 concurrent streams on one h2c connection.
    GrpcUnary,
    /// gRPC-style unary calls carrying 1 MiB each way (echoed), 4 h2c connections.
    Grpc1Mib,
    /// gRPC-style unary calls from [`CALLER_COUNTS`] h2c connections, one call in flight on
    /// each: what a popular model's inbound sidecar sees (per-connection cost).
    ManyCallers,
    /// HTTP/1.1 GETs on a new TCP connection each (clients that do not keep connections
    /// alive, health checks), closed loop.
    Churn,
    /// 1 MiB POSTs over HTTP/1.1.
    Upload1Mib,
    /// Time to the first server-sent event.
    SseFirstEvent,
    /// RSS idle and loaded.
    Memory,
    /// Spawn to the first proxied 200.
    ColdStart,
    /// 10 vs 10,000 routes.
    Routes,
    /// OIP REST infer → gRPC ModelInfer with FP32 tensors of [`TRANSLATE_SIZES`] elements,
    /// ferry's `translate` vs Envoy's grpc_json_transcoder.
    Translate,
    /// HTTP/1.1 keep-alive through an outbound → inbound pair, the hop in mutual TLS and in
    /// plaintext (ferry, Envoy).
    MtlsH1,
    /// HTTP/2 through the pair, the hop in mutual TLS and in plaintext (ferry, Envoy).
    MtlsH2,
    /// Full mutual-TLS handshakes (no resumption), one request per connection, against the
    /// inbound alone (ferry, Envoy).
    MtlsHandshakes,
    /// Idle RSS of the inbound with an identity loaded and a strict listener (ferry, Envoy).
    MtlsMemory,
    /// HTTP/1.1 keep-alive saturation through a route with a local rate limit that never
    /// refuses, and through the same route without it (ferry only).
    LimitLocal,
    /// 1,000 req/s through a route with a `scope: global` limit counted in a real
    /// redis-server, and without it; plus the Redis round trip itself (ferry only).
    LimitGlobal,
    /// HTTP/1.1 keep-alive saturation through one route without tracing, and with tracing on
    /// at 0, 1 and 100 % sampling, spans exported over OTLP/gRPC to a counting sink (ferry;
    /// Envoy without and with its OpenTelemetry tracer at 100 %).
    Tracing,
    /// HTTP/1.1 keep-alive saturation through one route without an access log, and with a
    /// JSON sink at 100 % to a file (ferry only).
    AccessLog,
    /// HTTP/1.1 keep-alive saturation with an admin `/tap` attached whose filter matches
    /// nothing, and without a tap, alternating on one start (ferry only).
    Tap,
}

/// Downstream connections of the `many_callers` scenario; each count is recorded as its own
/// scenario, `many_callers_<n>`.
pub const CALLER_COUNTS: [usize; 3] = [10, 100, 1_000];

/// Tensor sizes (FP32 elements) of the `translate` scenario.
pub const TRANSLATE_SIZES: [usize; 3] = [64, 65_536, 1_000_000];

/// The `translate` scenario's binary-tensor case (ferry only): a 1 MiB FP32 tensor sent as a
/// binary section, beside `upload_1mib`.
pub const BINARY_SCENARIO: &str = "translate_binary_1mib";

/// `n` comma-separated FP32 values in [-1, 1) with the digits of real activations (shortest
/// round-trip form, mostly 8–11 characters), from a fixed-seed generator so every run, both proxies
/// and the criterion benches get the same text.
pub fn fp32_activations(n: usize) -> String {
    let mut out = String::with_capacity(n * 12);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..n {
        // A 64-bit LCG (Knuth's MMIX constants); the top 24 bits give an exact f32 mantissa.
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let unit = (state >> 40) as f32 / (1u32 << 24) as f32;
        let v = unit * 2.0 - 1.0;
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{v}");
    }
    out
}

// === impl Scenario ===

impl Scenario {
    /// Every scenario, in run order.
    pub const ALL: [Scenario; 23] = [
        Scenario::ColdStart,
        Scenario::Memory,
        Scenario::H1Saturation,
        Scenario::H2Saturation,
        Scenario::Latency1k,
        Scenario::Latency5k,
        Scenario::GrpcUnary,
        Scenario::Grpc1Mib,
        Scenario::ManyCallers,
        Scenario::Churn,
        Scenario::Upload1Mib,
        Scenario::SseFirstEvent,
        Scenario::Routes,
        Scenario::Translate,
        Scenario::MtlsH1,
        Scenario::MtlsH2,
        Scenario::MtlsHandshakes,
        Scenario::MtlsMemory,
        Scenario::LimitLocal,
        Scenario::LimitGlobal,
        Scenario::Tracing,
        Scenario::AccessLog,
        Scenario::Tap,
    ];

    /// Name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::H1Saturation => "h1_saturation",
            Scenario::H2Saturation => "h2_saturation",
            Scenario::Latency1k => "latency_1k",
            Scenario::Latency5k => "latency_5k",
            Scenario::GrpcUnary => "grpc_unary",
            Scenario::Grpc1Mib => "grpc_1mib",
            Scenario::ManyCallers => "many_callers",
            Scenario::Churn => "churn",
            Scenario::Upload1Mib => "upload_1mib",
            Scenario::SseFirstEvent => "sse_first_event",
            Scenario::Memory => "memory",
            Scenario::ColdStart => "cold_start",
            Scenario::Routes => "routes",
            Scenario::Translate => "translate",
            Scenario::MtlsH1 => "mtls_h1",
            Scenario::MtlsH2 => "mtls_h2",
            Scenario::MtlsHandshakes => "mtls_handshakes",
            Scenario::MtlsMemory => "mtls_memory",
            Scenario::LimitLocal => "limit_local",
            Scenario::LimitGlobal => "limit_global",
            Scenario::Tracing => "tracing",
            Scenario::AccessLog => "access_log",
            Scenario::Tap => "tap",
        }
    }

    /// Parses a name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether this is one of the mutual-TLS scenarios (they need [`Plan::certs`]).
    pub fn is_mtls(self) -> bool {
        matches!(
            self,
            Scenario::MtlsH1 | Scenario::MtlsH2 | Scenario::MtlsHandshakes | Scenario::MtlsMemory
        )
    }
}

/// How long and how hard each scenario runs.
#[derive(Debug, Clone)]
pub struct Sizing {
    /// Closed-loop runs.
    pub saturation: Duration,
    /// Open-loop runs.
    pub fixed_rate: Duration,
    /// Route-table runs.
    pub routes: Duration,
    /// SSE requests per measurement.
    pub sse_requests: usize,
    /// Load before measuring, so pools and caches are warm.
    pub warmup: Duration,
    /// Route counts for the route-table scenario.
    pub route_counts: Vec<usize>,
    /// Each tensor size of the translate scenario.
    pub translate: Duration,
    /// Each mutual-TLS run (a pair's keep-alive load, the handshake loop).
    pub mtls: Duration,
}

impl Sizing {
    /// The CI size: every scenario for about a second.
    pub fn smoke() -> Self {
        Self {
            saturation: Duration::from_secs(1),
            fixed_rate: Duration::from_secs(1),
            routes: Duration::from_millis(500),
            sse_requests: 3,
            warmup: Duration::ZERO,
            route_counts: vec![10, 10_000],
            translate: Duration::from_secs(1),
            mtls: Duration::from_secs(1),
        }
    }

    /// The full size.
    pub fn full() -> Self {
        Self {
            saturation: Duration::from_secs(4),
            fixed_rate: Duration::from_secs(5),
            routes: Duration::from_secs(3),
            sse_requests: 10,
            warmup: Duration::from_millis(500),
            route_counts: vec![10, 10_000],
            // Envoy needs ~0.4 CPU-s per 1,000,000-element request: ≥ 10 of those per run.
            translate: Duration::from_secs(5),
            mtls: Duration::from_secs(4),
        }
    }
}

/// A whole benchmark run's settings.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Targets in schedule order.
    pub targets: Vec<Target>,
    /// Selected scenarios.
    pub scenarios: Vec<Scenario>,
    /// Repetitions.
    pub reps: usize,
    /// Durations and counts.
    pub sizing: Sizing,
    /// Where proxies get their configs and logs.
    pub workdir: PathBuf,
    /// The bench upstream.
    pub upstream: SocketAddr,
    /// Clock ticks per second for /proc.
    pub ticks: f64,
    /// The run's certificates, when a mutual-TLS scenario is selected.
    pub certs: Option<crate::mtls::Certs>,
}

/// Everything a run measured, and what failed.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Measurements.
    pub samples: Vec<Sample>,
    /// Failed scenarios, one line each.
    pub failures: Vec<String>,
}

/// Runs the plan: repetitions × targets × scenarios.
pub async fn run(plan: &Plan) -> Outcome {
    let mut outcome = Outcome::default();
    for rep in 0..plan.reps {
        for target in &plan.targets {
            eprintln!(
                "ferry-bench: repetition {}/{}: {}",
                rep + 1,
                plan.reps,
                target.kind.name()
            );
            let mut ctx = measure::Ctx::new(plan, target, rep);
            if let Err(e) = ctx.base_scenarios().await {
                outcome
                    .failures
                    .push(format!("{} rep {}: {e}", target.kind.name(), rep + 1));
            }
            if plan.scenarios.contains(&Scenario::Routes) && target.kind.routes_http() {
                for &n in &plan.sizing.route_counts {
                    if let Err(e) = ctx.routes(n).await {
                        outcome.failures.push(format!(
                            "{} rep {} routes {n}: {e}",
                            target.kind.name(),
                            rep + 1
                        ));
                    }
                }
            }
            let translates = target.kind.is_ferry() || target.kind == Kind::Envoy;
            if plan.scenarios.contains(&Scenario::Translate) && translates {
                for n in TRANSLATE_SIZES {
                    if let Err(e) = ctx.translate(n).await {
                        outcome.failures.push(format!(
                            "{} rep {} translate {n}: {e}",
                            target.kind.name(),
                            rep + 1
                        ));
                    }
                }
                if target.kind.is_ferry()
                    && let Err(e) = ctx.translate_binary().await
                {
                    outcome.failures.push(format!(
                        "{} rep {} translate binary: {e}",
                        target.kind.name(),
                        rep + 1
                    ));
                }
            }
            if target.kind.is_ferry() || target.kind == Kind::Envoy {
                ctx.mtls_scenarios().await;
                ctx.tracing_scenario().await;
            }
            if target.kind.is_ferry() {
                ctx.limit_scenarios().await;
                ctx.access_log_scenario().await;
                ctx.tap_scenario().await;
            }
            let (samples, failures) = ctx.finish();
            outcome.samples.extend(samples);
            outcome.failures.extend(failures);
        }
    }
    outcome
}

/// Checks a scenario's error count: any failed request fails the scenario.
pub(crate) fn check_errors(
    scenario: &str,
    target: Kind,
    errors: u64,
    first: Option<&str>,
) -> Result<()> {
    if errors == 0 {
        return Ok(());
    }
    Err(crate::error::BenchError::Scenario {
        scenario: scenario.to_owned(),
        target: target.name().to_owned(),
        reason: format!("{errors} failed requests, first: {}", first.unwrap_or("?")),
    })
}
