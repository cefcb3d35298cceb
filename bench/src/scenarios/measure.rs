//! Measuring one target: start it, drive each scenario's load, read its CPU and memory.

mod access_log;
mod limits;
mod mtls;
mod tap;
mod tracing;
mod translate;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::Method;

use super::{Plan, Scenario, check_errors};
use crate::configs;
use crate::error::Result;
use crate::loadgen::{self, LoadPlan, Proto, RequestSpec, RunStats};
use crate::procfs;
use crate::report::Sample;
use crate::targets::{Kind, Running, Target};
use crate::upstream::GRPC_PATH;

/// How often memory is sampled under load.
const RSS_SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// One target's measurements in one repetition.
pub(super) struct Ctx<'a> {
    plan: &'a Plan,
    target: &'a Target,
    rep: usize,
    samples: Vec<Sample>,
    failures: Vec<String>,
    loaded_rss_kib: u64,
}

/// How a load run is shaped.
enum Shape {
    Closed,
    /// Closed, each request on a new connection.
    Churn,
    Open(u32),
}

impl<'a> Ctx<'a> {
    pub(super) fn new(plan: &'a Plan, target: &'a Target, rep: usize) -> Self {
        Self {
            plan,
            target,
            rep,
            samples: Vec::new(),
            failures: Vec::new(),
            loaded_rss_kib: 0,
        }
    }

    pub(super) fn finish(self) -> (Vec<Sample>, Vec<String>) {
        (self.samples, self.failures)
    }

    fn kind(&self) -> Kind {
        self.target.kind
    }

    fn selected(&self, s: Scenario) -> bool {
        self.plan.scenarios.contains(&s)
    }

    fn record(&mut self, scenario: &str, metric: &str, unit: &'static str, value: f64) {
        self.samples.push(Sample {
            scenario: scenario.to_owned(),
            metric: metric.to_owned(),
            unit,
            target: self.kind(),
            rep: self.rep,
            value,
        });
    }

    /// Every selected scenario except the route tables, on one start of the target.
    pub(super) async fn base_scenarios(&mut self) -> Result<()> {
        let workdir = self
            .plan
            .workdir
            .join(format!("{}-rep{}", self.kind().name(), self.rep + 1));
        let running = self.target.start(self.plan.upstream, &workdir, 0).await?;
        if self.kind() != Kind::Direct && self.selected(Scenario::ColdStart) {
            self.record("cold_start", "ready_ms", "ms", ms(running.cold_start));
        }
        if self.selected(Scenario::Memory)
            && let Some(m) = running.memory()?
        {
            self.record("memory", "rss_idle_mib", "MiB", m.rss_kib as f64 / 1024.0);
        }
        if !self.plan.sizing.warmup.is_zero() {
            let plan = self.load_plan(&running, Proto::Http1, 8, 1, RequestSpec::get("/"));
            let plan = LoadPlan {
                duration: self.plan.sizing.warmup,
                ..plan
            };
            let _ = loadgen::closed_loop(&plan).await;
        }
        let scenarios = self.plan.scenarios.clone();
        for scenario in scenarios {
            if let Err(e) = self.scenario(&running, scenario).await {
                eprintln!("ferry-bench: FAILED {e}");
                self.failures.push(e.to_string());
            }
        }
        if self.selected(Scenario::Memory)
            && let Some(m) = running.memory()?
        {
            self.record(
                "memory",
                "rss_loaded_mib",
                "MiB",
                self.loaded_rss_kib as f64 / 1024.0,
            );
            // The kernel syncs per-thread RSS counters lazily, so VmHWM can trail a sample.
            let peak = m.hwm_kib.max(self.loaded_rss_kib);
            self.record("memory", "rss_peak_mib", "MiB", peak as f64 / 1024.0);
        }
        running.stop().await;
        Ok(())
    }

    async fn scenario(&mut self, running: &Running, scenario: Scenario) -> Result<()> {
        let get = RequestSpec::get("/");
        let name = scenario.name();
        match scenario {
            Scenario::H1Saturation => {
                let plan = self.load_plan(running, Proto::Http1, 16, 1, get);
                self.load(running, name, &plan, Shape::Closed).await?;
            }
            Scenario::H2Saturation => {
                let plan = self.load_plan(running, Proto::H2c, 4, 16, get);
                self.load(running, name, &plan, Shape::Closed).await?;
            }
            Scenario::Latency1k | Scenario::Latency5k => {
                let rate = if scenario == Scenario::Latency1k {
                    1_000
                } else {
                    5_000
                };
                let mut plan = self.load_plan(running, Proto::Http1, 16, 1, get);
                plan.duration = self.plan.sizing.fixed_rate;
                self.load(running, name, &plan, Shape::Open(rate)).await?;
            }
            Scenario::GrpcUnary => {
                let plan = self.load_plan(running, Proto::H2c, 1, 100, grpc_unary());
                self.load(running, name, &plan, Shape::Closed).await?;
            }
            Scenario::ManyCallers => {
                for n in super::CALLER_COUNTS {
                    let plan = self.load_plan(running, Proto::H2c, n, 1, grpc_unary());
                    let scenario = format!("{name}_{n}");
                    self.load(running, &scenario, &plan, Shape::Closed).await?;
                }
            }
            Scenario::Churn => {
                let plan = self.load_plan(running, Proto::Http1, 16, 1, get);
                self.load(running, name, &plan, Shape::Churn).await?;
            }
            Scenario::Grpc1Mib => {
                let spec = RequestSpec {
                    method: Method::POST,
                    path: GRPC_PATH.to_owned(),
                    body: grpc_frame(&[0x5a; 1 << 20]),
                    grpc: true,
                    headers: Vec::new(),
                };
                let plan = self.load_plan(running, Proto::H2c, 4, 1, spec);
                let (stats, _) = self.load(running, name, &plan, Shape::Closed).await?;
                // Each call carries 1 MiB up and the same 1 MiB back.
                self.record(name, "mib_per_s", "MiB/s", 2.0 * stats.rps());
            }
            Scenario::Upload1Mib => {
                let spec = RequestSpec {
                    method: Method::POST,
                    path: "/upload".to_owned(),
                    body: Bytes::from(vec![0x5au8; 1 << 20]),
                    grpc: false,
                    headers: Vec::new(),
                };
                let plan = self.load_plan(running, Proto::Http1, 4, 1, spec);
                let (stats, _) = self.load(running, name, &plan, Shape::Closed).await?;
                self.record(name, "mib_per_s", "MiB/s", stats.rps());
            }
            Scenario::SseFirstEvent => {
                let mut times = loadgen::sse_first_event(
                    running.h1,
                    Proto::Http1,
                    self.plan.sizing.sse_requests,
                    "/sse",
                )
                .await?;
                times.sort_by(f64::total_cmp);
                let median = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
                let max = times.last().copied().unwrap_or(f64::NAN);
                self.record(name, "ttfe_p50_ms", "ms", median);
                self.record(name, "ttfe_max_ms", "ms", max);
            }
            // Measured around the other scenarios and on their own starts.
            Scenario::Memory
            | Scenario::ColdStart
            | Scenario::Routes
            | Scenario::Translate
            | Scenario::MtlsH1
            | Scenario::MtlsH2
            | Scenario::MtlsHandshakes
            | Scenario::MtlsMemory
            | Scenario::LimitLocal
            | Scenario::LimitGlobal
            | Scenario::Tracing
            | Scenario::AccessLog
            | Scenario::Tap => {}
        }
        Ok(())
    }

    fn load_plan(
        &self,
        running: &Running,
        proto: Proto,
        connections: usize,
        streams: usize,
        request: RequestSpec,
    ) -> LoadPlan {
        LoadPlan {
            addr: if proto == Proto::H2c {
                running.h2
            } else {
                running.h1
            },
            proto,
            connections,
            streams,
            duration: self.plan.sizing.saturation,
            request,
        }
    }

    /// Runs load, recording rate, latency and the proxy's CPU per 10,000 requests; returns the
    /// run's stats and the proxy's CPU-seconds over it.
    async fn load(
        &mut self,
        running: &Running,
        scenario: &str,
        plan: &LoadPlan,
        shape: Shape,
    ) -> Result<(RunStats, f64)> {
        let ticks = self.plan.ticks;
        let cpu_before = running.cpu(ticks)?;
        let sampler = RssSampler::start(running.pid());
        let stats = match shape {
            Shape::Closed => loadgen::closed_loop(plan).await,
            Shape::Churn => loadgen::closed_loop_new_connections(plan).await,
            Shape::Open(rate) => loadgen::open_loop(plan, rate).await,
        };
        self.loaded_rss_kib = self.loaded_rss_kib.max(sampler.stop().await);
        let stats = stats?;
        let cpu = running.cpu(ticks)? - cpu_before;
        check_errors(
            scenario,
            self.kind(),
            stats.errors,
            stats.first_error.as_deref(),
        )?;
        self.record(scenario, "rps", "req/s", stats.rps());
        if running.pid().is_some() && stats.ok > 0 {
            let per_10k = 10_000.0 / stats.ok as f64;
            self.record(scenario, "cpu_s_per_10k", "CPU-s", cpu.total() * per_10k);
            // The split shows how much of a proxy's cost is the kernel's loopback TCP and
            // wake-ups, which no user-space change removes.
            self.record(scenario, "cpu_user_s_per_10k", "CPU-s", cpu.user * per_10k);
            self.record(scenario, "cpu_sys_s_per_10k", "CPU-s", cpu.sys * per_10k);
        }
        self.record(scenario, "p50_ms", "ms", stats.latency_ms(0.5));
        if matches!(shape, Shape::Open(_)) {
            self.record(scenario, "p90_ms", "ms", stats.latency_ms(0.9));
        }
        self.record(scenario, "p99_ms", "ms", stats.latency_ms(0.99));
        if matches!(shape, Shape::Open(_)) {
            self.record(scenario, "p999_ms", "ms", stats.latency_ms(0.999));
        }
        Ok((stats, cpu.total()))
    }

    /// The route-table scenario with `n` generated routes, on its own start of the target.
    pub(super) async fn routes(&mut self, n: usize) -> Result<()> {
        let workdir = self.plan.workdir.join(format!(
            "{}-rep{}-routes{n}",
            self.kind().name(),
            self.rep + 1
        ));
        let running = self.target.start(self.plan.upstream, &workdir, n).await?;
        let scenario = format!("routes_{n}");
        self.record(&scenario, "ready_ms", "ms", ms(running.cold_start));
        if let Some(m) = running.memory()? {
            self.record(&scenario, "rss_idle_mib", "MiB", m.rss_kib as f64 / 1024.0);
        }
        let mut plan = self.load_plan(
            &running,
            Proto::Http1,
            16,
            1,
            RequestSpec::get(&configs::route_probe_path(n)),
        );
        plan.duration = self.plan.sizing.routes;
        let result = self.load(&running, &scenario, &plan, Shape::Closed).await;
        running.stop().await;
        result.map(|_| ())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A small unary gRPC call.
pub fn grpc_unary() -> RequestSpec {
    RequestSpec {
        method: Method::POST,
        path: GRPC_PATH.to_owned(),
        body: grpc_message(),
        grpc: true,
        headers: Vec::new(),
    }
}

/// A small length-prefixed gRPC message.
fn grpc_message() -> Bytes {
    grpc_frame(b"\x0a\x05hello\x12\x01\x31")
}

/// `payload` as one length-prefixed gRPC message (uncompressed flag, big-endian length).
fn grpc_frame(payload: &[u8]) -> Bytes {
    let mut framed = Vec::with_capacity(5 + payload.len());
    framed.push(0);
    framed.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    framed.extend_from_slice(payload);
    Bytes::from(framed)
}

/// Samples a process tree's VmRSS while load runs; the maximum is the "loaded" figure.
struct RssSampler {
    stop: Arc<AtomicBool>,
    task: Option<tokio::task::JoinHandle<u64>>,
}

impl RssSampler {
    fn start(pid: Option<u32>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let task = pid.map(|pid| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut max = 0;
                // Bounded by the load run: `stop` is set when it ends.
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(m) = procfs::tree_memory(pid) {
                        max = max.max(m.rss_kib);
                    }
                    tokio::time::sleep(RSS_SAMPLE_EVERY).await;
                }
                max
            })
        });
        Self { stop, task }
    }

    async fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        match self.task {
            Some(t) => t.await.unwrap_or(0),
            None => 0,
        }
    }
}
