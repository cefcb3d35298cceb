//! The TF Serving gRPC peer (`peers/tfserving/tf_server.py`: grpcio, messages from the field
//! numbers, one model "affine" computing y = 2x + 1) on a free loopback port, killed when the
//! handle drops. TF Serving itself does not install here (no PyPI or Debian package).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use tokio::process::{Child, Command};

use super::{free_port, listening, peers_scripts};

/// A running TF Serving gRPC peer.
#[derive(Debug)]
pub struct TfServer {
    /// Its gRPC port.
    pub addr: SocketAddr,
    _child: Child,
}

// === impl TfServer ===

impl TfServer {
    /// Starts the peer with the grpcio venv under `peers` and waits until it listens.
    pub async fn start(peers: &Path) -> anyhow::Result<TfServer> {
        let addr = free_port()?;
        let child = Command::new(peers.join("py").join("bin").join("python"))
            .arg(peers_scripts().join("tfserving").join("tf_server.py"))
            .arg(addr.port().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting tf_server.py")?;
        let server = TfServer {
            addr,
            _child: child,
        };
        listening(addr, Duration::from_secs(30)).await?;
        Ok(server)
    }
}
