//! Rate limits and concurrency: `routes[].rate_limit` and `routes[].concurrency`.
//!
//! Every entry is checked on its own and against its route (a `tokens` budget needs answers
//! that carry OpenAI `usage`; a `global` one needs the top-level `redis`), so one run reports
//! every problem of every entry.

use std::collections::HashMap;

use super::Ctx;
use super::values::header_name;
use crate::defaults;
use crate::ir::{
    Concurrency, KeyPart, LimitAmount, LimitMode, RateLimit, Scope, TokenBudget, TokenCharge,
};
use crate::raw::{
    ConcurrencySpec, KeyPartText, LimitModeSpec, RateLimitSpec, ScopeSpec, TokenChargeSpec,
};

mod overrides;

const KEY_PARTS: &str = "model, client, route or header:NAME";

/// What a route's limits need to know about the route and the file.
#[derive(Debug, Clone, Copy)]
pub(super) struct RouteFacts {
    /// The file has a top-level `redis` (an invalid one still counts: its own errors are the
    /// ones to fix).
    pub(super) has_redis: bool,
    /// Why the route's answers carry no OpenAI `usage`, if they do not.
    pub(super) no_usage: Option<&'static str>,
}

/// `routes[i].rate_limit`: every entry, names unique within the route.
pub(super) fn rate_limits(
    ctx: &mut Ctx<'_>,
    path: &str,
    specs: &[RateLimitSpec],
    facts: RouteFacts,
) -> Vec<RateLimit> {
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = match &spec.name {
            Some(n) if n.as_str().is_empty() => {
                ctx.error(
                    &format!("{at}.name"),
                    format!(
                        "empty name (expected a name, or name omitted for \"rate_limit[{i}]\")"
                    ),
                );
                String::new()
            }
            Some(n) => n.0.clone(),
            None => format!("rate_limit[{i}]"),
        };
        if let Some(first) = names.insert(name.clone(), i) {
            ctx.error(
                &format!("{at}.name"),
                format!(
                    "duplicate rate limit name {name:?} (expected unique names within a route; first used by {path}[{first}])"
                ),
            );
        }
        if let Some(limit) = rate_limit(ctx, &at, spec, name, facts) {
            out.push(limit);
        }
    }
    out
}

fn rate_limit(
    ctx: &mut Ctx<'_>,
    at: &str,
    spec: &RateLimitSpec,
    name: String,
    facts: RouteFacts,
) -> Option<RateLimit> {
    let scope = match spec.scope {
        None | Some(ScopeSpec::Local) => Scope::Local,
        Some(ScopeSpec::Global) => Scope::Global,
    };
    if scope == Scope::Global && !facts.has_redis {
        ctx.error(
            &format!("{at}.scope"),
            "scope global needs a top-level redis (expected redis: {address: host:port}, or scope: local)",
        );
    }
    let amount = amount(ctx, at, spec, facts);
    let per_at = format!("{at}.per");
    let per = ctx.check(&per_at, super::values::parse_duration(spec.per.as_str()));
    if per.is_some_and(|d| d.is_zero()) {
        ctx.error(
            &per_at,
            "invalid per 0s (expected a duration > 0, e.g. \"1s\" or \"1m\")",
        );
    }
    let burst = match (spec.burst, scope) {
        (None, _) => None,
        (Some(_), Scope::Global) => {
            ctx.error(
                &format!("{at}.burst"),
                "only applies to scope: local (expected it omitted; a global limit admits its amount per window, shared by every sidecar)",
            );
            None
        }
        (Some(b), Scope::Local) => positive(ctx, &format!("{at}.burst"), "burst", b),
    };
    let key = key(ctx, &format!("{at}.key"), &spec.key);
    let overrides: Vec<_> = spec
        .overrides
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let kind = amount.as_ref().map(|a| match a {
                LimitAmount::Requests(_) => "requests",
                LimitAmount::Tokens(_) => "tokens",
            });
            overrides::entry(ctx, &format!("{at}.overrides[{i}]"), o, kind, &key)
        })
        .collect();
    let amount = amount?;
    let number = match &amount {
        LimitAmount::Requests(n) => *n,
        LimitAmount::Tokens(t) => t.tokens,
    };
    Some(RateLimit {
        name,
        burst: burst.unwrap_or(number),
        amount,
        per: per.filter(|d| !d.is_zero())?,
        key,
        scope,
        mode: match spec.mode {
            None | Some(LimitModeSpec::Enforce) => LimitMode::Enforce,
            Some(LimitModeSpec::Shadow) => LimitMode::Shadow,
        },
        // Stand-ins for bad overrides are never used: their errors stop the config.
        overrides: overrides.into_iter().collect::<Option<_>>()?,
    })
}

/// Exactly one of `requests` / `tokens`, with the token settings only beside `tokens`.
fn amount(
    ctx: &mut Ctx<'_>,
    at: &str,
    spec: &RateLimitSpec,
    facts: RouteFacts,
) -> Option<LimitAmount> {
    if spec.tokens.is_none() {
        for (field, set) in [
            ("charge", spec.charge.is_some()),
            ("fallback", spec.fallback.is_some()),
            ("request_usage", spec.request_usage.is_some()),
        ] {
            if set {
                ctx.error(
                    &format!("{at}.{field}"),
                    "only applies to tokens limits (expected it omitted, or tokens: N instead of requests)",
                );
            }
        }
    }
    match (spec.requests, spec.tokens) {
        (Some(_), Some(_)) => {
            ctx.error(
                at,
                "both requests and tokens are set (expected exactly one; write two entries to limit both)",
            );
            None
        }
        (None, None) => {
            ctx.error(
                at,
                "neither requests nor tokens is set (expected exactly one, e.g. requests: 100)",
            );
            None
        }
        (Some(n), None) => {
            positive(ctx, &format!("{at}.requests"), "requests", n).map(LimitAmount::Requests)
        }
        (None, Some(n)) => {
            let tokens_at = format!("{at}.tokens");
            if let Some(why) = facts.no_usage {
                ctx.error(
                    &tokens_at,
                    format!(
                        "tokens are charged from the usage field of OpenAI-compatible answers, and {why} (expected requests: N on this route)"
                    ),
                );
            }
            let tokens = positive(ctx, &tokens_at, "tokens", n);
            let fallback = match spec.fallback {
                None => Some(defaults::TOKEN_FALLBACK),
                Some(f) => ctx.check(
                    &format!("{at}.fallback"),
                    u64::try_from(f)
                        .map_err(|_| format!("invalid fallback {f} (expected an integer >= 0)")),
                ),
            };
            Some(LimitAmount::Tokens(TokenBudget {
                tokens: tokens?,
                charge: match spec.charge {
                    None | Some(TokenChargeSpec::Total) => TokenCharge::Total,
                    Some(TokenChargeSpec::Prompt) => TokenCharge::Prompt,
                    Some(TokenChargeSpec::Completion) => TokenCharge::Completion,
                },
                fallback: fallback?,
                request_usage: spec.request_usage.unwrap_or(defaults::REQUEST_USAGE),
            }))
        }
    }
}

/// An integer >= 1.
fn positive(ctx: &mut Ctx<'_>, at: &str, field: &str, n: i64) -> Option<u64> {
    ctx.check(
        at,
        u64::try_from(n)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("invalid {field} {n} (expected an integer >= 1)")),
    )
}

/// The `key` list: known parts, each once.
fn key(ctx: &mut Ctx<'_>, at: &str, parts: &[KeyPartText]) -> Vec<KeyPart> {
    let mut out: Vec<KeyPart> = Vec::with_capacity(parts.len());
    for (i, text) in parts.iter().enumerate() {
        let part_at = format!("{at}[{i}]");
        let Some(part) = ctx.check(&part_at, key_part(&text.0)) else {
            continue;
        };
        match out.iter().position(|p| *p == part) {
            Some(first) => ctx.error(
                &part_at,
                format!(
                    "duplicate key part {:?} (expected each part once; also at {at}[{first}])",
                    key_part_text(&part)
                ),
            ),
            None => out.push(part),
        }
    }
    out
}

/// `model`, `client`, `route` or `header:NAME` (the name lower-cased).
fn key_part(text: &str) -> Result<KeyPart, String> {
    match text {
        "model" => Ok(KeyPart::Model),
        "client" => Ok(KeyPart::Client),
        "route" => Ok(KeyPart::Route),
        _ => match text.strip_prefix("header:") {
            Some(name) => header_name(name).map(KeyPart::Header).map_err(|_| {
                format!(
                    "invalid header name {name:?} in key part {text:?} (expected header:NAME with letters, digits and !#$%&'*+-.^_`|~)"
                )
            }),
            None => Err(format!(
                "unknown key part {text:?} (expected one of: {KEY_PARTS})"
            )),
        },
    }
}

/// A key part as the file spells it.
pub(crate) fn key_part_text(part: &KeyPart) -> String {
    match part {
        KeyPart::Model => "model".into(),
        KeyPart::Client => "client".into(),
        KeyPart::Route => "route".into(),
        KeyPart::Header(name) => format!("header:{name}"),
    }
}

/// `routes[i].concurrency`.
pub(super) fn concurrency(
    ctx: &mut Ctx<'_>,
    at: &str,
    spec: Option<&ConcurrencySpec>,
) -> Option<Concurrency> {
    let spec = spec?;
    let max = ctx.check(
        &format!("{at}.max"),
        u32::try_from(spec.max)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                format!(
                    "invalid max {} (expected an integer from 1 to {})",
                    spec.max,
                    u32::MAX
                )
            }),
    );
    let queue = match spec.queue {
        None => Some(defaults::CONCURRENCY_QUEUE),
        Some(q) => ctx.check(
            &format!("{at}.queue"),
            u32::try_from(q).map_err(|_| {
                format!(
                    "invalid queue {q} (expected an integer from 0 to {})",
                    u32::MAX
                )
            }),
        ),
    };
    let timeout_at = format!("{at}.queue_timeout");
    let queue_timeout = ctx.duration_or(
        &timeout_at,
        spec.queue_timeout.as_ref(),
        defaults::CONCURRENCY_QUEUE_TIMEOUT,
    );
    if queue_timeout.is_zero() {
        ctx.error(
            &timeout_at,
            "invalid queue_timeout 0s (expected a duration > 0, e.g. \"1s\")",
        );
    }
    Some(Concurrency {
        max: max?,
        queue: queue?,
        queue_timeout,
        adaptive: spec.adaptive.unwrap_or(false),
    })
}
