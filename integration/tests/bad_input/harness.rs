//! One ferry per module in front of a [`Recorder`], with a background client on its own
//! connections doing normal requests (HTTP/1.1 and h2c) the whole time, and RSS samples of the
//! ferry process. A module runs its table of cases, collecting every wrong answer instead of
//! stopping at the first, then [`Suite::finish`] checks the background client and the memory.

use std::fmt::Display;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::{Admin, Ferry, HttpClient, Recorder, eventually, to_yaml};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// Patience for an answer, a close or a counter that should come almost at once.
pub const PATIENCE: Duration = Duration::from_secs(10);
/// The data listener's name.
pub const LISTENER: &str = "main";
/// Ceiling for ferry's peak RSS over a module. A debug build idles near 15 MiB; every case
/// here would cost far more than this if it buffered what the client sent or was sent.
const RSS_CEILING: u64 = 64 << 20;
/// Most one case may raise ferry's peak RSS over its RSS before the case: every heavy case
/// here (32 MiB answers, a 40 MB HPACK bomb, 100 zero-window streams of 8 MiB) would pass it
/// if ferry buffered what it was sent or asked to send.
const CASE_GROWTH: u64 = 16 << 20;
/// Pause between background rounds: steady traffic, not a load test.
const BACKGROUND_PAUSE: Duration = Duration::from_millis(20);
/// Bound on background rounds (a module takes seconds; this is minutes of rounds).
const BACKGROUND_ROUNDS: u64 = 20_000;

/// A ferry, its recording upstream and the background client.
pub struct Suite {
    /// The ferry under test.
    pub ferry: Ferry,
    /// Its only upstream.
    pub recorder: Recorder,
    background: Background,
    rss: Vec<(String, u64)>,
    /// RSS after the previous case (before the next one).
    last_rss: u64,
    wrong: Vec<String>,
}

struct Background {
    stop: Arc<AtomicBool>,
    task: JoinHandle<(u64, Vec<String>)>,
}

/// A config with one listener whose routes are `routes` and a cluster `up` at `upstream`,
/// plus a cluster `dead` where nothing listens. The listener's stalled-write timeout is 1 s so
/// that a peer that never reads is dropped within a test's patience.
pub fn config(routes: Value, upstream: SocketAddr, dead: SocketAddr) -> Value {
    json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "listeners": [{
            "name": LISTENER,
            "address": "127.0.0.1:0",
            "limits": { "stalled_write_timeout": "1s" },
            "routes": routes,
        }],
        "clusters": [
            { "name": "up", "endpoints": [upstream.to_string()] },
            { "name": "dead", "endpoints": [dead.to_string()] },
        ],
    })
}

/// An address on which nothing listens: bound by the kernel, then closed.
pub async fn closed_port() -> anyhow::Result<SocketAddr> {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = l.local_addr()?;
    drop(l);
    Ok(addr)
}

// === impl Suite ===

impl Suite {
    /// Starts the recorder, then ferry with `routes` (see [`config`]), then the background
    /// client, and waits for its first round to pass.
    pub async fn start(routes: Value) -> anyhow::Result<Suite> {
        let recorder = Recorder::start().await?;
        let cfg = config(routes, recorder.addr(), closed_port().await?);
        let ferry = Ferry::start(&to_yaml(&cfg)).await?;
        let addr = ferry.listener(LISTENER)?;
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(background(addr, stop.clone()));
        let suite = Suite {
            ferry,
            recorder,
            background: Background { stop, task },
            rss: Vec::new(),
            last_rss: 0,
            wrong: Vec::new(),
        };
        eventually(PATIENCE, || async {
            let n = suite.recorder.under("/background/").len();
            anyhow::ensure!(n >= 2, "background requests so far: {n}");
            Ok(())
        })
        .await?;
        let mut suite = suite;
        suite.last_rss = suite.ferry.rss_bytes().await?;
        Ok(suite)
    }

    /// The data listener.
    pub fn addr(&self) -> anyhow::Result<SocketAddr> {
        self.ferry.listener(LISTENER)
    }

    /// The admin client.
    pub fn admin(&self) -> Admin {
        Admin::new(self.ferry.admin())
    }

    /// Records a wrong answer for `case` unless `ok`.
    pub fn check(&mut self, case: &str, ok: bool, detail: impl Display) {
        if !ok {
            self.wrong.push(format!("{case}: {detail}"));
        }
    }

    /// Takes a case's outcome: an error (the case could not run to its end) is recorded as
    /// wrong; either way ferry's RSS is sampled.
    pub async fn record(&mut self, case: &str, outcome: anyhow::Result<()>) -> anyhow::Result<()> {
        if let Err(e) = outcome {
            self.wrong.push(format!("{case}: {e:#}"));
        }
        self.sample_rss(case).await
    }

    /// Samples ferry's RSS after `case`: over the ceiling, or a peak more than
    /// [`CASE_GROWTH`] over the RSS before the case, is wrong.
    pub async fn sample_rss(&mut self, case: &str) -> anyhow::Result<()> {
        let rss = self.ferry.rss_bytes().await?;
        let peak = self.ferry.peak_rss_bytes().await?;
        self.rss.push((case.to_owned(), rss));
        self.check(
            case,
            rss <= RSS_CEILING,
            format_args!("RSS {} MiB", rss >> 20),
        );
        self.check(
            case,
            peak <= self.last_rss + CASE_GROWTH,
            format_args!(
                "peak RSS {} KiB, up from {} KiB before the case",
                peak >> 10,
                self.last_rss >> 10
            ),
        );
        self.last_rss = rss;
        Ok(())
    }

    /// `ferry_downstream_stalled_closes_total` now.
    pub async fn stalled_closes(&self) -> anyhow::Result<f64> {
        Ok(self.admin().metrics().await?.sum(
            "ferry_downstream_stalled_closes_total",
            &[("listener", LISTENER)],
        ))
    }

    /// Waits for `ferry_downstream_stalled_closes_total` to reach `n`.
    pub async fn stalled_closes_reach(&self, n: f64) -> anyhow::Result<()> {
        eventually(PATIENCE, || async {
            let closes = self.stalled_closes().await?;
            anyhow::ensure!(closes >= n, "stalled closes: {closes}, want {n}");
            Ok(())
        })
        .await
    }

    /// Stops the background client and checks, besides every case's own verdict: each of
    /// its requests was answered 200 and reached the upstream, and ferry's peak RSS stayed
    /// under the ceiling.
    pub async fn finish(mut self) -> anyhow::Result<()> {
        self.background.stop.store(true, Ordering::SeqCst);
        let (ok, failures) = (&mut self.background.task).await?;
        for f in &failures {
            self.wrong.push(format!("background client: {f}"));
        }
        let reached = self.recorder.under("/background/").len() as u64;
        self.check(
            "background client",
            ok >= 2 && reached >= ok,
            format_args!("{ok} answered 200, {reached} reached the upstream"),
        );
        let peak = self.ferry.peak_rss_bytes().await?;
        self.check(
            "memory",
            peak <= RSS_CEILING,
            format_args!("peak RSS {} MiB", peak >> 20),
        );
        let samples: Vec<String> = self
            .rss
            .iter()
            .map(|(case, rss)| format!("{case}={}KiB", rss >> 10))
            .collect();
        // libtest shows this only when the test fails, or with --nocapture.
        println!(
            "background: {ok} requests answered 200; peak RSS {} KiB; RSS after each case: {}",
            peak >> 10,
            samples.join(" ")
        );
        anyhow::ensure!(
            self.wrong.is_empty(),
            "{} wrong:\n{}",
            self.wrong.len(),
            self.wrong.join("\n")
        );
        Ok(())
    }
}

/// Normal requests, one HTTP/1.1 and one h2c per round, each client on its own keep-alive
/// connection, until stopped. Returns how many were answered 200 and what went wrong.
async fn background(addr: SocketAddr, stop: Arc<AtomicBool>) -> (u64, Vec<String>) {
    let clients = [("h1", HttpClient::http1()), ("h2", HttpClient::h2c())];
    let (mut ok, mut failures) = (0, Vec::new());
    for round in 0..BACKGROUND_ROUNDS {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        for (name, client) in &clients {
            let path = format!("/background/{name}/{round}");
            match client.get(addr, &path).await.context(path) {
                Ok(reply) if reply.status == 200 => ok += 1,
                Ok(reply) => failures.push(format!("{name} round {round}: {}", reply.status)),
                Err(e) => failures.push(format!("{name} round {round}: {e:#}")),
            }
        }
        tokio::time::sleep(BACKGROUND_PAUSE).await;
    }
    (ok, failures)
}
