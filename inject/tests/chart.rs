//! charts/ferry with a real helm binary: `helm lint --strict`, `helm template` with default and
//! non-default values validated against the Kubernetes 1.31 schemas, schema violations failing,
//! the injector flags in the Deployment accepted by `ferry injector`, and the default mesh
//! route config agreeing with the sidecar's ports.

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
         mesh:\n  trustDomain: prod.example\n  tracingEndpoint: http://otel-collector.observability:4317\n  workloadCerts: {mode: none, issuerName: x, issuerKind: Issuer}\n\
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

/// The default mesh ConfigMap, with default and with every optional section switched on, is a
/// valid ferry route config.
#[test]
fn mesh_config_parses_as_ferry_config() {
    let variants: [(&str, &[&str]); 2] = [
        ("chart-mesh-default", &[]),
        (
            "chart-mesh-full",
            &[
                "--set",
                "mesh.tracingEndpoint=http://otel-collector.observability:4317",
                "--set",
                "meshConfig.modelPort=8000",
            ],
        ),
    ];
    for (name, extra) in variants {
        let (_, objects) = template(name, extra);
        for cm in find(&objects, "ConfigMap") {
            let text = cm["data"]["config.yaml"].as_str().unwrap();
            if let Err(errors) = ferry_config::parse("config.yaml", text) {
                panic!("{name}: chart route config rejected:\n{errors}\n---\n{text}");
            }
        }
    }
}
