//! Certificate rotation without a restart: the server sidecar's identity files are replaced
//! (the kubelet's `..data` symlink swap, and plain renames), new handshakes present the new
//! certificate, streams opened before the swap keep flowing, and a bad replacement is refused
//! while the last good certificate keeps serving.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use bytes::BytesMut;
use ferry_integration::certs::pem_body;
use ferry_integration::client::grpc_channel;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::pb::echo::{EchoReply, EchoRequest};
use ferry_integration::{
    Admin, Ferry, GrpcUpstream, HttpClient, Issued, Sse, Workload, eventually, peers,
};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use crate::support::{
    CLIENT_ID, Cert, INBOUND, OUTBOUND, PATIENCE, Pki, SERVER_ID, catch_all, cluster, config,
    counter, counter_reaches, listener, mesh_cluster, path_str, start, strict,
};

/// Writes a new `..vN` directory with the files and swaps `..data` to it, as the kubelet does.
async fn kubelet_swap(dir: &Path, n: u32, files: &[(&str, &str)]) -> anyhow::Result<()> {
    let versioned = format!("..v{n}");
    tokio::fs::create_dir(dir.join(&versioned)).await?;
    for (name, text) in files {
        tokio::fs::write(dir.join(&versioned).join(name), text).await?;
    }
    let tmp = dir.join("..data_tmp");
    tokio::fs::symlink(&versioned, &tmp).await?;
    tokio::fs::rename(&tmp, dir.join("..data"))
        .await
        .context("swapping ..data")
}

/// The certificate a new TLS connection to `ferry`'s inbound listener is shown, as the
/// base64 body of the PEM `openssl s_client -showcerts` prints.
async fn served_cert(ferry: &Ferry, pki: &Pki, client: &Cert) -> anyhow::Result<String> {
    let out = peers::run_openssl(&[
        "s_client",
        "-connect",
        &ferry.listener(INBOUND)?.to_string(),
        "-cert",
        &path_str(&client.files.cert),
        "-key",
        &path_str(&client.files.key),
        "-CAfile",
        &path_str(&pki.ca_path()),
        "-showcerts",
    ])
    .await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let body = pem_body(&text);
    anyhow::ensure!(
        !body.is_empty(),
        "openssl s_client showed no certificate:\n{text}"
    );
    Ok(body)
}

async fn assert_serves(
    ferry: &Ferry,
    pki: &Pki,
    client: &Cert,
    want: &Issued,
    what: &str,
) -> anyhow::Result<()> {
    eventually(PATIENCE, || async {
        let got = served_cert(ferry, pki, client).await?;
        anyhow::ensure!(
            got == want.base64_body(),
            "ferry still serves another certificate"
        );
        Ok(())
    })
    .await
    .with_context(|| format!("{what}; ferry logs:\n{}", ferry.logs()))
}

/// `/config_dump` and `ferry_tls_cert_expiry_seconds` show `cert` as the identity, `id`.
async fn assert_identity(ferry: &Ferry, id: &str, cert: &Issued) -> anyhow::Result<()> {
    let admin = Admin::new(ferry.admin());
    eventually(PATIENCE, || async {
        let dump = admin.config_dump().await?;
        let identity = &dump["identity"];
        anyhow::ensure!(identity["spiffe_id"] == id, "identity {identity}");
        anyhow::ensure!(
            identity["not_after"].as_u64() == Some(cert.not_after),
            "identity {identity}, want not_after {}",
            cert.not_after
        );
        anyhow::ensure!(identity["cert"].is_string(), "identity {identity}");
        let expiry = admin
            .metrics()
            .await?
            .get("ferry_tls_cert_expiry_seconds", &[])?;
        anyhow::ensure!(
            expiry == cert.not_after as f64,
            "ferry_tls_cert_expiry_seconds is {expiry}, want {}",
            cert.not_after
        );
        Ok(())
    })
    .await
    .with_context(|| format!("ferry logs:\n{}", ferry.logs()))
}

/// Reads body frames until the buffer holds `want`.
async fn read_until(body: &mut Incoming, buf: &mut BytesMut, want: &str) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !String::from_utf8_lossy(buf).contains(want) {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .with_context(|| format!("{want:?} did not arrive; got {buf:?}"))?
            .with_context(|| format!("stream ended before {want:?}; got {buf:?}"))?
            .context("stream broke")?;
        if let Some(data) = frame.data_ref() {
            buf.extend_from_slice(data);
        }
    }
    Ok(())
}

/// One bidi round trip on an open gRPC stream.
async fn ping(
    tx: &mpsc::Sender<EchoRequest>,
    replies: &mut Streaming<EchoReply>,
    i: u64,
) -> anyhow::Result<()> {
    let message = format!("ping{i}");
    tx.send(EchoRequest {
        message: message.clone(),
        payload: Vec::new(),
        repeat: 0,
    })
    .await?;
    let r = tokio::time::timeout(PATIENCE, replies.message())
        .await
        .context("no bidi reply in time")??
        .context("bidi stream ended")?;
    anyhow::ensure!(
        r.message == message && r.count == i,
        "unexpected reply {r:?}"
    );
    Ok(())
}

#[tokio::test]
async fn configmap_swap_rotates_and_open_streams_survive() -> anyhow::Result<()> {
    let sse = Sse::start().await?;
    let grpc = GrpcUpstream::start("g").await?;
    let pki = Pki::new().await?;
    let client_cert = pki.client("client", CLIENT_ID).await?;
    let v1 = pki
        .ca
        .issue(&Workload::spiffe(SERVER_ID).loopback().serial(1))
        .await?;
    let v2 = pki
        .ca
        .issue(&Workload::spiffe(SERVER_ID).loopback().serial(2))
        .await?;
    let certs = tempfile::Builder::new().prefix("ferry-certs-").tempdir()?;
    let dir = certs.path();
    kubelet_swap(
        dir,
        1,
        &[
            ("tls.crt", &v1.cert_pem),
            ("tls.key", &v1.key_pem),
            ("ca.crt", pki.ca.pem()),
        ],
    )
    .await?;
    for name in ["tls.crt", "tls.key", "ca.crt"] {
        tokio::fs::symlink(Path::new("..data").join(name), dir.join(name)).await?;
    }
    let routes = json!([
        { "name": "events", "match": { "path": { "prefix": "/events" } }, "to": "sse" },
        { "name": "grpc", "to": "grpc" },
    ]);
    let server = start(&config(
        Some(json!({
            "cert": path_str(&dir.join("tls.crt")),
            "key": path_str(&dir.join("tls.key")),
            "trust": [path_str(&dir.join("ca.crt"))],
        })),
        json!([listener(INBOUND, Some(strict()), routes)]),
        json!([cluster("sse", sse.addr()), cluster("grpc", grpc.addr())]),
    ))
    .await?;
    let client = start(&config(
        Some(pki.identity(&client_cert)),
        json!([listener(OUTBOUND, None, catch_all("mesh"))]),
        json!([mesh_cluster("mesh", server.listener(INBOUND)?)]),
    ))
    .await?;
    let outbound = client.listener(OUTBOUND)?;
    assert_serves(&server, &pki, &client_cert, &v1, "before rotation").await?;

    // An SSE stream and a gRPC bidi stream, both over mutual TLS connections made with v1.
    let resp = HttpClient::http1().get_stream(outbound, "/events").await?;
    assert_eq!(resp.status(), 200);
    let upstream = sse.next_stream(PATIENCE).await?;
    let mut body = resp.into_body();
    let mut buf = BytesMut::new();
    upstream.send("event-1").await?;
    read_until(&mut body, &mut buf, "data: event-1\n\n").await?;
    let (tx, rx) = mpsc::channel(1);
    let mut replies = EchoClient::new(grpc_channel(outbound).await?)
        .bidi(ReceiverStream::new(rx))
        .await?
        .into_inner();
    ping(&tx, &mut replies, 1).await?;

    // Same identity, new key and serial.
    kubelet_swap(
        dir,
        2,
        &[
            ("tls.crt", &v2.cert_pem),
            ("tls.key", &v2.key_pem),
            ("ca.crt", pki.ca.pem()),
        ],
    )
    .await?;
    assert_serves(&server, &pki, &client_cert, &v2, "after the ..data swap").await?;
    upstream.send("event-2").await?;
    read_until(&mut body, &mut buf, "data: event-2\n\n").await?;
    ping(&tx, &mut replies, 2).await?;
    let dump = Admin::new(server.admin()).config_dump().await?;
    assert_eq!(dump["identity"]["spiffe_id"], SERVER_ID, "{dump}");

    // A garbage certificate: refused, counted, v2 keeps serving, streams keep flowing.
    let failures = counter(&server, "ferry_tls_reload_failures_total", &[]).await?;
    kubelet_swap(
        dir,
        3,
        &[
            (
                "tls.crt",
                "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n",
            ),
            ("tls.key", &v2.key_pem),
            ("ca.crt", pki.ca.pem()),
        ],
    )
    .await?;
    counter_reaches(
        &server,
        "ferry_tls_reload_failures_total",
        &[],
        failures + 1.0,
    )
    .await?;
    assert_serves(&server, &pki, &client_cert, &v2, "after a bad certificate").await?;
    upstream.send("event-3").await?;
    read_until(&mut body, &mut buf, "data: event-3\n\n").await?;
    ping(&tx, &mut replies, 3).await?;
    // New requests through the hop still work.
    let mut unary = EchoClient::new(grpc_channel(outbound).await?);
    let r = unary
        .unary(EchoRequest {
            message: "after".into(),
            payload: Vec::new(),
            repeat: 0,
        })
        .await?;
    assert_eq!(r.into_inner().message, "after");
    drop(tx);
    assert!(
        replies.message().await?.is_none(),
        "bidi stream must end cleanly"
    );
    Ok(())
}

#[tokio::test]
async fn renamed_files_rotate_to_a_new_identity() -> anyhow::Result<()> {
    let pki = Pki::new().await?;
    let client_cert = pki.client("client", CLIENT_ID).await?;
    let v1 = pki.server().await?;
    let new_id = "spiffe://cluster.local/ns/models/sa/triton-v2";
    let sixty_days = Duration::from_secs(60 * 24 * 3600);
    let v2 = pki
        .ca
        .issue(&Workload::spiffe(new_id).loopback().valid_for(sixty_days))
        .await?;
    let echo = ferry_integration::Echo::start("app").await?;
    let server = start(&config(
        Some(pki.identity(&v1)),
        json!([listener(INBOUND, Some(strict()), catch_all("app"))]),
        json!([cluster("app", echo.addr())]),
    ))
    .await?;
    assert_serves(&server, &pki, &client_cert, &v1.issued, "before rotation").await?;
    assert_identity(&server, SERVER_ID, &v1.issued).await?;
    let tls = pki.tls_client(&client_cert)?;
    let before = tls.get(server.listener(INBOUND)?, "/", &[]).await?;
    assert_eq!(before.status, 200, "{}", before.text());

    // A writer that replaces the key, then the certificate, each by rename: the first event
    // sees a mismatched pair (refused, old identity kept), the second the new pair.
    let dir = pki.dir();
    tokio::fs::write(dir.join(".server.key.tmp"), &v2.key_pem).await?;
    tokio::fs::rename(dir.join(".server.key.tmp"), &v1.files.key).await?;
    tokio::fs::write(dir.join(".server.crt.tmp"), &v2.cert_pem).await?;
    tokio::fs::rename(dir.join(".server.crt.tmp"), &v1.files.cert).await?;
    assert_serves(&server, &pki, &client_cert, &v2, "after renames").await?;
    assert_identity(&server, new_id, &v2).await?;
    // The new identity signs x-forwarded-client-cert.
    let reply = tls.get(server.listener(INBOUND)?, "/", &[]).await?;
    let seen: ferry_integration::EchoReport = reply.json()?;
    let xfcc = seen
        .headers
        .get("x-forwarded-client-cert")
        .cloned()
        .unwrap_or_default();
    assert!(xfcc.starts_with(&format!("By={new_id};")), "{xfcc}");
    Ok(())
}

#[tokio::test]
async fn trust_bundle_rewrite_admits_a_new_ca() -> anyhow::Result<()> {
    let echo = ferry_integration::Echo::start("app").await?;
    let pki = Pki::new().await?;
    let server_cert = pki.server().await?;
    let server = start(&config(
        Some(pki.identity(&server_cert)),
        json!([listener(INBOUND, Some(strict()), catch_all("app"))]),
        json!([cluster("app", echo.addr())]),
    ))
    .await?;
    let addr = server.listener(INBOUND)?;
    // A client issued by the next CA, which trusts both (the order of a trust-anchor change).
    let next = Pki::named("next mesh CA").await?;
    let moved = next.client("moved", CLIENT_ID).await?;
    let both = format!("{}{}", pki.ca.pem(), next.ca.pem());
    let client =
        ferry_integration::TlsClient::new(&both, &moved.issued.cert_pem, &moved.issued.key_pem)?;
    assert!(
        client.get(addr, "/", &[]).await.is_err(),
        "served before ferry trusts the new CA"
    );
    counter_reaches(
        &server,
        "ferry_tls_handshake_failures_total",
        &[("listener", INBOUND), ("reason", "unknown_ca")],
        1.0,
    )
    .await?;
    let tmp = pki.dir().join(".ca.crt.tmp");
    tokio::fs::write(&tmp, &both).await?;
    tokio::fs::rename(&tmp, pki.ca_path()).await?;
    let reply = eventually(PATIENCE, || async { client.get(addr, "/", &[]).await })
        .await
        .with_context(|| format!("the new CA was never trusted; logs:\n{}", server.logs()))?;
    assert_eq!(reply.status, 200, "{}", reply.text());
    // The old CA's clients are still admitted.
    let old = pki.tls_client(&pki.client("old", CLIENT_ID).await?)?;
    assert_eq!(old.get(addr, "/", &[]).await?.status, 200);
    Ok(())
}

#[tokio::test]
async fn config_reload_naming_other_files_switches_identity() -> anyhow::Result<()> {
    let echo = ferry_integration::Echo::start("app").await?;
    let pki = Pki::new().await?;
    let client_cert = pki.client("client", CLIENT_ID).await?;
    let v1 = pki.server().await?;
    let v2 = pki
        .issue("server-v2", &Workload::spiffe(SERVER_ID).loopback())
        .await?;
    let cfg = |identity| {
        config(
            Some(identity),
            json!([listener(INBOUND, Some(strict()), catch_all("app"))]),
            json!([cluster("app", echo.addr())]),
        )
    };
    let server = start(&cfg(pki.identity(&v1))).await?;
    assert_serves(&server, &pki, &client_cert, &v1.issued, "at start").await?;
    server
        .config()?
        .write_value(&cfg(pki.identity(&v2)))
        .await?;
    assert_serves(
        &server,
        &pki,
        &client_cert,
        &v2.issued,
        "after the config reload",
    )
    .await?;
    // A config naming a missing key is refused as a whole and counted (as a TLS reload failure,
    // not a config reload failure); v2 keeps serving.
    let failures = counter(&server, "ferry_tls_reload_failures_total", &[]).await?;
    let mut broken = pki.identity(&v2);
    broken["key"] = json!(path_str(&pki.dir().join("missing.key")));
    server.config()?.write_value(&cfg(broken)).await?;
    counter_reaches(
        &server,
        "ferry_tls_reload_failures_total",
        &[],
        failures + 1.0,
    )
    .await?;
    assert_serves(
        &server,
        &pki,
        &client_cert,
        &v2.issued,
        "after a bad reload",
    )
    .await?;
    let ok = pki
        .tls_client(&client_cert)?
        .get(server.listener(INBOUND)?, "/", &[])
        .await?;
    assert_eq!(ok.status, 200, "{}", ok.text());
    Ok(())
}
