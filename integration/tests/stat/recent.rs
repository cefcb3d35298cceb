//! `/recent` with no access-log sink: the failed answers (newest first) and the slowest, in
//! the access log's JSON schema.

use bytes::Bytes;
use ferry_integration::client::{body_full, grpc_channel, request};
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::upstream::grpc::{DELAY_KEY, TRAILER_STATUS_KEY};
use ferry_integration::{Admin, HttpClient, eventually};
use http::Method;
use serde_json::Value;

use crate::support::{MAIN, PATIENCE, Scene};

/// Records `/recent` keeps in each list.
const KEEP: usize = 50;

#[tokio::test]
async fn recent_keeps_failed_and_slowest_answers_without_a_sink() -> anyhow::Result<()> {
    let scene = Scene::start().await?;
    scene.known_traffic().await?;
    // One answer far slower than the rest.
    let reply = HttpClient::http1()
        .call(request(
            Method::GET,
            scene.ferry.listener(MAIN)?,
            "/v2/models/bge/ready?secret=1",
            &[("x-test-delay-ms", "400"), ("x-request-id", "the-slow-one")],
            body_full(Bytes::new()),
        )?)
        .await?;
    assert_eq!(reply.status.as_u16(), 200);
    let admin = Admin::new(scene.ferry.admin());
    let recent: Value = eventually(PATIENCE, || async {
        let recent: Value = admin.get("/recent").await?.json()?;
        let n = recent["failed"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(n == 5, "{n} failed kept in {recent:#}");
        Ok(recent)
    })
    .await?;
    // 3 × 503 and 2 × UNAVAILABLE, newest first: the gRPC ones were sent last.
    let failed = recent["failed"].as_array().expect("failed");
    assert_eq!(failed[0]["route"], "grpc");
    assert_eq!(failed[0]["grpc_status"], 14);
    assert_eq!(failed[0]["grpc_service"], "ferry.test.v1.Echo");
    let http_failed: Vec<&Value> = failed.iter().filter(|r| r["route"] == "chat").collect();
    assert_eq!(http_failed.len(), 3, "{recent:#}");
    for r in http_failed {
        assert_eq!(r["status"], 503);
        assert_eq!(r["model"], "llama");
        assert_eq!(r["cluster"], "llm");
        assert_eq!(r["path"], "/v2/models/llama/ready");
        assert!(
            r["request_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("chat-503-"))
        );
        assert!(r["ts"].as_str().is_some_and(|t| t.ends_with('Z')));
        assert!(r["duration_ms"].as_f64().is_some() && r["ttfb_ms"].as_f64().is_some());
    }
    // 404s are client errors: not kept as failed.
    assert!(failed.iter().all(|r| r["status"] != 404), "{recent:#}");
    let slowest = recent["slowest"].as_array().expect("slowest");
    assert_eq!(slowest[0]["request_id"], "the-slow-one", "{recent:#}");
    assert_eq!(slowest[0]["path"], "/v2/models/bge/ready");
    assert!(slowest[0]["ttfb_ms"].as_f64().unwrap_or(0.0) >= 400.0);
    // Every answer so far fits in the 50 slowest.
    assert_eq!(slowest.len(), 17 + 5 + 7 + 1, "{recent:#}");
    let ttfb: Vec<f64> = slowest
        .iter()
        .filter_map(|r| r["ttfb_ms"].as_f64())
        .collect();
    assert!(
        ttfb.windows(2).all(|w| w[0] >= w[1]),
        "not slowest first: {ttfb:?}"
    );
    Ok(())
}

/// A gRPC stream whose response headers looked fine and whose trailers say INTERNAL is kept
/// as failed without an access-log sink, even when it was too fast to be among the slowest.
#[tokio::test]
async fn recent_keeps_a_grpc_failure_told_in_the_trailers() -> anyhow::Result<()> {
    let scene = Scene::start().await?;
    let addr = scene.ferry.listener(MAIN)?;
    let channel = grpc_channel(addr).await?;
    // Fill the slowest with 50 answers of 100 ms, so a fast answer is not kept as slow.
    let slow = (0..KEEP).map(|_| {
        let mut client = EchoClient::new(channel.clone());
        async move {
            let mut req = tonic::Request::new(echo_request(0));
            req.metadata_mut().insert(DELAY_KEY, "100".parse()?);
            client.unary(req).await?;
            anyhow::Ok(())
        }
    });
    futures_util::future::try_join_all(slow).await?;
    let mut client = EchoClient::new(channel);
    let mut req = tonic::Request::new(echo_request(2));
    req.metadata_mut()
        .insert("x-request-id", "streamed-then-failed".parse()?);
    req.metadata_mut().insert(TRAILER_STATUS_KEY, "13".parse()?);
    let mut stream = client.server_stream(req).await?.into_inner();
    let (mut replies, mut end) = (0, None);
    loop {
        match stream.message().await {
            Ok(Some(_)) => replies += 1,
            Ok(None) => break,
            Err(status) => {
                end = Some(status.code());
                break;
            }
        }
    }
    assert_eq!((replies, end), (2, Some(tonic::Code::Internal)));
    let admin = Admin::new(scene.ferry.admin());
    let recent: Value = eventually(PATIENCE, || async {
        let recent: Value = admin.get("/recent").await?.json()?;
        let slowest = recent["slowest"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(slowest == KEEP, "{slowest} slowest kept in {recent:#}");
        anyhow::ensure!(
            recent["failed"]
                .as_array()
                .is_some_and(|f| f.iter().any(|r| r["request_id"] == "streamed-then-failed")),
            "the stream's failure is not kept: {recent:#}"
        );
        Ok(recent)
    })
    .await?;
    let failed = &recent["failed"][0];
    assert_eq!(failed["grpc_status"], 13, "{recent:#}");
    assert_eq!(failed["status"], 200);
    assert_eq!(failed["grpc_method"], "ServerStream");
    assert_eq!(failed["route"], "grpc");
    assert!(
        failed["bytes_out"].as_u64().is_some_and(|b| b > 0),
        "{failed}"
    );
    let slowest = recent["slowest"].as_array().expect("slowest");
    assert!(
        slowest
            .iter()
            .all(|r| r["request_id"] != "streamed-then-failed"),
        "{recent:#}"
    );
    Ok(())
}

fn echo_request(repeat: u32) -> EchoRequest {
    EchoRequest {
        message: "hi".into(),
        payload: Vec::new(),
        repeat,
    }
}
