//! A GET to ferry's admin listener for `ferry stat` and `ferry top`: one HTTP/1.1 request on a
//! fresh connection (`Connection: close`), as `ferry wait-ready` probes `/ready`, so the CLI
//! needs no HTTP client crate.

use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest answer read (a `/stats` with series for hundreds of rows stays far below).
const MAX_ANSWER: u64 = 16 << 20;

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// `GET path` on `admin`; the status and the body.
pub async fn get(admin: &str, path: &str) -> anyhow::Result<(u16, Vec<u8>)> {
    tokio::time::timeout(TIMEOUT, get_inner(admin, path))
        .await
        .with_context(|| format!("admin {admin} did not answer {path} within {TIMEOUT:?}"))?
}

/// `GET path` as JSON; a non-200 answer is an error carrying the admin's `error` message.
pub async fn get_json(admin: &str, path: &str) -> anyhow::Result<serde_json::Value> {
    let (status, body) = get(admin, path).await?;
    let value: serde_json::Value = serde_json::from_slice(&body)
        .with_context(|| format!("admin {admin} answered {path} with HTTP {status}, not JSON"))?;
    if status != 200 {
        let message = value["error"].as_str().unwrap_or("no reason given");
        bail!("admin {admin} refused {path} (HTTP {status}): {message}");
    }
    Ok(value)
}

async fn get_inner(admin: &str, path: &str) -> anyhow::Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect(admin).await.with_context(|| {
        format!("cannot connect to ferry's admin at {admin} (is --admin right?)")
    })?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.take(MAX_ANSWER).read_to_end(&mut answer).await?;
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("the admin's answer has no end of headers")?;
    let head = std::str::from_utf8(&answer[..end]).context("the admin's headers are not text")?;
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no status in the admin's answer: {head:?}"))?;
    if head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:"))
    {
        bail!("the admin's answer is chunked; this client reads whole bodies only");
    }
    Ok((status, answer[end + 4..].to_vec()))
}
