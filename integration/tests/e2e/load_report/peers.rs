//! The Python peers of the load-report tests (`peers/load_report/*.py`, run by the venv that
//! `peers/install.sh` makes: grpcio for the gRPC one). A missing interpreter or grpcio fails
//! the test through `peers::python`; nothing is skipped.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::workspace;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// Importing grpcio takes a second or two on a busy machine.
const STARTUP_PATIENCE: Duration = Duration::from_secs(30);

/// A running peer server; killed when dropped.
#[derive(Debug)]
pub struct Peer {
    /// Where it listens.
    pub addr: SocketAddr,
    _child: Child,
}

fn script(name: &str) -> std::path::PathBuf {
    workspace::crate_dir()
        .join("peers")
        .join("load_report")
        .join(name)
}

impl Peer {
    /// `orca_http.py` named `name`, reporting `kv` (`None`: no report at all).
    pub async fn http(name: &str, kv: Option<f64>) -> anyhow::Result<Peer> {
        let mut args = vec!["--name".to_owned(), name.to_owned()];
        match kv {
            Some(kv) => args.extend(["--kv".to_owned(), kv.to_string()]),
            None => args.push("--no-report".to_owned()),
        }
        Self::start("orca_http.py", &args).await
    }

    /// `orca_grpc.py serve`: a grpcio server reporting `kv` in its trailers.
    pub async fn grpc(name: &str, kv: f64) -> anyhow::Result<Peer> {
        let args = ["serve", "--name", name, "--kv", &kv.to_string()].map(str::to_owned);
        Self::start("orca_grpc.py", &args).await
    }

    async fn start(file: &str, args: &[String]) -> anyhow::Result<Peer> {
        let python = ferry_integration::peers::python().await?;
        let mut child = Command::new(python)
            .arg(script(file))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {file}"))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(STARTUP_PATIENCE, lines.next_line())
            .await
            .with_context(|| format!("{file} did not report its port"))??
            .with_context(|| format!("{file} exited before reporting its port"))?;
        let port: u16 = line
            .strip_prefix("PORT ")
            .with_context(|| format!("unexpected first line {line:?}"))?
            .parse()?;
        Ok(Peer {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            _child: child,
        })
    }
}

/// `orca_grpc.py call`: `n` unary calls one after another through `target` (grpcio's own
/// client); returns how many each server answered, by name.
pub async fn grpc_calls(
    target: SocketAddr,
    n: u32,
) -> anyhow::Result<std::collections::BTreeMap<String, u64>> {
    let python = ferry_integration::peers::python().await?;
    let out = Command::new(python)
        .arg(script("orca_grpc.py"))
        .args([
            "call",
            "--target",
            &target.to_string(),
            "--n",
            &n.to_string(),
        ])
        .kill_on_drop(true)
        .output()
        .await
        .context("running orca_grpc.py call")?;
    anyhow::ensure!(
        out.status.success(),
        "orca_grpc.py call failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "orca_grpc.py printed no JSON: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
