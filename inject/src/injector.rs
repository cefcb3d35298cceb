//! `ferry injector`: the webhook server.
//!
//! Two listeners: HTTPS (`--listen`) for the API server's AdmissionReviews and probes, and a
//! plaintext admin port (`--admin`) for probes and `/metrics`. On shutdown readiness drops
//! first, then open connections drain for up to `--drain-timeout`.

use std::{
    future::Future,
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use hyper::service::service_fn;
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::{conn::auto, graceful::GracefulShutdown},
};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::{
    error::InjectError,
    settings::{SidecarArgs, parse_duration},
    webhook::{
        http::{Listener, State, handle},
        metrics::Metrics,
        tls::{ReloadingCert, server_config},
    },
};

/// A client that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Flags of `ferry injector`.
#[derive(Debug, Clone, clap::Args)]
pub struct InjectorArgs {
    /// HTTPS address the API server calls.
    #[arg(long, default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,
    /// Plaintext admin address: `/live`, `/ready`, `/metrics`.
    #[arg(long, default_value = "0.0.0.0:9090")]
    pub admin: SocketAddr,
    /// PEM certificate chain of the webhook Service.
    #[arg(long, default_value = "/etc/ferry-injector/tls/tls.crt")]
    pub tls_cert: PathBuf,
    /// PEM private key of that certificate.
    #[arg(long, default_value = "/etc/ferry-injector/tls/tls.key")]
    pub tls_key: PathBuf,
    /// How often the certificate files are checked for changes.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub cert_reload_interval: Duration,
    /// How long open connections may take to finish on shutdown.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub drain_timeout: Duration,
    /// The sidecar to inject.
    #[command(flatten)]
    pub sidecar: SidecarArgs,
}

/// An injector whose listeners are bound (so callers can learn ports bound as `:0`).
pub struct BoundInjector {
    webhook: TcpListener,
    admin: TcpListener,
    acceptor: TlsAcceptor,
    cert: Arc<ReloadingCert>,
    state: Arc<State>,
    args: InjectorArgs,
}

/// Loads certificates, binds both listeners and serves until `shutdown` completes.
pub async fn run_injector(
    args: InjectorArgs,
    shutdown: impl Future<Output = ()>,
) -> Result<(), InjectError> {
    BoundInjector::bind(args).await?.serve(shutdown).await
}

// === impl BoundInjector ===

impl std::fmt::Debug for BoundInjector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundInjector")
            .field("webhook", &self.webhook)
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

impl BoundInjector {
    /// Validates flags, loads the certificate and binds.
    pub async fn bind(args: InjectorArgs) -> Result<Self, InjectError> {
        args.sidecar.validate()?;
        let cert = Arc::new(ReloadingCert::load(&args.tls_cert, &args.tls_key).await?);
        let acceptor = TlsAcceptor::from(Arc::new(server_config(cert.clone())?));
        let bind = |addr: SocketAddr| async move {
            TcpListener::bind(addr)
                .await
                .map_err(|source| InjectError::Bind { addr, source })
        };
        let webhook = bind(args.listen).await?;
        let admin = bind(args.admin).await?;
        let state = Arc::new(State {
            sidecar: args.sidecar.clone(),
            metrics: Arc::new(Metrics::new()),
            ready: false.into(),
        });
        Ok(Self {
            webhook,
            admin,
            acceptor,
            cert,
            state,
            args,
        })
    }

    /// The bound HTTPS address.
    pub fn webhook_addr(&self) -> Result<SocketAddr, InjectError> {
        local_addr(&self.webhook, self.args.listen)
    }

    /// The bound admin address.
    pub fn admin_addr(&self) -> Result<SocketAddr, InjectError> {
        local_addr(&self.admin, self.args.admin)
    }

    /// Serves until `shutdown` completes, then drains.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), InjectError> {
        let Self {
            webhook,
            admin,
            acceptor,
            cert,
            state,
            args,
        } = self;
        let watcher = tokio::spawn(cert.watch(args.cert_reload_interval, state.metrics.clone()));
        let graceful = GracefulShutdown::new();
        state.ready.store(true, Ordering::Release);
        tracing::info!(webhook = %args.listen, admin = %args.admin, "injector serving");
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = webhook.accept() => match accepted {
                    Ok((stream, _)) => spawn_tls(stream, acceptor.clone(), state.clone(), &graceful),
                    Err(e) => tracing::warn!(error = %e, "webhook accept failed"),
                },
                accepted = admin.accept() => match accepted {
                    Ok((stream, _)) => spawn_conn(TokioIo::new(stream), Listener::Admin, state.clone(), &graceful),
                    Err(e) => tracing::warn!(error = %e, "admin accept failed"),
                },
            }
        }
        state.ready.store(false, Ordering::Release);
        watcher.abort();
        drop((webhook, admin));
        if tokio::time::timeout(args.drain_timeout, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("drain timed out; closing remaining connections");
        }
        tracing::info!("injector stopped");
        Ok(())
    }
}

fn local_addr(listener: &TcpListener, addr: SocketAddr) -> Result<SocketAddr, InjectError> {
    listener
        .local_addr()
        .map_err(|source| InjectError::Bind { addr, source })
}

fn spawn_tls(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    state: Arc<State>,
    graceful: &GracefulShutdown,
) {
    let watcher = graceful.watcher();
    tokio::spawn(async move {
        let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!("TLS handshake timed out");
                return;
            }
        };
        let service = service_fn(move |req| handle(state.clone(), Listener::Webhook, req));
        let builder = auto::Builder::new(TokioExecutor::new());
        let conn = builder.serve_connection(TokioIo::new(tls), service);
        if let Err(e) = watcher.watch(conn).await {
            tracing::debug!(error = %e, "webhook connection ended with an error");
        }
    });
}

fn spawn_conn(
    io: TokioIo<TcpStream>,
    listener: Listener,
    state: Arc<State>,
    graceful: &GracefulShutdown,
) {
    let service = service_fn(move |req| handle(state.clone(), listener, req));
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = graceful.watch(builder.serve_connection(io, service).into_owned());
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "admin connection ended with an error");
        }
    });
}
