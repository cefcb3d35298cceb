//! `routes[].mirror`: parsed with defaults, checked with positions, shown in the effective
//! config.

use std::time::Duration;

use ferry_config::{Compare, Tolerance};

fn config(mirror: &str) -> String {
    format!(
        "apiVersion: ferry/v1\nlisteners:\n  - name: main\n    address: 127.0.0.1:18080\n    routes:\n      - name: r\n        to: up\n        mirror:\n{mirror}clusters:\n  - name: up\n    endpoints: [127.0.0.1:18081]\n  - name: next\n    endpoints: [127.0.0.1:18082]\n"
    )
}

fn errors(text: &str) -> Vec<String> {
    match ferry_config::parse("routes.yaml", text) {
        Ok(_) => panic!("expected errors, the config parsed:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

#[test]
fn mirror_is_parsed_with_defaults_and_shown() {
    let text = config("          - { cluster: next, fraction: 0.1, compare: oip }\n");
    let c = ferry_config::parse("routes.yaml", &text).unwrap();
    let m = &c.listeners[0].routes[0].mirror[0];
    assert_eq!(m.cluster, "next");
    assert_eq!(m.fraction, 0.1);
    assert_eq!(m.compare, Compare::Oip);
    assert_eq!(
        m.tolerance,
        Tolerance {
            abs: 1e-4,
            rel: 1e-3
        }
    );
    assert_eq!(m.max_body, 16 << 20);
    assert_eq!(m.timeout, Duration::from_secs(10));
    assert_eq!(m.max_in_flight, 64);
    let shown = &c.effective_json["listeners"][0]["routes"][0]["mirror"][0];
    assert_eq!(
        shown,
        &serde_json::json!({
            "cluster": "next", "fraction": 0.1, "compare": "oip",
            "tolerance": { "abs": 1e-4, "rel": 1e-3 }, "max_body": 16777216,
            "timeout": "10s", "max_in_flight": 64,
        })
    );
}

#[test]
fn every_field_is_read() {
    let text = config(
        "          - cluster: next\n            fraction: 1\n            compare: json\n            tolerance: { abs: 0, rel: 0.5 }\n            max_body: 64KiB\n            timeout: 250ms\n            max_in_flight: 3\n",
    );
    let c = ferry_config::parse("routes.yaml", &text).unwrap();
    let m = &c.listeners[0].routes[0].mirror[0];
    assert_eq!(m.compare, Compare::Json);
    assert_eq!(m.tolerance, Tolerance { abs: 0.0, rel: 0.5 });
    assert_eq!(m.max_body, 65536);
    assert_eq!(m.timeout, Duration::from_millis(250));
    assert_eq!(m.max_in_flight, 3);
}

#[test]
fn bad_mirrors_are_reported_with_positions() {
    let text = config(
        "          - { cluster: nope, fraction: 1.5, tolerance: { abs: -1 }, max_body: 16 MB }\n          - { cluster: next, fraction: 0.1, max_in_flight: 0, timeout: 0s }\n          - { cluster: next, fraction: 0.2 }\n",
    );
    assert_eq!(
        errors(&text),
        [
            "routes.yaml:9:24: listeners[0].routes[0].mirror[0].cluster: unknown cluster \"nope\" (expected one of: next, up)",
            "routes.yaml:9:40: listeners[0].routes[0].mirror[0].fraction: invalid fraction \"1.5\" (expected a number from 0 to 1)",
            "routes.yaml:9:63: listeners[0].routes[0].mirror[0].tolerance.abs: invalid tolerance \"-1\" (expected a number >= 0 such as 1e-4)",
            "routes.yaml:9:79: listeners[0].routes[0].mirror[0].max_body: invalid size \"16 MB\" (expected bytes, or a number with B, KiB, MiB or GiB, e.g. \"16MiB\")",
            "routes.yaml:10:60: listeners[0].routes[0].mirror[1].max_in_flight: 0 mirrors in flight (expected >= 1; remove the mirror to turn it off)",
            "routes.yaml:10:72: listeners[0].routes[0].mirror[1].timeout: zero timeout (expected e.g. \"5s\": a mirror must end)",
            "routes.yaml:11:24: listeners[0].routes[0].mirror[2].cluster: cluster \"next\" is mirrored twice (expected each candidate once per route)",
        ]
    );
}

#[test]
fn the_example_loads() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mirror.yaml");
    let c = ferry_config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let routes = &c.listeners[0].routes;
    let m = &routes[0].mirror[0];
    assert_eq!(
        (m.cluster.as_str(), m.fraction, m.compare, m.max_body),
        ("triton-next", 0.1, Compare::Oip, 16 << 20)
    );
    assert_eq!((m.timeout, m.max_in_flight), (Duration::from_secs(5), 32));
    assert_eq!(routes[1].mirror[0].timeout, Duration::from_secs(10));
}
