//! The chart's mesh route config through the real `ferry validate`: helm renders the chart with
//! tracing off (the default) and on (`mesh.tracingEndpoint` with gRPC, and OTLP/HTTP with a
//! non-default ratio and propagation, with and without workload certificates, and with the
//! Grafana dashboard ConfigMap and PrometheusRule on); every render's
//! manifests pass `kubernetes-validate`, its `tracing` block says what the values asked, and
//! each ConfigMap's `config.yaml` validates with the binary the sidecar runs. The config names
//! the pod's certificate files (`/var/run/ferry`), which `ferry validate` reads, so they are
//! rewritten to throwaway ones (rcgen), as a pod's CSI volume would provide them.

use std::path::Path;

use anyhow::Context as _;
use ferry_integration::chart::{Chart, of_kind};
use ferry_integration::ferry::validate;
use ferry_integration::{Ca, Workload};
use serde_json::{Value, json};

/// Where the injector mounts the workload certificate (`ferry_inject::sidecar::CERTS_DIR`).
const CERTS_DIR: &str = "/var/run/ferry";

/// One render: its name, `mesh.tracingEndpoint`, further helm flags, and the `tracing` block
/// expected in the config.
struct Variant {
    name: &'static str,
    endpoint: Option<&'static str>,
    flags: &'static [&'static str],
    tracing: Option<Value>,
}

fn variants() -> [Variant; 4] {
    [
        Variant {
            name: "default",
            endpoint: None,
            flags: &[],
            tracing: None,
        },
        Variant {
            name: "tracing-grpc",
            endpoint: Some("http://otel-collector.observability:4317"),
            flags: &[],
            tracing: Some(json!({
                "otlp": { "protocol": "grpc" },
                "propagation": ["w3c", "b3"],
                "sampling": { "ratio": 0.01 },
            })),
        },
        Variant {
            // `--set` hands helm the ratio as a string; the schema takes it, the YAML is a float.
            name: "tracing-http",
            endpoint: Some("http://otel-collector.observability:4318"),
            flags: &[
                "--set",
                "mesh.tracingProtocol=http",
                "--set",
                "mesh.tracingSamplingRatio=0.25",
                "--set-json",
                r#"mesh.tracingPropagation=["b3multi","w3c"]"#,
                "--set-json",
                r#"mesh.meshedHosts=["triton.models:8000"]"#,
                // The monitoring objects on: the mesh config and the manifests stay valid.
                "--set",
                "grafana.dashboard.enabled=true",
                "--set",
                "prometheusRule.enabled=true",
            ],
            tracing: Some(json!({
                "otlp": { "protocol": "http" },
                "propagation": ["b3multi", "w3c"],
                "sampling": { "ratio": 0.25 },
            })),
        },
        Variant {
            // A float helm would print as 1e-05 comes out as a plain decimal.
            name: "tracing-no-certs",
            endpoint: Some("https://collector.example:443"),
            flags: &[
                "--set",
                "mesh.workloadCerts.mode=none",
                "--set-json",
                "mesh.tracingSamplingRatio=0.00001",
                "--set-json",
                r#"mesh.tracingPropagation=["w3c"]"#,
            ],
            tracing: Some(json!({
                "otlp": { "protocol": "grpc" },
                "propagation": ["w3c"],
                "sampling": { "ratio": 0.00001 },
            })),
        },
    ]
}

#[tokio::test]
async fn the_mesh_config_validates_with_tracing_off_and_on() -> anyhow::Result<()> {
    let chart = Chart::tools().await?;
    let dir = tempfile::tempdir()?;
    let certs = dir.path().join("certs");
    write_certs(&certs).await?;
    let mut configs = Vec::new();
    for v in variants() {
        let endpoint = v.endpoint.map(|e| format!("mesh.tracingEndpoint={e}"));
        let mut flags: Vec<&str> = v.flags.to_vec();
        if let Some(set) = &endpoint {
            flags.extend(["--set", set]);
        }
        let text = chart
            .template(&flags)
            .await?
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("{}: helm refused", v.name))?;
        let manifests = dir.path().join(format!("{}-manifests.yaml", v.name));
        tokio::fs::write(&manifests, &text).await?;
        chart.kubernetes_validate(&manifests).await?;

        let docs = chart.parse_yaml(&text).await?;
        // The sidecars get the endpoint (and the resource attributes) from the injector.
        let args = injector_args(&docs)?;
        let given = args
            .iter()
            .find_map(|a| a.strip_prefix("--tracing-endpoint="));
        assert_eq!(given, v.endpoint, "{}: injector args {args:?}", v.name);
        // The dashboard's ConfigMap (`grafana_dashboard: "1"`) carries no route config.
        let maps: Vec<&Value> = of_kind(&docs, "ConfigMap")
            .into_iter()
            .filter(|cm| cm["metadata"]["labels"]["grafana_dashboard"] != "1")
            .collect();
        anyhow::ensure!(!maps.is_empty(), "{}: no mesh ConfigMap", v.name);
        for (i, cm) in maps.into_iter().enumerate() {
            let text = cm["data"]["config.yaml"]
                .as_str()
                .with_context(|| format!("{}: ConfigMap without config.yaml", v.name))?;
            let config = chart.parse_yaml(text).await?;
            let tracing = config.first().and_then(|c| c.get("tracing")).cloned();
            assert_eq!(tracing, v.tracing, "{}: the tracing block", v.name);
            let local = text.replace(CERTS_DIR, &certs.display().to_string());
            let file = dir.path().join(format!("{}-{i}.yaml", v.name));
            tokio::fs::write(&file, local).await?;
            configs.push(file);
        }
    }
    let (code, out) = validate(&configs).await?;
    assert_eq!(code, 0, "ferry validate {configs:?}:\n{out}");
    Ok(())
}

/// The injector container's arguments in a render.
fn injector_args(docs: &[Value]) -> anyhow::Result<Vec<String>> {
    let deployment = of_kind(docs, "Deployment")
        .into_iter()
        .next()
        .context("no injector Deployment")?;
    let args = deployment
        .pointer("/spec/template/spec/containers/0/args")
        .cloned()
        .context("no injector args")?;
    Ok(serde_json::from_value(args)?)
}

/// `tls.crt`, `tls.key` and `ca.crt` in `dir`, as the cert-manager CSI volume mounts them.
async fn write_certs(dir: &Path) -> anyhow::Result<()> {
    tokio::fs::create_dir_all(dir).await?;
    let ca = Ca::new("chart test CA")?;
    let issued = ca
        .issue(&Workload::spiffe(
            "spiffe://cluster.local/ns/models/sa/default",
        ))
        .await?;
    issued.write(dir, "tls").await?;
    ca.write(&dir.join("ca.crt")).await
}
