//! The mutual-TLS scenarios' topology: a pair of proxies of one kind, outbound → inbound, both
//! pinned to the proxy core with one worker each, in front of the bench upstream:
//!
//! ```text
//! load generator ──plaintext──▶ outbound ──mTLS (or plaintext)──▶ inbound ──▶ upstream
//! ```
//!
//! The same pair runs with mutual TLS on the hop and without it (the `# mtls` lines of the
//! templates dropped), so the difference is what TLS costs; ferry's pair and Envoy's pair run
//! the same certificates ([`Certs`], made per run). The inbound also runs alone for the
//! handshake scenario, in front of [`HandshakeClient`].

mod certs;
mod client;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use self::certs::{Certs, INBOUND_ID, OUTBOUND_ID, TRUST_DOMAIN, Workload};
pub use self::client::{HandshakeClient, client_config};
use crate::error::{BenchError, IoContext, Result};
use crate::loadgen::{Conn, Proto, RequestSpec};
use crate::procfs;
use crate::targets::{Kind, PROXY_CORE, Target, free_port};

const FERRY_INBOUND: &str = include_str!("../configs/ferry-mtls-inbound.yaml");
const FERRY_OUTBOUND: &str = include_str!("../configs/ferry-mtls-outbound.yaml");
const ENVOY_INBOUND: &str = include_str!("../configs/envoy-mtls-inbound.yaml");
const ENVOY_OUTBOUND: &str = include_str!("../configs/envoy-mtls-outbound.yaml");

/// How long a pair (or the inbound alone) may take to answer its first request.
const READY_PATIENCE: Duration = Duration::from_secs(20);

/// The protocol of the hop between the two proxies (and of the load on the outbound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// HTTP/1.1 keep-alive.
    Http1,
    /// HTTP/2.
    H2,
}

/// Which side of the hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Terminates the hop.
    Inbound,
    /// Originates the hop.
    Outbound,
}

/// Ports and switches one config is rendered with.
#[derive(Debug, Clone, Copy)]
pub struct Render {
    /// Which side.
    pub side: Side,
    /// Mutual TLS on the hop, or plaintext.
    pub tls: bool,
    /// The hop's protocol (outbound only).
    pub hop: Hop,
    /// The proxy's listener.
    pub listen: u16,
    /// Its admin listener.
    pub admin: u16,
    /// Where it forwards: the inbound's listener (outbound) or the bench upstream (inbound).
    pub forward: u16,
}

/// A proxy process, pinned to the proxy core; killed (and reaped) when dropped.
#[derive(Debug)]
pub struct Proxy {
    name: String,
    child: Child,
    log: PathBuf,
}

/// Two started proxies, outbound → inbound.
#[derive(Debug)]
pub struct Pair {
    /// Where load goes (the outbound's listener; HTTP/1.1 and h2c).
    pub addr: SocketAddr,
    outbound: Proxy,
    inbound: Proxy,
}

/// The config text for `kind` (ferry or Envoy) on one side of the hop.
pub fn render(kind: Kind, r: Render, certs: &Certs) -> Option<String> {
    let template = match (kind, r.side) {
        (Kind::Ferry | Kind::FerryBase, Side::Inbound) => FERRY_INBOUND,
        (Kind::Ferry | Kind::FerryBase, Side::Outbound) => FERRY_OUTBOUND,
        (Kind::Envoy, Side::Inbound) => ENVOY_INBOUND,
        (Kind::Envoy, Side::Outbound) => ENVOY_OUTBOUND,
        _ => return None,
    };
    let workload = match r.side {
        Side::Inbound => &certs.inbound,
        Side::Outbound => &certs.outbound,
    };
    let (hop, envoy_hop, alpn) = match r.hop {
        Hop::Http1 => ("http1", "http_protocol_options", "http/1.1"),
        Hop::H2 => ("h2", "http2_protocol_options", "h2"),
    };
    let text = template
        .lines()
        .filter(|line| r.tls || !line.trim_end().ends_with("# mtls"))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("@H1_PORT@", &r.listen.to_string())
        .replace("@ADMIN_PORT@", &r.admin.to_string())
        .replace("@UP_PORT@", &r.forward.to_string())
        .replace("@PEER_PORT@", &r.forward.to_string())
        .replace("@HOP@", hop)
        .replace("@ENVOY_HOP@", envoy_hop)
        .replace("@ALPN@", alpn)
        .replace("@CERT@", &workload.cert.display().to_string())
        .replace("@KEY@", &workload.key.display().to_string())
        .replace("@CA@", &certs.ca.display().to_string());
    Some(text + "\n")
}

// === impl Proxy ===

impl Proxy {
    /// Writes `config` into `workdir` as `<name>.yaml` and starts `target` on it, pinned to the
    /// proxy core with one worker.
    pub fn spawn(target: &Target, name: &str, config: &str, workdir: &Path) -> Result<Self> {
        let bin = target
            .bin
            .as_ref()
            .ok_or_else(|| BenchError::Process(format!("{} has no binary", target.kind.name())))?;
        std::fs::create_dir_all(workdir).ctx(|| format!("creating {}", workdir.display()))?;
        let path = workdir.join(format!("{name}.yaml"));
        std::fs::write(&path, config).ctx(|| format!("writing {}", path.display()))?;
        let log = workdir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log).ctx(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new("taskset");
        cmd.arg("-c").arg(PROXY_CORE).arg(bin);
        match target.kind {
            Kind::Envoy => cmd.arg("-c").arg(&path).args([
                "--concurrency",
                "1",
                "--disable-hot-restart",
                "--log-level",
                "warn",
            ]),
            _ => cmd
                .arg("run")
                .arg("--config")
                .arg(&path)
                .args(["--worker-threads", "1"]),
        };
        let child = cmd
            .env("FERRY_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(out.try_clone().ctx(|| "cloning log handle".into())?)
            .stderr(out)
            .spawn()
            .ctx(|| format!("starting {} {name}", target.kind.name()))?;
        Ok(Self {
            name: format!("{} {name}", target.kind.name()),
            child,
            log,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// An error when the process has exited (start-up failed).
    fn check_alive(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(Some(status)) => Err(BenchError::Process(format!(
                "{} exited during start-up ({status}); see {}",
                self.name,
                self.log.display()
            ))),
            _ => Ok(()),
        }
    }

    /// CPU used so far.
    pub fn cpu(&self, ticks: f64) -> Result<procfs::Cpu> {
        procfs::tree_cpu(self.pid(), ticks)
    }

    /// Memory now.
    pub fn memory(&self) -> Result<procfs::Memory> {
        procfs::tree_memory(self.pid())
    }

    /// Waits until `probe` succeeds, failing early when the process (or `also`) exits.
    pub async fn wait_ready<F, Fut>(&mut self, mut also: Option<&mut Proxy>, probe: F) -> Result<()>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<usize>>,
    {
        let started = Instant::now();
        let mut last = None;
        while started.elapsed() < READY_PATIENCE {
            self.check_alive()?;
            if let Some(other) = also.as_deref_mut() {
                other.check_alive()?;
            }
            match probe().await {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(e.to_string()),
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Err(BenchError::Process(format!(
            "{} did not answer within {READY_PATIENCE:?} (last: {}); see {}",
            self.name,
            last.unwrap_or_default(),
            self.log.display()
        )))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// === impl Pair ===

impl Pair {
    /// Starts `target`'s inbound in front of `upstream`, then its outbound in front of the
    /// inbound, and waits for a 200 through both.
    pub async fn start(
        target: &Target,
        upstream: SocketAddr,
        workdir: &Path,
        certs: &Certs,
        tls: bool,
        hop: Hop,
    ) -> Result<Self> {
        let inbound_port = free_port()?;
        let config = |side, listen, forward| -> Result<String> {
            let r = Render {
                side,
                tls,
                hop,
                listen,
                admin: free_port()?,
                forward,
            };
            render(target.kind, r, certs).ok_or_else(|| {
                BenchError::Process(format!("no mTLS config for {}", target.kind.name()))
            })
        };
        let inbound = Proxy::spawn(
            target,
            "inbound",
            &config(Side::Inbound, inbound_port, upstream.port())?,
            workdir,
        )?;
        let outbound_port = free_port()?;
        let outbound = Proxy::spawn(
            target,
            "outbound",
            &config(Side::Outbound, outbound_port, inbound_port)?,
            workdir,
        )?;
        let addr = SocketAddr::from(([127, 0, 0, 1], outbound_port));
        let mut pair = Self {
            addr,
            outbound,
            inbound,
        };
        let authority = addr.to_string();
        let spec = RequestSpec::get("/");
        let Self {
            outbound, inbound, ..
        } = &mut pair;
        outbound
            .wait_ready(Some(inbound), || async {
                let mut conn = Conn::connect(addr, Proto::Http1).await?;
                conn.send(&authority, &spec).await
            })
            .await?;
        Ok(pair)
    }

    /// CPU of both proxies together.
    pub fn cpu(&self, ticks: f64) -> Result<procfs::Cpu> {
        let a = self.outbound.cpu(ticks)?;
        let b = self.inbound.cpu(ticks)?;
        Ok(procfs::Cpu {
            user: a.user + b.user,
            sys: a.sys + b.sys,
        })
    }

    /// The two pids, outbound first.
    pub fn pids(&self) -> [u32; 2] {
        [self.outbound.pid(), self.inbound.pid()]
    }
}

/// Starts `target`'s inbound alone with mutual TLS in front of `upstream` and waits until
/// `client` gets a 200 through it; returns it with its listener address.
pub async fn start_inbound(
    target: &Target,
    upstream: SocketAddr,
    workdir: &Path,
    certs: &Certs,
    client: &HandshakeClient,
) -> Result<(Proxy, SocketAddr)> {
    let port = free_port()?;
    let r = Render {
        side: Side::Inbound,
        tls: true,
        hop: Hop::Http1,
        listen: port,
        admin: free_port()?,
        forward: upstream.port(),
    };
    let config = render(target.kind, r, certs)
        .ok_or_else(|| BenchError::Process(format!("no mTLS config for {}", target.kind.name())))?;
    let mut proxy = Proxy::spawn(target, "inbound", &config, workdir)?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    proxy.wait_ready(None, || client.once(addr)).await?;
    Ok((proxy, addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintext_drops_every_tls_line_and_mtls_fills_every_placeholder() {
        let dir = std::env::temp_dir().join(format!("ferry-bench-mtls-{}", std::process::id()));
        let certs = Certs::generate(&dir).unwrap();
        for kind in [Kind::Ferry, Kind::Envoy] {
            for side in [Side::Inbound, Side::Outbound] {
                for tls in [false, true] {
                    let r = Render {
                        side,
                        tls,
                        hop: Hop::H2,
                        listen: 1,
                        admin: 2,
                        forward: 3,
                    };
                    let text = render(kind, r, &certs).unwrap();
                    for placeholder in [
                        "@H1_PORT@",
                        "@ADMIN_PORT@",
                        "@UP_PORT@",
                        "@PEER_PORT@",
                        "@HOP@",
                        "@ENVOY_HOP@",
                        "@ALPN@",
                        "@CERT@",
                        "@KEY@",
                        "@CA@",
                    ] {
                        // The header comments name `@NAME@` placeholders in general.
                        let body: String = text
                            .lines()
                            .filter(|l| !l.starts_with('#'))
                            .collect::<Vec<_>>()
                            .join("\n");
                        assert!(!body.contains(placeholder), "{placeholder}:\n{text}");
                    }
                    let has_tls = text.contains("ca.crt");
                    assert_eq!(has_tls, tls, "{kind:?} {side:?} tls={tls}:\n{text}");
                }
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
