//! The whole benchmark command: resolve (and install) the targets, start the upstream, run
//! the schedule, write results and charts. Everything started here is stopped here, also on
//! error (the process handles kill on drop).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::error::{BenchError, IoContext, Result};
use crate::machine::Machine;
use crate::report::{self, Report};
use crate::scenarios::{self, Plan, Scenario, Sizing};
use crate::targets::{Kind, Target};
use crate::{charts, peers, procfs};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// CI size: ~1 s per scenario, ferry and direct only, one repetition.
    pub smoke: bool,
    /// Targets to run.
    pub targets: Vec<Kind>,
    /// Scenarios to run.
    pub scenarios: Vec<Scenario>,
    /// Repetitions.
    pub reps: usize,
    /// Results directory.
    pub out: PathBuf,
    /// The ferry binary; found or built when `None`.
    pub ferry: Option<PathBuf>,
    /// The `ferry-base` binary, the "before" of a before/after comparison.
    pub baseline: Option<PathBuf>,
    /// The workspace root.
    pub workspace: PathBuf,
}

/// What a finished run left behind.
#[derive(Debug)]
pub struct Summary {
    /// Where results.json, results.md and charts are.
    pub dir: PathBuf,
    /// Failed scenarios.
    pub failures: Vec<String>,
    /// Skipped peers.
    pub skipped: Vec<(String, String)>,
    /// The markdown report.
    pub markdown: String,
}

/// Runs the benchmark.
pub fn run(opts: &Options) -> Result<Summary> {
    pin_self_to_core0()?;
    let ticks = procfs::clock_ticks()?;
    let (targets, skipped, versions) = resolve_targets(opts)?;
    let upstream = UpstreamProcess::start()?;
    let workdir = opts.workspace.join("target/bench-work");
    // Made per run, so no certificate outlives the run that trusted it.
    let certs = if opts.scenarios.iter().any(|s| s.is_mtls()) {
        Some(crate::mtls::Certs::generate(&workdir.join("certs"))?)
    } else {
        None
    };
    let plan = Plan {
        targets,
        scenarios: opts.scenarios.clone(),
        reps: opts.reps,
        sizing: if opts.smoke {
            Sizing::smoke()
        } else {
            Sizing::full()
        },
        workdir,
        upstream: upstream.addr,
        ticks,
        certs,
    };
    // One thread: the load generator must stay on core 0 beside the upstream.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx(|| "starting the load generator runtime".into())?;
    let outcome = runtime.block_on(scenarios::run(&plan));
    drop(upstream);
    let aggregates = report::aggregate(&outcome.samples);
    let report = Report {
        mode: if opts.smoke { "smoke" } else { "full" },
        reps: opts.reps,
        machine: Machine::describe(versions),
        skipped: skipped.clone(),
        failures: outcome.failures.clone(),
        headline: report::headline(&aggregates),
        translate: report::translate::verdicts(&aggregates),
        translate_binary: report::translate::binary_verdict(&aggregates),
        mtls: report::mtls::verdicts(&aggregates),
        tracing: report::tracing::verdicts(&outcome.samples),
        before_after: report::before_after::ratios(&outcome.samples),
        aggregates,
        samples: outcome.samples,
    };
    report::write(&opts.out, &report)?;
    charts::draw_all(&opts.out, &report.aggregates)?;
    Ok(Summary {
        dir: opts.out.clone(),
        failures: outcome.failures,
        skipped,
        markdown: report::markdown(&report),
    })
}

/// The load generator shares core 0 with the upstream; core 1 belongs to the proxy.
pub(crate) fn pin_self_to_core0() -> Result<()> {
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", "0", &std::process::id().to_string()])
        .stdout(Stdio::null())
        .status()
        .ctx(|| "running taskset (util-linux)".into())?;
    if status.success() {
        Ok(())
    } else {
        Err(BenchError::Process(format!("taskset failed: {status}")))
    }
}

type Resolved = (Vec<Target>, Vec<(String, String)>, Vec<(String, String)>);

fn resolve_targets(opts: &Options) -> Result<Resolved> {
    let mut targets = Vec::new();
    let mut skipped = Vec::new();
    let mut versions = vec![(
        "ferry-bench".to_owned(),
        env!("CARGO_PKG_VERSION").to_owned(),
    )];
    let peers_dir = opts.workspace.join("target/peers");
    for &kind in &opts.targets {
        let found = match kind {
            Kind::Direct => {
                targets.push(Target { kind, bin: None });
                continue;
            }
            Kind::Ferry => Ok(find_ferry(opts)?),
            Kind::FerryBase => {
                let path = opts.baseline.as_deref().ok_or_else(|| {
                    BenchError::Process("target ferry-base needs --baseline PATH".into())
                })?;
                Ok(given("--baseline", path)?)
            }
            Kind::Envoy => peers::ensure_envoy(&peers_dir),
            Kind::Haproxy | Kind::HaproxyTcp => peers::ensure_debian("haproxy", "haproxy"),
            Kind::Nginx => peers::ensure_debian("nginx", "nginx"),
            // This very binary (`ferry-bench relay`).
            Kind::TcpRelay => std::env::current_exe()
                .map_err(|e| BenchError::Process(format!("locating ferry-bench itself: {e}"))),
        };
        match found {
            Ok(bin) => {
                let flag = match kind {
                    Kind::Haproxy | Kind::HaproxyTcp | Kind::Nginx => "-v",
                    _ => "--version",
                };
                let mut version = peers::version_line(&bin, &[flag]);
                if kind.is_ferry() {
                    // Both ferry binaries print the same package version: name the file too.
                    version = format!("{version} ({})", bin.display());
                }
                versions.push((kind.name().to_owned(), version));
                targets.push(Target {
                    kind,
                    bin: Some(bin),
                });
            }
            Err(e) => {
                eprintln!(
                    "ferry-bench: SKIPPING {}: it could not be installed: {e}",
                    kind.name()
                );
                skipped.push((kind.name().to_owned(), e.to_string()));
            }
        }
    }
    Ok((targets, skipped, versions))
}

/// `--ferry`, else `ferry` beside this binary, else `<target>/release/ferry`, else build it.
pub(crate) fn find_ferry(opts: &Options) -> Result<PathBuf> {
    if let Some(p) = &opts.ferry {
        return given("--ferry", p);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("ferry")));
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| opts.workspace.join("target"));
    let release = target_dir.join("release/ferry");
    if let Some(p) = beside.iter().chain([&release]).find(|p| p.is_file()) {
        return Ok(p.clone());
    }
    eprintln!("ferry-bench: building ferry (cargo build --release -p ferry)");
    let status = nested_cargo()
        .args(["build", "--release", "-p", "ferry", "--bin", "ferry"])
        .current_dir(&opts.workspace)
        .status()
        .ctx(|| "running cargo build for ferry".into())?;
    if status.success() && release.is_file() {
        Ok(release)
    } else {
        Err(BenchError::Process(format!(
            "could not build ferry ({status}); build it with `cargo build --release -p ferry`"
        )))
    }
}

/// A binary named on the command line by `flag`, which must exist.
fn given(flag: &str, path: &Path) -> Result<PathBuf> {
    if path.is_file() {
        Ok(path.to_path_buf())
    } else {
        Err(BenchError::Process(format!(
            "{flag} {} does not exist",
            path.display()
        )))
    }
}

/// The upstream, a child process of this binary (`ferry-bench upstream`) on core 0.
pub(crate) struct UpstreamProcess {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl UpstreamProcess {
    pub(crate) fn start() -> Result<Self> {
        let exe = std::env::current_exe().ctx(|| "finding this executable".into())?;
        let mut child = Command::new("taskset")
            .args(["-c", "0"])
            .arg(&exe)
            .args(["upstream", "--listen", "127.0.0.1:0"])
            // The upstream exits when this pipe closes, i.e. when we are gone.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ctx(|| format!("starting {} upstream", exe.display()))?;
        let addr = child
            .stdout
            .take()
            .and_then(|out| BufReader::new(out).lines().next())
            .and_then(|line| line.ok())
            .and_then(|line| line.strip_prefix("listening ").and_then(|a| a.parse().ok()));
        match addr {
            Some(addr) => Ok(Self { child, addr }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(BenchError::Process(
                    "the bench upstream did not start".into(),
                ))
            }
        }
    }
}

impl Drop for UpstreamProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The workspace root (this crate's parent directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// `cargo` for a build started from inside a cargo-run process (this binary under `cargo run`,
/// or a test), without the variables cargo set for that process about its own package. A
/// nested build that inherits them reruns every build script watching them (ring's watches
/// `CARGO_PKG_NAME` and `CARGO_MANIFEST_DIR`), and the next ordinary build reruns them back:
/// about half a minute of rebuilding each way.
pub fn nested_cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        let n = name.to_string_lossy();
        let own = n == "OUT_DIR"
            || [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
            ]
            .iter()
            .any(|p| n.starts_with(p));
        if own {
            cmd.env_remove(&name);
        }
    }
    cmd
}
