//! The admin `/recent` ring: the last [`KEEP`] failed answers and the [`KEEP`] slowest of the
//! last five minutes, as access records in the access log's JSON schema, for `ferry top` and
//! the admin page.
//!
//! Cost without an access-log sink: the request metadata layer keeps cheap handles to what the
//! record needs (method, URI, `host` and `x-request-id` values: reference counts, no copy) and
//! builds a record only for an answer that failed or whose time to response headers reaches
//! [`Recent::threshold`], the fastest of the slowest kept (0 until [`KEEP`] are kept). Once
//! the ring is full, a typical answer costs one atomic load here; a record is built only for
//! answers slower than the fiftieth slowest. With a sink every record is offered, so the ring
//! also sees the failures a gRPC stream reports in its trailers.
//!
//! Failed: a 5xx, a gRPC failure code (as `/stats` counts them), or an answer ferry made
//! itself (`failure` set: no route, rate limited, cancelled by the caller, …).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::access_log::{AccessRecord, json_line};

/// Records kept in each list.
pub const KEEP: usize = 50;

/// How long a slow answer stays among the slowest.
pub const SLOW_AGE: Duration = Duration::from_secs(300);

/// The ring.
#[derive(Debug, Default)]
pub struct Recent {
    /// Newest last.
    failed: Mutex<VecDeque<AccessRecord>>,
    /// Unordered; each with when it was kept.
    slowest: Mutex<Vec<(Instant, AccessRecord)>>,
    /// Nanoseconds to response headers an answer needs to enter `slowest`.
    threshold: AtomicU64,
}

// === impl Recent ===

impl Recent {
    /// Whether an answer with these facts, known at its response headers, may be kept.
    pub fn wants(&self, failed: bool, ttfb: Duration) -> bool {
        failed || nanos(ttfb) >= self.threshold.load(Ordering::Relaxed)
    }

    /// The time to response headers an answer needs to be kept as slow now.
    pub fn threshold(&self) -> Duration {
        Duration::from_nanos(self.threshold.load(Ordering::Relaxed))
    }

    /// Keeps `r` if it failed or is among the slowest.
    pub fn offer(&self, r: &AccessRecord) {
        if is_failed(r)
            && let Ok(mut failed) = self.failed.lock()
        {
            if failed.len() == KEEP {
                failed.pop_front();
            }
            failed.push_back(r.clone());
        }
        if nanos(r.duration) < self.threshold.load(Ordering::Relaxed) {
            return;
        }
        let Ok(mut slowest) = self.slowest.lock() else {
            return;
        };
        let now = Instant::now();
        slowest.retain(|(at, _)| now.saturating_duration_since(*at) < SLOW_AGE);
        if slowest.len() == KEEP
            && let Some(i) = fastest(&slowest)
        {
            if slowest
                .get(i)
                .is_some_and(|(_, f)| f.duration >= r.duration)
            {
                self.set_threshold(&slowest);
                return;
            }
            slowest.swap_remove(i);
        }
        slowest.push((now, r.clone()));
        self.set_threshold(&slowest);
    }

    /// `{"failed":[…newest first],"slowest":[…slowest first]}`, each element an access
    /// record as the JSON access log writes it.
    pub fn json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(b"{\"failed\":[");
        if let Ok(failed) = self.failed.lock() {
            records(&mut out, failed.iter().rev());
        }
        out.extend_from_slice(b"],\"slowest\":[");
        if let Ok(mut slowest) = self.slowest.lock() {
            let now = Instant::now();
            slowest.retain(|(at, _)| now.saturating_duration_since(*at) < SLOW_AGE);
            self.set_threshold(&slowest);
            let mut sorted: Vec<_> = slowest.iter().map(|(_, r)| r).collect();
            sorted.sort_by_key(|r| std::cmp::Reverse(r.duration));
            records(&mut out, sorted.into_iter());
        }
        out.extend_from_slice(b"]}");
        out
    }

    fn set_threshold(&self, slowest: &[(Instant, AccessRecord)]) {
        let t = if slowest.len() < KEEP {
            0
        } else {
            fastest(slowest)
                .and_then(|i| slowest.get(i))
                .map_or(0, |(_, r)| nanos(r.duration))
        };
        self.threshold.store(t, Ordering::Relaxed);
    }
}

/// Whether a finished record counts as failed here.
pub fn is_failed(r: &AccessRecord) -> bool {
    r.failure.is_some()
        || r.status
            .is_some_and(|s| crate::stats::is_failure(s, r.grpc_status))
        || r.grpc_status
            .is_some_and(|c| crate::stats::is_failure(0, Some(c)))
}

fn fastest(slowest: &[(Instant, AccessRecord)]) -> Option<usize> {
    slowest
        .iter()
        .enumerate()
        .min_by_key(|(_, (_, r))| r.duration)
        .map(|(i, _)| i)
}

fn records<'a>(out: &mut Vec<u8>, rs: impl Iterator<Item = &'a AccessRecord>) {
    for (i, r) in rs.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json_line(out, r);
        // The line's newline, inside an array.
        if out.last() == Some(&b'\n') {
            out.pop();
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
