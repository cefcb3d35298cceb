//! The effective form of `redis`, `routes[].rate_limit` and `routes[].concurrency`, with
//! every default spelled out. The Redis password is shown as `***`: `/config_dump` is for
//! operators, not for secrets.

use serde_json::{Map, Value, json};

use crate::ir::{
    Concurrency, LimitAmount, LimitMode, OnFailure, RateLimit, Redis, Scope, TokenCharge,
};
use crate::validate::{format_duration, key_part_text, redact_password};

pub(super) fn redis(r: &Redis) -> Value {
    let on_failure = match r.on_failure {
        OnFailure::Allow => "allow",
        OnFailure::Deny => "deny",
    };
    json!({
        "address": redact_password(&r.url),
        "timeout": format_duration(r.timeout),
        "on_failure": on_failure,
    })
}

pub(super) fn rate_limit(l: &RateLimit) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), l.name.clone().into());
    let kind = match &l.amount {
        LimitAmount::Requests(n) => {
            out.insert("requests".into(), (*n).into());
            "requests"
        }
        LimitAmount::Tokens(t) => {
            out.insert("tokens".into(), t.tokens.into());
            "tokens"
        }
    };
    out.insert("per".into(), format_duration(l.per).into());
    // A global limit has no burst, and the effective config must itself be a valid file.
    if l.scope == Scope::Local {
        out.insert("burst".into(), l.burst.into());
    }
    let key: Vec<Value> = l.key.iter().map(|p| key_part_text(p).into()).collect();
    out.insert("key".into(), key.into());
    let scope = match l.scope {
        Scope::Local => "local",
        Scope::Global => "global",
    };
    out.insert("scope".into(), scope.into());
    let mode = match l.mode {
        LimitMode::Enforce => "enforce",
        LimitMode::Shadow => "shadow",
    };
    out.insert("mode".into(), mode.into());
    if let LimitAmount::Tokens(t) = &l.amount {
        let charge = match t.charge {
            TokenCharge::Total => "total",
            TokenCharge::Prompt => "prompt",
            TokenCharge::Completion => "completion",
        };
        out.insert("charge".into(), charge.into());
        out.insert("fallback".into(), t.fallback.into());
        out.insert("request_usage".into(), t.request_usage.into());
    }
    if !l.overrides.is_empty() {
        let overrides: Vec<Value> = l
            .overrides
            .iter()
            .map(|o| {
                let matches: Map<String, Value> = o
                    .matches
                    .iter()
                    .map(|(part, value)| (key_part_text(part), value.clone().into()))
                    .collect();
                let mut entry = Map::new();
                entry.insert("match".into(), matches.into());
                entry.insert(kind.into(), o.amount.into());
                Value::Object(entry)
            })
            .collect();
        out.insert("overrides".into(), overrides.into());
    }
    Value::Object(out)
}

pub(super) fn concurrency(c: &Concurrency) -> Value {
    json!({
        "max": c.max,
        "queue": c.queue,
        "queue_timeout": format_duration(c.queue_timeout),
        "adaptive": c.adaptive,
    })
}
