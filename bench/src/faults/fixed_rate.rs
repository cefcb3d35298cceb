//! One fixed-rate run through a started ferry, as the `mirror` and `load-report` commands
//! measure each variant: a warm-up, then `secs` of open-loop HTTP/1.1 load, and ferry's CPU
//! (its process tree's utime + stime) over the measured part, per answered request.

use std::time::{Duration, Instant};

use super::client::{Dialer, Proto};
use super::ferry::Ferry;
use super::load::{self, Plan};
use super::phases::{self, Phase};
use crate::error::{BenchError, Result};

/// Load before the measured part, so pools and caches are warm.
const WARM_UP: Duration = Duration::from_millis(500);

/// The load of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Load {
    /// Keep-alive connections.
    pub connections: usize,
    /// Requests per second.
    pub rate: u32,
    /// Seconds measured.
    pub secs: f64,
}

/// What one run measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    pub sent: u64,
    pub failed: u64,
    pub cpu_us_per_req: f64,
    pub user_us_per_req: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Runs `load` through `ferry` and stops it.
pub(crate) async fn measure(ferry: Ferry, load: Load) -> Result<Measured> {
    let plan = |duration| Plan {
        dialer: Dialer::plain(ferry.addr, Proto::Http1),
        connections: load.connections,
        streams: 1,
        rate: load.rate,
        duration,
        recycle_after: None,
    };
    load::run(plan(WARM_UP), Instant::now()).await?;
    let ticks = crate::procfs::clock_ticks()?;
    let before = crate::procfs::tree_cpu(ferry.pid(), ticks)?;
    let secs = Duration::try_from_secs_f64(load.secs)
        .map_err(|e| BenchError::Process(format!("--secs: {e}")))?;
    let recorded = load::run(plan(secs), Instant::now()).await?;
    let cpu = crate::procfs::tree_cpu(ferry.pid(), ticks)? - before;
    drop(ferry);
    let all = Phase {
        name: "load",
        from: Duration::ZERO,
        to: Duration::MAX,
    };
    let stats = phases::account(&[all], &recorded.samples)?
        .into_iter()
        .next()
        .ok_or_else(|| BenchError::Process("no latency figures".into()))?;
    let answered = stats.sent.saturating_sub(stats.failed).max(1) as f64;
    Ok(Measured {
        sent: stats.sent,
        failed: stats.failed,
        cpu_us_per_req: cpu.total() * 1e6 / answered,
        user_us_per_req: cpu.user * 1e6 / answered,
        p50_ms: stats.p50_ms,
        p99_ms: stats.p99_ms,
    })
}
