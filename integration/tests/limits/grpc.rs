//! What gRPC callers see: a real grpcio client gets RESOURCE_EXHAUSTED (8) over a rate limit,
//! with `retry-after`; a tonic client gets UNAVAILABLE (14) when the concurrency queue is full.

use ferry_integration::client::grpc_channel;
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::upstream::grpc::DELAY_KEY;
use ferry_integration::{GrpcUpstream, eventually, peers};
use serde_json::json;

use crate::support::{LISTENER, PATIENCE, one_route, start};

fn msg(m: &str) -> EchoRequest {
    EchoRequest {
        message: m.into(),
        payload: Vec::new(),
        repeat: 0,
    }
}

#[tokio::test]
async fn grpcio_sees_resource_exhausted_over_a_rate_limit() -> anyhow::Result<()> {
    let up = GrpcUpstream::start("g").await?;
    let limit = json!({ "rate_limit": [{ "name": "calls", "requests": 2, "per": "60s" }] });
    let ferry = start(&one_route(up.addr(), limit)).await?;
    let out = peers::grpcio_client(ferry.listener(LISTENER)?, &["--unary-calls", "4"]).await?;
    let calls = out["calls"].as_array().cloned().unwrap_or_default();
    let codes: Vec<_> = calls
        .iter()
        .map(|c| c["code"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        codes,
        ["OK", "OK", "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"],
        "{out}"
    );
    for refused in &calls[2..] {
        assert_eq!(refused["value"], 8, "{refused}");
        let details = refused["details"].as_str().unwrap_or_default();
        assert!(
            details.contains("rate limit \"calls\" exceeded"),
            "{refused}"
        );
        // Trailers-only: grpcio hands the headers of the one HEADERS frame over as trailers.
        let retry_after = refused["trailing_metadata"]["retry-after"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok());
        assert!(retry_after.is_some_and(|s| s >= 1), "{refused}");
    }
    assert_eq!(up.calls(), 2, "refused calls never reached the upstream");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_unavailable_to_grpc_callers() -> anyhow::Result<()> {
    let up = GrpcUpstream::start("g").await?;
    let limit = json!({ "concurrency": { "max": 1, "queue": 0 } });
    let ferry = start(&one_route(up.addr(), limit)).await?;
    let channel = grpc_channel(ferry.listener(LISTENER)?).await?;
    let mut slow = EchoClient::new(channel.clone());
    let held = tokio::spawn(async move {
        let mut req = tonic::Request::new(msg("slow"));
        req.metadata_mut().insert(DELAY_KEY, "2000".parse()?);
        anyhow::Ok(slow.unary(req).await?.into_inner().message)
    });
    eventually(PATIENCE, || async {
        anyhow::ensure!(
            up.calls() == 1,
            "the slow call has not reached the upstream"
        );
        Ok(())
    })
    .await?;
    let status = EchoClient::new(channel)
        .unary(msg("shed"))
        .await
        .expect_err("the only slot is taken and there is no queue");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert!(status.message().contains("queue is full"), "{status:?}");
    assert_eq!(held.await??, "slow");
    assert_eq!(up.calls(), 1);
    Ok(())
}
