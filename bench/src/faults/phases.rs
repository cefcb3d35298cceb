//! Phase accounting: every request of a run is a [`Sample`] stamped with its due time and its
//! latency, and a run is cut into phases (steady, fault, after) by when each request *ended*
//! (due time + latency: answered or failed). A fault acts on the requests in flight when it
//! starts: a request due a millisecond before an endpoint is killed fails at the kill, and is
//! the fault's, not the steady phase's (counted by due time, the first runs showed 1–3 such
//! failures in "steady"). The drain's question is different ("was it in flight at SIGTERM?")
//! and is asked by due time: [`failed_before`].

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::error::{BenchError, Result};

/// One request of an open-loop run.
#[derive(Debug, Clone)]
pub struct Sample {
    /// When it was due, from the start of the run.
    pub due: Duration,
    /// From its due time to its answer (or failure): coordinated-omission corrected.
    pub latency: Duration,
    /// Why it failed; `None` for a 200.
    pub failure: Option<String>,
}

/// A named window of due times, `[from, to)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    /// `steady`, `fault` or `after`.
    pub name: &'static str,
    /// Start, from the start of the run.
    pub from: Duration,
    /// End (exclusive).
    pub to: Duration,
}

/// What one phase measured.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseStats {
    /// The phase's name.
    pub name: &'static str,
    /// Requests that ended (were answered or failed) in it.
    pub sent: u64,
    /// Of those, failed (status ≠ 200, gRPC status ≠ 0, transport error).
    pub failed: u64,
    /// `failed / sent` in percent.
    pub failed_pct: f64,
    /// Latency of the successful requests from their due time, ms (0 when none succeeded).
    pub p50_ms: f64,
    /// As `p50_ms`, 99th percentile.
    pub p99_ms: f64,
    /// As `p50_ms`, the slowest.
    pub max_ms: f64,
    /// Failure reasons with their counts, most frequent first.
    pub reasons: Vec<(String, u64)>,
}

/// Cuts `samples` into `phases` by when they ended; a sample ending outside every phase is
/// not counted.
pub fn account(phases: &[Phase], samples: &[Sample]) -> Result<Vec<PhaseStats>> {
    phases
        .iter()
        .map(|phase| {
            let inside = samples.iter().filter(|s| {
                let ended = s.due + s.latency;
                ended >= phase.from && ended < phase.to
            });
            stats(phase, inside)
        })
        .collect()
}

/// Failed requests that were due before `instant` (for the drain: sent, or owed, before
/// SIGTERM, so they must all be answered).
pub fn failed_before(samples: &[Sample], instant: Duration) -> u64 {
    samples
        .iter()
        .filter(|s| s.due < instant && s.failure.is_some())
        .count() as u64
}

fn stats<'a>(phase: &Phase, samples: impl Iterator<Item = &'a Sample>) -> Result<PhaseStats> {
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)
        .map_err(|e| BenchError::Report(format!("histogram: {e}")))?;
    let mut reasons = BTreeMap::<String, u64>::new();
    let (mut sent, mut failed) = (0u64, 0u64);
    for s in samples {
        sent += 1;
        match &s.failure {
            Some(reason) => {
                failed += 1;
                *reasons.entry(reason.clone()).or_default() += 1;
            }
            None => {
                let us = u64::try_from(s.latency.as_micros()).unwrap_or(u64::MAX);
                latency.saturating_record(us.clamp(1, 60_000_000));
            }
        }
    }
    let mut reasons: Vec<(String, u64)> = reasons.into_iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let ms = |q: f64| {
        if latency.is_empty() {
            0.0
        } else {
            latency.value_at_quantile(q) as f64 / 1000.0
        }
    };
    Ok(PhaseStats {
        name: phase.name,
        sent,
        failed,
        failed_pct: if sent == 0 {
            0.0
        } else {
            failed as f64 * 100.0 / sent as f64
        },
        p50_ms: ms(0.5),
        p99_ms: ms(0.99),
        max_ms: if latency.is_empty() {
            0.0
        } else {
            latency.max() as f64 / 1000.0
        },
        reasons,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(due_ms: u64, latency_ms: u64, failure: Option<&str>) -> Sample {
        Sample {
            due: Duration::from_millis(due_ms),
            latency: Duration::from_millis(latency_ms),
            failure: failure.map(str::to_owned),
        }
    }

    fn phase(name: &'static str, from_ms: u64, to_ms: u64) -> Phase {
        Phase {
            name,
            from: Duration::from_millis(from_ms),
            to: Duration::from_millis(to_ms),
        }
    }

    #[test]
    fn requests_count_in_the_phase_they_ended_in() {
        let phases = [
            phase("steady", 0, 1000),
            phase("fault", 1000, 2000),
            phase("after", 2000, 3000),
        ];
        let samples = [
            sample(0, 1, None),
            sample(500, 1000, None),
            // Due in steady, failed when the fault began: the fault's.
            sample(999, 2, Some("status 503")),
            sample(1500, 3, Some("status 503")),
            sample(1600, 4, Some("connect: ConnectionRefused")),
            sample(1700, 5, None),
            // Due in the fault, answered after it: the after phase's.
            sample(1999, 1, None),
            // Ends outside every phase: not counted.
            sample(2999, 1, Some("late")),
        ];
        let got = account(&phases, &samples).unwrap();
        assert_eq!(
            got.iter().map(|p| (p.sent, p.failed)).collect::<Vec<_>>(),
            [(1, 0), (5, 3), (1, 0)]
        );
        assert_eq!(got[1].failed_pct, 60.0);
        assert_eq!(
            got[1].reasons,
            [
                ("status 503".to_owned(), 2),
                ("connect: ConnectionRefused".to_owned(), 1)
            ]
        );
        // Only successes are in the latency figures.
        assert!((got[1].p99_ms - 1000.0).abs() < 1.0, "{}", got[1].p99_ms);
        assert!((got[1].p50_ms - 5.0).abs() < 0.01, "{}", got[1].p50_ms);
        assert!((got[0].max_ms - 1.0).abs() < 0.01, "{}", got[0].max_ms);
    }

    #[test]
    fn an_empty_phase_has_zero_figures() {
        let got = account(&[phase("fault", 0, 10)], &[]).unwrap();
        assert_eq!((got[0].sent, got[0].failed, got[0].failed_pct), (0, 0, 0.0));
        assert_eq!(
            (got[0].p50_ms, got[0].p99_ms, got[0].max_ms),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn failures_due_before_an_instant() {
        let samples = [
            sample(10, 1, Some("reset")),
            sample(20, 1, None),
            sample(30, 1, Some("connect: ConnectionRefused")),
        ];
        assert_eq!(failed_before(&samples, Duration::from_millis(30)), 1);
        assert_eq!(failed_before(&samples, Duration::from_millis(31)), 2);
    }
}
