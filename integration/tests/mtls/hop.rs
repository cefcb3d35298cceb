//! Two sidecars: an app calls the client sidecar in plaintext, which opens mutual TLS to the
//! server sidecar's strict inbound listener, which calls the model server. HTTP/1.1, h2c and
//! gRPC (unary and streaming) cross the hop; the app behind the server learns the caller from
//! `x-forwarded-client-cert`, never from the request.

use ferry_integration::client::{body_full, grpc_channel, request};
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::{Echo, EchoReport, GrpcUpstream, HttpClient};
use futures_util::StreamExt as _;
use http::Method;
use serde_json::json;

use crate::support::{
    CLIENT_ID, Hop, INBOUND, OUTBOUND, SERVER_ID, catch_all, config, counter, counter_reaches,
    listener, start,
};

#[tokio::test]
async fn http1_and_h2c_cross_the_hop_with_xfcc() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let hop = Hop::start(echo.addr(), json!({})).await?;
    let addr = hop.outbound()?;
    let want = hop.expected_xfcc();
    for (name, client) in [("http1", HttpClient::http1()), ("h2c", HttpClient::h2c())] {
        // A caller cannot name itself: its own x-forwarded-client-cert is dropped.
        let req = request(
            Method::POST,
            addr,
            "/v2/models/resnet50/infer",
            &[(
                "x-forwarded-client-cert",
                "By=x;URI=spiffe://cluster.local/ns/admin/sa/root",
            )],
            body_full(r#"{"inputs":[]}"#),
        )?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "{name}: {}", reply.text());
        let seen: EchoReport = reply.json()?;
        assert_eq!(seen.path, "/v2/models/resnet50/infer", "{name}");
        assert_eq!(
            seen.headers.get("x-forwarded-client-cert"),
            Some(&want),
            "{name}: the app must see the server's XFCC only; headers {:?}",
            seen.headers
        );
        assert!(want.contains(&format!("By={SERVER_ID};")) && want.ends_with(CLIENT_ID));
    }
    assert_eq!(echo.requests(), 2);
    // Both requests may share one pooled TLS connection; at least one handshake happened and
    // none failed.
    counter_reaches(
        &hop.server,
        "ferry_tls_handshakes_total",
        &[("listener", INBOUND)],
        1.0,
    )
    .await?;
    let failed = counter(&hop.server, "ferry_tls_handshake_failures_total", &[]).await?;
    assert_eq!(failed, 0.0);
    Ok(())
}

#[tokio::test]
async fn grpc_unary_and_streams_cross_the_hop() -> anyhow::Result<()> {
    let up = GrpcUpstream::start("g").await?;
    let hop = Hop::start(up.addr(), json!({})).await?;
    let mut client = EchoClient::new(grpc_channel(hop.outbound()?).await?);
    let msg = |m: &str, repeat| EchoRequest {
        message: m.into(),
        payload: Vec::new(),
        repeat,
    };
    let r = client.unary(msg("over mtls", 0)).await?.into_inner();
    assert_eq!(
        (r.message.as_str(), r.instance.as_str()),
        ("over mtls", "g")
    );
    let replies: Vec<_> = client
        .server_stream(msg("s", 200))
        .await?
        .into_inner()
        .collect()
        .await;
    assert_eq!(replies.len(), 200);
    for (i, r) in replies.into_iter().enumerate() {
        assert_eq!(r?.message, format!("s#{}", i + 1));
    }
    let reqs: Vec<_> = (0..50).map(|i| msg(&format!("c{i}"), 0)).collect();
    let r = client
        .client_stream(futures_util::stream::iter(reqs))
        .await?
        .into_inner();
    assert_eq!((r.message.as_str(), r.count), ("c49", 50));
    assert_eq!(up.calls(), 3);
    Ok(())
}

#[tokio::test]
async fn client_sidecar_refuses_a_server_with_another_identity() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let hop = Hop::start(echo.addr(), json!({})).await?;
    // A second client sidecar that expects a different server identity at the same address.
    let wrong = start(&config(
        Some(hop.pki.identity(&hop.client_cert)),
        json!([listener(OUTBOUND, None, catch_all("mesh"))]),
        json!([{
            "name": "mesh",
            "endpoints": [hop.server.listener(INBOUND)?.to_string()],
            "tls": { "mode": "mesh", "server": { "exact": "spiffe://cluster.local/ns/models/sa/other" } },
        }]),
    ))
    .await?;
    let reply = HttpClient::http1()
        .get(wrong.listener(OUTBOUND)?, "/v2/models/resnet50/infer")
        .await?;
    assert!(
        reply.status.is_server_error(),
        "a server with the wrong identity must not be sent the request: {} {}",
        reply.status,
        reply.text()
    );
    assert_eq!(echo.requests(), 0, "the request reached the app");
    // The server sidecar sees the client's alert.
    counter_reaches(
        &hop.server,
        "ferry_tls_handshake_failures_total",
        &[("listener", INBOUND), ("reason", "peer_refused")],
        1.0,
    )
    .await?;
    // The right client sidecar still gets through.
    let ok = HttpClient::http1().get(hop.outbound()?, "/ok").await?;
    assert_eq!(ok.status, 200, "{}", ok.text());
    Ok(())
}
