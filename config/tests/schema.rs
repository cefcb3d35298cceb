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

/// Object keys, skipping the header maps (their keys are header names, not fields).
fn collect_keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                out.insert(k.clone());
                if k != "set" && k != "add" {
                    collect_keys(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, out)),
        _ => {}
    }
}
