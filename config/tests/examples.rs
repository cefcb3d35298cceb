//! Every shipped example parses; the built-in configs match their files; the effective config
//! is itself a valid config with the same meaning. (`proxy/tests/examples.rs` goes further and
//! loads every file under `examples/` as `ferry run` does, descriptor sets included.)

#![allow(
    clippy::unwrap_used,
    reason = "test helpers fail the test by panicking, like the #[test] functions that call them"
)]

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use ferry_config::{
    Action, Config, Endpoints, LbPolicy, PathMatch, RetryOn, StringMatch, TemplateSegment,
    UpstreamProtocol,
};

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn load_example(name: &str) -> Config {
    let path = examples_dir().join(name);
    ferry_config::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses the effective JSON back (JSON is YAML) and checks nothing changed.
fn assert_round_trips(config: &Config) {
    let text = serde_json::to_string_pretty(&*config.effective_json).unwrap();
    let again =
        ferry_config::parse("effective.json", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(again.effective_json, config.effective_json);
    assert_eq!(again.version, config.version);
}

#[test]
fn every_example_parses_and_round_trips() {
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(examples_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            let config = ferry_config::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_round_trips(&config);
            seen.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    for required in [
        "full.yaml",
        "default.yaml",
        "tracing.yaml",
        "access-log.yaml",
        "rollouts.yaml",
    ] {
        assert!(
            seen.iter().any(|s| s == required),
            "{required} missing from {seen:?}"
        );
    }
}

#[test]
fn default_config_equals_examples_default_yaml() {
    let on_disk = std::fs::read_to_string(examples_dir().join("default.yaml")).unwrap();
    assert_eq!(ferry_config::DEFAULT_YAML, on_disk);
    let parsed = ferry_config::parse("default.yaml", ferry_config::DEFAULT_YAML).unwrap();
    let built = ferry_config::default_config();
    assert_eq!(built.effective_json, parsed.effective_json);
    assert_eq!(built.version, parsed.version);

    assert_eq!(built.admin.address, "127.0.0.1:15000".parse().unwrap());
    let listeners: Vec<(&str, SocketAddr)> = built
        .listeners
        .iter()
        .map(|l| (l.name.as_str(), l.address))
        .collect();
    assert_eq!(
        listeners,
        [
            ("inbound", "0.0.0.0:15006".parse().unwrap()),
            ("outbound", "127.0.0.1:15001".parse().unwrap())
        ]
    );
    assert_eq!(
        built.clusters[0].endpoints,
        Endpoints::Static(vec!["127.0.0.1:8080".parse().unwrap()])
    );
    assert_eq!(built.clusters[0].lb, LbPolicy::P2cEwma);
    assert_eq!(
        built.clusters[1].endpoints,
        Endpoints::OriginalAuthority { default_port: 80 }
    );
}

#[test]
fn one_route_config_shape() {
    let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let upstream: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let config = ferry_config::one_route_config(listen, upstream, Some(listen));
    assert_eq!(config.admin.address, listen);
    assert_eq!(config.listeners.len(), 1);
    let l = &config.listeners[0];
    assert_eq!((l.name.as_str(), l.address), ("main", listen));
    assert_eq!(l.routes[0].name, "default");
    let Action::Forward(targets) = &l.routes[0].action else {
        panic!("expected a forward");
    };
    assert_eq!(targets[0].cluster, "upstream");
    let c = &config.clusters[0];
    assert_eq!(c.name, "upstream");
    assert_eq!(c.endpoints, Endpoints::Static(vec![upstream]));
    assert_eq!(c.protocol, UpstreamProtocol::Auto);
    assert_eq!(c.lb, LbPolicy::RoundRobin);
    assert!(c.outlier.is_some());
    assert_round_trips(&config);

    let default_admin = ferry_config::one_route_config(listen, upstream, None);
    assert_eq!(
        default_admin.admin.address,
        "127.0.0.1:15000".parse().unwrap()
    );
    assert_ne!(default_admin.version, config.version);
}

#[test]
fn full_yaml_becomes_the_expected_ir() {
    let config = load_example("full.yaml");
    let inbound = &config.listeners[0];
    assert_eq!(inbound.limits.max_request_body_bytes, Some(1 << 30));
    assert_eq!(inbound.limits.idle_timeout, Some(Duration::from_secs(300)));
    assert_eq!(
        inbound.limits.request_headers_timeout,
        Some(Duration::from_secs(10))
    );
    assert_eq!(inbound.limits.max_connections, NonZeroU32::new(2048));
    assert_eq!(
        inbound.limits.h2_max_concurrent_streams,
        NonZeroU32::new(256)
    );
    // Defaults: 5m idle, 10s request head, 4096 connections, 1024 h2 streams, 30s stall.
    let outbound = &config.listeners[1];
    assert_eq!(outbound.limits.idle_timeout, Some(Duration::from_secs(300)));
    assert_eq!(
        outbound.limits.request_headers_timeout,
        Some(Duration::from_secs(10))
    );
    assert_eq!(outbound.limits.max_connections, NonZeroU32::new(4096));
    assert_eq!(
        outbound.limits.h2_max_concurrent_streams,
        NonZeroU32::new(1024)
    );
    assert_eq!(
        outbound.limits.stalled_write_timeout,
        Some(Duration::from_secs(30))
    );

    let resnet = &inbound.routes[0];
    let Action::Forward(split) = &resnet.action else {
        panic!("expected a forward");
    };
    let weights: Vec<(&str, u32)> = split
        .iter()
        .map(|w| (w.cluster.as_str(), w.weight.get()))
        .collect();
    assert_eq!(weights, [("triton", 90), ("triton-canary", 10)]);
    let model = resnet.matcher.model.as_ref().unwrap();
    assert!(matches!(&model.name, StringMatch::Exact(n) if n == "resnet50"));
    assert!(matches!(&model.version, Some(StringMatch::Exact(v)) if v == "2"));
    let retry = resnet.retry.as_ref().unwrap();
    assert_eq!(retry.attempts, 3);
    assert_eq!(
        retry.on,
        [
            RetryOn::ConnectFailure,
            RetryOn::Unavailable,
            RetryOn::Http503
        ]
    );
    assert_eq!(retry.budget_ratio, 0.2);
    assert_eq!(retry.per_try_timeout, Some(Duration::from_secs(10)));

    let oip = &inbound.routes[1];
    let Some(PathMatch::Template(t)) = &oip.matcher.path else {
        panic!("expected a template");
    };
    assert_eq!(t.segments[2], TemplateSegment::Var("model".into()));
    assert_eq!(oip.matcher.methods, ["POST"]);
    assert_eq!(oip.matcher.headers.len(), 2);
    assert!(oip.matcher.headers[1].value.is_none() && oip.matcher.headers[1].invert);
    assert_eq!(
        oip.request_headers.set,
        [("x-ferry-route".to_owned(), "oip-infer".to_owned())]
    );
    assert_eq!(oip.response_headers.remove, ["server"]);
    assert_eq!(oip.timeout, Some(Duration::from_secs(15)));

    let chat = &inbound.routes[2];
    assert_eq!(chat.timeout, None);
    assert_eq!(chat.prefix_rewrite.as_ref().unwrap().to, "/openai/v1/");

    let legacy = &inbound.routes[3];
    let Some(PathMatch::Regex(r)) = &legacy.matcher.path else {
        panic!("expected a regex");
    };
    assert!(r.is_match("/predictions/mnist"));
    assert!(!r.is_match("/predictions/mnist/extra"));

    let Action::DirectResponse(d) = &inbound.routes[4].action else {
        panic!("expected a direct response");
    };
    assert_eq!(
        (d.status, d.content_type.as_str()),
        (404, "application/json")
    );

    let vllm = config.clusters.iter().find(|c| c.name == "vllm").unwrap();
    assert!(vllm.outlier.is_none());
    assert_eq!(
        vllm.load_report.as_ref().map(|r| r.metric.to_string()),
        Some("named_metrics.kv_cache_usage_perc".to_owned())
    );
    let Endpoints::Dns { names, refresh } = &vllm.endpoints else {
        panic!("expected dns");
    };
    assert_eq!(names[0].port, 8000);
    assert_eq!(*refresh, Duration::from_secs(5));
}

#[test]
fn version_ignores_spelling_but_not_meaning() {
    let base = "apiVersion: ferry/v1\nlisteners:\n  - name: a\n    address: 127.0.0.1:18080\n    routes:\n      - name: r\n        to: TO\n        timeout: 15s\nclusters:\n  - name: up\n    endpoints: [127.0.0.1:18081]\n";
    let short = ferry_config::parse("a", &base.replace("TO", "up")).unwrap();
    let long =
        ferry_config::parse("b", &base.replace("TO", "[{ cluster: up, weight: 1 }]")).unwrap();
    let other = ferry_config::parse("c", &base.replace("TO", "up").replace("15s", "16s")).unwrap();
    assert_eq!(short.version, long.version);
    assert_ne!(short.version, other.version);
    assert_eq!(short.version.len(), 64);
    assert!(short.version.bytes().all(|b| b.is_ascii_hexdigit()));
}

#[test]
fn format_duration_is_exported() {
    assert_eq!(
        ferry_config::format_duration(Duration::from_millis(500)),
        "500ms"
    );
}

#[test]
fn plain_scalars_keep_their_text() {
    let text = "apiVersion: ferry/v1
listeners:
  - name: a
    address: 127.0.0.1:18080
    routes:
      - name: r
        match:
          model: { name: !!str 7, version: 2.10 }
          headers: [{ name: x-a, exact: 007, invert: True }]
        to: up
clusters:
  - { name: up, endpoints: [127.0.0.1:18081] }
";
    let config = ferry_config::parse("scalars.yaml", text).unwrap_or_else(|e| panic!("{e}"));
    let m = &config.listeners[0].routes[0].matcher;
    let model = m.model.as_ref().unwrap();
    assert!(matches!(&model.name, StringMatch::Exact(n) if n == "7"));
    assert!(matches!(&model.version, Some(StringMatch::Exact(v)) if v == "2.10"));
    assert!(matches!(&m.headers[0].value, Some(StringMatch::Exact(v)) if v == "007"));
    assert!(m.headers[0].invert);
    assert_round_trips(&config);

    let err = ferry_config::parse(
        "w.yaml",
        &text.replace("to: up", "to: [{ cluster: up, weight: 1.5 }]"),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        r#"w.yaml:10:37: listeners[0].routes[0].to[0].weight: invalid type: string "1.5" (expected an integer)"#
    );
}

/// Every listener gets the slow-client and flood defaults, `/config_dump` spells them out, and a
/// config can switch each one off (`0` / `0s`), which the dump shows as `0` / `0s` again.
#[test]
fn listener_safety_limits_default_on_show_in_the_dump_and_switch_off() {
    let on = ferry_config::parse(
        "on.yaml",
        "apiVersion: ferry/v1\nlisteners:\n  - { name: a, address: 127.0.0.1:1 }\n",
    )
    .unwrap();
    let limits = &on.effective_json["listeners"][0]["limits"];
    assert_eq!(limits["request_headers_timeout"], "10s");
    assert_eq!(limits["idle_timeout"], "5m");
    assert_eq!(limits["max_connections"], 4096);
    assert_eq!(limits["h2_max_concurrent_streams"], 1024);
    assert_eq!(limits["stalled_write_timeout"], "30s");

    let off = ferry_config::parse(
        "off.yaml",
        "apiVersion: ferry/v1\nlisteners:\n  - name: a\n    address: 127.0.0.1:1\n    limits:\n      request_headers_timeout: 0s\n      idle_timeout: 0s\n      max_connections: 0\n      h2_max_concurrent_streams: 0\n      stalled_write_timeout: 0s\n",
    )
    .unwrap();
    let l = &off.listeners[0].limits;
    assert_eq!(l.request_headers_timeout, None);
    assert_eq!(l.idle_timeout, None);
    assert_eq!(l.max_connections, None);
    assert_eq!(l.h2_max_concurrent_streams, None);
    assert_eq!(l.stalled_write_timeout, None);
    let limits = &off.effective_json["listeners"][0]["limits"];
    assert_eq!(limits["max_connections"], 0);
    assert_eq!(limits["h2_max_concurrent_streams"], 0);
    assert_eq!(limits["stalled_write_timeout"], "0s");
    assert_round_trips(&off);

    let set = ferry_config::parse(
        "set.yaml",
        "apiVersion: ferry/v1\nlisteners:\n  - name: a\n    address: 127.0.0.1:1\n    limits: { max_connections: 2, h2_max_concurrent_streams: 8, stalled_write_timeout: 2s }\n",
    )
    .unwrap();
    let l = &set.listeners[0].limits;
    assert_eq!(l.max_connections, NonZeroU32::new(2));
    assert_eq!(l.h2_max_concurrent_streams, NonZeroU32::new(8));
    assert_eq!(l.stalled_write_timeout, Some(Duration::from_secs(2)));
    assert_round_trips(&set);
}

#[test]
fn rollouts_example_hashes_on_session_and_prompt_and_drills_with_a_header() {
    use ferry_config::HashKeyPart;
    let c = load_example("rollouts.yaml");
    let h = c.clusters[0].hash.clone().unwrap();
    assert_eq!(c.clusters[0].lb, LbPolicy::Hash);
    assert_eq!(h.key[0], HashKeyPart::Header("x-session-id".into()));
    assert!(matches!(h.key[1], HashKeyPart::PromptPrefix(n) if n.get() == 2048));
    assert_eq!(h.bounded_load, Some(1.25));
    let f = c.listeners[0].routes[0].fault.clone().unwrap();
    assert_eq!(f.header.as_deref(), Some("x-ferry-fault"));
    assert_eq!(f.abort.unwrap().grpc_status, 14);
    assert_eq!(f.delay.unwrap().fixed, Duration::from_millis(200));
}
