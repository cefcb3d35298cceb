//! The `faults`, `spread` and `load-report` subcommands: their options and how they call the
//! library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use ferry_bench::driver;
use ferry_bench::machine::today;

/// Options of `ferry-bench faults`.
#[derive(Debug, clap::Args)]
pub struct FaultsArgs {
    /// Comma-separated faults (default: all): endpoint_killed, endpoint_hangs,
    /// endpoint_resets, dns_change, reload_100ms, identity_rotation, sigterm_drain.
    #[arg(long, value_delimiter = ',')]
    faults: Vec<String>,
    /// Comma-separated protocols (default: h1,h2,grpc).
    #[arg(long, value_delimiter = ',')]
    protos: Vec<String>,
    /// Requests per second, open loop.
    #[arg(long, default_value_t = 2000)]
    rate: u32,
    /// Seconds of each phase: steady, fault, after.
    #[arg(long, value_delimiter = ',', default_value = "3,5,3")]
    phases: Vec<f64>,
    /// Runs of each fault over each protocol.
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// Results directory (default bench/results/<date>-faults).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The ferry binary (default: beside this binary, else <target>/release/ferry).
    #[arg(long)]
    ferry: Option<PathBuf>,
    /// The route's retry triggers, comma-separated (default: ferry's own,
    /// connect-failure,unavailable); e.g. connect-failure,unavailable,reset.
    #[arg(long, value_delimiter = ',')]
    retry_on: Vec<String>,
}

pub fn faults(args: FaultsArgs) -> anyhow::Result<ExitCode> {
    use ferry_bench::faults::{self, Fault, Options};
    let workspace = driver::workspace_root();
    let target = target_dir(&workspace);
    let ferry = ferry_binary(args.ferry, &target)?;
    let faults = if args.faults.is_empty() {
        Fault::ALL.to_vec()
    } else {
        args.faults
            .iter()
            .map(|f| Fault::parse(f).with_context(|| format!("unknown fault {f:?}")))
            .collect::<anyhow::Result<_>>()?
    };
    let protos = if args.protos.is_empty() {
        vec![faults::Proto::Http1, faults::Proto::H2, faults::Proto::Grpc]
    } else {
        args.protos
            .iter()
            .map(|p| faults::parse_proto(p).with_context(|| format!("unknown protocol {p:?}")))
            .collect::<anyhow::Result<_>>()?
    };
    let [steady, fault, after] = args.phases[..] else {
        bail!("--phases takes three numbers of seconds: steady,fault,after");
    };
    let secs = |s: f64| std::time::Duration::try_from_secs_f64(s).context("bad --phases");
    let opts = Options {
        ferry,
        out: args.out.unwrap_or_else(|| {
            workspace
                .join("bench/results")
                .join(format!("{}-faults", today()))
        }),
        work: target.join("bench-work/faults"),
        rate: args.rate,
        faults,
        protos,
        retry_on: args.retry_on,
        steady: secs(steady)?,
        fault: secs(fault)?,
        after: secs(after)?,
        reps: args.reps,
    };
    let runs = faults::run(&opts)?;
    println!("results: {}", opts.out.display());
    let missed: Vec<String> = runs
        .iter()
        .filter(|r| r.met == Some(false))
        .map(|r| format!("{} over {}", r.fault.name(), r.proto.name()))
        .collect();
    if missed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("ferry-bench faults: targets missed: {}", missed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}

/// Options of `ferry-bench spread`.
#[derive(Debug, clap::Args)]
pub struct SpreadArgs {
    /// Comma-separated balancers (default: all): ferry-p2c-ewma, ferry-round-robin,
    /// envoy-least-request, envoy-round-robin.
    #[arg(long, value_delimiter = ',')]
    balancers: Vec<String>,
    /// Results directory (default bench/results/<date>-spread).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The ferry binary (default: beside this binary, else <target>/release/ferry).
    #[arg(long)]
    ferry: Option<PathBuf>,
    /// The Envoy binary (default: the bench's pinned Envoy under <workspace>/target/peers,
    /// installed when missing).
    #[arg(long)]
    envoy: Option<PathBuf>,
    /// Runs of every case on every balancer (about 3 minutes each).
    #[arg(long, default_value_t = 1)]
    reps: usize,
}

pub fn spread(args: SpreadArgs) -> anyhow::Result<ExitCode> {
    use ferry_bench::spread::{self, Balancer, Binaries, Options};
    let workspace = driver::workspace_root();
    let target = target_dir(&workspace);
    let ferry = ferry_binary(args.ferry, &target)?;
    let balancers = if args.balancers.is_empty() {
        Balancer::ALL.to_vec()
    } else {
        args.balancers
            .iter()
            .map(|b| Balancer::parse(b).with_context(|| format!("unknown balancer {b:?}")))
            .collect::<anyhow::Result<_>>()?
    };
    let envoy = match args.envoy {
        Some(path) => Some(path),
        None if balancers.iter().any(|b| b.is_envoy()) => Some(
            ferry_bench::peers::ensure_envoy(&workspace.join("target/peers"))
                .context("Envoy for the Envoy balancers (or pass --envoy PATH)")?,
        ),
        None => None,
    };
    let opts = Options {
        bins: Binaries { ferry, envoy },
        out: args.out.unwrap_or_else(|| {
            workspace
                .join("bench/results")
                .join(format!("{}-spread", today()))
        }),
        work: target.join("bench-work/spread"),
        balancers,
        reps: args.reps,
    };
    let runs = spread::run(&opts)?;
    println!("results: {}", opts.out.display());
    let missed: Vec<String> = runs
        .iter()
        .filter(|r| {
            r.spread_met == Some(false) || r.slow.is_some_and(|v| !(v.share_met && v.p99_met))
        })
        .map(|r| format!("{} on {}", r.case.name, r.balancer.name()))
        .collect();
    if missed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("ferry-bench spread: targets missed: {}", missed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}

/// Options of `ferry-bench load-report`.
#[derive(Debug, clap::Args)]
pub struct LoadReportArgs {
    /// Requests per second, open loop.
    #[arg(long, default_value_t = 2000)]
    rate: u32,
    /// Seconds of measured load per run.
    #[arg(long, default_value_t = 10.0)]
    secs: f64,
    /// Keep-alive connections.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Repetitions (each runs every variant).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Results directory (default bench/results/<date>-load-report).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The ferry binary (default: beside this binary, else <target>/release/ferry).
    #[arg(long)]
    ferry: Option<PathBuf>,
}

pub fn load_report(args: LoadReportArgs) -> anyhow::Result<ExitCode> {
    use ferry_bench::load_report::{self, Options};
    let workspace = driver::workspace_root();
    let target = target_dir(&workspace);
    let opts = Options {
        ferry: ferry_binary(args.ferry, &target)?,
        out: args.out.unwrap_or_else(|| {
            workspace
                .join("bench/results")
                .join(format!("{}-load-report", today()))
        }),
        work: target.join("bench-work/load-report"),
        rate: args.rate,
        secs: args.secs,
        connections: args.connections,
        reps: args.reps,
    };
    let runs = load_report::run(&opts)?;
    println!("results: {}", opts.out.display());
    if runs.iter().any(|r| r.failed > 0) {
        eprintln!("ferry-bench load-report: some requests failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Options of `ferry-bench mirror`.
#[derive(Debug, clap::Args)]
pub struct MirrorArgs {
    /// Requests per second, open loop.
    #[arg(long, default_value_t = 2000)]
    rate: u32,
    /// Seconds of measured load per run.
    #[arg(long, default_value_t = 10.0)]
    secs: f64,
    /// Keep-alive connections.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Repetitions (each runs every variant).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Results directory (default bench/results/<date>-mirror).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The ferry binary (default: beside this binary, else <target>/release/ferry).
    #[arg(long)]
    ferry: Option<PathBuf>,
}

pub fn mirror(args: MirrorArgs) -> anyhow::Result<ExitCode> {
    use ferry_bench::mirror::{self, Options};
    let workspace = driver::workspace_root();
    let target = target_dir(&workspace);
    let opts = Options {
        ferry: ferry_binary(args.ferry, &target)?,
        out: args.out.unwrap_or_else(|| {
            workspace
                .join("bench/results")
                .join(format!("{}-mirror", today()))
        }),
        work: target.join("bench-work/mirror"),
        rate: args.rate,
        secs: args.secs,
        connections: args.connections,
        reps: args.reps,
    };
    let runs = mirror::run(&opts)?;
    println!("results: {}", opts.out.display());
    if runs.iter().any(|r| r.failed > 0) {
        eprintln!("ferry-bench mirror: some primary requests failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The build directory: `CARGO_TARGET_DIR`, else `<workspace>/target`.
fn target_dir(workspace: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"))
}

/// `given`, else ferry beside this binary, else the release build in `target`; it must exist.
fn ferry_binary(given: Option<PathBuf>, target: &Path) -> anyhow::Result<PathBuf> {
    let ferry = given.unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|d| d.join("ferry")))
            .filter(|p| p.is_file())
            .unwrap_or_else(|| target.join("release/ferry"))
    });
    if !ferry.is_file() {
        bail!(
            "no ferry binary at {} (cargo build --release -p ferry)",
            ferry.display()
        );
    }
    Ok(ferry)
}
