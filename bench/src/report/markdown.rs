//! results.md: the machine, what was skipped or failed, the headline ratios, ferry ÷ its
//! baseline when there is one, then every scenario's medians with their spread.

use std::fmt::Write;

use super::{Aggregate, Report, find};
use crate::targets::Kind;

/// The markdown text of `report`.
pub fn render(report: &Report) -> String {
    let mut md = String::new();
    let m = &report.machine;
    let _ = writeln!(md, "# ferry-bench results ({}, {})\n", m.date, report.mode);
    let _ = writeln!(
        md,
        "Machine: {} cores ({}), kernel {}, {} MiB RAM. Proxy pinned to core 1 with one worker; \
         load generator and upstream on core 0. {} repetition(s), targets interleaved; \
         medians shown, spread as min–max.\n",
        m.cores, m.cpu_model, m.kernel, m.mem_total_mib, report.reps
    );
    let _ = writeln!(md, "Versions:\n");
    for (name, version) in &m.versions {
        let _ = writeln!(md, "- {name}: `{version}`");
    }
    md.push('\n');
    if !report.skipped.is_empty() {
        let _ = writeln!(md, "**Skipped peers:**\n");
        for (peer, reason) in &report.skipped {
            let _ = writeln!(md, "- {peer}: {reason}");
        }
        md.push('\n');
    }
    if !report.failures.is_empty() {
        let _ = writeln!(md, "**Failed scenarios:**\n");
        for f in &report.failures {
            let _ = writeln!(md, "- {f}");
        }
        md.push('\n');
    }
    headline(&mut md, report);
    super::before_after::render(&mut md, &report.before_after);
    super::translate::render(&mut md, &report.translate);
    if let Some(binary) = &report.translate_binary {
        super::translate::render_binary(&mut md, binary);
    }
    super::mtls::render(&mut md, &report.mtls);
    super::tracing::render(&mut md, &report.tracing);
    details(&mut md, &report.aggregates);
    md
}

fn targets_in(aggs: &[Aggregate]) -> Vec<Kind> {
    Kind::ALL
        .into_iter()
        .filter(|k| aggs.iter().any(|a| a.target == *k))
        .collect()
}

fn headline(md: &mut String, report: &Report) {
    let targets = targets_in(&report.aggregates);
    let _ = writeln!(
        md,
        "## Headline (ratios first; absolute medians beside them)\n"
    );
    let _ = write!(md, "| metric | ferry ÷ direct | ferry ÷ best peer |");
    for t in &targets {
        let _ = write!(md, " {} |", t.name());
    }
    md.push('\n');
    let _ = write!(md, "|---|---|---|");
    for _ in &targets {
        md.push_str("---|");
    }
    md.push('\n');
    for row in &report.headline {
        let vs_direct = row
            .ferry_vs_direct
            .map_or("–".to_owned(), |r| format!("{r:.2}×"));
        let vs_best = row
            .ferry_vs_best_peer
            .map_or("–".to_owned(), |(k, r)| format!("{r:.2}× ({})", k.name()));
        let _ = write!(md, "| {} | {vs_direct} | {vs_best} |", row.label);
        for t in &targets {
            let cell = row.medians.get(t).map_or("–".to_owned(), |v| num(*v));
            let _ = write!(md, " {cell} |");
        }
        md.push('\n');
    }
    md.push('\n');
}

fn details(md: &mut String, aggs: &[Aggregate]) {
    let targets = targets_in(aggs);
    let mut scenarios: Vec<&str> = Vec::new();
    for a in aggs {
        if !scenarios.contains(&a.scenario.as_str()) {
            scenarios.push(&a.scenario);
        }
    }
    let _ = writeln!(md, "## Every measurement: median (min–max)\n");
    for scenario in scenarios {
        let _ = writeln!(md, "### {scenario}\n");
        let _ = write!(md, "| metric | unit |");
        for t in &targets {
            let _ = write!(md, " {} |", t.name());
        }
        md.push('\n');
        let _ = write!(md, "|---|---|");
        for _ in &targets {
            md.push_str("---|");
        }
        md.push('\n');
        let mut metrics: Vec<(&str, &str)> = Vec::new();
        for a in aggs.iter().filter(|a| a.scenario == scenario) {
            if !metrics.iter().any(|(m, _)| *m == a.metric) {
                metrics.push((&a.metric, a.unit));
            }
        }
        for (metric, unit) in metrics {
            let _ = write!(md, "| {metric} | {unit} |");
            for t in &targets {
                let cell = find(aggs, scenario, metric, *t).map_or("–".to_owned(), |a| {
                    if a.values.len() > 1 {
                        format!("{} ({}–{})", num(a.median), num(a.min), num(a.max))
                    } else {
                        num(a.median)
                    }
                });
                let _ = write!(md, " {cell} |");
            }
            md.push('\n');
        }
        md.push('\n');
    }
}

/// Three significant digits, without scientific notation for everyday sizes.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_owned();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}
