//! The admission webhook end to end over HTTPS: real AdmissionReview bodies in, the returned
//! JSONPatch applied to the original object and compared with what `ferry inject` writes for
//! the same object; patched pods validated against the Kubernetes 1.31 schemas; malformed
//! reviews; probes and metrics; certificate rotation.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should panic"
)]

mod support;

use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use base64::Engine as _;
use clap::Parser;
use ferry_inject::{BoundInjector, InjectorArgs, Selection, SidecarArgs, document, inject_str};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls_pki_types::{CertificateDer, ServerName, pem::PemObject};
use serde_json::{Value, json};
use tokio::{net::TcpStream, sync::oneshot, task::JoinHandle};
use tokio_rustls::TlsConnector;

const SERVICE_DNS: &str = "ferry-injector.ferry-system.svc";

struct Pki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec![SERVICE_DNS.to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    Pki {
        ca_pem: ca.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    injector: InjectorArgs,
}

struct Running {
    webhook: SocketAddr,
    admin: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), ferry_inject::InjectError>>,
}

impl Running {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(20), self.task)
            .await
            .expect("injector stops in time")
            .unwrap()
            .unwrap();
    }
}

async fn start(dir: &Path, pki: &Pki) -> Running {
    std::fs::write(dir.join("tls.crt"), &pki.cert_pem).unwrap();
    std::fs::write(dir.join("tls.key"), &pki.key_pem).unwrap();
    let cert = dir.join("tls.crt");
    let key = dir.join("tls.key");
    let cli = Cli::parse_from([
        "injector",
        "--listen",
        "127.0.0.1:0",
        "--admin",
        "127.0.0.1:0",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--cert-reload-interval",
        "100ms",
        "--drain-timeout",
        "2s",
    ]);
    let bound = BoundInjector::bind(cli.injector).await.unwrap();
    let webhook = bound.webhook_addr().unwrap();
    let admin = bound.admin_addr().unwrap();
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(bound.serve(async move {
        let _ = rx.await;
    }));
    Running {
        webhook,
        admin,
        stop: Some(tx),
        task,
    }
}

async fn https(
    addr: SocketAddr,
    ca_pem: &str,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<(u16, Bytes), String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from(SERVICE_DNS).unwrap(), tcp)
        .await
        .map_err(|e| e.to_string())?;
    send(hyper_util::rt::TokioIo::new(tls), method, path, body).await
}

async fn http(addr: SocketAddr, path: &str) -> (u16, String) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (status, body) = send(hyper_util::rt::TokioIo::new(tcp), "GET", path, Vec::new())
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

async fn send<IO>(io: IO, method: &str, path: &str, body: Vec<u8>) -> Result<(u16, Bytes), String>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", SERVICE_DNS)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

fn review_for(uid: &str, object: &Value) -> Vec<u8> {
    let kind = object["kind"].as_str().unwrap_or("");
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": kind},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": object.pointer("/metadata/namespace").cloned().unwrap_or(json!("default")),
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": object,
            "dryRun": false,
        }
    })
    .to_string()
    .into_bytes()
}

/// Posts a review for `object`; returns the object with the returned patch applied and the
/// response.
async fn mutate(run: &Running, ca: &str, uid: &str, object: &Value) -> (Value, Value) {
    let (status, body) = https(run.webhook, ca, "POST", "/inject", review_for(uid, object))
        .await
        .unwrap();
    assert_eq!(status, 200);
    let review: Value = serde_json::from_slice(&body).unwrap();
    let response = review["response"].clone();
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(response["uid"], uid);
    assert_eq!(response["allowed"], true);
    let mut patched = object.clone();
    if let Some(patch) = response["patch"].as_str() {
        assert_eq!(response["patchType"], "JSONPatch");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap();
        let patch: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
        json_patch::patch(&mut patched, &patch).unwrap();
    }
    (patched, response)
}

fn default_sidecar() -> SidecarArgs {
    #[derive(Parser)]
    struct S {
        #[command(flatten)]
        s: SidecarArgs,
    }
    S::parse_from(["x"]).s
}

/// What the CLI writes for this one object, in the webhook's scope (everything not opted out).
fn cli_result(object: &Value) -> Value {
    let yaml = serde_norway::to_string(object).unwrap();
    let out = inject_str(&yaml, &default_sidecar(), Selection::AllButOptedOut);
    assert!(!out.failed, "CLI failed on {yaml}");
    let docs = document::split(&out.output);
    docs.iter()
        .map(|d| d.parse().unwrap())
        .find(|v| !v.is_null())
        .unwrap()
}

/// Every workload of the good corpus, and a Pod made from each pod template as the API server
/// would send it.
fn corpus_objects() -> Vec<Value> {
    let mut out = Vec::new();
    for name in support::corpus()
        .into_iter()
        .filter(|n| !n.starts_with("bad-"))
    {
        let text = std::fs::read_to_string(support::package_dir().join("tests/corpus").join(&name))
            .unwrap();
        for doc in document::split(&text) {
            let v = doc.parse().unwrap();
            let kind = v["kind"].as_str().unwrap_or("").to_owned();
            let template = match kind.as_str() {
                "Pod" => None,
                "CronJob" => v.pointer("/spec/jobTemplate/spec/template").cloned(),
                "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => {
                    v.pointer("/spec/template").cloned()
                }
                _ => continue,
            };
            if let Some(t) = template {
                let mut metadata = t.get("metadata").cloned().unwrap_or(json!({}));
                metadata["generateName"] =
                    json!(format!("{}-", v["metadata"]["name"].as_str().unwrap()));
                metadata["namespace"] = v
                    .pointer("/metadata/namespace")
                    .cloned()
                    .unwrap_or(json!("default"));
                out.push(json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": t["spec"]}));
            }
            out.push(v);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_patches_equal_cli_output_and_validate() {
    let dir = support::scratch("webhook-e2e");
    let pki = pki();
    let run = start(&dir, &pki).await;
    let mut pods = Vec::new();
    let mut injected = 0;
    for (i, object) in corpus_objects().iter().enumerate() {
        let (patched, response) = mutate(&run, &pki.ca_pem, &format!("uid-{i}"), object).await;
        let expected = cli_result(object);
        assert_eq!(
            patched, expected,
            "webhook and CLI differ for {}",
            object["metadata"]
        );
        if response.get("patch").is_some() {
            injected += 1;
            // Applying the patch a second time through the webhook changes nothing.
            let (again, response) =
                mutate(&run, &pki.ca_pem, &format!("again-{i}"), &patched).await;
            assert!(response.get("patch").is_none(), "re-injected: {response}");
            assert_eq!(again, patched);
            if patched["kind"] == "Pod" {
                let file = dir.join(format!("pod-{i}.yaml"));
                std::fs::write(&file, serde_norway::to_string(&patched).unwrap()).unwrap();
                pods.push(file);
            }
        }
    }
    assert!(injected >= 16, "only {injected} objects were injected");
    assert!(pods.len() >= 8);
    support::assert_valid(&pods);

    let (status, metrics) = http(run.admin, "/metrics").await;
    assert_eq!(status, 200);
    let line = format!("ferry_injector_admission_reviews_total{{result=\"injected\"}} {injected}");
    assert!(metrics.contains(&line), "{line} not in\n{metrics}");
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reviews_are_allowed_with_warnings() {
    let dir = support::scratch("webhook-bad");
    let pki = pki();
    let run = start(&dir, &pki).await;
    let post = |body: Vec<u8>| https(run.webhook, &pki.ca_pem, "POST", "/inject", body);

    let (status, body) = post(b"{\"apiVersion\": ".to_vec()).await.unwrap();
    assert_eq!(status, 200);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["response"]["allowed"], true);
    assert!(
        v["response"]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("body is not JSON"),
        "{v}"
    );

    let old = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "b1"}});
    let v: Value =
        serde_json::from_slice(&post(old.to_string().into_bytes()).await.unwrap().1).unwrap();
    assert_eq!(v["response"]["uid"], "b1");
    assert!(
        v["response"]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("expected kind AdmissionReview, apiVersion admission.k8s.io/v1"),
        "{v}"
    );

    let conflict = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "models"},
        "spec": {"containers": [{"name": "model", "image": "m", "ports": [{"containerPort": 15001}]}]}});
    let (patched, response) = mutate(&run, &pki.ca_pem, "b2", &conflict).await;
    assert_eq!(patched, conflict);
    assert_eq!(
        response["warnings"][0],
        "ferry: sidecar not injected into Pod/models/p: port conflict: container \"model\" uses port 15001, which ferry reserves for its outbound listener"
    );

    let (status, _) = https(run.webhook, &pki.ca_pem, "GET", "/nope", Vec::new())
        .await
        .unwrap();
    assert_eq!(status, 404);
    let (status, body) = https(run.webhook, &pki.ca_pem, "GET", "/ready", Vec::new())
        .await
        .unwrap();
    assert_eq!((status, &body[..]), (200, &b"ready\n"[..]));
    assert_eq!(http(run.admin, "/live").await.0, 200);
    assert_eq!(http(run.admin, "/ready").await.0, 200);
    // The admin port never mutates.
    assert_eq!(http(run.admin, "/inject").await.0, 404);
    let metrics = http(run.admin, "/metrics").await.1;
    assert!(
        metrics.contains("ferry_injector_admission_reviews_total{result=\"malformed\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("ferry_injector_admission_reviews_total{result=\"failed\"} 1"),
        "{metrics}"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_certificates_are_picked_up() {
    let dir = support::scratch("webhook-rotation");
    let first = pki();
    let run = start(&dir, &first).await;
    assert_eq!(
        https(run.webhook, &first.ca_pem, "GET", "/live", Vec::new())
            .await
            .unwrap()
            .0,
        200
    );

    let second = pki();
    assert!(
        https(run.webhook, &second.ca_pem, "GET", "/live", Vec::new())
            .await
            .is_err()
    );
    // Write the key first: a half-written pair must not replace the working one.
    std::fs::write(dir.join("tls.key"), &second.key_pem).unwrap();
    std::fs::write(dir.join("tls.crt"), &second.cert_pem).unwrap();
    let mut served = false;
    for _ in 0..200 {
        if https(run.webhook, &second.ca_pem, "GET", "/live", Vec::new())
            .await
            .is_ok()
        {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(served, "the rotated certificate was never served");
    assert!(
        https(run.webhook, &first.ca_pem, "GET", "/live", Vec::new())
            .await
            .is_err()
    );
    let metrics = http(run.admin, "/metrics").await.1;
    assert!(
        metrics.contains("ferry_injector_certificate_reloads_total{result=\"ok\"} 1"),
        "{metrics}"
    );

    // A broken file is reported and the current certificate keeps serving.
    std::fs::write(dir.join("tls.crt"), "not a certificate").unwrap();
    let mut counted = false;
    for _ in 0..200 {
        let metrics = http(run.admin, "/metrics").await.1;
        if metrics.contains("ferry_injector_certificate_reloads_total{result=\"error\"} ")
            && !metrics.contains("ferry_injector_certificate_reloads_total{result=\"error\"} 0")
        {
            counted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(counted, "the bad certificate was not reported");
    assert_eq!(
        https(run.webhook, &second.ca_pem, "GET", "/live", Vec::new())
            .await
            .unwrap()
            .0,
        200
    );
    run.stop().await;
}
