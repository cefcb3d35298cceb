//! Per-model metadata cache with a refresh interval and a short back-off after failures.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::ModelMetadata;

/// Model names come from requests, so the number of entries is bounded.
const MAX_ENTRIES: usize = 1024;

/// After a failed fetch, requests pass unchecked this long before the next try, so a down
/// metadata endpoint costs one fetch per model per interval, not one per request.
const FAILURE_BACKOFF: Duration = Duration::from_secs(1);

/// (model, version) → metadata, or `None` when the last fetch failed.
#[derive(Debug, Default)]
pub(super) struct MetadataCache {
    entries: Mutex<HashMap<(String, String), Entry>>,
}

#[derive(Debug)]
struct Entry {
    at: Instant,
    meta: Option<Arc<ModelMetadata>>,
}

// === impl MetadataCache ===

impl MetadataCache {
    /// `None`: fetch now. `Some(None)`: a recent fetch failed, pass unchecked.
    pub(super) fn get(
        &self,
        key: &(String, String),
        refresh: Duration,
    ) -> Option<Option<Arc<ModelMetadata>>> {
        // The lock is never held across an await: lookups and inserts are synchronous.
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let e = entries.get(key)?;
        let ttl = if e.meta.is_some() {
            refresh
        } else {
            FAILURE_BACKOFF.min(refresh)
        };
        (e.at.elapsed() < ttl).then(|| e.meta.clone())
    }

    pub(super) fn put(&self, key: (String, String), meta: Option<Arc<ModelMetadata>>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
            // Drop failures and the oldest half; rare, and bounded by MAX_ENTRIES.
            let mut ages: Vec<Instant> = entries.values().map(|e| e.at).collect();
            ages.sort_unstable();
            let cut = ages.get(ages.len() / 2).copied();
            entries.retain(|_, e| e.meta.is_some() && cut.is_none_or(|c| e.at > c));
        }
        entries.insert(
            key,
            Entry {
                at: Instant::now(),
                meta,
            },
        );
    }
}
