//! Windowed request statistics for the admin `/stats` endpoint, `ferry stat` and `ferry top`.
//!
//! Place: the request metadata layer ([`crate::request_meta`]) adds each answered request to
//! two cumulative [`Cell`]s, its route's (kept in the route's `RouteState`, so an unchanged
//! route keeps counting across reloads) and its last attempt's endpoint's; model rows are
//! the sum of the routes that match the model, cluster rows the sum of their endpoints, so
//! the request path touches two cells only (relaxed atomic adds, no lock, no allocation).
//! A 1 Hz sampler ([`window`]) turns the cells into per-second deltas in a bounded ring, and
//! a window is the sum of its last N seconds ([`query`]).
//!
//! Why not the Prometheus series: `prometheus-client` neither lists a family's series nor
//! exposes a histogram's buckets, and its latency buckets double, too coarse for a p99 read
//! at a glance. The cells keep half-octave buckets.
//!
//! Success: an answer is a failure when its HTTP status is 5xx or its `grpc-status` (from the
//! headers or the trailers) is one of [`GRPC_FAILURES`], the codes gRPC maps to 5xx.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

mod query;
mod window;

pub use query::{Query, QueryError};
pub use window::{By, RowKey, SECONDS, Windows, run_sampler};

/// Latency buckets: upper bounds 100 µs × √2^i for i in 0..=40 (100 µs .. ~105 s), and one
/// more for everything slower.
pub const BUCKETS: usize = 42;

/// gRPC codes counted as failures: UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL,
/// UNAVAILABLE, DATA_LOSS (the codes whose HTTP equivalent is 5xx). CANCELLED, client
/// mistakes (INVALID_ARGUMENT, NOT_FOUND, …) and RESOURCE_EXHAUSTED (429) are not.
pub const GRPC_FAILURES: [u32; 6] = [2, 4, 12, 13, 14, 15];

/// `failure` reasons of answers ferry's limits made: rate limit, concurrency queue.
const LIMITED: [&str; 3] = ["rate_limited", "queue_full", "queue_timeout"];

/// One row's cumulative counts, written on the request path.
#[derive(Debug)]
pub struct Cell {
    /// Answers by latency bucket; their sum is the request count.
    buckets: [AtomicU64; BUCKETS],
    failures: AtomicU64,
    retries: AtomicU64,
    limited: AtomicU64,
    queued: AtomicU64,
    /// Requests routed here whose answer has not ended (routes only; an endpoint's own
    /// in-flight count is the balancer's).
    in_flight: AtomicU64,
}

/// A cell's counts read at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Answers by latency bucket.
    pub buckets: [u64; BUCKETS],
    /// Failed answers (5xx, gRPC failure codes).
    pub failures: u64,
    /// Attempts after the first.
    pub retries: u64,
    /// Answers ferry's limits made (429 rate limited, 503 queue full or timed out).
    pub limited: u64,
    /// Requests that waited for a concurrency slot.
    pub queued: u64,
}

/// Removes the in-flight mark of a routed request when its answer ends.
#[derive(Debug)]
pub struct InFlight(std::sync::Arc<Cell>);

// === impl Cell ===

impl Default for Cell {
    fn default() -> Self {
        Cell {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            failures: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            limited: AtomicU64::new(0),
            queued: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
        }
    }
}

impl Cell {
    /// Counts one answer that took `latency` to its response headers.
    pub fn answer(&self, latency: Duration, failed: bool, retries: u32, limited: bool) {
        self.buckets[bucket(latency)].fetch_add(1, Ordering::Relaxed);
        if failed {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
        if retries > 0 {
            self.retries
                .fetch_add(u64::from(retries), Ordering::Relaxed);
        }
        if limited {
            self.limited.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a failure learnt after the answer was counted (a gRPC status in trailers).
    pub fn late_failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request that waited for a concurrency slot.
    pub fn queued(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks a request in flight until the guard drops.
    pub fn start(self: &std::sync::Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The counts now.
    pub fn read(&self) -> Counts {
        let mut c = Counts {
            failures: self.failures.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            limited: self.limited.load(Ordering::Relaxed),
            queued: self.queued.load(Ordering::Relaxed),
            ..Counts::default()
        };
        for (out, b) in c.buckets.iter_mut().zip(&self.buckets) {
            *out = b.load(Ordering::Relaxed);
        }
        c
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

// === impl Counts ===

impl Default for Counts {
    fn default() -> Self {
        Counts {
            buckets: [0; BUCKETS],
            failures: 0,
            retries: 0,
            limited: 0,
            queued: 0,
        }
    }
}

impl Counts {
    /// Answers counted.
    pub fn requests(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &Counts) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.failures += other.failures;
        self.retries += other.retries;
        self.limited += other.limited;
        self.queued += other.queued;
    }

    /// What was added since `before`, or all of these counts when the cell was replaced
    /// (a count went down: a changed route or a new endpoint starts again at zero).
    pub fn since(&self, before: &Counts) -> Counts {
        let reset = self.failures < before.failures
            || self.retries < before.retries
            || self.limited < before.limited
            || self.queued < before.queued
            || self.buckets.iter().zip(&before.buckets).any(|(a, b)| a < b);
        if reset {
            return self.clone();
        }
        let mut d = Counts {
            failures: self.failures - before.failures,
            retries: self.retries - before.retries,
            limited: self.limited - before.limited,
            queued: self.queued - before.queued,
            ..Counts::default()
        };
        for ((out, a), b) in d.buckets.iter_mut().zip(&self.buckets).zip(&before.buckets) {
            *out = a - b;
        }
        d
    }

    /// Whether nothing was counted.
    pub fn is_zero(&self) -> bool {
        self.failures == 0
            && self.retries == 0
            && self.limited == 0
            && self.queued == 0
            && self.buckets.iter().all(|b| *b == 0)
    }

    /// The `q` quantile (0..1) of the latencies in seconds, interpolated linearly inside the
    /// bucket it falls in (so it is off by at most that bucket's width, a factor √2); `None`
    /// without answers. In the last, open bucket it is that bucket's lower bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.requests();
        if total == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total as f64;
        let mut seen = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            if n == 0 {
                continue;
            }
            if (seen + n) as f64 >= rank {
                let lower = if i == 0 { 0.0 } else { upper_bound(i - 1) };
                if i == BUCKETS - 1 {
                    return Some(lower);
                }
                let share = ((rank - seen as f64) / n as f64).clamp(0.0, 1.0);
                return Some(lower + (upper_bound(i) - lower) * share);
            }
            seen += n;
        }
        Some(upper_bound(BUCKETS - 2))
    }
}

/// Upper bound of bucket `i` in seconds (`i` < `BUCKETS - 1`).
fn upper_bound(i: usize) -> f64 {
    0.0001 * std::f64::consts::SQRT_2.powi(i32::try_from(i).unwrap_or(i32::MAX))
}

/// The bucket of a latency: by the octave from the leading zeros of its count of 100 µs
/// steps, then which half of the octave.
fn bucket(latency: Duration) -> usize {
    const STEP_NS: u128 = 100_000;
    let ns = latency.as_nanos();
    if ns <= STEP_NS {
        return 0;
    }
    // Bucket i holds (100µs·√2^(i-1), 100µs·√2^i]: compare ns² against STEP²·2^i.
    let sq = ns.saturating_mul(ns);
    let step_sq = STEP_NS * STEP_NS;
    let ratio = sq.div_ceil(step_sq);
    // The smallest i with 2^i >= ratio.
    let i = (128 - (ratio - 1).leading_zeros()) as usize;
    i.min(BUCKETS - 1)
}

/// Whether an answer counts as a failure: a 5xx status, or a gRPC failure code.
pub fn is_failure(status: u16, grpc_status: Option<u32>) -> bool {
    status >= 500 || grpc_status.is_some_and(|c| GRPC_FAILURES.contains(&c))
}

/// Whether a ferry-made answer came from its limits.
pub fn is_limited(reason: Option<&str>) -> bool {
    reason.is_some_and(|r| LIMITED.contains(&r))
}

#[cfg(test)]
mod tests;
