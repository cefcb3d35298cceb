//! Headless Chromium (Debian `chromium`, installed by `peers/install-chromium.sh`): loads a
//! page on 127.0.0.1, runs its JavaScript, and prints the resulting DOM or takes a screenshot.
//! Each run gets its own throwaway profile directory; the browser is killed if the test drops
//! it.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::process::Command;
use tokio::sync::OnceCell;

use crate::{peers, workspace};

static INSTALLED: OnceCell<()> = OnceCell::const_new();

/// How long one browser run may take (start, load, scripts within the virtual time budget).
const PATIENCE: Duration = Duration::from_secs(90);

/// What a headless run printed.
#[derive(Debug)]
pub struct Run {
    /// Standard output (the DOM with `--dump-dom`).
    pub stdout: String,
    /// Standard error (with `--enable-logging=stderr`: the page's console messages).
    pub stderr: String,
}

/// Installs Chromium once per test process; a missing browser fails the test.
pub async fn install() -> anyhow::Result<()> {
    INSTALLED
        .get_or_try_init(|| async {
            let script = workspace::crate_dir()
                .join("peers")
                .join("install-chromium.sh");
            peers::run_installer(&script, &workspace::peers_dir(), "chromium").await
        })
        .await
        .copied()
}

/// Loads `url`, lets its scripts run for `budget_ms` of virtual time, and returns the DOM
/// and the console log.
pub async fn dump_dom(url: &str, budget_ms: u32) -> anyhow::Result<Run> {
    run(&[
        &format!("--virtual-time-budget={budget_ms}"),
        "--enable-logging=stderr",
        "--v=0",
        "--dump-dom",
        url,
    ])
    .await
}

/// Loads `url` in a 1280×900 window, lets its scripts run for `budget_ms` of virtual time,
/// and writes a PNG screenshot to `png`.
pub async fn screenshot(url: &str, budget_ms: u32, png: &Path) -> anyhow::Result<Run> {
    run(&[
        &format!("--virtual-time-budget={budget_ms}"),
        &format!("--screenshot={}", png.display()),
        "--window-size=1280,900",
        "--hide-scrollbars",
        url,
    ])
    .await
}

async fn run(args: &[&str]) -> anyhow::Result<Run> {
    install().await?;
    let profile = tempfile::Builder::new().prefix("chromium-").tempdir()?;
    let mut cmd = Command::new("chromium");
    cmd.args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args([
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-dev-shm-usage",
        ])
        .args(args)
        .env("HOME", profile.path())
        .kill_on_drop(true);
    let out = tokio::time::timeout(PATIENCE, cmd.output())
        .await
        .context("chromium did not finish in time")?
        .context("running chromium")?;
    let run = Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    if !out.status.success() {
        bail!("chromium failed ({}):\n{}", out.status, run.stderr);
    }
    Ok(run)
}
