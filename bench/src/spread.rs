//! `ferry-bench spread`: how a balancer spreads requests over a fleet of two replicas (issue
//! 20). ferry with `lb: p2c-ewma` (its default) and `lb: round-robin`, and Envoy 1.40 with
//! `LEAST_REQUEST` and `ROUND_ROBIN`, each in turn in front of the same two replica processes
//! (the faults bench's endpoints, `ferry-bench fault-upstream`, which count what they serve
//! and answer after a set service time), driven in open loop over HTTP/1.1 keep-alive
//! connections.
//!
//! Cases ([`Case::ALL`]): two identical replicas (1 ms each) at 20, 200 and 2,000 req/s, target
//! 40–60 % each; one replica 10× slower (10 ms) at 200 req/s, target ≤ 15 % for it and a fleet
//! p99 ≤ 1.3× the same balancer's all-fast p99 at 200 req/s, measured in the same run. Each
//! case starts its balancer afresh, so no latency estimate carries from one case into the next.
//! results.md and results.json in the results directory; see the spread section of
//! bench/README.md.

mod case;
mod proxy;
mod report;
mod verdict;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use self::case::{Case, CaseRun};
pub use self::proxy::{Balancer, Binaries};
use crate::error::{BenchError, IoContext, Result};
use crate::faults::endpoint::Endpoint;

/// What the command was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// ferry and Envoy.
    pub bins: Binaries,
    /// Results directory.
    pub out: PathBuf,
    /// Scratch directory (configs, logs).
    pub work: PathBuf,
    /// Balancers to compare, in run order.
    pub balancers: Vec<Balancer>,
    /// Runs of every case on every balancer (repetitions outermost, so drift on a shared
    /// machine spreads over all balancers).
    pub reps: usize,
}

/// Runs every case on every balancer and writes the results; returns the runs (a run that
/// could not be carried out is an error, a missed target is not).
pub fn run(opts: &Options) -> Result<Vec<CaseRun>> {
    crate::driver::pin_self_to_core0()?;
    std::fs::create_dir_all(&opts.out).ctx(|| format!("creating {}", opts.out.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx(|| "building the runtime".into())?;
    let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut replicas = vec![Endpoint::start(any_port)?, Endpoint::start(any_port)?];
    let mut runs = Vec::new();
    for rep in 1..=opts.reps.max(1) {
        for &balancer in &opts.balancers {
            let workdir = opts.work.join(balancer.name());
            let mut mine: Vec<CaseRun> = Vec::new();
            for case in Case::ALL {
                let what = format!("{} on {} (rep {rep})", case.name, balancer.name());
                eprintln!("ferry-bench spread: {what}");
                let mut run = runtime
                    .block_on(case::run(
                        &opts.bins,
                        &workdir,
                        balancer,
                        case,
                        &mut replicas,
                    ))
                    .map_err(|e| BenchError::Process(format!("{what}: {e}")))?;
                run.rep = rep;
                eprintln!("  {}", report::one_line(&run));
                mine.push(run);
            }
            judge_slow(&mut mine);
            runs.extend(mine);
        }
    }
    let mut versions = vec![(
        "ferry".to_owned(),
        crate::peers::version_line(&opts.bins.ferry, &["--version"]),
    )];
    if let Some(envoy) = &opts.bins.envoy
        && opts.balancers.iter().any(|b| b.is_envoy())
    {
        versions.push((
            "envoy".to_owned(),
            crate::peers::version_line(envoy, &["--version"]),
        ));
    }
    report::write(opts, &runs, versions)?;
    Ok(runs)
}

/// Gives each slow case of one balancer its verdict against that balancer's all-fast
/// baseline.
fn judge_slow(runs: &mut [CaseRun]) {
    let baseline = runs
        .iter()
        .find(|r| r.case.name == Case::BASELINE)
        .map_or(0.0, |r| r.p99_ms);
    for run in runs.iter_mut().filter(|r| r.case.slow) {
        run.slow = Some(verdict::slow_verdict(
            &run.served,
            case::SLOW_REPLICA,
            run.p99_ms,
            baseline,
        ));
    }
}
