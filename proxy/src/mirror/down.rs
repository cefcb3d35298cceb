//! Backing off a candidate that cannot be reached: after a mirror failed before any answer
//! (connection refused or reset: the candidate is gone), no mirror is started for a while —
//! 100 ms, doubling per failed probe up to 5 s — and those requests are counted as
//! `outcome="unavailable"` instead of each dialling a dead address. The first answer (any
//! status) ends it. A failure while already backing off (mirrors that were in flight) does not
//! lengthen the wait: only a failed probe does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const FIRST_MS: u64 = 100;
const MAX_MS: u64 = 5_000;

/// When the candidate may be tried again.
#[derive(Debug)]
pub(super) struct Down {
    epoch: Instant,
    /// Milliseconds since `epoch` before which no mirror starts; 0: reachable.
    until_ms: AtomicU64,
    /// The wait the next failed probe gets; 0: none failed yet.
    next_ms: AtomicU64,
}

impl Down {
    pub(super) fn new() -> Self {
        Down {
            epoch: Instant::now(),
            until_ms: AtomicU64::new(0),
            next_ms: AtomicU64::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether mirrors are held back now. One relaxed load while the candidate answers.
    pub(super) fn holds(&self) -> bool {
        let until = self.until_ms.load(Ordering::Relaxed);
        until != 0 && self.now_ms() < until
    }

    /// A mirror failed before any answer.
    pub(super) fn failed(&self) {
        if self.holds() {
            return;
        }
        let wait = match self.next_ms.load(Ordering::Relaxed) {
            0 => FIRST_MS,
            w => w,
        };
        self.next_ms
            .store((wait * 2).min(MAX_MS), Ordering::Relaxed);
        self.until_ms
            .store(self.now_ms().saturating_add(wait).max(1), Ordering::Relaxed);
    }

    /// The candidate answered.
    pub(super) fn reached(&self) {
        if self.next_ms.load(Ordering::Relaxed) != 0 {
            self.next_ms.store(0, Ordering::Relaxed);
            self.until_ms.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Down;

    #[test]
    fn a_failure_holds_mirrors_back_and_an_answer_ends_it() {
        let down = Down::new();
        assert!(!down.holds());
        down.failed();
        assert!(down.holds());
        // In-flight failures during the wait do not lengthen it.
        down.failed();
        assert_eq!(down.next_ms.load(std::sync::atomic::Ordering::Relaxed), 200);
        down.reached();
        assert!(!down.holds());
        assert_eq!(down.next_ms.load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    #[test]
    fn the_wait_doubles_per_failed_probe_up_to_five_seconds() {
        let down = Down::new();
        for _ in 0..20 {
            // A probe after the wait ended.
            down.until_ms.store(0, std::sync::atomic::Ordering::Relaxed);
            down.failed();
        }
        assert_eq!(
            down.next_ms.load(std::sync::atomic::Ordering::Relaxed),
            5_000
        );
    }
}
