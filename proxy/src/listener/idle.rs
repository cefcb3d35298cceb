//! Downstream idle timeout: a connection with no request in flight for `idle_timeout` is
//! asked to close (HTTP/1.1: closed between requests; HTTP/2: GOAWAY, then closed once its
//! streams are done).
//!
//! Idleness is counted in requests, not bytes: a request is active from the moment its head is
//! parsed until its response body has been sent or dropped, so a long SSE or gRPC stream keeps
//! its connection open however quiet it is, as with Envoy's `idle_timeout`. The bookkeeping is
//! two atomics per connection; the timer task wakes once per timeout period at most.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// What a connection's idle timer watches.
#[derive(Debug)]
pub struct Activity {
    /// Requests whose response has not finished yet.
    active: AtomicU32,
    /// When the last request finished, in milliseconds since `epoch`.
    last_done_ms: AtomicU64,
    /// Whether any request head has arrived.
    seen: AtomicBool,
    epoch: Instant,
}

/// Held while a request is active; dropping it marks the request finished.
#[derive(Debug)]
pub struct ActiveGuard {
    activity: Arc<Activity>,
}

// === impl Activity ===

impl Activity {
    /// A connection that has just been accepted (idle since now).
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity {
            active: AtomicU32::new(0),
            last_done_ms: AtomicU64::new(0),
            seen: AtomicBool::new(false),
            epoch: Instant::now(),
        })
    }

    /// Marks a request active until the returned guard is dropped.
    pub fn begin(self: &Arc<Self>) -> ActiveGuard {
        self.active.fetch_add(1, Ordering::AcqRel);
        self.seen.store(true, Ordering::Release);
        ActiveGuard {
            activity: self.clone(),
        }
    }

    /// Requests in flight.
    pub fn active(&self) -> u32 {
        self.active.load(Ordering::Acquire)
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Resolves if no request head has arrived `timeout` after the connection was accepted;
    /// never resolves once one has. Covers what hyper's HTTP/1.1 header timeout does not: a
    /// connection that stays silent or sends only part of the HTTP/2 preface or first HEADERS.
    pub async fn no_request_within(&self, timeout: Duration) {
        tokio::time::sleep_until(self.epoch + timeout).await;
        if self.seen.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    }

    /// Resolves once the connection has had no active request for `timeout`.
    pub async fn idle_for(&self, timeout: Duration) {
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        loop {
            let next_check = if self.active() > 0 {
                // Busy: nothing can expire before a full period after the last request ends.
                Instant::now() + timeout
            } else {
                let last = self.last_done_ms.load(Ordering::Acquire);
                let idle = self.elapsed_ms().saturating_sub(last);
                if idle >= timeout_ms {
                    return;
                }
                Instant::now() + Duration::from_millis(timeout_ms - idle)
            };
            tokio::time::sleep_until(next_check).await;
            // Re-check: a request may have come and gone while we slept.
            if self.active() == 0 {
                let last = self.last_done_ms.load(Ordering::Acquire);
                if self.elapsed_ms().saturating_sub(last) >= timeout_ms {
                    return;
                }
            }
        }
    }
}

// === impl ActiveGuard ===

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        let activity = &self.activity;
        // Store the finish time before the count drops so the timer never sees zero active
        // requests with a stale finish time.
        activity
            .last_done_ms
            .fetch_max(activity.elapsed_ms(), Ordering::AcqRel);
        activity.active.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    // Real time with short periods (tokio's paused clock would need the `test-util` feature,
    // which would make every test build compile tokio twice). Only lower bounds are asserted:
    // a loaded machine can make the timer late, never early.
    use super::*;

    const PERIOD: Duration = Duration::from_millis(100);

    #[tokio::test]
    async fn idle_connection_expires_after_the_timeout() {
        let activity = Activity::new();
        let started = Instant::now();
        activity.idle_for(PERIOD).await;
        assert!(started.elapsed() >= PERIOD);
    }

    #[tokio::test]
    async fn an_active_request_holds_the_connection_open() {
        let activity = Activity::new();
        let guard = activity.begin();
        let watcher = {
            let activity = activity.clone();
            tokio::spawn(async move { activity.idle_for(PERIOD).await })
        };
        tokio::time::sleep(PERIOD * 4).await;
        assert!(!watcher.is_finished(), "expired while a request was active");
        let ended = Instant::now();
        drop(guard);
        watcher.await.unwrap();
        assert!(ended.elapsed() >= PERIOD);
    }

    #[tokio::test]
    async fn each_finished_request_restarts_the_clock() {
        let activity = Activity::new();
        let watcher = {
            let activity = activity.clone();
            tokio::spawn(async move { activity.idle_for(PERIOD * 10).await })
        };
        let mut last = Instant::now();
        for _ in 0..5 {
            tokio::time::sleep(PERIOD / 2).await;
            drop(activity.begin());
            last = Instant::now();
        }
        assert!(
            !watcher.is_finished(),
            "expired although requests kept arriving"
        );
        watcher.await.unwrap();
        assert!(last.elapsed() >= PERIOD * 10);
        assert_eq!(activity.active(), 0);
    }

    #[tokio::test]
    async fn a_connection_without_a_request_is_reported_after_the_timeout() {
        let silent = Activity::new();
        let started = Instant::now();
        silent.no_request_within(PERIOD).await;
        assert!(started.elapsed() >= PERIOD);

        let served = Activity::new();
        drop(served.begin());
        let watcher = tokio::spawn(async move { served.no_request_within(PERIOD).await });
        tokio::time::sleep(PERIOD * 3).await;
        assert!(
            !watcher.is_finished(),
            "reported a connection that sent a request"
        );
        watcher.abort();
    }
}
