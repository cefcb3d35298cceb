//! Where things are: the workspace root, the cargo target dir, the peers dir, and the one-time
//! build of the real `ferry` binary.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use tokio::sync::OnceCell;

/// The cargo workspace root (the parent of this crate).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The cargo target dir: `$CARGO_TARGET_DIR` if the test run set one, else `<root>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                root().join(dir)
            }
        }
        _ => root().join("target"),
    }
}

/// Where the test set-up installs third-party peers (`<root>/target/peers`).
pub fn peers_dir() -> PathBuf {
    root().join("target").join("peers")
}

/// This crate's own directory (protos, peer scripts).
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

static FERRY_BIN: OnceCell<PathBuf> = OnceCell::const_new();

/// Builds `ferry` once per test process (`cargo build -p ferry --bin ferry`) and returns
/// the binary's path. Every test calls this; only the first one pays for the build.
pub async fn ferry_bin() -> anyhow::Result<PathBuf> {
    FERRY_BIN
        .get_or_try_init(|| async {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut cmd = tokio::process::Command::new(&cargo);
            // Without the variables cargo set for this test about its own package: inherited,
            // they rerun every build script watching them (ring's watches CARGO_PKG_NAME and
            // CARGO_MANIFEST_DIR), here and again in the next ordinary build, ~30 s each way.
            for (name, _) in std::env::vars_os() {
                let n = name.to_string_lossy();
                if n == "OUT_DIR"
                    || [
                        "CARGO_PKG_",
                        "CARGO_MANIFEST_",
                        "CARGO_CRATE_",
                        "CARGO_BIN_",
                    ]
                    .iter()
                    .any(|p| n.starts_with(p))
                    || matches!(&*n, "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR")
                {
                    cmd.env_remove(&name);
                }
            }
            let out = cmd
                .args(["build", "--quiet", "-p", "ferry", "--bin", "ferry"])
                .current_dir(root())
                .env("CARGO_TARGET_DIR", target_dir())
                .kill_on_drop(true)
                .output()
                .await
                .with_context(|| format!("running {cargo:?} build -p ferry"))?;
            if !out.status.success() {
                bail!(
                    "building ferry failed ({}):\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let bin = target_dir().join("debug").join("ferry");
            if !tokio::fs::metadata(&bin).await.is_ok_and(|m| m.is_file()) {
                bail!("cargo built ferry but {} does not exist", bin.display());
            }
            Ok(bin)
        })
        .await
        .cloned()
}
