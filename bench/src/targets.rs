//! The things load is sent to: the upstream itself (direct, the floor) or a proxy under test,
//! started pinned to core 1 with one worker, and stopped (its whole process tree, by pid) when
//! dropped, so an error anywhere still leaves nothing running.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::configs::{self, Ports};
use crate::error::{BenchError, IoContext, Result};
use crate::loadgen::{Conn, Proto, RequestSpec};
pub use crate::ports::free_port;
use crate::procfs;

/// The core the proxy under test runs on (the load generator and upstream share core 0).
pub const PROXY_CORE: &str = "1";
/// How long a proxy may take to answer its first request.
const READY_PATIENCE: Duration = Duration::from_secs(20);

/// Which target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// No proxy: the load generator talks to the upstream.
    Direct,
    /// ferry.
    Ferry,
    /// A second ferry binary (`--baseline`, e.g. built from the previous commit), run exactly
    /// like `ferry` right after it: the "before" of a before/after comparison, not a peer.
    #[serde(rename = "ferry-base")]
    FerryBase,
    /// Envoy.
    Envoy,
    /// HAProxy.
    Haproxy,
    /// nginx.
    Nginx,
    /// HAProxy as a plain TCP relay (`mode tcp`): not an HTTP proxy to compare with but the
    /// floor any proxy hop pays here (loopback TCP, wake-ups, a read and a write each way).
    HaproxyTcp,
    /// ferry-bench's own TCP relay (`ferry-bench relay`): the same floor without HAProxy's
    /// event loop, as a tokio proxy on one thread pays it.
    TcpRelay,
}

// === impl Kind ===

impl Kind {
    /// Every target, in report order.
    pub const ALL: [Kind; 8] = [
        Kind::Direct,
        Kind::Ferry,
        Kind::FerryBase,
        Kind::Envoy,
        Kind::Haproxy,
        Kind::Nginx,
        Kind::HaproxyTcp,
        Kind::TcpRelay,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Direct => "direct",
            Kind::Ferry => "ferry",
            Kind::FerryBase => "ferry-base",
            Kind::Envoy => "envoy",
            Kind::Haproxy => "haproxy",
            Kind::Nginx => "nginx",
            Kind::HaproxyTcp => "haproxy-tcp",
            Kind::TcpRelay => "tcp-relay",
        }
    }

    /// Parses a lower-case name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether this is a peer proxy (not ferry or its baseline, not direct).
    pub fn is_peer(self) -> bool {
        matches!(self, Kind::Envoy | Kind::Haproxy | Kind::Nginx)
    }

    /// Whether this is a ferry binary (the one under test or its baseline): same configs,
    /// flags and scenarios.
    pub fn is_ferry(self) -> bool {
        matches!(self, Kind::Ferry | Kind::FerryBase)
    }

    /// Whether it routes HTTP requests (so the route-table scenario means something).
    pub fn routes_http(self) -> bool {
        !matches!(self, Kind::Direct | Kind::HaproxyTcp | Kind::TcpRelay)
    }
}

/// A target that can be started.
#[derive(Debug, Clone)]
pub struct Target {
    /// Which.
    pub kind: Kind,
    /// The proxy binary (`None` for direct).
    pub bin: Option<PathBuf>,
}

/// Which configuration a target starts with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setup {
    /// The plain proxy configs with this many generated routes ahead of the defaults.
    Routes(usize),
    /// OIP REST infer → gRPC ModelInfer (ferry's `translate`, Envoy's grpc_json_transcoder).
    Translate,
    /// One route with or without a rate limit (ferry only, `configs/ferry-limits.yaml`).
    Limits(configs::Limit),
    /// One route with or without tracing (ferry and Envoy, `configs/*-tracing.yaml`).
    Tracing(configs::Tracing),
    /// One route with (`true`) or without a JSON access log (ferry only).
    AccessLog(bool),
}

/// A started target.
#[derive(Debug)]
pub struct Running {
    /// Which.
    pub kind: Kind,
    /// Where HTTP/1.1 load goes.
    pub h1: SocketAddr,
    /// Where h2c load goes.
    pub h2: SocketAddr,
    /// Spawn to first proxied 200.
    pub cold_start: Duration,
    /// The admin listener (`/metrics`), for targets that have one in their config.
    pub admin: Option<SocketAddr>,
    child: Option<Child>,
}

/// `targets` with `ferry-base` moved (or added) right after `ferry`, so the two binaries of a
/// before/after comparison run back to back in every repetition and share its noise.
pub fn with_baseline(targets: &[Kind]) -> Vec<Kind> {
    let mut out: Vec<Kind> = targets
        .iter()
        .copied()
        .filter(|k| *k != Kind::FerryBase)
        .collect();
    let at = out
        .iter()
        .position(|k| *k == Kind::Ferry)
        .map_or(out.len(), |i| i + 1);
    out.insert(at, Kind::FerryBase);
    out
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

// === impl Target ===

impl Target {
    /// Starts the target in front of `upstream` with `routes` generated routes; `workdir`
    /// receives its config and logs.
    pub async fn start(
        &self,
        upstream: SocketAddr,
        workdir: &Path,
        routes: usize,
    ) -> Result<Running> {
        self.start_with(upstream, workdir, Setup::Routes(routes))
            .await
    }

    /// Starts the target in front of `upstream` configured by `setup`.
    pub async fn start_with(
        &self,
        upstream: SocketAddr,
        workdir: &Path,
        setup: Setup,
    ) -> Result<Running> {
        let Some(bin) = &self.bin else {
            return Ok(Running {
                kind: self.kind,
                h1: upstream,
                h2: upstream,
                cold_start: Duration::ZERO,
                admin: None,
                child: None,
            });
        };
        let h1 = free_port()?;
        let ports = Ports {
            h1,
            h2: if self.kind == Kind::Nginx {
                free_port()?
            } else {
                h1
            },
            admin: free_port()?,
            upstream: upstream.port(),
        };
        std::fs::create_dir_all(workdir).ctx(|| format!("creating {}", workdir.display()))?;
        let log = std::fs::File::create(workdir.join(format!("{}.log", self.kind.name())))
            .ctx(|| "creating the proxy log".into())?;
        let mut cmd = Command::new("taskset");
        cmd.arg("-c").arg(PROXY_CORE).arg(bin);
        if self.kind == Kind::TcpRelay {
            // No config file: the relay takes its two addresses on the command line.
            cmd.arg("relay")
                .arg("--listen")
                .arg(loopback(ports.h1).to_string())
                .arg("--upstream")
                .arg(upstream.to_string());
            return self.spawn(cmd, log, ports, setup, workdir).await;
        }
        let text = match setup {
            Setup::Routes(routes) => configs::render(self.kind, ports, workdir, routes),
            Setup::Translate => {
                let descriptor = workdir.join(configs::ENVOY_DESCRIPTOR_FILE);
                std::fs::write(&descriptor, configs::ENVOY_DESCRIPTOR)
                    .ctx(|| format!("writing {}", descriptor.display()))?;
                configs::render_translate(self.kind, ports, workdir)
            }
            Setup::Limits(limit) => configs::render_limits(self.kind, ports, workdir, limit),
            Setup::Tracing(tracing) => configs::render_tracing(self.kind, ports, workdir, tracing),
            Setup::AccessLog(on) => {
                configs::access_log::render_access_log(self.kind, ports, workdir, on)
            }
        }
        .ok_or_else(|| BenchError::Process(format!("no config for {}", self.kind.name())))?;
        // Envoy picks its parser by extension; the others do not care.
        let ext = match self.kind {
            Kind::Ferry | Kind::FerryBase | Kind::Envoy => "yaml",
            _ => "conf",
        };
        let config = workdir.join(format!("{}.{ext}", self.kind.name()));
        std::fs::write(&config, text).ctx(|| format!("writing {}", config.display()))?;
        match self.kind {
            Kind::Ferry | Kind::FerryBase => cmd
                .arg("run")
                .arg("--config")
                .arg(&config)
                .args(["--worker-threads", "1"]),
            Kind::Envoy => cmd.arg("-c").arg(&config).args([
                "--concurrency",
                "1",
                "--disable-hot-restart",
                "--log-level",
                "warn",
            ]),
            Kind::Haproxy | Kind::HaproxyTcp => cmd.arg("-db").arg("-f").arg(&config),
            Kind::Nginx => cmd.arg("-p").arg(workdir).arg("-c").arg(&config),
            Kind::Direct | Kind::TcpRelay => &mut cmd,
        };
        self.spawn(cmd, log, ports, setup, workdir).await
    }

    /// Spawns the prepared command, then waits for its first proxied answer.
    async fn spawn(
        &self,
        mut cmd: Command,
        log: std::fs::File,
        ports: Ports,
        setup: Setup,
        workdir: &Path,
    ) -> Result<Running> {
        cmd.env("FERRY_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().ctx(|| "cloning log handle".into())?)
            .stderr(log);
        let spawned = Instant::now();
        let child = cmd
            .spawn()
            .ctx(|| format!("starting {}", self.kind.name()))?;
        let mut running = Running {
            kind: self.kind,
            h1: loopback(ports.h1),
            h2: loopback(ports.h2),
            cold_start: Duration::ZERO,
            admin: Some(loopback(ports.admin)),
            child: Some(child),
        };
        let probe = match setup {
            Setup::Routes(routes) if routes > 0 => configs::route_probe_path(routes),
            _ => "/".to_owned(),
        };
        running.wait_ready(spawned, &probe, workdir).await?;
        Ok(running)
    }
}

// === impl Running ===

impl Running {
    /// The proxy's pid (`None` for direct).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    async fn wait_ready(&mut self, spawned: Instant, probe: &str, workdir: &Path) -> Result<()> {
        let spec = RequestSpec::get(probe);
        let authority = self.h1.to_string();
        while spawned.elapsed() < READY_PATIENCE {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(BenchError::Process(format!(
                    "{} exited during start-up ({status}); see {}",
                    self.kind.name(),
                    workdir.display()
                )));
            }
            if let Ok(mut conn) = Conn::connect(self.h1, Proto::Http1).await
                && conn.send(&authority, &spec).await.is_ok()
            {
                self.cold_start = spawned.elapsed();
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Err(BenchError::Process(format!(
            "{} did not answer {probe} within {READY_PATIENCE:?}; see {}",
            self.kind.name(),
            workdir.display()
        )))
    }

    /// CPU used so far by the proxy's process tree, user and kernel (0 for direct).
    pub fn cpu(&self, ticks: f64) -> Result<procfs::Cpu> {
        match self.pid() {
            Some(pid) => procfs::tree_cpu(pid, ticks),
            None => Ok(procfs::Cpu::default()),
        }
    }

    /// Memory of the proxy's process tree (`None` for direct).
    pub fn memory(&self) -> Result<Option<procfs::Memory>> {
        self.pid().map(procfs::tree_memory).transpose()
    }

    /// Stops the proxy: SIGTERM to its tree, then SIGKILL to whatever is left after a grace.
    pub async fn stop(mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        let pids = procfs::tree(child.id());
        signal(&pids, "-TERM");
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Children outlive a master that exited first (they were listed before the TERM).
        let alive: Vec<u32> = pids
            .into_iter()
            .filter(|p| Path::new(&format!("/proc/{p}")).exists())
            .collect();
        signal(&alive, "-KILL");
        self.kill();
    }

    /// SIGKILL to the whole tree, then reap: the path for errors and `Drop`, no grace.
    fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Orphaned nginx workers are reparented away from the master, so list the tree first.
        let pids = procfs::tree(child.id());
        signal(&pids, "-KILL");
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn signal(pids: &[u32], sig: &str) {
    if pids.is_empty() {
        return;
    }
    let _ = Command::new("kill")
        .arg(sig)
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests;
