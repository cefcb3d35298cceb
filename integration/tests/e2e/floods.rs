//! HTTP/2 control-frame floods from a client that never reads: h2 answers one PING or SETTINGS
//! at a time and stops reading while the answer cannot be written, so the flood only fills the
//! socket buffers; `limits.stalled_write_timeout` then closes the connection. A normal client
//! on another connection is served throughout. Also: `limits.h2_max_concurrent_streams` is what
//! the server advertises in its SETTINGS.

use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::{Admin, Echo, HttpClient, eventually};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpSocket;

use crate::slow_clients::H2_PREFACE;
use crate::support::{LISTENER, PATIENCE, one_upstream, start};

/// Frames per write.
const BATCH: usize = 1000;
/// Upper bound on the flood: far more than the socket buffers on both sides hold.
const MAX_FRAMES: usize = 1_000_000;

/// `BATCH` frames: PINGs (each acked by the server) with an empty SETTINGS every tenth frame
/// (also acked).
fn flood_batch() -> Vec<u8> {
    let ping = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00flooding";
    let settings = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    let mut out = Vec::with_capacity(BATCH * ping.len());
    for i in 0..BATCH {
        if i % 10 == 9 {
            out.extend_from_slice(settings);
        } else {
            out.extend_from_slice(ping);
        }
    }
    out
}

#[tokio::test]
async fn control_frame_flood_from_a_peer_that_never_reads_is_disconnected() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let mut cfg = one_upstream(echo.addr());
    cfg["listeners"][0]["limits"] =
        json!({ "stalled_write_timeout": "1s", "request_headers_timeout": "0s" });
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;

    // A small, fixed receive buffer so the acks back up quickly.
    let socket = TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(4096)?;
    let mut stream = socket.connect(addr).await?;
    stream.write_all(H2_PREFACE).await?;
    let flood = tokio::spawn(async move {
        let batch = flood_batch();
        let mut sent = 0;
        while sent < MAX_FRAMES {
            stream.write_all(&batch).await?;
            sent += BATCH;
        }
        anyhow::Ok(sent)
    });

    // Served meanwhile, on its own connection.
    let reply = HttpClient::h2c().get(addr, "/fine").await?;
    assert_eq!(reply.status, 200);

    let ended = tokio::time::timeout(Duration::from_secs(20), flood)
        .await
        .context("the flooding connection was still open after 20s")??;
    assert!(
        ended.is_err(),
        "ferry read all {MAX_FRAMES} frames of a peer that never reads"
    );
    eventually(PATIENCE, || async {
        let metrics = Admin::new(ferry.admin()).metrics().await?;
        let closes = metrics.get(
            "ferry_downstream_stalled_closes_total",
            &[("listener", LISTENER)],
        )?;
        anyhow::ensure!(closes == 1.0, "stalled closes: {closes}");
        Ok(())
    })
    .await?;
    // And still serving.
    let reply = HttpClient::h2c().get(addr, "/after").await?;
    assert_eq!(reply.status, 200);
    Ok(())
}

/// The server's first SETTINGS frame on a fresh h2c connection, as (identifier, value) pairs.
async fn server_settings(addr: std::net::SocketAddr) -> anyhow::Result<Vec<(u16, u32)>> {
    use tokio::io::AsyncReadExt;
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.write_all(H2_PREFACE).await?;
    let mut head = [0u8; 9];
    tokio::time::timeout(PATIENCE, stream.read_exact(&mut head)).await??;
    anyhow::ensure!(head[3] == 0x4, "first frame is not SETTINGS: {head:?}");
    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).await?;
    Ok(payload
        .chunks_exact(6)
        .map(|p| {
            (
                u16::from_be_bytes([p[0], p[1]]),
                u32::from_be_bytes([p[2], p[3], p[4], p[5]]),
            )
        })
        .collect())
}

#[tokio::test]
async fn h2_max_concurrent_streams_is_advertised() -> anyhow::Result<()> {
    const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    let echo = Echo::start("up").await?;
    let by_default = start(&one_upstream(echo.addr())).await?;
    let settings = server_settings(by_default.listener(LISTENER)?).await?;
    assert!(
        settings.contains(&(MAX_CONCURRENT_STREAMS, 1024)),
        "{settings:?}"
    );

    let mut cfg = one_upstream(echo.addr());
    cfg["listeners"][0]["limits"] = json!({ "h2_max_concurrent_streams": 8 });
    let configured = start(&cfg).await?;
    let settings = server_settings(configured.listener(LISTENER)?).await?;
    assert!(
        settings.contains(&(MAX_CONCURRENT_STREAMS, 8)),
        "{settings:?}"
    );
    Ok(())
}
