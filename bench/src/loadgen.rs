//! The load generator: closed-loop maximum throughput and open-loop fixed rate with
//! coordinated-omission correction, over HTTP/1.1 keep-alive or h2c, into HDR histograms.
//!
//! Closed loop: `connections × streams` workers each send the next request as soon as the last
//! answer arrived. Open loop: request *k* is due at `start + k / rate`; worker *i* of *W* owns
//! requests *i, i+W, ...* and its latency is measured from the due time, so a stalled target is
//! charged for the requests it delayed (as wrk2 does), not only for the ones it answered.

mod conn;

use std::net::SocketAddr;
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::task::JoinSet;
use tokio::time::Instant;

pub use self::conn::{Conn, Proto, RequestSpec};
use crate::error::{BenchError, Result};

/// Highest latency the histograms track (µs); longer ones are clamped.
const MAX_LATENCY_US: u64 = 60_000_000;

/// A load run's shape.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Where to send.
    pub addr: SocketAddr,
    /// Wire protocol.
    pub proto: Proto,
    /// TCP connections.
    pub connections: usize,
    /// Concurrent requests per connection (1 for HTTP/1.1).
    pub streams: usize,
    /// How long to send.
    pub duration: Duration,
    /// The request.
    pub request: RequestSpec,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct RunStats {
    /// Successful requests.
    pub ok: u64,
    /// Failed requests.
    pub errors: u64,
    /// The first failure, for the report.
    pub first_error: Option<String>,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Latency in µs (from the due time in open-loop runs).
    pub latency: Histogram<u64>,
    /// Response body bytes received.
    pub bytes: u64,
}

// === impl RunStats ===

impl RunStats {
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            ok: 0,
            errors: 0,
            first_error: None,
            elapsed: Duration::ZERO,
            latency: new_histogram()?,
            bytes: 0,
        })
    }

    fn merge(&mut self, other: Self) -> Result<()> {
        self.ok += other.ok;
        self.errors += other.errors;
        self.bytes += other.bytes;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.latency
            .add(&other.latency)
            .map_err(|e| BenchError::Http(format!("merging histograms: {e}")))
    }

    pub(crate) fn record(&mut self, outcome: Result<usize>, latency: Duration) {
        match outcome {
            Ok(bytes) => {
                self.ok += 1;
                self.bytes += bytes as u64;
                let us = u64::try_from(latency.as_micros()).unwrap_or(MAX_LATENCY_US);
                self.latency.saturating_record(us.clamp(1, MAX_LATENCY_US));
            }
            Err(e) => {
                self.errors += 1;
                if self.first_error.is_none() {
                    self.first_error = Some(e.to_string());
                }
            }
        }
    }

    /// Successful requests per second.
    pub fn rps(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Latency at `quantile` (0..=1) in milliseconds.
    pub fn latency_ms(&self, quantile: f64) -> f64 {
        self.latency.value_at_quantile(quantile) as f64 / 1000.0
    }
}

fn new_histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
        .map_err(|e| BenchError::Http(format!("histogram: {e}")))
}

/// Opens the plan's connections; each HTTP/2 connection is shared by `streams` workers.
async fn open_workers(plan: &LoadPlan) -> Result<Vec<Conn>> {
    let mut workers = Vec::new();
    for _ in 0..plan.connections {
        let conn = Conn::connect(plan.addr, plan.proto).await?;
        for _ in 1..plan.streams {
            if let Some(shared) = conn.share() {
                workers.push(shared);
            }
        }
        workers.push(conn);
    }
    Ok(workers)
}

pub(crate) async fn join(mut set: JoinSet<Result<RunStats>>, started: Instant) -> Result<RunStats> {
    let mut total = RunStats::new()?;
    while let Some(joined) = set.join_next().await {
        let stats = joined.map_err(|e| BenchError::Http(format!("load worker: {e}")))??;
        total.merge(stats)?;
    }
    total.elapsed = started.elapsed();
    Ok(total)
}

/// Closed loop: as many requests as the target answers, for `plan.duration`.
pub async fn closed_loop(plan: &LoadPlan) -> Result<RunStats> {
    let workers = open_workers(plan).await?;
    let authority = plan.addr.to_string();
    let started = Instant::now();
    let deadline = started + plan.duration;
    let mut set = JoinSet::new();
    for mut conn in workers {
        let spec = plan.request.clone();
        let authority = authority.clone();
        set.spawn(async move {
            let mut stats = RunStats::new()?;
            while Instant::now() < deadline {
                let sent = Instant::now();
                let outcome = conn.send(&authority, &spec).await;
                let failed = outcome.is_err();
                stats.record(outcome, sent.elapsed());
                if failed {
                    // A broken HTTP/1.1 connection stays broken: stop this worker rather than
                    // spin on errors; the run reports them.
                    break;
                }
            }
            Ok(stats)
        });
    }
    join(set, started).await
}

/// Closed loop with a new connection for every request: each of `plan.connections` workers
/// connects, sends one request, reads the answer and closes, for `plan.duration`. Latency
/// includes the connect. The client closes first, so its side holds the TIME_WAIT sockets
/// (reused on loopback: Linux's `tcp_tw_reuse` default is loopback-only reuse).
pub async fn closed_loop_new_connections(plan: &LoadPlan) -> Result<RunStats> {
    let authority = plan.addr.to_string();
    let started = Instant::now();
    let deadline = started + plan.duration;
    let mut set = JoinSet::new();
    for _ in 0..plan.connections {
        let (addr, proto, spec) = (plan.addr, plan.proto, plan.request.clone());
        let authority = authority.clone();
        set.spawn(async move {
            let mut stats = RunStats::new()?;
            while Instant::now() < deadline {
                let sent = Instant::now();
                let outcome = match Conn::connect(addr, proto).await {
                    Ok(mut conn) => conn.send(&authority, &spec).await,
                    Err(e) => Err(e),
                };
                let failed = outcome.is_err();
                stats.record(outcome, sent.elapsed());
                if failed {
                    break;
                }
            }
            Ok(stats)
        });
    }
    join(set, started).await
}

/// Open loop at `rate` requests per second for `plan.duration`, latency from the due time.
///
/// The due times come from a pacing thread, not from tokio's timer: tokio's timer wheel has
/// 1 ms granularity, so at 1,000 req/s it would add up to a whole interval of send lateness to
/// every sample and drown a proxy's tens of microseconds. The thread sleeps with the OS timer
/// (tens of µs of slack) and spins only the last stretch, then hands the due time to the
/// worker that owns the request.
pub async fn open_loop(plan: &LoadPlan, rate: u32) -> Result<RunStats> {
    let workers = open_workers(plan).await?;
    let width = workers.len().max(1);
    let total = (plan.duration.as_secs_f64() * f64::from(rate)).ceil() as u64;
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
    let authority = plan.addr.to_string();
    let started = Instant::now();
    let mut set = JoinSet::new();
    let mut tickets = Vec::with_capacity(width);
    for mut conn in workers {
        let spec = plan.request.clone();
        let authority = authority.clone();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<std::time::Instant>();
        tickets.push(tx);
        set.spawn(async move {
            let mut stats = RunStats::new()?;
            // A ticket that waits here because the previous answer is late is charged from
            // its due time: the coordinated-omission correction.
            while let Some(due) = rx.recv().await {
                let outcome = conn.send(&authority, &spec).await;
                let failed = outcome.is_err();
                stats.record(outcome, due.elapsed());
                if failed {
                    break;
                }
            }
            Ok(stats)
        });
    }
    let pacer = std::thread::Builder::new()
        .name("loadgen-pacer".into())
        .spawn(move || pace(&tickets, total, interval))
        .map_err(|e| BenchError::Http(format!("starting the pacing thread: {e}")))?;
    let stats = join(set, started).await;
    // The pacer has finished once every worker has seen its channel close.
    let _ = pacer.join();
    stats
}

/// How long before a due time the pacer stops sleeping and spins.
const SPIN: Duration = Duration::from_micros(20);

/// Releases request `k` at `start + k × interval` to worker `k mod width`.
// Runs on its own OS thread, never on the runtime: blocking sleeps are the point here.
#[allow(clippy::disallowed_methods)]
pub(crate) fn pace(
    tickets: &[tokio::sync::mpsc::UnboundedSender<std::time::Instant>],
    total: u64,
    interval: Duration,
) {
    let start = std::time::Instant::now();
    for k in 0..total {
        let due = start + interval.mul_f64(k as f64);
        let now = std::time::Instant::now();
        if due > now + SPIN {
            std::thread::sleep(due - now - SPIN);
        }
        while std::time::Instant::now() < due {
            std::hint::spin_loop();
        }
        let worker = (k % tickets.len() as u64) as usize;
        // A worker that stopped on an error has dropped its receiver; its share is not sent.
        let _ = tickets[worker].send(due);
    }
}

/// Time to the first SSE event, `count` times in a row on one connection (ms each).
pub async fn sse_first_event(
    addr: SocketAddr,
    proto: Proto,
    count: usize,
    path: &str,
) -> Result<Vec<f64>> {
    use http_body_util::BodyExt;
    let mut conn = Conn::connect(addr, proto).await?;
    let authority = addr.to_string();
    let spec = RequestSpec::get(path);
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let sent = Instant::now();
        let mut body = conn.send_streaming(&authority, &spec).await?;
        let mut first = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| BenchError::Http(format!("SSE body: {e}")))?;
            if first.is_none() && frame.data_ref().is_some_and(|d| !d.is_empty()) {
                first = Some(sent.elapsed());
            }
        }
        let first = first.ok_or_else(|| BenchError::Http("SSE stream without events".into()))?;
        out.push(first.as_secs_f64() * 1000.0);
    }
    Ok(out)
}

/// Sends `n` requests one after another on one connection (for instruction counts under
/// callgrind: one request in flight, so each is the same work).
pub async fn sequential(
    addr: SocketAddr,
    proto: Proto,
    spec: &RequestSpec,
    n: usize,
) -> Result<()> {
    let mut conn = Conn::connect(addr, proto).await?;
    let authority = addr.to_string();
    for _ in 0..n {
        conn.send(&authority, spec).await?;
    }
    Ok(())
}
