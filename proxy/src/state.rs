//! Per-route state that outlives any one routing table.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry_config::RetryPolicy;
use tower::retry::budget::TpsBudget;

/// Which route: (listener name, route name).
pub type RouteKey = (String, String);

/// What one route remembers between requests: its retry budget (and, as they arrive, its
/// limiters' counters). A reload that leaves the route's definition unchanged keeps this
/// object; one that changes the definition starts afresh.
#[derive(Debug, Default)]
pub struct RouteState {
    /// The route's retry budget (`None`: no retry policy).
    pub budget: Option<Arc<TpsBudget>>,
    /// Its requests in ferry, for its own load report (`load_report.report`): kept here so a
    /// reload does not restart the count at 0 while the old table's requests are still out.
    pub in_flight: Arc<AtomicU64>,
    /// Its answers for `/stats` (kept here for the same reason: an unchanged route keeps
    /// counting across reloads).
    pub stats: Arc<crate::stats::Cell>,
}

/// Route states by route, each with the definition it was made for.
#[derive(Debug, Default)]
pub struct RouteStates {
    by_route: Mutex<HashMap<RouteKey, (String, Arc<RouteState>)>>,
}

// === impl RouteState ===

impl RouteState {
    /// Fresh state for a route with this retry policy.
    pub fn new(retry: Option<&RetryPolicy>) -> Self {
        RouteState {
            in_flight: Arc::default(),
            stats: Arc::default(),
            budget: retry.map(|p| {
                Arc::new(TpsBudget::new(
                    Duration::from_secs(10),
                    p.min_retries_per_second,
                    p.budget_ratio as f32,
                ))
            }),
        }
    }
}

// === impl RouteStates ===

impl RouteStates {
    /// The state of `key` if its definition is still `definition`; otherwise a fresh one
    /// made by `fresh`, which replaces the old.
    pub fn get_or_make(
        &self,
        key: &RouteKey,
        definition: &str,
        fresh: impl FnOnce() -> RouteState,
    ) -> Arc<RouteState> {
        let Ok(mut map) = self.by_route.lock() else {
            return Arc::new(fresh());
        };
        if let Some((def, state)) = map.get(key)
            && def == definition
        {
            return state.clone();
        }
        let state = Arc::new(fresh());
        map.insert(key.clone(), (definition.to_owned(), state.clone()));
        state
    }

    /// Forgets routes no longer in the config.
    pub fn retain(&self, keep: impl Fn(&RouteKey) -> bool) {
        if let Ok(mut map) = self.by_route.lock() {
            map.retain(|k, _| keep(k));
        }
    }
}
