//! A tap whose client never reads: traffic neither fails nor waits for it, the tap loses
//! records rather than buffering them all, and says how many it lost.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ferry_integration::{Admin, Echo, HttpClient, eventually};
use futures_util::future::try_join_all;
use http::Method;
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

use crate::support::{LISTENER, PATIENCE, send, start_ferry};

/// Requests per batch; with paths of [`PATH_LEN`] bytes their records are ~20 MB, far more
/// than a tap's queue, hyper's write buffer and the sockets' buffers hold together.
const REQUESTS: usize = 8_000;
const PATH_LEN: usize = 2_000;
const CONCURRENCY: usize = 32;

/// Sends [`REQUESTS`] on [`CONCURRENCY`] connections; each must answer 200 within 10 s.
async fn batch(addr: SocketAddr, tag: &str) -> anyhow::Result<Duration> {
    let path = format!("/echo/{}", "x".repeat(PATH_LEN));
    let started = Instant::now();
    let workers = (0..CONCURRENCY).map(|w| {
        let path = path.clone();
        async move {
            let client = HttpClient::http1();
            for i in (w..REQUESTS).step_by(CONCURRENCY) {
                let id = format!("{tag}-{i}");
                let answer = send(&client, addr, Method::GET, &path, &id, &[]);
                let status = tokio::time::timeout(Duration::from_secs(10), answer).await??;
                anyhow::ensure!(status == 200, "{id} answered {status}");
            }
            Ok(())
        }
    });
    try_join_all(workers).await?;
    Ok(started.elapsed())
}

/// A tap opened with a 4 KiB receive buffer whose answer is never read while traffic runs.
async fn stalled_tap(admin: SocketAddr) -> anyhow::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(4096)?;
    let mut stream = socket.connect(admin).await?;
    stream
        .write_all(format!("GET /tap HTTP/1.1\r\nhost: {admin}\r\n\r\n").as_bytes())
        .await?;
    Ok(stream)
}

#[tokio::test]
async fn a_tap_that_never_reads_neither_fails_nor_slows_traffic_and_counts_what_it_lost()
-> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start_ferry(echo.addr()).await?;
    let addr = ferry.listener(LISTENER)?;
    let without = batch(addr, "warm").await?;
    let mut tap = stalled_tap(ferry.admin()).await?;
    // Attached before the traffic starts, so the tap sees every request of the batch.
    let admin = Admin::new(ferry.admin());
    eventually(PATIENCE, || async {
        let dump: Value = admin.get("/config_dump").await?.json()?;
        anyhow::ensure!(dump["taps"]["attached"] == 1, "taps: {}", dump["taps"]);
        Ok(())
    })
    .await?;
    let with = batch(addr, "tapped").await?;
    eprintln!("{REQUESTS} requests: {without:?} without a tap, {with:?} with a stalled one");
    // Generous for a shared 2-core machine; a tap that made requests wait for its reader
    // would hold them forever (and the batch's 10 s per request would fail first).
    assert!(
        with < without * 3 + Duration::from_secs(2),
        "traffic slowed: {with:?} with the tap, {without:?} without"
    );

    // Now read everything: what arrived and what the tap says it lost add up to every
    // request it saw, and it did lose some (it did not buffer them all).
    let mut text = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let deadline = Instant::now() + PATIENCE;
    let (received, dropped) = loop {
        match tokio::time::timeout(Duration::from_millis(300), tap.read(&mut buf)).await {
            Ok(Ok(0)) => anyhow::bail!("the tap stream closed"),
            Ok(Ok(n)) => text.extend_from_slice(&buf[..n]),
            Ok(Err(e)) => return Err(e.into()),
            // Quiet for a moment: count what arrived.
            Err(_) => {
                let (received, dropped) = count(&text);
                if received + dropped == REQUESTS as u64 {
                    break (received, dropped);
                }
                anyhow::ensure!(
                    Instant::now() < deadline,
                    "{received} received + {dropped} dropped of {REQUESTS}"
                );
            }
        }
    };
    eprintln!("the stalled tap received {received} records and lost {dropped}");
    assert!(dropped > 0, "a tap that never read lost nothing: unbounded");
    Ok(())
}

/// Records of the `tapped` batch, and the last `{"dropped":N}`, in a chunked NDJSON answer
/// (chunk-size lines are not JSON objects and are skipped, as is the head).
fn count(raw: &[u8]) -> (u64, u64) {
    let text = String::from_utf8_lossy(raw);
    let (mut received, mut dropped) = (0, 0);
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(n) = v["dropped"].as_u64() {
            dropped = n;
        } else if v["request_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("tapped-"))
        {
            received += 1;
        }
    }
    (received, dropped)
}
