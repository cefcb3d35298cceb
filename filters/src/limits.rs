//! Overload protection for a route: rate limits ([`RateLimitLayer`]) and a cap on requests in
//! flight per model with a bounded FIFO queue ([`ConcurrencyLayer`]).
//!
//! Place in the stack: the `[rate limit, concurrency]` slot of a route, after authorization
//! (a refused caller spends no quota) and before tensor checks and translation (a shed
//! request costs no body read). Rate limits come first: a request over its rate never waits
//! in a concurrency queue.
//!
//! State (buckets, semaphores) is made by the caller and handed in behind `Arc`s, so the
//! proxy keeps it outside its per-reload table and an unrelated config edit resets nothing.
//!
//! Failure: over a rate → [`RateLimited`]: 429 with `retry-after` and `x-ratelimit-*` headers
//! and `{"error": ...}` naming the limit / gRPC RESOURCE_EXHAUSTED (8). Queue full, queue wait
//! over, or a deadline the queue cannot meet → [`Overloaded`]: 503 / UNAVAILABLE (14).
//! Admitted answers on rate-limited routes carry `x-ratelimit-limit`, `-remaining` and
//! `-reset` of the tightest limit (the headers OpenAI clients read).

mod clock;
mod concurrency;
mod errors;
mod key;
mod local;
mod metered;
mod rate;
mod stream_usage;
mod usage;
mod window;

#[cfg(test)]
mod tests;

pub use self::concurrency::{
    Concurrency, ConcurrencyLayer, ConcurrencySettings, ConcurrencyState, SlotStats,
};
pub use self::errors::{Overloaded, RateLimited, StoreUnavailable};
pub use self::key::KeyPart;
pub use self::local::{Check, LocalBucket};
pub use self::rate::{
    Counter, Decision, Limit, LimitMode, LimitOverride, OnDecision, OnStoreFailure, OnUsage,
    RateLimit, RateLimitLayer, TokenSettings, UsageReport,
};
pub use self::usage::{Charge, Usage, find_usage};
pub use self::window::{LocalWindows, StoreError, StoreFuture, WindowCount, WindowStore};
