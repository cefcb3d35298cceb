//! results.md of a soak: the machine, the configuration, each series after warm-up with its
//! flatness verdict, and the requests per class with their latency.

use std::fmt::Write;

use super::mix::{Class, ClassStats, pattern};
use super::sample::Sample;
use super::summary::{Judge, SeriesSummary, summarize};
use super::{FLAT_WITHIN, Measured, SAMPLE_EVERY, SoakOptions};
use crate::machine::Machine;
use crate::upstream::{SSE_SECOND_EVENT, STREAM_GAP, STREAM_MESSAGES};

/// A series: its name, how to read it off a sample, and whether it is judged.
type Column = (&'static str, fn(&Sample) -> f64, Judge);

/// Everything results.md shows.
pub(super) struct Report {
    pub machine: Machine,
    pub rate: u32,
    pub minutes: f64,
    pub warm_up_s: f64,
    pub samples: Vec<Sample>,
    pub classes: Vec<ClassStats>,
    pub kept_errors: Vec<String>,
    pub idle_rss_kib: u64,
    pub series: Vec<SeriesSummary>,
}

// === impl Report ===

impl Report {
    pub(super) fn new(opts: &SoakOptions, machine: Machine, m: Measured) -> Self {
        let warm_up_s = opts.warm_up.as_secs_f64();
        let column = |f: fn(&Sample) -> f64| -> Vec<(f64, f64)> {
            m.samples.iter().map(|s| (s.t_s, f(s))).collect()
        };
        let judged: [Column; 9] = [
            ("RSS (KiB)", |s| s.rss_kib as f64, Judge::Flat),
            ("open fds", |s| s.fds as f64, Judge::Flat),
            (
                "… downstream connections",
                |s| s.split.downstream as f64,
                Judge::Flat,
            ),
            // ferry's upstream pool holds as many connections as requests were in flight at
            // the recent peak and closes them after the cluster's idle_timeout (90 s): a
            // burst moves it, so it is shown with its trend; a leak would show in the total.
            (
                "… upstream connections",
                |s| s.split.upstream as f64,
                Judge::Report,
            ),
            (
                "… other (listeners, epoll, files)",
                |s| (s.fds).saturating_sub(s.split.downstream + s.split.upstream) as f64,
                Judge::Flat,
            ),
            ("OS threads", |s| s.threads as f64, Judge::Flat),
            ("active connections", |s| s.active_connections, Judge::Flat),
            // In-flight requests follow the load's own jitter (a late batch of SSE streams
            // doubles them for a moment), so they are reported with their trend, not judged.
            ("active requests", |s| s.active_requests, Judge::Report),
            // Tasks: one per downstream connection and stream, one per upstream connection,
            // background work; they follow in-flight requests and the upstream pool as fds do.
            ("tokio tasks", |s| s.alive_tasks, Judge::Report),
        ];
        let series = judged
            .into_iter()
            .filter_map(|(name, f, judge)| {
                summarize(name, &column(f), warm_up_s, FLAT_WITHIN, judge)
            })
            .collect();
        Self {
            machine,
            rate: opts.rate,
            minutes: opts.duration.as_secs_f64() / 60.0,
            warm_up_s,
            samples: m.samples,
            classes: m.classes,
            kept_errors: m.kept_errors,
            idle_rss_kib: m.idle_rss_kib,
            series,
        }
    }

    /// Failed requests over the whole run.
    pub(super) fn failed(&self) -> u64 {
        self.classes.iter().map(|c| c.stats.errors).sum()
    }

    /// Whether every judged series stayed within the tolerance.
    pub(super) fn all_flat(&self) -> bool {
        self.series.iter().all(|s| s.flat != Some(false))
    }

    pub(super) fn markdown(&self) -> String {
        let mut md = String::new();
        let m = &self.machine;
        let _ = writeln!(md, "# ferry soak ({})\n", m.date);
        let _ = writeln!(
            md,
            "Machine: {} cores ({}), kernel {}, {} MiB RAM. Proxy pinned to core 1 with one \
             worker; load generator and upstream on core 0. Shared machine: other builds ran \
             beside it.\n",
            m.cores, m.cpu_model, m.kernel, m.mem_total_mib
        );
        let _ = writeln!(md, "Versions:\n");
        for (name, version) in &m.versions {
            let _ = writeln!(md, "- {name}: `{version}`");
        }
        self.configuration(&mut md);
        self.series_table(&mut md);
        self.class_table(&mut md);
        md
    }

    fn configuration(&self, md: &mut String) {
        let share = |c: Class| c.weight() * 100 / pattern().len();
        let _ = writeln!(md, "\n## Configuration\n");
        let _ = writeln!(
            md,
            "- {} req/s open loop for {:.0} min (`ferry-bench soak`), `configs/ferry.yaml` \
             (one listener, HTTP/1.1 + h2c, gRPC to the upstream over h2, the rest over \
             HTTP/1.1), `ferry run --worker-threads 1`.",
            self.rate, self.minutes
        );
        let _ = writeln!(
            md,
            "- Sampled every {} s; the first {:.0} s are warm-up. Flat = (max − min) ÷ min ≤ \
             {:.0} % after warm-up; trend = least-squares slope as % of the mean per 10 min.",
            SAMPLE_EVERY.as_secs(),
            self.warm_up_s,
            FLAT_WITHIN * 100.0
        );
        let _ = writeln!(md, "- Mix (share of the rate; connections × streams):");
        for c in Class::ALL {
            let (proto, conns, streams) = c.shape();
            let _ = writeln!(
                md,
                "  - {}: {} % ({conns} × {streams}, {proto:?})",
                c.name(),
                share(c)
            );
        }
        let _ = writeln!(
            md,
            "- SSE: two events {} ms apart; gRPC server stream: {STREAM_MESSAGES} messages {} ms \
             apart. Latency is from each request's due time (open loop): to the whole answer \
             for unary calls, to the first event or message for streams (every answer is \
             still read and checked in full).",
            SSE_SECOND_EVENT.as_millis(),
            STREAM_GAP.as_millis()
        );
        let _ = writeln!(
            md,
            "- ferry's RSS after its first request (before the load): {:.2} MiB.",
            self.idle_rss_kib as f64 / 1024.0
        );
    }

    fn series_table(&self, md: &mut String) {
        let _ = writeln!(md, "\n## Resources after warm-up\n");
        let _ = writeln!(
            md,
            "| series | samples | min | max | last | spread | trend / 10 min | flat within {:.0} % |",
            FLAT_WITHIN * 100.0
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
        for s in &self.series {
            let verdict = match s.flat {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "not judged",
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {:.1} % | {:+.1} % | {verdict} |",
                s.name,
                s.samples,
                s.min,
                s.max,
                s.last,
                s.spread * 100.0,
                s.trend_per_10min * 100.0
            );
        }
        let cpu = match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) if b.t_s > a.t_s => (b.cpu_s - a.cpu_s) / (b.t_s - a.t_s),
            _ => f64::NAN,
        };
        let _ = writeln!(
            md,
            "\nferry's CPU over the run: {:.1} % of its core. Every sample: `samples.csv`; \
             plotted: `soak.svg`.",
            cpu * 100.0
        );
    }

    fn class_table(&self, md: &mut String) {
        let _ = writeln!(md, "\n## Requests\n");
        let _ = writeln!(md, "| class | ok | failed | p50 ms | p99 ms | max ms |");
        let _ = writeln!(md, "|---|---|---|---|---|---|");
        for c in &self.classes {
            let s = &c.stats;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.2} | {:.2} | {:.2} |",
                c.class.name(),
                s.ok,
                s.errors,
                s.latency_ms(0.5),
                s.latency_ms(0.99),
                s.latency.max() as f64 / 1000.0
            );
        }
        let ok: u64 = self.classes.iter().map(|c| c.stats.ok).sum();
        let _ = writeln!(md, "| all | {ok} | {} | | | |", self.failed());
        let bad: Vec<&Sample> = self.samples.iter().filter(|s| s.failed > 0).collect();
        if !bad.is_empty() {
            let _ = writeln!(
                md,
                "\nIntervals with failures (end of interval, s: failed):\n"
            );
            for s in bad {
                let _ = writeln!(md, "- {:.0}: {}", s.t_s, s.failed);
            }
        }
        if !self.kept_errors.is_empty() {
            let _ = writeln!(md, "\nFirst failures:\n");
            for e in &self.kept_errors {
                let _ = writeln!(md, "- {e}");
            }
        }
    }
}
