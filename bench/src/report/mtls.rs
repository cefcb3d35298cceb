//! The mutual-TLS scenarios' verdicts against the targets of issue 15: the TLS hop's cost for
//! ferry (CPU per request of the pair with mutual TLS ÷ the same pair in plaintext, ≤ 1.15×),
//! ferry's pair against Envoy's (≤ 0.7× Envoy's CPU per request), full handshakes per proxy
//! core (≥ 1.0× Envoy's) and the inbound's idle RSS with an identity (≤ 8 MiB).

use std::fmt::Write;

use serde::Serialize;

use super::{Aggregate, find, markdown::num};
use crate::targets::Kind;

/// ferry's idle RSS with an identity and a strict listener must stay within this (MiB).
pub const IDLE_RSS_TARGET_MIB: f64 = 8.0;

/// One comparison: `value` (a ratio, or MiB for the memory row) against `target`.
#[derive(Debug, Clone, Serialize)]
pub struct MtlsVerdict {
    /// What is compared.
    pub what: String,
    /// ferry's median.
    pub ferry: f64,
    /// What ferry is compared with (its plaintext pair, or Envoy), median; NaN for an
    /// absolute target.
    pub other: f64,
    /// ferry ÷ other, or ferry's value for an absolute target.
    pub value: f64,
    /// The target.
    pub target: f64,
    /// Whether higher is better (then the target is a floor).
    pub higher_is_better: bool,
    /// Whether the target was met.
    pub met: bool,
}

fn verdict(
    what: String,
    ferry: f64,
    other: Option<f64>,
    target: f64,
    higher_is_better: bool,
) -> MtlsVerdict {
    let value = other.map_or(ferry, |o| ferry / o);
    let met = value.is_finite()
        && if higher_is_better {
            value >= target
        } else {
            value <= target
        };
    MtlsVerdict {
        what,
        ferry,
        other: other.unwrap_or(f64::NAN),
        value,
        target,
        higher_is_better,
        met,
    }
}

/// A verdict for each comparison whose measurements are there.
pub fn verdicts(aggs: &[Aggregate]) -> Vec<MtlsVerdict> {
    let median = |scenario: &str, metric: &str, kind: Kind| {
        find(aggs, scenario, metric, kind).map(|a| a.median)
    };
    let mut out = Vec::new();
    for (scenario, label) in [("mtls_h1", "HTTP/1.1"), ("mtls_h2", "HTTP/2")] {
        let plain = format!("{scenario}_plain");
        if let (Some(f), Some(p)) = (
            median(scenario, "cpu_s_per_10k", Kind::Ferry),
            median(&plain, "cpu_s_per_10k", Kind::Ferry),
        ) {
            out.push(verdict(
                format!("{label}: ferry pair CPU/req, mTLS ÷ plaintext"),
                f,
                Some(p),
                1.15,
                false,
            ));
        }
        if let (Some(f), Some(e)) = (
            median(scenario, "cpu_s_per_10k", Kind::Ferry),
            median(scenario, "cpu_s_per_10k", Kind::Envoy),
        ) {
            out.push(verdict(
                format!("{label}: mTLS pair CPU/req, ferry ÷ Envoy"),
                f,
                Some(e),
                0.7,
                false,
            ));
        }
    }
    if let (Some(f), Some(e)) = (
        median("mtls_handshakes", "handshakes_per_core_s", Kind::Ferry),
        median("mtls_handshakes", "handshakes_per_core_s", Kind::Envoy),
    ) {
        out.push(verdict(
            "full handshakes per proxy core-second, ferry ÷ Envoy".into(),
            f,
            Some(e),
            1.0,
            true,
        ));
    }
    if let Some(f) = median("mtls_memory", "rss_idle_mib", Kind::Ferry) {
        out.push(verdict(
            "ferry inbound idle RSS with identity, strict listener (MiB)".into(),
            f,
            None,
            IDLE_RSS_TARGET_MIB,
            false,
        ));
    }
    out
}

/// The markdown table of `verdicts` (nothing when there are none).
pub fn render(md: &mut String, verdicts: &[MtlsVerdict]) {
    if verdicts.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## Mutual TLS (issue 15 targets)\n\n\
         Pairs: load → outbound → inbound → upstream, both proxies on core 1, CPU of both. \
         Handshakes: full ECDSA P-256 mutual handshakes without resumption against the \
         inbound alone; per core-second = 1 ÷ the inbound's CPU per handshake.\n"
    );
    let _ = writeln!(
        md,
        "| comparison | ferry | compared with | ratio / value | target | |\n\
         |---|---|---|---|---|---|"
    );
    for v in verdicts {
        let bound = if v.higher_is_better { "≥" } else { "≤" };
        let (value, target) = if v.other.is_nan() {
            (num(v.value), format!("{bound} {}", v.target))
        } else {
            (format!("{:.3}×", v.value), format!("{bound} {}×", v.target))
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {value} | {target} | {} |",
            v.what,
            num(v.ferry),
            num(v.other),
            if v.met { "met" } else { "**missed**" }
        );
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agg(scenario: &str, metric: &str, target: Kind, v: f64) -> Aggregate {
        Aggregate {
            scenario: scenario.into(),
            metric: metric.into(),
            unit: "x",
            target,
            values: vec![v],
            median: v,
            min: v,
            max: v,
        }
    }

    #[test]
    fn ratios_against_the_plaintext_pair_envoy_and_the_memory_ceiling() {
        let aggs = vec![
            agg("mtls_h1", "cpu_s_per_10k", Kind::Ferry, 1.1),
            agg("mtls_h1_plain", "cpu_s_per_10k", Kind::Ferry, 1.0),
            agg("mtls_h1", "cpu_s_per_10k", Kind::Envoy, 2.0),
            agg(
                "mtls_handshakes",
                "handshakes_per_core_s",
                Kind::Ferry,
                900.0,
            ),
            agg(
                "mtls_handshakes",
                "handshakes_per_core_s",
                Kind::Envoy,
                1000.0,
            ),
            agg("mtls_memory", "rss_idle_mib", Kind::Ferry, 7.5),
        ];
        let v = verdicts(&aggs);
        assert_eq!(v.len(), 4);
        assert!(v[0].met && (v[0].value - 1.1).abs() < 1e-9);
        assert!(v[1].met && (v[1].value - 0.55).abs() < 1e-9);
        assert!(!v[2].met && v[2].higher_is_better);
        assert!(v[3].met && v[3].other.is_nan());
        let mut md = String::new();
        render(&mut md, &v);
        assert!(md.contains("**missed**") && md.contains("≤ 8"), "{md}");
    }
}
