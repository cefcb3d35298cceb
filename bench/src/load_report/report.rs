//! results.md and results.json of the load-report bench: per variant the median CPU per
//! request and its ratio to `off`, paired within each repetition.

use serde::Serialize;

use super::{Options, REPLICA_REPORT, Variant, VariantRun};
use crate::error::Result;
use crate::machine::Machine;

/// The target of issue 20 for reading reports.
pub const TARGET_RATIO: f64 = 1.03;

#[derive(Debug, Serialize)]
struct Summary {
    variant: Variant,
    cpu_us_per_req_median: f64,
    cpu_us_per_req_min: f64,
    cpu_us_per_req_max: f64,
    /// Median over repetitions of (variant ÷ off in the same repetition).
    ratio_to_off_median: f64,
    ratio_to_off_min: f64,
    ratio_to_off_max: f64,
    p99_ms_median: f64,
    failed: u64,
}

#[derive(Debug, Serialize)]
struct Results<'a> {
    machine: Machine,
    rate: u32,
    secs: f64,
    connections: usize,
    reps: usize,
    replica_report: &'static str,
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
        replica_report: REPLICA_REPORT,
        summary,
        runs,
    };
    crate::report::write_files(&opts.out, &json, &md)
}

fn summarise(runs: &[VariantRun], variant: Variant) -> Option<Summary> {
    let mine: Vec<&VariantRun> = runs.iter().filter(|r| r.variant == variant).collect();
    let cpu: Vec<f64> = mine.iter().map(|r| r.cpu_us_per_req).collect();
    let ratios: Vec<f64> = mine
        .iter()
        .filter_map(|r| {
            let off = runs
                .iter()
                .find(|o| o.variant == Variant::Off && o.rep == r.rep)?;
            Some(r.cpu_us_per_req / off.cpu_us_per_req)
        })
        .collect();
    let p99: Vec<f64> = mine.iter().map(|r| r.p99_ms).collect();
    let (cpu_med, cpu_min, cpu_max) = spread(&cpu)?;
    let (r_med, r_min, r_max) = spread(&ratios)?;
    Some(Summary {
        variant,
        cpu_us_per_req_median: cpu_med,
        cpu_us_per_req_min: cpu_min,
        cpu_us_per_req_max: cpu_max,
        ratio_to_off_median: r_med,
        ratio_to_off_min: r_min,
        ratio_to_off_max: r_max,
        p99_ms_median: spread(&p99).map_or(0.0, |s| s.0),
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
        "# ferry-bench load-report\n\n{} cores, {}, kernel {}; {}\n\n\
         ferry (one worker, core 1) in front of two replicas answering `GET /` with \
         `endpoint-load-metrics: {REPLICA_REPORT}`; open loop, {} req/s over {} HTTP/1.1 \
         keep-alive connections, {} s measured per run after 0.5 s of warm-up, {} repetitions \
         (variants interleaved). CPU = ferry's utime + stime ÷ answered requests.\n\n\
         | variant | CPU µs/request, median (min–max) | ÷ off, median (min–max) | p99 ms | failed | target |\n\
         |---|---|---|---|---|---|\n",
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
        let target = match s.variant {
            Variant::Read if s.ratio_to_off_median <= TARGET_RATIO => "≤ 1.03×: met",
            Variant::Read => "≤ 1.03×: **missed**",
            Variant::Off | Variant::Report => "–",
        };
        md.push_str(&format!(
            "| {} | {:.2} ({:.2}–{:.2}) | {:.3} ({:.3}–{:.3}) | {:.2} | {} | {target} |\n",
            s.variant.name(),
            s.cpu_us_per_req_median,
            s.cpu_us_per_req_min,
            s.cpu_us_per_req_max,
            s.ratio_to_off_median,
            s.ratio_to_off_min,
            s.ratio_to_off_max,
            s.p99_ms_median,
            s.failed,
        ));
    }
    md
}
