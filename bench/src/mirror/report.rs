//! results.md and results.json of the mirror bench: per variant the median CPU per primary
//! request and its ratio to `none`, the mirror's own CPU apart, and the primary's p99 ratio,
//! each paired within its repetition.

use serde::Serialize;

use super::{Options, Variant, VariantRun};
use crate::error::Result;
use crate::machine::Machine;

/// The figure for the primary's p99 with mirroring: within 10 % of none.
pub const P99_RATIO: f64 = 1.10;

#[derive(Debug, Serialize)]
struct Summary {
    variant: Variant,
    cpu_us_per_req_median: f64,
    cpu_us_per_req_min: f64,
    cpu_us_per_req_max: f64,
    /// Median over repetitions of (variant ÷ none in the same repetition).
    ratio_to_none_median: f64,
    ratio_to_none_min: f64,
    ratio_to_none_max: f64,
    /// Median over repetitions of (variant − none) ÷ fraction: CPU per mirrored request, µs.
    cpu_us_per_mirror_median: Option<f64>,
    p99_ms_median: f64,
    /// Median over repetitions of (p99 ÷ none's p99 in the same repetition).
    p99_ratio_to_none_median: f64,
    mirrored_share: f64,
    failed: u64,
}

#[derive(Debug, Serialize)]
struct Results<'a> {
    machine: Machine,
    rate: u32,
    secs: f64,
    connections: usize,
    reps: usize,
    summary: Vec<Summary>,
    runs: &'a [VariantRun],
}

/// Writes both files into `opts.out`.
pub fn write(opts: &Options, runs: &[VariantRun]) -> Result<()> {
    let machine = Machine::describe(vec![(
        "ferry".to_owned(),
        crate::peers::version_line(&opts.ferry, &["--version"]),
    )]);
    let summary: Vec<Summary> = Variant::ALL
        .into_iter()
        .filter_map(|v| summarise(runs, v))
        .collect();
    let md = markdown(opts, &machine, &summary);
    let json = Results {
        machine,
        rate: opts.rate,
        secs: opts.secs,
        connections: opts.connections,
        reps: opts.reps,
        summary,
        runs,
    };
    crate::report::write_files(&opts.out, &json, &md)
}

fn summarise(runs: &[VariantRun], variant: Variant) -> Option<Summary> {
    let mine: Vec<&VariantRun> = runs.iter().filter(|r| r.variant == variant).collect();
    let none_of = |r: &VariantRun| {
        runs.iter()
            .find(|o| o.variant == Variant::None && o.rep == r.rep)
    };
    let paired = |f: &dyn Fn(&VariantRun, &VariantRun) -> f64| -> Vec<f64> {
        mine.iter()
            .filter_map(|r| none_of(r).map(|n| f(r, n)))
            .collect()
    };
    let cpu: Vec<f64> = mine.iter().map(|r| r.cpu_us_per_req).collect();
    let ratios = paired(&|r, n| r.cpu_us_per_req / n.cpu_us_per_req);
    let per_mirror = paired(&|r, n| (r.cpu_us_per_req - n.cpu_us_per_req) / variant.fraction());
    let p99_ratios = paired(&|r, n| r.p99_ms / n.p99_ms);
    let p99: Vec<f64> = mine.iter().map(|r| r.p99_ms).collect();
    let (cpu_med, cpu_min, cpu_max) = spread(&cpu)?;
    let (r_med, r_min, r_max) = spread(&ratios)?;
    let sent: u64 = mine.iter().map(|r| r.sent).sum();
    Some(Summary {
        variant,
        cpu_us_per_req_median: cpu_med,
        cpu_us_per_req_min: cpu_min,
        cpu_us_per_req_max: cpu_max,
        ratio_to_none_median: r_med,
        ratio_to_none_min: r_min,
        ratio_to_none_max: r_max,
        cpu_us_per_mirror_median: (variant.fraction() > 0.0)
            .then(|| spread(&per_mirror).map(|s| s.0))
            .flatten(),
        p99_ms_median: spread(&p99).map_or(0.0, |s| s.0),
        p99_ratio_to_none_median: spread(&p99_ratios).map_or(0.0, |s| s.0),
        mirrored_share: mine.iter().map(|r| r.mirrored).sum::<u64>() as f64 / sent.max(1) as f64,
        failed: mine.iter().map(|r| r.failed).sum(),
    })
}

/// (median, min, max); `None` when empty.
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let median = match v.len() {
        0 => return None,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    };
    Some((median, *v.first()?, *v.last()?))
}

fn markdown(opts: &Options, machine: &Machine, summary: &[Summary]) -> String {
    let mut md = format!(
        "# ferry-bench mirror\n\n{} cores, {}, kernel {}; {}\n\n\
         ferry (one worker, core 1) in front of a primary replica answering `GET /`, mirroring \
         to a candidate replica; open loop, {} req/s over {} HTTP/1.1 keep-alive connections, \
         {} s measured per run after 0.5 s of warm-up, {} repetitions (variants interleaved). \
         CPU = ferry's utime + stime ÷ answered primary requests; per mirror = (variant − none \
         in the same repetition) ÷ share mirrored. `mirrored` counts answers the candidate gave \
         (warm-up included; the hung and the killed candidate give none, 500s count).\n\n\
         | variant | CPU µs/request, median (min–max) | ÷ none, median (min–max) | CPU µs per mirror | p99 ms | p99 ÷ none | mirrored | failed |\n\
         |---|---|---|---|---|---|---|---|\n",
        machine.cores,
        machine.cpu_model,
        machine.kernel,
        machine
            .versions
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        opts.rate,
        opts.connections,
        opts.secs,
        opts.reps,
    );
    for s in summary {
        md.push_str(&format!(
            "| {} | {:.2} ({:.2}–{:.2}) | {:.3} ({:.3}–{:.3}) | {} | {:.2} | {:.3}{} | {:.3} | {} |\n",
            s.variant.name(),
            s.cpu_us_per_req_median,
            s.cpu_us_per_req_min,
            s.cpu_us_per_req_max,
            s.ratio_to_none_median,
            s.ratio_to_none_min,
            s.ratio_to_none_max,
            s.cpu_us_per_mirror_median
                .map_or_else(|| "–".to_owned(), |c| format!("{c:.2}")),
            s.p99_ms_median,
            s.p99_ratio_to_none_median,
            match s.variant {
                Variant::None => "",
                _ if s.p99_ratio_to_none_median <= P99_RATIO => " (≤ 1.10: met)",
                _ => " (≤ 1.10: **missed**)",
            },
            s.mirrored_share,
            s.failed,
        ));
    }
    md
}
