//! The chart's monitoring objects through the real helm and kubernetes-validate: off by
//! default; on, a ConfigMap that Grafana's sidecar picks up carrying the dashboard file byte for
//! byte, and a PrometheusRule carrying the rules file's groups plus the per-route thresholds
//! from values, which promtool accepts as a rules file; `helm lint --strict` and
//! kubernetes-validate clean both ways; a threshold that is not a number refused.

use ferry_integration::chart::{Chart, of_kind};
use ferry_integration::prometheus::promtool;
use ferry_integration::workspace;
use serde_json::{Value, json};

/// The recording rule a per-route p99 threshold becomes.
const THRESHOLD: &str = "ferry:route_p99_threshold_seconds";

const ON: &[&str] = &[
    "--set",
    "grafana.dashboard.enabled=true",
    "--set",
    "grafana.dashboard.annotations.grafana_folder=ferry",
    "--set",
    "prometheusRule.enabled=true",
    "--set",
    "prometheusRule.additionalLabels.release=kube-prometheus-stack",
    // One threshold as helm's --set hands it (a string), one as a number.
    "--set",
    "prometheusRule.routeP99ThresholdSeconds.chat=0.5",
    "--set-json",
    "prometheusRule.routeP99ThresholdSeconds.batch=10",
];

/// Renders with `flags`, checks lint and kubernetes-validate, and returns the documents.
async fn render(chart: &Chart, name: &str, flags: &[&str]) -> anyhow::Result<Vec<Value>> {
    chart.lint(flags).await?;
    let text = chart.template(flags).await?.map_err(anyhow::Error::msg)?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join(format!("{name}.yaml"));
    tokio::fs::write(&file, &text).await?;
    chart.kubernetes_validate(&file).await?;
    chart.parse_yaml(&text).await
}

fn dashboards(docs: &[Value]) -> Vec<&Value> {
    of_kind(docs, "ConfigMap")
        .into_iter()
        .filter(|cm| cm["metadata"]["labels"]["grafana_dashboard"] == "1")
        .collect()
}

#[tokio::test]
async fn the_chart_ships_the_dashboard_and_rules_only_when_asked() -> anyhow::Result<()> {
    let chart = Chart::tools().await?;
    let off = render(&chart, "off", &[]).await?;
    assert!(dashboards(&off).is_empty());
    assert!(of_kind(&off, "PrometheusRule").is_empty());

    let on = render(&chart, "on", ON).await?;
    let maps = dashboards(&on);
    assert_eq!(maps.len(), 1);
    assert_eq!(
        maps[0]["metadata"]["annotations"]["grafana_folder"],
        "ferry"
    );
    let shipped: Value = serde_json::from_str(maps[0]["data"]["ferry.json"].as_str().unwrap())?;
    let file =
        std::fs::read_to_string(workspace::root().join("charts/ferry/dashboards/ferry.json"))?;
    assert_eq!(shipped, serde_json::from_str::<Value>(&file)?);

    let rules = of_kind(&on, "PrometheusRule");
    assert_eq!(rules.len(), 1);
    let rule = rules[0];
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(
        rule["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    let text =
        std::fs::read_to_string(workspace::root().join("charts/ferry/rules/ferry-rules.yaml"))?;
    let source = chart.parse_yaml(&text).await?;
    let groups = rule["spec"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(
        groups[0], source[0]["groups"][0],
        "the rules file, unchanged"
    );
    assert_eq!(
        groups[1],
        json!({ "name": "ferry-route-thresholds", "rules": [
            {
                "record": THRESHOLD,
                "expr": r#"label_replace(vector(10), "route", "batch", "", "")"#,
            },
            {
                "record": THRESHOLD,
                "expr": r#"label_replace(vector(0.5), "route", "chat", "", "")"#,
            },
        ]})
    );
    // The PrometheusRule's spec is a rules file Prometheus accepts, thresholds included.
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("rendered.json"), rule["spec"].to_string())?;
    let out = promtool(dir.path(), &["check", "rules", "rendered.json"]).await?;
    assert!(
        out.status.success(),
        "promtool check rules on the PrometheusRule spec:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let refused = chart
        .template(&["--set", "prometheusRule.routeP99ThresholdSeconds.chat=fast"])
        .await?;
    let err = refused.expect_err("a threshold that is not a number was accepted");
    assert!(err.contains("routeP99ThresholdSeconds"), "{err}");
    Ok(())
}
