//! The access-log scenario (ferry only; issue 23): a pair of runs, each on its own start of
//! ferry with `configs/ferry-access-log.yaml`, differing in the access log alone.
//!
//! `access_log_off`, then `access_log_json`: `h1_saturation`'s load (16 keep-alive
//! connections, closed loop, `GET /`) without a sink and with a JSON sink at 100 % to a file
//! in the run's work directory. `access_log_json` also records `cpu_ratio_vs_off`, its CPU
//! per request ÷ the run without (target ≤ 1.10), and `lines_per_request`, the lines in the
//! file ÷ the successful requests of the whole start (warm-up and probe included), so a run
//! that dropped lines (`ferry_access_log_dropped_total`) cannot pass unnoticed.

use super::{Ctx, Shape};
use crate::configs::access_log::access_log_file;
use crate::error::Result;
use crate::loadgen::{self, Proto, RequestSpec, RunStats};
use crate::scenarios::Scenario;
use crate::targets::Setup;

impl Ctx<'_> {
    /// The selected access-log scenario; failures are recorded, not returned.
    pub(in crate::scenarios) async fn access_log_scenario(&mut self) {
        if self.selected(Scenario::AccessLog)
            && let Err(e) = self.access_log_pair().await
        {
            self.fail("access_log", e);
        }
    }

    async fn access_log_pair(&mut self) -> Result<()> {
        let (off, off_cpu) = self.access_log_run("access_log_off", false).await?;
        let (on, on_cpu) = self.access_log_run("access_log_json", true).await?;
        if off.ok > 0 && on.ok > 0 && off_cpu > 0.0 {
            let ratio = (on_cpu / on.ok as f64) / (off_cpu / off.ok as f64);
            self.record("access_log_json", "cpu_ratio_vs_off", "×", ratio);
        }
        Ok(())
    }

    /// One run on its own start of ferry, with or without the sink.
    async fn access_log_run(&mut self, scenario: &str, on: bool) -> Result<(RunStats, f64)> {
        let workdir = self.plan.workdir.join(format!(
            "{}-rep{}-{scenario}",
            self.kind().name(),
            self.rep + 1
        ));
        // A previous run's file in the same work directory would be appended to.
        let _ = std::fs::remove_file(access_log_file(&workdir));
        let running = self
            .target
            .start_with(self.plan.upstream, &workdir, Setup::AccessLog(on))
            .await?;
        let plan = self.load_plan(&running, Proto::Http1, 16, 1, RequestSpec::get("/"));
        let mut warm_ok = 0;
        if !self.plan.sizing.warmup.is_zero() {
            let mut warm = plan.clone();
            warm.duration = self.plan.sizing.warmup;
            warm_ok = loadgen::closed_loop(&warm).await.map_or(0, |s| s.ok);
        }
        let result = self.load(&running, scenario, &plan, Shape::Closed).await;
        running.stop().await;
        let (stats, cpu) = result?;
        if on {
            // The start's probe request, the warm-up and the measured run; read after the stop,
            // when the writer has flushed.
            let requests = 1 + warm_ok + stats.ok;
            let lines = std::fs::read(access_log_file(&workdir))
                .map(|b| b.iter().filter(|&&c| c == b'\n').count())
                .unwrap_or(0);
            self.record(
                scenario,
                "lines_per_request",
                "×",
                lines as f64 / requests as f64,
            );
        }
        Ok((stats, cpu))
    }
}
