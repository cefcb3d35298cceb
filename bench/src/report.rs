//! Results: raw samples, per-target medians with their spread, derived added latency, the
//! headline ratios, the before/after ratios against a baseline ferry, and the JSON and markdown
//! files under `bench/results/<date>/`.

pub mod before_after;
mod files;
mod headlines;
mod markdown;
pub mod mtls;
pub mod tracing;
pub mod translate;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::machine::Machine;
use crate::targets::Kind;

pub use self::files::{write, write_files};
pub use self::markdown::render as markdown;

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Scenario name.
    pub scenario: String,
    /// Metric name.
    pub metric: String,
    /// Unit.
    pub unit: &'static str,
    /// Target.
    pub target: Kind,
    /// Repetition (0-based).
    pub rep: usize,
    /// Value.
    pub value: f64,
}

/// A metric of one target over all repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct Aggregate {
    /// Scenario name.
    pub scenario: String,
    /// Metric name.
    pub metric: String,
    /// Unit.
    pub unit: &'static str,
    /// Target.
    pub target: Kind,
    /// Every repetition's value.
    pub values: Vec<f64>,
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

/// One headline row: a metric across targets, with ferry's ratios.
#[derive(Debug, Clone, Serialize)]
pub struct Headline {
    /// What is compared.
    pub label: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// Whether higher is better.
    pub higher_is_better: bool,
    /// Median per target.
    pub medians: BTreeMap<Kind, f64>,
    /// ferry ÷ direct, where direct has the metric.
    pub ferry_vs_direct: Option<f64>,
    /// The best peer and ferry ÷ that peer.
    pub ferry_vs_best_peer: Option<(Kind, f64)>,
}

/// Everything written to results.json.
#[derive(Debug, Serialize)]
pub struct Report {
    /// "smoke" or "full".
    pub mode: &'static str,
    /// Repetitions.
    pub reps: usize,
    /// The machine.
    pub machine: Machine,
    /// Peers that could not be installed or found, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Failed scenarios.
    pub failures: Vec<String>,
    /// Headline ratios.
    pub headline: Vec<Headline>,
    /// ferry vs Envoy on REST → gRPC translation, against the targets.
    pub translate: Vec<translate::TranslateVerdict>,
    /// ferry's binary-tensor translation beside its plain 1 MiB POST.
    pub translate_binary: Option<translate::BinaryVerdict>,
    /// ferry's mutual-TLS costs against its plaintext pair, Envoy and the memory ceiling.
    pub mtls: Vec<mtls::MtlsVerdict>,
    /// ferry's tracing overhead against its untraced runs and Envoy's tracer.
    pub tracing: Vec<tracing::TracingVerdict>,
    /// ferry ÷ ferry-base per scenario and metric (empty without `--baseline`).
    pub before_after: Vec<before_after::BeforeAfter>,
    /// Per-target medians and spread.
    pub aggregates: Vec<Aggregate>,
    /// Raw measurements.
    pub samples: Vec<Sample>,
}

/// Median of `values` (NaN when empty).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Groups samples into per-target aggregates, adding `added_*` latency over direct.
pub fn aggregate(samples: &[Sample]) -> Vec<Aggregate> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut groups: BTreeMap<(String, String, Kind), (&'static str, Vec<f64>)> = BTreeMap::new();
    for s in samples {
        let key = (s.scenario.clone(), s.metric.clone());
        if !order.contains(&key) {
            order.push(key);
        }
        groups
            .entry((s.scenario.clone(), s.metric.clone(), s.target))
            .or_insert((s.unit, Vec::new()))
            .1
            .push(s.value);
    }
    let mut out = Vec::new();
    for (scenario, metric) in &order {
        for kind in Kind::ALL {
            if let Some((unit, values)) = groups.get(&(scenario.clone(), metric.clone(), kind)) {
                out.push(make(scenario, metric, unit, kind, values.clone()));
            }
        }
    }
    out.extend(added_latency(&out));
    out
}

fn make(
    scenario: &str,
    metric: &str,
    unit: &'static str,
    target: Kind,
    values: Vec<f64>,
) -> Aggregate {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Aggregate {
        scenario: scenario.to_owned(),
        metric: metric.to_owned(),
        unit,
        target,
        median: median(&values),
        values,
        min,
        max,
    }
}

/// Each proxy's latency percentile minus direct's median at the same rate and percentile.
fn added_latency(aggs: &[Aggregate]) -> Vec<Aggregate> {
    let mut out = Vec::new();
    for scenario in ["latency_1k", "latency_5k"] {
        for metric in ["p50_ms", "p90_ms", "p99_ms", "p999_ms"] {
            let Some(direct) = find(aggs, scenario, metric, Kind::Direct) else {
                continue;
            };
            for a in aggs.iter().filter(|a| {
                a.scenario == scenario && a.metric == metric && a.target != Kind::Direct
            }) {
                let values = a.values.iter().map(|v| v - direct.median).collect();
                out.push(make(
                    scenario,
                    &format!("added_{metric}"),
                    "ms",
                    a.target,
                    values,
                ));
            }
        }
    }
    out
}

/// The aggregate of `target` for `scenario`/`metric`.
pub fn find<'a>(
    aggs: &'a [Aggregate],
    scenario: &str,
    metric: &str,
    target: Kind,
) -> Option<&'a Aggregate> {
    aggs.iter()
        .find(|a| a.scenario == scenario && a.metric == metric && a.target == target)
}

/// The headline rows present in `aggs`.
pub fn headline(aggs: &[Aggregate]) -> Vec<Headline> {
    let mut rows = Vec::new();
    for &(label, scenario, metric, higher_is_better) in headlines::HEADLINES {
        let medians: BTreeMap<Kind, f64> = Kind::ALL
            .into_iter()
            .filter_map(|k| find(aggs, scenario, metric, k).map(|a| (k, a.median)))
            .collect();
        let Some(&ferry) = medians.get(&Kind::Ferry) else {
            continue;
        };
        let unit = find(aggs, scenario, metric, Kind::Ferry).map_or("", |a| a.unit);
        let ferry_vs_direct = medians.get(&Kind::Direct).map(|d| ferry / d);
        let best = medians
            .iter()
            .filter(|(k, v)| k.is_peer() && v.is_finite())
            .max_by(|a, b| {
                let ord = a.1.total_cmp(b.1);
                if higher_is_better { ord } else { ord.reverse() }
            })
            // A ratio of latencies at or below the direct floor is noise, not a comparison.
            .filter(|(_, v)| **v > 0.0 && ferry > 0.0)
            .map(|(k, v)| (*k, ferry / v));
        rows.push(Headline {
            label,
            unit,
            higher_is_better,
            medians,
            ferry_vs_direct,
            ferry_vs_best_peer: best,
        });
    }
    rows
}
