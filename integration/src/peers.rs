//! Third-party clients no one here wrote: `curl` and `openssl` from the base image and Python
//! `grpcio`, installed (pinned) by `peers/install.sh` into `<root>/target/peers/py`. A missing
//! peer is an error that fails the test; nothing is skipped.

use std::path::{Path, PathBuf};
use std::process::Output;

use anyhow::{Context as _, bail};
use tokio::process::Command;
use tokio::sync::OnceCell;

use crate::workspace;

static PYTHON: OnceCell<PathBuf> = OnceCell::const_new();

/// Path of `curl`, which the base image must provide.
pub async fn curl() -> anyhow::Result<PathBuf> {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let candidate = PathBuf::from(dir).join("curl");
        if tokio::fs::metadata(&candidate)
            .await
            .is_ok_and(|m| m.is_file())
        {
            return Ok(candidate);
        }
    }
    bail!("curl is not installed: the base image must provide it (apt-get install curl)")
}

/// Path of `openssl`, which the base image must provide.
pub async fn openssl() -> anyhow::Result<PathBuf> {
    on_path("openssl").await.context(
        "openssl is not installed: the base image must provide it (apt-get install openssl)",
    )
}

async fn on_path(name: &str) -> Option<PathBuf> {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let candidate = PathBuf::from(dir).join(name);
        if tokio::fs::metadata(&candidate)
            .await
            .is_ok_and(|m| m.is_file())
        {
            return Some(candidate);
        }
    }
    None
}

/// Runs `openssl` with `args`, closing its stdin at once, and returns its output (any exit
/// status). `s_client` then sends nothing after the handshake and exits.
pub async fn run_openssl(args: &[&str]) -> anyhow::Result<Output> {
    let openssl = openssl().await?;
    Command::new(openssl)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .context("running openssl")
}

/// Runs curl with `args` and returns its output (any exit status).
pub async fn run_curl(args: &[&str]) -> anyhow::Result<Output> {
    let curl = curl().await?;
    Command::new(curl)
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .context("running curl")
}

/// The Python interpreter of the peers venv, installing it on first use (once per process;
/// `install.sh` serialises concurrent test processes with flock).
pub async fn python() -> anyhow::Result<PathBuf> {
    PYTHON
        .get_or_try_init(|| async {
            let script = workspace::crate_dir().join("peers").join("install.sh");
            let dir = workspace::peers_dir();
            run_installer(&script, &dir, "the Python peers").await?;
            Ok(dir.join("py").join("bin").join("python"))
        })
        .await
        .cloned()
}

/// Runs `peers/grpc_client.py` (grpcio) against `target` with extra arguments and returns its
/// stdout, which is one JSON document.
pub async fn grpcio_client(
    target: std::net::SocketAddr,
    args: &[&str],
) -> anyhow::Result<serde_json::Value> {
    let python = python().await?;
    let script = workspace::crate_dir().join("peers").join("grpc_client.py");
    let proto_dir = workspace::crate_dir().join("proto");
    let out = Command::new(&python)
        .arg(&script)
        .arg("--target")
        .arg(target.to_string())
        .arg("--proto-dir")
        .arg(&proto_dir)
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .context("running the grpcio client")?;
    if !out.status.success() {
        bail!(
            "grpc_client.py failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "grpc_client.py printed no JSON: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Runs a peer installer script with the peers dir as its argument; a failure carries the
/// script's output, so a missing peer fails the test loudly.
pub async fn run_installer(script: &Path, dir: &Path, what: &str) -> anyhow::Result<()> {
    let out = Command::new("sh")
        .arg(script)
        .arg(dir)
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running {}", script.display()))?;
    if !out.status.success() {
        bail!(
            "installing {what} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Runs a peer's Python `script` with the interpreter `python` (a venv's) and returns the one
/// JSON document it prints; a failing script fails the test with its stderr.
pub async fn run_json(
    python: &Path,
    script: &Path,
    args: &[String],
) -> anyhow::Result<serde_json::Value> {
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running {}", script.display()))?;
    if !out.status.success() {
        bail!(
            "{} {args:?} failed ({}):\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "{} printed no JSON: {}",
            script.display(),
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
