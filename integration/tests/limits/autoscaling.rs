//! The chart's optional KEDA ScaledObject (`autoscaling.keda`): absent by default (the kind is
//! a CRD that clusters without KEDA reject), rendered for the named Deployment when enabled,
//! refused without one, and its Prometheus queries name gauges the real ferry exports with the
//! labels they select on. helm and a YAML parser come from the chart tests' pinned installer
//! ([`Chart`]), so a missing tool fails here too.

use anyhow::Context as _;
use ferry_integration::chart::{Chart, of_kind};
use ferry_integration::{Admin, Gate, HttpClient, eventually};
use serde_json::json;

use crate::support::{LISTENER, PATIENCE, get, one_route, start};

#[tokio::test]
async fn the_chart_renders_a_keda_scaled_object_only_when_asked() -> anyhow::Result<()> {
    let chart = Chart::tools().await?;
    let default = chart.render(&[]).await?.map_err(anyhow::Error::msg)?;
    assert!(!default.is_empty());
    assert!(
        of_kind(&default, "ScaledObject").is_empty(),
        "off by default"
    );

    let enabled = chart
        .render(&[
            "autoscaling.keda.enabled=true",
            "autoscaling.keda.deployment=vllm",
            "autoscaling.keda.namespace=models",
            "autoscaling.keda.route=chat",
            "autoscaling.keda.maxReplicas=20",
        ])
        .await?
        .map_err(anyhow::Error::msg)?;
    let scaled = of_kind(&enabled, "ScaledObject");
    assert_eq!(scaled.len(), 1, "{enabled:?}");
    let so = scaled[0];
    assert_eq!(so["apiVersion"], "keda.sh/v1alpha1");
    assert_eq!(so["metadata"]["namespace"], "models");
    assert_eq!(
        so["spec"]["scaleTargetRef"],
        json!({ "apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm" })
    );
    assert_eq!(
        (
            &so["spec"]["minReplicaCount"],
            &so["spec"]["maxReplicaCount"]
        ),
        (&json!(1), &json!(20))
    );
    let triggers = so["spec"]["triggers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let queries: Vec<(&str, &str)> = triggers
        .iter()
        .map(|t| {
            assert_eq!(t["type"], "prometheus", "{t}");
            let m = &t["metadata"];
            (
                m["query"].as_str().unwrap_or_default(),
                m["threshold"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        queries,
        [
            (
                "sum(ferry_concurrency_in_flight{namespace=\"models\",route=\"chat\"})",
                "6"
            ),
            (
                "sum(ferry_concurrency_queue_depth{namespace=\"models\",route=\"chat\"})",
                "4"
            ),
        ]
    );

    let refused = chart.render(&["autoscaling.keda.enabled=true"]).await?;
    let stderr = refused
        .err()
        .context("enabled without a deployment rendered")?;
    assert!(stderr.contains("autoscaling.keda.deployment"), "{stderr}");
    Ok(())
}

#[tokio::test]
async fn the_autoscaling_gauges_exist_with_the_labels_the_queries_select() -> anyhow::Result<()> {
    let gate = Gate::start().await?;
    let limit = json!({ "concurrency": { "max": 1, "queue": 4, "queue_timeout": "10s" } });
    let ferry = start(&one_route(gate.addr(), limit)).await?;
    let (addr, admin) = (ferry.listener(LISTENER)?, Admin::new(ferry.admin()));
    let client = HttpClient::http1();
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { get(&client, addr, "/v2/models/m/infer", &[]).await })
        })
        .collect();
    // What the ScaledObject sums per route (Prometheus adds `namespace` when scraping).
    eventually(PATIENCE, || async {
        let m = admin.metrics().await?;
        let labels = [("listener", LISTENER), ("route", "llm"), ("model", "m")];
        let (busy, queued) = (
            m.sum("ferry_concurrency_in_flight", &labels),
            m.sum("ferry_concurrency_queue_depth", &labels),
        );
        anyhow::ensure!(
            (busy, queued) == (1.0, 2.0),
            "in flight {busy}, queued {queued}"
        );
        Ok(())
    })
    .await?;
    gate.open();
    for call in calls {
        assert_eq!(call.await??.status, 200);
    }
    Ok(())
}
