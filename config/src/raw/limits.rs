//! Raw rate limit, concurrency and Redis types: the top-level `redis`, `routes[].rate_limit`
//! and `routes[].concurrency`.
//!
//! Amounts are signed integers here so that `requests: 0` or `requests: -5` reach validation
//! and are reported as `invalid requests -5 (expected …)` at their position, with every other
//! error of the file, rather than as serde's first-error-wins type mismatch.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};

use super::scalars::{DurationText, Text, TextVisitor};

/// The key-part pattern, shared by `key` items and override `match` keys.
const KEY_PART_PATTERN: &str = "^(model|client|route|header:[!#$%&'*+.^_`|~0-9A-Za-z-]+)$";

/// The store for `scope: global` limits (top-level `redis`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Redis")]
pub struct RedisSpec {
    /// `host:port`, or a `redis://[user:pass@]host[:port][/db]` (`rediss://` for TLS) URL.
    pub address: Text,
    /// Per call; a slower answer counts as a failure; > 0. Default `50ms`.
    pub timeout: Option<DurationText>,
    /// What a limit decides when Redis cannot answer: `allow` (fail open) or `deny`. Default
    /// `allow`.
    pub on_failure: Option<OnFailureSpec>,
}

/// What a failed Redis call decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "OnFailure")]
pub enum OnFailureSpec {
    /// Admit the request (fail open).
    Allow,
    /// Refuse it (fail closed).
    Deny,
}

/// One rate limit: exactly one of `requests` / `tokens`, per a window.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RateLimit")]
pub struct RateLimitSpec {
    /// Unique within the route; the `limit` metric label. Default `rate_limit[i]`.
    pub name: Option<Text>,
    /// Requests per window, >= 1. Exactly one of `requests` / `tokens`.
    pub requests: Option<i64>,
    /// LLM tokens per window, >= 1, charged from OpenAI-compatible answers' `usage`. Exactly
    /// one of `requests` / `tokens`.
    pub tokens: Option<i64>,
    /// The window, > 0 (e.g. `1s`, `1m`).
    pub per: DurationText,
    /// `scope: local` only: how many may pass at once after idling, >= 1. Default: the amount.
    pub burst: Option<i64>,
    /// What tells callers apart: `model`, `client`, `route`, `header:NAME`; omitted = one
    /// bucket for the route.
    #[serde(default)]
    pub key: Vec<KeyPartText>,
    /// `local` (per sidecar) or `global` (shared through `redis`). Default `local`.
    pub scope: Option<ScopeSpec>,
    /// `enforce` (refuse over the limit) or `shadow` (count, never refuse). Default `enforce`.
    pub mode: Option<LimitModeSpec>,
    /// `tokens` only: which `usage` figure is charged. Default `total`.
    pub charge: Option<TokenChargeSpec>,
    /// `tokens` only: tokens charged for an answer without `usage`, >= 0. Default 0.
    pub fallback: Option<i64>,
    /// `tokens` only: ask streamed requests for usage (`stream_options.include_usage`).
    /// Default `true`.
    pub request_usage: Option<bool>,
    /// Per-key amounts; the first whose `match` holds applies.
    #[serde(default)]
    pub overrides: Vec<OverrideSpec>,
}

/// Where a limit's counters live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Scope")]
pub enum ScopeSpec {
    /// In this sidecar.
    Local,
    /// In Redis, shared by every sidecar.
    Global,
}

/// Whether a limit refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "LimitMode")]
pub enum LimitModeSpec {
    /// Refuse over the limit.
    Enforce,
    /// Count what would be refused; admit it.
    Shadow,
}

/// Which `usage` figure a token limit is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "TokenCharge")]
pub enum TokenChargeSpec {
    /// `total_tokens`.
    Total,
    /// `prompt_tokens`.
    Prompt,
    /// `completion_tokens`.
    Completion,
}

/// A per-key amount: `{ match: { header:x-tenant: gold }, requests: 1000 }`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Override")]
pub struct OverrideSpec {
    /// Key parts of the limit's own `key` and the values they must have (all must hold).
    #[serde(rename = "match")]
    pub matches: KeyValues,
    /// The amount for matching keys when the limit counts requests, >= 1.
    pub requests: Option<i64>,
    /// The amount for matching keys when the limit counts tokens, >= 1.
    pub tokens: Option<i64>,
}

/// A route's in-flight cap.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Concurrency")]
pub struct ConcurrencySpec {
    /// Requests in flight to the upstream at most, >= 1.
    pub max: i64,
    /// Requests that may wait, first in first out, >= 0. Default 0.
    pub queue: Option<i64>,
    /// Longest wait in the queue, > 0. Default `1s`.
    pub queue_timeout: Option<DurationText>,
    /// Adapt `max` to observed latency. Default `false`.
    pub adaptive: Option<bool>,
}

/// A key part as written: `model`, `client`, `route` or `header:NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPartText(pub String);

impl<'de> Deserialize<'de> for KeyPartText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor("a key part such as model or header:x-tenant"))
            .map(KeyPartText)
    }
}

impl JsonSchema for KeyPartText {
    fn schema_name() -> Cow<'static, str> {
        "KeyPart".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "model, client, route or header:NAME.",
            "pattern": KEY_PART_PATTERN,
            "examples": ["model", "client", "header:x-tenant"]
        })
    }
}

/// An override's `match`: key part → value, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyValues(pub Vec<(KeyPartText, String)>);

impl<'de> Deserialize<'de> for KeyValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyValues;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of key part to value, e.g. {header:x-tenant: gold}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(part) = map.next_key::<String>()? {
                    let value = map.next_value::<KeyValue>()?;
                    out.push((KeyPartText(part), value.0));
                }
                Ok(KeyValues(out))
            }
        }
        d.deserialize_map(V)
    }
}

struct KeyValue(String);

impl<'de> Deserialize<'de> for KeyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor("a key value such as gold"))
            .map(KeyValue)
    }
}

impl JsonSchema for KeyValues {
    fn schema_name() -> Cow<'static, str> {
        "KeyValues".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Key part (one of the limit's own) to the value it must have.",
            "type": "object",
            "minProperties": 1,
            "propertyNames": { "pattern": KEY_PART_PATTERN },
            "additionalProperties": { "type": ["string", "integer"] },
            "examples": [{ "header:x-tenant": "gold" }]
        })
    }
}
