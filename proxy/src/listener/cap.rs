//! Per-listener connection cap (`limits.max_connections`).
//!
//! The accept loop takes a [`ConnPermit`] for each accepted connection and the connection's
//! task holds it until the connection is done. When the listener is full the new connection is
//! accepted and closed at once (no bytes written): the kernel's backlog then keeps draining,
//! so a full listener never leaves clients hanging in SYN queues, and the refusal is counted
//! (`ferry_listener_connections_refused_total{listener}`) with a warning at most every
//! [`WARN_EVERY`]. The limit is read from the table per accept, so a reload changes it for new
//! connections without touching open ones.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// Refusals are logged at most this often per listener.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// Open connections of one listener, and when refusals were last logged.
#[derive(Debug, Default)]
pub struct ConnectionCap {
    open: Arc<AtomicUsize>,
    refused_since_warn: u64,
    last_warn: Option<Instant>,
}

/// Held by a connection's task: the connection counts against its listener until dropped.
#[derive(Debug)]
pub struct ConnPermit {
    open: Arc<AtomicUsize>,
}

// === impl ConnectionCap ===

impl ConnectionCap {
    /// A permit for one more connection, or `None` when `limit` are already open. Only the
    /// accept loop takes permits, so checking and then adding cannot overshoot.
    pub fn try_acquire(&self, limit: Option<NonZeroU32>) -> Option<ConnPermit> {
        let open = self.open.load(Ordering::Acquire);
        if limit.is_some_and(|max| open >= max.get() as usize) {
            return None;
        }
        self.open.fetch_add(1, Ordering::AcqRel);
        Some(ConnPermit {
            open: self.open.clone(),
        })
    }

    /// Records one refusal; returns how many to report if a warning is due now.
    pub fn refused(&mut self, now: Instant) -> Option<u64> {
        self.refused_since_warn += 1;
        if self
            .last_warn
            .is_some_and(|last| now.duration_since(last) < WARN_EVERY)
        {
            return None;
        }
        self.last_warn = Some(now);
        Some(std::mem::take(&mut self.refused_since_warn))
    }
}

// === impl ConnPermit ===

impl Drop for ConnPermit {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_refused_at_the_limit_and_returned_on_drop() {
        let cap = ConnectionCap::default();
        let two = NonZeroU32::new(2);
        let a = cap.try_acquire(two).unwrap();
        let _b = cap.try_acquire(two).unwrap();
        assert!(cap.try_acquire(two).is_none());
        drop(a);
        assert!(cap.try_acquire(two).is_some());
        // Unlimited.
        assert!(cap.try_acquire(None).is_some());
    }

    #[test]
    fn refusals_are_warned_about_at_most_every_period() {
        let mut cap = ConnectionCap::default();
        let t0 = Instant::now();
        assert_eq!(cap.refused(t0), Some(1));
        assert_eq!(cap.refused(t0 + Duration::from_secs(1)), None);
        assert_eq!(cap.refused(t0 + Duration::from_secs(2)), None);
        assert_eq!(cap.refused(t0 + WARN_EVERY), Some(3));
    }
}
