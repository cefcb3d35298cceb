//! gRPC through ferry: unary, client-, server- and bidi-streaming, with status and trailers
//! intact.

use ferry_integration::GrpcUpstream;
use ferry_integration::client::grpc_channel;
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::upstream::grpc::STATUS_KEY;
use futures_util::StreamExt as _;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

use crate::support::{LISTENER, one_upstream, start};

fn msg(m: &str) -> EchoRequest {
    EchoRequest {
        message: m.into(),
        payload: Vec::new(),
        repeat: 0,
    }
}

async fn client_through_ferry()
-> anyhow::Result<(GrpcUpstream, ferry_integration::Ferry, EchoClient<Channel>)> {
    let up = GrpcUpstream::start("g").await?;
    let ferry = start(&one_upstream(up.addr())).await?;
    let client = EchoClient::new(grpc_channel(ferry.listener(LISTENER)?).await?);
    Ok((up, ferry, client))
}

#[tokio::test]
async fn unary_with_large_message_and_error_status() -> anyhow::Result<()> {
    let (up, _ferry, mut c) = client_through_ferry().await?;
    let r = c.unary(msg("hi")).await?.into_inner();
    assert_eq!((r.message.as_str(), r.instance.as_str()), ("hi", "g"));
    let big = EchoRequest {
        payload: vec![9u8; 1 << 20],
        ..msg("big")
    };
    assert_eq!(c.unary(big).await?.into_inner().message, "big");
    // The status travels in trailers; ferry must pass them as they are.
    let mut req = tonic::Request::new(msg("fail"));
    req.metadata_mut().insert(STATUS_KEY, "5".parse()?);
    let status = c.unary(req).await.expect_err("upstream answered NOT_FOUND");
    assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
    assert_eq!(status.message(), "status requested by the test");
    assert_eq!(up.calls(), 3);
    Ok(())
}

#[tokio::test]
async fn client_streaming() -> anyhow::Result<()> {
    let (_up, _ferry, mut c) = client_through_ferry().await?;
    let reqs: Vec<_> = (0..200).map(|i| msg(&format!("m{i}"))).collect();
    let r = c
        .client_stream(futures_util::stream::iter(reqs))
        .await?
        .into_inner();
    assert_eq!((r.message.as_str(), r.count), ("m199", 200));
    Ok(())
}

#[tokio::test]
async fn server_streaming() -> anyhow::Result<()> {
    let (_up, _ferry, mut c) = client_through_ferry().await?;
    let req = EchoRequest {
        repeat: 500,
        ..msg("s")
    };
    let replies: Vec<_> = c.server_stream(req).await?.into_inner().collect().await;
    assert_eq!(replies.len(), 500);
    for (i, r) in replies.into_iter().enumerate() {
        let r = r?;
        assert_eq!(r.count, i as u64 + 1);
        assert_eq!(r.message, format!("s#{}", i + 1));
    }
    Ok(())
}

#[tokio::test]
async fn bidi_streaming_ping_pong() -> anyhow::Result<()> {
    let (_up, _ferry, mut c) = client_through_ferry().await?;
    let (tx, rx) = mpsc::channel(1);
    let mut replies = c.bidi(ReceiverStream::new(rx)).await?.into_inner();
    // Each reply must arrive before the next request is sent: nothing is buffered per stream.
    for i in 1..=50u64 {
        tx.send(msg(&format!("ping{i}"))).await?;
        let r = replies.message().await?.expect("stream ended early");
        assert_eq!((r.message, r.count), (format!("ping{i}"), i));
    }
    drop(tx);
    assert!(
        replies.message().await?.is_none(),
        "stream must end cleanly with OK"
    );
    Ok(())
}
