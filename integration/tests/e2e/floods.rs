//! HTTP/2 control-frame floods from a client that never reads: h2 answers one PING or SETTINGS
//! at a time and stops reading while the answer cannot be written, so the flood only fills the
//! socket buffers; `limits.stalled_write_timeout` then closes the connection. A normal client
//! on another connection is served throughout.

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
