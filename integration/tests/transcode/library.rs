//! The real grpcio Library server (`peers/transcode/library_server.py`) and descriptor sets
//! built by the real `grpc_tools.protoc --include_imports --descriptor_set_out`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use ferry_integration::workspace;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// A running Library server; killed when dropped.
pub struct Library {
    /// Its gRPC address.
    pub addr: SocketAddr,
    /// The descriptor set protoc wrote while compiling the server's modules.
    pub descriptor: PathBuf,
    _child: Child,
    _scratch: tempfile::TempDir,
}

fn proto_dir() -> PathBuf {
    workspace::root().join("proto").join("testing")
}

// === impl Library ===

impl Library {
    /// Starts the server and waits for it to report its port.
    pub async fn start() -> anyhow::Result<Library> {
        let python = ferry_integration::peers::python().await?;
        let scratch = tempfile::Builder::new()
            .prefix("ferry-library-")
            .tempdir()?;
        let script = workspace::crate_dir()
            .join("peers")
            .join("transcode")
            .join("library_server.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg("--proto-dir")
            .arg(proto_dir())
            .arg("--out-dir")
            .arg(scratch.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting library_server.py")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .context("library_server.py did not report its port in 60s")??
            .context("library_server.py exited before reporting its port")?;
        let port: u16 = line
            .strip_prefix("PORT ")
            .with_context(|| format!("unexpected first line {line:?}"))?
            .parse()?;
        Ok(Library {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            descriptor: scratch.path().join("library.pb"),
            _child: child,
            _scratch: scratch,
        })
    }
}

/// Calls `GetBook(name)` at `target` with a plain grpcio client; returns its JSON output.
pub async fn grpc_get_book(target: SocketAddr, name: &str) -> anyhow::Result<serde_json::Value> {
    let python = ferry_integration::peers::python().await?;
    let scratch = tempfile::Builder::new().prefix("ferry-client-").tempdir()?;
    let script = workspace::crate_dir()
        .join("peers")
        .join("transcode")
        .join("library_client.py");
    let out = Command::new(python)
        .arg(script)
        .arg("--proto-dir")
        .arg(proto_dir())
        .arg("--out-dir")
        .arg(scratch.path())
        .arg("--target")
        .arg(target.to_string())
        .arg(name)
        .kill_on_drop(true)
        .output()
        .await
        .context("running library_client.py")?;
    if !out.status.success() {
        bail!(
            "library_client.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "library_client.py printed no JSON: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Compiles `proto` (the text of a library.proto) with grpc_tools.protoc into `out`.
pub async fn protoc(proto: &str, out: &Path) -> anyhow::Result<()> {
    let python = ferry_integration::peers::python().await?;
    let dir = tempfile::Builder::new().prefix("ferry-proto-").tempdir()?;
    let api = dir.path().join("google").join("api");
    tokio::fs::create_dir_all(&api).await?;
    for f in ["annotations.proto", "http.proto"] {
        tokio::fs::copy(proto_dir().join("google").join("api").join(f), api.join(f)).await?;
    }
    tokio::fs::write(dir.path().join("library.proto"), proto).await?;
    let result = Command::new(python)
        .args(["-m", "grpc_tools.protoc"])
        .arg(format!("-I{}", dir.path().display()))
        .arg("--include_imports")
        .arg(format!("--descriptor_set_out={}", out.display()))
        .arg("library.proto")
        .current_dir(dir.path())
        .kill_on_drop(true)
        .output()
        .await
        .context("running grpc_tools.protoc")?;
    if !result.status.success() {
        bail!("protoc failed: {}", String::from_utf8_lossy(&result.stderr));
    }
    Ok(())
}

/// The committed library.proto.
pub async fn library_proto() -> anyhow::Result<String> {
    Ok(tokio::fs::read_to_string(proto_dir().join("library.proto")).await?)
}
