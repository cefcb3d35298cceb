//! `ferry wait-ready`: the legacy sidecar's postStart hook.
//!
//! Without native sidecars the kubelet starts containers in order and waits for each postStart
//! hook, so blocking here until ferry's admin `/ready` answers 200 keeps the model container
//! from starting (and sending traffic) before the proxy can carry it.

use std::time::Duration;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::{Instant, sleep, timeout},
};

use crate::{error::InjectError, settings::parse_duration};

/// Flags of `ferry wait-ready`.
#[derive(Debug, Clone, clap::Args)]
pub struct WaitReadyArgs {
    /// ferry's admin address.
    #[arg(long, default_value = "127.0.0.1:15000")]
    pub admin: String,
    /// Give up after this long.
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Time between polls.
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub interval: Duration,
}

/// Polls `http://<admin>/ready` until it answers 200 or the timeout passes.
pub async fn run_wait_ready(args: WaitReadyArgs) -> Result<(), InjectError> {
    let started = Instant::now();
    let deadline = started + args.timeout;
    let mut last = String::from("not polled yet");
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            break;
        }
        // Bound each attempt so one hung connection cannot outlive the overall timeout.
        let per_try = remaining.min(Duration::from_secs(2));
        match timeout(per_try, probe(&args.admin)).await {
            Ok(Ok(200)) => return Ok(()),
            Ok(Ok(status)) => last = format!("HTTP {status}"),
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "timed out".into(),
        }
        sleep(
            args.interval
                .min(deadline.saturating_duration_since(Instant::now())),
        )
        .await;
    }
    Err(InjectError::NotReady {
        url: format!("http://{}/ready", args.admin),
        waited_ms: started.elapsed().as_millis(),
        last,
    })
}

async fn probe(admin: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect(admin).await?;
    let request = format!("GET /ready HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut head = [0u8; 64];
    let mut read = 0;
    // The status code sits in the first 12 bytes: "HTTP/1.1 200".
    while read < 12 {
        let n = stream.read(&mut head[read..]).await?;
        if n == 0 {
            break;
        }
        read += n;
    }
    let line = String::from_utf8_lossy(&head[..read]);
    line.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP response"))
}
