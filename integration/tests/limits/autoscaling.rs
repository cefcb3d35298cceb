//! The chart's optional KEDA ScaledObject (`autoscaling.keda`): absent by default (the kind is
//! a CRD that clusters without KEDA reject), rendered for the named Deployment when enabled,
//! refused without one, and its Prometheus queries name gauges the real ferry exports with the
//! labels they select on. helm and a YAML parser (PyYAML in the kubernetes-validate venv) come
//! from the chart tests' pinned installer, so a missing tool fails here too.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use ferry_integration::{Admin, Gate, HttpClient, eventually, workspace};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::support::{LISTENER, PATIENCE, get, one_route, start};

/// The pinned peers dir of `inject/tests/support/install-tools.sh` (helm, the venv).
async fn k8s_peers() -> anyhow::Result<PathBuf> {
    let script = workspace::root().join("inject/tests/support/install-tools.sh");
    let out = Command::new("bash")
        .arg(&script)
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running {}", script.display()))?;
    if !out.status.success() {
        bail!(
            "installing helm failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dir = stdout.trim().lines().last().unwrap_or_default();
    Ok(PathBuf::from(dir))
}

/// `helm template` of the chart with `--set` pairs: Ok(documents) or Err(helm's stderr).
async fn render(peers: &Path, sets: &[&str]) -> anyhow::Result<Result<Vec<Value>, String>> {
    let chart = workspace::root().join("charts/ferry");
    let mut cmd = Command::new(peers.join("helm/helm"));
    cmd.args(["template", "ferry"])
        .arg(&chart)
        .args(["--namespace", "ferry-system"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd
        .kill_on_drop(true)
        .output()
        .await
        .context("running helm")?;
    if !out.status.success() {
        return Ok(Err(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    Ok(Ok(parse_yaml(peers, &out.stdout).await?))
}

/// Every YAML document in `text`, as JSON values (empty documents dropped).
async fn parse_yaml(peers: &Path, text: &[u8]) -> anyhow::Result<Vec<Value>> {
    use tokio::io::AsyncWriteExt as _;
    let mut child = Command::new(peers.join("venv/bin/python"))
        .args([
            "-c",
            "import json, sys, yaml\n\
             docs = [d for d in yaml.safe_load_all(sys.stdin) if d is not None]\n\
             print(json.dumps(docs))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("running PyYAML")?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    stdin.write_all(text).await?;
    drop(stdin);
    let out = child.wait_with_output().await?;
    anyhow::ensure!(
        out.status.success(),
        "the render is not YAML:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_slice(&out.stdout)?)
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

#[tokio::test]
async fn the_chart_renders_a_keda_scaled_object_only_when_asked() -> anyhow::Result<()> {
    let peers = k8s_peers().await?;
    let default = render(&peers, &[]).await?.map_err(anyhow::Error::msg)?;
    assert!(!default.is_empty());
    assert!(
        of_kind(&default, "ScaledObject").is_empty(),
        "off by default"
    );

    let enabled = render(
        &peers,
        &[
            "autoscaling.keda.enabled=true",
            "autoscaling.keda.deployment=vllm",
            "autoscaling.keda.namespace=models",
            "autoscaling.keda.route=chat",
            "autoscaling.keda.maxReplicas=20",
        ],
    )
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

    let refused = render(&peers, &["autoscaling.keda.enabled=true"]).await?;
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
