//! The real `ferry` binary as a child process: started with a config file (or the one-route
//! flags), its bound ports read from `--bound-addresses-file`, its stderr kept in a buffer that
//! is printed when the handle drops (libtest shows it only for failing tests), killed on drop.
//!
//! ferry reads the standard `OTEL_*` variables (exporter endpoint, headers, service name,
//! resource attributes), so none is inherited from the test's own environment: a test that
//! wants one passes it to [`Ferry::start_with_env`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use serde::Deserialize;
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, Command};

use crate::config::ConfigDir;
use crate::eventually::eventually;
use crate::workspace;

/// How long ferry may take from spawn to writing its bound-addresses file.
pub const STARTUP_PATIENCE: Duration = Duration::from_secs(20);

/// The ports ferry bound, as written to `--bound-addresses-file`.
#[derive(Clone, Debug, Deserialize)]
pub struct BoundAddresses {
    /// Admin listener.
    pub admin: SocketAddr,
    /// Data listeners by configured name.
    pub listeners: BTreeMap<String, SocketAddr>,
}

/// A running ferry process.
#[derive(Debug)]
pub struct Ferry {
    child: Child,
    pid: u32,
    stderr: Arc<Mutex<Vec<u8>>>,
    bound: BoundAddresses,
    config: Option<ConfigDir>,
    // Holds the bound-addresses file; removed on drop.
    _scratch: tempfile::TempDir,
}

// === impl Ferry ===

impl Ferry {
    /// Starts `ferry run --config <file>` with `yaml` as the file, written into a watched
    /// directory laid out as a Kubernetes ConfigMap volume (`..data` symlink).
    pub async fn start(yaml: &str) -> anyhow::Result<Ferry> {
        Self::start_in(ConfigDir::configmap(yaml).await?).await
    }

    /// [`Ferry::start`] with extra environment variables for the ferry process, e.g.
    /// `OTEL_RESOURCE_ATTRIBUTES` to put its spans in a tracing backend's project.
    pub async fn start_with_env(yaml: &str, env: &[(&str, &str)]) -> anyhow::Result<Ferry> {
        let config = ConfigDir::configmap(yaml).await?;
        let path = config.path();
        Self::spawn(&["run", "--config"], Some(&path), Some(config), env).await
    }

    /// Starts `ferry run --config <file>` on a prepared config directory.
    pub async fn start_in(config: ConfigDir) -> anyhow::Result<Ferry> {
        let path = config.path();
        Self::spawn(&["run", "--config"], Some(&path), Some(config), &[]).await
    }

    /// Starts `ferry run` with the given extra arguments (e.g. `--listen 127.0.0.1:0 --upstream
    /// ADDR --admin 127.0.0.1:0`), no config file.
    pub async fn start_args(args: &[&str]) -> anyhow::Result<Ferry> {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        Self::spawn(&all, None, None, &[]).await
    }

    async fn spawn(
        args: &[&str],
        config_path: Option<&Path>,
        config: Option<ConfigDir>,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Ferry> {
        let bin = workspace::ferry_bin().await?;
        let scratch = tempfile::Builder::new().prefix("ferry-run-").tempdir()?;
        let bound_file = scratch.path().join("bound.json");
        let mut cmd = Command::new(&bin);
        // A developer's or CI's own OpenTelemetry settings must not redirect ferry's spans.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("OTEL_") {
                cmd.env_remove(&name);
            }
        }
        cmd.envs(env.iter().copied());
        cmd.args(args);
        if let Some(p) = config_path {
            cmd.arg(p);
        }
        cmd.arg("--bound-addresses-file")
            .arg(&bound_file)
            .env("RUST_LOG", "info")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("spawning {}", bin.display()))?;
        let pid = child.id().context("ferry exited at once")?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut pipe) = child.stderr.take() {
            let sink = stderr.clone();
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
        let mut ferry = Ferry {
            child,
            pid,
            stderr,
            bound: BoundAddresses {
                admin: SocketAddr::from(([127, 0, 0, 1], 0)),
                listeners: BTreeMap::new(),
            },
            config,
            _scratch: scratch,
        };
        ferry.bound = ferry.read_bound(&bound_file).await?;
        Ok(ferry)
    }

    async fn read_bound(&mut self, file: &Path) -> anyhow::Result<BoundAddresses> {
        let child = &mut self.child;
        let exited = Arc::new(Mutex::new(None));
        let result = eventually(STARTUP_PATIENCE, || {
            let exited = exited.clone();
            let status = child.try_wait();
            async move {
                if let Ok(Some(status)) = status {
                    if let Ok(mut e) = exited.lock() {
                        *e = Some(status);
                    }
                    return Ok(None);
                }
                // ferry renames the file into place, so a file that exists is complete.
                let text = tokio::fs::read_to_string(file)
                    .await
                    .with_context(|| format!("{} not written yet", file.display()))?;
                let bound: BoundAddresses = serde_json::from_str(&text).with_context(|| {
                    format!("bound-addresses file is not the agreed JSON: {text}")
                })?;
                Ok(Some(bound))
            }
        })
        .await;
        match result {
            Ok(Some(bound)) => Ok(bound),
            Ok(None) => {
                let status = exited.lock().ok().and_then(|e| *e);
                bail!("ferry exited during startup ({status:?}):\n{}", self.logs())
            }
            Err(e) => Err(e.context(format!("ferry never reported its ports:\n{}", self.logs()))),
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The admin listener's address.
    pub fn admin(&self) -> SocketAddr {
        self.bound.admin
    }

    /// A data listener's address by its configured name.
    pub fn listener(&self, name: &str) -> anyhow::Result<SocketAddr> {
        self.bound
            .listeners
            .get(name)
            .copied()
            .ok_or_else(|| anyhow!("ferry bound no listener {name:?}: {:?}", self.bound))
    }

    /// The only data listener (for `ferry run --listen ... --upstream ...`).
    pub fn only_listener(&self) -> anyhow::Result<SocketAddr> {
        let mut all = self.bound.listeners.values();
        match (all.next(), all.next()) {
            (Some(addr), None) => Ok(*addr),
            _ => bail!("expected exactly one data listener: {:?}", self.bound),
        }
    }

    /// Everything ferry wrote to stderr so far.
    pub fn logs(&self) -> String {
        self.stderr
            .lock()
            .map(|s| String::from_utf8_lossy(&s).into_owned())
            .unwrap_or_default()
    }

    /// The config directory ferry watches, when it was started with a file.
    pub fn config(&self) -> anyhow::Result<&ConfigDir> {
        self.config
            .as_ref()
            .context("ferry was started without a config file")
    }

    /// Sends a signal by name (`TERM`, `HUP`, ...) with the system `kill` command.
    pub async fn signal(&self, sig: &str) -> anyhow::Result<()> {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid.to_string())
            .status()
            .await
            .context("running kill(1)")?;
        if !status.success() {
            bail!("kill -{sig} {} failed: {status}", self.pid);
        }
        Ok(())
    }

    /// Waits up to `patience` for the process to exit.
    pub async fn wait_exit(&mut self, patience: Duration) -> anyhow::Result<ExitStatus> {
        tokio::time::timeout(patience, self.child.wait())
            .await
            .with_context(|| format!("ferry did not exit within {patience:?}"))?
            .context("waiting for ferry")
    }

    /// Peak resident set size (VmHWM) in bytes, from /proc.
    pub async fn peak_rss_bytes(&self) -> anyhow::Result<u64> {
        self.proc_status_kib("VmHWM:").await.map(|kib| kib * 1024)
    }

    /// Current resident set size (VmRSS) in bytes, from /proc.
    pub async fn rss_bytes(&self) -> anyhow::Result<u64> {
        self.proc_status_kib("VmRSS:").await.map(|kib| kib * 1024)
    }

    async fn proc_status_kib(&self, key: &str) -> anyhow::Result<u64> {
        let status = tokio::fs::read_to_string(format!("/proc/{}/status", self.pid)).await?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .with_context(|| format!("no {key} in /proc/{}/status", self.pid))
    }
}

impl Drop for Ferry {
    fn drop(&mut self) {
        // Captured by libtest: shown only when the test fails, which is when it is needed.
        eprintln!(
            "----- ferry (pid {}) stderr -----\n{}",
            self.pid,
            self.logs()
        );
        let _ = self.child.start_kill();
    }
}

/// Runs `ferry validate <files>` and returns (exit code, stdout + stderr).
pub async fn validate(files: &[PathBuf]) -> anyhow::Result<(i32, String)> {
    let bin = workspace::ferry_bin().await?;
    let out = Command::new(&bin)
        .arg("validate")
        .args(files)
        .kill_on_drop(true)
        .output()
        .await?;
    let code = out
        .status
        .code()
        .context("ferry validate killed by a signal")?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((code, text))
}
