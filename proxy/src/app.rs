//! A running proxy: listeners, admin endpoint, reloads and drain.
//!
//! `Proxy::start` binds everything before it returns, so callers (the CLI, `ferry demo`,
//! tests) can rely on the addresses. Reloads are serialized; each one validates fully, binds
//! any new listener, swaps the table atomically, then drains listeners that went away.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use ferry_config::Config;
use tokio::sync::{Mutex, mpsc, watch};
use tokio::task::JoinHandle;

use crate::access_log::{AccessLogError, AccessLogs, AccessRecord};
use crate::descriptors::Descriptors;
use crate::limits::LimitStates;
use crate::listener::{self, ListenerHandle};
use crate::metrics::Metrics;
use crate::reload::Reloadable;
use crate::shared::Shared;
use crate::stack;
use crate::state::RouteStates;
use crate::table::{Table, TableError};
use crate::tap::Taps;
use crate::tls::{IdentityStore, Material, TlsFiles};
use crate::traces::Traces;
use crate::upstream::Transport;

/// How to start.
#[derive(Debug, Default)]
pub struct StartOptions {
    /// Receives one record per request (dropped when full).
    pub access_log: Option<mpsc::Sender<AccessRecord>>,
    /// The config file to watch and reload (also on SIGHUP). `None`: no reloads.
    pub config_path: Option<PathBuf>,
    /// The identity to use when the config names none (`ferry run --identity-dir`), applied
    /// to every reload of the file too.
    pub identity: Option<ferry_config::Identity>,
    /// Where to write the bound addresses as JSON after every bind (for tests and scripts
    /// that use port 0).
    pub bound_addresses_file: Option<PathBuf>,
}

/// Why the proxy could not start or reload.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A socket could not be bound.
    #[error("cannot bind {what} on {addr}: {source}")]
    Bind {
        /// Listener name or "admin".
        what: String,
        /// Address.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: io::Error,
    },
    /// The config refers to something missing, or its TLS settings are unusable.
    #[error(transparent)]
    Table(#[from] TableError),
    /// A descriptor set of a `protocol: descriptor` route is missing or unusable.
    #[error(transparent)]
    Descriptors(#[from] ferry_config::ConfigErrors),
    /// The `tracing` block's exporter cannot be built.
    #[error(transparent)]
    Traces(#[from] crate::traces::TracesError),
    /// An access-log writer could not be started.
    #[error(transparent)]
    AccessLog(#[from] AccessLogError),
    /// Writing the bound-addresses file failed.
    #[error("cannot write {path}: {source}")]
    AddressFile {
        /// Path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: io::Error,
    },
}

/// A running proxy.
#[derive(Debug)]
pub struct Proxy {
    inner: Arc<Inner>,
    admin_stop: watch::Sender<bool>,
    admin_task: JoinHandle<()>,
    reload_task: Option<JoinHandle<()>>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) shared: Arc<Shared>,
    listeners: Mutex<HashMap<String, ListenerHandle>>,
    addresses: StdMutex<HashMap<String, SocketAddr>>,
    admin_addr: SocketAddr,
    bound_addresses_file: Option<PathBuf>,
}

// === impl Proxy ===

impl Proxy {
    /// Binds the admin endpoint and every listener of `config`, then serves.
    pub async fn start(mut config: Config, opts: StartOptions) -> Result<Self, StartError> {
        if config.identity.is_none() {
            config.identity = opts.identity.clone();
        }
        let admin_cfg = config.admin.address;
        let metrics = Arc::new(Metrics::new());
        let states = RouteStates::default();
        let descriptors = Descriptors::load_async(&config).await?;
        let tls = TlsFiles::load_async(&config).await?;
        let identity = Arc::new(IdentityStore::default());
        set_identity(&identity, &metrics, tls.identity.clone());
        let limits = Arc::new(LimitStates::default());
        tokio::spawn(crate::limits::reap(Arc::downgrade(&limits)));
        let traces = Arc::new(Traces::default());
        let tracing = traces.for_config(config.tracing.as_ref(), &metrics)?;
        let access_logs = Arc::new(AccessLogs::new(opts.access_log));
        access_logs.reopen_on_sigusr1();
        let access_log = access_logs.for_config(&config.access_log, &metrics)?;
        let taps = Arc::new(Taps::default());
        let cx = stack::Context {
            metrics: &metrics,
            states: &states,
            transport: &Transport::Network,
            access_log: access_log.as_ref(),
            identity: &identity,
            tls: &tls,
            limits: &limits,
            tracing: tracing.as_ref(),
            taps: &taps,
        };
        let table = Table::build(config, descriptors, None, cx)?;
        let shared = Shared::new(
            table,
            metrics,
            states,
            access_logs,
            identity,
            limits,
            traces,
            taps,
        );
        let mut handles = HashMap::new();
        let listeners = shared.table.load().config.listeners.clone();
        for l in &listeners {
            let socket = listener::bind(l.address)
                .await
                .map_err(|source| StartError::Bind {
                    what: format!("listener {:?}", l.name),
                    addr: l.address,
                    source,
                })?;
            let handle = listener::spawn(l.name.as_str().into(), l.address, socket, shared.clone())
                .map_err(|source| StartError::Bind {
                    what: l.name.clone(),
                    addr: l.address,
                    source,
                })?;
            handles.insert(l.name.clone(), handle);
        }
        let admin_socket = listener::bind(admin_cfg)
            .await
            .map_err(|source| StartError::Bind {
                what: "admin".into(),
                addr: admin_cfg,
                source,
            })?;
        let admin_addr = admin_socket
            .local_addr()
            .map_err(|source| StartError::Bind {
                what: "admin".into(),
                addr: admin_cfg,
                source,
            })?;
        let (admin_stop, admin_stopped) = watch::channel(false);
        // The `/stats` sampler stops with the admin endpoint that serves it.
        tokio::spawn(crate::stats::run_sampler(
            shared.clone(),
            admin_stopped.clone(),
        ));
        let admin_task = tokio::spawn(crate::admin::serve(
            admin_socket,
            shared.clone(),
            admin_stopped,
        ));
        tracing::info!(address = %admin_addr, "admin listening");
        let addresses = handles
            .iter()
            .map(|(n, h)| (n.clone(), h.local_addr))
            .collect();
        let inner = Arc::new(Inner {
            shared,
            listeners: Mutex::new(handles),
            addresses: StdMutex::new(addresses),
            admin_addr,
            bound_addresses_file: opts.bound_addresses_file,
        });
        // Watches first: whoever reads the addresses file may change a file at once.
        let reload_task = opts.config_path.map(|path| {
            tokio::spawn(crate::reload::watch(
                Arc::downgrade(&inner),
                path,
                opts.identity,
            ))
        });
        inner.write_addresses()?;
        Ok(Self {
            inner,
            admin_stop,
            admin_task,
            reload_task,
        })
    }

    /// The bound address of a listener.
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        self.inner.addresses.lock().ok()?.get(name).copied()
    }

    /// The bound admin address.
    pub fn admin_addr(&self) -> SocketAddr {
        self.inner.admin_addr
    }

    /// Shared state (table, metrics).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// Applies a new validated config.
    pub async fn reload(&self, config: Config) -> Result<(), StartError> {
        self.inner.apply(config).await
    }

    /// Drains: `/ready` turns 503, listeners stop accepting, open connections are asked to
    /// close and given up to `deadline`; then the admin endpoint stops.
    pub async fn shutdown(self, deadline: Duration) {
        self.inner.shared.start_draining();
        if let Some(task) = &self.reload_task {
            task.abort();
        }
        let handles: Vec<ListenerHandle> = self
            .inner
            .listeners
            .lock()
            .await
            .drain()
            .map(|(_, h)| h)
            .collect();
        let started = std::time::Instant::now();
        futures_util::future::join_all(handles.into_iter().map(|h| h.drain(deadline))).await;
        // Spans of the drained requests go out within what is left of the deadline.
        let left = deadline.saturating_sub(started.elapsed());
        self.inner
            .shared
            .traces
            .flush(left.max(Duration::from_millis(100)))
            .await;
        // Access-log writers drain on a short tick: give the drained requests' lines one.
        if self.inner.shared.access_logs.any() {
            tokio::time::sleep(crate::access_log::FLUSH_WAIT).await;
        }
        let _ = self.admin_stop.send(true);
        let _ = self.admin_task.await;
    }
}

// === impl Inner ===

impl Inner {
    /// Swaps in `config`: binds new listeners first (a bind failure leaves everything as it
    /// was), then the table, then drains listeners that were removed or moved.
    pub(crate) async fn apply(&self, config: Config) -> Result<(), StartError> {
        let descriptors = Descriptors::load_async(&config).await?;
        let tls = TlsFiles::load_async(&config).await?;
        self.apply_loaded(config, descriptors, tls).await
    }

    /// [`Inner::apply`] with the descriptor sets already loaded.
    pub(crate) async fn apply_loaded(
        &self,
        config: Config,
        descriptors: Descriptors,
        tls: TlsFiles,
    ) -> Result<(), StartError> {
        let mut listeners = self.listeners.lock().await;
        if config.admin.address != self.shared.table.load().config.admin.address {
            tracing::warn!("admin address changes take effect after a restart");
        }
        let mut fresh = Vec::new();
        for l in &config.listeners {
            let keep = listeners
                .get(&l.name)
                .is_some_and(|h| h.configured == l.address);
            if keep {
                continue;
            }
            let socket = listener::bind(l.address)
                .await
                .map_err(|source| StartError::Bind {
                    what: format!("listener {:?}", l.name),
                    addr: l.address,
                    source,
                })?;
            fresh.push((l.name.clone(), l.address, socket));
        }
        let tracing = self
            .shared
            .traces
            .for_config(config.tracing.as_ref(), &self.shared.metrics)?;
        let access_log = self
            .shared
            .access_logs
            .for_config(&config.access_log, &self.shared.metrics)?;
        let cx = stack::Context {
            metrics: &self.shared.metrics,
            states: &self.shared.routes,
            transport: &Transport::Network,
            access_log: access_log.as_ref(),
            identity: &self.shared.identity,
            tls: &tls,
            limits: &self.shared.limits,
            tracing: tracing.as_ref(),
            taps: &self.shared.taps,
        };
        let table = Table::build(config, descriptors, Some(&self.shared.table.load()), cx)?;
        // New handshakes use the new identity from here on; open connections keep theirs.
        set_identity(
            &self.shared.identity,
            &self.shared.metrics,
            tls.identity.clone(),
        );
        let names: Vec<String> = table
            .config
            .listeners
            .iter()
            .map(|l| l.name.clone())
            .collect();
        let drain = table.config.runtime.drain_timeout;
        self.shared.table.store(Arc::new(table));
        let mut retired = Vec::new();
        for (name, configured, socket) in fresh {
            let handle = listener::spawn(
                name.as_str().into(),
                configured,
                socket,
                self.shared.clone(),
            )
            .map_err(|source| StartError::Bind {
                what: name.clone(),
                addr: configured,
                source,
            })?;
            if let Some(old) = listeners.insert(name, handle) {
                retired.push(old);
            }
        }
        let removed: Vec<String> = listeners
            .keys()
            .filter(|n| !names.contains(n))
            .cloned()
            .collect();
        for name in removed {
            if let Some(old) = listeners.remove(&name) {
                retired.push(old);
            }
        }
        for old in retired {
            tracing::info!(listener = %old.name, "listener removed or moved; draining it");
            tokio::spawn(old.drain(drain));
        }
        if let Ok(mut addrs) = self.addresses.lock() {
            *addrs = listeners
                .iter()
                .map(|(n, h)| (n.clone(), h.local_addr))
                .collect();
        }
        drop(listeners);
        self.write_addresses()?;
        self.shared.metrics.reloads.inc();
        Ok(())
    }

    fn write_addresses(&self) -> Result<(), StartError> {
        let Some(path) = &self.bound_addresses_file else {
            return Ok(());
        };
        let listeners: serde_json::Map<String, serde_json::Value> = self
            .addresses
            .lock()
            .map(|a| {
                a.iter()
                    .map(|(n, s)| (n.clone(), s.to_string().into()))
                    .collect()
            })
            .unwrap_or_default();
        let json =
            serde_json::json!({ "admin": self.admin_addr.to_string(), "listeners": listeners });
        // Written whole then renamed, so a reader never sees half a file.
        let tmp = path.with_extension("tmp");
        let err = |source| StartError::AddressFile {
            path: path.clone(),
            source,
        };
        std::fs::write(&tmp, json.to_string()).map_err(err)?;
        std::fs::rename(&tmp, path).map_err(err)
    }
}

impl Reloadable for Inner {
    fn shared(&self) -> &Shared {
        &self.shared
    }

    fn apply_loaded(
        &self,
        config: Config,
        descriptors: Descriptors,
        tls: TlsFiles,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(async move {
            Inner::apply_loaded(self, config, descriptors, tls)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// Swaps the identity new handshakes use and exports its expiry.
fn set_identity(store: &IdentityStore, metrics: &Metrics, material: Option<Arc<Material>>) {
    let previous = store.current();
    // A certificate no longer loaded must not keep an expiry series an alert could fire on.
    if let Some(p) = &previous
        && material.as_ref().is_none_or(|m| m.cert_path != p.cert_path)
    {
        metrics.tls_cert_expiry.remove(&crate::metrics::CertLabels {
            cert: p.cert_path.display().to_string(),
        });
    }
    if let Some(m) = &material {
        if previous.as_ref().is_none_or(|p| p.files != m.files) {
            tracing::info!(identity = %m.id, cert = %m.cert_path.display(), not_after = m.not_after, "workload identity loaded");
        }
        metrics
            .tls_cert_expiry
            .get_or_create(&crate::metrics::CertLabels {
                cert: m.cert_path.display().to_string(),
            })
            .set(m.not_after);
    }
    store.set(material);
}
