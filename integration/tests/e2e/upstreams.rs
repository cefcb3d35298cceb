//! The test upstreams on their own (no ferry): if these fail, the other tests cannot be
//! trusted either way.

use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use ferry_integration::client::{body_full, body_stream, request};
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::upstream::Protocols;
use ferry_integration::{
    Echo, EchoReport, GrpcUpstream, HttpClient, Recorder, Sse, UploadSink, client,
};
use futures_util::StreamExt as _;
use http::Method;
use http_body_util::BodyExt as _;

use crate::support::PATIENCE;

#[tokio::test]
async fn echo_answers_http1_and_h2c_and_obeys_steering_headers() -> anyhow::Result<()> {
    let echo = Echo::start("e1").await?;
    for (client, version) in [
        (HttpClient::http1(), "HTTP/1.1"),
        (HttpClient::h2c(), "HTTP/2.0"),
    ] {
        let req = request(
            Method::POST,
            echo.addr(),
            "/p?q=1",
            &[("x-test-status", "418"), ("x-a", "b")],
            body_full("12345"),
        )?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status.as_u16(), 418);
        let report: EchoReport = reply.json()?;
        assert_eq!(report.version, version);
        assert_eq!(report.path, "/p?q=1");
        assert_eq!(report.body_len, 5);
        assert_eq!(report.headers.get("x-a").map(String::as_str), Some("b"));
    }
    assert_eq!(echo.requests(), 2);
    Ok(())
}

#[tokio::test]
async fn http1_only_echo_refuses_h2c_and_killed_echo_refuses_connects() -> anyhow::Result<()> {
    let mut echo = Echo::start_with("h1", Protocols::Http1Only).await?;
    assert!(HttpClient::h2c().get(echo.addr(), "/").await.is_err());
    assert!(
        HttpClient::http1()
            .get(echo.addr(), "/")
            .await?
            .status
            .is_success()
    );
    echo.kill().await;
    let err = tokio::net::TcpStream::connect(echo.addr()).await;
    assert!(err.is_err(), "connect to a killed echo must be refused");
    Ok(())
}

#[tokio::test]
async fn sse_writes_only_what_the_test_releases() -> anyhow::Result<()> {
    let sse = Sse::start().await?;
    let resp = HttpClient::http1()
        .get_stream(sse.addr(), "/events")
        .await?;
    let stream = sse.next_stream(PATIENCE).await?;
    let mut body = resp.into_body();
    // Nothing released yet: no data frame may arrive.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), body.frame())
            .await
            .is_err()
    );
    stream.send("one").await?;
    let frame = body.frame().await.context("stream ended")??;
    assert_eq!(
        frame.data_ref().map(|d| d.as_ref()),
        Some(&b"data: one\n\n"[..])
    );
    Ok(())
}

#[tokio::test]
async fn upload_sink_counts_a_streamed_body() -> anyhow::Result<()> {
    let sink = UploadSink::start().await?;
    let chunks = futures_util::stream::iter(0..16).map(|_| Bytes::from(vec![7u8; 65536]));
    let req = request(
        Method::POST,
        sink.addr(),
        "/upload",
        &[],
        body_stream(chunks),
    )?;
    let reply = HttpClient::http1().call(req).await?;
    let v: serde_json::Value = reply.json()?;
    assert_eq!(v["bytes"], 16 * 65536);
    assert_eq!(sink.received(), 16 * 65536);
    Ok(())
}

#[tokio::test]
async fn grpc_upstream_serves_all_four_call_kinds() -> anyhow::Result<()> {
    let up = GrpcUpstream::start("g1").await?;
    let mut c = EchoClient::new(client::grpc_channel(up.addr()).await?);
    let msg = |m: &str| EchoRequest {
        message: m.into(),
        payload: Vec::new(),
        repeat: 3,
    };
    let r = c.unary(msg("u")).await?.into_inner();
    assert_eq!((r.message.as_str(), r.instance.as_str()), ("u", "g1"));
    let r = c
        .client_stream(futures_util::stream::iter(vec![msg("a"), msg("b")]))
        .await?
        .into_inner();
    assert_eq!((r.message.as_str(), r.count), ("b", 2));
    let replies: Vec<_> = c
        .server_stream(msg("s"))
        .await?
        .into_inner()
        .collect()
        .await;
    assert_eq!(replies.len(), 3);
    let mut bidi = c
        .bidi(futures_util::stream::iter(vec![msg("x"), msg("y")]))
        .await?
        .into_inner();
    assert_eq!(bidi.message().await?.map(|r| r.message), Some("x".into()));
    assert_eq!(bidi.message().await?.map(|r| r.count), Some(2));
    Ok(())
}

#[tokio::test]
async fn recorder_keeps_what_it_received_and_answers_as_asked() -> anyhow::Result<()> {
    let recorder = Recorder::start().await?;
    let h2 = HttpClient::h2c();
    let req = request(
        Method::POST,
        recorder.addr(),
        "/r/1?q",
        &[("x-a", "b")],
        body_full("hello"),
    )?;
    let reply = h2.call(req).await?;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json::<serde_json::Value>()?["path"], "/r/1");
    // A long answer, counted whole; a gRPC answer with its status in the trailers.
    let long = request(
        Method::GET,
        recorder.addr(),
        "/r/2",
        &[("x-test-answer-bytes", "200000")],
        body_full(""),
    )?;
    assert_eq!(HttpClient::http1().call(long).await?.body.len(), 200_000);
    let grpc = request(
        Method::POST,
        recorder.addr(),
        "/r/3",
        &[("content-type", "application/grpc")],
        body_full(""),
    )?;
    let resp = h2.send(grpc).await?;
    let collected = resp.into_body().collect().await?;
    let trailers = collected.trailers().cloned().unwrap_or_default();
    assert_eq!(collected.to_bytes().as_ref(), [0u8; 5]);
    assert_eq!(
        trailers.get("grpc-status").map(|v| v.as_bytes()),
        Some(&b"0"[..])
    );

    let all = recorder.all();
    let paths: Vec<_> = all.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/r/1?q", "/r/2", "/r/3"]);
    assert_eq!(all[0].body, b"hello");
    assert_eq!((all[0].body_len, all[0].body_complete), (5, Some(true)));
    assert_eq!(all[0].header("x-a"), Some("b"));
    assert_eq!(all[0].version, http::Version::HTTP_2);
    assert_eq!(recorder.under("/r/2").len(), 1);
    Ok(())
}
