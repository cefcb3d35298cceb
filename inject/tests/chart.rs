//! charts/ferry with a real helm binary: `helm lint --strict`, `helm template` with default and
//! non-default values validated against the Kubernetes 1.31 schemas, schema violations failing,
//! the injector flags in the Deployment accepted by `ferry injector`, and the default mesh
//! route config agreeing with the sidecar's ports and certificate paths, following `mesh.mtls`,
//! `mesh.meshedHosts` and the `mesh.tracing*` values, and parsing as a ferry config. The real
//! `ferry validate` of the rendered config runs in `integration/tests/e2e/chart.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should panic"
)]

mod support;

use std::{path::PathBuf, process::Command};

use clap::Parser;
use ferry_inject::{InjectorArgs, document, settings::ports};
use serde_json::Value;

fn chart() -> PathBuf {
    support::package_dir()
        .parent()
        .unwrap()
        .join("charts/ferry")
}

fn helm(args: &[&str]) -> std::process::Output {
    Command::new(&support::tools().helm)
        .args(args)
        .output()
        .expect("run helm")
}

fn template(name: &str, extra: &[&str]) -> (PathBuf, Vec<Value>) {
    let chart = chart();
    let mut args = vec![
        "template",
        "ferry",
        chart.to_str().unwrap(),
        "--namespace",
        "ferry-system",
    ];
    args.extend_from_slice(extra);
    let out = helm(&args);
    assert!(
        out.status.success(),
        "helm template {extra:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let file = support::scratch(name).join("rendered.yaml");
    std::fs::write(&file, &text).unwrap();
    let objects = document::split(&text)
        .iter()
        .map(|d| d.parse().unwrap())
        .filter(|v| !v.is_null())
        .collect();
    (file, objects)
}

fn find<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    injector: InjectorArgs,
}

#[test]
fn lint_strict_passes() {
    let out = helm(&["lint", "--strict", chart().to_str().unwrap()]);
    assert!(
        out.status.success(),
        "helm lint --strict:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn default_render_is_valid_and_complete() {
    let (file, objects) = template("chart-default", &[]);
    support::assert_valid(&[file]);
    for kind in [
        "Deployment",
        "Service",
        "MutatingWebhookConfiguration",
        "PodDisruptionBudget",
        "ServiceAccount",
        "ConfigMap",
        "Job",
        "Role",
        "ClusterRole",
    ] {
        assert!(!find(&objects, kind).is_empty(), "no {kind} rendered");
    }
    let webhook = find(&objects, "MutatingWebhookConfiguration")[0];
    let hooks = webhook["webhooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 2);
    for hook in hooks {
        assert_eq!(hook["failurePolicy"], "Ignore");
        assert_eq!(hook["timeoutSeconds"], 5);
        assert_eq!(hook["clientConfig"]["service"]["path"], "/inject");
        assert!(hook["namespaceSelector"].is_object() && hook["objectSelector"].is_object());
    }
    // The injector itself must never be injected, nor call the API server.
    let deployment = find(&objects, "Deployment")[0];
    assert_eq!(
        deployment
            .pointer("/spec/template/metadata/labels/ferry.dev~1inject")
            .unwrap(),
        "disabled"
    );
    assert_eq!(
        deployment
            .pointer("/spec/template/spec/automountServiceAccountToken")
            .unwrap(),
        false
    );

    // Every flag the chart passes is one `ferry injector` accepts.
    let args = deployment
        .pointer("/spec/template/spec/containers/0/args")
        .unwrap()
        .as_array()
        .unwrap();
    let args: Vec<&str> = args.iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(args[0], "injector");
    let parsed = Cli::try_parse_from(args.iter().copied())
        .unwrap_or_else(|e| panic!("chart flags rejected: {e}"));
    parsed.injector.sidecar.validate().unwrap();
    assert_eq!(parsed.injector.sidecar.config_map, "ferry-mesh-config");
    // The iptables mode is opt-in.
    assert_eq!(
        parsed.injector.sidecar.redirect,
        ferry_inject::RedirectMode::Ports
    );
}

#[test]
fn non_default_values_render_valid() {
    let values = support::scratch("chart-values").join("values.yaml");
    std::fs::write(
        &values,
        "webhook:\n  failurePolicy: Fail\n  timeoutSeconds: 10\n  certs:\n    mode: cert-manager\n    certgenImage: {repository: certgen, tag: v1, pullPolicy: Always}\n\
         injector:\n  replicas: 3\n  podDisruptionBudget: {enabled: true, minAvailable: 2}\n  nodeSelector: {kubernetes.io/os: linux}\n\
         sidecar:\n  redirect: {mode: iptables, initImage: {repository: registry.example/ferry-init, tag: v9}}\n  resources:\n    requests: {cpu: 200m, memory: 128Mi}\n    limits: {cpu: \"1\", memory: 512Mi}\n\
         mesh:\n  trustDomain: prod.example\n  tracingEndpoint: http://otel-collector.observability:4318\n  tracingProtocol: http\n  tracingSamplingRatio: 0.5\n  tracingPropagation: [b3]\n  workloadCerts: {mode: none, issuerName: x, issuerKind: Issuer}\n\
         meshConfig:\n  namespaces: [models, llm]\n  modelPort: 8000\n",
    )
    .unwrap();
    let (file, objects) = template("chart-custom", &["--values", values.to_str().unwrap()]);
    support::assert_valid(&[file]);
    assert!(
        find(&objects, "Job").is_empty(),
        "cert-manager mode renders no job"
    );
    assert_eq!(find(&objects, "Certificate").len(), 1);
    assert_eq!(find(&objects, "ConfigMap").len(), 2);
    let webhook = find(&objects, "MutatingWebhookConfiguration")[0];
    assert_eq!(
        webhook
            .pointer("/metadata/annotations/cert-manager.io~1inject-ca-from")
            .unwrap(),
        "ferry-system/ferry-injector"
    );
    assert_eq!(webhook["webhooks"][0]["failurePolicy"], "Fail");
    let args = find(&objects, "Deployment")[0]
        .pointer("/spec/template/spec/containers/0/args")
        .unwrap()
        .clone();
    let args: Vec<String> = serde_json::from_value(args).unwrap();
    let parsed = Cli::try_parse_from(args.iter().map(String::as_str)).unwrap();
    assert_eq!(parsed.injector.sidecar.trust_domain, "prod.example");
    assert_eq!(
        parsed.injector.sidecar.tracing_endpoint.as_deref(),
        Some("http://otel-collector.observability:4318")
    );
    assert_eq!(parsed.injector.sidecar.cpu_limit.as_deref(), Some("1"));
    assert_eq!(
        parsed.injector.sidecar.workload_certs,
        ferry_inject::WorkloadCerts::None
    );
    assert_eq!(
        parsed.injector.sidecar.redirect,
        ferry_inject::RedirectMode::Iptables
    );
    assert_eq!(
        parsed.injector.sidecar.init_image,
        "registry.example/ferry-init:v9"
    );
}

#[test]
fn schema_violations_fail() {
    for (set, expect) in [
        ("injector.replicas=0", "injector.replicas"),
        ("webhook.failurePolicy=Sometimes", "webhook.failurePolicy"),
        ("webhook.certs.mode=manual", "webhook.certs.mode"),
        ("meshConfig.modelPort=15006", "meshConfig.modelPort"),
        ("sidecar.bogus=1", "bogus"),
        ("sidecar.redirect.mode=tproxy", "sidecar.redirect.mode"),
        ("mesh.mtls=optional", "mesh.mtls"),
        ("mesh.meshedHosts[0].suffix=.svc", "mesh.meshedHosts"),
        (
            "mesh.tracingEndpoint=otel-collector:4317",
            "mesh.tracingEndpoint",
        ),
        ("mesh.tracingProtocol=zipkin", "mesh.tracingProtocol"),
        ("mesh.tracingSamplingRatio=1.5", "mesh.tracingSamplingRatio"),
        (
            "mesh.tracingSamplingRatio=often",
            "mesh.tracingSamplingRatio",
        ),
        (
            "mesh.tracingPropagation[0]=jaeger",
            "mesh.tracingPropagation",
        ),
    ] {
        let chart = chart();
        for verb in [&["template", "ferry"][..], &["lint", "--strict"][..]] {
            let mut args = verb.to_vec();
            args.extend([chart.to_str().unwrap(), "--set", set]);
            let out = helm(&args);
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!out.status.success(), "{verb:?} --set {set} passed:\n{all}");
            assert!(
                all.contains(expect),
                "{verb:?} --set {set}: message does not name {expect}:\n{all}"
            );
        }
    }
}

#[test]
fn mesh_config_matches_the_sidecar_contract() {
    let (_, objects) = template("chart-mesh", &[]);
    let cm = find(&objects, "ConfigMap")[0];
    let text = cm["data"]["config.yaml"].as_str().unwrap();
    let docs = document::split(text);
    let config = docs[0].parse().unwrap();
    assert_eq!(config["apiVersion"], "ferry/v1");
    assert_eq!(
        config["admin"]["address"],
        format!("0.0.0.0:{}", ports::ADMIN)
    );
    let listeners = config["listeners"].as_array().unwrap();
    let address =
        |name: &str| listeners.iter().find(|l| l["name"] == name).unwrap()["address"].clone();
    assert_eq!(address("inbound"), format!("0.0.0.0:{}", ports::INBOUND));
    assert_eq!(
        address("outbound"),
        format!("127.0.0.1:{}", ports::OUTBOUND)
    );
}

/// The mesh route config of a render (the first ConfigMap's `config.yaml`).
fn mesh_config(name: &str, extra: &[&str]) -> Value {
    let (_, objects) = template(name, extra);
    let cm = find(&objects, "ConfigMap")[0];
    let text = cm["data"]["config.yaml"].as_str().unwrap();
    document::split(text)[0].parse().unwrap()
}

fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

fn no_cluster_tls(config: &Value) -> bool {
    let clusters = config["clusters"].as_array().unwrap();
    clusters.iter().all(|c| c.get("tls").is_none())
}

/// Default: the pod's CSI certificate is the identity, inbound is permissive for the trust
/// domain, outbound stays plaintext passthrough (so every pair of pods interoperates).
#[test]
fn mesh_config_mtls_defaults() {
    let config = mesh_config("chart-mtls-default", &[]);
    let dir = ferry_inject::sidecar::CERTS_DIR;
    assert_eq!(config["identity"]["cert"], format!("{dir}/tls.crt"));
    assert_eq!(config["identity"]["key"], format!("{dir}/tls.key"));
    assert_eq!(
        config["identity"]["trust"],
        serde_json::json!([format!("{dir}/ca.crt")])
    );
    let inbound = named(&config["listeners"], "inbound");
    assert_eq!(inbound["tls"]["mode"], "permissive");
    assert_eq!(inbound["tls"]["peers"]["trust_domain"], "cluster.local");
    let outbound = named(&config["listeners"], "outbound");
    assert_eq!(outbound["routes"].as_array().unwrap().len(), 1);
    assert_eq!(outbound["routes"][0]["name"], "by-authority");
    assert!(no_cluster_tls(&config));
}

/// `mesh.mtls: strict` and `mesh.meshedHosts`: one route per pattern ahead of the plaintext
/// passthrough, to a cluster that originates mesh TLS checking the server's trust domain.
#[test]
fn mesh_config_strict_with_meshed_hosts() {
    let config = mesh_config(
        "chart-mtls-strict",
        &[
            "--set",
            "mesh.mtls=strict",
            "--set",
            "mesh.trustDomain=prod.example",
            "--set-json",
            r#"mesh.meshedHosts=["triton.models:8000",{"prefix":"llm."},{"regex":"[a-z0-9-]+\\.models(\\.svc)?"}]"#,
        ],
    );
    let inbound = named(&config["listeners"], "inbound");
    assert_eq!(inbound["tls"]["mode"], "strict");
    assert_eq!(inbound["tls"]["peers"]["trust_domain"], "prod.example");
    let routes = named(&config["listeners"], "outbound")["routes"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = routes.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["meshed-0", "meshed-1", "meshed-2", "by-authority"]);
    assert_eq!(routes[0]["match"]["authority"], "triton.models:8000");
    assert_eq!(routes[1]["match"]["authority"]["prefix"], "llm.");
    assert_eq!(
        routes[2]["match"]["authority"]["regex"],
        r"[a-z0-9-]+\.models(\.svc)?"
    );
    assert!(routes[..3].iter().all(|r| r["to"] == "meshed"));
    let meshed = named(&config["clusters"], "meshed");
    assert_eq!(meshed["original_authority"]["default_port"], 80);
    assert_eq!(meshed["tls"]["mode"], "mesh");
    assert_eq!(meshed["tls"]["server"]["trust_domain"], "prod.example");
    assert!(
        named(&config["clusters"], "passthrough")
            .get("tls")
            .is_none()
    );
}

/// Without workload certificates there is no identity and no TLS; combinations that cannot
/// work fail the render, naming the value.
#[test]
fn mesh_config_without_certs_or_mtls() {
    for extra in [
        &["--set", "mesh.workloadCerts.mode=none"][..],
        &["--set", "mesh.mtls=disabled"][..],
    ] {
        let config = mesh_config("chart-mtls-off", extra);
        assert!(config.get("identity").is_none(), "{extra:?}: {config}");
        assert!(named(&config["listeners"], "inbound").get("tls").is_none());
        assert!(no_cluster_tls(&config));
    }
    for (sets, expect) in [
        (
            &["mesh.workloadCerts.mode=none", "mesh.mtls=strict"][..],
            "mesh.mtls",
        ),
        (
            &["mesh.workloadCerts.mode=none", "mesh.meshedHosts[0]=a.b"][..],
            "mesh.meshedHosts",
        ),
        (
            &["mesh.mtls=disabled", "mesh.meshedHosts[0]=a.b"][..],
            "mesh.meshedHosts",
        ),
    ] {
        // `helm lint` reports a template's `fail` as INFO, by design, so only rendering (what
        // `helm install` does) is checked here.
        let chart = chart();
        let mut args = vec!["template", "ferry", chart.to_str().unwrap()];
        for set in sets {
            args.extend(["--set", set]);
        }
        let out = helm(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{sets:?} rendered");
        assert!(stderr.contains(expect), "{sets:?}: no {expect}:\n{stderr}");
    }
}

/// Tracing is off by default; `mesh.tracingEndpoint` turns the `tracing` block on with the
/// protocol, propagation and ratio values, and no endpoint or service name (the sidecar takes
/// those from the variables the injector sets, so the per-pod annotation still wins).
#[test]
fn mesh_config_tracing_follows_values() {
    let off = mesh_config("chart-tracing-off", &[]);
    assert!(off.get("tracing").is_none(), "{off}");
    let args = |objects: &[Value]| -> Vec<String> {
        let args = find(objects, "Deployment")[0]
            .pointer("/spec/template/spec/containers/0/args")
            .unwrap()
            .clone();
        serde_json::from_value(args).unwrap()
    };
    let (_, objects) = template("chart-tracing-off-args", &[]);
    assert!(
        !args(&objects)
            .iter()
            .any(|a| a.starts_with("--tracing-endpoint"))
    );

    let endpoint = "mesh.tracingEndpoint=http://otel-collector.observability:4317";
    let on = mesh_config("chart-tracing-on", &["--set", endpoint]);
    assert_eq!(
        on["tracing"],
        serde_json::json!({
            "otlp": {"protocol": "grpc"},
            "propagation": ["w3c", "b3"],
            "sampling": {"ratio": 0.01},
        })
    );
    let (_, objects) = template("chart-tracing-on-args", &["--set", endpoint]);
    assert!(
        args(&objects)
            .contains(&"--tracing-endpoint=http://otel-collector.observability:4317".to_owned())
    );

    // `--set` passes a ratio as a string; it still renders as a number.
    let http = mesh_config(
        "chart-tracing-http",
        &[
            "--set",
            "mesh.tracingEndpoint=http://otel-collector.observability:4318",
            "--set",
            "mesh.tracingProtocol=http",
            "--set",
            "mesh.tracingSamplingRatio=0.2",
            "--set-json",
            r#"mesh.tracingPropagation=["b3multi"]"#,
        ],
    );
    assert_eq!(
        http["tracing"],
        serde_json::json!({
            "otlp": {"protocol": "http"},
            "propagation": ["b3multi"],
            "sampling": {"ratio": 0.2},
        })
    );

    // OTLP/gRPC has no path: a URL with one is refused rather than exported nowhere.
    let chart = chart();
    let out = helm(&[
        "template",
        "ferry",
        chart.to_str().unwrap(),
        "--set",
        "mesh.tracingEndpoint=http://otel-collector.observability:4318/v1/traces",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a gRPC endpoint with a path rendered"
    );
    assert!(stderr.contains("mesh.tracingEndpoint"), "{stderr}");
}

/// The default mesh ConfigMap, with default and with every optional section switched on, is a
/// valid ferry route config. The default and mTLS variants need `identity` and `tls` in
/// `ferry_config` (issue 15).
#[test]
fn mesh_config_parses_as_ferry_config() {
    let variants: [(&str, &[&str]); 5] = [
        ("chart-mesh-default", &[]),
        (
            "chart-mesh-tracing-http",
            &[
                "--set",
                "mesh.tracingEndpoint=http://otel-collector.observability:4318",
                "--set",
                "mesh.tracingProtocol=http",
                "--set",
                "mesh.tracingSamplingRatio=1",
            ],
        ),
        (
            "chart-mesh-full",
            &[
                "--set",
                "mesh.tracingEndpoint=http://otel-collector.observability:4317",
                "--set",
                "meshConfig.modelPort=8000",
                "--set",
                "mesh.mtls=strict",
                "--set-json",
                r#"mesh.meshedHosts=["triton.models:8000",{"prefix":"llm."},{"regex":"[a-z0-9-]+\\.models(\\.svc)?"}]"#,
            ],
        ),
        (
            "chart-mesh-no-certs",
            &["--set", "mesh.workloadCerts.mode=none"],
        ),
        ("chart-mesh-mtls-disabled", &["--set", "mesh.mtls=disabled"]),
    ];
    let mut rejected = Vec::new();
    for (name, extra) in variants {
        let (_, objects) = template(name, extra);
        for cm in find(&objects, "ConfigMap") {
            let text = cm["data"]["config.yaml"].as_str().unwrap();
            if let Err(errors) = ferry_config::parse("config.yaml", text) {
                rejected.push(format!(
                    "{name}: chart route config rejected:\n{errors}\n---\n{text}"
                ));
            }
        }
    }
    assert!(rejected.is_empty(), "{}", rejected.join("\n\n"));
}
