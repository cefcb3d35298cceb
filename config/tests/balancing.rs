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

fn lb_config(lb: &str) -> String {
    config("{ window: 60s }").replace(
        "    slow_start: { window: 60s }\n",
        &format!("    lb: {lb}\n"),
    )
}

#[test]
fn lb_takes_a_policy_name_or_an_object_with_a_load_report() {
    use ferry_config::{LbPolicy, LoadMetric};
    let c = ferry_config::parse("routes.yaml", &lb_config("round-robin")).unwrap();
    assert_eq!(c.clusters[0].lb, LbPolicy::RoundRobin);
    assert!(c.clusters[0].load_report.is_none());
    assert_eq!(c.effective_json["clusters"][0]["lb"], "round-robin");

    let c = ferry_config::parse(
        "routes.yaml",
        &lb_config(
            "{ policy: p2c-ewma, load_report: { metric: named_metrics.kv_cache_usage_perc, weight: 2 } }",
        ),
    )
    .unwrap();
    let r = c.clusters[0].load_report.clone().unwrap();
    assert_eq!(c.clusters[0].lb, LbPolicy::P2cEwma);
    assert_eq!(r.metric, LoadMetric::Named("kv_cache_usage_perc".into()));
    assert_eq!(r.weight, 2.0);
    assert_eq!(
        c.effective_json["clusters"][0]["lb"],
        serde_json::json!({ "policy": "p2c-ewma", "load_report": { "metric": "named_metrics.kv_cache_usage_perc", "weight": 2.0 } })
    );

    // The policy defaults to p2c-ewma, the weight to 1; every metric form parses.
    for (text, metric) in [
        ("cpu_utilization", LoadMetric::CpuUtilization),
        ("mem_utilization", LoadMetric::MemUtilization),
        (
            "application_utilization",
            LoadMetric::ApplicationUtilization,
        ),
        ("rps_fractional", LoadMetric::RpsFractional),
        ("eps", LoadMetric::Eps),
        (
            "named_metrics.ferry_inflight",
            LoadMetric::Named("ferry_inflight".into()),
        ),
        ("utilization.gpu", LoadMetric::Utilization("gpu".into())),
        (
            "request_cost.tokens",
            LoadMetric::RequestCost("tokens".into()),
        ),
    ] {
        let c = ferry_config::parse(
            "routes.yaml",
            &lb_config(&format!("{{ load_report: {{ metric: {text} }} }}")),
        )
        .unwrap();
        assert_eq!(c.clusters[0].lb, LbPolicy::P2cEwma);
        let r = c.clusters[0].load_report.clone().unwrap();
        assert_eq!((r.metric, r.weight), (metric, 1.0), "{text}");
    }
}

#[test]
fn lb_load_report_errors_carry_positions() {
    assert_eq!(
        errors(&lb_config("{ load_report: { metric: kv_cache } }")),
        [
            r#"routes.yaml:11:34: clusters[0].lb.load_report.metric: unknown load-report metric "kv_cache" (expected cpu_utilization, mem_utilization, application_utilization, rps_fractional, eps, or named_metrics.<name>, utilization.<name>, request_cost.<name>)"#
        ]
    );
    assert_eq!(
        errors(&lb_config(
            "{ load_report: { metric: named_metrics.x, weight: 0 } }"
        )),
        [
            r#"routes.yaml:11:59: clusters[0].lb.load_report.weight: invalid weight "0" (expected a finite number > 0, e.g. 1.0)"#
        ]
    );
    for bad in [".nan", "1e999", "inf", "-1.5", "x"] {
        let e = errors(&lb_config(&format!(
            "{{ load_report: {{ metric: eps, weight: {bad} }} }}"
        )));
        assert_eq!(
            e,
            [format!(
                "routes.yaml:11:47: clusters[0].lb.load_report.weight: invalid weight {bad:?} (expected a finite number > 0, e.g. 1.0)"
            )]
        );
    }
    assert_eq!(
        errors(&lb_config(
            "{ policy: round-robin, load_report: { metric: eps } }"
        )),
        [
            r#"routes.yaml:11:45: clusters[0].lb.load_report: round-robin does not read load reports (expected policy: p2c-ewma, or no load_report)"#
        ]
    );
    // Unknown fields and policies inside the long form are found where they are.
    let unknown = errors(&lb_config("{ policy: random }"));
    assert!(
        unknown[0].starts_with("routes.yaml:11:") && unknown[0].contains("random"),
        "{unknown:?}"
    );
    let unknown = errors(&lb_config("{ load_report: { metric: eps, wieght: 1 } }"));
    assert!(unknown[0].contains("wieght"), "{unknown:?}");
}

#[test]
fn route_load_report_is_parsed_and_refused_on_a_direct_response() {
    let text = config("{ window: 60s }").replace(
        "        to: up\n",
        "        to: up\n        load_report: { report: true, strip: true }\n",
    );
    let c = ferry_config::parse("routes.yaml", &text).unwrap();
    let r = &c.listeners[0].routes[0].load_report;
    assert!(r.report && r.strip);
    assert_eq!(
        c.effective_json["listeners"][0]["routes"][0]["load_report"],
        serde_json::json!({ "report": true, "strip": true })
    );
    let text = config("{ window: 60s }").replace(
        "        to: up\n",
        "        direct_response: { status: 200 }\n        load_report: { report: true }\n",
    );
    let e = errors(&text);
    assert!(
        e.iter().any(|l| l.starts_with(
            "routes.yaml:8:22: listeners[0].routes[0].load_report: a direct_response route"
        )),
        "{e:?}"
    );
}
