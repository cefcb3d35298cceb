//! ferry under the faults bench: its config (`configs/ferry-faults.yaml` filled in), the
//! process (as the other scenarios start it: `taskset -c 1 ferry run --config F
//! --worker-threads 1`), config rewrites, SIGTERM, and a look at its admin endpoint.
//!
//! For the DNS fault ferry runs in its own mount namespace with a private `/etc/hosts` bound
//! over the real one (`unshare -m`), so the answers for the bench's host name can change under
//! it without touching the machine's resolver or any other process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{BenchError, IoContext, Result};

const TEMPLATE: &str = include_str!("../../configs/ferry-faults.yaml");
/// How long ferry may take to answer `/ready`.
const READY_PATIENCE: Duration = Duration::from_secs(10);

/// Where the cluster's endpoints come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Fixed addresses.
    Endpoints(Vec<SocketAddr>),
    /// A host name re-resolved every `refresh`.
    Dns {
        /// `host:port`.
        name: String,
        /// Re-resolution period.
        refresh: Duration,
    },
}

/// The identity files of the listener (the identity-rotation fault).
#[derive(Debug, Clone)]
pub struct Identity {
    /// Certificate path ferry reads.
    pub cert: PathBuf,
    /// Key path ferry reads.
    pub key: PathBuf,
    /// CA bundles.
    pub trust: Vec<PathBuf>,
}

/// One rendering of the config.
#[derive(Debug, Clone)]
pub struct Config {
    /// Listener port.
    pub port: u16,
    /// Admin port.
    pub admin: u16,
    /// The cluster's endpoints.
    pub source: Source,
    /// The reload fault's sequence number: its parity picks the cluster's idle timeout (so
    /// the cluster is rebuilt on every reload) and the number itself goes into a route header
    /// (so no two consecutive files are the same config).
    pub generation: u32,
    /// Mutual TLS on the listener.
    pub identity: Option<Identity>,
    /// The route's retry triggers (empty: ferry's defaults).
    pub retry_on: Vec<String>,
}

/// A running ferry.
#[derive(Debug)]
pub struct Ferry {
    child: Child,
    config_path: PathBuf,
    /// Admin address.
    pub admin: SocketAddr,
    /// Listener address.
    pub addr: SocketAddr,
}

// === impl Config ===

impl Config {
    /// The YAML text.
    pub fn render(&self) -> String {
        let source = match &self.source {
            Source::Endpoints(addrs) => {
                let list: Vec<String> = addrs.iter().map(ToString::to_string).collect();
                format!("endpoints: [{}]", list.join(", "))
            }
            Source::Dns { name, refresh } => format!(
                "dns: {{ names: [\"{name}\"], refresh: {}ms }}",
                refresh.as_millis()
            ),
        };
        let variant = self.generation.to_string();
        let idle = if self.generation % 2 == 1 {
            "91s"
        } else {
            "90s"
        };
        let mut text = TEMPLATE
            .replace("@ADMIN_PORT@", &self.admin.to_string())
            .replace("@PORT@", &self.port.to_string())
            .replace("@SOURCE@", &source)
            .replace("@VARIANT@", &variant)
            .replace("@IDLE@", idle)
            .replace("@RETRY_ON@", &retry_on(&self.retry_on));
        match &self.identity {
            Some(id) => {
                let trust: Vec<String> = id.trust.iter().map(|p| p.display().to_string()).collect();
                text = text
                    .replace("@CERT@", &id.cert.display().to_string())
                    .replace("@KEY@", &id.key.display().to_string())
                    .replace("@TRUST@", &trust.join(", "));
            }
            None => {
                text = text
                    .lines()
                    .filter(|l| !l.trim_end().ends_with("# mtls"))
                    .collect::<Vec<_>>()
                    .join("\n");
            }
        }
        text
    }
}

// === impl Ferry ===

impl Ferry {
    /// Writes `config` into `workdir` and starts `bin` on it; with `hosts`, inside a mount
    /// namespace where that file is `/etc/hosts`. Returns once `/ready` answers 200.
    pub async fn start(
        bin: &Path,
        workdir: &Path,
        config: &Config,
        hosts: Option<&Path>,
    ) -> Result<Self> {
        let ports = (config.port, config.admin);
        Self::start_text(bin, workdir, &config.render(), ports, hosts).await
    }

    /// As [`Ferry::start`], on a config text of the caller's (the spread bench's own
    /// template) listening on `ports` (listener, admin).
    pub(crate) async fn start_text(
        bin: &Path,
        workdir: &Path,
        text: &str,
        (port, admin): (u16, u16),
        hosts: Option<&Path>,
    ) -> Result<Self> {
        std::fs::create_dir_all(workdir).ctx(|| format!("creating {}", workdir.display()))?;
        let config_dir = workdir.join("config");
        std::fs::create_dir_all(&config_dir)
            .ctx(|| format!("creating {}", config_dir.display()))?;
        let config_path = config_dir.join("ferry.yaml");
        write_atomically(&config_path, text)?;
        let log = std::fs::File::create(workdir.join("ferry.log"))
            .ctx(|| "creating the ferry log".into())?;
        let mut cmd = match hosts {
            Some(hosts) => {
                let mut c = Command::new("unshare");
                // `exec` keeps one pid from unshare through sh and taskset to ferry, so the
                // pid we signal is ferry's.
                c.args(["-m", "sh", "-c"]).arg(format!(
                    "mount --bind '{}' /etc/hosts && exec taskset -c {} \"$@\"",
                    hosts.display(),
                    crate::targets::PROXY_CORE
                ));
                c.arg("sh").arg(bin);
                c
            }
            None => {
                let mut c = Command::new("taskset");
                c.args(["-c", crate::targets::PROXY_CORE]).arg(bin);
                c
            }
        };
        cmd.arg("run")
            .arg("--config")
            .arg(&config_path)
            .args(["--worker-threads", "1"])
            .env("FERRY_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().ctx(|| "cloning the log handle".into())?)
            .stderr(log);
        let child = cmd.spawn().ctx(|| format!("starting {}", bin.display()))?;
        let mut ferry = Self {
            child,
            config_path,
            admin: SocketAddr::from(([127, 0, 0, 1], admin)),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        ferry.wait_ready().await?;
        Ok(ferry)
    }

    async fn wait_ready(&mut self) -> Result<()> {
        let started = Instant::now();
        while started.elapsed() < READY_PATIENCE {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(BenchError::Process(format!(
                    "ferry exited during start-up ({status}); see ferry.log"
                )));
            }
            if admin_get(self.admin, "/ready")
                .await
                .is_ok_and(|a| a.starts_with("HTTP/1.1 200"))
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(BenchError::Process(
            "ferry was not ready within 10 s".into(),
        ))
    }

    /// The config file ferry watches.
    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// The process id (ferry's own: `unshare`, `sh` and `taskset` exec into it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM.
    pub fn terminate(pid: u32) -> Result<()> {
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .ctx(|| "running kill".into())?;
        if status.success() {
            Ok(())
        } else {
            Err(BenchError::Process(format!("kill -TERM failed: {status}")))
        }
    }

    /// Waits up to `patience` for the process to exit.
    pub async fn wait_exit(&mut self, patience: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < patience {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }

    /// The value of an unlabelled counter from `/metrics` (0 when absent).
    pub async fn metric(&self, name: &str) -> Result<f64> {
        let text = admin_get(self.admin, "/metrics").await?;
        Ok(text
            .lines()
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(['{', ' ']))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }
}

impl Drop for Ferry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One admin request over a fresh connection; the whole answer, head included.
pub(crate) async fn admin_get(admin: SocketAddr, path: &str) -> Result<String> {
    let mut tcp = TcpStream::connect(admin)
        .await
        .ctx(|| format!("connecting to admin {admin}"))?;
    let req = format!("GET {path} HTTP/1.1\r\nhost: admin\r\nconnection: close\r\n\r\n");
    tcp.write_all(req.as_bytes())
        .await
        .ctx(|| "writing to admin".into())?;
    let mut answer = String::new();
    tcp.read_to_string(&mut answer)
        .await
        .ctx(|| "reading from admin".into())?;
    Ok(answer)
}

/// Writes `text` beside `path` and renames it over `path`.
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).ctx(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).ctx(|| format!("renaming over {}", path.display()))
}

/// The retry policy's `on` entry for `triggers` (nothing: ferry's defaults).
fn retry_on(triggers: &[String]) -> String {
    if triggers.is_empty() {
        String::new()
    } else {
        format!(", on: [{}]", triggers.join(", "))
    }
}
