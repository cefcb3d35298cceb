//! Hot reload: watch the config file's directory (Kubernetes ConfigMap volumes swap a `..data`
//! symlink, so the file's inode changes and watching the file itself would go deaf) and the
//! directories of the descriptor sets it names, and reload on SIGHUP. A config or descriptor
//! that fails validation is rejected with a log line and a metric; the old table keeps serving.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Weak;
use std::time::Duration;

use ferry_config::Config;
use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::descriptors::Descriptors;
use crate::shared::Shared;

/// What the watcher reloads: the running proxy (implemented by `app`, which starts the
/// watcher; this module does not know it).
pub(crate) trait Reloadable: Send + Sync + 'static {
    /// The shared state (current table, metrics).
    fn shared(&self) -> &Shared;
    /// Applies a loaded config; `Err` says why it was refused (the old one keeps serving).
    fn apply_loaded(
        &self,
        config: Config,
        descriptors: Descriptors,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>>;
}

/// Events arriving this close together are one change (editors and ConfigMap updates write
/// several files).
const SETTLE: Duration = Duration::from_millis(150);

/// Runs until the proxy is dropped.
pub(crate) async fn watch<R: Reloadable>(inner: Weak<R>, path: PathBuf) {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let fs_tx = tx.clone();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            let _ = fs_tx.try_send(());
        }
    });
    let mut watcher = match watcher {
        Ok(mut w) => match w.watch(&dir, RecursiveMode::NonRecursive) {
            Ok(()) => Some(w),
            Err(error) => {
                tracing::warn!(dir = %dir.display(), %error, "cannot watch the config directory; SIGHUP still reloads");
                None
            }
        },
        Err(error) => {
            tracing::warn!(%error, "no file watcher; SIGHUP still reloads");
            None
        }
    };
    let mut watched = vec![dir];
    spawn_sighup(tx);
    let mut last_version = match inner.upgrade() {
        Some(i) => {
            let table = i.shared().table.load();
            watch_dirs(&mut watcher, &mut watched, &table.descriptors);
            (
                table.config.version.clone(),
                table.descriptors.fingerprint(),
            )
        }
        None => return,
    };
    while rx.recv().await.is_some() {
        tokio::time::sleep(SETTLE).await;
        while rx.try_recv().is_ok() {}
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let load_path = path.clone();
        // Config and descriptor files are read together on the blocking pool.
        let loaded = tokio::task::spawn_blocking(move || {
            let config = ferry_config::load(&load_path)?;
            let descriptors = Descriptors::load(&config)?;
            Ok::<_, ferry_config::ConfigErrors>((config, descriptors))
        })
        .await;
        let (config, descriptors) = match loaded {
            Ok(Ok(loaded)) => loaded,
            Ok(Err(errors)) => {
                inner.shared().metrics.reload_failures.inc();
                tracing::error!(file = %path.display(), "config rejected; the previous config keeps serving:\n{errors}");
                continue;
            }
            Err(error) => {
                inner.shared().metrics.reload_failures.inc();
                tracing::error!(%error, "config load task failed");
                continue;
            }
        };
        let version = (config.version.clone(), descriptors.fingerprint());
        if version == last_version {
            continue;
        }
        watch_dirs(&mut watcher, &mut watched, &descriptors);
        match inner.apply_loaded(config, descriptors).await {
            Ok(()) => {
                tracing::info!(version = %version.0, descriptors = %version.1, "config reloaded");
                last_version = version;
            }
            Err(error) => {
                inner.shared().metrics.reload_failures.inc();
                tracing::error!(%error, "config reload failed; the previous config keeps serving");
            }
        }
    }
}

/// Adds watches for descriptor directories not watched yet (watches are never removed: a
/// directory a later config stops using only costs a spurious, harmless reload check).
fn watch_dirs<W: Watcher>(
    watcher: &mut Option<W>,
    watched: &mut Vec<PathBuf>,
    descriptors: &Descriptors,
) {
    let Some(w) = watcher else { return };
    for dir in descriptors.dirs() {
        if watched.contains(&dir) {
            continue;
        }
        match w.watch(&dir, RecursiveMode::NonRecursive) {
            Ok(()) => watched.push(dir),
            Err(error) => {
                tracing::warn!(dir = %dir.display(), %error, "cannot watch a descriptor directory; SIGHUP still reloads");
            }
        }
    }
}

#[cfg(unix)]
fn spawn_sighup(tx: mpsc::Sender<()>) {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::hangup()) {
        Ok(mut hup) => {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    tracing::info!("SIGHUP: reloading config");
                    if tx.send(()).await.is_err() {
                        return;
                    }
                }
            });
        }
        Err(error) => tracing::warn!(%error, "cannot listen for SIGHUP"),
    }
}

#[cfg(not(unix))]
fn spawn_sighup(_tx: mpsc::Sender<()>) {}
