//! What the tap tests share: a config with two routes, requests, and `ferry tap` as a child
//! process whose output lines are kept.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Ferry, HttpClient, eventually, to_yaml, workspace};
use http::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};
use tokio::process::{Child, Command};

/// Patience for anything crossing processes on a shared 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Name of the one data listener.
pub const LISTENER: &str = "main";

/// ferry with routes `models` (`/v2/models/`) and `echo` (`/echo`) to `upstream`, no access
/// log (so records exist only for taps), admin on a kernel port.
pub async fn start_ferry(upstream: SocketAddr) -> anyhow::Result<Ferry> {
    let config = json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "listeners": [{
            "name": LISTENER,
            "address": "127.0.0.1:0",
            "routes": [
                { "name": "models", "match": { "path": { "prefix": "/v2/models/" } }, "to": "up" },
                { "name": "echo", "match": { "path": { "prefix": "/echo" } }, "to": "up" },
            ],
        }],
        "clusters": [{ "name": "up", "endpoints": [upstream.to_string()] }],
    });
    Ferry::start(&to_yaml(&config)).await
}

/// Sends `method path` with `x-request-id: id` (and extra headers) and returns the status.
pub async fn send(
    client: &HttpClient,
    addr: SocketAddr,
    method: Method,
    path: &str,
    id: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<u16> {
    let mut all = vec![("x-request-id", id)];
    all.extend_from_slice(headers);
    let reply = client
        .call(request(method, addr, path, &all, body_full(Bytes::new()))?)
        .await?;
    Ok(reply.status.as_u16())
}

/// `ferry tap` running as a child process.
#[derive(Debug)]
pub struct TapCli {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl TapCli {
    /// Starts `ferry tap --admin ADMIN ARGS…` and waits until it says it is tapping (the
    /// admin answered 200, so the tap is attached).
    pub async fn start(admin: SocketAddr, args: &[&str]) -> anyhow::Result<TapCli> {
        let mut tap = Self::spawn(admin, args).await?;
        let attached = eventually(PATIENCE, || {
            let done = tap.child.try_wait().ok().flatten();
            let said = tap
                .stderr()
                .iter()
                .any(|l| l.starts_with("ferry tap: tapping"));
            async move {
                match (said, done) {
                    (true, _) => Ok(Ok(())),
                    (false, Some(status)) => Ok(Err(status)),
                    (false, None) => bail!("ferry tap has not attached yet"),
                }
            }
        })
        .await?;
        if let Err(status) = attached {
            bail!("ferry tap exited ({status}): {:?}", tap.stderr());
        }
        Ok(tap)
    }

    /// Starts `ferry tap` and waits for it to exit; returns its exit code and stderr.
    pub async fn run_to_exit(admin: SocketAddr, args: &[&str]) -> anyhow::Result<(i32, String)> {
        let mut tap = Self::spawn(admin, args).await?;
        let status = tokio::time::timeout(PATIENCE, tap.child.wait()).await??;
        // Its stderr reader may lag its exit by a moment.
        let text = eventually(PATIENCE, || {
            let lines = tap.stderr();
            async move {
                anyhow::ensure!(!lines.is_empty(), "no stderr yet");
                Ok(lines.join("\n"))
            }
        })
        .await?;
        Ok((status.code().unwrap_or(-1), text))
    }

    async fn spawn(admin: SocketAddr, args: &[&str]) -> anyhow::Result<TapCli> {
        let bin = workspace::ferry_bin().await?;
        let mut child = Command::new(&bin)
            .arg("tap")
            .arg("--admin")
            .arg(admin.to_string())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {} tap", bin.display()))?;
        let stdout = keep_lines(child.stdout.take().context("stdout")?);
        let stderr = keep_lines(child.stderr.take().context("stderr")?);
        Ok(TapCli {
            child,
            stdout,
            stderr,
        })
    }

    /// Every stdout line so far.
    pub fn lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// Every stdout line so far, parsed as JSON.
    pub fn records(&self) -> anyhow::Result<Vec<Value>> {
        self.lines()
            .iter()
            .map(|l| serde_json::from_str(l).with_context(|| format!("not JSON: {l}")))
            .collect()
    }

    /// Waits until a record with request id `last` arrived and returns the request ids of
    /// every record so far, in order.
    pub async fn wait_for(&self, last: &str) -> anyhow::Result<Vec<String>> {
        eventually(PATIENCE, || async {
            let ids = ids(&self.records()?);
            anyhow::ensure!(ids.iter().any(|i| i == last), "no {last} yet: {ids:?}");
            Ok(ids)
        })
        .await
    }

    /// Waits until a line containing ` {word} ` arrived and returns every line so far.
    pub async fn wait_for_line(&self, word: &str) -> anyhow::Result<Vec<String>> {
        let needle = format!(" {word} ");
        eventually(PATIENCE, || async {
            let lines = self.lines();
            anyhow::ensure!(
                lines.iter().any(|l| l.contains(&needle)),
                "no {word} yet: {lines:?}"
            );
            Ok(lines)
        })
        .await
    }
}

/// The `request_id` of each record.
pub fn ids(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["request_id"].as_str().unwrap_or("?").to_owned())
        .collect()
}

fn keep_lines(pipe: impl AsyncRead + Unpin + Send + 'static) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(pipe).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            sink.lock().unwrap().push(line);
        }
    });
    lines
}
