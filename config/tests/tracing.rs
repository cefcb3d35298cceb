//! The top-level `tracing` block: from file to IR, to the effective config (header values
//! redacted), and every error as `ferry validate` prints it.

use std::time::Duration;

use ferry_config::{Config, Otlp, OtlpProtocol, Propagation, Sampling, Tracing};
use serde_json::json;

// A crate root finds `mod x;` beside itself; these goldens live under tracing/.
#[path = "tracing/errors.rs"]
mod errors;

/// Every tracing setting, in the file format's contract.
const FULL: &str = r#"apiVersion: ferry/v1
tracing:
  otlp:
    endpoint: HTTPS://Collector.Vendor.io/otlp/v1/traces
    protocol: http
    headers: { X-Api-Key: s3cret, x-team: "ml serving" }
    timeout: 250ms
  service_name: resnet-serving
  propagation: [b3multi, w3c, b3]
  sampling:
    ratio: 0.01
    always_errors: true
    slower_than: 1s
  queue: 4096
"#;

fn parse(text: &str) -> Config {
    ferry_config::parse("routes.yaml", text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn full_example_becomes_the_expected_ir() {
    assert_eq!(
        parse(FULL).tracing,
        Some(Tracing {
            otlp: Otlp {
                endpoint: Some("https://collector.vendor.io/otlp/v1/traces".into()),
                protocol: OtlpProtocol::Http,
                headers: vec![
                    ("x-api-key".into(), "s3cret".into()),
                    ("x-team".into(), "ml serving".into()),
                ],
                timeout: Duration::from_millis(250),
            },
            service_name: Some("resnet-serving".into()),
            propagation: vec![Propagation::B3Multi, Propagation::W3c, Propagation::B3],
            sampling: Sampling {
                ratio: 0.01,
                always_errors: true,
                slower_than: Some(Duration::from_secs(1)),
            },
            queue: 4096,
        })
    );
}

#[test]
fn absent_means_no_tracing_and_empty_means_every_default() {
    let none = parse("apiVersion: ferry/v1\n");
    assert_eq!(none.tracing, None);
    assert!(none.effective_json.get("tracing").is_none());
    assert_eq!(ferry_config::default_config().tracing, None);

    let defaults = Tracing {
        otlp: Otlp {
            endpoint: None,
            protocol: OtlpProtocol::Grpc,
            headers: vec![],
            timeout: Duration::from_secs(5),
        },
        service_name: None,
        propagation: vec![Propagation::W3c],
        sampling: Sampling {
            ratio: 1.0,
            always_errors: false,
            slower_than: None,
        },
        queue: 2048,
    };
    assert_eq!(Tracing::default(), defaults);
    for text in [
        "tracing: {}",
        "tracing: { otlp: {}, sampling: {} }",
        "tracing:\n  otlp:\n    protocol: grpc\n  sampling: { ratio: 1 }",
    ] {
        let config = parse(&format!("apiVersion: ferry/v1\n{text}\n"));
        assert_eq!(config.tracing.as_ref(), Some(&defaults), "{text}");
        assert_eq!(
            config.effective_json["tracing"],
            json!({
                "otlp": { "protocol": "grpc", "headers": {}, "timeout": "5s" },
                "propagation": ["w3c"],
                "sampling": { "ratio": 1.0, "always_errors": false },
                "queue": 2048,
            }),
            "{text}"
        );
    }
}

#[test]
fn ratios_and_endpoints_in_every_spelling() {
    for (ratio, want) in [
        ("0", 0.0),
        ("1", 1.0),
        ("0.5", 0.5),
        ("\"0.25\"", 0.25),
        ("1e-4", 1e-4),
    ] {
        let config = parse(&format!(
            "apiVersion: ferry/v1\ntracing: {{ sampling: {{ ratio: {ratio} }} }}\n"
        ));
        assert_eq!(config.tracing.unwrap().sampling.ratio, want, "{ratio}");
    }
    for (endpoint, protocol, want) in [
        ("http://127.0.0.1:4317", "grpc", "http://127.0.0.1:4317"),
        ("http://[::1]:4317/", "grpc", "http://[::1]:4317/"),
        ("https://otel.ns.svc", "grpc", "https://otel.ns.svc"),
        (
            "http://otel:4318/v1/traces",
            "http",
            "http://otel:4318/v1/traces",
        ),
    ] {
        let config = parse(&format!(
            "apiVersion: ferry/v1\ntracing: {{ otlp: {{ endpoint: \"{endpoint}\", protocol: {protocol} }} }}\n"
        ));
        assert_eq!(
            config.tracing.unwrap().otlp.endpoint.as_deref(),
            Some(want),
            "{endpoint}"
        );
    }
}

#[test]
fn effective_json_shows_defaults_and_hides_header_values() {
    let config = parse(FULL);
    assert_eq!(
        config.effective_json["tracing"],
        json!({
            "otlp": {
                "endpoint": "https://collector.vendor.io/otlp/v1/traces",
                "protocol": "http",
                "headers": { "x-api-key": "<redacted>", "x-team": "<redacted>" },
                "timeout": "250ms",
            },
            "service_name": "resnet-serving",
            "propagation": ["b3multi", "w3c", "b3"],
            "sampling": { "ratio": 0.01, "always_errors": true, "slower_than": "1s" },
            "queue": 4096,
        })
    );
    let text = config.effective_json.to_string();
    assert!(
        !text.contains("s3cret") && !text.contains("ml serving"),
        "{text}"
    );
    // Top-level keys keep the file's order.
    let keys: Vec<&String> = config.effective_json.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "apiVersion",
            "admin",
            "runtime",
            "tracing",
            "listeners",
            "clusters"
        ]
    );
}

#[test]
fn the_effective_config_parses_back_to_the_same_tracing() {
    let no_headers = FULL.replace(
        "    headers: { X-Api-Key: s3cret, x-team: \"ml serving\" }\n",
        "",
    );
    let config = parse(&no_headers);
    let again = parse(&config.effective_json.to_string());
    assert_eq!(again.tracing, config.tracing);
    assert_eq!(again.effective_json, config.effective_json);
    assert_eq!(again.version, config.version);
    // With headers, only the hidden values differ.
    let config = parse(FULL);
    let again = parse(&config.effective_json.to_string());
    let values: Vec<&str> = again
        .tracing
        .as_ref()
        .unwrap()
        .otlp
        .headers
        .iter()
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(values, ["<redacted>", "<redacted>"]);
    assert_eq!(again.effective_json, config.effective_json);
}

#[test]
fn a_new_header_value_is_a_new_version() {
    let old = parse(FULL);
    let new = parse(&FULL.replace("s3cret", "rotated"));
    assert_eq!(old.effective_json, new.effective_json);
    assert_ne!(old.version, new.version);
}

#[test]
fn a_tracing_edit_is_a_new_version() {
    let old = parse(FULL);
    for (from, to) in [
        ("ratio: 0.01", "ratio: 0.02"),
        ("queue: 4096", "queue: 4095"),
        ("[b3multi, w3c, b3]", "[w3c, b3multi, b3]"),
        ("always_errors: true", "always_errors: false"),
    ] {
        assert_ne!(parse(&FULL.replace(from, to)).version, old.version, "{to}");
    }
    assert_ne!(
        parse("apiVersion: ferry/v1\ntracing: {}\n").version,
        parse("apiVersion: ferry/v1\n").version
    );
}

#[test]
fn examples_tracing_yaml_becomes_the_expected_ir() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/tracing.yaml");
    let config = ferry_config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        config.tracing,
        Some(Tracing {
            otlp: Otlp {
                endpoint: Some("http://otel-collector.observability.svc.cluster.local:4317".into()),
                protocol: OtlpProtocol::Grpc,
                headers: vec![],
                timeout: Duration::from_secs(5),
            },
            service_name: Some("resnet-serving".into()),
            propagation: vec![Propagation::W3c, Propagation::B3],
            sampling: Sampling {
                ratio: 0.05,
                always_errors: true,
                slower_than: Some(Duration::from_secs(2)),
            },
            queue: 2048,
        })
    );
}
