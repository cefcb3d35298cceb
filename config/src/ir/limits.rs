//! Rate limits, concurrency limits and the Redis store shared limits live in.

use std::time::Duration;

/// The store for `scope: global` limits (top-level `redis:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redis {
    /// Connection URL, normalised: `redis://[user:pass@]host:port[/db]` or `rediss://…`
    /// (a bare `host:port` in the file becomes `redis://host:port`).
    pub url: String,
    /// Per call; a slower answer counts as a failure. Default 50ms.
    pub timeout: Duration,
    /// What a failed call decides. Default allow (fail open).
    pub on_failure: OnFailure,
}

/// What a limit decides when its store cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Admit the request (fail open).
    #[default]
    Allow,
    /// Refuse it (fail closed).
    Deny,
}

/// One entry of a route's `rate_limit:` list; every entry must admit a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    /// The `limit` metric label and the name in 429 bodies: the entry's `name`, else
    /// `rate_limit[i]`.
    pub name: String,
    /// What is counted, and how much per window.
    pub amount: LimitAmount,
    /// The window (`per`), > 0.
    pub per: Duration,
    /// Local buckets: how many may pass at once after idling (≥ 1). Default: the amount.
    pub burst: u64,
    /// What tells callers apart; empty = one bucket for the route.
    pub key: Vec<KeyPart>,
    /// Local (per sidecar, default) or global (through `redis`).
    pub scope: Scope,
    /// Enforce (default) or shadow (count, never refuse).
    pub mode: LimitMode,
    /// Per-key amounts: the first override whose every condition holds replaces `amount`'s
    /// number (and `burst`, scaled alike, for local limits).
    pub overrides: Vec<Override>,
}

/// What a limit counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitAmount {
    /// Requests per window.
    Requests(u64),
    /// LLM tokens per window, charged from answers' `usage`.
    Tokens(TokenBudget),
}

/// A token budget's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBudget {
    /// Tokens per window.
    pub tokens: u64,
    /// Which usage figure is charged. Default total.
    pub charge: TokenCharge,
    /// Tokens charged for an answer that reports no usage. Default 0.
    pub fallback: u64,
    /// Add `"stream_options": {"include_usage": true}` to streamed requests that did not ask
    /// for usage, so their answers can be charged. Default true.
    pub request_usage: bool,
}

/// Which part of `usage` a token budget is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenCharge {
    /// `total_tokens`.
    #[default]
    Total,
    /// `prompt_tokens`.
    Prompt,
    /// `completion_tokens`.
    Completion,
}

/// One part of a limit's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyPart {
    /// The model name and version the request names.
    Model,
    /// The caller: its SPIFFE ID over mutual TLS, else its IP address.
    Client,
    /// A request header's value (lower-case name); missing = `""`.
    Header(String),
    /// The route's name.
    Route,
}

/// Where a limit's counters live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// In this sidecar.
    #[default]
    Local,
    /// In Redis, shared by every sidecar that names the same route.
    Global,
}

/// Whether a limit refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LimitMode {
    /// Refuse over the limit.
    #[default]
    Enforce,
    /// Count what would be refused; admit it.
    Shadow,
}

/// A per-key override: `{ match: { header:x-tenant: gold }, requests: 1000 }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// Key parts and the values they must have (all must hold).
    pub matches: Vec<(KeyPart, String)>,
    /// The amount for matching keys (requests or tokens, as the limit counts).
    pub amount: u64,
}

/// A route's `concurrency:` (per route and model).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Concurrency {
    /// Requests in flight to the upstream at most, ≥ 1.
    pub max: u32,
    /// Requests that may wait, in FIFO order. Default 0.
    pub queue: u32,
    /// Longest wait in the queue. Default 1s.
    pub queue_timeout: Duration,
    /// Adapt `max` to observed latency (gradient). Default false.
    pub adaptive: bool,
}
