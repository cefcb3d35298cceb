//! One case of the spread bench on one balancer: set the replicas' service times, start the
//! balancer, drive the case's open-loop load (the faults bench's generator, HTTP/1.1
//! keep-alive `GET /`), and read what each replica served (its own counter, sampled once a
//! second, so the report shows when a replica was starved, not only that it was).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::proxy::{Balancer, Binaries};
use super::verdict::{self, SlowVerdict};
use crate::error::{BenchError, Result};
use crate::faults::client::{Dialer, Proto};
use crate::faults::endpoint::Endpoint;
use crate::faults::load::{self, Plan};
use crate::faults::phases::{self, Phase};

/// Service time of a fast replica: small but real, so a replica 10× slower is 10× slower in
/// what it adds, not only in the proxy's estimate.
pub const FAST: Duration = Duration::from_millis(1);
/// Service time of the slow replica (10× [`FAST`]).
pub const SLOW: Duration = Duration::from_millis(10);
/// Which replica is the slow one in a slow case (the second: nothing about it is special).
pub const SLOW_REPLICA: usize = 1;
/// Requests due in the first half second (connections being opened) are left out of the
/// latency figures; every request counts in the shares.
const WARM_UP: Duration = Duration::from_millis(500);
/// How often the replicas' counters are read.
const TICK: Duration = Duration::from_secs(1);

/// A load shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Case {
    /// Name in results.
    pub name: &'static str,
    /// Requests per second, open loop.
    pub rate: u32,
    /// Requests in all (the run lasts `requests / rate`).
    pub requests: u32,
    /// Keep-alive HTTP/1.1 connections.
    pub connections: usize,
    /// Whether replica [`SLOW_REPLICA`] answers in [`SLOW`] instead of [`FAST`].
    pub slow: bool,
}

/// What one case measured on one balancer.
#[derive(Debug, Clone, Serialize)]
pub struct CaseRun {
    /// Which balancer.
    pub balancer: Balancer,
    /// Which case.
    pub case: Case,
    /// Which repetition (from 1).
    pub rep: usize,
    /// Requests each replica answered during the load.
    pub served: Vec<u64>,
    /// Each replica's share of `served`.
    pub shares: Vec<f64>,
    /// Replica 0's share in each second of the load (`None`: nothing served that second).
    pub per_second_share_a: Vec<Option<f64>>,
    /// Requests sent (after warm-up).
    pub sent: u64,
    /// Of those, failed.
    pub failed: u64,
    /// Fleet latency, ms (successful requests, from their due time).
    pub p50_ms: f64,
    /// As `p50_ms`, 99th percentile.
    pub p99_ms: f64,
    /// As `p50_ms`, slowest.
    pub max_ms: f64,
    /// Identical replicas: each within 40–60 %.
    pub spread_met: Option<bool>,
    /// Slow replica: its share and the p99 against the same balancer's all-fast case.
    pub slow: Option<SlowVerdict>,
}

// === impl Case ===

impl Case {
    /// The cases: two identical replicas at 20, 200 and 2,000 req/s (a handful of
    /// connections at low load, as the reproduction had), then one replica 10× slower
    /// at 200 req/s. The 200 req/s identical case is the slow case's all-fast baseline.
    pub const ALL: [Case; 4] = [
        Case::identical("identical_20", 20, 400, 4),
        Case::identical("identical_200", 200, 2_000, 4),
        Case::identical("identical_2000", 2_000, 10_000, 50),
        Case {
            name: "slow_200",
            rate: 200,
            requests: 2_000,
            connections: 4,
            slow: true,
        },
    ];

    /// The identical case whose p99 is the slow case's baseline.
    pub const BASELINE: &'static str = "identical_200";

    const fn identical(name: &'static str, rate: u32, requests: u32, connections: usize) -> Self {
        Case {
            name,
            rate,
            requests,
            connections,
            slow: false,
        }
    }

    fn duration(self) -> Duration {
        Duration::from_secs_f64(f64::from(self.requests) / f64::from(self.rate.max(1)))
    }
}

/// Runs `case` on `balancer` in front of `replicas` (taken for the run and given back).
pub async fn run(
    bins: &Binaries,
    workdir: &Path,
    balancer: Balancer,
    case: Case,
    replicas: &mut Vec<Endpoint>,
) -> Result<CaseRun> {
    for (i, replica) in replicas.iter_mut().enumerate() {
        let slow = case.slow && i == SLOW_REPLICA;
        replica.set_service(if slow { SLOW } else { FAST })?;
    }
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
    let running = balancer.start(bins, workdir, &addrs).await?;
    let sampler = Sampler::start(std::mem::take(replicas))?;
    let plan = Plan {
        dialer: Dialer::plain(running.addr(), Proto::Http1),
        connections: case.connections,
        streams: 1,
        rate: case.rate,
        duration: case.duration(),
        recycle_after: None,
    };
    let recorded = load::run(plan, Instant::now()).await;
    drop(running);
    let (back, ticks) = sampler.finish()?;
    *replicas = back;
    let ticks = ticks?;
    let recorded = recorded?;
    let served = match (ticks.first(), ticks.last()) {
        (Some(first), Some(last)) => last
            .iter()
            .zip(first)
            .map(|(l, f)| l.saturating_sub(*f))
            .collect(),
        _ => Vec::new(),
    };
    let all = Phase {
        name: "load",
        from: WARM_UP,
        to: Duration::MAX,
    };
    let stats = phases::account(&[all], &recorded.samples)?;
    let stats = stats
        .into_iter()
        .next()
        .ok_or_else(|| BenchError::Process("no latency figures".into()))?;
    Ok(CaseRun {
        balancer,
        case,
        rep: 1,
        shares: verdict::shares(&served).unwrap_or_default(),
        spread_met: (!case.slow).then(|| verdict::spread_met(&served)),
        served,
        per_second_share_a: verdict::interval_shares(&ticks),
        sent: stats.sent,
        failed: stats.failed,
        p50_ms: stats.p50_ms,
        p99_ms: stats.p99_ms,
        max_ms: stats.max_ms,
        slow: None,
    })
}

type Ticks = Result<Vec<Vec<u64>>>;

/// The thread reading the replicas' counters during a run.
struct Sampler {
    stop: mpsc::Sender<()>,
    handle: std::thread::JoinHandle<(Vec<Endpoint>, Ticks)>,
}

// === impl Sampler ===

impl Sampler {
    /// Reads every replica's counter now, then once per [`TICK`] on a thread of its own (the
    /// reads block on the replicas' pipes) until [`Sampler::finish`].
    fn start(mut replicas: Vec<Endpoint>) -> Result<Self> {
        let first = read_all(&mut replicas)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            let mut ticks = vec![first];
            let result = loop {
                let done = !matches!(
                    stopped.recv_timeout(TICK),
                    Err(mpsc::RecvTimeoutError::Timeout)
                );
                match read_all(&mut replicas) {
                    Ok(counts) => ticks.push(counts),
                    Err(e) => break Err(e),
                }
                if done {
                    break Ok(ticks);
                }
            };
            (replicas, result)
        });
        Ok(Self { stop, handle })
    }

    /// Takes a last reading and gives the replicas back with every reading.
    fn finish(self) -> Result<(Vec<Endpoint>, Ticks)> {
        drop(self.stop);
        self.handle
            .join()
            .map_err(|_| BenchError::Process("the counter sampler panicked".into()))
    }
}

fn read_all(replicas: &mut [Endpoint]) -> Result<Vec<u64>> {
    replicas.iter_mut().map(Endpoint::answered).collect()
}
