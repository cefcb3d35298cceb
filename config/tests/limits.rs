//! Rate limits, concurrency and the Redis store: `redis`, `routes[].rate_limit` and
//! `routes[].concurrency`, from file to IR, to the effective config, and every error as
//! `ferry validate` prints it.

use std::time::Duration;

use ferry_config::{
    Concurrency, Config, KeyPart, LimitAmount, LimitMode, OnFailure, Override, RateLimit, Redis,
    Scope, TokenBudget, TokenCharge,
};
use serde_json::json;

// A crate root finds `mod x;` beside itself; these goldens live under limits/.
#[path = "limits/errors.rs"]
mod errors;

/// Every limit setting, in the file format's contract.
const FULL: &str = r#"apiVersion: ferry/v1
redis:
  address: rediss://ferry:s3cret@Redis.limits.svc:6380/2
  timeout: 20ms
  on_failure: deny
listeners:
  - name: inbound
    address: 127.0.0.1:15006
    routes:
      - name: llm
        to: vllm
        rate_limit:
          - { requests: 100, per: 1s, burst: 20, key: [model, header:X-Tenant] }
          - { requests: 6000, per: 1m, key: [header:x-tenant], scope: global }
          - { tokens: 50000, per: 1m, key: [header:x-tenant], scope: global, charge: completion, fallback: 500, request_usage: false }
          - { name: per-client, requests: 10, per: 500ms, key: [client], mode: shadow }
          - requests: 100
            per: 1s
            key: [header:x-tenant, route]
            overrides: [{ match: { header:x-tenant: gold }, requests: 1000 }, { match: { header:X-Tenant: "7", route: llm }, requests: 5 }]
        concurrency: { max: 8, queue: 32, queue_timeout: 2s, adaptive: true }
      - name: chat
        to: vllm
        rate_limit:
          - { tokens: 1000, per: 1h, overrides: [] }
        concurrency: { max: 1 }
clusters:
  - name: vllm
    endpoints: [127.0.0.1:8000]
"#;

fn parse(text: &str) -> Config {
    ferry_config::parse("routes.yaml", text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn full_example_becomes_the_expected_ir() {
    let config = parse(FULL);
    assert_eq!(
        config.redis,
        Some(Redis {
            url: "rediss://ferry:s3cret@redis.limits.svc:6380/2".into(),
            timeout: Duration::from_millis(20),
            on_failure: OnFailure::Deny,
        })
    );
    let tenant = || KeyPart::Header("x-tenant".into());
    let llm = &config.listeners[0].routes[0];
    assert_eq!(
        llm.rate_limit,
        vec![
            RateLimit {
                name: "rate_limit[0]".into(),
                amount: LimitAmount::Requests(100),
                per: Duration::from_secs(1),
                burst: 20,
                key: vec![KeyPart::Model, tenant()],
                scope: Scope::Local,
                mode: LimitMode::Enforce,
                overrides: vec![],
            },
            RateLimit {
                name: "rate_limit[1]".into(),
                amount: LimitAmount::Requests(6000),
                per: Duration::from_secs(60),
                burst: 6000,
                key: vec![tenant()],
                scope: Scope::Global,
                mode: LimitMode::Enforce,
                overrides: vec![],
            },
            RateLimit {
                name: "rate_limit[2]".into(),
                amount: LimitAmount::Tokens(TokenBudget {
                    tokens: 50000,
                    charge: TokenCharge::Completion,
                    fallback: 500,
                    request_usage: false,
                }),
                per: Duration::from_secs(60),
                burst: 50000,
                key: vec![tenant()],
                scope: Scope::Global,
                mode: LimitMode::Enforce,
                overrides: vec![],
            },
            RateLimit {
                name: "per-client".into(),
                amount: LimitAmount::Requests(10),
                per: Duration::from_millis(500),
                burst: 10,
                key: vec![KeyPart::Client],
                scope: Scope::Local,
                mode: LimitMode::Shadow,
                overrides: vec![],
            },
            RateLimit {
                name: "rate_limit[4]".into(),
                amount: LimitAmount::Requests(100),
                per: Duration::from_secs(1),
                burst: 100,
                key: vec![tenant(), KeyPart::Route],
                scope: Scope::Local,
                mode: LimitMode::Enforce,
                overrides: vec![
                    Override {
                        matches: vec![(tenant(), "gold".into())],
                        amount: 1000,
                    },
                    Override {
                        matches: vec![(tenant(), "7".into()), (KeyPart::Route, "llm".into())],
                        amount: 5,
                    },
                ],
            },
        ]
    );
    assert_eq!(
        llm.concurrency,
        Some(Concurrency {
            max: 8,
            queue: 32,
            queue_timeout: Duration::from_secs(2),
            adaptive: true,
        })
    );
    // Defaults: token settings, burst, scope, mode, queue and queue_timeout.
    let chat = &config.listeners[0].routes[1];
    assert_eq!(
        chat.rate_limit,
        vec![RateLimit {
            name: "rate_limit[0]".into(),
            amount: LimitAmount::Tokens(TokenBudget {
                tokens: 1000,
                charge: TokenCharge::Total,
                fallback: 0,
                request_usage: true,
            }),
            per: Duration::from_secs(3600),
            burst: 1000,
            key: vec![],
            scope: Scope::Local,
            mode: LimitMode::Enforce,
            overrides: vec![],
        }]
    );
    assert_eq!(
        chat.concurrency,
        Some(Concurrency {
            max: 1,
            queue: 0,
            queue_timeout: Duration::from_secs(1),
            adaptive: false,
        })
    );
}

#[test]
fn no_limits_by_default() {
    let config = parse(&errors::with_route(false, ""));
    assert_eq!(config.redis, None);
    let route = &config.listeners[0].routes[0];
    assert!(route.rate_limit.is_empty());
    assert_eq!(route.concurrency, None);
    let effective = &config.effective_json;
    assert!(effective.get("redis").is_none());
    let route = &effective["listeners"][0]["routes"][0];
    assert!(route.get("rate_limit").is_none());
    assert!(route.get("concurrency").is_none());
}

#[test]
fn redis_defaults_and_normalised_addresses() {
    let config = parse("apiVersion: ferry/v1\nredis: { address: Redis.NS.svc:6379 }\n");
    assert_eq!(
        config.redis,
        Some(Redis {
            url: "redis://redis.ns.svc:6379".into(),
            timeout: Duration::from_millis(50),
            on_failure: OnFailure::Allow,
        })
    );
    assert_eq!(
        config.effective_json["redis"],
        json!({ "address": "redis://redis.ns.svc:6379", "timeout": "50ms", "on_failure": "allow" })
    );
    for address in ["redis://redis.ns.svc", "redis://redis.ns.svc:6379/"] {
        let other = parse(&format!(
            "apiVersion: ferry/v1\nredis: {{ address: \"{address}\" }}\n"
        ));
        assert_eq!(other.redis, config.redis, "{address}");
        assert_eq!(other.version, config.version, "{address}");
    }
    let ipv6 = parse("apiVersion: ferry/v1\nredis: { address: \"rediss://:pw@[::1]/3\" }\n");
    assert_eq!(
        ipv6.redis.map(|r| r.url),
        Some("rediss://:pw@[::1]:6379/3".into())
    );
}

#[test]
fn effective_json_shows_defaults_and_hides_the_password() {
    let config = parse(FULL);
    let effective = &config.effective_json;
    assert_eq!(
        effective["redis"],
        json!({
            "address": "rediss://ferry:***@redis.limits.svc:6380/2",
            "timeout": "20ms",
            "on_failure": "deny",
        })
    );
    assert!(!effective.to_string().contains("s3cret"));
    let llm = &effective["listeners"][0]["routes"][0];
    assert_eq!(
        llm["rate_limit"],
        json!([
            { "name": "rate_limit[0]", "requests": 100, "per": "1s", "burst": 20,
              "key": ["model", "header:x-tenant"], "scope": "local", "mode": "enforce" },
            { "name": "rate_limit[1]", "requests": 6000, "per": "1m",
              "key": ["header:x-tenant"], "scope": "global", "mode": "enforce" },
            { "name": "rate_limit[2]", "tokens": 50000, "per": "1m",
              "key": ["header:x-tenant"], "scope": "global", "mode": "enforce",
              "charge": "completion", "fallback": 500, "request_usage": false },
            { "name": "per-client", "requests": 10, "per": "500ms", "burst": 10,
              "key": ["client"], "scope": "local", "mode": "shadow" },
            { "name": "rate_limit[4]", "requests": 100, "per": "1s", "burst": 100,
              "key": ["header:x-tenant", "route"], "scope": "local", "mode": "enforce",
              "overrides": [
                  { "match": { "header:x-tenant": "gold" }, "requests": 1000 },
                  { "match": { "header:x-tenant": "7", "route": "llm" }, "requests": 5 },
              ] },
        ])
    );
    assert_eq!(
        llm["concurrency"],
        json!({ "max": 8, "queue": 32, "queue_timeout": "2s", "adaptive": true })
    );
    let chat = &effective["listeners"][0]["routes"][1];
    assert_eq!(
        chat["rate_limit"],
        json!([{ "name": "rate_limit[0]", "tokens": 1000, "per": "1h", "burst": 1000,
                 "key": [], "scope": "local", "mode": "enforce",
                 "charge": "total", "fallback": 0, "request_usage": true }])
    );
    assert_eq!(
        chat["concurrency"],
        json!({ "max": 1, "queue": 0, "queue_timeout": "1s", "adaptive": false })
    );
}

#[test]
fn the_effective_config_parses_back_to_the_same_limits() {
    let config = parse(FULL);
    let again = parse(&config.effective_json.to_string());
    for (a, b) in config.listeners[0]
        .routes
        .iter()
        .zip(&again.listeners[0].routes)
    {
        assert_eq!(a.rate_limit, b.rate_limit, "{}", a.name);
        assert_eq!(a.concurrency, b.concurrency, "{}", a.name);
    }
    // Only the hidden password differs.
    let redis = again.redis.unwrap();
    assert_eq!(redis.url, "rediss://ferry:***@redis.limits.svc:6380/2");
    let no_password = FULL.replace("ferry:s3cret@", "");
    let config = parse(&no_password);
    assert_eq!(
        parse(&config.effective_json.to_string()).version,
        config.version
    );
}

#[test]
fn a_new_redis_password_is_a_new_version() {
    let old = parse(FULL);
    let new = parse(&FULL.replace("s3cret", "rotated"));
    assert_eq!(old.effective_json, new.effective_json);
    assert_ne!(old.version, new.version);
}

#[test]
fn a_limit_edit_is_a_new_version() {
    let old = parse(FULL);
    let new = parse(&FULL.replace("requests: 6000", "requests: 6001"));
    assert_ne!(old.version, new.version);
}
