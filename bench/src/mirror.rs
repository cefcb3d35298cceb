//! `ferry-bench mirror`: what mirroring costs ferry per primary request (issue 24).
//!
//! Two replicas (the faults bench's endpoints, `ferry-bench fault-upstream`): the primary and
//! the candidate. ferry (`configs/ferry-mirror.yaml`, release binary, one worker on core 1)
//! runs in turn as:
//!
//! - `none`: no mirror;
//! - `m10`: `mirror: [{cluster: candidate, fraction: 0.1}]`;
//! - `m100`: the same at `fraction: 1`;
//! - `m100-hung`: `fraction: 1` to a candidate that reads requests and never answers
//!   (`timeout: 1s`, `max_in_flight: 64`): the primary's latency while every mirror hangs;
//! - `m10-hung`, `m10-killed`, `m100-killed`, `m10-500`, `m100-500`: the candidate hung, gone
//!   (its port closed, as after a SIGKILL: every mirror's connect is refused) or answering
//!   every mirror with 500, at either share: the primary must not notice any of them.
//!
//! Each run is an open-loop load (HTTP/1.1 keep-alive `GET /`) at `rate` for `secs` after half
//! a second of warm-up; CPU is ferry's utime + stime over the measured load divided by the
//! primary requests answered. The mirror's own cost is shown apart: (CPU per request with
//! mirroring − without, in the same repetition) ÷ the share mirrored = CPU per mirror.
//! Variants are interleaved within each repetition and compared within it.

mod report;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{BenchError, IoContext, Result};
use crate::faults::endpoint::{Endpoint, Mode};
use crate::faults::ferry::Ferry;
use crate::faults::fixed_rate;
use crate::ports::free_port;

const TEMPLATE: &str = include_str!("../configs/ferry-mirror.yaml");
/// One way of running ferry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Variant {
    /// No mirror.
    None,
    /// A tenth mirrored.
    Ten,
    /// Everything mirrored.
    All,
    /// Everything mirrored to a candidate that never answers.
    AllHung,
    /// A tenth mirrored to a candidate that never answers.
    TenHung,
    /// A tenth mirrored to a candidate that is gone (connection refused).
    TenKilled,
    /// Everything mirrored to a candidate that is gone.
    AllKilled,
    /// A tenth mirrored to a candidate answering 500.
    TenFailing,
    /// Everything mirrored to a candidate answering 500.
    AllFailing,
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
    /// Requests the candidate answered during the run (warm-up included).
    pub mirrored: u64,
    /// ferry's CPU (user + system) per answered primary request, µs.
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
    /// What the candidate does in this variant (`None`: it is gone).
    fn candidate(self) -> Option<Mode> {
        match self {
            Variant::AllHung | Variant::TenHung => Some(Mode::Hang),
            Variant::TenKilled | Variant::AllKilled => None,
            Variant::TenFailing | Variant::AllFailing => Some(Mode::Fail),
            Variant::None | Variant::Ten | Variant::All => Some(Mode::Normal),
        }
    }

    /// Every variant, in run order.
    pub const ALL: [Variant; 9] = [
        Variant::None,
        Variant::Ten,
        Variant::All,
        Variant::AllHung,
        Variant::TenHung,
        Variant::TenKilled,
        Variant::AllKilled,
        Variant::TenFailing,
        Variant::AllFailing,
    ];

    /// Name in results.
    pub fn name(self) -> &'static str {
        match self {
            Variant::None => "none",
            Variant::Ten => "m10",
            Variant::All => "m100",
            Variant::AllHung => "m100-hung",
            Variant::TenHung => "m10-hung",
            Variant::TenKilled => "m10-killed",
            Variant::AllKilled => "m100-killed",
            Variant::TenFailing => "m10-500",
            Variant::AllFailing => "m100-500",
        }
    }

    /// The share of requests mirrored.
    pub fn fraction(self) -> f64 {
        match self {
            Variant::None => 0.0,
            Variant::Ten | Variant::TenHung | Variant::TenKilled | Variant::TenFailing => 0.1,
            Variant::All | Variant::AllHung | Variant::AllKilled | Variant::AllFailing => 1.0,
        }
    }

    fn config(
        self,
        (port, admin): (u16, u16),
        primary: SocketAddr,
        candidate: SocketAddr,
    ) -> String {
        let mirror = match self {
            Variant::None => "[]".to_owned(),
            v => format!(
                "[{{ cluster: candidate, fraction: {}, timeout: 1s, max_in_flight: 64 }}]",
                v.fraction()
            ),
        };
        TEMPLATE
            .replace("@ADMIN_PORT@", &admin.to_string())
            .replace("@PORT@", &port.to_string())
            .replace("@PRIMARY@", &primary.to_string())
            .replace("@CANDIDATE@", &candidate.to_string())
            .replace("@MIRROR@", &mirror)
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
    let primary = Endpoint::start(any_port)?;
    let mut candidate = Endpoint::start(any_port)?;
    // A port nothing listens on: where a SIGKILLed candidate's mirrors go.
    let gone = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    let mut runs = Vec::new();
    for rep in 1..=opts.reps.max(1) {
        for variant in Variant::ALL {
            eprintln!("ferry-bench mirror: {} (rep {rep})", variant.name());
            let target = match variant.candidate() {
                Some(mode) => {
                    candidate.set(mode)?;
                    candidate.addr
                }
                None => gone,
            };
            let before = candidate.answered()?;
            let workdir = opts.work.join(variant.name());
            let mut run = runtime
                .block_on(one(opts, &workdir, variant, (primary.addr, target)))
                .map_err(|e| BenchError::Process(format!("{} rep {rep}: {e}", variant.name())))?;
            run.rep = rep;
            run.mirrored = candidate.answered()? - before;
            eprintln!(
                "  {:.2} µs CPU per request, p50 {:.2} ms, p99 {:.2} ms, {} of {} failed, {} mirrored",
                run.cpu_us_per_req, run.p50_ms, run.p99_ms, run.failed, run.sent, run.mirrored
            );
            runs.push(run);
        }
    }
    drop((primary, candidate));
    report::write(opts, &runs)?;
    Ok(runs)
}

async fn one(
    opts: &Options,
    workdir: &Path,
    variant: Variant,
    (primary, candidate): (SocketAddr, SocketAddr),
) -> Result<VariantRun> {
    let ports = (free_port()?, free_port()?);
    let ferry = Ferry::start_text(
        &opts.ferry,
        workdir,
        &variant.config(ports, primary, candidate),
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
        mirrored: 0,
        cpu_us_per_req: m.cpu_us_per_req,
        user_us_per_req: m.user_us_per_req,
        p50_ms: m.p50_ms,
        p99_ms: m.p99_ms,
    })
}
