//! `scope: global` counters in Redis: one fixed window per key, shared by every sidecar that
//! names the same route and limit. Each decision is one round trip on a multiplexed
//! connection (redis-rs's `ConnectionManager`, which reconnects with backoff by itself): a
//! pipeline that creates the window's key with an expiry if it is new, then adds to it.
//!
//! Keys: `ferry:{route}:{limit}:{key parts…}:{window index}`, the window index being Unix
//! milliseconds divided by the window's length, so every sidecar agrees on window edges (within
//! clock skew) and a key expires two windows after it was made.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferry_config::Redis as RedisConfig;
use ferry_filters::limits::{StoreError, StoreFuture, WindowCount, WindowStore};
use prometheus_client::metrics::counter::Counter;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// Failures are logged at warn at most this often (the rest at debug).
const WARN_EVERY: Duration = Duration::from_secs(10);

/// The shared store.
#[derive(Clone)]
pub struct RedisWindows {
    conn: ConnectionManager,
    timeout: Duration,
    errors: Counter,
    last_warn: Arc<AtomicU64>,
}

impl std::fmt::Debug for RedisWindows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisWindows")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisWindows {
    /// A store for `config` (connects lazily: a Redis that is down at start only fails the
    /// decisions made while it is down). Needs a tokio runtime.
    pub fn new(config: &RedisConfig, errors: Counter) -> Result<Self, redis::RedisError> {
        let client = redis::Client::open(config.url.as_str())?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.timeout.max(Duration::from_millis(200))))
            .set_response_timeout(Some(config.timeout))
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_secs(5));
        let conn = ConnectionManager::new_lazy_with_config(client, manager)?;
        Ok(RedisWindows {
            conn,
            timeout: config.timeout,
            errors,
            last_warn: Arc::new(AtomicU64::new(0)),
        })
    }

    fn call(&self, key: &str, window: Duration, cost: u64) -> StoreFuture {
        let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX).max(1);
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let index = now_ms / window_ms;
        let reset = Duration::from_millis(window_ms - now_ms % window_ms);
        let name = format!("ferry:{}:{index}", key.replace('\u{1f}', ":"));
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(&name)
            .arg(0)
            .arg("PX")
            .arg(window_ms.saturating_mul(2))
            .arg("NX")
            .ignore()
            .cmd("INCRBY")
            .arg(&name)
            .arg(cost);
        let mut conn = self.conn.clone();
        let this = self.clone();
        Box::pin(async move {
            let sent = tokio::time::timeout(this.timeout, pipe.query_async::<(u64,)>(&mut conn));
            let outcome = match sent.await {
                Ok(Ok((count,))) => return Ok(WindowCount { count, reset }),
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {:?}", this.timeout),
            };
            this.errors.inc();
            this.log(&outcome);
            Err(StoreError(outcome))
        })
    }

    fn log(&self, error: &str) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let last = self.last_warn.load(Ordering::Relaxed);
        if now >= last + WARN_EVERY.as_secs()
            && self
                .last_warn
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(%error, "rate-limit store (redis) failed; further failures within 10s are logged at debug");
        } else {
            tracing::debug!(%error, "rate-limit store (redis) failed");
        }
    }
}

impl WindowStore for RedisWindows {
    fn add(&self, key: &str, window: Duration, cost: u64) -> StoreFuture {
        self.call(key, window, cost)
    }

    fn get(&self, key: &str, window: Duration) -> StoreFuture {
        // INCRBY 0 reads the count in the same round trip shape (and creates the key with its
        // expiry, harmlessly).
        self.call(key, window, 0)
    }
}

/// A Redis URL with its password hidden.
pub(super) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
