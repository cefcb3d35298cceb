//! The tap scenario (ferry only; issue 23): what an attached admin `/tap` whose filter
//! matches nothing costs a request.
//!
//! One start of ferry with `configs/ferry-access-log.yaml` without its sink (one route, no
//! access log, so records exist only for taps), `h1_saturation`'s load (16 keep-alive
//! connections, closed loop, `GET /`), in [`PAIRS`] alternating pairs of runs on the same
//! process: `tap_none` (no tap) and `tap_idle` (a `/tap?route=no-such-route` connection held
//! open through the run). Alternating on one process takes the start-to-start spread out of a
//! comparison whose target (≤ 1.02×) is smaller than it. `tap_idle` records
//! `cpu_ratio_vs_none` per pair: its CPU per request ÷ the `tap_none` run just before. Before
//! each run the driver reads `/config_dump` until it shows the tap attached (or, for
//! `tap_none`, the last one detached).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::{Ctx, Shape};
use crate::error::{BenchError, Result};
use crate::loadgen::{self, Proto, RequestSpec};
use crate::scenarios::Scenario;
use crate::targets::{Running, Setup};

/// Pairs of runs per repetition.
const PAIRS: usize = 3;

/// A filter no request passes: the bench's one route is `default`.
const TAP: &str = "/tap?route=no-such-route";

impl Ctx<'_> {
    /// The selected tap scenario; failures are recorded, not returned.
    pub(in crate::scenarios) async fn tap_scenario(&mut self) {
        if self.selected(Scenario::Tap)
            && let Err(e) = self.tap_pairs().await
        {
            self.fail("tap", e);
        }
    }

    async fn tap_pairs(&mut self) -> Result<()> {
        let workdir =
            self.plan
                .workdir
                .join(format!("{}-rep{}-tap", self.kind().name(), self.rep + 1));
        let running = self
            .target
            .start_with(self.plan.upstream, &workdir, Setup::AccessLog(false))
            .await?;
        let result = self.tap_runs(&running).await;
        running.stop().await;
        result
    }

    async fn tap_runs(&mut self, running: &Running) -> Result<()> {
        let admin = running
            .admin
            .ok_or_else(|| BenchError::Process("the tap config has no admin address".into()))?;
        let plan = self.load_plan(running, Proto::Http1, 16, 1, RequestSpec::get("/"));
        if !self.plan.sizing.warmup.is_zero() {
            let mut warm = plan.clone();
            warm.duration = self.plan.sizing.warmup;
            let _ = loadgen::closed_loop(&warm).await;
        }
        for _ in 0..PAIRS {
            wait_attached(admin, 0).await?;
            let (none, none_cpu) = self.load(running, "tap_none", &plan, Shape::Closed).await?;
            let tap = attach(admin).await?;
            wait_attached(admin, 1).await?;
            let (idle, idle_cpu) = self.load(running, "tap_idle", &plan, Shape::Closed).await?;
            drop(tap);
            if none.ok > 0 && idle.ok > 0 && none_cpu > 0.0 {
                let ratio = (idle_cpu / idle.ok as f64) / (none_cpu / none.ok as f64);
                self.record("tap_idle", "cpu_ratio_vs_none", "×", ratio);
            }
        }
        Ok(())
    }
}

/// Opens a tap and leaves its answer unread (nothing will come: the filter matches nothing).
async fn attach(admin: SocketAddr) -> Result<TcpStream> {
    let mut stream = TcpStream::connect(admin)
        .await
        .map_err(|e| BenchError::Http(format!("connecting to {admin}: {e}")))?;
    stream
        .write_all(format!("GET {TAP} HTTP/1.1\r\nhost: {admin}\r\n\r\n").as_bytes())
        .await
        .map_err(|e| BenchError::Http(format!("GET {TAP}: {e}")))?;
    Ok(stream)
}

/// Waits until `/config_dump` shows `n` taps attached.
async fn wait_attached(admin: SocketAddr, n: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = String::new();
    while Instant::now() < deadline {
        match config_dump(admin).await {
            Ok(dump) => {
                let attached = dump["taps"]["attached"].as_u64();
                if attached == Some(n as u64) {
                    return Ok(());
                }
                last = format!("taps {}", dump["taps"]);
            }
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(BenchError::Http(format!(
        "{admin}/config_dump never showed {n} taps attached: {last}"
    )))
}

async fn config_dump(admin: SocketAddr) -> std::result::Result<serde_json::Value, String> {
    let mut stream = TcpStream::connect(admin).await.map_err(|e| e.to_string())?;
    let req = format!("GET /config_dump HTTP/1.1\r\nhost: {admin}\r\nconnection: close\r\n\r\n");
    stream
        .write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .await
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .ok_or("no HTTP answer")?;
    serde_json::from_str(body).map_err(|e| format!("{e}: {body}"))
}
