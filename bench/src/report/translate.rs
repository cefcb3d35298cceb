//! The `translate` scenario's verdicts: ferry's CPU per translated request against Envoy's
//! grpc_json_transcoder on the same run, beside the targets from the project's issue
//! (≤ 0.5× at 64 elements, ≤ 0.1× at 65,536 and 1,000,000).

use std::fmt::Write;

use serde::Serialize;

use super::{Aggregate, find, markdown::num};
use crate::scenarios::{BINARY_SCENARIO, TRANSLATE_SIZES};
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

/// Binary tensors must keep at least this share of plain 1 MiB POST throughput.
pub const BINARY_TARGET: f64 = 0.9;

/// ferry translating a 1 MiB FP32 tensor sent as a binary section, beside ferry proxying a
/// plain 1 MiB POST, in the same run.
///
/// The verdict is on ferry's capacity: it runs on one core, so its throughput ceiling is one
/// request per CPU-time-per-request. The req/s ratio is kept beside it, but it is set by core 0
/// (load generator and upstream) whenever ferry's core is not saturated, and the upstream does
/// more per translated request (HTTP/2, a gRPC decode) than per plain POST (a discard).
#[derive(Debug, Clone, Serialize)]
pub struct BinaryVerdict {
    /// Median req/s of the binary-tensor translation.
    pub translate_rps: f64,
    /// Median req/s of the plain 1 MiB POST.
    pub upload_rps: f64,
    /// translate ÷ upload req/s.
    pub ratio: f64,
    /// ferry's median CPU-ms per translated request.
    pub translate_cpu_ms: f64,
    /// ferry's median CPU-ms per plain POST.
    pub upload_cpu_ms: f64,
    /// Share of ferry's core in use while translating (req/s × CPU per request).
    pub translate_busy: f64,
    /// Share of ferry's core in use while proxying plain POSTs.
    pub upload_busy: f64,
    /// ferry's one-core capacity translating ÷ proxying plain POSTs: the inverse ratio of CPU
    /// per request.
    pub capacity_ratio: f64,
    /// Whether the capacity ratio reaches [`BINARY_TARGET`].
    pub met: bool,
}

/// The verdict when both scenarios ran for ferry.
pub fn binary_verdict(aggs: &[Aggregate]) -> Option<BinaryVerdict> {
    let median =
        |scenario: &str, metric: &str| find(aggs, scenario, metric, Kind::Ferry).map(|a| a.median);
    let translate_rps = median(BINARY_SCENARIO, "rps")?;
    let upload_rps = median("upload_1mib", "rps")?;
    let translate_cpu_ms = median(BINARY_SCENARIO, "cpu_ms_per_req").unwrap_or(f64::NAN);
    // CPU-s per 10,000 requests → CPU-ms per request.
    let upload_cpu_ms = median("upload_1mib", "cpu_s_per_10k").map_or(f64::NAN, |s| s / 10.0);
    let capacity_ratio = upload_cpu_ms / translate_cpu_ms;
    Some(BinaryVerdict {
        translate_rps,
        upload_rps,
        ratio: translate_rps / upload_rps,
        translate_cpu_ms,
        upload_cpu_ms,
        translate_busy: translate_rps * translate_cpu_ms / 1000.0,
        upload_busy: upload_rps * upload_cpu_ms / 1000.0,
        capacity_ratio,
        met: capacity_ratio.is_finite() && capacity_ratio >= BINARY_TARGET,
    })
}

/// The markdown lines of the binary-tensor verdict.
pub fn render_binary(md: &mut String, v: &BinaryVerdict) {
    let _ = writeln!(
        md,
        "## Binary tensors: 1 MiB FP32 as a binary section, REST → gRPC, vs a plain 1 MiB POST\n\n\
         Both through ferry, same run, 4 connections each. Target: ≥ {:.0} % of the plain POST's \
         throughput. ferry runs on one core, so its capacity is 1 ÷ CPU per request; measured \
         req/s follow it only while ferry's core is saturated (busy ≈ 100 %), otherwise core 0 \
         (load generator and upstream) sets them.\n\n\
         | | req/s | ferry CPU-ms/req | ferry core busy |\n|---|---|---|---|\n\
         | plain 1 MiB POST | {} | {} | {:.0} % |\n\
         | binary tensor, translated | {} | {} | {:.0} % |\n\
         | translated ÷ plain, req/s | {:.2}× | | |\n\
         | translated ÷ plain, capacity | {:.2}× | {} | |\n",
        BINARY_TARGET * 100.0,
        num(v.upload_rps),
        num(v.upload_cpu_ms),
        v.upload_busy * 100.0,
        num(v.translate_rps),
        num(v.translate_cpu_ms),
        v.translate_busy * 100.0,
        v.ratio,
        v.capacity_ratio,
        if v.met { "met" } else { "**missed**" }
    );
}
