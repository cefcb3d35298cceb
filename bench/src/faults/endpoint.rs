//! One upstream endpoint of the faults bench: a child process (`ferry-bench fault-upstream`)
//! serving what the bench upstream serves, told over its stdin to misbehave.
//!
//! A child process rather than a task in the load generator, so "killed" is a real `SIGKILL`:
//! the kernel closes its listening socket (new connects are refused) and its connections as a
//! crashed model server's would be. Every accepted socket has `SO_LINGER 0`, so a connection
//! the endpoint drops is *reset* (RST), not closed politely: that is what the reset fault
//! needs, and what a crash with unread bytes looks like.
//!
//! Commands, one per line on stdin: `normal`, `hang` (requests are read and never answered),
//! `reset` (every request is refused: HTTP/1.1 connection reset, HTTP/2 `RST_STREAM`), `delay`
//! (every answer 20 ms late), `count` (prints `count N`, the requests answered so far),
//! `service MICROS` (in `normal` mode, every answer that long late: the service time of the
//! spread bench's replicas, `0` for none), `report TEXT` (every answer carries
//! `endpoint-load-metrics: TEXT` as a vLLM replica's do: the load-report bench). EOF on stdin
//! ends the process.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

use crate::error::{BenchError, IoContext, Result};

/// How the endpoint treats requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Answers as the bench upstream does.
    Normal = 0,
    /// Reads requests and never answers.
    Hang = 1,
    /// Refuses every request with a reset.
    Reset = 2,
    /// Answers each request [`DELAY`] late, so that requests are in flight at any moment
    /// (at 2,000 req/s about 40): what a reload or a drain must not drop.
    Delay = 3,
    /// Answers every request at once with 500 (counted as answered).
    Fail = 4,
}

/// How late [`Mode::Delay`] answers.
pub const DELAY: std::time::Duration = std::time::Duration::from_millis(20);

/// Why the endpoint refused a request (the error hyper turns into a reset).
#[derive(Debug, thiserror::Error)]
#[error("fault injected: reset")]
struct Injected;

/// The parent's handle on one endpoint process.
#[derive(Debug)]
pub struct Endpoint {
    /// Where it listens (kept across restarts).
    pub addr: SocketAddr,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

// === impl Mode ===

impl Mode {
    fn command(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::Hang => "hang",
            Mode::Reset => "reset",
            Mode::Delay => "delay",
            Mode::Fail => "fail",
        }
    }

    fn parse(line: &str) -> Option<Self> {
        match line {
            "normal" => Some(Mode::Normal),
            "hang" => Some(Mode::Hang),
            "reset" => Some(Mode::Reset),
            "delay" => Some(Mode::Delay),
            "fail" => Some(Mode::Fail),
            _ => None,
        }
    }
}

// === impl Endpoint ===

impl Endpoint {
    /// Starts an endpoint process on `addr` (port 0 picks one), pinned to core 0 beside the
    /// load generator, as the bench upstream is.
    pub fn start(addr: SocketAddr) -> Result<Self> {
        let exe = std::env::current_exe().ctx(|| "finding this executable".into())?;
        let mut child = Command::new("taskset")
            .args(["-c", "0"])
            .arg(&exe)
            .args(["fault-upstream", "--listen", &addr.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ctx(|| format!("starting the fault upstream on {addr}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(BenchError::Process("fault upstream without pipes".into()));
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let Some(bound) = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|a| a.parse::<SocketAddr>().ok())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BenchError::Process(format!(
                "the fault upstream on {addr} did not start ({line:?})"
            )));
        };
        Ok(Self {
            addr: bound,
            child,
            stdin,
            stdout,
        })
    }

    /// Switches the endpoint's behaviour.
    pub fn set(&mut self, mode: Mode) -> Result<()> {
        writeln!(self.stdin, "{}", mode.command()).ctx(|| "commanding the fault upstream".into())
    }

    /// Sets the service time of `normal` answers (the spread bench's fast and slow replicas).
    pub fn set_service(&mut self, service: std::time::Duration) -> Result<()> {
        writeln!(self.stdin, "service {}", service.as_micros())
            .ctx(|| "commanding the fault upstream".into())
    }

    /// Makes every answer carry `endpoint-load-metrics: <report>` (the load-report bench).
    pub fn set_report(&mut self, report: &str) -> Result<()> {
        writeln!(self.stdin, "report {report}").ctx(|| "commanding the fault upstream".into())
    }

    /// Requests answered since the process started.
    pub fn answered(&mut self) -> Result<u64> {
        writeln!(self.stdin, "count").ctx(|| "asking the fault upstream".into())?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .ctx(|| "reading the fault upstream's count".into())?;
        line.trim()
            .strip_prefix("count ")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| BenchError::Process(format!("fault upstream answered {line:?}")))
    }

    /// `SIGKILL`, and waits until the process is gone (its port closed).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A new process on the same address (after [`Endpoint::kill`]).
    pub fn restart(&mut self) -> Result<()> {
        self.kill();
        *self = Self::start(self.addr)?;
        Ok(())
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What the command thread sets and the connections read.
#[derive(Debug, Default)]
struct Shared {
    mode: AtomicU8,
    answered: AtomicU64,
    /// Added to every `normal` answer, µs.
    service_us: AtomicU64,
    /// The load report every answer carries (set once, before the load).
    report: std::sync::RwLock<Option<http::HeaderValue>>,
}

/// The child process's side: serves `listen` until stdin closes.
pub fn serve_child(listen: SocketAddr) -> Result<()> {
    let shared = Arc::new(Shared::default());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx(|| "building the fault upstream's runtime".into())?;
    let listener = runtime
        .block_on(TcpListener::bind(listen))
        .ctx(|| format!("binding {listen}"))?;
    let bound = listener.local_addr().ctx(|| "local_addr".into())?;
    let mut out = std::io::stdout();
    writeln!(out, "listening {bound}").ctx(|| "writing to stdout".into())?;
    out.flush().ctx(|| "flushing stdout".into())?;
    let commands = shared.clone();
    // Commands arrive on a plain thread: stdin is blocking and the runtime has one thread.
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            match line.trim() {
                "count" => {
                    let mut out = std::io::stdout();
                    let _ = writeln!(out, "count {}", commands.answered.load(Ordering::Relaxed));
                    let _ = out.flush();
                }
                other => {
                    if let Some(text) = other.strip_prefix("report ") {
                        let value = http::HeaderValue::from_str(text).ok();
                        if let Ok(mut report) = commands.report.write() {
                            *report = value;
                        }
                    } else if let Some(us) = other.strip_prefix("service ") {
                        if let Ok(us) = us.parse() {
                            commands.service_us.store(us, Ordering::Relaxed);
                        }
                    } else if let Some(next) = Mode::parse(other) {
                        commands.mode.store(next as u8, Ordering::Relaxed);
                    }
                }
            }
        }
        std::process::exit(0);
    });
    runtime.block_on(accept_loop(listener, shared));
    Ok(())
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_zero_linger();
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                let shared = shared.clone();
                async move {
                    match shared.mode.load(Ordering::Relaxed) {
                        m if m == Mode::Hang as u8 => {
                            // Hold the request (and its connection) without a word; ferry's
                            // timeouts must give up on it.
                            let _held = req;
                            std::future::pending::<()>().await;
                            Err(Injected)
                        }
                        m if m == Mode::Reset as u8 => Err(Injected),
                        m if m == Mode::Fail as u8 => {
                            drop(req);
                            shared.answered.fetch_add(1, Ordering::Relaxed);
                            Ok(crate::upstream::status(
                                hyper::StatusCode::INTERNAL_SERVER_ERROR,
                            ))
                        }
                        m => {
                            if m == Mode::Delay as u8 {
                                tokio::time::sleep(DELAY).await;
                            }
                            let service = shared.service_us.load(Ordering::Relaxed);
                            if service > 0 {
                                tokio::time::sleep(Duration::from_micros(service)).await;
                            }
                            let mut resp = crate::upstream::handle(req).await;
                            shared.answered.fetch_add(1, Ordering::Relaxed);
                            let report = shared.report.read().ok().and_then(|r| r.clone());
                            if let (Ok(resp), Some(report)) = (resp.as_mut(), report) {
                                resp.headers_mut().insert("endpoint-load-metrics", report);
                            }
                            resp.map_err(|never| match never {})
                        }
                    }
                }
            });
            let builder = auto::Builder::new(TokioExecutor::new());
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
