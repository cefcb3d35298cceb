//! Downstream idle timeout: connections with nothing in flight are closed after
//! `limits.idle_timeout`, open streams keep theirs, keep-alive reuse works within it, and
//! `limits.request_headers_timeout` closes a connection whose request head never completes.

use std::time::Duration;

use anyhow::Context as _;
use bytes::{Bytes, BytesMut};
use ferry_integration::client::raw_exchange;
use ferry_integration::{Admin, Echo, HttpClient, Sse, eventually, peers};
use http_body_util::Empty;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::streaming::read_until;
use crate::support::{LISTENER, PATIENCE, one_upstream, start};

/// Short enough to keep the tests quick, long enough that a premature close is visible.
const IDLE: Duration = Duration::from_secs(1);
/// A close before this much idleness would be a bug (timer granularity is milliseconds).
const NOT_BEFORE: Duration = Duration::from_millis(950);

fn with_limits(mut cfg: Value, limits: Value) -> Value {
    cfg["listeners"][0]["limits"] = limits;
    cfg
}

#[tokio::test]
async fn idle_http1_connection_is_closed_after_idle_timeout() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let cfg = with_limits(one_upstream(echo.addr()), json!({ "idle_timeout": "1s" }));
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let started = Instant::now();
    let (text, closed) = raw_exchange(
        addr,
        b"GET /idle HTTP/1.1\r\nhost: idle.test\r\n\r\n",
        PATIENCE,
    )
    .await?;
    assert!(text.starts_with("HTTP/1.1 200"), "got {text:?}");
    assert!(
        closed,
        "idle keep-alive connection was still open after {PATIENCE:?}"
    );
    let waited = started.elapsed();
    assert!(
        waited >= NOT_BEFORE,
        "closed after {waited:?}, before idle_timeout"
    );
    let admin = Admin::new(ferry.admin());
    let closes = admin.metrics().await?.get(
        "ferry_downstream_idle_closes_total",
        &[("listener", LISTENER)],
    )?;
    assert_eq!(closes, 1.0);
    Ok(())
}

#[tokio::test]
async fn idle_http2_connection_gets_goaway_and_closes() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let cfg = with_limits(one_upstream(echo.addr()), json!({ "idle_timeout": "1s" }));
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await?;
    let conn = tokio::spawn(conn);
    let req = http::Request::get(format!("http://{addr}/h2-idle")).body(Empty::<Bytes>::new())?;
    let resp = sender.send_request(req).await?;
    assert_eq!(resp.status(), 200);
    drop(resp);
    let idle_since = Instant::now();
    // The connection future ends cleanly once ferry's GOAWAY has been handled and the socket
    // closed: a graceful close, not a reset.
    tokio::time::timeout(PATIENCE, conn)
        .await
        .context("HTTP/2 connection still open after idle_timeout")??
        .context("HTTP/2 connection ended with an error instead of a GOAWAY")?;
    let waited = idle_since.elapsed();
    assert!(
        waited >= NOT_BEFORE,
        "closed after {waited:?}, before idle_timeout"
    );
    assert!(sender.is_closed());
    Ok(())
}

#[tokio::test]
async fn open_streams_keep_their_connection_past_idle_timeout() -> anyhow::Result<()> {
    let sse = Sse::start().await?;
    let cfg = with_limits(one_upstream(sse.addr()), json!({ "idle_timeout": "1s" }));
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        let resp = client.get_stream(addr, "/events").await?;
        assert_eq!(resp.status(), 200);
        let upstream = sse.next_stream(PATIENCE).await?;
        let mut body = resp.into_body();
        let mut buf = BytesMut::new();
        upstream.send("first").await?;
        read_until(&mut body, &mut buf, "data: first\n\n").await?;
        // The stream is silent for well over the idle timeout: what is under test here is
        // the passing of time itself.
        tokio::time::sleep(IDLE * 3).await;
        upstream.send("after-quiet").await?;
        read_until(&mut body, &mut buf, "data: after-quiet\n\n").await?;
    }
    let admin = Admin::new(ferry.admin());
    let closes = admin.metrics().await?.sum(
        "ferry_downstream_idle_closes_total",
        &[("listener", LISTENER)],
    );
    assert_eq!(
        closes, 0.0,
        "a connection with an open stream was closed as idle"
    );
    Ok(())
}

#[tokio::test]
async fn curl_reuses_a_keep_alive_connection_within_idle_timeout() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&one_upstream(echo.addr())).await?;
    let base = format!("http://{}", ferry.listener(LISTENER)?);
    let out = peers::run_curl(&[
        "-sS",
        "-v",
        "--max-time",
        "10",
        "--http1.1",
        &format!("{base}/one"),
        &format!("{base}/two"),
    ])
    .await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "curl failed:\n{stderr}");
    assert!(
        stderr.contains("Re-using existing connection"),
        "curl opened a second connection:\n{stderr}"
    );
    assert_eq!(echo.requests(), 2);
    Ok(())
}

#[tokio::test]
async fn incomplete_request_head_is_cut_by_request_headers_timeout() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let cfg = with_limits(
        one_upstream(echo.addr()),
        json!({ "request_headers_timeout": "1s", "idle_timeout": "0s" }),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let started = Instant::now();
    // The head never ends (no blank line).
    let (_, closed) =
        raw_exchange(addr, b"GET /slow HTTP/1.1\r\nhost: slow.test\r\n", PATIENCE).await?;
    assert!(
        closed,
        "a half-sent head held the connection for {PATIENCE:?}"
    );
    let waited = started.elapsed();
    assert!(waited >= NOT_BEFORE, "closed after {waited:?}");
    assert_eq!(echo.requests(), 0);
    // Other connections were unaffected.
    let reply = HttpClient::http1().get(addr, "/fine").await?;
    assert_eq!(reply.status, 200);
    eventually(PATIENCE, || async {
        let dump = Admin::new(ferry.admin()).config_dump().await?;
        let limits = &dump["config"]["listeners"][0]["limits"];
        anyhow::ensure!(limits["request_headers_timeout"] == "1s", "{limits}");
        anyhow::ensure!(limits["idle_timeout"] == "0s", "{limits}");
        Ok(())
    })
    .await?;
    Ok(())
}
