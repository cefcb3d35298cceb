//! results.md and results.json of the faults bench: the machine line, then per fault a table
//! with one row per protocol and phase, the target and whether it was met, and what else the
//! run saw (failure reasons, ferry's counters).

use std::fmt::Write as _;

use super::{Fault, FaultRun, Options};
use crate::error::Result;
use crate::machine::Machine;

/// One line for the console while the runs go.
pub(super) fn one_line(run: &FaultRun) -> String {
    let mut line = String::new();
    for p in &run.phases {
        let _ = write!(
            line,
            "{}: {}/{} failed, p99 {:.2} ms; ",
            p.name, p.failed, p.sent, p.p99_ms
        );
    }
    if let Some(met) = run.met {
        line.push_str(if met { "target met" } else { "TARGET MISSED" });
    }
    line
}

/// Writes results.md and results.json into `opts.out`.
pub(super) fn write(opts: &Options, runs: &[FaultRun], ferry_version: &str) -> Result<()> {
    let machine = Machine::describe(vec![
        (
            "ferry-bench".to_owned(),
            env!("CARGO_PKG_VERSION").to_owned(),
        ),
        ("ferry".to_owned(), ferry_version.to_owned()),
    ]);
    let json = serde_json::json!({
        "machine": machine,
        "rate": opts.rate,
        "reps": opts.reps,
        "retry_on": opts.retry_on,
        "phases_s": {
            "steady": opts.steady.as_secs_f64(),
            "fault": opts.fault.as_secs_f64(),
            "after": opts.after.as_secs_f64(),
        },
        "runs": runs,
    });
    crate::report::write_files(&opts.out, &json, &markdown(opts, runs, &machine))
}

fn markdown(opts: &Options, runs: &[FaultRun], m: &Machine) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# ferry-bench faults ({})\n", m.date);
    let _ = writeln!(
        md,
        "Machine: {} cores ({}), kernel {}, {} MiB RAM. ferry pinned to core 1 with one worker; \
         load generator and endpoints on core 0.\n",
        m.cores, m.cpu_model, m.kernel, m.mem_total_mib
    );
    md.push_str("Versions:\n\n");
    for (name, version) in &m.versions {
        let _ = writeln!(md, "- {name}: `{version}`");
    }
    let _ = writeln!(
        md,
        "\nLoad: {} req/s open loop, one protocol per run (h1: `GET /`, 64 keep-alive \
         connections; h2: `GET /`, 4 connections × 32 streams; grpc: unary echo, 4 × 32). \
         Phases: steady {:.1} s (first 0.5 s not counted), fault {:.1} s, after {:.1} s; a \
         request counts in the phase in which it ended (answered or failed), so one in flight \
         when the fault starts and failing then is the fault's. Failed = status ≠ 200, gRPC status ≠ 0 or \
         a transport error. Latency from the due time (coordinated-omission corrected), of \
         the successful requests. Each run starts its own ferry and endpoints. ferry config: \
         `configs/ferry-faults.yaml` (2 endpoints, p2c-ewma, retry 2 attempts on {} with \
         per-try 250 ms, route timeout 1 s, outlier ejection at its defaults).\n",
        opts.rate,
        opts.steady.as_secs_f64(),
        opts.fault.as_secs_f64(),
        opts.after.as_secs_f64(),
        if opts.retry_on.is_empty() {
            "connect-failure/unavailable (the defaults)".to_owned()
        } else {
            opts.retry_on.join("/")
        }
    );
    summary(&mut md, runs);
    for fault in Fault::ALL {
        let of_fault: Vec<&FaultRun> = runs.iter().filter(|r| r.fault == fault).collect();
        if of_fault.is_empty() {
            continue;
        }
        let _ = writeln!(md, "## {}\n\n{}\n", fault.name(), describe(fault));
        md.push_str(
            "| proto | rep | phase | sent | failed | failed % | p50 ms | p99 ms | max ms |\n",
        );
        md.push_str("|---|---:|---|---:|---:|---:|---:|---:|---:|\n");
        for run in &of_fault {
            for p in &run.phases {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {:.3} | {:.2} | {:.2} | {:.1} |",
                    run.proto.name(),
                    run.rep,
                    p.name,
                    p.sent,
                    p.failed,
                    p.failed_pct,
                    p.p50_ms,
                    p.p99_ms,
                    p.max_ms
                );
            }
        }
        md.push('\n');
        for run in &of_fault {
            let _ = writeln!(
                md,
                "- **{}, rep {}**: {}",
                run.proto.name(),
                run.rep,
                notes(run)
            );
        }
        md.push('\n');
    }
    md
}

fn summary(md: &mut String, runs: &[FaultRun]) {
    md.push_str("## Summary\n\n");
    md.push_str(
        "| fault | proto | rep | failed in the fault phase | p99 steady → fault (ms) | target | met |\n",
    );
    md.push_str("|---|---|---:|---:|---|---|---|\n");
    for run in runs {
        let steady = run.phases.first();
        let fault = run.phases.get(1);
        let target = match (run.fault, run.target_pct) {
            (Fault::Drain, _) => "0 in flight at SIGTERM".to_owned(),
            (_, Some(t)) => format!("≤ {t} %"),
            (_, None) => "–".to_owned(),
        };
        let failed = match run.failed_before_sigterm {
            Some(n) => format!("{n} of those due before SIGTERM"),
            None => fault.map_or(String::new(), |f| {
                format!("{}/{} ({:.3} %)", f.failed, f.sent, f.failed_pct)
            }),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.2} → {:.2} | {} | {} |",
            run.fault.name(),
            run.proto.name(),
            run.rep,
            failed,
            steady.map_or(0.0, |p| p.p99_ms),
            fault.map_or(0.0, |p| p.p99_ms),
            target,
            match run.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "–",
            }
        );
    }
    md.push('\n');
}

fn notes(run: &FaultRun) -> String {
    let mut parts = Vec::new();
    if let Some(n) = run.failed_before_sigterm {
        parts.push(format!("{n} failed among the requests due before SIGTERM"));
    }
    for p in &run.phases {
        if p.reasons.is_empty() {
            continue;
        }
        let top: Vec<String> = p
            .reasons
            .iter()
            .take(3)
            .map(|(r, n)| format!("{n}× `{r}`"))
            .collect();
        parts.push(format!("{} failures: {}", p.name, top.join(", ")));
    }
    parts.extend(run.notes.iter().cloned());
    parts.join("; ")
}

fn describe(fault: Fault) -> &'static str {
    match fault {
        Fault::Killed => {
            "Endpoint 1 (the second of two, numbered from 0 below) \
             `SIGKILL`ed when the fault starts (port closed, connections \
             dropped), restarted on the same port when it ends. Once ejected it stays out for \
             the default 10 s ejection, longer than the after phase, so the restarted endpoint \
             answers nothing here. Target: ≤ 0.1 % failed."
        }
        Fault::Hangs => {
            "Endpoint 1 (the second of two, numbered from 0 below) \
             reads requests and never answers during the fault (connections \
             stay open); ferry's per-try timeout (250 ms) and retry must move the request."
        }
        Fault::Resets => {
            "Endpoint 1 (the second of two, numbered from 0 below) \
             refuses every request with a reset during the fault: HTTP/1.1 \
             (h1 and h2 `GET`s go upstream over HTTP/1.1) connection reset (RST) before any \
             answer; gRPC (upstream HTTP/2) `RST_STREAM`."
        }
        Fault::Dns => {
            "The cluster is `dns: {names: [models.faults.test:P], refresh: 250ms}`. ferry runs \
             in its own mount namespace with a private /etc/hosts; the name answers \
             127.0.0.2 and .3, and during the fault flips every second between {.2, .4} and \
             {.2, .3} (three live endpoints on one port)."
        }
        Fault::Reload => {
            "The config file is replaced (write + rename) every 100 ms during the fault: the \
             cluster's `idle_timeout` alternates 90s ⇄ 91s (the cluster and its pools are \
             rebuilt) and a route header carries a sequence number (no two consecutive files \
             are the same config; with two alternating files ferry's 150 ms settle window read \
             back the config it already had and skipped most reloads: 2 applied for 20 writes). \
             ferry applies at most one reload per settle window; `config_reloads_total` below \
             is how many it applied. Both endpoints answer 20 ms late in this run, so about \
             40 requests are in flight at every reload. Target: 0 failed."
        }
        Fault::Identity => {
            "The listener is `tls.mode: strict`; the client speaks mutual TLS (full handshakes, \
             a new connection every 50 requests). During the fault the listener's certificate \
             and key are swapped every 500 ms between two sets (two CAs, both trusted), laid \
             out as a Kubernetes Secret volume (`..data` symlink swapped atomically)."
        }
        Fault::Drain => {
            "SIGTERM to ferry when the fault starts (no successor: ferry does not share its \
             port). Both endpoints answer 20 ms late in this run, so about 40 requests are in \
             flight when SIGTERM lands. Requests due before SIGTERM must all succeed (target 0 \
             failed); requests due after it may only be refused."
        }
    }
}
