//! The mutual-TLS part of `ferry demo`: two more in-process sidecars with throwaway SPIFFE
//! certificates, the way two pods' sidecars talk. A client-side sidecar (outbound, cluster
//! `tls: { mode: mesh }`) calls a server-side sidecar (inbound `tls: { mode: strict }` with an
//! authorization rule) in front of the demo model server:
//!
//! - an allowed model over mutual TLS → 200, and the server side's access record names the
//!   caller's SPIFFE ID;
//! - a model the rule does not allow → 403 from the server side, counted;
//! - a plaintext client straight at the strict listener → refused at the handshake, counted.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use ferry_proxy::access_log::AccessRecord;
use ferry_proxy::app::{Proxy, StartOptions};
use http::Method;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
    SanType,
};
use tokio::sync::mpsc;

use crate::client::RestClient;
use crate::{DRAIN, DemoError, collect_records};

/// The demo's trust domain and identities.
const CLIENT_ID: &str = "spiffe://demo.local/ns/demo/sa/client";
const SERVER_ID: &str = "spiffe://demo.local/ns/models/sa/add-sub";

/// Runs the mutual-TLS scene against the model server at `model`.
pub async fn run(model: SocketAddr) -> Result<(), DemoError> {
    let dir = tempfile::tempdir().map_err(DemoError::Mesh)?;
    write_pki(dir.path()).map_err(DemoError::Mesh)?;
    let server_yaml = format!(
        "apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:0 }}
identity: {{ cert: server.crt, key: server.key, trust: [ca.crt] }}
listeners:
  - name: inbound
    address: 127.0.0.1:0
    tls: {{ mode: strict, peers: {{ trust_domain: demo.local }} }}
    routes:
      - name: models
        to: model
        authorization:
          default: deny
          rules:
            - {{ allow: [{{ prefix: spiffe://demo.local/ns/demo/ }}], models: [{{ exact: add_sub }}] }}
clusters:
  - {{ name: model, endpoints: [{model}] }}
"
    );
    let (records_tx, mut records) = mpsc::channel::<AccessRecord>(16);
    let server = start(dir.path(), "server.yaml", &server_yaml, Some(records_tx)).await?;
    let server_in = server
        .listener_addr("inbound")
        .ok_or(DemoError::NoInbound)?;
    let client_yaml = format!(
        "apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:0 }}
identity: {{ cert: client.crt, key: client.key, trust: [ca.crt] }}
listeners:
  - name: outbound
    address: 127.0.0.1:0
    routes: [{{ name: to-models, to: models }}]
clusters:
  - name: models
    endpoints: [{server_in}]
    tls: {{ mode: mesh, server: {{ exact: \"{SERVER_ID}\" }} }}
"
    );
    let client = start(dir.path(), "client.yaml", &client_yaml, None).await?;
    let outcome = scene(&server, &client, server_in, &mut records).await;
    client.shutdown(DRAIN).await;
    server.shutdown(DRAIN).await;
    outcome
}

async fn scene(
    server: &Proxy,
    client: &Proxy,
    server_in: SocketAddr,
    records: &mut mpsc::Receiver<AccessRecord>,
) -> Result<(), DemoError> {
    let outbound = client
        .listener_addr("outbound")
        .ok_or(DemoError::NoInbound)?;
    println!();
    println!("mutual TLS between two sidecars (throwaway CA, SPIFFE identities)");
    println!("  client sidecar  {outbound}  identity {CLIENT_ID}");
    println!(
        "  server sidecar  {server_in}  identity {SERVER_ID}, tls strict, authorization: ns/demo may call add_sub only"
    );
    let mut rest = RestClient::connect(outbound)
        .await
        .map_err(DemoError::Client)?;
    let body = Bytes::from_static(
        br#"{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP32","data":[1]},{"name":"INPUT1","shape":[1],"datatype":"FP32","data":[2]}]}"#,
    );
    let allowed = rest
        .send(Method::POST, "/v2/models/add_sub/infer", Some(body.clone()))
        .await
        .map_err(DemoError::Client)?;
    let record = collect_records(records, 1).await.pop();
    println!(
        "[m1] POST /v2/models/add_sub/infer via both sidecars -> {} ; the server sidecar saw caller {}",
        allowed.status.as_u16(),
        record
            .as_ref()
            .and_then(|r| r.peer_identity.as_deref())
            .unwrap_or("(none)")
    );
    let denied = rest
        .send(Method::POST, "/v2/models/echo/infer", Some(body))
        .await
        .map_err(DemoError::Client)?;
    println!(
        "[m2] POST /v2/models/echo/infer via both sidecars -> {} {} (not in the rule)",
        denied.status.as_u16(),
        String::from_utf8_lossy(&denied.body)
    );
    let plaintext = RestClient::connect(server_in).await;
    let refused = match plaintext {
        Ok(mut c) => c
            .send(Method::GET, "/v2/models/add_sub", None)
            .await
            .is_err(),
        Err(_) => true,
    };
    let metrics = server.shared().metrics.encode(false);
    let count = |name: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or("0")
            .to_owned()
    };
    let plaintext_refusals =
        count("ferry_tls_handshake_failures_total{listener=\"inbound\",reason=\"plaintext\"}");
    println!(
        "[m3] plaintext GET straight at the strict listener -> {} ; ferry_tls_handshake_failures_total{{reason=\"plaintext\"}} {plaintext_refusals}",
        if refused {
            "refused at the handshake"
        } else {
            "ANSWERED"
        },
    );
    println!(
        "     server sidecar: ferry_tls_handshakes_total {} ; ferry_authz_denied_total{{route=\"models\"}} {}",
        count("ferry_tls_handshakes_total{listener=\"inbound\"}"),
        count("ferry_authz_denied_total{listener=\"inbound\",route=\"models\"}"),
    );
    let as_expected = allowed.status == 200
        && record.and_then(|r| r.peer_identity).as_deref() == Some(CLIENT_ID)
        && denied.status == 403
        && refused;
    if as_expected {
        Ok(())
    } else {
        Err(DemoError::Unexpected(vec!["mutual TLS scene"]))
    }
}

async fn start(
    dir: &Path,
    file: &str,
    yaml: &str,
    access_log: Option<mpsc::Sender<AccessRecord>>,
) -> Result<Proxy, DemoError> {
    let path = dir.join(file);
    let config =
        ferry_config::parse(&path.display().to_string(), yaml).map_err(DemoError::SceneConfig)?;
    let options = StartOptions {
        access_log,
        ..Default::default()
    };
    let started = tokio::time::timeout(Duration::from_secs(10), Proxy::start(config, options));
    match started.await {
        Ok(Ok(proxy)) => Ok(proxy),
        Ok(Err(e)) => Err(DemoError::Start(e)),
        Err(_) => Err(DemoError::Unexpected(vec!["mesh sidecar start"])),
    }
}

/// A CA and two workload certificates (ECDSA P-256, SPIFFE URI SANs), as PEM files.
fn write_pki(dir: &Path) -> std::io::Result<()> {
    let fail = |e: rcgen::Error| std::io::Error::other(e.to_string());
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "ferry demo CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().map_err(fail)?)
        .map_err(fail)?;
    std::fs::write(dir.join("ca.crt"), ca.pem())?;
    for (name, id) in [("client", CLIENT_ID), ("server", SERVER_ID)] {
        let key = KeyPair::generate().map_err(fail)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
        let uri = id.to_owned().try_into().map_err(fail)?;
        params.subject_alt_names = vec![SanType::URI(uri)];
        let cert = params.signed_by(&key, &ca).map_err(fail)?;
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem())?;
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem())?;
    }
    Ok(())
}
