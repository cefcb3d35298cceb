//! The top-level `access_log` list and the per-route `access_log: false`: from file to IR, to
//! the effective config, and every error as `ferry validate` prints it.

use std::path::PathBuf;
use std::time::Duration;

use ferry_config::{AccessLog, AccessLogFormat, Config, FieldLocation};
use serde_json::json;

const FULL: &str = r#"apiVersion: ferry/v1
access_log:
  - path: /dev/stdout
  - path: logs/access.txt
    format: text
    sample: 0.25
    slower_than: 1s
listeners:
  - name: inbound
    address: 127.0.0.1:18080
    routes:
      - name: health
        match: { path: { exact: /health } }
        to: up
        access_log: false
      - name: models
        to: up
clusters:
  - name: up
    endpoints: [127.0.0.1:18081]
"#;

fn parse(text: &str) -> Config {
    ferry_config::parse("conf/routes.yaml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn errors(text: &str) -> Vec<String> {
    match ferry_config::parse("routes.yaml", text) {
        Ok(_) => Vec::new(),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

fn at(line: usize, col: usize, path: &str) -> FieldLocation {
    FieldLocation {
        file: "conf/routes.yaml".into(),
        line,
        col,
        path: path.into(),
    }
}

#[test]
fn sinks_become_the_expected_ir_with_relative_paths_beside_the_file() {
    let config = parse(FULL);
    assert_eq!(
        config.access_log,
        vec![
            AccessLog {
                path: PathBuf::from("/dev/stdout"),
                path_at: at(3, 11, "access_log[0].path"),
                format: AccessLogFormat::Json,
                sample: 1.0,
                slower_than: None,
            },
            AccessLog {
                path: PathBuf::from("conf/logs/access.txt"),
                path_at: at(4, 11, "access_log[1].path"),
                format: AccessLogFormat::Text,
                sample: 0.25,
                slower_than: Some(Duration::from_secs(1)),
            },
        ]
    );
    let routes = &config.listeners[0].routes;
    assert!(!routes[0].access_log, "health is silenced");
    assert!(routes[1].access_log, "a route logs by default");
}

#[test]
fn effective_config_spells_out_defaults_and_the_silenced_route() {
    let config = parse(FULL);
    assert_eq!(
        config.effective_json["access_log"],
        json!([
            { "path": "/dev/stdout", "format": "json", "sample": 1.0 },
            { "path": "conf/logs/access.txt", "format": "text", "sample": 0.25, "slower_than": "1s" },
        ])
    );
    let routes = &config.effective_json["listeners"][0]["routes"];
    assert_eq!(routes[0]["access_log"], json!(false));
    assert!(routes[1].get("access_log").is_none());
}

#[test]
fn absent_means_no_sink_and_no_effective_entry() {
    let config = parse("apiVersion: ferry/v1\n");
    assert!(config.access_log.is_empty());
    assert!(config.effective_json.get("access_log").is_none());
}

#[test]
fn sink_settings_change_the_version() {
    let a = parse(FULL).version;
    let b = parse(&FULL.replace("sample: 0.25", "sample: 0.5")).version;
    assert_ne!(a, b);
}

#[test]
fn every_bad_field_is_reported_at_its_position() {
    let text = r#"apiVersion: ferry/v1
access_log:
  - path: /tmp/a.log
    sample: 1.5
    slower_than: 0s
  - path: ""
    sample: -0.1
  - path: /tmp/a.log
    format: xml
"#;
    assert_eq!(
        errors(text),
        vec![
            r#"routes.yaml:9:13: access_log[2].format: unknown value "xml" (expected json or text)"#
        ]
    );
    let text = text.replace("    format: xml\n", "");
    assert_eq!(
        errors(&text),
        vec![
            r#"routes.yaml:4:13: access_log[0].sample: invalid sample "1.5" (expected a number from 0 to 1, e.g. 0.1)"#,
            r#"routes.yaml:5:18: access_log[0].slower_than: invalid slower_than 0s (expected a duration > 0, e.g. "1s")"#,
            r#"routes.yaml:6:11: access_log[1].path: invalid path "" (expected a file such as "/dev/stdout")"#,
            r#"routes.yaml:7:13: access_log[1].sample: invalid sample "-0.1" (expected a number from 0 to 1, e.g. 0.1)"#,
            r#"routes.yaml:8:11: access_log[2].path: duplicate path "/tmp/a.log" (expected each file once; also used by access_log[0])"#,
        ]
    );
}

#[test]
fn an_empty_list_and_a_non_boolean_route_flag_are_refused() {
    assert_eq!(
        errors("apiVersion: ferry/v1\naccess_log: []\n"),
        vec![
            r#"routes.yaml:2:13: access_log: empty list (expected at least one sink such as {path: /dev/stdout}; omit access_log for none)"#
        ]
    );
    let text = FULL.replace("access_log: false", "access_log: sometimes");
    assert_eq!(
        errors(&text),
        vec![
            r#"routes.yaml:15:21: listeners[0].routes[0].access_log: invalid type: string "sometimes" (expected true or false)"#
        ]
    );
}

#[test]
fn the_shipped_example_logs_everything_but_health_checks() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/access-log.yaml");
    let config = ferry_config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let sinks: Vec<(&str, AccessLogFormat, f64)> = config
        .access_log
        .iter()
        .map(|s| (s.path.to_str().unwrap(), s.format, s.sample))
        .collect();
    assert_eq!(sinks, vec![("/dev/stdout", AccessLogFormat::Json, 1.0)]);
    let silenced: Vec<&str> = config
        .listeners
        .iter()
        .flat_map(|l| &l.routes)
        .filter(|r| !r.access_log)
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(silenced, vec!["health"]);
}
