//! Every limits error as `ferry validate` prints it: golden strings with `file:line:col`.

use super::parse;

/// Parses `text` as `routes.yaml` and returns every error line.
fn errors(text: &str) -> Vec<String> {
    match ferry_config::parse("routes.yaml", text) {
        Ok(_) => panic!("expected errors, the config parsed:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

/// One route (`r`, to cluster `up`) with `settings` spliced in (indented 8 spaces, first line
/// at line 9); line 2 is the top-level `redis` (or a comment when `redis` is false).
pub(crate) fn with_route(redis: bool, settings: &str) -> String {
    let redis = if redis {
        "redis: { address: 127.0.0.1:6379 }"
    } else {
        "# no redis"
    };
    format!(
        "apiVersion: ferry/v1\n{redis}\nlisteners:\n  - name: inbound\n    address: 127.0.0.1:15006\n    routes:\n      - name: r\n        to: up\n{settings}clusters:\n  - name: up\n    endpoints: [127.0.0.1:8080]\n"
    )
}

const R: &str = "listeners[0].routes[0]";

#[test]
fn exactly_one_amount() {
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit:\n          - { requests: 1, tokens: 2, per: 1s }\n          - { per: 1s }\n"
        )),
        [
            format!(
                "routes.yaml:10:13: {R}.rate_limit[0]: both requests and tokens are set (expected exactly one; write two entries to limit both)"
            ),
            format!(
                "routes.yaml:11:13: {R}.rate_limit[1]: neither requests nor tokens is set (expected exactly one, e.g. requests: 100)"
            ),
        ]
    );
}

#[test]
fn amounts_and_windows_must_be_positive() {
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit:\n          - { requests: 0, per: 1s }\n          - { tokens: -5, per: 1s }\n          - { requests: 1, per: 0s }\n          - { requests: 1, per: 5 sec }\n"
        )),
        [
            format!(
                "routes.yaml:10:25: {R}.rate_limit[0].requests: invalid requests 0 (expected an integer >= 1)"
            ),
            format!(
                "routes.yaml:11:23: {R}.rate_limit[1].tokens: invalid tokens -5 (expected an integer >= 1)"
            ),
            format!(
                r#"routes.yaml:12:33: {R}.rate_limit[2].per: invalid per 0s (expected a duration > 0, e.g. "1s" or "1m")"#
            ),
            format!(
                r#"routes.yaml:13:33: {R}.rate_limit[3].per: invalid duration "5 sec" (expected e.g. "500ms", "2s", "5m")"#
            ),
        ]
    );
    assert_eq!(
        errors(&with_route(true, "        rate_limit: [{ requests: 1 }]\n")),
        [format!(
            r#"routes.yaml:9:22: {R}.rate_limit[0].per: missing field "per" (expected it to be set)"#
        )]
    );
}

#[test]
fn burst_is_at_least_one_and_local_only() {
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit:\n          - { requests: 1, per: 1s, burst: 0 }\n          - { requests: 1, per: 1s, burst: 5, scope: global }\n"
        )),
        [
            format!(
                "routes.yaml:10:44: {R}.rate_limit[0].burst: invalid burst 0 (expected an integer >= 1)"
            ),
            format!(
                "routes.yaml:11:44: {R}.rate_limit[1].burst: only applies to scope: local (expected it omitted; a global limit admits its amount per window, shared by every sidecar)"
            ),
        ]
    );
}

#[test]
fn global_needs_redis() {
    assert_eq!(
        errors(&with_route(
            false,
            "        rate_limit:\n          - { requests: 1, per: 1s, scope: global }\n"
        )),
        [format!(
            "routes.yaml:10:44: {R}.rate_limit[0].scope: scope global needs a top-level redis (expected redis: {{address: host:port}}, or scope: local)"
        )]
    );
    // An invalid redis is reported once, at itself, not again at every global limit.
    let text = with_route(
        true,
        "        rate_limit:\n          - { requests: 1, per: 1s, scope: global }\n",
    )
    .replace("127.0.0.1:6379", "nowhere");
    assert_eq!(errors(&text).len(), 1);
}

#[test]
fn key_parts_are_known_and_unique() {
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit:\n          - { requests: 1, per: 1s, key: [tenant, Model, \"header:x y\", \"header:\"] }\n          - { requests: 1, per: 1s, key: [header:X-Tenant, model, header:x-tenant] }\n"
        )),
        [
            format!(
                r#"routes.yaml:10:43: {R}.rate_limit[0].key[0]: unknown key part "tenant" (expected one of: model, client, route or header:NAME)"#
            ),
            format!(
                r#"routes.yaml:10:51: {R}.rate_limit[0].key[1]: unknown key part "Model" (expected one of: model, client, route or header:NAME)"#
            ),
            format!(
                r#"routes.yaml:10:58: {R}.rate_limit[0].key[2]: invalid header name "x y" in key part "header:x y" (expected header:NAME with letters, digits and !#$%&'*+-.^_`|~)"#
            ),
            format!(
                r#"routes.yaml:10:72: {R}.rate_limit[0].key[3]: invalid header name "" in key part "header:" (expected header:NAME with letters, digits and !#$%&'*+-.^_`|~)"#
            ),
            format!(
                r#"routes.yaml:11:67: {R}.rate_limit[1].key[2]: duplicate key part "header:x-tenant" (expected each part once; also at {R}.rate_limit[1].key[0])"#
            ),
        ]
    );
}

#[test]
fn names_are_unique_within_a_route() {
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit:\n          - { name: a, requests: 1, per: 1s }\n          - { name: a, requests: 1, per: 1s }\n          - { name: \"rate_limit[3]\", requests: 1, per: 1s }\n          - { requests: 1, per: 1s }\n          - { name: \"\", requests: 1, per: 1s }\n"
        )),
        [
            format!(
                r#"routes.yaml:11:21: {R}.rate_limit[1].name: duplicate rate limit name "a" (expected unique names within a route; first used by {R}.rate_limit[0])"#
            ),
            format!(
                r#"routes.yaml:13:13: {R}.rate_limit[3].name: duplicate rate limit name "rate_limit[3]" (expected unique names within a route; first used by {R}.rate_limit[2])"#
            ),
            format!(
                r#"routes.yaml:14:21: {R}.rate_limit[4].name: empty name (expected a name, or name omitted for "rate_limit[4]")"#
            ),
        ]
    );
    // The same name on two routes is fine.
    let text = with_route(
        true,
        "        rate_limit: [{ name: a, requests: 1, per: 1s }]\n",
    )
    .replace(
        "clusters:",
        "      - { name: s, to: up, rate_limit: [{ name: a, requests: 1, per: 1s }] }\nclusters:",
    );
    parse(&text);
}

#[test]
fn token_settings_only_on_token_limits() {
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit:\n          - { requests: 1, per: 1s, charge: total, fallback: 1, request_usage: true }\n"
        )),
        [
            format!(
                "routes.yaml:10:45: {R}.rate_limit[0].charge: only applies to tokens limits (expected it omitted, or tokens: N instead of requests)"
            ),
            format!(
                "routes.yaml:10:62: {R}.rate_limit[0].fallback: only applies to tokens limits (expected it omitted, or tokens: N instead of requests)"
            ),
            format!(
                "routes.yaml:10:80: {R}.rate_limit[0].request_usage: only applies to tokens limits (expected it omitted, or tokens: N instead of requests)"
            ),
        ]
    );
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit: [{ tokens: 1, per: 1s, charge: all }]\n"
        )),
        [format!(
            r#"routes.yaml:9:52: {R}.rate_limit[0].charge: unknown value "all" (expected one of: total, prompt, completion)"#
        )]
    );
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit: [{ tokens: 1, per: 1s, fallback: -1 }]\n"
        )),
        [format!(
            "routes.yaml:9:54: {R}.rate_limit[0].fallback: invalid fallback -1 (expected an integer >= 0)"
        )]
    );
}

#[test]
fn tokens_need_openai_answers() {
    let text = "apiVersion: ferry/v1
listeners:
  - name: inbound
    address: 127.0.0.1:15006
    routes:
      - name: fixed
        direct_response: { status: 200 }
        rate_limit: [{ tokens: 10, per: 1s }]
      - name: oip
        to: up
        translate: { from: rest, to: grpc }
        rate_limit: [{ tokens: 10, per: 1s }, { requests: 10, per: 1s }]
clusters:
  - name: up
    endpoints: [127.0.0.1:8080]
";
    assert_eq!(
        errors(text),
        [
            "routes.yaml:8:32: listeners[0].routes[0].rate_limit[0].tokens: tokens are charged from the usage field of OpenAI-compatible answers, and a direct_response route has no upstream answer (expected requests: N on this route)",
            "routes.yaml:12:32: listeners[0].routes[1].rate_limit[0].tokens: tokens are charged from the usage field of OpenAI-compatible answers, and translated answers (OIP or descriptor) carry none (expected requests: N on this route)",
        ]
    );
}

#[test]
fn overrides_match_the_limits_key_and_kind() {
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit:
          - requests: 10
            per: 1s
            key: [header:x-tenant]
            overrides:
              - { match: { header:x-user: bob }, requests: 5 }
              - { match: { header:x-tenant: gold }, tokens: 5 }
              - { match: { header:x-tenant: gold }, requests: 0 }
              - { match: {}, requests: 5 }
              - { match: { header:x-tenant: a }, requests: 1, tokens: 1 }
              - { match: { header:x-tenant: a } }
              - { match: { tenant: a }, requests: 1 }
              - { match: { header:X-Tenant: a, header:x-tenant: b }, requests: 1 }
"
        )),
        [
            format!(
                r#"routes.yaml:14:28: {R}.rate_limit[0].overrides[0].match.header:x-user: key part "header:x-user" is not in the limit's key, so this override could never apply (expected one of the limit's key parts: header:x-tenant)"#
            ),
            format!(
                "routes.yaml:15:61: {R}.rate_limit[0].overrides[1].tokens: the limit counts requests, so its overrides must too (expected requests: N)"
            ),
            format!(
                "routes.yaml:16:63: {R}.rate_limit[0].overrides[2].requests: invalid requests 0 (expected an integer >= 1)"
            ),
            format!(
                "routes.yaml:17:26: {R}.rate_limit[0].overrides[3].match: empty match would apply to every key (expected at least one key part, e.g. {{header:x-tenant: gold}}; or change the limit's amount)"
            ),
            format!(
                "routes.yaml:18:17: {R}.rate_limit[0].overrides[4]: both requests and tokens are set (expected only requests, as the limit counts)"
            ),
            format!(
                "routes.yaml:19:17: {R}.rate_limit[0].overrides[5]: neither requests nor tokens is set (expected requests: N)"
            ),
            format!(
                r#"routes.yaml:20:28: {R}.rate_limit[0].overrides[6].match.tenant: unknown key part "tenant" (expected one of: model, client, route or header:NAME)"#
            ),
            format!(
                r#"routes.yaml:21:48: {R}.rate_limit[0].overrides[7].match.header:x-tenant: duplicate key part "header:x-tenant" (expected each part once)"#
            ),
        ]
    );
    assert_eq!(
        errors(&with_route(
            true,
            "        rate_limit:\n          - { tokens: 10, per: 1s, overrides: [{ match: { model: m }, requests: 5 }] }\n"
        )),
        [
            format!(
                r#"routes.yaml:10:59: {R}.rate_limit[0].overrides[0].match.model: key part "model" is not in the limit's key, so this override could never apply (expected key: [model] on the limit, which has no key)"#
            ),
            format!(
                "routes.yaml:10:81: {R}.rate_limit[0].overrides[0].requests: the limit counts tokens, so its overrides must too (expected tokens: N)"
            ),
        ]
    );
}

#[test]
fn concurrency_bounds() {
    assert_eq!(
        errors(&with_route(
            true,
            "        concurrency: { max: 0, queue: -1, queue_timeout: 0s }\n"
        )),
        [
            format!(
                "routes.yaml:9:29: {R}.concurrency.max: invalid max 0 (expected an integer from 1 to 4294967295)"
            ),
            format!(
                "routes.yaml:9:39: {R}.concurrency.queue: invalid queue -1 (expected an integer from 0 to 4294967295)"
            ),
            format!(
                r#"routes.yaml:9:58: {R}.concurrency.queue_timeout: invalid queue_timeout 0s (expected a duration > 0, e.g. "1s")"#
            ),
        ]
    );
    assert_eq!(
        errors(&with_route(true, "        concurrency: { queue: 1 }\n")),
        [format!(
            r#"routes.yaml:9:22: {R}.concurrency.max: missing field "max" (expected it to be set)"#
        ),]
    );
}

#[test]
fn redis_address_and_timeout() {
    let redis = |address: &str| {
        errors(&format!(
            "apiVersion: ferry/v1\nredis:\n  address: \"{address}\"\n  timeout: 0s\n"
        ))
    };
    let expected = r#"(expected host:port or redis://[user:pass@]host[:port][/db], rediss:// for TLS, e.g. "127.0.0.1:6379")"#;
    for (address, why) in [
        ("localhost", "not a host:port or URL"),
        ("http://h:1", "unsupported scheme \"http\""),
        (
            "redis://h:1/x",
            "the path must be a database number, e.g. /0",
        ),
        ("redis://:1", "no host"),
        ("redis://h:0", "invalid port"),
        (
            "redis://h:1?db=2",
            "query strings and fragments are not supported",
        ),
    ] {
        assert_eq!(
            redis(address),
            [
                format!("routes.yaml:3:12: redis.address: invalid redis address {address:?}: {why} {expected}"),
                r#"routes.yaml:4:12: redis.timeout: invalid timeout 0s (expected a duration > 0, e.g. "50ms")"#.to_owned(),
            ]
        );
    }
    assert_eq!(
        errors("apiVersion: ferry/v1\nredis: { address: h:1, on_failure: closed }\n"),
        [r#"routes.yaml:2:36: redis.on_failure: unknown value "closed" (expected allow or deny)"#]
    );
}

#[test]
fn every_error_of_a_file_at_once() {
    let text = with_route(
        false,
        "        rate_limit:\n          - { requests: 0, per: 0s, scope: global, key: [who] }\n        concurrency: { max: 0 }\n",
    );
    assert_eq!(errors(&text).len(), 5, "{:#?}", errors(&text));
}
