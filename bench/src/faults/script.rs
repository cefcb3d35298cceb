//! One fault over one protocol: endpoints and a fresh ferry (so no ejection or pool state
//! leaks from one run into the next), load in open loop, and the fault's actions on a timeline
//! run from a plain thread beside the load (they spawn processes and write files; done on the
//! load's one-thread runtime they would stall it and show up as latency).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::client::{Dialer, Proto};
use super::endpoint::{Endpoint, Mode};
use super::ferry::{self, Config, Ferry, Identity, Source};
use super::load::{self, Plan};
use super::phases::{self, Phase};
use super::{Fault, FaultRun, Options};
use crate::error::{BenchError, IoContext, Result};
use crate::mtls::{Certs, Workload};
use crate::targets::free_port;

/// Counted from this far into the run: the first connections and the first requests' lazy
/// set-up are not the steady state.
const WARM_UP: Duration = Duration::from_millis(500);
/// The DNS fault's host name, known only to ferry's private `/etc/hosts`.
const DNS_NAME: &str = "models.faults.test";
/// How often the DNS fault's answer flips, and how often ferry re-resolves.
const DNS_FLIP: Duration = Duration::from_secs(1);
const DNS_REFRESH: Duration = Duration::from_millis(250);
/// How often the reload fault rewrites the config (the figure).
const RELOAD_EVERY: Duration = Duration::from_millis(100);
/// How often the identity fault swaps the listener's certificate.
const ROTATE_EVERY: Duration = Duration::from_millis(500);
/// Requests per client connection in the identity fault before a new handshake.
const RECYCLE_AFTER: u32 = 50;

/// What the fault's timeline acts on; moved to the script thread and back.
struct Stage {
    endpoints: Vec<Endpoint>,
    config: Config,
    config_path: PathBuf,
    ferry_pid: u32,
    hosts: Option<PathBuf>,
    identity: Option<Rotation>,
    notes: Vec<String>,
}

/// The identity fault's two certificate sets and the kubelet-style directory ferry reads.
struct Rotation {
    dir: PathBuf,
    sets: [Workload; 2],
}

/// Runs `fault` over `proto` and measures it.
pub(super) async fn run_one(opts: &Options, fault: Fault, proto: Proto) -> Result<FaultRun> {
    let work = opts.work.join(format!("{}-{}", fault.name(), proto.name()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).ctx(|| format!("creating {}", work.display()))?;
    let (endpoints, source, hosts) = start_endpoints(fault, &work)?;
    let (identity, rotation, client_certs) = match fault {
        Fault::Identity => {
            let (identity, rotation, certs) = identity_files(&work)?;
            (Some(identity), Some(rotation), Some(certs))
        }
        _ => (None, None, None),
    };
    let config = Config {
        port: free_port()?,
        admin: free_port()?,
        source,
        generation: 0,
        identity,
    };
    let mut proxy = Ferry::start(&opts.ferry, &work, &config, hosts.as_deref()).await?;
    let dialer = match &client_certs {
        Some(certs) => Dialer::mtls(proxy.addr, proto, certs)?,
        None => Dialer::plain(proxy.addr, proto),
    };
    let (connections, streams) = match proto {
        Proto::Http1 => (64, 1),
        Proto::H2 | Proto::Grpc => (4, 32),
    };
    let fault_at = opts.steady;
    let after_at = opts.steady + opts.fault;
    let total = match fault {
        Fault::Drain => after_at,
        _ => after_at + opts.after,
    };
    let plan = Plan {
        dialer,
        connections,
        streams,
        rate: opts.rate,
        duration: total,
        recycle_after: client_certs.as_ref().map(|_| RECYCLE_AFTER),
    };
    let stage = Stage {
        endpoints,
        config,
        config_path: proxy.config_path().to_path_buf(),
        ferry_pid: proxy.pid(),
        hosts,
        identity: rotation,
        notes: Vec::new(),
    };
    let start = Instant::now() + Duration::from_millis(50);
    let script = tokio::task::spawn_blocking(move || act(fault, stage, start, fault_at, after_at));
    let recorded = load::run(plan, start).await?;
    let mut stage = script
        .await
        .map_err(|e| BenchError::Process(format!("fault script: {e}")))??;
    let mut phase_list = vec![Phase {
        name: "steady",
        from: WARM_UP,
        to: fault_at,
    }];
    phase_list.push(Phase {
        name: "fault",
        from: fault_at,
        to: after_at,
    });
    if fault != Fault::Drain {
        phase_list.push(Phase {
            name: "after",
            from: after_at,
            to: total,
        });
    }
    let stats = phases::account(&phase_list, &recorded.samples)?;
    let mut notes = std::mem::take(&mut stage.notes);
    let failed_before_sigterm = match fault {
        Fault::Drain => {
            let exit = proxy.wait_exit(Duration::from_secs(15)).await;
            notes.push(format!(
                "ferry after SIGTERM: {}",
                exit.map_or("still running 15 s later".to_owned(), |s| s.to_string())
            ));
            Some(phases::failed_before(&recorded.samples, fault_at))
        }
        _ => {
            notes.push(counters(&proxy).await);
            None
        }
    };
    for (i, e) in stage.endpoints.iter_mut().enumerate() {
        if let Ok(n) = e.answered() {
            notes.push(format!("endpoint {} ({}) answered {n}", i, e.addr));
        }
    }
    if !recorded.leaves.is_empty() {
        let seen: Vec<String> = recorded
            .leaves
            .values()
            .map(|(first, conns)| {
                format!("first at {:.1} s, {conns} connections", first.as_secs_f64())
            })
            .collect();
        notes.push(format!(
            "server certificates seen on new connections: {} ({})",
            recorded.leaves.len(),
            seen.join("; ")
        ));
    }
    let target_pct = fault.target_pct();
    let fault_failed_pct = stats.get(1).map_or(0.0, |p| p.failed_pct);
    let met = target_pct.map(|t| match failed_before_sigterm {
        Some(n) => n == 0,
        None => fault_failed_pct <= t,
    });
    Ok(FaultRun {
        fault,
        proto,
        phases: stats,
        failed_before_sigterm,
        target_pct,
        met,
        notes,
    })
}

/// ferry's own account of the run, from `/metrics`.
async fn counters(proxy: &Ferry) -> String {
    let mut parts = Vec::new();
    for name in [
        "ferry_retries_total",
        "ferry_endpoint_ejections_total",
        "ferry_upstream_connect_errors_total",
        "ferry_config_reloads_total",
        "ferry_config_reload_failures_total",
    ] {
        if let Ok(v) = proxy.metric(name).await {
            parts.push(format!("{} {v}", name.trim_start_matches("ferry_")));
        }
    }
    format!("ferry counters: {}", parts.join(", "))
}

/// Two endpoints on 127.0.0.1; for the DNS fault three on 127.0.0.2–4 sharing one port (a
/// name resolves to addresses, not ports) and a hosts file answering the first two.
fn start_endpoints(fault: Fault, work: &Path) -> Result<(Vec<Endpoint>, Source, Option<PathBuf>)> {
    if fault != Fault::Dns {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        let endpoints = vec![Endpoint::start(any)?, Endpoint::start(any)?];
        let source = Source::Endpoints(endpoints.iter().map(|e| e.addr).collect());
        return Ok((endpoints, source, None));
    }
    let first = Endpoint::start(SocketAddr::new(loopback(2), 0))?;
    let port = first.addr.port();
    let mut endpoints = vec![first];
    for host in [3, 4] {
        endpoints.push(Endpoint::start(SocketAddr::new(loopback(host), port))?);
    }
    let hosts = work.join("hosts");
    write_hosts(&hosts, &[loopback(2), loopback(3)])?;
    let source = Source::Dns {
        name: format!("{DNS_NAME}:{port}"),
        refresh: DNS_REFRESH,
    };
    Ok((endpoints, source, Some(hosts)))
}

fn loopback(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

/// Rewrites the hosts file in place: ferry's namespace has this very inode bound over
/// `/etc/hosts`, so a rename would not be seen. Both answers are the same length, so the
/// window in which a lookup could read a half-written file is one short write.
fn write_hosts(path: &Path, addrs: &[IpAddr]) -> Result<()> {
    let mut text = String::from("127.0.0.1 localhost\n");
    for a in addrs {
        text.push_str(&format!("{a} {DNS_NAME}\n"));
    }
    std::fs::write(path, text).ctx(|| format!("writing {}", path.display()))
}

/// Two certificate sets (two CAs, both trusted by ferry and the client, as during a trust
/// rotation), and the listener's files as a Kubernetes Secret volume lays them out:
/// `tls.crt` → `..data/tls.crt`, `..data` → a versioned directory, swapped atomically.
fn identity_files(work: &Path) -> Result<(Identity, Rotation, Certs)> {
    let a = Certs::generate(&work.join("certs-a"))?;
    let b = Certs::generate(&work.join("certs-b"))?;
    let bundle = work.join("trust-bundle.crt");
    let mut pem = std::fs::read_to_string(&a.ca).ctx(|| "reading CA a".into())?;
    pem.push_str(&std::fs::read_to_string(&b.ca).ctx(|| "reading CA b".into())?);
    std::fs::write(&bundle, pem).ctx(|| "writing the trust bundle".into())?;
    let dir = work.join("identity");
    std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
    for name in ["tls.crt", "tls.key"] {
        std::os::unix::fs::symlink(format!("..data/{name}"), dir.join(name))
            .ctx(|| format!("linking {name}"))?;
    }
    let rotation = Rotation {
        dir: dir.clone(),
        sets: [a.inbound.clone(), b.inbound.clone()],
    };
    rotation.publish(0)?;
    let identity = Identity {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
        trust: vec![bundle.clone()],
    };
    let client = Certs {
        ca: bundle,
        inbound: a.inbound,
        outbound: a.outbound,
    };
    Ok((identity, rotation, client))
}

// === impl Rotation ===

impl Rotation {
    /// Makes set `which` current: a new versioned directory, then `..data` renamed onto it.
    fn publish(&self, which: usize) -> Result<()> {
        let set = &self.sets[which % 2];
        let version = format!(
            "..v{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let versioned = self.dir.join(&version);
        std::fs::create_dir_all(&versioned).ctx(|| "creating a secret version".into())?;
        std::fs::copy(&set.cert, versioned.join("tls.crt")).ctx(|| "copying tls.crt".into())?;
        std::fs::copy(&set.key, versioned.join("tls.key")).ctx(|| "copying tls.key".into())?;
        let tmp = self.dir.join("..data_tmp");
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&version, &tmp).ctx(|| "linking ..data_tmp".into())?;
        std::fs::rename(&tmp, self.dir.join("..data")).ctx(|| "swapping ..data".into())
    }
}

/// The fault's timeline, on its own thread. Returns the stage for the caller to inspect.
fn act(
    fault: Fault,
    mut stage: Stage,
    start: Instant,
    fault_at: Duration,
    after_at: Duration,
) -> Result<Stage> {
    sleep_until(start + fault_at);
    match fault {
        Fault::Killed => {
            stage.endpoints[1].kill();
            sleep_until(start + after_at);
            stage.endpoints[1].restart()?;
        }
        Fault::Hangs | Fault::Resets => {
            let mode = if fault == Fault::Hangs {
                Mode::Hang
            } else {
                Mode::Reset
            };
            stage.endpoints[1].set(mode)?;
            sleep_until(start + after_at);
            stage.endpoints[1].set(Mode::Normal)?;
        }
        Fault::Dns => {
            let hosts = stage
                .hosts
                .clone()
                .ok_or_else(|| BenchError::Process("no hosts file".into()))?;
            let answers = [[loopback(2), loopback(4)], [loopback(2), loopback(3)]];
            let mut flips = 0usize;
            let mut at = fault_at;
            while at < after_at {
                sleep_until(start + at);
                write_hosts(&hosts, &answers[flips % 2])?;
                flips += 1;
                at += DNS_FLIP;
            }
            stage.notes.push(format!(
                "DNS answer changed {flips} times ({{.2,.3}} ⇄ {{.2,.4}})"
            ));
        }
        Fault::Reload => {
            let mut writes = 0u32;
            let mut at = fault_at;
            while at < after_at {
                sleep_until(start + at);
                stage.config.generation += 1;
                ferry::write_atomically(&stage.config_path, &stage.config.render())?;
                writes += 1;
                at += RELOAD_EVERY;
            }
            stage.notes.push(format!("config rewritten {writes} times"));
        }
        Fault::Identity => {
            let rotation = stage
                .identity
                .as_ref()
                .ok_or_else(|| BenchError::Process("no identity".into()))?;
            let mut swaps = 0usize;
            let mut at = fault_at;
            while at < after_at {
                sleep_until(start + at);
                swaps += 1;
                rotation.publish(swaps)?;
                at += ROTATE_EVERY;
            }
            stage.notes.push(format!("identity swapped {swaps} times"));
        }
        Fault::Drain => {
            Ferry::terminate(stage.ferry_pid)?;
        }
    }
    Ok(stage)
}

// A plain thread that only waits for the next step of the timeline.
#[allow(clippy::disallowed_methods)]
fn sleep_until(at: Instant) {
    let now = Instant::now();
    if at > now {
        std::thread::sleep(at - now);
    }
}
