//! The dashboard and the rules against a real Prometheus scraping a real ferry under traffic:
//! every template variable offers the real namespace, pod, routes and models; every panel
//! query, variables filled in, returns series; Prometheus loads the rules file with every rule
//! healthy, every alert's signal returns series, and on this traffic exactly the alerts that
//! should fire do (the 50 %-failing model, a refused reload), while the rest stay quiet.

use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::prometheus::{Prometheus, Target};
use ferry_integration::{eventually, workspace};
use serde_json::Value;

use crate::panels::{self, signal, substitute};
use crate::traffic::{MODELS, ROUTES, Scene};

const NAMESPACE: &str = "ferry-test";
const POD: &str = "ferry-0";
/// Long enough for a few scrapes after the first traffic, and for a span export to time out.
const PATIENCE: Duration = Duration::from_secs(60);

/// Grafana's value of a multi-value variable with these values selected.
fn regex(values: &[&str]) -> String {
    format!("({})", values.join("|"))
}

/// The label set of a result, for messages.
fn labels(series: &Value) -> String {
    series["metric"].to_string()
}

/// The value of a vector element.
fn value(series: &Value) -> f64 {
    series["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_panel_and_alert_returns_series_from_a_real_prometheus() -> anyhow::Result<()> {
    let scene = Scene::start().await?;
    let _load = scene.load()?;
    let rules = workspace::root().join("charts/ferry/rules/ferry-rules.yaml");
    let target = Target {
        admin: scene.ferry.admin(),
        namespace: NAMESPACE.into(),
        pod: POD.into(),
    };
    let prom = Prometheus::start(&[target], &[rules]).await?;

    // A reload of a broken file: refused, counted, the old config keeps serving. Only after
    // Prometheus has seen the counter at 0: a counter first scraped at 1 has no increase.
    eventually(PATIENCE, || async {
        let zero = prom
            .query("ferry_config_reload_failures_total == 0")
            .await?;
        anyhow::ensure!(zero.len() == 1, "no scrape of the reload counter yet");
        Ok(())
    })
    .await?;
    let dir = scene.ferry.config()?;
    dir.write("apiVersion: ferry/v1\nlisteners: not-a-list\n")
        .await?;

    let dashboard = panels::load()?;
    let (routes, models) = (regex(&ROUTES), regex(&MODELS));
    let values = [
        ("namespace", NAMESPACE),
        ("pod", POD),
        ("route", routes.as_str()),
        ("model", models.as_str()),
        ("datasource", "prometheus"),
    ];

    // The variables, as Grafana fills its drop-downs.
    let expected: [(&str, &[&str]); 4] = [
        ("namespace", &[NAMESPACE]),
        ("pod", &[POD]),
        ("route", &ROUTES),
        ("model", &MODELS),
    ];
    for var in panels::variables(&dashboard)? {
        let selector = substitute(&var.selector, &values);
        let want = expected
            .iter()
            .find(|(name, _)| *name == var.name)
            .map(|(_, w)| *w)
            .with_context(|| format!("unexpected variable {}", var.name))?;
        eventually(PATIENCE, || async {
            let got = prom.label_values(&selector, &var.label).await?;
            for w in want {
                anyhow::ensure!(
                    got.iter().any(|g| g == w),
                    "${}: {w} not in {got:?}",
                    var.name
                );
            }
            Ok(())
        })
        .await?;
    }

    // Every panel query returns series; the first pass waits for the slow ones (a span export
    // timing out, a refused handshake, an ejection) to show up.
    let queries = panels::queries(&dashboard);
    let results = eventually(PATIENCE, || async {
        let mut empty = Vec::new();
        let mut results = Vec::new();
        for q in &queries {
            let expr = substitute(&q.expr, &values);
            let got = prom.query(&expr).await?;
            if got.is_empty() {
                empty.push(format!("{} [{}]: {expr}", q.panel, q.legend));
            }
            results.push(got);
        }
        anyhow::ensure!(
            empty.is_empty(),
            "panel queries without series:\n{}",
            empty.join("\n")
        );
        Ok(results)
    })
    .await
    .with_context(|| format!("prometheus log:\n{}", prom.log()))?;

    // Two panels read as they should: `bge` fails half its calls and `llama` none, and
    // ferry's share of request time is a share.
    let success = queries
        .iter()
        .position(|q| q.panel == "Success rate by model")
        .context("no success-rate panel")?;
    for s in &results[success] {
        let (model, v) = (s["metric"]["model"].as_str().unwrap_or_default(), value(s));
        match model {
            "llama" => assert!(v > 0.99, "llama success rate {v}"),
            "bge" => assert!((0.2..0.8).contains(&v), "bge success rate {v}"),
            other => panic!("unexpected model {other:?}"),
        }
    }
    let share = queries
        .iter()
        .position(|q| q.panel == "ferry's share of request time by route")
        .context("no share panel")?;
    for s in &results[share] {
        let v = value(s);
        assert!(v > 0.0 && v < 1.0, "share {v} for {}", labels(s));
    }

    crate::shots::take(&prom, &queries, &values).await?;
    check_rules(&prom).await
}

/// The rules as Prometheus loaded them: all healthy, every alert's signal has series, and the
/// alerts this traffic should raise are the ones that are active.
async fn check_rules(prom: &Prometheus) -> anyhow::Result<()> {
    let file =
        std::fs::read_to_string(workspace::root().join("charts/ferry/rules/ferry-rules.yaml"))?;
    let defined = file
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("- alert:") || l.starts_with("- record:"))
        .count();
    let rules = eventually(PATIENCE, || async {
        let groups = prom.rule_groups().await?;
        let rules: Vec<Value> = groups
            .iter()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        anyhow::ensure!(
            rules.len() == defined,
            "{} of {defined} rules loaded",
            rules.len()
        );
        for r in &rules {
            anyhow::ensure!(
                r["health"] == "ok",
                "rule {} is {} {}",
                r["name"],
                r["health"],
                r["lastError"]
            );
        }
        Ok(rules)
    })
    .await?;

    for r in &rules {
        let name = r["name"].as_str().unwrap_or_default();
        let query = r["query"].as_str().unwrap_or_default();
        let signal = signal(query).with_context(|| format!("{name}: no threshold in {query}"))?;
        let got = prom.query(signal).await?;
        assert!(!got.is_empty(), "{name}: no series for its signal {signal}");
        // The full expression runs too; which alerts it raises is checked below.
        prom.query(query).await.with_context(|| name.to_owned())?;
    }

    let active = |alerts: &[Value], name: &str| -> Vec<Value> {
        alerts
            .iter()
            .filter(|a| a["labels"]["alertname"] == name)
            .cloned()
            .collect()
    };
    eventually(PATIENCE, || async {
        let alerts = prom.alerts().await?;
        // `for: 5m`: pending, for bge only.
        let errors = active(&alerts, "FerryModelHighErrorRate");
        anyhow::ensure!(errors.len() == 1, "error-rate alerts: {errors:?}");
        assert_eq!(errors[0]["labels"]["model"], "bge");
        assert_eq!(errors[0]["labels"]["namespace"], NAMESPACE);
        assert_eq!(errors[0]["state"], "pending");
        // No `for`: firing at once.
        let reload = active(&alerts, "FerryConfigReloadFailing");
        anyhow::ensure!(reload.len() == 1, "reload alerts: {reload:?}");
        assert_eq!(reload[0]["labels"]["pod"], POD);
        assert_eq!(reload[0]["state"], "firing");
        // A 30-day certificate, millisecond answers: quiet.
        for quiet in [
            "FerryCertificateExpiringSoon",
            "FerryCertificateExpiryImminent",
            "FerryRouteP99High",
        ] {
            assert!(
                active(&alerts, quiet).is_empty(),
                "{quiet} is active: {alerts:?}"
            );
        }
        Ok(())
    })
    .await
}
