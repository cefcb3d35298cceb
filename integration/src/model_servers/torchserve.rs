//! TorchServe 0.12 serving the test handler's models (`peers/torchserve/handler.py`) on free
//! loopback ports. Its Java frontend takes seconds to start and load a worker per model, so
//! suites start it once. Killed with its process group when the handle drops.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::process::{Child, Command};

use super::{free_port, kill_group, peers_scripts};
use crate::{HttpClient, eventually};

/// How long TorchServe may take to start and load every model on a loaded machine.
const STARTUP_PATIENCE: Duration = Duration::from_secs(150);

/// Which API TorchServe's inference port serves the handler through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TorchServeApi {
    /// Its own: `POST /predictions/{m}` hands the handler the request body (and the gRPC
    /// `Predictions` rpc its `input` map). `POST /v1/models/{m}:predict` also reaches the
    /// handler, but with the whole V1 body as one request.
    Own,
    /// `service_envelope=kserve`: `POST /v1/models/{m}:predict` hands the handler the
    /// `instances` rows of the V1 body, and its list of answers comes back as `predictions`.
    KserveV1,
}

/// A running TorchServe.
#[derive(Debug)]
pub struct TorchServe {
    /// The REST inference port.
    pub rest: SocketAddr,
    /// The gRPC inference port.
    pub grpc: SocketAddr,
    child: Child,
    scratch: tempfile::TempDir,
}

fn scripts() -> PathBuf {
    peers_scripts().join("torchserve")
}

// === impl TorchServe ===

impl TorchServe {
    /// Archives the handler's `models` and starts TorchServe with them behind `api`, once every
    /// model's worker is ready.
    pub async fn start(peers: &Path, models: &[&str], api: TorchServeApi) -> anyhow::Result<Self> {
        let bin = peers.join("torchserve").join("bin");
        let scratch = tempfile::Builder::new()
            .prefix("ferry-torchserve-")
            .tempdir()?;
        let store = scratch.path().join("store");
        std::fs::create_dir_all(&store)?;
        for model in models {
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
        let mut properties = format!(
            "inference_address=http://{rest}\nmanagement_address=http://{management}\n\
             metrics_address=http://{metrics}\ngrpc_inference_address=127.0.0.1\n\
             grpc_management_address=127.0.0.1\ngrpc_inference_port={}\n\
             grpc_management_port={}\ndisable_token_authorization=true\n\
             default_workers_per_model=1\nmodel_store={}\nload_models={}\n",
            grpc.port(),
            grpc_management.port(),
            store.display(),
            models.join(","),
        );
        if api == TorchServeApi::KserveV1 {
            properties.push_str("service_envelope=kserve\n");
        }
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
            // The launcher refuses to start while `$TMPDIR/.model_server.pid` names a live
            // TorchServe: a scratch TMPDIR lets instances (and concurrent suites) run side by side.
            .env("TMPDIR", scratch.path())
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
            scratch,
        };
        let client = HttpClient::http1();
        let up = eventually(STARTUP_PATIENCE, || async {
            for model in models {
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
            let log = std::fs::read_to_string(server.scratch.path().join("torchserve.log"))
                .unwrap_or_default();
            bail!("TorchServe did not load its models: {e:#}\n--- log ---\n{log}");
        }
        Ok(server)
    }
}

impl Drop for TorchServe {
    fn drop(&mut self) {
        // The Java frontend and its Python workers share the launcher's process group.
        kill_group(&mut self.child);
    }
}
