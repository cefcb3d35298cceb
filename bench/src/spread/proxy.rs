//! The balancers under comparison and how each is started in front of the two replicas:
//! ferry (`configs/ferry-spread.yaml`, through the faults bench's launcher: release binary,
//! `taskset -c 1`, one worker) with `lb: p2c-ewma` or `round-robin`, and Envoy 1.40
//! (`configs/envoy-spread.yaml`, `--concurrency 1` on core 1, as the main bench runs it) with
//! `LEAST_REQUEST` or `ROUND_ROBIN`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{BenchError, IoContext, Result};
use crate::faults::ferry::{Ferry, admin_get};
use crate::targets::{PROXY_CORE, free_port};

const FERRY_TEMPLATE: &str = include_str!("../../configs/ferry-spread.yaml");
const ENVOY_TEMPLATE: &str = include_str!("../../configs/envoy-spread.yaml");
/// How long Envoy may take to answer `/ready`.
const READY_PATIENCE: Duration = Duration::from_secs(10);

/// One balancer of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Balancer {
    /// ferry's default, `lb: p2c-ewma`.
    FerryP2c,
    /// ferry's `lb: round-robin`.
    FerryRoundRobin,
    /// Envoy's `LEAST_REQUEST` (P2C on in-flight requests).
    EnvoyLeastRequest,
    /// Envoy's default, `ROUND_ROBIN`.
    EnvoyRoundRobin,
}

/// Where the binaries are.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// ferry's release binary.
    pub ferry: PathBuf,
    /// Envoy's binary (`None` when only ferry runs).
    pub envoy: Option<PathBuf>,
}

/// A running balancer.
#[derive(Debug)]
pub enum Running {
    /// ferry (killed on drop).
    Ferry(Ferry),
    /// Envoy and its listener address.
    Envoy(EnvoyProcess),
}

/// An Envoy process, killed on drop.
#[derive(Debug)]
pub struct EnvoyProcess {
    child: Child,
    addr: SocketAddr,
}

// === impl Balancer ===

impl Balancer {
    /// Every balancer, in run order.
    pub const ALL: [Balancer; 4] = [
        Balancer::FerryP2c,
        Balancer::FerryRoundRobin,
        Balancer::EnvoyLeastRequest,
        Balancer::EnvoyRoundRobin,
    ];

    /// Name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Balancer::FerryP2c => "ferry-p2c-ewma",
            Balancer::FerryRoundRobin => "ferry-round-robin",
            Balancer::EnvoyLeastRequest => "envoy-least-request",
            Balancer::EnvoyRoundRobin => "envoy-round-robin",
        }
    }

    /// The balancer from its name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Whether it is an Envoy.
    pub fn is_envoy(self) -> bool {
        matches!(
            self,
            Balancer::EnvoyLeastRequest | Balancer::EnvoyRoundRobin
        )
    }

    /// Starts it in front of `replicas`, its files in `workdir`; returns once it is ready.
    pub async fn start(
        self,
        bins: &Binaries,
        workdir: &Path,
        replicas: &[SocketAddr],
    ) -> Result<Running> {
        let (port, admin) = (free_port()?, free_port()?);
        match self {
            Balancer::FerryP2c | Balancer::FerryRoundRobin => {
                let lb = if self == Balancer::FerryP2c {
                    "p2c-ewma"
                } else {
                    "round-robin"
                };
                let list: Vec<String> = replicas.iter().map(ToString::to_string).collect();
                let text = FERRY_TEMPLATE
                    .replace("@ADMIN_PORT@", &admin.to_string())
                    .replace("@PORT@", &port.to_string())
                    .replace("@ENDPOINTS@", &list.join(", "))
                    .replace("@LB@", lb);
                let ferry = Ferry::start_text(&bins.ferry, workdir, &text, (port, admin), None);
                Ok(Running::Ferry(ferry.await?))
            }
            Balancer::EnvoyLeastRequest | Balancer::EnvoyRoundRobin => {
                let bin = bins.envoy.as_deref().ok_or_else(|| {
                    BenchError::Process("no Envoy binary for an Envoy balancer".into())
                })?;
                let policy = if self == Balancer::EnvoyLeastRequest {
                    "LEAST_REQUEST"
                } else {
                    "ROUND_ROBIN"
                };
                let [a, b] = replicas else {
                    return Err(BenchError::Process(
                        "Envoy's config has two replicas".into(),
                    ));
                };
                let text = ENVOY_TEMPLATE
                    .replace("@ADMIN_PORT@", &admin.to_string())
                    .replace("@PORT_A@", &a.port().to_string())
                    .replace("@PORT_B@", &b.port().to_string())
                    .replace("@PORT@", &port.to_string())
                    .replace("@LB_POLICY@", policy);
                let envoy = EnvoyProcess::start(bin, workdir, &text, port, admin).await?;
                Ok(Running::Envoy(envoy))
            }
        }
    }
}

// === impl Running ===

impl Running {
    /// The listener the load goes to.
    pub fn addr(&self) -> SocketAddr {
        match self {
            Running::Ferry(f) => f.addr,
            Running::Envoy(e) => e.addr,
        }
    }
}

// === impl EnvoyProcess ===

impl EnvoyProcess {
    async fn start(bin: &Path, workdir: &Path, text: &str, port: u16, admin: u16) -> Result<Self> {
        std::fs::create_dir_all(workdir).ctx(|| format!("creating {}", workdir.display()))?;
        // Envoy picks its config parser by the file's extension.
        let config = workdir.join("envoy.yaml");
        std::fs::write(&config, text).ctx(|| format!("writing {}", config.display()))?;
        let log = std::fs::File::create(workdir.join("envoy.log"))
            .ctx(|| "creating the Envoy log".into())?;
        let child = Command::new("taskset")
            .args(["-c", PROXY_CORE])
            .arg(bin)
            .arg("-c")
            .arg(&config)
            .args(["--concurrency", "1", "--disable-hot-restart"])
            .args(["--log-level", "warn"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().ctx(|| "cloning the log handle".into())?)
            .stderr(log)
            .spawn()
            .ctx(|| format!("starting {}", bin.display()))?;
        let mut envoy = Self {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let admin = SocketAddr::from(([127, 0, 0, 1], admin));
        let started = Instant::now();
        while started.elapsed() < READY_PATIENCE {
            if let Ok(Some(status)) = envoy.child.try_wait() {
                return Err(BenchError::Process(format!(
                    "Envoy exited during start-up ({status}); see envoy.log"
                )));
            }
            if admin_get(admin, "/ready")
                .await
                .is_ok_and(|a| a.starts_with("HTTP/1.1 200"))
            {
                return Ok(envoy);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        envoy.kill();
        Err(BenchError::Process(
            "Envoy was not ready within 10 s".into(),
        ))
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for EnvoyProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
