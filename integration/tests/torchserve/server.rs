//! TorchServe 0.12 serving the test handler's models (`peers/torchserve/handler.py`) on free
//! loopback ports, started once per test process: its Java frontend takes seconds to start
//! and load four workers. Killed with its process group when the handle drops.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use ferry_integration::{HttpClient, eventually, workspace};
use tokio::process::{Child, Command};

/// How long TorchServe may take to start and load every model on a loaded machine.
const STARTUP_PATIENCE: Duration = Duration::from_secs(150);

/// The models the handler serves.
pub const MODELS: [&str; 5] = [
    "double_json",
    "double_raw",
    "double_npy",
    "pair_json",
    "sum_npy",
];

/// A running TorchServe.
#[derive(Debug)]
pub struct TorchServe {
    /// The REST inference port.
    pub rest: SocketAddr,
    /// The gRPC inference port.
    pub grpc: SocketAddr,
    child: Child,
    _scratch: tempfile::TempDir,
}

fn free_port() -> anyhow::Result<SocketAddr> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(l.local_addr()?)
}

fn scripts() -> std::path::PathBuf {
    workspace::crate_dir().join("peers").join("torchserve")
}

// === impl TorchServe ===

impl TorchServe {
    /// Archives the handler's models and starts TorchServe with them.
    pub async fn start(peers: &Path) -> anyhow::Result<TorchServe> {
        let bin = peers.join("torchserve").join("bin");
        let scratch = tempfile::Builder::new()
            .prefix("ferry-torchserve-")
            .tempdir()?;
        let store = scratch.path().join("store");
        std::fs::create_dir_all(&store)?;
        for model in MODELS {
            let out = Command::new(bin.join("torch-model-archiver"))
                .args(["--model-name", model, "--version", "1.0", "--handler"])
                .arg(scripts().join("handler.py"))
                .arg("--export-path")
                .arg(&store)
                .args(["--archive-format", "no-archive"])
                .kill_on_drop(true)
                .output()
                .await
                .context("running torch-model-archiver")?;
            if !out.status.success() {
                bail!(
                    "torch-model-archiver {model}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        let (rest, management, metrics) = (free_port()?, free_port()?, free_port()?);
        let (grpc, grpc_management) = (free_port()?, free_port()?);
        let properties = format!(
            "inference_address=http://{rest}\nmanagement_address=http://{management}\n\
             metrics_address=http://{metrics}\ngrpc_inference_address=127.0.0.1\n\
             grpc_management_address=127.0.0.1\ngrpc_inference_port={}\n\
             grpc_management_port={}\ndisable_token_authorization=true\n\
             default_workers_per_model=1\nmodel_store={}\nload_models={}\n",
            grpc.port(),
            grpc_management.port(),
            store.display(),
            MODELS.join(","),
        );
        let config = scratch.path().join("config.properties");
        std::fs::write(&config, properties)?;
        let log = std::fs::File::create(scratch.path().join("torchserve.log"))?;
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let child = Command::new(bin.join("torchserve"))
            .args(["--start", "--foreground", "--ncs", "--ts-config"])
            .arg(&config)
            .arg("--model-store")
            .arg(&store)
            // The worker imports `torch`; the handler needs none of it (see the stand-in).
            .env("PYTHONPATH", scripts().join("stand_in"))
            .env("PATH", path)
            .env("LOG_LOCATION", scratch.path().join("logs"))
            .env("METRICS_LOCATION", scratch.path().join("logs"))
            .current_dir(scratch.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .context("starting torchserve")?;
        let server = TorchServe {
            rest,
            grpc,
            child,
            _scratch: scratch,
        };
        let client = HttpClient::http1();
        let up = eventually(STARTUP_PATIENCE, || async {
            for model in MODELS {
                let reply = client.get(management, &format!("/models/{model}")).await?;
                anyhow::ensure!(
                    reply.status.is_success() && reply.text().contains("\"READY\""),
                    "{model}: {} {}",
                    reply.status,
                    reply.text()
                );
            }
            Ok(())
        })
        .await;
        if let Err(e) = up {
            let log = std::fs::read_to_string(server._scratch.path().join("torchserve.log"))
                .unwrap_or_default();
            bail!("TorchServe did not load its models: {e:#}\n--- log ---\n{log}");
        }
        Ok(server)
    }
}

impl Drop for TorchServe {
    fn drop(&mut self) {
        // The Java frontend and its Python workers share the launcher's process group.
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
