//! The `ferry` command: a thin CLI over the `ferry_proxy` library (run, validate, schema),
//! `ferry_demo` and `ferry_inject`. A crate of its own because the demo depends on the proxy
//! library, so the binary that offers both cannot live in the proxy crate.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use ferry_proxy::app::{Proxy, StartOptions};

mod admin_client;
mod stat;
mod tap;
mod top;

/// ferry: a lightweight L7 sidecar proxy for model-serving traffic.
#[derive(Debug, Parser)]
#[command(name = "ferry", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the proxy.
    Run(RunArgs),
    /// Check config files; prints every error as file:line:col and exits 64 if any.
    Validate {
        /// Config files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the JSON Schema of the config file.
    Schema,
    /// Start a built-in model server behind ferry, send REST and gRPC requests through it and
    /// show what ferry did with each (`--serve` keeps it running to try by hand).
    Demo(ferry_demo::DemoArgs),
    /// Inject the ferry sidecar into Kubernetes manifests (files or `-` for stdin) and write
    /// them to stdout.
    Inject(ferry_inject::InjectArgs),
    /// Run the mutating admission webhook that injects the sidecar.
    Injector(ferry_inject::InjectorArgs),
    /// Wait until ferry's admin `/ready` answers 200 (the legacy sidecar's postStart hook).
    WaitReady(ferry_inject::WaitReadyArgs),
    /// Per route, model, cluster or endpoint over a recent window: requests per second,
    /// success rate, latency percentiles, in flight, retries, limited and queued.
    Stat(stat::StatArgs),
    /// Print the access records of live requests as they finish, filtered by route, model,
    /// status or authority (from the admin endpoint's `/tap`).
    Tap(tap::TapArgs),
    /// A live terminal view of the busiest rows and the slowest and failed recent requests,
    /// refreshed every second; q quits.
    Top(top::TopArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Route config file (YAML). Without it (and without --listen/--upstream) the built-in
    /// default runs: inbound 0.0.0.0:15006 → 127.0.0.1:8080, outbound 127.0.0.1:15001.
    #[arg(long, short = 'c', conflicts_with_all = ["listen", "upstream"])]
    config: Option<PathBuf>,
    /// One-route sidecar without a file: listen here...
    #[arg(long, requires = "upstream")]
    listen: Option<SocketAddr>,
    /// ...and forward everything there.
    #[arg(long, requires = "listen")]
    upstream: Option<SocketAddr>,
    /// Admin address for --listen/--upstream mode (default 127.0.0.1:15000).
    #[arg(long, requires = "listen")]
    admin: Option<SocketAddr>,
    /// With --listen/--upstream: translate Open Inference Protocol traffic on the way
    /// (`rest-to-grpc`: REST callers, gRPC server; `grpc-to-rest`: the reverse).
    #[arg(long, requires = "listen", value_enum)]
    translate: Option<TranslateArg>,
    /// Write the bound addresses here as JSON once listening (useful with port 0).
    #[arg(long)]
    bound_addresses_file: Option<PathBuf>,
    /// Worker threads (overrides the config's runtime.worker_threads).
    #[arg(long)]
    worker_threads: Option<usize>,
    /// Load the workload identity from DIR/tls.crt, DIR/tls.key and DIR/ca.crt (the names the
    /// injector's certificate volume uses) when the config names no `identity` (a file's own
    /// wins). Without --config, the inbound (or --listen) listener then runs mutual TLS in
    /// permissive mode.
    #[arg(long, value_name = "DIR")]
    identity_dir: Option<PathBuf>,
}

/// `--translate` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum TranslateArg {
    /// REST callers, gRPC upstream.
    RestToGrpc,
    /// gRPC callers, REST upstream.
    GrpcToRest,
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Validate { files } => Ok(validate(&files)),
        Command::Schema => schema(),
        Command::Demo(args) => demo(args),
        Command::Inject(args) => ferry_inject::run_inject(
            args,
            std::io::stdin().lock(),
            std::io::stdout().lock(),
            std::io::stderr().lock(),
        )
        .map_err(anyhow::Error::from),
        Command::Injector(args) => small_runtime().and_then(|rt| {
            rt.block_on(ferry_inject::run_injector(args, wait_for_shutdown()))?;
            Ok(ExitCode::SUCCESS)
        }),
        Command::WaitReady(args) => small_runtime().and_then(|rt| {
            rt.block_on(ferry_inject::run_wait_ready(args))?;
            Ok(ExitCode::SUCCESS)
        }),
        Command::Stat(args) => small_runtime().and_then(|rt| {
            rt.block_on(stat::run(args))?;
            Ok(ExitCode::SUCCESS)
        }),
        Command::Tap(args) => small_runtime().and_then(|rt| rt.block_on(tap::run(args))),
        Command::Top(args) => top::run(args).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("ferry: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("FERRY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

fn validate(files: &[PathBuf]) -> ExitCode {
    let mut failed = false;
    for file in files {
        match ferry_config::load(file)
            .and_then(|config| ferry_proxy::descriptors::Descriptors::load(&config).map(|_| config))
            .and_then(|config| ferry_proxy::tls::TlsFiles::load(&config).map(|_| config))
            .and_then(|config| ferry_proxy::access_log::check(&config).map(|()| config))
        {
            Ok(config) => println!("{}: ok (version {})", file.display(), config.version),
            Err(errors) => {
                failed = true;
                eprintln!("{errors}");
            }
        }
    }
    // 64 = EX_USAGE: the input was wrong, not ferry.
    if failed {
        ExitCode::from(64)
    } else {
        ExitCode::SUCCESS
    }
}

fn schema() -> anyhow::Result<ExitCode> {
    let text = serde_json::to_string_pretty(&ferry_config::json_schema())?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn small_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn demo(args: ferry_demo::DemoArgs) -> anyhow::Result<ExitCode> {
    let runtime = small_runtime()?;
    runtime.block_on(ferry_demo::run(args))?;
    // Idle pooled connections may still be parked on the runtime; don't wait for them.
    runtime.shutdown_timeout(Duration::from_millis(100));
    Ok(ExitCode::SUCCESS)
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let identity = args.identity_dir.as_deref().map(identity_from_dir);
    let options = ferry_config::LoadOptions {
        identity: identity.clone(),
    };
    let config = match (&args.config, args.listen, args.upstream) {
        (Some(path), _, _) => match ferry_config::load_with(path, &options) {
            Ok(c) => c,
            Err(errors) => {
                eprintln!("{errors}");
                return Ok(ExitCode::from(64));
            }
        },
        (None, Some(listen), Some(upstream)) => {
            let direction = args.translate.map(|t| match t {
                TranslateArg::RestToGrpc => ferry_config::TranslateDirection::RestToGrpc,
                TranslateArg::GrpcToRest => ferry_config::TranslateDirection::GrpcToRest,
            });
            let config =
                ferry_config::one_route_translate_config(listen, upstream, args.admin, direction);
            with_identity(config, identity.as_ref(), |_| true)
        }
        _ => with_identity(ferry_config::default_config(), identity.as_ref(), |l| {
            l.name == "inbound"
        }),
    };
    // Descriptor sets named by the config are part of it: a missing or broken one is a usage
    // error reported at its field, like any config error (checked before any socket opens).
    if let Err(errors) = ferry_proxy::descriptors::Descriptors::load(&config) {
        eprintln!("{errors}");
        return Ok(ExitCode::from(64));
    }
    if let Err(errors) = ferry_proxy::tls::TlsFiles::load(&config) {
        eprintln!("{errors}");
        return Ok(ExitCode::from(64));
    }
    // Access-log files too: a sink ferry cannot write is refused before anything listens.
    if let Err(errors) = ferry_proxy::access_log::check(&config) {
        eprintln!("{errors}");
        return Ok(ExitCode::from(64));
    }
    let workers = args
        .worker_threads
        .unwrap_or(config.runtime.worker_threads)
        .max(1);
    let runtime = if workers == 1 {
        // One worker: a current-thread runtime runs every task on the main thread, so no
        // wakeup crosses threads and there is no work-stealing bookkeeping (see
        // bench/results for the CPU per request of both).
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    }
    .context("starting the async runtime")?;
    let opts = StartOptions {
        access_log: None,
        config_path: args.config.clone(),
        identity,
        bound_addresses_file: args.bound_addresses_file.clone(),
    };
    runtime.block_on(async move {
        let drain = config.runtime.drain_timeout;
        let proxy = Proxy::start(config, opts).await?;
        wait_for_shutdown().await;
        tracing::info!(deadline = ?drain, "shutting down: draining");
        proxy.shutdown(drain).await;
        tracing::info!("stopped");
        Ok::<_, anyhow::Error>(())
    })?;
    // The runtime may still hold idle pooled connections; don't wait for them.
    runtime.shutdown_timeout(Duration::from_millis(100));
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A built-in config with `identity` (when given) and the listeners `serving` chooses in
/// permissive mutual TLS: callers may then use TLS or, while they migrate, plaintext.
fn with_identity(
    mut config: ferry_config::Config,
    identity: Option<&ferry_config::Identity>,
    serving: impl Fn(&ferry_config::Listener) -> bool,
) -> ferry_config::Config {
    let Some(identity) = identity else {
        return config;
    };
    config.identity = Some(identity.clone());
    for l in config.listeners.iter_mut().filter(|l| serving(l)) {
        l.tls.mode = ferry_config::TlsMode::Permissive;
    }
    config
}

/// `--identity-dir DIR`: the three files by the names cert-manager's CSI driver and
/// Kubernetes TLS secrets use. Problems are reported at the flag.
fn identity_from_dir(dir: &std::path::Path) -> ferry_config::Identity {
    let at = |what: &str| ferry_config::FieldLocation {
        file: "--identity-dir".to_owned(),
        line: 1,
        col: 1,
        path: format!("identity.{what}"),
    };
    ferry_config::Identity {
        cert: dir.join("tls.crt"),
        cert_at: at("cert"),
        key: dir.join("tls.key"),
        key_at: at("key"),
        trust: vec![dir.join("ca.crt")],
        trust_at: vec![at("trust[0]")],
    }
}
