//! The `translate` scenario's verdicts: ferry's CPU per translated request against Envoy's
//! grpc_json_transcoder on the same run, beside the targets from the project's issue
//! (≤ 0.5× at 64 elements, ≤ 0.1× at 65,536 and 1,000,000).

use std::fmt::Write;

use serde::Serialize;

use super::{Aggregate, find, markdown::num};
use crate::scenarios::TRANSLATE_SIZES;
use crate::targets::Kind;

/// One tensor size's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct TranslateVerdict {
    /// FP32 elements in the request tensor.
    pub elements: usize,
    /// ferry's median CPU-ms per request.
    pub ferry_cpu_ms: f64,
    /// Envoy's median CPU-ms per request.
    pub envoy_cpu_ms: f64,
    /// ferry ÷ Envoy.
    pub ratio: f64,
    /// The largest acceptable ratio.
    pub target: f64,
    /// Whether the ratio is within the target.
    pub met: bool,
}

/// The ratio ferry's CPU per request must stay within at `elements`.
pub fn target_ratio(elements: usize) -> f64 {
    if elements <= 64 { 0.5 } else { 0.1 }
}

/// A verdict per size where both ferry and Envoy were measured.
pub fn verdicts(aggs: &[Aggregate]) -> Vec<TranslateVerdict> {
    TRANSLATE_SIZES
        .into_iter()
        .filter_map(|elements| {
            let scenario = format!("translate_{elements}");
            let ferry = find(aggs, &scenario, "cpu_ms_per_req", Kind::Ferry)?.median;
            let envoy = find(aggs, &scenario, "cpu_ms_per_req", Kind::Envoy)?.median;
            let ratio = ferry / envoy;
            let target = target_ratio(elements);
            Some(TranslateVerdict {
                elements,
                ferry_cpu_ms: ferry,
                envoy_cpu_ms: envoy,
                ratio,
                target,
                met: ratio.is_finite() && ratio <= target,
            })
        })
        .collect()
}

/// The markdown table of `verdicts` (nothing when there are none).
pub fn render(md: &mut String, verdicts: &[TranslateVerdict]) {
    if verdicts.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## REST → gRPC translation: ferry vs Envoy grpc_json_transcoder\n\n\
         Proxy CPU per translated request (medians). Target: ferry ≤ 0.5× Envoy at 64 \
         elements, ≤ 0.1× at 65,536 and 1,000,000.\n"
    );
    let _ = writeln!(
        md,
        "| FP32 elements | ferry CPU-ms/req | Envoy CPU-ms/req | ferry ÷ Envoy | target | |\n\
         |---|---|---|---|---|---|"
    );
    for v in verdicts {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.3}× | ≤ {}× | {} |",
            v.elements,
            num(v.ferry_cpu_ms),
            num(v.envoy_cpu_ms),
            v.ratio,
            v.target,
            if v.met { "met" } else { "**missed**" }
        );
    }
    md.push('\n');
}
