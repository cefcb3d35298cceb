//! Certificate rotation without a restart: the server sidecar's identity files are replaced
//! (the kubelet's `..data` symlink swap, and plain renames), new handshakes present the new
//! certificate, streams opened before the swap keep flowing, and a bad replacement is refused
//! while the last good certificate keeps serving.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use bytes::BytesMut;
use ferry_integration::client::grpc_channel;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::pb::echo::{EchoReply, EchoRequest};
use ferry_integration::{
    Admin, Ferry, GrpcUpstream, HttpClient, Issued, Sse, Workload, eventually,
};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use crate::support::{
    CLIENT_ID, INBOUND, OUTBOUND, PATIENCE, Pki, SERVER_ID, assert_serves, catch_all, cluster,
    config, counter, counter_reaches, listener, mesh_cluster, path_str, start, strict,
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
