//! The Helm chart (`charts/ferry`) as a real helm renders it. helm and kubernetes-validate come
//! from the inject crate's pinned installer (`inject/tests/support/install-tools.sh`, under a
//! flock, once per checkout), so the chart tests of every crate run the same tools; YAML is
//! parsed by PyYAML from that installer's venv. A missing tool fails the test; nothing is
//! skipped.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context as _, bail};
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;
use tokio::process::Command;

use crate::workspace;

/// The release name and namespace every render uses.
pub const RELEASE: &str = "ferry";
/// The namespace of the release.
pub const NAMESPACE: &str = "ferry-system";

/// The installed tools.
#[derive(Debug, Clone)]
pub struct Chart {
    peers: PathBuf,
}

// === impl Chart ===

impl Chart {
    /// Installs (or finds) helm and kubernetes-validate.
    pub async fn tools() -> anyhow::Result<Chart> {
        let script = workspace::root().join("inject/tests/support/install-tools.sh");
        let out = Command::new("bash")
            .arg(&script)
            .kill_on_drop(true)
            .output()
            .await
            .with_context(|| format!("running {}", script.display()))?;
        if !out.status.success() {
            bail!(
                "installing helm / kubernetes-validate failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let peers = PathBuf::from(stdout.trim().lines().last().unwrap_or_default());
        anyhow::ensure!(
            peers.join("helm/helm").is_file(),
            "no helm in {}",
            peers.display()
        );
        Ok(Chart { peers })
    }

    /// `helm template` of the chart with raw helm flags (`--set a=b`, `--set-json a=[...]`):
    /// Ok(the manifests) or Err(helm's stderr) when helm refuses the values.
    pub async fn template(&self, flags: &[&str]) -> anyhow::Result<Result<String, String>> {
        let out = Command::new(self.peers.join("helm/helm"))
            .args(["template", RELEASE])
            .arg(workspace::root().join("charts/ferry"))
            .args(["--namespace", NAMESPACE])
            .args(flags)
            .kill_on_drop(true)
            .output()
            .await
            .context("running helm")?;
        if !out.status.success() {
            return Ok(Err(String::from_utf8_lossy(&out.stderr).into_owned()));
        }
        Ok(Ok(
            String::from_utf8(out.stdout).context("helm printed non-UTF-8")?
        ))
    }

    /// `helm lint --strict` of the chart with raw helm flags: Err with helm's report when it
    /// finds anything (strict turns warnings into failures).
    pub async fn lint(&self, flags: &[&str]) -> anyhow::Result<()> {
        let out = Command::new(self.peers.join("helm/helm"))
            .args(["lint", "--strict"])
            .arg(workspace::root().join("charts/ferry"))
            .args(flags)
            .kill_on_drop(true)
            .output()
            .await
            .context("running helm")?;
        anyhow::ensure!(
            out.status.success(),
            "helm lint --strict {flags:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }

    /// `helm template` with one `--set` per entry of `sets`, parsed: Ok(documents) or
    /// Err(helm's stderr).
    pub async fn render(&self, sets: &[&str]) -> anyhow::Result<Result<Vec<Value>, String>> {
        let flags: Vec<&str> = sets.iter().flat_map(|s| ["--set", s]).collect();
        match self.template(&flags).await? {
            Ok(text) => Ok(Ok(self.parse_yaml(&text).await?)),
            Err(stderr) => Ok(Err(stderr)),
        }
    }

    /// Every YAML document in `text`, as JSON values (empty documents dropped).
    pub async fn parse_yaml(&self, text: &str) -> anyhow::Result<Vec<Value>> {
        let mut child = Command::new(self.peers.join("venv/bin/python"))
            .args([
                "-c",
                "import json, sys, yaml\n\
                 docs = [d for d in yaml.safe_load_all(sys.stdin) if d is not None]\n\
                 print(json.dumps(docs))",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("running PyYAML")?;
        let mut stdin = child.stdin.take().context("no stdin")?;
        stdin.write_all(text.as_bytes()).await?;
        drop(stdin);
        let out = child.wait_with_output().await?;
        anyhow::ensure!(
            out.status.success(),
            "not YAML:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// `kubernetes-validate --strict -k 1.31` of a manifest file; Err with its report.
    pub async fn kubernetes_validate(&self, file: &Path) -> anyhow::Result<()> {
        let out = Command::new(self.peers.join("venv/bin/kubernetes-validate"))
            .args(["--strict", "-k", "1.31", "--quiet"])
            .arg(file)
            .kill_on_drop(true)
            .output()
            .await
            .context("running kubernetes-validate")?;
        anyhow::ensure!(
            out.status.success(),
            "kubernetes-validate rejected {}:\n{}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }
}

/// The documents of `kind`.
pub fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}
