//! Mutual TLS between ferry and a real Envoy 1.40 (installed, pinned, by
//! `ferry_integration::envoy`), over HTTP/2 with SPIFFE certificates: one ECDSA P-256 CA and
//! two ECDSA P-256 workload certificates whose only SAN is a SPIFFE URI, made per test with
//! the openssl CLI of the base image.
//!
//! - Envoy outbound → ferry inbound (strict): Envoy presents its certificate and checks
//!   ferry's URI SAN; the app behind ferry sees Envoy's identity in `x-forwarded-client-cert`.
//!   Envoy's client stops at TLS 1.2 unless told otherwise, so both 1.2 and 1.3 are tried.
//! - ferry outbound (cluster `tls: mesh`, `protocol: h2`) → Envoy inbound (client certificate
//!   required, ferry's URI SAN checked): the app behind Envoy sees ferry's identity in the
//!   `x-forwarded-client-cert` Envoy sets.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use ferry_integration::{Admin, Echo, EchoReport, Envoy, Ferry, HttpClient, to_yaml};
use serde_json::json;
use tokio::process::Command;

const FERRY_ID: &str = "spiffe://cluster.local/ns/models/sa/ferry";
const ENVOY_ID: &str = "spiffe://cluster.local/ns/models/sa/envoy";

/// The PEM files of one test's CA and two workloads.
struct Certs {
    dir: tempfile::TempDir,
}

impl Certs {
    async fn generate() -> anyhow::Result<Certs> {
        let dir = tempfile::Builder::new().prefix("envoy-mtls-").tempdir()?;
        let certs = Certs { dir };
        let d = certs.dir.path();
        openssl(
            d,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "1",
                "-subj",
                "/CN=ferry test CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        )
        .await?;
        for (name, id, serial) in [("ferry", FERRY_ID, "2"), ("envoy", ENVOY_ID, "3")] {
            let ext = d.join(format!("{name}.ext"));
            tokio::fs::write(
                &ext,
                format!(
                    "subjectAltName=URI:{id}\nbasicConstraints=critical,CA:FALSE\n\
                     keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n"
                ),
            )
            .await?;
            let (key, csr, crt) = (
                format!("{name}.key"),
                format!("{name}.csr"),
                format!("{name}.crt"),
            );
            openssl(
                d,
                &[
                    "req",
                    "-new",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:P-256",
                    "-nodes",
                    "-keyout",
                    &key,
                    "-out",
                    &csr,
                    "-subj",
                    &format!("/CN={name}"),
                ],
            )
            .await?;
            openssl(
                d,
                &[
                    "x509",
                    "-req",
                    "-in",
                    &csr,
                    "-CA",
                    "ca.crt",
                    "-CAkey",
                    "ca.key",
                    "-set_serial",
                    serial,
                    "-days",
                    "1",
                    "-out",
                    &crt,
                    "-extfile",
                    &format!("{name}.ext"),
                ],
            )
            .await?;
        }
        Ok(certs)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    fn show(&self, file: &str) -> String {
        self.path(file).display().to_string()
    }
}

async fn openssl(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .kill_on_drop(true)
        .output()
        .await
        .context("running openssl (the base image must provide it)")?;
    if !out.status.success() {
        bail!(
            "openssl {} failed ({}):\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Envoy's TLS transport socket config (`kind`: Upstream or Downstream) presenting `name`'s
/// certificate and accepting only `peer_id`.
fn envoy_tls(
    certs: &Certs,
    kind: &str,
    name: &str,
    peer_id: &str,
    extra: serde_json::Value,
) -> serde_json::Value {
    let mut context = json!({
        "alpn_protocols": ["h2"],
        "tls_certificates": [{
            "certificate_chain": { "filename": certs.show(&format!("{name}.crt")) },
            "private_key": { "filename": certs.show(&format!("{name}.key")) },
        }],
        "validation_context": {
            "trusted_ca": { "filename": certs.show("ca.crt") },
            "match_typed_subject_alt_names": [{ "san_type": "URI", "matcher": { "exact": peer_id } }],
        },
    });
    if let (Some(ctx), Some(extra)) = (context.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            ctx.insert(k.clone(), v.clone());
        }
    }
    let mut typed = json!({
        "@type": format!("type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.{kind}TlsContext"),
        "common_tls_context": context,
    });
    if kind == "Downstream" {
        typed["require_client_certificate"] = json!(true);
    }
    json!({ "name": "envoy.transport_sockets.tls", "typed_config": typed })
}

fn socket(addr: &str, port: u16) -> serde_json::Value {
    json!({ "socket_address": { "address": addr, "port_value": port } })
}

/// An Envoy config: admin and one listener on port 0 routing everything to one cluster.
fn envoy_config(
    listener_tls: Option<serde_json::Value>,
    hcm_extra: serde_json::Value,
    upstream: SocketAddr,
    upstream_tls: Option<serde_json::Value>,
    upstream_h2: bool,
) -> String {
    let mut hcm = json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "test",
        "codec_type": "AUTO",
        "route_config": {
            "name": "all",
            "virtual_hosts": [{ "name": "all", "domains": ["*"],
                "routes": [{ "match": { "prefix": "/" }, "route": { "cluster": "next", "timeout": "10s" } }] }],
        },
        "http_filters": [{ "name": "envoy.filters.http.router", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" } }],
    });
    if let (Some(h), Some(extra)) = (hcm.as_object_mut(), hcm_extra.as_object()) {
        for (k, v) in extra {
            h.insert(k.clone(), v.clone());
        }
    }
    let mut chain = json!({ "filters": [{ "name": "envoy.filters.network.http_connection_manager", "typed_config": hcm }] });
    if let Some(tls) = listener_tls {
        chain["transport_socket"] = tls;
    }
    let protocol = if upstream_h2 {
        json!({ "http2_protocol_options": {} })
    } else {
        json!({ "http_protocol_options": {} })
    };
    let mut cluster = json!({
        "name": "next",
        "type": "STATIC",
        "connect_timeout": "5s",
        "typed_extension_protocol_options": { "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": protocol } },
        "load_assignment": { "cluster_name": "next", "endpoints": [{ "lb_endpoints": [{ "endpoint": {
            "address": socket(&upstream.ip().to_string(), upstream.port()) } }] }] },
    });
    if let Some(tls) = upstream_tls {
        cluster["transport_socket"] = tls;
    }
    to_yaml(&json!({
        "admin": { "address": socket("127.0.0.1", 0) },
        "static_resources": {
            "listeners": [{ "name": "main", "address": socket("127.0.0.1", 0), "filter_chains": [chain] }],
            "clusters": [cluster],
        },
    }))
}

async fn echo_report(
    client: &HttpClient,
    addr: SocketAddr,
    path: &str,
) -> anyhow::Result<EchoReport> {
    let reply = client.get(addr, path).await?;
    anyhow::ensure!(
        reply.status == 200,
        "{path}: {} {}",
        reply.status,
        reply.text()
    );
    reply.json()
}

#[tokio::test]
async fn envoy_outbound_to_ferry_inbound_strict_over_h2() -> anyhow::Result<()> {
    let certs = Certs::generate().await?;
    let app = Echo::start("app").await?;
    let ferry = Ferry::start(&to_yaml(&json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "identity": { "cert": certs.show("ferry.crt"), "key": certs.show("ferry.key"), "trust": [certs.show("ca.crt")] },
        "listeners": [{
            "name": "inbound", "address": "127.0.0.1:0",
            "tls": { "mode": "strict", "peers": { "trust_domain": "cluster.local" } },
            "routes": [{ "name": "all", "to": "app" }],
        }],
        "clusters": [{ "name": "app", "endpoints": [app.addr().to_string()] }],
    })))
    .await?;
    let inbound = ferry.listener("inbound")?;
    // Envoy's default client maximum (TLS 1.2), then TLS 1.3 allowed.
    for (max, version) in [(None, "TLSv1.2"), (Some("TLSv1_3"), "TLSv1.3")] {
        let extra = match max {
            Some(v) => json!({ "tls_params": { "tls_maximum_protocol_version": v } }),
            None => json!({}),
        };
        let upstream_tls = envoy_tls(&certs, "Upstream", "envoy", FERRY_ID, extra);
        let envoy = Envoy::start(&envoy_config(
            None,
            json!({}),
            inbound,
            Some(upstream_tls),
            true,
        ))
        .await?;
        let front = envoy.listener("main").await?;
        let seen = echo_report(
            &HttpClient::http1(),
            front,
            &format!("/via-envoy?max={version}"),
        )
        .await
        .with_context(|| {
            format!(
                "through Envoy ({version}):\n{}\nferry:\n{}",
                envoy.logs(),
                ferry.logs()
            )
        })?;
        let xfcc = seen
            .headers
            .get("x-forwarded-client-cert")
            .with_context(|| format!("no x-forwarded-client-cert at the app: {seen:?}"))?;
        assert!(xfcc.contains(&format!("URI={ENVOY_ID}")), "{xfcc}");
        assert!(xfcc.contains(&format!("By={FERRY_ID}")), "{xfcc}");
        assert!(xfcc.contains("Hash="), "{xfcc}");
        assert_eq!(
            envoy
                .stat(&format!("cluster.next.ssl.versions.{version}"))
                .await?,
            1,
            "Envoy negotiated another version than {version}"
        );
        assert!(envoy.stat("cluster.next.upstream_cx_http2_total").await? >= 1);
        assert_eq!(envoy.stat("cluster.next.ssl.handshake").await?, 1);
    }
    let metrics = Admin::new(ferry.admin()).metrics().await?;
    assert!(
        metrics.sum("ferry_tls_handshakes_total", &[]) >= 2.0,
        "{}",
        metrics.text
    );
    assert_eq!(
        metrics.sum("ferry_tls_handshake_failures_total", &[]),
        0.0,
        "{}",
        metrics.text
    );
    Ok(())
}

#[tokio::test]
async fn ferry_outbound_to_envoy_inbound_requiring_client_certs_over_h2() -> anyhow::Result<()> {
    let certs = Certs::generate().await?;
    let app = Echo::start("app").await?;
    let listener_tls = envoy_tls(&certs, "Downstream", "envoy", FERRY_ID, json!({}));
    let xfcc = json!({
        "forward_client_cert_details": "SANITIZE_SET",
        "set_current_client_cert_details": { "uri": true },
    });
    let envoy = Envoy::start(&envoy_config(
        Some(listener_tls),
        xfcc,
        app.addr(),
        None,
        false,
    ))
    .await?;
    let envoy_in = envoy.listener("main").await?;
    let ferry = Ferry::start(&to_yaml(&json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "identity": { "cert": certs.show("ferry.crt"), "key": certs.show("ferry.key"), "trust": [certs.show("ca.crt")] },
        "listeners": [{ "name": "outbound", "address": "127.0.0.1:0", "routes": [{ "name": "all", "to": "peer" }] }],
        "clusters": [{
            "name": "peer",
            "endpoints": [envoy_in.to_string()],
            "protocol": "h2",
            "tls": { "mode": "mesh", "server": { "exact": ENVOY_ID } },
        }],
    })))
    .await?;
    let outbound = ferry.listener("outbound")?;
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        let seen = echo_report(&client, outbound, "/via-ferry")
            .await
            .with_context(|| {
                format!("through ferry:\n{}\nEnvoy:\n{}", ferry.logs(), envoy.logs())
            })?;
        let xfcc = seen
            .headers
            .get("x-forwarded-client-cert")
            .with_context(|| format!("Envoy set no x-forwarded-client-cert: {seen:?}"))?;
        assert!(xfcc.contains(&format!("URI={FERRY_ID}")), "{xfcc}");
        assert!(xfcc.contains("Hash="), "{xfcc}");
        // Envoy sanitised ferry's own header away and wrote its own: exactly one element.
        assert!(!xfcc.contains(','), "{xfcc}");
    }
    // One pooled h2 connection carried both requests.
    assert_eq!(envoy.stat("http.test.downstream_cx_ssl_total").await?, 1);
    assert!(envoy.stat("http.test.downstream_cx_http2_total").await? >= 1);
    assert_eq!(envoy.stat("http.test.downstream_rq_2xx").await?, 2);
    // A client that does not present the identity Envoy expects gets nowhere: plaintext is
    // refused by Envoy's TLS listener.
    let plain = HttpClient::http1().get(envoy_in, "/plain").await;
    assert!(plain.is_err() || plain.is_ok_and(|r| r.status != 200));
    Ok(())
}
