//! Hot reload: 100 ConfigMap-style swaps under a steady request loop with an SSE stream and a
//! gRPC stream open throughout; a bad file keeps the old table; SIGHUP and a plain-file rename
//! reload as well.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::Context as _;
use bytes::BytesMut;
use ferry_integration::client::grpc_channel;
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::{
    Admin, ConfigDir, Echo, EchoReport, Ferry, GrpcUpstream, HttpClient, Sse, eventually, to_yaml,
};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::streaming::read_until;
use crate::support::{LISTENER, PATIENCE, cluster, config, start};

const GEN: &str = "x-ferry-generation";

/// Generation `n` of the config: identical except for a header the route sets, so a request
/// proves which table served it.
fn generation(n: u32, echo: &Echo, sse: &Sse, grpc: &GrpcUpstream) -> Value {
    config(
        json!([
            { "name": "sse", "match": { "path": { "prefix": "/events" } }, "to": "sse" },
            { "name": "grpc", "match": { "path": { "prefix": "/ferry.test.v1.Echo/" } }, "to": "grpc" },
            { "name": "all", "to": "echo", "request_headers": { "set": { GEN: n.to_string() } } },
        ]),
        json!([
            cluster("echo", &[echo.addr()]),
            cluster("sse", &[sse.addr()]),
            cluster("grpc", &[grpc.addr()]),
        ]),
    )
}

/// Waits until a request through ferry is served by generation `n`.
async fn served_by(client: &HttpClient, ferry: &Ferry, n: u32) -> anyhow::Result<()> {
    let addr = ferry.listener(LISTENER)?;
    eventually(PATIENCE, || async {
        let seen: EchoReport = client.get(addr, "/probe").await?.json()?;
        let g = seen.headers.get(GEN).cloned().unwrap_or_default();
        anyhow::ensure!(g == n.to_string(), "still generation {g:?}, want {n}");
        Ok(())
    })
    .await
}

/// A request loop that counts successes and failures until stopped.
fn request_loop(
    client: HttpClient,
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<Vec<String>> {
    tokio::spawn(async move {
        let mut failures = Vec::new();
        let mut i = 0u64;
        while !stop.load(Ordering::SeqCst) {
            i += 1;
            match client.get(addr, &format!("/loop/{i}")).await {
                Ok(r) if r.status == 200 => {
                    ok.fetch_add(1, Ordering::Relaxed);
                }
                Ok(r) => failures.push(format!("request {i}: {} {}", r.status, r.text())),
                Err(e) => failures.push(format!("request {i}: {e:#}")),
            }
        }
        failures
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_reloads_under_load_keep_requests_and_streams() -> anyhow::Result<()> {
    let (echo, sse, grpc) = (
        Echo::start("e").await?,
        Sse::start().await?,
        GrpcUpstream::start("g").await?,
    );
    let ferry = start(&generation(0, &echo, &sse, &grpc)).await?;
    let addr = ferry.listener(LISTENER)?;
    let probe = HttpClient::http1();

    // Long-lived streams opened on generation 0.
    let sse_resp = HttpClient::http1().get_stream(addr, "/events").await?;
    let sse_up = sse.next_stream(PATIENCE).await?;
    let mut sse_body = sse_resp.into_body();
    let mut sse_buf = BytesMut::new();
    let mut grpc_client = EchoClient::new(grpc_channel(addr).await?);
    let (bidi_tx, bidi_rx) = mpsc::channel(1);
    let mut bidi = grpc_client
        .bidi(ReceiverStream::new(bidi_rx))
        .await?
        .into_inner();

    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let loops = [
        request_loop(HttpClient::http1(), addr, stop.clone(), ok.clone()),
        request_loop(HttpClient::h2c(), addr, stop.clone(), ok.clone()),
    ];

    let dir = ferry.config()?;
    for n in 1..=100u32 {
        dir.write_value(&generation(n, &echo, &sse, &grpc)).await?;
        served_by(&probe, &ferry, n)
            .await
            .with_context(|| format!("reload {n}"))?;
        // Both streams still flow after every swap.
        sse_up.send(&format!("after-{n}")).await?;
        read_until(&mut sse_body, &mut sse_buf, &format!("data: after-{n}\n\n")).await?;
        let ping = EchoRequest {
            message: format!("ping-{n}"),
            ..Default::default()
        };
        bidi_tx.send(ping).await?;
        let pong = bidi
            .message()
            .await?
            .context("gRPC stream ended during reloads")?;
        assert_eq!(
            (pong.message, pong.count),
            (format!("ping-{n}"), u64::from(n))
        );
    }
    stop.store(true, Ordering::SeqCst);
    for l in loops {
        let failures = l.await?;
        assert!(
            failures.is_empty(),
            "requests failed during reloads: {failures:#?}"
        );
    }
    assert!(
        ok.load(Ordering::Relaxed) >= 100,
        "the request loop barely ran"
    );

    // Both streams end cleanly: no reset at any point.
    drop(sse_up);
    while let Some(frame) = tokio::time::timeout(PATIENCE, sse_body.frame()).await? {
        frame.context("SSE stream was reset")?;
    }
    drop(bidi_tx);
    assert!(
        bidi.message().await?.is_none(),
        "gRPC stream must end with OK"
    );

    let m = Admin::new(ferry.admin()).metrics().await?;
    assert!(
        m.get("ferry_config_reloads_total", &[])? >= 100.0,
        "{}",
        m.text
    );
    assert_eq!(m.sum("ferry_config_reload_failures_total", &[]), 0.0);
    Ok(())
}

#[tokio::test]
async fn bad_config_on_reload_keeps_the_old_table() -> anyhow::Result<()> {
    let (echo, sse, grpc) = (
        Echo::start("e").await?,
        Sse::start().await?,
        GrpcUpstream::start("g").await?,
    );
    let ferry = start(&generation(1, &echo, &sse, &grpc)).await?;
    let admin = Admin::new(ferry.admin());
    let client = HttpClient::http1();
    served_by(&client, &ferry, 1).await?;
    let version = admin.config_dump().await?["version"].clone();
    let before = admin
        .metrics()
        .await?
        .sum("ferry_config_reload_failures_total", &[]);

    let mut bad = generation(2, &echo, &sse, &grpc);
    bad["listeners"][0]["routes"][2]["to"] = json!("no-such-cluster");
    bad["listeners"][0]["bogus_field"] = json!(true);
    ferry.config()?.write_value(&bad).await?;
    eventually(PATIENCE, || async {
        let failures = admin
            .metrics()
            .await?
            .sum("ferry_config_reload_failures_total", &[]);
        anyhow::ensure!(failures > before, "reload failure not counted ({failures})");
        Ok(())
    })
    .await?;
    // Still generation 1, same config version.
    served_by(&client, &ferry, 1).await?;
    assert_eq!(admin.config_dump().await?["version"], version);
    let reply = client.get(ferry.listener(LISTENER)?, "/still").await?;
    assert_eq!(reply.status, 200);

    // A good file after the bad one is picked up.
    ferry
        .config()?
        .write_value(&generation(3, &echo, &sse, &grpc))
        .await?;
    served_by(&client, &ferry, 3).await?;
    assert_ne!(admin.config_dump().await?["version"], version);
    Ok(())
}

#[tokio::test]
async fn sighup_reloads_a_change_the_watcher_cannot_see() -> anyhow::Result<()> {
    let (echo, sse, grpc) = (
        Echo::start("e").await?,
        Sse::start().await?,
        GrpcUpstream::start("g").await?,
    );
    let dir = ConfigDir::outside_watch(&to_yaml(&generation(1, &echo, &sse, &grpc))).await?;
    let ferry = Ferry::start_in(dir).await?;
    let client = HttpClient::http1();
    served_by(&client, &ferry, 1).await?;
    // The file changes in a directory ferry does not watch; only SIGHUP can bring it in.
    ferry
        .config()?
        .write_value(&generation(2, &echo, &sse, &grpc))
        .await?;
    ferry.signal("HUP").await?;
    served_by(&client, &ferry, 2).await?;
    let m = Admin::new(ferry.admin()).metrics().await?;
    assert!(
        m.get("ferry_config_reloads_total", &[])? >= 1.0,
        "{}",
        m.text
    );
    Ok(())
}

#[tokio::test]
async fn plain_file_replaced_by_rename_reloads() -> anyhow::Result<()> {
    let (echo, sse, grpc) = (
        Echo::start("e").await?,
        Sse::start().await?,
        GrpcUpstream::start("g").await?,
    );
    let dir = ConfigDir::plain(&to_yaml(&generation(1, &echo, &sse, &grpc))).await?;
    let ferry = Ferry::start_in(dir).await?;
    let client = HttpClient::http1();
    served_by(&client, &ferry, 1).await?;
    ferry
        .config()?
        .write_value(&generation(2, &echo, &sse, &grpc))
        .await?;
    served_by(&client, &ferry, 2).await?;
    Ok(())
}
