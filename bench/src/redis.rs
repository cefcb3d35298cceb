//! A redis-server for the `limit_global` scenario: Debian's (installed with apt when missing,
//! like HAProxy and nginx), on a free loopback port, no persistence, pinned to core 0 beside the
//! load generator and upstream so the proxy's core is the proxy's alone. Killed when dropped.
//!
//! [`ping_round_trips`] times PINGs over one connection from a thread pinned to the proxy's
//! core, i.e. the round trip ferry pays per global decision before Redis does any work: the
//! "one Redis round trip" of the target "one Redis round trip + 50 µs".

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::error::{BenchError, IoContext, Result};
use crate::targets::{PROXY_CORE, free_port};

/// How long redis-server may take to answer its first PING.
const READY_PATIENCE: Duration = Duration::from_secs(10);

/// A running redis-server.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

// === impl RedisServer ===

impl RedisServer {
    /// Installs (if needed) and starts redis-server; `workdir` receives its log.
    pub async fn start(workdir: &Path) -> Result<Self> {
        let bin = crate::peers::ensure_debian("redis-server", "redis-server")?;
        std::fs::create_dir_all(workdir).ctx(|| format!("creating {}", workdir.display()))?;
        let log = std::fs::File::create(workdir.join("redis.log"))
            .ctx(|| "creating the redis log".into())?;
        let port = free_port()?;
        let child = Command::new("taskset")
            .args(["-c", "0"])
            .arg(&bin)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(workdir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().ctx(|| "cloning log handle".into())?)
            .stderr(log)
            .spawn()
            .ctx(|| format!("starting {}", bin.display()))?;
        let server = Self {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let started = Instant::now();
        while started.elapsed() < READY_PATIENCE {
            if let Ok(mut conn) = TcpStream::connect(server.addr)
                && ping(&mut conn).is_ok()
            {
                return Ok(server);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(BenchError::Process(format!(
            "redis-server did not answer PING on {} within {READY_PATIENCE:?}",
            server.addr
        )))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Round trips of `count` PINGs over one connection (after 100 unrecorded ones), from a thread
/// pinned to the proxy's core; latency in µs.
pub async fn ping_round_trips(addr: SocketAddr, count: usize) -> Result<Histogram<u64>> {
    let thread = std::thread::spawn(move || pinned_pings(addr, count));
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .map_err(|e| BenchError::Process(format!("ping thread: {e}")))?
        .map_err(|_| BenchError::Process("ping thread panicked".into()))?
}

fn pinned_pings(addr: SocketAddr, count: usize) -> Result<Histogram<u64>> {
    // "<pid>/task/<tid>": this thread alone moves to the proxy core.
    let me = std::fs::read_link("/proc/thread-self").ctx(|| "reading /proc/thread-self".into())?;
    let tid = me
        .file_name()
        .map(|t| t.to_string_lossy().into_owned())
        .unwrap_or_default();
    let status = Command::new("taskset")
        .args(["-p", "-c", PROXY_CORE, &tid])
        .stdout(Stdio::null())
        .status()
        .ctx(|| "running taskset".into())?;
    if !status.success() {
        return Err(BenchError::Process(format!("taskset {tid}: {status}")));
    }
    let mut conn = TcpStream::connect(addr).ctx(|| format!("connecting to redis at {addr}"))?;
    conn.set_nodelay(true).ctx(|| "TCP_NODELAY".into())?;
    let mut hist = Histogram::new_with_bounds(1, 10_000_000, 3)
        .map_err(|e| BenchError::Http(format!("histogram: {e}")))?;
    for i in 0..count + 100 {
        let start = Instant::now();
        ping(&mut conn)?;
        if i >= 100 {
            let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
            hist.saturating_record(us.max(1));
        }
    }
    Ok(hist)
}

/// One inline PING and its `+PONG` answer.
fn ping(conn: &mut TcpStream) -> Result<()> {
    conn.write_all(b"PING\r\n").ctx(|| "writing PING".into())?;
    let mut answer = [0u8; 7];
    conn.read_exact(&mut answer).ctx(|| "reading PONG".into())?;
    if &answer == b"+PONG\r\n" {
        Ok(())
    } else {
        Err(BenchError::Process(format!(
            "redis answered PING with {:?}",
            String::from_utf8_lossy(&answer)
        )))
    }
}
