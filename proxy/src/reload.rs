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
use crate::tls::TlsFiles;

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
        tls: TlsFiles,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>>;
}

/// Events arriving this close together are one change (editors and ConfigMap updates write
/// several files).
const SETTLE: Duration = Duration::from_millis(150);

/// Runs until the proxy is dropped.
///
/// The watches are in place when this returns (only the loop is left to spawn): a file
/// changed right after start-up is not missed.
pub(crate) fn watch<R: Reloadable>(
    inner: Weak<R>,
    path: PathBuf,
    identity: Option<ferry_config::Identity>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let fs_tx = tx.clone();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Opening and reading a file is an event too (inotify's OPEN/ACCESS): reloading on
        // those would read the files again and reload forever.
        if event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
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
    let last_version = match inner.upgrade() {
        Some(i) => {
            let table = i.shared().table.load();
            watch_dirs(
                &mut watcher,
                &mut watched,
                &table.descriptors,
                &table.config,
            );
            Some((
                table.config.version.clone(),
                table.descriptors.fingerprint(),
                table.tls_fingerprint.clone(),
            ))
        }
        None => None,
    };
    async move {
        let Some(mut last_version) = last_version else {
            return;
        };
        while rx.recv().await.is_some() {
            tokio::time::sleep(SETTLE).await;
            while rx.try_recv().is_ok() {}
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let load_path = path.clone();
            let identity = identity.clone();
            // Config, descriptor and TLS files are read together on the blocking pool.
            let loaded = tokio::task::spawn_blocking(move || {
                let options = ferry_config::LoadOptions { identity };
                let config =
                    ferry_config::load_with(&load_path, &options).map_err(Refused::Config)?;
                let descriptors = Descriptors::load(&config).map_err(Refused::Config)?;
                let tls = TlsFiles::load(&config).map_err(Refused::Tls)?;
                crate::access_log::check(&config).map_err(Refused::Config)?;
                Ok::<_, Refused>((config, descriptors, tls))
            })
            .await;
            let (config, descriptors, tls) = match loaded {
                Ok(Ok(loaded)) => loaded,
                Ok(Err(Refused::Config(errors))) => {
                    inner.shared().metrics.reload_failures.inc();
                    tracing::error!(file = %path.display(), "config rejected; the previous config keeps serving:\n{errors}");
                    continue;
                }
                Ok(Err(Refused::Tls(errors))) => {
                    // Often a rotation caught half-written; the next file event retries.
                    inner.shared().metrics.tls_reload_failures.inc();
                    tracing::warn!(file = %path.display(), "identity or CA files refused; the previous identity and config keep serving:\n{errors}");
                    continue;
                }
                Err(error) => {
                    inner.shared().metrics.reload_failures.inc();
                    tracing::error!(%error, "config load task failed");
                    continue;
                }
            };
            let version = (
                config.version.clone(),
                descriptors.fingerprint(),
                tls.fingerprint(),
            );
            if version == last_version {
                continue;
            }
            watch_dirs(&mut watcher, &mut watched, &descriptors, &config);
            match inner.apply_loaded(config, descriptors, tls).await {
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
}

/// Why a reload was refused.
enum Refused {
    /// The config or a descriptor set is invalid.
    Config(ferry_config::ConfigErrors),
    /// An identity, trust or CA file is unusable.
    Tls(ferry_config::ConfigErrors),
}

/// Adds watches for descriptor and TLS file directories not watched yet (watches are never
/// removed: a directory a later config stops using only costs a spurious, harmless reload
/// check). Kubernetes secret and CSI volumes swap a `..data` symlink in these directories.
fn watch_dirs<W: Watcher>(
    watcher: &mut Option<W>,
    watched: &mut Vec<PathBuf>,
    descriptors: &Descriptors,
    config: &Config,
) {
    let Some(w) = watcher else { return };
    let tls_dirs = crate::tls::material::configured_dirs(config);
    for dir in descriptors.dirs().into_iter().chain(tls_dirs) {
        if watched.contains(&dir) {
            continue;
        }
        match w.watch(&dir, RecursiveMode::NonRecursive) {
            Ok(()) => watched.push(dir),
            Err(error) => {
                tracing::warn!(dir = %dir.display(), %error, "cannot watch a descriptor or TLS file directory; SIGHUP still reloads");
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
