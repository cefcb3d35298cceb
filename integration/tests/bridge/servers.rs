//! The real model servers of the bridging tests, on free loopback ports, killed with their
//! process group when the handle drops: KServe 0.21's ModelServer serving the V1 models of
//! `peers/bridge/v1_models.py`, and MLServer 1.7.1 serving the translation suite's echo model.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::{HttpClient, eventually};
use tokio::process::{Child, Command};

/// How long a Python model server may take to start on a loaded machine.
const STARTUP_PATIENCE: Duration = Duration::from_secs(90);

/// A running model server.
#[derive(Debug)]
pub struct ModelServer {
    /// Its REST port.
    pub rest: SocketAddr,
    /// Its gRPC port.
    #[allow(
        dead_code,
        reason = "read by the bridge_tfserving suite, which shares this file"
    )]
    pub grpc: SocketAddr,
    child: Child,
    scratch: tempfile::TempDir,
}

fn free_port() -> anyhow::Result<SocketAddr> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(l.local_addr()?)
}

// === impl ModelServer ===

impl ModelServer {
    /// KServe's ModelServer with the V1 models `scorer` and `matrix`.
    pub async fn kserve_v1(peers: &Path) -> anyhow::Result<ModelServer> {
        let (rest, grpc) = (free_port()?, free_port()?);
        let mut c = Command::new(peers.join("kserve").join("bin").join("python"));
        c.arg(super::scripts_dir().join("v1_models.py"))
            .args(["--http_port", &rest.port().to_string()])
            .args(["--grpc_port", &grpc.port().to_string()]);
        Self::start(c, rest, grpc, "/v1/models/scorer").await
    }

    /// MLServer with the echo model (every input back as an output of the same name).
    pub async fn mlserver(peers: &Path) -> anyhow::Result<ModelServer> {
        let (rest, grpc, metrics) = (free_port()?, free_port()?, free_port()?);
        let models = super::translate_scripts_dir();
        let mut c = Command::new(peers.join("mlserver").join("bin").join("mlserver"));
        c.arg("start")
            .arg(models.join("mlserver_models"))
            .env("PYTHONPATH", &models)
            .env("MLSERVER_HOST", "127.0.0.1")
            .env("MLSERVER_HTTP_PORT", rest.port().to_string())
            .env("MLSERVER_GRPC_PORT", grpc.port().to_string())
            .env("MLSERVER_METRICS_PORT", metrics.port().to_string())
            .env("MLSERVER_PARALLEL_WORKERS", "0");
        Self::start(c, rest, grpc, "/v2/models/echo/ready").await
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
        // Uvicorn workers and metrics servers share the leader's process group.
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
