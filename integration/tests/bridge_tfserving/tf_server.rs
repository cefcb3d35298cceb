//! The TF Serving gRPC peer (`peers/tfserving/tf_server.py`, grpcio from the field numbers,
//! y = 2x + 1) on a free loopback port, killed when the handle drops.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use tokio::process::{Child, Command};

/// A running TF Serving gRPC peer.
#[derive(Debug)]
pub struct TfServer {
    /// Its gRPC port.
    pub addr: SocketAddr,
    _child: Child,
}

// === impl TfServer ===

impl TfServer {
    pub async fn start(peers: &Path) -> anyhow::Result<TfServer> {
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
            l.local_addr()?
        };
        let child = Command::new(peers.join("py").join("bin").join("python"))
            .arg(super::tf_scripts_dir().join("tf_server.py"))
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
        super::listening(addr, Duration::from_secs(30)).await?;
        Ok(server)
    }
}
