//! `ferry-bench soak`: ferry (release, one worker, core 1) in front of the bench upstream for a
//! long run at a fixed open-loop rate mixing unary HTTP/1.1 and h2c, gRPC unary, SSE streams
//! and gRPC server streams ([`mix`]). Every [`SAMPLE_EVERY`] it records ferry's RSS, open fds,
//! threads, CPU and its connection/in-flight gauges plus the requests finished ([`sample`]);
//! at the end it writes `samples.csv`, `soak.svg`/`.png` ([`chart`]) and `results.md`
//! ([`report`]) with each series' range after warm-up and whether it stayed flat within
//! [`FLAT_WITHIN`] ([`summary`]), the issue-18 target. Not run in CI: it takes the whole run.

mod chart;
mod mix;
mod report;
mod sample;
mod sockets;
mod summary;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use self::summary::{Judge, SeriesSummary, summarize};
use crate::driver::{self, UpstreamProcess};
use crate::error::{BenchError, IoContext, Result};
use crate::machine::Machine;
use crate::targets::{Kind, Target};
use crate::{peers, procfs};

/// How often the soak samples ferry.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// How long the load goes on after the last sample.
const LOAD_AFTER_LAST_SAMPLE: Duration = Duration::from_secs(2);
/// The tolerance of the flatness target: (max − min) ÷ min after warm-up.
pub const FLAT_WITHIN: f64 = 0.10;

/// What to run.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Length of the load.
    pub duration: Duration,
    /// Samples before this are start-up, not judged.
    pub warm_up: Duration,
    /// Total requests per second over all classes.
    pub rate: u32,
    /// Results directory.
    pub out: PathBuf,
    /// The ferry binary; found or built when `None`.
    pub ferry: Option<PathBuf>,
    /// The workspace root.
    pub workspace: PathBuf,
}

/// What a finished soak left behind.
#[derive(Debug)]
pub struct SoakOutcome {
    /// results.md's text.
    pub markdown: String,
    /// Failed requests over the run.
    pub failed: u64,
    /// Whether every judged series stayed flat.
    pub flat: bool,
}

/// Runs the soak and writes its results into `opts.out`.
pub fn run(opts: &SoakOptions) -> Result<SoakOutcome> {
    if opts.warm_up >= opts.duration {
        return Err(BenchError::Process(format!(
            "the warm-up ({:?}) must be shorter than the run ({:?})",
            opts.warm_up, opts.duration
        )));
    }
    driver::pin_self_to_core0()?;
    let ticks = procfs::clock_ticks()?;
    let ferry = driver::find_ferry(&driver::Options {
        smoke: false,
        targets: vec![Kind::Ferry],
        scenarios: Vec::new(),
        reps: 1,
        out: opts.out.clone(),
        ferry: opts.ferry.clone(),
        baseline: None,
        workspace: opts.workspace.clone(),
    })?;
    let versions = vec![
        (
            "ferry-bench".to_owned(),
            env!("CARGO_PKG_VERSION").to_owned(),
        ),
        (
            "ferry".to_owned(),
            format!(
                "{} ({})",
                peers::version_line(&ferry, &["--version"]),
                ferry.display()
            ),
        ),
    ];
    std::fs::create_dir_all(&opts.out).ctx(|| format!("creating {}", opts.out.display()))?;
    let upstream = UpstreamProcess::start()?;
    let workdir = opts.workspace.join("target/bench-work/soak");
    // One thread, like the benchmark's load generator: it stays on core 0 with the upstream.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx(|| "starting the load generator runtime".into())?;
    let measured = runtime.block_on(soak(opts, ferry, upstream.addr, &workdir, ticks))?;
    drop(upstream);
    let report = report::Report::new(opts, Machine::describe(versions), measured);
    let markdown = report.markdown();
    let path = opts.out.join("results.md");
    std::fs::write(&path, &markdown).ctx(|| format!("writing {}", path.display()))?;
    chart::draw(
        &opts.out,
        &report.samples,
        opts.warm_up.as_secs_f64(),
        &format!(
            "ferry soak: {} req/s for {} min",
            opts.rate,
            opts.duration.as_secs() / 60
        ),
    )?;
    Ok(SoakOutcome {
        failed: report.failed(),
        flat: report.all_flat(),
        markdown,
    })
}

/// What the run measured, before it is summarised.
struct Measured {
    samples: Vec<sample::Sample>,
    classes: Vec<mix::ClassStats>,
    kept_errors: Vec<String>,
    idle_rss_kib: u64,
}

async fn soak(
    opts: &SoakOptions,
    ferry: PathBuf,
    upstream: SocketAddr,
    workdir: &Path,
    ticks: f64,
) -> Result<Measured> {
    let target = Target {
        kind: Kind::Ferry,
        bin: Some(ferry),
    };
    let running = target.start(upstream, workdir, 0).await?;
    let (Some(pid), Some(admin)) = (running.pid(), running.admin) else {
        return Err(BenchError::Process(
            "ferry started without a pid or admin".into(),
        ));
    };
    let idle_rss_kib = running.memory()?.map_or(0, |m| m.rss_kib);
    let counters = Arc::new(mix::Counters::default());
    // The load outlasts the last sample by a little, so that sample sees ferry under load,
    // not while the lanes are closing their connections.
    let load = mix::Mix::start(
        running.h1,
        running.h2,
        opts.rate,
        opts.duration + LOAD_AFTER_LAST_SAMPLE,
        Arc::clone(&counters),
    )
    .await?;
    let sampler = sample::Sampler {
        pid,
        admin,
        listener_port: running.h1.port(),
        upstream_port: upstream.port(),
        ticks,
        counters: Arc::clone(&counters),
    };
    let samples = sampler
        .run(SAMPLE_EVERY, opts.duration, &opts.out.join("samples.csv"))
        .await?;
    let classes = load.finish().await?;
    running.stop().await;
    Ok(Measured {
        samples,
        classes,
        kept_errors: counters.kept_errors(),
        idle_rss_kib,
    })
}
