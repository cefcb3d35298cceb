//! The mutual-TLS scenarios (ferry and Envoy; see `crate::mtls` for the topology):
//!
//! - `mtls_h1`, `mtls_h2`: keep-alive load through an outbound → inbound pair, the hop in
//!   mutual TLS; `mtls_h1_plain`, `mtls_h2_plain`: the same pair with the hop in plaintext,
//!   started right before it. CPU per request is both proxies' together.
//! - `mtls_handshakes`: a new connection with a full handshake (no resumption) per request
//!   against the inbound alone: handshakes/s, the inbound's CPU per handshake, and
//!   handshakes per second of one proxy core (1 ÷ CPU per handshake).
//! - `mtls_memory`: the inbound's RSS with an identity loaded and a strict listener, after its
//!   first mutual-TLS request.

use super::Ctx;
use crate::error::{BenchError, Result};
use crate::loadgen::{self, LoadPlan, Proto, RequestSpec, RunStats};
use crate::mtls::{HandshakeClient, Hop, Pair, start_inbound};
use crate::procfs::Cpu;
use crate::scenarios::{Scenario, check_errors};

/// Connections the handshake client keeps opening at once.
const HANDSHAKE_WORKERS: usize = 8;

impl Ctx<'_> {
    /// Every selected mutual-TLS scenario; failures are recorded, not returned.
    pub(in crate::scenarios) async fn mtls_scenarios(&mut self) {
        let mut runs: Vec<(&str, Hop, bool)> = Vec::new();
        if self.selected(Scenario::MtlsH1) {
            runs.extend([
                ("mtls_h1_plain", Hop::Http1, false),
                ("mtls_h1", Hop::Http1, true),
            ]);
        }
        if self.selected(Scenario::MtlsH2) {
            runs.extend([
                ("mtls_h2_plain", Hop::H2, false),
                ("mtls_h2", Hop::H2, true),
            ]);
        }
        for (name, hop, tls) in runs {
            if let Err(e) = self.mtls_pair(name, hop, tls).await {
                self.fail(name, e);
            }
        }
        if (self.selected(Scenario::MtlsHandshakes) || self.selected(Scenario::MtlsMemory))
            && let Err(e) = self.mtls_handshakes().await
        {
            self.fail("mtls_handshakes", e);
        }
    }

    pub(super) fn fail(&mut self, scenario: &str, e: BenchError) {
        let line = format!(
            "{} rep {} {scenario}: {e}",
            self.kind().name(),
            self.rep + 1
        );
        eprintln!("ferry-bench: FAILED {line}");
        self.failures.push(line);
    }

    fn mtls_workdir(&self, scenario: &str) -> std::path::PathBuf {
        self.plan.workdir.join(format!(
            "{}-rep{}-{scenario}",
            self.kind().name(),
            self.rep + 1
        ))
    }

    fn certs(&self) -> Result<&crate::mtls::Certs> {
        self.plan
            .certs
            .as_ref()
            .ok_or_else(|| BenchError::Process("no certificates were generated".into()))
    }

    /// Keep-alive load through a pair, as `h1_saturation` / `h2_saturation` shape it.
    async fn mtls_pair(&mut self, scenario: &str, hop: Hop, tls: bool) -> Result<()> {
        let workdir = self.mtls_workdir(scenario);
        let certs = self.certs()?;
        let pair = Pair::start(self.target, self.plan.upstream, &workdir, certs, tls, hop).await?;
        let (proto, connections, streams) = match hop {
            Hop::Http1 => (Proto::Http1, 16, 1),
            Hop::H2 => (Proto::H2c, 4, 16),
        };
        let plan = LoadPlan {
            addr: pair.addr,
            proto,
            connections,
            streams,
            duration: self.plan.sizing.mtls,
            request: RequestSpec::get("/"),
        };
        if !self.plan.sizing.warmup.is_zero() {
            let warm = LoadPlan {
                duration: self.plan.sizing.warmup,
                ..plan.clone()
            };
            let _ = loadgen::closed_loop(&warm).await;
        }
        let ticks = self.plan.ticks;
        let before = pair.cpu(ticks)?;
        let stats = loadgen::closed_loop(&plan).await?;
        let cpu = pair.cpu(ticks)? - before;
        check_errors(
            scenario,
            self.kind(),
            stats.errors,
            stats.first_error.as_deref(),
        )?;
        self.record(scenario, "rps", "req/s", stats.rps());
        self.record_cpu(scenario, &stats, cpu, 10_000.0, "_s_per_10k", "CPU-s");
        self.record(scenario, "p50_ms", "ms", stats.latency_ms(0.5));
        self.record(scenario, "p99_ms", "ms", stats.latency_ms(0.99));
        let [out_pid, in_pid] = pair.pids();
        for (side, pid) in [("outbound", out_pid), ("inbound", in_pid)] {
            if let Ok(m) = crate::procfs::tree_memory(pid) {
                let metric = format!("rss_{side}_mib");
                self.record(scenario, &metric, "MiB", m.rss_kib as f64 / 1024.0);
            }
        }
        Ok(())
    }

    /// The inbound alone: idle RSS after one mutual-TLS request, then full handshakes.
    async fn mtls_handshakes(&mut self) -> Result<()> {
        let workdir = self.mtls_workdir("mtls_handshakes");
        let certs = self.certs()?;
        let client = HandshakeClient::new(certs)?;
        let (proxy, addr) =
            start_inbound(self.target, self.plan.upstream, &workdir, certs, &client).await?;
        if self.selected(Scenario::MtlsMemory) {
            let m = proxy.memory()?;
            self.record(
                "mtls_memory",
                "rss_idle_mib",
                "MiB",
                m.rss_kib as f64 / 1024.0,
            );
        }
        if !self.selected(Scenario::MtlsHandshakes) {
            return Ok(());
        }
        let scenario = "mtls_handshakes";
        let ticks = self.plan.ticks;
        let before = proxy.cpu(ticks)?;
        let stats = client
            .closed_loop(addr, HANDSHAKE_WORKERS, self.plan.sizing.mtls)
            .await?;
        let cpu = proxy.cpu(ticks)? - before;
        check_errors(
            scenario,
            self.kind(),
            stats.errors,
            stats.first_error.as_deref(),
        )?;
        self.record(scenario, "handshakes_per_s", "1/s", stats.rps());
        self.record_cpu(
            scenario,
            &stats,
            cpu,
            1_000.0,
            "_ms_per_handshake",
            "CPU-ms",
        );
        if stats.ok > 0 && cpu.total() > 0.0 {
            // The proxy's one-core capacity: the rate itself is bounded by core 0, where the
            // client does as much public-key work per handshake as the proxy.
            let per_core = stats.ok as f64 / cpu.total();
            self.record(scenario, "handshakes_per_core_s", "1/CPU-s", per_core);
        }
        self.record(scenario, "p50_ms", "ms", stats.latency_ms(0.5));
        self.record(scenario, "p99_ms", "ms", stats.latency_ms(0.99));
        if self.selected(Scenario::MtlsMemory) {
            let m = proxy.memory()?;
            self.record(
                "mtls_memory",
                "rss_after_handshakes_mib",
                "MiB",
                m.rss_kib as f64 / 1024.0,
            );
        }
        Ok(())
    }

    /// CPU per `per` successful requests (total, user, kernel) as `cpu<suffix>`.
    fn record_cpu(
        &mut self,
        scenario: &str,
        stats: &RunStats,
        cpu: Cpu,
        per: f64,
        suffix: &str,
        unit: &'static str,
    ) {
        if stats.ok == 0 {
            return;
        }
        let scale = per / stats.ok as f64;
        self.record(scenario, &format!("cpu{suffix}"), unit, cpu.total() * scale);
        self.record(
            scenario,
            &format!("cpu_user{suffix}"),
            unit,
            cpu.user * scale,
        );
        self.record(scenario, &format!("cpu_sys{suffix}"), unit, cpu.sys * scale);
    }
}
