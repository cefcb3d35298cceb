//! results.md and results.json of the spread bench: the machine line, a summary (one row per
//! case, one column per balancer), a table per case, and replica A's share second by second.

use std::fmt::Write as _;

use super::case::{self, Case, CaseRun};
use super::verdict::{P99_RATIO_MAX, SLOW_MAX, SPREAD_MAX, SPREAD_MIN};
use super::{Balancer, Options};
use crate::error::Result;
use crate::machine::Machine;

/// One line per run for the terminal.
pub(super) fn one_line(run: &CaseRun) -> String {
    let mut line = format!(
        "served {:?} ({}), p50 {:.2} ms, p99 {:.2} ms, {} failed",
        run.served,
        percents(&run.shares),
        run.p50_ms,
        run.p99_ms,
        run.failed
    );
    if let Some(met) = run.spread_met {
        line.push_str(if met {
            ", target met"
        } else {
            ", TARGET MISSED"
        });
    }
    line
}

/// Writes results.md and results.json into `opts.out`.
pub(super) fn write(
    opts: &Options,
    runs: &[CaseRun],
    versions: Vec<(String, String)>,
) -> Result<()> {
    let mut all = vec![(
        "ferry-bench".to_owned(),
        env!("CARGO_PKG_VERSION").to_owned(),
    )];
    all.extend(versions);
    let machine = Machine::describe(all);
    let json = serde_json::json!({
        "machine": machine,
        "service_ms": { "fast": case::FAST.as_secs_f64() * 1e3, "slow": case::SLOW.as_secs_f64() * 1e3 },
        "runs": runs,
    });
    crate::report::write_files(&opts.out, &json, &markdown(opts, runs, &machine))
}

fn markdown(opts: &Options, runs: &[CaseRun], m: &Machine) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# ferry-bench spread ({})\n", m.date);
    let _ = writeln!(
        md,
        "Machine: {} cores ({}), kernel {}, {} MiB RAM. The balancer (ferry or Envoy) pinned \
         to core 1 with one worker; load generator and both replicas on core 0.\n",
        m.cores, m.cpu_model, m.kernel, m.mem_total_mib
    );
    md.push_str("Versions:\n\n");
    for (name, version) in &m.versions {
        let _ = writeln!(md, "- {name}: `{version}`");
    }
    let _ = writeln!(
        md,
        "\nTwo replicas (`ferry-bench fault-upstream`, each counting what it served), A and B, \
         answering `GET /` after a service time of {:.0} ms (B: {:.0} ms in the slow case). \
         Open loop over HTTP/1.1 keep-alive connections; latency from each request's due time \
         (first 0.5 s left out), shares over every request. Each case starts its balancer \
         afresh. Targets (issue 20): identical replicas {:.0}–{:.0} % each; the slow replica \
         ≤ {:.0} % and fleet p99 ≤ {P99_RATIO_MAX}× the same balancer's `{}` p99.\n",
        case::FAST.as_secs_f64() * 1e3,
        case::SLOW.as_secs_f64() * 1e3,
        SPREAD_MIN * 100.0,
        SPREAD_MAX * 100.0,
        SLOW_MAX * 100.0,
        Case::BASELINE,
    );
    summary(&mut md, opts, runs);
    for case in Case::ALL {
        case_table(&mut md, case, runs, opts.reps.max(1));
    }
    md.push_str("\n## Replica A's share, second by second\n\n");
    for run in runs {
        let seconds: Vec<String> = run
            .per_second_share_a
            .iter()
            .map(|s| s.map_or("–".to_owned(), |x| format!("{:.0}", x * 100.0)))
            .collect();
        let _ = writeln!(
            md,
            "- {} / {}: {}",
            who(run, opts.reps.max(1)),
            run.case.name,
            seconds.join(" ")
        );
    }
    md
}

fn summary(md: &mut String, opts: &Options, runs: &[CaseRun]) {
    md.push_str("## Summary (share of A / B; ✓ target met, ✗ missed)\n\n| case | target |");
    for b in &opts.balancers {
        let _ = write!(md, " {} |", b.name());
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(opts.balancers.len()));
    md.push('\n');
    for case in Case::ALL {
        let target = if case.slow {
            format!("B ≤ {:.0} %, p99 ≤ {P99_RATIO_MAX}×", SLOW_MAX * 100.0)
        } else {
            format!("{:.0}–{:.0} % each", SPREAD_MIN * 100.0, SPREAD_MAX * 100.0)
        };
        let _ = write!(md, "| {} | {target} |", case.name);
        for &b in &opts.balancers {
            let cells: Vec<String> = runs
                .iter()
                .filter(|r| r.balancer == b && r.case == case)
                .map(cell)
                .collect();
            let _ = write!(md, " {} |", cells.join("<br>"));
        }
        md.push('\n');
    }
}

fn cell(run: &CaseRun) -> String {
    match (&run.spread_met, &run.slow) {
        (Some(met), _) => format!("{} {}", percents(&run.shares), mark(*met)),
        (None, Some(v)) => format!(
            "{} {}, p99 {:.2}× {}",
            percents(&run.shares),
            mark(v.share_met),
            v.p99_ratio,
            mark(v.p99_met)
        ),
        (None, None) => percents(&run.shares),
    }
}

fn case_table(md: &mut String, case: Case, runs: &[CaseRun], reps: usize) {
    let _ = writeln!(
        md,
        "\n## {}: {} req/s, {} requests, {} connections\n",
        case.name, case.rate, case.requests, case.connections
    );
    if case.slow {
        md.push_str(
            "| balancer | served A / B | share of B (slow) | p50 ms | p99 ms | all-fast p99 ms | \
             p99 ratio | failed | share met | p99 met |\n|---|---|---|---|---|---|---|---|---|---|\n",
        );
    } else {
        md.push_str(
            "| balancer | served A / B | share A / B | p50 ms | p99 ms | failed | target met |\n\
             |---|---|---|---|---|---|---|\n",
        );
    }
    let mut mine: Vec<&CaseRun> = runs.iter().filter(|r| r.case == case).collect();
    // Grouped by balancer, repetitions together (they ran interleaved).
    mine.sort_by_key(|r| (position(r.balancer), r.rep));
    for run in mine {
        let served: Vec<String> = run.served.iter().map(u64::to_string).collect();
        let head = format!("| {} | {} |", who(run, reps), served.join(" / "));
        let row = match (&run.slow, run.spread_met) {
            (Some(v), _) => format!(
                "{head} {:.1} % | {:.2} | {:.2} | {:.2} | {:.2}× | {} | {} | {} |",
                v.slow_share * 100.0,
                run.p50_ms,
                run.p99_ms,
                v.fast_p99_ms,
                v.p99_ratio,
                run.failed,
                mark(v.share_met),
                mark(v.p99_met)
            ),
            (None, met) => format!(
                "{head} {} | {:.2} | {:.2} | {} | {} |",
                percents(&run.shares),
                run.p50_ms,
                run.p99_ms,
                run.failed,
                met.map_or("–", mark)
            ),
        };
        let _ = writeln!(md, "{row}");
    }
}

fn position(b: Balancer) -> usize {
    Balancer::ALL
        .iter()
        .position(|&x| x == b)
        .unwrap_or(usize::MAX)
}

/// The balancer's name, with the repetition when there are several.
fn who(run: &CaseRun, reps: usize) -> String {
    if reps > 1 {
        format!("{} (rep {})", run.balancer.name(), run.rep)
    } else {
        run.balancer.name().to_owned()
    }
}

fn percents(shares: &[f64]) -> String {
    let parts: Vec<String> = shares.iter().map(|s| format!("{:.1}", s * 100.0)).collect();
    format!("{} %", parts.join(" / "))
}

fn mark(met: bool) -> &'static str {
    if met { "✓" } else { "✗" }
}
