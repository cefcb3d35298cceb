//! `ferry-bench`: the benchmark command (see bench/README.md).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use ferry_bench::driver::{self, Options};
use ferry_bench::machine::today;
use ferry_bench::scenarios::Scenario;
use ferry_bench::targets::{Kind, with_baseline};

mod commands;

use commands::{
    FaultsArgs, LoadReportArgs, MirrorArgs, SpreadArgs, faults, load_report, mirror, spread,
};

/// Benchmarks ferry beside Envoy, HAProxy and nginx on loopback.
#[derive(Debug, Parser)]
#[command(name = "ferry-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,
    /// CI mode: every scenario for about a second, ferry and direct only; fails on any error.
    #[arg(long)]
    smoke: bool,
    /// Comma-separated scenarios (default: all): cold_start, memory, h1_saturation,
    /// h2_saturation, latency_1k, latency_5k, grpc_unary, grpc_1mib, many_callers, churn,
    /// upload_1mib, sse_first_event, routes,
    /// translate, mtls_h1, mtls_h2, mtls_handshakes, mtls_memory, limit_local, limit_global,
    /// tracing, access_log, tap.
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// Comma-separated targets (default: direct,ferry,envoy,haproxy,nginx,haproxy-tcp,tcp-relay;
    /// smoke: direct,ferry); ferry-base needs --baseline and always runs right after ferry.
    #[arg(long, value_delimiter = ',')]
    targets: Vec<String>,
    /// Repetitions (default 3; smoke 1).
    #[arg(long)]
    reps: Option<usize>,
    /// Results directory (default bench/results/<date>; smoke: target/bench-smoke).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The ferry binary (default: beside this binary, or <target>/release/ferry, else built).
    #[arg(long)]
    ferry: Option<PathBuf>,
    /// A second ferry binary (e.g. built from the previous commit): adds the target ferry-base,
    /// run exactly like ferry, and a before/after table (ferry ÷ ferry-base) to results.md.
    #[arg(long, value_name = "PATH")]
    baseline: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Run only the bench upstream (used by the driver; prints "listening <addr>").
    Upstream {
        /// Address to bind.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
    /// Run only the plain TCP relay (the `tcp-relay` target: the floor of a proxy hop).
    Relay {
        /// Address to bind.
        #[arg(long)]
        listen: SocketAddr,
        /// Where every connection is relayed.
        #[arg(long)]
        upstream: SocketAddr,
    },
    /// Faults under load: ferry in front of two endpoints while one fault at a time is
    /// injected (see bench/README.md); writes results.md and results.json.
    Faults(FaultsArgs),
    /// Load balancing: how ferry (p2c-ewma, round-robin) and Envoy (LEAST_REQUEST,
    /// ROUND_ROBIN) spread requests over two replicas, identical or one 10× slower (see
    /// bench/README.md); writes results.md and results.json.
    Spread(SpreadArgs),
    /// Load reports: ferry's CPU per request with the replicas' reports passed through, read
    /// by the balancer, and with its own added (see bench/README.md); writes results.md and
    /// results.json.
    LoadReport(LoadReportArgs),
    /// Mirroring: ferry's CPU per primary request with 10 % and 100 % mirrored vs none, the
    /// mirror's own cost apart, and the primary's p99 with a hung candidate (see
    /// bench/README.md); writes results.md and results.json.
    Mirror(MirrorArgs),
    /// One endpoint of the faults bench (used by `faults`; prints "listening <addr>", takes
    /// `normal`, `hang`, `reset`, `count` on stdin, exits when stdin closes).
    FaultUpstream {
        /// Address to bind.
        #[arg(long)]
        listen: SocketAddr,
    },
    /// Send N requests one after another on one connection and exit (used by
    /// bench/scripts/callgrind-per-request.sh for h2c and gRPC).
    Sequential {
        /// Where to send them.
        #[arg(long)]
        target: SocketAddr,
        /// How many.
        #[arg(long)]
        n: usize,
        /// h1 (`GET /`), h2c (`GET /` as h2c streams) or grpc (a small unary call).
        #[arg(long, default_value = "h1")]
        proto: String,
    },
    /// Run only the OTLP/gRPC trace sink (prints "listening <addr>"; `GET /spans` answers the
    /// counts as JSON; exits when stdin closes).
    OtlpSink {
        /// Address to bind.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
    /// Soak: ferry under a fixed-rate mix (unary, SSE, gRPC streams) for a long run, sampling
    /// RSS, fds and threads every 10 s (not run in CI; see bench/README.md).
    Soak {
        /// Length of the load in minutes.
        #[arg(long, default_value_t = 30)]
        minutes: u64,
        /// Total requests per second.
        #[arg(long, default_value_t = 1000)]
        rate: u32,
        /// Seconds of start-up excluded from the flatness verdict.
        #[arg(long, default_value_t = 120)]
        warm_up: u64,
        /// Results directory (default bench/results/<date>-soak).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The ferry binary (default: beside this binary, or <target>/release/ferry, else built).
        #[arg(long)]
        ferry: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Sub::Upstream { listen }) => upstream(listen),
        Some(Sub::Relay { listen, upstream }) => relay(listen, upstream),
        Some(Sub::OtlpSink { listen }) => otlp_sink(listen),
        Some(Sub::Sequential { target, n, proto }) => sequential(target, n, &proto),
        Some(Sub::Soak {
            minutes,
            rate,
            warm_up,
            out,
            ferry,
        }) => soak(minutes, rate, warm_up, out, ferry),
        Some(Sub::Faults(args)) => faults(args),
        Some(Sub::FaultUpstream { listen }) => fault_upstream(listen),
        Some(Sub::Spread(args)) => spread(args),
        Some(Sub::LoadReport(args)) => load_report(args),
        Some(Sub::Mirror(args)) => mirror(args),
        None => bench(cli),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ferry-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn bench(cli: Cli) -> anyhow::Result<ExitCode> {
    let workspace = driver::workspace_root();
    let targets = if cli.targets.is_empty() {
        if cli.smoke {
            vec![Kind::Direct, Kind::Ferry]
        } else {
            Kind::ALL
                .into_iter()
                .filter(|k| *k != Kind::FerryBase)
                .collect()
        }
    } else {
        cli.targets
            .iter()
            .map(|t| Kind::parse(t).with_context(|| format!("unknown target {t:?}")))
            .collect::<anyhow::Result<_>>()?
    };
    let targets = match &cli.baseline {
        Some(_) => with_baseline(&targets),
        None if targets.contains(&Kind::FerryBase) => {
            bail!("target ferry-base needs --baseline PATH (the ferry binary to compare with)")
        }
        None => targets,
    };
    let scenarios = if cli.scenarios.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        cli.scenarios
            .iter()
            .map(|s| Scenario::parse(s).with_context(|| format!("unknown scenario {s:?}")))
            .collect::<anyhow::Result<_>>()?
    };
    let reps = cli.reps.unwrap_or(if cli.smoke { 1 } else { 3 });
    if reps == 0 {
        bail!("--reps must be at least 1");
    }
    let out = cli.out.unwrap_or_else(|| {
        if cli.smoke {
            workspace.join("target/bench-smoke")
        } else {
            workspace.join("bench/results").join(today())
        }
    });
    let opts = Options {
        smoke: cli.smoke,
        targets,
        scenarios,
        reps,
        out,
        ferry: cli.ferry,
        baseline: cli.baseline,
        workspace,
    };
    let summary = driver::run(&opts)?;
    println!("{}", summary.markdown);
    println!("results: {}", summary.dir.display());
    for (peer, reason) in &summary.skipped {
        eprintln!("ferry-bench: SKIPPED {peer}: {reason}");
    }
    if summary.failures.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for f in &summary.failures {
            eprintln!("ferry-bench: FAILED {f}");
        }
        Ok(ExitCode::FAILURE)
    }
}

fn soak(
    minutes: u64,
    rate: u32,
    warm_up: u64,
    out: Option<PathBuf>,
    ferry: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    if rate == 0 || minutes == 0 {
        bail!("--rate and --minutes must be at least 1");
    }
    let workspace = driver::workspace_root();
    let opts = ferry_bench::soak::SoakOptions {
        duration: std::time::Duration::from_secs(minutes * 60),
        warm_up: std::time::Duration::from_secs(warm_up),
        rate,
        out: out.unwrap_or_else(|| {
            workspace
                .join("bench/results")
                .join(format!("{}-soak", today()))
        }),
        ferry,
        workspace,
    };
    let outcome = ferry_bench::soak::run(&opts)?;
    println!("{}", outcome.markdown);
    println!("results: {}", opts.out.display());
    // Failures and leaks are findings, reported in results.md; the exit code says so too.
    Ok(if outcome.failed == 0 && outcome.flat {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn fault_upstream(listen: SocketAddr) -> anyhow::Result<ExitCode> {
    ferry_bench::faults::serve_endpoint(listen)?;
    Ok(ExitCode::SUCCESS)
}

fn relay(listen: SocketAddr, upstream: SocketAddr) -> anyhow::Result<ExitCode> {
    // One thread, like every proxy under test (the driver pins it to the proxy core).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        ferry_bench::relay::serve(listener, upstream).await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn sequential(target: SocketAddr, n: usize, proto: &str) -> anyhow::Result<ExitCode> {
    use ferry_bench::loadgen::{Proto, RequestSpec};
    let tenant = (
        http::HeaderName::from_static("x-tenant"),
        http::HeaderValue::from_static("bench"),
    );
    let (proto, mut spec) = match proto {
        "h1" => (Proto::Http1, RequestSpec::get("/")),
        "h2c" => (Proto::H2c, RequestSpec::get("/")),
        "grpc" => (Proto::H2c, ferry_bench::scenarios::grpc_unary()),
        other => bail!("unknown --proto {other:?} (h1, h2c or grpc)"),
    };
    spec.headers.push(tenant);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(ferry_bench::loadgen::sequential(target, proto, &spec, n))?;
    Ok(ExitCode::SUCCESS)
}

fn otlp_sink(listen: SocketAddr) -> anyhow::Result<ExitCode> {
    exit_when_stdin_closes();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let mut out = std::io::stdout();
        writeln!(out, "listening {addr}")?;
        out.flush()?;
        let counts = std::sync::Arc::new(ferry_bench::otlp_sink::SpanCounts::default());
        ferry_bench::otlp_sink::serve(listener, counts).await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The parent holds our stdin; EOF means it is gone, so no helper outlives a bench run.
fn exit_when_stdin_closes() {
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        while let Ok(n) = std::io::stdin().read(&mut sink) {
            if n == 0 {
                break;
            }
        }
        std::process::exit(0);
    });
}

fn upstream(listen: SocketAddr) -> anyhow::Result<ExitCode> {
    exit_when_stdin_closes();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let mut out = std::io::stdout();
        writeln!(out, "listening {addr}")?;
        out.flush()?;
        ferry_bench::upstream::serve(listener).await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
