//! Bodies stream through ferry both ways: SSE events reach the client one by one as the
//! upstream writes them, and a 1 GiB upload passes without ferry holding it in memory.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::{Bytes, BytesMut};
use ferry_integration::client::{body_stream, request};
use ferry_integration::{HttpClient, Sse, UploadSink};
use futures_util::StreamExt as _;
use http::Method;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;

use crate::support::{LISTENER, PATIENCE, one_upstream, start};

/// Reads body frames into `buf` until it holds `want`, or fails after `PATIENCE`.
pub async fn read_until(body: &mut Incoming, buf: &mut BytesMut, want: &str) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !String::from_utf8_lossy(buf).contains(want) {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .with_context(|| format!("{want:?} did not reach the client; got {buf:?}"))?
            .with_context(|| format!("stream ended before {want:?}; got {buf:?}"))?
            .context("stream broke")?;
        if let Some(data) = frame.data_ref() {
            buf.extend_from_slice(data);
        }
    }
    Ok(())
}

#[tokio::test]
async fn sse_first_event_reaches_client_before_second_is_written() -> anyhow::Result<()> {
    let sse = Sse::start().await?;
    let ferry = start(&one_upstream(sse.addr())).await?;
    let addr = ferry.listener(LISTENER)?;
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        let resp = client.get_stream(addr, "/events").await?;
        assert_eq!(resp.status(), 200);
        let ct = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok());
        assert_eq!(ct, Some("text/event-stream"));
        let upstream = sse.next_stream(PATIENCE).await?;
        let mut body = resp.into_body();
        let mut buf = BytesMut::new();
        for i in 1..=3 {
            // Event i+1 is written only after event i was read by the client through ferry.
            upstream.send(&format!("event-{i}")).await?;
            read_until(&mut body, &mut buf, &format!("data: event-{i}\n\n")).await?;
            assert!(!String::from_utf8_lossy(&buf).contains(&format!("event-{}", i + 1)));
        }
        drop(upstream);
        // The upstream ended the response: the client sees a clean end, not a reset.
        while let Some(frame) = tokio::time::timeout(PATIENCE, body.frame()).await? {
            frame.context("SSE stream reset instead of ending cleanly")?;
        }
    }
    Ok(())
}

static CHUNK: [u8; 64 * 1024] = [0xAB; 64 * 1024];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_gib_upload_streams_with_small_rss() -> anyhow::Result<()> {
    const TOTAL: u64 = 1 << 30;
    const RSS_LIMIT: u64 = 64 << 20;
    let sink = UploadSink::start().await?;
    let ferry = start(&one_upstream(sink.addr())).await?;
    let addr = ferry.listener(LISTENER)?;
    // Generated on the fly from one static chunk: the test never allocates the GiB either.
    let chunks = futures_util::stream::iter(0..TOTAL / CHUNK.len() as u64)
        .map(|_| Bytes::from_static(&CHUNK));
    let req = request(Method::POST, addr, "/upload", &[], body_stream(chunks))?;
    let started = Instant::now();
    let upload = tokio::spawn({
        let client = HttpClient::http1();
        async move { client.call(req).await }
    });
    // Sample RSS while the upload runs as well as the high-water mark at the end.
    let mut max_rss = 0;
    while !upload.is_finished() {
        max_rss = max_rss.max(ferry.rss_bytes().await?);
        if started.elapsed() > Duration::from_secs(240) {
            bail!(
                "1 GiB upload took over 240 s; sink got {} bytes",
                sink.received()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reply = upload.await??;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let v: serde_json::Value = reply.json()?;
    assert_eq!(v["bytes"].as_u64(), Some(TOTAL), "sink reply {v}");
    assert_eq!(sink.received(), TOTAL);
    let peak = ferry.peak_rss_bytes().await?;
    assert!(
        peak < RSS_LIMIT && max_rss < RSS_LIMIT,
        "ferry RSS peaked at {} MiB (sampled max {} MiB), limit 64 MiB",
        peak >> 20,
        max_rss >> 20
    );
    eprintln!(
        "1 GiB in {:?}, ferry VmHWM {} MiB",
        started.elapsed(),
        peak >> 20
    );
    Ok(())
}
