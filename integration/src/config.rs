//! Test config files: a small JSON-value → block-YAML writer (tests build configs with
//! `serde_json::json!` and ferry reads ordinary YAML), and a watched config directory that is
//! updated the way Kubernetes updates a ConfigMap volume.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::Context as _;
use serde_json::Value;

/// File name of the config inside a [`ConfigDir`].
pub const FILE_NAME: &str = "ferry.yaml";

/// Renders a JSON value as block-style YAML. Strings are double-quoted (a JSON string is a valid
/// YAML double-quoted scalar), so values such as `127.0.0.1:0` or `"2"` keep their type.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    emit(value, 0, &mut out);
    out
}

fn emit(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                out.push_str(&format!("{pad}{}:", key(k)));
                emit_child(v, indent, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                let mut nested = String::new();
                emit(item, indent + 2, &mut nested);
                // "- " takes the place of the first item line's indentation.
                let first_pad = " ".repeat(indent + 2);
                match nested.strip_prefix(&first_pad) {
                    Some(rest) if is_container(item) => {
                        out.push_str(&format!("{pad}- {rest}"));
                    }
                    _ => out.push_str(&format!("{pad}- {}\n", scalar(item))),
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}

fn emit_child(value: &Value, indent: usize, out: &mut String) {
    if is_container(value) {
        out.push('\n');
        emit(value, indent + 2, out);
    } else {
        out.push_str(&format!(" {}\n", scalar(value)));
    }
}

fn is_container(value: &Value) -> bool {
    match value {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::Object(_) => "{}".to_owned(),
        Value::Array(_) => "[]".to_owned(),
        other => other.to_string(),
    }
}

fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !k.starts_with('-');
    if plain {
        k.to_owned()
    } else {
        Value::from(k).to_string()
    }
}

/// A config directory ferry watches. In ConfigMap layout `ferry.yaml` is a symlink to
/// `..data/ferry.yaml` and `..data` a symlink to a versioned directory; an update writes a new
/// versioned directory and atomically renames a fresh `..data` symlink over the old one, as the
/// kubelet does. In plain layout an update writes a temp file and renames it over `ferry.yaml`.
#[derive(Debug)]
pub struct ConfigDir {
    dir: tempfile::TempDir,
    layout: Layout,
    version: AtomicU32,
}

#[derive(Debug)]
enum Layout {
    Plain,
    ConfigMap,
    /// `ferry.yaml` is a symlink to a file in this other directory, which ferry does not
    /// watch: only SIGHUP can make it see an update.
    Outside(tempfile::TempDir),
}

// === impl ConfigDir ===

impl ConfigDir {
    /// A ConfigMap-style directory holding `yaml`.
    pub async fn configmap(yaml: &str) -> anyhow::Result<ConfigDir> {
        let cd = Self::new(Layout::ConfigMap)?;
        cd.write(yaml).await?;
        tokio::fs::symlink(Path::new("..data").join(FILE_NAME), cd.path())
            .await
            .context("linking ferry.yaml -> ..data/ferry.yaml")?;
        Ok(cd)
    }

    /// A plain directory holding `yaml` as a regular file.
    pub async fn plain(yaml: &str) -> anyhow::Result<ConfigDir> {
        let cd = Self::new(Layout::Plain)?;
        cd.write(yaml).await?;
        Ok(cd)
    }

    /// A directory whose `ferry.yaml` links to a file in a second directory that ferry does
    /// not watch, so updates are invisible to the file watcher and need SIGHUP.
    pub async fn outside_watch(yaml: &str) -> anyhow::Result<ConfigDir> {
        let other = tempfile::Builder::new()
            .prefix("ferry-config-real-")
            .tempdir()?;
        let target = other.path().join(FILE_NAME);
        let cd = Self::new(Layout::Outside(other))?;
        cd.write(yaml).await?;
        tokio::fs::symlink(&target, cd.path()).await?;
        Ok(cd)
    }

    fn new(layout: Layout) -> anyhow::Result<ConfigDir> {
        Ok(ConfigDir {
            dir: tempfile::Builder::new().prefix("ferry-config-").tempdir()?,
            layout,
            version: AtomicU32::new(0),
        })
    }

    /// Path of the config file to hand to ferry.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join(FILE_NAME)
    }

    /// The watched directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Replaces the config atomically (see the type's docs for how).
    pub async fn write(&self, yaml: &str) -> anyhow::Result<()> {
        let n = self.version.fetch_add(1, Ordering::SeqCst) + 1;
        let base = match &self.layout {
            Layout::ConfigMap => self.dir.path(),
            Layout::Plain => self.dir.path(),
            Layout::Outside(other) => other.path(),
        };
        if !matches!(self.layout, Layout::ConfigMap) {
            let tmp = base.join(format!(".{FILE_NAME}.{n}.tmp"));
            tokio::fs::write(&tmp, yaml).await?;
            tokio::fs::rename(&tmp, base.join(FILE_NAME)).await?;
            return Ok(());
        }
        let versioned = format!("..v{n}");
        tokio::fs::create_dir(base.join(&versioned)).await?;
        tokio::fs::write(base.join(&versioned).join(FILE_NAME), yaml).await?;
        let tmp_link = base.join("..data_tmp");
        tokio::fs::symlink(&versioned, &tmp_link).await?;
        tokio::fs::rename(&tmp_link, base.join("..data"))
            .await
            .context("swapping the ..data symlink")?;
        if n > 1 {
            let _ = tokio::fs::remove_dir_all(base.join(format!("..v{}", n - 1))).await;
        }
        Ok(())
    }

    /// Renders `value` as YAML and writes it (see [`ConfigDir::write`]).
    pub async fn write_value(&self, value: &Value) -> anyhow::Result<()> {
        self.write(&to_yaml(value)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_of_nested_values() {
        let v = serde_json::json!({
            "apiVersion": "ferry/v1",
            "listeners": [{ "name": "main", "routes": [{ "to": [{ "cluster": "a", "weight": 9 }] }] }],
            "empty": {},
            "ports": [1, 2],
        });
        // Keys keep insertion order (the workspace enables serde_json's preserve_order).
        let expected = "apiVersion: \"ferry/v1\"\n\
listeners:\n  - name: \"main\"\n    routes:\n      - to:\n          - cluster: \"a\"\n            weight: 9\n\
empty: {}\nports:\n  - 1\n  - 2\n";
        assert_eq!(to_yaml(&v), expected);
    }
}
