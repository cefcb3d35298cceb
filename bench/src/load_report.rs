//! `ferry-bench load-report`: what load reports cost ferry per request (issue 20, target
//! ≤ 1.03× the CPU per request without them).
//!
//! Two replicas (the faults bench's endpoints, `ferry-bench fault-upstream`) send vLLM's
//! `endpoint-load-metrics` TEXT header on every answer, in every variant, so the upstream side
//! is the same and only ferry's work differs. ferry (`configs/ferry-load-report.yaml`,
//! release binary, one worker on core 1) runs in turn as:
//!
//! - `off`: `lb: p2c-ewma`, the header passes through unread;
//! - `read`: `lb: { policy: p2c-ewma, load_report: { metric:
//!   named_metrics.kv_cache_usage_perc } }`, every answer's report parsed into the pick;
//! - `report`: `lb: p2c-ewma` and the route's `load_report: { report: true }`, ferry appending
//!   its own in-flight and queued counts to every answer (the inbound side).
//!
//! Each run is an open-loop load (HTTP/1.1 keep-alive `GET /`) at `rate` for `secs` after half
//! a second of warm-up; CPU is ferry's utime + stime over the measured load divided by the
//! requests answered. Variants are interleaved within each repetition and compared within it
//! (ratios per repetition, then the median), as the main bench pairs a before/after.

mod report;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{BenchError, IoContext, Result};
use crate::faults::endpoint::Endpoint;
use crate::faults::ferry::Ferry;
use crate::faults::fixed_rate;
use crate::targets::free_port;

const TEMPLATE: &str = include_str!("../configs/ferry-load-report.yaml");
/// What the replicas report: vLLM's metrics as its `endpoint-load-metrics` header carries them.
pub const REPLICA_REPORT: &str =
    "TEXT named_metrics.kv_cache_usage_perc=0.42, named_metrics.num_requests_waiting=3";
/// One way of running ferry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Variant {
    /// Reports pass through unread.
    Off,
    /// The balancer reads every report.
    Read,
    /// ferry adds its own report to every answer.
    Report,
}

/// What the command was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// ferry's release binary.
    pub ferry: PathBuf,
    /// Results directory.
    pub out: PathBuf,
    /// Scratch directory (configs, logs).
    pub work: PathBuf,
    /// Requests per second, open loop.
    pub rate: u32,
    /// Seconds of measured load per run.
    pub secs: f64,
    /// Keep-alive connections of the load.
    pub connections: usize,
    /// Repetitions (each runs every variant).
    pub reps: usize,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct VariantRun {
    /// Which variant.
    pub variant: Variant,
    /// Which repetition (from 1).
    pub rep: usize,
    /// Requests that ended during the measured load.
    pub sent: u64,
    /// Of those, failed.
    pub failed: u64,
    /// ferry's CPU (user + system) per answered request, µs.
    pub cpu_us_per_req: f64,
    /// Of which user space, µs.
    pub user_us_per_req: f64,
    /// Latency from the due time, ms.
    pub p50_ms: f64,
    /// As `p50_ms`, 99th percentile.
    pub p99_ms: f64,
}

// === impl Variant ===

impl Variant {
    /// Every variant, in run order.
    pub const ALL: [Variant; 3] = [Variant::Off, Variant::Read, Variant::Report];

    /// Name in results.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Off => "off",
            Variant::Read => "read",
            Variant::Report => "report",
        }
    }

    fn config(self, (port, admin): (u16, u16), replicas: &[SocketAddr]) -> String {
        let lb = match self {
            Variant::Read => {
                "{ policy: p2c-ewma, load_report: { metric: named_metrics.kv_cache_usage_perc } }"
            }
            Variant::Off | Variant::Report => "p2c-ewma",
        };
        let route = match self {
            Variant::Report => "{ report: true }",
            Variant::Off | Variant::Read => "{}",
        };
        let list: Vec<String> = replicas.iter().map(ToString::to_string).collect();
        TEMPLATE
            .replace("@ADMIN_PORT@", &admin.to_string())
            .replace("@PORT@", &port.to_string())
            .replace("@ENDPOINTS@", &list.join(", "))
            .replace("@LB@", lb)
            .replace("@ROUTE_LOAD_REPORT@", route)
    }
}

/// Runs every variant `reps` times and writes results.md and results.json.
pub fn run(opts: &Options) -> Result<Vec<VariantRun>> {
    crate::driver::pin_self_to_core0()?;
    std::fs::create_dir_all(&opts.out).ctx(|| format!("creating {}", opts.out.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx(|| "building the runtime".into())?;
    let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut replicas = vec![Endpoint::start(any_port)?, Endpoint::start(any_port)?];
    for r in &mut replicas {
        r.set_report(REPLICA_REPORT)?;
    }
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
    let mut runs = Vec::new();
    for rep in 1..=opts.reps.max(1) {
        for variant in Variant::ALL {
            eprintln!("ferry-bench load-report: {} (rep {rep})", variant.name());
            let workdir = opts.work.join(variant.name());
            let mut run = runtime
                .block_on(one(opts, &workdir, variant, &addrs))
                .map_err(|e| BenchError::Process(format!("{} rep {rep}: {e}", variant.name())))?;
            run.rep = rep;
            eprintln!(
                "  {:.2} µs CPU per request, p50 {:.2} ms, p99 {:.2} ms, {} of {} failed",
                run.cpu_us_per_req, run.p50_ms, run.p99_ms, run.failed, run.sent
            );
            runs.push(run);
        }
    }
    drop(replicas);
    report::write(opts, &runs)?;
    Ok(runs)
}

async fn one(
    opts: &Options,
    workdir: &Path,
    variant: Variant,
    replicas: &[SocketAddr],
) -> Result<VariantRun> {
    let ports = (free_port()?, free_port()?);
    let ferry = Ferry::start_text(
        &opts.ferry,
        workdir,
        &variant.config(ports, replicas),
        ports,
        None,
    )
    .await?;
    let m = fixed_rate::measure(
        ferry,
        fixed_rate::Load {
            connections: opts.connections,
            rate: opts.rate,
            secs: opts.secs,
        },
    )
    .await?;
    Ok(VariantRun {
        variant,
        rep: 1,
        sent: m.sent,
        failed: m.failed,
        cpu_us_per_req: m.cpu_us_per_req,
        user_us_per_req: m.user_us_per_req,
        p50_ms: m.p50_ms,
        p99_ms: m.p99_ms,
    })
}
