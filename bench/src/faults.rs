//! `ferry-bench faults`: faults under load (issue 18). ferry (release binary, one worker on
//! core 1, as every scenario starts it) in front of a cluster of two endpoints with retries and
//! outlier ejection configured as a user would (`configs/ferry-faults.yaml`), driven at a fixed
//! rate in open loop over one protocol at a time (HTTP/1.1, HTTP/2, gRPC unary), while one
//! fault is injected: each run is *steady → fault → after*, and every request counts in the
//! phase in which it ended.
//!
//! Faults ([`Fault`]): an endpoint killed and restarted, an endpoint that hangs, one that
//! resets, the DNS answer of the cluster's name changing, a config reload every 100 ms, the
//! listener's identity files rotated under mutual-TLS clients, and SIGTERM mid-load.
//! Per run: requests, failures (status ≠ 200, gRPC status ≠ 0, any transport error), p50/p99
//! of the successful ones; results.md and results.json in the results directory. See the
//! faults section of bench/README.md.

pub(crate) mod client;
pub(crate) mod endpoint;
pub(crate) mod ferry;
pub(crate) mod fixed_rate;
pub(crate) mod load;
pub(crate) mod phases;
mod report;
mod script;
mod setup;

use std::path::PathBuf;
use std::time::Duration;

pub use self::client::Proto;
pub use self::endpoint::serve_child as serve_endpoint;
pub use self::phases::PhaseStats;
use crate::error::{BenchError, IoContext, Result};

/// The faults, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Fault {
    /// One of the two endpoints `SIGKILL`ed, restarted on the same port when the fault ends.
    Killed,
    /// One endpoint accepts and reads requests and never answers.
    Hangs,
    /// One endpoint resets every request (HTTP/1.1 connection reset, HTTP/2 `RST_STREAM`).
    Resets,
    /// The cluster is a DNS name whose answer changes every second.
    Dns,
    /// The config file rewritten every 100 ms, two valid configs alternating.
    Reload,
    /// The listener's certificate and key swapped every 500 ms under mutual-TLS clients.
    Identity,
    /// SIGTERM mid-load.
    Drain,
}

/// What the command was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// ferry's release binary.
    pub ferry: PathBuf,
    /// Results directory.
    pub out: PathBuf,
    /// Scratch directory (configs, certificates, logs).
    pub work: PathBuf,
    /// Requests per second.
    pub rate: u32,
    /// Faults to run.
    pub faults: Vec<Fault>,
    /// Protocols to run each fault over.
    pub protos: Vec<Proto>,
    /// Length of the steady phase (the first 0.5 s is warm-up and not counted).
    pub steady: Duration,
    /// Length of the fault phase.
    pub fault: Duration,
    /// Length of the after phase.
    pub after: Duration,
    /// Runs of each fault over each protocol.
    pub reps: usize,
    /// The route's retry triggers (empty: ferry's defaults).
    pub retry_on: Vec<String>,
}

/// One fault over one protocol.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FaultRun {
    /// Which fault.
    pub fault: Fault,
    /// Which protocol.
    pub proto: Proto,
    /// Which repetition (from 1).
    pub rep: usize,
    /// Steady, fault, after (drain: steady, after SIGTERM).
    pub phases: Vec<PhaseStats>,
    /// Drain only: failed requests that were due before SIGTERM (target 0).
    pub failed_before_sigterm: Option<u64>,
    /// The target for this fault, as a failure share of the fault phase in percent.
    pub target_pct: Option<f64>,
    /// Whether the target was met.
    pub met: Option<bool>,
    /// What else the run saw: ferry's counters, endpoints' answer counts, certificates seen.
    pub notes: Vec<String>,
}

// === impl Fault ===

impl Fault {
    /// Every fault, in run order.
    pub const ALL: [Fault; 7] = [
        Fault::Killed,
        Fault::Hangs,
        Fault::Resets,
        Fault::Dns,
        Fault::Reload,
        Fault::Identity,
        Fault::Drain,
    ];

    /// Name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Killed => "endpoint_killed",
            Fault::Hangs => "endpoint_hangs",
            Fault::Resets => "endpoint_resets",
            Fault::Dns => "dns_change",
            Fault::Reload => "reload_100ms",
            Fault::Identity => "identity_rotation",
            Fault::Drain => "sigterm_drain",
        }
    }

    /// The fault from its name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The target (failure share of the fault phase, percent), where it sets one.
    pub fn target_pct(self) -> Option<f64> {
        match self {
            Fault::Killed => Some(0.1),
            Fault::Reload | Fault::Drain => Some(0.0),
            _ => None,
        }
    }
}

/// Parses a protocol name (`h1`, `h2`, `grpc`).
pub fn parse_proto(name: &str) -> Option<Proto> {
    [Proto::Http1, Proto::H2, Proto::Grpc]
        .into_iter()
        .find(|p| p.name() == name)
}

/// Runs every requested fault over every requested protocol and writes the results; returns
/// the runs (a run that could not be carried out is an error, a missed target is not).
pub fn run(opts: &Options) -> Result<Vec<FaultRun>> {
    crate::driver::pin_self_to_core0()?;
    std::fs::create_dir_all(&opts.out).ctx(|| format!("creating {}", opts.out.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx(|| "building the runtime".into())?;
    let mut runs = Vec::new();
    for &fault in &opts.faults {
        for &proto in &opts.protos {
            for rep in 1..=opts.reps.max(1) {
                let what = format!("{} over {} (rep {rep})", fault.name(), proto.name());
                eprintln!("ferry-bench faults: {what}");
                let run = runtime
                    .block_on(script::run_one(opts, fault, proto, rep))
                    .map_err(|e| BenchError::Process(format!("{what}: {e}")))?;
                eprintln!("  {}", report::one_line(&run));
                runs.push(run);
            }
        }
    }
    let ferry_version = format!(
        "{} ({})",
        crate::peers::version_line(&opts.ferry, &["--version"]),
        opts.ferry.display()
    );
    report::write(opts, &runs, &ferry_version)?;
    Ok(runs)
}
