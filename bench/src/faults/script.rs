//! One fault over one protocol: endpoints and a fresh ferry (so no ejection or pool state
//! leaks from one run into the next), load in open loop, and the fault's actions on a timeline
//! run from a plain thread beside the load (they spawn processes and write files; done on the
//! load's one-thread runtime they would stall it and show up as latency).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::client::{Dialer, Proto};
use super::endpoint::{Endpoint, Mode};
use super::ferry::{self, Config, Ferry};
use super::load::{self, Plan};
use super::phases::{self, Phase};
use super::setup::{Rotation, identity_files, loopback, start_endpoints, write_hosts};
use super::{Fault, FaultRun, Options};
use crate::error::{BenchError, IoContext, Result};
use crate::targets::free_port;

/// Counted from this far into the run: the first connections and the first requests' lazy
/// set-up are not the steady state.
const WARM_UP: Duration = Duration::from_millis(500);
/// How often the DNS fault's answer flips.
const DNS_FLIP: Duration = Duration::from_secs(1);
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

/// Runs `fault` over `proto` and measures it.
pub(super) async fn run_one(
    opts: &Options,
    fault: Fault,
    proto: Proto,
    rep: usize,
) -> Result<FaultRun> {
    let work = opts.work.join(format!("{}-{}", fault.name(), proto.name()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).ctx(|| format!("creating {}", work.display()))?;
    let (mut endpoints, source, hosts) = start_endpoints(fault, &work)?;
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
        retry_on: opts.retry_on.clone(),
    };
    if matches!(fault, Fault::Reload | Fault::Drain) {
        for e in &mut endpoints {
            e.set(Mode::Delay)?;
        }
    }
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
    // The last phase also takes the answers that arrive after the last request was due.
    let tail = total + Duration::from_secs(60);
    let mut phase_list = vec![Phase {
        name: "steady",
        from: WARM_UP,
        to: fault_at,
    }];
    phase_list.push(Phase {
        name: "fault",
        from: fault_at,
        to: if fault == Fault::Drain {
            tail
        } else {
            after_at
        },
    });
    if fault != Fault::Drain {
        phase_list.push(Phase {
            name: "after",
            from: after_at,
            to: tail,
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
        let mut leaves: Vec<&(Duration, u64)> = recorded.leaves.values().collect();
        leaves.sort();
        let seen: Vec<String> = leaves
            .into_iter()
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
        rep,
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
            let sent = Instant::now();
            Ferry::terminate(stage.ferry_pid)?;
            // The process is our child and stays a zombie until reaped, so its exit shows as
            // state `Z` in /proc.
            let exited = loop {
                if !alive(stage.ferry_pid) {
                    break Some(sent.elapsed());
                }
                if sent.elapsed() > Duration::from_secs(15) {
                    break None;
                }
                sleep_until(Instant::now() + Duration::from_millis(2));
            };
            stage.notes.push(match exited {
                Some(t) => format!(
                    "ferry exited {:.0} ms after SIGTERM",
                    t.as_secs_f64() * 1000.0
                ),
                None => "ferry still running 15 s after SIGTERM".to_owned(),
            });
        }
    }
    Ok(stage)
}

/// Whether `pid` is running (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which is in parentheses and may hold spaces.
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

// A plain thread that only waits for the next step of the timeline.
#[allow(clippy::disallowed_methods)]
fn sleep_until(at: Instant) {
    let now = Instant::now();
    if at > now {
        std::thread::sleep(at - now);
    }
}
