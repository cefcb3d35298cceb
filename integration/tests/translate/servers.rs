//! The real model servers: MLServer 1.7.1 and KServe 0.21.0 ModelServer, each serving the echo
//! model from `peers/translate/`, on free loopback ports, killed (with their process group)
//! when the handle drops.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::{HttpClient, eventually};
use tokio::process::{Child, Command};

/// How long a Python model server may take to start (MLServer needs ~4 s on an idle machine).
const STARTUP_PATIENCE: Duration = Duration::from_secs(90);

/// Which server.
#[derive(Debug, Clone, Copy)]
pub enum ServerKind {
    /// MLServer: REST without the binary extension, gRPC.
    MlServer,
    /// KServe ModelServer: REST with the binary extension, gRPC.
    Kserve,
}

/// A running model server.
#[derive(Debug)]
pub struct ModelServer {
    /// Its REST port.
    pub rest: SocketAddr,
    /// Its gRPC port.
    pub grpc: SocketAddr,
    child: Child,
    _scratch: tempfile::TempDir,
}

/// A port that was free a moment ago. The servers cannot report a port they chose themselves,
/// so this is the least racy option: bind :0, read the port, release it.
fn free_port() -> anyhow::Result<SocketAddr> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(l.local_addr()?)
}

// === impl ModelServer ===

impl ModelServer {
    /// Starts `kind` with the peers installed under `peers` and waits until it is ready on both
    /// ports.
    pub async fn start(kind: ServerKind, peers: &Path) -> anyhow::Result<ModelServer> {
        let scripts = super::scripts_dir();
        let scratch = tempfile::Builder::new().prefix("ferry-model-").tempdir()?;
        let (rest, grpc, metrics) = (free_port()?, free_port()?, free_port()?);
        let mut cmd = match kind {
            ServerKind::MlServer => {
                let mut c = Command::new(peers.join("mlserver").join("bin").join("mlserver"));
                c.arg("start")
                    .arg(scripts.join("mlserver_models"))
                    .env("PYTHONPATH", &scripts)
                    .env("MLSERVER_HOST", "127.0.0.1")
                    .env("MLSERVER_HTTP_PORT", rest.port().to_string())
                    .env("MLSERVER_GRPC_PORT", grpc.port().to_string())
                    .env("MLSERVER_METRICS_PORT", metrics.port().to_string())
                    // In-process inference: no worker pool to start or to leak.
                    .env("MLSERVER_PARALLEL_WORKERS", "0");
                c
            }
            ServerKind::Kserve => {
                let mut c = Command::new(peers.join("kserve").join("bin").join("python"));
                c.arg(scripts.join("echo_kserve.py"))
                    .args(["--http_port", &rest.port().to_string()])
                    .args(["--grpc_port", &grpc.port().to_string()]);
                c
            }
        };
        let log = std::fs::File::create(scratch.path().join("server.log"))?;
        cmd.current_dir(scratch.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .kill_on_drop(true);
        let child = cmd.spawn().with_context(|| format!("starting {kind:?}"))?;
        let server = ModelServer {
            rest,
            grpc,
            child,
            _scratch: scratch,
        };
        let client = HttpClient::http1();
        let ready = eventually(STARTUP_PATIENCE, || async {
            let reply = client.get(rest, "/v2/health/ready").await?;
            anyhow::ensure!(reply.status.is_success(), "REST ready: {}", reply.status);
            tokio::net::TcpStream::connect(grpc)
                .await
                .context("gRPC port not accepting yet")?;
            Ok(())
        })
        .await;
        if let Err(e) = ready {
            let log = std::fs::read_to_string(server._scratch.path().join("server.log"))
                .unwrap_or_default();
            anyhow::bail!("{kind:?} did not become ready: {e:#}\n--- server log ---\n{log}");
        }
        Ok(server)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        // The server's own children (uvicorn workers, metrics servers) share its process
        // group; signal the whole group, then the leader.
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", "--", &format!("-{pid}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.start_kill();
    }
}
