//! Slow and greedy clients against a listener's default defences: connections that never
//! finish a request head (HTTP/1.1 dribbled byte by byte, silence, a partial or bare HTTP/2
//! preface) are closed within `limits.request_headers_timeout`; connections over
//! `limits.max_connections` are refused and counted while the open ones keep working; and the
//! defaults show in `/config_dump`.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::client::raw_exchange;
use ferry_integration::{Admin, Echo, HttpClient, eventually};
use http_body_util::Empty;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::support::{LISTENER, PATIENCE, one_upstream, start};

/// The client connection preface and an empty SETTINGS frame (RFC 9113 §3.4).
pub const H2_PREFACE: &[u8] =
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
/// A close before this would mean the timer fired early (1 s timeout, ms granularity).
const NOT_BEFORE: Duration = Duration::from_millis(950);
/// A close after this would mean the timeout did not apply (1 s timeout plus scheduling).
const NOT_AFTER: Duration = Duration::from_secs(5);

fn with_limits(mut cfg: Value, limits: Value) -> Value {
    cfg["listeners"][0]["limits"] = limits;
    cfg
}

/// Sends `head` one byte every 200 ms (a slowloris client); returns how long until ferry
/// closed the connection, or `None` if the whole head went through.
async fn dribble(addr: SocketAddr, head: &[u8]) -> anyhow::Result<Option<Duration>> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await?;
    let mut buf = [0u8; 1024];
    for byte in head {
        if stream.write_all(std::slice::from_ref(byte)).await.is_err() {
            return Ok(Some(started.elapsed()));
        }
        match tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return Ok(Some(started.elapsed())),
            Ok(Ok(_)) => anyhow::bail!("ferry answered a head that never finished"),
            Err(_) => {}
        }
    }
    Ok(None)
}

/// Runs `exchange` and checks it ended with a close within the 1 s timeout's window.
async fn closed_in_time<F>(what: &str, exchange: F) -> anyhow::Result<()>
where
    F: std::future::Future<Output = anyhow::Result<(String, bool)>>,
{
    let started = Instant::now();
    let (_, closed) = exchange.await?;
    let waited = started.elapsed();
    anyhow::ensure!(closed, "{what}: still open after {PATIENCE:?}");
    anyhow::ensure!(
        (NOT_BEFORE..NOT_AFTER).contains(&waited),
        "{what}: closed after {waited:?}"
    );
    Ok(())
}

#[tokio::test]
async fn connections_without_a_request_head_are_closed_within_request_headers_timeout()
-> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    // The idle timeout stays at its 5m default: only the head timeout may close these.
    let cfg = with_limits(
        one_upstream(echo.addr()),
        json!({ "request_headers_timeout": "1s" }),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let head = b"GET /slow HTTP/1.1\r\nhost: slow.test\r\nx-padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let (dribbled, silent, partial, bare, served) = tokio::join!(
        dribble(addr, head),
        closed_in_time("silent", raw_exchange(addr, b"", PATIENCE)),
        closed_in_time(
            "partial h2 preface",
            raw_exchange(addr, &H2_PREFACE[..16], PATIENCE)
        ),
        closed_in_time(
            "h2 preface, no HEADERS",
            raw_exchange(addr, H2_PREFACE, PATIENCE)
        ),
        async {
            // Normal clients, h1 and h2, are served meanwhile.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let h1 = HttpClient::http1().get(addr, "/fine").await?;
            let h2 = HttpClient::h2c().get(addr, "/fine").await?;
            anyhow::Ok((h1.status.as_u16(), h2.status.as_u16()))
        },
    );
    let dribbled = dribbled?.context("the dribbled head was accepted")?;
    assert!(
        (NOT_BEFORE..NOT_AFTER).contains(&dribbled),
        "slowloris closed after {dribbled:?}"
    );
    silent?;
    partial?;
    bare?;
    assert_eq!(served?, (200, 200));
    assert_eq!(echo.requests(), 2);
    eventually(PATIENCE, || async {
        let metrics = Admin::new(ferry.admin()).metrics().await?;
        let closes = metrics.get(
            "ferry_downstream_header_timeout_closes_total",
            &[("listener", LISTENER)],
        )?;
        anyhow::ensure!(closes == 4.0, "header timeout closes: {closes}");
        Ok(())
    })
    .await?;
    Ok(())
}

/// An HTTP/1.1 keep-alive connection to `addr`, with its driver task.
async fn keep_alive(addr: SocketAddr) -> anyhow::Result<SendRequest<Empty<bytes::Bytes>>> {
    let stream = TcpStream::connect(addr).await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

async fn get_on(sender: &mut SendRequest<Empty<bytes::Bytes>>) -> anyhow::Result<u16> {
    sender.ready().await?;
    let req = http::Request::get("/cap")
        .header("host", "cap.test")
        .body(Empty::new())?;
    Ok(sender.send_request(req).await?.status().as_u16())
}

#[tokio::test]
async fn connections_over_max_connections_are_refused_and_counted() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let cfg = with_limits(one_upstream(echo.addr()), json!({ "max_connections": 2 }));
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let admin = Admin::new(ferry.admin());

    let mut a = keep_alive(addr).await?;
    let mut b = keep_alive(addr).await?;
    assert_eq!(get_on(&mut a).await?, 200);
    assert_eq!(get_on(&mut b).await?, 200);

    // The third is accepted and closed at once, without a byte.
    let (text, closed) = raw_exchange(
        addr,
        b"GET /over HTTP/1.1\r\nhost: cap.test\r\n\r\n",
        PATIENCE,
    )
    .await?;
    assert!(closed, "the connection over the cap was kept open");
    assert_eq!(text, "", "the connection over the cap was answered");
    let refused = admin.metrics().await?.get(
        "ferry_listener_connections_refused_total",
        &[("listener", LISTENER)],
    )?;
    assert_eq!(refused, 1.0);

    // The open ones keep working.
    assert_eq!(get_on(&mut a).await?, 200);
    assert_eq!(get_on(&mut b).await?, 200);
    assert_eq!(echo.requests(), 4);

    // Closing one makes room.
    drop(a);
    eventually(PATIENCE, || async {
        let mut c = keep_alive(addr).await?;
        anyhow::ensure!(get_on(&mut c).await? == 200);
        Ok(())
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn listener_safety_defaults_show_in_config_dump() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&one_upstream(echo.addr())).await?;
    let dump = Admin::new(ferry.admin()).config_dump().await?;
    let limits = &dump["config"]["listeners"][0]["limits"];
    assert_eq!(limits["request_headers_timeout"], "10s", "{limits}");
    assert_eq!(limits["idle_timeout"], "5m", "{limits}");
    assert_eq!(limits["max_connections"], 4096, "{limits}");
    assert_eq!(limits["h2_max_concurrent_streams"], 1024, "{limits}");
    assert_eq!(limits["stalled_write_timeout"], "30s", "{limits}");
    Ok(())
}
