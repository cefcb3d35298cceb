//! A real Prometheus on 127.0.0.1 (Debian's 2.42, installed by `peers/install-prometheus.sh`)
//! scraping ferry's admin `/metrics` every second, for the tests of the chart's dashboard and
//! alert rules: PromQL through the HTTP API (`/api/v1/query`, label values, rules, alerts), and
//! `promtool` for the rules file. Its own data directory and port, killed on drop.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::sync::OnceCell;

use crate::client::HttpClient;
use crate::eventually::eventually;
use crate::{peers, workspace};

static INSTALLED: OnceCell<()> = OnceCell::const_new();

/// How long Prometheus may take to start answering `/-/ready`.
const STARTUP_PATIENCE: Duration = Duration::from_secs(30);

/// A scrape target: ferry's admin address and the labels Kubernetes service discovery would
/// have added (`namespace`, `pod`), which the dashboard's variables select on.
#[derive(Clone, Debug)]
pub struct Target {
    /// ferry's admin listener.
    pub admin: SocketAddr,
    /// The `namespace` label.
    pub namespace: String,
    /// The `pod` label.
    pub pod: String,
}

/// A running Prometheus.
#[derive(Debug)]
pub struct Prometheus {
    addr: SocketAddr,
    http: HttpClient,
    child: Child,
    // Holds the config and the TSDB; removed on drop (after the child is killed).
    dir: tempfile::TempDir,
}

/// Installs Prometheus and promtool once per test process; a missing peer fails the test.
pub async fn install() -> anyhow::Result<()> {
    INSTALLED
        .get_or_try_init(|| async {
            let script = workspace::crate_dir()
                .join("peers")
                .join("install-prometheus.sh");
            peers::run_installer(&script, &workspace::peers_dir(), "prometheus").await
        })
        .await
        .copied()
}

/// Runs `promtool` with `args` in `dir` and returns its output (any exit status).
pub async fn promtool(dir: &Path, args: &[&str]) -> anyhow::Result<Output> {
    install().await?;
    Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .kill_on_drop(true)
        .output()
        .await
        .context("running promtool")
}

// === impl Prometheus ===

impl Prometheus {
    /// Installs Prometheus if needed and starts it on a free loopback port, scraping `targets`
    /// every second and evaluating `rule_files` every second.
    pub async fn start(targets: &[Target], rule_files: &[PathBuf]) -> anyhow::Result<Prometheus> {
        install().await?;
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("prometheus.yml");
        tokio::fs::write(&config, scrape_config(targets, rule_files)).await?;
        // A free port: bind :0, read it, release it (Prometheus binds it right after).
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let log = std::fs::File::create(dir.path().join("prometheus.log"))?;
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .context("starting prometheus")?;
        let prometheus = Prometheus {
            addr,
            http: HttpClient::http1(),
            child,
            dir,
        };
        eventually(STARTUP_PATIENCE, || async {
            let reply = prometheus.http.get(addr, "/-/ready").await?;
            anyhow::ensure!(reply.status.is_success(), "/-/ready: {}", reply.status);
            Ok(())
        })
        .await
        .with_context(|| format!("prometheus did not start:\n{}", prometheus.log()))?;
        Ok(prometheus)
    }

    /// What Prometheus logged so far (for failure messages).
    /// Where the server listens (its API and its own graph pages).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// `GET path` on the API; the `data` of a `"status": "success"` answer, else an error with
    /// Prometheus's own message (a PromQL syntax error names the position).
    pub async fn api(&self, path: &str) -> anyhow::Result<Value> {
        let reply = self.http.get(self.addr, path).await?;
        let body: Value = reply.json()?;
        if body["status"] != "success" {
            bail!(
                "{path}: {} {}: {}",
                reply.status,
                body["errorType"],
                body["error"]
            );
        }
        Ok(body["data"].clone())
    }

    /// An instant query now: the result vector (or scalar), each element with `metric` and
    /// `value`.
    pub async fn query(&self, promql: &str) -> anyhow::Result<Vec<Value>> {
        let data = self
            .api(&format!("/api/v1/query?query={}", encode(promql)))
            .await
            .with_context(|| format!("query {promql}"))?;
        match data["resultType"].as_str() {
            Some("vector" | "matrix") => Ok(data["result"].as_array().cloned().unwrap_or_default()),
            // A scalar or string is one value, not a list of series.
            Some(_) => Ok(vec![data["result"].clone()]),
            None => bail!("query {promql}: no resultType in {data}"),
        }
    }

    /// `label_values(selector, label)` as Grafana runs it: `/api/v1/label/<label>/values` with
    /// `match[]`.
    pub async fn label_values(&self, selector: &str, label: &str) -> anyhow::Result<Vec<String>> {
        let data = self
            .api(&format!(
                "/api/v1/label/{label}/values?match[]={}",
                encode(selector)
            ))
            .await?;
        Ok(serde_json::from_value(data)?)
    }

    /// Every rule group Prometheus loaded, as `/api/v1/rules` reports them (its own parse of
    /// the rules file: name, query, health, last error).
    pub async fn rule_groups(&self) -> anyhow::Result<Vec<Value>> {
        let data = self.api("/api/v1/rules").await?;
        Ok(data["groups"].as_array().cloned().unwrap_or_default())
    }

    /// Active alerts (pending and firing).
    pub async fn alerts(&self) -> anyhow::Result<Vec<Value>> {
        let data = self.api("/api/v1/alerts").await?;
        Ok(data["alerts"].as_array().cloned().unwrap_or_default())
    }

    /// The OS process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

/// Prometheus's config: one `ferry` job with a static target per ferry, labelled as the
/// Kubernetes relabelling in the chart's docs would; 1 s intervals so a test sees samples in
/// seconds.
fn scrape_config(targets: &[Target], rule_files: &[PathBuf]) -> String {
    let mut out = String::from(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n",
    );
    out.push_str("rule_files:\n");
    for f in rule_files {
        out.push_str(&format!("  - {:?}\n", f.display().to_string()));
    }
    out.push_str("scrape_configs:\n  - job_name: ferry\n    static_configs:\n");
    for t in targets {
        out.push_str(&format!(
            "      - targets: [\"{}\"]\n        labels: {{ namespace: {:?}, pod: {:?} }}\n",
            t.admin, t.namespace, t.pod
        ));
    }
    out
}

/// Percent-encodes a query parameter value (everything but RFC 3986's unreserved characters).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 2);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
