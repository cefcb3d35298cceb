//! A keyed GCRA bucket in this process (governor's keyed limiter over a DashMap).

use std::num::NonZeroU32;
use std::time::Duration;

use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};

use super::clock::TokioClock;

type Keyed = RateLimiter<String, DashMapStateStore<String>, TokioClock, StateInformationMiddleware>;

/// `amount` per `per`, up to `burst` at once, per key.
#[derive(Debug)]
pub struct LocalBucket {
    limiter: Keyed,
    clock: TokioClock,
    /// Time to earn one cell back.
    interval: Duration,
    burst: u32,
}

/// One decision of a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Admitted; `remaining` more may pass now, the bucket is full again after `reset`.
    Allowed {
        /// Cells left.
        remaining: u64,
        /// Until the bucket is full.
        reset: Duration,
    },
    /// Refused; a cell is earned back after `retry_after`.
    Limited {
        /// Until the next request may pass.
        retry_after: Duration,
    },
}

impl LocalBucket {
    /// A bucket of `amount` per `per` (both > 0), bursting to `burst` (≥ 1; capped at
    /// `u32::MAX`).
    pub fn new(amount: u64, per: Duration, burst: u64) -> Self {
        let nanos = per.as_nanos() / u128::from(amount.max(1));
        let interval = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX).max(1));
        let burst = NonZeroU32::new(u32::try_from(burst).unwrap_or(u32::MAX).max(1))
            .unwrap_or(NonZeroU32::MIN);
        // `with_period` is `None` only for a zero period, which the max(1) above rules out.
        let quota = Quota::with_period(interval)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
            .allow_burst(burst);
        let clock = TokioClock::default();
        let limiter = RateLimiter::dashmap_with_clock(quota, clock.clone())
            .with_middleware::<StateInformationMiddleware>();
        LocalBucket {
            limiter,
            clock,
            interval,
            burst: burst.get(),
        }
    }

    /// Takes one cell for `key`, if there is one.
    pub fn check(&self, key: &String) -> Check {
        match self.limiter.check_key(key) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity();
                let missing = self.burst.saturating_sub(remaining);
                Check::Allowed {
                    remaining: u64::from(remaining),
                    reset: self.interval.saturating_mul(missing),
                }
            }
            Err(not_until) => {
                use governor::clock::Clock;
                Check::Limited {
                    retry_after: not_until.wait_time_from(self.clock.now()),
                }
            }
        }
    }

    /// Forgets keys whose buckets are full again (they behave exactly like new keys), so a
    /// client rotating its key values cannot grow the table without bound.
    pub fn evict_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.limiter.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.limiter.is_empty()
    }
}
