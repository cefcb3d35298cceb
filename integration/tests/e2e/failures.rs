//! Every failure answer: no route 404 JSON (gRPC UNIMPLEMENTED), upstream unreachable 503
//! (UNAVAILABLE), timeout 504 (DEADLINE_EXCEEDED), headers over limit 431, body over limit 413,
//! malformed HTTP 400 and close. One bad connection never affects another.

use std::time::{Duration, Instant};

use bytes::Bytes;
use ferry_integration::client::{body_full, body_stream, grpc_channel, raw_exchange, request};
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::upstream::grpc::DELAY_KEY;
use ferry_integration::{Admin, Echo, GrpcUpstream, HttpClient};
use futures_util::StreamExt as _;
use http::Method;
use serde_json::json;

use crate::support::{LISTENER, closed_port, cluster, config, start};

fn grpc_msg() -> EchoRequest {
    EchoRequest {
        message: "m".into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn no_route_is_404_json_and_grpc_unimplemented() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let cfg = config(
        json!([{ "name": "only", "match": { "path": { "prefix": "/only/" } }, "to": "up" }]),
        json!([cluster("up", &[echo.addr()])]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        let reply = client.get(addr, "/elsewhere").await?;
        assert_eq!(reply.status, 404);
        assert!(
            reply
                .header("content-type")
                .is_some_and(|c| c.starts_with("application/json"))
        );
        let body: serde_json::Value = reply.json()?;
        assert!(body["error"].is_string(), "404 body {body}");
    }
    let mut grpc = EchoClient::new(grpc_channel(addr).await?);
    let status = grpc.unary(grpc_msg()).await.expect_err("no route");
    assert_eq!(status.code(), tonic::Code::Unimplemented, "{status:?}");
    assert_eq!(echo.requests(), 0);
    Ok(())
}

#[tokio::test]
async fn unreachable_upstream_is_503_and_grpc_unavailable() -> anyhow::Result<()> {
    let cfg = config(
        json!([{ "name": "all", "to": "dead" }]),
        json!([cluster("dead", &[closed_port().await?])]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        let reply = client.get(addr, "/x").await?;
        assert_eq!(reply.status, 503, "{}", reply.text());
    }
    let mut grpc = EchoClient::new(grpc_channel(addr).await?);
    let status = grpc.unary(grpc_msg()).await.expect_err("upstream is down");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    let m = Admin::new(ferry.admin()).metrics().await?;
    assert!(
        m.sum(
            "ferry_upstream_connect_errors_total",
            &[("cluster", "dead")]
        ) >= 1.0,
        "{}",
        m.text
    );
    Ok(())
}

#[tokio::test]
async fn slow_upstream_is_504_and_grpc_deadline_exceeded() -> anyhow::Result<()> {
    let (echo, grpc_up) = (Echo::start("slow").await?, GrpcUpstream::start("g").await?);
    let cfg = config(
        json!([
            { "name": "grpc", "match": { "path": { "prefix": "/ferry.test.v1.Echo/" } }, "to": "g", "timeout": "300ms" },
            { "name": "all", "to": "slow", "timeout": "300ms" },
        ]),
        json!([
            cluster("slow", &[echo.addr()]),
            cluster("g", &[grpc_up.addr()])
        ]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let started = Instant::now();
    let req = request(
        Method::GET,
        addr,
        "/slow",
        &[("x-test-delay-ms", "5000")],
        body_full(""),
    )?;
    let reply = HttpClient::http1().call(req).await?;
    assert_eq!(reply.status, 504, "{}", reply.text());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "timeout fired late: {:?}",
        started.elapsed()
    );
    let mut grpc = EchoClient::new(grpc_channel(addr).await?);
    let mut req = tonic::Request::new(grpc_msg());
    req.metadata_mut().insert(DELAY_KEY, "5000".parse()?);
    let status = grpc.unary(req).await.expect_err("upstream too slow");
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    Ok(())
}

fn limited(echo: &Echo) -> serde_json::Value {
    let mut cfg = config(
        json!([{ "name": "all", "to": "up" }]),
        json!([cluster("up", &[echo.addr()])]),
    );
    cfg["listeners"][0]["limits"] =
        json!({ "max_request_headers_bytes": 4096, "max_request_body_bytes": 1024 });
    cfg
}

#[tokio::test]
async fn headers_over_limit_are_431() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&limited(&echo)).await?;
    let addr = ferry.listener(LISTENER)?;
    let big = "v".repeat(8192);
    let req = request(Method::GET, addr, "/", &[("x-big", &big)], body_full(""))?;
    let reply = HttpClient::http1().call(req).await?;
    assert_eq!(reply.status, 431, "{}", reply.text());
    // Just under the limit still passes.
    let small = "v".repeat(1024);
    let req = request(
        Method::GET,
        addr,
        "/",
        &[("x-small", &small)],
        body_full(""),
    )?;
    assert_eq!(HttpClient::http1().call(req).await?.status, 200);
    assert_eq!(echo.requests(), 1);
    Ok(())
}

#[tokio::test]
async fn body_over_limit_is_413() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&limited(&echo)).await?;
    let addr = ferry.listener(LISTENER)?;
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        // Declared length over the limit.
        let req = request(Method::POST, addr, "/", &[], body_full(vec![1u8; 4096]))?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 413, "declared: {}", reply.text());
        // Streamed (chunked / no length) body that grows over the limit.
        let chunks = futures_util::stream::iter(0..8).map(|_| Bytes::from(vec![2u8; 512]));
        let req = request(Method::POST, addr, "/", &[], body_stream(chunks))?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 413, "streamed: {}", reply.text());
        // At the limit is fine.
        let req = request(Method::POST, addr, "/", &[], body_full(vec![1u8; 1024]))?;
        assert_eq!(client.call(req).await?.status, 200);
    }
    Ok(())
}

#[tokio::test]
async fn body_over_limit_while_translating_is_413() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let mut cfg = limited(&echo);
    cfg["listeners"][0]["routes"] = json!([{
        "name": "all",
        "to": "up",
        "translate": { "from": "rest", "to": "grpc", "protocol": "oip-v2" },
    }]);
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        // No declared length: the listener's limit cuts the stream while the translator is
        // buffering it, and that must read as "too large", not as malformed JSON.
        let chunks = futures_util::stream::iter(0..8).map(|_| Bytes::from(vec![b' '; 512]));
        let req = request(
            Method::POST,
            addr,
            "/v2/models/m/infer",
            &[],
            body_stream(chunks),
        )?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 413, "{}", reply.text());
        assert!(
            reply.text().contains("exceeds the limit of 1024"),
            "{}",
            reply.text()
        );
    }
    assert_eq!(echo.requests(), 0, "the upstream must not be called");
    Ok(())
}

#[tokio::test]
async fn malformed_http_is_400_and_closed_without_affecting_others() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&crate::support::one_upstream(echo.addr())).await?;
    let addr = ferry.listener(LISTENER)?;
    // A keep-alive client connection opened before the bad one must stay usable.
    let good = HttpClient::http1();
    assert_eq!(good.get(addr, "/before").await?.status, 200);
    let bad_requests: [&[u8]; 3] = [
        b"GET / HTTP/1.1\r\nHost: a\r\nthis line has no colon\r\n\r\n",
        b"GET /\x01bad HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n",
    ];
    for raw in bad_requests {
        let (answer, closed) = raw_exchange(addr, raw, Duration::from_secs(5)).await?;
        assert!(answer.starts_with("HTTP/1.1 400"), "{raw:?} got {answer:?}");
        assert!(closed, "{raw:?}: connection left open after 400");
    }
    assert_eq!(good.get(addr, "/after").await?.status, 200);
    assert_eq!(echo.requests(), 2);
    Ok(())
}
