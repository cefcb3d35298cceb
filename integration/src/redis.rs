//! A real `redis-server` on 127.0.0.1 (Debian's, installed by `peers/install-redis.sh`), for
//! the global rate-limit tests: no persistence, its own port, killed on drop, and restartable
//! on the same port to test reconnection.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, Command};
use tokio::sync::OnceCell;

use crate::{peers, workspace};

static INSTALLED: OnceCell<()> = OnceCell::const_new();

/// A running redis-server.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl RedisServer {
    /// Installs Redis if needed and starts one on a free port.
    pub async fn start() -> anyhow::Result<RedisServer> {
        INSTALLED
            .get_or_try_init(|| async {
                let script = workspace::crate_dir()
                    .join("peers")
                    .join("install-redis.sh");
                peers::run_installer(&script, &workspace::peers_dir(), "redis-server").await
            })
            .await?;
        // A free port: bind :0, read it, release it (redis-server binds it right after).
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut server = RedisServer {
            port,
            dir: tempfile::tempdir()?,
            child: None,
        };
        server.restart().await?;
        Ok(server)
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Kills the server (SIGKILL) and waits for it to go.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Starts it again on the same port (after [`RedisServer::kill`]) and waits for PING.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.kill().await;
        let dir: PathBuf = self.dir.path().to_path_buf();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port"])
            .arg(self.port.to_string())
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(&dir)
            .kill_on_drop(true)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("starting redis-server")?;
        self.child = Some(child);
        for _ in 0..100 {
            if self.ping().await.is_ok() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("redis-server on port {} did not answer PING", self.port)
    }

    /// PING over RESP.
    pub async fn ping(&self) -> anyhow::Result<()> {
        let mut s = tokio::net::TcpStream::connect(self.addr()).await?;
        s.write_all(b"*1\r\n$4\r\nPING\r\n").await?;
        let mut buf = [0u8; 7];
        s.read_exact(&mut buf).await?;
        anyhow::ensure!(&buf == b"+PONG\r\n", "unexpected PING answer");
        Ok(())
    }
}
