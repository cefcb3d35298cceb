//! The real model servers of the bridging tests, on free loopback ports, each killed with its
//! process group when its handle drops: MLServer 1.7.1 serving the translation suite's echo
//! model, KServe 0.21's ModelServer serving the V1 models of `peers/bridge/v1_models.py`
//! ([`ModelServer`]), TorchServe 0.12 serving `peers/torchserve/handler.py`'s models on its own
//! API or, with the kserve envelope, on KServe V1 ([`TorchServe`]), and the TF Serving gRPC
//! peer `peers/tfserving/tf_server.py` ([`TfServer`]). The peers are installed (pinned) by the
//! scripts under `peers/`; [`bridging_peers`] runs them.
//!
//! Shared by the `bridge`, `bridge_tfserving`, `torchserve` and `matrix` suites.

mod tf_serving;
mod torchserve;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use tokio::process::{Child, Command};
use tokio::sync::OnceCell;

use crate::{HttpClient, eventually, workspace};

pub use self::tf_serving::TfServer;
pub use self::torchserve::{TorchServe, TorchServeApi};

/// How long a Python model server may take to start on a loaded machine.
const STARTUP_PATIENCE: Duration = Duration::from_secs(90);

/// A running MLServer or KServe ModelServer.
#[derive(Debug)]
pub struct ModelServer {
    /// Its REST port.
    pub rest: SocketAddr,
    /// Its gRPC port.
    pub grpc: SocketAddr,
    child: Child,
    scratch: tempfile::TempDir,
}

static PEERS: OnceCell<PathBuf> = OnceCell::const_new();

/// Installs every bridging peer once per test process (grpcio, tritonclient, MLServer, KServe,
/// TorchServe; the scripts keep stamps, so later runs only check them) and returns their dir.
pub async fn bridging_peers() -> anyhow::Result<PathBuf> {
    PEERS
        .get_or_try_init(|| async {
            let dir = workspace::peers_dir();
            let peers = peers_scripts();
            let installers = [
                (peers.join("install.sh"), "grpcio"),
                (
                    peers.join("translate").join("install.sh"),
                    "the bridging peers",
                ),
                (peers.join("torchserve").join("install.sh"), "TorchServe"),
            ];
            for (script, what) in installers {
                crate::peers::run_installer(&script, &dir, what).await?;
            }
            Ok(dir)
        })
        .await
        .cloned()
}

/// `integration/peers`: the peers' scripts and models.
pub fn peers_scripts() -> PathBuf {
    workspace::crate_dir().join("peers")
}

/// A port that was free a moment ago. The servers cannot report a port they chose themselves,
/// so this is the least racy option: bind :0, read the port, release it.
pub fn free_port() -> anyhow::Result<SocketAddr> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(l.local_addr()?)
}

/// Waits until `addr` accepts connections.
pub async fn listening(addr: SocketAddr, patience: Duration) -> anyhow::Result<()> {
    eventually(patience, || async {
        tokio::net::TcpStream::connect(addr).await?;
        Ok(())
    })
    .await
}

/// Signals a child's whole process group, then the child: model servers leave workers
/// (uvicorn, metrics, TorchServe's Python workers) in the leader's group.
fn kill_group(child: &mut Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.start_kill();
}

// === impl ModelServer ===

impl ModelServer {
    /// KServe's ModelServer with the V1 models `scorer` and `matrix`.
    pub async fn kserve_v1(peers: &Path) -> anyhow::Result<ModelServer> {
        let (rest, grpc) = (free_port()?, free_port()?);
        let mut c = Command::new(peers.join("kserve").join("bin").join("python"));
        c.arg(peers_scripts().join("bridge").join("v1_models.py"))
            .args(["--http_port", &rest.port().to_string()])
            .args(["--grpc_port", &grpc.port().to_string()]);
        Self::start(c, rest, grpc, "/v1/models/scorer").await
    }

    /// MLServer with the echo model (every input back as an output of the same name), ready on
    /// both ports.
    pub async fn mlserver(peers: &Path) -> anyhow::Result<ModelServer> {
        let (rest, grpc, metrics) = (free_port()?, free_port()?, free_port()?);
        let models = peers_scripts().join("translate");
        let mut c = Command::new(peers.join("mlserver").join("bin").join("mlserver"));
        c.arg("start")
            .arg(models.join("mlserver_models"))
            .env("PYTHONPATH", &models)
            .env("MLSERVER_HOST", "127.0.0.1")
            .env("MLSERVER_HTTP_PORT", rest.port().to_string())
            .env("MLSERVER_GRPC_PORT", grpc.port().to_string())
            .env("MLSERVER_METRICS_PORT", metrics.port().to_string())
            // In-process inference: no worker pool to start or to leak.
            .env("MLSERVER_PARALLEL_WORKERS", "0");
        let server = Self::start(c, rest, grpc, "/v2/models/echo/ready").await?;
        listening(grpc, Duration::from_secs(30)).await?;
        Ok(server)
    }

    async fn start(
        mut cmd: Command,
        rest: SocketAddr,
        grpc: SocketAddr,
        ready: &str,
    ) -> anyhow::Result<Self> {
        let scratch = tempfile::Builder::new().prefix("ferry-bridge-").tempdir()?;
        let log = std::fs::File::create(scratch.path().join("server.log"))?;
        cmd.current_dir(scratch.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .kill_on_drop(true);
        let child = cmd.spawn().context("starting a model server")?;
        let server = ModelServer {
            rest,
            grpc,
            child,
            scratch,
        };
        let client = HttpClient::http1();
        let up = eventually(STARTUP_PATIENCE, || async {
            let reply = client.get(rest, ready).await?;
            anyhow::ensure!(reply.status.is_success(), "{ready}: {}", reply.status);
            Ok(())
        })
        .await;
        if let Err(e) = up {
            let log = std::fs::read_to_string(server.scratch.path().join("server.log"))
                .unwrap_or_default();
            anyhow::bail!("the model server did not become ready: {e:#}\n--- log ---\n{log}");
        }
        Ok(server)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}
