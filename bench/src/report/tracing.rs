//! The `tracing` scenario's verdicts against the targets of issue 17: ferry's CPU per request
//! with tracing at 1 % sampling ≤ 1.03× and at 100 % ≤ 1.25× the same build without a
//! `tracing` block, and ferry's overhead at 100 % ≤ 0.5× Envoy's with its OpenTelemetry tracer
//! (overhead = ratio − 1, each against its own untraced run). Ratios are taken per repetition
//! (both runs of a ratio share the repetition's noise) and the median of them is judged.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::{Sample, markdown::num, median};
use crate::targets::Kind;

/// ferry at 1 % sampling ÷ no tracing block, at most.
pub const TARGET_1PCT: f64 = 1.03;
/// ferry at 100 % sampling ÷ no tracing block, at most.
pub const TARGET_100PCT: f64 = 1.25;
/// ferry's overhead at 100 % ÷ Envoy's, at most.
pub const TARGET_VS_ENVOY: f64 = 0.5;

/// One row: a median over repetitions, each repetition's value, and the target if any.
#[derive(Debug, Clone, Serialize)]
pub struct TracingVerdict {
    /// What is compared.
    pub what: String,
    /// Median over repetitions (for the Envoy comparison: of the two medians' overheads).
    pub value: f64,
    /// Each repetition's value, in repetition order.
    pub per_rep: Vec<f64>,
    /// The target (an upper bound), if the issue sets one.
    pub target: Option<f64>,
    /// Whether the target was met (`None` without a target).
    pub met: Option<bool>,
}

fn row(what: &str, values: &BTreeMap<usize, f64>, target: Option<f64>) -> TracingVerdict {
    let per_rep: Vec<f64> = values.values().copied().collect();
    let value = median(&per_rep);
    TracingVerdict {
        what: what.to_owned(),
        value,
        per_rep,
        target,
        met: target.map(|t| value.is_finite() && value <= t),
    }
}

/// Per repetition, `target`'s `metric` in `scenario`.
fn per_rep(samples: &[Sample], scenario: &str, metric: &str, target: Kind) -> BTreeMap<usize, f64> {
    samples
        .iter()
        .filter(|s| s.scenario == scenario && s.metric == metric && s.target == target)
        .map(|s| (s.rep, s.value))
        .collect()
}

/// A verdict for each comparison whose measurements are there.
pub fn verdicts(samples: &[Sample]) -> Vec<TracingVerdict> {
    let ratio = |scenario: &str, kind: Kind| per_rep(samples, scenario, "cpu_ratio_vs_none", kind);
    let mut out = Vec::new();
    let rows = [
        (
            "ferry, tracing block with ratio 0: CPU/req ÷ no block",
            "tracing_off",
            Kind::Ferry,
            None,
        ),
        (
            "ferry, 1 % sampled: CPU/req ÷ no block",
            "tracing_1pct",
            Kind::Ferry,
            Some(TARGET_1PCT),
        ),
        (
            "ferry, 100 % sampled: CPU/req ÷ no block",
            "tracing_100pct",
            Kind::Ferry,
            Some(TARGET_100PCT),
        ),
        (
            "Envoy, OpenTelemetry tracer at 100 %: CPU/req ÷ no tracer",
            "tracing_100pct",
            Kind::Envoy,
            None,
        ),
    ];
    for (what, scenario, kind, target) in rows {
        let values = ratio(scenario, kind);
        if !values.is_empty() {
            out.push(row(what, &values, target));
        }
    }
    let ferry = ratio("tracing_100pct", Kind::Ferry);
    let envoy = ratio("tracing_100pct", Kind::Envoy);
    if !ferry.is_empty() && !envoy.is_empty() {
        let paired: BTreeMap<usize, f64> = ferry
            .iter()
            .filter_map(|(rep, f)| envoy.get(rep).map(|e| (*rep, (f - 1.0) / (e - 1.0))))
            .collect();
        let f = median(&ferry.values().copied().collect::<Vec<_>>());
        let e = median(&envoy.values().copied().collect::<Vec<_>>());
        // An Envoy overhead at or below zero is noise: no ratio to judge.
        let value = if e > 1.0 {
            (f - 1.0) / (e - 1.0)
        } else {
            f64::NAN
        };
        out.push(TracingVerdict {
            what: "ferry's overhead at 100 % ÷ Envoy's, (ratio − 1) each".into(),
            value,
            per_rep: paired.into_values().collect(),
            target: Some(TARGET_VS_ENVOY),
            met: Some(value.is_finite() && value <= TARGET_VS_ENVOY),
        });
    }
    if let Some(row) = added_vs_envoy(samples) {
        out.push(row);
    }
    for (kind, label) in [(Kind::Ferry, "ferry"), (Kind::Envoy, "Envoy")] {
        let spans = per_rep(samples, "tracing_100pct", "spans_per_request", kind);
        if !spans.is_empty() {
            let what = format!("{label}, 100 %: spans received by the sink per request");
            out.push(row(&what, &spans, None));
        }
    }
    out
}

/// The same comparison in absolute terms, without a target: the CPU per request tracing adds
/// to ferry ÷ what it adds to Envoy (traced − untraced CPU-s per 10k, per repetition). A proxy
/// whose untraced path is cheaper shows a larger ratio for the same added work.
fn added_vs_envoy(samples: &[Sample]) -> Option<TracingVerdict> {
    let added = |kind: Kind| -> BTreeMap<usize, f64> {
        let none = per_rep(samples, "tracing_none", "cpu_s_per_10k", kind);
        per_rep(samples, "tracing_100pct", "cpu_s_per_10k", kind)
            .into_iter()
            .filter_map(|(rep, traced)| none.get(&rep).map(|n| (rep, traced - n)))
            .collect()
    };
    let (ferry, envoy) = (added(Kind::Ferry), added(Kind::Envoy));
    if ferry.is_empty() || envoy.is_empty() {
        return None;
    }
    let paired: Vec<f64> = ferry
        .iter()
        .filter_map(|(rep, f)| envoy.get(rep).map(|e| f / e))
        .collect();
    let f = median(&ferry.into_values().collect::<Vec<_>>());
    let e = median(&envoy.into_values().collect::<Vec<_>>());
    Some(TracingVerdict {
        what: "ferry's added CPU per request at 100 % ÷ Envoy's (absolute, traced − untraced)"
            .into(),
        value: if e > 0.0 { f / e } else { f64::NAN },
        per_rep: paired,
        target: None,
        met: None,
    })
}

/// The markdown table of `verdicts` (nothing when there are none).
pub fn render(md: &mut String, verdicts: &[TracingVerdict]) {
    if verdicts.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## Tracing overhead (issue 17 targets)\n\n\
         HTTP/1.1 keep-alive saturation (16 connections) through one route, requests without \
         trace context; CPU per request of each traced run ÷ the same proxy's untraced run in \
         the same repetition; spans exported over OTLP/gRPC to ferry-bench's counting sink.\n"
    );
    let _ = writeln!(
        md,
        "| comparison | median | per repetition | target | |\n|---|---|---|---|---|"
    );
    for v in verdicts {
        let reps: Vec<String> = v.per_rep.iter().map(|r| format!("{r:.3}")).collect();
        let (target, verdict) = match (v.target, v.met) {
            (Some(t), Some(true)) => (format!("≤ {t}"), "met"),
            (Some(t), _) => (format!("≤ {t}"), "**missed**"),
            _ => ("–".to_owned(), ""),
        };
        let value = if v.value.is_finite() {
            format!("{:.3}", v.value)
        } else {
            num(v.value)
        };
        let _ = writeln!(
            md,
            "| {} | {value} | {} | {target} | {verdict} |",
            v.what,
            reps.join(", ")
        );
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(scenario: &str, metric: &str, target: Kind, rep: usize, value: f64) -> Sample {
        Sample {
            scenario: scenario.into(),
            metric: metric.into(),
            unit: "×",
            target,
            rep,
            value,
        }
    }

    #[test]
    fn ratios_per_repetition_and_the_overhead_against_envoy() {
        let mut samples = Vec::new();
        for (rep, (one, all, envoy)) in [(1.01, 1.20, 1.50), (1.02, 1.10, 1.30), (1.05, 1.30, 1.60)]
            .into_iter()
            .enumerate()
        {
            let r = "cpu_ratio_vs_none";
            samples.push(sample("tracing_1pct", r, Kind::Ferry, rep, one));
            samples.push(sample("tracing_100pct", r, Kind::Ferry, rep, all));
            samples.push(sample("tracing_100pct", r, Kind::Envoy, rep, envoy));
        }
        samples.push(sample(
            "tracing_100pct",
            "spans_per_request",
            Kind::Ferry,
            0,
            2.0,
        ));
        for (scenario, kind, cpu) in [
            ("tracing_none", Kind::Ferry, 0.10),
            ("tracing_100pct", Kind::Ferry, 0.13),
            ("tracing_none", Kind::Envoy, 0.30),
            ("tracing_100pct", Kind::Envoy, 0.40),
        ] {
            samples.push(sample(scenario, "cpu_s_per_10k", kind, 0, cpu));
        }
        let v = verdicts(&samples);
        assert_eq!(v.len(), 6, "{v:?}");
        assert!((v[0].value - 1.02).abs() < 1e-9 && v[0].met == Some(true));
        assert!((v[1].value - 1.20).abs() < 1e-9 && v[1].met == Some(true));
        assert!(v[2].met.is_none() && (v[2].value - 1.50).abs() < 1e-9);
        // (1.20 − 1) ÷ (1.50 − 1) from the medians; per repetition 0.4, 1/3, 0.5.
        assert!((v[3].value - 0.4).abs() < 1e-9 && v[3].met == Some(true));
        assert!((v[3].per_rep[1] - 1.0 / 3.0).abs() < 1e-9);
        // Added CPU: 0.03 ÷ 0.10.
        assert!((v[4].value - 0.3).abs() < 1e-9 && v[4].target.is_none());
        assert_eq!(v[5].per_rep, vec![2.0]);
        let mut md = String::new();
        render(&mut md, &v);
        assert!(md.contains("| ≤ 1.03 | met |"), "{md}");
    }
}
