//! `lb: {policy: hash, ...}` and `routes[].fault`: parsed, checked with positions, shown in
//! the effective config.

use std::num::NonZeroUsize;
use std::time::Duration;

use ferry_config::{HashKeyPart, LbPolicy};

fn config(lb: &str, fault: &str) -> String {
    format!(
        "apiVersion: ferry/v1\nlisteners:\n  - name: main\n    address: 127.0.0.1:18080\n    routes:\n      - name: r\n        to: up\n{fault}clusters:\n  - name: up\n    endpoints: [127.0.0.1:18081]\n    lb: {lb}\n"
    )
}

fn errors(text: &str) -> Vec<String> {
    match ferry_config::parse("routes.yaml", text) {
        Ok(_) => panic!("expected errors, the config parsed:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

#[test]
fn hash_lb_is_parsed_with_defaults_and_shown() {
    let text = config(
        "{ policy: hash, key: [header:X-Session-Id, cookie:sid, model, client, prompt_prefix:512] }",
        "",
    );
    let c = ferry_config::parse("routes.yaml", &text).unwrap();
    let cl = &c.clusters[0];
    assert_eq!(cl.lb, LbPolicy::Hash);
    let h = cl.hash.clone().unwrap();
    assert_eq!(
        h.key,
        [
            HashKeyPart::Header("x-session-id".into()),
            HashKeyPart::Cookie("sid".into()),
            HashKeyPart::Model,
            HashKeyPart::Client,
            HashKeyPart::PromptPrefix(NonZeroUsize::new(512).unwrap()),
        ]
    );
    assert_eq!(h.bounded_load, Some(1.25));
    assert_eq!(h.fallback, LbPolicy::P2cEwma);
    assert_eq!(
        c.effective_json["clusters"][0]["lb"],
        serde_json::json!({
            "policy": "hash",
            "key": ["header:x-session-id", "cookie:sid", "model", "client", "prompt_prefix:512"],
            "bounded_load": 1.25,
            "fallback": "p2c-ewma",
        })
    );
    let text = config(
        "{ policy: hash, key: [client], bounded_load: 0, fallback: round-robin }",
        "",
    );
    let h = ferry_config::parse("routes.yaml", &text).unwrap().clusters[0]
        .hash
        .clone()
        .unwrap();
    assert_eq!(h.bounded_load, None);
    assert_eq!(h.fallback, LbPolicy::RoundRobin);
}

#[test]
fn hash_lb_errors_carry_positions() {
    assert_eq!(
        errors(&config(
            "{ policy: hash, key: [header:x-s], bounded_load: 0.5 }",
            ""
        )),
        [
            "routes.yaml:11:58: clusters[0].lb.bounded_load: bounded_load 0.5 is below 1: the mean load itself would be over the bound (expected 0 for no bound, or a factor >= 1 such as 1.25)"
        ]
    );
    assert_eq!(
        errors(&config("{ policy: hash, key: [header:x-s, session] }", "")),
        [
            r#"routes.yaml:11:43: clusters[0].lb.key[1]: unknown key part "session" (expected one of: header:NAME, cookie:NAME, model, client, prompt_prefix:N)"#
        ]
    );
    assert_eq!(
        errors(&config("{ policy: hash, key: [prompt_prefix:0] }", "")),
        [
            r#"routes.yaml:11:31: clusters[0].lb.key[0]: invalid prompt_prefix length "0" (expected a byte count >= 1, e.g. prompt_prefix:512)"#
        ]
    );
    assert_eq!(
        errors(&config("hash", "")),
        [
            "routes.yaml:11:9: clusters[0].lb: policy hash needs a key (expected e.g. lb: {policy: hash, key: [header:x-session-id]})"
        ]
    );
    assert_eq!(
        errors(&config("{ policy: p2c-ewma, key: [client] }", "")),
        [
            "routes.yaml:11:34: clusters[0].lb.key: key applies to policy hash only (expected policy: hash, or no key)"
        ]
    );
    assert_eq!(
        errors(&config(
            "{ policy: hash, key: [client], fallback: hash }",
            ""
        )),
        [
            "routes.yaml:11:50: clusters[0].lb.fallback: hash cannot be its own fallback (expected p2c-ewma or round-robin)"
        ]
    );
}

const FAULT: &str = "        fault:\n          delay: { fixed: 200ms, percent: 10 }\n          abort: { status: 503, grpc_status: 14, percent: 1 }\n          header: X-Ferry-Fault\n";

#[test]
fn fault_is_parsed_and_shown() {
    let c = ferry_config::parse("routes.yaml", &config("p2c-ewma", FAULT)).unwrap();
    let f = c.listeners[0].routes[0].fault.clone().unwrap();
    let d = f.delay.unwrap();
    assert_eq!(d.fixed, Duration::from_millis(200));
    assert!((d.ratio - 0.1).abs() < 1e-12);
    let a = f.abort.unwrap();
    assert_eq!((a.status, a.grpc_status), (503, 14));
    assert!((a.ratio - 0.01).abs() < 1e-12);
    assert_eq!(f.header.as_deref(), Some("x-ferry-fault"));
    assert_eq!(
        c.effective_json["listeners"][0]["routes"][0]["fault"],
        serde_json::json!({
            "delay": { "fixed": "200ms", "percent": 10.0 },
            "abort": { "status": 503, "grpc_status": 14, "percent": 1.0 },
            "header": "x-ferry-fault",
        })
    );
    // grpc_status defaults to the code of the HTTP status.
    let only_abort = "        fault: { abort: { status: 429, percent: 50 } }\n";
    let c = ferry_config::parse("routes.yaml", &config("p2c-ewma", only_abort)).unwrap();
    let f = c.listeners[0].routes[0].fault.clone().unwrap();
    assert!(f.delay.is_none() && f.header.is_none());
    assert_eq!(f.abort.unwrap().grpc_status, 8);
}

#[test]
fn fault_errors_carry_positions() {
    let bad = "        fault:\n          delay: { fixed: 0s, percent: 10 }\n          abort: { status: 200, grpc_status: 0, percent: 101 }\n";
    assert_eq!(
        errors(&config("p2c-ewma", bad)),
        [
            r#"routes.yaml:9:27: listeners[0].routes[0].fault.delay.fixed: zero delay (expected e.g. "200ms")"#,
            "routes.yaml:10:28: listeners[0].routes[0].fault.abort.status: invalid status 200 (expected 400 to 599)",
            "routes.yaml:10:46: listeners[0].routes[0].fault.abort.grpc_status: invalid grpc_status 0 (expected a gRPC status code from 1 to 16, e.g. 14 for UNAVAILABLE)",
            r#"routes.yaml:10:58: listeners[0].routes[0].fault.abort.percent: invalid percent "101" (expected a number from 0 to 100)"#,
        ]
    );
    assert_eq!(
        errors(&config("p2c-ewma", "        fault: { header: x-f }\n")),
        [
            "routes.yaml:8:16: listeners[0].routes[0].fault: a fault needs a delay or an abort (expected e.g. delay: {fixed: 200ms, percent: 10})"
        ]
    );
}
