//! Rate-limit buckets and concurrency slots, kept outside the per-reload table: a limit whose
//! own definition did not change keeps its counters across any reload (an edit elsewhere in
//! its route included), and a reaper forgets keys whose buckets are full again.
//!
//! The limit logic is the filters crate's (`ferry_filters::limits`); this module maps the
//! config to its settings, keeps the state, and exports metrics and `/config_dump`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use ferry_config::{
    KeyPart as ConfigKeyPart, LimitAmount, OnFailure, Redis as RedisConfig, Route, Scope,
    TokenCharge,
};
use ferry_filters::limits::{
    Charge, ConcurrencyState, Counter as LimitCounter, Decision, KeyPart, Limit, LimitMode,
    LimitOverride, LocalBucket, LocalWindows, OnStoreFailure, RateLimitLayer, TokenSettings,
    WindowStore,
};
use http::HeaderName;
use prometheus_client::metrics::counter::Counter;

use crate::metrics::{DecisionLabels, Metrics, ModelLabels, Name};

mod concurrency;
mod redis;

pub use self::concurrency::concurrency_layer;
pub use self::redis::RedisWindows;
use self::redis::redact;

/// How often idle keys are forgotten.
const EVICT_EVERY: Duration = Duration::from_secs(10);

/// A limit that cannot be built.
#[derive(Debug, thiserror::Error)]
#[error("route {route:?}: rate limit {limit:?}: {what}")]
pub struct Unsupported {
    route: String,
    limit: String,
    what: String,
}

type BucketKey = (String, String, String);

/// State by key, each with the definition it was made for.
type Kept<K, V> = Mutex<HashMap<K, (String, Arc<V>)>>;

/// Every route's limit state.
#[derive(Debug, Default)]
pub struct LimitStates {
    buckets: Kept<BucketKey, LocalBucket>,
    windows: Kept<BucketKey, (Duration, LocalWindows)>,
    concurrency: Kept<(String, String), ConcurrencyState>,
    redis: Mutex<Option<(RedisConfig, Arc<RedisWindows>)>>,
}

impl LimitStates {
    fn bucket(
        &self,
        key: BucketKey,
        definition: String,
        make: impl FnOnce() -> LocalBucket,
    ) -> Arc<LocalBucket> {
        let Ok(mut map) = self.buckets.lock() else {
            return Arc::new(make());
        };
        if let Some((def, b)) = map.get(&key)
            && *def == definition
        {
            return b.clone();
        }
        let b = Arc::new(make());
        map.insert(key, (definition, b.clone()));
        b
    }

    fn windows(
        &self,
        key: BucketKey,
        definition: String,
        per: Duration,
    ) -> Arc<(Duration, LocalWindows)> {
        let Ok(mut map) = self.windows.lock() else {
            return Arc::new((per, LocalWindows::default()));
        };
        if let Some((def, w)) = map.get(&key)
            && *def == definition
        {
            return w.clone();
        }
        let w = Arc::new((per, LocalWindows::default()));
        map.insert(key, (definition, w.clone()));
        w
    }

    /// The shared store for `config`, made once per distinct config.
    fn redis(&self, config: &RedisConfig, metrics: &Metrics) -> Result<Arc<RedisWindows>, String> {
        let mut slot = self
            .redis
            .lock()
            .map_err(|_| "redis state poisoned".to_owned())?;
        if let Some((c, store)) = slot.as_ref()
            && c == config
        {
            return Ok(store.clone());
        }
        let store = RedisWindows::new(config, metrics.ratelimit_backend_errors.clone())
            .map_err(|e| format!("redis {}: {e}", redact(&config.url)))?;
        let store = Arc::new(store);
        *slot = Some((config.clone(), store.clone()));
        Ok(store)
    }

    fn slots(
        &self,
        key: (String, String),
        definition: String,
        make: impl FnOnce() -> ConcurrencyState,
    ) -> Arc<ConcurrencyState> {
        let Ok(mut map) = self.concurrency.lock() else {
            return Arc::new(make());
        };
        if let Some((def, s)) = map.get(&key)
            && *def == definition
        {
            return s.clone();
        }
        let s = Arc::new(make());
        map.insert(key, (definition, s.clone()));
        s
    }

    /// Forgets the state of routes `keep` refuses (routes no longer configured).
    pub fn retain(&self, keep: impl Fn(&str, &str) -> bool) {
        if let Ok(mut map) = self.buckets.lock() {
            map.retain(|(l, r, _), _| keep(l, r));
        }
        if let Ok(mut map) = self.windows.lock() {
            map.retain(|(l, r, _), _| keep(l, r));
        }
        if let Ok(mut map) = self.concurrency.lock() {
            map.retain(|(l, r), _| keep(l, r));
        }
    }

    /// Forgets idle keys in every bucket.
    pub fn evict_idle(&self) {
        let buckets: Vec<Arc<LocalBucket>> = match self.buckets.lock() {
            Ok(map) => map.values().map(|(_, b)| b.clone()).collect(),
            Err(_) => return,
        };
        let windows: Vec<Arc<(Duration, LocalWindows)>> = match self.windows.lock() {
            Ok(map) => map.values().map(|(_, w)| w.clone()).collect(),
            Err(_) => Vec::new(),
        };
        // Outside the lock: a sweep of a large table must not stall a reload.
        for b in buckets {
            b.evict_idle();
        }
        for w in windows {
            w.1.evict_idle(w.0);
        }
    }

    /// Sets the concurrency gauges from the slots (called when metrics are scraped).
    pub fn export(&self, metrics: &Metrics) {
        let Ok(map) = self.concurrency.lock() else {
            return;
        };
        for ((listener, route), (_, state)) in map.iter() {
            for s in state.stats() {
                let labels = ModelLabels {
                    listener: Name(listener.as_str().into()),
                    route: Name(route.as_str().into()),
                    model: s.model,
                };
                metrics
                    .concurrency_in_flight
                    .get_or_create(&labels)
                    .set(i64::from(s.in_flight));
                metrics
                    .concurrency_queue_depth
                    .get_or_create(&labels)
                    .set(i64::from(s.queued));
            }
        }
    }

    /// `/config_dump`'s view: keys held per bucket, slots per model.
    pub fn dump(&self) -> serde_json::Value {
        let mut buckets: Vec<serde_json::Value> = match self.buckets.lock() {
            Ok(map) => map
                .iter()
                .map(|((l, r, n), (_, b))| {
                    serde_json::json!({ "listener": l, "route": r, "limit": n, "keys": b.len() })
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        buckets.sort_by_key(|v| v.to_string());
        let mut concurrency: Vec<serde_json::Value> = match self.concurrency.lock() {
            Ok(map) => map
                .iter()
                .map(|((l, r), (_, s))| {
                    let models: Vec<_> = s
                        .stats()
                        .into_iter()
                        .map(|m| serde_json::json!({ "model": m.model, "in_flight": m.in_flight, "queued": m.queued, "limit": m.limit }))
                        .collect();
                    serde_json::json!({ "listener": l, "route": r, "max": s.settings().max, "models": models })
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        concurrency.sort_by_key(|v| v.to_string());
        serde_json::json!({ "rate_limits": buckets, "concurrency": concurrency })
    }
}

/// Runs until `states` is dropped: forgets idle keys every [`EVICT_EVERY`].
pub async fn reap(states: Weak<LimitStates>) {
    let mut tick = tokio::time::interval(EVICT_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(states) = states.upgrade() else {
            return;
        };
        // Sweeping a million keys takes milliseconds: off the async workers.
        let _ = tokio::task::spawn_blocking(move || states.evict_idle()).await;
    }
}

fn key_part(p: &ConfigKeyPart) -> KeyPart {
    match p {
        ConfigKeyPart::Model => KeyPart::Model,
        ConfigKeyPart::Client => KeyPart::Client,
        ConfigKeyPart::Route => KeyPart::Route,
        // Validated as a header name; an invalid one (impossible) keys on nothing.
        ConfigKeyPart::Header(h) => HeaderName::try_from(h.as_str())
            .map(KeyPart::Header)
            .unwrap_or(KeyPart::Route),
    }
}

/// The route's rate-limit layer, its counters taken from (or added to) `states`.
pub fn rate_limit_layer(
    listener: &str,
    r: &Route,
    redis: Option<&RedisConfig>,
    states: &LimitStates,
    metrics: &Metrics,
) -> Result<Option<RateLimitLayer>, Unsupported> {
    if r.rate_limit.is_empty() {
        return Ok(None);
    }
    let mut limits = Vec::with_capacity(r.rate_limit.len());
    let mut counters: Vec<[Counter; 4]> = Vec::with_capacity(r.rate_limit.len());
    for l in &r.rate_limit {
        let failed = |what: String| Unsupported {
            route: r.name.clone(),
            limit: l.name.clone(),
            what,
        };
        let (amount, tokens) = match &l.amount {
            LimitAmount::Requests(n) => (*n, None),
            LimitAmount::Tokens(t) => (
                t.tokens,
                Some(TokenSettings {
                    charge: match t.charge {
                        TokenCharge::Total => Charge::Total,
                        TokenCharge::Prompt => Charge::Prompt,
                        TokenCharge::Completion => Charge::Completion,
                    },
                    fallback: t.fallback,
                    request_usage: t.request_usage,
                }),
            ),
        };
        let shared: Option<Arc<dyn WindowStore>> = match l.scope {
            Scope::Local => None,
            Scope::Global => {
                let config = redis.ok_or_else(|| failed("`scope: global` needs `redis`".into()))?;
                Some(states.redis(config, metrics).map_err(failed)?)
            }
        };
        let on_failure = match redis.map(|c| c.on_failure) {
            Some(OnFailure::Deny) => OnStoreFailure::Deny,
            _ => OnStoreFailure::Allow,
        };
        let definition = format!("{l:?}");
        let key = |suffix: &str| {
            (
                listener.to_owned(),
                r.name.clone(),
                format!("{}{suffix}", l.name),
            )
        };
        // Request limits count in a local GCRA bucket or in the shared store; token budgets
        // in fixed windows, local or shared.
        let counter_for = |suffix: &str, this_amount: u64| -> LimitCounter {
            if let Some(store) = &shared {
                return LimitCounter::Window(store.clone());
            }
            if tokens.is_some() {
                let w = states.windows(key(suffix), definition.clone(), l.per);
                return LimitCounter::Window(Arc::new(WindowsRef(w)));
            }
            // The burst scales with the amount, so an override keeps the limit's shape.
            let burst =
                (u128::from(l.burst) * u128::from(this_amount) / u128::from(amount.max(1))).max(1);
            let burst = u64::try_from(burst).unwrap_or(u64::MAX);
            LimitCounter::Bucket(states.bucket(key(suffix), definition.clone(), || {
                LocalBucket::new(this_amount, l.per, burst)
            }))
        };
        let overrides = l
            .overrides
            .iter()
            .enumerate()
            .map(|(i, o)| LimitOverride {
                matches: o
                    .matches
                    .iter()
                    .map(|(p, v)| (key_part(p), v.clone()))
                    .collect(),
                amount: o.amount,
                counter: counter_for(&format!("#override{i}"), o.amount),
            })
            .collect();
        limits.push(Limit {
            name: l.name.as_str().into(),
            key: l.key.iter().map(key_part).collect(),
            amount,
            per: l.per,
            mode: match l.mode {
                ferry_config::LimitMode::Enforce => LimitMode::Enforce,
                ferry_config::LimitMode::Shadow => LimitMode::Shadow,
            },
            counter: counter_for("", amount),
            tokens,
            on_failure,
            overrides,
        });
        let counter = |decision: &'static str| {
            metrics
                .ratelimit_decisions
                .get_or_create(&DecisionLabels {
                    listener: Name(listener.into()),
                    route: Name(r.name.as_str().into()),
                    limit: Name(l.name.as_str().into()),
                    decision,
                })
                .clone()
        };
        counters.push([
            counter("allowed"),
            counter("limited"),
            counter("shadow_limited"),
            counter("failed_open"),
        ]);
    }
    let layer = RateLimitLayer::new(r.name.as_str().into(), limits)
        .on_decision(Arc::new(move |i, d| {
            if let Some(c) = counters.get(i) {
                let slot = match d {
                    Decision::Allowed => 0,
                    Decision::Limited => 1,
                    Decision::ShadowLimited => 2,
                    Decision::FailedOpen => 3,
                };
                c[slot].inc();
            }
        }))
        .on_usage(Arc::new(|ext: &http::Extensions| {
            // The access record's `input_tokens`/`output_tokens`.
            let outcome = ext.get::<Arc<crate::request_meta::Outcome>>()?.clone();
            Some(Box::new(move |usage| outcome.set_usage(usage)))
        }));
    Ok(Some(layer))
}

/// A local token budget's windows, shared with the reaper.
#[derive(Debug)]
struct WindowsRef(Arc<(Duration, LocalWindows)>);

impl WindowStore for WindowsRef {
    fn add(&self, key: &str, window: Duration, cost: u64) -> ferry_filters::limits::StoreFuture {
        self.0.1.add(key, window, cost)
    }

    fn get(&self, key: &str, window: Duration) -> ferry_filters::limits::StoreFuture {
        self.0.1.get(key, window)
    }
}
