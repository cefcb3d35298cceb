//! Arize Phoenix as the real OTLP tracing backend of the tracing tests: spans go in over OTLP
//! gRPC or OTLP/HTTP protobuf (Phoenix refuses OTLP/HTTP JSON with 415) and come back out
//! through Phoenix's own REST query API, so a test asserts on what a real backend stored, not
//! on what a fake decoded.
//!
//! Installed (pinned, with a constraints file of the whole resolved set) by
//! `peers/install-phoenix.sh` into `<root>/target/peers/phoenix`, once per test process and
//! under a flock across processes; a failed install fails the test. [`Phoenix::start`] runs
//! `phoenix serve` on free loopback ports with its SQLite database in a temporary directory and
//! kills it on drop.
//!
//! Spans land in the project named by the sender's resource attribute
//! `openinference.project.name` ([`PROJECT_ATTRIBUTE`]), `default` without it. Give each test
//! its own with [`Phoenix::unique_project`] and set
//! `OTEL_RESOURCE_ATTRIBUTES=openinference.project.name=<project>` on the process it traces.
//! Phoenix returns neither the OTel SpanKind nor resource attributes.
//!
//! Phoenix hard-codes its gRPC listener to `[::]:port`; test machines have only loopback.

mod span;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::process::{Child, Command};
use tokio::sync::OnceCell;
use tokio::time::Instant;

use crate::client::HttpClient;
use crate::eventually::eventually;
use crate::{peers, workspace};

pub use span::{Span, SpanEvent, StatusCode};

/// How long `phoenix serve` may take to answer `/healthz`: 9-25 s measured on 2 cores, so a
/// busy CI machine keeps a margin.
pub const STARTUP_PATIENCE: Duration = Duration::from_secs(60);
/// The resource attribute Phoenix groups spans into projects by.
pub const PROJECT_ATTRIBUTE: &str = "openinference.project.name";
/// The REST API's largest page.
const MAX_PAGE: u16 = 1000;
/// Bounds every query, so a wedged Phoenix fails the test instead of hanging it.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
/// The log is kept for failure messages only; its access log would otherwise grow unbounded.
const LOG_CAP: usize = 64 * 1024;
const LOG_TAIL_LINES: usize = 60;

static VENV: OnceCell<PathBuf> = OnceCell::const_new();

/// A running `phoenix serve`, killed on drop.
#[derive(Debug)]
pub struct Phoenix {
    child: Option<Child>,
    http: SocketAddr,
    grpc: SocketAddr,
    client: HttpClient,
    log: Arc<Mutex<Vec<u8>>>,
    _dir: tempfile::TempDir,
}

#[derive(Deserialize)]
struct SpansPage {
    data: Vec<Span>,
    next_cursor: Option<String>,
}

/// The Phoenix venv (`<root>/target/peers/phoenix`), installed on first use. It also holds the
/// Python OpenTelemetry SDK and OTLP exporters, for senders that are not ferry.
pub async fn venv() -> anyhow::Result<PathBuf> {
    VENV.get_or_try_init(|| async {
        let script = workspace::crate_dir()
            .join("peers")
            .join("install-phoenix.sh");
        let dir = workspace::peers_dir();
        peers::run_installer(&script, &dir, "Arize Phoenix").await?;
        Ok(dir.join("phoenix"))
    })
    .await
    .cloned()
}

/// The venv's Python interpreter.
pub async fn python() -> anyhow::Result<PathBuf> {
    Ok(venv().await?.join("bin").join("python"))
}

// === impl Phoenix ===

impl Phoenix {
    /// Installs Phoenix if needed, starts it on free loopback ports and waits until it is
    /// healthy and its gRPC port accepts connections; on failure the error carries its log.
    pub async fn start() -> anyhow::Result<Phoenix> {
        let bin = venv().await?.join("bin").join("phoenix");
        let dir = tempfile::Builder::new().prefix("phoenix-").tempdir()?;
        let (http, grpc) = free_ports()?;
        let mut cmd = Command::new(&bin);
        // A PHOENIX_* or OTEL_* setting meant for the code under test (a database URL, its own
        // instrumentation, an exporter endpoint) must not reconfigure the backend.
        for (name, _) in std::env::vars_os() {
            let n = name.to_string_lossy();
            if n.starts_with("PHOENIX_") || n.starts_with("OTEL_") {
                cmd.env_remove(&name);
            }
        }
        let mut child = cmd
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", http.port().to_string())
            .env("PHOENIX_GRPC_PORT", grpc.port().to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            // Unbuffered, so the log tail in a failure message is current.
            .env("PYTHONUNBUFFERED", "1")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", bin.display()))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(collect(out, log.clone()));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(collect(err, log.clone()));
        }
        let mut phoenix = Phoenix {
            child: Some(child),
            http,
            grpc,
            client: HttpClient::http1(),
            log,
            _dir: dir,
        };
        if let Err(e) = phoenix.wait_ready().await {
            // Dead, its pipes close, and the readers finish: the tail then holds its last words.
            phoenix.kill().await;
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                futures_util::future::join_all(readers),
            )
            .await;
            let tail = phoenix.log_tail();
            return Err(e.context(format!("Phoenix did not start; its log ends:\n{tail}")));
        }
        Ok(phoenix)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + STARTUP_PATIENCE;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("phoenix serve exited during start-up ({status})");
            }
            let last = match self.healthz().await {
                Ok(()) => match tokio::net::TcpStream::connect(self.grpc).await {
                    Ok(_) => return Ok(()),
                    Err(e) => anyhow::Error::new(e).context("OTLP gRPC port"),
                },
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(last.context(format!("not ready after {STARTUP_PATIENCE:?}")));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// `GET /healthz` answers 200.
    pub async fn healthz(&self) -> anyhow::Result<()> {
        let reply = bounded(self.client.get(self.http, "/healthz")).await?;
        anyhow::ensure!(reply.status.is_success(), "/healthz: {}", reply.status);
        Ok(())
    }

    /// OTLP gRPC endpoint, `http://127.0.0.1:PORT`.
    pub fn otlp_grpc_endpoint(&self) -> String {
        format!("http://{}", self.grpc)
    }

    /// OTLP/HTTP base endpoint, `http://127.0.0.1:PORT` (the value of
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`; traces go to [`Phoenix::otlp_http_traces_url`]).
    pub fn otlp_http_endpoint(&self) -> String {
        format!("http://{}", self.http)
    }

    /// OTLP/HTTP traces URL, `http://127.0.0.1:PORT/v1/traces` (protobuf only).
    pub fn otlp_http_traces_url(&self) -> String {
        format!("http://{}/v1/traces", self.http)
    }

    /// The HTTP listener: UI, REST API, OTLP/HTTP.
    pub fn http_addr(&self) -> SocketAddr {
        self.http
    }

    /// The OTLP gRPC listener.
    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc
    }

    /// A project name no other test uses: `name` (characters other than ASCII letters,
    /// digits, `-` and `_` replaced by `-`, so it is safe in a URL path and in
    /// `OTEL_RESOURCE_ATTRIBUTES`) plus the process id and a random suffix.
    pub fn unique_project(name: &str) -> String {
        use std::hash::{BuildHasher as _, Hasher as _};
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        // RandomState is seeded randomly per process and differs per call: randomness
        // without a dependency or shared counter.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        format!("{clean}-{:x}-{:016x}", std::process::id(), h.finish())
    }

    /// `OTEL_RESOURCE_ATTRIBUTES` value that sends a process's spans to `project`.
    pub fn resource_attributes(project: &str) -> String {
        format!("{PROJECT_ATTRIBUTE}={project}")
    }

    /// Every span in `project`, oldest start first, following `next_cursor` through pages
    /// of the API's maximum size. A project that does not exist yet is an error: Phoenix
    /// creates it with its first span.
    pub async fn spans(&self, project: &str) -> anyhow::Result<Vec<Span>> {
        self.spans_paged(project, MAX_PAGE).await
    }

    /// [`Phoenix::spans`] with pages of `page_size` (1..=1000) spans.
    pub async fn spans_paged(&self, project: &str, page_size: u16) -> anyhow::Result<Vec<Span>> {
        anyhow::ensure!(
            (1..=MAX_PAGE).contains(&page_size),
            "page size {page_size} outside 1..={MAX_PAGE}"
        );
        let base = format!(
            "/v1/projects/{}/spans?limit={page_size}",
            percent_encode(project)
        );
        let mut spans = Vec::new();
        let mut cursor: Option<String> = None;
        // A cursor that never ends would be a Phoenix bug; bound it rather than spin.
        for _ in 0..100_000 {
            let path = match &cursor {
                Some(c) => format!("{base}&cursor={}", percent_encode(c)),
                None => base.clone(),
            };
            let reply = bounded(self.client.get(self.http, &path)).await?;
            if reply.status == http::StatusCode::NOT_FOUND {
                bail!(
                    "project {project:?} does not exist in Phoenix (yet): {}",
                    reply.text()
                );
            }
            anyhow::ensure!(
                reply.status.is_success(),
                "GET {path}: {} {}",
                reply.status,
                reply.text()
            );
            let page: SpansPage = reply.json()?;
            spans.extend(page.data);
            match page.next_cursor {
                Some(next) if cursor.as_ref() != Some(&next) => cursor = Some(next),
                Some(next) => bail!("Phoenix repeated the cursor {next:?}"),
                None => {
                    spans.sort_by(|a, b| {
                        (a.start_unix_micros(), &a.span_id)
                            .cmp(&(b.start_unix_micros(), &b.span_id))
                    });
                    return Ok(spans);
                }
            }
        }
        bail!("GET {base}: more than 100000 pages")
    }

    /// Polls [`Phoenix::spans`] until `done` accepts them, for at most `patience`; on timeout
    /// the error lists the spans last seen (or the last query error).
    pub async fn wait_for_spans<P>(
        &self,
        project: &str,
        patience: Duration,
        done: P,
    ) -> anyhow::Result<Vec<Span>>
    where
        P: Fn(&[Span]) -> bool,
    {
        eventually(patience, || async {
            let spans = self.spans(project).await?;
            if done(&spans) {
                return Ok(spans);
            }
            let seen: Vec<String> = spans
                .iter()
                .map(|s| format!("{} ({}/{})", s.name, s.trace_id, s.span_id))
                .collect();
            bail!(
                "project {project:?}: {} spans do not satisfy the condition: {seen:?}",
                spans.len()
            )
        })
        .await
    }

    /// Polls until `project` holds at least `min` spans.
    pub async fn wait_for_span_count(
        &self,
        project: &str,
        min: usize,
        patience: Duration,
    ) -> anyhow::Result<Vec<Span>> {
        self.wait_for_spans(project, patience, |spans| spans.len() >= min)
            .await
            .with_context(|| format!("waiting for {min} spans"))
    }

    /// Kills Phoenix (SIGKILL) and waits for it to go, to test a dead backend: both OTLP
    /// ports then refuse connections. Queries fail from here on.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// The last lines Phoenix logged (stdout and stderr interleaved).
    pub fn log_tail(&self) -> String {
        let text = self
            .log
            .lock()
            .map(|l| String::from_utf8_lossy(&l).into_owned())
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
    }
}

/// Two distinct free loopback ports: both are bound at once so they differ, then released for
/// Phoenix to bind right after (it cannot bind `:0` and report the port back).
fn free_ports() -> anyhow::Result<(SocketAddr, SocketAddr)> {
    let a = std::net::TcpListener::bind("127.0.0.1:0")?;
    let b = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok((a.local_addr()?, b.local_addr()?))
}

async fn bounded<T>(
    query: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::time::timeout(QUERY_TIMEOUT, query)
        .await
        .with_context(|| format!("Phoenix did not answer within {QUERY_TIMEOUT:?}"))?
}

/// Keeps the last [`LOG_CAP`] bytes a pipe delivers.
fn collect(
    mut pipe: impl AsyncRead + Unpin + Send + 'static,
    sink: Arc<Mutex<Vec<u8>>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf).await {
            let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
                break;
            };
            if let Ok(mut log) = sink.lock() {
                log.extend_from_slice(chunk);
                let excess = log.len().saturating_sub(LOG_CAP);
                log.drain(..excess);
            }
        }
    })
}

/// Percent-encodes all but RFC 3986 unreserved characters (Phoenix's cursors are base64, whose
/// `+`, `/` and `=` would otherwise change meaning in a query string).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
