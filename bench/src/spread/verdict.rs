//! The spread bench's arithmetic, kept pure so it is unit-tested: each replica's share of the
//! requests it served, the shares per sampling interval (to see *when* a balancer starved a
//! replica, not only that it did), and the verdicts.

use serde::Serialize;

/// Two identical replicas: each must get at least this share…
pub const SPREAD_MIN: f64 = 0.40;
/// …and at most this one.
pub const SPREAD_MAX: f64 = 0.60;
/// A replica 10× slower than its twin gets at most this share.
pub const SLOW_MAX: f64 = 0.15;
/// The fleet's p99 with a slow replica, at most this many times the all-fast fleet's.
pub const P99_RATIO_MAX: f64 = 1.3;

/// The verdict of a case with a slow replica.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SlowVerdict {
    /// The slow replica's share of the requests served.
    pub slow_share: f64,
    /// The all-fast fleet's p99, ms.
    pub fast_p99_ms: f64,
    /// Fleet p99 with the slow replica ÷ `fast_p99_ms`.
    pub p99_ratio: f64,
    /// `slow_share ≤ SLOW_MAX`.
    pub share_met: bool,
    /// `p99_ratio ≤ P99_RATIO_MAX`.
    pub p99_met: bool,
}

/// Each replica's share of `served` (`None` when nothing was served).
pub fn shares(served: &[u64]) -> Option<Vec<f64>> {
    let total: u64 = served.iter().sum();
    (total > 0).then(|| served.iter().map(|&n| n as f64 / total as f64).collect())
}

/// Whether every replica's share lies in `[SPREAD_MIN, SPREAD_MAX]` (false when nothing was
/// served: a balancer that served nothing did not spread).
pub fn spread_met(served: &[u64]) -> bool {
    shares(served).is_some_and(|s| s.iter().all(|&x| (SPREAD_MIN..=SPREAD_MAX).contains(&x)))
}

/// The slow-replica verdict from what each served, which one is slow, and the two p99s.
pub fn slow_verdict(served: &[u64], slow: usize, p99_ms: f64, fast_p99_ms: f64) -> SlowVerdict {
    let slow_share = shares(served)
        .and_then(|s| s.get(slow).copied())
        .unwrap_or(0.0);
    let p99_ratio = if fast_p99_ms > 0.0 {
        p99_ms / fast_p99_ms
    } else {
        f64::INFINITY
    };
    SlowVerdict {
        slow_share,
        fast_p99_ms,
        p99_ratio,
        share_met: slow_share <= SLOW_MAX,
        p99_met: p99_ratio <= P99_RATIO_MAX,
    }
}

/// From cumulative counts sampled once per interval (`ticks[t][replica]`, the first taken
/// just before the load), replica 0's share of what was served in each interval; `None` for
/// an interval in which nothing was served.
pub fn interval_shares(ticks: &[Vec<u64>]) -> Vec<Option<f64>> {
    ticks
        .windows(2)
        .map(|pair| {
            let [before, now] = pair else { return None };
            let delta: Vec<u64> = now
                .iter()
                .zip(before)
                .map(|(now, before)| now.saturating_sub(*before))
                .collect();
            shares(&delta).and_then(|s| s.first().copied())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_sum_to_one_and_nothing_served_is_none() {
        let s = shares(&[30, 70]).unwrap();
        assert!((s[0] - 0.3).abs() < 1e-12 && (s[1] - 0.7).abs() < 1e-12);
        assert_eq!(shares(&[0, 0]), None);
    }

    #[test]
    fn spread_bounds_are_inclusive_and_starving_fails() {
        assert!(spread_met(&[40, 60]));
        assert!(spread_met(&[500, 500]));
        assert!(!spread_met(&[39, 61]));
        assert!(!spread_met(&[1000, 0]), "the issue's starvation");
        assert!(!spread_met(&[0, 0]));
    }

    #[test]
    fn slow_verdict_checks_share_and_p99_ratio() {
        let v = slow_verdict(&[950, 50], 1, 2.6, 2.0);
        assert!((v.slow_share - 0.05).abs() < 1e-12);
        assert!((v.p99_ratio - 1.3).abs() < 1e-12);
        assert!(v.share_met && v.p99_met);
        let rr = slow_verdict(&[500, 500], 1, 11.0, 2.0);
        assert!(!rr.share_met && !rr.p99_met);
        let no_baseline = slow_verdict(&[1, 0], 1, 1.0, 0.0);
        assert!(
            !no_baseline.p99_met,
            "no all-fast p99 to compare with is not a pass"
        );
    }

    #[test]
    fn interval_shares_take_differences_of_cumulative_counts() {
        let ticks = vec![vec![10, 10], vec![20, 10], vec![25, 15], vec![25, 15]];
        assert_eq!(interval_shares(&ticks), vec![Some(1.0), Some(0.5), None]);
        assert!(interval_shares(&ticks[..1]).is_empty());
    }
}
