//! The JSON Schema is valid JSON describing the file, and docs/config.md documents every field.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

/// Every property name anywhere in a schema (top level and all `$defs`).
fn property_names(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                out.extend(props.keys().cloned());
            }
            for v in map.values() {
                property_names(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| property_names(v, out)),
        _ => {}
    }
}

#[test]
fn schema_is_json_and_names_the_top_level_keys() {
    let schema = ferry_config::json_schema();
    let text = serde_json::to_string_pretty(&schema).unwrap();
    let back: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back, schema);
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    assert!(
        schema["$schema"]
            .as_str()
            .unwrap()
            .contains("json-schema.org")
    );
    let top: BTreeSet<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        top,
        BTreeSet::from([
            "apiVersion",
            "admin",
            "runtime",
            "identity",
            "redis",
            "tracing",
            "access_log",
            "listeners",
            "clusters"
        ])
    );
    assert_eq!(schema["required"], serde_json::json!(["apiVersion"]));
    let defs = schema["$defs"].as_object().unwrap();
    for name in ["Listener", "Route", "Cluster", "DurationText"] {
        assert!(defs.contains_key(name), "missing $defs/{name}");
    }
    assert!(defs["DurationText"]["pattern"].is_string());
    // Every $ref resolves.
    let refs = text
        .match_indices("\"#/$defs/")
        .map(|(i, _)| &text[i + 9..])
        .map(|rest| &rest[..rest.find('"').unwrap()]);
    for r in refs {
        assert!(defs.contains_key(r), "dangling $ref {r}");
    }
}

#[test]
fn every_schema_field_is_documented() {
    let docs_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md");
    let docs = std::fs::read_to_string(&docs_path).unwrap();
    let mut names = BTreeSet::new();
    property_names(&ferry_config::json_schema(), &mut names);
    assert!(names.len() > 40, "suspiciously few fields: {names:?}");
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !docs.contains(&format!("`{n}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/config.md does not mention {missing:?}"
    );
}

#[test]
fn every_key_of_the_effective_config_is_in_the_schema() {
    let mut names = BTreeSet::new();
    property_names(&ferry_config::json_schema(), &mut names);
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/full.yaml");
    let config = ferry_config::load(&full).unwrap();
    let mut keys = BTreeSet::new();
    collect_keys(&config.effective_json, &mut keys);
    let unknown: Vec<&String> = keys.iter().filter(|k| !names.contains(*k)).collect();
    assert!(
        unknown.is_empty(),
        "effective config keys not in schema: {unknown:?}"
    );
}

/// Object keys, skipping header maps (keyed by header names: `set`, `add`, a mapping `headers`)
/// and rate limit overrides' `match` (keyed by key parts such as `header:x-tenant`).
fn collect_keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            let is_override = map.contains_key("match")
                && (map.contains_key("requests") || map.contains_key("tokens"));
            for (k, v) in map {
                out.insert(k.clone());
                let header_map = k == "set" || k == "add" || (k == "headers" && v.is_object());
                let key_parts = is_override && k == "match";
                if !header_map && !key_parts {
                    collect_keys(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, out)),
        _ => {}
    }
}

#[test]
fn tls_and_authorization_are_in_the_schema() {
    let schema = ferry_config::json_schema();
    let defs = schema["$defs"].as_object().unwrap();
    let props = |def: &str| -> BTreeSet<String> {
        defs[def]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("$defs/{def} has no properties"))
            .keys()
            .cloned()
            .collect()
    };
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(props("Identity"), set(&["cert", "key", "trust"]));
    assert_eq!(
        props("ListenerTls"),
        set(&["mode", "peers", "handshake_timeout"])
    );
    assert_eq!(props("Authorization"), set(&["default", "rules"]));
    assert_eq!(props("AuthzRule"), set(&["allow", "models"]));
    assert_eq!(
        props("IdentityMatcher"),
        set(&["exact", "prefix", "trust_domain"])
    );
    assert_eq!(props("ModelNameMatcher"), set(&["exact", "prefix"]));
    assert_eq!(props("ClusterTls"), set(&["mode", "server", "sni", "ca"]));
    for (def, field) in [
        ("Listener", "tls"),
        ("Listener", "authorization"),
        ("Route", "authorization"),
        ("Cluster", "tls"),
    ] {
        assert!(props(def).contains(field), "$defs/{def} lacks {field}");
    }
    assert_eq!(defs["ClusterTls"]["required"], serde_json::json!(["mode"]));
    assert_eq!(defs["AuthzRule"]["properties"]["allow"]["minItems"], 1);
    assert_eq!(defs["IdentityMatcher"]["maxProperties"], 1);
    for def in [
        "Identity",
        "ListenerTls",
        "Authorization",
        "AuthzRule",
        "ClusterTls",
    ] {
        assert_eq!(defs[def]["additionalProperties"], false, "{def}");
    }
}

#[test]
fn every_key_of_an_effective_tls_config_is_in_the_schema() {
    let text = "apiVersion: ferry/v1
identity: { cert: c.pem, key: k.pem, trust: ca.pem }
listeners:
  - name: in
    address: 127.0.0.1:1
    tls: { mode: strict, peers: { prefix: \"spiffe://td/ns/a/\" } }
    authorization:
      default: deny
      rules: [{ allow: [{ trust_domain: td }], models: [{ prefix: m }] }]
    routes:
      - name: r
        to: mesh
        authorization: { rules: [{ allow: [{ exact: spiffe://td/ns/a/sa/b }] }] }
clusters:
  - { name: mesh, endpoints: [127.0.0.1:2], tls: { mode: mesh, server: { exact: spiffe://td/x }, sni: a.b } }
  - { name: web, endpoints: [127.0.0.1:3], tls: { mode: server, sni: a.b, ca: [ca.pem] } }
";
    let config = ferry_config::parse("tls.yaml", text).unwrap();
    let mut names = BTreeSet::new();
    property_names(&ferry_config::json_schema(), &mut names);
    let mut keys = BTreeSet::new();
    collect_keys(&config.effective_json, &mut keys);
    for key in ["identity", "tls", "authorization", "peers", "server", "ca"] {
        assert!(keys.contains(key), "effective config lacks {key}");
    }
    let unknown: Vec<&String> = keys.iter().filter(|k| !names.contains(*k)).collect();
    assert!(
        unknown.is_empty(),
        "effective config keys not in schema: {unknown:?}"
    );
}

#[test]
fn limits_are_in_the_schema() {
    let schema = ferry_config::json_schema();
    let defs = schema["$defs"].as_object().unwrap();
    let props = |def: &str| -> BTreeSet<String> {
        defs[def]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("$defs/{def} has no properties"))
            .keys()
            .cloned()
            .collect()
    };
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(props("Redis"), set(&["address", "timeout", "on_failure"]));
    assert_eq!(
        props("RateLimit"),
        set(&[
            "name",
            "requests",
            "tokens",
            "per",
            "burst",
            "key",
            "scope",
            "mode",
            "charge",
            "fallback",
            "request_usage",
            "overrides"
        ])
    );
    assert_eq!(props("Override"), set(&["match", "requests", "tokens"]));
    assert_eq!(
        props("Concurrency"),
        set(&["max", "queue", "queue_timeout", "adaptive"])
    );
    for (def, field) in [("Route", "rate_limit"), ("Route", "concurrency")] {
        assert!(props(def).contains(field), "$defs/{def} lacks {field}");
    }
    assert_eq!(defs["Redis"]["required"], serde_json::json!(["address"]));
    assert_eq!(defs["RateLimit"]["required"], serde_json::json!(["per"]));
    assert_eq!(defs["Concurrency"]["required"], serde_json::json!(["max"]));
    assert_eq!(defs["Override"]["required"], serde_json::json!(["match"]));
    assert!(defs["KeyPart"]["pattern"].is_string());
    assert_eq!(defs["KeyValues"]["minProperties"], 1);
    for def in ["Redis", "RateLimit", "Override", "Concurrency"] {
        assert_eq!(defs[def]["additionalProperties"], false, "{def}");
    }
    for (def, values) in [
        ("OnFailure", &["allow", "deny"][..]),
        ("Scope", &["local", "global"]),
        ("LimitMode", &["enforce", "shadow"]),
        ("TokenCharge", &["total", "prompt", "completion"]),
    ] {
        let text = defs[def].to_string();
        for v in values {
            assert!(text.contains(&format!("\"{v}\"")), "$defs/{def} lacks {v}");
        }
    }
}

#[test]
fn every_key_of_an_effective_limits_config_is_in_the_schema() {
    let text = "apiVersion: ferry/v1
redis: { address: \"redis://u:p@r:1/0\", timeout: 1s, on_failure: deny }
listeners:
  - name: in
    address: 127.0.0.1:1
    routes:
      - name: r
        to: up
        rate_limit:
          - { name: a, requests: 1, per: 1s, burst: 2, key: [model, client], mode: shadow,
              overrides: [{ match: { model: m }, requests: 3 }] }
          - { tokens: 5, per: 1m, key: [header:x-tenant], scope: global, charge: prompt,
              fallback: 1, request_usage: false, overrides: [{ match: { header:x-tenant: t }, tokens: 9 }] }
        concurrency: { max: 2, queue: 3, queue_timeout: 2s, adaptive: true }
clusters:
  - { name: up, endpoints: [127.0.0.1:2] }
";
    let config = ferry_config::parse("limits.yaml", text).unwrap();
    let mut names = BTreeSet::new();
    property_names(&ferry_config::json_schema(), &mut names);
    let mut keys = BTreeSet::new();
    collect_keys(&config.effective_json, &mut keys);
    for key in [
        "redis",
        "rate_limit",
        "concurrency",
        "overrides",
        "request_usage",
        "queue_timeout",
    ] {
        assert!(keys.contains(key), "effective config lacks {key}");
    }
    let unknown: Vec<&String> = keys.iter().filter(|k| !names.contains(*k)).collect();
    assert!(
        unknown.is_empty(),
        "effective config keys not in schema: {unknown:?}"
    );
}

#[test]
fn tracing_is_in_the_schema() {
    let schema = ferry_config::json_schema();
    let defs = schema["$defs"].as_object().unwrap();
    let props = |def: &str| -> BTreeSet<String> {
        defs[def]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("$defs/{def} has no properties"))
            .keys()
            .cloned()
            .collect()
    };
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        props("Tracing"),
        set(&["otlp", "service_name", "propagation", "sampling", "queue"])
    );
    assert_eq!(
        props("Otlp"),
        set(&["endpoint", "protocol", "headers", "timeout"])
    );
    assert_eq!(
        props("Sampling"),
        set(&["ratio", "always_errors", "slower_than"])
    );
    for def in ["Tracing", "Otlp", "Sampling"] {
        assert_eq!(defs[def]["additionalProperties"], false, "{def}");
        assert!(defs[def].get("required").is_none(), "{def}: all optional");
    }
    for (def, values) in [
        ("OtlpProtocol", &["grpc", "http"][..]),
        ("Propagation", &["w3c", "b3", "b3multi"]),
    ] {
        let text = defs[def].to_string();
        for v in values {
            assert!(text.contains(&format!("\"{v}\"")), "$defs/{def} lacks {v}");
        }
    }
    let tracing = &defs["Tracing"]["properties"];
    assert_eq!(tracing["propagation"]["minItems"], 1);
    assert_eq!(tracing["propagation"]["uniqueItems"], true);
    assert_eq!(tracing["queue"]["minimum"], 1);
    assert_eq!(tracing["queue"]["maximum"], 1_048_576);
    assert!(defs["Otlp"]["properties"]["endpoint"]["pattern"].is_string());
    assert_eq!(defs["RatioText"]["type"], "number");
    assert_eq!(defs["RatioText"]["maximum"], 1);
    // Every field says what it does.
    for def in ["Tracing", "Otlp", "Sampling"] {
        for (name, field) in defs[def]["properties"].as_object().unwrap() {
            assert!(
                field["description"].is_string(),
                "$defs/{def}.{name} has no description"
            );
        }
    }
}

#[test]
fn every_key_of_an_effective_tracing_config_is_in_the_schema() {
    let text = "apiVersion: ferry/v1
tracing:
  otlp: { endpoint: \"http://c:4318/v1/traces\", protocol: http, headers: { x-api-key: k }, timeout: 1s }
  service_name: s
  propagation: [w3c, b3, b3multi]
  sampling: { ratio: 0.5, always_errors: true, slower_than: 1s }
  queue: 10
";
    let config = ferry_config::parse("tracing.yaml", text).unwrap();
    let mut names = BTreeSet::new();
    property_names(&ferry_config::json_schema(), &mut names);
    let mut keys = BTreeSet::new();
    collect_keys(&config.effective_json, &mut keys);
    for key in [
        "tracing",
        "otlp",
        "endpoint",
        "headers",
        "service_name",
        "sampling",
        "slower_than",
        "queue",
    ] {
        assert!(keys.contains(key), "effective config lacks {key}");
    }
    assert!(!keys.contains("x-api-key"), "header names are not fields");
    let unknown: Vec<&String> = keys.iter().filter(|k| !names.contains(*k)).collect();
    assert!(
        unknown.is_empty(),
        "effective config keys not in schema: {unknown:?}"
    );
}

#[test]
fn listener_limits_are_in_the_schema() {
    let schema = ferry_config::json_schema();
    let limits = &schema["$defs"]["ListenerLimits"]["properties"];
    for field in [
        "request_headers_timeout",
        "idle_timeout",
        "max_connections",
        "h2_max_concurrent_streams",
        "stalled_write_timeout",
    ] {
        assert!(limits[field].is_object(), "ListenerLimits lacks {field}");
    }
    assert_eq!(limits["max_connections"]["minimum"], 0);
}
