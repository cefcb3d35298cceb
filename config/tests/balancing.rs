//! `clusters[].slow_start`: parsed, checked with positions, shown in the effective config.

fn config(slow_start: &str) -> String {
    format!(
        "apiVersion: ferry/v1\nlisteners:\n  - name: main\n    address: 127.0.0.1:18080\n    routes:\n      - name: r\n        to: up\nclusters:\n  - name: up\n    endpoints: [127.0.0.1:18081]\n    slow_start: {slow_start}\n"
    )
}

fn errors(text: &str) -> Vec<String> {
    match ferry_config::parse("routes.yaml", text) {
        Ok(_) => panic!("expected errors, the config parsed:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

#[test]
fn slow_start_is_parsed_and_shown_with_its_default_share() {
    let c = ferry_config::parse("routes.yaml", &config("{ window: 60s }")).unwrap();
    let s = c.clusters[0].slow_start.clone().unwrap();
    assert_eq!(s.window, std::time::Duration::from_secs(60));
    assert_eq!(s.initial, 0.1);
    assert_eq!(
        c.effective_json["clusters"][0]["slow_start"],
        serde_json::json!({ "window": "1m", "initial": "10%" })
    );
    let c = ferry_config::parse("routes.yaml", &config("{ window: 30s, initial: 25% }")).unwrap();
    assert_eq!(c.clusters[0].slow_start.as_ref().unwrap().initial, 0.25);
    let c = ferry_config::parse(
        "routes.yaml",
        &config("null").replace("    slow_start: null\n", ""),
    )
    .unwrap();
    assert!(c.clusters[0].slow_start.is_none());
    assert!(c.effective_json["clusters"][0].get("slow_start").is_none());
}

#[test]
fn slow_start_errors_carry_positions() {
    assert_eq!(
        errors(&config("{ window: 0s }")),
        [
            r#"routes.yaml:11:27: clusters[0].slow_start.window: zero slow-start window (expected e.g. "60s"; omit slow_start to turn it off)"#
        ]
    );
    assert_eq!(
        errors(&config("{ window: 10s, initial: 0% }")),
        [
            r#"routes.yaml:11:41: clusters[0].slow_start.initial: 0% would never send the endpoint a request (expected e.g. "10%")"#
        ]
    );
    let missing = errors(&config("{ initial: 10% }"));
    assert!(
        missing[0].starts_with("routes.yaml:11:") && missing[0].contains("window"),
        "{missing:?}"
    );
}
