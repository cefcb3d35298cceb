//! Shared test support: the pinned Kubernetes tools, and running the CLI in-process.
#![allow(dead_code, reason = "each test binary uses a different subset")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should panic"
)]

use std::{
    path::{Path, PathBuf},
    process::{Command, ExitCode, Output},
    sync::OnceLock,
};

use clap::Parser;
use ferry_inject::{InjectArgs, run_inject};

/// Paths of the installed peers.
pub struct Tools {
    pub helm: PathBuf,
    pub kubernetes_validate: PathBuf,
}

/// Installs (once per process, idempotently across processes) helm and kubernetes-validate.
/// Panics with the installer's output when that fails: a missing peer is a failure, not a skip.
pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/install-tools.sh");
        let out = Command::new("bash")
            .arg(&script)
            .output()
            .expect("run install-tools.sh");
        assert!(
            out.status.success(),
            "installing helm / kubernetes-validate failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = PathBuf::from(
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .lines()
                .last()
                .unwrap_or(""),
        );
        let tools = Tools {
            helm: dir.join("helm/helm"),
            kubernetes_validate: dir.join("venv/bin/kubernetes-validate"),
        };
        assert!(
            tools.helm.is_file(),
            "helm missing at {}",
            tools.helm.display()
        );
        assert!(
            tools.kubernetes_validate.is_file(),
            "kubernetes-validate missing"
        );
        tools
    })
}

/// `kubernetes-validate --strict -k 1.31` over files.
pub fn kubernetes_validate(files: &[PathBuf]) -> Output {
    Command::new(&tools().kubernetes_validate)
        .args(["--strict", "-k", "1.31", "--quiet"])
        .args(files)
        .output()
        .expect("run kubernetes-validate")
}

/// Asserts the files validate, printing the tool's report otherwise.
pub fn assert_valid(files: &[PathBuf]) {
    let out = kubernetes_validate(files);
    assert!(
        out.status.success(),
        "kubernetes-validate rejected {files:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    inject: InjectArgs,
}

/// Parses `ferry inject` flags.
pub fn inject_args(args: &[&str]) -> InjectArgs {
    Cli::try_parse_from(std::iter::once("inject").chain(args.iter().copied()))
        .expect("valid flags")
        .inject
}

/// Runs the CLI in-process; returns stdout, stderr and whether it exited 0.
pub fn run_cli(args: &[&str], stdin: &str) -> (String, String, bool) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code =
        run_inject(inject_args(args), stdin.as_bytes(), &mut out, &mut err).expect("inject runs");
    (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
        code == ExitCode::SUCCESS,
    )
}

/// The package directory, where the corpus paths are relative to.
pub fn package_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Corpus files, sorted, as paths relative to the package (stable in golden stderr).
pub fn corpus() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(package_dir().join("tests/corpus"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    names
}

/// Extra flags a corpus file asks for on its first line (`# ferry-inject-args: --all`).
pub fn corpus_args(text: &str) -> Vec<String> {
    text.lines()
        .next()
        .and_then(|l| l.strip_prefix("# ferry-inject-args:"))
        .map(|a| a.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// A scratch directory for this test binary.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("ferry-inject")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
