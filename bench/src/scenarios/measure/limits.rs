//! The rate-limit scenarios (ferry only; issue 16), each a pair of runs on their own starts of
//! ferry with `configs/ferry-limits.yaml`, differing in the route's limit alone. Every request
//! carries `x-tenant: bench`, the limit's key, and the amount is never reached: the figures are
//! what admitting costs.
//!
//! - `limit_local_off`, then `limit_local`: `h1_saturation`'s load (16 keep-alive connections,
//!   closed loop) without and with a local limit; `limit_local` also records
//!   `cpu_ratio_vs_off`, its CPU per request ÷ the run without (target ≤ 1.05).
//! - `limit_global`: `redis_ping_*`, PING round trips to a real redis-server from the proxy's
//!   core; then `limit_global_off` and `limit_global`, `latency_1k`'s load (1,000 req/s, 16
//!   connections, open loop) without and with a `scope: global` limit counted in that Redis;
//!   `added_p50_ms` / `added_p99_ms` are the differences (target: p50 ≤ one round trip
//!   + 50 µs).

use http::{HeaderName, HeaderValue};

use super::{Ctx, Shape};
use crate::configs::Limit;
use crate::error::Result;
use crate::loadgen::{self, Proto, RequestSpec, RunStats};
use crate::redis::{RedisServer, ping_round_trips};
use crate::scenarios::Scenario;
use crate::targets::Setup;

/// Request rate of the `limit_global` runs (as `latency_1k`).
const GLOBAL_RATE: u32 = 1_000;
/// PINGs timed per repetition.
const PINGS: usize = 1_000;

impl Ctx<'_> {
    /// Every selected rate-limit scenario; failures are recorded, not returned.
    pub(in crate::scenarios) async fn limit_scenarios(&mut self) {
        if self.selected(Scenario::LimitLocal)
            && let Err(e) = self.limit_local().await
        {
            self.fail("limit_local", e);
        }
        if self.selected(Scenario::LimitGlobal)
            && let Err(e) = self.limit_global().await
        {
            self.fail("limit_global", e);
        }
    }

    async fn limit_local(&mut self) -> Result<()> {
        let (off, off_cpu) = self
            .limit_run("limit_local_off", Limit::Off, Shape::Closed)
            .await?;
        let (on, on_cpu) = self
            .limit_run("limit_local", Limit::Local, Shape::Closed)
            .await?;
        if off.ok > 0 && on.ok > 0 && off_cpu > 0.0 {
            let ratio = (on_cpu / on.ok as f64) / (off_cpu / off.ok as f64);
            self.record("limit_local", "cpu_ratio_vs_off", "×", ratio);
        }
        Ok(())
    }

    async fn limit_global(&mut self) -> Result<()> {
        let workdir = self.limit_workdir("redis");
        let redis = RedisServer::start(&workdir).await?;
        let pings = ping_round_trips(redis.addr, PINGS).await?;
        for (metric, q) in [("redis_ping_p50_ms", 0.5), ("redis_ping_p99_ms", 0.99)] {
            let ms = pings.value_at_quantile(q) as f64 / 1000.0;
            self.record("limit_global", metric, "ms", ms);
        }
        let open = Shape::Open(GLOBAL_RATE);
        let (off, _) = self.limit_run("limit_global_off", Limit::Off, open).await?;
        let global = Limit::Global {
            redis_port: redis.addr.port(),
        };
        let open = Shape::Open(GLOBAL_RATE);
        let (on, _) = self.limit_run("limit_global", global, open).await?;
        for (metric, q) in [("added_p50_ms", 0.5), ("added_p99_ms", 0.99)] {
            let added = on.latency_ms(q) - off.latency_ms(q);
            self.record("limit_global", metric, "ms", added);
        }
        drop(redis);
        Ok(())
    }

    /// One run on its own start of ferry with `limit`: `shape` decides closed loop
    /// (saturation) or a fixed rate, over 16 HTTP/1.1 keep-alive connections.
    async fn limit_run(
        &mut self,
        scenario: &str,
        limit: Limit,
        shape: Shape,
    ) -> Result<(RunStats, f64)> {
        let workdir = self.limit_workdir(scenario);
        let running = self
            .target
            .start_with(self.plan.upstream, &workdir, Setup::Limits(limit))
            .await?;
        let spec = RequestSpec {
            headers: vec![(
                HeaderName::from_static("x-tenant"),
                HeaderValue::from_static("bench"),
            )],
            ..RequestSpec::get("/")
        };
        let mut plan = self.load_plan(&running, Proto::Http1, 16, 1, spec);
        if !self.plan.sizing.warmup.is_zero() {
            let mut warm = plan.clone();
            warm.duration = self.plan.sizing.warmup;
            let _ = loadgen::closed_loop(&warm).await;
        }
        if matches!(shape, Shape::Open(_)) {
            plan.duration = self.plan.sizing.fixed_rate;
        }
        let result = self.load(&running, scenario, &plan, shape).await;
        running.stop().await;
        result
    }

    fn limit_workdir(&self, scenario: &str) -> std::path::PathBuf {
        self.plan.workdir.join(format!(
            "{}-rep{}-{scenario}",
            self.kind().name(),
            self.rep + 1
        ))
    }
}
