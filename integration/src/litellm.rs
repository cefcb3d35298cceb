//! The LiteLLM proxy as a real OpenAI-compatible upstream: `/v1/chat/completions` in JSON and
//! SSE, answered by a mock model (`mock_response` in the proxy's config) so no model runs and
//! nothing leaves the machine. Each instance's mock answer names it, so a test reads from the
//! answer which replica served a request.
//!
//! Installed (pinned) by `peers/install-litellm.sh` into `<root>/target/peers/litellm`, once per
//! test process and under a flock across processes; a failed install fails the test.
//! [`LiteLlm::start_many`] starts several proxies at once (each takes 7-10 s to answer on two
//! cores, up to a minute the very first time after an install) and each is killed on drop.
//!
//! LiteLLM refuses to start without a master key ([`MASTER_KEY`]); every request then needs
//! `authorization: Bearer <key>` ([`AUTHORIZATION`]). `LITELLM_LOCAL_MODEL_COST_MAP=True` keeps
//! it from fetching its cost map from the internet at import.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::Method;
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::process::{Child, Command};
use tokio::sync::OnceCell;
use tokio::time::Instant;

use crate::client::{HttpClient, body_full, request};
use crate::{peers, workspace};

/// The proxy's master key.
pub const MASTER_KEY: &str = "sk-ferry-litellm-test";
/// The `authorization` header value every request to the proxy needs.
pub const AUTHORIZATION: &str = "Bearer sk-ferry-litellm-test";
/// The one model each proxy serves: a mock that always answers with its instance's name.
pub const MODEL: &str = "ferry-mock";
/// How long a proxy may take to answer `/v1/models`: 7-10 s measured on 2 cores (two started
/// at once), 29-62 s on the very first run after an install, so a busy machine keeps a margin.
pub const STARTUP_PATIENCE: Duration = Duration::from_secs(150);
/// Bounds each readiness probe, so a wedged proxy fails the start instead of hanging it.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The log is kept for failure messages only; its access log would otherwise grow unbounded.
const LOG_CAP: usize = 64 * 1024;
const LOG_TAIL_LINES: usize = 40;

static VENV: OnceCell<PathBuf> = OnceCell::const_new();

/// A running LiteLLM proxy, killed on drop.
#[derive(Debug)]
pub struct LiteLlm {
    child: Option<Child>,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<u8>>>,
    _dir: tempfile::TempDir,
}

/// The LiteLLM venv (`<root>/target/peers/litellm`), installed on first use.
pub async fn venv() -> anyhow::Result<PathBuf> {
    VENV.get_or_try_init(|| async {
        let script = workspace::crate_dir()
            .join("peers")
            .join("install-litellm.sh");
        let dir = workspace::peers_dir();
        peers::run_installer(&script, &dir, "the LiteLLM proxy").await?;
        Ok(dir.join("litellm"))
    })
    .await
    .cloned()
}

/// The proxy config: one mock model whose every answer is `answer`.
fn config_yaml(answer: &str) -> String {
    // JSON strings are valid YAML scalars, so the answer needs no YAML quoting rules.
    let answer = serde_json::Value::from(answer).to_string();
    format!(
        "model_list:\n  - model_name: {MODEL}\n    litellm_params:\n      model: openai/{MODEL}\n      \
         mock_response: {answer}\ngeneral_settings:\n  master_key: {MASTER_KEY}\n"
    )
}

// === impl LiteLlm ===

impl LiteLlm {
    /// Installs LiteLLM if needed and starts one proxy per answer, all at once (start-up is
    /// slow), each on its own free loopback port; returns them in the order of `answers` once
    /// every one answers `/v1/models`. On failure the error carries the failed proxy's log.
    pub async fn start_many(answers: &[&str]) -> anyhow::Result<Vec<LiteLlm>> {
        venv().await?;
        futures_util::future::try_join_all(answers.iter().map(|a| LiteLlm::start(a))).await
    }

    /// Installs LiteLLM if needed, starts one proxy whose mock model answers `answer`, and waits
    /// until it answers `/v1/models` with the master key.
    pub async fn start(answer: &str) -> anyhow::Result<LiteLlm> {
        let bin = venv().await?.join("bin").join("litellm");
        let dir = tempfile::Builder::new().prefix("litellm-").tempdir()?;
        let config = dir.path().join("config.yaml");
        tokio::fs::write(&config, config_yaml(answer)).await?;
        let addr = free_port()?;
        let mut cmd = Command::new(&bin);
        // Settings meant for something else (a database URL, real provider keys, a proxy base
        // URL) must not reconfigure the mock.
        for (name, _) in std::env::vars_os() {
            let n = name.to_string_lossy();
            if n.starts_with("LITELLM_") || n.starts_with("OPENAI_") || n == "DATABASE_URL" {
                cmd.env_remove(&name);
            }
        }
        let mut child = cmd
            .arg("--config")
            .arg(&config)
            .args(["--host", "127.0.0.1", "--port"])
            .arg(addr.port().to_string())
            .arg("--num_workers")
            .arg("1")
            .env("LITELLM_MASTER_KEY", MASTER_KEY)
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
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
        let mut proxy = LiteLlm {
            child: Some(child),
            addr,
            log,
            _dir: dir,
        };
        if let Err(e) = proxy.wait_ready().await {
            // Dead, its pipes close, and the readers finish: the tail then holds its last words.
            proxy.kill().await;
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                futures_util::future::join_all(readers),
            )
            .await;
            let tail = proxy.log_tail();
            return Err(e.context(format!(
                "LiteLLM ({answer}) did not start; its log ends:\n{tail}"
            )));
        }
        Ok(proxy)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + STARTUP_PATIENCE;
        let client = HttpClient::http1();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("litellm exited during start-up ({status})");
            }
            let last = match tokio::time::timeout(PROBE_TIMEOUT, self.models(&client)).await {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) => e,
                Err(_) => anyhow::anyhow!("/v1/models did not answer within {PROBE_TIMEOUT:?}"),
            };
            if Instant::now() >= deadline {
                return Err(last.context(format!("not ready after {STARTUP_PATIENCE:?}")));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// `GET /v1/models` with the master key answers 200 and lists [`MODEL`].
    async fn models(&self, client: &HttpClient) -> anyhow::Result<()> {
        let req = request(
            Method::GET,
            self.addr,
            "/v1/models",
            &[("authorization", AUTHORIZATION)],
            body_full(Bytes::new()),
        )?;
        let reply = client.call(req).await?;
        anyhow::ensure!(
            reply.status.is_success() && reply.text().contains(MODEL),
            "/v1/models: {} {}",
            reply.status,
            reply.text()
        );
        Ok(())
    }

    /// The proxy's address on 127.0.0.1.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Kills the proxy (SIGKILL) and waits for it to go.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// The last lines the proxy logged (stdout and stderr interleaved).
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

/// A free loopback port: bound, then released for LiteLLM to bind right after (it cannot bind
/// `:0` and report the port back).
fn free_port() -> anyhow::Result<SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

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
