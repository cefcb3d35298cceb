//! The grpcio Open Inference Protocol server (`peers/tracing/oip_server.py`, grpcio from
//! `peers/install.sh`): a model server that serves only gRPC and reports the metadata of every
//! call, so a test sees the trace context a real gRPC stack received.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::workspace;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// grpcio-tools compiles the proto first: a few seconds on a busy machine.
const STARTUP_PATIENCE: Duration = Duration::from_secs(60);

/// One call as the server reported it.
#[derive(Clone, Debug, Deserialize)]
pub struct Call {
    /// The rpc's method name, e.g. `ModelInfer`.
    pub method: String,
    /// Invocation metadata by key.
    pub metadata: BTreeMap<String, String>,
}

/// A running server; killed when dropped.
#[derive(Debug)]
pub struct OipServer {
    /// Its gRPC address.
    pub addr: SocketAddr,
    calls: Arc<Mutex<Vec<Call>>>,
    _child: Child,
    _scratch: tempfile::TempDir,
}

impl OipServer {
    /// Starts the server and waits for it to report its port.
    pub async fn start() -> anyhow::Result<OipServer> {
        let python = ferry_integration::peers::python().await?;
        let scratch = tempfile::Builder::new().prefix("ferry-oip-").tempdir()?;
        let script = workspace::crate_dir()
            .join("peers")
            .join("tracing")
            .join("oip_server.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg("--proto-dir")
            .arg(workspace::root().join("proto"))
            .arg("--out-dir")
            .arg(scratch.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting oip_server.py")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(STARTUP_PATIENCE, lines.next_line())
            .await
            .context("oip_server.py did not report its port")??
            .context("oip_server.py exited before reporting its port")?;
        let port: u16 = line
            .strip_prefix("PORT ")
            .with_context(|| format!("unexpected first line {line:?}"))?
            .parse()?;
        let calls = Arc::new(Mutex::new(Vec::new()));
        let sink = calls.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let call = line
                    .strip_prefix("CALL ")
                    .and_then(|json| serde_json::from_str::<Call>(json).ok());
                if let (Some(call), Ok(mut calls)) = (call, sink.lock()) {
                    calls.push(call);
                }
            }
        });
        Ok(OipServer {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            calls,
            _child: child,
            _scratch: scratch,
        })
    }

    /// The calls reported so far.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}
