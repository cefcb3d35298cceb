//! Fixed-window counters behind one interface: in this process (token budgets of local
//! limits) or in a store every sidecar shares (Redis, implemented by the proxy), for
//! `scope: global` limits.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use dashmap::DashMap;

/// A window's count after an operation, and the time until the window ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowCount {
    /// The count in the current window.
    pub count: u64,
    /// Until the window ends (and the count starts from zero).
    pub reset: Duration,
}

/// The store could not answer (unreachable, too slow, an error reply).
#[derive(Debug, Clone, thiserror::Error)]
#[error("limit store: {0}")]
pub struct StoreError(pub String);

/// What a store operation returns.
pub type StoreFuture = Pin<Box<dyn Future<Output = Result<WindowCount, StoreError>> + Send>>;

/// Counters per key and fixed window.
pub trait WindowStore: Debug + Send + Sync {
    /// Adds `cost` to `key`'s count in the window of length `window` containing now.
    fn add(&self, key: &str, window: Duration, cost: u64) -> StoreFuture;
    /// `key`'s count in the current window, unchanged.
    fn get(&self, key: &str, window: Duration) -> StoreFuture;
}

/// Windows in this process.
#[derive(Debug)]
pub struct LocalWindows {
    origin: tokio::time::Instant,
    counts: DashMap<String, (u64, u64)>,
}

impl Default for LocalWindows {
    fn default() -> Self {
        LocalWindows {
            origin: tokio::time::Instant::now(),
            counts: DashMap::new(),
        }
    }
}

impl LocalWindows {
    /// The current window's index and the time left in it.
    fn window(&self, window: Duration) -> (u64, Duration) {
        let len = window.as_nanos().max(1);
        let now = self.origin.elapsed().as_nanos();
        let index = u64::try_from(now / len).unwrap_or(u64::MAX);
        let into = now % len;
        let left = Duration::from_nanos(u64::try_from(len - into).unwrap_or(u64::MAX));
        (index, left)
    }

    fn apply(&self, key: &str, window: Duration, cost: u64) -> WindowCount {
        let (index, reset) = self.window(window);
        let mut entry = self.counts.entry(key.to_owned()).or_insert((index, 0));
        if entry.0 != index {
            *entry = (index, 0);
        }
        entry.1 = entry.1.saturating_add(cost);
        WindowCount {
            count: entry.1,
            reset,
        }
    }

    /// Forgets keys whose window has ended (they count from zero anyway).
    pub fn evict_idle(&self, window: Duration) {
        let (index, _) = self.window(window);
        self.counts.retain(|_, (i, _)| *i == index);
        self.counts.shrink_to_fit();
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

impl WindowStore for LocalWindows {
    fn add(&self, key: &str, window: Duration, cost: u64) -> StoreFuture {
        let count = self.apply(key, window, cost);
        Box::pin(std::future::ready(Ok(count)))
    }

    fn get(&self, key: &str, window: Duration) -> StoreFuture {
        let count = self.apply(key, window, 0);
        Box::pin(std::future::ready(Ok(count)))
    }
}
