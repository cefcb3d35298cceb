//! The before/after table: ferry ÷ ferry-base, the `--baseline` binary that runs exactly like
//! ferry and right after it in every repetition. Each repetition's two runs are paired, so
//! drift on a shared machine between repetitions cancels; the table shows the median of those
//! paired ratios beside every repetition's own, so the noise is visible next to the change.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::{Sample, median};
use crate::targets::Kind;

/// (metric, higher is better) compared, in table order: CPU per request and its user/kernel
/// split, throughput, latency, memory.
const METRICS: &[(&str, bool)] = &[
    ("cpu_s_per_10k", false),
    ("cpu_user_s_per_10k", false),
    ("cpu_sys_s_per_10k", false),
    ("rps", true),
    ("p50_ms", false),
    ("p99_ms", false),
    ("rss_idle_mib", false),
    ("rss_loaded_mib", false),
    ("rss_peak_mib", false),
];

/// One scenario's metric per repetition: [ferry, ferry-base].
type ByRep = BTreeMap<usize, [Option<f64>; 2]>;

/// One metric of one scenario, ferry ÷ ferry-base.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BeforeAfter {
    /// Scenario name.
    pub scenario: String,
    /// Metric name.
    pub metric: String,
    /// Whether higher is better (req/s); otherwise lower is.
    pub higher_is_better: bool,
    /// The median of the per-repetition ratios.
    pub ratio: f64,
    /// ferry's value in repetition i ÷ ferry-base's (`None` when either is missing).
    pub per_rep: Vec<Option<f64>>,
}

/// A row per scenario and metric that both ferry and ferry-base measured in some repetition,
/// scenarios in run order.
pub fn ratios(samples: &[Sample]) -> Vec<BeforeAfter> {
    let mut scenarios: Vec<&str> = Vec::new();
    let mut pairs: BTreeMap<(&str, &str), ByRep> = BTreeMap::new();
    for s in samples {
        let side = match s.target {
            Kind::Ferry => 0,
            Kind::FerryBase => 1,
            _ => continue,
        };
        let Some(&(metric, _)) = METRICS.iter().find(|(m, _)| *m == s.metric) else {
            continue;
        };
        if !scenarios.contains(&s.scenario.as_str()) {
            scenarios.push(&s.scenario);
        }
        let rep = pairs.entry((&s.scenario, metric)).or_default();
        rep.entry(s.rep).or_default()[side] = Some(s.value);
    }
    let mut rows = Vec::new();
    for scenario in scenarios {
        for &(metric, higher_is_better) in METRICS {
            let Some(reps) = pairs.get(&(scenario, metric)) else {
                continue;
            };
            let n = reps.keys().max().map_or(0, |r| r + 1);
            let per_rep: Vec<Option<f64>> = (0..n)
                .map(|r| match reps.get(&r) {
                    Some([Some(ferry), Some(base)]) => Some(ferry / base),
                    _ => None,
                })
                .map(|r| r.filter(|r| r.is_finite()))
                .collect();
            let paired: Vec<f64> = per_rep.iter().flatten().copied().collect();
            if paired.is_empty() {
                continue;
            }
            rows.push(BeforeAfter {
                scenario: scenario.to_owned(),
                metric: metric.to_owned(),
                higher_is_better,
                ratio: median(&paired),
                per_rep,
            });
        }
    }
    rows
}

/// The markdown table of `rows` (nothing when there are none).
pub fn render(md: &mut String, rows: &[BeforeAfter]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## Before/after (ferry ÷ ferry-base)\n\n\
         ferry-base is the `--baseline` binary (see Versions), run exactly like ferry and right \
         after it in every repetition. Each repetition's ferry ÷ ferry-base is listed; the \
         median of those comes first.\n"
    );
    let _ = writeln!(
        md,
        "| scenario | metric | better | ferry ÷ ferry-base | per repetition |\n\
         |---|---|---|---|---|"
    );
    for row in rows {
        let per_rep: Vec<String> = row
            .per_rep
            .iter()
            .map(|r| r.map_or("–".to_owned(), |r| format!("{r:.3}×")))
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.3}× | {} |",
            row.scenario,
            row.metric,
            if row.higher_is_better { "> 1" } else { "< 1" },
            row.ratio,
            per_rep.join(", ")
        );
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(scenario: &str, metric: &str, target: Kind, rep: usize, value: f64) -> Sample {
        Sample {
            scenario: scenario.to_owned(),
            metric: metric.to_owned(),
            unit: "",
            target,
            rep,
            value,
        }
    }

    #[test]
    fn pairs_repetitions_and_takes_the_median_ratio() {
        const H1: &str = "h1_saturation";
        const CPU: &str = "cpu_s_per_10k";
        let mut samples = Vec::new();
        for (rep, ferry, base) in [(0, 0.9, 1.0), (1, 1.2, 1.0), (2, 2.0, 2.0)] {
            samples.push(sample(H1, CPU, Kind::Ferry, rep, ferry));
            samples.push(sample(H1, CPU, Kind::FerryBase, rep, base));
            // Peers and metrics outside the table are left out.
            samples.push(sample(H1, CPU, Kind::Envoy, rep, 9.0));
            samples.push(sample("cold_start", "ready_ms", Kind::Ferry, rep, 5.0));
            samples.push(sample("cold_start", "ready_ms", Kind::FerryBase, rep, 4.0));
        }
        // ferry-base has no req/s for the second repetition (a failed scenario).
        samples.push(sample(H1, "rps", Kind::Ferry, 0, 110.0));
        samples.push(sample(H1, "rps", Kind::FerryBase, 0, 100.0));
        samples.push(sample(H1, "rps", Kind::Ferry, 1, 90.0));
        // ferry alone: no row.
        samples.push(sample("memory", "rss_idle_mib", Kind::Ferry, 0, 10.0));

        let rows = ratios(&samples);
        let shown: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.scenario.as_str(), r.metric.as_str()))
            .collect();
        assert_eq!(shown, [(H1, CPU), (H1, "rps")]);
        assert_eq!(rows[0].per_rep, [Some(0.9), Some(1.2), Some(1.0)]);
        assert_eq!(rows[0].ratio, 1.0);
        assert!(!rows[0].higher_is_better);
        assert_eq!(rows[1].per_rep, [Some(1.1), None]);
        assert_eq!(rows[1].ratio, 1.1);
        assert!(rows[1].higher_is_better);

        let mut md = String::new();
        render(&mut md, &rows);
        let expected = [
            "## Before/after (ferry ÷ ferry-base)\n",
            "| h1_saturation | cpu_s_per_10k | < 1 | 1.000× | 0.900×, 1.200×, 1.000× |\n",
            "| h1_saturation | rps | > 1 | 1.100× | 1.100×, – |\n",
        ];
        for line in expected {
            assert!(md.contains(line), "{line:?} not in\n{md}");
        }
    }

    #[test]
    fn no_baseline_no_section() {
        let samples = [sample("h1_saturation", "rps", Kind::Ferry, 0, 1.0)];
        let mut md = String::new();
        render(&mut md, &ratios(&samples));
        assert!(md.is_empty());
    }
}
