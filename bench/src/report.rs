//! Results: raw samples, per-target medians with their spread, derived added latency, the
//! headline ratios, the before/after ratios against a baseline ferry, and the JSON and markdown
//! files under `bench/results/<date>/`.

pub mod before_after;
mod files;
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

/// (label, scenario, metric, higher is better) for each headline row.
const HEADLINES: &[(&str, &str, &str, bool)] = &[
    (
        "HTTP/1.1 keep-alive req/s (1 core)",
        "h1_saturation",
        "rps",
        true,
    ),
    ("h2c req/s (1 core)", "h2_saturation", "rps", true),
    (
        "HTTP/1.1 CPU-s per 10k req",
        "h1_saturation",
        "cpu_s_per_10k",
        false,
    ),
    (
        "h2c CPU-s per 10k req",
        "h2_saturation",
        "cpu_s_per_10k",
        false,
    ),
    ("gRPC unary req/s (100 streams)", "grpc_unary", "rps", true),
    ("gRPC 1 MiB each way, MiB/s", "grpc_1mib", "mib_per_s", true),
    (
        "gRPC 1 MiB CPU-s per 10k req",
        "grpc_1mib",
        "cpu_s_per_10k",
        false,
    ),
    (
        "gRPC unary CPU-s per 10k req",
        "grpc_unary",
        "cpu_s_per_10k",
        false,
    ),
    (
        "gRPC unary, 10 callers, CPU-s per 10k req",
        "many_callers_10",
        "cpu_s_per_10k",
        false,
    ),
    (
        "gRPC unary, 100 callers, CPU-s per 10k req",
        "many_callers_100",
        "cpu_s_per_10k",
        false,
    ),
    (
        "gRPC unary, 1,000 callers, CPU-s per 10k req",
        "many_callers_1000",
        "cpu_s_per_10k",
        false,
    ),
    (
        "gRPC unary, 1,000 callers, req/s",
        "many_callers_1000",
        "rps",
        true,
    ),
    (
        "new connection per request, CPU-s per 10k req",
        "churn",
        "cpu_s_per_10k",
        false,
    ),
    ("new connection per request, req/s", "churn", "rps", true),
    (
        "added p50 @1k req/s (ms)",
        "latency_1k",
        "added_p50_ms",
        false,
    ),
    (
        "added p99 @1k req/s (ms)",
        "latency_1k",
        "added_p99_ms",
        false,
    ),
    (
        "added p99.9 @1k req/s (ms)",
        "latency_1k",
        "added_p999_ms",
        false,
    ),
    (
        "added p50 @5k req/s (ms)",
        "latency_5k",
        "added_p50_ms",
        false,
    ),
    (
        "added p99 @5k req/s (ms)",
        "latency_5k",
        "added_p99_ms",
        false,
    ),
    (
        "added p99.9 @5k req/s (ms)",
        "latency_5k",
        "added_p999_ms",
        false,
    ),
    ("1 MiB POST req/s", "upload_1mib", "rps", true),
    (
        "1 MiB POST CPU-s per 10k req",
        "upload_1mib",
        "cpu_s_per_10k",
        false,
    ),
    (
        "SSE time to first event p50 (ms)",
        "sse_first_event",
        "ttfe_p50_ms",
        false,
    ),
    ("RSS idle (MiB)", "memory", "rss_idle_mib", false),
    ("RSS loaded (MiB)", "memory", "rss_loaded_mib", false),
    (
        "cold start to first 200 (ms)",
        "cold_start",
        "ready_ms",
        false,
    ),
    ("10 routes req/s", "routes_10", "rps", true),
    ("10,000 routes req/s", "routes_10000", "rps", true),
    (
        "10,000 routes RSS idle (MiB)",
        "routes_10000",
        "rss_idle_mib",
        false,
    ),
    (
        "10,000 routes cold start (ms)",
        "routes_10000",
        "ready_ms",
        false,
    ),
    (
        "REST→gRPC 64 FP32 CPU-ms per req",
        "translate_64",
        "cpu_ms_per_req",
        false,
    ),
    ("REST→gRPC 64 FP32 req/s", "translate_64", "rps", true),
    (
        "REST→gRPC 64 FP32 peak RSS (MiB)",
        "translate_64",
        "rss_peak_mib",
        false,
    ),
    (
        "REST→gRPC 65,536 FP32 CPU-ms per req",
        "translate_65536",
        "cpu_ms_per_req",
        false,
    ),
    (
        "REST→gRPC 65,536 FP32 req/s",
        "translate_65536",
        "rps",
        true,
    ),
    (
        "REST→gRPC 65,536 FP32 peak RSS (MiB)",
        "translate_65536",
        "rss_peak_mib",
        false,
    ),
    (
        "REST→gRPC 1,000,000 FP32 CPU-ms per req",
        "translate_1000000",
        "cpu_ms_per_req",
        false,
    ),
    (
        "REST→gRPC 1,000,000 FP32 req/s",
        "translate_1000000",
        "rps",
        true,
    ),
    (
        "REST→gRPC 1,000,000 FP32 peak RSS (MiB)",
        "translate_1000000",
        "rss_peak_mib",
        false,
    ),
];

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
    for &(label, scenario, metric, higher_is_better) in HEADLINES {
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
